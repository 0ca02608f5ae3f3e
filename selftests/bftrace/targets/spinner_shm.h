/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The spinner's progress page, shared with the test through an inherited
 * file descriptor (SPIN_SHM_FD).  Each spinning thread counts the calls of
 * spin_fn that have returned, so a test can see whether the target is making
 * progress and how many traced calls happened in a window.
 */
#ifndef BFT_SPINNER_SHM_H
#define BFT_SPINNER_SHM_H

#include <stdint.h>

#define SPIN_SHM_FD		3
#define SPIN_MAX_THREADS	16
#define SPIN_FN			"spin_fn"

struct spin_shm {
	uint64_t calls[SPIN_MAX_THREADS];	/* per spinning thread */
	int32_t tids[SPIN_MAX_THREADS];
	uint32_t nr_threads;			/* set before "ready" */
};

#endif /* BFT_SPINNER_SHM_H */
