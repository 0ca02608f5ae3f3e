// SPDX-License-Identifier: GPL-2.0
/*
 * bst_traces: what a test traced, as per-thread sequences (the header's
 * "traces").  Draining the module's rings, decoding and merging the streams,
 * the calls bft_calltree rebuilds from them, their text for messages, the
 * methods dump, and the monotonic clock the waits of every section use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/bft_calltree.h"
#include "model/bft_merge.h"
#include "capture/bft_rings.h"
#include "bft_selftest.h"
#include "bst_internal.h"

uint64_t bst_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void bst_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

struct collect_ctx {
	struct bst_trace *t;
	struct bft_calltree ct;
	int err;
};

int bst_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static struct bst_thread *thread_get(struct bst_trace *t, uint32_t tgid,
				     uint32_t tid)
{
	struct bst_thread *th;

	for (size_t i = t->nth; i-- > 0;) {
		if (t->th[i].tid == tid && t->th[i].tgid == tgid)
			return &t->th[i];
	}
	th = realloc(t->th, (t->nth + 1) * sizeof(*th));
	if (!th)
		return NULL;
	t->th = th;
	th = &t->th[t->nth++];
	memset(th, 0, sizeof(*th));
	th->tgid = tgid;
	th->tid = tid;
	return th;
}

static int push_ev(struct bst_thread *th, uint8_t kind, uint32_t id,
		   const struct bft_record *r)
{
	if (bst_grow((void **)&th->ev, &th->cap, th->n + 1, sizeof(*th->ev)))
		return -ENOMEM;
	th->ev[th->n++] = (struct bst_ev){
		.kind = kind, .id = id, .cpu = r->cpu, .time_ns = r->time_ns,
	};
	return 0;
}

static int on_call(void *arg, const struct bft_call_event *ev)
{
	struct collect_ctx *c = arg;
	struct bst_thread *th = thread_get(c->t, ev->tgid, ev->tid);

	if (!th || bst_grow((void **)&th->calls, &th->calls_cap, th->ncalls + 1,
			sizeof(*th->calls)))
		return -ENOMEM;
	th->calls[th->ncalls++] = (struct bst_call){
		.kind = (uint8_t)ev->kind, .noret = ev->noret, .id = ev->id,
		.depth = ev->depth, .time_ns = ev->time_ns,
		.unwound = ev->unwound, .how = ev->how, .exc = ev->exc,
	};
	if (ev->kind != BFT_CALL_MARK)
		return 0;
	if (bst_grow((void **)&th->usdt, &th->usdt_cap, th->nusdt + 1,
		     sizeof(*th->usdt)))
		return -ENOMEM;
	th->usdt[th->nusdt] = (struct bst_usdt){
		.id = ev->id, .nargs = ev->nargs, .is_signed = ev->mark_signed,
		.unread = ev->mark_unread, .time_ns = ev->time_ns,
	};
	memcpy(th->usdt[th->nusdt++].args, ev->args,
	       ev->nargs * sizeof(ev->args[0]));
	return 0;
}

static struct bst_name *name_find(const struct bst_trace *t, uint32_t tgid,
				   uint32_t tid)
{
	for (size_t i = 0; i < t->nnames; i++)
		if (t->names[i].tid == tid && t->names[i].tgid == tgid)
			return &t->names[i];
	return NULL;
}

/* Kept apart from the threads: a NAME whose event was lost makes none. */
static int on_name(struct bst_trace *t, const struct bft_record *r)
{
	struct bst_name *nm = name_find(t, r->tgid, r->tid);

	if (!nm) {
		if (bst_grow((void **)&t->names, &t->names_cap, t->nnames + 1,
			     sizeof(*t->names)))
			return -ENOMEM;
		nm = &t->names[t->nnames++];
		*nm = (struct bst_name){ .tgid = r->tgid, .tid = r->tid };
	}
	nm->count++;
	bft_record_name(r, nm->name);
	return 0;
}

const char *bst_trace_name(const struct bst_trace *t, uint32_t tgid,
			   uint32_t tid)
{
	const struct bst_name *nm = name_find(t, tgid, tid);

	return nm ? nm->name : NULL;
}

