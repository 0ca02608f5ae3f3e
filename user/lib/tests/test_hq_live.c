// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq's live copy (docs/live-format.md) and seed 002's rules: messages
 * that arrive out of order are written in order; a missing sequence number
 * is declared lost once the reorder queue holds its bound; a stream without
 * news gets an empty index entry at a flush, and a reader shows only up to
 * the minimum of the streams' latest end times, skipping a torn record.
 * Then bfhq --replay: a finished trace's outputs rebuilt from live/ equal
 * the originals, and a bfhq killed mid-trace (SIGKILL, bfcollector feeding
 * it) leaves a directory that replays without error to a prefix of the
 * whole trace, everything its complete index entries cover.
 */
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "bft_test.h"
#include "collector_fixture.h"
#include "hq.h"
#include "hq_feed.h"
#include "live.h"
#include "spill.h"

FIXTURE(live)
{
	char dir[PATH_MAX];
	char live[PATH_MAX + 32];
	struct hq hq;
	struct conn *ctl, *data;
	struct trace *t;
};

FIXTURE_SETUP(live)
{
	hq_log_quiet = true;
	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	snprintf(self->live, sizeof(self->live), "%s/trace-1/live", self->dir);
	memset(&self->hq, 0, sizeof(self->hq));
	self->hq.listen_fd = self->hq.ctl_fd = -1;
	self->hq.o.outdir = self->dir;
	self->hq.o.gap_ms = 2000;
	/* the tests flush themselves: the period never runs out */
	self->hq.o.live_flush_ms = 3600000;
	bfp_config_init(&self->hq.o.config);
	self->t = hq_test_connect(&self->hq, &self->ctl, &self->data);
	ASSERT_NE(NULL, self->t);
	ASSERT_NE(NULL, self->t->live);
}

FIXTURE_TEARDOWN(live)
{
	hq_free(&self->hq);
	bfp_config_free(&self->hq.o.config);
	remove_tmpdir(self->dir);
}

static void ev(FIXTURE_DATA(live) *self, uint8_t id, uint32_t seq,
	       uint32_t method, uint16_t thread)
{
	hq_test_event(&self->hq, self->data, id, seq, method, thread);
}

static void map(FIXTURE_DATA(live) *self, uint8_t id, uint32_t n,
		const char *name)
{
	hq_test_map(&self->hq, self->data, id, n, name);
}

static void flush_now(FIXTURE_DATA(live) *self)
{
	live_tick(self->t->live, self->t, hq_now_ms(), true, false);
}

static const struct live_stream *find(const struct live_view *v,
				      uint32_t id)
{
	size_t k;

	for (k = 0; k < v->nstreams; k++)
		if (v->streams[k].id == id)
			return &v->streams[k];
	return NULL;
}

static char *file_in(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bft_test_slurp(path, NULL);
}

/* trace-1's files in dir equal the replay's in out, each over min bytes. */
static void same_outputs(struct __test_metadata *_metadata, const char *dir,
			 const char *out, const char *const *files, size_t n,
			 size_t min)
{
	size_t k;

	for (k = 0; k < n; k++) {
		char name[64], *a, *b;

		snprintf(name, sizeof(name), "trace-1/%s", files[k]);
		a = file_in(dir, name);
		b = file_in(out, files[k]);
		ASSERT_NE(NULL, a);
		ASSERT_NE(NULL, b);
		EXPECT_LE(min, strlen(a)) TH_LOG("%s", files[k]);
		EXPECT_STREQ(a, b) TH_LOG("%s", files[k]);
		free(a);
		free(b);
	}
}

static off_t size_of(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) ? -1 : st.st_size;
}

TEST_F(live, out_of_order_arrival_is_written_in_order)
{
	struct live_view v;
	const struct live_stream *s;

	map(self, BFP_MAP_METHOD, 1, "outer");
	map(self, BFP_MAP_METHOD, 2, "inner");
	map(self, BFP_MAP_THREAD, 7, "main (10/10)");
	ev(self, BFP_METHOD_EXIT, 2, 2, 7);
	ev(self, BFP_METHOD_ENTRY, 1, 2, 7);
	ev(self, BFP_METHOD_EXIT, 3, 1, 7);
	EXPECT_EQ(0u, self->t->routed);
	flush_now(self);
	/* nothing routed, nothing indexed: the names may already be there */
	ASSERT_EQ(0, live_read(self->live, &v));
	EXPECT_EQ(0u, v.nstreams);
	EXPECT_FALSE(v.have_frontier);
	EXPECT_STREQ("M 1 outer\nM 2 inner\nT 7 main (10/10)\n", v.names);
	live_view_free(&v);
	ev(self, BFP_METHOD_ENTRY, 0, 1, 7);
	EXPECT_EQ(4u, self->t->routed);
	flush_now(self);
	ASSERT_EQ(0, live_read(self->live, &v));
	ASSERT_EQ(1u, v.nstreams);
	s = find(&v, 7);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("e 0 0 1\ne 1 1000 2\nx 2 2000 2\nx 3 3000 1\n", s->data);
	EXPECT_EQ(1u, s->entries);
	EXPECT_EQ(4u, s->lines);
	EXPECT_TRUE(v.have_frontier);
	EXPECT_EQ(3000u, v.frontier_us);
	EXPECT_STREQ("running", json_string_value(json_object_get(v.meta,
								  "state")));
	live_view_free(&v);
}

