// SPDX-License-Identifier: GPL-2.0
/*
 * The record stream decoder: the byte examples of bftrace.h section 2 in
 * both directions, records split at any byte, and every validation error.
 */
#include <errno.h>

#include "kselftest_harness.h"

#include "bft_test.h"
#include "wire/bft_writer.h"

/*
 * Every tbits 0 (seeds/001) example of bftrace.h 2.1/2.2, in one stream,
 * as the writer must produce it from the calls in write_examples():
 *   SYNC seq 0, time 1000000, res 1000, 0  41 00 00 c0 84 3d e8 07 00
 *   THREAD 1234/1235, 500 ns               42 00 d2 09 d3 09 f4 03
 *   ENTER 1                                81
 *   TIME 200 units                         43 00 c8 01
 *   ENTER 64                               c0 01
 *   TIME_SHORT 3 units                     62 00
 *   ENTER 8192                             c0 80 01
 *   3 exits                                02
 *   LOST 7                                 44 00 07
 *   ENTER_NORET 5                          46 00 05
 *   65 exits                               40 01
 *   BREAK suspend                          45 00 01
 *   SYNC seq 79 (6 + 7 + 1 + 65), 2000000  41 00 4f 80 89 7a e8 07 00
 */
static const char examples_hex[] =
	"41 00 00 c0 84 3d e8 07 00"
	"42 00 d2 09 d3 09 f4 03"
	"81"
	"43 00 c8 01"
	"c0 01"
	"62 00"
	"c0 80 01"
	"02"
	"44 00 07"
	"46 00 05"
	"40 01"
	"45 00 01"
	"41 00 4f 80 89 7a e8 07 00";

struct want {
	unsigned int kind;
	uint64_t value;
	uint64_t time_ns;
	uint64_t offset;
};

static const struct want examples_want[] = {
	{ BFT_REC_SYNC, 0, 1000000, 0 },
	{ BFT_REC_THREAD, 500, 1000500, 9 },
	{ BFT_REC_ENTER, 1, 1000500, 17 },
	{ BFT_REC_TIME, 200, 1200500, 18 },
	{ BFT_REC_ENTER, 64, 1200500, 22 },
	{ BFT_REC_TIME_SHORT, 3, 1203500, 24 },
	{ BFT_REC_ENTER, 8192, 1203500, 26 },
	{ BFT_REC_EXIT, 3, 1203500, 29 },
	{ BFT_REC_LOST, 7, 1203500, 30 },
	{ BFT_REC_ENTER_NORET, 5, 1203500, 33 },
	{ BFT_REC_EXIT, 65, 1203500, 36 },
	{ BFT_REC_BREAK, BFT_BREAK_SUSPEND, 1203500, 38 },
	{ BFT_REC_SYNC, 79, 2000000, 41 },
};

#define NWANT (sizeof(examples_want) / sizeof(examples_want[0]))

static int write_examples(struct bft_writer *w)
{
	int r = 0;
	int i;

	r |= bft_writer_init(w, 1000, 0);
	r |= bft_writer_set_time_bits(w, 0);
	r |= bft_writer_sync(w, 1000000);
	r |= bft_writer_enter(w, 1000500, 1234, 1235, 1);
	r |= bft_writer_enter(w, 1200700, 1234, 1235, 64);
	r |= bft_writer_enter(w, 1203900, 1234, 1235, 8192);
	r |= bft_writer_exit(w, 1203950, 1234, 1235);
	r |= bft_writer_exit(w, 1204000, 1234, 1235);
	r |= bft_writer_exit(w, 1204400, 1234, 1235);
	r |= bft_writer_lost(w, 1204450, 7);
	r |= bft_writer_enter_noret(w, 1204499, 1234, 1235, 5);
	for (i = 0; i < 65; i++)
		r |= bft_writer_exit(w, 1204499, 1234, 1235);
	r |= bft_writer_break(w, 1204499, BFT_BREAK_SUSPEND);
	r |= bft_writer_sync(w, 2000000);
	return r;
}

/* Records decoded on CPU 2 of thread 1234/1235 against the wanted ones. */
static void check_want(struct __test_metadata *_metadata,
		       const struct rec_log *l, const struct want *want,
		       size_t n)
{
	size_t i;

	ASSERT_EQ(n, l->n);
	for (i = 0; i < n; i++) {
		const struct bft_record *r = &l->r[i];

		EXPECT_EQ(want[i].kind, r->kind) TH_LOG("record %zu", i);
		EXPECT_EQ(want[i].value, r->value) TH_LOG("record %zu", i);
		EXPECT_EQ(want[i].time_ns, r->time_ns) TH_LOG("record %zu", i);
		EXPECT_EQ(want[i].offset, r->offset) TH_LOG("record %zu", i);
		EXPECT_EQ(2u, r->cpu);
		if (i > 0) {
			EXPECT_EQ(1234u, r->tgid);
			EXPECT_EQ(1235u, r->tid);
		}
	}
}

/* What a writer wrote, against the hex it must be. */
static void check_written(struct __test_metadata *_metadata,
			  struct bft_writer *w, const char *hex)
{
	uint8_t want[128];
	char got_hex[300], want_hex[300];
	int n = hex_parse(hex, want, sizeof(want));
	const uint8_t *p;
	size_t len;

	ASSERT_GT(n, 0);
	p = bft_writer_data(w, &len);
	EXPECT_STREQ(hex_format(want, (size_t)n, want_hex),
		     hex_format(p, len, got_hex));
}

static void check_examples(struct __test_metadata *_metadata,
			   const struct rec_log *l)
{
	check_want(_metadata, l, examples_want, NWANT);
	EXPECT_EQ(1000u, l->r[0].value2);	/* res_ns */
	EXPECT_EQ(0x22, l->r[5].esc);	/* the kind, not the byte */
	EXPECT_EQ(BFT_ESC_ENTER_NORET, l->r[9].esc);
	EXPECT_EQ(14u, l->r[10].seq);	/* events + lost before the run */
}

TEST(header_examples_decode)
{
	uint8_t b[128];
	int n = hex_parse(examples_hex, b, sizeof(b));
	struct bft_stream s;
	struct rec_log l = { 0 };
	const struct bft_stream_stats *st;

	ASSERT_GT(n, 0);
	stream_open(&s, &l, 2, BFT_STREAM_STOP);
	ASSERT_EQ(0, stream_decode(&s, b, (size_t)n, 0));
	EXPECT_EQ(0u, l.nerr);
	check_examples(_metadata, &l);
	st = bft_stream_stats(&s);
	EXPECT_EQ((uint64_t)n, st->bytes);
	EXPECT_EQ(NWANT, st->records);
	EXPECT_EQ(72u, st->events);	/* 3 + 1 enters, 3 + 65 exits */
	EXPECT_EQ(3u, st->enters);
	EXPECT_EQ(1u, st->noret_enters);
	EXPECT_EQ(68u, st->exits);
	EXPECT_EQ(7u, st->lost);
	EXPECT_EQ(1u, st->breaks);
	EXPECT_EQ(2u, st->by_kind[BFT_REC_SYNC]);
	EXPECT_EQ(2u, st->by_kind[BFT_REC_EXIT]);
	EXPECT_EQ(1u, st->by_kind[BFT_REC_TIME_SHORT]);
	EXPECT_EQ(0u, st->gaps);
	EXPECT_EQ(0u, st->errors);
	EXPECT_EQ(79u, bft_stream_seq(&s));
	rec_log_free(&l);
}

