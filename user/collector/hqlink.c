// SPDX-License-Identifier: GPL-2.0
/*
 * The connections to HQ (seeds/000 "Chain of events", notes §4).
 *
 * The handshake is done with blocking sockets and deadlines: hello, then
 * the configuration (nothing else may come first), then numDataSenders
 * data connections, each with data hello and its reply.  After that every
 * socket is non-blocking and served by the main loop: control input is
 * handed to commands.c as it arrives (which acts on HQ's commands; here
 * bytes are only moved), control output has its own buffer on its own
 * socket, so it never waits behind data.
 *
 * Anything malformed from HQ (an unknown id, a message that does not
 * belong on that connection, a bad length, a configuration that does not
 * decode) is answered with Error (99), the connections are closed cleanly,
 * and bfcollector exits non-zero.  HQ going away is not an error: tracing
 * is suspended and we reconnect with backoff.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "capture/bft_nl.h"
#include "collector.h"

/* ---- blocking helpers for the handshake ---- */

static int wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		uint64_t now = coll_now_ms();
		struct pollfd p = { .fd = fd, .events = events };
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)(deadline - now));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int connect_hq(struct coll *c, int *fdp)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	int fd = -1, err = -ECONNREFUSED, gerr, one = 1;

	gerr = getaddrinfo(c->o.hq_host, c->o.hq_port, &hints, &res);
	if (gerr) {
		coll_log("cannot resolve HQ host '%s' (port '%s'): %s",
			 c->o.hq_host, c->o.hq_port, gai_strerror(gerr));
		/* a name that does not exist will not start to */
		return gerr == EAI_AGAIN || gerr == EAI_SYSTEM ? -EAGAIN : -ENXIO;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		socklen_t len = sizeof(err);

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
			    SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		if (errno == EINPROGRESS &&
		    !wait_fd(fd, POLLOUT, coll_now_ms() + 3000) &&
		    !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) && !err)
			break;
		err = errno == EINPROGRESS ? (err ? -err : -ETIMEDOUT) : -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return err < 0 ? err : -err;
	/* blocking during the handshake; non-blocking once up */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fdp = fd;
	return 0;
}

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* ---- fatal ends ---- */

static void close_all(struct coll *c)
{
	unsigned int i;

	for (i = 0; i < c->ndata; i++) {
		struct dconn *d = &c->data[i];

		if (d->fd >= 0)
			close(d->fd);
		d->fd = -1;
		bft_buf_free(&d->out);
		free(d->ends);
		memset(d, 0, sizeof(*d));
		d->fd = -1;
	}
	c->ndata = 0;
	udp_close(c);
	if (c->ctl_fd >= 0)
		close(c->ctl_fd);
	c->ctl_fd = -1;
	c->ctl_in.len = 0;
	c->ctl_out.len = 0;
}

void hq_send_error_and_close(struct coll *c, const char *text)
{
	struct bfp_msg m = { .id = BFP_ERROR, .str = text,
			     .str_len = strlen(text) };
	struct bft_buf b = { 0 };
	unsigned int i;

	/* HQ hears who speaks; the log has the name already */
	coll_log("%s", strncmp(text, "bfcollector: ", 13) ? text : text + 13);
	if (c->ctl_fd >= 0 && !bfp_encode(&b, c->o.protocol, &m)) {
		/* whatever control output was queued goes first */
		fcntl(c->ctl_fd, F_SETFL,
		      fcntl(c->ctl_fd, F_GETFL) & ~O_NONBLOCK);
		write_all(c->ctl_fd, c->ctl_out.data, c->ctl_out.len);
		write_all(c->ctl_fd, b.data, b.len);
		shutdown(c->ctl_fd, SHUT_WR);
	}
	bft_buf_free(&b);
	for (i = 0; i < c->ndata; i++)
		if (c->data[i].fd >= 0)
			shutdown(c->data[i].fd, SHUT_WR);
	close_all(c);
	c->hq = HQ_NONE;
	c->stopping = true;
}

void hq_peer_error(struct coll *c)
{
	close_all(c);
	c->hq = HQ_NONE;
	c->stopping = true;
	c->exit_code = EXIT_HQ;
}

void hq_protocol_error(struct coll *c, const char *what)
{
	char text[256];

	snprintf(text, sizeof(text), "bfcollector: malformed input from HQ: %s",
		 what);
	hq_send_error_and_close(c, text);
	c->exit_code = EXIT_PROTOCOL;
}

/* ---- the handshake ---- */