TEST_F(live, a_missing_number_is_lost_once_the_queue_holds_its_bound)
{
	struct live_view v;
	const struct live_stream *s;
	json_t *c;
	char *text;

	self->hq.o.reorder_bound = 3;
	map(self, BFP_MAP_METHOD, 1, "f");
	ev(self, BFP_METHOD_ENTRY, 0, 1, 1);
	/* 1 never comes; two wait behind it: below the bound */
	ev(self, BFP_METHOD_ENTRY, 2, 1, 1);
	ev(self, BFP_METHOD_EXIT, 3, 1, 1);
	EXPECT_EQ(1u, self->t->routed);
	EXPECT_EQ(0u, self->t->lost_bound);
	/* the third: 1 is lost, and ordering goes on */
	ev(self, BFP_METHOD_EXIT, 4, 1, 1);
	EXPECT_EQ(4u, self->t->routed);
	EXPECT_EQ(1u, self->t->lost_bound);
	EXPECT_EQ(1u, self->t->lost_missing);
	EXPECT_EQ(0u, self->t->gaps);
	/* it comes after all: too late, dropped */
	ev(self, BFP_METHOD_EXIT, 1, 1, 1);
	EXPECT_EQ(1u, self->t->late);
	EXPECT_EQ(4u, self->t->routed);
	flush_now(self);
	ASSERT_EQ(0, live_read(self->live, &v));
	s = find(&v, 1);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("e 0 0 1\n| 2 0 lost 1 1\ne 2 2000 1\nx 3 3000 1\n"
		     "x 4 4000 1\n", s->data);
	c = json_object_get(v.meta, "counters");
	EXPECT_EQ(1, json_integer_value(json_object_get(c, "lost")));
	EXPECT_EQ(1, json_integer_value(json_object_get(c, "lost_missing")));
	EXPECT_EQ(1, json_integer_value(json_object_get(c, "late")));
	EXPECT_EQ(3, json_integer_value(json_object_get(v.meta,
							"reorder_bound")));
	live_view_free(&v);
	hq_free(&self->hq);
	text = file_in(self->dir, "trace-1/summary.txt");
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "reorder bound: 1 sequence numbers "
			       "declared lost in 1 runs\n")) TH_LOG("%s", text);
	free(text);
	text = file_in(self->dir, "trace-1/calls.txt");
	ASSERT_NE(NULL, text);
	EXPECT_STREQ("thread 1: e1 | e1 x1 x?\n", text);
	free(text);
	text = file_in(self->dir, "trace-1/tree.txt");
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "---- lost: 1 frame cut ----"))
		TH_LOG("%s", text);
	free(text);
}

TEST_F(live, without_a_bound_the_queue_waits_for_the_gap_timeout)
{
	unsigned int k;

	ev(self, BFP_METHOD_ENTRY, 0, 1, 1);
	for (k = 2; k < 100; k++)
		ev(self, BFP_METHOD_ENTRY, k, 1, 1);
	EXPECT_EQ(1u, self->t->routed);
	EXPECT_EQ(98u, self->t->nheap);
	EXPECT_EQ(0u, self->t->lost_bound);
	/* the time bound */
	hq_trace_tick(&self->hq, self->t, hq_now_ms() + 2001);
	EXPECT_EQ(99u, self->t->routed);
	EXPECT_EQ(1u, self->t->gaps);
	EXPECT_EQ(0u, self->t->lost_bound);
}

static uint64_t rec(const char *dir, const char *name, unsigned int i,
		    unsigned int field)
{
	char *idx = file_in(dir, name);
	uint64_t v = 0;
	unsigned int k;

	if (!idx)
		return UINT64_MAX;
	for (k = 8; k-- > 0;)
		v = v << 8 | (unsigned char)idx[i * LIVE_INDEX_RECORD +
						 field + k];
	free(idx);
	return field == 32 || field == 36 ? (uint32_t)v : v;
}

