// SPDX-License-Identifier: GPL-2.0
/*
 * The route of a trace (route.h): its tables of names, methods and
 * threads, each ordered event sent where it goes, the text it holds put
 * in the spill file past route_hold_max, stacks voided by breaks and gaps,
 * and a route made and freed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/bft_shortname.h"
#include "route.h"

bool route_full_names;

/*
 * A counted copy of s; with shorten, its display form after it, made here
 * once per map rather than once per event that prints it.
 */
static struct sig *sig_new(const char *s, bool shorten)
{
	size_t n = strlen(s) + 1, k = 0;
	/* folding "<a>" into "<...>" lengthens a name: twice is room */
	size_t cap = shorten ? 2 * n + 16 : 0;
	struct sig *g = malloc(sizeof(*g) + n + cap);

	if (!g)
		return NULL;
	g->refs = 1;
	memcpy(g->s, s, n);
	g->show = 0;
	if (shorten) {
		k = bft_shortname(s, g->s + n, cap);
		if (strcmp(g->s + n, s))
			g->show = n;
		else
			k = 0;
	}
	/* give back what the display form did not use */
	return realloc(g, sizeof(*g) + n + (k ? k + 1 : 0)) ?: g;
}

struct sig *sig_get(struct sig *g)
{
	if (g)
		g->refs++;
	return g;
}

void sig_put(struct sig *g)
{
	if (g && !--g->refs)
		free(g);
}

/* ---- id tables ---- */

struct method *table_get(struct method **tab, uint32_t *cap,
			 uint32_t *count, uint32_t id, bool create)
{
	uint32_t i;

	if (create && (*count + 1) * 2 > *cap) {
		uint32_t ncap = *cap ? 2 * *cap : 256, k;
		struct method *n = calloc(ncap, sizeof(*n));

		if (!n)
			return NULL;
		for (k = 0; k < *cap; k++) {
			struct method *m = &(*tab)[k];

			if (!m->used_slot)
				continue;
			for (i = (m->id * 2654435761u) & (ncap - 1);
			     n[i].used_slot; i = (i + 1) & (ncap - 1))
				;
			n[i] = *m;
		}
		free(*tab);
		*tab = n;
		*cap = ncap;
	}
	if (!*cap)
		return NULL;
	for (i = (id * 2654435761u) & (*cap - 1); (*tab)[i].used_slot;
	     i = (i + 1) & (*cap - 1))
		if ((*tab)[i].id == id)
			return &(*tab)[i];
	if (!create)
		return NULL;
	(*tab)[i].used_slot = true;
	(*tab)[i].id = id;
	(*count)++;
	return &(*tab)[i];
}

struct method *method_get(struct route *r, uint32_t id, bool create)
{
	return table_get(&r->methods, &r->mcap, &r->mcount, id, create);
}

const char *method_name(struct route *r, uint32_t id, char *tmp,
			size_t n)
{
	struct method *m = method_get(r, id, false);

	if (m && m->sig)
		return m->sig->s;
	snprintf(tmp, n, "#%" PRIu32, id);
	return tmp;
}

const char *method_show(struct route *r, uint32_t id, char *tmp, size_t n)
{
	struct method *m = method_get(r, id, false);

	if (m && m->sig)
		return m->sig->s + m->sig->show;
	snprintf(tmp, n, "#%" PRIu32, id);
	return tmp;
}

/* ---- threads ---- */

static void thread_parse_ids(struct rthread *th, uint32_t pid_default)
{
	const char *open = th->name ? strrchr(th->name, '(') : NULL;
	unsigned int pid, tid;

	th->pid = pid_default;
	th->tid = 1000000u + th->id;	/* never a real tid */
	if (open && sscanf(open, "(%u/%u)", &pid, &tid) == 2) {
		th->pid = pid;
		th->tid = tid;
	}
}

struct rthread *thread_at(const struct route *r, uint16_t id)
{
	struct rthread **page = r->thread_pages[id / THREAD_PAGE];

	return page ? page[id % THREAD_PAGE] : NULL;
}