/* Read one whole message of ctx from a blocking socket, with a deadline. */
/*
 * A peer that answers the hello as a web server does is no HQ: someone
 * gave --hq bfhq's --http port, or another service's.  Say so, rather
 * than that the message id 72 ('H') is unknown, or only after the
 * handshake time that no configuration came.
 */
static bool not_bytefrog(struct coll *c, char *why, size_t whylen)
{
	static const char http[] = "HTTP/";
	size_t n = c->ctl_in.len < 5 ? c->ctl_in.len : 5;

	if (!n || memcmp(c->ctl_in.data, http, n))
		return false;
	snprintf(why, whylen, "the peer at %s:%s is not a Bytefrog HQ: it answered as an HTTP server (bfhq's agent port is 7000 by default; its --http port serves browsers)",
		 c->o.hq_host, c->o.hq_port);
	return true;
}

static int read_msg(struct coll *c, int fd, struct bft_buf *in, enum bfp_ctx ctx,
		    struct bfp_msg *m, uint64_t deadline, char *why,
		    size_t whylen)
{
	struct bfp_error err;

	for (;;) {
		int r = in->len ? bfp_decode(in->data, in->len, c->o.protocol,
					     ctx, m, &err) : 0;
		ssize_t n;

		if (r > 0) {
			bft_buf_consume(in, (size_t)r);
			return 0;
		}
		if (r < 0) {
			snprintf(why, whylen, "%s", err.msg);
			return -EPROTO;
		}
		r = wait_fd(fd, POLLIN, deadline);
		if (r) {
			snprintf(why, whylen, in->len ?
				 "a message from HQ stopped in the middle" :
				 "HQ sent nothing");
			return in->len ? -EPROTO : r;
		}
		if (bft_buf_reserve(in, 65536))
			return -ENOMEM;
		n = recv(fd, in->data + in->len, in->cap - in->len, 0);
		if (n > 0) {
			in->len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		snprintf(why, whylen, "%s", in->len ?
			 "HQ closed the connection in the middle of a message" :
			 "HQ closed the connection");
		return in->len ? -EPROTO : -ECONNRESET;
	}
}

static int open_data(struct coll *c, unsigned int i, uint64_t deadline)
{
	struct dconn *d = &c->data[i];
	uint8_t hello[2] = { BFP_DATA_HELLO, (uint8_t)c->config.run_id };
	struct bft_buf in = { 0 };
	struct bfp_msg m = { 0 };
	char why[192];
	int err;

	d->fd = -1;
	err = connect_hq(c, &d->fd);
	if (err)
		return err;
	err = write_all(d->fd, hello, 2);
	if (!err)
		err = read_msg(c, d->fd, &in, BFP_CTX_AGENT_DATA, &m, deadline,
			       why, sizeof(why));
	if (!err && m.id == BFP_ERROR) {
		coll_log("HQ refused data connection %u: %s", i + 1, m.str);
		err = -ECONNREFUSED;
		c->exit_code = EXIT_HQ;
	} else if (err == -EPROTO) {
		hq_protocol_error(c, why);
	} else if (!err && in.len) {
		hq_protocol_error(c, "data after the data hello reply");
		err = -EPROTO;
	}
	bfp_msg_free(&m);
	bft_buf_free(&in);
	if (!err)
		set_nonblock(d->fd);
	return err;
}

/* Decode (without acting on) the whole control messages buffered. */
static int check_buffered(struct coll *c, char *why, size_t whylen)
{
	struct bfp_msg m = { 0 };
	struct bfp_error err;
	size_t pos = 0;
	int r = 1;

	while (pos < c->ctl_in.len && r > 0) {
		r = bfp_decode(c->ctl_in.data + pos, c->ctl_in.len - pos,
			       c->o.protocol, BFP_CTX_AGENT_CONTROL, &m, &err);
		if (r > 0)
			pos += (size_t)r;
	}
	bfp_msg_free(&m);
	if (r < 0) {
		snprintf(why, whylen, "%s", err.msg);
		return -EPROTO;
	}
	return 0;
}

int hq_connect(struct coll *c)
{
	uint8_t hello[2] = { BFP_HELLO, (uint8_t)c->o.protocol };
	struct bfp_msg m = { 0 };
	uint64_t deadline;
	char why[192];
	unsigned int i;
	int err, fd;

	err = connect_hq(c, &fd);
	if (err)
		return err;
	c->ctl_fd = fd;
	c->ctl_in.len = 0;
	c->ctl_out.len = 0;
	err = write_all(fd, hello, 2);
	if (err)
		goto down;
	c->hello_ns = coll_mono_ns();
	if (source_is_kernel(c->src)) {
		c->base_ns = c->hello_ns;
		c->have_base = true;
	}
	deadline = coll_now_ms() + c->o.handshake_ms;
	err = read_msg(c, fd, &c->ctl_in, BFP_CTX_AGENT_CONTROL, &m, deadline,
		       why, sizeof(why));
	if (err && not_bytefrog(c, why, sizeof(why)))
		err = -EPROTO;
	if (err == -EPROTO || (err == -ETIMEDOUT)) {
		if (err == -ETIMEDOUT)
			snprintf(why, sizeof(why), "no configuration within the handshake time: the peer at %s:%s accepted the connection, then said nothing a Bytefrog HQ says (is it one?)",
				 c->o.hq_host, c->o.hq_port);
		hq_protocol_error(c, why);
		goto fatal;
	}
	if (err)
		goto down;
	if (m.id == BFP_ERROR) {
		coll_log("HQ refused us: %s", m.str);
		close_all(c);
		c->hq = HQ_NONE;
		c->stopping = true;
		c->exit_code = EXIT_HQ;
		err = -ECONNREFUSED;
		goto out;
	}
	if (m.id != BFP_CONFIG) {
		hq_protocol_error(c, "the first message was not the configuration");
		err = -EPROTO;
		goto fatal;
	}
	err = coll_apply_config(c, m.config, why, sizeof(why));
	if (err) {
		hq_protocol_error(c, why);
		goto fatal;
	}
	c->hq_wants_suspend = false;	/* this HQ says so itself */
	c->hq_heard_ms = coll_now_ms();
	/* What came with the configuration must be well-formed too. */
	err = check_buffered(c, why, sizeof(why));
	if (err) {
		hq_protocol_error(c, why);
		goto fatal;
	}
	coll_log("connected to HQ %s:%s, protocol %u, run %u, %d data "
		 "connection%s, heartbeat %d ms", c->o.hq_host, c->o.hq_port,
		 c->o.protocol, (uint8_t)c->config.run_id,
		 c->config.data_senders, c->config.data_senders == 1 ? "" : "s",
		 c->config.heartbeat_ms);
	c->ndata = (unsigned int)c->config.data_senders;
	for (i = 0; i < c->ndata; i++)
		c->data[i].fd = -1;
	if (c->o.data_udp) {
		err = udp_open(c);
		if (err)
			goto down;
	}
	for (i = 0; i < c->ndata && !c->o.data_udp; i++) {
		err = open_data(c, i, coll_now_ms() + c->o.handshake_ms);
		if (err == -EPROTO || c->exit_code)
			goto fatal;
		if (err)
			goto down;
	}
	set_nonblock(fd);
	c->hq = HQ_UP;
	pipeline_new_session(c);
	c->ever_up = true;
	c->backoff_ms = 0;
	c->next_heartbeat_ms = 0;
	hq_heartbeat(c, true);
	coll_commands(c);	/* anything HQ sent right after */
	err = 0;
	goto out;
down:
	close_all(c);
	err = err ? err : -ECONNRESET;
	goto out;
fatal:
	close_all(c);
	c->hq = HQ_NONE;
	c->stopping = true;
	if (!c->exit_code)
		c->exit_code = EXIT_PROTOCOL;
	err = -EPROTO;
out:
	bfp_msg_free(&m);
	return err;
}

void hq_down(struct coll *c, const char *why)
{
	unsigned int i;
	uint64_t undelivered = 0;

	if (c->hq != HQ_UP)
		return;
	for (i = 0; i < c->ndata; i++)
		undelivered += c->data[i].ends_len;
	c->lost_undelivered += undelivered;
	coll_log("lost the connection to HQ (%s): %llu events undelivered; "
		 "tracing is suspended until HQ is back", why,
		 (unsigned long long)undelivered);
	close_all(c);
	c->hq = HQ_DOWN;
	c->down_since_ms = coll_now_ms();
	c->next_connect_ms = c->down_since_ms;
	/* The suspension is done by the loop, outside any callback. */
	c->suspended_for_hq = true;
}

/* ---- sending ---- */

static int grow_ends(struct dconn *d)
{
	uint32_t cap = d->ends_cap ? 2 * d->ends_cap : 1024, i;
	uint64_t *v = malloc(cap * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (i = 0; i < d->ends_len; i++)
		v[i] = d->ends[(d->ends_head + i) & (d->ends_cap - 1)];
	free(d->ends);
	d->ends = v;
	d->ends_cap = cap;
	d->ends_head = 0;
	return 0;
}

static inline int push_end(struct dconn *d, uint64_t end)
{
	if (d->ends_len == d->ends_cap && grow_ends(d))
		return -ENOMEM;
	d->ends[(d->ends_head + d->ends_len++) & (d->ends_cap - 1)] = end;
	return 0;
}

int hq_data_msg(struct coll *c, unsigned int conn, const struct bfp_msg *m)
{
	struct dconn *d = &c->data[conn];
	size_t before = d->out.len;
	int err = bfp_encode(&d->out, c->o.protocol, m);

	if (err)
		return err;
	d->queued += d->out.len - before;
	if (bfp_id_sequenced(m->id))
		return push_end(d, d->queued);
	return 0;
}

int hq_data_room(struct dconn *d)
{
	if (d->out.cap - d->out.len < BFP_CALL_MAX &&
	    bft_buf_reserve(&d->out, BFP_CALL_MAX))
		return -ENOMEM;
	if (d->ends_len == d->ends_cap && grow_ends(d))
		return -ENOMEM;
	return 0;
}

/*
 * Forget the ends of the messages now written in whole: the ends grow, so
 * the first one past what was written is found by bisection, not by
 * walking the ring an event at a time.
 */
static void pop_ends(struct dconn *d)
{
	uint32_t lo = 0, hi = d->ends_len, mask = d->ends_cap - 1;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (d->ends[(d->ends_head + mid) & mask] <= d->written)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo) {
		d->ends_head = (d->ends_head + lo) & mask;
		d->ends_len -= lo;
	}
}

static int flush_fd(int fd, struct bft_buf *b)
{
	while (b->len) {
		ssize_t n = send(fd, b->data, b->len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return -errno;
		}
		bft_buf_consume(b, (size_t)n);
	}
	return 0;
}

/*
 * What is left after a partial write stays where it is; it is moved to the
 * front only once it is no longer than what was written before it, so each
 * byte is moved at most about once.
 */
void hq_data_compact(struct dconn *d)
{
	if (d->sent == d->out.len) {
		d->out.len = 0;
		d->sent = 0;
	} else if (d->sent >= d->out.len - d->sent) {
		bft_buf_consume(&d->out, d->sent);
		d->sent = 0;
	}
}

static int flush_data(struct dconn *d)
{
	int err = 0;

	while (d->sent < d->out.len) {
		ssize_t n = send(d->fd, d->out.data + d->sent,
				 d->out.len - d->sent, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				err = -errno;
			break;
		}
		d->sent += (size_t)n;
		d->written += (size_t)n;
	}
	hq_data_compact(d);
	return err;
}

int hq_control_msg(struct coll *c, const struct bfp_msg *m)
{
	int err;

	if (c->hq != HQ_UP)
		return -ENOTCONN;
	err = bfp_encode(&c->ctl_out, c->o.protocol, m);
	if (err)
		return err;
	err = flush_fd(c->ctl_fd, &c->ctl_out);
	if (err)
		hq_down(c, strerror(-err));
	return err;
}

void hq_flush(struct coll *c)
{
	unsigned int i;
	int err;

	if (c->hq != HQ_UP)
		return;
	/* control first: it never waits behind data */
	err = flush_fd(c->ctl_fd, &c->ctl_out);
	if (err) {
		hq_down(c, strerror(-err));
		return;
	}
	err = c->o.data_udp ? udp_flush(c) : 0;
	if (err) {
		hq_down(c, strerror(-err));
		return;
	}
	for (i = 0; i < c->ndata; i++) {
		struct dconn *d = &c->data[i];

		err = c->o.data_udp ? 0 : flush_data(d);
		if (err) {
			hq_down(c, strerror(-err));
			return;
		}
		pop_ends(d);
	}
}

uint64_t hq_pending(const struct coll *c)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < c->ndata; i++)
		n += c->data[i].out.len - c->data[i].sent;
	return n;
}

