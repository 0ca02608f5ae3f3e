// SPDX-License-Identifier: GPL-2.0
/*
 * From merged records to protocol messages.
 *
 * bft_merge emits every CPU's records in time order; bft_calltree keeps a
 * shadow stack per thread and turns them into entries, exits that name the
 * frame they close (NORET frames included, so an exit the kernel could not
 * observe is still written where it belongs), and "stacks void" events at
 * breaks, losses and gaps.  Here each call event:
 *
 *   - is dropped if its method is excluded by the configuration;
 *   - goes to its thread's .flow file (--output);
 *   - gets its thread's 16-bit id, and the data connection of that thread
 *     (id modulo the number of connections), so a thread's events stay in
 *     order on one socket;
 *   - is preceded, on that connection, by MapThreadName the first time
 *     (and after a rename) and by MapMethodSignature the first time the
 *     method is used there;
 *   - takes the next sequence number: one gap-free sequence, from 0,
 *     across all the connections.
 * A void event becomes one DataBreak on the control connection, carrying
 * the sequence number of the next event.
 *
 * A throw becomes an Exception at the thread's innermost frame (none if
 * no traced frame is open: counted), a frame closed by an UNWIND an
 * ExceptionBubble instead of a MethodExit; both sequenced like events,
 * each after MapException for its type on that connection.  Frames a
 * longjmp left bubble "longjmp".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector.h"

/* Microseconds since the hello; Bytefrog's times are their thousandths. */
static inline uint64_t rel_us(struct coll *c, uint64_t t)
{
	if (!c->have_base) {
		/* replay: the stream's first record is the hello */
		c->base_ns = t;
		c->have_base = true;
	}
	return t > c->base_ns ? (t - c->base_ns) / 1000 : 0;
}

/* ---- threads ---- */

static uint32_t thash_slot(uint32_t tgid, uint32_t tid, uint32_t cap)
{
	uint64_t k = ((uint64_t)tgid << 32 | tid) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(k >> 32) & (cap - 1);
}

static int thash_grow(struct coll *c)
{
	uint32_t cap = c->thash_cap ? 2 * c->thash_cap : 256, i;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (i = 0; i < c->nthreads; i++) {
		uint32_t s = thash_slot(c->threads[i]->tgid, c->threads[i]->tid,
					cap);

		while (h[s])
			s = (s + 1) & (cap - 1);
		h[s] = i + 1;
	}
	free(c->thash);
	c->thash = h;
	c->thash_cap = cap;
	return 0;
}

static char *thread_label(const char *comm, uint32_t tgid, uint32_t tid)
{
	char *name = NULL;

	if (asprintf(&name, "%s (%u/%u)", comm ? comm : "thread", tgid,
		     tid) < 0)
		name = NULL;
	return name;
}

static char *thread_name(struct coll *c, uint32_t tgid, uint32_t tid)
{
	char *comm = source_thread_name(c, tgid, tid);
	char *name = thread_label(comm, tgid, tid);

	free(comm);
	return name;
}

static struct cthread *thread_find(struct coll *c, uint32_t tgid,
				   uint32_t tid)
{
	struct cthread *t;
	uint32_t s;

	if (!c->thash_cap)
		return NULL;
	for (s = thash_slot(tgid, tid, c->thash_cap); c->thash[s];
	     s = (s + 1) & (c->thash_cap - 1)) {
		t = c->threads[c->thash[s] - 1];
		if (t->tgid == tgid && t->tid == tid)
			return t;
	}
	return NULL;
}

/* At most this many names wait for their threads' first calls. */
#define PENDING_MAX	4096

/*
 * A NAME record is written just before its thread's first event on a
 * CPU, but that event may be lost, dropped while suspended or a call the
 * call tree never reports: the name waits for the thread's first call
 * instead of making a thread of its own, with no events.
 */
static int pending_put(struct coll *c, const struct bft_record *r,
		       const char *comm)
{
	struct pending_name *p;
	uint32_t i;

	for (i = 0; i < c->npending; i++)
		if (c->pending[i].tid == r->tid && c->pending[i].tgid == r->tgid)
			break;
	if (i == c->npending) {
		if (c->npending == PENDING_MAX) {
			/* the oldest: its thread's events were lost */
			memmove(c->pending, c->pending + 1,
				(PENDING_MAX - 1) * sizeof(*c->pending));
			i = --c->npending;
		}
		if (c->npending == c->pending_cap) {
			uint32_t cap = c->pending_cap ? 2 * c->pending_cap : 16;

			p = realloc(c->pending, cap * sizeof(*p));
			if (!p)
				return -ENOMEM;
			c->pending = p;
			c->pending_cap = cap;
		}
		c->npending++;
	}
	p = &c->pending[i];
	p->tgid = r->tgid;
	p->tid = r->tid;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	return 0;
}

