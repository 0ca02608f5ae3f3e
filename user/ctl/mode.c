// SPDX-License-Identifier: GPL-2.0
/*
 * bfctl start|stop|pause|unpause|suspend|unsuspend: the Bytefrog agent
 * modes (bftrace.h, BFT_CMD_START...).
 */
#include <string.h>

#include "bfctl.h"
#include "follow.h"
#include "output.h"

static uint64_t feature_of(int cmd)
{
	switch (cmd) {
	case BFT_CMD_PAUSE:
	case BFT_CMD_UNPAUSE:
		return BFT_FEAT_PAUSE;
	case BFT_CMD_SUSPEND:
	case BFT_CMD_UNSUSPEND:
		return BFT_FEAT_SUSPEND;
	default:
		return 0;
	}
}

int cmd_mode(struct ctl *c, int argc, char **argv)
{
	int cmd = bft_mode_cmd_by_name(current_cmd->name), rc;
	bool persist = false;
	const struct arg_def start_defs[] = {
		{ .name = "persist", .kind = ARG_FLAG, .dest = &persist,
		  .help = "the session outlives bfctl (required: bfctl exits at once)" },
		ARG_END
	};
	uint8_t mode;

	rc = cmd_args(c, current_cmd, cmd == BFT_CMD_START ? start_defs : NULL,
		      argc, argv, ARGS_INTERLEAVED, NULL, NULL);
	if (rc >= 0)
		return rc;
	if (cmd < 0) {
		err_msg("%s: not a mode command", current_cmd->name);
		return EXIT_USAGE;
	}
	/*
	 * A session belongs to the socket that started it and stops when
	 * that closes; bfctl start would stop its session as it exits.
	 */
	if (cmd == BFT_CMD_START && !persist) {
		err_msg("start: a session stops when its starter exits, and bfctl start exits at once: "
			"use 'bfctl start --persist' (ended by 'bfctl stop'), or 'bfctl run'");
		return EXIT_USAGE;
	}
	rc = ctl_connect(c, feature_of(cmd));
	if (rc)
		return rc;
	/* a follower would see the end anyway, but might attach meanwhile */
	if (cmd == BFT_CMD_STOP)
		follow_end(c, 0);
	vlog(c, 3, "send %s", bft_cmd_name((unsigned int)cmd));
	if (cmd == BFT_CMD_START)
		rc = ctl_start(c, persist, &mode);
	else
		rc = ctl_mode_cmd(c, cmd, &mode);
	if (rc) {
		rc = ctl_nl_fail(c, current_cmd->name, rc);
	} else {
		vlog(c, 1, "%s: mode is now %s", current_cmd->name, bft_mode_name(mode));
		out_begin();
		out_str("mode", "%s\n", bft_mode_name(mode));
		out_end();
		if (cmd == BFT_CMD_START || cmd == BFT_CMD_UNSUSPEND)
			ctl_warn_no_reader(c);
	}
	ctl_close(c);
	return rc;
}
