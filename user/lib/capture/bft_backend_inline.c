// SPDX-License-Identifier: GPL-2.0
/*
 * The inline backend as a capture backend (bft_backend.h): the table of
 * operations over the registry (bfi_session.h), the patcher (bfi_patch.h)
 * and the reader (bfi_rings.h), with the values and errnos of bft_nl.h.
 * It sends no events; its streams are the slots of its targets
 * (BFI_STREAMS "CPUs"), and its reader declares idle streams itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "capture/bft_backend.h"
#include "inline/bfi_patch.h"
#include "inline/bfi_rings.h"
#include "inline/bfi_session.h"
#include "../../../kmod/bft_rules.h"

#define INLINE_FEATURES (BFT_FEAT_ENTRY | BFT_FEAT_RETURN | BFT_FEAT_NORET | \
			 BFT_FEAT_PAUSE | BFT_FEAT_SUSPEND | BFT_FEAT_UNWIND | \
			 BFT_FEAT_OWNER | BFT_FEAT_ATTACH_PERSIST)

struct bft_backend_rings {
	struct bfi_rings *r;
	int reader_fd;		/* flock held: the status says a reader is */
};

static int inline_open(void **h, enum bft_backend_open how, char *err,
		       size_t errlen)
{
	struct bfi_session *s = NULL;
	int e = bfi_session_open(&s, how != BFT_BACKEND_EXISTING, err,
				 errlen);

	*h = s;
	if (!e && bfi_session_owner_reap(s))
		snprintf(err, errlen, "%s", bfi_session_errmsg(s));
	return e;
}

static void inline_close(void *h)
{
	bfi_session_close(h);
}

static const char *inline_errmsg(const void *h)
{
	return h ? bfi_session_errmsg(h) : "";
}

static const char *inline_notice(const void *h)
{
	const struct bfi_session *s = h;

	return s ? s->notice : "";
}

static bool inline_absent(int e)
{
	return e == -ENOSYS;
}

static const char *inline_open_subject(int e)
{
	(void)e;
	return "inline backend";
}

static void inline_describe(const void *h, char *buf, size_t len)
{
	const struct bfi_session *s = h;

	snprintf(buf, len, "inline backend, registry %s (%zu targets)",
		 bfi_session_dir(), s ? s->ntargets : 0);
}

static int inline_get_caps(void *h, struct bft_nl_caps *caps)
{
	(void)h;
	memset(caps, 0, sizeof(*caps));
	caps->proto_version = BFT_PROTO_VERSION;
	caps->features = INLINE_FEATURES;
	caps->nr_cpus = BFI_STREAMS;
	caps->limits.max_targets = BFI_MAX_TARGETS;
	caps->limits.max_probes = bft_opt_rule(BFT_OPT_MAX_PROBES)->max;
	caps->limits.name_max = BFT_NAME_MAX;
	caps->limits.path_max = BFT_PATH_MAX;
	caps->limits.uretprobe_depth = BFI_SHADOW_DEPTH;
	return 0;
}

static int inline_attach(void *h, uint32_t tgid, const struct bft_nl_probe *p,
			 size_t n, int *results)
{
	struct bfi_session *s = h;
	char why[sizeof(s->err)];
	int e = bfi_session_lock(s);

	if (e)
		return e;
	if (bfi_session_probes(s) + n > s->st.opts[BFT_OPT_MAX_PROBES])
		e = bfi_session_err(s, -ENOSPC, "more than %llu probes",
				    (unsigned long long)
				    s->st.opts[BFT_OPT_MAX_PROBES]);
	else if ((e = bfi_patch_attach(s, tgid, p, n, results, why,
				       sizeof(why))))
		bfi_session_err(s, e, "%s", why);
	bfi_session_unlock(s);
	return e;
}

