// SPDX-License-Identifier: GPL-2.0
/* Per-thread shadow stacks: NORET frames, breaks, orphans, call events. */
#include "kselftest_harness.h"

#include "model/bft_calltree.h"
#include "bft_test.h"

struct calls {
	struct bft_call_event ev[64];
	int n;
	int stop_at;
};

static int calls_add(void *ctx, const struct bft_call_event *ev)
{
	struct calls *c = ctx;

	if (c->n < 64)
		c->ev[c->n] = *ev;
	c->n++;
	return c->n == c->stop_at ? 3 : 0;
}

FIXTURE(ct) {
	struct bft_calltree ct;
	struct calls calls;
	uint64_t t;
};

FIXTURE_SETUP(ct)
{
	struct bft_calltree_opts o = {
		.on_call = calls_add,
		.ctx = &self->calls,
		.text = true,
	};

	memset(&self->calls, 0, sizeof(self->calls));
	self->t = 1000;
	ASSERT_EQ(0, bft_calltree_init(&self->ct, &o));
}

FIXTURE_TEARDOWN(ct)
{
	bft_calltree_free(&self->ct);
}

static int feed(struct bft_calltree *ct, uint64_t *t, uint32_t tid,
		unsigned int kind, uint64_t value)
{
	struct bft_record r;

	memset(&r, 0, sizeof(r));
	r.time_ns = (*t)++;
	r.tgid = 1234;
	r.tid = tid;
	r.kind = (uint16_t)kind;
	r.value = value;
	return bft_calltree_feed(ct, &r);
}

static int feed2(struct bft_calltree *ct, uint64_t *t, uint32_t tid,
		 unsigned int kind, uint64_t value, uint64_t value2)
{
	struct bft_record r;

	memset(&r, 0, sizeof(r));
	r.time_ns = (*t)++;
	r.tgid = 1234;
	r.tid = tid;
	r.kind = (uint16_t)kind;
	r.value = value;
	r.value2 = value2;
	return bft_calltree_feed(ct, &r);
}

#define E(tid, id)	ASSERT_EQ(0, feed(&self->ct, &self->t, tid, BFT_REC_ENTER, id))
#define N(tid, id)	ASSERT_EQ(0, feed(&self->ct, &self->t, tid, BFT_REC_ENTER_NORET, id))
#define X(tid, n)	ASSERT_EQ(0, feed(&self->ct, &self->t, tid, BFT_REC_EXIT, n))
#define T(tid, type, how)	ASSERT_EQ(0, feed2(&self->ct, &self->t, tid, BFT_REC_THROW, type, how))
#define U(tid, n, why)	ASSERT_EQ(0, feed2(&self->ct, &self->t, tid, BFT_REC_UNWIND, n, why))
#define REC(kind)	ASSERT_EQ(0, feed(&self->ct, &self->t, 0, kind, 1))

#define EXPECT_TEXT(want) do {						\
		char *_s = bft_calltree_text(&self->ct);		\
		ASSERT_NE(NULL, _s);					\
		EXPECT_STREQ(want, _s);					\
		free(_s);						\
	} while (0)

TEST_F(ct, exits_close_frames_in_reverse_order)
{
	E(1235, 5);
	E(1235, 6);
	X(1235, 1);
	X(1235, 1);
	EXPECT_TEXT("tid 1235: e5 e6 x6 x5\n");
	EXPECT_EQ(0, bft_calltree_depth(&self->ct, 1234, 1235));
	EXPECT_EQ(-1, bft_calltree_depth(&self->ct, 1234, 9));
	ASSERT_EQ(4, self->calls.n);
	EXPECT_EQ(BFT_CALL_EXIT, self->calls.ev[2].kind);
	EXPECT_EQ(6u, self->calls.ev[2].id);
	EXPECT_EQ(2u, self->calls.ev[2].depth);
	EXPECT_EQ(1001u, self->calls.ev[2].enter_ns);
	EXPECT_EQ(1002u, self->calls.ev[2].time_ns);
	EXPECT_EQ(5u, self->calls.ev[3].id);
	EXPECT_EQ(1u, self->calls.ev[3].depth);
}

TEST_F(ct, exit_run_closes_that_many_frames)
{
	E(7, 1);
	E(7, 2);
	E(7, 3);
	X(7, 2);
	EXPECT_EQ(1, bft_calltree_depth(&self->ct, 1234, 7));
	EXPECT_TEXT("tid 7: e1 e2 e3 x3 x2\n");
}

