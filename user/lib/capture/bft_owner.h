/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_owner: who started a BPF backend session, whether that process is
 * still alive, and the guard process that ends the session when it dies
 * (docs/bpf-backend.md, "Sessions and their owners").
 *
 * A pid alone is no identity: it is reused.  A process is its tgid, its
 * start time and the pid namespace the tgid is counted in.
 */
#ifndef BFT_OWNER_H
#define BFT_OWNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct bft_owner {
	uint32_t tgid;		/* 0: nobody */
	uint64_t start;		/* start time, clock ticks after boot */
	uint64_t pidns;		/* inode of the pid namespace of tgid */
};

/* This process.  0 or -errno (no /proc). */
int bft_owner_self(struct bft_owner *o);
/* Process tgid, counted in our pid namespace.  -ESRCH: no such process. */
int bft_owner_of(uint32_t tgid, struct bft_owner *o);

/*
 * Whether o has exited: 1 it has (or its tgid now names another process,
 * or only its zombie is left), 0 it runs, -1 it cannot be told from here
 * (o was counted in another pid namespace than ours).
 */
int bft_owner_dead(const struct bft_owner *o);

/* Whether tgid has exited: no such process, or only its zombie. */
bool bft_proc_exited(uint32_t tgid);

/*
 * Start a guard: a process of its own (not our child, no terminal, no
 * descriptor of ours) that waits for o to exit and then calls died(arg).
 * Every second it calls watching(arg) and ends when that says false (the
 * session was stopped or changed hands).  The guard's tgid, or -errno.
 * Only the calling thread is copied, so call it where no other thread
 * holds a lock the callbacks take.
 */
pid_t bft_owner_guard(const struct bft_owner *o, bool (*watching)(void *arg),
		      void (*died)(void *arg), void *arg);

#endif /* BFT_OWNER_H */
