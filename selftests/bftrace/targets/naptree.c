// SPDX-License-Identifier: GPL-2.0
/*
 * naptree: a target whose calls are either long (a sleep) or return at
 * once (naptree_shape.h), for the filters on call length.  Traced
 * functions are noipa, as in calltree, so each is a real call.
 */
#include <errno.h>
#include <time.h>

#include "naptree_shape.h"
#include "serve_runs.h"

#define TRACED __attribute__((noipa, used))

static volatile long sink;

TRACED void nt_quick(void)
{
	asm volatile("" : : : "memory");
	sink++;
}

TRACED void nt_nap(void)
{
	struct timespec ts = {
		.tv_sec = NT_NAP_MS / 1000,
		.tv_nsec = (NT_NAP_MS % 1000) * 1000000L,
	};

	/* a signal must not make the nap shorter than the shape says */
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	nt_quick();
}

TRACED void nt_outer(void)
{
	nt_quick();
	nt_nap();
	nt_quick();
}

static int run_once(void)
{
	for (int i = 0; i < NT_REPS; i++)
		nt_outer();
	for (int i = 0; i < NT_LONE; i++)
		nt_quick();
	return 0;
}

int main(void)
{
	return serve_runs(run_once);
}
