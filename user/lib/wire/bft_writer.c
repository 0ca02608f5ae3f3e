// SPDX-License-Identifier: GPL-2.0
/*
 * bft_writer: the user-space encoder of one CPU's record stream, by the
 * kernel writer's rules, for tests and benchmarks.  See bft_writer.h.
 */
#include <errno.h>
#include <string.h>

#include <linux/bftrace.h>

#include "wire/bft_writer.h"

int bft_writer_init(struct bft_writer *w, uint64_t res_ns, uint64_t seq0)
{
	memset(w, 0, sizeof(*w));
	if (!res_ns)
		return -EINVAL;
	w->res_ns = res_ns;
	w->seq = seq0;
	w->tbits = BFT_TIME_BITS;
	return 0;
}

int bft_writer_set_time_bits(struct bft_writer *w, unsigned int tbits)
{
	if (tbits > BFT_TIME_BITS_MAX || w->started)
		return -EINVAL;
	w->tbits = (uint8_t)tbits;
	return 0;
}

void bft_writer_free(struct bft_writer *w)
{
	bft_buf_free(&w->out);
}

/* An escape record: lead, 0x00, then nf LEB128 fields. */
static int put_esc(struct bft_writer *w, unsigned int kind, int nf,
		   uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t f[4] = { a, b, c, d };
	uint8_t *p;
	int i, r;

	r = bft_buf_reserve(&w->out, BFT_RECORD_MAX);
	if (r)
		return r;
	p = w->out.data + w->out.len;
	*p++ = (uint8_t)(BFT_ESC_LEAD | kind);
	*p++ = 0;
	for (i = 0; i < nf; i++)
		p += bft_leb128_put(p, f[i]);
	w->out.len = (size_t)(p - w->out.data);
	return 0;
}

static int put_packed(struct bft_writer *w, unsigned int flag, uint64_t v)
{
	int r = bft_buf_reserve(&w->out, BFT_VARINT_MAX);

	if (r)
		return r;
	w->out.len += bft_packed_put(w->out.data + w->out.len, flag, v);
	return 0;
}

int bft_writer_seal(struct bft_writer *w)
{
	int r;

	if (!w->run)
		return 0;
	r = put_packed(w, BFT_FLAG_EXIT,
		       ((w->run - 1) << w->tbits) | w->run_units);
	if (!r)
		w->run = 0;
	return r;
}

static int write_sync(struct bft_writer *w, uint64_t t)
{
	int r = put_esc(w, BFT_ESC_SYNC, 4, w->seq, t, w->res_ns, w->tbits);

	if (r)
		return r;
	w->time_ns = t;
	w->started = 1;
	return 0;
}

/* Seal the open run and write the first SYNC if needed; t is clamped. */
static int prepare(struct bft_writer *w, uint64_t *t)
{
	int r;

	if (!w->started)
		return write_sync(w, *t);
	if (*t < w->time_ns)
		*t = w->time_ns;
	r = bft_writer_seal(w);
	return r;
}

/*
 * Bring the stream up to time t for a record of (tgid, tid), or of no
 * thread if !event: THREAD on a thread change, else TIME when a unit passed.
 * An ENTER or EXIT (units != NULL) carries up to 2^tbits - 1 units itself:
 * *units says how many, and no TIME is written for them.
 */
static int advance(struct bft_writer *w, uint64_t t, int event,
		   uint32_t tgid, uint32_t tid, uint64_t *inline_units)
{
	uint64_t units;
	int r;

	if (inline_units)
		*inline_units = 0;
	if (event && (!w->threaded || tgid != w->tgid || tid != w->tid)) {
		r = put_esc(w, BFT_ESC_THREAD, 3, tgid, tid, t - w->time_ns, 0);
		if (r)
			return r;
		w->time_ns = t;
		w->tgid = tgid;
		w->tid = tid;
		w->threaded = 1;
		return 0;
	}
	units = (t - w->time_ns) / w->res_ns;
	if (!units)
		return 0;
	if (inline_units && units < (1u << w->tbits)) {
		*inline_units = units;
		w->time_ns += units * w->res_ns;
		return 0;
	}
	if (units <= BFT_TIME_SHORT_MAX)
		r = put_esc(w, (unsigned int)(BFT_ESC_TIME_SHORT - 1 + units),
			    0, 0, 0, 0, 0);
	else
		r = put_esc(w, BFT_ESC_TIME, 1, units, 0, 0, 0);
	if (r)
		return r;
	w->time_ns += units * w->res_ns;
	return 0;
}

static int write_enter(struct bft_writer *w, uint64_t t, uint32_t tgid,
		       uint32_t tid, uint32_t id, int noret)
{
	uint64_t units;
	int r = prepare(w, &t);

	if (!r)
		r = advance(w, t, 1, tgid, tid, noret ? NULL : &units);
	if (!r)
		r = noret ? put_esc(w, BFT_ESC_ENTER_NORET, 1, id, 0, 0, 0) :
			    put_packed(w, BFT_FLAG_ENTER,
				       ((uint64_t)id << w->tbits) | units);
	if (r)
		return r;
	w->seq++;
	w->events++;
	return 0;
}

int bft_writer_enter(struct bft_writer *w, uint64_t t, uint32_t tgid,
		     uint32_t tid, uint32_t id)
{
	return write_enter(w, t, tgid, tid, id, 0);
}

