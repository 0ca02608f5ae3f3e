/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_world: the inside of struct bfi_world, shared by bfi_ptrace.c (stop
 * and release) and bfi_inject.c (system calls run in the target) only.
 */
#ifndef BFI_WORLD_H
#define BFI_WORLD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "inline/bfi_ptrace.h"

/* Signals one thread may have kept for release; more of one kind merge. */
#define BFI_KEPT_SIGS	8

enum bfi_tstate {
	BFI_T_PENDING,		/* seized and interrupted, stop not seen yet */
	BFI_T_STOPPED,
	BFI_T_GONE,		/* exited, or turned zombie, while we waited */
};

enum bfi_tstop {
	BFI_STOP_INTERRUPT,	/* PTRACE_EVENT_STOP of our interrupt */
	BFI_STOP_GROUP,		/* PTRACE_EVENT_STOP of a group stop */
	BFI_STOP_STEPPED,	/* the SIGTRAP of a step: an injected call, a step out */
};

struct bfi_tracee {
	pid_t tid;
	uint8_t state;		/* enum bfi_tstate */
	uint8_t stop;		/* enum bfi_tstop, when STOPPED */
	bool foreign;		/* a clone into another process: let go */
	int nkept;
	siginfo_t kept[BFI_KEPT_SIGS];
	struct user_regs_struct regs;	/* as stopped */
};

struct bfi_world {
	pid_t tgid;
	int mem;		/* /proc/PID/mem, read-write */
	bool group_stop;
	struct bfi_tracee *t;	/* the target's threads first, then foreign */
	size_t n, cap;
	size_t nown;		/* threads of the target (the first nown) */
	uint64_t syscall_at;	/* a `syscall` instruction; 0: not looked */
};

#endif /* BFI_WORLD_H */
