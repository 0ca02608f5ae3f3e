// SPDX-License-Identifier: GPL-2.0
/*
 * Where records come from, and where mode commands go.
 *
 * kernel  /dev/bftrace through bft_rings (one reader per CPU), commands and
 *         the method table through bft_nl, kernel events (mode changes,
 *         failed probes, targets leaving) from the events group.  Or the
 *         BPF backend (bft_bpf.h): its rings through libbpf's ring buffer,
 *         everything else from its pinned session; it has no events, and
 *         its flush work (seal, SYNC heartbeats) is done from here.
 * replay  a directory of recorded or synthetic streams: cpu0.bft,
 *         cpu1.bft, ... (one CPU stream each), "methods" (the method
 *         table, methods.c) and optionally "threads" ("tgid\ttid\tname"
 *         lines) and "exceptions" (the exception types, exceptions.c).  Mode commands drive a small simulation of the kernel's
 *         modes (bftrace.h section 1): nothing is read before start or
 *         while paused; records read while suspended are dropped, and the
 *         suspension is a data break, as the kernel's BREAK records are.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bft_bpf.h"
#include "bft_dev_status.h"
#include "bft_nl.h"
#include "bft_rings.h"
#include "bft_util.h"
#include "collector.h"

struct tname {
	uint32_t tgid, tid;
	char *name;
};

struct source {
	bool kernel;
	uint32_t ncpus;
	uint8_t mode;		/* enum bft_mode */
	bool draining;
	bool ended;
	/* kernel */
	struct bft_nl *nl, *ev;
	struct bft_rings *rings;
	struct bft_bpf *bpf;		/* the BPF backend instead of nl/rings */
	struct bft_bpf_rings *brings;
	bool discarding;	/* what an earlier session left */
	uint64_t discarded;	/* bytes */
	uint64_t next_flush_ms;
	uint32_t nr_targets;
	bool had_targets;
	uint64_t flush_ms;
	uint64_t next_refresh_ms;
	/* the periodic look at the method table: what the kernel's status
	 * said at the last full read, and when that was */
	uint32_t seen_probes, seen_targets;
	uint64_t full_read_ms;
	/* the module's status as last read, by anyone */
	uint32_t st_probes, st_targets;
	uint64_t st_ms;
	bool status_by_nl;	/* the module has no BFT_IOC_STATUS */
	uint64_t dumps, dump_ns, checks;	/* for -v */
	/* what the loop's poll said of the module's fds (source_woke());
	 * without it, source_read() looks at both */
	bool gated, ring_woke, ev_woke;
	int ring_slot, ev_slot;
	/* replay */
	int *fd;
	bool *eof;
	/* a FIFO with nothing to read: the loop polls it, never reads it
	 * blocking (a stalled writer must not stop HQ's heartbeats) */
	bool *waiting;
	bool *fifo;
	uint64_t next_read_ms;
	struct tname *names;
	uint32_t nnames;
	uint64_t *reads;	/* per CPU, for the counters */
};

bool source_is_kernel(const struct source *s)
{
	return s->kernel;
}

bool source_is_bpf(const struct source *s)
{
	return s->bpf != NULL;
}

uint8_t source_mode(struct coll *c)
{
	return c->src->mode;
}

/* ---- kernel ---- */

static bool session_running(uint8_t mode)
{
	return mode == BFT_MODE_TRACING || mode == BFT_MODE_PAUSED ||
	       mode == BFT_MODE_SUSPENDED;
}

static int method_cb(const struct bft_nl_method *m, void *arg)
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
	if ((m->flags & BFT_PF_GONE) && !session_running(c->src->mode))
		return 0;
	c->src->had_targets = true;
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

