// SPDX-License-Identifier: GPL-2.0
/*
 * bfcollector's exceptions on the wire, without a kernel: it replays a
 * crafted stream with THROW and UNWIND records (throw, catch, rethrow,
 * NORET frames, a frame found left, longjmp, a forced unwind, a type the
 * table lacks, unknown types, a throw with no traced frame open), this
 * test plays HQ, and every data message it gets, in order, must be exactly
 * what the Bytefrog rules say: MapException before a type's first use,
 * Exception at the throwing frame, ExceptionBubble for each frame left,
 * one gap-free sequence, in protocol versions 1 and 2.  The .flow files
 * must show the frames left as exits.  With the same HQ, the bftrace.us
 * markers must list each event's microseconds past its millisecond, and
 * USDT hits (MARK records) must come as Markers in their threads' order,
 * each after a "bftrace.at" naming its thread.
 */
#include <jansson.h>

#include "kselftest_harness.h"

#include "wire/bfp_msg.h"
#include "wire/bft_flow.h"
#include "collector_fixture.h"
#include "fake_hq.h"

#define A	4001	/* tids */
#define B	4002

FIXTURE(exc) {
	char dir[PATH_MAX];
	char replay[PATH_MAX + 16];
	char flow[PATH_MAX + 16];
	char log[PATH_MAX + 16];
	int port, lfd;
	pid_t pid;
};

