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

#include "capture/bft_backend.h"
#include "symbols/bft_entry.h"
#include "symbols/bft_symclass.h"
#include "output.h"
#include "probes.h"

/*
 * An inclusion whose object is not mapped (yet): bfctl run and a
 * following attach wait for it, attach --no-follow says that it does not.
 */
static void say_pending(struct ctl *c, pid_t pid, const struct bft_patterns *ps,
			const struct bft_plan *pl, const struct probe_opts *o)
{
	for (size_t i = 0; i < ps->n; i++) {
		const struct bft_pattern *p = &ps->p[i];
		size_t j = 0;

		if (p->exclude || !p->object)
			continue;
		while (j < pl->nobjs && !bft_pattern_in_scope(p, pl->objs[j].path))
			j++;
		if (j < pl->nobjs)
			continue;
		if (o->pending)
			strlist_push(o->pending, p->text);
		if (o->quiet_nomatch)
			vlog(c, 1, "pattern '%s' waits: no object of process %d matches '%s' yet",
			     p->text, (int)pid, p->object);
		else if (strcmp(current_cmd->name, "attach"))
			err_msg("pattern '%s': no object of process %d matches '%s' at its start",
				p->text, (int)pid, p->object);
		else if (o->follow)
			err_msg("pattern '%s' is pending: no object of process %d matches '%s' yet; it applies to the libraries it loads later",
				p->text, (int)pid, p->object);
		else
			err_msg("pattern '%s': no object of process %d matches '%s'; not following, bfctl does not probe the libraries it loads later",
				p->text, (int)pid, p->object);
	}
}

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

	memset(pl, 0, sizeof(*pl));
	if (o->pending)
		strlist_free(o->pending);
	if (!o->patterns.n && !o->usdt.n) {
		err_msg("%s: give at least one --pattern or --usdt", current_cmd->name);
		return EXIT_USAGE;
	}
	/* USDT probes alone: probes_build() finds them */
	if (!o->patterns.n)
		return EXIT_OK;
	rc = bft_patterns_init(&ps, o->patterns.v, o->patterns.n, o->regex, err,
			       sizeof(err));
	if (rc) {
		err_msg("%s", err);
		return rc == -ENOMEM ? EXIT_FAIL : EXIT_USAGE;
	}
	rc = bft_plan_pid(pl, pid, &ps, &ro, err, sizeof(err));
	if (!rc)
		say_pending(c, pid, &ps, pl, o);
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
	for (size_t i = 0; i < pl->nleft; i++) {
		const struct bft_object *ob = &pl->objs[pl->left[i].obj];
		const struct bft_func *f = &ob->left_out[pl->left[i].func];

		vlog(c, 1, "left out %s!%s at %#" PRIx64 ": %s", ob->name,
		     bft_func_name(f), f->offset, bft_func_why(f));
	}
	if (!pl->npicks) {
		char why[256];

		snprintf(why, sizeof(why),
			 "no function of process %d matches the patterns (%zu objects searched%s); nothing attached",
			 (int)pid, pl->nobjs,
			 pl->nleft ? ", only fragments that are no function entries" : "");
		if (o->quiet_nomatch || o->usdt.n)
			vlog(c, 1, "%s", why);
		else
			err_msg("%s", why);
		/* the USDT probes may still select something */
		if (o->usdt.n)
			return EXIT_OK;
		bft_plan_free(pl);
		return EXIT_NOMATCH;
	}
	if (pl->npicks > cap) {
		struct probe_opts plain = *o;
		struct probe_set set;

		/* the selection as it stands, without the hooks' look-up */
		plain.entry_only = true;
		if (o->list && !probes_build(c, pid, pl, &plain, 0, &set)) {
			probes_print_list(pl, &set, pid);
			probes_set_free(&set);
		}
		err_msg("the patterns select %zu functions, more than the cap of %" PRIu64
			"; narrow them, or raise the cap with --max-probes %zu; nothing attached",
			pl->npicks, cap, pl->npicks);
		bft_plan_free(pl);
		return EXIT_LIMIT;
	}
	return EXIT_OK;
}

/*
 * A USDT site is often the instruction an entry probe was moved to (past
 * a "push %rbp"): one address takes one probe, so such an entry probe goes
 * back to the function's first byte.  A site on that very byte is left
 * out, said.
 */
