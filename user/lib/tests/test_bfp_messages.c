// SPDX-License-Identifier: GPL-2.0
/*
 * Bytefrog messages against the golden bytes of the original 2014 writer
 * (vectors/bytefrog-v1.txt, arguments in vectors/messages.md): every line is
 * encoded from its arguments and compared byte for byte, and decoded back
 * to its arguments.  Then the version 2 layouts, the strings, and input a
 * decoder must refuse without reading past the end.
 */
#include <errno.h>

#include "kselftest_harness.h"

#include "bft_test.h"
#include "wire/bfp_msg.h"
#include "wire/bfp_wire.h"

#define MAXMSG 1024

struct golden {
	char name[64];
	uint8_t b[MAXMSG];
	int n;
};

/* The vector file's lines, by name; the test fails if one is missing. */
static int load_golden(struct golden *g, int max)
{
	char line[4096];
	FILE *f = fopen(BFT_TEST_VECTORS "/bytefrog-v1.txt", "r");
	int n = 0;

	if (!f)
		return -1;
	while (n < max && fgets(line, sizeof(line), f)) {
		char hex[4000];

		if (line[0] == '#' || sscanf(line, "%63s %3999s", g[n].name,
					    hex) != 2)
			continue;
		g[n].n = hex_parse(hex, g[n].b, MAXMSG);
		if (g[n].n < 0)
			return -1;
		n++;
	}
	fclose(f);
	return n;
}

static const struct golden *find(const struct golden *g, int n,
				 const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(g[i].name, name))
			return &g[i];
	return NULL;
}

static struct bfp_msg text_msg(uint8_t id, const char *s)
{
	struct bfp_msg m = { .id = id, .str = s, .str_len = strlen(s) };

	return m;
}

/* The arguments of messages.md, one message per vector line. */
static int expected_msgs(struct bfp_msg *m, const char **names,
			 struct bfp_config *cfg)
{
	static const struct { const char *name; uint8_t mode; } hb[] = {
		{ "heartbeat_Initializing", 'I' }, { "heartbeat_Tracing", 'T' },
		{ "heartbeat_Paused", 'P' }, { "heartbeat_Suspended", 'S' },
		{ "heartbeat_Shutdown", 'X' },
	};
	static const struct { const char *name; uint8_t id; } bare[] = {
		{ "data_hello_reply", BFP_DATA_HELLO_REPLY },
		{ "start", BFP_START }, { "stop", BFP_STOP },
		{ "pause", BFP_PAUSE }, { "unpause", BFP_UNPAUSE },
		{ "suspend", BFP_SUSPEND }, { "unsuspend", BFP_UNSUSPEND },
	};
	int n = 0;
	unsigned int i;

	memset(m, 0, 32 * sizeof(*m));
	names[n] = "hello";
	m[n].id = BFP_HELLO, m[n++].version = 1;
	names[n] = "data_hello";
	m[n].id = BFP_DATA_HELLO, m[n++].run_id = 5;
	names[n] = "error";
	m[n++] = text_msg(BFP_ERROR, "x");
	for (i = 0; i < sizeof(bare) / sizeof(bare[0]); i++) {
		names[n] = bare[i].name;
		m[n++].id = bare[i].id;
	}
	for (i = 0; i < sizeof(hb) / sizeof(hb[0]); i++) {
		names[n] = hb[i].name;
		m[n].id = BFP_HEARTBEAT;
		m[n].mode = hb[i].mode;
		m[n++].queue = 3;
	}
	names[n] = "data_break";
	m[n].id = BFP_DATA_BREAK, m[n++].seq = 1000;
	names[n] = "class_transformed";
	m[n++] = text_msg(BFP_CLASS_TRANSFORMED, "/usr/bin/prog");
	names[n] = "class_ignored";
	m[n++] = text_msg(BFP_CLASS_IGNORED, "/lib/libc.so.6");
	names[n] = "class_transform_failed";
	m[n++] = text_msg(BFP_CLASS_FAILED, "/lib/libz.so.1");
	names[n] = "map_thread_name";
	m[n] = text_msg(BFP_MAP_THREAD, "main (1234/1234)");
	m[n].thread = 7, m[n++].time = 10;
	names[n] = "map_method_signature";
	m[n] = text_msg(BFP_MAP_METHOD, "prog!foo");
	m[n++].method = 3;
	names[n] = "map_exception";
	m[n] = text_msg(BFP_MAP_EXCEPTION, "std::runtime_error");
	m[n++].exception = 1;
	names[n] = "method_entry";
	m[n].id = BFP_METHOD_ENTRY;
	m[n].time = 10, m[n].seq = 0, m[n].method = 3, m[n++].thread = 7;
	names[n] = "method_exit";
	m[n].id = BFP_METHOD_EXIT;
	m[n].time = 11, m[n].seq = 1, m[n].method = 3, m[n].line = 42;
	m[n++].thread = 7;
	names[n] = "exception";
	m[n].id = BFP_EXCEPTION;
	m[n].time = 12, m[n].seq = 2, m[n].method = 3, m[n].exception = 1;
	m[n].line = 42, m[n++].thread = 7;
	names[n] = "exception_bubble";
	m[n].id = BFP_EXCEPTION_BUBBLE;
	m[n].time = 13, m[n].seq = 3, m[n].method = 3, m[n].exception = 1;
	m[n++].thread = 7;
	names[n] = "marker";
	m[n] = text_msg(BFP_MARKER, "k");
	m[n].str2 = "v", m[n].str2_len = 1, m[n].time = 14, m[n++].seq = 4;
	/* RuntimeAgentConfigurationV1(runId=0, heartbeatInterval=1000,
	 * exclusions=[".*"] (Arrays.asList), inclusions=[] (ArrayList),
	 * bufferMemoryBudget=100, queueRetryCount=5, numDataSenders=1) */
	bfp_config_init(cfg);
	cfg->run_id = 0;
	cfg->heartbeat_ms = 1000;
	cfg->buffer_budget = 100;
	cfg->queue_retry = 5;
	cfg->data_senders = 1;
	cfg->java_class = BFP_CLASS_BYTEFROG;
	cfg->exclusions.list_class = BFP_LIST_ASLIST;
	cfg->inclusions.list_class = BFP_LIST_ARRAYLIST;
	if (bfp_strlist_add(&cfg->exclusions, ".*"))
		return -1;
	names[n] = "configuration";
	m[n].id = BFP_CONFIG, m[n++].config = cfg;
	return n;
}

