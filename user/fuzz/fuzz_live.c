// SPDX-License-Identifier: GPL-2.0
/*
 * The live copy's text (docs/live-format.md), as live_read.c and bfhq
 * --replay take it from files anyone may have written.  Input: a selector
 * byte, then the text.  Selector bit 0 set: a stream line; a line that
 * parses, written again as bfhq writes it, parses to the same fields.
 * Clear: a name; escaped as bfhq escapes it and unescaped, it is itself up
 * to its first NUL, and unescaping the raw text stays in its buffer.
 */
#include <inttypes.h>
#include <string.h>

#include "fuzz.h"
#include "hq.h"
#include "live.h"

static void line(const char *s, size_t n)
{
	struct live_line a, b;
	struct bft_buf out = { 0 };

	if (live_parse_line(s, n, &a))
		return;
	hq_bprintf(&out, "%c %" PRIu32 " %" PRIu64, a.op, a.seq, a.time_us);
	switch (a.op) {
	case 'm':
		bft_buf_append(&out, " ", 1);
		bft_buf_append(&out, a.text, a.text_len);
		break;
	case '|':
		hq_bprintf(&out, " %s %" PRIu32 " %" PRIu32, a.cause, a.first,
			   a.count);
		break;
	case '!':
		hq_bprintf(&out, " %" PRIu32 " %" PRIu32 " %" PRIu32, a.method,
			   a.exception, a.line);
		break;
	case 'u':
		hq_bprintf(&out, " %" PRIu32 " %" PRIu32, a.method,
			   a.exception);
		break;
	default:
		hq_bprintf(&out, " %" PRIu32, a.method);
		break;
	}
	if (live_parse_line((const char *)out.data, out.len, &b))
		fuzz_fail("a line written again does not parse: %.*s",
			  (int)out.len, (const char *)out.data);
	if (a.op != b.op || a.seq != b.seq || a.time_us != b.time_us ||
	    a.method != b.method || a.exception != b.exception ||
	    a.line != b.line || a.first != b.first || a.count != b.count ||
	    strcmp(a.cause, b.cause) || a.text_len != b.text_len ||
	    (a.text_len && memcmp(a.text, b.text, a.text_len)))
		fuzz_fail("a line written again parses to other fields");
	bft_buf_free(&out);
}

static void name(const char *s, size_t n)
{
	struct bft_buf esc = { 0 };
	char *back, *raw;

	hq_escape(&esc, s, n);
	back = malloc(esc.len + 1);
	raw = malloc(n + 1);
	if (!back || !raw)
		abort();
	live_unescape((const char *)esc.data, esc.len, back);
	if (strlen(back) != strnlen(s, n) || memcmp(back, s, strlen(back)))
		fuzz_fail("an escaped name does not come back");
	if (esc.len && memchr(esc.data, '\t', esc.len))
		fuzz_fail("an escaped name holds a tab");
	live_unescape(s, n, raw);
	free(back);
	free(raw);
	bft_buf_free(&esc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sel = fuzz_take(&data, &size);

	if (sel & 1)
		line((const char *)data, size);
	else
		name((const char *)data, size);
	return 0;
}