FIXTURE_SETUP(exc)
{
	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	snprintf(self->replay, sizeof(self->replay), "%s/replay", self->dir);
	snprintf(self->flow, sizeof(self->flow), "%s/flow", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/log", self->dir);
	ASSERT_EQ(0, mkdir(self->replay, 0755));
	self->port = free_port();
	ASSERT_GT(self->port, 0);
	self->lfd = -1;
	self->pid = 0;
}

FIXTURE_TEARDOWN(exc)
{
	if (self->pid > 0)
		wait_exit(self->pid, 0);
	if (self->lfd >= 0)
		close(self->lfd);
	remove_tmpdir(self->dir);
}

/* The stream of the header comment, on one CPU, 1 ms between records. */
static int write_replay(const char *dir)
{
	static const char methods[] =
		"1\t/usr/bin/prog\tmain\n2\t/usr/bin/prog\touter\n"
		"3\t/usr/bin/prog\tthrower\n4\t/usr/bin/prog\trethrower\n"
		"5\t/usr/bin/prog\tdtor_owner\n6\t/usr/bin/prog\tdeep\n";
	static const char threads[] = "4000\t4001\tmain\n4000\t4002\tworker\n";
	/* type 7 is missing: thrown before bfcollector read the table */
	static const char types[] = "# id\tname\n1\tSt13runtime_error\n2\ti\n";
	struct bft_writer w;
	uint64_t t = 1000000000ull;
	const uint8_t *p;
	size_t n;
	int r = 0;

#define T	(t += 1000000)
	r |= bft_writer_init(&w, 1000, 0);
	r |= bft_writer_enter(&w, T, 4000, A, 1);
	r |= bft_writer_enter(&w, T, 4000, A, 2);
	r |= bft_writer_enter(&w, T, 4000, A, 3);
	r |= bft_writer_throw(&w, T, 4000, A, 1, BFT_THROW_THROW);
	r |= bft_writer_unwind(&w, T, 4000, A, 1, BFT_UNWIND_CATCH);
	r |= bft_writer_exit(&w, T, 4000, A);
	/* a rethrow from a catch block: the type caught */
	r |= bft_writer_enter(&w, T, 4000, A, 4);
	r |= bft_writer_throw(&w, T, 4000, A, 0, BFT_THROW_RETHROW);
	r |= bft_writer_unwind(&w, T, 4000, A, 1, BFT_UNWIND_CATCH);
	/* a NORET frame on top goes with the ordinary one under it */
	r |= bft_writer_enter(&w, T, 4000, A, 5);
	r |= bft_writer_enter_noret(&w, T, 4000, A, 6);
	r |= bft_writer_throw(&w, T, 4000, A, 2, BFT_THROW_THROW);
	r |= bft_writer_unwind(&w, T, 4000, A, 1, BFT_UNWIND_FOUND);
	r |= bft_writer_enter(&w, T, 4000, A, 2);
	r |= bft_writer_unwind(&w, T, 4000, A, 1, BFT_UNWIND_LONGJMP);
	r |= bft_writer_throw(&w, T, 4000, A, 0, BFT_THROW_FORCED);
	r |= bft_writer_unwind(&w, T, 4000, A, 1, BFT_UNWIND_CATCH);
	/* another thread: a throw outside traced code, then inside */
	r |= bft_writer_throw(&w, T, 4000, B, 7, BFT_THROW_THROW);
	r |= bft_writer_enter(&w, T, 4000, B, 3);
	r |= bft_writer_throw(&w, T, 4000, B, 7, BFT_THROW_THROW);
	r |= bft_writer_exit(&w, T, 4000, B);
	r |= bft_writer_enter(&w, T, 4000, B, 2);
	r |= bft_writer_throw(&w, T, 4000, B, 0, BFT_THROW_THROW);
	r |= bft_writer_unwind(&w, T, 4000, B, 1, BFT_UNWIND_CATCH);
	r |= bft_writer_sync(&w, T);
#undef T
	if (r)
		return -ENOMEM;
	p = bft_writer_data(&w, &n);
	r = syn_write_file(dir, "cpu0.bft", p, n) ?:
	    syn_write_file(dir, "methods", methods, sizeof(methods) - 1) ?:
	    syn_write_file(dir, "threads", threads, sizeof(threads) - 1) ?:
	    syn_write_file(dir, "exceptions", types, sizeof(types) - 1);
	bft_writer_free(&w);
	return r;
}

/* What HQ must receive on the data connection, as data_log() writes it. */
static const char expected[] =
	"map_thread 0 main (4000/4001)\n"
	"map_method 1 prog!main\n"
	"entry 0 m1 t0\n"
	"map_method 2 prog!outer\n"
	"entry 1 m2 t0\n"
	"map_method 3 prog!thrower\n"
	"entry 2 m3 t0\n"
	"map_exception 1 std::runtime_error\n"
	"exception 3 m3 x1 t0\n"
	"bubble 4 m3 x1 t0\n"
	"exit 5 m2 t0\n"
	"map_method 4 prog!rethrower\n"
	"entry 6 m4 t0\n"
	"exception 7 m4 x1 t0\n"
	"bubble 8 m4 x1 t0\n"
	"map_method 5 prog!dtor_owner\n"
	"entry 9 m5 t0\n"
	"map_method 6 prog!deep\n"
	"entry 10 m6 t0\n"
	"map_exception 2 int\n"
	"exception 11 m6 x2 t0\n"
	"bubble 12 m6 x2 t0\n"
	"bubble 13 m5 x2 t0\n"
	"entry 14 m2 t0\n"
	"map_exception 2147483646 longjmp\n"
	"bubble 15 m2 x2147483646 t0\n"
	"map_exception 2147483647 abi::__forced_unwind\n"
	"exception 16 m1 x2147483647 t0\n"
	"bubble 17 m1 x2147483647 t0\n"
	"map_thread 1 worker (4000/4002)\n"
	"entry 18 m3 t1\n"
	"map_exception 7 exception type 7\n"
	"exception 19 m3 x7 t1\n"
	"exit 20 m3 t1\n"
	"entry 21 m2 t1\n"
	"map_exception 0 unknown exception\n"
	"exception 22 m2 x0 t1\n"
	"bubble 23 m2 x0 t1\n";

/*
 * What bfhq writes for it: calls.txt, tree.txt, exceptions.txt and
 * folded.txt.  Records are 1 ms apart, the first one is time 0.
 */
static const char *const hq_expected[] = {
	"main (4000/4001): e1 e2 e3 !1 u3 x2 e4 !1 u4 e5 e6 !2 u6 u5 e2 "
	"u2 !2147483647 u1\n"
	"worker (4000/4002): e3 !7 x3 e2 !0 u2\n",

	"# thread 0: main (4000/4001) (7 calls, depth 3)\n"
	"  DURATION | FUNCTION\n"
	"           | prog!main() {\n"
	"           |   prog!outer() {\n"
	"           |     prog!thrower() {\n"
	"           |       /* throw std::runtime_error */\n"
	"  2.000 ms |     } /* prog!thrower: unwound (std::runtime_error) */\n"
	"  4.000 ms |   } /* prog!outer */\n"
	"           |   prog!rethrower() {\n"
	"           |     /* throw std::runtime_error */\n"
	"  2.000 ms |   } /* prog!rethrower: unwound (std::runtime_error) */\n"
	"           |   prog!dtor_owner() {\n"
	"           |     prog!deep() {\n"
	"           |       /* throw int */\n"
	"  2.000 ms |     } /* prog!deep: unwound (int) */\n"
	"  3.000 ms |   } /* prog!dtor_owner: unwound (int) */\n"
	"           |   prog!outer() {\n"
	"  1.000 ms |   } /* prog!outer: unwound (longjmp) */\n"
	"           |   /* throw abi::__forced_unwind */\n"
	" 16.000 ms | } /* prog!main: unwound (abi::__forced_unwind) */\n"
	"\n"
	"# thread 1: worker (4000/4002) (2 calls, depth 1)\n"
	"  DURATION | FUNCTION\n"
	"           | prog!thrower() {\n"
	"           |   /* throw exception type 7 */\n"
	"  2.000 ms | } /* prog!thrower */\n"
	"           | prog!outer() {\n"
	"           |   /* throw unknown exception */\n"
	"  2.000 ms | } /* prog!outer: unwound (unknown exception) */\n"
	"\n",

	"0 1 unknown exception\n"
	"1 2 std::runtime_error\n"
	"2 1 int\n"
	"7 1 exception type 7\n"
	"2147483646 0 longjmp\n"
	"2147483647 1 abi::__forced_unwind\n",

	/* self times (us): the frames left count as frames that returned */
	"main_(4000/4001);prog!main 6000\n"
	"main_(4000/4001);prog!main;prog!outer 3000\n"
	"main_(4000/4001);prog!main;prog!outer;prog!thrower 2000\n"
	"main_(4000/4001);prog!main;prog!rethrower 2000\n"
	"main_(4000/4001);prog!main;prog!dtor_owner 1000\n"
	"main_(4000/4001);prog!main;prog!dtor_owner;prog!deep 2000\n"
	"worker_(4000/4002);prog!thrower 2000\n"
	"worker_(4000/4002);prog!outer 2000\n",
};

/* trace.json parses, B/E balance per thread, throws are instants. */
static void check_chrome(struct __test_metadata *_metadata, const char *path)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, 0, &jerr), *evs, *ev;
	int depth[2] = { 0, 0 }, b = 0, e = 0, throws = 0, unwound = 0;
	size_t i;

	ASSERT_NE(NULL, root) TH_LOG("%s: %s", path, jerr.text);
	evs = json_object_get(root, "traceEvents");
	ASSERT_TRUE(json_is_array(evs));
	json_array_foreach(evs, i, ev) {
		const char *ph = json_string_value(json_object_get(ev, "ph"));
		json_int_t tid = json_integer_value(json_object_get(ev, "tid"));
		json_t *args = json_object_get(ev, "args");
		int k = tid == B;

		ASSERT_NE(NULL, ph);
		if (!strcmp(ph, "B")) {
			depth[k]++;
			b++;
		} else if (!strcmp(ph, "E")) {
			EXPECT_GT(depth[k], 0);
			depth[k]--;
			e++;
			unwound += json_object_get(args, "unwound by") != NULL;
		} else if (!strcmp(ph, "i") &&
			   !strcmp(json_string_value(json_object_get(ev, "name")),
				   "throw")) {
			throws++;
			EXPECT_NE(NULL, json_string_value(
					json_object_get(args, "exception")));
		}
	}
	EXPECT_EQ(9, b);
	EXPECT_EQ(9, e);
	EXPECT_EQ(0, depth[0]);
	EXPECT_EQ(0, depth[1]);
	EXPECT_EQ(6, throws);
	EXPECT_EQ(7, unwound);
	json_decref(root);
}