int source_refresh_methods(struct coll *c)
{
	struct source *s = c->src;
	uint64_t t0;
	int err;

	if (!s->kernel || c->o.methods_file)
		return 0;
	t0 = bft_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	c->methods.gen++;	/* what the dump does not name is detached */
	err = s->bpf ? bft_bpf_get_methods(s->bpf, method_cb, c) :
	      bft_nl_get_methods(s->nl, method_cb, c);
	if (err)
		coll_log("cannot read the method table: %s", s->bpf ?
			 bft_bpf_errmsg(s->bpf) : bft_nl_errmsg(s->nl));
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
#define REFRESH_SLACK_MS	100

/*
 * The module's status: through BFT_IOC_STATUS on a ring's file when the
 * rings are open (a netlink round trip costs several times as much, and
 * the counters ask ten times a second), else, or from a module without
 * the ioctl, over netlink.
 */
static int get_status(struct source *s, struct bft_nl_status *st)
{
	int fd = s->rings ? bft_rings_dev_fd(s->rings) : -1;
	int e;

	if (s->bpf)
		return bft_bpf_get_status(s->bpf, st);
	if (fd >= 0 && !s->status_by_nl) {
		e = bft_dev_status(fd, st);
		if (e != -ENOTTY)
			return e;
		s->status_by_nl = true;
	}
	return bft_nl_get_status(s->nl, st);
}

static void note_status(struct source *s, const struct bft_nl_status *st)
{
	s->st_probes = st->nr_probes;
	s->st_targets = st->nr_targets;
	s->st_ms = coll_now_ms();
}

static void look_at_methods(struct coll *c)
{
	struct source *s = c->src;
	struct bft_nl_status st;
	bool same;

	if (coll_now_ms() - s->full_read_ms >= METHODS_FULL_MS) {
		source_refresh_methods(c);
		return;
	}
	/* the counters' samples may have read it just now */
	if (coll_now_ms() - s->st_ms >= STATUS_FRESH_MS) {
		if (get_status(s, &st)) {
			source_refresh_methods(c);
			return;
		}
		note_status(s, &st);
		bft_nl_status_free(&st);
	}
	s->checks++;
	same = s->st_probes == s->seen_probes &&
	       s->st_targets == s->seen_targets;
	s->seen_probes = s->st_probes;
	s->seen_targets = s->st_targets;
	if (!same)
		source_refresh_methods(c);
}

static int exception_cb(const struct bft_nl_exception *e, void *arg)
{
	struct coll *c = arg;
	int err = exc_types_add(&c->exc, e->id, e->name);

	/* an id we keep for ourselves: its throws show as unknown */
	if (err == -EINVAL)
		coll_log("the kernel's exception type id %u is out of range",
			 e->id);
	return err == -ENOMEM ? err : 0;
}

int source_refresh_exceptions(struct coll *c)
{
	struct source *s = c->src;
	int err;

	/* the BPF backend has no exception hooks, so no types */
	if (!s->kernel || s->bpf)
		return 0;
	err = bft_nl_get_exceptions(s->nl, exception_cb, c);
	if (err)
		coll_log("cannot read the exception types: %s",
			 bft_nl_errmsg(s->nl));
	return err;
}

/*
 * A start forgets the probes of earlier sessions and numbers exception
 * types anew: the ids we learnt before may name other functions now.
 */
static void kernel_started(struct coll *c)
{
	if (!c->o.methods_file)
		methods_forget(&c->methods);
	exc_types_forget(&c->exc);
	source_refresh_methods(c);
	source_refresh_exceptions(c);
}

static void update_status(struct coll *c)
{
	struct source *s = c->src;
	struct bft_nl_status st = { 0 };

	if (get_status(s, &st))
		return;
	/* the BPF backend has no mode events: a start shows here */
	if (s->bpf && st.mode == BFT_MODE_TRACING &&
	    (s->mode == BFT_MODE_INITIALIZING ||
	     s->mode == BFT_MODE_SHUTTING_DOWN))
		kernel_started(c);
	s->mode = st.mode;
	s->nr_targets = st.nr_targets;
	if (st.nr_targets)
		s->had_targets = true;
	note_status(s, &st);
	bft_nl_status_free(&st);
}

static int ring_cb(unsigned int cpu, const void *data, size_t len, void *arg);

/*
 * The BPF backend when asked for, or (auto) when the module is not loaded:
 * the session bfctl made, or a new one.
 */
static bool want_bpf(const struct coll *c)
{
	const char *b = c->o.backend ? c->o.backend : getenv("BFT_BACKEND");

	if (b && !strcmp(b, "bpf"))
		return true;
	if (b && !strcmp(b, "kmod"))
		return false;
	return access("/sys/module/bftrace", F_OK) != 0;
}

static int open_bpf(struct coll *c, char *err, size_t errlen)
{
	struct source *s = c->src;
	struct bft_nl_caps caps;
	struct bft_nl_opt opt;
	int e;

	e = bft_bpf_open(&s->bpf, true, err, errlen);
	if (e)
		return e;
	if (*bft_bpf_notice(s->bpf))
		coll_log("%s", bft_bpf_notice(s->bpf));
	bft_bpf_get_caps(s->bpf, &caps);
	s->ncpus = caps.nr_cpus;
	s->flush_ms = 100;
	if (!bft_bpf_get_opt(s->bpf, BFT_OPT_FLUSH_MS, &opt))
		s->flush_ms = opt.value;
	e = bft_bpf_rings_open(s->bpf, &s->brings, ring_cb, c);
	if (e)
		snprintf(err, errlen, "BPF rings: %s", bft_bpf_errmsg(s->bpf));
	return e;
}

/*
 * With no session running, what the rings hold is an earlier session's,
 * whose method table may be gone already: a trace that starts now must
 * not carry it under unknown names.  'bfctl record --last' reads it.
 */
static void discard_leftovers(struct coll *c)
{
	struct source *s = c->src;
	int quiet = (int)s->flush_ms * 2 + 100;
	ssize_t n;

	s->discarding = true;
	n = s->brings ? bft_bpf_rings_drain(s->brings, quiet, 10000) :
	    bft_rings_drain(s->rings, quiet, 10000, ring_cb, c);
	s->discarding = false;
	if (n < 0)
		coll_log("discarding what an earlier session left: %s", s->brings ?
			 bft_bpf_errmsg(s->bpf) : bft_rings_errmsg(s->rings));
	if (s->discarded)
		coll_log("discarded %" PRIu64 " bytes an earlier session left in the rings (bfctl record --last reads them)",
			 s->discarded);
}

int source_open_kernel(struct coll *c, char *err, size_t errlen)
{
	struct source *s = calloc(1, sizeof(*s));
	struct bft_nl_caps caps;
	struct bft_nl_opt opt;
	int e;

	if (!s)
		return -ENOMEM;
	s->kernel = true;
	c->src = s;
	if (want_bpf(c)) {
		e = open_bpf(c, err, errlen);
		if (e)
			return e;
		coll_log("reading the BPF backend's rings (%s)",
			 bft_bpf_pin_dir());
		goto methods;
	}
	e = bft_nl_open(&s->nl, err, errlen);
	if (e)
		return e;
	e = bft_nl_get_caps(s->nl, &caps);
	if (e) {
		snprintf(err, errlen, "bftrace capabilities: %s",
			 bft_nl_errmsg(s->nl));
		return e;
	}
	s->ncpus = caps.nr_cpus;
	s->flush_ms = 100;
	if (!bft_nl_get_opt(s->nl, BFT_OPT_FLUSH_MS, &opt))
		s->flush_ms = opt.value;
	if (bft_nl_open_events(&s->ev, NULL, 0))
		coll_log("kernel events unavailable: failed probes and mode "
			 "changes are seen at heartbeats only");
	e = bft_rings_open(&s->rings, c->o.device, s->ncpus, err, errlen);
	if (e)
		return e;
methods:
	update_status(c);	/* the mode decides what a dump means */
	if (!session_running(s->mode))
		discard_leftovers(c);
	if (c->o.methods_file) {
		e = methods_load_file(&c->methods, c->o.methods_file);
		if (e) {
			snprintf(err, errlen, "bad method table %s",
				 c->o.methods_file);
			return e;
		}
	} else {
		e = source_refresh_methods(c);
		if (e) {
			snprintf(err, errlen, "method table: %s", s->bpf ?
				 bft_bpf_errmsg(s->bpf) : bft_nl_errmsg(s->nl));
			return e;
		}
	}
	return 0;
}

/*
 * A read can bring a flush interval of a busy CPU's records, a hundred
 * thousand and more.  Fed whole, they would all wait in the merge queue
 * (56 bytes each) for the other CPUs' streams, and the queue would leave
 * the cache, and the collector's own state with it.  Fed in slices with
 * the merge run between them, they go out as soon as the other CPUs'
 * streams allow, which the BPF reader helps by delivering the CPUs with
 * little to say first (bft_bpf.c, deliver()).  The main loop's run
 * reports what a run here fails with.
 */
#define FEED_SLICE 8192

static int ring_cb(unsigned int cpu, const void *data, size_t len, void *arg)
{
	struct coll *c = arg;
	const uint8_t *p = data;
	size_t off = 0;
	int e = 0;

	if (c->src->discarding) {
		c->src->discarded += len;
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

static void kernel_events(struct coll *c)
{
	struct source *s = c->src;
	struct bft_nl_event ev = { 0 };

	while (s->ev) {
		int e = bft_nl_event_recv(s->ev, &ev, 0);

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
			    (s->mode == BFT_MODE_INITIALIZING ||
			     s->mode == BFT_MODE_SHUTTING_DOWN))
				kernel_started(c);
			s->mode = ev.mode;
			/* probes attached before a start: learn them now */
			source_refresh_methods(c);
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
			update_status(c);
			break;
		default:
			break;
		}
		bft_nl_event_free(&ev);
	}
}

/* ---- replay ---- */

static int load_threads(struct source *s, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned int tgid, tid;
		int off = 0;
		struct tname *v;

		line[strcspn(line, "\r\n")] = 0;
		if (line[0] == '#' ||
		    sscanf(line, "%u\t%u\t%n", &tgid, &tid, &off) < 2 || !off)
			continue;
		v = realloc(s->names, (s->nnames + 1) * sizeof(*v));
		if (!v)
			break;
		s->names = v;
		v[s->nnames].tgid = tgid;
		v[s->nnames].tid = tid;
		v[s->nnames].name = strdup(line + off);
		s->nnames++;
	}
	free(line);
	fclose(f);
	return 0;
}

