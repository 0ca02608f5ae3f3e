// SPDX-License-Identifier: GPL-2.0
/*
 * The call filters (--min-time, --caller) over one thread's call events.
 *
 * --min-time needs a call's exit before its entry may go out, so a
 * thread's entries are held.  The hold only ever has the thread's open
 * frames whose length is still unknown, oldest (outermost) first, and the
 * throws and USDT marks between them: a call that ends short takes its entry (and what
 * it held under it) out of the hold, dropped; a call that ends long
 * enough, or whose entry grows older than min_ns by the thread's stream
 * time, is long enough, and so are all its callers: everything held up to
 * it goes out in order, with the times it came with.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/bft_callfilter.h"

static int emit(struct bft_callfilter *f, void *thread,
		const struct bft_call_event *ev)
{
	struct bft_call_event e = *ev;

	e.user = NULL;
	return f->o.emit(f->o.ctx, thread, &e);
}

/* Send the first k held events, in order. */
static int send_front(struct bft_callfilter *f,
		      struct bft_callfilter_thread *t, void *thread, uint32_t k)
{
	uint32_t i;
	int err = 0;

	for (i = 0; i < k && !err; i++)
		err = emit(f, thread, &t->held[i]);
	memmove(t->held, t->held + k, (t->n - k) * sizeof(*t->held));
	t->n -= k;
	return err;
}

/* The held entries old enough by now, and the throws after them. */
static int send_aged(struct bft_callfilter *f,
		     struct bft_callfilter_thread *t, void *thread,
		     uint64_t now)
{
	uint32_t k = 0;

	while (k < t->n && (t->held[k].kind != BFT_CALL_ENTER ||
			    now - t->held[k].time_ns >= f->o.min_ns))
		k++;
	return k ? send_front(f, t, thread, k) : 0;
}

static int hold(struct bft_callfilter *f, struct bft_callfilter_thread *t,
		void *thread, const struct bft_call_event *ev)
{
	int err = 0;

	if (t->n == BFT_CALLFILTER_HOLD_MAX) {
		f->st.hold_overflow++;
		err = send_front(f, t, thread, 1);
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 16;
		void *p = realloc(t->held, cap * sizeof(*t->held));

		if (!p)
			return -ENOMEM;
		t->held = p;
		t->cap = cap;
	}
	t->held[t->n++] = *ev;
	return err;
}

/* The exit of a frame: short, it leaves with all it held; long enough,
 * everything held goes out before it. */
static int min_time_exit(struct bft_callfilter *f,
			 struct bft_callfilter_thread *t, void *thread,
			 const struct bft_call_event *ev)
{
	uint32_t i = t->n;

	while (i && !(t->held[i - 1].kind == BFT_CALL_ENTER &&
		      t->held[i - 1].depth == ev->depth))
		i--;
	if (!i)		/* its entry went out already: long enough */
		return send_front(f, t, thread, t->n) ?: emit(f, thread, ev);
	if (ev->time_ns - ev->enter_ns >= f->o.min_ns)
		return send_front(f, t, thread, t->n) ?: emit(f, thread, ev);
	for (uint32_t j = i - 1; j < t->n; j++)
		f->st.min_time_dropped += t->held[j].kind == BFT_CALL_ENTER;
	t->n = i - 1;
	return 0;
}

static int min_time(struct bft_callfilter *f, struct bft_callfilter_thread *t,
		    void *thread, const struct bft_call_event *ev)
{
	int err;

	if (!f->o.min_ns)
		return emit(f, thread, ev);
	err = send_aged(f, t, thread, ev->time_ns);
	if (err)
		return err;
	switch (ev->kind) {
	case BFT_CALL_ENTER:
		return hold(f, t, thread, ev);
	case BFT_CALL_EXIT:
		return min_time_exit(f, t, thread, ev);
	case BFT_CALL_THROW:
	case BFT_CALL_MARK:
		return t->n ? hold(f, t, thread, ev) : emit(f, thread, ev);
	default:
		/* a break: the frames it cut have no exit to judge by */
		return send_front(f, t, thread, t->n) ?: emit(f, thread, ev);
	}
}

int bft_callfilter_feed(struct bft_callfilter *f,
			struct bft_callfilter_thread *t, void *thread,
			const struct bft_call_event *ev)
{
	bool last = false;
	int err;

	if (f->o.is_caller) {
		switch (ev->kind) {
		case BFT_CALL_ENTER:
			if (!t->under && f->o.is_caller(f->o.ctx, ev->id))
				t->under = ev->depth;
			if (!t->under) {
				f->st.caller_dropped++;
				return 0;
			}
			break;
		case BFT_CALL_EXIT:
			if (!t->under)
				return 0;
			last = ev->depth <= t->under;
			break;
		case BFT_CALL_THROW:
		case BFT_CALL_MARK:
			if (!t->under)
				return 0;
			break;
		default:
			t->under = 0;
			break;
		}
	}
	err = min_time(f, t, thread, ev);
	if (last)
		t->under = 0;
	return err;
}

int bft_callfilter_flush(struct bft_callfilter *f,
			 struct bft_callfilter_thread *t, void *thread)
{
	int err = t->n ? send_front(f, t, thread, t->n) : 0;

	free(t->held);
	memset(t, 0, sizeof(*t));
	return err;
}

int bft_duration_parse(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
		{ "s", 1000000000 }, { "", 1000 },
	};
	uint64_t v = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].unit))
			continue;
		if (v > UINT64_MAX / units[i].ns)
			return -1;
		*ns = v * units[i].ns;
		return 0;
	}
	return -1;
}
