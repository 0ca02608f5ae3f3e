// SPDX-License-Identifier: GPL-2.0
/*
 * The counters agent's samples: each counter's value now (the method
 * table, the rings' and the kernel's status, the collector's own CPU
 * time and RSS), rates since the last sample, and a Sample with what
 * changed.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bft_util.h"
#include "counters.h"

uint64_t counters_cpu_ns(void)
{
	return bft_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

/*
 * What -v says a sample costs is timed on the monotonic clock, which the
 * vDSO reads: a thread CPU clock is a system call, and four of them a
 * sample cost as much as the sample itself in a TCG guest.  The loop is
 * one thread, so the time it spends is its work (or its preemption).
 */
uint64_t counters_stamp_ns(void)
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
void entry_prime(struct coll *c, struct entry *e)
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
	struct method *me = kind_is_method(e->kind) ? entry_method(c, e) : NULL;

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

void counters_sample(struct coll *c, uint64_t now)
{
	struct counters *t = c->ctr;
	struct bfc_msg m = { .cmd = BFC_SAMPLE };
	struct timespec rt;
	bool need_st = false, have_st = false, quiet;
	uint64_t t0 = counters_stamp_ns(), t1;
	uint8_t *bytes;
	uint32_t i;

	for (i = 0; i < t->nset; i++)
		if (kind_is_ring(t->set[i].kind) || t->set[i].kind >= K_MODE)
			need_st = true;
	/* one GET_STATUS per sample, and only if a counter needs it */
	if (need_st && t->st.cpu)
		have_st = !source_stats(c, &t->st);
	t1 = counters_stamp_ns();
	t->status_ns += t1 - t0;
	clock_gettime(CLOCK_REALTIME, &rt);
	t->cpu_now_ns = counters_cpu_ns();
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
		v->size = (uint16_t)bfc_value_put(counter_defs[e->kind].type,
						  iv, dv, at);
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
	inspector_send(c, &m);
	t->sample_ns += counters_stamp_ns() - t0;
}
