// SPDX-License-Identifier: GPL-2.0
/*
 * Ring overflow on the BPF backend.  Its handlers hold records back in a
 * per-CPU batch (user/bpf/bft.bpf.c, batch_flush()), counted as written
 * when they enter it; a batch that finds the ring full is lost whole,
 * with the EXIT run after it.  With the smallest ring and no reader the
 * books must still be exact: per CPU, produced = written + lost; the
 * stream delivers every written event and LOST records summing to the
 * lost count; each SYNC's sequence number agrees (bst_decode fails on a
 * gap); and a SYNC comes right after every LOST, for the time base.  The
 * test traces a function of its own, on one CPU.  Runs natively and in
 * the guests; skips where BPF cannot run.
 */
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

#define PIN_DIR		"/sys/fs/bpf/bftrace-overflow"
#define RING_BYTES	4096	/* the smallest BFT_OPT_BUF_SIZE */
#define CALLS		100000	/* about 200 KB of records */
#define METHOD		9

__attribute__((noipa, used)) void overflow_fn(long v)
{
	asm volatile("" : : "r"(v) : "memory");
}

FIXTURE(bpf_overflow) {
	struct bft_bpf *b;
	struct bst_trace t;
	struct bft_nl_status before, after;
};

FIXTURE_SETUP(bpf_overflow)
{
	char why[512];
	int r;

	setenv("BFT_BPF_PIN_DIR", PIN_DIR, 1);
	r = bst_bpf_open(&self->b, why, sizeof(why));
	if (r > 0)
		SKIP(return, "BPF backend: %s", why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	ASSERT_EQ(0, bft_bpf_set_opt(self->b, BFT_OPT_BUF_SIZE, RING_BYTES,
				     NULL)) TH_LOG("%s", bft_bpf_errmsg(self->b));
	ASSERT_EQ(0, bst_bpf_attach_self(self->b, "overflow_fn", METHOD));
	ASSERT_EQ(0, bft_bpf_get_status(self->b, &self->before));
	ASSERT_EQ(0, bft_bpf_start(self->b, true, NULL))
		TH_LOG("%s", bft_bpf_errmsg(self->b));
}

FIXTURE_TEARDOWN(bpf_overflow)
{
	bst_trace_free(&self->t);
	bft_nl_status_free(&self->before);
	bft_nl_status_free(&self->after);
	bst_bpf_close(self->b);
}

TEST_F_TIMEOUT(bpf_overflow, a_full_ring_loses_whole_batches_and_counts_them, 120)
{
	const struct bst_mark *mk;
	uint64_t lost_sum = 0, events_sum = 0;

	for (long i = 0; i < CALLS; i++)
		overflow_fn(i);
	ASSERT_EQ(0, bft_bpf_mode_cmd(self->b, BFT_CMD_STOP, NULL))
		TH_LOG("%s", bft_bpf_errmsg(self->b));
	ASSERT_EQ(0, bft_bpf_get_status(self->b, &self->after));
	ASSERT_EQ(0, bst_bpf_collect(self->b, 300, 10000, &self->t))
		TH_LOG("%s", self->t.err);
	ASSERT_EQ(self->after.nr_cpus, self->before.nr_cpus);
	ASSERT_EQ(self->after.nr_cpus, self->t.nr_cpus);

	for (uint32_t i = 0; i < self->after.nr_cpus; i++) {
		const struct bft_nl_cpu_stats *c = &self->after.cpus[i];
		const struct bft_nl_cpu_stats *b = &self->before.cpus[i];
		const struct bst_cpu *d = &self->t.cpu[c->cpu];
		uint64_t produced = c->produced - b->produced;
		uint64_t written = c->written - b->written;
		uint64_t lost = c->lost - b->lost;

		EXPECT_EQ(produced, written + lost) TH_LOG("cpu %u", c->cpu);
		EXPECT_EQ(written, d->events)
			TH_LOG("cpu %u: written %llu, delivered %llu", c->cpu,
			       (unsigned long long)written,
			       (unsigned long long)d->events);
		EXPECT_EQ(lost, d->lost)
			TH_LOG("cpu %u: lost %llu, LOST records say %llu", c->cpu,
			       (unsigned long long)lost,
			       (unsigned long long)d->lost);
		/*
		 * the lost batch moved the writer's time base: the next
		 * record must set it again, or later times come out early
		 */
		EXPECT_EQ(d->lost_records, d->lost_synced)
			TH_LOG("cpu %u: %llu LOST records, %llu with a SYNC "
			       "right after", c->cpu,
			       (unsigned long long)d->lost_records,
			       (unsigned long long)d->lost_synced);
		lost_sum += d->lost;
		events_sum += d->events;
	}
	/* 2 events a call: the ring held some, and lost the rest */
	EXPECT_EQ(2 * CALLS, events_sum + lost_sum);
	EXPECT_LT(0, lost_sum);
	EXPECT_LT(0, events_sum);

	/* a loss is a data break: every LOST is a mark, and the stop */
	EXPECT_EQ(0, bst_marks_besides_losses(&self->t, &mk))
		TH_LOG("first: a %s on cpu %u", bft_rec_kind_name(mk->kind),
		       mk->cpu);
}

TEST_HARNESS_MAIN