TEST_F(ct, exit_first_closes_noret_frames_then_one_ordinary)
{
	E(7, 1);
	N(7, 2);
	N(7, 3);
	X(7, 1);
	EXPECT_TEXT("tid 7: e1 n2 n3 x3 x2 x1\n");
	EXPECT_EQ(3u, bft_calltree_stats(&self->ct)->exits);
	EXPECT_EQ(2u, bft_calltree_stats(&self->ct)->noret_closed);
	ASSERT_EQ(6, self->calls.n);
	EXPECT_TRUE(self->calls.ev[1].noret);
	EXPECT_TRUE(self->calls.ev[3].noret);
	EXPECT_FALSE(self->calls.ev[5].noret);
}

TEST_F(ct, noret_frames_below_an_ordinary_frame_stay_open)
{
	E(7, 1);
	N(7, 2);
	E(7, 3);
	N(7, 4);
	X(7, 1);	/* closes 4 then 3; 2 stays */
	EXPECT_EQ(2, bft_calltree_depth(&self->ct, 1234, 7));
	X(7, 1);	/* closes 2 then 1 */
	EXPECT_TEXT("tid 7: e1 n2 e3 n4 x4 x3 x2 x1\n");
}

TEST_F(ct, break_voids_every_stack_and_later_exits_are_orphans)
{
	E(1, 10);
	E(1, 11);
	E(2, 20);
	REC(BFT_REC_BREAK);
	REC(BFT_REC_BREAK);	/* the same break seen on another CPU */
	X(1, 2);
	X(1, 1);
	E(2, 21);
	X(2, 2);
	EXPECT_TEXT("tid 1: e10 e11 | x?*3\n"
		    "tid 2: e20 | e21 x21 x?\n");
	EXPECT_EQ(4u, bft_calltree_stats(&self->ct)->orphans);
	EXPECT_EQ(0u, bft_calltree_stats(&self->ct)->unbalanced);
	EXPECT_EQ(3u, bft_calltree_stats(&self->ct)->voided_frames);
	EXPECT_EQ(2u, bft_calltree_stats(&self->ct)->voids);
}

TEST_F(ct, void_event_per_thread_names_the_cause_and_frames_dropped)
{
	E(1, 10);
	E(1, 11);
	E(2, 20);
	self->calls.n = 0;
	REC(BFT_REC_LOST);
	ASSERT_EQ(2, self->calls.n);
	EXPECT_EQ(BFT_CALL_VOID, self->calls.ev[0].kind);
	EXPECT_EQ(BFT_REC_LOST, self->calls.ev[0].cause);
	EXPECT_EQ(1u, self->calls.ev[0].tid);
	EXPECT_EQ(2u, self->calls.ev[0].depth);
	EXPECT_EQ(1u, self->calls.ev[1].depth);
	REC(BFT_REC_GAP);	/* nothing happened since: nothing to void */
	EXPECT_EQ(2, self->calls.n);
	E(2, 21);
	REC(BFT_REC_GAP);
	ASSERT_EQ(4, self->calls.n);
	EXPECT_EQ(BFT_REC_GAP, self->calls.ev[3].cause);
	EXPECT_EQ(2u, self->calls.ev[3].tid);
}

TEST_F(ct, threads_start_with_unknown_history)
{
	X(5, 1);
	E(5, 1);
	X(5, 1);
	X(5, 1);
	EXPECT_TEXT("tid 5: x? e1 x1 x?\n");
	EXPECT_EQ(2u, bft_calltree_stats(&self->ct)->orphans);
}

TEST(exit_past_a_known_bottom_is_unbalanced)
{
	struct bft_calltree ct;
	struct bft_calltree_opts o = { .text = true, .start_known = true };
	uint64_t t = 0;
	char *s;

	ASSERT_EQ(0, bft_calltree_init(&ct, &o));
	ASSERT_EQ(0, feed(&ct, &t, 5, BFT_REC_ENTER, 1));
	ASSERT_EQ(0, feed(&ct, &t, 5, BFT_REC_EXIT, 3));
	ASSERT_EQ(0, feed(&ct, &t, 5, BFT_REC_BREAK, 1));
	ASSERT_EQ(0, feed(&ct, &t, 5, BFT_REC_EXIT, 1));
	s = bft_calltree_text(&ct);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("tid 5: e1 x1 x!*2 | x?\n", s);
	EXPECT_EQ(2u, bft_calltree_stats(&ct)->unbalanced);
	EXPECT_EQ(1u, bft_calltree_stats(&ct)->orphans);
	free(s);
	bft_calltree_free(&ct);
}