TEST(writer_produces_header_examples)
{
	struct bft_writer w;

	ASSERT_EQ(0, write_examples(&w));
	check_written(_metadata, &w, examples_hex);
	EXPECT_EQ(79u, bft_writer_seq(&w));
	bft_writer_free(&w);
}

typedef void (*check_fn)(struct __test_metadata *_metadata,
			 const struct rec_log *l);

/*
 * Decode hex on cpu cut in two at every byte, then in chunks of 1 to
 * max_chunk bytes: check() must pass on every one of those decodings.
 */
static void decode_split_everywhere(struct __test_metadata *_metadata,
				    const char *hex, uint32_t cpu,
				    size_t max_chunk, check_fn check)
{
	uint8_t b[128];
	int n = hex_parse(hex, b, sizeof(b));
	size_t cut, chunk;

	ASSERT_GT(n, 0);
	for (cut = 0; cut <= (size_t)n; cut++) {
		struct bft_stream s;
		struct rec_log l = { 0 };

		stream_open(&s, &l, cpu, BFT_STREAM_STOP);
		ASSERT_EQ(0, bft_stream_feed(&s, b, cut));
		ASSERT_EQ(0, bft_stream_feed(&s, b + cut, (size_t)n - cut));
		ASSERT_EQ(0, bft_stream_finish(&s));
		EXPECT_EQ(0u, l.nerr);
		check(_metadata, &l);
		rec_log_free(&l);
	}
	for (chunk = 1; chunk <= max_chunk; chunk++) {
		struct bft_stream s;
		struct rec_log l = { 0 };

		stream_open(&s, &l, cpu, BFT_STREAM_STOP);
		ASSERT_EQ(0, stream_decode(&s, b, (size_t)n, chunk));
		check(_metadata, &l);
		rec_log_free(&l);
	}
}

TEST(records_split_at_every_byte_decode_the_same)
{
	decode_split_everywhere(_metadata, examples_hex, 2, 9, check_examples);
}

/*
 * The tbits 2 examples of bftrace.h 2.1, in one stream, as the writer
 * must produce it from the calls in write_timed():
 *   SYNC seq 0, time 1000000, res 1000, 2  41 00 00 c0 84 3d e8 07 02
 *   THREAD 1234/1235, 500 ns               42 00 d2 09 d3 09 f4 03
 *   ENTER 1, same unit                     84
 *   ENTER 1, 3 units later                 87
 *   ENTER 16, same unit                    c0 01
 *   1 exit, 2 units later                  02
 *   ENTER 8192, same unit                  c0 80 04
 *   3 exits, same unit                     08
 *   TIME_SHORT 5 units (too many inside)   64 00
 *   ENTER 1, same unit                     84
 *   65 exits, 1 unit later                 41 04
 *   SYNC seq 74 (5 + 69), 2000000          41 00 4a 80 89 7a e8 07 02
 */
static const char timed_hex[] =
	"41 00 00 c0 84 3d e8 07 02"
	"42 00 d2 09 d3 09 f4 03"
	"84" "87" "c0 01" "02" "c0 80 04" "08" "64 00" "84" "41 04"
	"41 00 4a 80 89 7a e8 07 02";

static const struct want timed_want[] = {
	{ BFT_REC_SYNC, 0, 1000000, 0 },
	{ BFT_REC_THREAD, 500, 1000500, 9 },
	{ BFT_REC_ENTER, 1, 1000500, 17 },
	{ BFT_REC_ENTER, 1, 1003500, 18 },
	{ BFT_REC_ENTER, 16, 1003500, 19 },
	{ BFT_REC_EXIT, 1, 1005500, 21 },
	{ BFT_REC_ENTER, 8192, 1005500, 22 },
	{ BFT_REC_EXIT, 3, 1005500, 25 },
	{ BFT_REC_TIME_SHORT, 5, 1010500, 26 },
	{ BFT_REC_ENTER, 1, 1010500, 28 },
	{ BFT_REC_EXIT, 65, 1011500, 29 },
	{ BFT_REC_SYNC, 74, 2000000, 31 },
};

#define NTIMED (sizeof(timed_want) / sizeof(timed_want[0]))

static int write_timed(struct bft_writer *w)
{
	int r = 0;
	int i;

	r |= bft_writer_init(w, 1000, 0);
	r |= bft_writer_sync(w, 1000000);
	r |= bft_writer_enter(w, 1000500, 1234, 1235, 1);
	r |= bft_writer_enter(w, 1003600, 1234, 1235, 1);
	r |= bft_writer_enter(w, 1003900, 1234, 1235, 16);
	r |= bft_writer_exit(w, 1005500, 1234, 1235);
	r |= bft_writer_enter(w, 1005600, 1234, 1235, 8192);
	for (i = 0; i < 3; i++)
		r |= bft_writer_exit(w, 1005700 + 100 * i, 1234, 1235);
	r |= bft_writer_enter(w, 1010500, 1234, 1235, 1);
	for (i = 0; i < 65; i++)
		r |= bft_writer_exit(w, 1011500 + i, 1234, 1235);
	r |= bft_writer_sync(w, 2000000);
	return r;
}

static void check_timed(struct __test_metadata *_metadata,
			const struct rec_log *l)
{
	check_want(_metadata, l, timed_want, NTIMED);
	EXPECT_EQ(3u, l->r[3].value2);	/* the units ENTER 1 carried */
	EXPECT_EQ(2u, l->r[5].value2);
	EXPECT_EQ(0u, l->r[9].value2);	/* they went into TIME_SHORT */
	EXPECT_EQ(1u, l->r[10].value2);
}

TEST(timed_examples_decode_whole_and_split_at_every_byte)
{
	decode_split_everywhere(_metadata, timed_hex, 2, 9, check_timed);
}

TEST(writer_produces_timed_examples)
{
	struct bft_writer w;

	ASSERT_EQ(0, write_timed(&w));
	check_written(_metadata, &w, timed_hex);
	EXPECT_EQ(74u, bft_writer_seq(&w));
	/* the time bits are fixed once the stream has started */
	EXPECT_EQ(-EINVAL, bft_writer_set_time_bits(&w, 0));
	bft_writer_free(&w);
}

/*
 * The writers choose tbits again at every SYNC (bftrace.h 2.1): the
 * records after a SYNC read with its tbits, those before with the last
 * one's.  A decoder's case, not what a writer would choose for these
 * gaps.  The tbits 4 examples of bftrace.h 2.1:
 *   SYNC seq 0, time 1000000, res 1000, 2  41 00 00 c0 84 3d e8 07 02
 *   THREAD 1234/1235, 500 ns               42 00 d2 09 d3 09 f4 03
 *   ENTER 1, 3 units later                 87
 *   1 exit, 2 units later                  02
 *   SYNC seq 2, time 1100000, res 1000, 4  41 00 02 e0 91 43 e8 07 04
 *   THREAD 1234/1235, 0 ns                 42 00 d2 09 d3 09 00
 *   ENTER 1, 7 units later                 97
 *   ENTER 3, 15 units later                bf
 *   ENTER 4, same unit                     c0 01
 *   1 exit, 9 units later                  09
 *   2 exits, same unit                     10
 */
static const char retimed_hex[] =
	"41 00 00 c0 84 3d e8 07 02" "42 00 d2 09 d3 09 f4 03" "87" "02"
	"41 00 02 e0 91 43 e8 07 04" "42 00 d2 09 d3 09 00"
	"97" "bf" "c0 01" "09" "10";

