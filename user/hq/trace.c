// SPDX-License-Identifier: GPL-2.0
/*
 * One agent's trace.  The control connection brings heartbeats, data
 * breaks and class reports; the data connections bring maps (applied at
 * once, as Code Pulse's HQ does) and sequenced events, which wait in a
 * min-heap until every earlier sequence number has been routed.
 *
 * Unlike the original HQ, a missing sequence number does not stall the
 * trace forever: once the head of the queue has waited gap_ms (or the queue
 * is full, or every data connection has ended) the gap is reported, the
 * call stacks are voided as for a data break, and routing goes on.  And a
 * data break equal to the next expected sequence (an idle agent's break) is
 * applied, not refused (notes §4.5); one before it, which can no longer be
 * placed where it belongs, is refused and counted as late.
 *
 * The queue may also be bounded in size (--reorder-bound, seed 002): once
 * it holds that many messages behind a missing number, the number is
 * declared lost, the stacks are void as for a gap, and ordering goes on.
 * Everything routed also goes to the live copy (live_write.c).
 */
#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hq.h"

/* Sequence numbers wrap at 2^32: compare them as serial numbers. */
static inline bool seq_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/* The marker text p holds, for the reorder queue's bound in bytes. */
static uint64_t pending_text(const struct pending *p)
{
	return (p->key ? strlen(p->key) : 0) + (p->value ? strlen(p->value) : 0);
}

static void heap_swap(struct pending *h, uint32_t i, uint32_t j)
{
	struct pending t = h[i];

	h[i] = h[j];
	h[j] = t;
}

static int heap_push(struct trace *t, const struct pending *p)
{
	uint32_t i;

	if (t->nheap == t->heap_cap) {
		uint32_t cap = t->heap_cap ? 2 * t->heap_cap : 512;
		struct pending *h = realloc(t->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		t->heap = h;
		t->heap_cap = cap;
	}
	i = t->nheap++;
	t->heap[i] = *p;
	t->pending_text += pending_text(p);
	while (i && seq_before(t->heap[i].seq, t->heap[(i - 1) / 2].seq)) {
		heap_swap(t->heap, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	return 0;
}

static struct pending heap_pop(struct trace *t)
{
	struct pending top = t->heap[0];
	uint32_t i = 0;

	t->heap[0] = t->heap[--t->nheap];
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < t->nheap && seq_before(t->heap[l].seq, t->heap[m].seq))
			m = l;
		if (r < t->nheap && seq_before(t->heap[r].seq, t->heap[m].seq))
			m = r;
		if (m == i)
			break;
		heap_swap(t->heap, i, m);
		i = m;
	}
	t->pending_text -= pending_text(&top);
	return top;
}

static void pending_free(struct pending *p)
{
	free(p->key);
	free(p->value);
}


static bool run_in_use(struct hq *hq, uint8_t run)
{
	unsigned int i;

	for (i = 0; i < hq->ntraces; i++)
		if (!hq->traces[i]->finished && hq->traces[i]->run_id == run)
			return true;
	return false;
}

struct trace *hq_trace_by_run(struct hq *hq, uint8_t run_id)
{
	unsigned int i;

	for (i = 0; i < hq->ntraces; i++) {
		struct trace *t = hq->traces[i];

		if (!t->finished && !t->failed && t->run_id == run_id &&
		    !t->control_closed)
			return t;
	}
	return NULL;
}

/*
 * A bfhq started again on the same output directory goes on from the
 * highest trace-N there: an earlier run's traces are never overwritten.
 */
static void index_outdir(struct hq *hq)
{
	DIR *d = opendir(hq->o.outdir);
	struct dirent *e;

	hq->indexed = true;
	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned long n;
		char *end;

		if (strncmp(e->d_name, "trace-", 6) || !isdigit((unsigned char)
							      e->d_name[6]))
			continue;
		n = strtoul(e->d_name + 6, &end, 10);
		if (!*end && n > hq->next_index && n < UINT_MAX)
			hq->next_index = (unsigned int)n;
	}
	closedir(d);
}

