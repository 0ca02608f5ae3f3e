// SPDX-License-Identifier: GPL-2.0
/*
 * The sub-millisecond times bfcollector sends in "bftrace.us" markers,
 * for the usual outputs (tree.txt, trace.json, ...): a marker covers the
 * sequenced messages just before it, so once one has come (bfcollector
 * sends an empty one first), routed events wait here until the next one
 * gives them their microseconds.  A void waits in line with them, so that
 * it still cuts the stacks where it was.  An agent that sends no such
 * marker has its events routed at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hq.h"

/* Held events at most: a marker covers 4096; past this, ms it is. */
#define HOLD_MAX	(1u << 16)

struct held {
	struct pending p;
	const char *void_cause;	/* not NULL: a route_void() */
};

struct route_hold {
	struct held *v;
	uint32_t n, cap;
};	/* made by the first marker: until then, nothing waits */

int hq_micro_parse(const char *v, uint16_t **out, uint32_t *count)
{
	unsigned long n, k, x;
	uint16_t *d;
	char *end;

	*out = NULL;
	n = strtoul(v, &end, 10);
	if (end == v || n > 65536 || (*end && *end != ' '))
		return -EINVAL;
	d = calloc(n + 1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (k = 0; k < n; k++) {
		if (*end != (k ? ',' : ' '))
			break;
		v = end + 1;
		x = strtoul(v, &end, 10);
		if (end == v || x > 999)
			break;
		d[k] = (uint16_t)x;
	}
	if (k < n || *end) {
		free(d);
		return -EINVAL;
	}
	*out = d;
	*count = (uint32_t)n;
	return 0;
}

static void release(struct route *r, struct held *h)
{
	if (h->void_cause) {
		route_void(r, h->void_cause);
		return;
	}
	route_event(r, &h->p);
	free(h->p.key);
	free(h->p.value);
}

static void release_all(struct trace *t)
{
	struct route_hold *h = t->hold;
	uint32_t i;

	if (!h)
		return;
	for (i = 0; i < h->n; i++)
		release(t->route, &h->v[i]);
	h->n = 0;
}

/* Hold e, or route it at once: 0, or -ENOMEM (then routed at once). */
static int hold(struct trace *t, const struct held *e)
{
	struct route_hold *h = t->hold;

	if (!h)
		return -ENOENT;
	if (h->n == HOLD_MAX) {
		release(t->route, &h->v[0]);
		memmove(h->v, h->v + 1, --h->n * sizeof(*h->v));
	}
	if (h->n == h->cap) {
		uint32_t cap = h->cap ? 2 * h->cap : 256;
		struct held *v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	h->v[h->n++] = *e;
	return 0;
}

void micro_route(struct trace *t, struct pending *p)
{
	struct held e = { .p = *p };

	if (!hold(t, &e)) {
		/* the hold owns the marker's strings now */
		p->key = p->value = NULL;
		return;
	}
	route_event(t->route, p);
}

void micro_void(struct trace *t, const char *cause)
{
	struct held e = { .void_cause = cause };

	if (hold(t, &e))
		route_void(t->route, cause);
}

void micro_marker(struct trace *t, const struct pending *p)
{
	struct route_hold *h = t->hold;
	uint16_t *d;
	uint32_t n, i, first;

	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return;
		t->hold = h;
		route_set_micro(t->route);
	}
	if (!hq_micro_parse(p->value, &d, &n)) {
		first = p->seq - n;
		for (i = 0; i < h->n; i++) {
			struct held *e = &h->v[i];

			if (!e->void_cause && e->p.seq - first < n)
				e->p.us = d[e->p.seq - first];
		}
		free(d);
	}
	/* what it did not cover, no later marker will */
	release_all(t);
}

void micro_flush(struct trace *t)
{
	release_all(t);
}

void micro_free(struct trace *t)
{
	struct route_hold *h = t->hold;
	uint32_t i;

	if (!h)
		return;
	for (i = 0; i < h->n; i++) {
		free(h->v[i].p.key);
		free(h->v[i].p.value);
	}
	free(h->v);
	free(h);
	t->hold = NULL;
}