static const struct want retimed_want[] = {
	{ BFT_REC_SYNC, 0, 1000000, 0 },
	{ BFT_REC_THREAD, 500, 1000500, 9 },
	{ BFT_REC_ENTER, 1, 1003500, 17 },
	{ BFT_REC_EXIT, 1, 1005500, 18 },
	{ BFT_REC_SYNC, 2, 1100000, 19 },
	{ BFT_REC_THREAD, 0, 1100000, 28 },
	{ BFT_REC_ENTER, 1, 1107000, 35 },
	{ BFT_REC_ENTER, 3, 1122000, 36 },
	{ BFT_REC_ENTER, 4, 1122000, 37 },
	{ BFT_REC_EXIT, 1, 1131000, 39 },
	{ BFT_REC_EXIT, 2, 1131000, 40 },
};

static void check_retimed(struct __test_metadata *_metadata,
			  const struct rec_log *l)
{
	check_want(_metadata, l, retimed_want,
		   sizeof(retimed_want) / sizeof(retimed_want[0]));
	EXPECT_EQ(7u, l->r[6].value2);	/* the units ENTER 1 carried */
	EXPECT_EQ(15u, l->r[7].value2);
	EXPECT_EQ(9u, l->r[9].value2);
}

TEST(a_sync_changes_the_time_bits_of_what_follows)
{
	decode_split_everywhere(_metadata, retimed_hex, 2, 9, check_retimed);
}

/* Decode hex with the given error action; returns feed/finish's result. */
static int decode_hex(const char *hex, struct rec_log *l, int action,
		      struct bft_stream *s)
{
	uint8_t b[256];
	int n = hex_parse(hex, b, sizeof(b));

	if (n < 0)
		return -1000;
	stream_open(s, l, 0, action);
	return stream_decode(s, b, (size_t)n, 0);
}

/* seq 0 at 1 ms, res 1 us, tbits 0 */
#define SYNC0 "41 00 00 c0 84 3d e8 07 00 "
#define THR "42 00 d2 09 d3 09 00 "		/* 1234/1235, 0 ns */

/* a SYNC whose four fields take 10 bytes each: 42 bytes */
#define LONG_SYNC "41 00 " TEN_BYTES TEN_BYTES TEN_BYTES TEN_BYTES
#define TEN_BYTES "ff ff ff ff ff ff ff ff ff 01 "

struct err_case {
	const char *name;
	const char *hex;
	enum bft_stream_err code;
	uint64_t offset;
	const char *text;	/* must appear in the message */
};

static const struct err_case err_cases[] = {
	{ "kind 0", SYNC0 "40 00", BFT_SERR_KIND_ZERO, 9, "escape byte 0x40" },
	{ "kind 12", SYNC0 "4c 00 01", BFT_SERR_KIND_UNKNOWN, 9, "0x4c" },
	{ "kind 0x1f", SYNC0 "5f 00", BFT_SERR_KIND_UNKNOWN, 9, "0x5f" },
	{ "enter before sync", "81", BFT_SERR_BEFORE_SYNC, 0, "ENTER" },
	{ "thread before sync", THR, BFT_SERR_BEFORE_SYNC, 0, "THREAD" },
	{ "event without thread", SYNC0 "81", BFT_SERR_NO_THREAD, 9, "ENTER" },
	{ "exit without thread", SYNC0 "00", BFT_SERR_NO_THREAD, 9, "EXIT" },
	{ "enter beyond u32", SYNC0 THR "c0 80 80 80 20",
	  BFT_SERR_ID_RANGE, 16, "4294967296" },
	{ "noret beyond u32", SYNC0 THR "46 00 80 80 80 80 10",
	  BFT_SERR_ID_RANGE, 16, "4294967296" },
	{ "tid beyond u32", SYNC0 "42 00 01 80 80 80 80 10 00",
	  BFT_SERR_FIELD_RANGE, 9, "THREAD id 4294967296" },
	{ "res 0", "41 00 00 00 00 00", BFT_SERR_FIELD_RANGE, 0, "res_ns" },
	{ "tbits 6", "41 00 00 00 01 06", BFT_SERR_FIELD_RANGE, 0, "tbits 6" },
	{ "11-byte enter", SYNC0 THR "c0 80 80 80 80 80 80 80 80 80 01",
	  BFT_SERR_VARINT_TOO_LONG, 16, "10 bytes" },
	{ "enter past 64 bits", SYNC0 THR "ff ff ff ff ff ff ff ff ff 04",
	  BFT_SERR_VARINT_OVERFLOW, 16, "64 bits" },
	{ "11-byte payload", SYNC0 "43 00 80 80 80 80 80 80 80 80 80 80 01",
	  BFT_SERR_VARINT_TOO_LONG, 9, "10 bytes" },
	{ "payload past 64 bits", SYNC0 "44 00 ff ff ff ff ff ff ff ff ff 02",
	  BFT_SERR_VARINT_OVERFLOW, 9, "64 bits" },
	{ "overlong enter", SYNC0 THR "c1 00", BFT_SERR_VARINT_OVERLONG, 16,
	  "overlong" },
	{ "overlong exit", SYNC0 THR "41 80 00", BFT_SERR_VARINT_OVERLONG, 16,
	  "overlong" },
	{ "overlong payload", SYNC0 "43 00 80 00", BFT_SERR_VARINT_OVERLONG, 9,
	  "overlong" },
	{ "exit run past 2^64", SYNC0 THR "7f ff ff ff ff ff ff ff ff 03",
	  BFT_SERR_FIELD_RANGE, 16, "EXIT run" },
	{ "time overflow", "41 00 00 ff ff ff ff ff ff ff ff ff 01 01 00 "
	  "43 00 02", BFT_SERR_FIELD_RANGE, 15, "overflows" },
	{ "time overflow inside an enter", "41 00 00 fe ff ff ff ff ff ff ff "
	  "ff 01 01 02 " THR "87", BFT_SERR_FIELD_RANGE, 22, "overflows" },
	{ "truncated sync", SYNC0 "41 00 01 80", BFT_SERR_TRUNCATED, 9,
	  "4 byte(s)" },
	{ "truncated enter", SYNC0 THR "c0 80", BFT_SERR_TRUNCATED, 16,
	  "first 0xc0" },
	{ "sync of 42 bytes", SYNC0 LONG_SYNC, BFT_SERR_RECORD_TOO_LONG, 9,
	  "longer than 32 bytes" },
};

TEST(each_malformed_input_is_reported_with_offset_and_stops)
{
	size_t i;

	for (i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
		const struct err_case *c = &err_cases[i];
		struct bft_stream s;
		struct rec_log l = { 0 };
		char off[32];

		EXPECT_EQ(-EPROTO, decode_hex(c->hex, &l, BFT_STREAM_STOP, &s))
			TH_LOG("%s", c->name);
		ASSERT_EQ(1u, l.nerr) TH_LOG("%s", c->name);
		EXPECT_EQ(c->code, l.err[0].code) TH_LOG("%s: %s", c->name,
							   l.err[0].msg);
		EXPECT_EQ(c->offset, l.err[0].offset) TH_LOG("%s", c->name);
		EXPECT_NE(NULL, strstr(l.err[0].msg, c->text))
			TH_LOG("%s: \"%s\" lacks \"%s\"", c->name,
			       l.err[0].msg, c->text);
		snprintf(off, sizeof(off), "offset %" PRIu64, c->offset);
		EXPECT_NE(NULL, strstr(l.err[0].msg, off)) TH_LOG("%s", c->name);
		EXPECT_EQ(c->code, bft_stream_last_error(&s)->code);
		EXPECT_EQ(1u, bft_stream_stats(&s)->by_error[c->code]);
		/* stopped: nothing more is decoded */
		EXPECT_EQ(-EPROTO, bft_stream_feed(&s, "\x81", 1));
		rec_log_free(&l);
	}
}

