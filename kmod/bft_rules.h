/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rules of a session that both backends obey: the options' defaults
 * and bounds and when one may change, which mode command is allowed in
 * which mode and where it leads, and the ring watermark.  A tool must see
 * the same values, names and refusals from bftrace.ko
 * (kmod/bft_control.c, kmod/bft_ring.c) and from the BPF backend
 * (user/lib/capture/bft_bpf_control.c), so there is one copy of them.
 *
 * Compiled by the kernel and by user space (C11), so it uses plain C
 * types and needs nothing but the UAPI header; callers map a refusal to
 * their errno and message channel.
 */
#ifndef BFT_RULES_H
#define BFT_RULES_H

#ifndef __KERNEL__
#include <stdbool.h>
#include <stddef.h>
#endif
#include <linux/bftrace.h>

/* ---- options ---- */

struct bft_opt_rule {
	unsigned long long def, min, max;
	unsigned int flags;	/* BFT_OPTF_* */
};

/*
 * Option @id (1..BFT_OPT_MAX).  Every option the protocol defines is
 * here; which ones a backend implements is its own business
 * (BFT_OPT_OVERWRITE: neither does yet).
 */
static inline const struct bft_opt_rule *bft_opt_rule(unsigned int id)
{
	static const struct bft_opt_rule rules[BFT_OPT_MAX + 1] = {
		[BFT_OPT_BUF_SIZE] = { 1U << 20, 1U << 12, 1U << 28,
				       BFT_OPTF_POW2 | BFT_OPTF_IDLE_ONLY },
		[BFT_OPT_FLUSH_MS] = { 100, 1, 10000, 0 },
		[BFT_OPT_HEARTBEAT_MS] = { 1000, 10, 60000, 0 },
		/* entry and exit must agree on what is too deep */
		[BFT_OPT_MAX_DEPTH] = { 0, 0, BFT_URETPROBE_DEPTH,
					BFT_OPTF_IDLE_ONLY },
		/* streams carry their unit in SYNC; one unit per session */
		[BFT_OPT_TIME_RES_NS] = { 1000, 1, 1000000, BFT_OPTF_IDLE_ONLY },
		/* 0: bft_watermark()'s default */
		[BFT_OPT_WATERMARK] = { 0, 0, 1U << 28, 0 },
		[BFT_OPT_MAX_PROBES] = { 4096, 1, 65536, 0 },
		[BFT_OPT_OVERWRITE] = { 0, 0, 1, BFT_OPTF_IDLE_ONLY },
		/* MiB: a u32 of bytes could not hold 256 CPUs of 16 MiB rings */
		[BFT_OPT_MAX_RING_MEM] = { 1024, 1, 1U << 20, 0 },
	};

	return &rules[id];
}

/* Why an option cannot take a value now (bft_opt_refusal()). */
enum bft_opt_refusal {
	BFT_OPT_OK,
	BFT_OPT_OUT_OF_RANGE,	/* -ERANGE, BFT_OPT_RANGE_FMT */
	BFT_OPT_BUSY,		/* -EBUSY, BFT_OPT_BUSY_FMT */
	BFT_OPT_BELOW_PROBES,	/* -ERANGE, BFT_OPT_PROBES_FMT */
};

/* id, value, min, max, " or not a power of 2" or "" */
#define BFT_OPT_RANGE_FMT	"option %u: %llu is outside [%llu, %llu]%s"
/* id, "probes are attached" or the mode's name */
#define BFT_OPT_BUSY_FMT	"option %u cannot change while %s"
/* the number of probes attached */
#define BFT_OPT_PROBES_FMT	"%u probes are attached already"

static inline bool bft_recording(int mode)
{
	return mode == BFT_MODE_TRACING || mode == BFT_MODE_PAUSED;
}

static inline bool bft_session_active(int mode)
{
	return bft_recording(mode) || mode == BFT_MODE_SUSPENDED;
}

/*
 * Whether option @id (1..BFT_OPT_MAX, one the backend implements) may
 * become @val in @mode with @nr_probes probes attached.  A backend checks
 * its own resources (memory, unread records) after this.
 */
static inline enum bft_opt_refusal
bft_opt_refusal(unsigned int id, unsigned long long val, int mode,
		unsigned int nr_probes)
{
	const struct bft_opt_rule *r = bft_opt_rule(id);

	if (val < r->min || val > r->max ||
	    ((r->flags & BFT_OPTF_POW2) && (!val || (val & (val - 1)))))
		return BFT_OPT_OUT_OF_RANGE;
	if ((r->flags & BFT_OPTF_IDLE_ONLY) &&
	    (bft_session_active(mode) || nr_probes))
		return BFT_OPT_BUSY;
	if (id == BFT_OPT_MAX_PROBES && val < nr_probes)
		return BFT_OPT_BELOW_PROBES;
	return BFT_OPT_OK;
}

