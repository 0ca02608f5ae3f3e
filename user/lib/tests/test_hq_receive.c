// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq's answers to agents that do odd things, through its receive path
 * without sockets (hq_conn_feed): what it sends back is read from the
 * connection's output, what it writes from the trace directory.
 */
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "kselftest_harness.h"

#include "bft_test.h"
#include "hq.h"
#include "hq_feed.h"

FIXTURE(hq)
{
	char dir[64];
	struct hq hq;
	struct conn *ctl, *data;
	struct trace *t;
};

FIXTURE_SETUP(hq)
{
	uint8_t hello[2] = { BFP_HELLO, 1 }, dhello[2] = { BFP_DATA_HELLO };

	ASSERT_EQ(0, hq_test_init(&self->hq, self->dir));
	self->hq.o.start = true;
	self->ctl = hq_conn_add(&self->hq, -1, CONN_GREETING);
	ASSERT_NE(NULL, self->ctl);
	hq_conn_feed(&self->hq, self->ctl, hello, 2, false);
	self->t = self->ctl->trace;
	ASSERT_NE(NULL, self->t);
	/* the configuration, then start */
	ASSERT_LT(1u, self->ctl->out.len);
	EXPECT_EQ(BFP_CONFIG, self->ctl->out.data[0]);
	EXPECT_EQ(BFP_START, self->ctl->out.data[self->ctl->out.len - 1]);
	self->ctl->out.len = 0;
	self->data = hq_conn_add(&self->hq, -1, CONN_GREETING);
	ASSERT_NE(NULL, self->data);
	dhello[1] = self->t->run_id;
	hq_conn_feed(&self->hq, self->data, dhello, 2, false);
	ASSERT_EQ(self->t, self->data->trace);
	ASSERT_EQ(1u, self->data->out.len);
	EXPECT_EQ(BFP_DATA_HELLO_REPLY, self->data->out.data[0]);
}

FIXTURE_TEARDOWN(hq)
{
	hq_test_fini(&self->hq, self->dir);
}

static void feed(struct hq *hq, struct conn *c, const struct bfp_msg *m)
{
	struct bft_buf b = { 0 };

	if (!bfp_encode(&b, 1, m))
		hq_conn_feed(hq, c, b.data, b.len, false);
	bft_buf_free(&b);
}

static void event(struct hq *hq, struct conn *c, uint8_t id, uint32_t seq,
		  uint32_t method)
{
	struct bfp_msg m = { .id = id, .seq = seq, .method = method,
			     .time = seq, .thread = 1 };

	feed(hq, c, &m);
}

static void map_method(struct hq *hq, struct conn *c, uint32_t id,
		       const char *sig)
{
	struct bfp_msg m = { .id = BFP_MAP_METHOD, .method = id, .str = sig,
			     .str_len = strlen(sig) };

	feed(hq, c, &m);
}

/* End the trace and write it out; the text of one of its files. */
static char *finish_and_read(struct hq *hq, const char *dir,
			     const char *name)
{
	char path[256];

	hq_free(hq);
	snprintf(path, sizeof(path), "%s/trace-1/%s", dir, name);
	return bft_test_slurp(path, NULL);
}

TEST_F(hq, a_late_data_break_is_not_applied_and_is_counted)
{
	struct bfp_msg brk = { .id = BFP_DATA_BREAK, .seq = 1 };
	char *calls, *summary;

	event(&self->hq, self->data, BFP_METHOD_ENTRY, 0, 1);
	event(&self->hq, self->data, BFP_METHOD_ENTRY, 1, 2);
	event(&self->hq, self->data, BFP_METHOD_EXIT, 2, 2);
	/* sequence 2 was routed: a break before 1 comes too late */
	feed(&self->hq, self->ctl, &brk);
	event(&self->hq, self->data, BFP_METHOD_EXIT, 3, 1);
	EXPECT_EQ(1u, self->t->breaks_late);
	EXPECT_FALSE(self->t->failed);
	calls = finish_and_read(&self->hq, self->dir, "calls.txt");
	ASSERT_NE(NULL, calls);
	EXPECT_NE(NULL, strstr(calls, ": e1 e2 x2 x1\n")) TH_LOG("%s", calls);
	free(calls);
	summary = finish_and_read(&self->hq, self->dir, "summary.txt");
	ASSERT_NE(NULL, summary);
	EXPECT_NE(NULL, strstr(summary, "1 late (not applied)"))
		TH_LOG("%s", summary);
	free(summary);
}

TEST_F(hq, a_data_break_ahead_of_the_data_cuts_where_it_belongs)
{
	struct bfp_msg brk = { .id = BFP_DATA_BREAK, .seq = 2 };
	char *calls;

	event(&self->hq, self->data, BFP_METHOD_ENTRY, 0, 1);
	feed(&self->hq, self->ctl, &brk);
	event(&self->hq, self->data, BFP_METHOD_ENTRY, 1, 2);
	event(&self->hq, self->data, BFP_METHOD_EXIT, 2, 2);
	EXPECT_EQ(0u, self->t->breaks_late);
	calls = finish_and_read(&self->hq, self->dir, "calls.txt");
	ASSERT_NE(NULL, calls);
	EXPECT_NE(NULL, strstr(calls, ": e1 e2 | x?\n")) TH_LOG("%s", calls);
	free(calls);
}

TEST_F(hq, a_shutdown_heartbeat_after_tracing_is_answered_with_stop)
{
	struct bfp_msg hb = { .id = BFP_HEARTBEAT, .mode = BFP_MODE_TRACING };

	feed(&self->hq, self->ctl, &hb);
	EXPECT_EQ(0u, self->ctl->out.len);
	hb.mode = BFP_MODE_SHUTDOWN;
	feed(&self->hq, self->ctl, &hb);
	ASSERT_EQ(1u, self->ctl->out.len);
	EXPECT_EQ(BFP_STOP, self->ctl->out.data[0]);
	EXPECT_TRUE(self->t->shutting_down);
	/* once: a second one is not answered again */
	feed(&self->hq, self->ctl, &hb);
	EXPECT_EQ(1u, self->ctl->out.len);
}

