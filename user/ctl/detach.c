// SPDX-License-Identifier: GPL-2.0
/* bfctl detach: remove the probes of one process, or of all, and end their followers. */
#include <errno.h>

#include "bfctl.h"
#include "follow.h"
#include "output.h"

int cmd_detach(struct ctl *c, int argc, char **argv)
{
	uint64_t pid = 0;
	bool all = false;
	const struct arg_def defs[] = {
		{ .name = "pid", .short_name = 'P', .kind = ARG_UINT, .dest = &pid,
		  .meta = "PID", .min = 1, .max = 0x7fffffff,
		  .help = "the process whose probes go" },
		{ .name = "all", .short_name = 'a', .kind = ARG_FLAG, .dest = &all,
		  .help = "every probe of every process" },
		ARG_END
	};
	int rc, followers;

	rc = cmd_args(c, cmd_find("detach"), defs, argc, argv, ARGS_INTERLEAVED,
		      NULL, NULL);
	if (rc >= 0)
		return rc;
	if (!pid == !all) {
		err_msg("detach: give either --pid PID or --all");
		return EXIT_USAGE;
	}
	rc = ctl_connect(c, 0);
	if (rc)
		return rc;
	/* first, or a load meanwhile would attach again */
	followers = follow_end(c, (pid_t)pid);
	vlog(c, 3, "detach tgid %u", (unsigned int)pid);
	rc = ctl_detach(c, (uint32_t)pid);
	if (rc == -ENOENT && followers)
		rc = 0;		/* its patterns were all pending */
	if (rc == -ENOENT && pid) {
		err_msg("detach: process %u has no probes (%s)", (unsigned int)pid,
			ctl_errmsg(c));
		rc = EXIT_TARGET;
	} else if (rc == -ENOENT) {
		vlog(c, 1, "no process had probes");
		rc = EXIT_OK;
	} else if (rc) {
		rc = ctl_nl_fail(c, "detach", rc);
	} else {
		out_begin();
		out_str("detached", "detached %s", pid ? "process" : "every process");
		if (pid)
			out_u64("pid", " %llu", pid);
		out_text("\n");
		out_end();
	}
	ctl_close(c);
	return rc;
}
