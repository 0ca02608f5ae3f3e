// SPDX-License-Identifier: GPL-2.0
/*
 * .flow files and ids.properties: the flow agent's golden vectors
 * (vectors/flow.txt) byte for byte, the reader's checks, the id mapping.
 */
#include <errno.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "wire/bft_flow.h"
#include "bft_test.h"

/* A flat list of .flow events. */
struct evlist {
	struct bft_flow_event ev[256];
	size_t n;
};

static void ev_add(struct evlist *l, int kind, uint64_t value)
{
	/* adjacent exits are one event in a canonical file */
	const size_t cap = sizeof(l->ev) / sizeof(l->ev[0]);

	if (kind == BFT_FLOW_EXIT && l->n && l->n <= cap &&
	    l->ev[l->n - 1].kind == kind) {
		l->ev[l->n - 1].value += value;
		return;
	}
	if (l->n < cap) {
		l->ev[l->n].kind = kind;
		l->ev[l->n].value = value;
	}
	l->n++;
}

static int ev_collect(void *ctx, const struct bft_flow_event *ev)
{
	ev_add(ctx, ev->kind, ev->value);
	return 0;
}

/*
 * Run the operations of one vector line ("e1*65,x65") against a writer and
 * into the expected event list.  Returns 0, or -1 if the line is malformed.
 */
static int run_ops(const char *ops, struct bft_flow_writer *w,
		   struct evlist *want)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(ops) >= sizeof(buf))
		return -1;
	strcpy(buf, ops);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned long long v, rep = 1, i;
		char *end;

		if (tok[0] != 'e' && tok[0] != 'x')
			return -1;
		v = strtoull(tok + 1, &end, 10);
		if (end == tok + 1)
			return -1;
		if (*end == '*')
			rep = strtoull(end + 1, &end, 10);
		if (*end)
			return -1;
		for (i = 0; i < rep; i++) {
			if (tok[0] == 'e') {
				if (bft_flow_enter(w, v))
					return -1;
				ev_add(want, BFT_FLOW_ENTER, v);
				continue;
			}
			/* one exit at a time: the writer does the RLE */
			for (unsigned long long k = 0; k < v; k++)
				if (bft_flow_exit(w, 1))
					return -1;
			ev_add(want, BFT_FLOW_EXIT, v);
		}
	}
	return 0;
}

TEST(golden_vectors_write_exactly_and_read_back)
{
	char path[512], line[1024];
	FILE *f;
	int cases = 0, lineno = 0;

	snprintf(path, sizeof(path), "%s/flow.txt", BFT_TEST_VECTORS);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f) TH_LOG("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char ops[512], hex[512], got_hex[1024];
		struct bft_buf out = { 0 };
		struct bft_flow_writer w;
		struct evlist want = { .n = 0 }, got = { .n = 0 };
		struct bft_flow_error err;
		uint8_t bytes[512];
		int n;
		size_t i;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		ASSERT_EQ(2, sscanf(line, "%511s %511s", ops, hex))
			TH_LOG("flow.txt:%d malformed", lineno);
		bft_flow_writer_init_mem(&w, &out);
		ASSERT_EQ(0, run_ops(ops, &w, &want))
			TH_LOG("flow.txt:%d bad operations", lineno);
		ASSERT_EQ(0, bft_flow_writer_close(&w));
		EXPECT_STREQ(hex, hex_format(out.data, out.len, got_hex))
			TH_LOG("flow.txt:%d %s", lineno, ops);
		EXPECT_EQ(out.len, bft_flow_writer_bytes(&w));

		n = hex_parse(hex, bytes, sizeof(bytes));
		ASSERT_GT(n, 0);
		ASSERT_EQ(0, bft_flow_read(bytes, (size_t)n, BFT_FLOW_STRICT,
					   ev_collect, &got, &err))
			TH_LOG("flow.txt:%d: %s", lineno, err.msg);
		ASSERT_EQ(want.n, got.n) TH_LOG("flow.txt:%d", lineno);
		for (i = 0; i < want.n; i++) {
			EXPECT_EQ(want.ev[i].kind, got.ev[i].kind);
			EXPECT_EQ(want.ev[i].value, got.ev[i].value);
		}
		bft_buf_free(&out);
		cases++;
	}
	fclose(f);
	EXPECT_GE(cases, 13);	/* the file has not lost its cases */
}

TEST(exits_are_flushed_before_enter_and_at_close_only)
{
	struct bft_buf out = { 0 };
	struct bft_flow_writer w;
	char hex[64];

	bft_flow_writer_init_mem(&w, &out);
	ASSERT_EQ(0, bft_flow_enter(&w, 0));
	ASSERT_EQ(0, bft_flow_enter(&w, 1));
	ASSERT_EQ(0, bft_flow_enter(&w, 2));
	ASSERT_EQ(0, bft_flow_exit(&w, 1));
	ASSERT_EQ(0, bft_flow_exit(&w, 1));
	EXPECT_STREQ("808182", hex_format(out.data, out.len, hex));
	ASSERT_EQ(0, bft_flow_enter(&w, 3));
	ASSERT_EQ(0, bft_flow_exit(&w, 1));
	EXPECT_STREQ("80818201" "83", hex_format(out.data, out.len, hex));
	ASSERT_EQ(0, bft_flow_writer_close(&w));
	/* the agent's own example: main{a{b}}c with main left open */
	EXPECT_STREQ("808182018300", hex_format(out.data, out.len, hex));
	ASSERT_EQ(0, bft_flow_exit(&w, 0));
	ASSERT_EQ(0, bft_flow_writer_close(&w));
	EXPECT_EQ(6u, out.len);
	bft_buf_free(&out);
}

