// SPDX-License-Identifier: GPL-2.0
/*
 * bft_stream: the incremental decoder of one CPU's record stream, and the
 * stream state each record implies.  See bft_stream.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "wire/bft_stream.h"
#include "wire/bft_varint.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/* A record as parsed from bytes, before the stream state is applied. */
struct raw {
	unsigned int kind;	/* enum bft_rec_kind */
	unsigned int esc;
	uint64_t v[4];
	uint64_t units;		/* ENTER, EXIT: time units the value carried */
	uint64_t bad;		/* the offending value of a range error */
};

/* The records that need a THREAD before them. */
#define THREAD_KINDS							\
	(BFT_REC_BIT(BFT_REC_ENTER) | BFT_REC_BIT(BFT_REC_ENTER_NORET) |	\
	 BFT_REC_BIT(BFT_REC_EXIT) | BFT_REC_BIT(BFT_REC_THROW) |	\
	 BFT_REC_BIT(BFT_REC_UNWIND) | BFT_REC_BIT(BFT_REC_NAME) |	\
	 BFT_REC_BIT(BFT_REC_MARK))

/* step() result meaning "the decoder stopped" */
#define STEP_STOP	(-1)

static const char *const kind_names[BFT_REC__COUNT] = {
	[BFT_REC_NONE] = "none",
	[BFT_REC_ENTER] = "ENTER",
	[BFT_REC_EXIT] = "EXIT",
	[BFT_REC_ENTER_NORET] = "ENTER_NORET",
	[BFT_REC_SYNC] = "SYNC",
	[BFT_REC_THREAD] = "THREAD",
	[BFT_REC_TIME] = "TIME",
	[BFT_REC_TIME_SHORT] = "TIME_SHORT",
	[BFT_REC_LOST] = "LOST",
	[BFT_REC_BREAK] = "BREAK",
	[BFT_REC_GAP] = "GAP",
	[BFT_REC_THROW] = "THROW",
	[BFT_REC_UNWIND] = "UNWIND",
	[BFT_REC_NAME] = "NAME",
	[BFT_REC_MARK] = "MARK",
	[BFT_REC_ARG] = "ARG",
};

const char *bft_rec_kind_name(unsigned int kind)
{
	return kind < BFT_REC__COUNT ? kind_names[kind] : "invalid";
}

void bft_record_name(const struct bft_record *r, char *out)
{
	memcpy(out, &r->value, 8);
	memcpy(out + 8, &r->value2, 8);
	out[BFT_THREAD_NAME_MAX] = 0;
}

static const char *const err_names[BFT_SERR__COUNT] = {
	[BFT_SERR_NONE] = "no error",
	[BFT_SERR_VARINT_TOO_LONG] = "varint longer than 10 bytes",
	[BFT_SERR_VARINT_OVERFLOW] = "varint value beyond 64 bits",
	[BFT_SERR_VARINT_OVERLONG] = "overlong varint",
	[BFT_SERR_KIND_ZERO] = "escape kind 0",
	[BFT_SERR_KIND_UNKNOWN] = "unknown escape kind",
	[BFT_SERR_ID_RANGE] = "method id beyond u32",
	[BFT_SERR_FIELD_RANGE] = "field out of range",
	[BFT_SERR_BEFORE_SYNC] = "record before the first SYNC",
	[BFT_SERR_NO_THREAD] = "event of an unknown thread",
	[BFT_SERR_SEQ_GAP] = "sequence gap",
	[BFT_SERR_TIME_BACKWARDS] = "time goes backwards",
	[BFT_SERR_TRUNCATED] = "truncated record at end of input",
	[BFT_SERR_ABORTED] = "aborted by the record callback",
	[BFT_SERR_RECORD_TOO_LONG] = "record longer than 32 bytes",
	[BFT_SERR_MARK_ARGS] = "MARK without its ARG records",
};

const char *bft_stream_strerror(enum bft_stream_err code)
{
	return (unsigned int)code < BFT_SERR__COUNT ? err_names[code] :
						       "invalid error code";
}

void bft_stream_init(struct bft_stream *s, const struct bft_stream_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->o = *o;
	if (!s->o.kinds)
		s->o.kinds = ~0u;
	if (!s->o.on_record)
		s->o.kinds = 0;
	s->err.cpu = o->cpu;
}

static int varint_err(int r)
{
	return r == BFT_VARINT_TOO_LONG ? BFT_SERR_VARINT_TOO_LONG :
					  BFT_SERR_VARINT_OVERFLOW;
}