/* Room for thread @id in its page and in the order: 0, or -ENOMEM. */
static int thread_room(struct route *r, uint16_t id)
{
	struct rthread ***page = &r->thread_pages[id / THREAD_PAGE];

	if (!*page) {
		*page = calloc(THREAD_PAGE, sizeof(**page));
		if (!*page)
			return -ENOMEM;
	}
	if (r->nthreads == r->order_cap) {
		uint32_t cap = r->order_cap ? 2 * r->order_cap : 16;
		uint16_t *v = realloc(r->order, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->order = v;
		r->order_cap = cap;
	}
	return 0;
}

static struct rthread *thread_get(struct route *r, uint16_t id)
{
	struct rthread *th = thread_at(r, id);
	char name[32];

	if (th)
		return th;
	if (thread_room(r, id))
		return NULL;
	th = calloc(1, sizeof(*th));
	if (!th)
		return NULL;
	th->id = id;
	snprintf(name, sizeof(name), "thread %u", id);
	th->name = strdup(name);
	th->root = NO_NODE;
	thread_parse_ids(th, r->pid_default);
	r->thread_pages[id / THREAD_PAGE][id % THREAD_PAGE] = th;
	r->order[r->nthreads++] = id;
	return th;
}

void route_map_thread(struct route *r, uint16_t thread, uint32_t time,
		      const char *name)
{
	bool fresh = !thread_at(r, thread);
	struct rthread *th = thread_get(r, thread);

	(void)time;
	if (!th)
		return;
	th->mapped = true;
	if (th->name && !strcmp(th->name, name) && !fresh)
		return;
	if (!fresh)
		th->renames++;
	free(th->name);
	th->name = strdup(name);
	if (!th->seen)
		/* keep Chrome ids stable */
		thread_parse_ids(th, r->pid_default);
	if (th->named_in_json || fresh)
		chrome_name(r, th);
}

bool route_has_name(struct route *r, char kind, uint32_t id,
		    const char *name, size_t len)
{
	const struct rthread *th;
	struct method *m;

	if (strlen(name) != len)
		return false;	/* a NUL inside: written out, not kept */
	switch (kind) {
	case 'T':
		th = id <= UINT16_MAX ? thread_at(r, (uint16_t)id) : NULL;
		return th && th->mapped && th->name && !strcmp(th->name, name);
	case 'M':
		m = method_get(r, id, false);
		break;
	default:
		m = table_get(&r->exceptions, &r->ecap, &r->ecount, id, false);
		break;
	}
	return m && m->mapped && m->sig && !strcmp(m->sig->s, name);
}

/*
 * One name per id: the one replaced is freed once no open frame names it
 * (an agent may re-map an id as often as it likes).
 */
static void method_set_sig(struct method *m, const char *name, bool shorten)
{
	struct sig *g;

	m->mapped = true;
	if (m->sig && !strcmp(m->sig->s, name))
		return;
	g = sig_new(name, shorten);
	if (!g)
		return;
	sig_put(m->sig);
	m->sig = g;
}

void route_map_method(struct route *r, uint32_t id, const char *sig)
{
	struct method *m = method_get(r, id, true);

	if (m)
		method_set_sig(m, sig, !route_full_names);
}

void route_set_micro(struct route *r)
{
	r->micro = true;
}

void route_map_exception(struct route *r, uint32_t id, const char *name)
{
	struct method *m = table_get(&r->exceptions, &r->ecap, &r->ecount, id,
				     true);

	if (m)
		method_set_sig(m, name, false);
}

/* An exception type's name, "#<id>" if it was never mapped. */
const char *exception_name(struct route *r, uint32_t id, char *tmp,
			   size_t n)
{
	struct method *e = table_get(&r->exceptions, &r->ecap, &r->ecount, id,
				     false);

	if (e && e->sig)
		return e->sig->s;
	snprintf(tmp, n, "#%" PRIu32, id);
	return tmp;
}

/* A "bftrace.at" value: a wire thread id, decimal digits only. */
static bool at_parse(const char *s, uint16_t *thread)
{
	uint32_t v = 0;

	if (!s || !*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (uint32_t)(*s - '0');
		if (v > UINT16_MAX)
			return false;
	}
	*thread = (uint16_t)v;
	return true;
}

/*
 * The thread a "bftrace.at" gave p, if p is the marker numbered right
 * after it.  Any message spends it: what follows was not placed.
 */
static uint16_t *at_take(struct route *r, const struct pending *p)
{
	bool hit = r->at_set && p->id == BFP_MARKER &&
		   p->seq == r->at_seq + 1;

	r->at_set = false;
	return hit ? &r->at_thread : NULL;
}

static bool is_at(const struct pending *p)
{
	return p->id == BFP_MARKER && p->key && !strcmp(p->key, "bftrace.at");
}

/* Thread id, which made an event at time; NULL without memory. */
static struct rthread *thread_use(struct route *r, uint16_t id,
				  uint64_t time)
{
	struct rthread *th = thread_get(r, id);

	if (!th)
		return NULL;
	th->seen = true;
	th->last_time = time;
	r->unnamed_thread_uses += !th->mapped;
	return th;
}

/* A marker of no thread: trace.json's global instant, pftrace's track. */
static void global_marker(struct route *r, const struct pending *p,
			  uint64_t time)
{
	chrome_event(r, json_pack("{s:s,s:s,s:s,s:I,s:I,s:{s:s}}",
				  "name", p->key ? p->key : "",
				  "ph", "i", "s", "g",
				  "ts", chrome_ts(r, time),
				  "pid", (json_int_t)r->pid_default,
				  "args", "value",
				  p->value ? p->value : ""));
	pft_marker(r->pft, pft_ns(r, time), p->key ? p->key : "",
		   p->value ? p->value : "");
}

/* The thread whose text p changed, if any. */
static struct rthread *route_one(struct route *r, const struct pending *p)
{
	uint64_t time = (uint64_t)p->time * 1000 + p->us;
	const uint16_t *at = at_take(r, p);
	struct rthread *th = NULL;
	struct method *m = NULL;

	/* only bfcollector's, and for us: neither shown nor counted */
	if (is_at(p)) {
		r->at_set = at_parse(p->value, &r->at_thread);
		r->at_seq = p->seq;
		return NULL;
	}
	/* a marker may come at the hello (bfcollector's first bftrace.us) */
	if (!r->have_t0 && p->id != BFP_MARKER) {
		r->t0 = time;
		r->have_t0 = true;
	}
	if (p->id != BFP_MARKER) {
		th = thread_use(r, p->thread, time);
		if (!th)
			return NULL;
		m = method_get(r, p->method, false);
		r->unmapped_method_uses += !m || !m->mapped;
	} else if (at) {
		/*
		 * Not "seen", nor its last time moved: a stream of the live
		 * copy has only method events, and its voids and times are
		 * what --replay and the page rebuild from.  NULL (no memory):
		 * a marker of no thread.
		 */
		th = thread_get(r, *at);
		r->unnamed_thread_uses += th && !th->mapped;
	}
	if (time > r->last_time)
		r->last_time = time;
	switch (p->id) {
	case BFP_METHOD_ENTRY:
		if (m && m->noret) {
			noret_enter(r, th, m, time);
			break;
		}
		hq_bprintf(&th->canon, " e%" PRIu32, p->method);
		frame_enter(r, th, p->method, time);
		break;
	case BFP_METHOD_EXIT:
		frame_exit(r, th, p->method, time,
			p->thrown ? "exception thrown" : NULL, 'x', NULL);
		break;
	case BFP_EXCEPTION_BUBBLE: {
		char note[300], etmp[24];
		const char *exc = exception_note(r, p->exception, etmp,
						 sizeof(etmp));

		snprintf(note, sizeof(note), "unwound (%s)", exc);
		frame_exit(r, th, p->method, time, note, 'u', exc);
		break;
	}
	case BFP_EXCEPTION:
		thread_throw(r, th, p, time);
		break;
	case BFP_MARKER:
		r->markers++;
		/* bfcollector's declaration of a method without exits is
		 * for us, not an event to show */
		if (p->key && !strcmp(p->key, "bftrace.noret") && p->value) {
			route_declare_noret(r, p->value);
			break;
		}
		/* bfcollector reports events lost before the wire this way */
		if (p->key && !strcmp(p->key, "bftrace.lost") && p->value)
			r->lost += strtoull(p->value, NULL, 10);
		if (p->key && p->value &&
		    !strcmp(p->key, "bftrace.filtered.min-time"))
			r->filtered_min_time += strtoull(p->value, NULL, 10);
		if (p->key && p->value &&
		    !strcmp(p->key, "bftrace.filtered.caller"))
			r->filtered_caller += strtoull(p->value, NULL, 10);
		if (th)
			thread_marker(r, th, p, time);
		else
			global_marker(r, p, time);
		break;
	}
	return th;
}

size_t route_hold_max = 64 << 20;

/* Every thread's text to the spill file. */
static void spill_all(struct route *r)
{
	uint32_t i;

	r->held = 0;
	for (i = 0; i < r->nthreads; i++) {
		struct rthread *th = thread_at(r, r->order[i]);

		spill_put(&r->spill, r->dir, &th->text_spilled, &th->text);
		spill_put(&r->spill, r->dir, &th->canon_spilled, &th->canon);
		/* all of it, unless a spill failed and kept it */
		th->held = th->text.len + th->canon.len;
		r->held += th->held;
	}
}

void route_event(struct route *r, const struct pending *p)
{
	struct rthread *th = route_one(r, p);

	if (!th)
		return;
	r->held += th->text.len + th->canon.len - th->held;
	th->held = th->text.len + th->canon.len;
	if (r->held > route_hold_max && !r->spill.err)
		spill_all(r);
}

static void thread_void(struct route *r, struct rthread *th, const char *cause)
{
	uint32_t n = th->depth;

	hq_bprintf(&th->canon, " |");
	if (!th->named_in_json)
		chrome_name(r, th);
	pft_instant(r->pft, th->id, pft_ns(r, th->last_time), cause, 1);
	while (th->depth) {
		r->voided_frames++;
		frame_leave(r, th, th->last_time, cause);
	}
	hq_bprintf(&th->text, "%10s | ---- %s: %u frame%s cut ----\n", "",
		   cause, n, n == 1 ? "" : "s");
}

void route_void(struct route *r, const char *cause)
{
	uint32_t i;

	r->voids++;
	for (i = 0; i < r->nthreads; i++) {
		struct rthread *th = thread_at(r, r->order[i]);

		if (th->seen)
			thread_void(r, th, cause);
	}
}

void route_void_thread(struct route *r, uint16_t thread, const char *cause)
{
	struct rthread *th = thread_at(r, thread);

	if (th && th->seen)
		thread_void(r, th, cause);
}

/* ---- setup and output ---- */

struct route *route_new(const struct trace *t, const char *dir)
{
	struct route *r = calloc(1, sizeof(*r));
	char path[4200];

	if (!r)
		return NULL;
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	r->pid_default = t->run_id;
	snprintf(path, sizeof(path), "%s/trace.json", dir);
	r->chrome = fopen(path, "w");
	if (!r->chrome)
		hq_log("cannot write %s: %s", path, strerror(errno));
	else
		chrome_put(CHROME_HEAD, strlen(CHROME_HEAD), r);
	r->chrome_first = true;
	spill_init(&r->spill);
	snprintf(path, sizeof(path), "%s/trace.pftrace", dir);
	r->pft = pft_open(path);
	if (!r->pft)
		hq_log("cannot write %s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/trace.speedscope.json", dir);
	r->ssc = speedscope_open(path, dir);
	if (!r->ssc)
		hq_log("cannot write %s: %s", path, strerror(errno));
	return r;
}

void route_free(struct route *r)
{
	uint32_t i;

	if (!r)
		return;
	for (i = 0; i < r->nthreads; i++) {
		struct rthread *th = thread_at(r, r->order[i]);

		while (th->depth)
			sig_put(th->stack[--th->depth].bname);
		free(th->name);
		free(th->stack);
		free(th->noret);
		bft_buf_free(&th->text);
		bft_buf_free(&th->canon);
		spill_list_free(&th->text_spilled);
		spill_list_free(&th->canon_spilled);
		free(th);
	}
	/* the tables are mostly empty slots: a sanitizer's free() of NULL
	 * still records where it came from */
	for (i = 0; i < r->mcap; i++)
		if (r->methods[i].sig)
			sig_put(r->methods[i].sig);
	for (i = 0; i < r->ecap; i++)
		if (r->exceptions[i].sig)
			sig_put(r->exceptions[i].sig);
	free(r->methods);
	free(r->exceptions);
	free(r->nodes);
	free(r->order);
	for (i = 0; i < THREAD_PAGES; i++)
		if (r->thread_pages[i])
			free(r->thread_pages[i]);
	if (r->chrome)
		fclose(r->chrome);
	pft_close(r->pft);
	speedscope_close(r->ssc);
	spill_close(&r->spill);
	free(r);
}