TEST_F(live, an_idle_stream_gets_an_empty_index_entry)
{
	struct live_view v;
	const struct live_stream *s;
	char path[PATH_MAX + 64];

	ev(self, BFP_METHOD_ENTRY, 0, 1, 1);
	ev(self, BFP_METHOD_ENTRY, 1, 1, 2);
	flush_now(self);
	ev(self, BFP_METHOD_EXIT, 5, 1, 1);	/* 2..4 missing: waits */
	flush_now(self);
	/* nothing routed since: no entries (seed: no data, do nothing) */
	EXPECT_EQ(LIVE_INDEX_RECORD, size_of(self->live, "stream-1.index"));
	ev(self, BFP_METHOD_EXIT, 2, 1, 1);
	ev(self, BFP_METHOD_ENTRY, 3, 1, 1);
	ev(self, BFP_METHOD_EXIT, 4, 1, 1);	/* 5 follows: thread 1 only */
	flush_now(self);
	ASSERT_EQ(2 * LIVE_INDEX_RECORD, size_of(self->live,
						 "stream-2.index"));
	/* thread 2's second entry: empty, ending at the flush's frontier */
	EXPECT_EQ(rec(self->live, "stream-2.index", 0, 8),
		  rec(self->live, "stream-2.index", 1, 0));
	EXPECT_EQ(0u, rec(self->live, "stream-2.index", 1, 8));
	EXPECT_EQ(5000u, rec(self->live, "stream-2.index", 1, 16));
	EXPECT_EQ(5000u, rec(self->live, "stream-2.index", 1, 24));
	EXPECT_EQ(0u, rec(self->live, "stream-2.index", 1, 32));
	EXPECT_EQ(4u, rec(self->live, "stream-1.index", 1, 32));
	ASSERT_EQ(0, live_read(self->live, &v));
	EXPECT_EQ(5000u, v.frontier_us);
	s = find(&v, 1);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(5u, s->lines);
	EXPECT_EQ(0u, s->held);
	live_view_free(&v);

	/*
	 * Without thread 2's heartbeat (a flush torn after thread 1's
	 * entry), the frontier stays at the first flush: thread 1's later
	 * lines are held back, and the torn record is skipped.
	 */
	snprintf(path, sizeof(path), "%s/stream-2.index", self->live);
	ASSERT_EQ(0, truncate(path, LIVE_INDEX_RECORD + 17));
	ASSERT_EQ(0, live_read(self->live, &v));
	EXPECT_EQ(1u, v.torn);
	EXPECT_EQ(1000u, v.frontier_us);
	s = find(&v, 1);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("e 0 0 1\n", s->data);
	EXPECT_EQ(4u, s->held);
	s = find(&v, 2);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("e 1 1000 1\n", s->data);
	live_view_free(&v);
}

/*
 * Routed lines do not wait for the period: they are written a fifth of it
 * after the flush before, and not sooner; meta.json waits for the period.
 */
TEST_F(live, routed_lines_are_written_before_the_period_ends)
{
	struct live *l = self->t->live;
	uint64_t t0 = hq_now_ms();
	char *meta, *now;

	self->hq.o.live_flush_ms = 1000;
	live_tick(l, self->t, t0, true, false);
	meta = file_in(self->live, "meta.json");
	ASSERT_NE(NULL, meta);
	EXPECT_EQ(1000, live_wait_ms(l, t0));	/* nothing to write */
	ev(self, BFP_METHOD_ENTRY, 0, 1, 1);
	ev(self, BFP_METHOD_ENTRY, 1, 1, 2);
	EXPECT_EQ(150, live_wait_ms(l, t0 + 50));
	live_tick(l, self->t, t0 + 199, false, false);
	EXPECT_EQ(-1, size_of(self->live, "stream-1.index"));
	EXPECT_EQ(1, live_wait_ms(l, t0 + 199));
	live_tick(l, self->t, t0 + 200, false, false);
	EXPECT_EQ(LIVE_INDEX_RECORD, size_of(self->live, "stream-1.index"));
	EXPECT_EQ(LIVE_INDEX_RECORD, size_of(self->live, "stream-2.index"));
	EXPECT_EQ(1000, live_wait_ms(l, t0 + 200));
	/* the flush was not the period's: meta.json is as it was */
	now = file_in(self->live, "meta.json");
	ASSERT_NE(NULL, now);
	EXPECT_STREQ(meta, now);
	free(meta);
	free(now);

	/* one more line: again a fifth of the period later */
	ev(self, BFP_METHOD_EXIT, 2, 1, 1);
	live_tick(l, self->t, t0 + 399, false, false);
	EXPECT_EQ(LIVE_INDEX_RECORD, size_of(self->live, "stream-1.index"));
	live_tick(l, self->t, t0 + 400, false, false);
	/* every stream gets its entry: thread 2's an empty one */
	EXPECT_EQ(2 * LIVE_INDEX_RECORD, size_of(self->live,
						 "stream-1.index"));
	EXPECT_EQ(2 * LIVE_INDEX_RECORD, size_of(self->live,
						 "stream-2.index"));
	EXPECT_EQ(0u, rec(self->live, "stream-2.index", 1, 8));
}