/* Number of LEB128 payload fields of each escape kind below 0x20. */
static const signed char esc_fields[BFT_ESC_TIME_SHORT] = {
	[BFT_ESC_SYNC] = 4,
	[BFT_ESC_THREAD] = 3,
	[BFT_ESC_TIME] = 1,
	[BFT_ESC_LOST] = 1,
	[BFT_ESC_BREAK] = 1,
	[BFT_ESC_ENTER_NORET] = 1,
	[BFT_ESC_THROW] = 2,
	[BFT_ESC_UNWIND] = 2,
	[BFT_ESC_NAME] = 1,	/* and the bytes it counts */
	[BFT_ESC_MARK] = 4,
	[BFT_ESC_ARG] = 1,
};

static const unsigned char esc_rec[BFT_ESC_TIME_SHORT] = {
	[BFT_ESC_SYNC] = BFT_REC_SYNC,
	[BFT_ESC_THREAD] = BFT_REC_THREAD,
	[BFT_ESC_TIME] = BFT_REC_TIME,
	[BFT_ESC_LOST] = BFT_REC_LOST,
	[BFT_ESC_BREAK] = BFT_REC_BREAK,
	[BFT_ESC_ENTER_NORET] = BFT_REC_ENTER_NORET,
	[BFT_ESC_THROW] = BFT_REC_THROW,
	[BFT_ESC_UNWIND] = BFT_REC_UNWIND,
	[BFT_ESC_NAME] = BFT_REC_NAME,
	[BFT_ESC_MARK] = BFT_REC_MARK,
	[BFT_ESC_ARG] = BFT_REC_ARG,
};

/* NAME's bytes, after its count at p[len - 1]: into v[0], v[1], 0-padded */
static int parse_name(const uint8_t *p, size_t n, size_t len, struct raw *raw)
{
	uint64_t count = raw->v[0];
	char name[16] = { 0 };

	if (count > BFT_THREAD_NAME_MAX) {
		raw->bad = count;
		return -BFT_SERR_FIELD_RANGE;
	}
	if (n - len < count)
		return 0;
	if (memchr(p + len, 0, count)) {
		raw->bad = count;
		return -BFT_SERR_FIELD_RANGE;
	}
	memcpy(name, p + len, count);
	memcpy(&raw->v[0], name, 8);
	memcpy(&raw->v[1], name + 8, 8);
	return (int)(len + count);
}

static int parse_escape(const uint8_t *p, size_t n, struct raw *raw)
{
	unsigned int kind = p[0] & BFT_ESC_KIND_MASK;
	size_t len = 2;
	int i, nf;

	raw->esc = kind;
	if (kind >= BFT_ESC_TIME_SHORT) {
		raw->kind = BFT_REC_TIME_SHORT;
		raw->v[0] = kind - (BFT_ESC_TIME_SHORT - 1);
		return 2;
	}
	if (kind == 0)
		return -BFT_SERR_KIND_ZERO;
	nf = esc_fields[kind];
	if (!nf)
		return -BFT_SERR_KIND_UNKNOWN;
	raw->kind = esc_rec[kind];
	for (i = 0; i < nf; i++) {
		int r = bft_leb128_get(p + len, n - len, &raw->v[i]);

		if (r == 0)
			return 0;
		if (r < 0)
			return -varint_err(r);
		if (bft_varint_overlong(p + len, (size_t)r))
			return -BFT_SERR_VARINT_OVERLONG;
		len += (size_t)r;
	}
	switch (kind) {
	case BFT_ESC_SYNC:
		if (raw->v[2] == 0 || raw->v[3] > BFT_TIME_BITS_MAX) {
			raw->bad = raw->v[2] == 0 ? 0 : raw->v[3];
			return -BFT_SERR_FIELD_RANGE;
		}
		break;
	case BFT_ESC_THREAD:
		if (raw->v[0] > UINT32_MAX || raw->v[1] > UINT32_MAX) {
			raw->bad = raw->v[0] > UINT32_MAX ? raw->v[0] :
							    raw->v[1];
			return -BFT_SERR_FIELD_RANGE;
		}
		break;
	case BFT_ESC_ENTER_NORET:
		if (raw->v[0] > UINT32_MAX) {
			raw->bad = raw->v[0];
			return -BFT_SERR_ID_RANGE;
		}
		break;
	case BFT_ESC_THROW:
		if (raw->v[0] > UINT32_MAX) {
			raw->bad = raw->v[0];
			return -BFT_SERR_ID_RANGE;
		}
		if (raw->v[1] < BFT_THROW_THROW || raw->v[1] > BFT_THROW_FORCED) {
			raw->bad = raw->v[1];
			return -BFT_SERR_FIELD_RANGE;
		}
		break;
	case BFT_ESC_UNWIND:
		if (raw->v[0] == 0 || raw->v[1] < BFT_UNWIND_CATCH ||
		    raw->v[1] > BFT_UNWIND_EXIT) {
			raw->bad = raw->v[1];
			return -BFT_SERR_FIELD_RANGE;
		}
		break;
	case BFT_ESC_NAME:
		return parse_name(p, n, len, raw);
	case BFT_ESC_MARK:
		if (raw->v[0] > UINT32_MAX) {
			raw->bad = raw->v[0];
			return -BFT_SERR_ID_RANGE;
		}
		/* a mask bit past the count names no argument */
		if (raw->v[1] > BFT_USDT_MAX_ARGS ||
		    raw->v[2] >> raw->v[1] || raw->v[3] >> raw->v[1]) {
			raw->bad = raw->v[1] > BFT_USDT_MAX_ARGS ? raw->v[1] :
				   raw->v[2] >> raw->v[1] ? raw->v[2] :
							    raw->v[3];
			return -BFT_SERR_FIELD_RANGE;
		}
		break;
	}
	return (int)len;
}