int source_open_replay(struct coll *c, char *err, size_t errlen)
{
	struct source *s = calloc(1, sizeof(*s));
	struct stat st;
	char path[4200];
	uint32_t n;
	int e;

	if (!s)
		return -ENOMEM;
	c->src = s;
	s->mode = BFT_MODE_INITIALIZING;
	for (n = 0;; n++) {
		snprintf(path, sizeof(path), "%s/cpu%u.bft", c->o.replay_dir, n);
		if (access(path, R_OK))
			break;
	}
	if (!n) {
		snprintf(err, errlen, "%s holds no cpu0.bft", c->o.replay_dir);
		return -ENOENT;
	}
	s->ncpus = n;
	s->fd = calloc(n, sizeof(*s->fd));
	s->eof = calloc(n, sizeof(*s->eof));
	s->waiting = calloc(n, sizeof(*s->waiting));
	s->fifo = calloc(n, sizeof(*s->fifo));
	if (!s->fd || !s->eof || !s->waiting || !s->fifo)
		return -ENOMEM;
	for (n = 0; n < s->ncpus; n++) {
		snprintf(path, sizeof(path), "%s/cpu%u.bft", c->o.replay_dir, n);
		/* non-blocking: a FIFO's open would wait for its writer */
		s->fd[n] = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (s->fd[n] < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return -errno;
		}
		s->fifo[n] = !fstat(s->fd[n], &st) && S_ISFIFO(st.st_mode);
	}
	snprintf(path, sizeof(path), "%s/methods", c->o.replay_dir);
	e = methods_load_file(&c->methods, c->o.methods_file ?
				      c->o.methods_file : path);
	if (e) {
		snprintf(err, errlen, "bad method table");
		return e;
	}
	snprintf(path, sizeof(path), "%s/exceptions", c->o.replay_dir);
	e = exc_types_load_file(&c->exc, path);
	if (e) {
		snprintf(err, errlen, "bad exception table %s", path);
		return e;
	}
	snprintf(path, sizeof(path), "%s/threads", c->o.replay_dir);
	e = load_threads(s, c->o.threads_file ? c->o.threads_file : path);
	if (e) {
		snprintf(err, errlen, "cannot read thread names: %s",
			 strerror(-e));
		return e;
	}
	return 0;
}

