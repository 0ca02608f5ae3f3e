// SPDX-License-Identifier: GPL-2.0
/*
 * The reader of the BPF backend's per-CPU rings (BPF ring buffers): one
 * reader at a time, each CPU's bytes delivered in order, the read positions
 * stored for status and for the next reader, as the module's kmod/bft_ring.c
 * hands its rings to one bound reader.  Opened after the session, closed
 * before it.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/bft_bpf_internal.h"
#include "wire/bft_varint.h"

/*
 * A sample is a batch of records (user/bpf/bft.bpf.c), but a seal or a
 * thread switch publishes a few bytes alone: handing each sample to the
 * callback and storing the read position per sample (a system call) cost
 * far more than decoding it.  So a poll gathers each CPU's samples, in
 * order, and delivers them, and the position, once per CPU at its end.
 */
struct ring_ctx {
	struct bft_bpf_rings *r;
	unsigned int cpu;
	uint64_t bytes;
	uint64_t bytes_stored;	/* what the bft_read map says */
	struct bft_buf pend;	/* gathered, not yet delivered */
	int fd;			/* the ring's map, in the wakeup set */
	/* the kernel's consumer and producer positions, a page each */
	const volatile uint64_t *pos;
	uint64_t size;
};

/*
 * The programs wake a reader only when a ring crosses its watermark and
 * when the flush work seals (user/bpf/bft.bpf.c, wake_flag()), so a read
 * takes every ring, woken or not.  The rings are in two epoll sets:
 * libbpf's, level-triggered, which ring_buffer__consume() does not use,
 * and @wake_fd, edge-triggered, which becomes readable at a wakeup only:
 * a ring holding a few bytes does not keep a poller spinning.
 */
struct bft_bpf_rings {
	struct bft_bpf *b;
	int lock_fd;		/* the reader's lock, on the links directory */
	struct ring_buffer *rb;
	bft_rings_cb cb;
	void *arg;
	struct ring_ctx *cpus;
	ssize_t got;
	int cb_ret;
	int wake_fd;
	size_t page;
	uint64_t watermark;	/* the session's, as of the last pass */
};

static int sample_gather(void *ctx, void *data, size_t len)
{
	struct ring_ctx *c = ctx;
	struct bft_bpf_rings *r = c->r;

	if (r->cb && bft_buf_append(&c->pend, data, len)) {
		r->cb_ret = -ENOMEM;
		return r->cb_ret;
	}
	c->bytes += len;
	r->got += len;
	return 0;
}

/* A CPU's pass brought at most this much: delivered before the others. */
#define DELIVER_FIRST	4096

/*
 * Hand every CPU's gathered bytes to the callback, the CPUs with little
 * first: an idle CPU's flush SYNC moves its stream's time, and only then
 * can a merge let a busy CPU's records through while they are still
 * being fed (the collector's ring callback).  Store the positions.
 */
static int rings_deliver(struct bft_bpf_rings *r)
{
	for (int big = 0; big <= 1; big++) {
		for (unsigned int cpu = 0; cpu < r->b->nr_cpus; cpu++) {
			struct ring_ctx *c = &r->cpus[cpu];
			int ret;

			if (!big && c->bytes != c->bytes_stored) {
				bpf_map_update_elem(r->b->read_fd, &c->cpu,
						    &c->bytes, BPF_ANY);
				c->bytes_stored = c->bytes;
			}
			if (!c->pend.len || (c->pend.len > DELIVER_FIRST) != big)
				continue;
			ret = r->cb(cpu, c->pend.data, c->pend.len, r->arg);
			c->pend.len = 0;
			if (ret)
				return ret < 0 ? ret : -ECANCELED;
		}
	}
	return 0;
}

/* Rings woken since the last look, after waiting up to timeout_ms. */
static int wakeups_take(struct bft_bpf_rings *r, int timeout_ms)
{
	struct epoll_event ev[16];
	int n, woken = 0;

	do {
		n = epoll_wait(r->wake_fd, ev, (int)(sizeof(ev) / sizeof(ev[0])),
			       timeout_ms);
		if (n < 0)
			return errno == EINTR ? woken : -errno;
		woken += n;
		timeout_ms = 0;
	} while (n == (int)(sizeof(ev) / sizeof(ev[0])));
	return woken;
}

/*
 * A ring's programs wake the reader when a record makes it cross the
 * watermark.  One that still holds the watermark's worth after a read
 * (the reader fell behind a fast producer) never crosses it again, so no
 * wakeup comes until the next flush, and a fast producer fills the rest
 * before then: such a ring must be read again now, as must one half
 * full (the watermark is not known before the first pass).
 */
