// SPDX-License-Identifier: GPL-2.0
/*
 * What a live source (source_live.c) learns from its backend besides the
 * records: the method table (BFT_CMD_GET_METHODS), the exception types
 * (BFT_CMD_GET_EXCEPTIONS) and the status, and when each is worth asking
 * for again.
 */
#include <errno.h>
#include <string.h>

#include "capture/bft_backend.h"
#include "bft_util.h"
#include "source.h"

bool live_session_running(uint8_t mode)
{
	return mode == BFT_MODE_TRACING || mode == BFT_MODE_PAUSED ||
	       mode == BFT_MODE_SUSPENDED;
}

static int live_method_seen(const struct bft_nl_method *m, void *arg)
{
	struct coll *c = arg;
	struct method *me;
	bool news;

	if (methods_add(&c->methods, m->method_id, m->path, m->name, m->offset))
		return -ENOMEM;
	me = methods_get(&c->methods, m->method_id);
	if (me && !(m->flags & BFT_PF_GONE))
		me->live_gen = c->methods.gen;
	/* which processes have its entries only: see struct method */
	if (me && m->tgid && method_set_flags(me, m->tgid, m->flags))
		return -ENOMEM;
	/*
	 * START forgets retired probes, so while a session runs a retired
	 * one is a target of this session that is already gone (a short
	 * process can come and go between two refreshes).  Outside a
	 * session it is from an earlier one: named, nothing more, or
	 * --until-exit would finish before anything is attached.
	 */
	if ((m->flags & BFT_PF_GONE) && !live_session_running(c->src->mode))
		return 0;
	live_of(c->src)->had_targets = true;
	/* a hook alone (the C++ runtime's, libc's longjmp) traces nothing of
	 * its object: HQ is told of the objects whose functions are traced */
	if (!(m->flags & BFT_PF_ENTRY))
		return 0;
	news = methods_object(&c->methods, m->path, BFP_CLASS_TRANSFORMED);
	if (news && c->hq == HQ_UP) {
		struct bfp_msg msg = { .id = BFP_CLASS_TRANSFORMED,
				       .str = m->path,
				       .str_len = strlen(m->path) };

		hq_control_msg(c, &msg);
	}
	return 0;
}

int live_refresh_methods(struct coll *c)
{
	struct live *s = live_of(c->src);
	uint64_t t0;
	int err;

	if (c->o.methods_file)
		return 0;
	t0 = bft_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	c->methods.gen++;	/* what the dump does not name is detached */
	err = s->be->get_methods(s->h, live_method_seen, c);
	if (err)
		coll_log("cannot read the method table: %s",
			 s->be->errmsg(s->h));
	s->full_read_ms = coll_now_ms();
	s->dumps++;
	s->dump_ns += bft_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	return err;
}

/*
 * The periodic look at the method table.  A dump of a thousand probes is
 * the collector's most expensive request (most of its CPU time in a TCG
 * guest), and it rarely says anything new: detached probes stay in it
 * until the next start, and an id the stream names first makes
 * method_of() read it at once.  So the module's status (one small reply,
 * which the counters read anyway) decides: a change in the number of
 * probes or targets reads the table, and so does METHODS_FULL_MS without
 * one, which bounds how long an attach that the counts hide (one target
 * gone, another come with as many probes) stays out of the counters'
 * list.  The BPF backend keeps its count in the control map for the same
 * reason.
 */
#define METHODS_FULL_MS	10000
#define STATUS_FRESH_MS	250

/* The status as cheaply as the backend can tell it (rings_status). */
int live_get_status(struct live *s, struct bft_nl_status *st)
{
	return s->be->rings_status(s->h, s->rings, st);
}

void live_note_status(struct live *s, const struct bft_nl_status *st)
{
	s->st_probes = st->nr_probes;
	s->st_targets = st->nr_targets;
	s->st_ms = coll_now_ms();
}

void live_look_at_methods(struct coll *c)
{
	struct live *s = live_of(c->src);
	struct bft_nl_status st;
	bool same;

	if (coll_now_ms() - s->full_read_ms >= METHODS_FULL_MS) {
		live_refresh_methods(c);
		return;
	}
	/* the counters' samples may have read it just now */
	if (coll_now_ms() - s->st_ms >= STATUS_FRESH_MS) {
		int e = live_get_status(s, &st);

		if (e == -EWOULDBLOCK)
			return;		/* the backend is busy: next time */
		if (e) {
			live_refresh_methods(c);
			return;
		}
		live_note_status(s, &st);
		bft_nl_status_free(&st);
	}
	s->checks++;
	same = s->st_probes == s->seen_probes &&
	       s->st_targets == s->seen_targets;
	s->seen_probes = s->st_probes;
	s->seen_targets = s->st_targets;
	if (!same)
		live_refresh_methods(c);
}

static int live_exception_seen(const struct bft_nl_exception *e, void *arg)
{
	struct coll *c = arg;
	int err = exc_types_add(&c->exc, e->id, e->name);

	/* an id we keep for ourselves: its throws show as unknown */
	if (err == -EINVAL)
		coll_log("the kernel's exception type id %u is out of range",
			 e->id);
	return err == -ENOMEM ? err : 0;
}

int live_refresh_exceptions(struct coll *c)
{
	struct live *s = live_of(c->src);
	int err;

	/* a backend without exception hooks has no types: no callback */
	err = s->be->get_exceptions(s->h, live_exception_seen, c);
	if (err)
		coll_log("cannot read the exception types: %s",
			 s->be->errmsg(s->h));
	return err;
}

/*
 * A start forgets the probes of earlier sessions and numbers exception
 * types anew: the ids we learnt before may name other functions now.
 */
void live_started(struct coll *c)
{
	if (!c->o.methods_file)
		methods_forget(&c->methods);
	exc_types_forget(&c->exc);
	live_refresh_methods(c);
	live_refresh_exceptions(c);
}

void live_update_status(struct coll *c)
{
	struct live *s = live_of(c->src);
	struct bft_nl_status st = { 0 };

	if (live_get_status(s, &st))
		return;
	/* a backend that sends no mode events: a start shows here */
	if (!s->be->events_open && st.mode == BFT_MODE_TRACING &&
	    (s->s.mode == BFT_MODE_INITIALIZING ||
	     s->s.mode == BFT_MODE_SHUTTING_DOWN))
		live_started(c);
	s->s.mode = st.mode;
	s->nr_targets = st.nr_targets;
	if (st.nr_targets)
		s->had_targets = true;
	live_note_status(s, &st);
	bft_nl_status_free(&st);
}

