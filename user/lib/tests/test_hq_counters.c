// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq --counters without sockets: the agent's bytes (golden, as
 * test_counters_wire.c spells them) fed to the inspector, its JSON lines
 * and its table checked, its requests checked as bytes; what no agent may
 * send is refused with a reason.
 */
#include <errno.h>
#include <jansson.h>

#include "kselftest_harness.h"

#include "bft_test.h"
#include "inspector.h"

#define RSS_HEADER "12000000 03000000 525353 01000000 01000000 03000000 0000"
#define HELLO "00 0100 0100 " RSS_HEADER
/* "prog!f calls" (Method), long, events, monotonic, index 5 */
#define ADD_OK "02 00 10000000 0c000000 70726f672166206361 6c6c73" \
	       " 01000000 03000000 02000000 0500"
#define TS "0080b5f7f57f9f08"

struct out {
	char *buf;
	size_t len;
	FILE *f;
	struct insp s;
};

static void open_out(struct out *o, bool json)
{
	o->buf = NULL;
	o->len = 0;
	o->f = open_memstream(&o->buf, &o->len);
	insp_init(&o->s, o->f, json, false);
}

static void close_out(struct out *o)
{
	insp_free(&o->s);
	fclose(o->f);
	free(o->buf);
}

static int feed_hex(struct insp *s, const char *hex)
{
	uint8_t b[512];
	int n = hex_parse(hex, b, sizeof(b));

	return n < 0 ? -EINVAL : insp_feed(s, b, (size_t)n);
}

/* The JSON line number i (0 ...) of the output. */
static json_t *line(struct out *o, int i)
{
	char *p = o->buf, *nl;

	fflush(o->f);
	while (p && i-- > 0)
		p = (nl = strchr(p, '\n')) ? nl + 1 : NULL;
	if (!p || !*p)
		return NULL;
	nl = strchr(p, '\n');
	return json_loadb(p, nl ? (size_t)(nl - p) : strlen(p), 0, NULL);
}

TEST(json_lines_of_hello_add_sample_remove)
{
	struct out o;
	json_t *j;

	open_out(&o, true);
	ASSERT_EQ(0, feed_hex(&o.s, HELLO));
	ASSERT_EQ(0, feed_hex(&o.s, ADD_OK));
	/* RSS = 4096; calls = 600; a value for index 9, never described */
	ASSERT_EQ(0, feed_hex(&o.s, "04 " TS " 0000 0800 0010000000000000"
			      " 0500 0800 5802000000000000"
			      " 0900 0400 01000000 ffff"));
	EXPECT_EQ(1u, o.s.bad_values);
	ASSERT_EQ(0, insp_remove(&o.s, 5));
	ASSERT_EQ(0, feed_hex(&o.s, "03 00"));
	ASSERT_EQ(0, feed_hex(&o.s, "04 " TS " 0500 0800 5802000000000000 "
			      "ffff"));

	j = line(&o, 0);
	ASSERT_NE(NULL, j);
	EXPECT_STREQ("hello", json_string_value(json_object_get(j, "event")));
	EXPECT_STREQ("RSS", json_string_value(json_object_get(
		json_array_get(json_object_get(j, "counters"), 0), "name")));
	json_decref(j);
	j = line(&o, 1);
	EXPECT_STREQ("OK", json_string_value(json_object_get(j, "status")));
	EXPECT_EQ(5, json_integer_value(json_object_get(
		json_object_get(j, "counter"), "index")));
	json_decref(j);
	j = line(&o, 2);
	EXPECT_STREQ("sample", json_string_value(json_object_get(j, "event")));
	EXPECT_EQ(4096, json_integer_value(json_object_get(
		json_object_get(j, "values"), "Collector:RSS")));
	EXPECT_EQ(600, json_integer_value(json_object_get(
		json_object_get(j, "values"), "Method:prog!f calls")));
	EXPECT_EQ(0, (int)json_number_value(json_object_get(j, "time")));
	json_decref(j);
	j = line(&o, 3);
	EXPECT_STREQ("remove", json_string_value(json_object_get(j, "event")));
	EXPECT_EQ(5, json_integer_value(json_object_get(j, "index")));
	json_decref(j);
	/* after the remove, index 5 is nobody's: left out, counted; the
	 * values are every counter's latest, RSS's from the sample before */
	j = line(&o, 4);
	EXPECT_EQ(1u, json_object_size(json_object_get(j, "values")));
	EXPECT_EQ(4096, json_integer_value(json_object_get(
		json_object_get(j, "values"), "Collector:RSS")));
	EXPECT_EQ(NULL, json_object_get(json_object_get(j, "values"),
					"Method:prog!f calls"));
	EXPECT_EQ(1, json_integer_value(json_object_get(j, "carried")));
	json_decref(j);
	EXPECT_EQ(2u, o.s.bad_values);
	close_out(&o);
}

/* BFC_CHANGES: asked for in bytes, and a sample without a counter's
 * value leaves that counter's last value standing */