bool bft_bpf_rings_behind(const struct bft_bpf_rings *r)
{
	for (unsigned int cpu = 0; cpu < r->b->nr_cpus; cpu++) {
		const struct ring_ctx *c = &r->cpus[cpu];
		uint64_t cons, prod, at = c->size / 2;

		if (!c->pos)
			continue;
		cons = __atomic_load_n(&c->pos[0], __ATOMIC_ACQUIRE);
		prod = __atomic_load_n(&c->pos[r->page / 8], __ATOMIC_ACQUIRE);
		if (r->watermark && r->watermark < at)
			at = r->watermark;
		if (prod - cons >= at)
			return true;
	}
	return false;
}

/* One pass over every ring, after waiting for a wakeup, then delivery. */
static int rings_pass(struct bft_bpf_rings *r, int timeout_ms)
{
	struct bft_bpf_ctl ctl;
	int err, ret;

	r->got = 0;
	r->cb_ret = 0;
	/* one lookup a pass keeps bft_bpf_rings_behind() system-call free */
	if (!bft_bpf_ctl_read(r->b, &ctl))
		r->watermark = ctl.watermark;
	if (timeout_ms && bft_bpf_rings_behind(r))
		timeout_ms = 0;
	err = wakeups_take(r, timeout_ms);
	if (err >= 0)
		err = ring_buffer__consume(r->rb);
	ret = rings_deliver(r);
	if (r->cb_ret)
		return r->cb_ret;
	if (ret)
		return ret;
	return err < 0 ? err : 0;
}

/*
 * A ring into the wakeup set, and its positions mapped read-only (the
 * first two pages of the map: the consumer's, then the producer's) so
 * that its fill costs no system call.
 */
static int ring_watch(struct bft_bpf_rings *r, struct ring_ctx *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u32 = c->cpu };
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info);
	void *pos;

	if (bpf_obj_get_info_by_fd(c->fd, &info, &len))
		return bft_bpf_err_set(r->b, -errno, "the ring of CPU %u: %s",
				       c->cpu, strerror(errno));
	c->size = info.max_entries;
	pos = mmap(NULL, 2 * r->page, PROT_READ, MAP_SHARED, c->fd, 0);
	if (pos == MAP_FAILED)
		return bft_bpf_err_set(r->b, -errno, "mapping the ring of CPU "
				       "%u: %s", c->cpu, strerror(errno));
	c->pos = pos;
	if (epoll_ctl(r->wake_fd, EPOLL_CTL_ADD, c->fd, &ev))
		return bft_bpf_err_set(r->b, -errno, "watching the ring of "
				       "CPU %u: %s", c->cpu, strerror(errno));
	return 0;
}

/*
 * One reader at a time, as the module binds each ring to one file: two
 * readers would each take part of the records and see gaps.  The lock is
 * an flock on the session's links directory (the session lock is on the
 * pin directory itself), so it goes with the reader, however it ends.
 */
static int reader_lock(struct bft_bpf *b)
{
	char p[PATH_MAX];
	pid_t holder;
	int fd;

	bft_bpf_pin_path(p, sizeof(p), "links");
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return bft_bpf_err_set(b, -errno, "%s: %s", p, strerror(errno));
	if (!flock(fd, LOCK_EX | LOCK_NB))
		return fd;
	if (errno != EWOULDBLOCK) {
		int err = -errno;

		close(fd);
		return bft_bpf_err_set(b, err, "locking %s: %s", p,
				       strerror(-err));
	}
	close(fd);
	holder = bft_bpf_flock_holder(p);
	if (holder)
		return bft_bpf_err_set(b, -EBUSY, "process %d (%s) already "
				       "reads this session's rings: one "
				       "reader at a time (bfctl record or "
				       "bfcollector)", (int)holder,
				       bft_bpf_pin_dir());
	return bft_bpf_err_set(b, -EBUSY, "another process already reads this "
			       "session's rings (%s): one reader at a time "
			       "(bfctl record or bfcollector)",
			       bft_bpf_pin_dir());
}

