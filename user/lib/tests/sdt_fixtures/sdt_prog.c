// SPDX-License-Identifier: GPL-2.0
/*
 * USDT fixture of test_sdt: probes with 0, 1, 3 and 6 arguments of every
 * size and sign, from registers, memory (a global, an array element) and
 * constants, and one behind a semaphore (sdt_gated.c).  Built with -O2 so
 * the compiler picks the operands.  Before each hit it prints the line a
 * tracer should make of it, "provider:name v1 v2 ...", so a tracer can
 * compare: stdout is unbuffered.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

void sdt_gated(int round);

volatile int sdt_global = -123456;
volatile int64_t sdt_array[4] = { INT64_MIN, -1, 0x7fffffffffffffffLL, 42 };

__attribute__((noipa)) static void probes(int round, long seed)
{
	int neg = -(int)seed * 5;
	long long big = (long long)0x123456789abcdef0ULL + round;
	unsigned char u8 = (unsigned char)(200 + round);
	short s16 = (short)(-300 - round);
	signed char s8 = (signed char)(-1 - round);
	unsigned long ul = 0xfedcba9876543210UL + (unsigned long)round;
	int64_t elem = sdt_array[round & 3];

	printf("bft:zero\n");
	DTRACE_PROBE(bft, zero);
	printf("bft:one %d\n", neg);
	DTRACE_PROBE1(bft, one, neg);
	printf("bft:three %lld %u %d\n", big, u8, s16);
	DTRACE_PROBE3(bft, three, big, u8, s16);
	printf("bft:six %d %lu %d %d %d %lld\n", neg, ul, s8, sdt_global, 7,
	       (long long)elem);
	DTRACE_PROBE6(bft, six, neg, ul, s8, sdt_global, 7, elem);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	for (int round = 0; round < 2; round++) {
		probes(round, argc + round);
		sdt_gated(round);
	}
	(void)argv;
	return 0;
}
