// SPDX-License-Identifier: GPL-2.0
/* The call filters (--min-time, --caller) on synthetic call streams:
 * exactly which events pass, in which order, and what is counted. */
#include <errno.h>

#include "kselftest_harness.h"

#include "model/bft_callfilter.h"
#include "bft_test.h"

/* What passed as words: ">id@t" entry, "<id@t" exit, "!id@t" throw, "|". */
struct out {
	char s[2048];
	size_t len;
};

static int out_emit(void *ctx, void *thread, const struct bft_call_event *ev)
{
	static const char sign[] = { [BFT_CALL_ENTER] = '>',
				     [BFT_CALL_EXIT] = '<',
				     [BFT_CALL_THROW] = '!',
				     [BFT_CALL_VOID] = '|' };
	struct out *o = ctx;

	(void)thread;
	if (ev->user)
		return -EINVAL;	/* the slot is not valid after the fact */
	o->len += (size_t)snprintf(o->s + o->len, sizeof(o->s) - o->len,
				   "%s%c%u@%" PRIu64, o->len ? " " : "",
				   sign[ev->kind], ev->id, ev->time_ns);
	return 0;
}

/*
 * Feed a stream written as words: "E<id>@<t>" enters, "X@<t>" exits the
 * innermost frame, "T@<t>" throws in it, "V@<t>" is a break.
 */
static int run(struct bft_callfilter *f, const char *stream)
{
	struct bft_callfilter_thread t = { 0 };
	struct bft_call_event ev;
	uint32_t ids[64], depth = 0;
	uint64_t enters[64];
	void *slot = NULL;
	char op;
	int n, err = 0;
	unsigned int id;
	uint64_t time;

	while (*stream && !err) {
		memset(&ev, 0, sizeof(ev));
		ev.user = &slot;
		if (sscanf(stream, "E%u@%" SCNu64 "%n", &id, &time, &n) == 2) {
			ids[depth] = id;
			enters[depth++] = time;
			ev.kind = BFT_CALL_ENTER;
			ev.id = id;
			ev.depth = depth;
		} else if (sscanf(stream, "%c@%" SCNu64 "%n", &op, &time,
				  &n) == 2 && depth) {
			ev.kind = op == 'X' ? BFT_CALL_EXIT :
				  op == 'T' ? BFT_CALL_THROW : BFT_CALL_VOID;
			ev.id = ids[depth - 1];
			ev.depth = depth;
			ev.enter_ns = enters[depth - 1];
			if (op == 'X')
				depth--;
			else if (op == 'V')
				depth = 0;
		} else {
			return -EINVAL;
		}
		ev.time_ns = time;
		err = bft_callfilter_feed(f, &t, NULL, &ev);
		stream += n;
		while (*stream == ' ')
			stream++;
	}
	return err ?: bft_callfilter_flush(f, &t, NULL);
}

static bool under_7_or_9(void *ctx, uint32_t id)
{
	(void)ctx;
	return id == 7 || id == 9;
}

#define FILTER(o, min, caller)					\
	{ .o = { .min_ns = (min), .is_caller = (caller),	\
		 .emit = out_emit, .ctx = &(o) } }

TEST(min_time_drops_short_calls_keeps_callers)
{
	struct out o = { 0 };
	struct bft_callfilter f = FILTER(o, 100, NULL);

	/* 1 [0,500] calls 2 [10,20] (short), 3 [30,300] which calls 4 [40,41] */
	ASSERT_EQ(0, run(&f, "E1@0 E2@10 X@20 E3@30 E4@40 X@41 X@300 X@500"));
	EXPECT_STREQ(">1@0 >3@30 <3@300 <1@500", o.s);
	EXPECT_EQ(2, f.st.min_time_dropped);
	EXPECT_EQ(0, f.st.caller_dropped);
	EXPECT_EQ(0, f.st.hold_overflow);
}

TEST(min_time_boundary_is_kept)
{
	struct out o = { 0 };
	struct bft_callfilter f = FILTER(o, 100, NULL);

	ASSERT_EQ(0, run(&f, "E1@0 X@100 E2@200 X@299"));
	EXPECT_STREQ(">1@0 <1@100", o.s);
	EXPECT_EQ(1, f.st.min_time_dropped);
}

