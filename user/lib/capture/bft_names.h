/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_names: the names of the values of include/uapi/linux/bftrace.h
 * (modes, events, options, commands, feature bits), for printing and for
 * parsing what a user typed.  Every backend prints the same names.
 */
#ifndef BFT_NAMES_H
#define BFT_NAMES_H

#include <stddef.h>
#include <stdint.h>

/*
 * Lower-case names ("tracing", "heartbeat", "buf_size", "get_caps"),
 * or "?" for a value this build does not know.
 */
const char *bft_mode_name(unsigned int mode);
const char *bft_event_name(unsigned int event);
const char *bft_opt_name(unsigned int opt);
const char *bft_cmd_name(unsigned int cmd);
/* The enum bft_opt value of a name from bft_opt_name(), or -ENOENT. */
int bft_opt_by_name(const char *name);
/*
 * The BFT_CMD_* of a mode command name ("start", ..., "unsuspend"),
 * or -ENOENT.
 */
int bft_mode_cmd_by_name(const char *name);
/* "entry,return"-style text of BFT_FEAT_* bits into buf; returns buf. */
char *bft_features_str(uint64_t features, char *buf, size_t len);

#endif /* BFT_NAMES_H */
