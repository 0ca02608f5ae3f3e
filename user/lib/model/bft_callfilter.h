/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Call filters between the call tree and the trace's consumers:
 * --min-time (calls shorter than a duration are left out, their callers
 * stay) and --caller (only what runs under given functions), per thread,
 * with every call they drop counted.
 */
#ifndef BFT_CALLFILTER_H
#define BFT_CALLFILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "model/bft_calltree.h"

/* Events a thread may hold at most while their calls' lengths are
 * unknown; past it the oldest goes out unchecked (and is counted). */
#define BFT_CALLFILTER_HOLD_MAX 4096

struct bft_callfilter_opts {
	uint64_t min_ns;	/* 0: no --min-time */
	/* NULL: no --caller; else whether method id is a caller root */
	bool (*is_caller)(void *ctx, uint32_t id);
	/* what passes, in order; ev->user is NULL */
	int (*emit)(void *ctx, void *thread, const struct bft_call_event *ev);
	void *ctx;
};

struct bft_callfilter_stats {
	uint64_t min_time_dropped;	/* calls shorter than min_ns */
	uint64_t caller_dropped;	/* calls under no --caller function */
	uint64_t hold_overflow;		/* events sent unchecked: hold full */
};

/* What a filter keeps per thread: zero it before the first feed. */
struct bft_callfilter_thread {
	struct bft_call_event *held;
	uint32_t n, cap;
	uint32_t under;		/* depth of the caller frame we are in, 0 */
};

struct bft_callfilter {
	struct bft_callfilter_opts o;
	struct bft_callfilter_stats st;
};

static inline bool bft_callfilter_on(const struct bft_callfilter *f)
{
	return f->o.min_ns || f->o.is_caller;
}

/* One event of thread (passed to emit as is); 0 or emit's error/-ENOMEM. */
int bft_callfilter_feed(struct bft_callfilter *f,
			struct bft_callfilter_thread *t, void *thread,
			const struct bft_call_event *ev);
/* The end of thread's stream: what it holds goes out (its calls are still
 * open, so no length is known to be short); the hold is freed. */
int bft_callfilter_flush(struct bft_callfilter *f,
			 struct bft_callfilter_thread *t, void *thread);

/* "500ns", "10us", "2ms", "1s"; a bare number is microseconds.
 * Returns 0, or -1 for anything else. */
int bft_duration_parse(const char *s, uint64_t *ns);

#endif