TEST_F(live, an_entry_past_its_data_is_not_trusted)
{
	struct live_view v;
	const struct live_stream *s;
	char path[PATH_MAX + 64];

	ev(self, BFP_METHOD_ENTRY, 0, 1, 1);
	flush_now(self);
	ev(self, BFP_METHOD_EXIT, 1, 1, 1);
	flush_now(self);
	/* the data lost its last line (not bfhq's doing): its entry goes */
	snprintf(path, sizeof(path), "%s/stream-1.data", self->live);
	ASSERT_EQ(0, truncate(path, strlen("e 0 0 1\nx 1 10")));
	ASSERT_EQ(0, live_read(self->live, &v));
	EXPECT_EQ(1u, v.bad);
	s = find(&v, 1);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(1u, s->entries);
	EXPECT_STREQ("e 0 0 1\n", s->data);
	EXPECT_EQ(0u, v.frontier_us);
	live_view_free(&v);
}

TEST_F(live, a_finished_trace_replays_to_the_same_outputs)
{
	struct bfp_msg brk = { .id = BFP_DATA_BREAK, .seq = 6 };
	struct bfp_msg thr = { .id = BFP_EXCEPTION, .seq = 4, .time = 4,
			       .method = 2, .exception = 9, .line = 12,
			       .thread = 1 };
	struct bfp_msg bub = { .id = BFP_EXCEPTION_BUBBLE, .seq = 5,
			       .time = 5, .method = 2, .exception = 9,
			       .thread = 1 };
	struct bfp_msg mk = { .id = BFP_MARKER, .seq = 9, .time = 9,
			      .str = "bftrace.lost", .str_len = 12,
			      .str2 = "3", .str2_len = 1 };
	static const char *const files[] = { "calls.txt", "tree.txt",
		"folded.txt", "flame.svg", "methods.txt",
		"exceptions.txt", "trace.speedscope.json" };
	struct bfp_msg hb = { .id = BFP_HEARTBEAT, .mode = BFP_MODE_TRACING };
	struct bfp_msg cls = { .id = BFP_CLASS_TRANSFORMED, .str = "prog",
			       .str_len = 4 };
	char out[PATH_MAX + 32], cmd[2 * PATH_MAX + 128], *a, *b;

	map(self, BFP_MAP_METHOD, 1, "main");
	map(self, BFP_MAP_METHOD, 2, "thrower\twith a tab");
	map(self, BFP_MAP_EXCEPTION, 9, "std::bad_alloc");
	map(self, BFP_MAP_THREAD, 1, "one (5/5)");
	map(self, BFP_MAP_THREAD, 2, "two (5/6)");
	ev(self, BFP_METHOD_ENTRY, 0, 1, 1);
	ev(self, BFP_METHOD_ENTRY, 1, 1, 2);
	ev(self, BFP_METHOD_ENTRY, 2, 2, 2);
	ev(self, BFP_METHOD_ENTRY, 3, 2, 1);
	hq_test_send(&self->hq, self->data, &thr);
	hq_test_send(&self->hq, self->data, &bub);
	hq_test_send(&self->hq, self->ctl, &brk);
	flush_now(self);
	ev(self, BFP_METHOD_EXIT, 6, 1, 1);
	ev(self, BFP_METHOD_EXIT, 8, 2, 2);	/* 7 is a gap */
	hq_test_send(&self->hq, self->data, &mk);
	hq_test_send(&self->hq, self->ctl, &hb);
	hq_test_send(&self->hq, self->ctl, &cls);
	hq_trace_tick(&self->hq, self->t, hq_now_ms() + 2001);
	EXPECT_EQ(1u, self->t->gaps);
	hq_free(&self->hq);
	a = file_in(self->live, "meta.json");
	ASSERT_NE(NULL, a);
	EXPECT_NE(NULL, strstr(a, "\"state\": \"finished\"")) TH_LOG("%s", a);
	free(a);
	snprintf(out, sizeof(out), "%s/replay", self->dir);
	ASSERT_EQ(0, hq_replay(self->live, out));
	same_outputs(_metadata, self->dir, out, files,
		     sizeof(files) / sizeof(files[0]), 0);
	/* the speedscope file of a throw, a bubble, a break and a gap is
	 * still well nested and has calls.txt's calls */
	snprintf(cmd, sizeof(cmd), "python3 %s/../../../../scripts/"
		 "speedscope-check.py %s >&2", BFT_TEST_VECTORS, out);
	EXPECT_EQ(0, system(cmd));
	/* and the summary, counters included */
	a = file_in(self->dir, "trace-1/summary.txt");
	b = file_in(out, "summary.txt");
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	EXPECT_STREQ(a, b);
	EXPECT_NE(NULL, strstr(a, "messages:      9 sequenced, 1 heartbeats "
			       "(last mode T)\nreceived:      267 bytes of "
			       "messages\nclasses:       1 transformed"))
		TH_LOG("%s", a);
	EXPECT_NE(NULL, strstr(a, "3 events lost by the agent, 1 sequence "
			       "numbers missing in 1 gaps")) TH_LOG("%s", a);
	free(a);
	free(b);
}

