// SPDX-License-Identifier: GPL-2.0
/*
 * bfctl methods: the kernel's method table, one row per probe.  Detached
 * probes stay in it until the next start (BFT_PF_GONE), so that names
 * outlive targets; --all shows them.
 */
#include "bfctl.h"
#include "symbols/bft_symclass.h"
#include "output.h"

struct methods_ctx {
	uint32_t tgid;		/* 0: all */
	bool all;		/* detached (retired) methods too */
	bool verbose;
	size_t n;
};

static int method_cb(const struct bft_nl_method *m, void *arg)
{
	struct methods_ctx *x = arg;

	bool gone = m->flags & BFT_PF_GONE;

	if ((x->tgid && m->tgid != x->tgid) || (gone && !x->all))
		return 0;
	x->n++;
	out_obj_open(NULL);
	out_u64("tgid", "%-8llu", m->tgid);
	out_u64("id", " %6llu", m->method_id);
	out_u64("hits", " %12llu", m->hits);
	out_u64("flags", " %#4llx", m->flags & ~BFT_PF_GONE);
	out_bool("gone", NULL, gone);
	out_u64("offset", " 0x%08llx", m->offset);
	out_str("name", " %s", m->name);
	out_str_or_null("hook", bft_hook_name(m->flags) ? "  [exception hook: %s]" : NULL,
			bft_hook_name(m->flags));
	out_text("%s", gone ? " (detached)" : "");
	out_str("path", x->verbose ? "  %s" : NULL, m->path);
	out_text("\n");
	out_obj_close();
	return 0;
}

int cmd_methods(struct ctl *c, int argc, char **argv)
{
	struct methods_ctx x = { 0 };
	uint64_t pid = 0;
	const struct arg_def defs[] = {
		{ .name = "pid", .short_name = 'P', .kind = ARG_UINT, .dest = &pid,
		  .meta = "PID", .min = 1, .max = 0x7fffffff,
		  .help = "only this process's probes" },
		{ .name = "all", .short_name = 'a', .kind = ARG_FLAG, .dest = &x.all,
		  .help = "also detached probes, kept until the next start" },
		ARG_END
	};
	int rc;

	rc = cmd_args(c, current_cmd, defs, argc, argv, ARGS_INTERLEAVED, NULL, NULL);
	if (rc >= 0)
		return rc;
	rc = ctl_connect(c, 0);
	if (rc)
		return rc;
	x.tgid = (uint32_t)pid;
	x.verbose = c->verbose;
	out_begin();
	out_text("%-8s %6s %12s %4s %10s %s\n", "pid", "id", "hits", "flags",
		 "offset", "signature");
	out_arr_open("methods");
	rc = ctl_get_methods(c, method_cb, &x);
	out_arr_close();
	out_end();
	if (rc)
		rc = ctl_nl_fail(c, "methods", rc);
	vlog(c, 1, "%zu methods", x.n);
	ctl_close(c);
	return rc;
}
