// SPDX-License-Identifier: GPL-2.0
/*
 * bfctl record: read the backend's rings (bft_backend.h), decode and merge
 * them (bft_merge, bft_calltree), and print the calls per method, or every
 * call.
 *
 * It records the session that runs, or with none running the next one: what
 * an earlier session left in the rings is thrown away (and said so), and it
 * waits for a start.  --last instead reads what the last session left and
 * exits.  It runs until the module's mode is shutting_down (after 'bfctl
 * stop') and the rings are drained, or until interrupted, or for --duration
 * seconds.  Data already in the rings of a running session is decoded too
 * (exits need their entries), but only calls from the moment record started
 * are counted or printed, and after an interruption or --duration only the
 * calls up to that moment: the rings of a running session never go quiet,
 * so the last read is bounded by one flush interval.  Method names come
 * from the kernel's method table, which keeps detached probes' entries
 * until the next start; it is read every 100 ms while recording, so a name
 * is "#ID" only if a start came between the calls and their reading.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bfctl.h"
#include "model/bft_calltree.h"
#include "model/bft_merge.h"
#include "output.h"
#include "bft_util.h"

#define NAMES_EVERY_MS	100
#define STATUS_EVERY_MS	200

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct method_count {
	uint64_t calls;
	uint64_t exits;
	char *name;
};

struct rec {
	struct ctl *c;
	struct bft_backend_rings *rings;	/* the backend's (bft_backend.h) */
	bool discarding;		/* what the last session left */
	uint64_t discarded;		/* bytes */
	uint64_t from_ns, until_ns;	/* the window counted; 0: open */
	struct bft_merge m;
	struct bft_calltree ct;
	uint32_t tgid;		/* 0: every process */
	bool events;
	struct method_count *mc;	/* by method id */
	size_t nmc;
	uint64_t lost, voids, first_ns;
	bool have_first;
	int err;
};

static struct method_count *method(struct rec *x, uint32_t id)
{
	if (id >= x->nmc) {
		size_t n = id + 64;
		struct method_count *p = realloc(x->mc, n * sizeof(*p));

		if (!p)
			return NULL;
		memset(p + x->nmc, 0, (n - x->nmc) * sizeof(*p));
		x->mc = p;
		x->nmc = n;
	}
	return &x->mc[id];
}

static int name_cb(const struct bft_nl_method *m, void *arg)
{
	struct method_count *mc = method(arg, m->method_id);

	if (!mc)
		return -ENOMEM;
	if (!mc->name || strcmp(mc->name, m->name)) {
		free(mc->name);
		mc->name = strdup(m->name);
	}
	return 0;
}

static void refresh_names(struct rec *x)
{
	int rc = ctl_get_methods(x->c, name_cb, x);

	if (rc)
		vlog(x->c, 1, "record: reading the method table: %s",
		     ctl_errmsg(x->c));
}

static const char *name_of(struct rec *x, uint32_t id, char *buf, size_t len)
{
	struct method_count *mc = method(x, id);

	if (mc && !mc->name)
		refresh_names(x);
	mc = method(x, id);
	if (mc && mc->name)
		return mc->name;
	snprintf(buf, len, "#%u", id);
	return buf;
}

/* A USDT hit's arguments, signed ones signed; "?" for an unreadable one. */
static void print_args(const struct bft_call_event *ev)
{
	out_arr_open("args");
	for (unsigned int i = 0; i < ev->nargs; i++) {
		if (ev->mark_unread >> i & 1)
			out_str_or_null(NULL, " ?", NULL);
		else if (ev->mark_signed >> i & 1)
			out_i64(NULL, " %lld", (int64_t)ev->args[i]);
		else
			out_u64(NULL, " %llu", ev->args[i]);
	}
	out_arr_close();
	out_text("\n");
}