static void marker(FIXTURE_DATA(live) *self, uint32_t seq, const char *key,
		   const char *value)
{
	struct bfp_msg m = { .id = BFP_MARKER, .seq = seq, .time = seq,
			     .str = key, .str_len = strlen(key),
			     .str2 = value, .str2_len = strlen(value) };

	hq_test_send(&self->hq, self->data, &m);
}

/*
 * meta.json is printed, not built, and skipped while nothing in it
 * changed: a counter that moves still reaches it, and a message of any
 * text still reads back as it was.
 */
TEST_F(live, meta_json_follows_its_counters_and_quotes_any_message)
{
	const char *msg = "a \"quoted\" C:\\path,\ta tab, caf\xc3\xa9";
	struct live_view v;
	json_t *c;

	flush_now(self);
	ASSERT_EQ(0, live_read(self->live, &v));
	ASSERT_NE(NULL, v.meta) TH_LOG("%s", v.meta_text);
	c = json_object_get(v.meta, "counters");
	EXPECT_EQ(0, json_integer_value(json_object_get(c, "heartbeats")));
	EXPECT_STREQ("running", json_string_value(json_object_get(v.meta,
								  "state")));
	EXPECT_STREQ("", json_string_value(json_object_get(v.meta,
							   "message")));
	live_view_free(&v);
	self->t->heartbeats = 7;
	flush_now(self);
	ASSERT_EQ(0, live_read(self->live, &v));
	c = json_object_get(v.meta, "counters");
	EXPECT_EQ(7, json_integer_value(json_object_get(c, "heartbeats")));
	live_view_free(&v);
	hq_trace_fail(&self->hq, self->t, NULL, "%s", msg);
	hq_free(&self->hq);
	ASSERT_EQ(0, live_read(self->live, &v));
	ASSERT_NE(NULL, v.meta) TH_LOG("%s", v.meta_text);
	EXPECT_STREQ("failed", json_string_value(json_object_get(v.meta,
								 "state")));
	EXPECT_STREQ(msg, json_string_value(json_object_get(v.meta,
							    "message")));
	live_view_free(&v);
}

TEST_F(live, bfcollector_microseconds_reach_the_live_copy_only)
{
	struct live_view v;
	const struct live_stream *s;
	char *text;

	marker(self, 0, "bftrace.us", "0");	/* declared first */
	ev(self, BFP_METHOD_ENTRY, 1, 1, 1);
	ev(self, BFP_METHOD_EXIT, 2, 1, 1);
	flush_now(self);
	/* routed, but held until their microseconds come */
	ASSERT_EQ(0, live_read(self->live, &v));
	EXPECT_EQ(0u, v.nstreams);
	live_view_free(&v);
	marker(self, 3, "bftrace.us", "2 250,999");
	marker(self, 4, "bftrace.us", "1 x");	/* malformed: ignored */
	ev(self, BFP_METHOD_ENTRY, 5, 1, 1);
	marker(self, 6, "bftrace.us", "1 7");
	flush_now(self);
	ASSERT_EQ(0, live_read(self->live, &v));
	s = find(&v, 1);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("e 1 1250 1\nx 2 2999 1\ne 5 5007 1\n", s->data);
	EXPECT_EQ(5007u, v.frontier_us);
	EXPECT_EQ(1, json_integer_value(json_object_get(v.meta,
							"resolution_us")));
	EXPECT_EQ(NULL, find(&v, LIVE_MARKERS));
	EXPECT_EQ(1, json_integer_value(json_object_get(
			     json_object_get(v.meta, "counters"),
			     "us_malformed")));
	live_view_free(&v);
	/* the usual outputs know nothing of them */
	EXPECT_EQ(3u, self->t->routed);
	hq_free(&self->hq);
	text = file_in(self->dir, "trace-1/calls.txt");
	ASSERT_NE(NULL, text);
	EXPECT_STREQ("thread 1: e1 x1 e1\n", text);
	free(text);
	text = file_in(self->dir, "trace-1/trace.json");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(NULL, strstr(text, "bftrace.us"));
	free(text);
}