/* One line per data message; times are not compared. */
static void data_log(struct bft_buf *out, const struct bfp_msg *m)
{
	char line[512];
	int n = 0;

	switch (m->id) {
	case BFP_MAP_THREAD:
		n = snprintf(line, sizeof(line), "map_thread %u %.*s\n",
			     m->thread, (int)m->str_len, m->str);
		break;
	case BFP_MAP_METHOD:
		n = snprintf(line, sizeof(line), "map_method %u %.*s\n",
			     m->method, (int)m->str_len, m->str);
		break;
	case BFP_MAP_EXCEPTION:
		n = snprintf(line, sizeof(line), "map_exception %u %.*s\n",
			     m->exception, (int)m->str_len, m->str);
		break;
	case BFP_METHOD_ENTRY:
	case BFP_METHOD_EXIT:
		n = snprintf(line, sizeof(line), "%s %u m%u t%u\n",
			     m->id == BFP_METHOD_ENTRY ? "entry" : "exit",
			     m->seq, m->method, m->thread);
		break;
	case BFP_EXCEPTION:
	case BFP_EXCEPTION_BUBBLE:
		n = snprintf(line, sizeof(line), "%s %u m%u x%u t%u\n",
			     m->id == BFP_EXCEPTION ? "exception" : "bubble",
			     m->seq, m->method, m->exception, m->thread);
		break;
	case BFP_MARKER:
		n = snprintf(line, sizeof(line), "marker %u %.*s=%.*s\n",
			     m->seq, (int)m->str_len, m->str,
			     (int)m->str2_len, m->str2);
		break;
	default:
		n = snprintf(line, sizeof(line), "message %u\n", m->id);
		break;
	}
	bft_buf_append(out, line, (size_t)n);
}

