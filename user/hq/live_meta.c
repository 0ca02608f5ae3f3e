// SPDX-License-Identifier: GPL-2.0
/*
 * trace-<N>/live/meta.json's text (docs/live-format.md), and the values it
 * is made from, so that live_write.c builds it only when one changed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "hq.h"
#include "live.h"
#include "live_meta.h"
#include "route.h"

static char *json_quoted(const char *s)
{
	const char *c;
	json_t *j;
	char *q;

	for (c = s; *c >= 0x20 && *c < 0x7f && *c != '"' && *c != '\\'; c++)
		;
	if (!*c)
		return asprintf(&q, "\"%s\"", s) < 0 ? NULL : q;
	j = json_string(s);
	q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	return q;
}

/* The calls bfcollector's filters left out (its bftrace.filtered.* markers). */
static uint64_t filtered(const struct trace *t, bool caller)
{
	if (!t->route)
		return 0;
	return caller ? t->route->filtered_caller :
			t->route->filtered_min_time;
}

/*
 * Printed, not built as a jansson object and dumped: bfhq writes it at
 * every period with news, for every trace, and the object cost a hundred
 * allocations a time.  Its two free-text strings still go through jansson.
 */
char *live_meta_text(const struct live_meta *l, const struct trace *t)
{
	char mode[2] = { (char)t->last_mode, 0 };
	char *msg = json_quoted(l->ended ? t->fail_msg : "");
	char *last = json_quoted(mode);
	char *text = NULL;
	int n;

	if (!last)		/* not UTF-8: no mode to tell */
		last = json_quoted("");

	if (!msg || !last)
		goto out;
	n = asprintf(&text,
		"{\n"
		"  \"format\": %d,\n"
		"  \"trace\": %u,\n"
		"  \"run\": %u,\n"
		"  \"protocol\": %u,\n"
		"  \"state\": \"%s\",\n"
		"  \"message\": %s,\n"
		"  \"resolution_us\": %d,\n"
		"  \"flush_ms\": %u,\n"
		"  \"reorder_bound\": %u,\n"
		"  \"gap_timeout_ms\": %u,\n"
		"  \"start_wall_us\": %" PRIu64 ",\n"
		"  \"flushes\": %" PRIu64 ",\n"
		"  \"frontier_us\": %" PRIu64 ",\n"
		"  \"counters\": {\n"
		"    \"routed\": %" PRIu64 ",\n"
		"    \"gaps\": %" PRIu64 ",\n"
		"    \"gap_missing\": %" PRIu64 ",\n"
		"    \"lost\": %" PRIu64 ",\n"
		"    \"lost_missing\": %" PRIu64 ",\n"
		"    \"late\": %" PRIu64 ",\n"
		"    \"breaks\": %" PRIu64 ",\n"
		"    \"breaks_late\": %" PRIu64 ",\n"
		"    \"heartbeats\": %" PRIu64 ",\n"
		"    \"agent_lost\": %" PRIu64 ",\n"
		"    \"us_malformed\": %" PRIu64 ",\n"
		"    \"classes_transformed\": %" PRIu64 ",\n"
		"    \"classes_ignored\": %" PRIu64 ",\n"
		"    \"classes_failed\": %" PRIu64 ",\n"
		"    \"agent_errors\": %" PRIu64 ",\n"
		"    \"filtered_min_time\": %" PRIu64 ",\n"
		"    \"filtered_caller\": %" PRIu64 ",\n"
		"    \"received_bytes\": %" PRIu64 ",\n"
		"    \"udp_datagrams\": %" PRIu64 ",\n"
		"    \"udp_lost\": %" PRIu64 ",\n"
		"    \"udp_duplicated\": %" PRIu64 ",\n"
		"    \"udp_late\": %" PRIu64 ",\n"
		"    \"udp_malformed\": %" PRIu64 "\n"
		"  },\n"
		"  \"last_mode\": %s\n"
		"}",
		LIVE_FORMAT, t->index, (unsigned int)t->run_id,
		(unsigned int)t->version,
		!l->ended ? "running" : t->failed ? "failed" : "finished",
		msg, l->micro ? 1 : 1000,
		l->o->live_flush_ms, hq_reorder_bound(l->o, t),
		l->o->gap_ms, t->start_wall_us, l->flushes,
		l->frontier_us, t->routed, t->gaps, t->gap_missing,
		t->lost_bound, t->lost_missing, t->late, t->breaks_seen,
		t->breaks_late, t->heartbeats, l->agent_lost, l->micro_bad,
		t->classes[0], t->classes[1], t->classes[2], t->agent_errors,
		filtered(t, false), filtered(t, true), t->wire_bytes, t->udp_dgrams, t->udp_lost, t->udp_dup,
		t->udp_late, t->udp_malformed, last);
	if (n < 0)
		text = NULL;
out:
	free(msg);
	free(last);
	return text;
}

/*
 * Every value live_meta_text() prints but the message, which it prints only
 * once the trace ended (the last write).  bfhq's options are the same for
 * all of its traces.
 */
void live_meta_key(const struct live_meta *l, const struct trace *t,
		   uint64_t *k)
{
	unsigned int i = 0;

	k[i++] = t->index;
	k[i++] = t->run_id;
	k[i++] = t->version;
	k[i++] = (uint64_t)l->ended << 2 | (uint64_t)t->failed << 1 | l->micro;
	k[i++] = t->start_wall_us;
	k[i++] = l->flushes;
	k[i++] = l->frontier_us;
	k[i++] = t->routed;
	k[i++] = t->gaps;
	k[i++] = t->gap_missing;
	k[i++] = t->lost_bound;
	k[i++] = t->lost_missing;
	k[i++] = t->late;
	k[i++] = t->breaks_seen;
	k[i++] = t->breaks_late;
	k[i++] = t->heartbeats;
	k[i++] = l->agent_lost;
	k[i++] = l->micro_bad;
	k[i++] = t->classes[0];
	k[i++] = t->classes[1];
	k[i++] = t->classes[2];
	k[i++] = t->agent_errors;
	k[i++] = filtered(t, false);
	k[i++] = filtered(t, true);
	k[i++] = t->wire_bytes;
	k[i++] = t->udp_dgrams;
	k[i++] = t->udp_lost;
	k[i++] = t->udp_dup;
	k[i++] = t->udp_late;
	k[i++] = t->udp_malformed;
	k[i++] = t->last_mode;
}