/*
 * A marker bftrace.at placed in a thread stays in the markers' stream (a
 * thread's stream holds method events only), its bftrace.at line before
 * it, so that --replay places it again: the same tree.txt and calls.txt,
 * with the bfcollector microseconds of both.
 */
TEST_F(live, a_placed_marker_replays_into_its_thread)
{
	static const char *const files[] = { "calls.txt", "tree.txt",
		"folded.txt", "methods.txt" };
	char out[PATH_MAX + 32], *a;
	struct live_view v;
	const struct live_stream *s;

	map(self, BFP_MAP_METHOD, 1, "main");
	map(self, BFP_MAP_THREAD, 2, "two (5/6)");
	marker(self, 0, "bftrace.us", "0");
	ev(self, BFP_METHOD_ENTRY, 1, 1, 2);
	marker(self, 2, "bftrace.at", "2");
	marker(self, 3, "app:tick", "1 2");
	marker(self, 4, "app:global", "");
	ev(self, BFP_METHOD_EXIT, 5, 1, 2);
	marker(self, 6, "bftrace.us", "5 1,2,3,4,5");
	flush_now(self);
	ASSERT_EQ(0, live_read(self->live, &v));
	s = find(&v, LIVE_MARKERS);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("m 2 2002 bftrace.at\t2\nm 3 3003 app:tick\t1 2\n"
		     "m 4 4004 app:global\t\n", s->data);
	s = find(&v, 2);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("e 1 1001 1\nx 5 5005 1\n", s->data);
	live_view_free(&v);
	hq_free(&self->hq);
	a = file_in(self->dir, "trace-1/calls.txt");
	ASSERT_NE(NULL, a);
	EXPECT_STREQ("two (5/6): e1 mapp\\x3atick x1\n", a);
	free(a);
	a = file_in(self->dir, "trace-1/tree.txt");
	ASSERT_NE(NULL, a);
	EXPECT_NE(NULL, strstr(a, "           |   * app:tick 1 2 @ 3.003 ms\n"))
		TH_LOG("%s", a);
	free(a);
	snprintf(out, sizeof(out), "%s/replay", self->dir);
	ASSERT_EQ(0, hq_replay(self->live, out));
	same_outputs(_metadata, self->dir, out, files,
		     sizeof(files) / sizeof(files[0]), 8);
	a = file_in(out, "trace.json");
	ASSERT_NE(NULL, a);
	EXPECT_NE(NULL, strstr(a, "{\"name\":\"app:tick\",\"ph\":\"i\","
			       "\"s\":\"t\",\"ts\":2002,\"pid\":5,"
			       "\"tid\":6,\"args\":{\"value\":\"1 2\"}}"))
		TH_LOG("%s", a);
	EXPECT_EQ(NULL, strstr(a, "bftrace.at"));
	free(a);
}

/* Bytes of a fixed pseudo-random sequence into dir/name. */
static void garbage(const char *dir, const char *name, size_t n,
		    uint32_t *x)
{
	static const char often[] = "ex|m! 0123456789\n\t\\";
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return;
	while (n--) {
		*x = *x * 1103515245u + 12345u;
		/* mostly what the files hold, now and then anything */
		fputc(*x >> 28 ? often[(*x >> 16) % (sizeof(often) - 1)] :
				 (int)(*x >> 8 & 0xff), f);
	}
	fclose(f);
}

TEST_F(live, a_directory_of_garbage_reads_and_replays_without_harm)
{
	struct live_view v;
	char out[PATH_MAX + 32];
	uint32_t x = 12345;
	unsigned int round;

	hq_free(&self->hq);
	snprintf(out, sizeof(out), "%s/replay", self->dir);
	for (round = 0; round < 20; round++) {
		garbage(self->live, "stream-1.data", 4000, &x);
		garbage(self->live, "stream-1.index", 400 + round, &x);
		if (round & 1) {
			/* an index that fits: the garbage lines are read */
			unsigned char rec[LIVE_INDEX_RECORD] = { 0 };
			char path[PATH_MAX + 64];
			FILE *f;

			rec[9] = 4000 >> 8;
			rec[8] = 4000 & 0xff;
			memset(rec + 24, 0xff, 7);
			snprintf(path, sizeof(path), "%s/stream-1.index",
				 self->live);
			f = fopen(path, "w");
			ASSERT_NE(NULL, f);
			fwrite(rec, 1, sizeof(rec), f);
			fclose(f);
		}
		garbage(self->live, "stream-2.data", 100, &x);
		garbage(self->live, "stream-2.index", 40, &x);
		garbage(self->live, "names", 3000, &x);
		garbage(self->live, "meta.json", 200, &x);
		ASSERT_EQ(0, live_read(self->live, &v));
		EXPECT_EQ(2u, v.nstreams);
		/* random offsets and sizes: not ours, counted */
		EXPECT_LT(0u, v.bad + v.torn);
		live_view_free(&v);
		EXPECT_EQ(0, hq_replay(self->live, out));
	}
}

