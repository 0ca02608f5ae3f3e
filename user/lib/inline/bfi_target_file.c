// SPDX-License-Identifier: GPL-2.0
/*
 * The registry's file of one target (bfi_session.h): struct bfi_target as
 * lines of text, one record a line, so a person can read what a target's
 * patches were and any tool can undo them.  Paths and names are escaped
 * (%XX for spaces, '%', control and non-ASCII bytes) so a line splits on
 * spaces.  Freeing a target is here too.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inline/bfi_session.h"

#define TARGET_MAGIC	"bfi-target"
#define TARGET_VERSION	1

void bfi_target_free(struct bfi_target *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nmethods; i++) {
		free(t->methods[i].path);
		free(t->methods[i].name);
	}
	free(t->methods);
	free(t->patches);
	free(t->codes);
	memset(t, 0, sizeof(*t));
}

static void field_escape(FILE *f, const char *s)
{
	if (!s || !*s) {
		fputc('-', f);	/* an empty field still splits */
		return;
	}
	for (const unsigned char *p = (const void *)s; *p; p++) {
		if (*p <= ' ' || *p >= 0x7f || *p == '%' || (*p == '-' &&
							     p == (const void *)s))
			fprintf(f, "%%%02x", *p);
		else
			fputc(*p, f);
	}
}

/* The escaped field back; NULL on a bad escape or no memory. */
static char *field_unescape(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *out;

	if (!strcmp(s, "-"))
		return strdup("");
	out = malloc(n + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned int v;

		if (s[i] != '%') {
			out[o++] = s[i];
			continue;
		}
		if (i + 2 >= n)
			goto bad;
		if (sscanf(s + i + 1, "%2x", &v) != 1 || !v)
			goto bad;
		out[o++] = (char)v;
		i += 2;
	}
	out[o] = 0;
	return out;
bad:
	free(out);
	return NULL;
}

int bfi_target_write(const struct bfi_target *t, FILE *f)
{
	fprintf(f, "%s %d\n", TARGET_MAGIC, TARGET_VERSION);
	fprintf(f, "target %u %u %" PRIu64 " %" PRIu64 "\n", t->tgid,
		t->index, t->start, t->pidns);
	fprintf(f, "area %#" PRIx64 " %" PRIu64 " %u %u %" PRId64 " %u\n",
		t->area, t->area_size, t->ring_size, t->nslots, t->tid_off,
		t->no_ret);
	for (size_t i = 0; i < t->ncodes; i++)
		fprintf(f, "code %#" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
			t->codes[i].addr, t->codes[i].size, t->codes[i].used);
	for (size_t i = 0; i < t->npatches; i++) {
		const struct bfi_patch *p = &t->patches[i];

		fprintf(f, "patch %#" PRIx64 " %#" PRIx64 " %u %u %u ", p->at,
			p->stub, p->len, p->index, p->live);
		for (size_t b = 0; b < sizeof(p->orig); b++)
			fprintf(f, "%02x", p->orig[b]);
		fputc('\n', f);
	}
	for (size_t i = 0; i < t->nmethods; i++) {
		const struct bfi_method_rec *m = &t->methods[i];

		fprintf(f, "method %u %#x %#" PRIx64 " ", m->id, m->flags,
			m->offset);
		field_escape(f, m->path);
		fputc(' ', f);
		field_escape(f, m->name);
		fputc('\n', f);
	}
	fprintf(f, "end\n");
	return ferror(f) ? -EIO : 0;
}

/* Grow *arr of *n elements of size sz by one zeroed element. */
static void *target_grow(void *arr, size_t *n, size_t sz)
{
	char *p = realloc(arr, (*n + 1) * sz);

	if (!p)
		return NULL;
	memset(p + *n * sz, 0, sz);
	(*n)++;
	return p;
}