int bft_bpf_rings_open(struct bft_bpf *b, struct bft_bpf_rings **rp,
		       bft_rings_cb cb, void *arg)
{
	struct bft_bpf_rings *r = calloc(1, sizeof(*r));
	int err = 0;

	*rp = NULL;
	if (!r)
		return -ENOMEM;
	/* the first reader makes the session, as with the module */
	err = bft_bpf_session_open(b, true);
	if (err) {
		free(r);
		return err;
	}
	r->lock_fd = reader_lock(b);
	if (r->lock_fd < 0) {
		err = r->lock_fd;
		free(r);
		return err;
	}
	r->b = b;
	r->cb = cb;
	r->arg = arg;
	r->page = (size_t)sysconf(_SC_PAGESIZE);
	r->cpus = calloc(b->nr_cpus, sizeof(*r->cpus));
	if (!r->cpus) {
		close(r->lock_fd);
		free(r);
		return -ENOMEM;
	}
	for (unsigned int cpu = 0; cpu < b->nr_cpus; cpu++)
		r->cpus[cpu].fd = -1;
	r->wake_fd = epoll_create1(EPOLL_CLOEXEC);
	if (r->wake_fd < 0) {
		err = bft_bpf_err_set(b, -errno, "epoll_create1: %s",
				      strerror(errno));
		bft_bpf_rings_close(r);
		return err;
	}
	for (unsigned int cpu = 0; cpu < b->nr_cpus && !err; cpu++) {
		uint32_t id = 0;
		uint64_t rd = 0;
		int fd;

		r->cpus[cpu] = (struct ring_ctx){ .r = r, .cpu = cpu };
		/* bytes an earlier reader took count as read already */
		if (!bpf_map_lookup_elem(b->read_fd, &cpu, &rd))
			r->cpus[cpu].bytes = rd;
		r->cpus[cpu].bytes_stored = r->cpus[cpu].bytes;
		if (bpf_map_lookup_elem(b->rings_fd, &cpu, &id)) {
			err = bft_bpf_err_set(b, -errno, "the ring of CPU %u: "
					      "%s", cpu, strerror(errno));
			break;
		}
		fd = bpf_map_get_fd_by_id(id);
		if (fd < 0) {
			err = bft_bpf_err_set(b, -errno, "the ring of CPU %u: "
					      "%s", cpu, strerror(errno));
			break;
		}
		r->cpus[cpu].fd = fd;
		if (!r->rb) {
			r->rb = ring_buffer__new(fd, sample_gather, &r->cpus[cpu],
						 NULL);
			if (!r->rb)
				err = bft_bpf_err_set(b, -errno,
						      "ring_buffer__new: %s",
						      strerror(errno));
		} else if (ring_buffer__add(r->rb, fd, sample_gather,
					    &r->cpus[cpu])) {
			err = bft_bpf_err_set(b, -errno, "ring_buffer__add: %s",
					      strerror(errno));
		}
		if (!err)
			err = ring_watch(r, &r->cpus[cpu]);
	}
	if (err) {
		bft_bpf_rings_close(r);
		return err;
	}
	*rp = r;
	return 0;
}

int bft_bpf_rings_fd(const struct bft_bpf_rings *r)
{
	return r->wake_fd;
}

int bft_bpf_rings_woken(struct bft_bpf_rings *r)
{
	return wakeups_take(r, 0);
}

uint64_t bft_bpf_rings_bytes_read(const struct bft_bpf_rings *r,
				  unsigned int cpu)
{
	return cpu < r->b->nr_cpus ? r->cpus[cpu].bytes : 0;
}

ssize_t bft_bpf_rings_poll(struct bft_bpf_rings *r, int timeout_ms)
{
	int err = rings_pass(r, timeout_ms);

	if (err < 0 && err != -EINTR)
		return err;
	return r->got;
}

static uint64_t clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

ssize_t bft_bpf_rings_drain(struct bft_bpf_rings *r, int quiet_ms, int max_ms)
{
	uint64_t start = clock_ms(), last = start;
	ssize_t total = 0, got;
	int err;

	for (;;) {
		err = bft_bpf_flush(r->b, false);
		if (err)
			return err;
		err = rings_pass(r, 0);
		if (err < 0)
			return err;
		got = r->got;
		total += got;
		if (got)
			last = clock_ms();
		else if (clock_ms() - last >= (uint64_t)quiet_ms)
			return total;
		if (max_ms >= 0 && clock_ms() - start >= (uint64_t)max_ms)
			return -ETIME;
		if (!got) {
			got = bft_bpf_rings_poll(r, 10);
			if (got < 0)
				return got;
			total += got;
			if (got)
				last = clock_ms();
		}
	}
}

void bft_bpf_rings_close(struct bft_bpf_rings *r)
{
	if (!r)
		return;
	ring_buffer__free(r->rb);
	for (unsigned int cpu = 0; cpu < r->b->nr_cpus; cpu++) {
		struct ring_ctx *c = &r->cpus[cpu];

		bft_buf_free(&c->pend);
		if (c->pos)
			munmap((void *)c->pos, 2 * r->page);
		if (c->fd >= 0)
			close(c->fd);
	}
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	close(r->lock_fd);
	free(r->cpus);
	free(r);
}
