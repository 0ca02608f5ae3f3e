/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfctl attach, following the target's later loads: a follower process
 * (follow.c) that stays for the session, its loader hook (follow_hook.c)
 * and the state file that status, detach and stop read (follow_state.c).
 */
#ifndef BFCTL_FOLLOW_H
#define BFCTL_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bfctl.h"
#include "capture/bft_owner.h"
#include "probes.h"

/* ---- the loader hook (follow_hook.c) ---- */

struct bft_loadhook_skel;
struct bpf_link;

struct follow_hook {
	struct bft_loadhook_skel *skel;
	struct bpf_link *link;
	uint64_t r_debug;	/* the target's r_debug */
};

/* Put the hook on tgid's _dl_debug_state(): 0, or -errno and err says why. */
int follow_hook_arm(struct follow_hook *h, pid_t tgid, char *err, size_t errlen);

/* tid in a signal-delivery stop for sig: was that the hook's?  Takes it if so. */
bool follow_hook_took(struct follow_hook *h, pid_t tid, int sig);

/* Is a signal of the hook's still on its way to tid? */
bool follow_hook_owes(struct follow_hook *h, pid_t tid);
/* tid has ended: what the hook counted for it goes. */
void follow_hook_forget(struct follow_hook *h, pid_t tid);

/* Take the uprobe out (no stop is sent from then on); free keeps none. */
void follow_hook_lift(struct follow_hook *h);
void follow_hook_free(struct follow_hook *h);

/* ---- the state file of a follower (follow_state.c) ---- */

/*
 * $BFT_FOLLOW_DIR, else /run/bftrace/follow: one file per followed
 * process, named by its pid, and the follower's log beside it (PID.log).
 */
const char *follow_dir(void);

struct follow_state {
	pid_t tgid;		/* the followed process */
	struct bft_owner follower;	/* attach's follower, or the bfctl run */
	bool run;		/* a process of bfctl run: not ended by stop */
	char backend[16];
	bool regex;
	unsigned int loads;	/* libraries loads seen */
	struct strlist patterns, usdt, pending;
	char *buf;		/* what the strings point into, once read */
};

/* Write s atomically as the file of s->tgid: 0 or -errno. */
int follow_state_write(const struct follow_state *s);
/* Read the file of tgid: 0, -ENOENT, or -errno; follow_state_free after. */
int follow_state_read(pid_t tgid, struct follow_state *s);
void follow_state_free(struct follow_state *s);
void follow_state_remove(pid_t tgid);
/* Remove the file of tgid, or of every process (0), that this process wrote. */
void follow_state_forget(pid_t tgid);
/* Remove the logs of processes that are gone and no longer followed. */
void follow_sweep(void);
/* Is the follower of s still the process that wrote it (as far as can be told)? */
bool follow_state_live(const struct follow_state *s);

/* ---- the follower (follow.c) ---- */

/*
 * After attach: start the follower of pid's later loads for the
 * patterns of o, once pid's probes (if any) are attached and c closed.
 * It merges the patterns of an earlier follower of pid, which it ends.
 * Returns EXIT_OK once the follower holds pid (its hook in place); else
 * the reason is out and an exit code returned, negated when the follower's
 * own attach failed and detached every probe of pid.
 */
int follow_start(struct ctl *c, struct probe_opts *o, pid_t pid);

/*
 * End the follower of tgid, or of every process (tgid 0) under the
 * backend of c, and wait for it to let go.  Returns how many ended.
 */
int follow_end(const struct ctl *c, pid_t tgid);

/* bfctl status: the followers and their pending patterns. */
void follow_print(const struct ctl *c);

#endif /* BFCTL_FOLLOW_H */