static bool usdt_room(struct ctl *c, struct probe_set *s,
		      const struct usdt_pick *k)
{
	for (size_t i = 0; i < s->n; i++) {
		struct probe_row *r = &s->v[i];
		uint64_t first;

		if (r->p.offset != k->pr.offset || strcmp(r->p.path, k->open_path))
			continue;
		first = r->f ? r->f->offset + (r->f->endbr64 ? 4 : 0) : r->p.offset;
		/* a hook's place is chosen (it reads the stack there) */
		if (first == k->pr.offset || r->hook) {
			err_msg("USDT probe %s:%s in %s is left out: it sits on the entry of %s, probed already",
				k->pr.provider, k->pr.name, k->path, r->sig);
			return false;
		}
		vlog(c, 2, "%s: probe at its first byte, its placement taken by USDT probe %s:%s",
		     r->sig, k->pr.provider, k->pr.name);
		r->p.offset = first;
	}
	return true;
}

/* "object!symbol", cut to fit BFT_P_NAME. */
static void signature(char *buf, const char *object, const char *symbol)
{
	int n = snprintf(buf, BFT_NAME_MAX, "%s!%s", object, symbol);

	if (n >= BFT_NAME_MAX)
		memcpy(buf + BFT_NAME_MAX - 4, "...", 4);
}

uint64_t probes_features(struct ctl *c)
{
	const uint64_t all = BFT_FEAT_ENTRY | BFT_FEAT_RETURN | BFT_FEAT_UNWIND |
			     BFT_FEAT_USDT;
	const struct bft_backend_ops *be;
	struct bft_nl_caps caps;
	uint64_t f;
	void *h;

	if (c->beh)
		return c->caps.features;
	/* an unknown --backend, said once, lists as with the module */
	ctl_backend_choose(c);
	be = ctl_backend(c);
	if (be->features)
		return be->features;
	if (be->open(&h, BFT_BACKEND_EXISTING, NULL, 0)) {
		vlog(c, 1, "no backend to ask (bftrace.ko is not loaded, the BPF backend cannot run here): listing as if it had return probes and exception hooks");
		return all;
	}
	f = be->get_caps(h, &caps) ? all : caps.features;
	be->close(h);
	return f;
}

/* What the features come from: a dry run (-l) has chosen, not opened. */
static const char *backend_name(const struct ctl *c)
{
	return ctl_backend(c)->what;
}

/* The unwinder reads the return address of its own entry points. */
static bool hook_keeps_return(uint32_t hook)
{
	return !(hook & (BFT_PF_HOOK_UNWIND | BFT_PF_HOOK_FORCED));
}

/*
 * Whether to place hooks and keep return probes: says why not on stderr.
 * Returns false when return probes must go.
 */
static bool exceptions_ok(struct ctl *c, pid_t pid, const struct probe_set *s,
			  const struct probe_opts *o, uint64_t features,
			  bool *hooks)
{
	const struct bft_hooks *h = &s->hooks;
	bool feat = features & BFT_FEAT_UNWIND;

	*hooks = feat;
	if (h->at_risk)
		vlog(c, 1, "process %d can unwind through traced frames: %s", (int)pid,
		     h->risk);
	if (!h->at_risk || (feat && h->complete)) {
		if (!feat)
			vlog(c, 1, "%s has no exception hooks (feature 'unwind'); process %d does not seem to need them",
			     backend_name(c), (int)pid);
		return true;
	}
	if (!feat)
		err_msg("process %d may unwind through traced frames (%s), but %s cannot repair return addresses for that (no feature 'unwind'): an exception or a thread cancellation through a return-probed frame would kill it",
			(int)pid, h->risk, backend_name(c));
	else
		err_msg("process %d may unwind through traced frames (%s), but its unwinder's entry points cannot all be found (%s: a custom, unknown or stripped unwinder): an exception through a return-probed frame would kill it",
			(int)pid, h->risk, h->missing);
	if (o->force) {
		err_msg("--force: return probes kept on process %d anyway", (int)pid);
		return true;
	}
	err_msg("recording entries only on process %d: its calls are counted, with the time of each entry, but without exits or durations; --force keeps the return probes, and then the process dies if an exception or a thread exit ever passes a traced frame",
		(int)pid);
	return false;
}

static int row_stat(const char *path, uint64_t *dev, uint64_t *ino)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

