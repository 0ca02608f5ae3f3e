// SPDX-License-Identifier: GPL-2.0
/* bfctl attach: probes on the functions of a running process, by pattern. */
#include <stdlib.h>
#include <string.h>

#include "follow.h"
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

/*
 * Follow pid's later loads, c closed.  Nothing attached (EXIT_NOMATCH) is
 * no error while a pattern waits for its object and a follower takes it;
 * probes attached are success even when no follower can start (said).
 */
static int follow(struct ctl *c, struct probe_opts *o, pid_t pid, int rc,
		  const struct strlist *pending)
{
	int frc;

	if (rc && !(rc == EXIT_NOMATCH && pending->n))
		return rc;
	frc = follow_start(c, o, pid);
	if (frc < 0)
		return -frc;	/* nothing is left attached */
	/* what is attached stays, said to be all there is */
	return rc ? frc : EXIT_OK;
}

int cmd_attach(struct ctl *c, int argc, char **argv)
{
	struct probe_opts o = { 0 };
	struct strlist pending = { 0 };
	uint64_t pid = 0;
	bool no_follow = false;
	const char *be;
	const struct arg_def defs[] = {
		{ .name = "pid", .short_name = 'P', .kind = ARG_UINT, .dest = &pid,
		  .meta = "PID", .min = 1, .max = 0x7fffffff,
		  .help = "the process to trace" },
		PROBE_ARG_DEFS(&o),
		{ .name = "no-follow", .kind = ARG_FLAG, .dest = &no_follow,
		  .help = "do not follow the libraries it loads later" },
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
	/* the inline backend (never chosen by auto) follows nothing */
	be = c->backend ? c->backend : getenv("BFT_BACKEND");
	o.follow = !no_follow && !o.list && !(be && !strcmp(be, "inline"));
	o.pending = &pending;
	rc = probes_select(c, (pid_t)pid, &o, &pl);
	if (rc && !(rc == EXIT_NOMATCH && o.follow && pending.n))
		goto out;
	if (!o.list) {
		int crc = ctl_connect(c, BFT_FEAT_ENTRY);

		rc = crc ? crc : rc;
	}
	/*
	 * bfctl exits at once, and the module detaches what a closed socket
	 * attached outside a session unless it was attached to persist.
	 */
	if (!o.list && c->beh)
		ctl_attach_persist(c);
	if (!rc)
		rc = probes_build(c, (pid_t)pid, &pl, &o, probes_features(c), &set);
	if (!rc && o.list)
		probes_print_list(&pl, &set, (pid_t)pid);
	else if (!rc)
		rc = probes_attach(c, (pid_t)pid, &set);
	if ((!rc || rc == EXIT_NOMATCH) && !o.list && c->beh)
		note_not_recording(c);
	probes_set_free(&set);
	if (o.follow && c->beh) {
		ctl_close(c);
		rc = follow(c, &o, (pid_t)pid, rc, &pending);
	}
	ctl_close(c);
	bft_plan_free(&pl);
out:
	strlist_free(&pending);
	strlist_free(&o.patterns);
	strlist_free(&o.usdt);
	return rc;
}
