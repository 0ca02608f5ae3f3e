// SPDX-License-Identifier: GPL-2.0
/*
 * The target of bench/usdt-cost.sh: HITS passes over one USDT probe,
 * "bench:tick", with two arguments (the pass and its negation, from
 * registers), after WARMUP passes that are not timed, and the time per
 * pass.  Built twice: with <sys/sdt.h>'s one-byte nop at the site, and
 * with -DBENCH_NOP5 a five-byte nop, which kernels from 6.18 on turn from
 * a breakpoint into a call after its first hit (an "optimized" uprobe).
 *
 *   bench-usdt HITS [WARMUP]
 *
 * Output: "hits=N ns_per_hit=X".
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/sdt.h>

#ifdef BENCH_NOP5
/*
 * sdt.h pastes _SDT_NOP where the probe is used: redefined, it takes.
 * Spelled as bytes, since gas shortens "nopl 0(%rax,%rax,1)" to four.
 */
#undef _SDT_NOP
#define _SDT_NOP .byte 0x0f; .byte 0x1f; .byte 0x44; .byte 0; .byte 0
#endif

__attribute__((noipa)) static void tick(long i)
{
	DTRACE_PROBE2(bench, tick, i, -i);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long hits = argc > 1 ? atol(argv[1]) : 100000;
	long warmup = argc > 2 ? atol(argv[2]) : 1000;
	double t0;

	if (hits <= 0 || warmup < 0) {
		fprintf(stderr, "usage: bench-usdt HITS [WARMUP]\n");
		return 2;
	}
	for (long i = 0; i < warmup; i++)
		tick(i);
	t0 = now_ns();
	for (long i = 0; i < hits; i++)
		tick(i);
	printf("hits=%ld ns_per_hit=%.1f\n", hits, (now_ns() - t0) / hits);
	return 0;
}
