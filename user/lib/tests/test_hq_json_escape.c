// SPDX-License-Identifier: GPL-2.0
/*
 * Names as bfhq's hand-written JSON holds them (hq_json_string(), used by
 * trace.speedscope.json): the exact escaped bytes, and a JSON parser
 * (jansson) reading back the very name, or U+FFFD for bytes that are not
 * UTF-8.
 */
#include <string.h>

#include <jansson.h>

#include "kselftest_harness.h"

#include "escape.h"

/* s's JSON string, NUL-ended, in b */
static const char *escaped(struct bft_buf *b, const char *s)
{
	b->len = 0;
	hq_json_string(b, s);
	bft_buf_append(b, "", 1);
	return (const char *)b->data;
}

TEST(quotes_backslashes_and_control_bytes_are_escaped)
{
	struct bft_buf b = { 0 };

	EXPECT_STREQ("\"std::map<K, V>::at(\\\"k\\\") \\\\ x\"",
		     escaped(&b, "std::map<K, V>::at(\"k\") \\ x"));
	EXPECT_STREQ("\"a\\u0001\\u001f\\n\\t\\rb\x7f\"",
		     escaped(&b, "a\x01\x1f\n\t\rb\x7f"));
	bft_buf_free(&b);
}

TEST(utf8_passes_and_broken_utf8_becomes_the_replacement_character)
{
	struct bft_buf b = { 0 };
	json_error_t err;
	json_t *j;

	EXPECT_STREQ("\"w\xc3\xb6rker \xe2\x80\x94 \xf0\x9f\x98\x80\"",
		     escaped(&b, "w\xc3\xb6rker \xe2\x80\x94 \xf0\x9f\x98\x80"));
	/* a lone continuation byte, a cut 2-byte form, an overlong '/',
	 * a surrogate */
	EXPECT_STREQ("\"\\ufffd|\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\"",
		     escaped(&b, "\x80|\xc3|\xc0\xaf|\xed\xa0\x80"));
	j = json_loads(escaped(&b, "x\xff\"\\\x01\xc3\xbc"),
		       JSON_DECODE_ANY, &err);
	ASSERT_NE(NULL, j) TH_LOG("%s", err.text);
	EXPECT_STREQ("x\xef\xbf\xbd\"\\\x01\xc3\xbc", json_string_value(j));
	json_decref(j);
	bft_buf_free(&b);
}

TEST_HARNESS_MAIN