void probes_set_free(struct probe_set *s)
{
	bft_hooks_free(&s->hooks);
	usdt_set_free(&s->usdt);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

int probes_build(struct ctl *c, pid_t pid, const struct bft_plan *pl,
		 const struct probe_opts *o, uint64_t features,
		 struct probe_set *s)
{
	uint32_t flags = BFT_PF_ALL;
	bool hooks = false, any_return;
	size_t *merged = NULL;
	char err[512];
	int rc;

	memset(s, 0, sizeof(*s));
	rc = usdt_select(c, pid, &o->usdt, &s->usdt);
	if (rc)
		return rc;
	if (s->usdt.n && !(features & BFT_FEAT_USDT)) {
		err_msg("the %s backend has no USDT probes; nothing attached",
			backend_name(c));
		probes_set_free(s);
		return EXIT_FAIL;
	}
	if (!pl->npicks && !s->usdt.n) {
		if (o->quiet_nomatch)
			vlog(c, 1, "no function or USDT probe of process %d matches",
			     (int)pid);
		else
			err_msg("no USDT probe of process %d matches --usdt (%zu objects searched); nothing attached",
				(int)pid, s->usdt.objects);
		probes_set_free(s);
		return EXIT_NOMATCH;
	}
	if (o->entry_only || !(features & BFT_FEAT_RETURN)) {
		if (!o->entry_only)
			vlog(c, 1, "the module has no return probes: entries only");
		flags = BFT_PF_ENTRY;
	}
	/* the hooks serve functions' return probes: USDT sites have none */
	if ((flags & BFT_PF_RETURN) && pl->npicks) {
		rc = bft_hooks_find(pid, o->no_endbr, &s->hooks, err, sizeof(err));
		if (rc) {
			err_msg("%s", err);
			return rc == -ENOMEM ? EXIT_FAIL : exit_for_errno(rc);
		}
		if (!exceptions_ok(c, pid, s, o, features, &hooks)) {
			flags = BFT_PF_ENTRY;
			s->fallback = true;
		}
	}
	if (!hooks)
		bft_hooks_free(&s->hooks);
	s->v = calloc(pl->npicks + s->hooks.n + s->usdt.n + 1, sizeof(*s->v));
	merged = calloc(s->hooks.n + 1, sizeof(*merged));
	if (!s->v || !merged) {
		free(merged);
		probes_set_free(s);
		err_msg("out of memory");
		return EXIT_FAIL;
	}
	for (size_t i = 0; i < pl->npicks; i++) {
		const struct bft_object *ob = &pl->objs[pl->picks[i].obj];
		const struct bft_func *f = &ob->funcs[pl->picks[i].func];
		struct probe_row *r = &s->v[s->n++];

		r->f = f;
		r->ob = ob;
		r->path = ob->path;
		r->symbol = bft_func_name(f);
		r->mangled = f->names[0].raw;
		signature(r->sig, ob->name, r->symbol);
		r->p = (struct bft_nl_probe){
			.path = ob->open_path, .offset = f->probe_offset,
			.flags = flags, .name = r->sig,
		};
		if (f->probe_offset != f->offset + (f->endbr64 ? 4 : 0) ||
		    f->entry_rule > BFT_ENTRY_OFF)
			vlog(c, 2, "%s: probe at +%#llx: %s", r->sig,
			     (unsigned long long)(f->probe_offset - f->offset),
			     bft_entry_rule_why(f->entry_rule));
		if (row_stat(ob->open_path, &r->dev, &r->ino))
			r->dev = r->ino = 0;
		if (s->fallback)
			r->why = "entry probe only: this process's exceptions cannot be handled";
		if ((flags & BFT_PF_RETURN) && (f->traits & BFT_TRAITS_ENTRY_ONLY)) {
			r->p.flags = BFT_PF_ENTRY;
			r->why = bft_func_why(f);
			vlog(c, 1, "%s: %s", r->sig, r->why);
		}
		r->hook = r->dev ? bft_hooks_at(&s->hooks, r->dev, r->ino,
						 f->probe_offset) : NULL;
		if (!r->hook)
			continue;
		merged[r->hook - s->hooks.v] = 1;
		r->p.flags |= r->hook->flag;
		if ((r->p.flags & BFT_PF_RETURN) && !hook_keeps_return(r->hook->flag)) {
			r->p.flags &= ~BFT_PF_RETURN;
			r->why = "the unwinder reads this function's own return address: entry probe only";
			vlog(c, 1, "%s: %s", r->sig, r->why);
		}
	}
	/* hooks serve return probes: with none left (all entry-only), none */
	any_return = false;
	for (size_t i = 0; i < s->n; i++)
		any_return |= !!(s->v[i].p.flags & BFT_PF_RETURN);
	hooks = hooks && any_return;
	for (size_t i = 0; hooks && i < s->hooks.n; i++) {
		const struct bft_hook *k = &s->hooks.v[i];
		struct probe_row *r;

		if (merged[i])
			continue;
		r = &s->v[s->n++];
		s->nhooks++;
		r->hook = k;
		r->path = k->path;
		r->symbol = k->symbol;
		r->mangled = k->symbol;
		r->dev = k->dev;
		r->ino = k->ino;
		signature(r->sig, k->object, k->symbol);
		r->p = (struct bft_nl_probe){
			.path = k->open_path, .offset = k->probe_offset,
			.flags = k->flag, .name = r->sig,
		};
	}
	free(merged);
	for (size_t i = 0; i < s->usdt.n; i++) {
		const struct usdt_pick *k = &s->usdt.v[i];
		struct probe_row *r;
		char pn[2 * BFT_SDT_NAME_MAX + 2];

		if (!usdt_room(c, s, k))
			continue;
		r = &s->v[s->n++];

		s->nusdt++;
		r->usdt = k;
		r->path = k->path;
		snprintf(pn, sizeof(pn), "%s:%s", k->pr.provider, k->pr.name);
		signature(r->sig, k->object, pn);
		r->symbol = strrchr(r->sig, '!') + 1;
		r->mangled = r->symbol;
		/* as function rows and the method table have them */
		if (row_stat(k->open_path, &r->dev, &r->ino))
			r->dev = r->ino = 0;
		bft_sdt_uapi_args(&k->pr, r->args);
		r->p = (struct bft_nl_probe){
			.path = k->open_path, .offset = k->pr.offset,
			.flags = BFT_PF_USDT, .name = r->sig,
			.ref_ctr_offset = k->pr.sema_offset,
			.args = r->args, .nargs = (uint32_t)k->pr.nargs,
		};
	}
	if (hooks && s->hooks.n)
		vlog(c, 1, "%zu exception hooks on process %d%s%s%s", s->hooks.n, (int)pid,
		     s->hooks.libgcc ? " (" : "",
		     s->hooks.libgcc ? s->hooks.libgcc : "",
		     s->hooks.libgcc ? ", which glibc loads at the first pthread_cancel or pthread_exit, included)" : "");
	return EXIT_OK;
}

static void print_row(const struct probe_row *r, bool attached, bool verbose)
{
	const char *hook = bft_hook_name(r->p.flags);

	out_obj_open(NULL);
	if (attached) {
		out_u64("id", verbose ? "  %5llu " : NULL, r->p.method_id);
		out_str("path", NULL, r->path);
		out_u64("offset", verbose ? "0x%08llx " : NULL, r->p.offset);
		out_str("signature", verbose ? "%s" : NULL, r->sig);
	} else {
		out_str("object", "%-24s ", strrchr(r->sig, '!') ?
			strndupa(r->sig, (size_t)(strrchr(r->sig, '!') - r->sig)) : r->sig);
		out_u64("offset", "0x%08llx ", r->p.offset);
		out_str("symbol", "%s", r->symbol);
		out_str("mangled", NULL, r->mangled);
		out_arr_open("aliases");
		for (uint32_t k = 1; r->f && k < r->f->nnames; k++)
			out_str(NULL, NULL, r->f->names[k].raw);
		out_arr_close();
		out_str("path", NULL, r->path);
		out_u64("entry_offset", NULL, r->f ? r->f->offset :
			r->hook ? r->hook->offset : r->p.offset);
		out_bool("endbr64", NULL, r->f ? r->f->endbr64 :
			 r->hook && r->hook->endbr64);
		out_str("placement", NULL, r->f ? bft_entry_rule_name(r->f->entry_rule) :
			r->hook ? bft_entry_rule_name(BFT_ENTRY_HOOK) : "usdt");
		out_str("signature", NULL, r->sig);
	}
	out_u64("flags", NULL, r->p.flags);
	out_str_or_null("hook", (hook && (attached ? verbose : true)) ?
			(r->f ? "  [exception hook: %s]" : "  [exception hook: %s, not traced]") : NULL, hook);
	out_bool("return_probe", NULL, r->p.flags & BFT_PF_RETURN);
	if (r->usdt) {
		out_u64("arguments", attached && !verbose ? NULL :
			"  [USDT, %llu arguments", r->usdt->pr.nargs);
		out_u64("semaphore_offset", r->p.ref_ctr_offset &&
			(!attached || verbose) ? ", semaphore at 0x%llx" : NULL,
			r->p.ref_ctr_offset);
		out_text(!attached || verbose ? "]" : "");
	}
	out_str_or_null("why", r->why && (attached ? verbose : true) ? "  (%s)" : NULL,
			r->why);
	if (!attached || verbose)
		out_text("\n");
	out_obj_close();
}

void probes_print_list(const struct bft_plan *pl, const struct probe_set *s,
		       pid_t pid)
{
	out_begin();
	out_u64("pid", NULL, (uint64_t)pid);
	out_bool("entries_only_for_safety", NULL, s->fallback);
	/* JSON: the selected functions, then the hooks alone; text: one list */
	out_arr_open("probes");
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].f)
			print_row(&s->v[i], false, false);
	out_arr_close();
	out_arr_open("hooks");
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].hook && !s->v[i].f)
			print_row(&s->v[i], false, false);
	out_arr_close();
	out_arr_open("usdt");
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].usdt)
			print_row(&s->v[i], false, false);
	out_arr_close();
	if (pl->nleft)
		out_text("left out (no function entries):\n");
	out_arr_open("left_out");
	for (size_t i = 0; i < pl->nleft; i++) {
		const struct bft_object *ob = &pl->objs[pl->left[i].obj];
		const struct bft_func *f = &ob->left_out[pl->left[i].func];

		out_obj_open(NULL);
		out_str("object", "  %-22s ", ob->name);
		out_u64("offset", "0x%08llx ", f->offset);
		out_str("symbol", "%s", bft_func_name(f));
		out_str("mangled", NULL, f->names[0].raw);
		out_str("path", NULL, ob->path);
		out_str("why", "  (%s)\n", bft_func_why(f));
		out_obj_close();
	}
	out_arr_close();
	out_end();
	fprintf(stderr, "bfctl: %zu functions in %zu objects%s%s%s%s (dry run: nothing attached)\n",
		pl->npicks, pl->nobjs, s->nusdt ? ", and USDT probes" : "",
		s->nhooks ? ", and exception hooks" : "",
		pl->nleft ? ", fragments left out" : "",
		s->fallback ? ", entries only" : "");
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
	bool usdt;		/* BFT_PF_USDT: a site, not a function */
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
	k->usdt = m->flags & BFT_PF_USDT;
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

