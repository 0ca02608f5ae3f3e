// SPDX-License-Identifier: GPL-2.0
/* bfctl --usdt: the SDT notes of every object a process maps, by glob. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/bft_maps.h"
#include "usdt.h"

void usdt_set_free(struct usdt_set *u)
{
	for (size_t i = 0; i < u->n; i++) {
		free(u->v[i].path);
		free(u->v[i].open_path);
	}
	free(u->v);
	memset(u, 0, sizeof(*u));
}

static bool wanted(const struct strlist *globs, const struct bft_sdt_probe *p)
{
	char full[2 * BFT_SDT_NAME_MAX + 2];

	snprintf(full, sizeof(full), "%s:%s", p->provider, p->name);
	for (size_t i = 0; i < globs->n; i++) {
		const char *g = globs->v[i];

		if (strchr(g, ':') ? !fnmatch(g, full, 0) :
				     !fnmatch(g, p->name, 0))
			return true;
	}
	return false;
}

static int add(struct usdt_set *u, const struct bft_map_obj *ob,
	       const struct bft_sdt_probe *p)
{
	struct usdt_pick *k;

	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 8;
		void *v = realloc(u->v, cap * sizeof(*u->v));

		if (!v)
			return -ENOMEM;
		u->v = v;
		u->cap = cap;
	}
	k = &u->v[u->n];
	memset(k, 0, sizeof(*k));
	k->path = strdup(ob->path);
	k->open_path = strdup(ob->open_path);
	if (!k->path || !k->open_path) {
		free(k->path);
		free(k->open_path);
		return -ENOMEM;
	}
	k->object = strrchr(k->path, '/') ? strrchr(k->path, '/') + 1 : k->path;
	k->dev = ob->dev;
	k->ino = ob->ino;
	k->pr = *p;
	u->n++;
	return 0;
}

static int check_globs(const struct strlist *globs)
{
	for (size_t i = 0; i < globs->n; i++) {
		const char *g = globs->v[i], *colon = strchr(g, ':');

		if (!*g || (colon && (colon == g || !colon[1] ||
				      strchr(colon + 1, ':')))) {
			err_msg("--usdt '%s': give PROVIDER:NAME or NAME, globs allowed (e.g. 'libc:setjmp', 'myapp:*')",
				g);
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

int usdt_select(struct ctl *c, pid_t pid, const struct strlist *globs,
		struct usdt_set *u)
{
	struct bft_maps m;
	char err[512];
	int rc;

	memset(u, 0, sizeof(*u));
	if (!globs->n)
		return EXIT_OK;
	rc = check_globs(globs);
	if (rc)
		return rc;
	rc = bft_maps_read(pid, &m, err, sizeof(err));
	if (rc) {
		err_msg("%s", err);
		return rc == -ENOMEM ? EXIT_FAIL :
		       rc == -EACCES ? EXIT_PERM : EXIT_TARGET;
	}
	for (size_t i = 0; i < m.n && !rc; i++) {
		const struct bft_map_obj *ob = &m.obj[i];
		struct bft_sdt_list l;

		u->objects++;
		if (bft_sdt_read(ob->open_path, &l, err, sizeof(err))) {
			/* a file with no notes reads fine: this one is unusable */
			vlog(c, 1, "USDT: %s: %s", ob->path, err);
			continue;
		}
		for (size_t j = 0; j < l.n && !rc; j++) {
			const struct bft_sdt_probe *p = &l.v[j];

			if (!wanted(globs, p))
				continue;
			if (p->why[0]) {
				err_msg("USDT probe %s:%s in %s is left out: %s",
					p->provider, p->name, ob->path, p->why);
				continue;
			}
			rc = add(u, ob, p);
		}
		if (l.malformed)
			vlog(c, 1, "USDT: %s: %zu notes too broken to name their probe",
			     ob->path, l.malformed);
		bft_sdt_free(&l);
	}
	bft_maps_free(&m);
	if (rc) {
		usdt_set_free(u);
		err_msg("out of memory");
		return EXIT_FAIL;
	}
	vlog(c, 2, "USDT: %zu probes selected in %zu objects", u->n, u->objects);
	return EXIT_OK;
}
