// SPDX-License-Identifier: GPL-2.0
/*
 * bft_calltree: per-thread shadow stacks that turn merged records into
 * call events (enters, exits, unwinds, breaks).  See bft_calltree.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model/bft_calltree.h"
#include "wire/bft_varint.h"

struct frame {
	uint64_t enter_ns;
	uint32_t id;
	uint32_t noret;
};

struct bft_ct_thread {
	uint32_t tgid, tid;
	struct frame *stack;
	uint32_t depth, cap;
	void *user;		/* bft_call_event.user */
	uint8_t known;		/* the stack's bottom is the thread's bottom */
	uint8_t voided;		/* voided since its last event */
	uint8_t run_tok;	/* the last text token is a run: "x?", "u!"... */
	uint8_t run_c;
	uint64_t run_len;	/* ... of this many exits */
	size_t run_at;		/* ... starting at this text offset */
	struct bft_buf text;
	/* the MARK whose ARGs are still coming */
	uint8_t mark_due, mark_n;
	uint16_t mark_signed, mark_unread;
	uint32_t mark_id;
	uint64_t mark_args[BFT_USDT_MAX_ARGS];
};

int bft_calltree_init(struct bft_calltree *ct,
		      const struct bft_calltree_opts *o)
{
	memset(ct, 0, sizeof(*ct));
	ct->o = *o;
	return 0;
}

void bft_calltree_free(struct bft_calltree *ct)
{
	uint32_t i;

	for (i = 0; i < ct->nthreads; i++) {
		free(ct->threads[i].stack);
		bft_buf_free(&ct->threads[i].text);
	}
	free(ct->threads);
	free(ct->hash);
	memset(ct, 0, sizeof(*ct));
}

static inline uint32_t slot_of(uint32_t tgid, uint32_t tid, uint32_t cap)
{
	uint64_t k = ((uint64_t)tgid << 32 | tid) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(k >> 32) & (cap - 1);
}

static int rehash(struct bft_calltree *ct)
{
	uint32_t cap = ct->hash_cap ? ct->hash_cap * 2 : 64, i;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (i = 0; i < ct->nthreads; i++) {
		const struct bft_ct_thread *t = &ct->threads[i];
		uint32_t s = slot_of(t->tgid, t->tid, cap);

		while (h[s])
			s = (s + 1) & (cap - 1);
		h[s] = i + 1;
	}
	free(ct->hash);
	ct->hash = h;
	ct->hash_cap = cap;
	return 0;
}

static struct bft_ct_thread *lookup(const struct bft_calltree *ct,
				    uint32_t tgid, uint32_t tid)
{
	uint32_t s;

	if (!ct->hash_cap)
		return NULL;
	for (s = slot_of(tgid, tid, ct->hash_cap); ct->hash[s];
	     s = (s + 1) & (ct->hash_cap - 1)) {
		struct bft_ct_thread *t = &ct->threads[ct->hash[s] - 1];

		if (t->tgid == tgid && t->tid == tid)
			return t;
	}
	return NULL;
}

/* get_thread() past the thread its CPU ran last: a lookup, or a new one. */
static __attribute__((noinline)) struct bft_ct_thread *
find_thread(struct bft_calltree *ct, const struct bft_record *r)
{
	uint32_t *last = &ct->last[r->cpu % 16], tgid = r->tgid, tid = r->tid;
	struct bft_ct_thread *t;
	uint32_t s;

	t = lookup(ct, tgid, tid);
	if (t) {
		*last = (uint32_t)(t - ct->threads) + 1;
		return t;
	}
	if ((ct->nthreads + 1) * 2 > ct->hash_cap && rehash(ct))
		return NULL;
	if (ct->nthreads == ct->threads_cap) {
		uint32_t cap = ct->threads_cap ? ct->threads_cap * 2 : 16;
		struct bft_ct_thread *n;

		n = realloc(ct->threads, cap * sizeof(*n));
		if (!n)
			return NULL;
		ct->threads = n;
		ct->threads_cap = cap;
	}
	t = &ct->threads[ct->nthreads];
	memset(t, 0, sizeof(*t));
	t->tgid = tgid;
	t->tid = tid;
	t->known = ct->o.start_known;
	s = slot_of(tgid, tid, ct->hash_cap);
	while (ct->hash[s])
		s = (s + 1) & (ct->hash_cap - 1);
	ct->hash[s] = ++ct->nthreads;
	ct->st.threads++;
	*last = ct->nthreads;
	return t;
}

