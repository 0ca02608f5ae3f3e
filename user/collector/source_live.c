// SPDX-License-Identifier: GPL-2.0
/*
 * A live source (source.h): a capture backend through its table
 * (bft_backend.h), whichever bft_backend_choose() gave.  Its rings feed
 * the merge; mode commands, the method table and the status go to its
 * session; its events (mode changes, failed probes, targets leaving), if
 * it sends any, come on their own handle.  A backend without timers of its
 * own (flush) is flushed from here, every BFT_OPT_FLUSH_MS.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/bft_backend.h"
#include "bft_util.h"
#include "source.h"

static const struct source_ops live_ops;

/*
 * A read can bring a flush interval of a busy CPU's records, a hundred
 * thousand and more.  Fed whole, they would all wait in the merge queue
 * (56 bytes each) for the other CPUs' streams, and the queue would leave
 * the cache, and the collector's own state with it.  Fed in slices with
 * the merge run between them, they go out as soon as the other CPUs'
 * streams allow, which the BPF reader helps by delivering the CPUs with
 * little to say first (bft_bpf_rings.c, rings_deliver()).  The main loop's run
 * reports what a run here fails with.
 */
#define FEED_SLICE 8192

static int live_ring_feed(unsigned int cpu, const void *data, size_t len,
			  void *arg)
{
	struct coll *c = arg;
	const uint8_t *p = data;
	size_t off = 0;
	int e = 0;

	if (live_of(c->src)->discarding) {
		live_of(c->src)->discarded += len;
		return 0;
	}
	while (!e && len - off > FEED_SLICE) {
		e = bft_merge_feed(&c->merge, cpu, p + off, FEED_SLICE);
		off += FEED_SLICE;
		if (!e && pipeline_run(c))
			break;
	}
	if (off < len) {
		int rest = bft_merge_feed(&c->merge, cpu, p + off, len - off);

		if (!e)
			e = rest;
	}

	if (c->src->reads && cpu < c->src->ncpus)
		c->src->reads[cpu]++;

	if (e)
		coll_log("cpu %u: %s", cpu,
			 e == -EPROTO ?
			 bft_stream_last_error(bft_merge_stream(&c->merge,
								cpu))->msg :
			 strerror(-e));
	return 0;
}

/*
 * A reader that knows a ring idle (the inline backend: no heartbeat
 * records) lets the merge go past it; an ended ring is closed.
 */
static int live_ring_idle(unsigned int stream, uint64_t until_ns, void *arg)
{
	struct coll *c = arg;

	if (live_of(c->src)->discarding || stream >= c->src->ncpus)
		return 0;
	if (until_ns == UINT64_MAX)
		bft_merge_close(&c->merge, stream);
	else
		bft_merge_advance(&c->merge, stream, until_ns);
	return 0;
}

static void live_events(struct coll *c)
{
	struct live *s = live_of(c->src);
	struct bft_nl_event ev = { 0 };

	while (s->ev) {
		int e = s->be->events_recv(s->ev, &ev, 0);

		if (e == -ENOBUFS) {
			coll_log("kernel events overran: some were lost");
			continue;
		}
		if (e)
			break;
		switch (ev.type) {
		case BFT_EV_MODE:
			/* started by someone else (bfctl run) */
			if (ev.mode == BFT_MODE_TRACING &&
			    (s->s.mode == BFT_MODE_INITIALIZING ||
			     s->s.mode == BFT_MODE_SHUTTING_DOWN))
				live_started(c);
			s->s.mode = ev.mode;
			/* probes attached before a start: learn them now */
			live_refresh_methods(c);
			break;
		case BFT_EV_PROBE_FAILED: {
			struct method *m = methods_get(&c->methods,
						       ev.method_id);

			coll_log("probe of method %u failed: %s", ev.method_id,
				 strerror(ev.error));
			if (m && m->path &&
			    methods_object(&c->methods, m->path,
					   BFP_CLASS_FAILED) &&
			    c->hq == HQ_UP) {
				struct bfp_msg msg = {
					.id = BFP_CLASS_FAILED, .str = m->path,
					.str_len = strlen(m->path) };

				hq_control_msg(c, &msg);
			}
			break;
		}
		case BFT_EV_TARGET_EXIT:
			s->had_targets = true;
			coll_log("process %u is gone (%u probes detached)",
				 ev.tgid, ev.nr_probes);
			live_update_status(c);
			break;
		default:
			break;
		}
		bft_nl_event_free(&ev);
	}
}

