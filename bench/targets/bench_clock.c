// SPDX-License-Identifier: GPL-2.0
/*
 * The physical floor of a recorded call, for bench/inline-native.sh: what
 * a loop costs that does, per call, only what any in-process recorder
 * must do.  Each mode runs CALLS iterations of bench_work's own work plus:
 *
 *   clock    one clock_gettime(CLOCK_MONOTONIC) through the vDSO
 *   record   two of them (entry and return) and BYTES bytes stored into a
 *            1 MiB ring per read (a varint time and a method id: about
 *            what the inline backend writes per event)
 *
 *   bench-clock clock|record CALLS [BYTES]
 *      prints "total mode=M calls=N ns_per_call=X" (X includes the loop)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING_SIZE	(1u << 20)

static uint8_t ring[RING_SIZE];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A varint of the time, cut to @bytes, at @head: the store a record makes. */
static uint32_t ring_put(uint32_t head, uint64_t t, unsigned int bytes)
{
	unsigned int i;

	for (i = 0; i < bytes; i++, t >>= 7)
		ring[(head + i) & (RING_SIZE - 1)] = (uint8_t)(t | 0x80);
	return head + bytes;
}

int main(int argc, char **argv)
{
	unsigned long calls, i, x = 1;
	unsigned int bytes = 6;
	uint32_t head = 0;
	int record;
	uint64_t t0, t1;

	if (argc < 3 || argc > 4 || (strcmp(argv[1], "clock") && strcmp(argv[1], "record"))) {
		fprintf(stderr, "usage: bench-clock clock|record CALLS [BYTES]\n");
		return 2;
	}
	record = !strcmp(argv[1], "record");
	calls = strtoul(argv[2], NULL, 0);
	if (argc > 3)
		bytes = (unsigned int)strtoul(argv[3], NULL, 0);
	if (!calls || bytes > 16) {
		fprintf(stderr, "bench-clock: CALLS >= 1, BYTES <= 16\n");
		return 2;
	}
	t0 = now_ns();
	for (i = 0; i < calls; i++) {
		uint64_t t = now_ns();

		if (record) {
			head = ring_put(head, t, bytes);
			x = x * 0x5bd1e995 + 1;
			__asm__ volatile("" : "+r"(x));
			head = ring_put(head, now_ns(), bytes);
		} else {
			x = x * 0x5bd1e995 + t;
		}
		__asm__ volatile("" : "+r"(x) : : "memory");
	}
	t1 = now_ns();
	printf("total mode=%s calls=%lu ns_per_call=%.2f sink=%lu head=%u\n", argv[1], calls,
	       (double)(t1 - t0) / (double)calls, x, head);
	return 0;
}
