// SPDX-License-Identifier: GPL-2.0
/*
 * From patterns to attached probes.  The selection (bft_resolve) is the
 * same for --list and for the attach, so the list is what gets attached.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "output.h"
#include "probes.h"

int probes_select(struct ctl *c, pid_t pid, struct probe_opts *o,
		  struct bft_plan *pl)
{
	struct bft_resolve_opts ro = {
		.debug_dir = o->debug_dir,
		.no_debug = o->no_debug,
		.no_endbr = o->no_endbr,
	};
	struct bft_patterns ps;
	uint64_t cap = o->max_probes ? o->max_probes : BFCTL_DEFAULT_MAX_PROBES;
	char err[1024];
	int rc;

	if (!o->patterns.n) {
		err_msg("%s: give at least one --pattern", current_cmd->name);
		return EXIT_USAGE;
	}
	rc = bft_patterns_init(&ps, o->patterns.v, o->patterns.n, o->regex, err,
			       sizeof(err));
	if (rc) {
		err_msg("%s", err);
		return rc == -ENOMEM ? EXIT_FAIL : EXIT_USAGE;
	}
	rc = bft_plan_pid(pl, pid, &ps, &ro, err, sizeof(err));
	bft_patterns_free(&ps);
	if (rc) {
		err_msg("%s", err);
		switch (-rc) {
		case ESRCH:
		case ENOEXEC:
		case ENOENT:
			return EXIT_TARGET;
		case EACCES:
		case EPERM:
			return EXIT_PERM;
		default:
			return EXIT_FAIL;
		}
	}
	for (size_t i = 0; i < pl->nobjs; i++) {
		const struct bft_object *ob = &pl->objs[i];

		vlog(c, 2, "object %s: %zu functions from %zu symbols%s%s%s",
		     ob->path, ob->nfuncs, ob->nsyms,
		     ob->has_symtab ? " (.symtab)" : " (no .symtab)",
		     ob->debug_path ? ", debug file " : "",
		     ob->debug_path ? ob->debug_path : "");
		if (strcmp(ob->path, ob->open_path))
			vlog(c, 2, "  opened as %s", ob->open_path);
	}
	vlog(c, 2, "%zu objects searched, %zu out of the patterns' scope",
	     pl->nobjs, pl->out_of_scope);
	if (!pl->npicks) {
		err_msg("no function of process %d matches the patterns (%zu objects searched); nothing attached",
			(int)pid, pl->nobjs);
		bft_plan_free(pl);
		return EXIT_NOMATCH;
	}
	if (pl->npicks > cap) {
		if (o->list)
			probes_print_list(pl, pid);
		err_msg("the patterns select %zu functions, more than the cap of %" PRIu64
			"; narrow them, or raise the cap with --max-probes %zu; nothing attached",
			pl->npicks, cap, pl->npicks);
		bft_plan_free(pl);
		return EXIT_LIMIT;
	}
	return EXIT_OK;
}

/* "object!symbol", cut to fit BFT_P_NAME. */
static void signature(char *buf, const struct bft_object *ob,
		      const struct bft_func *f)
{
	int n = snprintf(buf, BFT_NAME_MAX, "%s!%s", ob->name, bft_func_name(f));

	if (n >= BFT_NAME_MAX)
		memcpy(buf + BFT_NAME_MAX - 4, "...", 4);
}

void probes_print_list(const struct bft_plan *pl, pid_t pid)
{
	char sig[BFT_NAME_MAX];

	out_begin();
	out_u64("pid", NULL, (uint64_t)pid);
	out_arr_open("probes");
	for (size_t i = 0; i < pl->npicks; i++) {
		const struct bft_object *ob = &pl->objs[pl->picks[i].obj];
		const struct bft_func *f = &ob->funcs[pl->picks[i].func];

		signature(sig, ob, f);
		out_obj_open(NULL);
		out_str("object", "%-24s ", ob->name);
		out_u64("offset", "0x%08llx ", f->probe_offset);
		out_str("symbol", "%s\n", bft_func_name(f));
		out_str("mangled", NULL, f->names[0].raw);
		out_arr_open("aliases");
		for (uint32_t k = 1; k < f->nnames; k++)
			out_str(NULL, NULL, f->names[k].raw);
		out_arr_close();
		out_str("path", NULL, ob->path);
		out_u64("entry_offset", NULL, f->offset);
		out_bool("endbr64", NULL, f->endbr64);
		out_str("signature", NULL, sig);
		out_obj_close();
	}
	out_arr_close();
	out_end();
	fprintf(stderr, "bfctl: %zu functions in %zu objects (dry run: nothing attached)\n",
		pl->npicks, pl->nobjs);
}

