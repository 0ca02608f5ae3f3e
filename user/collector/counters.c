// SPDX-License-Identifier: GPL-2.0
/*
 * The counters agent (seed 003, notes/counters-wire.md): bfcollector
 * connects to an inspector, says Hello with the headers of the counters
 * it samples, answers List, Add and Remove, and sends a Sample every
 * --counters-interval until Good Bye.
 *
 * The trace comes first: the socket is non-blocking, what waits to be
 * written is bounded (a sample that does not fit is dropped and counted),
 * and an inspector that sends garbage or stops reading is disconnected
 * and reconnected later, with a log line saying why.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bfc_wire.h"
#include "bft_util.h"
#include "collector.h"

/* What waits to be written: a few samples of a thousand counters. */
#define OUT_MAX		(256u * 1024)
/* A request is at most two strings of BFC_MAX_STRING. */
#define IN_MAX		(4 * BFC_MAX_STRING)
#define BACKOFF_MAX_MS	2000

enum kind {
	/* Method, arg = method id */
	K_CALLS, K_EXITS, K_CALL_RATE,
	/* Ring, arg = cpu */
	K_RING_USED, K_RING_RECORDS, K_RING_LOST, K_RING_READS,
	/* Collector */
	K_EV_IN_RATE, K_EV_OUT_RATE, K_HQ_BYTE_RATE, K_HQ_QUEUE, K_HQ_CONNS,
	K_HEARTBEATS, K_CPU, K_RSS, K_INPUT_OPEN, K_DROPPED,
	/* Kernel */
	K_MODE, K_PROBES, K_TARGETS, K_HITS, K_LOST,
	K__COUNT
};

/*
 * Each counter: its category, name (a method's and a ring's follow their
 * signature or "cpuN"), and the header numbers of bfc_wire.h: type,
 * unit, variance.
 */
static const struct cdef {
	int32_t cat;
	const char *name;
	int32_t type, unit, variance;
} defs[K__COUNT] = {
	[K_CALLS] = { BFC_CAT_METHOD, "calls", BFC_TYPE_LONG,
		      BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_EXITS] = { BFC_CAT_METHOD, "exits", BFC_TYPE_LONG,
		      BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_CALL_RATE] = { BFC_CAT_METHOD, "calls/s", BFC_TYPE_DOUBLE,
			  BFC_UNIT_EVENTS, BFC_VAR_VARIABLE },
	[K_RING_USED] = { BFC_CAT_RING, "bytes used", BFC_TYPE_LONG,
			  BFC_UNIT_BYTES, BFC_VAR_VARIABLE },
	[K_RING_RECORDS] = { BFC_CAT_RING, "records", BFC_TYPE_LONG,
			     BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_RING_LOST] = { BFC_CAT_RING, "lost", BFC_TYPE_LONG,
			  BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_RING_READS] = { BFC_CAT_RING, "reads", BFC_TYPE_LONG,
			   BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_EV_IN_RATE] = { BFC_CAT_COLLECTOR, "events in/s", BFC_TYPE_DOUBLE,
			   BFC_UNIT_EVENTS, BFC_VAR_VARIABLE },
	[K_EV_OUT_RATE] = { BFC_CAT_COLLECTOR, "events out/s",
			    BFC_TYPE_DOUBLE, BFC_UNIT_EVENTS,
			    BFC_VAR_VARIABLE },
	[K_HQ_BYTE_RATE] = { BFC_CAT_COLLECTOR, "bytes to HQ/s",
			     BFC_TYPE_DOUBLE, BFC_UNIT_BYTES,
			     BFC_VAR_VARIABLE },
	[K_HQ_QUEUE] = { BFC_CAT_COLLECTOR, "HQ queue", BFC_TYPE_LONG,
			 BFC_UNIT_BYTES, BFC_VAR_VARIABLE },
	[K_HQ_CONNS] = { BFC_CAT_COLLECTOR, "data connections",
			 BFC_TYPE_INT, BFC_UNIT_NONE, BFC_VAR_VARIABLE },
	[K_HEARTBEATS] = { BFC_CAT_COLLECTOR, "heartbeats", BFC_TYPE_LONG,
			   BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_CPU] = { BFC_CAT_COLLECTOR, "CPU %", BFC_TYPE_DOUBLE,
		    BFC_UNIT_PERCENTAGE, BFC_VAR_VARIABLE },
	[K_RSS] = { BFC_CAT_COLLECTOR, "RSS", BFC_TYPE_LONG, BFC_UNIT_BYTES,
		    BFC_VAR_VARIABLE },
	[K_INPUT_OPEN] = { BFC_CAT_COLLECTOR, "input open", BFC_TYPE_INT,
			   BFC_UNIT_NONE, BFC_VAR_VARIABLE },
	[K_DROPPED] = { BFC_CAT_COLLECTOR, "samples dropped", BFC_TYPE_LONG,
			BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_MODE] = { BFC_CAT_KERNEL, "mode", BFC_TYPE_INT, BFC_UNIT_CONFIG,
		     BFC_VAR_VARIABLE },
	[K_PROBES] = { BFC_CAT_KERNEL, "probes", BFC_TYPE_INT, BFC_UNIT_NONE,
		       BFC_VAR_VARIABLE },
	[K_TARGETS] = { BFC_CAT_KERNEL, "targets", BFC_TYPE_INT,
			BFC_UNIT_NONE, BFC_VAR_VARIABLE },
	[K_HITS] = { BFC_CAT_KERNEL, "total hits", BFC_TYPE_LONG,
		     BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_LOST] = { BFC_CAT_KERNEL, "lost", BFC_TYPE_LONG, BFC_UNIT_EVENTS,
		     BFC_VAR_MONOTONIC },
};