TEST_F(hq, a_pause_is_renewed_at_each_paused_heartbeat_until_unpause)
{
	struct bfp_msg hb = { .id = BFP_HEARTBEAT, .mode = BFP_MODE_PAUSED };

	/* a pause it did not send is not its to renew */
	feed(&self->hq, self->ctl, &hb);
	EXPECT_EQ(0u, self->ctl->out.len);
	ASSERT_EQ(0, hq_trace_command(&self->hq, self->t, BFP_PAUSE));
	self->ctl->out.len = 0;
	feed(&self->hq, self->ctl, &hb);
	feed(&self->hq, self->ctl, &hb);
	ASSERT_EQ(2u, self->ctl->out.len);
	EXPECT_EQ(BFP_PAUSE, self->ctl->out.data[0]);
	EXPECT_EQ(BFP_PAUSE, self->ctl->out.data[1]);
	ASSERT_EQ(0, hq_trace_command(&self->hq, self->t, BFP_UNPAUSE));
	self->ctl->out.len = 0;
	feed(&self->hq, self->ctl, &hb);
	EXPECT_EQ(0u, self->ctl->out.len);
}

TEST_F(hq, an_agent_error_ends_the_trace_with_its_whole_text)
{
	static const char text[] = "broken\0pipe\x01 at the end";
	struct bfp_msg err = { .id = BFP_ERROR, .str = text,
			       .str_len = sizeof(text) - 1 };
	char *summary;

	feed(&self->hq, self->ctl, &err);
	EXPECT_TRUE(self->t->failed);
	EXPECT_EQ(1u, self->t->agent_errors);
	ASSERT_EQ(sizeof(text) - 1, self->t->agent_error_len);
	EXPECT_EQ(0, memcmp(text, self->t->agent_error, sizeof(text) - 1));
	/* the connections close: nothing more is taken */
	EXPECT_TRUE(self->ctl->dead);
	EXPECT_TRUE(self->data->dead);
	summary = finish_and_read(&self->hq, self->dir, "summary.txt");
	ASSERT_NE(NULL, summary);
	EXPECT_NE(NULL, strstr(summary, "failed: agent error on the control "
				       "connection: broken\\0pipe\\x01 at the "
				       "end\n")) TH_LOG("%s", summary);
	free(summary);
}

TEST_F(hq, exits_without_a_frame_are_marked_as_the_man_page_says)
{
	char *calls;

	/* a thread whose first event is an exit: its frame predates us */
	event(&self->hq, self->data, BFP_METHOD_EXIT, 0, 5);
	event(&self->hq, self->data, BFP_METHOD_ENTRY, 1, 6);
	/* an exit naming no frame of a stack that is not empty */
	event(&self->hq, self->data, BFP_METHOD_EXIT, 2, 7);
	event(&self->hq, self->data, BFP_METHOD_EXIT, 3, 6);
	calls = finish_and_read(&self->hq, self->dir, "calls.txt");
	ASSERT_NE(NULL, calls);
	EXPECT_NE(NULL, strstr(calls, ": x? e6 x! x6\n")) TH_LOG("%s", calls);
	free(calls);
}

TEST_F(hq, chrome_b_and_e_carry_one_name_when_the_map_is_late)
{
	char *json;

	event(&self->hq, self->data, BFP_METHOD_ENTRY, 0, 7);
	map_method(&self->hq, self->data, 7, "late.sig");
	event(&self->hq, self->data, BFP_METHOD_EXIT, 1, 7);
	map_method(&self->hq, self->data, 8, "first.name");
	event(&self->hq, self->data, BFP_METHOD_ENTRY, 2, 8);
	map_method(&self->hq, self->data, 8, "second.name");
	event(&self->hq, self->data, BFP_METHOD_EXIT, 3, 8);
	json = finish_and_read(&self->hq, self->dir, "trace.json");
	ASSERT_NE(NULL, json);
	EXPECT_NE(NULL, strstr(json, "\"name\":\"#7\",\"ph\":\"B\""))
		TH_LOG("%s", json);
	EXPECT_NE(NULL, strstr(json, "\"name\":\"#7\",\"ph\":\"E\""))
		TH_LOG("%s", json);
	EXPECT_EQ(NULL, strstr(json, "late.sig"));
	EXPECT_NE(NULL, strstr(json, "\"name\":\"first.name\",\"ph\":\"E\""))
		TH_LOG("%s", json);
	EXPECT_EQ(NULL, strstr(json, "second.name"));
	free(json);
}

TEST_F(hq, a_stack_as_deep_as_the_agent_likes_is_written_out)
{
	uint32_t n = (uint32_t)test_scale(200000), i, lines = 0;
	char *folded, *summary, *p;

	for (i = 0; i < n; i++)
		event(&self->hq, self->data, BFP_METHOD_ENTRY, i, 1 + i % 3);
	folded = finish_and_read(&self->hq, self->dir, "folded.txt");
	ASSERT_NE(NULL, folded);
	EXPECT_NE(NULL, strstr(folded, "\nthread_1;#1;#2;#3;#1;#2 "))
		TH_LOG("%.80s", folded);
	for (p = folded; (p = strchr(p, '\n')); p++)
		lines++;
	EXPECT_EQ(1024u, lines);
	free(folded);
	summary = finish_and_read(&self->hq, self->dir, "summary.txt");
	ASSERT_NE(NULL, summary);
	EXPECT_NE(NULL, strstr(summary, "paths deeper than 1024 frames left"))
		TH_LOG("%s", summary);
	free(summary);
}

