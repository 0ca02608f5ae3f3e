/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfctl run, shared by the launch (run.c) and the following of the
 * command's processes (run_follow.c).
 */
#ifndef BFCTL_RUN_H
#define BFCTL_RUN_H

#include <stdint.h>
#include <sys/types.h>

#include "capture/bft_owner.h"
#include "probes.h"

#define RUN_NAMES 8	/* programs named in the "nothing matched" summary */

/* <link.h>'s enum r_state; r_state follows r_version (int, padded),
 * r_map and r_brk in struct r_debug. */
#define R_STATE_OFFSET	24
#define RT_CONSISTENT	0
#define RT_ADD		1
#define RT_DELETE	2

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
	struct strlist pending;	/* the last resolve's patterns without object */
	struct bft_owner self;	/* this bfctl, as status's files name it */
};

/*
 * The loader's hook in a process: _dl_debug_state() and r_debug, 0 where
 * it has none (a static program, or a loader without them).
 */
struct run_loader {
	uint64_t bp, r_debug;
	bool armed;		/* a breakpoint on bp for the session */
	bool adding;		/* r_state was RT_ADD at the last stop */
	bool deleting;		/* r_state was RT_DELETE at the last stop */
};

/*
 * pid is stopped on its exec, before its first instruction: run it to
 * the hold point (its libraries mapped, none of their code run).  On
 * failure the message is out and the process killed.  *gone is its wait
 * status if it ended meanwhile (exited, or killed here), else -1.
 */
int run_hold(struct ctl *c, pid_t pid, int *gone, struct run_loader *ld);

/*
 * The loader of pid: its file as bfctl opens it (into path), the
 * addresses of its _dl_debug_state() and r_debug, and pid's entry point.
 * 0; RUN_LOADER_NONE for a static program; RUN_LOADER_NO_HOOK for a
 * loader without those symbols (*entry still set); or -errno.  Except at
 * 0, err says why.
 */
#define RUN_LOADER_NONE		1
#define RUN_LOADER_NO_HOOK	2
int run_find_loader(pid_t pid, char *path, size_t len, uint64_t *bp,
		    uint64_t *r_debug, uint64_t *entry, char *err, size_t errlen);

/* PTRACE_O_EXITKILL on or off for pid, the other options kept. */
int run_exitkill(pid_t pid, bool on);

/* Write the byte want at addr in stopped pid, the old one into *was: 0 or -errno. */
int run_poke_byte(pid_t pid, uint64_t addr, uint8_t want, uint8_t *was);

/*
 * Follow the libraries held pid loads from now on (run_loads.c): arm the
 * hook ld for the session when following.  0, or -errno with the message
 * out (loads are then not followed, the rest goes on).
 */
int run_loads_arm(struct run *r, pid_t pid, struct run_loader *ld);

/* Is tid, in a SIGTRAP stop, on the hook of its process? */
bool run_loads_hit(pid_t tid, const struct run_loader *ld);

/*
 * tid of tgid stopped on the hook: after a load, attach what the patterns
 * select in the new libraries; then step it past the hook.  1 when probes
 * were attached, 0 when none, RUN_LOADS_LOST when the attach failed and
 * the process lost every probe (probes_attach's rollback), or -errno.
 */
#define RUN_LOADS_LOST 2
int run_loads_on_hit(struct run *r, pid_t tid, pid_t tgid, struct run_loader *ld);

/*
 * The same without the step: what the loader's r_state says, read in
 * tid, now calls for (attach in new libraries, detach from unmapped ones).
 * r->c must be connected.  1, 0 or RUN_LOADS_LOST as above.
 */
int run_loads_state(struct run *r, pid_t tid, pid_t tgid, struct run_loader *ld);

/* Would r_state, read in tid now, make run_loads_state() attach or detach? */
bool run_loads_due(pid_t tid, const struct run_loader *ld);

/*
 * Before tid is let go: lift the hook, and if tid stopped on it
 * (trapped: a SIGTRAP stop), step it past.  1 if it did (its SIGTRAP is
 * bfctl's, not to be delivered), 0, or -errno.
 */
int run_loads_let_go(pid_t tid, struct run_loader *ld, bool trapped);

/*
 * Resolve the patterns in pid, held, attach, and start tracing with the
 * first process that gets probes.  EXIT_OK: traced; EXIT_NOMATCH: nothing
 * matched (said at -v when following); else the message is out.  The
 * process is left held either way, nothing of it attached on failure.
 */
int run_attach(struct run *r, pid_t pid);

/*
 * Follow leader, seized and released from its first image (traced or
 * not, ld its loader hook), the libraries it loads, and every process it
 * creates, until it ends; then detach from anything left.  Returns
 * EXIT_OK with its wait status in *status, or an exit code for a failure
 * of bfctl's own.
 */
int run_follow(struct run *r, pid_t leader, bool traced,
	       const struct run_loader *ld, int *status);

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