struct trace *hq_trace_new(struct hq *hq, struct conn *control,
			   uint8_t version)
{
	struct bfp_config cfg = hq->o.config;
	struct bfp_msg m = { .id = BFP_CONFIG, .config = &cfg };
	char dir[4096];
	struct trace *t, **v;
	unsigned int k;
	int run = -1;

	/* notes §4.2: the first free id from a cursor cycling over 0..255 */
	for (k = 0; k < 256; k++) {
		uint8_t cand = (uint8_t)(hq->run_cursor + k);

		if (!run_in_use(hq, cand)) {
			run = cand;
			hq->run_cursor = cand + 1;
			break;
		}
	}
	if (run < 0) {
		hq_log("%s: 256 traces are running: refused", control->peer);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (hq->ntraces == hq->traces_cap) {
		unsigned int cap = hq->traces_cap ? 2 * hq->traces_cap : 8;

		v = realloc(hq->traces, cap * sizeof(*v));
		if (!v) {
			free(t);
			return NULL;
		}
		hq->traces = v;
		hq->traces_cap = cap;
	}
	if (!hq->indexed)
		index_outdir(hq);
	t->index = ++hq->next_index;
	t->run_id = (uint8_t)run;
	t->version = version;
	t->control = control;
	snprintf(t->agent_addr, sizeof(t->agent_addr), "%s", control->addr);
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		t->start_wall_us = (uint64_t)ts.tv_sec * 1000000u +
				   (uint64_t)ts.tv_nsec / 1000u;
	}
	snprintf(dir, sizeof(dir), "%s/trace-%u", hq->o.outdir, t->index);
	mkdir(hq->o.outdir, 0755);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		hq_log("cannot create %s: %s", dir, strerror(errno));
		free(t);
		return NULL;
	}
	t->route = route_new(t, dir);
	if (!t->route) {
		free(t);
		return NULL;
	}
	t->live = live_open(hq, t, dir);
	hq->traces[hq->ntraces++] = t;
	control->trace = t;
	cfg.run_id = (int8_t)t->run_id;
	if (hq_send(control, version, &m)) {
		hq_log("cannot encode the configuration for version %u",
		       version);
		hq_trace_fail(hq, t, control, "configuration too large");
		return t;
	}
	hq_log("run %u: agent %s speaks version %u; trace-%u", t->run_id,
	       control->peer, version, t->index);
	if (hq->o.start) {
		if (hq->o.start_suspended)
			hq_trace_command(hq, t, BFP_SUSPEND);
		hq_trace_command(hq, t, BFP_START);
	}
	return t;
}

void hq_trace_add_data(struct hq *hq, struct trace *t, struct conn *c)
{
	struct bfp_msg reply = { .id = BFP_DATA_HELLO_REPLY };
	struct conn **v = realloc(t->data, (t->ndata + 1) * sizeof(*v));

	if (!v) {
		hq_send_error(c, "out of memory");
		return;
	}
	t->data = v;
	t->data[t->ndata++] = c;
	t->data_open++;
	c->trace = t;
	c->kind = CONN_DATA;
	hq_send(c, t->version, &reply);
	if (hq->o.verbose)
		hq_log("run %u: data connection %u from %s", t->run_id,
		       t->ndata, c->peer);
}

int hq_trace_command(struct hq *hq, struct trace *t, uint8_t id)
{
	struct bfp_msg m = { .id = id };

	(void)hq;
	if (!t->control || t->control_closed || t->failed)
		return -ENOTCONN;
	if (id == BFP_STOP)
		t->shutting_down = true;
	if (id == BFP_PAUSE || id == BFP_UNPAUSE || id == BFP_STOP)
		t->holds_pause = id == BFP_PAUSE;
	if (hq->o.verbose)
		hq_log("run %u: sending %s", t->run_id, bfp_id_name(id));
	return hq_send(t->control, t->version, &m);
}