static bool strlist_eq(const struct bfp_strlist *a, const struct bfp_strlist *b)
{
	uint32_t i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]))
			return false;
	return true;
}

static bool config_eq(const struct bfp_config *a, const struct bfp_config *b)
{
	return a->run_id == b->run_id && a->heartbeat_ms == b->heartbeat_ms &&
	       a->buffer_budget == b->buffer_budget &&
	       a->queue_retry == b->queue_retry &&
	       a->data_senders == b->data_senders &&
	       strlist_eq(&a->exclusions, &b->exclusions) &&
	       strlist_eq(&a->inclusions, &b->inclusions);
}

/* Every field a decoder fills, compared to what was encoded. */
static bool msg_eq(const struct bfp_msg *a, const struct bfp_msg *b)
{
	if (a->id != b->id || a->version != b->version ||
	    a->run_id != b->run_id || a->mode != b->mode ||
	    a->queue != b->queue || a->thread != b->thread ||
	    a->line != b->line || a->exception_thrown != b->exception_thrown ||
	    a->time != b->time || a->seq != b->seq || a->method != b->method ||
	    a->exception != b->exception || a->str_len != b->str_len ||
	    a->str2_len != b->str2_len)
		return false;
	if (a->str_len && memcmp(a->str, b->str, a->str_len))
		return false;
	if (a->str2_len && memcmp(a->str2, b->str2, a->str2_len))
		return false;
	if (!a->config != !b->config)
		return false;
	return !a->config || config_eq(a->config, b->config);
}

TEST(every_v1_message_encodes_to_the_golden_bytes)
{
	struct golden g[64];
	struct bfp_msg m[32];
	const char *names[32];
	struct bfp_config cfg;
	int ng = load_golden(g, 64), nm, i, checked = 0;

	ASSERT_GT(ng, 0);
	nm = expected_msgs(m, names, &cfg);
	ASSERT_EQ(ng, nm);	/* one expectation per vector line */
	for (i = 0; i < nm; i++) {
		const struct golden *v = find(g, ng, names[i]);
		struct bft_buf out = { 0 };
		char got[2 * MAXMSG + 1], want[2 * MAXMSG + 1];

		ASSERT_NE(NULL, v) TH_LOG("no vector %s", names[i]);
		ASSERT_EQ(0, bfp_encode(&out, 1, &m[i]));
		hex_format(out.data, out.len, got);
		hex_format(v->b, v->n, want);
		EXPECT_STREQ(want, got) TH_LOG("%s", names[i]);
		bft_buf_free(&out);
		checked++;
	}
	EXPECT_EQ(nm, checked);
	bfp_config_free(&cfg);
}