/* A counter in the sample set. */
struct entry {
	enum kind kind;
	uint32_t arg;
	int16_t index;
	/* a method's signature: a start numbers the probes anew, so the id
	 * (arg) is checked against it, and the last value stays if it is
	 * gone */
	char *sig;
	uint32_t renames;	/* methods.renames when arg was checked */
	int64_t last_iv;
	/* what the inspector last got, for BFC_CHANGES */
	bool sent;
	uint8_t sent_size;
	uint8_t sent_bytes[8];
	/* rates: the count and time of the last sample */
	uint64_t last, last_ns;
};

enum cstate { C_DOWN, C_CONNECTING, C_UP };

struct counters {
	enum cstate state;
	int fd;
	struct bft_buf in, out;
	uint64_t next_connect_ms;
	unsigned int backoff_ms;
	bool bye;		/* Good Bye: no reconnecting */
	bool dropping;		/* logged that samples are dropped */
	bool changes_only;	/* BFC_CHANGES 1: send what changed */
	/* methods.counted and .renames at the last sample: with neither
	 * moved, no method's count did */
	uint64_t last_counted;
	uint32_t last_renames;
	uint64_t next_lookup_ms;	/* an Add that misses reads the table */
	struct entry *set;
	uint32_t nset;
	int16_t next_index;
	uint64_t next_ns;	/* next sample, on a fixed grid */
	uint64_t interval_ns;
	struct source_stats st;	/* read once per sample, if needed */
	struct bfc_value *vals;	/* a sample's values and their bytes */
	uint8_t *bytes;
	uint32_t vcap;
	uint64_t samples, dropped, skipped;
	int statm_fd;		/* for RSS */
	/* -v: the CPU time samples took, and reading the status in them */
	uint64_t sample_ns, status_ns, write_ns;
	/* CPU %: process CPU time at the last sample, and at this one
	 * (a system call: read once a sample) */
	uint64_t cpu_ns, cpu_at_ns, cpu_now_ns;
};

static void prime(struct coll *c, struct entry *e);

static void set_remove(struct counters *t, uint32_t i)
{
	free(t->set[i].sig);
	t->set[i] = t->set[--t->nset];
}

static void set_clear(struct counters *t)
{
	while (t->nset)
		set_remove(t, t->nset - 1);
}

static bool is_method(enum kind k)
{
	return k <= K_CALL_RATE;
}

static bool is_ring(enum kind k)
{
	return k >= K_RING_USED && k <= K_RING_READS;
}

/* "<sig> calls", "cpu3 lost", "RSS" */
static int counter_name(struct coll *c, enum kind k, uint32_t arg, char *buf,
			size_t len)
{
	if (is_method(k)) {
		struct method *me = methods_get(&c->methods, arg);

		if (!me || !me->sig)
			return -1;
		return snprintf(buf, len, "%s %s", me->sig, defs[k].name) <
		       (int)len ? 0 : -1;
	}
	if (is_ring(k))
		return snprintf(buf, len, "cpu%u %s", arg, defs[k].name) <
		       (int)len ? 0 : -1;
	snprintf(buf, len, "%s", defs[k].name);
	return 0;
}

static bool method_live(const struct coll *c, const struct method *me)
{
	return me->used && me->known && me->sig &&
	       me->live_gen == c->methods.gen;
}

/* Name and category to a counter; false if there is none such now. */
static bool lookup(struct coll *c, const char *name, const char *cat,
		   enum kind *k, uint32_t *arg)
{
	int32_t ci = bfc_category_id(cat);
	size_t nl = name ? strlen(name) : 0;
	int i;

