// SPDX-License-Identifier: GPL-2.0
/*
 * bft_rings: the per-CPU readers of /dev/bftrace.  See bft_rings.h.
 */
#define _GNU_SOURCE
#include "capture/bft_rings.h"
#include "bft_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/bftrace.h>

#define BFT_DEV_PATH		"/dev/" BFT_DEV_NAME
/* One read(): the kernel fills it with as many whole records as fit. */
#define BFT_READ_CHUNK		65536
/*
 * Reads per ring in one poll step: a ring that refills as fast as it is
 * read must not keep the others waiting.
 */
#define BFT_READS_PER_STEP	16

struct ring {
	int fd;			/* -1: no ring on this CPU */
	bool at_end;
	bool in_epoll;
	uint64_t bytes_read;
	/* Buffered data, when reading without a callback: [head, len). */
	uint8_t *buf;
	size_t head, len, cap;
};

struct bft_rings {
	unsigned int nr_cpus;
	unsigned int nr_bound;
	struct ring *rings;
	struct pollfd *pfds;	/* scratch, nr_cpus entries */
	unsigned int *pfd_cpu;	/* CPU of each pfds entry */
	int epfd;		/* bft_rings_wait_fd(), -1 until asked for */
	uint8_t *chunk;		/* scratch for callback mode */
	char errmsg[512];
};

__attribute__((format(printf, 3, 4)))
static int set_err(struct bft_rings *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

const char *bft_rings_errmsg(const struct bft_rings *r)
{
	return r ? r->errmsg : "no handle";
}

/* The highest possible CPU + 1, from "0-3,5"-style text. */
static unsigned int possible_cpus(void)
{
	char text[256];
	unsigned int max = 0;
	bool any = false;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");

	if (f) {
		if (fgets(text, sizeof(text), f)) {
			for (char *s = text; *s;) {
				char *end;
				unsigned long v = strtoul(s, &end, 10);

				if (end == s) {
					s++;
					continue;
				}
				if (v + 1 > max)
					max = (unsigned int)v + 1;
				any = true;
				s = end;
			}
		}
		fclose(f);
	}
	if (!any) {
		long n = sysconf(_SC_NPROCESSORS_CONF);

		max = n > 0 ? (unsigned int)n : 1;
	}
	return max;
}

static int open_ring(struct bft_rings *r, const char *dev, unsigned int cpu)
{
	__u32 arg = cpu;
	int fd = open(dev, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;

		if (e == ENOENT || e == ENXIO || e == ENODEV)
			return set_err(r, -ENOENT, "%s: %s: is bftrace.ko loaded?",
				       dev, strerror(e));
		return set_err(r, -e, "%s: %s", dev, strerror(e));
	}
	if (ioctl(fd, BFT_IOC_BIND_CPU, &arg) < 0) {
		int e = errno;

		close(fd);
		switch (e) {
		case ENODEV:
			return 0;	/* no ring on this CPU: skip it */
		case EBUSY:
			return set_err(r, -EBUSY, "%s: CPU %u's ring already has a reader: one reader at a time (bfctl record or bfcollector)",
				       dev, cpu);
		case ENOTTY:
		case EINVAL:
			return set_err(r, -e, "%s: binding to CPU %u: %s (not a bftrace device, or another version?)",
				       dev, cpu, strerror(e));
		default:
			return set_err(r, -e, "%s: binding to CPU %u: %s", dev, cpu,
				       strerror(e));
		}
	}
	r->rings[cpu].fd = fd;
	r->nr_bound++;
	return 0;
}

int bft_rings_open(struct bft_rings **rp, const char *dev,
		   unsigned int nr_cpus, char *err, size_t errlen)
{
	struct bft_rings *r;
	int ret = -ENOMEM;

	*rp = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!dev)
		dev = BFT_DEV_PATH;
	if (!nr_cpus)
		nr_cpus = possible_cpus();
	r = calloc(1, sizeof(*r));
	if (!r)
		goto nomem;
	r->nr_cpus = nr_cpus;
	r->epfd = -1;
	r->rings = calloc(nr_cpus, sizeof(*r->rings));
	r->pfds = calloc(nr_cpus, sizeof(*r->pfds));
	r->pfd_cpu = calloc(nr_cpus, sizeof(*r->pfd_cpu));
	if (!r->rings || !r->pfds || !r->pfd_cpu) {
		bft_rings_close(r);
		goto nomem;
	}
	for (unsigned int cpu = 0; cpu < nr_cpus; cpu++)
		r->rings[cpu].fd = -1;
	for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
		ret = open_ring(r, dev, cpu);
		if (ret)
			goto fail;
	}
	if (!r->nr_bound) {
		ret = set_err(r, -ENODEV, "%s: none of CPUs 0..%u has a ring", dev,
			      nr_cpus - 1);
		goto fail;
	}
	*rp = r;
	return 0;