struct read_case {
	const char *name;
	const char *hex;
	unsigned int flags;
	int ok;
	const char *text;
};

static const struct read_case read_cases[] = {
	{ "truncated", "81 c0", 0, 0, "offset 1: truncated varint" },
	{ "too long", "c0 80 80 80 80 80 80 80 80 80 01", 0, 0,
	  "longer than 10 bytes" },
	{ "overflow", "ff ff ff ff ff ff ff ff ff 04", 0, 0, "64 bits" },
	{ "exit overflow", "81 7f ff ff ff ff ff ff ff ff 03", 0, 0,
	  "offset 1: exit run" },
	{ "overlong, lenient", "c1 00", 0, 1, NULL },
	{ "overlong, strict", "81 c1 00", BFT_FLOW_STRICT, 0,
	  "offset 1: overlong" },
	{ "adjacent exits, lenient", "81 82 00 00", 0, 1, NULL },
	{ "adjacent exits, strict", "81 82 00 00", BFT_FLOW_STRICT, 0,
	  "offset 3: adjacent EXIT" },
	{ "exit underflow, lenient", "81 01", BFT_FLOW_STRICT, 1, NULL },
	{ "exit underflow, balanced", "81 01", BFT_FLOW_BALANCED, 0,
	  "offset 1: exit with no open frame" },
	{ "open frames at end", "81 82 83 00", BFT_FLOW_BALANCED, 1, NULL },
	{ "empty file", "", BFT_FLOW_STRICT | BFT_FLOW_BALANCED, 1, NULL },
};

TEST(reader_rejects_malformed_files_with_offset)
{
	size_t i;

	for (i = 0; i < sizeof(read_cases) / sizeof(read_cases[0]); i++) {
		const struct read_case *c = &read_cases[i];
		struct bft_flow_error err = { .msg = "" };
		uint8_t b[64];
		int n = hex_parse(c->hex, b, sizeof(b));
		int r;

		ASSERT_GE(n, 0);
		r = bft_flow_read(b, (size_t)n, c->flags, NULL, NULL, &err);
		if (c->ok) {
			EXPECT_EQ(0, r) TH_LOG("%s: %s", c->name, err.msg);
			continue;
		}
		EXPECT_EQ(-EPROTO, r) TH_LOG("%s", c->name);
		EXPECT_NE(NULL, strstr(err.msg, c->text))
			TH_LOG("%s: \"%s\" lacks \"%s\"", c->name, err.msg,
			       c->text);
	}
}

static int stop_at_second(void *ctx, const struct bft_flow_event *ev)
{
	int *n = ctx;

	(void)ev;
	return ++*n == 2 ? 9 : 0;
}

TEST(reader_callback_can_stop)
{
	int n = 0;

	EXPECT_EQ(9, bft_flow_read("\x81\x82\x83", 3, 0, stop_at_second, &n,
				   NULL));
	EXPECT_EQ(2, n);
}

/* A big trace through a FILE: buffered writes equal the memory writer's. */
TEST(file_writer_matches_memory_writer_and_reads_back)
{
	char path[] = "/tmp/bft-flow-test-XXXXXX";
	struct bft_buf mem = { 0 };
	struct bft_flow_writer wm, wf;
	struct bft_flow_error err;
	uint64_t seed = 42, depth = 0, events = 0;
	int prev_exit = 0;
	struct evlist dummy = { .n = 0 };
	int fd = mkstemp(path), i;
	FILE *f;
	char *data = NULL;
	size_t len = 0;

	ASSERT_GE(fd, 0);
	f = fdopen(fd, "w");
	ASSERT_NE(NULL, f);
	bft_flow_writer_init_mem(&wm, &mem);
	bft_flow_writer_init_file(&wf, f);
	for (i = 0; i < 100000; i++) {
		if (depth && rng_below(&seed, 2)) {
			uint64_t k = 1 + rng_below(&seed, depth);

			ASSERT_EQ(0, bft_flow_exit(&wm, k));
			ASSERT_EQ(0, bft_flow_exit(&wf, k));
			depth -= k;
			events += !prev_exit;	/* adjacent exits: one event */
			prev_exit = 1;
		} else {
			uint64_t id = rng_below(&seed, 100000);

			ASSERT_EQ(0, bft_flow_enter(&wm, id));
			ASSERT_EQ(0, bft_flow_enter(&wf, id));
			depth++;
			events++;
			prev_exit = 0;
		}
	}
	ASSERT_EQ(0, bft_flow_writer_close(&wm));
	ASSERT_EQ(0, bft_flow_writer_close(&wf));
	ASSERT_EQ(0, fclose(f));
	EXPECT_GT(mem.len, 65536u);
	EXPECT_EQ(mem.len, bft_flow_writer_bytes(&wf));
	f = fopen(path, "rb");
	ASSERT_NE(NULL, f);
	data = malloc(mem.len + 1);
	ASSERT_NE(NULL, data);
	len = fread(data, 1, mem.len + 1, f);
	fclose(f);
	EXPECT_EQ(mem.len, len);
	EXPECT_EQ(0, memcmp(mem.data, data, mem.len));
	EXPECT_EQ(0, bft_flow_read_file(path, BFT_FLOW_STRICT |
					BFT_FLOW_BALANCED, ev_collect, &dummy,
					&err)) TH_LOG("%s", err.msg);
	EXPECT_EQ(events, dummy.n);
	EXPECT_EQ(-ENOENT, bft_flow_read_file("/nonexistent/thread-1.flow", 0,
					      NULL, NULL, &err));
	free(data);
	bft_buf_free(&mem);
	unlink(path);
}

