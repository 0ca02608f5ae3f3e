// SPDX-License-Identifier: GPL-2.0
/*
 * The inline backend's reader (bfi_rings.h): every slot's ring of every
 * registered target, read with pread on /proc/PID/mem, bounded by the
 * geometry the registry recorded at attach.  It also declares idle rings
 * to the merge (the heartbeat of docs/inline-probes.md: clock, fence,
 * busy, head), and ends the streams of targets that exited or exec'd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "inline/bfi_rings.h"
#include "inline/bfi_session.h"

void (*bfi_rings_pread_hook)(uint32_t tgid, uint64_t addr, size_t len);

struct ring_slot {
	uint64_t tail;		/* ours: never the area's */
	bool seen;		/* tail taken from the area once */
};

struct ring_target {
	struct bfi_target geo;	/* tgid, start, index, area, sizes only */
	int fd;			/* /proc/PID/mem */
	uint64_t stuck_head[BFI_NSLOTS];
	uint64_t stuck_since[BFI_NSLOTS];	/* ns; 0: not stuck odd */
	bool stuck_told[BFI_NSLOTS];
	struct ring_slot slots[BFI_NSLOTS];
	bool told;		/* its hostility was said once */
	uint32_t nexc;		/* exception types copied to the names */
};

/*
 * The exception types' names, copied while each target lives: the
 * collector names a THROW after reading it, often once the process has
 * ended and its area with it.  This process's own, for
 * bfi_rings_exc_names().
 */
struct exc_name {
	uint32_t tgid, id;
	char name[BFI_EXC_NAME];
};
static struct exc_name *exc_names;
static size_t exc_nnames;

/* The types the recorder finished naming since the last look. */
static void target_exc_copy(struct ring_target *t)
{
	while (t->nexc < BFI_MAX_EXC) {
		struct bfi_exc x;
		struct exc_name *n;

		if (pread(t->fd, &x, sizeof(x), (off_t)(t->geo.area + BFI_EXC_OFF +
			  t->nexc * (uint64_t)sizeof(x))) != (ssize_t)sizeof(x) ||
		    !x.tinfo || x.ready != 1)
			return;	/* claimed in order: none after it yet */
		n = realloc(exc_names, (exc_nnames + 1) * sizeof(*n));
		if (!n)
			return;
		exc_names = n;
		n = &exc_names[exc_nnames++];
		n->tgid = t->geo.tgid;
		n->id = ++t->nexc;
		memcpy(n->name, x.name, sizeof(n->name));
		n->name[sizeof(n->name) - 1] = '\0';
	}
}

int bfi_rings_exc_names(uint32_t tgid,
			int (*cb)(uint32_t id, const char *name, void *arg),
			void *arg)
{
	int e = 0;

	for (size_t i = 0; !e && i < exc_nnames; i++)
		if (exc_names[i].tgid == tgid)
			e = cb(exc_names[i].id, exc_names[i].name, arg);
	return e;
}

struct bfi_rings {
	bft_rings_cb cb;
	bfi_rings_idle_cb idle;
	void *arg;
	struct ring_target *t[BFI_MAX_TARGETS];	/* by stream block */
	uint32_t ended;		/* blocks whose streams ended */
	uint64_t res_ns, flush_ns;
	uint64_t scan_ns;	/* the clock before the last registry look */
	uint64_t lost_bytes, stuck;
	uint8_t *buf;
	size_t buflen;
	int tfd;
	char err[512];
};

