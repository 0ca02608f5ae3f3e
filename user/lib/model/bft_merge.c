// SPDX-License-Identifier: GPL-2.0
/*
 * bft_merge: the k-way merge of per-CPU record streams by stream time.
 * See bft_merge.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/bft_merge.h"

struct bft_merge_cpu {
	struct bft_record *q;	/* ring of queued records, cap a power of 2 */
	uint32_t head, len, cap;
	uint8_t closed;
	uint8_t fed;		/* the decoder has seen bytes */
	uint64_t wm;		/* nothing earlier than this can still come */
	struct bft_stream dec;
};

static int push_cb(void *ctx, const struct bft_record *r);

/* The decoders share one context, the merger; the user's is err_ctx. */
static int error_cb(void *ctx, const struct bft_stream_error *e)
{
	struct bft_merge *m = ctx;

	return m->o.on_error(m->o.err_ctx, e);
}

int bft_merge_init(struct bft_merge *m, const struct bft_merge_opts *o)
{
	uint32_t i;

	memset(m, 0, sizeof(*m));
	if (!o->ncpus || !o->on_record)
		return -EINVAL;
	m->o = *o;
	m->direct_cpu = UINT32_MAX;
	if (!m->o.kinds)
		m->o.kinds = ~0u;
	m->cpu = calloc(o->ncpus, sizeof(*m->cpu));
	m->heap = calloc(o->ncpus, sizeof(*m->heap));
	if (!m->cpu || !m->heap) {
		bft_merge_free(m);
		return -ENOMEM;
	}
	for (i = 0; i < o->ncpus; i++) {
		struct bft_stream_opts so = {
			.cpu = i,
			.on_record = push_cb,
			.on_error = o->on_error ? error_cb : NULL,
			.ctx = m,
			.policy = o->policy,
			.kinds = m->o.kinds,
		};

		bft_stream_init(&m->cpu[i].dec, &so);
	}
	return 0;
}

void bft_merge_free(struct bft_merge *m)
{
	uint32_t i;

	if (m->cpu)
		for (i = 0; i < m->o.ncpus; i++)
			free(m->cpu[i].q);
	free(m->cpu);
	free(m->heap);
	m->cpu = NULL;
	m->heap = NULL;
}

/*
 * (time, cpu) order between two CPUs' first records.  The heap keeps the
 * times itself, so that a sift does not go through every CPU's queue.
 */
static inline int before(const struct bft_merge_head *a,
			 const struct bft_merge_head *b)
{
	return a->t < b->t || (a->t == b->t && a->cpu < b->cpu);
}

static void sift_up(struct bft_merge *m, uint32_t i)
{
	struct bft_merge_head c = m->heap[i];

	while (i) {
		uint32_t parent = (i - 1) / 2;

		if (!before(&c, &m->heap[parent]))
			break;
		m->heap[i] = m->heap[parent];
		i = parent;
	}
	m->heap[i] = c;
}

static void sift_down(struct bft_merge *m, uint32_t i)
{
	struct bft_merge_head c = m->heap[i];
	uint32_t n = m->heap_len;

	for (;;) {
		uint32_t k = 2 * i + 1;

		if (k >= n)
			break;
		if (k + 1 < n && before(&m->heap[k + 1], &m->heap[k]))
			k++;
		if (!before(&m->heap[k], &c))
			break;
		m->heap[i] = m->heap[k];
		i = k;
	}
	m->heap[i] = c;
}

