/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The line protocol of calltree_shape.h, for the targets that speak it:
 * "ready" once main() runs, then one run per byte on stdin and "done"
 * after it; 'q' or EOF ends the target with status 0.
 */
#ifndef BFT_SERVE_RUNS_H
#define BFT_SERVE_RUNS_H

#include <stdio.h>
#include <unistd.h>

#include "calltree_shape.h"

/* The target's exit status; run returns non-zero to end it with 1. */
static inline int serve_runs(int (*run)(void))
{
	char c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("%s\n", CT_LINE_READY);
	for (;;) {
		ssize_t n = read(STDIN_FILENO, &c, 1);

		if (n <= 0 || c == 'q')
			return 0;
		if (run())
			return 1;
		printf("%s\n", CT_LINE_DONE);
	}
}

#endif /* BFT_SERVE_RUNS_H */
