// SPDX-License-Identifier: GPL-2.0
/*
 * bft_resolve's plans: which functions of a process (its mapped objects)
 * or of a list of files the patterns select, ready to attach.  See
 * bft_resolve.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/bft_resolve.h"
#include "symbols/bft_resolve_elf.h"

void bft_plan_free(struct bft_plan *pl)
{
	for (size_t i = 0; i < pl->nobjs; i++)
		bft_object_free(&pl->objs[i]);
	free(pl->objs);
	free(pl->picks);
	free(pl->left);
	memset(pl, 0, sizeof(*pl));
}

/* Does a pattern select f: any alias, mangled or demangled? */
static int func_selected(const struct bft_patterns *ps, const char *path,
			 const struct bft_func *f, const char ***names,
			 size_t *cap)
{
	size_t nn = 0;

	if (2 * f->nnames > *cap) {
		void *p = realloc(*names, 2 * f->nnames * sizeof(**names));

		if (!p)
			return -ENOMEM;
		*names = p;
		*cap = 2 * f->nnames;
	}
	for (uint32_t n = 0; n < f->nnames; n++) {
		(*names)[nn++] = f->names[n].raw;
		if (f->names[n].demangled)
			(*names)[nn++] = f->names[n].demangled;
	}
	return bft_patterns_match(ps, path, *names, nn);
}

static int plan_select(struct bft_plan *pl, const struct bft_patterns *ps)
{
	size_t total = 0, nleft = 0, cap = 0;
	const char **names = NULL;
	int rc = 0;

	for (size_t i = 0; i < pl->nobjs; i++) {
		total += pl->objs[i].nfuncs;
		nleft += pl->objs[i].nleft_out;
	}
	pl->picks = calloc(total ? total : 1, sizeof(*pl->picks));
	pl->left = calloc(nleft ? nleft : 1, sizeof(*pl->left));
	if (!pl->picks || !pl->left)
		return -ENOMEM;
	for (size_t i = 0; i < pl->nobjs && rc >= 0; i++) {
		const struct bft_object *o = &pl->objs[i];

		for (size_t k = 0; k < o->nfuncs && rc >= 0; k++) {
			rc = func_selected(ps, o->path, &o->funcs[k], &names, &cap);
			if (rc > 0)
				pl->picks[pl->npicks++] = (struct bft_pick){ i, k };
		}
		for (size_t k = 0; k < o->nleft_out && rc >= 0; k++) {
			rc = func_selected(ps, o->path, &o->left_out[k], &names, &cap);
			if (rc > 0)
				pl->left[pl->nleft++] = (struct bft_pick){ i, k };
		}
	}
	free(names);
	return rc < 0 ? rc : 0;
}

static int plan_grow(struct bft_plan *pl, size_t n)
{
	pl->objs = calloc(n ? n : 1, sizeof(*pl->objs));
	return pl->objs ? 0 : -ENOMEM;
}

int bft_plan_pid(struct bft_plan *pl, pid_t pid,
		 const struct bft_patterns *ps,
		 const struct bft_resolve_opts *opts, char *err, size_t errlen)
{
	struct bft_resolve_opts o = opts ? *opts : (struct bft_resolve_opts){ 0 };
	struct bft_maps maps;
	char root[64];
	int rc;

	memset(pl, 0, sizeof(*pl));
	rc = bft_maps_read(pid, &maps, err, errlen);
	if (rc)
		return rc;
	if (!maps.same_root && !o.root) {
		snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
		o.root = root;
	}
	rc = plan_grow(pl, maps.n);
	if (rc)
		goto nomem;
	for (size_t i = 0; i < maps.n; i++) {
		const struct bft_map_obj *m = &maps.obj[i];
		bool dup = false;

		if (!bft_patterns_scope(ps, m->path)) {
			pl->out_of_scope++;
			continue;
		}
		/* One file mapped under two names is one object. */
		for (size_t k = 0; k < i; k++)
			dup |= maps.obj[k].dev == m->dev && maps.obj[k].ino == m->ino;
		if (dup)
			continue;
		rc = bft_object_load(&pl->objs[pl->nobjs], m->path, m->open_path,
				     &o, err, errlen);
		if (rc == -ENOEXEC) {
			bft_resolve_fail(err, errlen, rc,
			     "%s, mapped executable by process %d: not an ELF executable or shared object (scope the patterns to other objects, e.g. 'libfoo.so*:pattern')",
			     m->path, (int)pid);
			goto out;
		}
		if (rc == -ENOENT && kill(pid, 0) && errno == ESRCH) {
			rc = bft_resolve_fail(err, errlen, -ESRCH,
				  "process %d exited while its objects were read", (int)pid);
			goto out;
		}
		if (rc)
			goto out;
		pl->nobjs++;
	}
	rc = plan_select(pl, ps);
	if (!rc)
		rc = bft_plan_place(pl, &o);
	if (rc)
		goto nomem;
	bft_maps_free(&maps);
	return 0;
nomem:
	bft_resolve_fail(err, errlen, rc, "out of memory");
out:
	bft_maps_free(&maps);
	bft_plan_free(pl);
	return rc;
}

int bft_plan_files(struct bft_plan *pl, const char *const *paths, size_t n,
		   const struct bft_patterns *ps,
		   const struct bft_resolve_opts *opts, char *err, size_t errlen)
{
	int rc;

	memset(pl, 0, sizeof(*pl));
	rc = plan_grow(pl, n);
	if (rc)
		return bft_resolve_fail(err, errlen, rc, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (!bft_patterns_scope(ps, paths[i])) {
			pl->out_of_scope++;
			continue;
		}
		rc = bft_object_load(&pl->objs[pl->nobjs], paths[i], paths[i],
				     opts, err, errlen);
		if (rc)
			goto out;
		pl->nobjs++;
	}
	rc = plan_select(pl, ps);
	if (!rc)
		rc = bft_plan_place(pl, opts);
	if (rc)
		bft_resolve_fail(err, errlen, rc, "out of memory");
out:
	if (rc)
		bft_plan_free(pl);
	return rc;
}