/*
 * With no session running, what the rings hold is an earlier session's,
 * whose method table may be gone already: a trace that starts now must
 * not carry it under unknown names.  'bfctl record --last' reads it.
 */
static void live_discard_leftovers(struct coll *c)
{
	struct live *s = live_of(c->src);
	int quiet = (int)s->flush_ms * 2 + 100;
	ssize_t n;

	s->discarding = true;
	n = s->be->rings_drain(s->rings, quiet, 10000);
	s->discarding = false;
	if (n < 0)
		coll_log("discarding what an earlier session left: %s",
			 s->be->rings_errmsg(s->rings));
	if (s->discarded)
		coll_log("discarded %" PRIu64 " bytes an earlier session left in the rings (bfctl record --last reads them)",
			 s->discarded);
}

/* The backend's session, its options and rings, then what it holds. */
static int live_open_backend(struct coll *c, char *err, size_t errlen)
{
	struct live *s = live_of(c->src);
	const struct bft_backend_ops *be = s->be;
	struct bft_nl_caps caps;
	struct bft_nl_opt opt;
	int e;

	e = be->open(&s->h, BFT_BACKEND_CREATE, err, errlen);
	if (e)
		return e;
	if (*be->notice(s->h))
		coll_log("%s", be->notice(s->h));
	e = be->get_caps(s->h, &caps);
	if (e) {
		snprintf(err, errlen, "bftrace capabilities: %s",
			 be->errmsg(s->h));
		return e;
	}
	s->s.ncpus = caps.nr_cpus;
	s->flush_ms = 100;
	if (!be->get_opt(s->h, BFT_OPT_FLUSH_MS, &opt))
		s->flush_ms = opt.value;
	if (be->events_open && be->events_open(&s->ev, NULL, 0))
		coll_log("kernel events unavailable: failed probes and mode "
			 "changes are seen at heartbeats only");
	e = be->rings_open(s->h, &s->rings, c->o.device, s->s.ncpus,
			   live_ring_feed, c, err, errlen);
	if (e)
		return e;
	if (be->rings_idle)
		be->rings_idle(s->rings, live_ring_idle);
	if (be->where)
		coll_log("reading the %s's rings (%s)", be->label, be->where());
	return 0;
}

int source_open_live(struct coll *c, const struct bft_backend_ops *be,
		     char *err, size_t errlen)
{
	struct live *s = calloc(1, sizeof(*s));
	int e;

	if (!s)
		return -ENOMEM;
	s->s.ops = &live_ops;
	s->be = be;
	c->src = &s->s;
	e = live_open_backend(c, err, errlen);
	if (e)
		return e;
	live_update_status(c);	/* the mode decides what a dump means */
	if (!live_session_running(s->s.mode))
		live_discard_leftovers(c);
	if (c->o.methods_file) {
		e = methods_load_file(&c->methods, c->o.methods_file);
		if (e) {
			snprintf(err, errlen, "bad method table %s",
				 c->o.methods_file);
			return e;
		}
	} else {
		e = live_refresh_methods(c);
		if (e) {
			snprintf(err, errlen, "method table: %s",
				 be->errmsg(s->h));
			return e;
		}
	}
	return 0;
}

