// SPDX-License-Identifier: GPL-2.0
/*
 * bench-stream: write a synthetic recording for bfcollector --replay:
 * DIR/cpu<N>.bft (one record stream per CPU, as /dev/bftrace gives it),
 * DIR/methods and DIR/threads.
 *
 *   bench-stream DIR EVENTS [CPUS]
 *
 * It is shaped like what the kernel records for a busy multi-threaded
 * program traced at its maximum rate: per CPU, two threads of one of two
 * processes take turns in time slices of about a millisecond; each walks a
 * call tree up to 24 deep over 1000 methods, low ids the most frequent;
 * an event every 50-450 ns; a SYNC in every ring each 100 ms, as the flush
 * timer writes them.  Times are in the kernel's default 1000 ns unit.
 * The streams are encoded by user/lib's bft_writer, which follows the
 * kernel writer's rules.  Deterministic: the same arguments give the same
 * bytes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/bft_writer.h"

#define THREADS_PER_CPU	2
#define MAX_DEPTH	24
#define NR_METHODS	1000
#define SYNC_NS		100000000ull
#define SLICE_NS	1000000ull
#define RES_NS		1000

struct thread {
	uint32_t tgid, tid;
	int depth;
};

static uint64_t rng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Skewed to low ids, as a few hot functions dominate a real trace. */
static uint32_t method(uint64_t *s)
{
	double u = (double)(rng(s) >> 11) / 9007199254740992.0;

	return 1 + (uint32_t)(u * u * u * (NR_METHODS - 1));
}

static int flush_to(struct bft_writer *w, FILE *f)
{
	size_t len;
	const uint8_t *p = bft_writer_data(w, &len);

	if (len && fwrite(p, 1, len, f) != len)
		return -EIO;
	bft_writer_consume(w, len);
	return 0;
}

static int one_cpu(const char *dir, unsigned int cpu, uint64_t events,
		   uint64_t *written)
{
	struct thread th[THREADS_PER_CPU];
	struct bft_writer w;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (cpu + 1), t = 1000000000ull;
	uint64_t next_sync = t + SYNC_NS, slice_end = t + SLICE_NS, n = 0;
	char path[4200];
	int cur = 0, r, i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpu%u.bft", dir, cpu);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "bench-stream: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (i = 0; i < THREADS_PER_CPU; i++) {
		th[i].tgid = 1000 + 1000 * (cpu % 2);
		th[i].tid = th[i].tgid + 1 + cpu * THREADS_PER_CPU + (uint32_t)i;
		th[i].depth = 0;
	}
	r = bft_writer_init(&w, RES_NS, 0);
	while (!r && n < events) {
		struct thread *p = &th[cur];

		t += 50 + rng(&seed) % 400;
		if (t >= next_sync) {
			r = bft_writer_sync(&w, next_sync);
			next_sync += SYNC_NS;
		}
		if (t >= slice_end) {
			bft_writer_sched_out(&w);
			cur = (cur + 1) % THREADS_PER_CPU;
			slice_end = t + SLICE_NS / 2 + rng(&seed) % SLICE_NS;
			continue;
		}
		/* a walk that leans to returning when deep, calling when shallow */
		if (p->depth && (p->depth >= MAX_DEPTH ||
				 rng(&seed) % MAX_DEPTH < (uint64_t)p->depth)) {
			r = bft_writer_exit(&w, t, p->tgid, p->tid);
			p->depth--;
		} else {
			r = bft_writer_enter(&w, t, p->tgid, p->tid, method(&seed));
			p->depth++;
		}
		n++;
		if (!r && !(n & 0xffff))
			r = flush_to(&w, f);
	}
	if (!r)
		r = bft_writer_sync(&w, t + RES_NS);
	if (!r)
		r = flush_to(&w, f);
	*written = bft_writer_seq(&w);
	bft_writer_free(&w);
	if (fclose(f) || r) {
		fprintf(stderr, "bench-stream: writing %s failed\n", path);
		return -1;
	}
	return 0;
}

static int side_files(const char *dir, unsigned int ncpu)
{
	char path[4200];
	unsigned int i, c;
	FILE *f;

	snprintf(path, sizeof(path), "%s/methods", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	for (i = 1; i <= NR_METHODS; i++)
		fprintf(f, "%u\t/usr/bin/bench-app\tns::Widget::method_%u(int)\n",
			i, i);
	if (fclose(f))
		return -1;
	snprintf(path, sizeof(path), "%s/threads", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	for (c = 0; c < ncpu; c++)
		for (i = 0; i < THREADS_PER_CPU; i++) {
			uint32_t tgid = 1000 + 1000 * (c % 2);

			fprintf(f, "%u\t%u\tworker-%u\n", tgid,
				tgid + 1 + c * THREADS_PER_CPU + i,
				c * THREADS_PER_CPU + i);
		}
	return fclose(f) ? -1 : 0;
}

int main(int argc, char **argv)
{
	uint64_t events, total = 0, n;
	unsigned long ncpu = 4;
	unsigned int c;
	char *end;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: bench-stream DIR EVENTS [CPUS]\n");
		return 2;
	}
	events = strtoull(argv[2], &end, 0);
	if (*end || !events) {
		fprintf(stderr, "bench-stream: bad EVENTS '%s'\n", argv[2]);
		return 2;
	}
	if (argc == 4) {
		ncpu = strtoul(argv[3], &end, 0);
		if (*end || !ncpu || ncpu > 256) {
			fprintf(stderr, "bench-stream: bad CPUS '%s' (1..256)\n",
				argv[3]);
			return 2;
		}
	}
	for (c = 0; c < ncpu; c++) {
		if (one_cpu(argv[1], c, (events + ncpu - 1 - c) / ncpu, &n))
			return 1;
		total += n;
	}
	if (side_files(argv[1], (unsigned int)ncpu)) {
		fprintf(stderr, "bench-stream: cannot write %s/methods or threads\n",
			argv[1]);
		return 1;
	}
	printf("events=%" PRIu64 " cpus=%lu\n", total, ncpu);
	return 0;
}