	if (ci < 0 || !name)
		return false;
	for (i = 0; i < K__COUNT; i++) {
		size_t sl = strlen(defs[i].name);

		if (defs[i].cat != ci)
			continue;
		if (ci == BFC_CAT_COLLECTOR || ci == BFC_CAT_KERNEL) {
			if (!strcmp(name, defs[i].name)) {
				*k = (enum kind)i;
				*arg = 0;
				return true;
			}
			continue;
		}
		if (nl <= sl + 1 || name[nl - sl - 1] != ' ' ||
		    strcmp(name + nl - sl, defs[i].name))
			continue;
		if (ci == BFC_CAT_RING) {
			unsigned int cpu;
			int used = 0;

			if (sscanf(name, "cpu%u%n", &cpu, &used) == 1 &&
			    (size_t)used == nl - sl - 1 &&
			    cpu < source_ncpus(c->src)) {
				*k = (enum kind)i;
				*arg = cpu;
				return true;
			}
			continue;
		}
		for (uint32_t s = 0; s < c->methods.cap; s++) {
			struct method *me = &c->methods.v[s];

			if (method_live(c, me) && strlen(me->sig) == nl - sl - 1 &&
			    !strncmp(me->sig, name, nl - sl - 1)) {
				*k = (enum kind)i;
				*arg = me->id;
				return true;
			}
		}
	}
	return false;
}

static void header_of(struct coll *c, const struct entry *e,
		      struct bfc_header *h, char *name, size_t len)
{
	if (counter_name(c, e->kind, e->arg, name, len))
		snprintf(name, len, "method%u %s", e->arg, defs[e->kind].name);
	h->category = defs[e->kind].cat;
	h->name = name;
	h->type = defs[e->kind].type;
	h->unit = defs[e->kind].unit;
	h->variance = defs[e->kind].variance;
	h->index = e->index;
}

static void drop_connection(struct coll *c, const char *why)
{
	struct counters *t = c->ctr;

	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	if (t->state == C_UP && why)
		coll_log("counters: inspector %s:%s: %s", c->o.counters_host,
			 c->o.counters_port, why);
	t->state = C_DOWN;
	t->in.len = 0;
	t->out.len = 0;
	set_clear(t);
	t->backoff_ms = t->backoff_ms ? t->backoff_ms * 2 : 100;
	if (t->backoff_ms > BACKOFF_MAX_MS)
		t->backoff_ms = BACKOFF_MAX_MS;
	t->next_connect_ms = coll_now_ms() + t->backoff_ms;
}