static int grow(struct bft_merge_cpu *q)
{
	uint32_t cap = q->cap ? q->cap * 2 : 1024, i;
	struct bft_record *n;

	if (cap < q->cap)
		return -ENOMEM;
	n = malloc((size_t)cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	/* unwrap the ring so the new one starts at 0 */
	for (i = 0; i < q->len; i++)
		n[i] = q->q[(q->head + i) & (q->cap - 1)];
	free(q->q);
	q->q = n;
	q->head = 0;
	q->cap = cap;
	return 0;
}

/* Queue r on q, the queue of CPU c, which is open and at most at r's time. */
static inline int enqueue(struct bft_merge *m, struct bft_merge_cpu *q,
			  uint32_t c, const struct bft_record *r)
{
	q->wm = r->time_ns;
	if (!(m->o.kinds & BFT_REC_BIT(r->kind)))
		return 0;
	if (q->len == q->cap && grow(q))
		return -ENOMEM;
	q->q[(q->head + q->len) & (q->cap - 1)] = *r;
	if (q->len++ == 0) {
		m->heap[m->heap_len] = (struct bft_merge_head){ r->time_ns, c };
		sift_up(m, m->heap_len++);
	}
	m->st.pushed++;
	if (++m->queued > m->st.max_queued)
		m->st.max_queued = m->queued;
	return 0;
}

int bft_merge_push(struct bft_merge *m, const struct bft_record *r)
{
	struct bft_merge_cpu *q;
	uint32_t c = r->cpu;

	if (c >= m->o.ncpus)
		return -EINVAL;
	q = &m->cpu[c];
	if (q->closed || r->time_ns < q->wm)
		return -EINVAL;
	return enqueue(m, q, c, r);
}

/*
 * A record of the CPU being fed goes out at once if it sorts before
 * everything the other CPUs may still deliver (direct_lim, taken when the
 * feed began: feeding one CPU changes no other).  Its CPU's queue is
 * empty, or the feed would have stopped going direct.
 */
static int direct(struct bft_merge *m, struct bft_merge_cpu *q,
		  const struct bft_record *r)
{
	struct bft_merge_head h = { r->time_ns, r->cpu };
	int ret;

	if (!m->direct_unbounded && !before(&h, &m->direct_lim)) {
		m->direct_cpu = UINT32_MAX;	/* the rest keeps its order */
		return enqueue(m, q, r->cpu, r);
	}
	q->wm = r->time_ns;
	if (!(m->o.kinds & BFT_REC_BIT(r->kind)))
		return 0;
	m->st.emitted++;
	m->st.direct++;
	ret = m->o.on_record(m->o.ctx, r);
	if (ret) {
		/* consumed, as a record the run hands over is */
		m->direct_err = ret;
		m->direct_cpu = UINT32_MAX;
	}
	return 0;
}

/* From a CPU's decoder, which bft_merge_feed only runs while it is open. */
static int push_cb(void *ctx, const struct bft_record *r)
{
	struct bft_merge *m = ctx;
	struct bft_merge_cpu *q = &m->cpu[r->cpu];

	if (r->time_ns < q->wm)	/* bft_merge_advance promised later */
		return -EINVAL;
	if (r->cpu == m->direct_cpu)
		return direct(m, q, r);
	return enqueue(m, q, r->cpu, r);
}

/* What the CPUs but cpu may still deliver, earliest first: direct_lim. */
static void direct_begin(struct bft_merge *m, uint32_t cpu)
{
	m->direct_unbounded = 1;
	for (uint32_t d = 0; d < m->o.ncpus; d++) {
		const struct bft_merge_cpu *o = &m->cpu[d];
		struct bft_merge_head h;

		if (d == cpu || (!o->len && o->closed))
			continue;
		h.t = o->len ? o->q[o->head].time_ns : o->wm;
		h.cpu = d;
		if (m->direct_unbounded || before(&h, &m->direct_lim)) {
			m->direct_lim = h;
			m->direct_unbounded = 0;
		}
	}
	m->direct_cpu = cpu;
	m->direct_err = 0;
}

int bft_merge_feed(struct bft_merge *m, uint32_t cpu, const void *buf,
		   size_t n)
{
	struct bft_merge_cpu *q;
	uint64_t t;
	int r;

	if (cpu >= m->o.ncpus || m->cpu[cpu].closed)
		return -EINVAL;
	q = &m->cpu[cpu];
	q->fed = 1;
	if (m->o.direct && !q->len)
		direct_begin(m, cpu);
	r = bft_stream_feed(&q->dec, buf, n);
	m->direct_cpu = UINT32_MAX;
	/* records the decoder did not hand over still moved the time */
	t = bft_stream_time(&q->dec);
	if (t > q->wm)
		q->wm = t;
	if (!r)
		r = m->direct_err;
	m->direct_err = 0;
	return r;
}

int bft_merge_advance(struct bft_merge *m, uint32_t cpu, uint64_t t)
{
	if (cpu >= m->o.ncpus)
		return -EINVAL;
	if (t > m->cpu[cpu].wm)
		m->cpu[cpu].wm = t;
	return 0;
}

int bft_merge_close(struct bft_merge *m, uint32_t cpu)
{
	struct bft_merge_cpu *q;
	int r = 0;

	if (cpu >= m->o.ncpus)
		return -EINVAL;
	q = &m->cpu[cpu];
	if (q->closed)
		return 0;
	if (q->fed)
		r = bft_stream_finish(&q->dec);
	q->closed = 1;
	return r;
}

/* The earliest (time, cpu) an empty, open CPU may still deliver. */
struct limit {
	uint64_t t;
	uint32_t cpu;
	int none;
};

static inline void limit_add(struct limit *l, uint64_t t, uint32_t cpu)
{
	if (l->none || t < l->t || (t == l->t && cpu < l->cpu)) {
		l->t = t;
		l->cpu = cpu;
		l->none = 0;
	}
}

/*
 * The top CPU's records are taken one after another, without going through
 * the heap, while each sorts before the heads of the top's children (the
 * earliest of the other CPUs): a CPU's records mostly come in runs.  The
 * heap is in order whenever on_record is called.
 */
int bft_merge_run(struct bft_merge *m)
{
	struct limit lim = { .none = 1 };
	uint32_t c;

	for (c = 0; c < m->o.ncpus; c++)
		if (!m->cpu[c].len && !m->cpu[c].closed)
			limit_add(&lim, m->cpu[c].wm, c);
	while (m->heap_len) {
		struct bft_merge_cpu *q;
		uint64_t nt = UINT64_MAX;	/* the next CPU's head */
		uint32_t nc = UINT32_MAX, k;

		c = m->heap[0].cpu;
		q = &m->cpu[c];
		for (k = 1; k <= 2 && k < m->heap_len; k++) {
			const struct bft_merge_head *h = &m->heap[k];

			if (h->t < nt || (h->t == nt && h->cpu < nc)) {
				nt = h->t;
				nc = h->cpu;
			}
		}
		for (;;) {
			/* on_record feeds nothing: the slot stays as it is */
			const struct bft_record *rec = &q->q[q->head], *h;
			int r;

			if (!lim.none &&
			    (rec->time_ns > lim.t ||
			     (rec->time_ns == lim.t && c > lim.cpu)))
				return 0;
			q->head = (q->head + 1) & (q->cap - 1);
			m->queued--;
			m->st.emitted++;
			if (!--q->len) {
				m->heap[0] = m->heap[--m->heap_len];
				if (m->heap_len)
					sift_down(m, 0);
				q->head = 0;
				if (!q->closed)
					limit_add(&lim, q->wm, c);
				r = m->o.on_record(m->o.ctx, rec);
				if (r)
					return r;
				break;
			}
			h = &q->q[q->head];
			m->heap[0].t = h->time_ns;
			if (h->time_ns > nt || (h->time_ns == nt && c > nc)) {
				sift_down(m, 0);
				r = m->o.on_record(m->o.ctx, rec);
				if (r)
					return r;
				break;
			}
			r = m->o.on_record(m->o.ctx, rec);
			if (r)
				return r;
		}
	}
	return 0;
}

int bft_merge_drain(struct bft_merge *m)
{
	int err = 0, r;
	uint32_t c;

	for (c = 0; c < m->o.ncpus; c++) {
		r = bft_merge_close(m, c);
		if (r && !err)
			err = r;
	}
	/* a stopped decoder has still queued what came before its error */
	r = bft_merge_run(m);
	return r ? r : err;
}

struct bft_stream *bft_merge_stream(struct bft_merge *m, uint32_t cpu)
{
	return cpu < m->o.ncpus ? &m->cpu[cpu].dec : NULL;
}

uint64_t bft_merge_queued(const struct bft_merge *m)
{
	return m->queued;
}

uint64_t bft_merge_cpu_queued(const struct bft_merge *m, uint32_t cpu)
{
	return cpu < m->o.ncpus ? m->cpu[cpu].len : 0;
}

const struct bft_merge_stats *bft_merge_stats(const struct bft_merge *m)
{
	return &m->st;
}