fail:
	if (err && errlen)
		snprintf(err, errlen, "%s", r->errmsg);
	bft_rings_close(r);
	return ret;
nomem:
	if (err && errlen)
		snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

void bft_rings_close(struct bft_rings *r)
{
	if (!r)
		return;
	for (unsigned int cpu = 0; r->rings && cpu < r->nr_cpus; cpu++) {
		if (r->rings[cpu].fd >= 0)
			close(r->rings[cpu].fd);
		free(r->rings[cpu].buf);
	}
	if (r->epfd >= 0)
		close(r->epfd);
	free(r->rings);
	free(r->pfds);
	free(r->pfd_cpu);
	free(r->chunk);
	free(r);
}

unsigned int bft_rings_nr_cpus(const struct bft_rings *r)
{
	return r->nr_cpus;
}

unsigned int bft_rings_nr_bound(const struct bft_rings *r)
{
	return r->nr_bound;
}

bool bft_rings_bound(const struct bft_rings *r, unsigned int cpu)
{
	return cpu < r->nr_cpus && r->rings[cpu].fd >= 0;
}

bool bft_rings_at_end(const struct bft_rings *r, unsigned int cpu)
{
	return cpu < r->nr_cpus && r->rings[cpu].at_end;
}

/* Keep the wait fd's set equal to the rings poll() would look at. */
static void watch(struct bft_rings *r, unsigned int cpu, bool on)
{
	struct ring *g = &r->rings[cpu];
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = cpu };

	if (r->epfd < 0 || g->fd < 0 || g->in_epoll == on)
		return;
	if (!epoll_ctl(r->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, g->fd, &ev))
		g->in_epoll = on;
}

static void set_at_end(struct bft_rings *r, unsigned int cpu)
{
	r->rings[cpu].at_end = true;
	watch(r, cpu, false);
}

void bft_rings_rearm(struct bft_rings *r)
{
	for (unsigned int cpu = 0; cpu < r->nr_cpus; cpu++) {
		r->rings[cpu].at_end = false;
		watch(r, cpu, true);
	}
}

int bft_rings_wait_fd(struct bft_rings *r)
{
	if (r->epfd >= 0)
		return r->epfd;
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (r->epfd < 0)
		return set_err(r, -errno, "epoll_create1: %s", strerror(errno));
	for (unsigned int cpu = 0; cpu < r->nr_cpus; cpu++) {
		if (r->rings[cpu].at_end)
			continue;
		watch(r, cpu, true);
		if (r->rings[cpu].fd >= 0 && !r->rings[cpu].in_epoll) {
			int err = -errno;

			close(r->epfd);
			r->epfd = -1;
			for (unsigned int c = 0; c < r->nr_cpus; c++)
				r->rings[c].in_epoll = false;
			return set_err(r, err, "watching CPU %u's ring: %s",
				       cpu, strerror(-err));
		}
	}
	return r->epfd;
}

int bft_rings_dev_fd(const struct bft_rings *r)
{
	for (unsigned int i = 0; r && i < r->nr_cpus; i++)
		if (r->rings[i].fd >= 0)
			return r->rings[i].fd;
	return -1;
}

uint64_t bft_rings_bytes_read(const struct bft_rings *r, unsigned int cpu)
{
	return cpu < r->nr_cpus ? r->rings[cpu].bytes_read : 0;
}

const uint8_t *bft_rings_data(const struct bft_rings *r, unsigned int cpu,
			      size_t *len)
{
	const struct ring *g;

	if (cpu >= r->nr_cpus || !r->rings[cpu].buf) {
		*len = 0;
		return NULL;
	}
	g = &r->rings[cpu];
	*len = g->len - g->head;
	return g->buf + g->head;
}

void bft_rings_consume(struct bft_rings *r, unsigned int cpu, size_t n)
{
	struct ring *g;

	if (cpu >= r->nr_cpus)
		return;
	g = &r->rings[cpu];
	if (n > g->len - g->head)
		n = g->len - g->head;
	g->head += n;
	if (g->head == g->len)
		g->head = g->len = 0;
}

/* Room for one more read at the end of the ring's buffer. */
static int reserve(struct bft_rings *r, struct ring *g, unsigned int cpu)
{
	size_t need = BFT_READ_CHUNK;

	if (g->head && g->cap - g->len < need) {
		memmove(g->buf, g->buf + g->head, g->len - g->head);
		g->len -= g->head;
		g->head = 0;
	}
	if (g->cap - g->len < need) {
		size_t cap = g->cap ? g->cap : BFT_READ_CHUNK;
		uint8_t *nb;

		while (cap - g->len < need)
			cap *= 2;
		nb = realloc(g->buf, cap);
		if (!nb)
			return set_err(r, -ENOMEM, "out of memory buffering CPU %u (%zu bytes)",
				       cpu, cap);
		g->buf = nb;
		g->cap = cap;
	}
	return 0;
}