TEST(every_v1_golden_message_decodes_to_its_arguments)
{
	struct golden g[64];
	struct bfp_msg m[32];
	const char *names[32];
	struct bfp_config cfg;
	struct bfp_error err;
	int ng = load_golden(g, 64), nm, i;

	nm = expected_msgs(m, names, &cfg);
	ASSERT_EQ(ng, nm);
	for (i = 0; i < nm; i++) {
		const struct golden *v = find(g, ng, names[i]);
		struct bfp_msg d = { 0 };
		size_t k;

		ASSERT_NE(NULL, v);
		ASSERT_EQ(v->n, bfp_decode(v->b, v->n, 1, BFP_CTX_ANY, &d,
					   &err)) TH_LOG("%s: %s", names[i],
							 err.msg);
		EXPECT_TRUE(msg_eq(&m[i], &d)) TH_LOG("%s", names[i]);
		/* Every proper prefix is "incomplete", never an error. */
		for (k = 0; k < (size_t)v->n; k++) {
			uint8_t *cut = malloc(k ? k : 1);

			memcpy(cut, v->b, k);
			EXPECT_EQ(0, bfp_decode(cut, k, 1, BFP_CTX_ANY, &d,
						&err))
				TH_LOG("%s cut at %zu: %s", names[i], k,
				       err.msg);
			free(cut);
		}
		bfp_msg_free(&d);
	}
	bfp_config_free(&cfg);
}

TEST(golden_configuration_decodes_with_its_list_classes)
{
	struct golden g[64];
	int ng = load_golden(g, 64);
	const struct golden *v = find(g, ng, "configuration");
	struct bfp_msg d = { 0 };
	struct bfp_error err;
	struct bft_buf again = { 0 };

	ASSERT_NE(NULL, v);
	ASSERT_EQ(v->n, bfp_decode(v->b, v->n, 1, BFP_CTX_AGENT_CONTROL, &d,
				   &err)) TH_LOG("%s", err.msg);
	ASSERT_NE(NULL, d.config);
	EXPECT_EQ(0, d.config->run_id);
	EXPECT_EQ(1000, d.config->heartbeat_ms);
	EXPECT_EQ(100, d.config->buffer_budget);
	EXPECT_EQ(5, d.config->queue_retry);
	EXPECT_EQ(1, d.config->data_senders);
	ASSERT_EQ(1, d.config->exclusions.n);
	EXPECT_STREQ(".*", d.config->exclusions.v[0]);
	EXPECT_EQ(0, d.config->inclusions.n);
	EXPECT_EQ(BFP_CLASS_BYTEFROG, d.config->java_class);
	EXPECT_EQ(BFP_LIST_ASLIST, d.config->exclusions.list_class);
	EXPECT_EQ(BFP_LIST_ARRAYLIST, d.config->inclusions.list_class);
	/* What was decoded encodes back to the same bytes. */
	ASSERT_EQ(0, bfp_encode(&again, 1, &d));
	ASSERT_EQ((size_t)v->n, again.len);
	EXPECT_EQ(0, memcmp(v->b, again.data, again.len));
	bft_buf_free(&again);
	bfp_msg_free(&d);
}

/* notes/bytefrog-wire.md §3.1: what Code Pulse's HQ sends (316 bytes). */
static int codepulse_config(uint8_t *b)
{
	const char *name = "com.codedx.codepulse.agent.common.config."
			   "RuntimeAgentConfigurationV1";
	char buf[2048];
	int n;

	n = snprintf(buf, sizeof(buf), "aced0005 73 72 0044");
	for (const char *p = name; *p; p++)
		n += snprintf(buf + n, sizeof(buf) - n, "%02x", *p);
	n += snprintf(buf + n, sizeof(buf) - n, " bf53efb7761d26c2 02 0007");
	static const char *const fields[] = {
		"I bufferMemoryBudget", "I heartbeatInterval",
		"I numDataSenders", "I queueRetryCount", "B runId",
		"L exclusions", "L inclusions",
	};
	for (unsigned int i = 0; i < 7; i++) {
		const char *f = fields[i] + 2;

		n += snprintf(buf + n, sizeof(buf) - n, " %02x %04zx",
			      fields[i][0], strlen(f));
		for (const char *p = f; *p; p++)
			n += snprintf(buf + n, sizeof(buf) - n, "%02x", *p);
		if (i == 5) {
			n += snprintf(buf + n, sizeof(buf) - n, " 74 0010");
			for (const char *p = "Ljava/util/List;"; *p; p++)
				n += snprintf(buf + n, sizeof(buf) - n, "%02x",
					      *p);
		} else if (i == 6) {
			n += snprintf(buf + n, sizeof(buf) - n, " 71 007e0001");
		}
	}
	n += snprintf(buf + n, sizeof(buf) - n,
		      " 78 70 00006400 000003e8 00000001 00000005 00"
		      " 73 72 0013 6a6176612e7574696c2e41727261794c697374"
		      " 7881d21d99c7619d 03 0001 49 0004 73697a65 78 70"
		      " 00000001 77 04 00000001 74 0002 2e2a 78"
		      " 73 71 007e0003 00000000 77 04 00000000 78");
	return hex_parse(buf, b, MAXMSG);
}