TEST_F(hq, a_thread_that_is_only_named_is_written_out)
{
	static const char name[] = "worker (7/9)";
	struct bfp_msg m = { .id = BFP_MAP_THREAD, .thread = 5, .str = name,
			     .str_len = sizeof(name) - 1 };
	char *tree;

	/* found by fuzz_hq: its empty text went to fwrite as NULL */
	feed(&self->hq, self->data, &m);
	tree = finish_and_read(&self->hq, self->dir, "tree.txt");
	ASSERT_NE(NULL, tree);
	EXPECT_NE(NULL, strstr(tree, "# thread 5: worker (7/9) (0 calls"))
		TH_LOG("%s", tree);
	free(tree);
}

/* A data hello for run from a connection at address addr. */
static struct conn *data_hello_from(struct hq *hq, uint8_t run,
				    const char *addr)
{
	uint8_t dhello[2] = { BFP_DATA_HELLO, run };
	struct conn *c = hq_conn_add(hq, -1, CONN_GREETING);

	if (c) {
		snprintf(c->addr, sizeof(c->addr), "%s", addr);
		snprintf(c->peer, sizeof(c->peer), "%s:1", addr);
		hq_conn_feed(hq, c, dhello, 2, false);
	}
	return c;
}

TEST_F(hq, a_data_connection_joins_only_from_the_agent_s_address)
{
	struct conn *c;

	snprintf(self->ctl->addr, sizeof(self->ctl->addr), "127.0.0.1");
	c = data_hello_from(&self->hq, self->t->run_id, "127.0.0.2");
	ASSERT_NE(NULL, c);
	EXPECT_EQ(NULL, c->trace);
	EXPECT_TRUE(c->dead);
	ASSERT_LT(0u, c->out.len);
	EXPECT_EQ(BFP_ERROR, c->out.data[0]);
	EXPECT_EQ(1u, self->t->ndata);
	/* the agent's own address */
	c = data_hello_from(&self->hq, self->t->run_id, "127.0.0.1");
	ASSERT_NE(NULL, c);
	EXPECT_EQ(self->t, c->trace);
	/* --data-from ADDR, then --data-from any */
	ASSERT_EQ(0, hq_addr_canon("::ffff:127.0.0.2",
				   self->hq.o.data_from[0]));
	EXPECT_STREQ("127.0.0.2", self->hq.o.data_from[0]);
	self->hq.o.ndata_from = 1;
	c = data_hello_from(&self->hq, self->t->run_id, "127.0.0.2");
	ASSERT_NE(NULL, c);
	EXPECT_EQ(self->t, c->trace);
	c = data_hello_from(&self->hq, self->t->run_id, "::1");
	ASSERT_NE(NULL, c);
	EXPECT_EQ(NULL, c->trace);
	self->hq.o.data_from_any = true;
	c = data_hello_from(&self->hq, self->t->run_id, "::1");
	ASSERT_NE(NULL, c);
	EXPECT_EQ(self->t, c->trace);
	EXPECT_EQ(4u, self->t->ndata);
}

TEST_F(hq, data_for_an_unknown_run_is_dropped_past_its_bound)
{
	static uint8_t chunk[65536];
	struct conn *c = data_hello_from(&self->hq, 200, "");
	size_t sent = 0;

	ASSERT_NE(NULL, c);
	EXPECT_EQ(200, c->wait_run);
	while (!c->dead && sent < 4 * HQ_DATA_WAIT_MAX) {
		hq_conn_feed(&self->hq, c, chunk, sizeof(chunk), false);
		sent += sizeof(chunk);
	}
	EXPECT_TRUE(c->dead);
	EXPECT_GE(HQ_DATA_WAIT_MAX + sizeof(chunk), sent);
	ASSERT_LT(0u, c->out.len);
	EXPECT_EQ(BFP_ERROR, c->out.data[0]);
}

TEST_F(hq, a_re_map_keeps_one_name_and_the_names_are_bounded)
{
	static char name[65535];
	uint32_t i, n = 300;
	char *summary, *methods;
	uint64_t one;

	memset(name, 'a', sizeof(name) - 1);
	/* the same name again and again writes it once */
	map_method(&self->hq, self->data, 1, "same()");
	one = self->t->names_bytes;
	EXPECT_LT(0u, one);
	for (i = 0; i < 100; i++)
		map_method(&self->hq, self->data, 1, "same()");
	EXPECT_EQ(one, self->t->names_bytes);
	/* new long names, each: refused past the bound */
	for (i = 0; i < n; i++) {
		snprintf(name, 16, "%015u", i);
		name[15] = 'a';
		map_method(&self->hq, self->data, 1, name);
	}
	EXPECT_LT(0u, self->t->names_refused);
	EXPECT_GE(HQ_NAMES_MAX, self->t->names_bytes);
	summary = finish_and_read(&self->hq, self->dir, "summary.txt");
	ASSERT_NE(NULL, summary);
	EXPECT_NE(NULL, strstr(summary, "maps refused past"))
		TH_LOG("%s", summary);
	free(summary);
	methods = finish_and_read(&self->hq, self->dir, "methods.txt");
	ASSERT_NE(NULL, methods);
	/* the last name taken is the one kept */
	EXPECT_EQ(0, strncmp(methods, "1 0 000000000000", 16))
		TH_LOG("%.40s", methods);
	free(methods);
}

TEST_F(hq, an_ended_trace_is_freed_at_once)
{
	event(&self->hq, self->data, BFP_METHOD_ENTRY, 0, 1);
	event(&self->hq, self->data, BFP_METHOD_EXIT, 1, 1);
	hq_conn_feed(&self->hq, self->data, NULL, 0, true);
	hq_conn_feed(&self->hq, self->ctl, NULL, 0, true);
	hq_reap(&self->hq);
	hq_trace_tick(&self->hq, self->t, hq_now_ms());
	EXPECT_EQ(1u, self->hq.finished);
	hq_reap(&self->hq);
	/* nothing of it is kept: its outputs are on disk */
	EXPECT_EQ(0u, self->hq.ntraces);
	free(finish_and_read(&self->hq, self->dir, "calls.txt"));
}

