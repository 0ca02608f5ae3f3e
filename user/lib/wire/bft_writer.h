/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space encoder of one CPU's record stream, following the kernel
 * writer's rules of bftrace.h section 2.  It makes synthetic streams for
 * tests and benchmarks; what it writes must decode to exactly what it was
 * given.
 *
 * The rules it applies (callers only say what happened, and when):
 *   - SYNC first: the first record of the stream is a SYNC (seq, time of
 *     that first call, res_ns).
 *   - THREAD whenever the thread changes, or after bft_writer_sched_out() or
 *     a BREAK; its delta_ns is exact and sets the stream time to the event's
 *     time.
 *   - otherwise, when the event's time is at least one unit past the stream
 *     time: an ENTER or EXIT carries up to 2^tbits - 1 units in its value
 *     (tbits BFT_TIME_BITS unless set otherwise), any other delta is a
 *     TIME_SHORT for 1..32 units, TIME beyond; the stream time then is the
 *     true time rounded down to the unit.
 *   - consecutive exits of one thread within one time unit are one EXIT
 *     record; the open run is written only when another record follows or
 *     the run is sealed (bft_writer_seal, bft_writer_sync).
 *   - LOST and BREAK bring the stream time up to their time first, like
 *     events; BREAK also forgets the thread.
 *   - seq counts ENTER, ENTER_NORET, THROW, UNWIND, every exit and every
 *     lost event.
 * Times are CLOCK_MONOTONIC ns; a time earlier than the stream time is taken
 * as the stream time (a CPU's clock never goes back).
 *
 * Output accumulates in an internal buffer; take it with bft_writer_data()
 * and bft_writer_consume() to stream it in chunks.
 * Functions return 0, or -ENOMEM / -EINVAL.
 */
#ifndef BFT_WRITER_H
#define BFT_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include "wire/bft_varint.h"

struct bft_writer {
	/* private */
	struct bft_buf out;
	uint64_t res_ns;
	uint64_t time_ns;	/* stream time */
	uint64_t seq;
	uint64_t run;		/* exits in the open run, 0 if none */
	uint64_t run_units;	/* time units its record carries */
	uint64_t events;
	uint32_t tgid, tid;
	uint8_t tbits;		/* SYNC's time bits (bftrace.h 2.1) */
	uint8_t started;	/* SYNC written */
	uint8_t threaded;	/* a THREAD record holds for the next event */
};

/* res_ns >= 1: the TIME unit. seq0: the seq of the first SYNC (normally 0). */
int bft_writer_init(struct bft_writer *w, uint64_t res_ns, uint64_t seq0);
void bft_writer_free(struct bft_writer *w);
/* Time bits other than BFT_TIME_BITS (0: seeds/001 values); before any write. */
int bft_writer_set_time_bits(struct bft_writer *w, unsigned int tbits);

int bft_writer_enter(struct bft_writer *w, uint64_t t, uint32_t tgid,
		     uint32_t tid, uint32_t id);
int bft_writer_enter_noret(struct bft_writer *w, uint64_t t, uint32_t tgid,
			   uint32_t tid, uint32_t id);
/* One function return of (tgid, tid) at time t. */
int bft_writer_exit(struct bft_writer *w, uint64_t t, uint32_t tgid,
		    uint32_t tid);
/* THROW of type (0: unknown), how: BFT_THROW_*. */
int bft_writer_throw(struct bft_writer *w, uint64_t t, uint32_t tgid,
		     uint32_t tid, uint32_t type, unsigned int how);
/* UNWIND: n frames of (tgid, tid) left, reason: BFT_UNWIND_*. */
int bft_writer_unwind(struct bft_writer *w, uint64_t t, uint32_t tgid,
		      uint32_t tid, uint64_t n, unsigned int reason);
/*
 * A USDT hit: MARK and its n ARGs.  args are 64-bit values, a signed one
 * as its two's complement (zigzag-encoded here); bit i of is_signed and
 * unread as the MARK carries them.
 */
int bft_writer_mark(struct bft_writer *w, uint64_t t, uint32_t tgid,
		    uint32_t tid, uint32_t id, unsigned int n,
		    const uint64_t *args, unsigned int is_signed,
		    unsigned int unread);
/*
 * NAME of (tgid, tid), right after a THREAD record (written for it even if
 * the thread is the current one): name holds at most BFT_THREAD_NAME_MAX bytes.
 */
int bft_writer_name(struct bft_writer *w, uint64_t t, uint32_t tgid,
		    uint32_t tid, const char *name);
/* The current thread was scheduled out: its next event writes THREAD. */
void bft_writer_sched_out(struct bft_writer *w);
/* Seal the open run and write a SYNC at t: the flush timer's heartbeat. */
int bft_writer_sync(struct bft_writer *w, uint64_t t);
int bft_writer_lost(struct bft_writer *w, uint64_t t, uint64_t count);
int bft_writer_break(struct bft_writer *w, uint64_t t, unsigned int reason);
/* Write the open exit run, if any. */
int bft_writer_seal(struct bft_writer *w);

/* Bytes written so far and not consumed (the open run is not among them). */
const uint8_t *bft_writer_data(const struct bft_writer *w, size_t *len);
void bft_writer_consume(struct bft_writer *w, size_t n);
/* What the next SYNC would carry, and the current stream time. */
uint64_t bft_writer_seq(const struct bft_writer *w);
uint64_t bft_writer_time(const struct bft_writer *w);

#endif /* BFT_WRITER_H */
