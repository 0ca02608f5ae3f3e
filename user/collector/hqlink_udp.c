// SPDX-License-Identifier: GPL-2.0
/*
 * --data-udp: the data senders' messages leave in UDP datagrams to HQ's
 * host and port (docs/udp-data.md) instead of data connections, while
 * hello, configuration, heartbeats and commands stay on the control
 * connection.  Each data sender is a stream with its own packet numbers;
 * a datagram carries whole messages only and fits one Ethernet frame.
 *
 * The sender paces itself with a token bucket (--udp-rate bytes/s): a
 * burst larger than HQ's socket buffer is lost on the way, however fast
 * the link, so unpaced sending trades messages for nothing.  The bucket
 * holds 10 ms of the rate (one datagram at least).
 *
 * When the trace ends, a DataEnd per stream on the control connection
 * says how many datagrams went and the sequence number after the last
 * message, so HQ counts what was lost at the very end too.
 */
#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector.h"
#include "wire/bfu_dgram.h"

int udp_open(struct coll *c)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_DGRAM };
	struct addrinfo *res, *ai;
	int fd = -1, gerr, err = -EHOSTUNREACH;

	gerr = getaddrinfo(c->o.hq_host, c->o.hq_port, &hints, &res);
	if (gerr) {
		coll_log("cannot resolve HQ host '%s' for UDP: %s",
			 c->o.hq_host, gai_strerror(gerr));
		return -ENXIO;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC |
			    SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		/* connected: the agent sends first, so NATs map its way back */
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		err = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		coll_log("cannot open a UDP socket to HQ %s:%s: %s",
			 c->o.hq_host, c->o.hq_port, strerror(-err));
		return err;
	}
	c->udp_fd = fd;
	c->udp_refill_ns = coll_mono_ns();
	c->udp_tokens = 0;
	c->udp_next_ms = 0;
	return 0;
}

void udp_close(struct coll *c)
{
	if (c->o.data_udp && c->udp_fd > 0)
		close(c->udp_fd);
	c->udp_fd = -1;
}

/* The length of the whole message at p (n bytes there), 0 if none. */
static size_t msg_len(struct coll *c, const uint8_t *p, size_t n)
{
	struct bfp_msg m = { 0 };
	struct bfp_error err;
	size_t len;
	int r;

	/* nearly every message: a fixed layout */
	if (p[0] == BFP_METHOD_ENTRY)
		return n >= BFP_ENTRY_LEN ? BFP_ENTRY_LEN : 0;
	if (p[0] == BFP_METHOD_EXIT)
		return n >= BFP_EXIT_LEN(c->o.protocol) ?
		       BFP_EXIT_LEN(c->o.protocol) : 0;
	r = bfp_decode(p, n, c->o.protocol, BFP_CTX_ANY, &m, &err);
	len = r > 0 ? (size_t)r : 0;
	bfp_msg_free(&m);
	return len;
}

/* Whether the pace lets a datagram of len bytes go now. */
static bool paced_ok(struct coll *c, size_t len)
{
	uint64_t burst = c->o.udp_rate / 100, now, add;

	if (!c->o.udp_rate)
		return true;
	if (burst < BFU_PAYLOAD_MAX)
		burst = BFU_PAYLOAD_MAX;
	now = coll_mono_ns();
	add = (now - c->udp_refill_ns) * c->o.udp_rate / 1000000000u;
	if (add) {
		c->udp_tokens = c->udp_tokens + add > burst ? burst :
				c->udp_tokens + add;
		c->udp_refill_ns = now;
	}
	if (c->udp_tokens >= len) {
		c->udp_tokens -= len;
		c->udp_next_ms = 0;
		return true;
	}
	c->udp_paced++;
	c->udp_next_ms = coll_now_ms() + 1 +
			 (len - c->udp_tokens) * 1000 / c->o.udp_rate;
	return false;
}

/*
 * The sequence number of the first sequenced message d holds unsent, as
 * its distance behind c->seq (the larger, the older); a map before it
 * counts as older than anything, since the events after it need it.
 */
