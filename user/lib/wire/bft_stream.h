/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Incremental decoder of one CPU's record stream (bftrace.h, section 2).
 *
 * Feed it the bytes of one CPU stream in chunks of any size: a record may be
 * split across feeds at any byte (the kernel's read() never splits one, but a
 * file or a socket may).  Every record is decoded into a struct bft_record
 * and handed to on_record, in stream order, together with the stream state
 * it implies: the thread it belongs to and the stream time.
 *
 * Stream state, as the decoder maintains it:
 *   - time: set by SYNC (absolute), advanced by TIME (delta * res_ns),
 *     TIME_SHORT ((kind - 0x1f) * res_ns), the units an ENTER or EXIT
 *     carries in its low tbits bits (the SYNC's last field), and THREAD
 *     (delta_ns, exact: the stream time becomes current + delta_ns and
 *     later TIME deltas count units from there).  Events carry the time
 *     of the last of these, their own units included.
 *   - thread: (tgid, tid) of the last THREAD record.
 *   - seq: events (ENTER, ENTER_NORET, THROW, UNWIND, MARK, each exit of
 *     an EXIT run) plus LOST counts since the last SYNC, added to that SYNC's seq.
 *     The next SYNC must carry exactly this value.
 *
 * Validation.  Each of these is an error (enum bft_stream_err):
 *   a varint longer than 10 bytes or beyond 64 bits; an overlong varint other
 *   than the escape form; escape kind 0 or an unknown kind; an ENTER or
 *   ENTER_NORET id or a THROW type beyond u32; a tgid/tid beyond u32;
 *   res_ns 0, or tbits beyond BFT_TIME_BITS_MAX; a THROW how or an UNWIND reason that is not a BFT_THROW_* /
 *   BFT_UNWIND_* value; an UNWIND of 0 frames; a MARK with more than
 *   BFT_USDT_MAX_ARGS arguments or a mask bit past them, or not followed
 *   at once by exactly its ARG records, or an ARG without one; a stream time
 *   that would overflow u64; any record before the first SYNC; an event
 *   while the thread is unknown (no THREAD since the start or the last
 *   resync; a plain SYNC keeps the thread); a SYNC whose seq
 *   differs from the one counted (a sequence gap, with expected/got); a SYNC
 *   whose time is earlier than the stream time (time going backwards); a
 *   record longer than BFT_RECORD_MAX (no ring holds one, and the decoder
 *   keeps at most that much of a record split between feeds); a partial
 *   record left at bft_stream_finish().
 *
 * On an error the decoder calls on_error (or, if NULL, applies opts.policy),
 * which chooses:
 *   BFT_STREAM_STOP    the decoder stops: this and every later feed returns
 *                      -EPROTO.  bft_stream_last_error() tells why.
 *   BFT_STREAM_RESYNC  for a malformed record: skip bytes up to the next
 *                      well-formed SYNC record and continue from there; the
 *                      skipped bytes are counted, and a BFT_REC_GAP record is
 *                      emitted before that SYNC.  For a sequence gap: emit
 *                      BFT_REC_GAP, take the SYNC's seq and continue.  For
 *                      time going backwards: keep the stream time (the SYNC
 *                      record then carries the clamped time) and continue.
 * A BFT_REC_GAP means "events are missing here": consumers treat it like
 * LOST (a data break for every thread).
 *
 * The decoder never allocates: struct bft_stream is embedded by its user.
 * Its fields are private.
 */
#ifndef BFT_STREAM_H
#define BFT_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <linux/bftrace.h>

enum bft_rec_kind {
	BFT_REC_NONE,
	BFT_REC_ENTER,		/* value: method id, value2: time units it
				 * carried (bftrace.h 2.1) */
	BFT_REC_EXIT,		/* value: number of exits (>= 1), value2: as
				 * ENTER */
	BFT_REC_ENTER_NORET,	/* value: method id */
	BFT_REC_SYNC,		/* value: seq, value2: res_ns (tbits is the
				 * decoder's own: 2.1) */
	BFT_REC_THREAD,		/* value: delta_ns; tgid/tid: the new thread */
	BFT_REC_TIME,		/* value: units */
	BFT_REC_TIME_SHORT,	/* value: units (1..32) */
	BFT_REC_LOST,		/* value: events lost */
	BFT_REC_BREAK,		/* value: reason, BFT_BREAK_* */
	BFT_REC_GAP,		/* synthetic: value: seq expected, value2: seq got */
	BFT_REC_THROW,		/* value: exception type id (0: unknown),
				 * value2: how, BFT_THROW_* */
	BFT_REC_UNWIND,		/* value: frames left (>= 1), value2: reason,
				 * BFT_UNWIND_* */
	BFT_REC_NAME,		/* value, value2: the name's bytes 0-7 and
				 * 8-15, 0-padded (bft_record_name()) */
	BFT_REC_MARK,		/* value: probe id, value2: n arguments;
				 * mark_signed, mark_unread: its masks */
	BFT_REC_ARG,		/* value: the argument (a signed one
				 * sign-extended, zigzag undone), value2:
				 * its index; masks: its MARK's */
	BFT_REC__COUNT
};

#define BFT_REC_BIT(kind)	(1u << (kind))
/* The records that matter to per-thread reconstruction. */
#define BFT_REC_CALLTREE_KINDS						\
	(BFT_REC_BIT(BFT_REC_ENTER) | BFT_REC_BIT(BFT_REC_EXIT) |	\
	 BFT_REC_BIT(BFT_REC_ENTER_NORET) | BFT_REC_BIT(BFT_REC_LOST) |	\
	 BFT_REC_BIT(BFT_REC_BREAK) | BFT_REC_BIT(BFT_REC_GAP) |	\
	 BFT_REC_BIT(BFT_REC_THROW) | BFT_REC_BIT(BFT_REC_UNWIND) |	\
	 BFT_REC_BIT(BFT_REC_MARK) | BFT_REC_BIT(BFT_REC_ARG))

struct bft_record {
	uint64_t time_ns;	/* stream time of this record, after it applied */
	uint64_t value;		/* see enum bft_rec_kind */
	uint64_t value2;
	uint64_t seq;		/* this CPU's events+lost before this record */
	uint64_t offset;	/* offset of its first byte in the CPU stream */
	uint32_t cpu;
	uint32_t tgid;		/* current thread; 0/0 before the first THREAD */
	uint32_t tid;
	uint16_t kind;		/* enum bft_rec_kind */
	uint16_t esc;		/* escape kind byte (e.g. 0x22), 0 for ENTER/EXIT */
	uint16_t mark_signed;	/* MARK, ARG: bit i, argument i is signed */
	uint16_t mark_unread;	/* MARK, ARG: bit i, argument i unreadable */
	uint32_t zero;		/* 0: no padding, so records compare whole */
};

const char *bft_rec_kind_name(unsigned int kind);

/* A BFT_REC_NAME record's name, terminated: out holds BFT_THREAD_NAME_MAX + 1. */
void bft_record_name(const struct bft_record *r, char *out);

enum bft_stream_err {
	BFT_SERR_NONE,
	BFT_SERR_VARINT_TOO_LONG,
	BFT_SERR_VARINT_OVERFLOW,
	BFT_SERR_VARINT_OVERLONG,
	BFT_SERR_KIND_ZERO,
	BFT_SERR_KIND_UNKNOWN,
	BFT_SERR_ID_RANGE,	/* method id or THROW type > UINT32_MAX */
	BFT_SERR_FIELD_RANGE,	/* tgid/tid > u32, res_ns 0, time overflow,
				 * THROW how, UNWIND n 0 or reason */
	BFT_SERR_BEFORE_SYNC,
	BFT_SERR_NO_THREAD,
	BFT_SERR_SEQ_GAP,	/* expected/got set */
	BFT_SERR_TIME_BACKWARDS,/* expected: stream time, got: SYNC time */
	BFT_SERR_TRUNCATED,	/* at finish: a partial record is left */
	BFT_SERR_ABORTED,	/* on_record returned nonzero */
	BFT_SERR_RECORD_TOO_LONG, /* longer than BFT_RECORD_MAX */
	BFT_SERR_MARK_ARGS,	/* a MARK not followed by exactly its ARGs */
	BFT_SERR__COUNT
};

struct bft_stream_error {
	enum bft_stream_err code;
	uint32_t cpu;
	uint64_t offset;	/* stream offset of the faulty record */
	uint64_t expected;
	uint64_t got;
	char msg[192];		/* "cpu 3 offset 1234: sequence gap: ..." */
};

enum bft_stream_action {
	BFT_STREAM_STOP,
	BFT_STREAM_RESYNC,
};

struct bft_stream_opts {
	uint32_t cpu;
	/* Return 0 to continue; nonzero aborts the feed, which returns it. */
	int (*on_record)(void *ctx, const struct bft_record *r);
	/* Return an enum bft_stream_action.  NULL: apply policy. */
	int (*on_error)(void *ctx, const struct bft_stream_error *e);
	void *ctx;
	enum bft_stream_action policy;	/* default (0): BFT_STREAM_STOP */
	/*
	 * BFT_REC_BIT() mask of the kinds handed to on_record; 0 means all.
	 * The others are still decoded, checked and counted.
	 */
	uint32_t kinds;
};

struct bft_stream_stats {
	uint64_t bytes;		/* fed */
	uint64_t records;	/* decoded, GAP included */
	uint64_t by_kind[BFT_REC__COUNT];
	uint64_t events;	/* enters + noret enters + exits + throws +
				 * unwinds + marks: what seq counts besides
				 * LOST */
	uint64_t enters;
	uint64_t noret_enters;
	uint64_t exits;		/* each exit of each run */
	uint64_t throws;	/* THROW records */
	uint64_t unwinds;	/* UNWIND records (not the frames they close) */
	uint64_t marks;		/* MARK records */
	uint64_t lost;		/* sum of LOST counts */
	uint64_t breaks;
	uint64_t gaps;		/* sequence gaps and resyncs */
	uint64_t gap_events;	/* sum of (got - expected) over forward gaps */
	uint64_t errors;
	uint64_t by_error[BFT_SERR__COUNT];
	uint64_t resyncs;
	uint64_t skipped_bytes;	/* thrown away while resynchronising */
};

struct bft_stream {
	/* private */
	struct bft_stream_opts o;
	struct bft_stream_stats st;
	struct bft_stream_error err;
	uint64_t offset;	/* stream offset of carry[0] or the next byte */
	uint64_t time_ns;
	uint64_t res_ns;
	uint64_t seq;
	uint64_t gap_expected;	/* seq at the error that started a resync */
	uint64_t gap_time;
	int stop_ret;		/* what feed returns once stopped */
	uint32_t tgid, tid;
	uint8_t tbits;		/* the last SYNC's time bits */
	uint8_t synced;		/* a SYNC has been seen (since resync) */
	uint8_t threaded;	/* a THREAD has been seen (since resync) */
	uint8_t resyncing;
	uint8_t stopped;
	uint8_t carry_len;
	uint8_t args_due;	/* ARG records the last MARK still needs */
	uint8_t mark_nargs;
	uint16_t mark_signed, mark_unread;
	uint8_t carry[BFT_RECORD_MAX];
};

void bft_stream_init(struct bft_stream *s, const struct bft_stream_opts *o);

/*
 * Decode n bytes.  Returns 0 when all were consumed (a trailing partial
 * record is kept for the next feed), -EPROTO if the decoder is stopped (now
 * or before) by an error, or on_record's nonzero return value (the decoder
 * is then stopped with BFT_SERR_ABORTED).
 */
int bft_stream_feed(struct bft_stream *s, const void *buf, size_t n);

/* End of input: a partial record left is a BFT_SERR_TRUNCATED error. */
int bft_stream_finish(struct bft_stream *s);

const struct bft_stream_stats *bft_stream_stats(const struct bft_stream *s);
/* The last error, code BFT_SERR_NONE if there was none. */
const struct bft_stream_error *bft_stream_last_error(const struct bft_stream *s);
const char *bft_stream_strerror(enum bft_stream_err code);
/* Current stream time and seq (what the next SYNC must carry). */
uint64_t bft_stream_time(const struct bft_stream *s);
uint64_t bft_stream_seq(const struct bft_stream *s);

#endif /* BFT_STREAM_H */
