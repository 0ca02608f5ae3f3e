// SPDX-License-Identifier: GPL-2.0
/*
 * Ring overflow.  With the smallest ring and no reader, a fast spinner
 * fills the rings; the kernel must then drop events, say so with LOST
 * records, and keep its books exact: per CPU, the events delivered plus the
 * LOST counts equal the events produced, and every SYNC's sequence number
 * matches the count (bst_collect fails on any gap).
 */
#include <errno.h>
#include <string.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"
#include "wire/bft_stream.h"

FIXTURE(overflow) {
	struct bst_session s;
	struct bst_proc target;
	struct bst_trace t;
	struct bft_nl_status before, after, read;
};

FIXTURE_SETUP(overflow)
{
	ASSERT_EQ(0, bst_session_open(&self->s));
}

FIXTURE_TEARDOWN(overflow)
{
	bst_session_close(&self->s);
	bst_proc_kill(&self->target);
	bst_trace_free(&self->t);
	bft_nl_status_free(&self->before);
	bft_nl_status_free(&self->after);
	bft_nl_status_free(&self->read);
}

static uint64_t total_lost(struct bft_nl *nl)
{
	struct bft_nl_status st;
	uint64_t lost = 0;

	if (bft_nl_get_status(nl, &st))
		return 0;
	for (uint32_t i = 0; i < st.nr_cpus; i++)
		lost += st.cpus[i].lost;
	bft_nl_status_free(&st);
	return lost;
}

TEST_F_TIMEOUT(overflow, full_ring_counts_every_lost_event, 90)
{
	static const char *const args[] = { NULL };
	const struct bft_nl_opt *bs = &self->s.opts[BFT_OPT_BUF_SIZE];
	const struct bst_mark *mk;
	uint64_t deadline, lost_sum = 0;

	ASSERT_TRUE(self->s.have_opt[BFT_OPT_BUF_SIZE]);
	ASSERT_EQ(0, bst_set_opt(&self->s, BFT_OPT_BUF_SIZE, bs->min));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->before));
	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, args, 9, true));

	/* Fill the rings: wait until the kernel reports losses, then some. */
	deadline = bst_now_ns() + 40000000000ull;
	while (!total_lost(self->s.nl) && bst_now_ns() < deadline)
		bst_sleep_ms(50);
	ASSERT_LT(0, total_lost(self->s.nl))
		TH_LOG("no loss with %llu-byte rings after %llu calls",
		       (unsigned long long)bs->min,
		       (unsigned long long)bst_spin_calls(&self->target));
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 200, 20000));

	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->after));
	ASSERT_EQ(0, bst_collect(&self->s, 300, 10000, &self->t))
		TH_LOG("%s", self->t.err);
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->read));
	ASSERT_EQ(self->after.nr_cpus, self->t.nr_cpus);
	ASSERT_EQ(self->after.nr_cpus, self->before.nr_cpus);
	ASSERT_EQ(self->after.nr_cpus, self->read.nr_cpus);

	for (uint32_t i = 0; i < self->after.nr_cpus; i++) {
		const struct bft_nl_cpu_stats *c = &self->after.cpus[i];
		const struct bft_nl_cpu_stats *b = &self->before.cpus[i];
		const struct bft_nl_cpu_stats *r = &self->read.cpus[i];
		const struct bst_cpu *d = &self->t.cpu[c->cpu];
		uint64_t produced = c->produced - b->produced;
		uint64_t written = c->written - b->written;
		uint64_t lost = c->lost - b->lost;

		ASSERT_EQ(c->cpu, b->cpu);
		ASSERT_EQ(c->cpu, r->cpu);
		EXPECT_EQ(produced, written + lost) TH_LOG("cpu %u", c->cpu);
		EXPECT_EQ(produced, d->events + d->lost)
			TH_LOG("cpu %u: produced %llu, delivered %llu + lost %llu",
			       c->cpu, (unsigned long long)produced,
			       (unsigned long long)d->events,
			       (unsigned long long)d->lost);
		EXPECT_EQ(written, d->events) TH_LOG("cpu %u", c->cpu);
		EXPECT_EQ(lost, d->lost) TH_LOG("cpu %u", c->cpu);
		/*
		 * Every byte written was read, and the ring is empty now.  A
		 * full ring writes what it owes (LOST, the stop's SYNC and
		 * BREAK) once a read makes room, so bytes are counted after
		 * the read; the event counters cannot move after the stop.
		 */
		EXPECT_EQ(r->bytes_written - b->bytes_written, d->bytes)
			TH_LOG("cpu %u", c->cpu);
		EXPECT_EQ(r->bytes_written, r->bytes_read) TH_LOG("cpu %u", c->cpu);
		EXPECT_EQ(0, r->used) TH_LOG("cpu %u", c->cpu);
		EXPECT_EQ(c->produced, r->produced) TH_LOG("cpu %u", c->cpu);
		EXPECT_EQ(c->written, r->written) TH_LOG("cpu %u", c->cpu);
		EXPECT_EQ(c->lost, r->lost) TH_LOG("cpu %u", c->cpu);
		lost_sum += d->lost;
	}
	EXPECT_LT(0, lost_sum);

	/* A loss is a data break: every LOST is a mark, nothing else is. */
	EXPECT_EQ(0, bst_marks_besides_losses(&self->t, &mk))
		TH_LOG("first: a %s on cpu %u", bft_rec_kind_name(mk->kind),
		       mk->cpu);
}

TEST_HARNESS_MAIN