/*
 * The CPUs' chunks are fed a slice at a time, every CPU in turn, with a
 * merge after each turn: the merge then holds a few slices of records,
 * which stay in the cache, instead of a whole chunk of every CPU.  Its
 * output does not depend on how the input was cut, nor does what is sent:
 * the loop's other work comes after the read either way.
 */
#define REPLAY_SLICE	4096

static int replay_feed(struct coll *c, const uint8_t *buf, size_t *len)
{
	struct source *s = c->src;
	size_t chunk = c->o.replay_chunk, off;
	bool more = true, merge = true;
	uint32_t n;

	for (off = 0; more; off += REPLAY_SLICE) {
		more = false;
		for (n = 0; n < s->ncpus; n++) {
			size_t k = len[n] - off;
			int e;

			if (len[n] <= off)
				continue;
			if (k > REPLAY_SLICE)
				k = REPLAY_SLICE;
			e = bft_merge_feed(&c->merge, n, buf + n * chunk + off,
					   k);
			if (e == -EPROTO) {
				coll_log("cpu %u: %s", n,
					 bft_stream_last_error(
						 bft_merge_stream(&c->merge, n))
						 ->msg);
				len[n] = 0;	/* its decoder has stopped */
			} else if (e) {
				return e;
			}
			more |= len[n] > off + k;
		}
		/* a failed merge is the loop's to report, after the read */
		if (more && merge && pipeline_run(c))
			merge = false;
	}
	return 0;
}

