// SPDX-License-Identifier: GPL-2.0
/* bfctl attach: probes on the functions of a running process, by pattern. */
#include "output.h"
#include "probes.h"

static const struct cmd *self(void)
{
	return cmd_find("attach");
}

/* Probes record nothing until a session starts: say so, once attached. */
static void note_not_recording(struct ctl *c)
{
	struct bft_nl_status st;

	if (ctl_get_status(c, &st))
		return;
	if (st.mode != BFT_MODE_TRACING && st.mode != BFT_MODE_PAUSED &&
	    st.mode != BFT_MODE_SUSPENDED)
		err_msg("nothing records yet: calls are recorded once a session starts ('bfctl start --persist', 'bfctl record' in another shell to see them, or bfcollector when its HQ says start)");
	bft_nl_status_free(&st);
}

int cmd_attach(struct ctl *c, int argc, char **argv)
{
	struct probe_opts o = { 0 };
	uint64_t pid = 0;
	const struct arg_def defs[] = {
		{ .name = "pid", .short_name = 'P', .kind = ARG_UINT, .dest = &pid,
		  .meta = "PID", .min = 1, .max = 0x7fffffff,
		  .help = "the process to trace" },
		PROBE_ARG_DEFS(&o),
		ARG_END
	};
	struct probe_set set = { 0 };
	struct bft_plan pl;
	int rc;

	rc = cmd_args(c, self(), defs, argc, argv, ARGS_INTERLEAVED, NULL, NULL);
	if (rc >= 0)
		goto out;
	if (!pid) {
		err_msg("attach: --pid is required (see 'bfctl attach --help')");
		rc = EXIT_USAGE;
		goto out;
	}
	rc = probes_select(c, (pid_t)pid, &o, &pl);
	if (rc)
		goto out;
	if (!o.list)
		rc = ctl_connect(c, BFT_FEAT_ENTRY);
	/*
	 * bfctl exits at once, and the module detaches what a closed socket
	 * attached outside a session unless it was attached to persist.
	 */
	if (!o.list && !rc)
		ctl_attach_persist(c);
	if (!rc)
		rc = probes_build(c, (pid_t)pid, &pl, &o, probes_features(c), &set);
	if (!rc && o.list)
		probes_print_list(&pl, &set, (pid_t)pid);
	else if (!rc)
		rc = probes_attach(c, (pid_t)pid, &set);
	if (!rc && !o.list)
		note_not_recording(c);
	probes_set_free(&set);
	ctl_close(c);
	bft_plan_free(&pl);
out:
	strlist_free(&o.patterns);
	strlist_free(&o.usdt);
	return rc;
}