/*
 * Read one ring until it would block, reaches its end, or has had its
 * share of reads.  Adds the bytes read to *total.  Returns 0, a callback's
 * stop value (negative, or -ECANCELED), or -errno.
 */
static int read_ring(struct bft_rings *r, unsigned int cpu, bft_rings_cb cb,
		     void *arg, ssize_t *total)
{
	struct ring *g = &r->rings[cpu];

	if (cb && !r->chunk) {
		r->chunk = malloc(BFT_READ_CHUNK);
		if (!r->chunk)
			return set_err(r, -ENOMEM, "out of memory");
	}
	for (int i = 0; i < BFT_READS_PER_STEP; i++) {
		uint8_t *dst;
		ssize_t n;
		int ret;

		if (cb) {
			dst = r->chunk;
		} else {
			ret = reserve(r, g, cpu);
			if (ret)
				return ret;
			dst = g->buf + g->len;
		}
		n = read(g->fd, dst, BFT_READ_CHUNK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return set_err(r, -errno, "reading CPU %u's ring: %s", cpu,
				       strerror(errno));
		}
		if (n == 0) {
			set_at_end(r, cpu);
			return 0;
		}
		g->bytes_read += (uint64_t)n;
		*total += n;
		if (!cb) {
			g->len += (size_t)n;
			continue;
		}
		ret = cb(cpu, dst, (size_t)n, arg);
		if (ret)
			return ret < 0 ? ret : set_err(r, -ECANCELED,
						     "stopped by the callback");
	}
	return 0;
}

/* Fills r->pfds with the rings worth polling; returns how many. */
static nfds_t fill_pfds(struct bft_rings *r)
{
	nfds_t n = 0;

	for (unsigned int cpu = 0; cpu < r->nr_cpus; cpu++) {
		if (r->rings[cpu].fd < 0 || r->rings[cpu].at_end)
			continue;
		r->pfds[n] = (struct pollfd){ .fd = r->rings[cpu].fd, .events = POLLIN };
		r->pfd_cpu[n++] = cpu;
	}
	return n;
}

static int poll_rings(struct bft_rings *r, nfds_t n, int timeout_ms)
{
	int ret;

	do {
		ret = poll(r->pfds, n, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return set_err(r, -errno, "poll: %s", strerror(errno));
	return ret;
}

ssize_t bft_rings_poll(struct bft_rings *r, int timeout_ms, bft_rings_cb cb,
		       void *arg)
{
	ssize_t total = 0;
	nfds_t n = fill_pfds(r);
	int ret;

	r->errmsg[0] = '\0';
	ret = poll_rings(r, n, timeout_ms);
	if (ret <= 0)
		return ret;
	for (nfds_t i = 0; i < n; i++) {
		short ev = r->pfds[i].revents;
		unsigned int cpu = r->pfd_cpu[i];

		if (ev & POLLNVAL)
			return set_err(r, -EBADF, "CPU %u's reader is not open", cpu);
		if (ev & POLLERR)
			return set_err(r, -EIO, "CPU %u's ring reports an error", cpu);
		if (!(ev & (POLLIN | POLLHUP)))
			continue;
		ret = read_ring(r, cpu, cb, arg, &total);
		if (ret)
			return ret;
		/* Hung up and read dry: nothing more will come. */
		if ((ev & POLLHUP) && !(ev & POLLIN))
			set_at_end(r, cpu);
	}
	return total;
}

ssize_t bft_rings_drain(struct bft_rings *r, int quiet_ms, int max_ms,
			bft_rings_cb cb, void *arg)
{
	int64_t start = bft_mono_ms(), last = start;
	ssize_t total = 0;

	r->errmsg[0] = '\0';
	if (quiet_ms < 0)
		quiet_ms = 0;
	for (;;) {
		ssize_t got = 0;
		int64_t now, wait;
		nfds_t n;
		int ret;

		/* Read every ring, whatever poll()'s watermark says. */
		for (unsigned int cpu = 0; cpu < r->nr_cpus; cpu++) {
			if (r->rings[cpu].fd < 0 || r->rings[cpu].at_end)
				continue;
			ret = read_ring(r, cpu, cb, arg, &got);
			if (ret)
				return ret;
		}
		total += got;
		now = bft_mono_ms();
		if (got)
			last = now;
		else if (now - last >= quiet_ms)
			return total;
		if (max_ms >= 0 && now - start >= max_ms)
			return set_err(r, -ETIME, "rings still busy after %d ms (%zd bytes read)",
				       max_ms, total);
		if (got)
			continue;
		wait = quiet_ms - (now - last);
		if (max_ms >= 0 && start + max_ms - now < wait)
			wait = start + max_ms - now;
		n = fill_pfds(r);
		ret = poll_rings(r, n, (int)wait);
		if (ret < 0)
			return ret;
	}
}