static uint32_t head_age(struct coll *c, struct dconn *d)
{
	const uint8_t *p = d->out.data + d->sent;
	uint32_t seq;

	if (p[0] != BFP_METHOD_ENTRY && p[0] != BFP_METHOD_EXIT &&
	    !bfp_id_sequenced(p[0]))
		return UINT32_MAX;
	/* every sequenced layout has the sequence at bytes 5..8 */
	if (d->out.len - d->sent < 9)
		return UINT32_MAX;
	seq = (uint32_t)p[5] << 24 | (uint32_t)p[6] << 16 |
	      (uint32_t)p[7] << 8 | p[8];
	return c->seq - seq;
}

/* One datagram of stream i: 1 sent, 0 not now (pace, socket), -errno. */
static int send_one(struct coll *c, unsigned int i)
{
	struct dconn *d = &c->data[i];
	uint8_t dg[BFU_PAYLOAD_MAX];
	struct bfu_hdr h = { .run_id = (uint8_t)c->config.run_id,
			     .stream = (uint8_t)i, .packet = d->packets };
	size_t pos = d->sent, len = BFU_HDR_LEN, m = 0;
	ssize_t n;

	while (pos < d->out.len && h.nmsgs < BFU_MSGS_MAX) {
		m = msg_len(c, d->out.data + pos, d->out.len - pos);
		if (!m) {
			coll_log("UDP stream %u: a queued message does not "
				 "decode", i);
			return -EPROTO;
		}
		if (len + m > BFU_PAYLOAD_MAX)
			break;
		memcpy(dg + len, d->out.data + pos, m);
		len += m;
		pos += m;
		h.nmsgs++;
	}
	if (!h.nmsgs) {
		coll_log("UDP stream %u: a message of %zu bytes does not fit "
			 "a datagram: not sent", i, m);
		c->udp_dropped++;
		d->sent += m;
		d->written += m;
		return 1;
	}
	if (!paced_ok(c, len))
		return 0;
	bfu_put_hdr(dg, &h);
	n = send(c->udp_fd, dg, len, MSG_NOSIGNAL);
	if (n < 0 && (errno == EAGAIN || errno == ENOBUFS || errno == EINTR)) {
		c->udp_tokens += len;	/* not spent */
		c->udp_next_ms = coll_now_ms() + 1;
		return 0;
	}
	/* HQ's port said unreachable: that datagram is HQ's loss, counted
	 * from the numbers; the control connection says whether HQ is up */
	if (n < 0 && errno != ECONNREFUSED)
		return -errno;
	c->udp_dgrams++;
	c->udp_bytes += len;
	c->udp_msgs += h.nmsgs;
	d->packets++;
	d->written += pos - d->sent;
	d->sent = pos;
	return 1;
}

/*
 * The oldest head first, across the streams: HQ routes in sequence
 * order, so a stream sent ahead of another only waits in HQ's reorder
 * queue, and past its bound is declared lost.
 */
int udp_flush(struct coll *c)
{
	unsigned int i;
	int r = 1;

	while (r > 0) {
		uint32_t best_age = 0;
		int best = -1;

		for (i = 0; i < c->ndata; i++) {
			struct dconn *d = &c->data[i];
			uint32_t age;

			if (d->sent >= d->out.len)
				continue;
			age = head_age(c, d);
			if (best < 0 || age > best_age) {
				best = (int)i;
				best_age = age;
			}
		}
		if (best < 0)
			break;
		r = send_one(c, (unsigned int)best);
	}
	for (i = 0; i < c->ndata; i++)
		hq_data_compact(&c->data[i]);
	return r < 0 ? r : 0;
}

void udp_end(struct coll *c)
{
	unsigned int i;

	for (i = 0; i < c->ndata && c->hq == HQ_UP; i++) {
		struct bfp_msg m = { .id = BFP_DATA_END, .stream = (uint8_t)i,
				     .packets = c->data[i].packets,
				     .seq = c->seq };

		hq_control_msg(c, &m);
	}
	coll_log("UDP: %llu datagrams, %llu bytes, %llu messages sent; "
		 "paced %llu times; next sequence %u",
		 (unsigned long long)c->udp_dgrams,
		 (unsigned long long)c->udp_bytes,
		 (unsigned long long)c->udp_msgs,
		 (unsigned long long)c->udp_paced, c->seq);
}