static int on_record(void *arg, const struct bft_record *r)
{
	struct collect_ctx *c = arg;
	struct bst_trace *t = c->t;
	struct bst_thread *th;
	int err = 0;

	if (r->cpu >= t->nr_cpus)
		return -EINVAL;
	if (r->kind == BFT_REC_LOST)
		t->cpu[r->cpu].lost_records++;
	else if (r->kind == BFT_REC_SYNC &&
		 t->cpu[r->cpu].last_kind == BFT_REC_LOST)
		t->cpu[r->cpu].lost_synced++;
	t->cpu[r->cpu].last_kind = r->kind;
	switch (r->kind) {
	case BFT_REC_SYNC:
		if (!t->cpu[r->cpu].syncs++)
			t->cpu[r->cpu].first_time_ns = r->time_ns;
		break;
	case BFT_REC_ENTER:
	case BFT_REC_ENTER_NORET:
	case BFT_REC_EXIT:
		th = thread_get(t, r->tgid, r->tid);
		if (!th)
			return -ENOMEM;
		if (r->kind == BFT_REC_ENTER)
			err = push_ev(th, BST_ENTER, (uint32_t)r->value, r);
		else if (r->kind == BFT_REC_ENTER_NORET)
			err = push_ev(th, BST_NORET, (uint32_t)r->value, r);
		else
			for (uint64_t i = 0; i < r->value && !err; i++)
				err = push_ev(th, BST_EXIT, 0, r);
		break;
	case BFT_REC_NAME:
		err = on_name(t, r);
		break;
	case BFT_REC_BREAK:
	case BFT_REC_LOST:
	case BFT_REC_GAP:
		if (bst_grow((void **)&t->marks, &t->marks_cap, t->nmarks + 1,
			 sizeof(*t->marks)))
			return -ENOMEM;
		t->marks[t->nmarks++] = (struct bst_mark){
			.kind = r->kind, .cpu = r->cpu, .value = r->value,
			.time_ns = r->time_ns,
		};
		break;
	default:
		break;
	}
	if (err)
		return err;
	return bft_calltree_feed(&c->ct, r);
}

int bst_collect(struct bst_session *s, int quiet_ms, int max_ms,
		struct bst_trace *t)
{
	const uint8_t **data;
	size_t *lens;
	struct bft_rings *r = NULL;
	char msg[256] = "";
	uint32_t nr_cpus = s->caps.nr_cpus;
	ssize_t got;
	int err;

	memset(t, 0, sizeof(*t));
	err = bft_rings_open(&r, NULL, nr_cpus, msg, sizeof(msg));
	if (err) {
		snprintf(t->err, sizeof(t->err), "opening the rings: %s", msg);
		return err;
	}
	got = bft_rings_drain(r, quiet_ms, max_ms, NULL, NULL);
	if (got < 0) {
		snprintf(t->err, sizeof(t->err), "draining the rings: %s",
			 bft_rings_errmsg(r));
		bft_rings_close(r);
		return (int)got;
	}
	data = calloc(nr_cpus ? nr_cpus : 1, sizeof(*data));
	lens = calloc(nr_cpus ? nr_cpus : 1, sizeof(*lens));
	if (!data || !lens) {
		free(data);
		free(lens);
		bft_rings_close(r);
		return -ENOMEM;
	}
	for (uint32_t cpu = 0; cpu < nr_cpus; cpu++)
		if (bft_rings_bound(r, cpu))
			data[cpu] = bft_rings_data(r, cpu, &lens[cpu]);
	err = bst_decode(t, nr_cpus, data, lens);
	free(data);
	free(lens);
	bft_rings_close(r);
	return err;
}

int bst_decode(struct bst_trace *t, uint32_t nr_cpus,
	       const uint8_t *const *data, const size_t *lens)
{
	struct bft_calltree_opts cto = { .on_call = on_call };
	struct collect_ctx c = { .t = t };
	struct bft_merge_opts mo = { .on_record = on_record, .ctx = &c,
				     .policy = BFT_STREAM_STOP };
	struct bft_merge m;
	int err;

	memset(t, 0, sizeof(*t));
	t->nr_cpus = nr_cpus;
	t->cpu = calloc(t->nr_cpus ? t->nr_cpus : 1, sizeof(*t->cpu));
	if (!t->cpu)
		return -ENOMEM;
	cto.ctx = &c;
	mo.ncpus = t->nr_cpus;
	err = bft_calltree_init(&c.ct, &cto);
	if (err)
		return err;
	err = bft_merge_init(&m, &mo);
	if (err) {
		bft_calltree_free(&c.ct);
		return err;
	}
	for (uint32_t cpu = 0; cpu < t->nr_cpus && !err; cpu++) {
		size_t len = data[cpu] ? lens[cpu] : 0;

		t->cpu[cpu].bytes = len;
		if (len)
			err = bft_merge_feed(&m, cpu, data[cpu], len);
	}
	if (!err)
		err = bft_merge_drain(&m);
	for (uint32_t cpu = 0; cpu < t->nr_cpus; cpu++) {
		struct bft_stream *st = bft_merge_stream(&m, cpu);
		const struct bft_stream_stats *ss;
		const struct bft_stream_error *se;

		if (!st)
			continue;
		ss = bft_stream_stats(st);
		se = bft_stream_last_error(st);
		t->cpu[cpu].events = ss->events;
		t->cpu[cpu].lost = ss->lost;
		t->cpu[cpu].breaks = ss->breaks;
		if (se->code != BFT_SERR_NONE && !t->err[0])
			snprintf(t->err, sizeof(t->err), "%s", se->msg);
	}
	if (err && !t->err[0])
		snprintf(t->err, sizeof(t->err), "merging the streams: %s",
			 strerror(-err));
	t->orphans = bft_calltree_stats(&c.ct)->orphans;
	t->unbalanced = bft_calltree_stats(&c.ct)->unbalanced;
	bft_merge_free(&m);
	bft_calltree_free(&c.ct);
	if (!err && t->err[0])
		err = -EPROTO;
	return err;
}

