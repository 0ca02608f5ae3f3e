// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq --replay: the usual outputs (tree.txt, calls.txt, summary.txt, ...)
 * rebuilt from a live directory, as far as live_read() may show it: a
 * trace whose bfhq was killed is shown up to its last complete index entry.
 *
 * Lines are routed in sequence order across the streams, which is the
 * order bfhq routed them in; a void line voids its own thread only, as
 * every thread that had a frame got its own line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hq.h"
#include "live.h"

static bool seq_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static void apply_names(struct route *r, const char *s, size_t len)
{
	const char *end = s + len;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		char *name, *p;
		unsigned long id;

		if (!nl)
			break;
		name = malloc((size_t)(nl - s) + 1);
		if (!name)
			break;
		errno = 0;
		id = strtoul(s + 2, &p, 10);
		if (nl - s < 3 || s[1] != ' ' || errno || p >= nl ||
		    *p != ' ' || id > UINT32_MAX) {
			free(name);
			s = nl + 1;
			continue;
		}
		live_unescape(p + 1, (size_t)(nl - p - 1), name);
		if (s[0] == 'M')
			route_map_method(r, (uint32_t)id, name);
		else if (s[0] == 'X')
			route_map_exception(r, (uint32_t)id, name);
		else if (s[0] == 'T' && id <= UINT16_MAX)
			route_map_thread(r, (uint16_t)id, 0, name);
		free(name);
		s = nl + 1;
	}
}

/* A parsed line, routed as bfhq routed it. */
static void route_line(struct route *r, uint32_t stream,
		       const struct live_line *l)
{
	struct pending p = { .seq = l->seq, .method = l->method,
			     .exception = l->exception,
			     .line = (uint16_t)l->line,
			     .thread = (uint16_t)stream };
	char *buf = NULL;

	p.time = (uint32_t)(l->time_us / 1000);
	p.us = (uint16_t)(l->time_us % 1000);
	switch (l->op) {
	case '|':
		route_void_thread(r, (uint16_t)stream,
				  !strcmp(l->cause, "break") ? "data break" :
				  l->cause);
		return;
	case 'e':
		p.id = BFP_METHOD_ENTRY;
		break;
	case 'n':
		/* its bftrace.noret marker was routed before it */
		p.id = BFP_METHOD_ENTRY;
		break;
	case 't':
		p.thrown = true;
		/* fall through */
	case 'x':
		p.id = BFP_METHOD_EXIT;
		break;
	case '!':
		p.id = BFP_EXCEPTION;
		break;
	case 'u':
		p.id = BFP_EXCEPTION_BUBBLE;
		break;
	case 'm': {
		const char *tab = memchr(l->text, '\t', l->text_len);

		buf = malloc(2 * l->text_len + 2);
		if (!buf || !tab)
			break;
		p.id = BFP_MARKER;
		p.key = buf;
		live_unescape(l->text, (size_t)(tab - l->text), p.key);
		p.value = buf + l->text_len + 1;
		live_unescape(tab + 1, (size_t)(l->text + l->text_len - tab - 1),
			      p.value);
		break;
	}
	}
	if (p.id)
		route_event(r, &p);
	free(buf);
}

/* A stream's next line to route, parsed once. */
struct cursor {
	size_t at;		/* where it starts in the stream's data */
	size_t len;		/* with its '\n'; 0: the stream is done */
	struct live_line l;
};

/* Move c to the next line of s that parses; the lines skipped. */
static uint64_t next_line(const struct live_stream *s, struct cursor *c)
{
	uint64_t skipped = 0;

	c->len = 0;
	while (c->at < s->len) {
		const char *p = s->data + c->at;
		const char *nl = memchr(p, '\n', s->len - c->at);
		size_t n = (size_t)(nl - p);

		if (!live_parse_line(p, n, &c->l)) {
			c->len = n + 1;
			break;
		}
		skipped++;
		c->at += n + 1;
	}
	return skipped;
}