TEST(sequence_gap_reports_expected_and_got)
{
	struct bft_stream s;
	struct rec_log l = { 0 };
	const struct bft_stream_stats *st;

	/* 2 events, then a SYNC claiming 9 were produced */
	ASSERT_EQ(0, decode_hex(SYNC0 THR "81 00 41 00 09 90 8b 40 01 00",
				&l, BFT_STREAM_RESYNC, &s));
	ASSERT_EQ(1u, l.nerr);
	EXPECT_EQ(BFT_SERR_SEQ_GAP, l.err[0].code);
	EXPECT_EQ(2u, l.err[0].expected);
	EXPECT_EQ(9u, l.err[0].got);
	EXPECT_EQ(18u, l.err[0].offset);
	EXPECT_NE(NULL, strstr(l.err[0].msg, "expected seq 2, got 9"));
	ASSERT_EQ(6u, l.n);
	EXPECT_EQ(BFT_REC_GAP, l.r[4].kind);
	EXPECT_EQ(2u, l.r[4].value);
	EXPECT_EQ(9u, l.r[4].value2);
	EXPECT_EQ(1000000u, l.r[4].time_ns);	/* where the loss may start */
	EXPECT_EQ(BFT_REC_SYNC, l.r[5].kind);
	EXPECT_EQ(1050000u, l.r[5].time_ns);
	st = bft_stream_stats(&s);
	EXPECT_EQ(1u, st->gaps);
	EXPECT_EQ(7u, st->gap_events);
	EXPECT_EQ(9u, bft_stream_seq(&s));
	rec_log_free(&l);
}

TEST(sync_counts_lost_events_in_seq)
{
	struct bft_stream s;
	struct rec_log l = { 0 };

	ASSERT_EQ(0, decode_hex(SYNC0 THR "81 44 00 05 00 41 00 07 90 8b 40 01 00",
				&l, BFT_STREAM_STOP, &s));
	EXPECT_EQ(0u, l.nerr);
	EXPECT_EQ(0u, bft_stream_stats(&s)->gaps);
	rec_log_free(&l);
}

TEST(time_going_backwards_is_reported_and_clamped)
{
	struct bft_stream s;
	struct rec_log l = { 0 };

	ASSERT_EQ(0, decode_hex(SYNC0 "41 00 00 e8 07 01 00", &l,
				BFT_STREAM_RESYNC, &s));
	ASSERT_EQ(1u, l.nerr);
	EXPECT_EQ(BFT_SERR_TIME_BACKWARDS, l.err[0].code);
	EXPECT_EQ(1000000u, l.err[0].expected);
	EXPECT_EQ(1000u, l.err[0].got);
	ASSERT_EQ(2u, l.n);
	EXPECT_EQ(1000000u, l.r[1].time_ns);
	EXPECT_EQ(1u, l.r[1].value2);	/* the new res_ns holds */
	rec_log_free(&l);
}

TEST(resync_skips_garbage_to_next_sync_and_marks_a_gap)
{
	struct bft_stream s;
	struct rec_log l = { 0 };
	const struct bft_stream_stats *st;

	/* enter, garbage (unknown kind), events lost in it, then a SYNC */
	ASSERT_EQ(0, decode_hex(SYNC0 THR "81 4c 00 81 81 ff 41 "
				"41 00 06 90 8b 40 01 00 " THR "82", &l,
				BFT_STREAM_RESYNC, &s));
	ASSERT_EQ(1u, l.nerr);
	EXPECT_EQ(BFT_SERR_KIND_UNKNOWN, l.err[0].code);
	EXPECT_EQ(17u, l.err[0].offset);
	ASSERT_EQ(7u, l.n);
	EXPECT_EQ(BFT_REC_ENTER, l.r[2].kind);
	EXPECT_EQ(BFT_REC_GAP, l.r[3].kind);
	EXPECT_EQ(1u, l.r[3].value);	/* counted up to the error */
	EXPECT_EQ(6u, l.r[3].value2);
	EXPECT_EQ(BFT_REC_SYNC, l.r[4].kind);
	EXPECT_EQ(23u, l.r[4].offset);
	EXPECT_EQ(BFT_REC_THREAD, l.r[5].kind);
	EXPECT_EQ(BFT_REC_ENTER, l.r[6].kind);
	EXPECT_EQ(2u, l.r[6].value);
	st = bft_stream_stats(&s);
	EXPECT_EQ(1u, st->resyncs);
	EXPECT_EQ(6u, st->skipped_bytes);
	EXPECT_EQ(1u, st->gaps);
	EXPECT_EQ(7u, bft_stream_seq(&s));
	rec_log_free(&l);
}

TEST(resync_from_stream_start_finds_first_sync)
{
	struct bft_stream s;
	struct rec_log l = { 0 };

	ASSERT_EQ(0, decode_hex("81 00 05 " SYNC0 THR "81", &l,
				BFT_STREAM_RESYNC, &s));
	ASSERT_EQ(1u, l.nerr);
	EXPECT_EQ(BFT_SERR_BEFORE_SYNC, l.err[0].code);
	ASSERT_EQ(4u, l.n);
	EXPECT_EQ(BFT_REC_GAP, l.r[0].kind);
	EXPECT_EQ(1000000u, l.r[0].time_ns);
	EXPECT_EQ(BFT_REC_SYNC, l.r[1].kind);
	EXPECT_EQ(3u, l.r[1].offset);
	EXPECT_EQ(3u, bft_stream_stats(&s)->skipped_bytes);
	rec_log_free(&l);
}

TEST(resync_candidate_split_across_feeds_is_found)
{
	uint8_t b[64];
	int n = hex_parse("4c 00 aa bb " SYNC0 THR "83", b, sizeof(b));
	int cut;

	ASSERT_GT(n, 0);
	for (cut = 0; cut <= n; cut++) {
		struct bft_stream s;
		struct rec_log l = { 0 };

		stream_open(&s, &l, 0, BFT_STREAM_RESYNC);
		ASSERT_EQ(0, bft_stream_feed(&s, b, (size_t)cut));
		ASSERT_EQ(0, bft_stream_feed(&s, b + cut, (size_t)(n - cut)));
		ASSERT_EQ(0, bft_stream_finish(&s));
		ASSERT_EQ(4u, l.n) TH_LOG("cut %d", cut);
		EXPECT_EQ(BFT_REC_SYNC, l.r[1].kind);
		EXPECT_EQ(4u, l.r[1].offset);
		EXPECT_EQ(3u, l.r[3].value);
		EXPECT_EQ(4u, bft_stream_stats(&s)->skipped_bytes);
		rec_log_free(&l);
	}
}

/*
 * A record longer than the carry kept between feeds is refused at its
 * start however it is split (it overflowed the carry, found by
 * fuzz_stream).
 */
TEST(record_longer_than_the_maximum_is_refused_wherever_split)
{
	uint8_t b[64];
	int n = hex_parse(SYNC0 LONG_SYNC, b, sizeof(b));
	size_t chunk;

	ASSERT_GT(n, 0);
	for (chunk = 1; chunk <= (size_t)n; chunk++) {
		struct bft_stream s;
		struct rec_log l = { 0 };

		stream_open(&s, &l, 0, BFT_STREAM_STOP);
		EXPECT_EQ(-EPROTO, stream_decode(&s, b, (size_t)n, chunk))
			TH_LOG("chunk %zu", chunk);
		ASSERT_EQ(1u, l.nerr) TH_LOG("chunk %zu", chunk);
		EXPECT_EQ(BFT_SERR_RECORD_TOO_LONG, l.err[0].code);
		EXPECT_EQ(9u, l.err[0].offset);
		rec_log_free(&l);
	}
}