TEST(codepulse_configuration_decodes_and_reencodes)
{
	uint8_t b[MAXMSG];
	int n = codepulse_config(b);
	struct bfp_config c, re;
	struct bft_buf out = { 0 };
	char err[160];

	ASSERT_EQ(316, n);
	ASSERT_EQ(0, bfp_config_decode_java(b, n, &c, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(BFP_CLASS_CODEPULSE, c.java_class);
	EXPECT_EQ(25600, c.buffer_budget);
	EXPECT_EQ(1000, c.heartbeat_ms);
	EXPECT_EQ(1, c.data_senders);
	EXPECT_EQ(5, c.queue_retry);
	EXPECT_EQ(0, c.run_id);
	ASSERT_EQ(1, c.exclusions.n);
	EXPECT_STREQ(".*", c.exclusions.v[0]);
	EXPECT_EQ(0, c.inclusions.n);
	ASSERT_EQ(0, bfp_config_encode_java(&c, &out));
	ASSERT_EQ((size_t)n, out.len);
	EXPECT_EQ(0, memcmp(b, out.data, n));
	/* And the same values under the 2014 class name. */
	ASSERT_EQ(0, bfp_config_copy(&re, &c));
	re.java_class = BFP_CLASS_BYTEFROG;
	out.len = 0;
	ASSERT_EQ(0, bfp_config_encode_java(&re, &out));
	bfp_config_free(&re);
	ASSERT_EQ(0, bfp_config_decode_java(out.data, out.len, &re, err,
					    sizeof(err)));
	EXPECT_EQ(BFP_CLASS_BYTEFROG, re.java_class);
	EXPECT_TRUE(config_eq(&c, &re));
	bfp_config_free(&re);
	bfp_config_free(&c);
	bft_buf_free(&out);
}

TEST(v1_configuration_with_many_patterns_round_trips)
{
	struct bfp_config c, d;
	struct bft_buf out = { 0 };
	char err[160], pat[64];
	int i;

	bfp_config_init(&c);
	c.run_id = -3;
	c.data_senders = 4;
	c.exclusions.list_class = BFP_LIST_ASLIST;
	for (i = 0; i < 300; i++) {
		snprintf(pat, sizeof(pat), "^lib%d/[^/]+\xc3\xa9$", i);
		ASSERT_EQ(0, bfp_strlist_add(i % 2 ? &c.inclusions :
					     &c.exclusions, pat));
	}
	ASSERT_EQ(0, bfp_config_encode_java(&c, &out));
	ASSERT_EQ(0, bfp_config_decode_java(out.data, out.len, &d, err,
					    sizeof(err))) TH_LOG("%s", err);
	EXPECT_TRUE(config_eq(&c, &d));
	EXPECT_EQ(-3, d.run_id);
	bfp_config_free(&c);
	bfp_config_free(&d);
	bft_buf_free(&out);
}

TEST(v2_json_configuration_is_what_codepulse_hq_sends)
{
	const char *want = "{\"bufferMemoryBudget\":2,\"exclusions\":[],"
			   "\"heartbeatInterval\":1,\"inclusions\":[],"
			   "\"numDataSenders\":4,\"queueRetryCount\":3,"
			   "\"runId\":1}";
	struct bfp_config c;
	struct bfp_msg m = { .id = BFP_CONFIG, .config = &c }, d = { 0 };
	struct bft_buf out = { 0 };
	struct bfp_error err;
	size_t n = strlen(want);

	bfp_config_init(&c);
	c.buffer_budget = 2;
	c.heartbeat_ms = 1;
	c.data_senders = 4;
	c.queue_retry = 3;
	c.run_id = 1;
	ASSERT_EQ(0, bfp_encode(&out, 2, &m));
	ASSERT_EQ(3 + n, out.len);
	EXPECT_EQ(1, out.data[0]);
	EXPECT_EQ(n, (size_t)(out.data[1] << 8 | out.data[2]));
	EXPECT_EQ(0, memcmp(want, out.data + 3, n));
	ASSERT_EQ((int)out.len, bfp_decode(out.data, out.len, 2,
					   BFP_CTX_AGENT_CONTROL, &d, &err));
	EXPECT_TRUE(config_eq(&c, d.config));
	bfp_msg_free(&d);
	bft_buf_free(&out);
	bfp_config_free(&c);
}

TEST(v2_json_with_patterns_and_negative_run_id)
{
	const char *json = "{\"runId\":-2,\"heartbeatInterval\":250,"
			   "\"numDataSenders\":2,\"bufferMemoryBudget\":4096,"
			   "\"exclusions\":[\".*\"],\"inclusions\":"
			   "[\"^prog!\",\"\\u00e9\"],\"extra\":true}";
	struct bfp_config c;
	char err[160];

	ASSERT_EQ(0, bfp_config_decode_json(json, strlen(json), &c, err,
					    sizeof(err))) TH_LOG("%s", err);
	EXPECT_EQ(-2, c.run_id);
	EXPECT_EQ(250, c.heartbeat_ms);
	EXPECT_EQ(2, c.data_senders);
	EXPECT_EQ(4096, c.buffer_budget);
	EXPECT_EQ(BFP_DEFAULT_QUEUE_RETRY, c.queue_retry);
	ASSERT_EQ(2, c.inclusions.n);
	EXPECT_STREQ("\xc3\xa9", c.inclusions.v[1]);
	bfp_config_free(&c);
}

TEST(v2_json_errors_are_refused)
{
	static const char *const bad[] = {
		"", "{", "[]", "{\"heartbeatInterval\":1}",
		"{\"runId\":1000}", "{\"runId\":\"1\"}",
		"{\"runId\":1,\"exclusions\":[1]}",
		"{\"runId\":1,\"runId\":2}",
		"{\"runId\":1,\"numDataSenders\":1.5}",
	};
	struct bfp_config c;
	char err[160];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EPROTO, bfp_config_decode_json(bad[i],
							  strlen(bad[i]), &c,
							  err, sizeof(err)))
			TH_LOG("accepted %s", bad[i]);
		EXPECT_NE(0, err[0]);
	}
}