static void marker(struct hq *hq, struct conn *c, uint32_t seq,
		   uint32_t time, const char *key, const char *value)
{
	struct bfp_msg m = { .id = BFP_MARKER, .seq = seq, .time = time,
			     .str = key, .str_len = strlen(key), .str2 = value,
			     .str2_len = strlen(value) };

	feed(hq, c, &m);
}

static off_t file_size(const char *dir, const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/trace-1/%s", dir, name);
	return stat(path, &st) ? -1 : st.st_size;
}

/*
 * Issue 30: a method traced without its exits (a "bftrace.noret" marker
 * says so) is counted and shown as instants; it never nests, and the
 * frames of a method with exits around it stay whole.
 */
TEST_F(hq, entries_only_methods_are_counted_not_nested)
{
	const unsigned int n = 50000;
	char *tree, *summary, *calls, *folded, *json, *got;
	unsigned long long received = 0;
	uint32_t seq = 0, i;
	off_t fed = 0;

	map_method(&self->hq, self->data, 1, "prog!outer()");
	map_method(&self->hq, self->data, 7, "libx.so!Pipeline::getNext(bool)");
	marker(&self->hq, self->data, seq++, 0, "bftrace.noret", "7");
	event(&self->hq, self->data, BFP_METHOD_ENTRY, seq++, 1);
	for (i = 0; i < n; i++)
		event(&self->hq, self->data, BFP_METHOD_ENTRY, seq++, 7);
	event(&self->hq, self->data, BFP_METHOD_EXIT, seq++, 1);
	event(&self->hq, self->data, BFP_METHOD_ENTRY, seq++, 7);
	fed = (off_t)(n + 3) * 15;	/* a MethodEntry is 15 bytes */
	summary = finish_and_read(&self->hq, self->dir, "summary.txt");
	ASSERT_NE(NULL, summary);
	EXPECT_NE(NULL, strstr(summary, "calls:         50002 (exits 1)\n"))
		TH_LOG("%s", summary);
	EXPECT_NE(NULL, strstr(summary, "entries only:  50001 of the calls, "
			       "of 1 methods"))
		TH_LOG("%s", summary);
	EXPECT_NE(NULL, strstr(summary, "open at end:   0 frames\n"));
	EXPECT_NE(NULL, strstr(summary, "     50001  libx.so!Pipeline::"
			       "getNext\n"))
		TH_LOG("%s", summary);
	got = strstr(summary, "\nreceived:");
	ASSERT_NE(NULL, got) TH_LOG("%s", summary);
	EXPECT_EQ(1, sscanf(got, "\nreceived: %llu bytes", &received));
	EXPECT_LT(fed, (off_t)received);
	free(summary);
	tree = finish_and_read(&self->hq, self->dir, "tree.txt");
	ASSERT_NE(NULL, tree);
	EXPECT_NE(NULL, strstr(tree, "(50002 calls, depth 1)\n"))
		TH_LOG("%.400s", tree);
	EXPECT_NE(NULL, strstr(tree, "| prog!outer();\n")) TH_LOG("%.400s", tree);
	EXPECT_NE(NULL, strstr(tree, "   50001 x | libx.so!Pipeline::"
			       "getNext\n"))
		TH_LOG("%.400s", tree);
	free(tree);
	calls = finish_and_read(&self->hq, self->dir, "calls.txt");
	ASSERT_NE(NULL, calls);
	EXPECT_EQ(0, strncmp(calls, "thread 1: e1 n7 n7", 18)) TH_LOG("%.40s", calls);
	EXPECT_NE(NULL, strstr(calls, " n7 x1 n7\n"));
	free(calls);
	folded = finish_and_read(&self->hq, self->dir, "folded.txt");
	ASSERT_NE(NULL, folded);
	/* outer's 50001 ms are its own: the instants take no time */
	EXPECT_STREQ("thread_1;prog!outer 50001000\n", folded);
	free(folded);
	json = finish_and_read(&self->hq, self->dir, "trace.json");
	ASSERT_NE(NULL, json);
	EXPECT_NE(NULL, strstr(json, "{\"name\":\"Pipeline::getNext\","
			       "\"ph\":\"i\","))
		TH_LOG("%.400s", json);
	/* one entry a millisecond: grouped by the bytes, all counted */
	{
		json_t *root = json_loads(json, 0, NULL), *e;
		json_int_t sum = 0, end = -1, ts;
		size_t k, instants = 0;

		ASSERT_NE(NULL, root);
		json_array_foreach(json_object_get(root, "traceEvents"), k,
				   e) {
			json_t *a = json_object_get(e, "args");

			if (strcmp(json_string_value(json_object_get(e, "ph")),
				   "i"))
				continue;
			ts = json_integer_value(json_object_get(e, "ts"));
			/* one after the other, from the first to the last */
			EXPECT_EQ(instants++ ? end + 1000 : 1000, ts);
			sum += json_integer_value(json_object_get(a, "calls"));
			end = ts + json_integer_value(json_object_get(a,
								"span_us"));
		}
		EXPECT_EQ(50001, sum);
		EXPECT_LT(100u, instants);
		EXPECT_EQ(50002000, end);
		json_decref(root);
	}
	free(json);
	/* no output bigger than what was fed (it was a staircase: 100s MB) */
	EXPECT_LT(file_size(self->dir, "tree.txt"), fed);
	EXPECT_LT(file_size(self->dir, "folded.txt"), fed);
	EXPECT_LT(file_size(self->dir, "calls.txt"), fed);
	EXPECT_LT(file_size(self->dir, "trace.json"), fed);
	EXPECT_LT(file_size(self->dir, "trace.json"), (off_t)received);
}