static int abort_third(void *ctx, const struct bft_record *r)
{
	int *n = ctx;

	(void)r;
	return ++*n == 3 ? 42 : 0;
}

TEST(record_callback_can_abort_the_feed)
{
	uint8_t b[64];
	int n = hex_parse(SYNC0 THR "81 82 83", b, sizeof(b));
	int count = 0;
	struct bft_stream_opts o = { .on_record = abort_third, .ctx = &count };
	struct bft_stream s;

	bft_stream_init(&s, &o);
	EXPECT_EQ(42, bft_stream_feed(&s, b, (size_t)n));
	EXPECT_EQ(3, count);
	EXPECT_EQ(BFT_SERR_ABORTED, bft_stream_last_error(&s)->code);
	EXPECT_EQ(42, bft_stream_feed(&s, b, 1));
	EXPECT_EQ(3, count);
}

TEST(policy_applies_without_error_callback)
{
	uint8_t b[64];
	int n = hex_parse(SYNC0 "4c 00 " SYNC0, b, sizeof(b));
	struct bft_stream_opts o = { .policy = BFT_STREAM_RESYNC };
	struct bft_stream s;

	bft_stream_init(&s, &o);
	EXPECT_EQ(0, bft_stream_feed(&s, b, (size_t)n));
	EXPECT_EQ(1u, bft_stream_stats(&s)->errors);
	EXPECT_EQ(2u, bft_stream_stats(&s)->by_kind[BFT_REC_SYNC]);
	o.policy = BFT_STREAM_STOP;
	bft_stream_init(&s, &o);
	EXPECT_EQ(-EPROTO, bft_stream_feed(&s, b, (size_t)n));
	EXPECT_EQ(1u, bft_stream_stats(&s)->by_kind[BFT_REC_SYNC]);
}

TEST(kind_mask_hands_over_chosen_records_and_counts_all)
{
	uint8_t b[128];
	int n = hex_parse(examples_hex, b, sizeof(b));
	struct rec_log l = { 0 };
	struct bft_stream_opts o = {
		.on_record = rec_log_add,
		.ctx = &l,
		.kinds = BFT_REC_BIT(BFT_REC_EXIT) | BFT_REC_BIT(BFT_REC_LOST),
	};
	struct bft_stream s;

	bft_stream_init(&s, &o);
	ASSERT_EQ(0, stream_decode(&s, b, (size_t)n, 1));
	ASSERT_EQ(3u, l.n);
	EXPECT_EQ(BFT_REC_EXIT, l.r[0].kind);
	EXPECT_EQ(1203500u, l.r[0].time_ns);	/* time still followed */
	EXPECT_EQ(BFT_REC_LOST, l.r[1].kind);
	EXPECT_EQ(65u, l.r[2].value);
	EXPECT_EQ(NWANT, bft_stream_stats(&s)->records);
	EXPECT_EQ(1u, bft_stream_stats(&s)->by_kind[BFT_REC_TIME_SHORT]);
	rec_log_free(&l);
}

/*
 * Random garbage, and a valid stream with random bytes flipped, fed in
 * random chunks: the decoder must neither crash nor misreport offsets, and
 * with resync it must account for every byte.
 */
TEST(garbage_and_mutations_never_crash)
{
	uint64_t seed = 0x5eed0001;
	int rounds = test_scale(3000), round;
	uint8_t good[128];
	int ngood = hex_parse(examples_hex, good, sizeof(good));

	ASSERT_GT(ngood, 0);
	for (round = 0; round < rounds; round++) {
		uint8_t b[512];
		size_t n, i, pos = 0;
		struct bft_stream s;
		struct rec_log l = { 0 };
		int action = round & 1 ? BFT_STREAM_RESYNC : BFT_STREAM_STOP;
		int r = 0;

		if (round % 3 == 0) {
			n = 1 + rng_below(&seed, sizeof(b));
			for (i = 0; i < n; i++)
				b[i] = (uint8_t)rng_next(&seed);
		} else {
			/* several copies of the examples, lightly mutated */
			n = 0;
			while (n + (size_t)ngood <= sizeof(b)) {
				memcpy(b + n, good, (size_t)ngood);
				n += (size_t)ngood;
			}
			for (i = 0; i < 1 + rng_below(&seed, 4); i++)
				b[rng_below(&seed, n)] = (uint8_t)rng_next(&seed);
		}
		stream_open(&s, &l, 0, action);
		while (pos < n && !r) {
			size_t c = 1 + rng_below(&seed, 40);

			if (c > n - pos)
				c = n - pos;
			r = bft_stream_feed(&s, b + pos, c);
			pos += c;
		}
		if (!r)
			r = bft_stream_finish(&s);
		EXPECT_TRUE(r == 0 || r == -EPROTO);
		for (i = 0; i < l.n; i++) {
			ASSERT_LT(l.r[i].offset, n);
			if (i)
				ASSERT_GE(l.r[i].time_ns, l.r[i - 1].time_ns);
		}
		if (r == 0 && action == BFT_STREAM_RESYNC) {
			/* every byte was decoded or skipped */
			const struct bft_stream_stats *st = bft_stream_stats(&s);

			EXPECT_EQ(n, st->bytes);
			EXPECT_LE(st->skipped_bytes, n);
		}
		if (r == -EPROTO)
			EXPECT_NE(0, bft_stream_last_error(&s)->msg[0]);
		rec_log_free(&l);
	}
}

/*
 * The THROW and UNWIND examples of bftrace.h 2.2, between two enters and
 * a SYNC whose seq counts each of them as one event:
 *   SYNC0, THREAD 1234/1235                  (SYNC0 THR below)
 *   ENTER 1, ENTER 2                         81 82
 *   THROW type 2, how throw                  47 00 02 01
 *   UNWIND 2 frames, reason catch            48 00 02 01
 *   SYNC seq 4                               41 00 04 c0 84 3d e8 07 00
 */
#define EXC_HEX SYNC0 THR "81 82 47 00 02 01 48 00 02 01 " \
	"41 00 04 c0 84 3d e8 07 00"

static void check_exc(struct __test_metadata *_metadata,
		      const struct rec_log *l)
{
	ASSERT_EQ(7u, l->n);
	EXPECT_EQ(BFT_REC_THROW, l->r[4].kind);
	EXPECT_EQ(2u, l->r[4].value);
	EXPECT_EQ(BFT_THROW_THROW, l->r[4].value2);
	EXPECT_EQ(BFT_ESC_THROW, l->r[4].esc);
	EXPECT_EQ(18u, l->r[4].offset);
	EXPECT_EQ(2u, l->r[4].seq);
	EXPECT_EQ(1235u, l->r[4].tid);
	EXPECT_EQ(BFT_REC_UNWIND, l->r[5].kind);
	EXPECT_EQ(2u, l->r[5].value);
	EXPECT_EQ(BFT_UNWIND_CATCH, l->r[5].value2);
	EXPECT_EQ(BFT_ESC_UNWIND, l->r[5].esc);
	EXPECT_EQ(22u, l->r[5].offset);
	EXPECT_EQ(3u, l->r[5].seq);
	EXPECT_EQ(BFT_REC_SYNC, l->r[6].kind);
	EXPECT_EQ(4u, l->r[6].value);
}