TEST(changes_only_samples_keep_the_last_values)
{
	struct out o;
	json_t *j;

	open_out(&o, true);
	ASSERT_EQ(0, insp_changes(&o.s, true));
	ASSERT_EQ(2u, o.s.out_buf.len);
	EXPECT_EQ(BFC_CHANGES, o.s.out_buf.data[0]);
	EXPECT_EQ(1, o.s.out_buf.data[1]);
	ASSERT_EQ(0, insp_command(&o.s, "changes off"));
	ASSERT_EQ(4u, o.s.out_buf.len);
	EXPECT_EQ(0, o.s.out_buf.data[3]);
	EXPECT_EQ(-EINVAL, insp_command(&o.s, "changes maybe"));
	ASSERT_EQ(0, feed_hex(&o.s, HELLO));
	ASSERT_EQ(0, feed_hex(&o.s, ADD_OK));
	ASSERT_EQ(0, feed_hex(&o.s, "05 00"));
	ASSERT_EQ(0, feed_hex(&o.s, "04 " TS " 0000 0800 0010000000000000"
			      " 0500 0800 5802000000000000 ffff"));
	/* only calls changed, then nothing did */
	ASSERT_EQ(0, feed_hex(&o.s, "04 " TS " 0500 0800 5902000000000000"
			      " ffff"));
	ASSERT_EQ(0, feed_hex(&o.s, "04 " TS " ffff"));
	EXPECT_EQ(0u, o.s.bad_values);

	j = line(&o, 2);
	EXPECT_STREQ("changes", json_string_value(json_object_get(j, "event")));
	EXPECT_STREQ("OK", json_string_value(json_object_get(j, "status")));
	json_decref(j);
	for (int i = 4; i <= 5; i++) {
		j = line(&o, i);
		ASSERT_NE(NULL, j);
		EXPECT_EQ(4096, json_integer_value(json_object_get(
			json_object_get(j, "values"), "Collector:RSS")));
		EXPECT_EQ(601, json_integer_value(json_object_get(
			json_object_get(j, "values"), "Method:prog!f calls")));
		EXPECT_EQ(5 - i, json_integer_value(json_object_get(j,
								"carried")));
		json_decref(j);
	}
	close_out(&o);
}

TEST(table_and_list)
{
	struct out o;

	open_out(&o, false);
	ASSERT_EQ(0, feed_hex(&o.s, HELLO));
	ASSERT_EQ(0, feed_hex(&o.s, "04 " TS " 0000 0800 0010000000000000 "
			      "ffff"));
	ASSERT_EQ(0, feed_hex(&o.s, "01 03000000 525353 09000000 "
			      "436f6c6c6563746f72 ffffffff"));
	fflush(o.f);
	EXPECT_NE(NULL, strstr(o.buf, "agent: protocol version 1, 1 counters"));
	EXPECT_NE(NULL, strstr(o.buf, "sample 1 at 00:00:00 UTC"));
	EXPECT_NE(NULL, strstr(o.buf, "Collector"));
	EXPECT_NE(NULL, strstr(o.buf, "4096  bytes"));
	EXPECT_NE(NULL, strstr(o.buf, "Collector  RSS\n"));
	EXPECT_EQ(1u, o.s.lists);
	close_out(&o);
}

/* --output: the table on stdout, the JSON lines in the record */
TEST(the_table_and_a_record_of_json_lines)
{
	struct out o, rec;
	json_t *j;

	open_out(&o, false);
	open_out(&rec, true);
	o.s.record = rec.f;
	ASSERT_EQ(0, feed_hex(&o.s, HELLO));
	ASSERT_EQ(0, feed_hex(&o.s, "04 " TS " 0000 0800 0010000000000000 "
			      "ffff"));
	fflush(o.f);
	EXPECT_NE(NULL, strstr(o.buf, "4096  bytes"));
	EXPECT_EQ(NULL, strchr(o.buf, '{'));
	j = line(&rec, 0);
	EXPECT_STREQ("hello", json_string_value(json_object_get(j, "event")));
	json_decref(j);
	j = line(&rec, 1);
	EXPECT_EQ(4096, json_integer_value(json_object_get(
		json_object_get(j, "values"), "Collector:RSS")));
	json_decref(j);
	EXPECT_EQ(NULL, line(&rec, 2));
	close_out(&o);
	rec.s.record = NULL;
	close_out(&rec);
}

TEST(requests_are_the_seed_bytes)
{
	struct out o;
	char hex[200];

	open_out(&o, true);
	ASSERT_EQ(0, insp_command(&o.s, "list"));
	ASSERT_EQ(0, insp_command(&o.s, "add Collector:RSS"));
	ASSERT_EQ(0, insp_command(&o.s, "remove -1"));
	ASSERT_EQ(0, insp_command(&o.s, "bye"));
	EXPECT_EQ(-EINVAL, insp_command(&o.s, "add RSS"));
	EXPECT_EQ(-EINVAL, insp_command(&o.s, "remove x"));
	EXPECT_EQ(-EINVAL, insp_command(&o.s, "frobnicate"));
	EXPECT_STREQ("01" "0203000000525353" "09000000436f6c6c6563746f72"
		     "03ffff" "7f",
		     hex_format(o.s.out_buf.data, o.s.out_buf.len, hex));
	close_out(&o);
}

TEST(what_no_agent_may_send)
{
	static const char *const bad[] = {
		"04 " TS " ffff",		/* a sample before Hello */
		HELLO " " HELLO,		/* a second Hello */
		HELLO " 7f",			/* Good Bye is ours */
		HELLO " 02 07",			/* no such status */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct out o;

		open_out(&o, true);
		EXPECT_EQ(-EPROTO, feed_hex(&o.s, bad[i])) TH_LOG("case %zu", i);
		EXPECT_NE(0, o.s.err[0]);
		close_out(&o);
	}
}

TEST(a_message_in_pieces)
{
	struct out o;
	uint8_t b[128];
	int n = hex_parse(HELLO, b, sizeof(b));

	open_out(&o, true);
	for (int i = 0; i < n; i++)
		ASSERT_EQ(0, insp_feed(&o.s, b + i, 1));
	EXPECT_TRUE(o.s.hello);
	close_out(&o);
}

TEST_HARNESS_MAIN
