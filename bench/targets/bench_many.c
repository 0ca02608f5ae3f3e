// SPDX-License-Identifier: GPL-2.0
/*
 * A target with 1000 functions, cf_000 ... cf_999, for the counters
 * figure of bench/guest-counters.sh: each is called ROUNDS times, a round
 * every 200 ms, then the process idles IDLE seconds with its probes still
 * attached (the collector samples them) and exits.
 *
 *   bench-many ROUNDS IDLE
 *
 * Prints "rounds done" when the calls are over.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile unsigned long sink;

#define F(n) __attribute__((noinline)) void cf_##n(void) \
	{ sink++; __asm__ volatile("" ::: "memory"); }
#define F10(n) F(n##0) F(n##1) F(n##2) F(n##3) F(n##4) F(n##5) F(n##6) \
	F(n##7) F(n##8) F(n##9)
#define F100(n) F10(n##0) F10(n##1) F10(n##2) F10(n##3) F10(n##4) \
	F10(n##5) F10(n##6) F10(n##7) F10(n##8) F10(n##9)
F100(0) F100(1) F100(2) F100(3) F100(4) F100(5) F100(6) F100(7) F100(8)
F100(9)

#define P(n) cf_##n,
#define P10(n) P(n##0) P(n##1) P(n##2) P(n##3) P(n##4) P(n##5) P(n##6) \
	P(n##7) P(n##8) P(n##9)
#define P100(n) P10(n##0) P10(n##1) P10(n##2) P10(n##3) P10(n##4) \
	P10(n##5) P10(n##6) P10(n##7) P10(n##8) P10(n##9)
static void (*const fns[])(void) = {
	P100(0) P100(1) P100(2) P100(3) P100(4) P100(5) P100(6) P100(7)
	P100(8) P100(9)
};

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 10;
	int idle = argc > 2 ? atoi(argv[2]) : 10;

	for (int r = 0; r < rounds; r++) {
		for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
			fns[i]();
		usleep(200000);
	}
	printf("rounds done\n");
	fflush(stdout);
	sleep((unsigned int)idle);
	return 0;
}