int bft_writer_enter_noret(struct bft_writer *w, uint64_t t, uint32_t tgid,
			   uint32_t tid, uint32_t id)
{
	return write_enter(w, t, tgid, tid, id, 1);
}

int bft_writer_exit(struct bft_writer *w, uint64_t t, uint32_t tgid,
		    uint32_t tid)
{
	int r;

	if (t < w->time_ns)
		t = w->time_ns;
	/* the run stays open while the same thread exits in the same unit */
	if (w->run && w->threaded && tgid == w->tgid && tid == w->tid &&
	    t - w->time_ns < w->res_ns) {
		w->run++;
		w->seq++;
		w->events++;
		return 0;
	}
	r = prepare(w, &t);
	if (!r)
		r = advance(w, t, 1, tgid, tid, &w->run_units);
	if (r)
		return r;
	w->run = 1;
	w->seq++;
	w->events++;
	return 0;
}

/* THROW and UNWIND: an escape with two fields, one event of the thread. */
static int write_event2(struct bft_writer *w, uint64_t t, uint32_t tgid,
			uint32_t tid, unsigned int kind, uint64_t a, uint64_t b)
{
	int r = prepare(w, &t);

	if (!r)
		r = advance(w, t, 1, tgid, tid, NULL);
	if (!r)
		r = put_esc(w, kind, 2, a, b, 0, 0);
	if (r)
		return r;
	w->seq++;
	w->events++;
	return 0;
}

int bft_writer_throw(struct bft_writer *w, uint64_t t, uint32_t tgid,
		     uint32_t tid, uint32_t type, unsigned int how)
{
	return write_event2(w, t, tgid, tid, BFT_ESC_THROW, type, how);
}

int bft_writer_unwind(struct bft_writer *w, uint64_t t, uint32_t tgid,
		      uint32_t tid, uint64_t n, unsigned int reason)
{
	return write_event2(w, t, tgid, tid, BFT_ESC_UNWIND, n, reason);
}

int bft_writer_mark(struct bft_writer *w, uint64_t t, uint32_t tgid,
		    uint32_t tid, uint32_t id, unsigned int n,
		    const uint64_t *args, unsigned int is_signed,
		    unsigned int unread)
{
	unsigned int i;
	int r;

	if (n > BFT_USDT_MAX_ARGS || is_signed >> n || unread >> n)
		return -EINVAL;
	r = prepare(w, &t);
	if (!r)
		r = advance(w, t, 1, tgid, tid, NULL);
	if (!r)
		r = put_esc(w, BFT_ESC_MARK, 4, id, n, is_signed, unread);
	for (i = 0; !r && i < n; i++) {
		uint64_t v = args[i];

		if (is_signed >> i & 1)
			v = (v << 1) ^ (0 - (v >> 63));
		r = put_esc(w, BFT_ESC_ARG, 1, v, 0, 0, 0);
	}
	if (r)
		return r;
	w->seq++;
	w->events++;
	return 0;
}

int bft_writer_name(struct bft_writer *w, uint64_t t, uint32_t tgid,
		    uint32_t tid, const char *name)
{
	size_t n = strlen(name);
	int r;

	if (n > BFT_THREAD_NAME_MAX)
		return -EINVAL;
	r = prepare(w, &t);
	w->threaded = 0;
	if (!r)
		r = advance(w, t, 1, tgid, tid, NULL);
	if (!r)
		r = put_esc(w, BFT_ESC_NAME, 1, n, 0, 0, 0);
	if (r)
		return r;
	/* put_esc reserved BFT_RECORD_MAX: the bytes fit behind the count */
	memcpy(w->out.data + w->out.len, name, n);
	w->out.len += n;
	return 0;
}

void bft_writer_sched_out(struct bft_writer *w)
{
	w->threaded = 0;
}

int bft_writer_sync(struct bft_writer *w, uint64_t t)
{
	int r;

	if (!w->started)
		return write_sync(w, t);
	r = prepare(w, &t);
	return r ? r : write_sync(w, t);
}

int bft_writer_lost(struct bft_writer *w, uint64_t t, uint64_t count)
{
	int r = prepare(w, &t);

	if (!r)
		r = advance(w, t, 0, 0, 0, NULL);
	if (!r)
		r = put_esc(w, BFT_ESC_LOST, 1, count, 0, 0, 0);
	if (r)
		return r;
	w->seq += count;
	return 0;
}

int bft_writer_break(struct bft_writer *w, uint64_t t, unsigned int reason)
{
	int r = prepare(w, &t);

	if (!r)
		r = advance(w, t, 0, 0, 0, NULL);
	if (!r)
		r = put_esc(w, BFT_ESC_BREAK, 1, reason, 0, 0, 0);
	if (r)
		return r;
	w->threaded = 0;
	return 0;
}

const uint8_t *bft_writer_data(const struct bft_writer *w, size_t *len)
{
	*len = w->out.len;
	return w->out.data;
}

void bft_writer_consume(struct bft_writer *w, size_t n)
{
	bft_buf_consume(&w->out, n);
}

uint64_t bft_writer_seq(const struct bft_writer *w)
{
	return w->seq;
}

uint64_t bft_writer_time(const struct bft_writer *w)
{
	return w->time_ns;
}