static uint64_t counter(json_t *meta, const char *key)
{
	json_t *v = json_object_get(json_object_get(meta, "counters"), key);

	return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

static void trace_from_meta(struct trace *t, json_t *meta)
{
	const char *state = json_string_value(json_object_get(meta, "state"));
	const char *msg = json_string_value(json_object_get(meta, "message"));
	const char *mode;

	t->index = (unsigned int)json_integer_value(json_object_get(meta,
								    "trace"));
	t->run_id = (uint8_t)json_integer_value(json_object_get(meta, "run"));
	t->version = (uint8_t)json_integer_value(json_object_get(meta,
								 "protocol"));
	t->gaps = counter(meta, "gaps");
	t->gap_missing = counter(meta, "gap_missing");
	t->lost_bound = counter(meta, "lost");
	t->lost_missing = counter(meta, "lost_missing");
	t->late = counter(meta, "late");
	t->breaks_seen = counter(meta, "breaks");
	t->breaks_late = counter(meta, "breaks_late");
	t->heartbeats = counter(meta, "heartbeats");
	t->classes[0] = counter(meta, "classes_transformed");
	t->classes[1] = counter(meta, "classes_ignored");
	t->classes[2] = counter(meta, "classes_failed");
	t->agent_errors = counter(meta, "agent_errors");
	t->wire_bytes = counter(meta, "received_bytes");
	t->udp_dgrams = counter(meta, "udp_datagrams");
	t->udp_lost = counter(meta, "udp_lost");
	t->udp_dup = counter(meta, "udp_duplicated");
	t->udp_late = counter(meta, "udp_late");
	t->udp_malformed = counter(meta, "udp_malformed");
	mode = json_string_value(json_object_get(meta, "last_mode"));
	if (mode && strlen(mode) == 1)
		t->last_mode = (uint8_t)mode[0];
	if (state && !strcmp(state, "failed")) {
		t->failed = true;
		snprintf(t->fail_msg, sizeof(t->fail_msg), "%s",
			 msg ? msg : "");
	} else if (!state || strcmp(state, "finished")) {
		snprintf(t->fail_msg, sizeof(t->fail_msg), "%s",
			 "its bfhq stopped while recording; replayed up to "
			 "the last index entry");
	} else if (msg) {
		snprintf(t->fail_msg, sizeof(t->fail_msg), "%s", msg);
	}
}

int hq_replay(const char *dir, const char *outdir)
{
	char live_dir[4200], out[4300];
	struct live_view v;
	struct trace t = { 0 };
	struct stat st;
	struct cursor *cur;
	size_t k;
	uint64_t n = 0, bad = 0, held = 0;
	int err;

	/* trace-N or trace-N/live */
	snprintf(live_dir, sizeof(live_dir), "%s/live", dir);
	if (stat(live_dir, &st) || !S_ISDIR(st.st_mode))
		snprintf(live_dir, sizeof(live_dir), "%s", dir);
	if (!outdir) {
		snprintf(out, sizeof(out), "%s/../replay", live_dir);
		outdir = out;
	}
	err = live_read(live_dir, &v);

	if (err) {
		fprintf(stderr, "bfhq: --replay %s: %s\n", live_dir,
			strerror(-err));
		return 1;
	}
	if (!v.meta)
		fprintf(stderr, "bfhq: --replay %s: no readable meta.json; "
			"the summary lacks the trace's counters\n", live_dir);
	trace_from_meta(&t, v.meta);
	if (mkdir(outdir, 0755) && errno != EEXIST) {
		fprintf(stderr, "bfhq: cannot create %s: %s\n", outdir,
			strerror(errno));
		live_view_free(&v);
		return 1;
	}
	t.route = route_new(&t, outdir);
	cur = calloc(v.nstreams + 1, sizeof(*cur));
	if (!t.route || !cur) {
		route_free(t.route);
		free(cur);
		live_view_free(&v);
		return 1;
	}
	if (json_integer_value(json_object_get(v.meta, "resolution_us")) == 1)
		route_set_micro(t.route);
	apply_names(t.route, v.names, v.names_len);
	for (k = 0; k < v.nstreams; k++)
		bad += next_line(&v.streams[k], &cur[k]);
	for (;;) {
		size_t bi = SIZE_MAX;

		/* the next line in sequence order; a void before an event */
		for (k = 0; k < v.nstreams; k++) {
			const struct live_line *l = &cur[k].l, *b;

			if (!cur[k].len)
				continue;
			b = bi == SIZE_MAX ? NULL : &cur[bi].l;
			if (!b || seq_before(l->seq, b->seq) ||
			    (l->seq == b->seq && l->op == '|' && b->op != '|'))
				bi = k;
		}
		if (bi == SIZE_MAX)
			break;
		route_line(t.route, v.streams[bi].id, &cur[bi].l);
		n += cur[bi].l.op != '|';
		cur[bi].at += cur[bi].len;
		bad += next_line(&v.streams[bi], &cur[bi]);
	}
	for (k = 0; k < v.nstreams; k++)
		held += v.streams[k].held;
	t.routed = n;
	t.finished = true;
	route_finish(t.route, &t, NULL);
	if (!hq_log_quiet)
		printf("replayed %" PRIu64 " events of %zu streams up to %" PRIu64
		       " us into %s/ (%" PRIu64 " later ones held back, %"
		       PRIu64 " torn records, %" PRIu64 " bad entries, %"
		       PRIu64 " bad lines)\n", n, v.nstreams, v.frontier_us,
		       outdir, held, v.torn, v.bad, bad);
	route_free(t.route);
	free(cur);
	live_view_free(&v);
	return 0;
}