TEST_F(ct, huge_exit_run_on_empty_stack_is_counted_not_looped)
{
	E(9, 1);
	X(9, UINT64_MAX);
	EXPECT_EQ(UINT64_MAX - 1, bft_calltree_stats(&self->ct)->orphans);
	EXPECT_TEXT("tid 9: e1 x1 x?*18446744073709551614\n");
}

TEST_F(ct, text_lists_threads_by_tid)
{
	E(300, 1);
	E(2, 2);
	E(1000, 3);
	E(2, 4);
	EXPECT_TEXT("tid 2: e2 e4\ntid 300: e1\ntid 1000: e3\n");
	EXPECT_EQ(3u, bft_calltree_stats(&self->ct)->threads);
	EXPECT_EQ(2u, bft_calltree_stats(&self->ct)->max_depth);
}

TEST_F(ct, records_without_calls_are_ignored)
{
	REC(BFT_REC_SYNC);
	REC(BFT_REC_THREAD);
	REC(BFT_REC_TIME);
	REC(BFT_REC_TIME_SHORT);
	EXPECT_EQ(0, self->calls.n);
	EXPECT_TEXT("");
}

TEST_F(ct, callback_value_stops_the_feed)
{
	E(1, 1);
	E(1, 2);
	self->calls.stop_at = 3;
	EXPECT_EQ(3, feed(&self->ct, &self->t, 1, BFT_REC_EXIT, 2));
	EXPECT_EQ(3, self->calls.n);
}

/* Many threads, deep stacks: the hash table and stacks grow. */
TEST_F(ct, many_threads_and_deep_stacks)
{
	uint32_t tid;
	int i;

	for (tid = 1; tid <= 2000; tid++)
		for (i = 0; i < 100; i++)
			ASSERT_EQ(0, feed(&self->ct, &self->t, tid,
					  BFT_REC_ENTER, (uint64_t)i));
	for (tid = 1; tid <= 2000; tid++) {
		ASSERT_EQ(100, bft_calltree_depth(&self->ct, 1234, tid));
		ASSERT_EQ(0, feed(&self->ct, &self->t, tid, BFT_REC_EXIT, 100));
		ASSERT_EQ(0, bft_calltree_depth(&self->ct, 1234, tid));
	}
	EXPECT_EQ(2000u, bft_calltree_stats(&self->ct)->threads);
	EXPECT_EQ(200000u, bft_calltree_stats(&self->ct)->exits);
	EXPECT_EQ(0u, bft_calltree_stats(&self->ct)->orphans);
}

TEST_F(ct, throw_names_the_innermost_frame_and_closes_nothing)
{
	E(7, 1);
	E(7, 2);
	N(7, 3);
	self->calls.n = 0;
	T(7, 5, BFT_THROW_THROW);
	ASSERT_EQ(1, self->calls.n);
	EXPECT_EQ(BFT_CALL_THROW, self->calls.ev[0].kind);
	EXPECT_EQ(3u, self->calls.ev[0].id);
	EXPECT_EQ(3u, self->calls.ev[0].depth);
	EXPECT_TRUE(self->calls.ev[0].noret);
	EXPECT_EQ(5u, self->calls.ev[0].exc);
	EXPECT_EQ(BFT_THROW_THROW, self->calls.ev[0].how);
	EXPECT_EQ(1002u, self->calls.ev[0].enter_ns);
	EXPECT_EQ(1003u, self->calls.ev[0].time_ns);
	EXPECT_EQ(3, bft_calltree_depth(&self->ct, 1234, 7));
	EXPECT_EQ(1u, bft_calltree_stats(&self->ct)->throws);
	EXPECT_TEXT("tid 7: e1 e2 n3 t5\n");
}

TEST_F(ct, throw_on_an_empty_stack_names_no_frame)
{
	T(4, 0, BFT_THROW_RETHROW);
	T(4, 0, BFT_THROW_FORCED);
	ASSERT_EQ(2, self->calls.n);
	EXPECT_EQ(0u, self->calls.ev[0].id);
	EXPECT_EQ(0u, self->calls.ev[0].depth);
	EXPECT_EQ(0u, self->calls.ev[0].enter_ns);
	EXPECT_EQ(BFT_THROW_RETHROW, self->calls.ev[0].how);
	EXPECT_EQ(BFT_THROW_FORCED, self->calls.ev[1].how);
	EXPECT_TEXT("tid 4: r0 f0\n");
}