/* parse() without its bound on the record's length */
static int parse_any(const uint8_t *p, size_t n, unsigned int tbits,
		     struct raw *raw)
{
	uint8_t b = p[0];
	uint64_t v;
	int r;

	raw->esc = 0;
	if (!(b & BFT_PACK_CONT)) {
		v = b & BFT_PACK_PAYLOAD;
		raw->kind = (b & BFT_FLAG_ENTER) ? BFT_REC_ENTER : BFT_REC_EXIT;
		raw->units = v & ((1u << tbits) - 1);
		raw->v[0] = (v >> tbits) + (raw->kind == BFT_REC_EXIT);
		return 1;
	}
	if (n < 2)
		return 0;
	if (p[1] == 0) {
		/* the overlong two-byte form is an escape only with flag 0 */
		if (b & BFT_FLAG_ENTER)
			return -BFT_SERR_VARINT_OVERLONG;
		return parse_escape(p, n, raw);
	}
	r = bft_packed_get(p, n, &v);
	if (r == 0)
		return 0;
	if (r < 0)
		return -varint_err(r);
	if (bft_varint_overlong(p, (size_t)r))
		return -BFT_SERR_VARINT_OVERLONG;
	raw->units = v & ((1u << tbits) - 1);
	v >>= tbits;
	if (b & BFT_FLAG_ENTER) {
		if (v > UINT32_MAX) {
			raw->bad = v;
			return -BFT_SERR_ID_RANGE;
		}
		raw->kind = BFT_REC_ENTER;
		raw->v[0] = v;
	} else {
		if (v == UINT64_MAX) {
			raw->bad = v;
			return -BFT_SERR_FIELD_RANGE;
		}
		raw->kind = BFT_REC_EXIT;
		raw->v[0] = v + 1;
	}
	return r;
}

/*
 * Parse the record at p without touching the stream state.  Returns its
 * length, 0 if the n bytes end inside it, or -enum bft_stream_err.  A
 * record never needs more than BFT_RECORD_MAX bytes: a longer one (a SYNC
 * with four 10-byte fields is 42) is an error wherever the feeds split it,
 * so what is carried between feeds always fits the carry.
 */
static int parse(const uint8_t *p, size_t n, unsigned int tbits,
		 struct raw *raw)
{
	int r = parse_any(p, n < BFT_RECORD_MAX ? n : BFT_RECORD_MAX, tbits,
			  raw);

	if (r == 0 && n >= BFT_RECORD_MAX)
		return -BFT_SERR_RECORD_TOO_LONG;
	return r;
}

static void fill(const struct bft_stream *s, struct bft_record *rec,
		 unsigned int kind, uint64_t off)
{
	rec->time_ns = s->time_ns;
	rec->seq = s->seq;
	rec->offset = off;
	rec->cpu = s->o.cpu;
	rec->tgid = s->tgid;
	rec->tid = s->tid;
	rec->kind = (uint16_t)kind;
	rec->esc = 0;
	rec->value2 = 0;
	rec->mark_signed = 0;
	rec->mark_unread = 0;
	rec->zero = 0;
}