/*
 * An empty FIFO reads 0 both before its writer came and after it left;
 * only the latter is its end, and poll tells it apart (POLLHUP).
 */
static bool writer_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

static int replay_read(struct coll *c)
{
	struct source *s = c->src;
	size_t chunk = c->o.replay_chunk, *len;
	uint8_t *buf;
	uint32_t n, open = 0;
	uint64_t now = coll_now_ms();
	int err;

	if (now < s->next_read_ms)
		return 0;
	s->next_read_ms = now + c->o.replay_delay_ms;
	buf = malloc(s->ncpus * chunk);
	len = calloc(s->ncpus, sizeof(*len));
	if (!buf || !len) {
		free(buf);
		free(len);
		return -ENOMEM;
	}
	for (n = 0; n < s->ncpus; n++) {
		ssize_t r;

		if (s->eof[n])
			continue;
		r = read(s->fd[n], buf + n * chunk, chunk);
		s->waiting[n] = false;
		if (r > 0) {
			len[n] = (size_t)r;
			if (s->reads)
				s->reads[n]++;
			open++;
			continue;
		}
		if ((r < 0 && (errno == EAGAIN || errno == EINTR)) ||
		    (!r && s->fifo[n] && !writer_gone(s->fd[n]))) {
			s->waiting[n] = true;
			open++;
			continue;
		}
		if (r < 0)
			coll_log("cpu %u: read: %s", n, strerror(errno));
		s->eof[n] = true;
		bft_merge_close(&c->merge, n);
	}
	err = replay_feed(c, buf, len);
	free(buf);
	free(len);
	if (err)
		return err;
	return open ? 0 : 1;
}

/* ---- both ---- */

