/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-thread call-tree reconstruction from merged records.
 *
 * Feed it the output of bft_merge (or of one bft_stream) in order.  It keeps
 * a shadow stack per (tgid, tid) and turns records into call events:
 *
 *   ENTER id        push an ordinary frame; BFT_CALL_ENTER.
 *   ENTER_NORET id  push a frame whose exit is not recorded; BFT_CALL_ENTER
 *                   with noret set.
 *   EXIT run of n   n times: close every NORET frame on top of the stack,
 *                   then one ordinary frame; one BFT_CALL_EXIT per frame
 *                   closed, naming the frame's id.  If the stack runs out
 *                   before an ordinary frame is found, the exit is an orphan
 *                   when the thread's older history is unknown (since the
 *                   start, or since a break), else an unbalanced exit (an
 *                   error in the trace).  Either is counted, nothing emitted.
 *   THROW type, how  the thread throws from its innermost open frame;
 *                   BFT_CALL_THROW naming that frame (id 0, depth 0 if the
 *                   stack is empty).  No frame is closed.
 *   UNWIND n, reason  n frames were left without returning: closed exactly
 *                   as an EXIT run of n closes them, each with a
 *                   BFT_CALL_EXIT whose unwound is the reason.  Closing
 *                   more frames than are open counts orphans (or
 *                   unbalanced exits) as an EXIT run does.
 *   MARK id, n + ARG x n   a USDT probe hit: once its n arguments are
 *                   in, BFT_CALL_MARK with them, at the thread's depth (no
 *                   frame opened or closed).  A MARK whose ARGs a break
 *                   cut off is counted in marks_cut, not emitted.
 *   BREAK, LOST, GAP   every thread's stack is void: its frames are dropped
 *                   without exit events, its older history becomes unknown,
 *                   and one BFT_CALL_VOID per known thread says so.
 *
 * Threads start with unknown history (a trace usually starts in the middle
 * of running code) unless opts.start_known is set, as tests of complete
 * synthetic traces do.
 *
 * With opts.text, it also keeps a canonical per-thread textual trace, one
 * line per thread in tid order (then tgid):
 *     tid 1235: e5 n6 x6 x5 | x? x! e7 e8 t3 u8 x7
 *   eN enter of N, nN NORET enter of N, xN exit closing a frame of N,
 *   x? orphan exit, x! unbalanced exit, | stacks voided, tT throw of
 *   type T (rT a rethrow, fT a forced unwind), uN a frame of N closed by
 *   an UNWIND (u? and u! as x? and x!), mN a USDT probe N hit, its
 *   arguments after it as ":a,b,c" (signed ones signed).
 *
 * Functions return 0, -ENOMEM, or the nonzero value on_call returned.
 */
#ifndef BFT_CALLTREE_H
#define BFT_CALLTREE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "wire/bft_stream.h"

enum bft_call_kind {
	BFT_CALL_ENTER,
	BFT_CALL_EXIT,
	BFT_CALL_VOID,
	BFT_CALL_THROW,
	BFT_CALL_MARK,
};

struct bft_call_event {
	uint64_t time_ns;	/* of the record */
	uint64_t enter_ns;	/* EXIT: time of the frame's enter */
	uint32_t tgid;
	uint32_t tid;
	uint32_t id;		/* ENTER: id entered; EXIT: id of the frame
				 * closed; THROW: id of the innermost open
				 * frame, 0 if none */
	uint32_t depth;		/* ENTER/EXIT/THROW: stack depth with the frame
				 * on it (1 = outermost); VOID: frames dropped */
	uint32_t exc;		/* THROW: exception type id, 0 if unknown */
	uint16_t kind;		/* enum bft_call_kind */
	uint8_t noret;		/* the frame is a NORET frame */
	uint8_t cause;		/* VOID: BFT_REC_BREAK, BFT_REC_LOST or BFT_REC_GAP */
	uint8_t how;		/* THROW: BFT_THROW_* */
	uint8_t unwound;	/* EXIT: 0 if the frame returned, else the
				 * BFT_UNWIND_* reason it was left for */
	/* MARK: id is the probe's; nargs of args, masks as in the record */
	uint8_t nargs;
	uint16_t mark_signed, mark_unread;
	uint64_t args[BFT_USDT_MAX_ARGS];
	/*
	 * The consumer's slot for the thread: NULL until on_call stores there
	 * what it keeps per thread, so it need not look the thread up again.
	 * Valid during the callback only.
	 */
	void **user;
};

struct bft_calltree_opts {
	int (*on_call)(void *ctx, const struct bft_call_event *ev);
	void *ctx;
	bool text;
	bool start_known;
};

struct bft_calltree_stats {
	uint64_t enters;
	uint64_t noret_enters;
	uint64_t exits;		/* frames closed by EXIT runs */
	uint64_t noret_closed;	/* NORET frames closed, by EXIT or UNWIND */
	uint64_t unwound;	/* frames closed by UNWIND records */
	uint64_t throws;	/* THROW records */
	uint64_t marks;		/* MARK events emitted */
	uint64_t marks_cut;	/* MARKs a break cut from their ARGs */
	uint64_t orphans;	/* exits or unwinds past an unknown bottom */
	uint64_t unbalanced;	/* ... past a known bottom */
	uint64_t voids;		/* BREAK/LOST/GAP records seen */
	uint64_t voided_frames;
	uint64_t threads;
	uint32_t max_depth;
};

struct bft_ct_thread;

struct bft_calltree {
	/* private */
	struct bft_calltree_opts o;
	struct bft_calltree_stats st;
	struct bft_ct_thread *threads;
	uint32_t nthreads, threads_cap;
	uint32_t *hash;		/* open addressing: thread index + 1 */
	uint32_t hash_cap;
	/* cache: index + 1 of the last thread of each CPU (cpu modulo 16) */
	uint32_t last[16];
};

int bft_calltree_init(struct bft_calltree *ct,
		      const struct bft_calltree_opts *o);
void bft_calltree_free(struct bft_calltree *ct);

/* Feed one record; kinds that carry no call information are ignored. */
int bft_calltree_feed(struct bft_calltree *ct, const struct bft_record *r);

const struct bft_calltree_stats *
bft_calltree_stats(const struct bft_calltree *ct);
/* Frames open on (tgid, tid), -1 if the thread was never seen. */
int bft_calltree_depth(const struct bft_calltree *ct, uint32_t tgid,
		       uint32_t tid);

/* The textual trace (opts.text); returns 0 or -errno. */
int bft_calltree_print(const struct bft_calltree *ct, FILE *f);
/* The same as a malloc'ed string (caller frees), NULL on ENOMEM. */
char *bft_calltree_text(const struct bft_calltree *ct);

#endif /* BFT_CALLTREE_H */