static int inline_detach(void *h, uint32_t tgid)
{
	struct bfi_session *s = h;
	char why[sizeof(s->err)];
	int e = bfi_session_lock(s);

	if (e)
		return e;
	if (tgid && !bfi_session_target(s, tgid))
		e = bfi_session_err(s, -ENOENT, "process %u is not traced",
				    tgid);
	/*
	 * The code goes back now; the record stays, as the module keeps a
	 * detached probe's method until the next start, so that a reader
	 * still drains the target's rings and names its methods.
	 */
	for (size_t i = 0; !e && i < s->ntargets; i++) {
		uint32_t t = s->targets[i].tgid;

		if (tgid && t != tgid)
			continue;
		e = bfi_patch_detach(s, t, why, sizeof(why));
		if (e)
			bfi_session_err(s, e, "process %u: %s", t, why);
	}
	bfi_session_unlock(s);
	return e;
}

static int inline_start(void *h, bool persist, uint8_t *mode)
{
	struct bfi_session *s = h;
	struct bft_owner self;
	int e;

	if (!persist && bft_owner_self(&self))
		return bfi_session_err(s, -ENOENT, "/proc is needed to own a "
				       "session: start it with persist");
	e = bfi_session_set_mode(s, BFT_CMD_START, persist ? NULL : &self,
				 mode);
	if (e || persist)
		return e;
	s->own = true;
	bfi_session_guard_start(s);
	return 0;
}

static int inline_mode_cmd(void *h, int cmd, uint8_t *mode)
{
	if (cmd == BFT_CMD_START)
		return inline_start(h, false, mode);
	return bfi_session_set_mode(h, cmd, NULL, mode);
}

/* Whether a reader holds the registry's reader lock. */
static bool inline_reader_held(const struct bfi_session *s)
{
	char p[PATH_MAX + 8];
	bool held = false;
	int fd;

	snprintf(p, sizeof(p), "%s/reader", s->dir);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB))
		held = errno == EWOULDBLOCK;
	close(fd);
	return held;
}

static int mem_read(int fd, uint64_t addr, void *buf, size_t len)
{
	return pread(fd, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EIO;
}

static int mem_open(uint32_t tgid)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%u/mem", tgid);
	return open(p, O_RDONLY | O_CLOEXEC);
}

/* One target's slots into st->cpus; what the area says is only shown. */
static void status_target(const struct bfi_target *t, bool reader,
			  struct bft_nl_status *st)
{
	uint64_t no_slot = 0;
	int fd = mem_open(t->tgid);

	if (fd < 0)
		return;
	mem_read(fd, t->area + offsetof(struct bfi_area, no_slot), &no_slot,
		 sizeof(no_slot));
	for (uint32_t i = 0; i < t->nslots && i < BFI_NSLOTS; i++) {
		uint64_t base = t->area + BFI_SLOTS_OFF +
				(uint64_t)i * BFI_SLOT_SIZE(t->ring_size);
		struct bft_nl_cpu_stats *c = &st->cpus[st->nr_cpus];
		struct bfi_slot sl;

		if (mem_read(fd, base, &sl, offsetof(struct bfi_slot,
						     evicted)) || !sl.tp) {
			if (i || !no_slot)
				continue;
			memset(&sl, 0, sizeof(sl));
		}
		c->cpu = t->index * BFI_NSLOTS + i;
		c->produced = sl.produced;
		c->written = sl.written;
		/* nested hits and threads without a slot are lost too */
		c->lost = sl.lost + sl.nested + (i ? 0 : no_slot);
		c->suspended = sl.suspended;
		c->bytes_written = sl.head;
		c->bytes_read = sl.tail;
		c->used = sl.head - sl.tail > t->ring_size ? t->ring_size :
			  (uint32_t)(sl.head - sl.tail);
		c->size = t->ring_size;
		c->reader = reader;
		c->have = ~0u;
		st->nr_cpus++;
	}
	close(fd);
}

static int inline_get_status(void *h, struct bft_nl_status *st)
{
	struct bfi_session *s = h;
	int e = bfi_session_lock(s);
	bool reader;

	memset(st, 0, sizeof(*st));
	if (e)
		return e;
	st->cpus = calloc(BFI_STREAMS, sizeof(*st->cpus));
	if (!st->cpus) {
		bfi_session_unlock(s);
		return -ENOMEM;
	}
	st->mode = s->st.mode;
	st->owner = s->st.owner.tgid;
	st->nr_probes = bfi_session_probes(s);
	reader = inline_reader_held(s);
	for (size_t i = 0; i < s->ntargets; i++) {
		if (s->targets[i].gone)
			continue;	/* kept for its methods' names */
		st->nr_targets++;
		status_target(&s->targets[i], reader, st);
	}
	st->have = ~0u;
	bfi_session_unlock(s);
	return 0;
}