/* ---- modes ---- */

/*
 * The mode's name, as tools print it and refusals say it; "?" for a value
 * that is no mode.
 */
static inline const char *bft_mode_str(int mode)
{
	static const char *const names[BFT_MODE_SHUTTING_DOWN + 1] = {
		[BFT_MODE_INITIALIZING] = "initializing",
		[BFT_MODE_TRACING] = "tracing",
		[BFT_MODE_PAUSED] = "paused",
		[BFT_MODE_SUSPENDED] = "suspended",
		[BFT_MODE_SHUTTING_DOWN] = "shutting_down",
	};

	if (mode < 0 || mode > BFT_MODE_SHUTTING_DOWN)
		return "?";
	return names[mode];
}

/* bft_mode_next() of a command the mode forbids, and of a non-mode command */
#define BFT_MODE_REFUSED	(-1)
#define BFT_MODE_NOT_A_CMD	(-2)
/* the mode's name */
#define BFT_MODE_REFUSAL_FMT	"not allowed while %s"

/*
 * Where command @cmd leads from @mode: the next mode, BFT_MODE_REFUSED (the
 * caller says BFT_MODE_REFUSAL_FMT) or BFT_MODE_NOT_A_CMD.  A stop is
 * always allowed: it is how every session ends.
 */
static inline int bft_mode_next(unsigned int cmd, int mode)
{
	switch (cmd) {
	case BFT_CMD_START:
		return bft_session_active(mode) ? BFT_MODE_REFUSED :
						  BFT_MODE_TRACING;
	case BFT_CMD_STOP:
		return BFT_MODE_SHUTTING_DOWN;
	case BFT_CMD_PAUSE:
		return mode == BFT_MODE_TRACING ? BFT_MODE_PAUSED :
						  BFT_MODE_REFUSED;
	case BFT_CMD_UNPAUSE:
		return mode == BFT_MODE_PAUSED ? BFT_MODE_TRACING :
						 BFT_MODE_REFUSED;
	case BFT_CMD_SUSPEND:
		return mode == BFT_MODE_TRACING ? BFT_MODE_SUSPENDED :
						  BFT_MODE_REFUSED;
	case BFT_CMD_UNSUSPEND:
		return mode == BFT_MODE_SUSPENDED ? BFT_MODE_TRACING :
						    BFT_MODE_REFUSED;
	}
	return BFT_MODE_NOT_A_CMD;
}

/* ---- rings ---- */

/*
 * Bytes a ring holds before its reader is woken, from the watermark
 * option (0: a quarter of the ring) and the ring's size: at most half,
 * so a woken reader has the other half's time to drain it.
 */
static inline unsigned long long bft_watermark(unsigned long long opt,
					       unsigned long long size)
{
	unsigned long long wm = opt ? opt : size / 4;

	return wm < size / 2 ? wm : size / 2;
}

/* ---- USDT arguments ---- */

static inline bool bft_usdt_reg_ok(unsigned int reg, bool none_ok)
{
	return reg < BFT_USDT_NREGS || reg == BFT_USDT_SITE ||
	       (none_ok && reg == BFT_USDT_NOREG);
}

/*
 * Why a USDT argument cannot be evaluated (uapi 2.4), or NULL if it can:
 * "size", "sign", "pad", "register", "shift", "scale" or "loc", the
 * word both backends' refusals name.
 */
static inline const char *bft_usdt_arg_bad(const struct bft_usdt_arg *a)
{
	if (a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
		return "size";
	if (a->is_signed > 1)
		return "sign";
	if (a->pad)
		return "pad";
	switch (a->loc) {
	case BFT_USDT_CONST:
		if (a->base != BFT_USDT_NOREG || a->index != BFT_USDT_NOREG)
			return "register";
		break;
	case BFT_USDT_REG:
		if (!bft_usdt_reg_ok(a->base, false) ||
		    a->index != BFT_USDT_NOREG)
			return "register";
		if (a->shift != 0 && a->shift != 8)
			return "shift";
		break;
	case BFT_USDT_MEM:
		if (!bft_usdt_reg_ok(a->base, true) ||
		    (a->index != BFT_USDT_NOREG && a->index >= BFT_USDT_NREGS))
			return "register";
		if (a->scale != 1 && a->scale != 2 && a->scale != 4 &&
		    a->scale != 8)
			return "scale";
		break;
	default:
		return "loc";
	}
	if (a->loc != BFT_USDT_MEM && a->scale != 1)
		return "scale";
	if (a->loc != BFT_USDT_REG && a->shift)
		return "shift";
	return NULL;
}

#endif /* BFT_RULES_H */