TEST(v2_method_exit_carries_the_exception_flag)
{
	/* notes §2.3: MethodExit(t=11, seq=1, m=3, ex=true, thr=7) */
	uint8_t want[16];
	struct bfp_msg m = { .id = BFP_METHOD_EXIT, .time = 11, .seq = 1,
			     .method = 3, .exception_thrown = true,
			     .thread = 7 }, d = { 0 };
	struct bft_buf out = { 0 };
	struct bfp_error err;

	ASSERT_EQ(16, hex_parse("15 0000000b 00000001 00000003 01 0007",
				want, sizeof(want)));
	ASSERT_EQ(0, bfp_encode(&out, 2, &m));
	ASSERT_EQ(16, out.len);
	EXPECT_EQ(0, memcmp(want, out.data, 16));
	ASSERT_EQ(16, bfp_decode(want, 16, 2, BFP_CTX_HQ_DATA, &d, &err));
	EXPECT_TRUE(d.exception_thrown);
	EXPECT_EQ(7, d.thread);
	/* The same bytes read as version 1 are one byte short. */
	EXPECT_EQ(0, bfp_decode(want, 16, 1, BFP_CTX_HQ_DATA, &d, &err));
	bfp_msg_free(&d);
	bft_buf_free(&out);
}

/*
 * MapException, Exception and ExceptionBubble have one layout in both
 * versions (notes §2.3): the Code Pulse HQ reads versions 1 and 2 with the
 * same data parser.  The golden v1 bytes must come out of either, and
 * decode in either, as must the fixed names bfcollector maps.
 */
TEST(exception_messages_are_the_same_in_both_versions)
{
	static const char *const names[] = {
		"map_exception", "exception", "exception_bubble",
	};
	struct golden g[64];
	int ng = load_golden(g, 64);
	struct bfp_msg m[3] = { text_msg(BFP_MAP_EXCEPTION,
					 "std::runtime_error") };
	unsigned int v, i;

	ASSERT_GT(ng, 0);
	m[0].exception = 1;
	m[1] = (struct bfp_msg){ .id = BFP_EXCEPTION, .time = 12, .seq = 2,
				 .method = 3, .exception = 1, .line = 42,
				 .thread = 7 };
	m[2] = (struct bfp_msg){ .id = BFP_EXCEPTION_BUBBLE, .time = 13,
				 .seq = 3, .method = 3, .exception = 1,
				 .thread = 7 };
	for (v = 1; v <= 2; v++) {
		for (i = 0; i < 3; i++) {
			const struct golden *want = find(g, ng, names[i]);
			struct bft_buf out = { 0 };
			struct bfp_msg d = { 0 };
			struct bfp_error err;
			char a[256], b[256];

			ASSERT_NE(NULL, want) TH_LOG("%s", names[i]);
			ASSERT_EQ(0, bfp_encode(&out, v, &m[i]));
			EXPECT_STREQ(hex_format(want->b, (size_t)want->n, a),
				     hex_format(out.data, out.len, b))
				TH_LOG("%s v%u", names[i], v);
			ASSERT_EQ(want->n, bfp_decode(want->b, (size_t)want->n,
						      v, BFP_CTX_HQ_DATA, &d,
						      &err))
				TH_LOG("%s v%u: %s", names[i], v, err.msg);
			EXPECT_EQ(1u, d.exception);
			EXPECT_EQ(m[i].seq, d.seq);
			EXPECT_EQ(i > 0, bfp_id_sequenced(d.id));
			bfp_msg_free(&d);
			bft_buf_free(&out);
		}
	}
}

