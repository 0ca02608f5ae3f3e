/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_proc: what /proc says of a target before the inline backend touches
 * it: whether it would survive (seccomp, CET shadow stacks), whether it is
 * stopped, and who it is (its start time, so a reused pid is told apart).
 */
#ifndef BFI_PROC_H
#define BFI_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bfi_proc_info {
	int seccomp;		/* Seccomp: 0 off, 1 strict, 2 filter (the
				 * caller refuses), -1 not reported */
	bool shstk;		/* a thread has a CET shadow stack on */
	bool shstk_known;	/* the kernel reports x86_Thread_features */
	bool group_stop;	/* State: T (stopped), by a signal */
	pid_t tracer;		/* TracerPid: 0 none */
	uint64_t start;		/* stat field 22: clock ticks after boot */
};

/* 0, or -ESRCH (no such process; err says so), other -errno. */
int bfi_proc_probe(pid_t tgid, struct bfi_proc_info *pi, char *err,
		   size_t errlen);

#endif /* BFI_PROC_H */