/* A method already in the kernel's table. */
struct known {
	uint32_t tgid;
	uint32_t id;
	uint64_t offset;
	dev_t dev;
	ino_t ino;
	bool file_ok;
	bool gone;		/* BFT_PF_GONE: detached, kept for its name */
};

struct known_list {
	struct known *v;
	size_t n, cap;
	uint32_t max_id;
	size_t of_target;	/* probes the target has already */
	uint32_t tgid;
};

static int known_cb(const struct bft_nl_method *m, void *arg)
{
	struct known_list *l = arg;
	struct known *k;
	struct stat st;

	if (l->n == l->cap) {
		size_t ncap = l->cap ? 2 * l->cap : 64;
		void *p = realloc(l->v, ncap * sizeof(*l->v));

		if (!p)
			return -ENOMEM;
		l->v = p;
		l->cap = ncap;
	}
	k = &l->v[l->n++];
	k->tgid = m->tgid;
	k->id = m->method_id;
	k->offset = m->offset;
	k->gone = m->flags & BFT_PF_GONE;
	k->file_ok = stat(m->path, &st) == 0;
	k->dev = k->file_ok ? st.st_dev : 0;
	k->ino = k->file_ok ? st.st_ino : 0;
	/* Above every id in the table, retired ones included: a collector
	 * still names old records by them until the next start. */
	if (m->method_id > l->max_id)
		l->max_id = m->method_id;
	if (m->tgid == l->tgid && !k->gone)
		l->of_target++;
	return 0;
}

/* The function (file, offset) in the table: a live probe of pid first. */
static const struct known *known_find(const struct known_list *l,
				      const struct stat *st, uint64_t offset,
				      uint32_t pid)
{
	const struct known *any = NULL;

	for (size_t i = 0; i < l->n; i++) {
		const struct known *k = &l->v[i];

		if (!k->file_ok || k->dev != st->st_dev || k->ino != st->st_ino ||
		    k->offset != offset)
			continue;
		if (k->tgid == pid && !k->gone)
			return k;
		if (!any)
			any = k;
	}
	return any;
}

static void rollback(struct ctl *c, pid_t pid, size_t before)
{
	int rc = bft_nl_detach(c->nl, (uint32_t)pid);

	if (rc && rc != -ENOENT) {
		ctl_nl_fail(c, "detaching after the failed attach", rc);
		return;
	}
	if (before)
		err_msg("detached every probe of process %d, the %zu attached before included, so that none is left half-attached",
			(int)pid, before);
	else
		vlog(c, 1, "detached what had been attached to process %d", (int)pid);
}

