// SPDX-License-Identifier: GPL-2.0
/*
 * bft_names: the names of the contract's values (modes, events, options,
 * commands, feature bits) for printing and parsing, the same for every
 * backend.  See bft_names.h.
 */
#include "capture/bft_names.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <linux/bftrace.h>

/* the mode names the module and the BPF backend say too */
#include "../../../kmod/bft_rules.h"

static const char *const event_names[] = {
	[BFT_EV_UNSPEC]		= "unspec",
	[BFT_EV_HEARTBEAT]	= "heartbeat",
	[BFT_EV_MODE]		= "mode",
	[BFT_EV_TARGET_EXIT]	= "target_exit",
	[BFT_EV_PROBE_FAILED]	= "probe_failed",
};

static const char *const opt_names[] = {
	[BFT_OPT_UNSPEC]	= "unspec",
	[BFT_OPT_BUF_SIZE]	= "buf_size",
	[BFT_OPT_FLUSH_MS]	= "flush_ms",
	[BFT_OPT_HEARTBEAT_MS]	= "heartbeat_ms",
	[BFT_OPT_MAX_DEPTH]	= "max_depth",
	[BFT_OPT_TIME_RES_NS]	= "time_res_ns",
	[BFT_OPT_WATERMARK]	= "watermark",
	[BFT_OPT_MAX_PROBES]	= "max_probes",
	[BFT_OPT_OVERWRITE]	= "overwrite",
	[BFT_OPT_MAX_RING_MEM]	= "max_ring_mem",
};

static const char *const cmd_names[] = {
	[BFT_CMD_UNSPEC]	= "unspec",
	[BFT_CMD_GET_CAPS]	= "get_caps",
	[BFT_CMD_ATTACH]	= "attach",
	[BFT_CMD_DETACH]	= "detach",
	[BFT_CMD_START]		= "start",
	[BFT_CMD_STOP]		= "stop",
	[BFT_CMD_PAUSE]		= "pause",
	[BFT_CMD_UNPAUSE]	= "unpause",
	[BFT_CMD_SUSPEND]	= "suspend",
	[BFT_CMD_UNSUSPEND]	= "unsuspend",
	[BFT_CMD_GET_STATUS]	= "get_status",
	[BFT_CMD_GET_OPT]	= "get_opt",
	[BFT_CMD_SET_OPT]	= "set_opt",
	[BFT_CMD_GET_METHODS]	= "get_methods",
	[BFT_CMD_EVENT]		= "event",
	[BFT_CMD_GET_EXCEPTIONS] = "get_exceptions",
};

static const char *const feat_names[] = {
	"entry", "return", "noret", "pause", "suspend", "events", "read",
	"unwind", "owner", "attach_persist",
};

_Static_assert(sizeof(opt_names) / sizeof(opt_names[0]) == BFT_OPT_MAX + 1,
	       "every option has a name");
_Static_assert(sizeof(cmd_names) / sizeof(cmd_names[0]) == BFT_CMD_MAX + 1,
	       "every command has a name");

#define NAME_OF(table, v) \
	((v) < sizeof(table) / sizeof((table)[0]) && (table)[v] ? (table)[v] : "?")

const char *bft_mode_name(unsigned int mode)
{
	return bft_mode_str(mode > INT_MAX ? -1 : (int)mode);
}

const char *bft_event_name(unsigned int event)
{
	return NAME_OF(event_names, event);
}

const char *bft_opt_name(unsigned int opt)
{
	return NAME_OF(opt_names, opt);
}

const char *bft_cmd_name(unsigned int cmd)
{
	return NAME_OF(cmd_names, cmd);
}

int bft_opt_by_name(const char *name)
{
	for (unsigned int i = BFT_OPT_UNSPEC + 1; i <= BFT_OPT_MAX; i++)
		if (!strcmp(name, opt_names[i]))
			return (int)i;
	return -ENOENT;
}

int bft_mode_cmd_by_name(const char *name)
{
	for (unsigned int i = BFT_CMD_START; i <= BFT_CMD_UNSUSPEND; i++)
		if (!strcmp(name, cmd_names[i]))
			return (int)i;
	return -ENOENT;
}

char *bft_features_str(uint64_t features, char *buf, size_t len)
{
	size_t used = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	for (unsigned int bit = 0; bit < 64; bit++) {
		char unknown[16];
		const char *name;
		int w;

		if (!(features & (1ULL << bit)))
			continue;
		if (bit < sizeof(feat_names) / sizeof(feat_names[0])) {
			name = feat_names[bit];
		} else {
			snprintf(unknown, sizeof(unknown), "bit%u", bit);
			name = unknown;
		}
		w = snprintf(buf + used, len - used, "%s%s", used ? "," : "", name);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
	return buf;
}