/* Queue a message; an inspector that reads nothing loses its connection. */
static int send_msg(struct coll *c, const struct bfc_msg *m)
{
	struct counters *t = c->ctr;

	if (t->state != C_UP)
		return -ENOTCONN;
	if (t->out.len > OUT_MAX) {
		drop_connection(c, "reads nothing: disconnected");
		return -ENOBUFS;
	}
	if (bfc_encode(&t->out, BFC_TO_INSPECTOR, m)) {
		drop_connection(c, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static struct entry *set_add(struct counters *t, enum kind k, uint32_t arg)
{
	struct entry *v;

	if (t->next_index == INT16_MAX)
		return NULL;
	v = realloc(t->set, (t->nset + 1) * sizeof(*v));
	if (!v)
		return NULL;
	t->set = v;
	v += t->nset++;
	memset(v, 0, sizeof(*v));
	v->kind = k;
	v->arg = arg;
	v->index = t->next_index++;
	return v;
}

/* The sample set a connection begins with: the collector's and the
 * kernel module's counters. */
static void hello(struct coll *c)
{
	struct counters *t = c->ctr;
	struct bfc_msg m = { .cmd = BFC_HELLO, .version = BFC_VERSION };
	char (*names)[64];
	uint32_t i;

	set_clear(t);
	t->next_index = 0;
	t->changes_only = false;
	for (i = K_EV_IN_RATE; i <= K_LOST; i++)
		if (!set_add(t, (enum kind)i, 0))
			break;
	m.headers = calloc(t->nset, sizeof(*m.headers));
	names = calloc(t->nset, sizeof(*names));
	if (!m.headers || !names) {
		free(m.headers);
		free(names);
		drop_connection(c, "out of memory");
		return;
	}
	for (i = 0; i < t->nset; i++) {
		prime(c, &t->set[i]);
		header_of(c, &t->set[i], &m.headers[i], names[i],
			  sizeof(names[i]));
	}
	m.nheaders = t->nset;
	send_msg(c, &m);
	free(m.headers);
	free(names);
}

static void on_list(struct coll *c)
{
	struct bfc_msg m = { .cmd = BFC_LIST };
	uint32_t cap = 0, ncpus = source_ncpus(c->src), s;
	char name[4200];
	bool oom = false;

	/* collector, kernel, rings, then every live method */
	for (int pass = 0; pass < 3 && !oom; pass++) {
		uint32_t n = pass == 0 ? 1 : pass == 1 ? ncpus : c->methods.cap;

		for (uint32_t a = 0; a < n && !oom; a++) {
			uint32_t arg = a;

			if (pass == 2) {
				struct method *me = &c->methods.v[a];

				if (!method_live(c, me))
					continue;
				arg = me->id;
			}
			for (int k = 0; k < K__COUNT; k++) {
				struct bfc_counter *v;

				if ((pass == 0) != (!is_method(k) && !is_ring(k)) ||
				    (pass == 1) != is_ring(k) ||
				    counter_name(c, (enum kind)k, arg, name,
						 sizeof(name)) ||
				    strlen(name) > BFC_MAX_STRING)
					continue;
				if (m.ncounters == cap) {
					cap = cap ? 2 * cap : 64;
					v = realloc(m.counters,
						    cap * sizeof(*v));
					if (!v) {
						oom = true;
						break;
					}
					m.counters = v;
				}
				v = &m.counters[m.ncounters];
				v->name = strdup(name);
				v->category = (char *)bfc_category_name(
					defs[k].cat);
				if (!v->name) {
					oom = true;
					break;
				}
				m.ncounters++;
			}
		}
	}
	if (oom)
		drop_connection(c, "out of memory");
	else
		send_msg(c, &m);
	for (s = 0; s < m.ncounters; s++)
		free(m.counters[s].name);
	free(m.counters);
}

static void on_add(struct coll *c, const struct bfc_msg *req)
{
	struct counters *t = c->ctr;
	struct bfc_msg m = { .cmd = BFC_ADD };
	struct bfc_header h;
	char name[4200];
	enum kind k;
	uint32_t arg, i;
	struct entry *e;
	bool found = lookup(c, req->name, req->category, &k, &arg);

	/*
	 * A method attached since the last look at the table: look now,
	 * once in a while at most, so that a burst of unknown names costs
	 * one read.
	 */
	if (!found && bfc_category_id(req->category) == BFC_CAT_METHOD &&
	    coll_now_ms() >= t->next_lookup_ms) {
		t->next_lookup_ms = coll_now_ms() + 250;
		source_refresh_methods(c);
		found = lookup(c, req->name, req->category, &k, &arg);
	}
	if (!found) {
		coll_log("counters: the inspector asked for \"%s\" (%s): no "
			 "such counter", req->name ? req->name : "(null)",
			 req->category ? req->category : "(null)");
		m.status = BFC_NOTFOUND;
		send_msg(c, &m);
		return;
	}
	for (i = 0; i < t->nset; i++)
		if (t->set[i].kind == k && t->set[i].arg == arg) {
			m.status = BFC_EXISTING;
			send_msg(c, &m);
			return;
		}
	e = set_add(t, k, arg);
	if (!e) {
		m.status = BFC_NOK;
		send_msg(c, &m);
		return;
	}
	if (is_method(k)) {
		e->sig = strdup(methods_get(&c->methods, arg)->sig);
		e->renames = c->methods.renames;
		if (!e->sig) {
			set_remove(t, t->nset - 1);
			m.status = BFC_NOK;
			send_msg(c, &m);
			return;
		}
	}
	prime(c, e);
	header_of(c, e, &h, name, sizeof(name));
	m.status = BFC_OK;
	m.headers = &h;
	m.nheaders = 1;
	send_msg(c, &m);
}

static void on_remove(struct coll *c, int16_t index)
{
	struct counters *t = c->ctr;
	struct bfc_msg m = { .cmd = BFC_REMOVE, .status = BFC_NOTFOUND };
	uint32_t i;

	if (index == -1) {
		set_clear(t);
		m.status = BFC_OK;
	}
	for (i = 0; i < t->nset; i++)
		if (t->set[i].index == index) {
			set_remove(t, i);
			m.status = BFC_OK;
			break;
		}
	send_msg(c, &m);
}

static void on_changes(struct coll *c, uint8_t on)
{
	struct counters *t = c->ctr;
	struct bfc_msg m = { .cmd = BFC_CHANGES, .status = BFC_OK };

	t->changes_only = on;
	/* the next sample carries every value: a base to apply changes to */
	for (uint32_t i = 0; i < t->nset; i++)
		t->set[i].sent = false;
	send_msg(c, &m);
}

static void handle(struct coll *c)
{
	struct counters *t = c->ctr;

	while (t->state == C_UP && t->in.len) {
		struct bfc_msg m;
		char err[200];
		int r = bfc_decode(t->in.data, t->in.len, BFC_TO_AGENT, &m, err,
				   sizeof(err));
		char why[256];

		if (r == 0 && t->in.len > IN_MAX)
			r = -EPROTO, snprintf(err, sizeof(err), "%zu bytes "
					      "without a whole request",
					      t->in.len);
		if (r == 0)
			return;
		if (r < 0) {
			snprintf(why, sizeof(why), "%s; disconnected",
				 r == -EPROTO ? err : strerror(-r));
			drop_connection(c, why);
			return;
		}
		switch (m.cmd) {
		case BFC_LIST:
			on_list(c);
			break;
		case BFC_ADD:
			on_add(c, &m);
			break;
		case BFC_REMOVE:
			on_remove(c, m.index);
			break;
		case BFC_CHANGES:
			on_changes(c, m.changes);
			break;
		case BFC_BYE:
			coll_log("counters: the inspector said good bye");
			t->bye = true;
			drop_connection(c, NULL);
			break;
		}
		bfc_msg_free(&m);
		if (t->state == C_UP)
			bft_buf_consume(&t->in, (size_t)r);
	}
}

void counters_feed(struct coll *c, const void *p, size_t n)
{
	struct counters *t = c->ctr;

	if (!t || t->state != C_UP)
		return;
	if (bft_buf_append(&t->in, p, n)) {
		drop_connection(c, "out of memory");
		return;
	}
	handle(c);
}

/* ---- sampling ---- */

static uint64_t cpu_time_ns(void)
{
	return bft_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

/*
 * What -v says a sample costs is timed on the monotonic clock, which the
 * vDSO reads: a thread CPU clock is a system call, and four of them a
 * sample cost as much as the sample itself in a TCG guest.  The loop is
 * one thread, so the time it spends is its work (or its preemption).
 */
static uint64_t stamp_ns(void)
{
	return coll_mono_ns();
}

/* /proc/self/statm, kept open: one pread a sample instead of three calls
 * and a stdio buffer */
static uint64_t rss_bytes(struct counters *t)
{
	unsigned long size, res;
	char buf[128];
	ssize_t n;

	if (t->statm_fd < 0)
		t->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	n = t->statm_fd < 0 ? -1 : pread(t->statm_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu", &size, &res) != 2)
		return 0;
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

static uint64_t hq_bytes_written(const struct coll *c)
{
	uint64_t n = 0;

	for (unsigned int i = 0; c->hq == HQ_UP && i < c->ndata; i++)
		n += c->data[i].written;
	return n;
}

static uint64_t events_in(struct coll *c)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < source_ncpus(c->src); i++)
		n += bft_stream_stats(bft_merge_stream(&c->merge, i))->events;
	return n;
}

static uint64_t hq_bytes_written(const struct coll *c);
static uint64_t events_in(struct coll *c);

/* The method an entry samples, found again by signature if its id now
 * names another (a start renumbers the probes); NULL if it is gone. */
static struct method *entry_method(struct coll *c, struct entry *e)
{
	struct method *me = methods_get(&c->methods, e->arg);

	/* compared again only once an id may name another: a sample of a
	 * thousand methods need not compare a thousand strings */
	if (!e->sig || (me && e->renames == c->methods.renames))
		return me;
	if (me && me->sig && !strcmp(me->sig, e->sig)) {
		e->renames = c->methods.renames;
		return me;
	}
	for (uint32_t s = 0; s < c->methods.cap; s++) {
		me = &c->methods.v[s];
		if (me->used && me->known && me->sig &&
		    !strcmp(me->sig, e->sig)) {
			e->arg = me->id;
			e->renames = c->methods.renames;
			return me;
		}
	}
	return NULL;
}

/* What a rate counts: the count now. */
static uint64_t rate_count(struct coll *c, struct entry *e)
{
	struct method *me;

	switch (e->kind) {
	case K_CALL_RATE:
		me = entry_method(c, e);
		return me ? me->calls : e->last;
	case K_EV_IN_RATE:
		return events_in(c);
	case K_EV_OUT_RATE:
		return c->events_sent;
	case K_HQ_BYTE_RATE:
		return hq_bytes_written(c);
	default:
		return 0;
	}
}

/* A rate starts from when it joins the sample set. */
static void prime(struct coll *c, struct entry *e)
{
	e->last = rate_count(c, e);
	e->last_ns = coll_mono_ns();
}

static double rate(struct entry *e, uint64_t now_count, uint64_t now_ns)
{
	double r = 0;

	if (now_ns > e->last_ns && now_count >= e->last)
		r = (double)(now_count - e->last) * 1e9 /
		    (double)(now_ns - e->last_ns);
	e->last = now_count;
	e->last_ns = now_ns;
	return r;
}

static void value_of(struct coll *c, struct entry *e, uint64_t now,
		     bool have_st, int64_t *iv, double *dv)
{
	struct counters *t = c->ctr;
	struct source_cpu_stats *cs = have_st && e->arg < source_ncpus(c->src) ?
				      &t->st.cpu[e->arg] : NULL;
	struct method *me = is_method(e->kind) ? entry_method(c, e) : NULL;

	*iv = 0;
	*dv = 0;
	switch (e->kind) {
	case K_CALLS:
		*iv = me ? (int64_t)me->calls : e->last_iv;
		break;
	case K_EXITS:
		*iv = me ? (int64_t)me->exits : e->last_iv;
		break;
	case K_CALL_RATE:
	case K_EV_IN_RATE:
	case K_EV_OUT_RATE:
	case K_HQ_BYTE_RATE:
		*dv = rate(e, rate_count(c, e), now);
		break;
	case K_RING_USED:
		*iv = cs ? (int64_t)cs->used : 0;
		break;
	case K_RING_RECORDS:
		*iv = cs ? (int64_t)cs->records : 0;
		break;
	case K_RING_LOST:
		*iv = cs ? (int64_t)cs->lost : 0;
		break;
	case K_RING_READS:
		*iv = cs ? (int64_t)cs->reads : 0;
		break;
	case K_HQ_QUEUE:
		*iv = c->hq == HQ_UP ? (int64_t)hq_pending(c) : 0;
		break;
	case K_HQ_CONNS:
		*iv = c->hq == HQ_UP ? (int64_t)c->ndata : 0;
		break;
	case K_HEARTBEATS:
		*iv = (int64_t)c->heartbeats;
		break;
	case K_CPU:
		/* the share of one core since the last sample */
		*dv = now > t->cpu_at_ns && t->cpu_now_ns >= t->cpu_ns ?
		      100.0 * (double)(t->cpu_now_ns - t->cpu_ns) /
		      (double)(now - t->cpu_at_ns) : 0;
		break;
	case K_RSS:
		*iv = (int64_t)rss_bytes(t);
		break;
	case K_INPUT_OPEN:
		*iv = !c->input_ended;
		break;
	case K_DROPPED:
		*iv = (int64_t)t->dropped;
		break;
	case K_MODE:
		*iv = have_st ? t->st.mode : source_mode(c);
		break;
	case K_PROBES:
		*iv = have_st ? t->st.probes : 0;
		break;
	case K_TARGETS:
		*iv = have_st ? t->st.targets : 0;
		break;
	case K_HITS:
		*iv = have_st ? (int64_t)t->st.hits : 0;
		break;
	case K_LOST:
		*iv = have_st ? (int64_t)t->st.lost : 0;
		break;
	case K__COUNT:
		break;
	}
}

static void sample(struct coll *c, uint64_t now)
{
	struct counters *t = c->ctr;
	struct bfc_msg m = { .cmd = BFC_SAMPLE };
	struct timespec rt;
	bool need_st = false, have_st = false, quiet;
	uint64_t t0 = stamp_ns(), t1;
	uint8_t *bytes;
	uint32_t i;

	for (i = 0; i < t->nset; i++)
		if (is_ring(t->set[i].kind) || t->set[i].kind >= K_MODE)
			need_st = true;
	/* one GET_STATUS per sample, and only if a counter needs it */
	if (need_st && t->st.cpu)
		have_st = !source_stats(c, &t->st);
	t1 = stamp_ns();
	t->status_ns += t1 - t0;
	clock_gettime(CLOCK_REALTIME, &rt);
	t->cpu_now_ns = cpu_time_ns();
	m.timestamp = bfc_ticks_from_unix_ns((int64_t)rt.tv_sec * 1000000000 +
					     rt.tv_nsec);
	if (t->nset > t->vcap) {
		struct bfc_value *v = realloc(t->vals, t->nset * sizeof(*v));
		uint8_t *b = v ? realloc(t->bytes, t->nset * 8) : NULL;

		if (v)
			t->vals = v;
		if (b)
			t->bytes = b;
		if (!v || !b) {
			t->dropped++;
			return;
		}
		t->vcap = t->nset;
	}
	/*
	 * An inspector slower than the samples loses samples, not us; and
	 * before any value counts as sent.
	 */
	if (t->out.len > OUT_MAX / 2) {
		t->dropped++;
		if (!t->dropping)
			coll_log("counters: the inspector does not keep up: "
				 "dropping samples");
		t->dropping = true;
		return;
	}
	t->dropping = false;
	m.values = t->vals;
	bytes = t->bytes;
	quiet = t->changes_only && c->methods.counted == t->last_counted &&
		c->methods.renames == t->last_renames;
	t->last_counted = c->methods.counted;
	t->last_renames = c->methods.renames;
	for (i = 0; i < t->nset; i++) {
		struct entry *e = &t->set[i];
		struct bfc_value *v = &m.values[m.nvalues];
		uint8_t *at = bytes + 8 * m.nvalues;
		int64_t iv;
		double dv;

		/* nothing counted since the last sample: the method counts
		 * it sent stand (a thousand of them are most of a sample) */
		if (quiet && e->sent && (e->kind == K_CALLS ||
					 e->kind == K_EXITS))
			continue;
		value_of(c, e, now, have_st, &iv, &dv);
		e->last_iv = iv;
		v->index = e->index;
		v->data = at;
		v->size = (uint16_t)bfc_value_put(defs[e->kind].type, iv, dv,
						  at);
		if (t->changes_only && e->sent && e->sent_size == v->size &&
		    !memcmp(e->sent_bytes, at, v->size))
			continue;
		/* a failed send drops the connection and the set with it */
		e->sent = true;
		e->sent_size = (uint8_t)v->size;
		memcpy(e->sent_bytes, at, v->size);
		m.nvalues++;
	}
	t->cpu_ns = t->cpu_now_ns;
	t->cpu_at_ns = now;
	t->samples++;
	send_msg(c, &m);
	t->sample_ns += stamp_ns() - t0;
}

/* ---- the connection ---- */

static void start_connect(struct coll *c)
{
	struct counters *t = c->ctr;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	int e, fd;

	t->next_connect_ms = coll_now_ms() + (t->backoff_ms ? t->backoff_ms :
					      100);
	e = getaddrinfo(c->o.counters_host, c->o.counters_port, &hints, &ai);
	if (e) {
		coll_log("counters: %s:%s: %s", c->o.counters_host,
			 c->o.counters_port, gai_strerror(e));
		t->backoff_ms = BACKOFF_MAX_MS;
		return;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
		/* the first failure in a row is said, the retries with -v */
		if (c->o.verbose || !t->backoff_ms)
			coll_log("counters: cannot reach the inspector at "
				 "%s:%s: %s", c->o.counters_host,
				 c->o.counters_port, strerror(errno));
		close(fd);
		freeaddrinfo(ai);
		t->backoff_ms = t->backoff_ms ? t->backoff_ms * 2 : 100;
		if (t->backoff_ms > BACKOFF_MAX_MS)
			t->backoff_ms = BACKOFF_MAX_MS;
		return;
	}
	freeaddrinfo(ai);
	t->fd = fd;
	t->state = C_CONNECTING;
}

static void connected(struct coll *c)
{
	struct counters *t = c->ctr;
	int soerr = 0;
	socklen_t sl = sizeof(soerr);

	if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
		if (c->o.verbose || !t->backoff_ms)
			coll_log("counters: cannot reach the inspector at "
				 "%s:%s: %s", c->o.counters_host,
				 c->o.counters_port, strerror(soerr));
		drop_connection(c, NULL);
		return;
	}
	coll_log("counters: connected to the inspector at %s:%s",
		 c->o.counters_host, c->o.counters_port);
	t->state = C_UP;
	t->backoff_ms = 0;
	t->dropping = false;
	hello(c);
}

int counters_adopt(struct coll *c, int fd)
{
	struct counters *t = c->ctr;

	if (!t || t->state != C_DOWN)
		return -EBUSY;
	t->fd = fd;
	t->state = C_UP;
	hello(c);
	return 0;
}

int counters_init(struct coll *c)
{
	struct counters *t;

	if (!c->o.counters_host)
		return 0;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	c->ctr = t;
	t->fd = -1;
	t->statm_fd = -1;
	t->interval_ns = (uint64_t)c->o.counters_ms * 1000000;
	t->next_ns = coll_mono_ns() + t->interval_ns;
	t->st.cpu = calloc(source_ncpus(c->src) ? source_ncpus(c->src) : 1,
			   sizeof(*t->st.cpu));
	t->cpu_ns = cpu_time_ns();
	t->cpu_at_ns = coll_mono_ns();
	if (!t->st.cpu)
		return -ENOMEM;
	/* the source counts its reads from now on */
	source_stats(c, &t->st);
	return 0;
}

void counters_free(struct coll *c)
{
	struct counters *t = c->ctr;

	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	if (t->statm_fd >= 0)
		close(t->statm_fd);
	bft_buf_free(&t->in);
	bft_buf_free(&t->out);
	set_clear(t);
	free(t->set);
	free(t->vals);
	free(t->bytes);
	free(t->st.cpu);
	free(t);
	c->ctr = NULL;
}

bool counters_connected(const struct coll *c)
{
	/* connecting counts: a short input must not end before Hello */
	return c->ctr && c->ctr->state != C_DOWN;
}

int counters_pollfds(struct coll *c, struct pollfd *p, int max,
		     int *timeout_ms)
{
	struct counters *t = c->ctr;
	uint64_t now = coll_mono_ns();
	int wait;

	if (!t || max < 1)
		return 0;
	if (t->state == C_UP) {
		wait = t->next_ns > now ?
		       (int)((t->next_ns - now + 999999) / 1000000) : 0;
		if (*timeout_ms < 0 || *timeout_ms > wait)
			*timeout_ms = wait;
	} else if (t->state == C_DOWN && !t->bye) {
		uint64_t ms = coll_now_ms();

		wait = t->next_connect_ms > ms ?
		       (int)(t->next_connect_ms - ms) : 0;
		if (*timeout_ms < 0 || *timeout_ms > wait)
			*timeout_ms = wait;
	}
	if (t->fd < 0)
		return 0;
	p[0].fd = t->fd;
	p[0].events = POLLIN;
	if (t->state == C_CONNECTING || t->out.len)
		p[0].events |= POLLOUT;
	p[0].revents = 0;
	return 1;
}

/* An inspector killed with samples unread resets the connection: that
 * is going away too, and the log says so either way. */
static void went_away(struct coll *c, int err)
{
	char why[128];

	if (err)
		snprintf(why, sizeof(why), "went away (%s); reconnecting",
			 strerror(err));
	drop_connection(c, err ? why : "went away; reconnecting");
}

static void write_out(struct coll *c)
{
	struct counters *t = c->ctr;
	uint64_t t0 = t->out.len ? stamp_ns() : 0;

	while (t->state == C_UP && t->out.len) {
		ssize_t w = send(t->fd, t->out.data, t->out.len,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0) {
			bft_buf_consume(&t->out, (size_t)w);
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		went_away(c, w < 0 ? errno : 0);
		break;
	}
	if (t0)
		t->write_ns += stamp_ns() - t0;
}

static void read_in(struct coll *c)
{
	struct counters *t = c->ctr;
	uint8_t buf[4096];

	for (int i = 0; i < 16 && t->state == C_UP; i++) {
		ssize_t r = recv(t->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (r > 0) {
			counters_feed(c, buf, (size_t)r);
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		went_away(c, r ? errno : 0);
		return;
	}
}

void counters_io(struct coll *c, const struct pollfd *p, int n)
{
	struct counters *t = c->ctr;
	uint64_t now;

	if (!t)
		return;
	if (t->state == C_DOWN && !t->bye &&
	    coll_now_ms() >= t->next_connect_ms)
		start_connect(c);
	if (n && p[0].fd == t->fd && p[0].revents) {
		if (t->state == C_CONNECTING)
			connected(c);
		else if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			read_in(c);
	}
	now = coll_mono_ns();
	if (now >= t->next_ns) {
		bool up = t->state == C_UP;

		if (up)
			sample(c, now);
		/*
		 * The grid does not drift; a missed tick is skipped.  With no
		 * inspector the loop does not wake for ticks: none is missed.
		 */
		t->next_ns += t->interval_ns;
		if (t->next_ns <= now) {
			uint64_t behind = (now - t->next_ns) / t->interval_ns +
					  1;

			if (up)
				t->skipped += behind;
			t->next_ns += behind * t->interval_ns;
		}
	}
	write_out(c);
}

void counters_shutdown(struct coll *c)
{
	struct counters *t = c->ctr;

	if (!t)
		return;
	if (t->state == C_UP) {
		sample(c, coll_mono_ns());
		write_out(c);
	}
	if (c->o.verbose)
		coll_log("counters: %" PRIu64 " samples sent, %" PRIu64
			 " dropped, %" PRIu64 " ticks skipped; %" PRIu64
			 " us a sample, %" PRIu64 " of it reading the "
			 "status, and %" PRIu64 " writing it", t->samples,
			 t->dropped, t->skipped,
			 t->samples ? t->sample_ns / t->samples / 1000 : 0,
			 t->samples ? t->status_ns / t->samples / 1000 : 0,
			 t->samples ? t->write_ns / t->samples / 1000 : 0);
}
