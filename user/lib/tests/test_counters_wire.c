// SPDX-License-Identifier: GPL-2.0
/*
 * The counters protocol (seed 003, notes/counters-wire.md): golden bytes
 * of every command both ways and of every value type, and a decoder that
 * refuses what is malformed and waits for what is incomplete.
 */
#include <errno.h>

#include "kselftest_harness.h"

#include "wire/bfc_wire.h"
#include "bft_test.h"

/* Encode m, compare with hex, decode hex, encode that again: same bytes. */
static void golden(struct __test_metadata *_metadata, enum bfc_dir dir,
		   const struct bfc_msg *m, const char *hex, struct bfc_msg *out)
{
	uint8_t want[512];
	char got_hex[1100], want_hex[1100];
	struct bft_buf b = { 0 }, again = { 0 };
	char err[128];
	int n = hex_parse(hex, want, sizeof(want));

	ASSERT_GT(n, 0);
	ASSERT_EQ(0, bfc_encode(&b, dir, m));
	EXPECT_STREQ(hex_format(want, (size_t)n, want_hex),
		     hex_format(b.data, b.len, got_hex));
	ASSERT_EQ(n, bfc_decode(want, (size_t)n, dir, out, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_EQ(0, bfc_encode(&again, dir, out));
	EXPECT_EQ(b.len, again.len);
	EXPECT_EQ(0, memcmp(b.data, again.data, b.len));
	/* every strict prefix is "need more", never an error */
	for (int i = 0; i < n; i++) {
		struct bfc_msg p;

		ASSERT_EQ(0, bfc_decode(want, (size_t)i, dir, &p, err,
					sizeof(err))) TH_LOG("prefix %d", i);
	}
	bft_buf_free(&b);
	bft_buf_free(&again);
}

#define RSS_HEADER "12000000 03000000 727373 01000000 01000000 03000000 0700"

static struct bfc_header rss = {
	.category = BFC_CAT_COLLECTOR, .name = "rss", .type = BFC_TYPE_LONG,
	.unit = BFC_UNIT_BYTES, .variance = BFC_VAR_VARIABLE, .index = 7,
};

TEST(hello_carries_version_and_headers)
{
	struct bfc_header h[2] = { rss, {
		.category = BFC_CAT_KERNEL, .name = "mode",
		.type = BFC_TYPE_INT, .unit = BFC_UNIT_CONFIG,
		.variance = BFC_VAR_VARIABLE, .index = 0x102 } };
	struct bfc_msg m = { .cmd = BFC_HELLO, .version = BFC_VERSION,
			     .headers = h, .nheaders = 2 }, d;

	golden(_metadata, BFC_TO_INSPECTOR, &m,
	       "00 0100 0200 " RSS_HEADER
	       " 13000000 04000000 6d6f6465 00000000 04000000 03000000 0201",
	       &d);
	EXPECT_EQ(1, d.version);
	ASSERT_EQ(2u, d.nheaders);
	EXPECT_STREQ("rss", d.headers[0].name);
	EXPECT_EQ(BFC_CAT_COLLECTOR, d.headers[0].category);
	EXPECT_EQ(BFC_TYPE_LONG, d.headers[0].type);
	EXPECT_EQ(BFC_UNIT_BYTES, d.headers[0].unit);
	EXPECT_EQ(BFC_VAR_VARIABLE, d.headers[0].variance);
	EXPECT_EQ(7, d.headers[0].index);
	EXPECT_EQ(0x102, d.headers[1].index);
	bfc_msg_free(&d);
}

TEST(hello_without_headers)
{
	struct bfc_msg m = { .cmd = BFC_HELLO, .version = 1 }, d;

	golden(_metadata, BFC_TO_INSPECTOR, &m, "00 0100 0000", &d);
	EXPECT_EQ(0u, d.nheaders);
	bfc_msg_free(&d);
}

TEST(list_request_and_response)
{
	struct bfc_counter c[2] = { { "calls main", "Method" },
				    { "rss", "Collector" } };
	struct bfc_msg req = { .cmd = BFC_LIST }, resp = {
		.cmd = BFC_LIST, .counters = c, .ncounters = 2 }, d;

	golden(_metadata, BFC_TO_AGENT, &req, "01", &d);
	EXPECT_EQ(BFC_LIST, d.cmd);
	bfc_msg_free(&d);
	/* name then category, ended by one null string */
	golden(_metadata, BFC_TO_INSPECTOR, &resp,
	       "01 0a000000 63616c6c73206d61696e 06000000 4d6574686f64"
	       " 03000000 727373 09000000 436f6c6c6563746f72 ffffffff", &d);
	ASSERT_EQ(2u, d.ncounters);
	EXPECT_STREQ("calls main", d.counters[0].name);
	EXPECT_STREQ("Method", d.counters[0].category);
	EXPECT_STREQ("Collector", d.counters[1].category);
	bfc_msg_free(&d);
	resp.ncounters = 0;
	golden(_metadata, BFC_TO_INSPECTOR, &resp, "01 ffffffff", &d);
	EXPECT_EQ(0u, d.ncounters);
	bfc_msg_free(&d);
}

TEST(add_request_and_every_status)
{
	struct bfc_msg req = { .cmd = BFC_ADD, .name = "rss",
			       .category = "Collector" }, d;
	struct bfc_msg ok = { .cmd = BFC_ADD, .status = BFC_OK,
			      .headers = &rss, .nheaders = 1 };
	static const char *const others[] = { NULL, "02 01", "02 02", "02 03" };

	golden(_metadata, BFC_TO_AGENT, &req,
	       "02 03000000 727373 09000000 436f6c6c6563746f72", &d);
	EXPECT_STREQ("rss", d.name);
	EXPECT_STREQ("Collector", d.category);
	bfc_msg_free(&d);
	req.category = NULL;	/* a null string is a valid one */
	golden(_metadata, BFC_TO_AGENT, &req, "02 03000000 727373 ffffffff",
	       &d);
	EXPECT_EQ(NULL, d.category);
	bfc_msg_free(&d);
	golden(_metadata, BFC_TO_INSPECTOR, &ok, "02 00 " RSS_HEADER, &d);
	ASSERT_EQ(1u, d.nheaders);
	EXPECT_STREQ("rss", d.headers[0].name);
	bfc_msg_free(&d);
	/* NOK, NOTFOUND, EXISTING: no header follows */
	for (uint8_t s = BFC_NOK; s <= BFC_EXISTING; s++) {
		struct bfc_msg r = { .cmd = BFC_ADD, .status = s };

		golden(_metadata, BFC_TO_INSPECTOR, &r, others[s], &d);
		EXPECT_EQ(s, d.status);
		EXPECT_EQ(0u, d.nheaders);
		bfc_msg_free(&d);
	}
}

TEST(remove_request_and_response)
{
	struct bfc_msg req = { .cmd = BFC_REMOVE, .index = 0x1234 }, d;
	struct bfc_msg resp = { .cmd = BFC_REMOVE, .status = BFC_NOTFOUND };

	golden(_metadata, BFC_TO_AGENT, &req, "03 3412", &d);
	EXPECT_EQ(0x1234, d.index);
	bfc_msg_free(&d);
	req.index = -1;		/* every counter */
	golden(_metadata, BFC_TO_AGENT, &req, "03 ffff", &d);
	EXPECT_EQ(-1, d.index);
	bfc_msg_free(&d);
	golden(_metadata, BFC_TO_INSPECTOR, &resp, "03 02", &d);
	EXPECT_EQ(BFC_NOTFOUND, d.status);
	bfc_msg_free(&d);
	resp.status = BFC_OK;
	golden(_metadata, BFC_TO_INSPECTOR, &resp, "03 00", &d);
	bfc_msg_free(&d);
}

/* bftrace's extension: a Sample with the changed values only */
TEST(changes_request_and_response)
{
	struct bfc_msg req = { .cmd = BFC_CHANGES, .changes = 1 }, d;
	struct bfc_msg resp = { .cmd = BFC_CHANGES, .status = BFC_OK };
	struct bft_buf b = { 0 };

	golden(_metadata, BFC_TO_AGENT, &req, "05 01", &d);
	EXPECT_EQ(1, d.changes);
	bfc_msg_free(&d);
	req.changes = 0;
	golden(_metadata, BFC_TO_AGENT, &req, "05 00", &d);
	EXPECT_EQ(0, d.changes);
	bfc_msg_free(&d);
	golden(_metadata, BFC_TO_INSPECTOR, &resp, "05 00", &d);
	EXPECT_EQ(BFC_OK, d.status);
	bfc_msg_free(&d);
	req.changes = 2;
	EXPECT_EQ(-EINVAL, bfc_encode(&b, BFC_TO_AGENT, &req));
	EXPECT_EQ(0u, b.len);
	bft_buf_free(&b);
}

TEST(sample_of_every_type)
{
	uint8_t i32[8], i64[8], word[8], dbl[8];
	struct bfc_value v[4] = {
		{ 0, (uint16_t)bfc_value_put(BFC_TYPE_INT, -2, 0, i32), i32 },
		{ 1, (uint16_t)bfc_value_put(BFC_TYPE_LONG, 0x0102030405060708,
					     0, i64), i64 },
		{ 2, (uint16_t)bfc_value_put(BFC_TYPE_WORD, 300, 0, word), word },
		{ 0x100, (uint16_t)bfc_value_put(BFC_TYPE_DOUBLE, 0, 1.5, dbl),
		  dbl },
	};
	struct bfc_msg m = { .cmd = BFC_SAMPLE,
			     .timestamp = bfc_ticks_from_unix_ns(0),
			     .values = v, .nvalues = 4 }, d;
	static const int32_t types[] = { BFC_TYPE_INT, BFC_TYPE_LONG,
					 BFC_TYPE_WORD, BFC_TYPE_DOUBLE };
	static const double want[] = { -2, 72623859790382856.0, 300, 1.5 };

	golden(_metadata, BFC_TO_INSPECTOR, &m,
	       "04 0080b5f7f57f9f08"
	       " 0000 0400 feffffff"
	       " 0100 0800 0807060504030201"
	       " 0200 0800 2c01000000000000"
	       " 0001 0800 000000000000f83f"
	       " ffff", &d);
	EXPECT_EQ(621355968000000000ll, d.timestamp);
	EXPECT_EQ(0, bfc_ticks_to_unix_ns(d.timestamp));
	ASSERT_EQ(4u, d.nvalues);
	for (int i = 0; i < 4; i++) {
		double x;
		int64_t ix;

		ASSERT_TRUE(bfc_value_get(types[i], d.values[i].data,
					  d.values[i].size, &x, &ix));
		EXPECT_EQ(want[i], x);
	}
	/* a value whose size is not its type's */
	EXPECT_FALSE(bfc_value_get(BFC_TYPE_LONG, i32, 4, &(double){ 0 },
				   &(int64_t){ 0 }));
	bfc_msg_free(&d);
	m.nvalues = 0;
	golden(_metadata, BFC_TO_INSPECTOR, &m, "04 0080b5f7f57f9f08 ffff", &d);
	bfc_msg_free(&d);
}

TEST(good_bye)
{
	struct bfc_msg m = { .cmd = BFC_BYE }, d;

	golden(_metadata, BFC_TO_AGENT, &m, "7f", &d);
	EXPECT_EQ(BFC_BYE, d.cmd);
	bfc_msg_free(&d);
}

/* Bytes that no peer may send: each is -EPROTO with a reason. */
TEST(malformed_input_is_refused_with_a_reason)
{
	static const struct {
		enum bfc_dir dir;
		const char *hex, *why;
	} bad[] = {
		{ BFC_TO_AGENT, "06", "unknown request" },
		{ BFC_TO_AGENT, "05 02", "neither 0 nor 1" },
		{ BFC_TO_INSPECTOR, "05 04", "changes: status" },
		{ BFC_TO_AGENT, "00", "unknown request" },	/* hello */
		{ BFC_TO_AGENT, "04", "unknown request" },	/* sample */
		{ BFC_TO_INSPECTOR, "7f", "unknown message" },
		{ BFC_TO_AGENT, "02 feffffff", "string length" },
		{ BFC_TO_AGENT, "02 01100000", "string length" },
		{ BFC_TO_AGENT, "02 02000000 6100", "NUL" },
		{ BFC_TO_AGENT, "03 feff", "remove: index" },
		{ BFC_TO_INSPECTOR, "00 0100 ffff", "headers" },
		{ BFC_TO_INSPECTOR, "00 0100 0100 12000000 ffffffff",
		  "null string" },
		{ BFC_TO_INSPECTOR,
		  "00 0100 0100 12000000 01000000 61 09000000", "unknown type" },
		{ BFC_TO_INSPECTOR,
		  "00 0100 0100 12000000 01000000 61 00000000 00000000"
		  " 01000000 ffff", "negative index" },
		{ BFC_TO_INSPECTOR, "01 01000000 61 ffffffff", "null string" },
		{ BFC_TO_INSPECTOR, "02 04", "add: status" },
		{ BFC_TO_INSPECTOR, "03 09", "remove: status" },
		{ BFC_TO_INSPECTOR, "04 0000000000000000 feff", "value index" },
		{ BFC_TO_INSPECTOR, "04 0000000000000000 0000 ffff",
		  "value size" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t buf[64];
		char err[128];
		struct bfc_msg m;
		int n = hex_parse(bad[i].hex, buf, sizeof(buf));

		ASSERT_GT(n, 0);
		EXPECT_EQ(-EPROTO, bfc_decode(buf, (size_t)n, bad[i].dir, &m,
					      err, sizeof(err)))
			TH_LOG("case %zu: %s", i, bad[i].hex);
		EXPECT_NE(NULL, strstr(err, bad[i].why))
			TH_LOG("case %zu: \"%s\"", i, err);
		EXPECT_EQ(0u, m.nheaders + m.ncounters + m.nvalues);
	}
}

/* A connection's bytes: messages one after the other, any split. */
TEST(messages_follow_one_another)
{
	uint8_t buf[64];
	int n = hex_parse("01 03 ffff 02 01000000 61 ffffffff 7f", buf,
			  sizeof(buf));
	static const uint8_t cmds[] = { BFC_LIST, BFC_REMOVE, BFC_ADD,
					BFC_BYE };
	size_t off = 0;

	for (int i = 0; i < 4; i++) {
		struct bfc_msg m;
		int r = bfc_decode(buf + off, (size_t)n - off, BFC_TO_AGENT,
				   &m, NULL, 0);

		ASSERT_GT(r, 0);
		EXPECT_EQ(cmds[i], m.cmd);
		off += (size_t)r;
		bfc_msg_free(&m);
	}
	EXPECT_EQ((size_t)n, off);
}

/* What cannot be said on the wire is refused, and nothing is appended. */
TEST(unencodable_messages_are_refused_whole)
{
	struct bft_buf b = { 0 };
	struct bfc_header noname = { .type = BFC_TYPE_INT };
	struct bfc_msg hello = { .cmd = BFC_HELLO, .headers = &noname,
				 .nheaders = 1 };
	struct bfc_msg add_ok = { .cmd = BFC_ADD, .status = BFC_OK };
	struct bfc_msg bye = { .cmd = BFC_BYE };

	EXPECT_EQ(-EINVAL, bfc_encode(&b, BFC_TO_INSPECTOR, &hello));
	EXPECT_EQ(-EINVAL, bfc_encode(&b, BFC_TO_INSPECTOR, &add_ok));
	EXPECT_EQ(-EINVAL, bfc_encode(&b, BFC_TO_INSPECTOR, &bye));
	EXPECT_EQ(0u, b.len);
	bft_buf_free(&b);
}

TEST(names_of_the_numbers)
{
	EXPECT_STREQ("Method", bfc_category_name(BFC_CAT_METHOD));
	EXPECT_EQ(BFC_CAT_KERNEL, bfc_category_id("Kernel"));
	EXPECT_EQ(-1, bfc_category_id("JIT"));
	EXPECT_EQ(NULL, bfc_category_name(0));
	EXPECT_STREQ("double", bfc_type_name(BFC_TYPE_DOUBLE));
	EXPECT_STREQ("percent", bfc_unit_name(BFC_UNIT_PERCENTAGE));
	EXPECT_STREQ("monotonic", bfc_variance_name(BFC_VAR_MONOTONIC));
	EXPECT_STREQ("EXISTING", bfc_status_name(BFC_EXISTING));
}

TEST_HARNESS_MAIN