TEST_F(ct, unwind_closes_frames_like_an_exit_run_marked_unwound)
{
	E(7, 1);
	E(7, 2);
	E(7, 3);
	T(7, 2, BFT_THROW_THROW);
	self->calls.n = 0;
	U(7, 2, BFT_UNWIND_CATCH);
	ASSERT_EQ(2, self->calls.n);
	EXPECT_EQ(BFT_CALL_EXIT, self->calls.ev[0].kind);
	EXPECT_EQ(3u, self->calls.ev[0].id);
	EXPECT_EQ(3u, self->calls.ev[0].depth);
	EXPECT_EQ(BFT_UNWIND_CATCH, self->calls.ev[0].unwound);
	EXPECT_EQ(2u, self->calls.ev[1].id);
	EXPECT_EQ(BFT_UNWIND_CATCH, self->calls.ev[1].unwound);
	EXPECT_EQ(1004u, self->calls.ev[1].time_ns);
	X(7, 1);
	ASSERT_EQ(3, self->calls.n);
	EXPECT_EQ(0u, self->calls.ev[2].unwound);
	EXPECT_EQ(1u, self->calls.ev[2].id);
	EXPECT_TEXT("tid 7: e1 e2 e3 t2 u3 u2 x1\n");
	EXPECT_EQ(2u, bft_calltree_stats(&self->ct)->unwound);
	EXPECT_EQ(1u, bft_calltree_stats(&self->ct)->exits);
	EXPECT_EQ(0u, bft_calltree_stats(&self->ct)->orphans);
}

TEST_F(ct, unwind_closes_noret_frames_on_top_then_one_ordinary_each_time)
{
	E(7, 1);
	N(7, 2);
	E(7, 3);
	N(7, 4);
	N(7, 5);
	U(7, 1, BFT_UNWIND_LONGJMP);	/* 5, 4, then 3; 2 stays */
	EXPECT_EQ(2, bft_calltree_depth(&self->ct, 1234, 7));
	U(7, 1, BFT_UNWIND_FOUND);	/* 2, then 1 */
	EXPECT_EQ(0, bft_calltree_depth(&self->ct, 1234, 7));
	EXPECT_TEXT("tid 7: e1 n2 e3 n4 n5 u5 u4 u3 u2 u1\n");
	EXPECT_EQ(5u, bft_calltree_stats(&self->ct)->unwound);
	EXPECT_EQ(3u, bft_calltree_stats(&self->ct)->noret_closed);
	ASSERT_EQ(10, self->calls.n);
	EXPECT_EQ(BFT_UNWIND_LONGJMP, self->calls.ev[5].unwound);
	EXPECT_EQ(BFT_UNWIND_LONGJMP, self->calls.ev[7].unwound);
	EXPECT_EQ(BFT_UNWIND_FOUND, self->calls.ev[9].unwound);
	EXPECT_TRUE(self->calls.ev[8].noret);
}

TEST_F(ct, unwind_past_the_open_frames_counts_orphans)
{
	E(9, 1);
	U(9, 3, BFT_UNWIND_CATCH);
	U(9, 2, BFT_UNWIND_CATCH);
	X(9, 1);
	U(9, UINT64_MAX, BFT_UNWIND_LONGJMP);	/* counted, not looped */
	EXPECT_TEXT("tid 9: e1 u1 u?*4 x? u?*18446744073709551615\n");
	EXPECT_EQ(4u + 1u + UINT64_MAX, bft_calltree_stats(&self->ct)->orphans);
	EXPECT_EQ(1u, bft_calltree_stats(&self->ct)->unwound);
	ASSERT_EQ(2, self->calls.n);
}

TEST(unwind_past_a_known_bottom_is_unbalanced)
{
	struct bft_calltree ct;
	struct bft_calltree_opts o = { .text = true, .start_known = true };
	uint64_t t = 0;
	char *s;

	ASSERT_EQ(0, bft_calltree_init(&ct, &o));
	ASSERT_EQ(0, feed(&ct, &t, 5, BFT_REC_ENTER, 1));
	ASSERT_EQ(0, feed2(&ct, &t, 5, BFT_REC_UNWIND, 3, BFT_UNWIND_CATCH));
	ASSERT_EQ(0, feed(&ct, &t, 5, BFT_REC_EXIT, 1));
	s = bft_calltree_text(&ct);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("tid 5: e1 u1 u!*2 x!\n", s);
	EXPECT_EQ(3u, bft_calltree_stats(&ct)->unbalanced);
	free(s);
	bft_calltree_free(&ct);
}