int hq_pollfds(struct coll *c, struct pollfd *p, int max)
{
	unsigned int i;
	int n = 0;

	if (c->hq != HQ_UP || max < (int)c->ndata + 1)
		return 0;
	p[n++] = (struct pollfd){ .fd = c->ctl_fd, .events = POLLIN |
				  (c->ctl_out.len ? POLLOUT : 0) };
	for (i = 0; i < c->ndata; i++)
		p[n++] = (struct pollfd){ .fd = c->data[i].fd,
					  .events = POLLIN |
					  (c->data[i].out.len > c->data[i].sent ?
					   POLLOUT : 0) };
	return n;
}

static void data_input(struct coll *c, unsigned int i)
{
	uint8_t buf[512];
	ssize_t n = recv(c->data[i].fd, buf, sizeof(buf), 0);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0 && buf[0] == BFP_ERROR) {
		struct bfp_msg m = { 0 };
		struct bfp_error err;

		if (bfp_decode(buf, (size_t)n, c->o.protocol,
			       BFP_CTX_AGENT_DATA, &m, &err) > 0)
			coll_log("HQ reports an error: %s", m.str);
		bfp_msg_free(&m);
		hq_peer_error(c);
		return;
	}
	if (n > 0) {
		hq_protocol_error(c, "HQ wrote on a data connection");
		return;
	}
	hq_down(c, n ? strerror(errno) : "data connection closed by HQ");
}

