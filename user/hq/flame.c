// SPDX-License-Identifier: GPL-2.0
/*
 * flame.svg: folded.txt drawn as a flame graph, so that a trace's
 * directory has one to open without a script.  One box per call path, as
 * wide as the time spent in it and its callees, callers below; paths
 * sorted by name, as flamegraph.pl does.  A box gets the display form
 * of its name without its object ("Pipeline::write": bft_shortname) when
 * it fits, and the whole signatures behind it (from full_of: overloads
 * share a box) with its time in its tooltip.
 *
 * Boxes narrower than MIN_W are left out with their callees, which bounds
 * the file whatever the trace: at most WIDTH / MIN_W boxes a row.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hq.h"
#include "model/bft_shortname.h"

#define WIDTH	1200
#define PAD	10
#define ROW	18
#define FONT	12
#define CHAR_W	7	/* about a glyph at FONT: what text fits */
#define MIN_W	0.5
/* bfhq's folded.txt stops at 1024 frames; any file may go deeper, and
 * drawing recurses: deeper frames count in the box at this depth */
#define MAX_DEPTH	1100

struct fnode {
	char *name;
	uint64_t us;
	uint32_t parent, first, next;	/* tree links: FNONE ends */
	uint32_t depth;
};

#define FNONE UINT32_MAX

struct flame {
	struct fnode *v;
	uint32_t n, cap;
	uint32_t *hash;		/* (parent, name) -> node, open addressing */
	uint32_t hcap;
	uint32_t max_depth;
	/* for draw(): the root's time, px per us, the picture's height */
	uint64_t total;
	double scale;
	uint32_t height;
	/* a box's tooltip: the signatures behind its name */
	hq_flame_full_fn *full_of;
	void *arg;
	struct bft_buf tip;
};

static uint32_t key_hash(uint32_t parent, const char *s, size_t len)
{
	uint32_t h = 2166136261u ^ parent;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

static int rehash(struct flame *f)
{
	uint32_t cap = f->hcap ? 2 * f->hcap : 1024, i, s;
	uint32_t *h = malloc(cap * sizeof(*h));

	if (!h)
		return -ENOMEM;
	memset(h, 0xff, cap * sizeof(*h));
	for (i = 0; i < f->n; i++) {
		const struct fnode *x = &f->v[i];

		s = key_hash(x->parent, x->name, strlen(x->name)) & (cap - 1);
		while (h[s] != FNONE)
			s = (s + 1) & (cap - 1);
		h[s] = i;
	}
	free(f->hash);
	f->hash = h;
	f->hcap = cap;
	return 0;
}

/* The child of parent named s[0..len), made if new; FNONE if no memory. */
static uint32_t child(struct flame *f, uint32_t parent, const char *s,
		      size_t len)
{
	uint32_t slot, i;
	struct fnode *x;

	if ((f->n + 1) * 2 > f->hcap && rehash(f))
		return FNONE;
	slot = key_hash(parent, s, len) & (f->hcap - 1);
	for (; (i = f->hash[slot]) != FNONE; slot = (slot + 1) & (f->hcap - 1))
		if (f->v[i].parent == parent && !strncmp(f->v[i].name, s, len) &&
		    !f->v[i].name[len])
			return i;
	if (f->n == f->cap) {
		uint32_t cap = f->cap ? 2 * f->cap : 1024;
		struct fnode *v = realloc(f->v, cap * sizeof(*v));

		if (!v)
			return FNONE;
		f->v = v;
		f->cap = cap;
	}
	x = &f->v[f->n];
	x->name = strndup(s, len);
	if (!x->name)
		return FNONE;
	x->us = 0;
	x->parent = parent;
	x->first = FNONE;
	x->depth = parent == FNONE ? 1 : f->v[parent].depth + 1;
	if (x->depth > f->max_depth)
		f->max_depth = x->depth;
	if (parent != FNONE) {
		x->next = f->v[parent].first;
		f->v[parent].first = f->n;
	} else {
		x->next = FNONE;
	}
	f->hash[slot] = f->n;
	return f->n++;
}

/* One folded line "a;b;c N": 0, 1 if it is no such line, or -ENOMEM. */
static int add_line(struct flame *f, uint32_t root, char *line)
{
	char *sp = strrchr(line, ' '), *end, *s, *semi;
	uint32_t at = root;
	uint64_t us;

	if (!sp || sp == line || sp[1] == '-')	/* strtoull takes "-1" */
		return 1;
	errno = 0;
	us = strtoull(sp + 1, &end, 10);
	if (errno || end == sp + 1 || (*end && *end != '\n'))
		return 1;
	*sp = 0;
	f->v[root].us += us;
	for (s = line; s && f->v[at].depth < MAX_DEPTH;
	     s = semi ? semi + 1 : NULL) {
		semi = strchr(s, ';');
		at = child(f, at, s, semi ? (size_t)(semi - s) : strlen(s));
		if (at == FNONE)
			return -ENOMEM;
		f->v[at].us += us;
	}
	return 0;
}

static void xml_text(FILE *o, const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i] && i < max; i++) {
		switch (s[i]) {
		case '&':
			fputs("&amp;", o);
			break;
		case '<':
			fputs("&lt;", o);
			break;
		case '>':
			fputs("&gt;", o);
			break;
		case '"':
			fputs("&quot;", o);
			break;
		default:
			/* control bytes are not XML; a tooltip's lines part
			 * signatures */
			fputc((unsigned char)s[i] < 0x20 && s[i] != '\n' ?
			      '?' : s[i], o);
		}
	}
}