static void close_all(struct trace *t)
{
	unsigned int i;

	if (t->control)
		t->control->close_after_flush = true;
	for (i = 0; i < t->ndata; i++)
		t->data[i]->close_after_flush = true;
	if (t->control)
		hq_conn_write(t->control);
	for (i = 0; i < t->ndata; i++)
		hq_conn_write(t->data[i]);
}

void hq_trace_fail(struct hq *hq, struct trace *t, struct conn *c,
		   const char *fmt, ...)
{
	char text[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	(void)hq;
	if (t->failed)
		return;
	t->failed = true;
	snprintf(t->fail_msg, sizeof(t->fail_msg), "%s", text);
	hq_log("run %u: %s: the trace ends", t->run_id, text);
	/* The agent is told on the connection at fault, and on control. */
	if (c && !c->dead)
		hq_send_error(c, text);
	if (t->control && c != t->control && !t->control->dead &&
	    !t->control_closed)
		hq_send_error(t->control, text);
	close_all(t);
}

/* Apply every data break at or before the next sequence to route. */
static void apply_breaks(struct trace *t)
{
	while (t->nbreaks && !seq_before(t->next_seq, t->breaks[0])) {
		micro_void(t, "data break");
		live_void(t->live, "break", t->breaks[0], 0, t->next_seq);
		memmove(t->breaks, t->breaks + 1,
			--t->nbreaks * sizeof(*t->breaks));
	}
}

static void route_one(struct trace *t, struct pending *p)
{
	/* bfcollector's microseconds: the times of what came before */
	if (p->id == BFP_MARKER && p->key && !strcmp(p->key, "bftrace.us")) {
		live_micro(t->live, p);
		micro_marker(t, p);
		pending_free(p);
		return;
	}
	/* declared now: the live copy writes the entries after it as such */
	if (p->id == BFP_MARKER && p->key && p->value &&
	    !strcmp(p->key, "bftrace.noret"))
		route_declare_noret(t->route, p->value);
	p->noret = p->id == BFP_METHOD_ENTRY &&
		   route_noret(t->route, p->method);
	live_event(t->live, p);
	micro_route(t, p);
	pending_free(p);
	t->routed++;
}

/*
 * What a missing sequence number waits for: WAIT, its arrival; GAP, none
 * (the gap timeout passed, the queue is full, nothing more can come);
 * LOST, only while the queue holds its bound.
 */
enum skip { WAIT, GAP, LOST };

/* Release messages in sequence order, skipping missing numbers as told. */
static void pump(struct trace *t, enum skip skip, unsigned int bound)
{
	bool progress = false;

	for (;;) {
		struct pending p;

		apply_breaks(t);
		if (!t->nheap)
			break;
		if (seq_before(t->heap[0].seq, t->next_seq)) {
			p = heap_pop(t);
			hq_log("run %u: sequence %u arrived after %u was "
			       "routed: dropped", t->run_id, p.seq,
			       t->next_seq - 1);
			t->late++;
			pending_free(&p);
			continue;
		}
		if (t->heap[0].seq != t->next_seq) {
			uint32_t missing = t->heap[0].seq - t->next_seq;

			if (skip == WAIT || (skip == LOST && t->nheap < bound))
				break;
			if (skip == LOST) {
				hq_log("run %u: lost: sequences %u..%u (%u) "
				       "missing while %u waited; call stacks "
				       "are void there", t->run_id, t->next_seq,
				       t->heap[0].seq - 1, missing, t->nheap);
				t->lost_bound++;
				t->lost_missing += missing;
				micro_void(t, "lost");
			} else {
				hq_log("run %u: gap: sequences %u..%u (%u) "
				       "never arrived; call stacks are void "
				       "there", t->run_id, t->next_seq,
				       t->heap[0].seq - 1, missing);
				t->gaps++;
				t->gap_missing += missing;
				micro_void(t, "gap");
			}
			live_void(t->live, skip == LOST ? "lost" : "gap",
				  t->next_seq, missing, t->heap[0].seq);
			t->next_seq = t->heap[0].seq;
			progress = true;
			continue;
		}
		p = heap_pop(t);
		route_one(t, &p);
		t->next_seq++;
		progress = true;
	}
	/* The gap timer runs from when the head of the queue got stuck. */
	if (!t->nheap)
		t->stalled_since_ms = 0;
	else if (progress || !t->stalled_since_ms)
		t->stalled_since_ms = hq_now_ms();
}

/*
 * notes §4.4: an agent's Error is fatal to its trace.  Its text is kept
 * whole (it may hold NULs) for the summary.
 */
static void agent_error(struct trace *t, const struct bfp_msg *m,
			const char *where)
{
	struct bft_buf esc = { 0 };
	char *copy;

	t->agent_errors++;
	if (t->failed)
		return;
	copy = malloc(m->str_len + 1);
	if (copy) {
		if (m->str_len)
			memcpy(copy, m->str, m->str_len);
		copy[m->str_len] = 0;
		free(t->agent_error);
		t->agent_error = copy;
		t->agent_error_len = m->str_len;
	}
	t->failed = true;
	snprintf(t->fail_msg, sizeof(t->fail_msg),
		 "agent error on the %s connection", where);
	hq_escape(&esc, m->str, m->str_len);
	hq_log("run %u: %s: %.*s: the trace ends", t->run_id, t->fail_msg,
	       (int)esc.len, esc.data ? (const char *)esc.data : "");
	bft_buf_free(&esc);
	close_all(t);
}

void hq_trace_control_msg(struct hq *hq, struct trace *t,
			  const struct bfp_msg *m)
{
	uint32_t i;

	switch (m->id) {
	case BFP_HEARTBEAT:
		t->heartbeats++;
		t->last_hb_ms = hq_now_ms();
		t->warned_hb = false;
		/* notes §4.4: a shutdown after another mode is answered
		 * with Stop, unless HQ sent one already. */
		if (m->mode == BFP_MODE_SHUTDOWN && t->last_mode &&
		    t->last_mode != BFP_MODE_SHUTDOWN) {
			hq_log("run %u: agent is shutting down", t->run_id);
			if (!t->shutting_down)
				hq_trace_command(hq, t, BFP_STOP);
			t->shutting_down = true;
		}
		if (hq->o.verbose > 1 || (hq->o.verbose && m->mode != t->last_mode))
			hq_log("run %u: heartbeat mode %c, send queue %u",
			       t->run_id, m->mode, m->queue);
		t->last_mode = m->mode;
		if (m->mode == BFP_MODE_PAUSED && t->holds_pause)
			hq_trace_command(hq, t, BFP_PAUSE);
		break;
	case BFP_DATA_BREAK:
		t->breaks_seen++;
		if (seq_before(m->seq, t->next_seq)) {
			/*
			 * Later sequences were routed already, so it cannot
			 * go where it belongs; the original HQ refuses it
			 * too ("told about a data break too late").
			 */
			t->breaks_late++;
			hq_log("run %u: data break before sequence %u arrived "
			       "after %u was routed: not applied", t->run_id,
			       m->seq, t->next_seq - 1);
			break;
		}
		if (t->nbreaks >= HQ_MAX_BREAKS) {
			hq_trace_fail(hq, t, t->control, "more than %u data "
				      "breaks ahead of the data",
				      HQ_MAX_BREAKS);
			break;
		}
		if (t->nbreaks && !seq_before(t->breaks[t->nbreaks - 1], m->seq)) {
			if (t->breaks[t->nbreaks - 1] == m->seq)
				break;	/* the same break twice */
		}
		if (t->nbreaks == t->breaks_cap) {
			uint32_t cap = t->breaks_cap ? 2 * t->breaks_cap : 16;
			uint32_t *b = realloc(t->breaks, cap * sizeof(*b));

			if (!b)
				break;
			t->breaks = b;
			t->breaks_cap = cap;
		}
		/* Keep them sorted: breaks normally come in order. */
		i = t->nbreaks;
		while (i && seq_before(m->seq, t->breaks[i - 1])) {
			t->breaks[i] = t->breaks[i - 1];
			i--;
		}
		t->breaks[i] = m->seq;
		t->nbreaks++;
		if (hq->o.verbose)
			hq_log("run %u: data break before sequence %u",
			       t->run_id, m->seq);
		pump(t, WAIT, 0);
		break;
	case BFP_CLASS_TRANSFORMED:
	case BFP_CLASS_IGNORED:
	case BFP_CLASS_FAILED:
		t->classes[m->id - BFP_CLASS_TRANSFORMED]++;
		if (hq->o.verbose || m->id == BFP_CLASS_FAILED)
			hq_log("run %u: %s %s", t->run_id, bfp_id_name(m->id),
			       m->str);
		break;
	case BFP_ERROR:
		agent_error(t, m, "control");
		break;
	case BFP_DATA_END:
		hq_udp_data_end(hq, t, m);
		break;
	default:
		hq_trace_fail(hq, t, t->control, "Bad control message: %s",
			      bfp_id_name(m->id));
		break;
	}
}

/*
 * Whether a map is news within the trace's budget of names: a re-map to
 * the same name is none, and once HQ_NAMES_MAX bytes of names are written
 * the rest are refused, so that an agent re-mapping an id with long names
 * grows neither bfhq nor the names file without bound.
 */
static bool map_news(struct trace *t, char kind, uint32_t id,
		     const struct bfp_msg *m)
{
	/* "K <id> " and '\n' */
	uint64_t cost = 14 + hq_escape_len(m->str, m->str_len);

	if (route_has_name(t->route, kind, id, m->str, m->str_len))
		return false;
	if (t->names_bytes + cost > HQ_NAMES_MAX) {
		if (!t->names_refused++)
			hq_log("run %u: more than %u bytes of names: maps "
			       "refused from here on (counted)", t->run_id,
			       HQ_NAMES_MAX);
		return false;
	}
	t->names_bytes += cost;
	return true;
}

void hq_trace_data_msg(struct hq *hq, struct trace *t, struct conn *c,
		       const struct bfp_msg *m)
{
	struct pending p = { 0 };
	unsigned int bound;

	switch (m->id) {
	case BFP_MAP_THREAD:
		if (!map_news(t, 'T', m->thread, m))
			return;
		route_map_thread(t->route, m->thread, m->time, m->str);
		live_name(t->live, 'T', m->thread, m->str, m->str_len);
		return;
	case BFP_MAP_METHOD:
		if (!map_news(t, 'M', m->method, m))
			return;
		route_map_method(t->route, m->method, m->str);
		live_name(t->live, 'M', m->method, m->str, m->str_len);
		return;
	case BFP_MAP_EXCEPTION:
		if (!map_news(t, 'X', m->exception, m))
			return;
		route_map_exception(t->route, m->exception, m->str);
		live_name(t->live, 'X', m->exception, m->str, m->str_len);
		return;
	case BFP_ERROR:
		agent_error(t, m, "data");
		return;
	default:
		break;
	}
	p.id = m->id;
	p.seq = m->seq;
	p.time = m->time;
	p.method = m->method;
	p.exception = m->exception;
	p.thread = m->thread;
	p.line = m->line;
	p.thrown = m->exception_thrown;
	if (m->id == BFP_MARKER) {
		p.key = strdup(m->str ? m->str : "");
		p.value = strdup(m->str2 ? m->str2 : "");
	}
	/* markers of 64 KiB strings waiting would swell us long before */
	if (t->nheap >= HQ_MAX_PENDING ||
	    t->pending_text >= HQ_PENDING_TEXT_MAX)
		pump(t, GAP, 0);
	if (heap_push(t, &p)) {
		pending_free(&p);
		hq_trace_fail(hq, t, c, "out of memory");
		return;
	}
	pump(t, WAIT, 0);
	bound = hq_reorder_bound(&hq->o, t);
	if (bound && t->nheap >= bound)
		pump(t, LOST, bound);
}

void hq_trace_conn_closed(struct hq *hq, struct trace *t, struct conn *c)
{
	unsigned int i;

	if (c == t->control) {
		t->control_closed = true;
		t->control_closed_ms = hq_now_ms();
		t->control = NULL;
		if (!t->shutting_down && !t->failed)
			hq_log("run %u: control connection lost", t->run_id);
	}
	for (i = 0; i < t->ndata; i++)
		if (t->data[i] == c) {
			t->data[i] = t->data[--t->ndata];
			t->data_open--;
			break;
		}
	/* nothing more can fill a gap, but datagrams still on their way */
	if (!t->data_open && !t->udp)
		pump(t, GAP, 0);
	(void)hq;
}

void hq_trace_tick(struct hq *hq, struct trace *t, uint64_t now)
{
	if (t->finished)
		return;
	live_tick(t->live, t, now, false, false);
	if (t->nheap && t->stalled_since_ms &&
	    now - t->stalled_since_ms >= hq->o.gap_ms)
		pump(t, GAP, 0);
	if (t->control && !t->control_closed && t->last_hb_ms &&
	    !t->warned_hb && hq->o.config.heartbeat_ms > 0 &&
	    now - t->last_hb_ms > 3ull * (uint64_t)hq->o.config.heartbeat_ms) {
		hq_log("run %u: no heartbeat for %llu ms", t->run_id,
		       (unsigned long long)(now - t->last_hb_ms));
		t->warned_hb = true;
	}
	/* Done once every connection is gone (or the stragglers linger). */
	if (t->control_closed && (!t->data_open ||
				  now - t->control_closed_ms > HQ_LINGER_MS) &&
	    (!hq_udp_waiting(t) || now - t->control_closed_ms >= hq->o.gap_ms))
		hq_trace_finish(hq, t);
}

/*
 * What a trace holds for its outputs: once they are written, the live copy
 * on disk is all a viewer reads, so a long-running bfhq keeps nothing of a
 * trace that ended.
 */
static void trace_release(struct trace *t)
{
	while (t->nheap) {
		struct pending p = heap_pop(t);

		pending_free(&p);
	}
	free(t->heap);
	free(t->breaks);
	free(t->agent_error);
	free(t->data);
	free(t->udp);
	t->udp = NULL;
	micro_free(t);
	route_free(t->route);
	live_close(t->live);
	t->heap = NULL;
	t->breaks = NULL;
	t->agent_error = NULL;
	t->data = NULL;
	t->route = NULL;
	t->live = NULL;
	t->heap_cap = t->breaks_cap = t->nbreaks = 0;
}

/* The sequence numbers after the last one received that DataEnd names. */
static void end_gap(struct trace *t)
{
	uint32_t missing = t->udp_end_seq - t->next_seq;

	hq_log("run %u: gap: sequences %u..%u (%u) at the end never arrived",
	       t->run_id, t->next_seq, t->udp_end_seq - 1, missing);
	t->gaps++;
	t->gap_missing += missing;
	micro_void(t, "gap");
	live_void(t->live, "gap", t->next_seq, missing, t->udp_end_seq);
	t->next_seq = t->udp_end_seq;
}

void hq_trace_finish(struct hq *hq, struct trace *t)
{
	unsigned int i;

	if (t->finished)
		return;
	for (i = 0; i < t->ndata; i++) {
		t->data[i]->trace = NULL;
		t->data[i]->dead = true;
	}
	t->ndata = 0;
	t->data_open = 0;
	if (t->control) {
		t->control->trace = NULL;
		t->control->dead = true;
		t->control = NULL;
	}
	pump(t, GAP, 0);
	if (hq_udp_waiting(t))
		end_gap(t);
	hq_udp_finish(t);
	micro_flush(t);
	t->finished = true;
	route_finish(t->route, t, hq_log_quiet ? NULL : stdout);
	live_tick(t->live, t, hq_now_ms(), true, true);
	trace_release(t);
	hq->finished++;
}

void hq_trace_free(struct trace *t)
{
	trace_release(t);
	free(t);
}
