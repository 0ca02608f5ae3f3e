// SPDX-License-Identifier: GPL-2.0
/* The synthetic stream writer follows the kernel writer's rules. */
#include "kselftest_harness.h"

#include "bft_test.h"
#include "wire/bft_writer.h"

/* Decode what w wrote so far into l; "SYNC THREAD ENTER ..." into kinds. */
static int decode_writer(struct bft_writer *w, struct rec_log *l, char *kinds,
			 size_t size)
{
	struct bft_stream s;
	const uint8_t *p;
	size_t len, i, off = 0;
	int r;

	p = bft_writer_data(w, &len);
	stream_open(&s, l, 0, BFT_STREAM_STOP);
	r = stream_decode(&s, p, len, 0);
	kinds[0] = 0;
	for (i = 0; i < l->n && off < size; i++)
		off += (size_t)snprintf(kinds + off, size - off, "%s%s",
					i ? " " : "",
					bft_rec_kind_name(l->r[i].kind));
	return r ? r : (int)l->nerr;
}

FIXTURE(wr) {
	struct bft_writer w;
	struct rec_log l;
	char kinds[1024];
};

FIXTURE_SETUP(wr)
{
	ASSERT_EQ(0, bft_writer_init(&self->w, 1000, 0));
	memset(&self->l, 0, sizeof(self->l));
}

FIXTURE_TEARDOWN(wr)
{
	bft_writer_free(&self->w);
	rec_log_free(&self->l);
}

#define DECODE() \
	ASSERT_EQ(0, decode_writer(&self->w, &self->l, self->kinds, \
				   sizeof(self->kinds)))

TEST_F(wr, first_record_is_a_sync_at_its_time)
{
	ASSERT_EQ(0, bft_writer_enter(&self->w, 5000, 10, 11, 3));
	DECODE();
	EXPECT_STREQ("SYNC THREAD ENTER", self->kinds);
	EXPECT_EQ(5000u, self->l.r[0].time_ns);
	EXPECT_EQ(0u, self->l.r[0].value);
	EXPECT_EQ(1000u, self->l.r[0].value2);
	EXPECT_EQ(0u, self->l.r[1].value);	/* THREAD delta */
}

TEST_F(wr, thread_record_only_on_change_or_after_sched_out)
{
	ASSERT_EQ(0, bft_writer_enter(&self->w, 1000, 1, 1, 1));
	ASSERT_EQ(0, bft_writer_enter(&self->w, 1100, 1, 1, 2));
	ASSERT_EQ(0, bft_writer_enter(&self->w, 1234, 1, 2, 3));
	ASSERT_EQ(0, bft_writer_enter(&self->w, 1300, 1, 2, 4));
	bft_writer_sched_out(&self->w);
	ASSERT_EQ(0, bft_writer_enter(&self->w, 1999, 1, 2, 5));
	DECODE();
	EXPECT_STREQ("SYNC THREAD ENTER ENTER THREAD ENTER ENTER THREAD ENTER",
		     self->kinds);
	/* THREAD deltas are exact and set the stream time */
	EXPECT_EQ(234u, self->l.r[4].value);
	EXPECT_EQ(1234u, self->l.r[5].time_ns);
	EXPECT_EQ(1234u, self->l.r[6].time_ns);	/* 1300: same unit */
	EXPECT_EQ(765u, self->l.r[7].value);
	EXPECT_EQ(1999u, self->l.r[8].time_ns);
	EXPECT_EQ(2u, self->l.r[8].tid);
}