TEST(collector_fixed_exception_names_map_exactly)
{
	/* forced unwinds: id 0x7fffffff; unknown types: id 0 */
	static const struct { uint32_t id; const char *name, *hex; } c[] = {
		{ 0x7fffffff, "abi::__forced_unwind",
		  "0c 7fffffff 0014 6162693a3a5f5f666f726365645f756e77696e64" },
		{ 0, "unknown exception",
		  "0c 00000000 0011 756e6b6e6f776e20657863657074696f6e" },
	};
	unsigned int v, i;

	for (v = 1; v <= 2; v++)
		for (i = 0; i < 2; i++) {
			struct bfp_msg m = text_msg(BFP_MAP_EXCEPTION,
						    c[i].name);
			struct bft_buf out = { 0 };
			uint8_t want[64];
			char a[160], b[160];
			int n = hex_parse(c[i].hex, want, sizeof(want));

			ASSERT_GT(n, 0);
			m.exception = c[i].id;
			ASSERT_EQ(0, bfp_encode(&out, v, &m));
			EXPECT_STREQ(hex_format(want, (size_t)n, a),
				     hex_format(out.data, out.len, b));
			bft_buf_free(&out);
		}
}

TEST(strings_are_modified_utf8)
{
	/* NUL is C0 80; U+1F600 a surrogate pair of 3+3 bytes (notes §1) */
	const char s[] = "a\0b\xf0\x9f\x98\x80";
	uint8_t want[16];
	struct bft_buf out = { 0 };
	struct bfp_rd r;
	char back[64];
	size_t len;

	ASSERT_EQ(12, hex_parse("000a 61 c080 62 eda0bd edb880", want,
				sizeof(want)));
	ASSERT_EQ(0, bfp_put_utf(&out, s, sizeof(s) - 1, false));
	ASSERT_EQ(12, out.len);
	EXPECT_EQ(0, memcmp(want, out.data, 12));
	bfp_rd_init(&r, out.data, out.len);
	ASSERT_EQ(0, bfp_get_utf(&r, back, &len));
	ASSERT_EQ(sizeof(s) - 1, len);
	EXPECT_EQ(0, memcmp(s, back, len));
	bft_buf_free(&out);
}

/*
 * ASCII is copied eight bytes at a time: a NUL, an invalid byte or a
 * two-byte character at every place around those words, between runs of
 * every length, must still come out one character at a time.
 */
TEST(ascii_runs_end_at_every_special_byte)
{
	static const struct {
		const char *in, *out;
		size_t in_len, out_len;
	} sp[] = {
		{ "\0", "\xc0\x80", 1, 2 },
		{ "\x80", "\xef\xbf\xbd", 1, 3 },
		{ "\xc3\xa9", "\xc3\xa9", 2, 2 },
		{ "\x7f", "\x7f", 1, 1 },
	};
	char in[64], want[80];

	for (size_t k = 0; k < sizeof(sp) / sizeof(sp[0]); k++)
		for (size_t a = 0; a <= 20; a++)
			for (size_t z = 0; z <= 20; z += 3) {
				struct bft_buf out = { 0 };
				size_t n = 0, w = 2;

				memset(in, 'a', a);
				memset(want + w, 'a', a);
				n += a, w += a;
				memcpy(in + n, sp[k].in, sp[k].in_len);
				memcpy(want + w, sp[k].out, sp[k].out_len);
				n += sp[k].in_len, w += sp[k].out_len;
				memset(in + n, 'z', z);
				memset(want + w, 'z', z);
				n += z, w += z;
				want[0] = 0;
				want[1] = (char)(w - 2);
				ASSERT_EQ(0, bfp_put_utf(&out, in, n, false));
				ASSERT_EQ(w, out.len) TH_LOG("%zu %zu %zu", k, a, z);
				EXPECT_EQ(0, memcmp(want, out.data, w))
					TH_LOG("%zu %zu %zu", k, a, z);
				bft_buf_free(&out);
			}
}