TEST_F(ct, throw_and_unwind_after_a_break_touch_no_voided_frame)
{
	E(1, 10);
	E(1, 11);
	REC(BFT_REC_BREAK);
	T(1, 3, BFT_THROW_THROW);
	U(1, 2, BFT_UNWIND_CATCH);
	EXPECT_TEXT("tid 1: e10 e11 | t3 u?*2\n");
	ASSERT_EQ(4, self->calls.n);
	EXPECT_EQ(BFT_CALL_THROW, self->calls.ev[3].kind);
	EXPECT_EQ(0u, self->calls.ev[3].id);
	/* a later break voids the thread again: it had an event since */
	REC(BFT_REC_LOST);
	EXPECT_EQ(5, self->calls.n);
}

TEST_F(ct, callback_value_stops_an_unwind)
{
	E(1, 1);
	E(1, 2);
	E(1, 3);
	self->calls.stop_at = 4;
	EXPECT_EQ(3, feed2(&self->ct, &self->t, 1, BFT_REC_UNWIND, 3,
			   BFT_UNWIND_CATCH));
	EXPECT_EQ(4, self->calls.n);
	EXPECT_EQ(2, bft_calltree_depth(&self->ct, 1234, 1));
}

static int feed_mark(struct bft_calltree *ct, uint64_t *t, uint32_t tid,
		     uint32_t id, unsigned int n, uint16_t sgn)
{
	struct bft_record r;

	memset(&r, 0, sizeof(r));
	r.time_ns = (*t)++;
	r.tgid = 1234;
	r.tid = tid;
	r.kind = BFT_REC_MARK;
	r.value = id;
	r.value2 = n;
	r.mark_signed = sgn;
	return bft_calltree_feed(ct, &r);
}

#define M(tid, id, n, sgn)	ASSERT_EQ(0, feed_mark(&self->ct, &self->t, tid, id, n, sgn))
#define A(tid, v)	ASSERT_EQ(0, feed(&self->ct, &self->t, tid, BFT_REC_ARG, v))

TEST_F(ct, mark_is_one_event_once_its_arguments_are_in)
{
	E(7, 1);
	M(7, 9, 2, 1);
	A(8, 0);	/* another thread's stray ARG changes nothing */
	A(7, (uint64_t)-5);
	EXPECT_EQ(1, self->calls.n);
	A(7, UINT64_MAX);
	M(7, 10, 0, 0);
	ASSERT_EQ(3, self->calls.n);
	EXPECT_EQ(BFT_CALL_MARK, self->calls.ev[1].kind);
	EXPECT_EQ(9u, self->calls.ev[1].id);
	EXPECT_EQ(1u, self->calls.ev[1].depth);
	EXPECT_EQ(2u, self->calls.ev[1].nargs);
	EXPECT_EQ(1u, self->calls.ev[1].mark_signed);
	EXPECT_EQ((uint64_t)-5, self->calls.ev[1].args[0]);
	EXPECT_EQ(UINT64_MAX, self->calls.ev[1].args[1]);
	EXPECT_EQ(1004u, self->calls.ev[1].time_ns);
	EXPECT_EQ(BFT_CALL_MARK, self->calls.ev[2].kind);
	EXPECT_EQ(0u, self->calls.ev[2].nargs);
	EXPECT_EQ(1, bft_calltree_depth(&self->ct, 1234, 7));
	EXPECT_EQ(2u, bft_calltree_stats(&self->ct)->marks);
	EXPECT_TEXT("tid 7: e1 m9:-5,18446744073709551615 m10\n");
}

TEST_F(ct, break_between_a_mark_and_its_arguments_drops_it)
{
	M(7, 9, 2, 0);
	A(7, 1);
	REC(BFT_REC_LOST);
	A(7, 2);
	EXPECT_EQ(0u, bft_calltree_stats(&self->ct)->marks);
	EXPECT_EQ(1u, bft_calltree_stats(&self->ct)->marks_cut);
	ASSERT_EQ(1, self->calls.n);
	EXPECT_EQ(BFT_CALL_VOID, self->calls.ev[0].kind);
}

TEST_HARNESS_MAIN