/*
 * Play HQ for bfcollector run with argv (its --hq and --protocol already
 * filled in for version v): the handshake, then every data message into
 * on_msg, until bfcollector closes the data connection; what is left
 * half-read stays in din.
 */
static void play_hq(struct __test_metadata *_metadata, FIXTURE_DATA(exc) *self,
		    unsigned int v, char *const argv[], struct bft_buf *din,
		    void (*on_msg)(struct bft_buf *, const struct bfp_msg *),
		    struct bft_buf *got)
{
	struct bft_buf cin = { 0 }, out = { 0 };
	struct bfp_config cfg;
	struct bfp_msg m = { 0 }, cm = { .id = BFP_CONFIG, .config = &cfg };
	uint8_t hello[2];
	int ctl, data, i, rc;

	self->lfd = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_GE(self->lfd, 0);
	{
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(self->port),
					  .sin_addr.s_addr =
						  htonl(INADDR_LOOPBACK) };

		ASSERT_EQ(0, bind(self->lfd, (struct sockaddr *)&sa,
				  sizeof(sa)));
		ASSERT_EQ(0, listen(self->lfd, 4));
	}
	self->pid = spawn(argv, self->log);
	ASSERT_GT(self->pid, 0);
	ctl = accept_within(self->lfd, 20000);
	ASSERT_GE(ctl, 0);
	ASSERT_EQ(2, get_msg(ctl, &cin, v, BFP_CTX_HQ_GREETING, &m));
	ASSERT_EQ(BFP_HELLO, m.id);
	ASSERT_EQ(v, m.version);
	bfp_config_init(&cfg);
	cfg.run_id = 3;
	ASSERT_EQ(0, bfp_encode(&out, v, &cm));
	ASSERT_EQ((ssize_t)out.len, write(ctl, out.data, out.len));
	data = accept_within(self->lfd, 20000);
	ASSERT_GE(data, 0);
	ASSERT_EQ(2, read(data, hello, 2));
	EXPECT_EQ(BFP_DATA_HELLO, hello[0]);
	EXPECT_EQ(3, hello[1]);
	ASSERT_EQ(1, write(data, (uint8_t[]){ BFP_DATA_HELLO_REPLY }, 1));
	ASSERT_EQ(1, write(ctl, (uint8_t[]){ BFP_START }, 1));
	/* the replay ends, bfcollector closes the data connection */
	for (i = 0; i < 100000; i++) {
		rc = get_msg(data, din, v, BFP_CTX_HQ_DATA, &m);
		if (rc <= 0)
			break;
		on_msg(got, &m);
		/* keep the control connection drained */
		while (read_some(ctl, &cin, 0) && cin.len)
			cin.len = 0;
	}
	close(data);
	close(ctl);
	rc = wait_exit(self->pid, 20000);
	self->pid = 0;
	EXPECT_EQ(0, rc);
	bfp_msg_free(&m);
	bfp_config_free(&cfg);
	bft_buf_free(&cin);
	bft_buf_free(&out);
}