size_t bst_marks_besides_losses(const struct bst_trace *t,
				const struct bst_mark **first)
{
	size_t n = 0;

	*first = NULL;
	for (size_t i = 0; i < t->nmarks; i++) {
		const struct bst_mark *mk = &t->marks[i];

		if (mk->kind == BFT_REC_LOST ||
		    (mk->kind == BFT_REC_BREAK && mk->value == BFT_BREAK_STOP))
			continue;
		if (!n++)
			*first = mk;
	}
	return n;
}

void bst_trace_free(struct bst_trace *t)
{
	for (size_t i = 0; i < t->nth; i++) {
		free(t->th[i].ev);
		free(t->th[i].calls);
		free(t->th[i].usdt);
	}
	free(t->th);
	free(t->marks);
	free(t->names);
	free(t->cpu);
	memset(t, 0, sizeof(*t));
}

const struct bst_thread *bst_trace_thread(const struct bst_trace *t,
					  uint32_t tgid, uint32_t tid)
{
	for (size_t i = 0; i < t->nth; i++) {
		if (t->th[i].tid == tid && t->th[i].tgid == tgid)
			return &t->th[i];
	}
	return NULL;
}

size_t bst_trace_threads_of(const struct bst_trace *t, uint32_t tgid,
			    const struct bst_thread **out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nth; i++) {
		if (t->th[i].tgid != tgid)
			continue;
		if (n < cap)
			out[n] = &t->th[i];
		n++;
	}
	return n;
}

/* Appends to a malloc'ed string; on ENOMEM the text is just cut short. */
static void text_add(char **buf, size_t *len, size_t *cap, const char *word)
{
	size_t w = strlen(word);

	if (bst_grow((void **)buf, cap, *len + w + 2, 1))
		return;
	if (*len)
		(*buf)[(*len)++] = ' ';
	memcpy(*buf + *len, word, w + 1);
	*len += w;
}

char *bst_ev_text(const struct bst_ev *ev, size_t n)
{
	char *buf = NULL, word[24];
	size_t len = 0, cap = 0;

	text_add(&buf, &len, &cap, "");
	len = 0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == BST_EXIT)
			snprintf(word, sizeof(word), "x");
		else
			snprintf(word, sizeof(word), "%c%u",
				 ev[i].kind == BST_NORET ? 'n' : 'e', ev[i].id);
		text_add(&buf, &len, &cap, word);
	}
	return buf;
}

char *bst_call_text(const struct bst_call *c, size_t n)
{
	char *buf = NULL, word[24];
	size_t len = 0, cap = 0;

	text_add(&buf, &len, &cap, "");
	len = 0;
	for (size_t i = 0; i < n; i++) {
		if (c[i].kind == BFT_CALL_VOID)
			snprintf(word, sizeof(word), "|");
		else
			snprintf(word, sizeof(word), "%c%u",
				 c[i].kind == BFT_CALL_THROW ? 't' :
				 c[i].kind == BFT_CALL_EXIT ?
				 (c[i].unwound ? 'u' : 'x') :
				 c[i].noret ? 'n' : 'e', c[i].id);
		text_add(&buf, &len, &cap, word);
	}
	return buf;
}

struct bst_method_count {
	uint32_t tgid;
	size_t live, gone;
};

static int bst_count_method(const struct bft_nl_method *m, void *arg)
{
	struct bst_method_count *c = arg;

	if (c->tgid && m->tgid != c->tgid)
		return 0;
	if (m->flags & BFT_PF_GONE)
		c->gone++;
	else
		c->live++;
	return 0;
}

int bst_count_methods(struct bst_session *s, uint32_t tgid, size_t *live,
		      size_t *gone)
{
	struct bst_method_count c = { .tgid = tgid };
	int err = bft_nl_get_methods(s->nl, bst_count_method, &c);

	*live = c.live;
	*gone = c.gone;
	return err;
}

int bst_bufs_init(struct bst_bufs *bb, uint32_t n)
{
	bb->n = n;
	bb->data = calloc(n, sizeof(*bb->data));
	bb->len = calloc(n, sizeof(*bb->len));
	bb->cap = calloc(n, sizeof(*bb->cap));
	if (bb->data && bb->len && bb->cap)
		return 0;
	bst_bufs_free(bb);
	return -ENOMEM;
}

int bst_bufs_append(unsigned int cpu, const void *data, size_t len,
		    void *arg)
{
	struct bst_bufs *bb = arg;

	if (cpu >= bb->n)
		return -EINVAL;
	if (bst_grow((void **)&bb->data[cpu], &bb->cap[cpu],
		     bb->len[cpu] + len, 1))
		return -ENOMEM;
	memcpy(bb->data[cpu] + bb->len[cpu], data, len);
	bb->len[cpu] += len;
	return 0;
}

void bst_bufs_free(struct bst_bufs *bb)
{
	for (uint32_t i = 0; bb->data && i < bb->n; i++)
		free(bb->data[i]);
	free(bb->data);
	free(bb->len);
	free(bb->cap);
	bb->data = NULL;
	bb->len = bb->cap = NULL;
}