/* Lower *timeout_ms so that the poll ends by at_ms. */
int source_pollfds(struct source *s, struct pollfd *p, int max,
		   int *timeout_ms)
{
	int n = 0, fd;

	if (s->kernel && !s->bpf) {
		/*
		 * Sleep until a ring is readable (a watermark's worth, or what
		 * the flush timer sealed) or the kernel says something: an idle
		 * collector must not wake to look at empty rings.
		 */
		s->ring_slot = s->ev_slot = -1;
		fd = s->draining ? -1 : bft_rings_wait_fd(s->rings);
		if (fd >= 0 && n < max) {
			s->ring_slot = n;
			p[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
		}
		fd = s->ev ? bft_nl_fd(s->ev) : -1;
		if (fd >= 0 && n < max) {
			s->ev_slot = n;
			p[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
		}
		/*
		 * The look at the method table takes a wake-up that comes
		 * anyway (a sample, the tick) when one comes within
		 * REFRESH_SLACK_MS of it being due.  Without fds to sleep on,
		 * look at the rings every 20 ms.
		 */
		if (s->mode == BFT_MODE_TRACING)
			coll_wait_until(s->next_refresh_ms + REFRESH_SLACK_MS,
					timeout_ms);
		if (!n && (*timeout_ms < 0 || *timeout_ms > 20))
			*timeout_ms = 20;
		return n;
	}
	if (s->kernel) {
		/*
		 * A BPF ring wakes us only when it crosses its watermark;
		 * below that it is read at each flush (bpf_read()).
		 */
		if (!s->draining && n < max)
			p[n++] = (struct pollfd){
				.fd = bft_bpf_rings_fd(s->brings),
				.events = POLLIN };
		if (bft_bpf_rings_behind(s->brings))
			*timeout_ms = 0;
		coll_wait_until(s->next_flush_ms, timeout_ms);
		coll_wait_until(s->next_refresh_ms, timeout_ms);
		return n;
	}
	if (!s->ended && !s->draining &&
	    (s->mode == BFT_MODE_TRACING || s->mode == BFT_MODE_SUSPENDED)) {
		bool timer = false;
		uint32_t i;

		/* a waiting FIFO wakes us; files are read on the timer */
		for (i = 0; i < s->ncpus; i++) {
			if (s->eof[i])
				continue;
			if (s->waiting[i] && n < max)
				p[n++] = (struct pollfd){ .fd = s->fd[i],
							  .events = POLLIN };
			else
				timer = true;
		}
		if (timer)
			coll_wait_until(s->next_read_ms, timeout_ms);
		/* more FIFOs waiting than slots: look again soon */
		for (i = 0; i < s->ncpus && timer; i++)
			if (s->waiting[i] && !s->eof[i] &&
			    (*timeout_ms < 0 || *timeout_ms > 20))
				*timeout_ms = 20;
	}
	return n;
}

void source_woke(struct source *s, const struct pollfd *p, int n)
{
	int r = s->ring_slot, e = s->ev_slot;

	/* only a wait on both of the module's fds says where nothing is */
	s->ring_slot = s->ev_slot = -1;
	s->gated = s->kernel && !s->bpf && r >= 0 && e >= 0 && r < n && e < n;
	if (s->gated) {
		s->ring_woke = p[r].revents != 0;
		s->ev_woke = p[e].revents != 0;
	}
}

/* source_read() for the BPF backend, which is its own flush timer. */
static int bpf_read(struct coll *c)
{
	struct source *s = c->src;
	ssize_t n;
	bool due;

	if (s->draining) {
		n = bft_bpf_rings_drain(s->brings, (int)(2 * s->flush_ms + 50),
					5000);
		if (n < 0 && n != -ETIME)
			coll_log("draining the BPF rings: %s",
				 bft_bpf_errmsg(s->bpf));
		s->ended = true;
		return 1;
	}
	due = coll_now_ms() >= s->next_flush_ms;
	if (due) {
		s->next_flush_ms = coll_now_ms() + s->flush_ms;
		if (bft_bpf_flush(s->bpf, s->mode == BFT_MODE_TRACING ||
				  s->mode == BFT_MODE_PAUSED))
			coll_log("BPF flush: %s", bft_bpf_errmsg(s->bpf));
	}
	if (coll_now_ms() >= s->next_refresh_ms) {
		s->next_refresh_ms = coll_now_ms() + 250;
		if (s->mode == BFT_MODE_TRACING)
			look_at_methods(c);
	}
	/* every flush, every wakeup, and before a ring can overflow */
	if (!due && bft_bpf_rings_woken(s->brings) <= 0 &&
	    !bft_bpf_rings_behind(s->brings))
		return 0;
	n = bft_bpf_rings_poll(s->brings, 0);
	if (n < 0 && n != -EINTR) {
		coll_log("reading the BPF rings: %s", bft_bpf_errmsg(s->bpf));
		return (int)n;
	}
	return 0;
}

int source_read(struct coll *c)
{
	struct source *s = c->src;

	if (s->ended)
		return 1;
	if (s->kernel) {
		/* what the poll said is true once: an empty ring or event
		 * socket costs no system call */
		bool gated = s->gated;
		ssize_t n;

		s->gated = false;
		if (!gated || s->ev_woke)
			kernel_events(c);
		if (s->bpf)
			return bpf_read(c);
		if (s->draining) {
			/* after stop: take what the flush timer seals */
			n = bft_rings_drain(s->rings, (int)(2 * s->flush_ms + 50),
					    5000, ring_cb, c);
			if (n < 0 && n != -ETIME)
				coll_log("draining the rings: %s",
					 bft_rings_errmsg(s->rings));
			s->ended = true;
			return 1;
		}
		/*
		 * A probe's name must be read while it is attached: a target
		 * that exits takes its probes (and their names) with it.
		 */
		if (coll_now_ms() >= s->next_refresh_ms) {
			s->next_refresh_ms = coll_now_ms() + 250;
			if (s->mode == BFT_MODE_TRACING)
				look_at_methods(c);
		}
		if (gated && !s->ring_woke)
			return 0;
		n = bft_rings_poll(s->rings, 0, ring_cb, c);
		if (n < 0 && n != -EINTR) {
			coll_log("reading the rings: %s",
				 bft_rings_errmsg(s->rings));
			return (int)n;
		}
		return 0;
	}
	if (s->draining) {
		s->ended = true;
		return 1;
	}
	if (s->mode != BFT_MODE_TRACING && s->mode != BFT_MODE_SUSPENDED)
		return 0;
	if (replay_read(c) == 1) {
		s->ended = true;
		return 1;
	}
	return 0;
}

void source_drain(struct coll *c)
{
	c->src->draining = true;
}

/* The kernel's mode rules (bftrace.h section 1), for replay. */
static int sim_mode_cmd(struct coll *c, int cmd)
{
	struct source *s = c->src;
	uint8_t m = s->mode, to;

	switch (cmd) {
	case BFT_CMD_START:
		if (m != BFT_MODE_INITIALIZING && m != BFT_MODE_SHUTTING_DOWN)
			return -EINVAL;
		to = BFT_MODE_TRACING;
		break;
	case BFT_CMD_STOP:
		to = BFT_MODE_SHUTTING_DOWN;
		break;
	case BFT_CMD_PAUSE:
		if (m != BFT_MODE_TRACING)
			return -EINVAL;
		to = BFT_MODE_PAUSED;
		break;
	case BFT_CMD_UNPAUSE:
		if (m != BFT_MODE_PAUSED)
			return -EINVAL;
		to = BFT_MODE_TRACING;
		break;
	case BFT_CMD_SUSPEND:
		if (m != BFT_MODE_TRACING)
			return -EINVAL;
		to = BFT_MODE_SUSPENDED;
		break;
	case BFT_CMD_UNSUSPEND:
		if (m != BFT_MODE_SUSPENDED)
			return -EINVAL;
		to = BFT_MODE_TRACING;
		break;
	default:
		return -EINVAL;
	}
	s->mode = to;
	/* set here, where the replay's mode changes: feeds emit too */
	c->replay_suspended = to == BFT_MODE_SUSPENDED;
	/* What the kernel's BREAK records do: stacks are void from here. */
	if (cmd == BFT_CMD_SUSPEND)
		pipeline_break(c);
	return 0;
}

int source_mode_cmd(struct coll *c, int cmd)
{
	struct source *s = c->src;
	uint8_t mode;
	int e;

	if (!s->kernel)
		return sim_mode_cmd(c, cmd);
	/*
	 * Finishing already (every target gone, or a signal): take what was
	 * recorded first, so that the stop's BREAK, written after the last
	 * event, is not read as a break in the trace.
	 */
	if (cmd == BFT_CMD_STOP && s->draining && !s->ended)
		source_read(c);
	e = s->bpf ? bft_bpf_mode_cmd(s->bpf, cmd, &mode) :
	    bft_nl_mode_cmd(s->nl, cmd, &mode);
	if (e) {
		coll_log("kernel refused %s: %s", bft_cmd_name(cmd), s->bpf ?
			 bft_bpf_errmsg(s->bpf) : bft_nl_errmsg(s->nl));
		return e;
	}
	s->mode = mode;
	if (cmd == BFT_CMD_START) {
		if (s->rings)
			bft_rings_rearm(s->rings);
		kernel_started(c);
	}
	return 0;
}

void source_tick(struct coll *c)
{
	struct source *s = c->src;

	if (!s->kernel)
		return;
	kernel_events(c);
	update_status(c);
	look_at_methods(c);
	/* a type first named "exception type N" gets its name; a start
	 * numbers the types anew */
	source_refresh_exceptions(c);
}

void source_log_costs(struct coll *c)
{
	struct source *s = c->src;

	if (!s->kernel)
		return;
	coll_log("method table read %" PRIu64 " times (%" PRIu64 " us CPU "
		 "each), %" PRIu64 " looks at the status found no change",
		 s->dumps, s->dumps ? s->dump_ns / s->dumps / 1000 : 0,
		 s->checks);
}

bool source_targets_gone(struct coll *c)
{
	struct source *s = c->src;

	return s->kernel && s->had_targets && !s->nr_targets;
}

char *source_thread_name(struct coll *c, uint32_t tgid, uint32_t tid)
{
	struct source *s = c->src;
	char path[64], comm[64];
	uint32_t i;
	ssize_t n;
	int fd;

	if (!s->kernel) {
		for (i = 0; i < s->nnames; i++)
			if (s->names[i].tgid == tgid && s->names[i].tid == tid)
				return strdup(s->names[i].name);
		return NULL;
	}
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

void source_close(struct source *s)
{
	uint32_t i;

	if (!s)
		return;
	if (s->rings)
		bft_rings_close(s->rings);
	bft_bpf_rings_close(s->brings);
	bft_bpf_close(s->bpf);
	if (s->ev)
		bft_nl_close(s->ev);
	if (s->nl)
		bft_nl_close(s->nl);
	for (i = 0; s->fd && i < s->ncpus; i++)
		if (s->fd[i] > 0)
			close(s->fd[i]);
	free(s->fd);
	free(s->eof);
	free(s->waiting);
	free(s->fifo);
	for (i = 0; i < s->nnames; i++)
		free(s->names[i].name);
	free(s->names);
	free(s->reads);
	free(s);
}

uint32_t source_ncpus(struct source *s)
{
	return s->ncpus;
}

int source_stats(struct coll *c, struct source_stats *st)
{
	struct source *s = c->src;
	struct bft_nl_status ks = { 0 };
	uint32_t i;
	int e;

	if (!s->reads) {
		s->reads = calloc(s->ncpus ? s->ncpus : 1, sizeof(*s->reads));
		if (!s->reads)
			return -ENOMEM;
	}
	memset(st->cpu, 0, s->ncpus * sizeof(*st->cpu));
	st->hits = st->lost = 0;
	if (!s->kernel) {
		/* the streams tell what a ring would have held */
		st->mode = s->mode;
		st->probes = c->methods.count;
		st->targets = 0;
		for (i = 0; i < s->ncpus; i++) {
			const struct bft_stream_stats *ss =
				bft_stream_stats(bft_merge_stream(&c->merge, i));

			st->cpu[i].records = ss->events;
			st->cpu[i].lost = ss->lost;
			st->cpu[i].reads = s->reads[i];
			st->hits += ss->events;
			st->lost += ss->lost;
		}
		return 0;
	}
	e = get_status(s, &ks);
	if (e)
		return e;
	note_status(s, &ks);
	st->mode = ks.mode;
	st->probes = ks.nr_probes;
	st->targets = ks.nr_targets;
	for (i = 0; i < ks.nr_cpus; i++) {
		const struct bft_nl_cpu_stats *k = &ks.cpus[i];

		st->hits += k->produced + k->suspended;
		st->lost += k->lost;
		if (k->cpu >= s->ncpus)
			continue;
		st->cpu[k->cpu].used = k->used;
		st->cpu[k->cpu].records = k->produced;
		st->cpu[k->cpu].lost = k->lost;
	}
	for (i = 0; i < s->ncpus; i++)
		st->cpu[i].reads = s->reads[i];
	bft_nl_status_free(&ks);
	return 0;
}