/*
 * The records of one CPU mostly come from the thread it ran last: inline,
 * as every record asks.
 */
static inline struct bft_ct_thread *get_thread(struct bft_calltree *ct,
					       const struct bft_record *r)
{
	uint32_t last = ct->last[r->cpu % 16];

	if (last) {
		struct bft_ct_thread *t = &ct->threads[last - 1];

		if (t->tgid == r->tgid && t->tid == r->tid)
			return t;
	}
	return find_thread(ct, r);
}

static int text_tok(struct bft_ct_thread *t, char c, uint64_t id)
{
	char tok[32];
	int n = snprintf(tok, sizeof(tok), " %c%" PRIu64, c, id);

	t->run_tok = 0;
	return bft_buf_append(&t->text, tok, (size_t)n);
}

/*
 * k more orphan ('?') or unbalanced ('!') exits (x) or unwinds (u): "x?"
 * once, "x?*N" for N.
 */
static int text_run(struct bft_ct_thread *t, char x, char c, uint64_t k)
{
	char tok[40];
	int n;

	if (t->run_tok == x && t->run_c == c) {
		t->text.len = t->run_at;
		t->run_len += k;
	} else {
		t->run_tok = (uint8_t)x;
		t->run_c = (uint8_t)c;
		t->run_len = k;
		t->run_at = t->text.len;
	}
	if (t->run_len == 1)
		n = snprintf(tok, sizeof(tok), " %c%c", x, c);
	else
		n = snprintf(tok, sizeof(tok), " %c%c*%" PRIu64, x, c,
			     t->run_len);
	return bft_buf_append(&t->text, tok, (size_t)n);
}

/*
 * call(), enter() and exits() run for every event: inlined, the way from
 * bft_calltree_feed() to the consumer is one call, not three.
 */
static inline __attribute__((always_inline)) int
call(struct bft_calltree *ct, struct bft_ct_thread *t, unsigned int kind,
     const struct frame *f, uint32_t depth, uint64_t time_ns,
     unsigned int unwound)
{
	struct bft_call_event ev;

	if (!ct->o.on_call)
		return 0;
	ev.time_ns = time_ns;
	ev.enter_ns = f->enter_ns;
	ev.tgid = t->tgid;
	ev.tid = t->tid;
	ev.id = f->id;
	ev.depth = depth;
	ev.exc = 0;
	ev.kind = (uint16_t)kind;
	ev.noret = (uint8_t)f->noret;
	ev.cause = 0;
	ev.how = 0;
	ev.unwound = (uint8_t)unwound;
	ev.user = &t->user;
	return ct->o.on_call(ct->o.ctx, &ev);
}

