// SPDX-License-Identifier: GPL-2.0
/*
 * naptree: a target whose calls are either long (a sleep) or return at
 * once (naptree_shape.h), for the filters on call length.  Traced
 * functions are noipa, as in calltree, so each is a real call.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "calltree_shape.h"
#include "naptree_shape.h"

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

int main(void)
{
	char c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("%s\n", CT_LINE_READY);
	for (;;) {
		ssize_t n = read(STDIN_FILENO, &c, 1);

		if (n <= 0 || c == 'q')
			return 0;
		for (int i = 0; i < NT_REPS; i++)
			nt_outer();
		for (int i = 0; i < NT_LONE; i++)
			nt_quick();
		printf("%s\n", CT_LINE_DONE);
	}
}