/*
 * Issue 30: bfcollector's "bftrace.us" markers give the usual outputs
 * their microseconds, and trace.json starts at the first event, not at
 * the agent's hello.
 */
TEST_F(hq, microseconds_reach_the_files_and_json_starts_at_the_first_event)
{
	char *tree, *json, *folded;

	map_method(&self->hq, self->data, 1, "prog!f");
	map_method(&self->hq, self->data, 2, "prog!g");
	/* bfcollector declares its markers with an empty one */
	marker(&self->hq, self->data, 0, 0, "bftrace.us", "0");
	/* times in ms: 1, 16000, 16001, 16001; then their sub-ms parts */
	event(&self->hq, self->data, BFP_METHOD_ENTRY, 1, 1);
	{
		struct bfp_msg m = { .id = BFP_METHOD_ENTRY, .seq = 2,
				     .method = 2, .time = 16000, .thread = 1 };
		struct bfp_msg x = { .id = BFP_METHOD_EXIT, .seq = 3,
				     .method = 2, .time = 16001, .thread = 1 };
		struct bfp_msg y = { .id = BFP_METHOD_EXIT, .seq = 4,
				     .method = 1, .time = 16001, .thread = 1 };

		feed(&self->hq, self->data, &m);
		feed(&self->hq, self->data, &x);
		feed(&self->hq, self->data, &y);
	}
	marker(&self->hq, self->data, 5, 16001, "bftrace.us",
	       "4 100,250,5,900");
	tree = finish_and_read(&self->hq, self->dir, "tree.txt");
	ASSERT_NE(NULL, tree);
	/* g: 16000.250 to 16001.005; f: 1.100 to 16001.900, a unit that
	 * reads well for each */
	EXPECT_NE(NULL, strstr(tree, "    755 \u00b5s |   prog!g();\n"))
		TH_LOG("%s", tree);
	EXPECT_NE(NULL, strstr(tree, "  16.001 s | } /* prog!f */\n"))
		TH_LOG("%s", tree);
	free(tree);
	folded = finish_and_read(&self->hq, self->dir, "folded.txt");
	ASSERT_NE(NULL, folded);
	EXPECT_NE(NULL, strstr(folded, "thread_1;prog!f;prog!g 755\n"))
		TH_LOG("%s", folded);
	free(folded);
	json = finish_and_read(&self->hq, self->dir, "trace.json");
	ASSERT_NE(NULL, json);
	EXPECT_NE(NULL, strstr(json, "\"name\":\"prog!f\",\"ph\":\"B\","
			       "\"ts\":0,"))
		TH_LOG("%s", json);
	EXPECT_NE(NULL, strstr(json, "\"name\":\"prog!g\",\"ph\":\"B\","
			       "\"ts\":15999150,"))
		TH_LOG("%s", json);
	EXPECT_NE(NULL, strstr(json, "\"name\":\"prog!g\",\"ph\":\"E\","
			       "\"ts\":15999905,"))
		TH_LOG("%s", json);
	free(json);
}

/*
 * Issue 30: a demangled C++ name has its parentheses: none are added.
 * Issue 32: tree.txt prints its display form, parameters and const
 * dropped, "()" added back.
 */
TEST_F(hq, cxx_signatures_get_no_second_pair_of_parentheses)
{
	char *tree;

	map_method(&self->hq, self->data, 1, "libqpdf.so!QPDFJob::QPDFJob()");
	map_method(&self->hq, self->data, 2, "libqpdf.so!QPDFObjectHandle::"
		   "getType() const");
	map_method(&self->hq, self->data, 3, "prog!plain_c");
	event(&self->hq, self->data, BFP_METHOD_ENTRY, 0, 1);
	event(&self->hq, self->data, BFP_METHOD_ENTRY, 1, 2);
	event(&self->hq, self->data, BFP_METHOD_EXIT, 2, 2);
	event(&self->hq, self->data, BFP_METHOD_ENTRY, 3, 3);
	event(&self->hq, self->data, BFP_METHOD_EXIT, 4, 3);
	event(&self->hq, self->data, BFP_METHOD_EXIT, 5, 1);
	tree = finish_and_read(&self->hq, self->dir, "tree.txt");
	ASSERT_NE(NULL, tree);
	EXPECT_NE(NULL, strstr(tree, "| libqpdf.so!QPDFJob::QPDFJob() {\n"))
		TH_LOG("%s", tree);
	EXPECT_NE(NULL, strstr(tree, "|   libqpdf.so!QPDFObjectHandle::"
			       "getType();\n"))
		TH_LOG("%s", tree);
	EXPECT_NE(NULL, strstr(tree, "|   prog!plain_c();\n")) TH_LOG("%s", tree);
	EXPECT_EQ(NULL, strstr(tree, ")()"));
	free(tree);
}

/* Issue 30: a bfhq restarted on the same directory numbers on. */
TEST(a_restarted_bfhq_numbers_its_traces_on)
{
	char dir[64], sub[128];
	uint8_t hello[2] = { BFP_HELLO, 1 };
	struct hq hq = { .listen_fd = -1, .ctl_fd = -1 };
	struct conn *c;

	hq_log_quiet = true;
	snprintf(dir, sizeof(dir), "/tmp/bft-hq-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/trace-1", dir);
	ASSERT_EQ(0, mkdir(sub, 0755));
	snprintf(sub, sizeof(sub), "%s/trace-12", dir);
	ASSERT_EQ(0, mkdir(sub, 0755));
	snprintf(sub, sizeof(sub), "%s/trace-x3", dir);
	ASSERT_EQ(0, mkdir(sub, 0755));
	hq.o.outdir = dir;
	hq.o.gap_ms = 2000;
	bfp_config_init(&hq.o.config);
	c = hq_conn_add(&hq, -1, CONN_GREETING);
	ASSERT_NE(NULL, c);
	hq_conn_feed(&hq, c, hello, 2, false);
	ASSERT_NE(NULL, c->trace);
	EXPECT_EQ(13u, c->trace->index);
	hq_free(&hq);
	bfp_config_free(&hq.o.config);
	snprintf(sub, sizeof(sub), "%s/trace-13/summary.txt", dir);
	EXPECT_EQ(0, access(sub, F_OK));
	bft_test_rmtree(dir);
}