static int aborted(struct bft_stream *s, const struct bft_record *rec, int r)
{
	s->stopped = 1;
	s->stop_ret = r;
	s->err.code = BFT_SERR_ABORTED;
	s->err.offset = rec->offset;
	s->err.expected = s->err.got = 0;
	snprintf(s->err.msg, sizeof(s->err.msg),
		 "cpu %u offset %" PRIu64 ": %s (%d)", s->o.cpu, rec->offset,
		 err_names[BFT_SERR_ABORTED], r);
	return STEP_STOP;
}

/* Hand a record to the user; returns STEP_STOP if the user aborted. */
static inline int emit(struct bft_stream *s, const struct bft_record *rec)
{
	int r;

	s->st.records++;
	s->st.by_kind[rec->kind]++;
	if (!(s->o.kinds & BFT_REC_BIT(rec->kind)))
		return 0;
	r = s->o.on_record(s->o.ctx, rec);
	if (likely(!r))
		return 0;
	return aborted(s, rec, r);
}

/*
 * Report an error and return the action chosen.  detail, if not NULL, is
 * appended to the generic text.
 */
static int fail(struct bft_stream *s, enum bft_stream_err code, uint64_t off,
		uint64_t expected, uint64_t got, const char *fmt, ...)
{
	struct bft_stream_error *e = &s->err;
	int n, act;

	s->st.errors++;
	s->st.by_error[code]++;
	e->code = code;
	e->cpu = s->o.cpu;
	e->offset = off;
	e->expected = expected;
	e->got = got;
	n = snprintf(e->msg, sizeof(e->msg), "cpu %u offset %" PRIu64 ": %s",
		     s->o.cpu, off, err_names[code]);
	if (fmt && n >= 0 && (size_t)n < sizeof(e->msg)) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(e->msg + n, sizeof(e->msg) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	act = s->o.on_error ? s->o.on_error(s->o.ctx, e) : (int)s->o.policy;
	if (act != BFT_STREAM_RESYNC) {
		s->stopped = 1;
		s->stop_ret = -EPROTO;
		return BFT_STREAM_STOP;
	}
	return BFT_STREAM_RESYNC;
}

/* Start skipping towards the next SYNC; the faulty record's first byte goes. */
static int start_resync(struct bft_stream *s)
{
	s->args_due = 0;
	if (!s->resyncing) {
		s->resyncing = 1;
		s->st.resyncs++;
		s->gap_expected = s->seq;
	}
	s->st.skipped_bytes++;
	return 1;
}

static int gap(struct bft_stream *s, uint64_t off, uint64_t expected,
	       uint64_t got)
{
	struct bft_record rec;

	s->st.gaps++;
	if (got > expected)
		s->st.gap_events += got - expected;
	fill(s, &rec, BFT_REC_GAP, off);
	rec.value = expected;
	rec.value2 = got;
	return emit(s, &rec);
}

static int apply_sync(struct bft_stream *s, const struct raw *raw,
		      uint64_t off, int resynced)
{
	uint64_t seq = raw->v[0], t = raw->v[1];
	struct bft_record rec;

	if (!s->synced) {
		s->time_ns = t;
		if (resynced && gap(s, off, s->gap_expected, seq))
			return STEP_STOP;
	} else if (resynced) {
		if (gap(s, off, s->gap_expected, seq))
			return STEP_STOP;
	} else if (seq != s->seq) {
		if (fail(s, BFT_SERR_SEQ_GAP, off, s->seq, seq,
			 ": expected seq %" PRIu64 ", got %" PRIu64,
			 s->seq, seq) != BFT_STREAM_RESYNC)
			return STEP_STOP;
		if (gap(s, off, s->seq, seq))
			return STEP_STOP;
	}
	if (s->synced && t < s->time_ns) {
		if (fail(s, BFT_SERR_TIME_BACKWARDS, off, s->time_ns, t,
			 ": SYNC time %" PRIu64 " ns before stream time %"
			 PRIu64 " ns", t, s->time_ns) != BFT_STREAM_RESYNC)
			return STEP_STOP;
		t = s->time_ns;
	}
	s->synced = 1;
	s->seq = seq;
	s->time_ns = t;
	s->res_ns = raw->v[2];
	s->tbits = (uint8_t)raw->v[3];
	fill(s, &rec, BFT_REC_SYNC, off);
	rec.esc = BFT_ESC_SYNC;
	rec.value = seq;
	rec.value2 = raw->v[2];
	return emit(s, &rec);
}

static int add_time(struct bft_stream *s, uint64_t units, uint64_t mul,
		    uint64_t off)
{
	if (units && mul > (UINT64_MAX - s->time_ns) / units) {
		if (fail(s, BFT_SERR_FIELD_RANGE, off, 0, units,
			 ": stream time overflows by %" PRIu64 " x %" PRIu64
			 " ns", units, mul) != BFT_STREAM_RESYNC)
			return STEP_STOP;
		return start_resync(s);
	}
	s->time_ns += units * mul;
	return 0;
}

/*
 * The fast path may add up to BFT_TIME_SHORT_MAX units without a check of
 * its own.  Written as a division so that it cannot overflow itself (a
 * SYNC may carry any unit up to 2^64 - 1); when it does not hold, the
 * record takes the slow path, whose add_time() refuses the overflow, so the
 * result is the same wherever the input was split.
 */
static inline bool short_time_fits(const struct bft_stream *s)
{
	return s->res_ns <= (UINT64_MAX - s->time_ns) / BFT_TIME_SHORT_MAX;
}

/* Apply a parsed record of len bytes at stream offset off and emit it. */
static int apply(struct bft_stream *s, const struct raw *raw, int len,
		 uint64_t off)
{
	struct bft_record rec;
	int r;

	if (unlikely(!s->synced) && raw->kind != BFT_REC_SYNC) {
		if (fail(s, BFT_SERR_BEFORE_SYNC, off, 0, 0, ": %s",
			 kind_names[raw->kind]) != BFT_STREAM_RESYNC)
			return STEP_STOP;
		return start_resync(s);
	}
	/* a MARK's ARGs follow it at once, and nothing else does */
	if (unlikely((s->args_due != 0) != (raw->kind == BFT_REC_ARG))) {
		if (fail(s, BFT_SERR_MARK_ARGS, off, s->args_due, 0,
			 s->args_due ? ": %s while %u ARG records are due" :
				       ": %s without a MARK before it",
			 kind_names[raw->kind], s->args_due) !=
		    BFT_STREAM_RESYNC)
			return STEP_STOP;
		s->args_due = 0;
		return start_resync(s);
	}
	/* an event, a NAME or an ARG belongs to the last THREAD's thread */
	if (unlikely(!s->threaded) && (BFT_REC_BIT(raw->kind) & THREAD_KINDS)) {
		if (fail(s, BFT_SERR_NO_THREAD, off, 0, 0,
			 ": %s before any THREAD record",
			 kind_names[raw->kind]) != BFT_STREAM_RESYNC)
			return STEP_STOP;
		return start_resync(s);
	}
	switch (raw->kind) {
	case BFT_REC_ENTER:
	case BFT_REC_ENTER_NORET:
	case BFT_REC_EXIT:
		if (raw->kind != BFT_REC_ENTER_NORET && raw->units) {
			r = add_time(s, raw->units, s->res_ns, off);
			if (r)
				return r;
		}
		fill(s, &rec, raw->kind, off);
		rec.value = raw->v[0];
		rec.value2 = raw->kind == BFT_REC_ENTER_NORET ? 0 : raw->units;
		rec.esc = (uint16_t)raw->esc;
		s->seq += raw->v[0] * (raw->kind == BFT_REC_EXIT) +
			  (raw->kind != BFT_REC_EXIT);
		if (raw->kind == BFT_REC_EXIT) {
			s->st.exits += raw->v[0];
			s->st.events += raw->v[0];
		} else {
			s->st.events++;
			if (raw->kind == BFT_REC_ENTER)
				s->st.enters++;
			else
				s->st.noret_enters++;
		}
		break;
	case BFT_REC_THROW:
	case BFT_REC_UNWIND:
		fill(s, &rec, raw->kind, off);
		rec.value = raw->v[0];
		rec.value2 = raw->v[1];
		/* one event each in seq, whatever n an UNWIND closes */
		s->seq++;
		s->st.events++;
		if (raw->kind == BFT_REC_THROW)
			s->st.throws++;
		else
			s->st.unwinds++;
		break;
	case BFT_REC_MARK:
		fill(s, &rec, raw->kind, off);
		rec.value = raw->v[0];
		rec.value2 = raw->v[1];
		s->mark_signed = rec.mark_signed = (uint16_t)raw->v[2];
		s->mark_unread = rec.mark_unread = (uint16_t)raw->v[3];
		s->args_due = s->mark_nargs = (uint8_t)raw->v[1];
		s->seq++;
		s->st.events++;
		s->st.marks++;
		break;
	case BFT_REC_ARG: {
		unsigned int i = s->mark_nargs - s->args_due--;

		fill(s, &rec, raw->kind, off);
		rec.value = raw->v[0];
		if (s->mark_signed >> i & 1)
			rec.value = (raw->v[0] >> 1) ^ (0 - (raw->v[0] & 1));
		rec.value2 = i;
		rec.mark_signed = s->mark_signed;
		rec.mark_unread = s->mark_unread;
		break;
	}
	case BFT_REC_SYNC:
		r = apply_sync(s, raw, off, 0);
		return r ? r : len;
	case BFT_REC_THREAD:
		r = add_time(s, raw->v[2], 1, off);
		if (r)
			return r;
		s->tgid = (uint32_t)raw->v[0];
		s->tid = (uint32_t)raw->v[1];
		s->threaded = 1;
		fill(s, &rec, raw->kind, off);
		rec.value = raw->v[2];
		break;
	case BFT_REC_TIME:
	case BFT_REC_TIME_SHORT:
		r = add_time(s, raw->v[0], s->res_ns, off);
		if (r)
			return r;
		fill(s, &rec, raw->kind, off);
		rec.value = raw->v[0];
		break;
	case BFT_REC_LOST:
		fill(s, &rec, raw->kind, off);
		rec.value = raw->v[0];
		s->seq += raw->v[0];
		s->st.lost += raw->v[0];
		break;
	case BFT_REC_BREAK:
		fill(s, &rec, raw->kind, off);
		rec.value = raw->v[0];
		s->st.breaks++;
		break;
	case BFT_REC_NAME:
		fill(s, &rec, raw->kind, off);
		rec.value = raw->v[0];
		rec.value2 = raw->v[1];
		break;
	default:
		return start_resync(s);	/* not reached: parse() knows kinds */
	}
	rec.esc = (uint16_t)raw->esc;
	if (emit(s, &rec))
		return STEP_STOP;
	return len;
}

static int parse_error(struct bft_stream *s, int code, const struct raw *raw,
		       const uint8_t *p, uint64_t off)
{
	const char *detail = NULL;
	char buf[64];

	switch (code) {
	case BFT_SERR_KIND_ZERO:
	case BFT_SERR_KIND_UNKNOWN:
		snprintf(buf, sizeof(buf), ": escape byte 0x%02x", p[0]);
		detail = buf;
		break;
	case BFT_SERR_ID_RANGE:
		snprintf(buf, sizeof(buf), ": %s%" PRIu64,
			 p[1] == 0 && (p[0] & BFT_ESC_KIND_MASK) == BFT_ESC_THROW ?
			 "THROW type " : "", raw->bad);
		detail = buf;
		break;
	case BFT_SERR_FIELD_RANGE:
		detail = buf;
		if (p[1] != 0)
			detail = ": EXIT run longer than 2^64 - 1";
		else if ((p[0] & BFT_ESC_KIND_MASK) == BFT_ESC_SYNC &&
			 raw->bad == 0)
			detail = ": SYNC res_ns is 0";
		else if ((p[0] & BFT_ESC_KIND_MASK) == BFT_ESC_SYNC)
			snprintf(buf, sizeof(buf), ": SYNC tbits %" PRIu64,
				 raw->bad);
		else if ((p[0] & BFT_ESC_KIND_MASK) == BFT_ESC_THROW)
			snprintf(buf, sizeof(buf), ": THROW how %" PRIu64,
				 raw->bad);
		else if ((p[0] & BFT_ESC_KIND_MASK) == BFT_ESC_UNWIND &&
			 raw->v[0] == 0)
			detail = ": UNWIND of 0 frames";
		else if ((p[0] & BFT_ESC_KIND_MASK) == BFT_ESC_UNWIND)
			snprintf(buf, sizeof(buf), ": UNWIND reason %" PRIu64,
				 raw->bad);
		else if ((p[0] & BFT_ESC_KIND_MASK) == BFT_ESC_NAME &&
			 raw->bad > BFT_THREAD_NAME_MAX)
			snprintf(buf, sizeof(buf), ": NAME of %" PRIu64
				 " bytes", raw->bad);
		else if ((p[0] & BFT_ESC_KIND_MASK) == BFT_ESC_NAME)
			detail = ": NAME holds a 0 byte";
		else if ((p[0] & BFT_ESC_KIND_MASK) == BFT_ESC_MARK)
			snprintf(buf, sizeof(buf), ": MARK of %" PRIu64
				 " arguments, masks %#" PRIx64 " %#" PRIx64,
				 raw->v[1], raw->v[2], raw->v[3]);
		else
			snprintf(buf, sizeof(buf),
				 ": THREAD id %" PRIu64 " beyond u32", raw->bad);
		break;
	default:
		snprintf(buf, sizeof(buf), ": first byte 0x%02x", p[0]);
		detail = buf;
		break;
	}
	if (fail(s, (enum bft_stream_err)code, off, 0, 0, "%s", detail) !=
	    BFT_STREAM_RESYNC)
		return STEP_STOP;
	return start_resync(s);
}

/*
 * While resynchronising: skip to the first well-formed SYNC in p and apply
 * it.  Returns bytes consumed, 0 if a candidate at p[0] is incomplete.
 */
static int scan(struct bft_stream *s, const uint8_t *p, size_t n,
		uint64_t off)
{
	size_t i = 0;

	while (i < n) {
		const uint8_t *q = memchr(p + i, BFT_ESC_LEAD | BFT_ESC_SYNC,
					  n - i);
		struct raw raw;
		int r;

		if (!q) {
			s->st.skipped_bytes += n - i;
			return (int)n;
		}
		s->st.skipped_bytes += (size_t)(q - (p + i));
		i = (size_t)(q - p);
		r = parse(q, n - i, s->tbits, &raw);
		if (r == 0)
			return (int)i;	/* wait for the rest of the candidate */
		if (r > 0 && raw.kind == BFT_REC_SYNC) {
			s->resyncing = 0;
			s->threaded = 0;
			if (apply_sync(s, &raw, off + i, 1))
				return STEP_STOP;
			return (int)i + r;
		}
		s->st.skipped_bytes++;
		i++;
	}
	return (int)i;
}

/*
 * Decode one record (or skip while resynchronising) at p, stream offset off.
 * Returns bytes consumed, 0 if more bytes are needed, or STEP_STOP.
 */
static int step(struct bft_stream *s, const uint8_t *p, size_t n,
		uint64_t off)
{
	struct raw raw = { .bad = 0 };
	int r;

	if (s->resyncing)
		return scan(s, p, n, off);
	r = parse(p, n, s->tbits, &raw);
	if (r > 0)
		return apply(s, &raw, r, off);
	if (r == 0)
		return 0;
	return parse_error(s, -r, &raw, p, off);
}

/* The hot loop over bytes not involving the carry. */
static int run(struct bft_stream *s, const uint8_t *p, size_t n, size_t *used)
{
	size_t i = 0;

	while (i < n) {
		uint8_t b = p[i];
		uint64_t v = b & BFT_PACK_PAYLOAD;
		size_t len = 1;

		/*
		 * A packed ENTER or EXIT of two bytes (a method id past the
		 * first byte's bits): as common as one byte.  A zero second
		 * byte makes an escape, or an overlong form.
		 */
		if ((b & BFT_PACK_CONT) && n - i >= 2 && p[i + 1] &&
		    p[i + 1] < 0x80) {
			v |= (uint64_t)p[i + 1] << 6;
			len = 2;
		}
		if (likely(len == 2 || !(b & BFT_PACK_CONT)) &&
		    likely(s->threaded) && likely(!s->resyncing) &&
		    likely(!s->args_due) && likely(short_time_fits(s))) {
			struct bft_record rec;
			uint64_t units = v & ((1u << s->tbits) - 1);

			v >>= s->tbits;
			s->time_ns += units * s->res_ns;
			fill(s, &rec, BFT_REC_EXIT, s->offset + i);
			rec.value2 = units;
			if (b & BFT_FLAG_ENTER) {
				rec.kind = BFT_REC_ENTER;
				s->st.enters++;
				s->seq++;
				s->st.events++;
			} else {
				v++;
				s->st.exits += v;
				s->seq += v;
				s->st.events += v;
			}
			rec.value = v;
			if (unlikely(emit(s, &rec))) {
				*used = i + len;
				return STEP_STOP;
			}
			i += len;
			continue;
		}
		/* TIME_SHORT is the most frequent escape: 0x60..0x7f, 0x00 */
		if ((b & 0xe0) == (BFT_ESC_LEAD | BFT_ESC_TIME_SHORT) &&
		    i + 1 < n && p[i + 1] == 0 && likely(s->synced) &&
		    likely(!s->resyncing) && likely(!s->args_due) &&
		    likely(short_time_fits(s))) {
			struct bft_record rec;
			uint64_t units = (b & BFT_ESC_KIND_MASK) -
					 (BFT_ESC_TIME_SHORT - 1);

			s->time_ns += units * s->res_ns;
			i += 2;
			if (!(s->o.kinds & BFT_REC_BIT(BFT_REC_TIME_SHORT))) {
				s->st.records++;
				s->st.by_kind[BFT_REC_TIME_SHORT]++;
				continue;
			}
			i -= 2;
			fill(s, &rec, BFT_REC_TIME_SHORT, s->offset + i);
			rec.value = units;
			rec.esc = b & BFT_ESC_KIND_MASK;
			if (unlikely(emit(s, &rec))) {
				*used = i + 2;
				return STEP_STOP;
			}
			i += 2;
			continue;
		}
		{
			int r = step(s, p + i, n - i, s->offset + i);

			if (r == STEP_STOP) {
				*used = i;
				return STEP_STOP;
			}
			if (r == 0)
				break;
			i += (size_t)r;
		}
	}
	*used = i;
	return 0;
}

int bft_stream_feed(struct bft_stream *s, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	size_t used;

	if (s->stopped)
		return s->stop_ret;
	s->st.bytes += n;
	/* Finish a record split by the previous feed, in a small window. */
	while (s->carry_len) {
		uint8_t win[2 * BFT_RECORD_MAX];
		size_t have = s->carry_len;
		size_t take = n < BFT_RECORD_MAX ? n : BFT_RECORD_MAX;
		size_t pos = 0;

		memcpy(win, s->carry, have);
		memcpy(win + have, p, take);
		while (pos < have) {
			int r = step(s, win + pos, have + take - pos,
				     s->offset + pos);

			if (r == STEP_STOP)
				return s->stop_ret;
			if (r == 0)
				break;
			pos += (size_t)r;
		}
		if (pos < have) {
			/* still incomplete: all of this feed is in the window */
			memmove(s->carry, win + pos, have + take - pos);
			s->carry_len = (uint8_t)(have + take - pos);
			s->offset += pos;
			return 0;
		}
		s->carry_len = 0;
		s->offset += have;
		p += pos - have;
		n -= pos - have;
		s->offset += pos - have;
	}
	if (run(s, p, n, &used) == STEP_STOP) {
		s->offset += used;
		return s->stop_ret;
	}
	s->offset += used;
	if (used < n) {
		/* a record is split; parse() needs at most BFT_RECORD_MAX */
		memcpy(s->carry, p + used, n - used);
		s->carry_len = (uint8_t)(n - used);
	}
	return 0;
}

int bft_stream_finish(struct bft_stream *s)
{
	if (s->stopped)
		return s->stop_ret;
	if (!s->carry_len && s->args_due && !s->resyncing) {
		if (fail(s, BFT_SERR_MARK_ARGS, s->offset, s->args_due, 0,
			 ": the input ends while %u ARG records are due",
			 s->args_due) != BFT_STREAM_RESYNC)
			return s->stop_ret;
		s->args_due = 0;
		return 0;
	}
	if (!s->carry_len)
		return 0;
	if (s->resyncing) {
		s->st.skipped_bytes += s->carry_len;
	} else if (fail(s, BFT_SERR_TRUNCATED, s->offset, 0, s->carry_len,
			": %u byte(s) of a record, first 0x%02x",
			s->carry_len, s->carry[0]) != BFT_STREAM_RESYNC) {
		return s->stop_ret;
	} else {
		s->st.skipped_bytes += s->carry_len;
	}
	s->offset += s->carry_len;
	s->carry_len = 0;
	return 0;
}

const struct bft_stream_stats *bft_stream_stats(const struct bft_stream *s)
{
	return &s->st;
}

const struct bft_stream_error *bft_stream_last_error(const struct bft_stream *s)
{
	return &s->err;
}

uint64_t bft_stream_time(const struct bft_stream *s)
{
	return s->time_ns;
}

uint64_t bft_stream_seq(const struct bft_stream *s)
{
	return s->seq;
}