static void print_event(struct rec *x, const struct bft_call_event *ev)
{
	static const char *const kinds[] = { "enter", "exit", "void", "throw",
					     "mark" };
	char buf[32];
	uint64_t t = ev->time_ns - x->first_ns;

	out_begin();
	out_u64("time_ns", "%12llu ns ", t);
	out_u64("tgid", "%llu/", ev->tgid);
	out_u64("tid", "%-8llu ", ev->tid);
	out_str("kind", NULL, kinds[ev->kind]);
	if (ev->kind == BFT_CALL_VOID) {
		out_u64("frames", "-- data break (%llu frames dropped)\n", ev->depth);
	} else {
		out_u64("depth", NULL, ev->depth);
		out_u64("id", NULL, ev->id);
		out_text("%*s%s ", (int)(2 * (ev->depth ? ev->depth - 1 : 0)), "",
			 ev->kind == BFT_CALL_ENTER ? ">" :
			 ev->kind == BFT_CALL_THROW ? "!" :
			 ev->kind == BFT_CALL_MARK ? "*" :
			 ev->unwound ? "<~" : "<");
		out_str("name", ev->kind == BFT_CALL_MARK ? "%s" : "%s\n",
			name_of(x, ev->id, buf, sizeof(buf)));
		if (ev->kind == BFT_CALL_MARK)
			print_args(ev);
	}
	out_end();
}

static int on_call(void *ctx, const struct bft_call_event *ev)
{
	struct rec *x = ctx;
	struct method_count *mc;

	if (x->tgid && ev->tgid != x->tgid)
		return 0;
	if (ev->time_ns < x->from_ns || (x->until_ns && ev->time_ns > x->until_ns))
		return 0;
	if (!x->have_first) {
		x->first_ns = ev->time_ns;
		x->have_first = true;
	}
	if (ev->kind == BFT_CALL_VOID) {
		x->voids++;
	} else {
		mc = method(x, ev->id);
		if (!mc)
			return -ENOMEM;
		if (ev->kind == BFT_CALL_ENTER || ev->kind == BFT_CALL_MARK)
			mc->calls++;
		else if (ev->kind == BFT_CALL_EXIT)
			mc->exits++;
	}
	if (x->events)
		print_event(x, ev);
	return 0;
}

static int on_record(void *ctx, const struct bft_record *r)
{
	struct rec *x = ctx;

	if (r->kind == BFT_REC_LOST)
		x->lost += r->value;
	return bft_calltree_feed(&x->ct, r);
}

/*
 * A reader that ended while a session ran (--duration, Ctrl-C) leaves the
 * rings between two SYNCs, and what follows cannot be decoded before the
 * next one: skip to it.  Anything else malformed stops the record.
 */
static int on_stream_error(void *ctx, const struct bft_stream_error *e)
{
	struct rec *x = ctx;

	if (e->code != BFT_SERR_BEFORE_SYNC)
		return BFT_STREAM_STOP;
	vlog(x->c, 1, "record: %s: skipping to the next SYNC (an earlier reader stopped there)",
	     e->msg);
	return BFT_STREAM_RESYNC;
}

static int on_data(unsigned int cpu, const void *data, size_t len, void *arg)
{
	struct rec *x = arg;
	int rc;

	if (x->discarding) {
		x->discarded += len;
		return 0;
	}
	rc = bft_merge_feed(&x->m, cpu, data, len);
	if (!rc)
		rc = bft_merge_run(&x->m);
	if (rc)
		x->err = rc;
	return rc;
}

static void print_counts(struct rec *x)
{
	char buf[32];

	out_begin();
	out_text("%12s %12s  %s\n", "calls", "exits", "method");
	out_arr_open("methods");
	for (uint32_t id = 0; id < x->nmc; id++) {
		if (!x->mc[id].calls && !x->mc[id].exits)
			continue;
		out_obj_open(NULL);
		out_u64("id", NULL, id);
		out_u64("calls", "%12llu", x->mc[id].calls);
		out_u64("exits", " %12llu", x->mc[id].exits);
		out_str("name", "  %s\n", name_of(x, id, buf, sizeof(buf)));
		out_obj_close();
	}
	out_arr_close();
	out_u64("lost", x->lost ? "lost events: %llu\n" : NULL, x->lost);
	out_u64("data_breaks", NULL, x->voids);
	out_end();
}

static int mode_now(struct ctl *c, uint8_t *mode)
{
	struct bft_nl_status st;
	int rc = ctl_get_status(c, &st);

	if (!rc) {
		*mode = st.mode;
		bft_nl_status_free(&st);
	}
	return rc;
}

static bool session_running(uint8_t mode)
{
	return mode == BFT_MODE_TRACING || mode == BFT_MODE_PAUSED ||
	       mode == BFT_MODE_SUSPENDED;
}