/* The options the inline backend implements. */
static bool opt_supported(uint32_t id)
{
	return id == BFT_OPT_BUF_SIZE || id == BFT_OPT_FLUSH_MS ||
	       id == BFT_OPT_MAX_DEPTH || id == BFT_OPT_TIME_RES_NS ||
	       id == BFT_OPT_MAX_PROBES;
}

static int opt_check(struct bfi_session *s, uint32_t id)
{
	if (!id || id > BFT_OPT_MAX)
		return bfi_session_err(s, -ENOENT, "unknown option %u", id);
	if (!opt_supported(id))
		return bfi_session_err(s, -EOPNOTSUPP, "option %u is not "
				       "supported by the inline backend", id);
	return 0;
}

static void opt_fill(const struct bfi_session *s, uint32_t id,
		     struct bft_nl_opt *o)
{
	o->id = id;
	o->value = s->st.opts[id];
	o->min = bft_opt_rule(id)->min;
	o->max = bft_opt_rule(id)->max;
	o->flags = bft_opt_rule(id)->flags;
}

static int inline_get_opt(void *h, uint32_t id, struct bft_nl_opt *out)
{
	int e = opt_check(h, id);

	if (!e)
		opt_fill(h, id, out);
	return e;
}

static int inline_get_opts(void *h, struct bft_nl_opt *out, size_t cap,
			   size_t *n)
{
	*n = 0;
	for (uint32_t id = 1; id <= BFT_OPT_MAX; id++) {
		if (!opt_supported(id))
			continue;
		if (*n < cap)
			opt_fill(h, id, &out[*n]);
		(*n)++;
	}
	return 0;
}

static int opt_set(struct bfi_session *s, uint32_t id, uint64_t val,
		   struct bft_nl_opt *out)
{
	const struct bft_opt_rule *r = bft_opt_rule(id);
	unsigned int probes = bfi_session_probes(s);

	switch (bft_opt_refusal(id, val, s->st.mode, probes)) {
	case BFT_OPT_OK:
		break;
	case BFT_OPT_OUT_OF_RANGE:
		return bfi_session_err(s, -ERANGE, BFT_OPT_RANGE_FMT, id,
				       (unsigned long long)val, r->min, r->max,
				       r->flags & BFT_OPTF_POW2 ?
				       " or not a power of 2" : "");
	case BFT_OPT_BUSY:
		return bfi_session_err(s, -EBUSY, BFT_OPT_BUSY_FMT, id,
				       probes ? "probes are attached" :
				       bft_mode_str(s->st.mode));
	case BFT_OPT_BELOW_PROBES:
		return bfi_session_err(s, -ERANGE, BFT_OPT_PROBES_FMT, probes);
	}
	s->st.opts[id] = val;
	if (out)
		opt_fill(s, id, out);
	return bfi_session_save(s);
}

static int inline_set_opt(void *h, uint32_t id, uint64_t val,
			  struct bft_nl_opt *out)
{
	struct bfi_session *s = h;
	int e = opt_check(s, id);

	if (!e)
		e = bfi_session_lock(s);
	if (e)
		return e;
	e = opt_set(s, id, val, out);
	bfi_session_unlock(s);
	return e;
}

static int inline_get_methods(void *h, bft_nl_method_cb cb, void *arg)
{
	struct bfi_session *s = h;
	int e = bfi_session_lock(s);

	if (e)
		return e;
	for (size_t i = 0; !e && i < s->ntargets; i++) {
		const struct bfi_target *t = &s->targets[i];
		int fd = mem_open(t->tgid);

		for (size_t j = 0; !e && j < t->nmethods &&
		     j < BFI_MAX_METHODS; j++) {
			const struct bfi_method_rec *r = &t->methods[j];
			struct bft_nl_method m = {
				.tgid = t->tgid, .method_id = r->id,
				.path = r->path ? r->path : "",
				.offset = r->offset, .flags = r->flags & ~BFI_MF_DRAIN,
				.name = r->name ? r->name : "",
			};

			if (fd >= 0)
				mem_read(fd, t->area + BFI_METHODS_OFF + j *
					 sizeof(struct bfi_method) +
					 offsetof(struct bfi_method, hits),
					 &m.hits, sizeof(m.hits));
			e = cb(&m, arg);
		}
		if (fd >= 0)
			close(fd);
	}
	bfi_session_unlock(s);
	return e;
}