TEST_HARNESS_MAIN

static void event_on(struct hq *hq, struct conn *c, uint8_t id, uint32_t seq,
		     uint32_t method, uint16_t thread)
{
	struct bfp_msg m = { .id = id, .seq = seq, .method = method,
			     .time = seq, .thread = thread };

	feed(hq, c, &m);
}

static void map_thread(struct hq *hq, struct conn *c, uint16_t id,
		       const char *name)
{
	struct bfp_msg m = { .id = BFP_MAP_THREAD, .thread = id, .str = name,
			     .str_len = strlen(name) };

	feed(hq, c, &m);
}

/*
 * The fixed trace of the golden files: names with <, >, " and UTF-8;
 * thread 1: 1 { 2 { 3 } 3 }; thread 2: 2 { 3 (left open).
 */
static void golden_trace(struct hq *hq, struct conn *c)
{
	static const uint8_t seq1[] = { 1, 2, 3, 3, 2, 3, 3, 1 };
	uint32_t seq = 0, i;

	map_thread(hq, c, 1, "main (42/42)");
	map_thread(hq, c, 2, "w\xc3\xb6rker \"q\" (42/43)");
	map_method(hq, c, 1,
		   "prog!std::vector<int>::push_back(int const&)");
	map_method(hq, c, 2,
		   "prog!say \"hi\" \xe2\x80\x94 \xc3\xbcn\xc3\xaf" "code");
	map_method(hq, c, 3, "prog!leaf");
	for (i = 0; i < sizeof(seq1); i++) {
		bool seen = false;
		uint32_t k;

		for (k = 0; k < i; k++)
			seen ^= seq1[k] == seq1[i];
		event_on(hq, c, seen ? BFP_METHOD_EXIT :
			 BFP_METHOD_ENTRY, seq++, seq1[i], 1);
	}
	event_on(hq, c, BFP_METHOD_ENTRY, seq++, 2, 2);
	event_on(hq, c, BFP_METHOD_ENTRY, seq++, 3, 2);
}

/*
 * The bytes of output name in trace-1 against golden file gname, which
 * BFT_WRITE_GOLDEN=1 rewrites.
 */
static void expect_golden(struct __test_metadata *_metadata,
			  const char *dir, const char *name, const char *gname)
{
	char path[256], *golden, *got;
	size_t glen = 0, len = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/trace-1/%s", dir, name);
	got = bft_test_slurp(path, &len);
	ASSERT_NE(NULL, got);
	snprintf(path, sizeof(path), "%s/%s", BFT_TEST_VECTORS, gname);
	if (getenv("BFT_WRITE_GOLDEN")) {
		f = fopen(path, "wb");
		ASSERT_NE(NULL, f);
		fwrite(got, 1, len, f);
		fclose(f);
	}
	golden = bft_test_slurp(path, &glen);
	ASSERT_NE(NULL, golden) TH_LOG("%s", path);
	EXPECT_EQ(glen, len);
	EXPECT_EQ(0, memcmp(golden, got, len < glen ? len : glen));
	free(golden);
	free(got);
}

/*
 * trace.pftrace: a reader of its own (scripts/pftrace-check.py) rebuilds
 * each thread's calls and finds those of calls.txt; and the bytes are the
 * golden file's, names with <, >, " and UTF-8 included.
 */
TEST_F(hq, the_perfetto_trace_has_every_call_and_the_golden_bytes)
{
	char cmd[600], *got;

	golden_trace(&self->hq, self->data);
	got = finish_and_read(&self->hq, self->dir, "calls.txt");
	ASSERT_NE(NULL, got);
	EXPECT_NE(NULL, strstr(got, ": e1 e2 e3 x3 x2 e3 x3 x1\n")) TH_LOG("%s", got);
	free(got);
	snprintf(cmd, sizeof(cmd), "python3 %s/../../../../scripts/"
		 "pftrace-check.py %s/trace-1 >&2", BFT_TEST_VECTORS,
		 self->dir);
	EXPECT_EQ(0, system(cmd));
	expect_golden(_metadata, self->dir, "trace.pftrace", "hq-names.pftrace");
}

/*
 * trace.speedscope.json: python's json reads it, every O has its C in
 * order, "at" never goes back, frames are in range, and the calls are
 * calls.txt's (scripts/speedscope-check.py); the bytes are the golden
 * file's.
 */
TEST_F(hq, the_speedscope_file_has_every_call_and_the_golden_bytes)
{
	char cmd[600];

	golden_trace(&self->hq, self->data);
	free(finish_and_read(&self->hq, self->dir, "calls.txt"));
	snprintf(cmd, sizeof(cmd), "python3 %s/../../../../scripts/"
		 "speedscope-check.py %s/trace-1 >&2", BFT_TEST_VECTORS,
		 self->dir);
	EXPECT_EQ(0, system(cmd));
	expect_golden(_metadata, self->dir, "trace.speedscope.json",
		      "hq-names.speedscope.json");
}

/*
 * trace.pftrace's instants named name, by python's decoder of its own
 * (scripts/pftrace-check.py): on the track of thread tname, or on the
 * markers' track if tname is NULL.  The exit status of the check.
 */
