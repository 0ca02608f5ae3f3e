/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfctl run, shared by the launch (run.c) and the following of the
 * command's processes (run_follow.c).
 */
#ifndef BFCTL_RUN_H
#define BFCTL_RUN_H

#include <stdint.h>
#include <sys/types.h>

#include "probes.h"

#define RUN_NAMES 8	/* programs named in the "nothing matched" summary */

struct run {
	struct ctl *c;
	struct probe_opts *o;
	bool suspended, persist, follow;
	bool started;		/* tracing started (or found running) */
	size_t traced;		/* processes that got probes */
	size_t searched;	/* program images the patterns were resolved in */
	char names[RUN_NAMES][64];	/* the first of them, without a match */
	size_t nnames;
	bool names_cut;		/* more than fit */
};

/*
 * pid is stopped on its exec, before its first instruction: run it to
 * the hold point (its libraries mapped, none of their code run).  On
 * failure the message is out and the process killed.  *gone is its wait
 * status if it ended meanwhile (exited, or killed here), else -1.
 */
int run_hold(struct ctl *c, pid_t pid, int *gone);

/*
 * Resolve the patterns in pid, held, attach, and start tracing with the
 * first process that gets probes.  EXIT_OK: traced; EXIT_NOMATCH: nothing
 * matched (said at -v when following); else the message is out.  The
 * process is left held either way, nothing of it attached on failure.
 */
int run_attach(struct run *r, pid_t pid);

/*
 * Follow leader, seized and released from its first image (traced or
 * not), and every process it creates, until it ends; then detach from
 * anything left.  Returns EXIT_OK with its wait status in *status, or an
 * exit code for a failure of bfctl's own.
 */
int run_follow(struct run *r, pid_t leader, bool traced, int *status);

/* A held child parked on a `jmp .` so another tracer can seize it. */
struct run_park {
	uint64_t rip;
	uint8_t saved[2];
};

/*
 * Write `jmp .` at the held child's rip and let go of it (it spins);
 * 0 or -errno, the message out.  The caller kills the child on failure.
 */
int run_inline_park(pid_t pid, struct run_park *p);

/*
 * Stop the parked child's world, put its two bytes back, let it run:
 * 0 or -errno, the message out.  The caller kills the child on failure.
 */
int run_inline_unpark(pid_t pid, const struct run_park *p);

/* SIGKILL pid and wait for it: returns its wait status. */
int run_kill(pid_t pid);

#endif /* BFCTL_RUN_H */
