// SPDX-License-Identifier: GPL-2.0
/*
 * trace.json's Chrome trace events, trace.pftrace's (pftrace.c) and
 * trace.speedscope.json's (speedscope.c) as the route writes them: a thread named, a call begun and ended, times from
 * the trace's first event.
 */
#include <inttypes.h>
#include <string.h>

#include <jansson.h>

#include "route.h"

int chrome_put(const char *p, size_t n, void *arg)
{
	struct route *r = arg;

	r->chrome_bytes += n;
	return fwrite(p, 1, n, r->chrome) == n ? 0 : -1;
}

void chrome_event(struct route *r, json_t *ev)
{
	if (!ev)
		return;
	if (r->chrome) {
		chrome_put(r->chrome_first ? "\n" : ",\n",
			   r->chrome_first ? 1 : 2, r);
		json_dump_callback(ev, chrome_put, r, JSON_COMPACT);
		r->chrome_first = false;
	}
	json_decref(ev);
}

void chrome_name(struct route *r, struct rthread *th)
{
	chrome_event(r, json_pack("{s:s,s:s,s:I,s:I,s:{s:s}}", "name",
				  "thread_name", "ph", "M",
				  "pid", (json_int_t)th->pid,
				  "tid", (json_int_t)th->tid, "args", "name",
				  th->name));
	pft_thread(r->pft, th->id, th->pid, th->tid, th->name);
	speedscope_thread(r->ssc, th->id, th->name);
	th->named_in_json = true;
}

/* trace.json's time of us: from the first event, so no empty lead-in. */
json_int_t chrome_ts(const struct route *r, uint64_t us)
{
	return (json_int_t)(us > r->t0 ? us - r->t0 : 0);
}

/* trace.pftrace's: nanoseconds. */
uint64_t pft_ns(const struct route *r, uint64_t us)
{
	return (uint64_t)chrome_ts(r, us) * 1000;
}

void chrome_slice(struct route *r, struct rthread *th, const char *ph,
		  const char *name, uint64_t us)
{
	if (!th->named_in_json)
		chrome_name(r, th);
	chrome_event(r, json_pack("{s:s,s:s,s:I,s:I,s:I}", "name", name,
				  "ph", ph, "ts", chrome_ts(r, us),
				  "pid", (json_int_t)th->pid,
				  "tid", (json_int_t)th->tid));
	if (*ph == 'B') {
		pft_begin(r->pft, th->id, pft_ns(r, us), name);
		speedscope_begin(r->ssc, th->id, (uint64_t)chrome_ts(r, us),
				 name);
	} else {
		pft_end(r->pft, th->id, pft_ns(r, us));
		speedscope_end(r->ssc, th->id, (uint64_t)chrome_ts(r, us));
	}
}
