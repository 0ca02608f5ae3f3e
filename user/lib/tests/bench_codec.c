// SPDX-License-Identifier: GPL-2.0
/*
 * Codec throughput on one core: decode, decode + merge (streaming, in
 * read()-sized chunks), and decode + merge + calltree, over synthetic
 * streams shaped like a busy trace: 4 CPUs, 16 threads of 2 processes,
 * mostly small ids, calls a few hundred ns apart, frequent exit runs,
 * thread switches and heartbeats.  Prints events per second.
 *
 * make -C user bench        (BFT_BENCH_EVENTS=n to change the size)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "model/bft_calltree.h"
#include "model/bft_merge.h"
#include "bft_test.h"
#include "wire/bft_writer.h"

#define NCPU	4
#define NTH	16
#define CHUNK	65536

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int make(struct bft_writer *w, uint64_t events)
{
	uint64_t seed = 2024, t = 1000000, n = 0;
	int depth[NTH] = { 0 }, cpu[NTH], c, r = 0;

	for (c = 0; c < NTH; c++)
		cpu[c] = c % NCPU;
	for (c = 0; c < NCPU; c++)
		r |= bft_writer_init(&w[c], 10, 0);
	while (n < events && !r) {
		int th = (int)rng_below(&seed, NTH);
		int burst = 1 + (int)rng_below(&seed, 64), i;

		if (rng_below(&seed, 50) == 0) {
			bft_writer_sched_out(&w[cpu[th]]);
			cpu[th] = (int)rng_below(&seed, NCPU);
		}
		for (i = 0; i < burst; i++, n++) {
			uint32_t tgid = th < NTH / 2 ? 100 : 200;
			uint64_t k = rng_below(&seed, 100);

			t += 5 + rng_below(&seed, 40);
			if (depth[th] && k < 48) {
				r |= bft_writer_exit(&w[cpu[th]], t, tgid,
						     tgid + (uint32_t)th);
				depth[th]--;
			} else {
				uint32_t id = k < 90 ?
					(uint32_t)rng_below(&seed, 64) :
					(uint32_t)rng_below(&seed, 20000);

				r |= bft_writer_enter(&w[cpu[th]], t, tgid,
						      tgid + (uint32_t)th, id);
				depth[th]++;
			}
		}
		if (n % 100000 < 64)
			for (c = 0; c < NCPU; c++)
				r |= bft_writer_sync(&w[c], t);
	}
	for (c = 0; c < NCPU; c++)
		r |= bft_writer_sync(&w[c], t + 1);
	return r;
}

struct sink {
	uint64_t n;
	uint64_t sum;
	struct bft_calltree *ct;
};

static int count(void *ctx, const struct bft_record *r)
{
	struct sink *s = ctx;

	s->n++;
	s->sum += r->value;
	return 0;
}

static int to_calltree(void *ctx, const struct bft_record *r)
{
	struct sink *s = ctx;

	s->n++;
	return bft_calltree_feed(s->ct, r);
}

static int call_count(void *ctx, const struct bft_call_event *ev)
{
	struct sink *s = ctx;

	s->sum += ev->id;
	return 0;
}

/* Feed the CPUs round-robin in chunks, running the merge after each. */
static int merge_all(struct bft_merge *m, const uint8_t **p, const size_t *len)
{
	size_t pos[NCPU] = { 0 };
	int c, left, r;

	do {
		left = 0;
		for (c = 0; c < NCPU; c++) {
			size_t n = len[c] - pos[c];

			if (!n)
				continue;
			if (n > CHUNK)
				n = CHUNK;
			r = bft_merge_feed(m, (uint32_t)c, p[c] + pos[c], n);
			if (r)
				return r;
			pos[c] += n;
			left |= pos[c] < len[c];
		}
		r = bft_merge_run(m);
		if (r)
			return r;
	} while (left);
	return bft_merge_drain(m);
}

int main(void)
{
	const char *env = getenv("BFT_BENCH_EVENTS");
	uint64_t events = env ? strtoull(env, NULL, 0) : 20000000;
	struct bft_writer w[NCPU];
	const uint8_t *p[NCPU];
	size_t len[NCPU], bytes = 0;
	uint64_t total = 0;
	double t0, dt;
	int c, rep;

	if (make(w, events)) {
		fprintf(stderr, "bench: cannot build the streams\n");
		return 1;
	}
	for (c = 0; c < NCPU; c++) {
		p[c] = bft_writer_data(&w[c], &len[c]);
		bytes += len[c];
		total += bft_writer_seq(&w[c]);
	}
	printf("# %" PRIu64 " events, %zu bytes (%.2f bytes/event), %d CPUs\n",
	       total, bytes, (double)bytes / (double)total, NCPU);

	for (rep = 0; rep < 2; rep++) {
		struct sink s = { 0 };
		struct bft_stream d;
		struct bft_stream_opts so = { .on_record = count, .ctx = &s };

		t0 = now();
		for (c = 0; c < NCPU; c++) {
			size_t off;

			so.cpu = (uint32_t)c;
			bft_stream_init(&d, &so);
			for (off = 0; off < len[c]; off += CHUNK)
				if (bft_stream_feed(&d, p[c] + off,
						    len[c] - off < CHUNK ?
						    len[c] - off : CHUNK))
					return 1;
		}
		dt = now() - t0;
		printf("decode:                  %6.1f M events/s  (%" PRIu64
		       " records)\n", (double)total / dt / 1e6, s.n);
	}
	for (rep = 0; rep < 2; rep++) {
		struct sink s = { 0 };
		struct bft_merge m;
		struct bft_merge_opts mo = {
			.ncpus = NCPU,
			.kinds = BFT_REC_CALLTREE_KINDS,
			.on_record = count,
			.ctx = &s,
		};

		if (bft_merge_init(&m, &mo))
			return 1;
		t0 = now();
		if (merge_all(&m, p, len))
			return 1;
		dt = now() - t0;
		printf("decode+merge:            %6.1f M events/s  (max queued %"
		       PRIu64 ")\n", (double)total / dt / 1e6,
		       bft_merge_stats(&m)->max_queued);
		bft_merge_free(&m);
	}
	{
		struct sink s = { 0 };
		struct bft_calltree ct;
		struct bft_calltree_opts co = { .on_call = call_count,
						.ctx = &s };
		struct bft_merge m;
		struct bft_merge_opts mo = {
			.ncpus = NCPU,
			.kinds = BFT_REC_CALLTREE_KINDS,
			.on_record = to_calltree,
			.ctx = &s,
		};

		s.ct = &ct;
		if (bft_calltree_init(&ct, &co) || bft_merge_init(&m, &mo))
			return 1;
		t0 = now();
		if (merge_all(&m, p, len))
			return 1;
		dt = now() - t0;
		printf("decode+merge+calltree:   %6.1f M events/s\n",
		       (double)total / dt / 1e6);
		bft_merge_free(&m);
		bft_calltree_free(&ct);
	}
	for (c = 0; c < NCPU; c++)
		bft_writer_free(&w[c]);
	return 0;
}