static uint64_t rings_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void rings_say(struct bfi_rings *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void rings_say(struct bfi_rings *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
}

/*
 * The one way into a target's memory: [addr, addr + len) must lie in the
 * area the registry recorded.  0, -ESRCH (gone or exec'd), -EIO.
 */
static int target_pread(struct ring_target *t, uint64_t addr, void *buf,
			size_t len)
{
	ssize_t n;

	if (addr < t->geo.area || len > t->geo.area_size ||
	    addr - t->geo.area > t->geo.area_size - len)
		return -EFAULT;	/* a bug of ours: never read outside */
	if (bfi_rings_pread_hook)
		bfi_rings_pread_hook(t->geo.tgid, addr, len);
	n = pread(t->fd, buf, len, (off_t)addr);
	if (n < 0)
		return errno == EIO || errno == ESRCH ? -ESRCH : -errno;
	return (size_t)n == len ? 0 : -ESRCH;
}

static void target_close_streams(struct bfi_rings *r, uint32_t index)
{
	struct ring_target *t = r->t[index];

	if (t) {
		if (t->fd >= 0)
			close(t->fd);
		free(t);
		r->t[index] = NULL;
	}
	r->ended |= 1u << index;
	for (unsigned int i = 0; r->idle && i < BFI_NSLOTS; i++)
		r->idle(index * BFI_NSLOTS + i, BFI_RINGS_END, r->arg);
}

/* struct bfi_area.reader of t's area: who reads it now. */
static void rings_reader_mark(struct ring_target *t, uint32_t pid)
{
	if (pwrite(t->fd, &pid, sizeof(pid), (off_t)(t->geo.area +
		   offsetof(struct bfi_area, reader))) != sizeof(pid))
		return;	/* gone: nothing waits for us there */
}

static void rings_add(struct bfi_rings *r, const struct bfi_target *g)
{
	struct ring_target *t;
	char p[64];

	if (r->t[g->index] || (r->ended & (1u << g->index)))
		return;
	t = calloc(1, sizeof(*t));
	if (!t)
		return;	/* the next scan tries again */
	t->geo.tgid = g->tgid;
	t->geo.start = g->start;
	t->geo.index = g->index;
	t->geo.area = g->area;
	t->geo.area_size = g->area_size;
	t->geo.ring_size = g->ring_size;
	t->geo.nslots = g->nslots;
	snprintf(p, sizeof(p), "/proc/%u/mem", g->tgid);
	t->fd = open(p, O_RDWR | O_CLOEXEC);
	if (t->fd < 0) {
		rings_say(r, "process %u: %s: %s", g->tgid, p,
			  strerror(errno));
		free(t);
		return;
	}
	r->t[g->index] = t;
	/* a process that exits now waits for this reader (BFI_MF_DRAIN) */
	rings_reader_mark(t, (uint32_t)getpid());
	if (g->ring_size > r->buflen) {
		uint8_t *b = realloc(r->buf, g->ring_size);

		if (b) {
			r->buf = b;
			r->buflen = g->ring_size;
		}
	}
}

void bfi_rings_rescan(struct bfi_rings *r)
{
	uint64_t now = rings_now();
	struct bfi_session *s;
	char err[256];

	/*
	 * An attach holds the lock: look again at the next read.  scan_ns
	 * is the time of the last look that happened: the streams of the
	 * targets absent then are declared idle up to it, which a look
	 * that did not happen could not tell.
	 */
	if (bfi_session_open_nowait(&s, err, sizeof(err)))
		return;
	r->scan_ns = now;
	r->res_ns = s->st.opts[BFT_OPT_TIME_RES_NS];
	r->flush_ns = s->st.opts[BFT_OPT_FLUSH_MS] * 1000000ull;
	for (size_t i = 0; i < s->ntargets; i++)
		if (!s->targets[i].gone)
			rings_add(r, &s->targets[i]);
	bfi_session_close(s);
}

/* Say once per target that it wrote what no recorder writes. */
static void target_hostile(struct bfi_rings *r, struct ring_target *t,
			   unsigned int slot, const char *what, uint64_t lost)
{
	r->lost_bytes += lost;
	if (t->told)
		return;
	t->told = true;
	rings_say(r, "process %u, slot %u: %s; %llu bytes counted as lost, "
		  "reading on from its head", t->geo.tgid, slot, what,
		  (unsigned long long)lost);
}

static uint64_t slot_base(const struct ring_target *t, unsigned int i)
{
	return t->geo.area + BFI_SLOTS_OFF +
	       (uint64_t)i * BFI_SLOT_SIZE(t->geo.ring_size);
}

/* The new bytes of one slot to the callback; the bytes, or -errno. */
static ssize_t slot_read(struct bfi_rings *r, struct ring_target *t,
			 unsigned int i)
{
	uint64_t base = slot_base(t, i), ring = base + BFI_RING_OFF;
	uint64_t size = t->geo.ring_size, head, atail, now, n;
	unsigned int stream = t->geo.index * BFI_NSLOTS + i;
	struct ring_slot *sl = &t->slots[i];
	uint32_t busy;
	int e;

	e = target_pread(t, base + offsetof(struct bfi_slot, tail), &atail,
			 sizeof(atail));
	if (e)
		return e;
	/* the heartbeat's order: the clock, a fence, busy, then head */
	now = rings_now();
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	e = target_pread(t, base + offsetof(struct bfi_slot, busy), &busy,
			 sizeof(busy));
	if (!e)
		e = target_pread(t, base + offsetof(struct bfi_slot, head),
				 &head, sizeof(head));
	if (e)
		return e;
	if (!sl->seen) {
		sl->seen = true;
		sl->tail = atail;	/* what an earlier reader consumed */
	} else if (atail != sl->tail) {
		target_hostile(r, t, i, "its tail changed under the reader", 0);
	}
	n = head - sl->tail;
	if (head < sl->tail) {
		target_hostile(r, t, i, "its head went backwards", 0);
		n = 0;
	} else if (n > size) {
		target_hostile(r, t, i, "its ring claims more than its size",
			       n);
		n = 0;
	}
	if (n) {
		uint64_t off = sl->tail & (size - 1);
		uint64_t first = n < size - off ? n : size - off;

		if (n > r->buflen)
			return -ENOMEM;
		e = target_pread(t, ring + off, r->buf, first);
		if (!e && n > first)
			e = target_pread(t, ring, r->buf + first, n - first);
		if (e)
			return e;
		e = r->cb(stream, r->buf, n, r->arg);
		if (e)
			return e < 0 ? e : -ECANCELED;
	}
	if (head != sl->tail || !sl->seen) {
		sl->tail = head;
		if (pwrite(t->fd, &head, sizeof(head), (off_t)(base +
			   offsetof(struct bfi_slot, tail))) != sizeof(head))
			return -ESRCH;
	}
	if (!r->idle)
		return (ssize_t)n;
	if (busy & 1) {
		/* left the recorder without clearing busy: idle after two
		 * flush intervals without a byte */
		if (!t->stuck_since[i] || t->stuck_head[i] != head) {
			t->stuck_since[i] = now;
			t->stuck_head[i] = head;
			return (ssize_t)n;
		}
		if (now - t->stuck_since[i] < 2 * r->flush_ns)
			return (ssize_t)n;
		if (!t->stuck_told[i]) {
			t->stuck_told[i] = true;
			r->stuck++;
		}
	} else {
		t->stuck_since[i] = 0;
	}
	e = r->idle(stream, now / r->res_ns * r->res_ns - 1, r->arg);
	return e ? (e < 0 ? e : -ECANCELED) : (ssize_t)n;
}

/* Every slot of one target; its streams end when it is gone. */
static ssize_t target_read(struct bfi_rings *r, struct ring_target *t)
{
	uint64_t magic = 0;
	ssize_t total = 0;
	int e;

	e = target_pread(t, t->geo.area, &magic, sizeof(magic));
	if (!e && magic != BFI_MAGIC)
		e = -ESRCH;	/* exec'd: the area is gone */
	/*
	 * The names before the records: a type's name is in the area before
	 * its first THROW is written, and a target that waits at exit may
	 * end as soon as its rings are read.
	 */
	if (!e)
		target_exc_copy(t);
	for (unsigned int i = 0; !e && i < t->geo.nslots; i++) {
		ssize_t n = slot_read(r, t, i);

		if (n < 0)
			e = (int)n;
		else
			total += n;
	}
	if (e == -ESRCH) {
		target_close_streams(r, t->geo.index);
		return total;
	}
	return e ? e : total;
}

ssize_t bfi_rings_read(struct bfi_rings *r)
{
	ssize_t total = 0;

	/* often: a process attached and soon done waits for us at exit */
	if (rings_now() - r->scan_ns >= BFI_RINGS_SCAN_NS)
		bfi_rings_rescan(r);
	for (uint32_t b = 0; b < BFI_MAX_TARGETS; b++) {
		ssize_t n;

		if (!r->t[b]) {
			/* no target there at the last look: none of its
			 * records can be older than that look */
			for (unsigned int i = 0; r->idle && r->scan_ns &&
			     !(r->ended & (1u << b)) && i < BFI_NSLOTS; i++)
				r->idle(b * BFI_NSLOTS + i, r->scan_ns /
					r->res_ns * r->res_ns - 1, r->arg);
			continue;
		}
		n = target_read(r, r->t[b]);
		if (n < 0)
			return n;
		total += n;
	}
	return total;
}

int bfi_rings_open(struct bfi_rings **rp, bft_rings_cb cb,
		   bfi_rings_idle_cb idle, void *arg, char *err,
		   size_t errlen)
{
	struct bfi_rings *r = calloc(1, sizeof(*r));
	struct itimerspec its = { 0 };

	*rp = NULL;
	if (!r)
		return -ENOMEM;
	r->cb = cb;
	r->idle = idle;
	r->arg = arg;
	r->res_ns = 1000;
	r->flush_ns = 100000000ull;
	bfi_rings_rescan(r);
	r->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (r->tfd < 0) {
		snprintf(err, errlen, "a timer for the inline rings: %s",
			 strerror(errno));
		bfi_rings_close(r);
		return -errno;
	}
	its.it_interval.tv_sec = (time_t)(r->flush_ns / 1000000000ull);
	its.it_interval.tv_nsec = (long)(r->flush_ns % 1000000000ull);
	its.it_value = its.it_interval;
	timerfd_settime(r->tfd, 0, &its, NULL);
	*rp = r;
	return 0;
}

void bfi_rings_close(struct bfi_rings *r)
{
	if (!r)
		return;
	for (uint32_t b = 0; b < BFI_MAX_TARGETS; b++)
		if (r->t[b]) {
			rings_reader_mark(r->t[b], 0);
			close(r->t[b]->fd);
			free(r->t[b]);
		}
	if (r->tfd >= 0)
		close(r->tfd);
	free(r->buf);
	free(r);
}

const char *bfi_rings_errmsg(const struct bfi_rings *r)
{
	return r->err;
}

void bfi_rings_set_idle(struct bfi_rings *r, bfi_rings_idle_cb idle)
{
	r->idle = idle;
}

void bfi_rings_rearm(struct bfi_rings *r)
{
	r->ended = 0;
	bfi_rings_rescan(r);
}

int bfi_rings_fd(struct bfi_rings *r)
{
	return r->tfd;
}

uint64_t bfi_rings_lost_bytes(const struct bfi_rings *r)
{
	return r->lost_bytes;
}

uint64_t bfi_rings_stuck(const struct bfi_rings *r)
{
	return r->stuck;
}
