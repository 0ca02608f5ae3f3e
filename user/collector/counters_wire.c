// SPDX-License-Identifier: GPL-2.0
/*
 * The counters agent's side of the session with an inspector
 * (notes/counters-wire.md): what it queues, Hello with the headers of the
 * counters it samples, and the answers to List, Add, Remove, Changes and
 * Good Bye.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counters.h"

void inspector_drop(struct coll *c, const char *why)
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
	sample_set_clear(t);
	t->backoff_ms = t->backoff_ms ? t->backoff_ms * 2 : 100;
	if (t->backoff_ms > BACKOFF_MAX_MS)
		t->backoff_ms = BACKOFF_MAX_MS;
	t->next_connect_ms = coll_now_ms() + t->backoff_ms;
}

/* Queue a message; an inspector that reads nothing loses its connection. */
int inspector_send(struct coll *c, const struct bfc_msg *m)
{
	struct counters *t = c->ctr;

	if (t->state != C_UP)
		return -ENOTCONN;
	if (t->out.len > OUT_MAX) {
		inspector_drop(c, "reads nothing: disconnected");
		return -ENOBUFS;
	}
	if (bfc_encode(&t->out, BFC_TO_INSPECTOR, m)) {
		inspector_drop(c, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* The sample set a connection begins with: the collector's and the
 * kernel module's counters. */
void inspector_hello(struct coll *c)
{
	struct counters *t = c->ctr;
	struct bfc_msg m = { .cmd = BFC_HELLO, .version = BFC_VERSION };
	char (*names)[64];
	uint32_t i;

	sample_set_clear(t);
	t->next_index = 0;
	t->changes_only = false;
	for (i = K_EV_IN_RATE; i <= K_LOST; i++)
		if (!sample_set_add(t, (enum kind)i, 0))
			break;
	m.headers = calloc(t->nset, sizeof(*m.headers));
	names = calloc(t->nset, sizeof(*names));
	if (!m.headers || !names) {
		free(m.headers);
		free(names);
		inspector_drop(c, "out of memory");
		return;
	}
	for (i = 0; i < t->nset; i++) {
		entry_prime(c, &t->set[i]);
		counter_header(c, &t->set[i], &m.headers[i], names[i],
			  sizeof(names[i]));
	}
	m.nheaders = t->nset;
	inspector_send(c, &m);
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

				if (!counter_method_live(c, me))
					continue;
				arg = me->id;
			}
			for (int k = 0; k < K__COUNT; k++) {
				struct bfc_counter *v;

				if ((pass == 0) !=
				    (!kind_is_method(k) && !kind_is_ring(k)) ||
				    (pass == 1) != kind_is_ring(k) ||
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
					counter_defs[k].cat);
				if (!v->name) {
					oom = true;
					break;
				}
				m.ncounters++;
			}
		}
	}
	if (oom)
		inspector_drop(c, "out of memory");
	else
		inspector_send(c, &m);
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
	bool found = counter_lookup(c, req->name, req->category, &k, &arg);

	/*
	 * A method attached since the last look at the table: look now,
	 * once in a while at most, so that a burst of unknown names costs
	 * one read.
	 */
	if (!found && bfc_category_id(req->category) == BFC_CAT_METHOD &&
	    coll_now_ms() >= t->next_lookup_ms) {
		t->next_lookup_ms = coll_now_ms() + 250;
		source_refresh_methods(c);
		found = counter_lookup(c, req->name, req->category, &k, &arg);
	}
	if (!found) {
		coll_log("counters: the inspector asked for \"%s\" (%s): no "
			 "such counter", req->name ? req->name : "(null)",
			 req->category ? req->category : "(null)");
		m.status = BFC_NOTFOUND;
		inspector_send(c, &m);
		return;
	}
	for (i = 0; i < t->nset; i++)
		if (t->set[i].kind == k && t->set[i].arg == arg) {
			m.status = BFC_EXISTING;
			inspector_send(c, &m);
			return;
		}
	e = sample_set_add(t, k, arg);
	if (!e) {
		m.status = BFC_NOK;
		inspector_send(c, &m);
		return;
	}
	if (kind_is_method(k)) {
		e->sig = strdup(methods_get(&c->methods, arg)->sig);
		e->renames = c->methods.renames;
		if (!e->sig) {
			sample_set_remove(t, t->nset - 1);
			m.status = BFC_NOK;
			inspector_send(c, &m);
			return;
		}
	}
	entry_prime(c, e);
	counter_header(c, e, &h, name, sizeof(name));
	m.status = BFC_OK;
	m.headers = &h;
	m.nheaders = 1;
	inspector_send(c, &m);
}

static void on_remove(struct coll *c, int16_t index)
{
	struct counters *t = c->ctr;
	struct bfc_msg m = { .cmd = BFC_REMOVE, .status = BFC_NOTFOUND };
	uint32_t i;

	if (index == -1) {
		sample_set_clear(t);
		m.status = BFC_OK;
	}
	for (i = 0; i < t->nset; i++)
		if (t->set[i].index == index) {
			sample_set_remove(t, i);
			m.status = BFC_OK;
			break;
		}
	inspector_send(c, &m);
}

static void on_changes(struct coll *c, uint8_t on)
{
	struct counters *t = c->ctr;
	struct bfc_msg m = { .cmd = BFC_CHANGES, .status = BFC_OK };

	t->changes_only = on;
	/* the next sample carries every value: a base to apply changes to */
	for (uint32_t i = 0; i < t->nset; i++)
		t->set[i].sent = false;
	inspector_send(c, &m);
}

static void requests_handle(struct coll *c)
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
			inspector_drop(c, why);
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
			inspector_drop(c, NULL);
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
		inspector_drop(c, "out of memory");
		return;
	}
	requests_handle(c);
}
