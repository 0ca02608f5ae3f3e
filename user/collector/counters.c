// SPDX-License-Identifier: GPL-2.0
/*
 * The counters agent (seed 003, notes/counters-wire.md): bfcollector
 * connects to an inspector, says Hello with the headers of the counters
 * it samples, answers List, Add and Remove, and sends a Sample every
 * --counters-interval until Good Bye.
 *
 * The trace comes first: the socket is non-blocking, what waits to be
 * written is bounded (a sample that does not fit is dropped and counted),
 * and an inspector that sends garbage or stops reading is disconnected
 * and reconnected later, with a log line saying why.
 *
 * This file owns the connection and the loop's part: connecting and
 * reconnecting, reading and writing, the sample grid; counters.h says
 * where the rest is.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "counters.h"

/* ---- the connection ---- */

static void start_connect(struct coll *c)
{
	struct counters *t = c->ctr;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	int e, fd;

	t->next_connect_ms = coll_now_ms() + (t->backoff_ms ? t->backoff_ms :
					      100);
	e = getaddrinfo(c->o.counters_host, c->o.counters_port, &hints, &ai);
	if (e) {
		coll_log("counters: %s:%s: %s", c->o.counters_host,
			 c->o.counters_port, gai_strerror(e));
		t->backoff_ms = BACKOFF_MAX_MS;
		return;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
		/* the first failure in a row is said, the retries with -v */
		if (c->o.verbose || !t->backoff_ms)
			coll_log("counters: cannot reach the inspector at "
				 "%s:%s: %s", c->o.counters_host,
				 c->o.counters_port, strerror(errno));
		close(fd);
		freeaddrinfo(ai);
		t->backoff_ms = t->backoff_ms ? t->backoff_ms * 2 : 100;
		if (t->backoff_ms > BACKOFF_MAX_MS)
			t->backoff_ms = BACKOFF_MAX_MS;
		return;
	}
	freeaddrinfo(ai);
	t->fd = fd;
	t->state = C_CONNECTING;
}

static void connected(struct coll *c)
{
	struct counters *t = c->ctr;
	int soerr = 0;
	socklen_t sl = sizeof(soerr);

	if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
		if (c->o.verbose || !t->backoff_ms)
			coll_log("counters: cannot reach the inspector at "
				 "%s:%s: %s", c->o.counters_host,
				 c->o.counters_port, strerror(soerr));
		inspector_drop(c, NULL);
		return;
	}
	coll_log("counters: connected to the inspector at %s:%s",
		 c->o.counters_host, c->o.counters_port);
	t->state = C_UP;
	t->backoff_ms = 0;
	t->dropping = false;
	inspector_hello(c);
}

int counters_adopt(struct coll *c, int fd)
{
	struct counters *t = c->ctr;

	if (!t || t->state != C_DOWN)
		return -EBUSY;
	t->fd = fd;
	t->state = C_UP;
	inspector_hello(c);
	return 0;
}

int counters_init(struct coll *c)
{
	struct counters *t;

	if (!c->o.counters_host)
		return 0;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	c->ctr = t;
	t->fd = -1;
	t->statm_fd = -1;
	t->interval_ns = (uint64_t)c->o.counters_ms * 1000000;
	t->next_ns = coll_mono_ns() + t->interval_ns;
	t->st.cpu = calloc(source_ncpus(c->src) ? source_ncpus(c->src) : 1,
			   sizeof(*t->st.cpu));
	t->cpu_ns = counters_cpu_ns();
	t->cpu_at_ns = coll_mono_ns();
	if (!t->st.cpu)
		return -ENOMEM;
	/* the source counts its reads from now on */
	source_stats(c, &t->st);
	return 0;
}

void counters_free(struct coll *c)
{
	struct counters *t = c->ctr;

	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	if (t->statm_fd >= 0)
		close(t->statm_fd);
	bft_buf_free(&t->in);
	bft_buf_free(&t->out);
	sample_set_clear(t);
	free(t->set);
	free(t->vals);
	free(t->bytes);
	free(t->st.cpu);
	free(t);
	c->ctr = NULL;
}

bool counters_connected(const struct coll *c)
{
	/* connecting counts: a short input must not end before Hello */
	return c->ctr && c->ctr->state != C_DOWN;
}