TEST(throw_and_unwind_examples_decode_as_one_event_each)
{
	struct bft_stream s;
	struct rec_log l = { 0 };
	const struct bft_stream_stats *st;

	ASSERT_EQ(0, decode_hex(EXC_HEX, &l, BFT_STREAM_STOP, &s));
	EXPECT_EQ(0u, l.nerr);
	check_exc(_metadata, &l);
	st = bft_stream_stats(&s);
	EXPECT_EQ(1u, st->throws);
	EXPECT_EQ(1u, st->unwinds);
	EXPECT_EQ(4u, st->events);
	EXPECT_EQ(2u, st->enters);
	EXPECT_EQ(0u, st->exits);	/* an UNWIND is no exit */
	EXPECT_EQ(1u, st->by_kind[BFT_REC_THROW]);
	EXPECT_EQ(1u, st->by_kind[BFT_REC_UNWIND]);
	EXPECT_EQ(0u, st->gaps);
	EXPECT_EQ(4u, bft_stream_seq(&s));
	rec_log_free(&l);
}

TEST(throw_and_unwind_split_at_every_byte_decode_the_same)
{
	decode_split_everywhere(_metadata, EXC_HEX, 0, 5, check_exc);
}

TEST(writer_produces_throw_and_unwind_examples)
{
	struct bft_writer w;
	char got[128];
	const uint8_t *p;
	size_t len;

	ASSERT_EQ(0, bft_writer_init(&w, 1000, 0));
	ASSERT_EQ(0, bft_writer_set_time_bits(&w, 0));
	ASSERT_EQ(0, bft_writer_sync(&w, 1000000));
	ASSERT_EQ(0, bft_writer_enter(&w, 1000000, 1234, 1235, 1));
	ASSERT_EQ(0, bft_writer_throw(&w, 1000000, 1234, 1235, 2,
				      BFT_THROW_THROW));
	ASSERT_EQ(0, bft_writer_unwind(&w, 1000000, 1234, 1235, 2,
				       BFT_UNWIND_CATCH));
	ASSERT_EQ(0, bft_writer_sync(&w, 1000000));
	p = bft_writer_data(&w, &len);
	EXPECT_STREQ("410000c0843de80700" "4200d209d30900" "81" "47000201"
		     "48000201" "4100" "03" "c0843de80700",
		     hex_format(p, len, got));
	EXPECT_EQ(3u, bft_writer_seq(&w));
	bft_writer_free(&w);
}

/* An EXIT run counts n events, an UNWIND of n frames only one. */
TEST(sync_after_unwind_counts_one_event_not_n)
{
	struct bft_stream s;
	struct rec_log l = { 0 };

	ASSERT_EQ(0, decode_hex(SYNC0 THR "81 82 83 48 00 03 02 "
				"41 00 06 c0 84 3d e8 07 00", &l,
				BFT_STREAM_RESYNC, &s));
	ASSERT_EQ(1u, l.nerr);
	EXPECT_EQ(BFT_SERR_SEQ_GAP, l.err[0].code);
	EXPECT_EQ(4u, l.err[0].expected);
	EXPECT_EQ(6u, l.err[0].got);
	EXPECT_EQ(2u, bft_stream_stats(&s)->gap_events);
	rec_log_free(&l);
}

TEST(lost_throw_and_unwind_add_up_in_seq)
{
	struct bft_stream s;
	struct rec_log l = { 0 };

	/* THROW, LOST 5, UNWIND (longjmp), THROW (forced): 1 + 5 + 1 + 1 */
	ASSERT_EQ(0, decode_hex(SYNC0 THR "47 00 00 01 44 00 05 " THR
				"48 00 01 02 47 00 00 03 "
				"41 00 08 c0 84 3d e8 07 00", &l,
				BFT_STREAM_STOP, &s));
	EXPECT_EQ(0u, l.nerr);
	EXPECT_EQ(2u, bft_stream_stats(&s)->throws);
	EXPECT_EQ(1u, bft_stream_stats(&s)->unwinds);
	EXPECT_EQ(5u, bft_stream_stats(&s)->lost);
	EXPECT_EQ(3u, bft_stream_stats(&s)->events);
	rec_log_free(&l);
}

static const struct err_case exc_err_cases[] = {
	{ "throw without thread", SYNC0 "47 00 02 01", BFT_SERR_NO_THREAD, 9,
	  "THROW" },
	{ "unwind without thread", SYNC0 "48 00 02 01", BFT_SERR_NO_THREAD, 9,
	  "UNWIND" },
	{ "throw before sync", "47 00 02 01", BFT_SERR_BEFORE_SYNC, 0,
	  "THROW" },
	{ "throw type beyond u32", SYNC0 THR "47 00 80 80 80 80 10 01",
	  BFT_SERR_ID_RANGE, 16, "THROW type 4294967296" },
	{ "throw how 0", SYNC0 THR "47 00 02 00", BFT_SERR_FIELD_RANGE, 16,
	  "THROW how 0" },
	{ "throw how 4", SYNC0 THR "47 00 02 04", BFT_SERR_FIELD_RANGE, 16,
	  "THROW how 4" },
	{ "unwind of 0 frames", SYNC0 THR "48 00 00 01", BFT_SERR_FIELD_RANGE,
	  16, "UNWIND of 0 frames" },
	{ "unwind reason 0", SYNC0 THR "48 00 01 00", BFT_SERR_FIELD_RANGE, 16,
	  "UNWIND reason 0" },
	{ "unwind reason 9", SYNC0 THR "48 00 01 09", BFT_SERR_FIELD_RANGE, 16,
	  "UNWIND reason 9" },
	{ "overlong throw type", SYNC0 THR "47 00 82 00 01",
	  BFT_SERR_VARINT_OVERLONG, 16, "overlong" },
	{ "unwind past 64 bits", SYNC0 THR "48 00 ff ff ff ff ff ff ff ff ff 02 01",
	  BFT_SERR_VARINT_OVERFLOW, 16, "64 bits" },
	{ "truncated throw", SYNC0 THR "47 00 02", BFT_SERR_TRUNCATED, 16,
	  "3 byte(s)" },
	{ "truncated unwind", SYNC0 THR "48 00", BFT_SERR_TRUNCATED, 16,
	  "first 0x48" },
	{ "truncated unwind varint", SYNC0 THR "48 00 02 81", BFT_SERR_TRUNCATED,
	  16, "4 byte(s)" },
};

/*
 * Each case is refused with its code, at its offset, with its text, and
 * no record of the kinds in the BFT_REC_BIT() mask got through.
 */
static void expect_refused(struct __test_metadata *_metadata,
			   const struct err_case *cases, size_t n,
			   uint32_t kinds)
{
	for (size_t i = 0; i < n; i++) {
		const struct err_case *c = &cases[i];
		struct bft_stream s;
		struct rec_log l = { 0 };

		EXPECT_EQ(-EPROTO, decode_hex(c->hex, &l, BFT_STREAM_STOP, &s))
			TH_LOG("%s", c->name);
		ASSERT_EQ(1u, l.nerr) TH_LOG("%s", c->name);
		EXPECT_EQ(c->code, l.err[0].code) TH_LOG("%s: %s", c->name,
							   l.err[0].msg);
		EXPECT_EQ(c->offset, l.err[0].offset) TH_LOG("%s", c->name);
		EXPECT_NE(NULL, strstr(l.err[0].msg, c->text))
			TH_LOG("%s: \"%s\" lacks \"%s\"", c->name,
			       l.err[0].msg, c->text);
		for (unsigned int kind = 0; kind < BFT_REC__COUNT; kind++) {
			const char *what = bft_rec_kind_name(kind);

			if (!(kinds & BFT_REC_BIT(kind)))
				continue;
			EXPECT_EQ(0u, bft_stream_stats(&s)->by_kind[kind])
				TH_LOG("%s: %s", c->name, what);
		}
		rec_log_free(&l);
	}
}