/* The rings: what is there after at most timeout_ms. */
static ssize_t rings_poll(struct rec *x, int timeout_ms)
{
	return x->c->be->rings_poll(x->rings, timeout_ms);
}

static ssize_t rings_drain(struct rec *x, int quiet_ms, int max_ms)
{
	return x->c->be->rings_drain(x->rings, quiet_ms, max_ms);
}

static const char *rings_errmsg(struct rec *x)
{
	return x->c->be->rings_errmsg(x->rings);
}

/*
 * The work a backend without timers leaves to its reader (the module's
 * flush timer): seal what lies below the watermark, so that it is read.
 */
static void rings_flush(struct rec *x)
{
	struct ctl *c = x->c;

	if (c->be->flush(c->beh, true) < 0)
		vlog(c, 1, "record: flush: %s", ctl_errmsg(c));
}

/*
 * No session runs: throw away what the last one left, then wait for the
 * next start.  Nothing is written between a stop and a start, and a start
 * writes a SYNC into every ring, so once the rings are empty the next
 * bytes are the next session's: they end the wait even when that session
 * was too short for a status poll to see it run.
 */
static int wait_next_session(struct rec *x, const struct bft_nl_opt *flush,
			     int64_t deadline_ms)
{
	struct ctl *c = x->c;
	int64_t last_status = 0;
	uint8_t mode;
	ssize_t n;
	int rc;

	x->discarding = true;
	n = rings_drain(x, (int)flush->value * 2 + 100, 10000);
	x->discarding = false;
	if (n < 0)
		vlog(c, 1, "record: discarding: %s", rings_errmsg(x));
	fprintf(stderr, "bfctl: record: no session is running%s; recording the next one "
		"(bfctl record --last reads what the last one left)\n",
		x->discarded ? ": discarded what the last one left" : "");
	vlog(c, 1, "record: discarded %" PRIu64 " bytes", x->discarded);
	while (!interrupted && !x->err) {
		int64_t t = bft_mono_ms();

		if (deadline_ms && t >= deadline_ms)
			return EXIT_OK;

		if (t - last_status >= STATUS_EVERY_MS) {
			rc = mode_now(c, &mode);
			if (rc)
				return ctl_nl_fail(c, "status", rc);
			if (session_running(mode))
				return EXIT_OK;
			last_status = t;
		}
		n = rings_poll(x, 50);
		if (n > 0)
			return EXIT_OK;
		if (n < 0 && !x->err) {
			err_msg("record: %s", rings_errmsg(x));
			return EXIT_FAIL;
		}
	}
	return EXIT_OK;
}