static int pft_instant_on(const char *dir, const char *name,
			  const char *tname)
{
	char cmd[1600];

	snprintf(cmd, sizeof(cmd), "python3 -c '"
		 "import importlib.util as u, sys\n"
		 "s = u.spec_from_file_location(\"c\", sys.argv[1])\n"
		 "m = u.module_from_spec(s); s.loader.exec_module(m)\n"
		 "tracks, events = m.decode(sys.argv[2])\n"
		 "t = sys.argv[4] if len(sys.argv) > 4 else None\n"
		 "sys.exit(0 if any(n == sys.argv[3] and y == 3 and "
		 "tracks.get(k) == t for k, _, y, n in events) else 1)' "
		 "%s/../../../../scripts/pftrace-check.py "
		 "%s/trace-1/trace.pftrace '%s'%s%s%s", BFT_TEST_VECTORS, dir,
		 name, tname ? " '" : "", tname ? tname : "", tname ? "'" : "");
	return system(cmd);
}

/* trace.json's events named name, as jansson reads the whole file. */
static json_t *chrome_named(const char *dir, const char *name)
{
	char path[256];
	json_t *doc, *evs, *ev, *out = json_array();
	size_t i;

	snprintf(path, sizeof(path), "%s/trace-1/trace.json", dir);
	doc = json_load_file(path, 0, NULL);
	evs = json_object_get(doc, "traceEvents");
	json_array_foreach(evs, i, ev) {
		const char *n = json_string_value(json_object_get(ev, "name"));

		if (n && !strcmp(n, name))
			json_array_append(out, ev);
	}
	json_decref(doc);
	return out;
}