TEST(malformed_throw_and_unwind_are_reported_with_offset)
{
	expect_refused(_metadata, exc_err_cases,
		       sizeof(exc_err_cases) / sizeof(exc_err_cases[0]),
		       BFT_REC_BIT(BFT_REC_THROW) | BFT_REC_BIT(BFT_REC_UNWIND));
}

/* A malformed UNWIND is skipped to the next SYNC: the gap counts it. */
TEST(resync_over_a_bad_unwind_marks_a_gap)
{
	struct bft_stream s;
	struct rec_log l = { 0 };

	ASSERT_EQ(0, decode_hex(SYNC0 THR "81 48 00 00 01 "
				"41 00 02 c0 84 3d e8 07 00 " THR "47 00 01 01",
				&l, BFT_STREAM_RESYNC, &s));
	ASSERT_EQ(1u, l.nerr);
	EXPECT_EQ(BFT_SERR_FIELD_RANGE, l.err[0].code);
	ASSERT_EQ(7u, l.n);
	EXPECT_EQ(BFT_REC_GAP, l.r[3].kind);
	EXPECT_EQ(1u, l.r[3].value);
	EXPECT_EQ(2u, l.r[3].value2);
	EXPECT_EQ(BFT_REC_THROW, l.r[6].kind);
	EXPECT_EQ(3u, bft_stream_seq(&s));
	rec_log_free(&l);
}

/*
 * The NAME example of bftrace.h 2.2, and a rename on another THREAD: any
 * byte but 0 may be in a name (here UTF-8 "é", '<' and '"'); NAME is no
 * event, so the SYNC's seq counts the enters only.
 *   SYNC0, THREAD 1234/1235                  (SYNC0 THR below)
 *   NAME "worker-1"                          49 00 08 77 6f 72 6b 65 72 2d 31
 *   ENTER 1                                  81
 *   THREAD 1234/1235, NAME "é<\"x"           42 00 d2 09 d3 09 00
 *                                            49 00 05 c3 a9 3c 22 78
 *   ENTER 2                                  82
 *   SYNC seq 2                               41 00 02 c0 84 3d e8 07 00
 */
#define NAME_HEX SYNC0 THR "49 00 08 77 6f 72 6b 65 72 2d 31 81 " THR \
	"49 00 05 c3 a9 3c 22 78 82 41 00 02 c0 84 3d e8 07 00"

static void check_names(struct __test_metadata *_metadata,
			const struct rec_log *l)
{
	char name[BFT_THREAD_NAME_MAX + 1];

	ASSERT_EQ(8u, l->n);
	EXPECT_EQ(BFT_REC_NAME, l->r[2].kind);
	EXPECT_EQ(BFT_ESC_NAME, l->r[2].esc);
	EXPECT_EQ(16u, l->r[2].offset);
	EXPECT_EQ(1235u, l->r[2].tid);
	EXPECT_EQ(0u, l->r[2].seq);
	bft_record_name(&l->r[2], name);
	EXPECT_STREQ("worker-1", name);
	EXPECT_EQ(BFT_REC_NAME, l->r[5].kind);
	bft_record_name(&l->r[5], name);
	EXPECT_STREQ("\xc3\xa9<\"x", name);
	EXPECT_EQ(1u, l->r[5].seq);
	EXPECT_EQ(BFT_REC_SYNC, l->r[7].kind);
	EXPECT_EQ(2u, l->r[7].value);
}

TEST(name_example_decodes_and_is_no_event)
{
	struct bft_stream s;
	struct rec_log l = { 0 };

	ASSERT_EQ(0, decode_hex(NAME_HEX, &l, BFT_STREAM_STOP, &s));
	EXPECT_EQ(0u, l.nerr);
	check_names(_metadata, &l);
	EXPECT_EQ(2u, bft_stream_stats(&s)->by_kind[BFT_REC_NAME]);
	EXPECT_EQ(2u, bft_stream_stats(&s)->events);
	EXPECT_EQ(0u, bft_stream_stats(&s)->gaps);
	rec_log_free(&l);
}

TEST(name_split_at_every_byte_decodes_the_same)
{
	decode_split_everywhere(_metadata, NAME_HEX, 0, 7, check_names);
}

TEST(writer_produces_name_example)
{
	struct bft_writer w;
	char got[160];
	const uint8_t *p;
	size_t len;

	ASSERT_EQ(0, bft_writer_init(&w, 1000, 0));
	ASSERT_EQ(0, bft_writer_set_time_bits(&w, 0));
	ASSERT_EQ(0, bft_writer_sync(&w, 1000000));
	ASSERT_EQ(0, bft_writer_name(&w, 1000000, 1234, 1235, "worker-1"));
	ASSERT_EQ(0, bft_writer_enter(&w, 1000000, 1234, 1235, 1));
	ASSERT_EQ(0, bft_writer_name(&w, 1000000, 1234, 1235, "\xc3\xa9<\"x"));
	ASSERT_EQ(0, bft_writer_enter(&w, 1000000, 1234, 1235, 2));
	ASSERT_EQ(0, bft_writer_sync(&w, 1000000));
	EXPECT_EQ(-EINVAL, bft_writer_name(&w, 1000000, 1234, 1235,
					   "sixteen-bytes-xx"));
	p = bft_writer_data(&w, &len);
	EXPECT_STREQ("410000c0843de80700" "4200d209d30900" "4900" "08"
		     "776f726b65722d31" "81" "4200d209d30900" "4900" "05"
		     "c3a93c2278" "82" "410002c0843de80700",
		     hex_format(p, len, got));
	bft_writer_free(&w);
}

static const struct err_case name_err_cases[] = {
	{ "name without thread", SYNC0 "49 00 01 61", BFT_SERR_NO_THREAD, 9,
	  "NAME before any THREAD" },
	{ "name before sync", "49 00 01 61", BFT_SERR_BEFORE_SYNC, 0, "NAME" },
	{ "name of 16 bytes", SYNC0 THR "49 00 10 " TEN_BYTES "61 61 61 61 61 61",
	  BFT_SERR_FIELD_RANGE, 16, "NAME of 16 bytes" },
	{ "name holding a 0", SYNC0 THR "49 00 03 61 00 62",
	  BFT_SERR_FIELD_RANGE, 16, "NAME holds a 0 byte" },
	{ "truncated name", SYNC0 THR "49 00 04 61 62", BFT_SERR_TRUNCATED, 16,
	  "5 byte(s)" },
	{ "overlong name count", SYNC0 THR "49 00 81 00 61",
	  BFT_SERR_VARINT_OVERLONG, 16, "overlong" },
};

TEST(malformed_names_are_reported_with_offset)
{
	expect_refused(_metadata, name_err_cases,
		       sizeof(name_err_cases) / sizeof(name_err_cases[0]),
		       BFT_REC_BIT(BFT_REC_NAME));
}

/*
 * The MARK and ARG examples of bftrace.h 2.2: probe 7 with 3 arguments,
 * the first signed (-3), then 5000000000 and 258 unsigned.  MARK is one
 * event, its ARGs none.
 *   SYNC0, THREAD 1234/1235
 *   MARK 7, 3 args, signed 1, unread 0       4a 00 07 03 01 00
 *   ARG -3 (zigzag 5)                        4b 00 05
 *   ARG 5000000000                           4b 00 80 e4 97 d0 12
 *   ARG 258                                  4b 00 82 02
 *   ENTER 1                                  81
 *   SYNC seq 2                               41 00 02 c0 84 3d e8 07 00
 */
#define MARK_HEX SYNC0 THR "4a 00 07 03 01 00 4b 00 05 " \
	"4b 00 80 e4 97 d0 12 4b 00 82 02 81 41 00 02 c0 84 3d e8 07 00"