void hq_io(struct coll *c, const struct pollfd *p, int n)
{
	int i;

	if (c->hq != HQ_UP || n < 1)
		return;
	if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
		for (;;) {
			ssize_t r;

			if (bft_buf_reserve(&c->ctl_in, 4096))
				break;
			r = recv(c->ctl_fd, c->ctl_in.data + c->ctl_in.len,
				 c->ctl_in.cap - c->ctl_in.len, 0);
			if (r > 0) {
				c->ctl_in.len += (size_t)r;
				continue;
			}
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			coll_commands(c);
			if (c->hq == HQ_UP) {
				if (c->ctl_in.len)
					hq_protocol_error(c, "HQ closed the control "
						       "connection in the middle "
						       "of a message");
				else
					hq_down(c, r ? strerror(errno) :
						"control connection closed by HQ");
			}
			return;
		}
		coll_commands(c);
	}
	for (i = 1; i < n && c->hq == HQ_UP; i++)
		if (p[i].revents & (POLLIN | POLLHUP | POLLERR))
			data_input(c, (unsigned int)i - 1);
	hq_flush(c);
}

static uint8_t mode_letter(struct coll *c)
{
	if (c->stopping)
		return BFP_MODE_SHUTDOWN;
	switch (source_mode(c)) {
	case BFT_MODE_TRACING:
		return BFP_MODE_TRACING;
	case BFT_MODE_PAUSED:
		return BFP_MODE_PAUSED;
	case BFT_MODE_SUSPENDED:
		return BFP_MODE_SUSPENDED;
	case BFT_MODE_SHUTTING_DOWN:
		return BFP_MODE_SHUTDOWN;
	default:
		return BFP_MODE_INITIALIZING;
	}
}