TEST(min_time_sends_aged_entries_before_their_exit)
{
	struct out o = { 0 };
	struct bft_callfilter f = FILTER(o, 100, NULL);
	struct bft_callfilter_thread t = { 0 };
	struct bft_call_event ev = { .kind = BFT_CALL_ENTER, .id = 1,
				     .depth = 1, .time_ns = 0 };

	ASSERT_EQ(0, bft_callfilter_feed(&f, &t, NULL, &ev));
	ev.id = 2, ev.depth = 2, ev.time_ns = 50;
	ASSERT_EQ(0, bft_callfilter_feed(&f, &t, NULL, &ev));
	EXPECT_STREQ("", o.s);	/* nothing known long enough yet */
	ev.id = 3, ev.depth = 3, ev.time_ns = 120;
	ASSERT_EQ(0, bft_callfilter_feed(&f, &t, NULL, &ev));
	/* 1 is 120 old: out; 2 is 70 old: still held */
	EXPECT_STREQ(">1@0", o.s);
	ASSERT_EQ(0, bft_callfilter_flush(&f, &t, NULL));
	EXPECT_STREQ(">1@0 >2@50 >3@120", o.s);
	EXPECT_EQ(0, f.st.min_time_dropped);
}

TEST(min_time_throw_goes_with_its_call)
{
	struct out o = { 0 };
	struct bft_callfilter f = FILTER(o, 100, NULL);

	ASSERT_EQ(0, run(&f, "E1@0 E2@10 T@15 X@16 E3@20 T@25 X@200 X@300"));
	EXPECT_STREQ(">1@0 >3@20 !3@25 <3@200 <1@300", o.s);
	EXPECT_EQ(1, f.st.min_time_dropped);
}

TEST(min_time_break_sends_what_it_held)
{
	struct out o = { 0 };
	struct bft_callfilter f = FILTER(o, 100, NULL);

	ASSERT_EQ(0, run(&f, "E1@0 E2@10 V@20 E3@30 X@40"));
	EXPECT_STREQ(">1@0 >2@10 |2@20", o.s);
	EXPECT_EQ(1, f.st.min_time_dropped);
}

TEST(caller_keeps_only_what_runs_under_it)
{
	struct out o = { 0 };
	struct bft_callfilter f = FILTER(o, 0, under_7_or_9);

	/* 1 calls 2, 7 (which calls 8, and 9 nested); then 5 */
	ASSERT_EQ(0, run(&f, "E1@0 E2@1 X@2 E7@3 E8@4 X@5 E9@6 X@7 X@8 "
			     "E5@9 X@10 X@11"));
	EXPECT_STREQ(">7@3 >8@4 <8@5 >9@6 <9@7 <7@8", o.s);
	EXPECT_EQ(3, f.st.caller_dropped);
	EXPECT_EQ(0, f.st.min_time_dropped);
}

TEST(caller_and_min_time_together)
{
	struct out o = { 0 };
	struct bft_callfilter f = FILTER(o, 100, under_7_or_9);

	ASSERT_EQ(0, run(&f, "E1@0 E7@10 E8@20 X@30 E4@40 X@400 X@500 "
			     "E9@600 X@650 X@1000"));
	EXPECT_STREQ(">7@10 >4@40 <4@400 <7@500", o.s);
	EXPECT_EQ(1, f.st.caller_dropped);
	EXPECT_EQ(2, f.st.min_time_dropped);
}

TEST(hold_is_bounded)
{
	struct out o = { 0 };
	struct bft_callfilter f = FILTER(o, 1000000, NULL);
	struct bft_callfilter_thread t = { 0 };
	struct bft_call_event ev = { .kind = BFT_CALL_ENTER, .id = 1 };
	uint32_t i;

	for (i = 0; i < BFT_CALLFILTER_HOLD_MAX + 2; i++) {
		ev.depth = i + 1;
		ev.time_ns = i;
		ASSERT_EQ(0, bft_callfilter_feed(&f, &t, NULL, &ev));
	}
	EXPECT_STREQ(">1@0 >1@1", o.s);
	EXPECT_EQ(2, f.st.hold_overflow);
	EXPECT_EQ(BFT_CALLFILTER_HOLD_MAX, t.n);
	o.len = 0;
	free(t.held);
}

TEST(durations)
{
	uint64_t ns = 0;

	ASSERT_EQ(0, bft_duration_parse("500ns", &ns));
	EXPECT_EQ(500, ns);
	ASSERT_EQ(0, bft_duration_parse("10us", &ns));
	EXPECT_EQ(10000, ns);
	ASSERT_EQ(0, bft_duration_parse("2ms", &ns));
	EXPECT_EQ(2000000, ns);
	ASSERT_EQ(0, bft_duration_parse("1s", &ns));
	EXPECT_EQ(1000000000, ns);
	ASSERT_EQ(0, bft_duration_parse("7", &ns));
	EXPECT_EQ(7000, ns);
	EXPECT_EQ(-1, bft_duration_parse("", &ns));
	EXPECT_EQ(-1, bft_duration_parse("ms", &ns));
	EXPECT_EQ(-1, bft_duration_parse("-1ms", &ns));
	EXPECT_EQ(-1, bft_duration_parse("5 ms", &ns));
	EXPECT_EQ(-1, bft_duration_parse("5min", &ns));
	EXPECT_EQ(-1, bft_duration_parse("99999999999999999999ns", &ns));
}

TEST_HARNESS_MAIN