TEST_F(wr, units_inside_the_event_up_to_3_then_time_short_then_time)
{
	ASSERT_EQ(0, bft_writer_enter(&self->w, 0, 1, 1, 1));
	ASSERT_EQ(0, bft_writer_enter(&self->w, 1999, 1, 1, 2));	/* 1 */
	ASSERT_EQ(0, bft_writer_enter(&self->w, 4999, 1, 1, 3));	/* 3 */
	ASSERT_EQ(0, bft_writer_enter(&self->w, 8999, 1, 1, 4));	/* 4 */
	ASSERT_EQ(0, bft_writer_enter(&self->w, 40999, 1, 1, 5));	/* 32 */
	ASSERT_EQ(0, bft_writer_enter(&self->w, 73999, 1, 1, 6));	/* 33 */
	ASSERT_EQ(0, bft_writer_enter(&self->w, 73500, 1, 1, 7));	/* 0 */
	DECODE();
	EXPECT_STREQ("SYNC THREAD ENTER ENTER ENTER TIME_SHORT ENTER "
		     "TIME_SHORT ENTER TIME ENTER ENTER", self->kinds);
	EXPECT_EQ(1u, self->l.r[3].value2);
	EXPECT_EQ(1000u, self->l.r[3].time_ns);
	EXPECT_EQ(3u, self->l.r[4].value2);
	EXPECT_EQ(4000u, self->l.r[4].time_ns);
	EXPECT_EQ(4u, self->l.r[5].value);
	EXPECT_EQ(0x23, self->l.r[5].esc);
	EXPECT_EQ(0u, self->l.r[6].value2);
	EXPECT_EQ(32u, self->l.r[7].value);
	EXPECT_EQ(0x3f, self->l.r[7].esc);
	EXPECT_EQ(33u, self->l.r[9].value);
	/* stream time: true time rounded down to the unit */
	EXPECT_EQ(73000u, self->l.r[10].time_ns);
	EXPECT_EQ(73000u, self->l.r[11].time_ns);
	EXPECT_EQ(7u, self->l.r[11].value);
}

TEST_F(wr, exits_of_one_thread_in_one_unit_are_one_run)
{
	int i;

	ASSERT_EQ(0, bft_writer_enter(&self->w, 0, 1, 1, 1));
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, bft_writer_exit(&self->w, 100 + i, 1, 1));
	/* the open run is not written yet */
	DECODE();
	EXPECT_STREQ("SYNC THREAD ENTER", self->kinds);
	rec_log_free(&self->l);
	ASSERT_EQ(0, bft_writer_exit(&self->w, 999, 1, 1));
	ASSERT_EQ(0, bft_writer_exit(&self->w, 1000, 1, 1));	/* next unit */
	ASSERT_EQ(0, bft_writer_exit(&self->w, 1001, 2, 2));	/* thread */
	ASSERT_EQ(0, bft_writer_seal(&self->w));
	DECODE();
	EXPECT_STREQ("SYNC THREAD ENTER EXIT EXIT THREAD EXIT", self->kinds);
	EXPECT_EQ(6u, self->l.r[3].value);
	EXPECT_EQ(1u, self->l.r[4].value);
	EXPECT_EQ(1u, self->l.r[4].value2);	/* next unit, inside */
	EXPECT_EQ(1000u, self->l.r[4].time_ns);
	EXPECT_EQ(1u, self->l.r[6].value);
	EXPECT_EQ(9u, bft_writer_seq(&self->w));
}

TEST_F(wr, exit_run_after_sched_out_starts_anew)
{
	ASSERT_EQ(0, bft_writer_exit(&self->w, 10, 1, 1));
	bft_writer_sched_out(&self->w);
	ASSERT_EQ(0, bft_writer_exit(&self->w, 20, 1, 1));
	ASSERT_EQ(0, bft_writer_seal(&self->w));
	DECODE();
	EXPECT_STREQ("SYNC THREAD EXIT THREAD EXIT", self->kinds);
}

TEST_F(wr, sync_seals_the_run_and_carries_seq)
{
	int i;

	ASSERT_EQ(0, bft_writer_enter(&self->w, 0, 1, 1, 1));
	for (i = 0; i < 70; i++)
		ASSERT_EQ(0, bft_writer_exit(&self->w, 1, 1, 1));
	ASSERT_EQ(0, bft_writer_lost(&self->w, 2, 9));
	ASSERT_EQ(0, bft_writer_sync(&self->w, 50000));
	DECODE();
	EXPECT_STREQ("SYNC THREAD ENTER EXIT LOST SYNC", self->kinds);
	EXPECT_EQ(70u, self->l.r[3].value);
	EXPECT_EQ(80u, self->l.r[5].value);
	EXPECT_EQ(50000u, self->l.r[5].time_ns);
}