int counters_pollfds(struct coll *c, struct pollfd *p, int max,
		     int *timeout_ms)
{
	struct counters *t = c->ctr;
	uint64_t now = coll_mono_ns();
	int wait;

	if (!t || max < 1)
		return 0;
	if (t->state == C_UP) {
		wait = t->next_ns > now ?
		       (int)((t->next_ns - now + 999999) / 1000000) : 0;
		if (*timeout_ms < 0 || *timeout_ms > wait)
			*timeout_ms = wait;
	} else if (t->state == C_DOWN && !t->bye) {
		uint64_t ms = coll_now_ms();

		wait = t->next_connect_ms > ms ?
		       (int)(t->next_connect_ms - ms) : 0;
		if (*timeout_ms < 0 || *timeout_ms > wait)
			*timeout_ms = wait;
	}
	if (t->fd < 0)
		return 0;
	p[0].fd = t->fd;
	p[0].events = POLLIN;
	if (t->state == C_CONNECTING || t->out.len)
		p[0].events |= POLLOUT;
	p[0].revents = 0;
	return 1;
}

/* An inspector killed with samples unread resets the connection: that
 * is going away too, and the log says so either way. */
static void went_away(struct coll *c, int err)
{
	char why[128];

	if (err)
		snprintf(why, sizeof(why), "went away (%s); reconnecting",
			 strerror(err));
	inspector_drop(c, err ? why : "went away; reconnecting");
}

static void write_out(struct coll *c)
{
	struct counters *t = c->ctr;
	uint64_t t0 = t->out.len ? counters_stamp_ns() : 0;

	while (t->state == C_UP && t->out.len) {
		ssize_t w = send(t->fd, t->out.data, t->out.len,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0) {
			bft_buf_consume(&t->out, (size_t)w);
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		went_away(c, w < 0 ? errno : 0);
		break;
	}
	if (t0)
		t->write_ns += counters_stamp_ns() - t0;
}

static void read_in(struct coll *c)
{
	struct counters *t = c->ctr;
	uint8_t buf[4096];

	for (int i = 0; i < 16 && t->state == C_UP; i++) {
		ssize_t r = recv(t->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (r > 0) {
			counters_feed(c, buf, (size_t)r);
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		went_away(c, r ? errno : 0);
		return;
	}
}

void counters_io(struct coll *c, const struct pollfd *p, int n)
{
	struct counters *t = c->ctr;
	uint64_t now;

	if (!t)
		return;
	if (t->state == C_DOWN && !t->bye &&
	    coll_now_ms() >= t->next_connect_ms)
		start_connect(c);
	if (n && p[0].fd == t->fd && p[0].revents) {
		if (t->state == C_CONNECTING)
			connected(c);
		else if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			read_in(c);
	}
	now = coll_mono_ns();
	if (now >= t->next_ns) {
		bool up = t->state == C_UP;

		if (up)
			counters_sample(c, now);
		/*
		 * The grid does not drift; a missed tick is skipped.  With no
		 * inspector the loop does not wake for ticks: none is missed.
		 */
		t->next_ns += t->interval_ns;
		if (t->next_ns <= now) {
			uint64_t behind = (now - t->next_ns) / t->interval_ns +
					  1;

			if (up)
				t->skipped += behind;
			t->next_ns += behind * t->interval_ns;
		}
	}
	write_out(c);
}

void counters_shutdown(struct coll *c)
{
	struct counters *t = c->ctr;

	if (!t)
		return;
	if (t->state == C_UP) {
		counters_sample(c, coll_mono_ns());
		write_out(c);
	}
	if (c->o.verbose)
		coll_log("counters: %" PRIu64 " samples sent, %" PRIu64
			 " dropped, %" PRIu64 " ticks skipped; %" PRIu64
			 " us a sample, %" PRIu64 " of it reading the "
			 "status, and %" PRIu64 " writing it", t->samples,
			 t->dropped, t->skipped,
			 t->samples ? t->sample_ns / t->samples / 1000 : 0,
			 t->samples ? t->status_ns / t->samples / 1000 : 0,
			 t->samples ? t->write_ns / t->samples / 1000 : 0);
}