static void run(struct __test_metadata *_metadata, FIXTURE_DATA(exc) *self,
		unsigned int v)
{
	char hq[64], proto[4], path[PATH_MAX + 64];
	/* the wire as the original HQ knows it: no bftrace.us markers */
	char *argv[] = { "bfcollector", "--hq", hq, "--protocol", proto,
			 "--replay", self->replay, "--output", self->flow,
			 "--connect-timeout", "20", "--ms-only", NULL };
	struct bft_buf din = { 0 }, got = { 0 };
	char *log;

	ASSERT_EQ(0, write_replay(self->replay));
	snprintf(hq, sizeof(hq), "127.0.0.1:%d", self->port);
	snprintf(proto, sizeof(proto), "%u", v);
	play_hq(_metadata, self, v, argv, &din, data_log, &got);
	EXPECT_EQ(0u, din.len);		/* nothing left half-read */
	bft_buf_append(&got, "", 1);
	EXPECT_STREQ(expected, (char *)got.data);
	log = bft_test_slurp(self->log, NULL);
	ASSERT_NE(NULL, log);
	EXPECT_NE(NULL, strstr(log, "; 6 exceptions (1 thrown outside traced "
			       "frames), 7 frames left by them"))
		TH_LOG("%s", log);
	free(log);
	/* .flow: a frame left is an exit there */
	snprintf(path, sizeof(path), "%s/thread-%u.flow", self->flow, A);
	{
		struct bft_flow_error ferr;
		uint8_t want[32];
		char *f;
		size_t n;
		int wn = hex_parse("81 82 83 01 84 00 85 86 01 82 01", want,
				   sizeof(want));

		f = bft_test_slurp(path, &n);
		ASSERT_NE(NULL, f);
		ASSERT_EQ((size_t)wn, n);
		EXPECT_EQ(0, memcmp(want, f, n));
		free(f);
		EXPECT_EQ(0, bft_flow_read_file(path, BFT_FLOW_STRICT |
						BFT_FLOW_BALANCED, NULL, NULL,
						&ferr));
	}
	bft_buf_free(&din);
	bft_buf_free(&got);
}

/*
 * The sub-millisecond part of every event's time, as the bftrace.us
 * markers list it (docs/live-format.md): "N a,b,..." with N the count,
 * each in "%u" form.  Entries and exits of one thread, each at a chosen
 * number of microseconds past a millisecond (the first record is the
 * base, 0).
 */
static const unsigned int us_past[] = { 0, 1, 9, 10, 11, 99, 100, 101, 998,
					999, 500, 7, 70, 700, 0, 305 };

static int write_us_replay(const char *dir)
{
	static const char methods[] = "1\t/usr/bin/prog\tmain\n";
	static const char threads[] = "4000\t4001\tmain\n";
	uint64_t base = 1000000000ull;
	struct bft_writer w;
	const uint8_t *p;
	size_t i, n;
	int r = bft_writer_init(&w, 1000, 0);

	for (i = 0; i < sizeof(us_past) / sizeof(us_past[0]); i++) {
		uint64_t t = base + i * 1000000 + us_past[i] * 1000ull;

		r |= i % 2 ? bft_writer_exit(&w, t, 4000, A) :
			     bft_writer_enter(&w, t, 4000, A, 1);
	}
	r |= bft_writer_sync(&w, base + i * 1000000);
	if (r)
		return -ENOMEM;
	p = bft_writer_data(&w, &n);
	r = syn_write_file(dir, "cpu0.bft", p, n) ?:
	    syn_write_file(dir, "methods", methods, sizeof(methods) - 1) ?:
	    syn_write_file(dir, "threads", threads, sizeof(threads) - 1);
	bft_writer_free(&w);
	return r;
}