/* ---- a real bfhq, killed ---- */

/* The indexes' events (markers aside), and those up to the frontier. */
static void index_events(const char *live, uint64_t *upto, uint64_t *all)
{
	struct live_view v;
	size_t k;

	*upto = *all = 0;
	if (live_read(live, &v))
		return;
	for (k = 0; k < v.nstreams; k++) {
		char name[PATH_MAX + 64], *idx;
		size_t len, i;

		if (v.streams[k].id == LIVE_MARKERS)
			continue;
		snprintf(name, sizeof(name), "%s/stream-%u.index", live,
			 v.streams[k].id);
		idx = bft_test_slurp(name, &len);
		for (i = 0; idx && i + LIVE_INDEX_RECORD <= len;
		     i += LIVE_INDEX_RECORD) {
			uint32_t n = 0;
			uint64_t end = 0;
			int b;

			for (b = 3; b >= 0; b--)
				n = n << 8 | (unsigned char)idx[i + 32 + b];
			for (b = 7; b >= 0; b--)
				end = end << 8 | (unsigned char)idx[i + 24 + b];
			*all += n;
			if (end <= v.frontier_us)
				*upto += n;
		}
		free(idx);
	}
	live_view_free(&v);
}

/* Whether some line shown has a time that is no whole millisecond. */
static bool some_sub_ms_time(const char *live)
{
	struct live_view v;
	struct live_line l;
	bool found = false;
	size_t k;

	if (live_read(live, &v))
		return false;
	for (k = 0; k < v.nstreams && !found; k++) {
		const char *p = v.streams[k].data, *nl;

		for (; !found && (nl = strchr(p, '\n')); p = nl + 1)
			found = !live_parse_line(p, (size_t)(nl - p), &l) &&
				l.time_us % 1000;
	}
	live_view_free(&v);
	return found;
}

/* Tokens of calls.txt, and whether every line is a prefix of whole's. */
static uint64_t prefix_tokens(struct __test_metadata *_metadata,
			      const char *part, const char *whole)
{
	uint64_t n = 0;

	while (*part) {
		const char *nl = strchr(part, '\n'), *colon = strchr(part, ':');
		const char *w = whole, *p;
		size_t head;

		ASSERT_NE(NULL, nl);
		ASSERT_NE(NULL, colon);
		head = (size_t)(colon - part) + 1;
		/* the same thread's line in the whole trace */
		for (; *w; w = strchr(w, '\n') + 1)
			if (!strncmp(w, part, head))
				break;
		ASSERT_NE(0, *w) TH_LOG("%.*s not in the trace", (int)head,
					part);
		EXPECT_EQ(0, strncmp(w, part, (size_t)(nl - part)))
			TH_LOG("%.60s... is no prefix", part);
		EXPECT_TRUE(w[nl - part] == ' ' || w[nl - part] == '\n');
		for (p = colon; p < nl; p++)
			n += *p == ' ';
		part = nl + 1;
	}
	return n;
}