static int live_pollfds(struct source *src, struct pollfd *p, int max,
			int *timeout_ms)
{
	struct live *s = live_of(src);
	int n = 0, fd;

	/*
	 * Sleep until a ring wants reading or the backend says something:
	 * an idle collector must not wake to look at empty rings.
	 */
	s->ring_slot = s->ev_slot = -1;
	fd = s->s.draining ? -1 : s->be->rings_fd(s->rings);
	if (fd >= 0 && n < max) {
		s->ring_slot = n;
		p[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	fd = s->ev ? s->be->events_fd(s->ev) : -1;
	if (fd >= 0 && n < max) {
		s->ev_slot = n;
		p[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	if (s->be->rings_behind(s->rings))
		*timeout_ms = 0;
	if (s->be->flush) {
		/* we are its flush timer, and read below the watermark then */
		coll_wait_until(s->next_flush_ms, timeout_ms);
		coll_wait_until(s->next_refresh_ms, timeout_ms);
		return n;
	}
	/*
	 * The look at the method table takes a wake-up that comes anyway (a
	 * sample, the tick) when one comes within LIVE_REFRESH_SLACK_MS of
	 * it being due.  Without fds to sleep on, look at the rings every
	 * 20 ms.
	 */
	if (s->s.mode == BFT_MODE_TRACING)
		coll_wait_until(s->next_refresh_ms + LIVE_REFRESH_SLACK_MS,
				timeout_ms);
	if (!n && (*timeout_ms < 0 || *timeout_ms > 20))
		*timeout_ms = 20;
	return n;
}

static void live_woke(struct source *src, const struct pollfd *p, int n)
{
	struct live *s = live_of(src);
	int r = s->ring_slot, e = s->ev_slot;

	/* only a wait on both the rings' and the events' fds says where
	 * nothing is */
	s->ring_slot = s->ev_slot = -1;
	s->gated = r >= 0 && e >= 0 && r < n && e < n;
	if (s->gated) {
		s->ring_woke = p[r].revents != 0;
		s->ev_woke = p[e].revents != 0;
	}
}

/* The flush work of a backend without timers, when it is due. */
static bool live_flush(struct live *s)
{
	if (!s->be->flush || coll_now_ms() < s->next_flush_ms)
		return false;
	s->next_flush_ms = coll_now_ms() + s->flush_ms;
	if (s->be->flush(s->h, s->s.mode == BFT_MODE_TRACING ||
			 s->s.mode == BFT_MODE_PAUSED))
		coll_log("flushing the %s: %s", s->be->rings_name,
			 s->be->errmsg(s->h));
	return true;
}

static int live_read(struct coll *c)
{
	struct live *s = live_of(c->src);
	/* what the poll said is true once: an empty ring or event socket
	 * costs no system call */
	bool gated = s->gated, due;
	ssize_t n;

	s->gated = false;
	if (!gated || s->ev_woke)
		live_events(c);
	if (s->s.draining) {
		/* after stop: take what the flush seals */
		n = s->be->rings_drain(s->rings, (int)(2 * s->flush_ms + 50),
				       5000);
		if (n < 0 && n != -ETIME)
			coll_log("draining the %s: %s", s->be->rings_name,
				 s->be->rings_errmsg(s->rings));
		s->s.ended = true;
		return 1;
	}
	due = live_flush(s);
	/*
	 * A probe's name must be read while it is attached: a target that
	 * exits takes its probes (and their names) with it.
	 */
	if (coll_now_ms() >= s->next_refresh_ms) {
		s->next_refresh_ms = coll_now_ms() + 250;
		if (s->s.mode == BFT_MODE_TRACING)
			live_look_at_methods(c);
	}
	if (gated && !s->ring_woke)
		return 0;
	/* every flush, every wakeup, and before a ring can overflow */
	if (!due && s->be->rings_woken(s->rings) <= 0 &&
	    !s->be->rings_behind(s->rings))
		return 0;
	n = s->be->rings_poll(s->rings, 0);
	if (n < 0 && n != -EINTR) {
		coll_log("reading the %s: %s", s->be->rings_name,
			 s->be->rings_errmsg(s->rings));
		return (int)n;
	}
	return 0;
}

static int live_mode_cmd(struct coll *c, int cmd)
{
	struct live *s = live_of(c->src);
	uint8_t mode;
	int e;

	/*
	 * Finishing already (every target gone, or a signal): take what was
	 * recorded first, so that the stop's BREAK, written after the last
	 * event, is not read as a break in the trace.
	 */
	if (cmd == BFT_CMD_STOP && s->s.draining && !s->s.ended)
		source_read(c);
	e = s->be->mode_cmd(s->h, cmd, &mode);
	if (e) {
		coll_log("kernel refused %s: %s", bft_cmd_name(cmd),
			 s->be->errmsg(s->h));
		return e;
	}
	s->s.mode = mode;
	if (cmd == BFT_CMD_START) {
		s->be->rings_rearm(s->rings);
		live_started(c);
	}
	return 0;
}

static void live_tick(struct coll *c)
{
	live_events(c);
	live_update_status(c);
	live_look_at_methods(c);
	/* a type first named "exception type N" gets its name; a start
	 * numbers the types anew */
	live_refresh_exceptions(c);
}

static void live_log_costs(struct coll *c)
{
	struct live *s = live_of(c->src);

	coll_log("method table read %" PRIu64 " times (%" PRIu64 " us CPU "
		 "each), %" PRIu64 " looks at the status found no change",
		 s->dumps, s->dumps ? s->dump_ns / s->dumps / 1000 : 0,
		 s->checks);
}

static bool live_targets_gone(struct coll *c)
{
	struct live *s = live_of(c->src);

	return s->had_targets && !s->nr_targets;
}

/* The system knows it: its comm. */
static char *live_thread_name(struct coll *c, uint32_t tgid, uint32_t tid)
{
	char path[64], comm[64];
	ssize_t n;
	int fd;

	(void)c;
	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", tgid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	comm[n] = 0;
	comm[strcspn(comm, "\n")] = 0;
	return strdup(comm);
}

static int live_stats(struct coll *c, struct source_stats *st)
{
	struct live *s = live_of(c->src);
	struct bft_nl_status ks = { 0 };
	uint32_t i;
	int e;

	e = live_get_status(s, &ks);
	if (e)
		return e;
	live_note_status(s, &ks);
	st->mode = ks.mode;
	st->probes = ks.nr_probes;
	st->targets = ks.nr_targets;
	for (i = 0; i < ks.nr_cpus; i++) {
		const struct bft_nl_cpu_stats *k = &ks.cpus[i];

		st->hits += k->produced + k->suspended;
		st->lost += k->lost;
		if (k->cpu >= s->s.ncpus)
			continue;
		st->cpu[k->cpu].used = k->used;
		st->cpu[k->cpu].records = k->produced;
		st->cpu[k->cpu].lost = k->lost;
	}
	for (i = 0; i < s->s.ncpus; i++)
		st->cpu[i].reads = s->s.reads[i];
	bft_nl_status_free(&ks);
	return 0;
}

static const char *live_root_only(const struct source *src)
{
	return ((const struct live *)src)->be->root_only;
}

static void live_close(struct source *src)
{
	struct live *s = live_of(src);

	s->be->rings_close(s->rings);
	if (s->ev)
		s->be->events_close(s->ev);
	s->be->close(s->h);
	free(s);
}

static const struct source_ops live_ops = {
	.pollfds = live_pollfds,
	.woke = live_woke,
	.read = live_read,
	.mode_cmd = live_mode_cmd,
	.refresh_methods = live_refresh_methods,
	.refresh_exceptions = live_refresh_exceptions,
	.tick = live_tick,
	.thread_name = live_thread_name,
	.targets_gone = live_targets_gone,
	.stats = live_stats,
	.log_costs = live_log_costs,
	.root_only = live_root_only,
	.close = live_close,
	.live = true,
};