/* The markers' lists, one after the other, each checked against its N. */
static void us_log(struct bft_buf *out, const struct bfp_msg *m)
{
	unsigned long count;
	size_t listed = 0;
	char *end;

	if (m->id != BFP_MARKER || m->str_len != 10 ||
	    memcmp(m->str, "bftrace.us", 10))
		return;
	count = strtoul(m->str2, &end, 10);
	if (!count)
		return;	/* the declaration: none yet */
	for (const char *q = end + 1; q < m->str2 + m->str2_len; q++)
		listed += *q == ',';
	if (listed + 1 != count || *end != ' ') {
		bft_buf_append(out, "(count mismatch)", 16);
		return;
	}
	if (out->len)
		bft_buf_append(out, ",", 1);
	bft_buf_append(out, end + 1, m->str2_len - (size_t)(end + 1 - m->str2));
}

TEST_F_TIMEOUT(exc, the_microseconds_of_each_event_are_listed, 120)
{
	char hq[64], want[256];
	char *argv[] = { "bfcollector", "--hq", hq, "--protocol", "2",
			 "--replay", self->replay, "--connect-timeout", "20",
			 NULL };
	struct bft_buf din = { 0 }, got = { 0 };
	size_t i, o = 0;

	for (i = 0; i < sizeof(us_past) / sizeof(us_past[0]); i++)
		o += (size_t)snprintf(want + o, sizeof(want) - o, "%s%u",
				      i ? "," : "", us_past[i]);
	ASSERT_EQ(0, write_us_replay(self->replay));
	snprintf(hq, sizeof(hq), "127.0.0.1:%d", self->port);
	play_hq(_metadata, self, 2, argv, &din, us_log, &got);
	EXPECT_EQ(0u, din.len);
	bft_buf_append(&got, "", 1);
	EXPECT_STREQ(want, (char *)got.data);
	bft_buf_free(&din);
	bft_buf_free(&got);
}

/* bfcollector into bfhq: bfhq's output files for the crafted stream. */
static void run_hq(struct __test_metadata *_metadata, FIXTURE_DATA(exc) *self,
		   unsigned int v)
{
	char port[16], hq[64], proto[4], out[PATH_MAX + 16];
	char path[PATH_MAX + 64];
	char *hq_argv[] = { "bfhq", "-p", port, "-o", out, "--start",
			    "--count", "1", "--timeout", "120", NULL };
	char *coll_argv[] = { "bfcollector", "--hq", hq, "--protocol", proto,
			      "--replay", self->replay, "--connect-timeout",
			      "30", NULL };
	static const char *const files[] = { "calls.txt", "tree.txt",
					     "exceptions.txt", "folded.txt" };
	pid_t hq_pid;
	size_t i;
	int rc;

	ASSERT_EQ(0, write_replay(self->replay));
	snprintf(port, sizeof(port), "%d", self->port);
	snprintf(hq, sizeof(hq), "127.0.0.1:%d", self->port);
	snprintf(proto, sizeof(proto), "%u", v);
	snprintf(out, sizeof(out), "%s/hq", self->dir);
	hq_pid = spawn(hq_argv, self->log);
	ASSERT_GT(hq_pid, 0);
	ASSERT_TRUE(wait_listening(self->port, slow_env() ? 30000 : 5000));
	self->pid = spawn(coll_argv, self->log);
	ASSERT_GT(self->pid, 0);
	EXPECT_EQ(0, wait_exit(self->pid, 60000));
	self->pid = 0;
	rc = wait_exit(hq_pid, 20000);
	EXPECT_EQ(0, rc);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *got;

		snprintf(path, sizeof(path), "%s/trace-1/%s", out, files[i]);
		got = bft_test_slurp(path, NULL);
		ASSERT_NE(NULL, got) TH_LOG("%s", files[i]);
		EXPECT_STREQ(hq_expected[i], got) TH_LOG("%s", files[i]);
		free(got);
	}
	snprintf(path, sizeof(path), "%s/trace-1/summary.txt", out);
	{
		char *sum = bft_test_slurp(path, NULL);

		ASSERT_NE(NULL, sum);
		EXPECT_NE(NULL, strstr(sum, "exceptions:    6 thrown, 7 frames "
				       "unwound, 0 uses of an unmapped type\n"))
			TH_LOG("%s", sum);
		EXPECT_NE(NULL, strstr(sum, "calls:         9 (exits 2)\n"))
			TH_LOG("%s", sum);
		free(sum);
	}
	snprintf(path, sizeof(path), "%s/trace-1/trace.json", out);
	check_chrome(_metadata, path);
}