TEST_F_TIMEOUT(live, a_killed_bfhq_replays_up_to_its_last_index_entry, 600)
{
	char dir[PATH_MAX / 2], log[PATH_MAX], in[PATH_MAX / 2 + 16];
	char hqout[PATH_MAX / 2 + 16], trace[PATH_MAX / 2 + 32];
	char live[PATH_MAX / 2 + 48], out[PATH_MAX / 2 + 48];
	char port[16], hq[64], *calls, *expected, *text;
	char path[PATH_MAX + 64];
	struct syn syn = { .o = { .threads = 4, .cpus = 2, .methods = 20,
				  .steps = 20000, .seed = 11 } };
	/* four data connections: what bfhq writes it has put in order */
	char *hq_argv[] = { "bfhq", "-p", port, "-o", hqout, "--start",
			    "--live-flush", "20", "--data-senders", "4",
			    "--timeout", "300", NULL };
	char *coll_argv[] = { "bfcollector", "--hq", hq, "--protocol", "2",
			      "--replay", in, "--replay-chunk", "256",
			      "--replay-delay", "20", "--connect-timeout",
			      "30", NULL };
	/* the trace's directory, its outputs into its replay/ */
	char *replay_argv[] = { "bfhq", "--replay", trace, NULL };
	uint64_t upto, all, shown;
	pid_t hq_pid, coll_pid;
	int p = free_port(), i;
	json_t *meta;

	ASSERT_EQ(0, make_tmpdir(dir, sizeof(dir)));
	snprintf(log, sizeof(log), "%s/log", dir);
	snprintf(in, sizeof(in), "%s/in", dir);
	snprintf(hqout, sizeof(hqout), "%s/hq", dir);
	snprintf(trace, sizeof(trace), "%s/trace-1", hqout);
	snprintf(live, sizeof(live), "%s/live", trace);
	snprintf(out, sizeof(out), "%s/replay", trace);
	snprintf(port, sizeof(port), "%d", p);
	snprintf(hq, sizeof(hq), "127.0.0.1:%d", p);
	ASSERT_EQ(0, mkdir(in, 0755));
	ASSERT_EQ(0, syn_generate(&syn, in));
	hq_pid = spawn(hq_argv, log);
	ASSERT_GT(hq_pid, 0);
	ASSERT_TRUE(wait_listening(p, 30000));
	coll_pid = spawn(coll_argv, log);
	ASSERT_GT(coll_pid, 0);
	/* mid-trace: some entries with data, the trace still running */
	for (i = 0; i < 3000; i++) {
		index_events(live, &upto, &all);
		if (upto > 200)
			break;
		usleep(10000);
	}
	kill(hq_pid, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(hq_pid, 10000));
	kill(coll_pid, SIGKILL);
	wait_exit(coll_pid, 10000);
	ASSERT_GT(upto, 200u);
	snprintf(path, sizeof(path), "%s/meta.json", live);
	meta = json_load_file(path, 0, NULL);
	ASSERT_NE(NULL, meta);
	EXPECT_STREQ("running", json_string_value(json_object_get(meta,
								  "state")));
	/* bfcollector's microseconds, from its declaration on */
	EXPECT_EQ(1, json_integer_value(json_object_get(meta,
							"resolution_us")));
	json_decref(meta);
	EXPECT_TRUE(some_sub_ms_time(live));
	EXPECT_EQ(0, wait_exit(spawn(replay_argv, log), 60000));
	snprintf(path, sizeof(path), "%s/calls.txt", out);
	calls = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, calls);
	expected = syn_expected_calls(&syn);
	ASSERT_NE(NULL, expected);
	shown = prefix_tokens(_metadata, calls, expected);
	index_events(live, &upto, &all);
	EXPECT_LE(upto, shown);
	EXPECT_GE(all, shown);
	EXPECT_LT(shown, syn.events);
	snprintf(path, sizeof(path), "%s/summary.txt", out);
	text = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "ended: its bfhq stopped while "
			       "recording")) TH_LOG("%s", text);
	free(text);
	free(calls);
	free(expected);
	syn_free(&syn);
	remove_tmpdir(dir);
}

TEST_HARNESS_MAIN

/*
 * A trace whose call text outgrows the route's memory goes through the
 * spill file: tree.txt and calls.txt come out as the replay (which keeps
 * it all in memory) writes them; trace.speedscope.json, which spills its
 * own, too.
 */
TEST_F(live, text_past_the_memory_bound_is_spilled_and_written_whole)
{
	static const char *const files[] = { "calls.txt", "tree.txt",
					     "folded.txt",
					     "trace.speedscope.json" };
	uint64_t before = spill_bytes_total;
	size_t hold = route_hold_max;
	char out[PATH_MAX + 32], cmd[2 * PATH_MAX + 128];
	uint32_t seq = 0, i;

	map(self, BFP_MAP_METHOD, 1, "outer");
	map(self, BFP_MAP_METHOD, 2, "inner, with a long name to fill pages");
	map(self, BFP_MAP_THREAD, 1, "one (5/5)");
	map(self, BFP_MAP_THREAD, 2, "two (5/6)");
	route_hold_max = 4096;
	for (i = 0; i < 3000; i++) {
		uint16_t th = 1 + i % 2;

		ev(self, BFP_METHOD_ENTRY, seq++, 1, th);
		ev(self, BFP_METHOD_ENTRY, seq++, 2, th);
		ev(self, BFP_METHOD_EXIT, seq++, 2, th);
		if (i % 7)
			ev(self, BFP_METHOD_EXIT, seq++, 1, th);
	}
	hq_free(&self->hq);
	route_hold_max = hold;
	/* most of about 250 KB went through the file */
	EXPECT_LT(100000u, spill_bytes_total - before);
	snprintf(out, sizeof(out), "%s/replay", self->dir);
	ASSERT_EQ(0, hq_replay(self->live, out));
	same_outputs(_metadata, self->dir, out, files,
		     sizeof(files) / sizeof(files[0]), 10000);
	/* each thread's 190 KB of speedscope events, spilled past 64 KiB,
	 * come back whole and in order */
	snprintf(cmd, sizeof(cmd), "python3 %s/../../../../scripts/"
		 "speedscope-check.py %s/trace-1 >&2", BFT_TEST_VECTORS,
		 self->dir);
	EXPECT_EQ(0, system(cmd));
}