/*
 * The function, or the USDT site, at (file, offset) in the table: a live
 * probe of pid first.  A site and a function at one address are two
 * things with two ids.
 */
static const struct known *known_find(const struct known_list *l,
				      const struct stat *st, uint64_t offset,
				      uint32_t pid, bool usdt)
{
	const struct known *any = NULL;

	for (size_t i = 0; i < l->n; i++) {
		const struct known *k = &l->v[i];

		if (!k->file_ok || k->dev != st->st_dev || k->ino != st->st_ino ||
		    k->offset != offset || k->usdt != usdt)
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
	int rc = ctl_detach(c, (uint32_t)pid);

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

/*
 * Whether every probe that failed was refused alone: a function the
 * backend cannot rewrite (-EOPNOTSUPP) or in a library not loaded yet
 * (-ENOENT).
 */
static bool only_refusals(const int *results, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (results[i] && results[i] != -EOPNOTSUPP &&
		    results[i] != -ENOENT)
			return false;
	return true;
}

int probes_attach(struct ctl *c, pid_t pid, struct probe_set *s)
{
	struct known_list known = { .tgid = (uint32_t)pid };
	struct bft_nl_probe *probes;
	size_t *row_of, n = 0, skipped = 0, ok = 0, refused = 0, usdt_attached = 0;
	uint32_t next_id;
	int *results, rc, ret = EXIT_OK;

	rc = ctl_get_methods(c, known_cb, &known);
	if (rc) {
		free(known.v);
		return ctl_nl_fail(c, "reading the method table", rc);
	}
	next_id = known.max_id + 1;
	probes = calloc(s->n + 1, sizeof(*probes));
	results = calloc(s->n + 1, sizeof(*results));
	row_of = calloc(s->n + 1, sizeof(*row_of));
	if (!probes || !results || !row_of) {
		err_msg("out of memory");
		ret = EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct probe_row *r = &s->v[i];
		const struct known *k = NULL, *other;
		struct stat st = { .st_dev = (dev_t)r->dev, .st_ino = (ino_t)r->ino };

		if (r->dev || r->ino)
			k = known_find(&known, &st, r->p.offset, (uint32_t)pid, !!r->usdt);
		other = r->dev || r->ino ?
			known_find(&known, &st, r->p.offset, (uint32_t)pid, !r->usdt) : NULL;
		/* one address takes one probe (usdt_room() within one set) */
		if (other && other->tgid == (uint32_t)pid && !other->gone) {
			err_msg("%s is left out: process %d has a %s probe at its address already (method %u)",
				r->sig, (int)pid, other->usdt ? "USDT" : "function", other->id);
			continue;
		}
		if (k && k->tgid == (uint32_t)pid && !k->gone) {
			vlog(c, 1, "%s is attached already (method %u)", r->sig, k->id);
			r->p.method_id = k->id;
			if (r->f)
				skipped++;
			continue;
		}
		/* One function, one id, whichever process runs it. */
		r->p.method_id = k ? k->id : next_id++;
		probes[n] = r->p;
		row_of[n] = i;
		vlog(c, 3, "probe %zu: id %u flags %#x offset %#" PRIx64 " path %s name %s",
		     n, r->p.method_id, r->p.flags, r->p.offset, r->p.path, r->p.name);
		n++;
	}
	if (!n) {
		if (s->quiet_known)
			vlog(c, 1, "every selected function is attached to process %d already",
			     (int)pid);
		else
			err_msg("every selected function is attached to process %d already",
				(int)pid);
		ret = EXIT_OK;
		goto out;
	}
	vlog(c, 2, "attaching %zu probes to process %d", n, (int)pid);
	rc = ctl_attach(c, (uint32_t)pid, probes, n, results);
	for (size_t i = 0; i < n; i++)
		ok += results[i] == 0;
	if (!rc && ok == n)
		goto done;
	if (!rc && ok && c->be->refusals_partial && only_refusals(results, n)) {
		/* the backend cannot take some functions: the rest stay */
		for (size_t i = 0; i < n; i++)
			if (results[i])
				vlog(c, 1, "not attached: %s: %s", probes[i].name,
				     strerror(-results[i]));
		refused = n - ok;
		goto done;
	}
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
	out_u64("attached", "%llu probes", n - refused);
	out_u64("refused", refused ? ", %llu refused by the backend (-v names them)" : NULL,
		refused);
	out_u64("already_attached", skipped ? ", %llu attached already" : NULL, skipped);
	out_u64("hooks", s->nhooks ? " (%llu of them exception hooks)" : NULL, s->nhooks);
	for (size_t i = 0; i < n; i++)
		usdt_attached += s->v[row_of[i]].usdt && !results[i];
	out_u64("usdt_probes", usdt_attached ? " (%llu of them USDT probes)" : NULL,
		usdt_attached);
	out_bool("entries_only_for_safety", s->fallback ? ", entries only" : NULL,
		 s->fallback);
	out_text("\n");
	out_arr_open("probes");
	for (size_t i = 0; i < n; i++)
		if (s->v[row_of[i]].f && !results[i])
			print_row(&s->v[row_of[i]], true, c->verbose);
	out_arr_close();
	out_arr_open("hooks");
	for (size_t i = 0; i < n; i++)
		if (s->v[row_of[i]].hook && !s->v[row_of[i]].f && !results[i])
			print_row(&s->v[row_of[i]], true, c->verbose);
	out_arr_close();
	out_arr_open("usdt");
	for (size_t i = 0; i < n; i++)
		if (s->v[row_of[i]].usdt && !results[i])
			print_row(&s->v[row_of[i]], true, c->verbose);
	out_arr_close();
	out_end();
out:
	free(known.v);
	free(probes);
	free(results);
	free(row_of);
	return ret;
}