TEST(over_long_ascii_is_cut_at_the_limit)
{
	size_t n = 70001;
	char *s = malloc(n);
	struct bft_buf out = { 0 };

	ASSERT_NE(NULL, s);
	memset(s, 'x', n);
	ASSERT_EQ(-EMSGSIZE, bfp_put_utf(&out, s, n, false));
	ASSERT_EQ(0, bfp_put_utf(&out, s, n, true));
	ASSERT_EQ(2 + 65535, out.len);
	EXPECT_EQ(0xff, out.data[0]);
	EXPECT_EQ(0xff, out.data[1]);
	EXPECT_EQ('x', out.data[out.len - 1]);
	bft_buf_free(&out);
	free(s);
}

/* Not the 64 KiB a string may take: every short name made it 128 KiB. */
TEST(a_short_string_takes_a_small_buffer)
{
	struct bft_buf out = { 0 };
	char bad[100];

	memset(bad, 0xff, sizeof(bad));
	ASSERT_EQ(0, bfp_put_utf(&out, "main", 4, false));
	EXPECT_GE(1024, out.cap);
	/* the most a byte can take: an invalid one becomes U+FFFD, 3 bytes */
	ASSERT_EQ(0, bfp_put_utf(&out, bad, sizeof(bad), false));
	EXPECT_EQ(2 + 4 + 2 + 3 * sizeof(bad), out.len);
	EXPECT_GE(1024, out.cap);
	bft_buf_free(&out);
}

/* Decoding too: a short message's strings need no 64 KiB each. */
TEST(a_short_message_decodes_into_a_small_store)
{
	struct bfp_msg m = text_msg(BFP_MAP_METHOD, "prog!foo");
	struct bfp_msg d = { 0 };
	struct bft_buf out = { 0 };
	struct bfp_error err;

	ASSERT_EQ(0, bfp_encode(&out, 1, &m));
	ASSERT_EQ((int)out.len, bfp_decode(out.data, out.len, 1,
					   BFP_CTX_HQ_DATA, &d, &err));
	EXPECT_STREQ("prog!foo", d.str);
	EXPECT_GE(1024, d.store.cap);
	bfp_msg_free(&d);
	bft_buf_free(&out);
}

TEST(four_byte_utf8_on_the_wire_is_refused)
{
	/* readUTF rejects standard UTF-8's 4-byte form. */
	uint8_t b[16];
	struct bfp_msg d = { 0 };
	struct bfp_error err;
	int n = hex_parse("63 0004 f09f9880", b, sizeof(b));

	EXPECT_EQ(-EILSEQ, bfp_decode(b, n, 1, BFP_CTX_ANY, &d, &err));
	bfp_msg_free(&d);
}

TEST(invalid_utf8_names_are_sent_as_replacement_characters)
{
	struct bfp_msg m = text_msg(BFP_CLASS_TRANSFORMED, "a\xff");
	struct bfp_msg d = { 0 };
	struct bft_buf out = { 0 };
	struct bfp_error err;

	ASSERT_EQ(0, bfp_encode(&out, 1, &m));
	ASSERT_EQ((int)out.len, bfp_decode(out.data, out.len, 1,
					   BFP_CTX_HQ_CONTROL, &d, &err));
	EXPECT_STREQ("a\xef\xbf\xbd", d.str);
	bfp_msg_free(&d);
	bft_buf_free(&out);
}

TEST(over_long_names_are_truncated_at_a_character)
{
	size_t n = 70000;
	char *s = malloc(n + 1);
	struct bfp_msg m = { .id = BFP_MAP_METHOD, .method = 1 }, d = { 0 };
	struct bft_buf out = { 0 };
	struct bfp_error err;

	/* 3-byte characters: 65535 is a multiple of 3, so it fits exactly */
	for (size_t i = 0; i + 3 <= n; i += 3)
		memcpy(s + i, "\xe2\x82\xac", 3);
	n -= n % 3;
	s[n] = 0;
	m.str = s;
	m.str_len = n;
	ASSERT_EQ(0, bfp_encode(&out, 1, &m));
	EXPECT_EQ(1 + 4 + 2 + 65535, out.len);
	ASSERT_EQ((int)out.len, bfp_decode(out.data, out.len, 1,
					   BFP_CTX_HQ_DATA, &d, &err));
	EXPECT_EQ(65535, d.str_len);
	bfp_msg_free(&d);
	bft_buf_free(&out);
	free(s);
}