void hq_heartbeat(struct coll *c, bool force)
{
	uint64_t now = coll_now_ms();
	uint32_t buflen = bfp_config_buffer_len(c->config.buffer_budget);
	uint64_t q = (hq_pending(c) + buflen - 1) / buflen;
	struct bfp_msg m = { .id = BFP_HEARTBEAT };

	if (c->hq != HQ_UP || (!force && now < c->next_heartbeat_ms))
		return;
	c->next_heartbeat_ms = now + (uint64_t)c->config.heartbeat_ms;
	m.mode = mode_letter(c);
	m.queue = q > 65535 ? 65535 : (uint16_t)q;
	if (!hq_control_msg(c, &m))
		c->heartbeats++;
}

void hq_shutdown(struct coll *c)
{
	uint64_t deadline = coll_now_ms() + 10000;
	unsigned int i;
	char buf[256];

	if (c->hq != HQ_UP)
		return;
	/* everything queued, then the last heartbeat says 'X' */
	while (c->hq == HQ_UP && (hq_pending(c) || c->ctl_out.len) &&
	       coll_now_ms() < deadline) {
		struct pollfd p[COLL_MAX_SENDERS + 1];
		int n = hq_pollfds(c, p, COLL_MAX_SENDERS + 1);

		poll(p, (nfds_t)n, c->udp_next_ms ? 2 : 100);
		hq_io(c, p, n);
	}
	if (c->hq != HQ_UP)
		return;
	if (hq_pending(c))
		coll_log("HQ did not take %llu bytes in time",
			 (unsigned long long)hq_pending(c));
	if (c->o.data_udp)
		udp_end(c);
	hq_heartbeat(c, true);
	for (i = 0; i < c->ndata; i++)
		if (c->data[i].fd >= 0)
			shutdown(c->data[i].fd, SHUT_WR);
	fcntl(c->ctl_fd, F_SETFL, fcntl(c->ctl_fd, F_GETFL) & ~O_NONBLOCK);
	write_all(c->ctl_fd, c->ctl_out.data, c->ctl_out.len);
	shutdown(c->ctl_fd, SHUT_WR);
	/* Let HQ close first, so nothing it has not read is reset. */
	deadline = coll_now_ms() + 2000;
	while (!wait_fd(c->ctl_fd, POLLIN, deadline) &&
	       recv(c->ctl_fd, buf, sizeof(buf), 0) > 0)
		;
	close_all(c);
	c->hq = HQ_NONE;
}
