// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq's whole receive path: greetings, control and data connections,
 * the reorder heap, gaps and breaks, routing into the output files.  The
 * input is a script for up to four connections at a time, eight in all:
 *   op = byte; slot = op & 3;
 *   op >> 2 == 0..31: feed the next (op >> 2) * 8 + 1 bytes to slot (a
 *                     new connection if the slot is empty)
 *   otherwise:        op & 4: EOF on slot; op & 8: time passes, gaps
 *                     are given up; then dead connections are freed.
 * What bfhq sends back is thrown away.  Everything ends with hq_free(),
 * which writes every trace out.  The live copy is written too, with a
 * bounded reorder queue; property: what bfhq wrote there reads back whole,
 * without a torn record, a bad entry or a line that does not parse, and
 * its meta.json says the trace ended.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "fuzz_scratch.h"
#include "hq.h"
#include "live.h"

/*
 * Connections one input may open: each greeting makes a trace of a dozen
 * files, and inputs that opened hundreds ran at a few a second without
 * reaching code that eight do not.
 */
#define FUZZ_HQ_MAX_CONNS 8

static unsigned int conns_made;

static struct conn *slot_conn(struct hq *hq, struct conn **slots, int i)
{
	unsigned int k;

	/* the slot's conn may have been reaped */
	for (k = 0; slots[i] && k < hq->nconns; k++)
		if (hq->conns[k] == slots[i])
			return slots[i];
	if (conns_made >= FUZZ_HQ_MAX_CONNS)
		return slots[i] = NULL;
	conns_made++;
	slots[i] = hq_conn_add(hq, -1, CONN_GREETING);
	if (slots[i])
		snprintf(slots[i]->peer, sizeof(slots[i]->peer), "slot%d", i);
	return slots[i];
}

static void check_live(unsigned int ntraces)
{
	unsigned int i;

	for (i = 1; i <= ntraces; i++) {
		char dir[128];
		struct live_view v;
		struct live_line l;
		size_t k;

		snprintf(dir, sizeof(dir), "%s/trace-%u/live", fuzz_dir, i);
		/* meta.json by its text: bfhq prints it in one layout */
		if (live_read_streams(dir, &v))
			continue;	/* a trace refused before its copy */
		if (v.torn || v.bad)
			fuzz_fail("live: trace-%u: %" PRIu64 " torn, %" PRIu64
				  " bad", i, v.torn, v.bad);
		if (!v.meta_text ||
		    (!strstr(v.meta_text, "\"state\": \"finished\"") &&
		     !strstr(v.meta_text, "\"state\": \"failed\"")))
			fuzz_fail("live: trace-%u: meta.json does not say it "
				  "ended: %s", i, v.meta_text ? v.meta_text :
				  "(none)");
		for (k = 0; k < v.nstreams; k++) {
			const char *p = v.streams[k].data, *nl;

			if (v.streams[k].held)
				fuzz_fail("live: a finished trace holds back");
			for (; (nl = strchr(p, '\n')); p = nl + 1)
				if (live_parse_line(p, (size_t)(nl - p), &l))
					fuzz_fail("live: a line bfhq wrote "
						  "does not parse: %.*s",
						  (int)(nl - p), p);
		}
		live_view_free(&v);
	}
}

static void tick(struct hq *hq, uint64_t now)
{
	unsigned int i;

	hq_greet_timeouts(hq, now);
	hq_reap(hq);
	for (i = 0; i < hq->ntraces; i++)
		hq_trace_tick(hq, hq->traces[i], now);
	hq_reap(hq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hq hq = { .listen_fd = -1, .ctl_fd = -1 };
	struct conn *slots[4] = { 0 };
	uint64_t later = 0;
	unsigned int i;

	hq_log_quiet = true;
	hq.o.outdir = fuzz_scratch("hq");
	fuzz_scratch_clear();
	conns_made = 0;
	hq.o.gap_ms = 100;
	hq.o.live_flush_ms = 1;
	hq.o.reorder_bound = 64;
	hq.o.start = true;
	bfp_config_init(&hq.o.config);
	while (size) {
		uint8_t op = fuzz_take(&data, &size);
		int s = op & 3;
		struct conn *c;

		if (op >> 2 < 32) {
			size_t n = (size_t)(op >> 2) * 8 + 1;

			if (n > size)
				n = size;
			c = slot_conn(&hq, slots, s);
			if (c)
				hq_conn_feed(&hq, c, data, n, false);
			data += n;
			size -= n;
		} else {
			if (op & 4) {
				c = slot_conn(&hq, slots, s);
				if (c)
					hq_conn_feed(&hq, c, NULL, 0, true);
			}
			if (op & 8)
				later += 10000;
			tick(&hq, hq_now_ms() + later);
		}
		for (i = 0; i < hq.nconns; i++)
			hq.conns[i]->out.len = 0;
	}
	/* every trace made, those that ended and were freed too */
	i = hq.next_index;
	hq_free(&hq);
	check_live(i);
	bfp_config_free(&hq.o.config);
	return 0;
}