TEST_F_TIMEOUT(exc, v1_bfhq_shows_throws_and_unwound_frames, 180)
{
	run_hq(_metadata, self, 1);
}

TEST_F_TIMEOUT(exc, v2_bfhq_shows_throws_and_unwound_frames, 180)
{
	run_hq(_metadata, self, 2);
}

TEST_F_TIMEOUT(exc, v1_throws_and_bubbles_on_the_wire, 120)
{
	run(_metadata, self, 1);
}

TEST_F_TIMEOUT(exc, v2_throws_and_bubbles_on_the_wire, 120)
{
	run(_metadata, self, 2);
}

/*
 * USDT hits of two threads, inside a call and outside any: one without
 * arguments, one signed, one with the extremes of both signs.
 */
static int write_mark_replay(const char *dir)
{
	static const char methods[] =
		"1\t/usr/bin/prog\tmain\n2\t/usr/bin/prog\tapp:tick\n"
		"3\t/usr/lib/libx.so\tlibx.so!x:edge\n";
	static const char threads[] = "4000\t4001\tmain\n4000\t4002\tworker\n";
	const uint64_t one[1] = { (uint64_t)-3 };
	const uint64_t edge[4] = { (uint64_t)INT64_MIN, UINT64_MAX, 0,
				   (uint64_t)INT64_MAX };
	struct bft_writer w;
	uint64_t t = 1000000000ull;
	const uint8_t *p;
	size_t n;
	int r = 0;

#define T	(t += 1000000)
	r |= bft_writer_init(&w, 1000, 0);
	r |= bft_writer_mark(&w, T, 4000, B, 2, 0, NULL, 0, 0);
	r |= bft_writer_enter(&w, T, 4000, A, 1);
	r |= bft_writer_mark(&w, T, 4000, A, 2, 1, one, 1, 0);
	r |= bft_writer_mark(&w, T, 4000, B, 3, 4, edge, 5, 0);
	r |= bft_writer_exit(&w, T, 4000, A);
	r |= bft_writer_sync(&w, T);
#undef T
	if (r)
		return -ENOMEM;
	p = bft_writer_data(&w, &n);
	r = syn_write_file(dir, "cpu0.bft", p, n) ?:
	    syn_write_file(dir, "methods", methods, sizeof(methods) - 1) ?:
	    syn_write_file(dir, "threads", threads, sizeof(threads) - 1);
	bft_writer_free(&w);
	return r;
}

static const char mark_expected[] =
	"map_thread 0 worker (4000/4002)\n"
	"marker 0 bftrace.at=0\n"
	"marker 1 app:tick=\n"
	"map_thread 1 main (4000/4001)\n"
	"map_method 1 prog!main\n"
	"entry 2 m1 t1\n"
	"marker 3 bftrace.at=1\n"
	"marker 4 app:tick=-3\n"
	"marker 5 bftrace.at=0\n"
	"marker 6 x:edge=-9223372036854775808 18446744073709551615 0 "
	"9223372036854775807\n"
	"exit 7 m1 t1\n";

TEST_F_TIMEOUT(exc, usdt_hits_are_markers_after_their_thread, 120)
{
	char hq[64];
	char *argv[] = { "bfcollector", "--hq", hq, "--protocol", "1",
			 "--replay", self->replay, "--connect-timeout", "20",
			 "--ms-only", NULL };
	struct bft_buf din = { 0 }, got = { 0 };
	char *log;

	ASSERT_EQ(0, write_mark_replay(self->replay));
	snprintf(hq, sizeof(hq), "127.0.0.1:%d", self->port);
	play_hq(_metadata, self, 1, argv, &din, data_log, &got);
	bft_buf_append(&got, "", 1);
	EXPECT_STREQ(mark_expected, (char *)got.data);
	log = bft_test_slurp(self->log, NULL);
	ASSERT_NE(NULL, log);
	EXPECT_NE(NULL, strstr(log, "; 3 USDT marks")) TH_LOG("%s", log);
	free(log);
	bft_buf_free(&din);
	bft_buf_free(&got);
}

TEST_HARNESS_MAIN