static int target_line(struct bfi_target *t, const char *line, bool *end)
{
	char kw[16], hex[40], path[4200], name[4200];
	unsigned int a, b, c;

	if (sscanf(line, "%15s", kw) != 1)
		return -EINVAL;
	if (!strcmp(kw, "end")) {
		*end = true;
		return 0;
	}
	if (!strcmp(kw, "target"))
		return sscanf(line, "target %u %u %" SCNu64 " %" SCNu64,
			      &t->tgid, &t->index, &t->start, &t->pidns) == 4 ?
			0 : -EINVAL;
	if (!strcmp(kw, "area"))
		return sscanf(line, "area %" SCNx64 " %" SCNu64 " %u %u %"
			      SCNd64 " %u", &t->area, &t->area_size,
			      &t->ring_size, &t->nslots, &t->tid_off,
			      &t->no_ret) == 6 ? 0 : -EINVAL;
	if (!strcmp(kw, "code")) {
		struct bfi_code_area *n = target_grow(t->codes, &t->ncodes,
						      sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->codes = n;
		n = &t->codes[t->ncodes - 1];
		return sscanf(line, "code %" SCNx64 " %" SCNu64 " %" SCNu64,
			      &n->addr, &n->size, &n->used) == 3 ? 0 : -EINVAL;
	}
	if (!strcmp(kw, "patch")) {
		struct bfi_patch *n = target_grow(t->patches, &t->npatches,
						  sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->patches = n;
		n = &t->patches[t->npatches - 1];
		if (sscanf(line, "patch %" SCNx64 " %" SCNx64 " %u %u %u %39s",
			   &n->at, &n->stub, &a, &b, &c, hex) != 6 ||
		    a > sizeof(n->orig) || c > 1 ||
		    strlen(hex) != 2 * sizeof(n->orig))
			return -EINVAL;
		n->len = a;
		n->index = b;
		n->live = (uint8_t)c;
		for (size_t i = 0; i < sizeof(n->orig); i++) {
			if (sscanf(hex + 2 * i, "%2x", &a) != 1)
				return -EINVAL;
			n->orig[i] = (uint8_t)a;
		}
		return 0;
	}
	if (!strcmp(kw, "method")) {
		struct bfi_method_rec *n = target_grow(t->methods,
						       &t->nmethods,
						       sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->methods = n;
		n = &t->methods[t->nmethods - 1];
		if (sscanf(line, "method %u %x %" SCNx64 " %4199s %4199s",
			   &n->id, &n->flags, &n->offset, path, name) != 5)
			return -EINVAL;
		n->path = field_unescape(path);
		n->name = field_unescape(name);
		return n->path && n->name ? 0 : -EINVAL;
	}
	return -EINVAL;
}

int bfi_target_parse(struct bfi_target *t, FILE *f, char *err,
		     size_t errlen)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned int lineno = 1;
	bool end = false;
	int ver = 0, e = 0;

	memset(t, 0, sizeof(*t));
	if (getline(&line, &cap, f) < 0 ||
	    sscanf(line, TARGET_MAGIC " %d", &ver) != 1 ||
	    ver != TARGET_VERSION) {
		snprintf(err, errlen, "not a target file of version %d",
			 TARGET_VERSION);
		free(line);
		return -EINVAL;
	}
	while (!e && !end && getline(&line, &cap, f) >= 0) {
		lineno++;
		e = target_line(t, line, &end);
	}
	free(line);
	if (!e && !end)
		e = -EINVAL;	/* cut short: a torn file is never renamed in */
	if (!e && (!t->tgid || t->index >= BFI_MAX_TARGETS ||
		   t->nslots > BFI_NSLOTS || !t->ring_size ||
		   (t->ring_size & (t->ring_size - 1)) ||
		   t->area_size < BFI_SLOTS_OFF + (uint64_t)t->nslots *
				  BFI_SLOT_SIZE(t->ring_size)))
		e = -EINVAL;
	if (e) {
		snprintf(err, errlen, "line %u: %s", lineno,
			 e == -ENOMEM ? "out of memory" :
			 "malformed or out of bounds");
		bfi_target_free(t);
	}
	return e;
}