int probes_attach(struct ctl *c, pid_t pid, const struct bft_plan *pl,
		  const struct probe_opts *o)
{
	struct known_list known = { .tgid = (uint32_t)pid };
	struct bft_nl_probe *probes;
	char (*sigs)[BFT_NAME_MAX];
	size_t *pick_of, n = 0, skipped = 0, ok = 0;
	uint32_t flags = BFT_PF_ALL, next_id;
	int *results, rc, ret = EXIT_OK;

	if (o->entry_only || !(c->caps.features & BFT_FEAT_RETURN)) {
		if (!o->entry_only)
			vlog(c, 1, "the module has no return probes: entries only");
		flags = BFT_PF_ENTRY;
	}
	rc = bft_nl_get_methods(c->nl, known_cb, &known);
	if (rc) {
		free(known.v);
		return ctl_nl_fail(c, "reading the method table", rc);
	}
	next_id = known.max_id + 1;
	probes = calloc(pl->npicks, sizeof(*probes));
	sigs = calloc(pl->npicks, sizeof(*sigs));
	results = calloc(pl->npicks, sizeof(*results));
	pick_of = calloc(pl->npicks, sizeof(*pick_of));
	if (!probes || !sigs || !results || !pick_of) {
		err_msg("out of memory");
		ret = EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < pl->npicks; i++) {
		const struct bft_object *ob = &pl->objs[pl->picks[i].obj];
		const struct bft_func *f = &ob->funcs[pl->picks[i].func];
		const struct known *k = NULL;
		struct stat st;
		struct bft_nl_probe *p = &probes[n];

		if (stat(ob->open_path, &st) == 0)
			k = known_find(&known, &st, f->probe_offset, (uint32_t)pid);
		if (k && k->tgid == (uint32_t)pid && !k->gone) {
			vlog(c, 1, "%s!%s is attached already (method %u)", ob->name,
			     bft_func_name(f), k->id);
			skipped++;
			continue;
		}
		signature(sigs[n], ob, f);
		p->path = ob->open_path;
		p->offset = f->probe_offset;
		/* One function, one id, whichever process runs it. */
		p->method_id = k ? k->id : next_id++;
		p->flags = flags;
		p->name = sigs[n];
		pick_of[n] = i;
		vlog(c, 3, "probe %zu: id %u flags %#x offset %#" PRIx64 " path %s name %s",
		     n, p->method_id, p->flags, p->offset, p->path, p->name);
		n++;
	}
	if (!n) {
		err_msg("every selected function is attached to process %d already", (int)pid);
		ret = EXIT_OK;
		goto out;
	}
	vlog(c, 2, "attaching %zu probes to process %d", n, (int)pid);
	rc = bft_nl_attach(c->nl, (uint32_t)pid, probes, n, results);
	for (size_t i = 0; i < n; i++)
		ok += results[i] == 0;
	if (!rc && ok == n)
		goto done;
	if (rc)
		ret = ctl_nl_fail(c, "attach", rc);
	if (rc == -ESRCH)
		err_msg("process %d exited, or never existed", (int)pid);
	if (rc == -E2BIG)
		err_msg("the module's option max_probes caps the probes of all processes together; 'bfctl set max_probes N' raises it");
	for (size_t i = 0; i < n; i++) {
		if (!results[i] || results[i] == -ECANCELED)
			continue;
		if (rc == results[i] && i && results[i - 1] == rc)
			continue;	/* one message per rejected request */
		err_msg("probe %zu (%s at offset %#" PRIx64 "): %s", i,
			probes[i].name, probes[i].offset, strerror(-results[i]));
		if (!rc && ret == EXIT_OK)
			ret = exit_for_errno(results[i]);
	}
	rollback(c, pid, known.of_target);
	if (ret == EXIT_OK)
		ret = EXIT_FAIL;
	goto out;
done:
	out_begin();
	out_u64("pid", "attached to process %llu: ", (uint64_t)pid);
	out_u64("attached", "%llu probes", n);
	out_u64("already_attached", skipped ? ", %llu attached already" : NULL, skipped);
	out_text("\n");
	out_arr_open("probes");
	for (size_t i = 0; i < n; i++) {
		const struct bft_object *ob = &pl->objs[pl->picks[pick_of[i]].obj];

		out_obj_open(NULL);
		if (c->verbose)
			out_u64("id", "  %5llu ", probes[i].method_id);
		else
			out_u64("id", NULL, probes[i].method_id);
		out_str("path", NULL, ob->path);
		out_u64("offset", c->verbose ? "0x%08llx " : NULL, probes[i].offset);
		out_str("signature", c->verbose ? "%s\n" : NULL, probes[i].name);
		out_obj_close();
	}
	out_arr_close();
	out_end();
out:
	free(known.v);
	free(probes);
	free(sigs);
	free(results);
	free(pick_of);
	return ret;
}