TEST(unknown_and_misplaced_ids_are_errors)
{
	static const uint8_t unknown[] = { 13 }, project_hello[] = { 16, 4 };
	static const uint8_t entry[] = { 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					 0, 0, 0 };
	struct bfp_msg d = { 0 };
	struct bfp_error err;

	EXPECT_EQ(-EPROTO, bfp_decode(unknown, 1, 1, BFP_CTX_ANY, &d, &err));
	EXPECT_NE(NULL, strstr(err.msg, "unknown message id 13"));
	EXPECT_EQ(-EPROTO, bfp_decode(project_hello, 2, 1, BFP_CTX_HQ_GREETING,
				      &d, &err));
	EXPECT_EQ(-EPROTO, bfp_decode(entry, sizeof(entry), 1,
				      BFP_CTX_HQ_CONTROL, &d, &err));
	EXPECT_EQ(15, bfp_decode(entry, sizeof(entry), 1, BFP_CTX_HQ_DATA, &d,
				 &err));
	/* A data break is a control message: fatal on a data socket. */
	EXPECT_EQ(-EPROTO, bfp_decode((const uint8_t *)"\x09\0\0\0\1", 5, 1,
				      BFP_CTX_HQ_DATA, &d, &err));
	EXPECT_EQ(-EPROTO, bfp_decode((const uint8_t *)"\x08Q\0\0", 4, 1,
				      BFP_CTX_HQ_CONTROL, &d, &err));
	EXPECT_EQ(-EPROTO, bfp_decode(entry, sizeof(entry), 3, BFP_CTX_ANY, &d,
				      &err));
	bfp_msg_free(&d);
}

TEST(configuration_lengths_are_checked)
{
	struct golden g[64];
	int ng = load_golden(g, 64);
	const struct golden *v = find(g, ng, "configuration");
	struct bfp_msg d = { 0 };
	struct bfp_error err;
	uint8_t b[MAXMSG];
	int cut;

	ASSERT_NE(NULL, v);
	/* negative and zero lengths */
	EXPECT_EQ(-EPROTO, bfp_decode((const uint8_t *)"\x01\xff\xff\xff\xff",
				      5, 1, BFP_CTX_AGENT_CONTROL, &d, &err));
	EXPECT_EQ(-EPROTO, bfp_decode((const uint8_t *)"\x01\0\0\0\0", 5, 1,
				      BFP_CTX_AGENT_CONTROL, &d, &err));
	/* A length that ends the stream early: each cut is a clean error. */
	for (cut = 1; cut < v->n - 5; cut++) {
		memcpy(b, v->b, v->n);
		b[1] = cut >> 24, b[2] = cut >> 16, b[3] = cut >> 8, b[4] = cut;
		EXPECT_EQ(-EPROTO, bfp_decode(b, cut + 5, 1,
					      BFP_CTX_AGENT_CONTROL, &d, &err))
			TH_LOG("cut %d", cut);
	}
	bfp_msg_free(&d);
}

TEST(corrupted_configurations_never_crash)
{
	struct golden g[64];
	int ng = load_golden(g, 64), i, rounds = test_scale(20000);
	const struct golden *v = find(g, ng, "configuration");
	struct bfp_msg d = { 0 };
	struct bfp_error err;
	uint64_t rng = 42;
	uint8_t b[MAXMSG];
	int ok = 0, bad = 0;

	ASSERT_NE(NULL, v);
	for (i = 0; i < rounds; i++) {
		int flips = 1 + (int)rng_below(&rng, 3), k, r;

		memcpy(b, v->b, v->n);
		for (k = 0; k < flips; k++)
			b[5 + rng_below(&rng, v->n - 5)] ^=
				(uint8_t)(1 + rng_below(&rng, 255));
		r = bfp_decode(b, v->n, 1, BFP_CTX_AGENT_CONTROL, &d, &err);
		EXPECT_TRUE(r == v->n || r == -EPROTO) TH_LOG("r=%d", r);
		if (r == v->n)
			ok++;
		else
			bad++;
	}
	EXPECT_GT(bad, 0);
	bfp_msg_free(&d);
}

TEST(messages_decode_one_after_another)
{
	struct golden g[64];
	int ng = load_golden(g, 64), i;
	struct bft_buf all = { 0 };
	struct bfp_msg d = { 0 };
	struct bfp_error err;
	size_t pos = 0;
	int count = 0;

	for (i = 0; i < ng; i++)
		ASSERT_EQ(0, bft_buf_append(&all, g[i].b, g[i].n));
	while (pos < all.len) {
		int r = bfp_decode(all.data + pos, all.len - pos, 1,
				   BFP_CTX_ANY, &d, &err);

		ASSERT_GT(r, 0) TH_LOG("at %zu: %s", pos, err.msg);
		ASSERT_EQ(g[count].n, r);
		pos += r;
		count++;
	}
	EXPECT_EQ(ng, count);
	bfp_msg_free(&d);
	bft_buf_free(&all);
}

TEST_HARNESS_MAIN