TEST(flow_file_is_named_after_the_thread)
{
	char name[64];

	bft_flow_filename(name, sizeof(name), 1235);
	EXPECT_STREQ("thread-1235.flow", name);
}

struct idlist {
	char key[8][64];
	uint64_t id[8];
	int n;
};

static int id_collect(void *ctx, const char *key, size_t keylen, uint64_t id)
{
	struct idlist *l = ctx;

	if (l->n < 8 && keylen < 64) {
		memcpy(l->key[l->n], key, keylen);
		l->key[l->n][keylen] = 0;
		l->id[l->n] = id;
	}
	l->n++;
	return 0;
}

TEST(ids_properties_write_and_read_back)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct idlist l = { .n = 0 };
	struct bft_ids_error err;

	ASSERT_NE(NULL, f);
	EXPECT_EQ(0, bft_ids_write(f, "libc.so.6#malloc", 0));
	EXPECT_EQ(0, bft_ids_write(f, "a.out#_ZN1A3fooEv", 18446744073709551615ull));
	EXPECT_EQ(0, bft_ids_write(f, "p.M#main([Ljava/lang/String;)V", 7));
	EXPECT_EQ(-EINVAL, bft_ids_write(f, "A::operator=(A const&)", 3));
	EXPECT_EQ(-EINVAL, bft_ids_write(f, "two\nlines", 3));
	EXPECT_EQ(-EINVAL, bft_ids_write(f, "#comment", 3));
	EXPECT_EQ(-EINVAL, bft_ids_write(f, "", 3));
	ASSERT_EQ(0, fclose(f));
	EXPECT_STREQ("libc.so.6#malloc=0\n"
		     "a.out#_ZN1A3fooEv=18446744073709551615\n"
		     "p.M#main([Ljava/lang/String;)V=7\n", buf);
	ASSERT_EQ(0, bft_ids_parse(buf, len, id_collect, &l, &err));
	ASSERT_EQ(3, l.n);
	EXPECT_STREQ("a.out#_ZN1A3fooEv", l.key[1]);
	EXPECT_EQ(UINT64_MAX, l.id[1]);
	EXPECT_STREQ("p.M#main([Ljava/lang/String;)V", l.key[2]);
	EXPECT_EQ(7u, l.id[2]);
	free(buf);
}

TEST(ids_parser_skips_blank_and_comment_lines_and_splits_at_last_equals)
{
	static const char text[] = "\n# header\r\nk1=1\r\n\nx=y=3\nlast=4";
	struct idlist l = { .n = 0 };
	struct bft_ids_error err;

	ASSERT_EQ(0, bft_ids_parse(text, sizeof(text) - 1, id_collect, &l,
				   &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(3, l.n);
	EXPECT_STREQ("k1", l.key[0]);
	EXPECT_EQ(1u, l.id[0]);
	EXPECT_STREQ("x=y", l.key[1]);
	EXPECT_EQ(3u, l.id[1]);
	EXPECT_STREQ("last", l.key[2]);
	EXPECT_EQ(4u, l.id[2]);
}

TEST(ids_parser_names_the_bad_line)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "a=1\nnoequals\n", "line 2: no '='" },
		{ "=5\n", "line 1: empty key" },
		{ "a=1\n\na=\n", "line 3: no id" },
		{ "a=12x\n", "line 1: id is not a decimal" },
		{ "a=-1\n", "line 1: id is not a decimal" },
		{ "a=18446744073709551616\n", "line 1: id beyond" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct bft_ids_error err = { .msg = "" };

		EXPECT_EQ(-EPROTO, bft_ids_parse(bad[i].text,
						 strlen(bad[i].text), NULL,
						 NULL, &err));
		EXPECT_NE(NULL, strstr(err.msg, bad[i].msg))
			TH_LOG("\"%s\" lacks \"%s\"", err.msg, bad[i].msg);
	}
}

TEST_HARNESS_MAIN