static void check_marks(struct __test_metadata *_metadata,
			const struct rec_log *l)
{
	ASSERT_EQ(8u, l->n);
	EXPECT_EQ(BFT_REC_MARK, l->r[2].kind);
	EXPECT_EQ(BFT_ESC_MARK, l->r[2].esc);
	EXPECT_EQ(7u, l->r[2].value);
	EXPECT_EQ(3u, l->r[2].value2);
	EXPECT_EQ(1u, l->r[2].mark_signed);
	EXPECT_EQ(0u, l->r[2].mark_unread);
	EXPECT_EQ(1235u, l->r[2].tid);
	EXPECT_EQ(0u, l->r[2].seq);
	EXPECT_EQ(BFT_REC_ARG, l->r[3].kind);
	EXPECT_EQ(-3, (int64_t)l->r[3].value);
	EXPECT_EQ(0u, l->r[3].value2);
	EXPECT_EQ(1u, l->r[3].seq);
	EXPECT_EQ(5000000000u, l->r[4].value);
	EXPECT_EQ(1u, l->r[4].value2);
	EXPECT_EQ(258u, l->r[5].value);
	EXPECT_EQ(2u, l->r[5].value2);
	EXPECT_EQ(BFT_REC_ENTER, l->r[6].kind);
	EXPECT_EQ(1u, l->r[6].seq);
	EXPECT_EQ(BFT_REC_SYNC, l->r[7].kind);
	EXPECT_EQ(2u, l->r[7].value);
}

TEST(mark_example_decodes_as_one_event)
{
	struct bft_stream s;
	struct rec_log l = { 0 };

	ASSERT_EQ(0, decode_hex(MARK_HEX, &l, BFT_STREAM_STOP, &s));
	EXPECT_EQ(0u, l.nerr);
	check_marks(_metadata, &l);
	EXPECT_EQ(1u, bft_stream_stats(&s)->marks);
	EXPECT_EQ(2u, bft_stream_stats(&s)->events);
	EXPECT_EQ(3u, bft_stream_stats(&s)->by_kind[BFT_REC_ARG]);
	rec_log_free(&l);
}

TEST(mark_split_at_every_byte_decodes_the_same)
{
	decode_split_everywhere(_metadata, MARK_HEX, 0, 7, check_marks);
}

TEST(writer_produces_mark_example_and_extremes)
{
	uint64_t args[3] = { (uint64_t)-3, 5000000000u, 258 };
	uint64_t ext[2] = { UINT64_MAX, (uint64_t)INT64_MIN };
	struct bft_writer w;
	char got[200];
	const uint8_t *p;
	size_t len;

	ASSERT_EQ(0, bft_writer_init(&w, 1000, 0));
	ASSERT_EQ(0, bft_writer_set_time_bits(&w, 0));
	ASSERT_EQ(0, bft_writer_sync(&w, 1000000));
	ASSERT_EQ(0, bft_writer_mark(&w, 1000000, 1234, 1235, 7, 3, args,
				     1, 0));
	ASSERT_EQ(0, bft_writer_enter(&w, 1000000, 1234, 1235, 1));
	ASSERT_EQ(0, bft_writer_sync(&w, 1000000));
	EXPECT_EQ(-EINVAL, bft_writer_mark(&w, 1000000, 1, 2, 7, 1, args,
					   2, 0));
	EXPECT_EQ(-EINVAL, bft_writer_mark(&w, 1000000, 1, 2, 7, 13, args,
					   0, 0));
	p = bft_writer_data(&w, &len);
	EXPECT_STREQ("410000c0843de80700" "4200d209d30900" "4a0007030100"
		     "4b0005" "4b0080e497d012" "4b008202" "81"
		     "410002c0843de80700", hex_format(p, len, got));
	bft_writer_free(&w);

	/* 2^64 - 1 unsigned and INT64_MIN signed: both ten bytes */
	ASSERT_EQ(0, bft_writer_init(&w, 1000, 0));
	ASSERT_EQ(0, bft_writer_set_time_bits(&w, 0));
	ASSERT_EQ(0, bft_writer_sync(&w, 1000000));
	ASSERT_EQ(0, bft_writer_mark(&w, 1000000, 1234, 1235, 9, 2, ext,
				     2, 0));
	p = bft_writer_data(&w, &len);
	EXPECT_STREQ("410000c0843de80700" "4200d209d30900" "4a0009020200"
		     "4b00ffffffffffffffffff01" "4b00ffffffffffffffffff01",
		     hex_format(p, len, got));
	{
		struct bft_stream s;
		struct rec_log l = { 0 };
		char hex[200];
		size_t i;

		for (i = 0; i < len; i++)
			snprintf(hex + 3 * i, sizeof(hex) - 3 * i, "%02x ",
				 p[i]);
		ASSERT_EQ(0, decode_hex(hex, &l, BFT_STREAM_STOP, &s));
		ASSERT_EQ(5u, l.n);
		EXPECT_EQ(UINT64_MAX, l.r[3].value);
		EXPECT_EQ(INT64_MIN, (int64_t)l.r[4].value);
		rec_log_free(&l);
	}
	bft_writer_free(&w);
}

static const struct err_case mark_err_cases[] = {
	{ "mark without thread", SYNC0 "4a 00 01 00 00 00",
	  BFT_SERR_NO_THREAD, 9, "MARK before any THREAD" },
	{ "mark of 13 arguments", SYNC0 THR "4a 00 01 0d 00 00",
	  BFT_SERR_FIELD_RANGE, 16, "MARK of 13 arguments" },
	{ "signed bit past the count", SYNC0 THR "4a 00 01 01 02 00",
	  BFT_SERR_FIELD_RANGE, 16, "masks 0x2 0" },
	{ "unread bit past the count", SYNC0 THR "4a 00 01 00 00 01",
	  BFT_SERR_FIELD_RANGE, 16, "masks 0 0x1" },
	{ "mark id beyond u32", SYNC0 THR "4a 00 80 80 80 80 10 00 00 00",
	  BFT_SERR_ID_RANGE, 16, "4294967296" },
	{ "arg without mark", SYNC0 THR "4b 00 01", BFT_SERR_MARK_ARGS, 16,
	  "ARG without a MARK" },
};

/* the MARK was handed over already: what follows it is refused */
static const struct err_case mark_cut_cases[] = {
	{ "mark short of its args", SYNC0 THR "4a 00 01 02 00 00 4b 00 01 81",
	  BFT_SERR_MARK_ARGS, 25, "ENTER while 1 ARG records are due" },
	{ "escape inside the args", SYNC0 THR "4a 00 01 01 00 00 62 00",
	  BFT_SERR_MARK_ARGS, 22, "TIME_SHORT while 1" },
	{ "input ends before the args", SYNC0 THR "4a 00 01 02 00 00 4b 00 01",
	  BFT_SERR_MARK_ARGS, 25, "input ends while 1 ARG" },
};

TEST(malformed_marks_are_reported_with_offset)
{
	expect_refused(_metadata, mark_err_cases,
		       sizeof(mark_err_cases) / sizeof(mark_err_cases[0]),
		       BFT_REC_BIT(BFT_REC_MARK) | BFT_REC_BIT(BFT_REC_ARG));
	expect_refused(_metadata, mark_cut_cases,
		       sizeof(mark_cut_cases) / sizeof(mark_cut_cases[0]),
		       BFT_REC_BIT(BFT_REC_ENTER) |
		       BFT_REC_BIT(BFT_REC_TIME_SHORT));
}

TEST_HARNESS_MAIN
