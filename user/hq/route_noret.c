// SPDX-License-Identifier: GPL-2.0
/*
 * Methods traced by their entries only ("bftrace.noret"): declared,
 * counted per thread with no frame, and their calls grouped into
 * trace.json's instants.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "route.h"

void route_declare_noret(struct route *r, const char *value)
{
	struct method *m;
	unsigned long long id;
	char *end;

	errno = 0;
	id = strtoull(value, &end, 10);
	if (end == value || *end || errno || id > UINT32_MAX)
		return;
	m = method_get(r, (uint32_t)id, true);
	if (m && !m->noret) {
		m->noret = true;
		r->noret_methods++;
	}
}

bool route_noret(struct route *r, uint32_t id)
{
	struct method *m = method_get(r, id, false);

	return m && m->noret;
}

/*
 * A method's short label into b: no "object!" prefix, no parameter list
 * ("libqpdf.so.29!Pipeline::getNext(bool)" is "Pipeline::getNext"), for
 * trace.json's instants, which are many, and the flame graph's boxes.
 */
void route_label(const char *sig, char *b, size_t n)
{
	const char *bang = strchr(sig, '!'), *s = bang ? bang + 1 : sig, *c;
	int depth = 0;

	for (c = s; *c; c++) {
		if (*c == '<')
			depth++;
		else if (*c == '>' && depth)
			depth--;
		else if (*c == '(' && !depth && c > s &&
			 strncmp(s, "operator", 8))
			break;
	}
	snprintf(b, n, "%.*s", (int)(c - s), s);
}

/* An instant of trace.json for the calls of c's group. */
void chrome_group(struct route *r, struct rthread *th, struct method *c)
{
	char tmp[24], label[256];

	if (!c->group)
		return;
	route_label(method_name(r, c->id, tmp, sizeof(tmp)), label,
		    sizeof(label));
	chrome_event(r, json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:{s:I,s:I}}",
				  "name", label, "ph", "i", "s", "t", "ts",
				  chrome_ts(r, c->first_us),
				  "pid", (json_int_t)th->pid,
				  "tid", (json_int_t)th->tid, "args",
				  "calls", (json_int_t)c->group, "span_us",
				  (json_int_t)(c->last_us - c->first_us)));
	pft_instant(r->pft, th->id, pft_ns(r, c->first_us), label, c->group);
	r->instants++;
	r->group_cost -= c->label_len + CHROME_INSTANT_LEN;
	c->group = 0;
}

/*
 * An entry of an entries-only method: no frame (its exit will never
 * come), a count per thread for tree.txt, a call in trace.json's instant.
 */
void noret_enter(struct route *r, struct rthread *th, struct method *m,
		 uint64_t time)
{
	struct method *c = table_get(&th->noret, &th->ncap, &th->ncount,
				     m->id, true);
	uint64_t cost;

	hq_bprintf(&th->canon, " n%" PRIu32, m->id);
	m->calls++;
	th->calls++;
	r->calls++;
	r->noret_calls++;
	if (!c)
		return;		/* no memory: counted in the totals only */
	c->calls++;
	if (!th->named_in_json)
		chrome_name(r, th);
	if (!c->label_len) {
		char tmp[24], label[256];

		route_label(method_name(r, m->id, tmp, sizeof(tmp)), label,
			    sizeof(label));
		c->label_len = strlen(label);
	}
	cost = c->label_len + CHROME_INSTANT_LEN;
	if (c->group && (time - c->first_us < CHROME_GROUP_US ||
			 r->chrome_bytes + r->group_cost + cost >
			 r->noret_calls * BFP_ENTRY_LEN)) {
		c->group++;
		c->last_us = time;
		return;
	}
	chrome_group(r, th, c);
	c->group = 1;
	c->first_us = c->last_us = time;
	r->group_cost += cost;
}