static inline __attribute__((always_inline)) int
enter(struct bft_calltree *ct, const struct bft_record *r, int noret)
{
	struct bft_ct_thread *t = get_thread(ct, r);
	struct frame *f;

	if (!t)
		return -ENOMEM;
	if (t->depth == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 32;
		struct frame *n = realloc(t->stack, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->stack = n;
		t->cap = cap;
	}
	f = &t->stack[t->depth++];
	f->enter_ns = r->time_ns;
	f->id = (uint32_t)r->value;
	f->noret = (uint32_t)noret;
	t->voided = 0;
	if (noret)
		ct->st.noret_enters++;
	else
		ct->st.enters++;
	if (t->depth > ct->st.max_depth)
		ct->st.max_depth = t->depth;
	if (ct->o.text && text_tok(t, noret ? 'n' : 'e', f->id))
		return -ENOMEM;
	return call(ct, t, BFT_CALL_ENTER, f, t->depth, r->time_ns, 0);
}

/*
 * An EXIT run of r->value, or an UNWIND of r->value frames (unwound: its
 * reason), which closes frames the same way.
 */
static inline __attribute__((always_inline)) int
exits(struct bft_calltree *ct, const struct bft_record *r,
      unsigned int unwound)
{
	struct bft_ct_thread *t = get_thread(ct, r);
	uint64_t n = r->value;
	char x = unwound ? 'u' : 'x';
	int ret;

	if (!t)
		return -ENOMEM;
	t->voided = 0;
	while (n && t->depth) {
		const struct frame *f = &t->stack[t->depth - 1];
		int ordinary = !f->noret;

		if (unwound)
			ct->st.unwound++;
		else
			ct->st.exits++;
		if (!ordinary)
			ct->st.noret_closed++;
		if (ct->o.text && text_tok(t, x, f->id))
			return -ENOMEM;
		ret = call(ct, t, BFT_CALL_EXIT, f, t->depth, r->time_ns,
			   unwound);
		t->depth--;
		if (ret)
			return ret;
		n -= (uint64_t)ordinary;
	}
	if (!n)
		return 0;
	/* the stack ran out: every remaining exit closes nothing we saw */
	if (t->known) {
		ct->st.unbalanced += n;
		if (ct->o.text && text_run(t, x, '!', n))
			return -ENOMEM;
	} else {
		ct->st.orphans += n;
		if (ct->o.text && text_run(t, x, '?', n))
			return -ENOMEM;
	}
	return 0;
}

static int throw(struct bft_calltree *ct, const struct bft_record *r)
{
	static const char how_tok[] = { 't', 't', 'r', 'f' };
	struct bft_ct_thread *t = get_thread(ct, r);
	struct frame none = { 0 };
	const struct frame *f = &none;
	struct bft_call_event ev;

	if (!t)
		return -ENOMEM;
	t->voided = 0;
	ct->st.throws++;
	if (t->depth)
		f = &t->stack[t->depth - 1];
	if (ct->o.text &&
	    text_tok(t, how_tok[r->value2 < sizeof(how_tok) ? r->value2 : 0],
		     r->value))
		return -ENOMEM;
	if (!ct->o.on_call)
		return 0;
	ev.time_ns = r->time_ns;
	ev.enter_ns = f->enter_ns;
	ev.tgid = t->tgid;
	ev.tid = t->tid;
	ev.id = f->id;
	ev.depth = t->depth;
	ev.exc = (uint32_t)r->value;
	ev.kind = BFT_CALL_THROW;
	ev.noret = (uint8_t)f->noret;
	ev.cause = 0;
	ev.how = (uint8_t)r->value2;
	ev.unwound = 0;
	ev.user = &t->user;
	return ct->o.on_call(ct->o.ctx, &ev);
}

static int mark_text(struct bft_ct_thread *t)
{
	char tok[32];
	int err = text_tok(t, 'm', t->mark_id);

	for (unsigned int i = 0; !err && i < t->mark_n; i++) {
		int n = t->mark_signed >> i & 1 ?
			snprintf(tok, sizeof(tok), "%c%" PRId64, i ? ',' : ':',
				 (int64_t)t->mark_args[i]) :
			snprintf(tok, sizeof(tok), "%c%" PRIu64, i ? ',' : ':',
				 t->mark_args[i]);

		err = bft_buf_append(&t->text, tok, (size_t)n);
	}
	return err;
}

/* MARK and its ARGs: one event once the last ARG is in. */
static int mark(struct bft_calltree *ct, const struct bft_record *r)
{
	struct bft_ct_thread *t;
	struct bft_call_event ev;

	if (r->kind == BFT_REC_ARG) {
		/* the decoder lets no stray ARG through: ignore one */
		t = lookup(ct, r->tgid, r->tid);
		if (!t || !t->mark_due)
			return 0;
		t->mark_args[t->mark_n - t->mark_due--] = r->value;
	} else {
		if (r->value2 > BFT_USDT_MAX_ARGS)
			return 0;	/* the decoder refuses such a MARK */
		t = get_thread(ct, r);
		if (!t)
			return -ENOMEM;
		t->mark_id = (uint32_t)r->value;
		t->mark_n = t->mark_due = (uint8_t)r->value2;
		t->mark_signed = r->mark_signed;
		t->mark_unread = r->mark_unread;
	}
	if (t->mark_due)
		return 0;
	t->voided = 0;
	ct->st.marks++;
	if (ct->o.text && mark_text(t))
		return -ENOMEM;
	if (!ct->o.on_call)
		return 0;
	ev.time_ns = r->time_ns;
	ev.enter_ns = 0;
	ev.tgid = t->tgid;
	ev.tid = t->tid;
	ev.id = t->mark_id;
	ev.depth = t->depth;
	ev.exc = 0;
	ev.kind = BFT_CALL_MARK;
	ev.noret = 0;
	ev.cause = 0;
	ev.how = 0;
	ev.unwound = 0;
	ev.nargs = t->mark_n;
	ev.mark_signed = t->mark_signed;
	ev.mark_unread = t->mark_unread;
	memcpy(ev.args, t->mark_args, t->mark_n * sizeof(ev.args[0]));
	ev.user = &t->user;
	return ct->o.on_call(ct->o.ctx, &ev);
}

static int void_all(struct bft_calltree *ct, const struct bft_record *r)
{
	uint32_t i;

	ct->st.voids++;
	for (i = 0; i < ct->nthreads; i++) {
		struct bft_ct_thread *t = &ct->threads[i];
		struct bft_call_event ev;
		int ret;

		if (t->mark_due) {
			ct->st.marks_cut++;
			t->mark_due = 0;
		}
		if (t->voided)
			continue;
		t->voided = 1;
		ct->st.voided_frames += t->depth;
		ev.time_ns = r->time_ns;
		ev.enter_ns = 0;
		ev.tgid = t->tgid;
		ev.tid = t->tid;
		ev.id = 0;
		ev.depth = t->depth;
		ev.exc = 0;
		ev.kind = BFT_CALL_VOID;
		ev.noret = 0;
		ev.cause = (uint8_t)r->kind;
		ev.how = 0;
		ev.unwound = 0;
		ev.user = &t->user;
		t->depth = 0;
		t->known = 0;
		if (ct->o.text) {
			t->run_tok = 0;
			if (bft_buf_append(&t->text, " |", 2))
				return -ENOMEM;
		}
		if (ct->o.on_call) {
			ret = ct->o.on_call(ct->o.ctx, &ev);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int bft_calltree_feed(struct bft_calltree *ct, const struct bft_record *r)
{
	switch (r->kind) {
	case BFT_REC_ENTER:
		return enter(ct, r, 0);
	case BFT_REC_ENTER_NORET:
		return enter(ct, r, 1);
	case BFT_REC_EXIT:
		return exits(ct, r, 0);
	case BFT_REC_UNWIND:
		/* the decoder admits reasons 1..3 only: never 0 */
		return exits(ct, r, r->value2 ? (unsigned int)r->value2 : 1);
	case BFT_REC_THROW:
		return throw(ct, r);
	case BFT_REC_MARK:
	case BFT_REC_ARG:
		return mark(ct, r);
	case BFT_REC_BREAK:
	case BFT_REC_LOST:
	case BFT_REC_GAP:
		return void_all(ct, r);
	default:
		return 0;
	}
}

const struct bft_calltree_stats *
bft_calltree_stats(const struct bft_calltree *ct)
{
	return &ct->st;
}

int bft_calltree_depth(const struct bft_calltree *ct, uint32_t tgid,
		       uint32_t tid)
{
	const struct bft_ct_thread *t = lookup(ct, tgid, tid);

	return t ? (int)t->depth : -1;
}

static int by_tid(const void *a, const void *b)
{
	const struct bft_ct_thread *x = *(const struct bft_ct_thread *const *)a;
	const struct bft_ct_thread *y = *(const struct bft_ct_thread *const *)b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return 0;
}

int bft_calltree_print(const struct bft_calltree *ct, FILE *f)
{
	const struct bft_ct_thread **v;
	uint32_t i;
	int err = 0;

	if (!ct->nthreads)
		return 0;
	v = malloc(ct->nthreads * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < ct->nthreads; i++)
		v[i] = &ct->threads[i];
	qsort(v, ct->nthreads, sizeof(*v), by_tid);
	for (i = 0; i < ct->nthreads && !err; i++) {
		if (fprintf(f, "tid %u:", v[i]->tid) < 0 ||
		    fwrite(v[i]->text.data, 1, v[i]->text.len, f) !=
			    v[i]->text.len ||
		    fputc('\n', f) == EOF)
			err = -EIO;
	}
	free(v);
	return err;
}

char *bft_calltree_text(const struct bft_calltree *ct)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	int r;

	if (!f)
		return NULL;
	r = bft_calltree_print(ct, f);
	if (fclose(f) || r) {
		free(s);
		return NULL;
	}
	return s;
}
