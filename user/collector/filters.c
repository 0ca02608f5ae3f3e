// SPDX-License-Identifier: GPL-2.0
/*
 * bfcollector's call filters (--min-time, --caller): their options, the
 * methods --caller names, and the counts of what they drop, printed at
 * exit and sent to HQ as markers "bftrace.filtered.min-time" and
 * "bftrace.filtered.caller".  The filtering itself is model/bft_callfilter.
 */
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"

int filters_opt_min_time(struct coll_opts *o, const char *arg)
{
	if (bft_duration_parse(arg, &o->min_time_ns)) {
		fprintf(stderr, "bfcollector: --min-time wants a duration such "
			"as 500ns, 10us, 2ms or 1s (a bare number is "
			"microseconds), not \"%s\"\n", arg);
		return -1;
	}
	return 0;
}

int filters_opt_caller(struct coll_opts *o, const char *arg)
{
	if (!*arg || o->ncallers == COLL_MAX_CALLERS) {
		fprintf(stderr, "bfcollector: --caller wants a function name "
			"or glob, at most %d of them\n", COLL_MAX_CALLERS);
		return -1;
	}
	o->callers[o->ncallers++] = arg;
	return 0;
}

/* A signature is "object!function(params)": the globs match the function
 * without its parameter list, or the whole signature. */
static bool caller_match(const struct coll *c, const char *sig)
{
	const char *bang = strchr(sig, '!'), *start = bang ? bang + 1 : sig;
	const char *paren = strchr(start, '(');
	size_t len = paren ? (size_t)(paren - start) : strlen(start);
	char name[1024];
	unsigned int i;

	snprintf(name, sizeof(name), "%.*s", (int)len, start);
	for (i = 0; i < c->o.ncallers; i++)
		if (!fnmatch(c->o.callers[i], name, 0) ||
		    !fnmatch(c->o.callers[i], sig, 0))
			return true;
	return false;
}

static bool is_caller(void *ctx, uint32_t id)
{
	struct coll *c = ctx;
	struct method *me = pipeline_method(c, id);

	return me && me->sig && caller_match(c, me->sig);
}

static int emit(void *ctx, void *thread, const struct bft_call_event *ev)
{
	return pipeline_deliver(ctx, thread, ev);
}

void filters_init(struct coll *c)
{
	c->filt.o.min_ns = c->o.min_time_ns;
	c->filt.o.is_caller = c->o.ncallers ? is_caller : NULL;
	c->filt.o.emit = emit;
	c->filt.o.ctx = c;
}

int filters_finish(struct coll *c)
{
	uint32_t i;
	int err = 0;

	for (i = 0; i < c->nthreads; i++)
		err = bft_callfilter_flush(&c->filt, &c->threads[i]->filt,
					   c->threads[i]) ?: err;
	return err;
}

static void marker(struct coll *c, const char *key, uint64_t n)
{
	char value[32];

	snprintf(value, sizeof(value), "%" PRIu64, n);
	(void)pipeline_marker(c, key, value);
}

void filters_report(struct coll *c)
{
	const struct bft_callfilter_stats *st = &c->filt.st;

	if (!bft_callfilter_on(&c->filt))
		return;
	if (c->hq == HQ_UP && c->ndata) {
		if (c->o.min_time_ns)
			marker(c, "bftrace.filtered.min-time",
			       st->min_time_dropped);
		if (c->o.ncallers)
			marker(c, "bftrace.filtered.caller",
			       st->caller_dropped);
	}
	coll_log("filters: %" PRIu64 " calls shorter than --min-time and %"
		 PRIu64 " outside --caller left out; %" PRIu64 " events sent "
		 "unchecked (hold of %d per thread full)",
		 st->min_time_dropped, st->caller_dropped, st->hold_overflow,
		 BFT_CALLFILTER_HOLD_MAX);
}