static const char *jstr(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static json_int_t jint(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/*
 * A USDT probe hit: bfcollector's "bftrace.at" names the thread of the
 * marker right after it, which then shows in that thread's call tree at
 * its depth, as a thread instant in trace.json and on the thread's
 * Perfetto track; bftrace.at itself is nowhere.  A marker without one
 * stays the trace's.
 */
TEST_F(hq, a_marker_placed_by_bftrace_at_is_in_its_thread)
{
	char *tree, *calls, *json;
	json_t *evs, *ev;
	uint32_t seq = 0;

	map_thread(&self->hq, self->data, 3, "main (42/43)");
	map_thread(&self->hq, self->data, 4, "other (42/44)");
	map_method(&self->hq, self->data, 1, "prog!outer");
	map_method(&self->hq, self->data, 2, "prog!inner");
	event_on(&self->hq, self->data, BFP_METHOD_ENTRY, seq++, 1, 3);
	event_on(&self->hq, self->data, BFP_METHOD_ENTRY, seq++, 2, 3);
	event_on(&self->hq, self->data, BFP_METHOD_ENTRY, seq++, 1, 4);
	marker(&self->hq, self->data, seq++, 3, "bftrace.at", "3");
	marker(&self->hq, self->data, seq++, 4, "app:tick", "-3 5000000000");
	marker(&self->hq, self->data, seq++, 5, "app:global", "7");
	event_on(&self->hq, self->data, BFP_METHOD_EXIT, seq++, 2, 3);
	event_on(&self->hq, self->data, BFP_METHOD_EXIT, seq++, 1, 3);
	event_on(&self->hq, self->data, BFP_METHOD_EXIT, seq++, 1, 4);
	tree = finish_and_read(&self->hq, self->dir, "tree.txt");
	ASSERT_NE(NULL, tree);
	/* inside inner, which is so no leaf, and before its end */
	EXPECT_NE(NULL, strstr(tree, "           |   prog!inner() {\n"
			       "           |     * app:tick -3 5000000000 "
			       "@ 4 ms\n"
			       "      5 ms |   } /* prog!inner */\n"))
		TH_LOG("%s", tree);
	EXPECT_EQ(NULL, strstr(tree, "app:global")) TH_LOG("%s", tree);
	EXPECT_EQ(NULL, strstr(tree, "bftrace.at")) TH_LOG("%s", tree);
	free(tree);
	calls = finish_and_read(&self->hq, self->dir, "calls.txt");
	ASSERT_NE(NULL, calls);
	EXPECT_STREQ("main (42/43): e1 e2 mapp\\x3atick x2 x1\n"
		     "other (42/44): e1 x1\n", calls);
	free(calls);
	json = finish_and_read(&self->hq, self->dir, "trace.json");
	ASSERT_NE(NULL, json);
	EXPECT_EQ(NULL, strstr(json, "bftrace.at"));
	free(json);
	evs = chrome_named(self->dir, "app:tick");
	ASSERT_EQ(1u, json_array_size(evs));
	ev = json_array_get(evs, 0);
	EXPECT_STREQ("i", jstr(ev, "ph"));
	EXPECT_STREQ("t", jstr(ev, "s"));
	EXPECT_EQ(42, jint(ev, "pid"));
	EXPECT_EQ(43, jint(ev, "tid"));
	EXPECT_STREQ("-3 5000000000", jstr(json_object_get(ev, "args"),
					    "value"));
	json_decref(evs);
	evs = chrome_named(self->dir, "app:global");
	ASSERT_EQ(1u, json_array_size(evs));
	ev = json_array_get(evs, 0);
	EXPECT_STREQ("g", jstr(ev, "s"));
	EXPECT_EQ(NULL, json_object_get(ev, "tid"));
	EXPECT_STREQ("7", jstr(json_object_get(ev, "args"), "value"));
	json_decref(evs);
	EXPECT_EQ(0, pft_instant_on(self->dir, "app:tick", "main (42/43)"));
	EXPECT_EQ(0, pft_instant_on(self->dir, "app:global", NULL));
	EXPECT_NE(0, pft_instant_on(self->dir, "app:tick", NULL));
	EXPECT_NE(0, pft_instant_on(self->dir, "bftrace.at", NULL));
}

/*
 * bftrace.at places the very next message only: another message in
 * between, a number skipped, or a value that is no thread id, and the
 * marker is the trace's.  A thread known by a marker alone is shown.
 */
TEST_F(hq, bftrace_at_places_only_the_marker_right_after_it)
{
	static const char *const bad[] = { "", "abc", "65536", "-1", " 3",
					   "3x", "99999999999999999999999" };
	char *calls, *tree, *json;
	uint32_t seq = 0, i;

	map_thread(&self->hq, self->data, 3, "main (42/43)");
	map_method(&self->hq, self->data, 1, "prog!outer");
	event_on(&self->hq, self->data, BFP_METHOD_ENTRY, seq++, 1, 3);
	/* an entry in between */
	marker(&self->hq, self->data, seq++, 1, "bftrace.at", "3");
	event_on(&self->hq, self->data, BFP_METHOD_ENTRY, seq++, 1, 3);
	marker(&self->hq, self->data, seq++, 3, "app:after-entry", "");
	/* bad values */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		marker(&self->hq, self->data, seq++, 4, "bftrace.at", bad[i]);
		marker(&self->hq, self->data, seq++, 4, "app:bad", "1");
	}
	/* another bftrace.at in between: the later one places it */
	marker(&self->hq, self->data, seq++, 5, "bftrace.at", "3");
	marker(&self->hq, self->data, seq++, 5, "bftrace.at", "9");
	marker(&self->hq, self->data, seq++, 5, "app:unknown", "");
	/* the marker's number never came: a gap, then the next is global */
	marker(&self->hq, self->data, seq++, 6, "bftrace.at", "3");
	seq++;
	marker(&self->hq, self->data, seq++, 6, "app:after-gap", "");
	event_on(&self->hq, self->data, BFP_METHOD_EXIT, seq++, 1, 3);
	event_on(&self->hq, self->data, BFP_METHOD_EXIT, seq++, 1, 3);
	calls = finish_and_read(&self->hq, self->dir, "calls.txt");
	ASSERT_NE(NULL, calls);
	/* thread 9 was never named nor had a call: its marker still shows */
	EXPECT_STREQ("main (42/43): e1 e1 | x? x?\n"
		     "thread 9: mapp\\x3aunknown\n", calls);
	free(calls);
	tree = finish_and_read(&self->hq, self->dir, "tree.txt");
	ASSERT_NE(NULL, tree);
	EXPECT_NE(NULL, strstr(tree, "           | * app:unknown @ 5 ms\n"))
		TH_LOG("%s", tree);
	EXPECT_EQ(NULL, strstr(tree, "app:bad")) TH_LOG("%s", tree);
	EXPECT_EQ(NULL, strstr(tree, "app:after")) TH_LOG("%s", tree);
	free(tree);
	json = finish_and_read(&self->hq, self->dir, "trace.json");
	ASSERT_NE(NULL, json);
	EXPECT_EQ(NULL, strstr(json, "bftrace.at"));
	free(json);
	EXPECT_EQ(0, pft_instant_on(self->dir, "app:after-entry", NULL));
	EXPECT_EQ(0, pft_instant_on(self->dir, "app:bad", NULL));
	EXPECT_EQ(0, pft_instant_on(self->dir, "app:after-gap", NULL));
	EXPECT_EQ(0, pft_instant_on(self->dir, "app:unknown", "thread 9"));
}

/*
 * Any text in a placed marker: 64 KiB keys and values with every byte,
 * newlines, spaces and colons keep tree.txt's lines and calls.txt's
 * tokens whole.
 */
TEST_F(hq, a_placed_marker_of_any_text_keeps_the_lines_whole)
{
	size_t n = 65535, i;
	char *key = malloc(n + 1), *value = malloc(n + 1), *calls, *tree;
	char *line, *end;
	uint32_t seq = 0;

	ASSERT_NE(NULL, key);
	ASSERT_NE(NULL, value);
	for (i = 0; i < n; i++) {
		key[i] = (char)(1 + i % 255);
		value[i] = "a \n:\t\\"[i % 6];
	}
	key[n] = value[n] = 0;
	map_method(&self->hq, self->data, 1, "prog!outer");
	event_on(&self->hq, self->data, BFP_METHOD_ENTRY, seq++, 1, 1);
	marker(&self->hq, self->data, seq++, 1, "bftrace.at", "1");
	marker(&self->hq, self->data, seq++, 1, key, value);
	event_on(&self->hq, self->data, BFP_METHOD_EXIT, seq++, 1, 1);
	free(key);
	free(value);
	calls = finish_and_read(&self->hq, self->dir, "calls.txt");
	ASSERT_NE(NULL, calls);
	/* one line: e1, the marker's token, x1 */
	ASSERT_EQ(0, strncmp(calls, "thread 1: e1 m", 14)) TH_LOG("%.60s", calls);
	end = strchr(calls, '\n');
	ASSERT_NE(NULL, end);
	EXPECT_STREQ(" x1\n", end - 3);
	EXPECT_EQ(end - 3, strchr(calls + 14, ' '));
	EXPECT_EQ(strrchr(calls, ':'), calls + 8);
	free(calls);
	tree = finish_and_read(&self->hq, self->dir, "tree.txt");
	ASSERT_NE(NULL, tree);
	line = strstr(tree, "           |   * ");
	ASSERT_NE(NULL, line) TH_LOG("%.600s", tree);
	end = strchr(line, '\n');
	ASSERT_NE(NULL, end);
	EXPECT_EQ(0, strncmp(end - 7, " @ 1 ms", 7));
	EXPECT_EQ(0, strncmp(end, "\n      3 ms | } /* prog!outer */\n", 33))
		TH_LOG("%.80s", end);
	free(tree);
}