int cmd_record(struct ctl *c, int argc, char **argv)
{
	uint64_t duration = 0, pid = 0;
	struct rec x = { .c = c };
	bool last = false;
	const struct arg_def defs[] = {
		{ .name = "last", .short_name = 'l', .kind = ARG_FLAG,
		  .dest = &last,
		  .help = "read what the last session left in the rings, then exit" },
		{ .name = "events", .short_name = 'e', .kind = ARG_FLAG,
		  .dest = &x.events,
		  .help = "print every call (enter '>', exit '<') and USDT hit ('*') as it happened" },
		{ .name = "duration", .short_name = 'd', .kind = ARG_UINT,
		  .dest = &duration, .meta = "SEC", .min = 1,
		  .help = "stop after SEC seconds" },
		{ .name = "pid", .short_name = 'P', .kind = ARG_UINT, .dest = &pid,
		  .meta = "PID", .min = 1, .max = 0x7fffffff,
		  .help = "only the calls of this process" },
		ARG_END
	};
	struct bft_merge_opts mo = { .on_record = on_record, .ctx = &x,
				     .on_error = on_stream_error, .err_ctx = &x };
	struct bft_calltree_opts co = { .on_call = on_call, .ctx = &x };
	struct bft_nl_opt flush = { .value = 100 };
	int64_t t0, last_names = 0, last_status = 0, last_flush = 0;
	bool merge_ok = false, tree_ok = false, ended = false;
	char err[256];
	uint8_t mode;
	ssize_t n;
	int rc;

	rc = cmd_args(c, current_cmd, defs, argc, argv, ARGS_INTERLEAVED, NULL, NULL);
	if (rc >= 0)
		return rc;
	x.tgid = (uint32_t)pid;
	rc = ctl_connect(c, BFT_FEAT_READ);
	if (rc)
		return rc;
	if (ctl_get_opt(c, BFT_OPT_FLUSH_MS, &flush))
		vlog(c, 1, "record: flush interval unknown, assuming 100 ms");
	rc = c->be->rings_open(c->beh, &x.rings, NULL, c->caps.nr_cpus,
			       on_data, &x, err, sizeof(err));
	if (rc) {
		err_msg("record: %s", err);
		rc = rc == -ENOENT ? EXIT_NOMODULE : exit_for_errno(rc);
		goto out;
	}
	mo.ncpus = c->caps.nr_cpus;	/* a ring per CPU the backend has */
	if (bft_merge_init(&x.m, &mo) || bft_calltree_init(&x.ct, &co)) {
		err_msg("record: out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	merge_ok = tree_ok = true;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	rc = mode_now(c, &mode);
	if (rc) {
		rc = ctl_nl_fail(c, "status", rc);
		goto out;
	}
	/* --duration bounds the whole command, a wait for a start included */
	t0 = bft_mono_ms();
	if (!last && !session_running(mode)) {
		rc = wait_next_session(&x, &flush, duration ? t0 + (int64_t)duration * 1000 : 0);
		if (rc)
			goto out;
	}
	if (!last) {
		x.from_ns = bft_mono_ns();
		/* from here on, calls count: a script may wait for this line */
		fprintf(stderr, "bfctl: record: recording; %s ends it\n",
			duration ? "--duration" : "'bfctl stop' or Ctrl-C");
	}
	vlog(c, 2, "record: reading %u rings", mo.ncpus);
	while (!interrupted && !x.err) {
		int64_t t = bft_mono_ms();

		if (duration && t - t0 >= (int64_t)duration * 1000)
			break;
		if (t - last_names >= NAMES_EVERY_MS) {
			refresh_names(&x);
			last_names = t;
		}
		if (t - last_status >= STATUS_EVERY_MS) {
			rc = mode_now(c, &mode);
			if (rc) {
				rc = ctl_nl_fail(c, "status", rc);
				goto out;
			}
			if (mode == BFT_MODE_SHUTTING_DOWN) {
				ended = true;
				break;
			}
			last_status = t;
		}
		/* a backend without a flush timer of its own has its reader */
		if (c->be->flush && t - last_flush >= (int64_t)flush.value) {
			rings_flush(&x);
			last_flush = t;
		}
		n = rings_poll(&x, 50);
		if (n < 0 && !x.err) {
			err_msg("record: %s", rings_errmsg(&x));
			rc = EXIT_FAIL;
			goto out;
		}
	}
	/*
	 * What the flush timer seals last arrives within one interval.  A
	 * session that still runs never goes quiet: read what was sealed
	 * up to now, and count nothing later.
	 */
	if (!ended && !last)
		x.until_ns = bft_mono_ns();
	if (!x.err) {
		int quiet = (int)flush.value * 2 + 100;

		if (c->be->flush && !ended)
			c->be->flush(c->beh, true);
		n = rings_drain(&x, quiet, ended || last ? 10000 : quiet);
		if (n < 0 && !x.err)
			vlog(c, 1, "record: draining: %s", rings_errmsg(&x));
	}
	if (!x.err)
		x.err = bft_merge_drain(&x.m);
	if (x.err) {
		const struct bft_stream_error *e = NULL;

		for (uint32_t cpu = 0; cpu < mo.ncpus && !e; cpu++) {
			const struct bft_stream_error *se =
				bft_stream_last_error(bft_merge_stream(&x.m, cpu));

			if (se->code != BFT_SERR_NONE)
				e = se;
		}
		err_msg("record: decoding failed: %s", e ? e->msg : strerror(-x.err));
		rc = EXIT_FAIL;
		goto out;
	}
	if (!x.events)
		print_counts(&x);
	if (x.lost)
		err_msg("record: %" PRIu64 " events were lost (rings full): counts are short",
			x.lost);
	rc = EXIT_OK;
out:
	if (tree_ok)
		bft_calltree_free(&x.ct);
	if (merge_ok)
		bft_merge_free(&x.m);
	for (size_t i = 0; i < x.nmc; i++)
		free(x.mc[i].name);
	free(x.mc);
	if (x.rings)
		c->be->rings_close(x.rings);
	ctl_close(c);
	return rc;
}