/* The name a NAME record gave the thread before its first call, or NULL. */
static char *pending_take(struct coll *c, uint32_t tgid, uint32_t tid)
{
	char *name;

	for (uint32_t i = 0; i < c->npending; i++) {
		if (c->pending[i].tid != tid || c->pending[i].tgid != tgid)
			continue;
		name = thread_label(c->pending[i].comm, tgid, tid);
		c->pending[i] = c->pending[--c->npending];
		return name;
	}
	return NULL;
}

/* A new thread, named @name (taken), or as the source says if NULL. */
static struct cthread *thread_add(struct coll *c, uint32_t tgid, uint32_t tid,
				  char *name)
{
	struct cthread *t, **v;
	uint32_t s;

	if ((c->nthreads + 1) * 2 > c->thash_cap && thash_grow(c)) {
		free(name);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	v = realloc(c->threads, (c->nthreads + 1) * sizeof(*v));
	if (!t || !v) {
		free(t);
		free(name);
		if (v)
			c->threads = v;
		return NULL;
	}
	c->threads = v;
	t->tgid = tgid;
	t->tid = tid;
	if (c->nthreads == 65536)
		coll_log("more than 65536 threads: thread ids are reused");
	t->wire_id = (uint16_t)c->nthreads;
	t->name_recorded = name != NULL;
	t->name = name ? name : thread_name(c, tgid, tid);
	if (c->o.outdir)
		flow_file_open(c, t);
	c->threads[c->nthreads++] = t;
	for (s = thash_slot(tgid, tid, c->thash_cap); c->thash[s];
	     s = (s + 1) & (c->thash_cap - 1))
		;
	c->thash[s] = c->nthreads;
	return t;
}

static struct cthread *thread_get(struct coll *c, uint32_t tgid, uint32_t tid)
{
	struct cthread *t = thread_find(c, tgid, tid);

	return t ? t : thread_add(c, tgid, tid, pending_take(c, tgid, tid));
}

/* t is called @name (taken) from now: HQ hears it before its next event. */
static void thread_rename(struct coll *c, struct cthread *t, char *name)
{
	if (c->o.verbose)
		coll_log("thread %u renamed: %s", t->tid, name);
	free(t->name);
	t->name = name;
	t->name_sent = false;
}

/*
 * A NAME record: the thread's name as it was when it ran (uapi 2.2), so a
 * short-lived thread keeps the name /proc no longer has.  An empty name
 * tells nothing: /proc or the replay's table names that thread.
 */
static int thread_named(struct coll *c, const struct bft_record *r)
{
	char comm[BFT_THREAD_NAME_MAX + 1], *name;
	struct cthread *t;

	bft_record_name(r, comm);
	if (!comm[0])
		return 0;
	t = thread_find(c, r->tgid, r->tid);
	if (!t)
		return pending_put(c, r, comm);
	t->name_recorded = true;
	name = thread_label(comm, r->tgid, r->tid);
	if (!name)
		return -ENOMEM;
	if (t->name && !strcmp(t->name, name))
		free(name);
	else
		thread_rename(c, t, name);
	return 0;
}

void pipeline_check_renames(struct coll *c)
{
	uint32_t i;

	for (i = 0; i < c->nthreads; i++) {
		struct cthread *t = c->threads[i];
		char *name;

		if (t->name_recorded)
			continue;
		name = thread_name(c, t->tgid, t->tid);
		if (!name)
			continue;
		/* A thread that is gone keeps the name it had. */
		if (t->name && strcmp(t->name, name) &&
		    strncmp(name, "thread (", 8))
			thread_rename(c, t, name);
		else
			free(name);
	}
}

/* ---- to HQ ---- */

/*
 * Bytefrog times are milliseconds; the rest of the ring's microseconds
 * goes in a "bftrace.us" marker after the messages it belongs to
 * (docs/live-format.md).  Every sequenced message gets its entry.
 */
#define US_BATCH	4096
#define US_BATCH_UDP	300	/* 1212 bytes at most: it fits a datagram */

/* ",0" ... ",999", as "%u" writes them after a comma, and their lengths */
static uint8_t us_text[1000][4], us_len[1000];

static void us_text_init(void)
{
	unsigned int v;

	for (v = 0; v < 1000; v++) {
		uint8_t *p = us_text[v];

		*p++ = ',';
		if (v >= 100)
			*p++ = (uint8_t)('0' + v / 100);
		if (v >= 10)
			*p++ = (uint8_t)('0' + v / 10 % 10);
		*p++ = (uint8_t)('0' + v % 10);
		us_len[v] = (uint8_t)(p - us_text[v]);
	}
}

/*
 * c->us: US_HEAD bytes kept free for the count, then ",frac" per message.
 * The report writes the count into that room and overwrites the first
 * comma, so the batch goes out where it was collected, without a copy.
 */
#define US_HEAD		12

/* Every event comes here: a copy from the table, not an snprintf(). */
static inline void note_us(struct coll *c, unsigned int frac)
{
	if (c->o.ms_only)
		return;
	if (!c->us_n)
		c->us.len = 0;
	if (c->us.cap - c->us.len < US_HEAD + 4 &&
	    bft_buf_reserve(&c->us, US_HEAD + 4))
		return;
	if (!c->us_n)
		c->us.len = US_HEAD;
	memcpy(c->us.data + c->us.len, us_text[frac], 4);
	c->us.len += us_len[frac];
	c->us_n++;
	if (c->us_n >= (c->o.data_udp ? US_BATCH_UDP : US_BATCH))
		pipeline_report_us(c);
}

void pipeline_report_us(struct coll *c)
{
	struct bfp_msg m = { .id = BFP_MARKER, .str = "bftrace.us",
			     .str_len = 10, .str2 = "0", .str2_len = 1 };
	char head[US_HEAD + 1];
	int n;

	if (c->o.ms_only || c->hq != HQ_UP || !c->ndata ||
	    (!c->us_n && c->us_declared))
		return;
	if (c->us_n) {
		n = snprintf(head, sizeof(head), "%u", c->us_n);
		c->us.data[US_HEAD] = ' ';
		memcpy(c->us.data + US_HEAD - n, head, (size_t)n);
		m.str2 = (const char *)c->us.data + US_HEAD - n;
		m.str2_len = c->us.len - (US_HEAD - (size_t)n);
	}
	m.time = (uint32_t)c->last_stamp;
	m.seq = c->seq;
	if (!hq_data_msg(c, 0, &m)) {
		c->seq++;
		c->us.len = 0;
		c->us_n = 0;
		c->us_declared = true;
	}
}

static void send_break(struct coll *c)
{
	struct bfp_msg m = { .id = BFP_DATA_BREAK };

	if (c->hq != HQ_UP || c->break_sent)
		return;
	m.seq = c->seq;
	if (!hq_control_msg(c, &m)) {
		c->break_sent = true;
		c->breaks_sent++;
	}
}

/* MapException on conn before the type's first use there. */
static int map_exception(struct coll *c, unsigned int conn, uint32_t exc)
{
	struct exc_type *x = exc_types_get(&c->exc, exc);
	struct bfp_msg m = { .id = BFP_MAP_EXCEPTION, .exception = exc };
	int err;

	if (!x) {
		/* thrown before our last look at the kernel's table */
		source_refresh_exceptions(c);
		x = exc_types_get(&c->exc, exc);
	}
	if (!x) {
		char name[48];

		snprintf(name, sizeof(name), "exception type %" PRIu32, exc);
		if (exc_types_add(&c->exc, exc, name))
			return -ENOMEM;
		x = exc_types_get(&c->exc, exc);
		if (!x)
			return -ENOMEM;
	}
	if (told_on(&x->mapped, c->session, conn))
		return 0;
	m.str = x->name;
	m.str_len = strlen(x->name);
	err = hq_data_msg(c, conn, &m);
	if (!err)
		told_add(&x->mapped, c->session, conn);
	return err;
}

/*
 * What an event needs sent before it, the first time: the rare paths of
 * send_event(), kept out of it so that what every event runs stays short.
 */
static __attribute__((noinline)) int map_thread(struct coll *c,
						struct cthread *t,
						uint32_t now)
{
	struct bfp_msg m = { .id = BFP_MAP_THREAD };
	int err;

	t->conn = (uint8_t)(t->wire_id % c->ndata);
	m.thread = t->wire_id;
	m.time = now;
	m.str = t->name ? t->name : "thread";
	m.str_len = strlen(m.str);
	err = hq_data_msg(c, t->conn, &m);
	if (!err)
		t->name_sent = true;
	return err;
}

static __attribute__((noinline)) int map_method(struct coll *c,
						struct method *me,
						unsigned int conn)
{
	struct bfp_msg m = { .id = BFP_MAP_METHOD };

	if (told_on(&me->mapped, c->session, conn))
		return 0;
	told_add(&me->mapped, c->session, conn);
	m.method = me->id;
	m.str = me->sig;
	m.str_len = strlen(me->sig);
	return hq_data_msg(c, conn, &m);
}

/*
 * The twin id of an entries-only method (struct method): its map, then
 * the marker that tells HQ the twin has no exits, sequenced so that HQ
 * routes it before the entries that follow.
 */
static __attribute__((noinline)) int map_twin(struct coll *c,
					      struct method *me,
					      unsigned int conn, uint32_t now)
{
	uint32_t twin = METHOD_NORET_TWIN(me->id);
	struct bfp_msg m = { .id = BFP_MAP_METHOD, .method = twin,
			     .str = me->sig, .str_len = strlen(me->sig) };
	char value[16];
	int err;

	if (told_on(&me->twin_mapped, c->session, conn))
		return 0;
	err = hq_data_msg(c, conn, &m);
	if (err)
		return err;
	m = (struct bfp_msg){ .id = BFP_MARKER, .time = now, .seq = c->seq,
			      .str = "bftrace.noret", .str_len = 13,
			      .str2 = value };
	m.str2_len = (size_t)snprintf(value, sizeof(value), "%" PRIu32, twin);
	err = hq_data_msg(c, conn, &m);
	if (err)
		return err;
	c->seq++;
	/* a sequenced message: the next "bftrace.us" covers it too */
	note_us(c, 0);
	told_add(&me->twin_mapped, c->session, conn);
	return 0;
}

static __attribute__((noinline)) int send_exception(struct coll *c,
						    struct cthread *t,
						    uint32_t method,
						    uint8_t id, uint32_t now,
						    uint32_t exc)
{
	struct bfp_msg m = { .id = id, .time = now, .seq = c->seq,
			     .method = method, .exception = exc,
			     .thread = t->wire_id };
	int err = map_exception(c, t->conn, exc) ?: hq_data_msg(c, t->conn,
								 &m);

	if (err)
		return err;
	if (id == BFP_EXCEPTION)
		c->throws++;
	else
		c->bubbles++;
	return 0;
}

/*
 * One sequenced message for ev: id BFP_METHOD_ENTRY, _EXIT, BFP_EXCEPTION
 * or _BUBBLE (with exception exc), after the maps it needs; under me's
 * twin id if twin (an entries-only method).
 */
static int send_event(struct coll *c, struct cthread *t, struct method *me,
		      const struct bft_call_event *ev, uint8_t id,
		      uint32_t exc, bool twin)
{
	uint64_t us = rel_us(c, ev->time_ns), ms = us / 1000;
	uint32_t now = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
	uint32_t wire = me->id;
	int err;

	if (!t->name_sent) {
		err = map_thread(c, t, now);
		if (err)
			return err;
	}
	if (twin) {
		wire = METHOD_NORET_TWIN(me->id);
		if (!told_on(&me->twin_mapped, c->session, t->conn)) {
			err = map_twin(c, me, t->conn, now);
			if (err)
				return err;
		}
	} else if (!told_on(&me->mapped, c->session, t->conn)) {
		err = map_method(c, me, t->conn);
		if (err)
			return err;
	}
	if (id == BFP_EXCEPTION || id == BFP_EXCEPTION_BUBBLE)
		err = send_exception(c, t, wire, id, now, exc);
	else
		err = hq_data_call(c, t->conn, id, now, c->seq, wire,
				   t->wire_id);
	if (err)
		return err;
	c->seq++;
	note_us(c, (unsigned int)(us - ms * 1000));
	c->break_sent = false;
	c->events_sent++;
	c->last_stamp = now;
	return 0;
}

/*
 * A USDT hit: Marker "provider:name" with its arguments in decimal, after
 * a "bftrace.at" marker naming its thread, which Bytefrog's Marker lacks:
 * bfhq puts the hit in that thread's tree.
 */
static int send_mark(struct coll *c, struct cthread *t, struct method *me,
		     const struct bft_call_event *ev)
{
	uint64_t us = rel_us(c, ev->time_ns), ms = us / 1000;
	uint32_t now = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
	const char *key = strrchr(me->sig, '!');
	char at[8], value[BFT_USDT_MAX_ARGS * 21 + 1];
	struct bfp_msg m = { .id = BFP_MARKER, .time = now };
	size_t len = 0;
	int err = 0;

	key = key ? key + 1 : me->sig;
	for (unsigned int i = 0; i < ev->nargs; i++)
		len += (size_t)(ev->mark_unread >> i & 1 ?
			snprintf(value + len, sizeof(value) - len, "%s?",
				 i ? " " : "") :
			ev->mark_signed >> i & 1 ?
			snprintf(value + len, sizeof(value) - len, "%s%" PRId64,
				 i ? " " : "", (int64_t)ev->args[i]) :
			snprintf(value + len, sizeof(value) - len, "%s%" PRIu64,
				 i ? " " : "", ev->args[i]));
	value[len] = 0;
	if (!t->name_sent)
		err = map_thread(c, t, now);
	snprintf(at, sizeof(at), "%u", (unsigned int)t->wire_id);
	m.str = "bftrace.at";
	m.str_len = strlen(m.str);
	m.str2 = at;
	m.str2_len = strlen(at);
	m.seq = c->seq;
	if (!err)
		err = hq_data_msg(c, t->conn, &m);
	if (err)
		return err;
	c->seq++;
	note_us(c, (unsigned int)(us - ms * 1000));
	m.str = key;
	m.str_len = strlen(key);
	m.str2 = value;
	m.str2_len = len;
	m.seq = c->seq;
	err = hq_data_msg(c, t->conn, &m);
	if (err)
		return err;
	c->seq++;
	note_us(c, (unsigned int)(us - ms * 1000));
	c->break_sent = false;
	c->marks_sent++;
	c->last_stamp = now;
	return 0;
}

/* ---- call events ---- */

struct method *pipeline_method(struct coll *c, uint32_t id)
{
	struct method *me = methods_get(&c->methods, id);
	char name[32];

	if (me)
		return me;
	/* A probe attached after our last look at the table. */
	source_refresh_methods(c);
	me = methods_get(&c->methods, id);
	if (me)
		return me;
	snprintf(name, sizeof(name), "method%" PRIu32, id);
	if (methods_add(&c->methods, id, "unknown", name, 0))
		return NULL;
	me = methods_get(&c->methods, id);
	if (me)
		me->known = false;
	return me;
}

static void flow_void(struct cthread *t)
{
	/* .flow has no breaks: close what the break cut, right there */
	if (t->flow_file && t->flow_depth) {
		bft_flow_exit(&t->flow, t->flow_depth);
		t->flow_depth = 0;
	}
}

/*
 * The exception a THROW sends: its type; a rethrow's unknown type is the
 * one the thread threw last (most often the one it caught); a forced
 * unwind has a fixed name.
 */
static uint32_t thrown(const struct cthread *t, const struct bft_call_event *ev)
{
	switch (ev->how) {
	case BFT_THROW_FORCED:
		return COLL_EXC_FORCED;
	case BFT_THROW_RETHROW:
		return ev->exc ? ev->exc : t->exc;
	default:
		return ev->exc;
	}
}

static int on_call(void *ctx, const struct bft_call_event *ev)
{
	struct coll *c = ctx;
	struct cthread *t = *ev->user;

	if (!t) {
		/* once per thread: the call tree keeps it for us */
		t = thread_get(c, ev->tgid, ev->tid);
		if (!t)
			return -ENOMEM;
		*ev->user = t;
	}
	if (bft_callfilter_on(&c->filt))
		return bft_callfilter_feed(&c->filt, &t->filt, t, ev);
	return pipeline_deliver(c, t, ev);
}

int pipeline_deliver(struct coll *c, struct cthread *t,
		     const struct bft_call_event *ev)
{
	struct method *me;
	uint32_t exc = 0;
	bool twin;
	uint8_t id;

	if (ev->kind == BFT_CALL_VOID) {
		flow_void(t);
		send_break(c);
		return 0;
	}
	if (ev->kind == BFT_CALL_THROW) {
		t->exc = thrown(t, ev);
		if (!ev->depth) {
			/* no frame of ours to throw from: nothing to send */
			c->throws_outside++;
			return 0;
		}
		id = BFP_EXCEPTION;
		exc = t->exc;
	} else if (ev->kind == BFT_CALL_ENTER) {
		id = BFP_METHOD_ENTRY;
	} else if (ev->unwound) {
		/* a frame left without returning: the exception passed it */
		id = BFP_EXCEPTION_BUBBLE;
		exc = ev->unwound == BFT_UNWIND_LONGJMP ? COLL_EXC_LONGJMP :
							  t->exc;
	} else {
		id = BFP_METHOD_EXIT;
	}
	me = pipeline_method(c, ev->id);
	if (!me)
		return -ENOMEM;
	if (ev->kind == BFT_CALL_MARK) {
		me->calls++;
		c->methods.counted++;
		if (methods_excluded(&c->methods, me)) {
			c->excluded++;
			return 0;
		}
		t->seen = true;
		if (c->hq == HQ_UP && send_mark(c, t, me, ev))
			hq_down(c, "cannot queue data");
		else if (c->hq == HQ_DOWN)
			c->lost_unsent++;
		return 0;
	}
	/*
	 * An entries-only method's frame ends when the call tree guesses
	 * (the next exit of its thread): that end is no exit, and neither
	 * HQ nor the counters hear of it.  Its entries go out as instants.
	 */
	twin = ev->noret && method_noret(me, ev->tgid);
	if (twin && ev->kind == BFT_CALL_EXIT)
		return 0;
	/* the counters count what ran, excluded from the trace or not */
	if (ev->kind == BFT_CALL_ENTER)
		me->calls++;
	else if (ev->kind == BFT_CALL_EXIT)
		me->exits++;
	c->methods.counted++;
	if (methods_excluded(&c->methods, me)) {
		c->excluded++;
		return 0;
	}
	t->seen = true;
	/* .flow knows entries and exits: a frame left is an exit there,
	 * and an entries-only call a call without callees */
	if (t->flow_file) {
		if (ev->kind == BFT_CALL_ENTER) {
			bft_flow_enter(&t->flow, me->id);
			if (twin)
				bft_flow_exit(&t->flow, 1);
			else
				t->flow_depth++;
		} else if (ev->kind == BFT_CALL_EXIT && t->flow_depth) {
			bft_flow_exit(&t->flow, 1);
			t->flow_depth--;
		}
	}
	switch (c->hq) {
	case HQ_UP:
		if (send_event(c, t, me, ev, id, exc, twin))
			hq_down(c, "cannot queue data");
		break;
	case HQ_DOWN:
		c->lost_unsent++;
		break;
	case HQ_NONE:
		break;
	}
	return 0;
}

static int on_record(void *ctx, const struct bft_record *r)
{
	struct coll *c = ctx;

	switch (r->kind) {
	case BFT_REC_NAME:
		return thread_named(c, r);
	case BFT_REC_LOST:
		c->lost_kernel += r->value;
		break;
	case BFT_REC_GAP:
		if (r->value2 > r->value)
			c->lost_gaps += r->value2 - r->value;
		break;
	case BFT_REC_ENTER:
	case BFT_REC_EXIT:
	case BFT_REC_ENTER_NORET:
	case BFT_REC_THROW:
	case BFT_REC_UNWIND:
	case BFT_REC_MARK:
		(void)rel_us(c, r->time_ns);
		/* replay of a suspended "kernel": the records are dropped */
		if (c->replay_suspended) {
			c->suspended_dropped += r->kind == BFT_REC_EXIT ?
						r->value : 1;
			return 0;
		}
		break;
	case BFT_REC_ARG:
		if (c->replay_suspended)
			return 0;	/* its MARK was counted */
		break;
	default:
		break;
	}
	return bft_calltree_feed(&c->ct, r);
}

static int on_stream_error(void *ctx, const struct bft_stream_error *e)
{
	(void)ctx;
	coll_log("%s", e->msg);
	return BFT_STREAM_RESYNC;
}

int pipeline_init(struct coll *c, unsigned int ncpus)
{
	struct bft_merge_opts mo = {
		.ncpus = ncpus,
		/* TIME, SYNC and THREAD only move a CPU's watermark: queueing
		 * them would double the records the merge moves around. */
		.kinds = BFT_REC_CALLTREE_KINDS | BFT_REC_BIT(BFT_REC_NAME),
		.on_record = on_record,
		.ctx = c,
		.on_error = on_stream_error,
		.err_ctx = c,
		.policy = BFT_STREAM_RESYNC,
		/* a busy CPU's records skip the queue once the others allow:
		 * a queue of a flush interval leaves the cache */
		.direct = 1,
	};
	struct bft_calltree_opts co = { .on_call = on_call, .ctx = c };
	int err;

	us_text_init();

	c->outdir_fd = -1;
	if (c->o.outdir) {
		c->outdir_made = !mkdir(c->o.outdir, 0755);
		if (!c->outdir_made && errno != EEXIST) {
			coll_log("cannot create %s: %s", c->o.outdir,
				 strerror(errno));
			return -errno;
		}
		c->outdir_fd = open(c->o.outdir, O_RDONLY | O_DIRECTORY |
				    O_CLOEXEC);
		if (c->outdir_fd < 0) {
			coll_log("cannot open %s: %s", c->o.outdir,
				 strerror(errno));
			return -errno;
		}
	}
	err = bft_merge_init(&c->merge, &mo);
	if (err)
		return err;
	filters_init(c);
	return bft_calltree_init(&c->ct, &co);
}

int pipeline_run(struct coll *c)
{
	return bft_merge_run(&c->merge);
}

int pipeline_drain(struct coll *c)
{
	return bft_merge_drain(&c->merge);
}

void pipeline_break(struct coll *c)
{
	struct bft_record r = { .kind = BFT_REC_BREAK,
				.value = BFT_BREAK_SUSPEND };

	send_break(c);
	bft_calltree_feed(&c->ct, &r);
}

void pipeline_new_session(struct coll *c)
{
	uint32_t i;

	for (i = 0; i < c->nthreads; i++)
		c->threads[i]->name_sent = false;
	c->session++;		/* no method is mapped on the new connections */
	c->seq = 0;
	c->us.len = 0;
	c->us_n = 0;
	c->us_declared = false;
	c->break_sent = false;
	for (i = 0; i < c->methods.nobjects; i++) {
		const char *p = c->methods.objects[i].path;
		struct bfp_msg m = { .id = c->methods.objects[i].kind,
				     .str = p, .str_len = strlen(p) };

		hq_control_msg(c, &m);
	}
	/* After a reconnection the stacks HQ would infer are unknown. */
	if (c->ever_up)
		send_break(c);
}

int pipeline_marker(struct coll *c, const char *key, const char *value)
{
	struct bfp_msg m = { .id = BFP_MARKER, .str = key,
			     .str_len = strlen(key), .str2 = value,
			     .str2_len = strlen(value), .time = c->last_stamp,
			     .seq = c->seq };
	int err = hq_data_msg(c, 0, &m);

	if (err)
		return err;
	c->seq++;
	note_us(c, 0);
	return 0;
}

void pipeline_report_lost(struct coll *c)
{
	uint64_t lost = c->lost_kernel + c->lost_gaps + c->lost_undelivered +
			c->lost_unsent;
	char value[32];

	if (c->hq != HQ_UP || lost <= c->lost_reported || !c->ndata)
		return;
	snprintf(value, sizeof(value), "%" PRIu64, lost - c->lost_reported);
	if (!pipeline_marker(c, "bftrace.lost", value))
		c->lost_reported = lost;
}

void pipeline_free(struct coll *c)
{
	uint32_t i;

	for (i = 0; i < c->nthreads; i++) {
		if (c->threads[i]->flow_file) {
			bft_flow_writer_close(&c->threads[i]->flow);
			fclose(c->threads[i]->flow_file);
		}
		free(c->threads[i]->name);
		free(c->threads[i]->filt.held);
		free(c->threads[i]);
	}
	free(c->threads);
	free(c->thash);
	free(c->pending);
	if (c->outdir_fd >= 0)
		close(c->outdir_fd);
	c->outdir_fd = -1;
	bft_calltree_free(&c->ct);
	bft_merge_free(&c->merge);
	bft_buf_free(&c->us);
}