TEST_F(wr, lost_and_break_advance_time_and_break_forgets_thread)
{
	ASSERT_EQ(0, bft_writer_enter(&self->w, 0, 1, 1, 1));
	ASSERT_EQ(0, bft_writer_lost(&self->w, 5000, 3));
	ASSERT_EQ(0, bft_writer_enter(&self->w, 5100, 1, 1, 2));
	ASSERT_EQ(0, bft_writer_break(&self->w, 9000, BFT_BREAK_SUSPEND));
	ASSERT_EQ(0, bft_writer_enter(&self->w, 9100, 1, 1, 3));
	ASSERT_EQ(0, bft_writer_enter_noret(&self->w, 9200, 1, 1, 4));
	DECODE();
	EXPECT_STREQ("SYNC THREAD ENTER TIME_SHORT LOST ENTER TIME_SHORT BREAK "
		     "THREAD ENTER ENTER_NORET", self->kinds);
	EXPECT_EQ(5000u, self->l.r[4].time_ns);
	EXPECT_EQ(9000u, self->l.r[7].time_ns);
	EXPECT_EQ(100u, self->l.r[8].value);
	EXPECT_EQ(4u, self->l.r[10].value);
	EXPECT_EQ(7u, bft_writer_seq(&self->w));
}

TEST_F(wr, earlier_time_is_taken_as_stream_time)
{
	ASSERT_EQ(0, bft_writer_enter(&self->w, 10000, 1, 1, 1));
	ASSERT_EQ(0, bft_writer_enter(&self->w, 500, 1, 2, 2));
	ASSERT_EQ(0, bft_writer_sync(&self->w, 7));
	DECODE();
	EXPECT_STREQ("SYNC THREAD ENTER THREAD ENTER SYNC", self->kinds);
	EXPECT_EQ(0u, self->l.r[3].value);
	EXPECT_EQ(10000u, self->l.r[5].time_ns);
}

TEST(writer_rejects_zero_resolution_and_starts_at_seq0)
{
	struct bft_writer w;
	struct rec_log l = { 0 };
	char kinds[64];

	EXPECT_EQ(-EINVAL, bft_writer_init(&w, 0, 0));
	ASSERT_EQ(0, bft_writer_init(&w, 1, 1000));
	ASSERT_EQ(0, bft_writer_sync(&w, 1));
	ASSERT_EQ(0, decode_writer(&w, &l, kinds, sizeof(kinds)));
	EXPECT_EQ(1000u, l.r[0].value);
	bft_writer_free(&w);
	rec_log_free(&l);
}

TEST(consumed_output_streams_in_pieces)
{
	struct bft_writer w;
	struct bft_buf all = { 0 };
	struct bft_stream s;
	struct rec_log l = { 0 };
	const uint8_t *p;
	size_t len;
	int i;

	ASSERT_EQ(0, bft_writer_init(&w, 100, 0));
	for (i = 0; i < 1000; i++) {
		ASSERT_EQ(0, bft_writer_enter(&w, (uint64_t)i * 37, 1,
					      1 + (uint32_t)(i % 3),
					      (uint32_t)i));
		if (i % 100 == 99) {
			p = bft_writer_data(&w, &len);
			ASSERT_EQ(0, bft_buf_append(&all, p, len));
			bft_writer_consume(&w, len);
		}
	}
	p = bft_writer_data(&w, &len);
	EXPECT_EQ(0u, len);
	stream_open(&s, &l, 0, BFT_STREAM_STOP);
	ASSERT_EQ(0, stream_decode(&s, all.data, all.len, 7));
	EXPECT_EQ(1000u, bft_stream_stats(&s)->enters);
	EXPECT_EQ(1000u, bft_stream_seq(&s));
	bft_writer_free(&w);
	bft_buf_free(&all);
	rec_log_free(&l);
}

TEST_HARNESS_MAIN