struct exc_relay {
	uint32_t tgid;
	bft_nl_exception_cb cb;
	void *arg;
};

static int exc_relay_one(uint32_t id, const char *name, void *arg)
{
	const struct exc_relay *x = arg;
	struct bft_nl_exception ex = { .tgid = x->tgid, .id = id,
				       .name = name };

	return x->cb(&ex, x->arg);
}

/*
 * The area's table: names the recorder copied in, no pointer followed.
 * A target that ended: the names this process's reader copied while it
 * lived.
 */
static int inline_get_exceptions(void *h, bft_nl_exception_cb cb, void *arg)
{
	struct bfi_session *s = h;
	int e = bfi_session_lock(s);

	if (e)
		return e;
	for (size_t i = 0; !e && i < s->ntargets; i++) {
		const struct bfi_target *t = &s->targets[i];
		int fd = t->gone ? -1 : mem_open(t->tgid);

		if (fd < 0) {
			struct exc_relay x = { t->tgid, cb, arg };

			e = bfi_rings_exc_names(t->tgid, exc_relay_one, &x);
			continue;
		}

		for (uint32_t j = 0; fd >= 0 && !e && j < BFI_MAX_EXC; j++) {
			struct bfi_exc x;
			struct bft_nl_exception ex;

			if (mem_read(fd, t->area + BFI_EXC_OFF + j * sizeof(x),
				     &x, sizeof(x)) || !x.tinfo)
				break;	/* claimed in order: the rest is free */
			if (x.ready != 1)
				continue;
			x.name[sizeof(x.name) - 1] = 0;
			ex.tgid = t->tgid;
			ex.id = j + 1;
			ex.name = x.name;
			e = cb(&ex, arg);
		}
		if (fd >= 0)
			close(fd);
	}
	bfi_session_unlock(s);
	return e;
}

/* The reader's own work: a dead owner ends the session, dead targets go. */
static int inline_flush(void *h, bool heartbeat)
{
	struct bfi_session *s = h;
	int e;

	(void)heartbeat;	/* the reader declares idle rings itself */
	/* loading reaps the dead; an attach holding the lock: next time */
	s->nowait = true;
	e = bfi_session_lock(s);
	s->nowait = false;
	if (e == -EWOULDBLOCK)
		return 0;
	if (e)
		return e;
	bfi_session_unlock(s);
	return bfi_session_owner_reap(s);
}

static int inline_rings_open(void *h, struct bft_backend_rings **rp,
			     const char *dev, unsigned int nr_cpus,
			     bft_rings_cb cb, void *arg, char *err,
			     size_t errlen)
{
	struct bfi_session *s = h;
	struct bft_backend_rings *r = calloc(1, sizeof(*r));
	char p[PATH_MAX + 8];
	int e;

	(void)dev;
	(void)nr_cpus;
	*rp = NULL;
	if (!r)
		return -ENOMEM;
	snprintf(p, sizeof(p), "%s/reader", s->dir);
	r->reader_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (r->reader_fd < 0 || flock(r->reader_fd, LOCK_EX | LOCK_NB)) {
		e = errno == EWOULDBLOCK ? -EBUSY : -errno;
		snprintf(err, errlen, "inline rings: %s", e == -EBUSY ?
			 "another reader holds them" : strerror(-e));
		if (r->reader_fd >= 0)
			close(r->reader_fd);
		free(r);
		return e;
	}
	e = bfi_rings_open(&r->r, cb, NULL, arg, err, errlen);
	if (e) {
		close(r->reader_fd);
		free(r);
		return e;
	}
	*rp = r;
	return 0;
}

