/* SPDX-License-Identifier: GPL-2.0 */
/*
 * meta.json of a live copy (live_meta.c): what live_write.c knows of it,
 * and the trace's counters, in one text.
 */
#ifndef BFHQ_LIVE_META_H
#define BFHQ_LIVE_META_H

#include <stdbool.h>
#include <stdint.h>

struct hq_opts;
struct trace;

#define LIVE_META_KEYS	31

/* The live copy's side of meta.json. */
struct live_meta {
	const struct hq_opts *o;
	bool ended;		/* the final flush is done */
	bool micro;		/* bftrace.us markers come */
	uint64_t flushes, frontier_us, agent_lost, micro_bad;
};

/* The text (malloc'ed), or NULL. */
char *live_meta_text(const struct live_meta *l, const struct trace *t);
/* Into k (LIVE_META_KEYS values): every value the text shows but the
 * message, which it shows only once the trace ended. */
void live_meta_key(const struct live_meta *l, const struct trace *t,
		   uint64_t *k);

#endif /* BFHQ_LIVE_META_H */