static int by_name(const void *a, const void *b, void *arg)
{
	const struct fnode *v = arg;

	return strcmp(v[*(const uint32_t *)a].name, v[*(const uint32_t *)b].name);
}

/* The box of node i at x (px) and its callees'; roots are threads. */
static void draw(struct flame *f, FILE *o, uint32_t i, double x,
		 uint32_t *kids)
{
	const char *bang;
	const struct fnode *nd = &f->v[i];
	double w = (double)nd->us * f->scale, cx;
	uint32_t k, n = 0, c, h, y;
	char label[256];

	if (w < MIN_W)
		return;
	y = f->height - (nd->depth + 1) * ROW;
	for (c = 0, h = 5381; nd->name[c]; c++)
		h = h * 33 + (uint8_t)nd->name[c];
	f->tip.len = 0;
	if (nd->depth <= 2) {	/* "all", then the threads */
		snprintf(label, sizeof(label), "%s", nd->name);
	} else {
		bang = strchr(nd->name, '!');
		bft_shortname(bang ? bang + 1 : nd->name, label, sizeof(label));
		if (f->full_of)
			f->full_of(nd->name, &f->tip, f->arg);
	}
	fprintf(o, "<g><title>");
	if (f->tip.len)
		xml_text(o, (const char *)f->tip.data, f->tip.len);
	else
		xml_text(o, nd->name, SIZE_MAX);
	fprintf(o, " (%.3f ms, %.2f%%)</title><rect x=\"%.1f\" y=\"%u\" "
		"width=\"%.1f\" height=\"%u\" fill=\"rgb(%u,%u,%u)\" rx=\"2\"/>",
		(double)nd->us / 1000.0, 100.0 * (double)nd->us /
		(double)f->total, x, y, w, ROW - 1, 205 + h % 50,
		90 + (h >> 8) % 120, 40 + (h >> 16) % 40);
	if (w > 3 * CHAR_W) {
		size_t fit = (size_t)((w - 6) / CHAR_W), len = strlen(label);

		fprintf(o, "<text x=\"%.1f\" y=\"%u\">", x + 3, y + ROW - 5);
		xml_text(o, label, len > fit ? fit - 2 : len);
		fputs(len > fit ? "..</text>" : "</text>", o);
	}
	fputs("</g>\n", o);
	/* callees in name order, from the scratch array */
	for (c = nd->first; c != FNONE; c = f->v[c].next)
		kids[n++] = c;
	qsort_r(kids, n, sizeof(*kids), by_name, f->v);
	cx = x;
	for (k = 0; k < n; k++) {
		uint32_t kid = kids[k];

		draw(f, o, kid, cx, kids + n);
		cx += (double)f->v[kid].us * f->scale;
	}
}

int hq_write_flame(const char *folded, const char *svg, const char *title,
		   hq_flame_full_fn *full_of, void *arg)
{
	struct flame f = { .full_of = full_of, .arg = arg };
	FILE *in = fopen(folded, "r"), *o = NULL;
	char *line = NULL;
	size_t cap = 0;
	uint32_t root, *kids = NULL;
	int err = 0;

	if (!in)
		return -errno;
	root = child(&f, FNONE, "all", 3);
	if (root == FNONE)
		err = -ENOMEM;
	while (!err && getline(&line, &cap, in) > 0)
		err = add_line(&f, root, line) < 0 ? -ENOMEM : 0;
	fclose(in);
	free(line);
	/* each level's callees sit after its caller's in one array */
	kids = err ? NULL : malloc((f.n + 1) * sizeof(*kids));
	if (!err && !kids)
		err = -ENOMEM;
	if (!err) {
		o = fopen(svg, "w");
		if (!o)
			err = -errno;
	}
	if (!err) {
		f.total = f.v[root].us;
		f.scale = (double)(WIDTH - 2 * PAD) / (double)(f.total ?: 1);
		f.height = (f.max_depth + 2) * ROW;
		fprintf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			"<svg xmlns=\"http://www.w3.org/2000/svg\" "
			"width=\"%u\" height=\"%u\" font-family=\"monospace\" "
			"font-size=\"%u\">\n<rect width=\"100%%\" "
			"height=\"100%%\" fill=\"#fffdf8\"/>\n<text x=\"%u\" "
			"y=\"%u\">", WIDTH, f.height, FONT, PAD, ROW - 4);
		xml_text(o, title, SIZE_MAX);
		if (f.total)
			fprintf(o, " (%.3f ms in all; hover a box for its "
				"signature)</text>\n", (double)f.total / 1000.0);
		else	/* say why it is blank */
			fputs(": no call with a duration (calls traced by "
			      "entries only are counted in tree.txt)</text>\n",
			      o);
		if (f.total)
			draw(&f, o, root, PAD, kids);
		fputs("</svg>\n", o);
		if (fclose(o))
			err = -EIO;
	}
	for (uint32_t i = 0; i < f.n; i++)
		free(f.v[i].name);
	free(f.v);
	free(f.hash);
	free(kids);
	bft_buf_free(&f.tip);
	return err;
}