static void inline_rings_close(struct bft_backend_rings *r)
{
	if (!r)
		return;
	bfi_rings_close(r->r);
	close(r->reader_fd);
	free(r);
}

static const char *inline_rings_errmsg(const struct bft_backend_rings *r)
{
	return bfi_rings_errmsg(r->r);
}

static void inline_rings_idle(struct bft_backend_rings *r,
			      bfi_rings_idle_cb idle)
{
	bfi_rings_set_idle(r->r, idle);
}

static int inline_rings_fd(struct bft_backend_rings *r)
{
	return bfi_rings_fd(r->r);
}

/* No wakeups: every ring is read at every tick. */
static int inline_rings_woken(struct bft_backend_rings *r)
{
	(void)r;
	return 1;
}

static bool inline_rings_behind(const struct bft_backend_rings *r)
{
	(void)r;
	return false;
}

static void inline_rings_rearm(struct bft_backend_rings *r)
{
	bfi_rings_rearm(r->r);
}

static ssize_t inline_rings_poll(struct bft_backend_rings *r, int timeout_ms)
{
	struct pollfd pfd = { .fd = bfi_rings_fd(r->r), .events = POLLIN };
	uint64_t ticks;

	if (timeout_ms && poll(&pfd, 1, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	if (read(pfd.fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		return -errno;
	return bfi_rings_read(r->r);
}

static long long inline_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static ssize_t inline_rings_drain(struct bft_backend_rings *r, int quiet_ms,
				  int max_ms)
{
	long long start = inline_now_ms(), last = start;
	ssize_t total = 0;

	bfi_rings_rescan(r->r);
	for (;;) {
		ssize_t n = bfi_rings_read(r->r);
		long long now = inline_now_ms();

		if (n < 0)
			return n;
		total += n;
		if (n)
			last = now;
		if (now - last >= quiet_ms)
			return total;
		if (max_ms >= 0 && now - start >= max_ms)
			return -ETIME;
		usleep(10000);
	}
}

/*
 * The reader's look, every 100 ms: it must not stall behind an attach,
 * which holds the registry's lock while it patches (seconds for a
 * thousand functions), or the rings it reads meanwhile fill and its HQ
 * misses heartbeats.  -EWOULDBLOCK then: look again later.
 */
static int inline_rings_status(void *h, struct bft_backend_rings *r,
			       struct bft_nl_status *st)
{
	struct bfi_session *s = h;
	int e;

	(void)r;
	s->nowait = true;
	e = inline_get_status(h, st);
	s->nowait = false;
	return e;
}

const struct bft_backend_ops bft_backend_inline = {
	.refusals_partial = true,
	.name = "inline",
	.label = "inline backend",
	.what = "the inline backend",
	.rings_name = "inline rings",
	.root_only = "the inline backend opens each target's memory when it "
		     "finds the target, attached later too, which needs the "
		     "rights of its tracer",
	.closed = "inline session closed (its targets stay patched unless "
		  "this bfctl started it without --persist)",
	.features = INLINE_FEATURES,
	.open = inline_open,
	.close = inline_close,
	.errmsg = inline_errmsg,
	.notice = inline_notice,
	.where = bfi_session_dir,
	.absent = inline_absent,
	.open_subject = inline_open_subject,
	.describe = inline_describe,
	.get_caps = inline_get_caps,
	.attach = inline_attach,
	.detach = inline_detach,
	.start = inline_start,
	.mode_cmd = inline_mode_cmd,
	.get_status = inline_get_status,
	.get_opt = inline_get_opt,
	.get_opts = inline_get_opts,
	.set_opt = inline_set_opt,
	.get_methods = inline_get_methods,
	.get_exceptions = inline_get_exceptions,
	.flush = inline_flush,
	.rings_open = inline_rings_open,
	.rings_close = inline_rings_close,
	.rings_errmsg = inline_rings_errmsg,
	.rings_idle = inline_rings_idle,
	.rings_fd = inline_rings_fd,
	.rings_woken = inline_rings_woken,
	.rings_behind = inline_rings_behind,
	.rings_rearm = inline_rings_rearm,
	.rings_poll = inline_rings_poll,
	.rings_drain = inline_rings_drain,
	.rings_status = inline_rings_status,
};
