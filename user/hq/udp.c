// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq --udp: data messages in datagrams (docs/udp-data.md) on the port
 * number agents connect to.
 *
 * A datagram is checked whole (bfu_check) before anything in it is used:
 * whoever can reach the port can send one.  It must name a running trace
 * whose control connection came from the datagram's address (or one
 * --data-from names), as a data connection must; then its stream's
 * packet number is looked up in a window of the last UDP_WINDOW numbers
 * to drop duplicates, and its messages go the way a data connection's do
 * (trace.c orders them, declares the missing ones lost at the reorder
 * bound or after the gap timeout).
 *
 * Counted per trace: datagrams received, lost (numbers never seen, to the
 * last one the agent's DataEnd names), duplicated, late (older than the
 * window, or holding messages behind what was routed already) and
 * malformed (from the agent's address, refused by the check or naming no
 * running trace).  Datagrams from elsewhere are counted bfhq-wide.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hq.h"
#include "wire/bfu_dgram.h"

#define UDP_WINDOW	4096	/* packet numbers remembered per stream */
#define UDP_STREAMS	64	/* as many as --data-senders allows */
#define UDP_RCVBUF	(8 << 20)

struct udp_stream {
	bool seen_any;
	uint32_t top;		/* highest packet number seen, + 1 */
	uint64_t received;	/* distinct packet numbers */
	uint32_t end;		/* DataEnd's count of datagrams sent */
	bool ended;
	uint64_t bits[UDP_WINDOW / 64];	/* packet p at bit p % UDP_WINDOW */
};

struct udp_state {
	struct udp_stream s[UDP_STREAMS];
};

int hq_udp_open(struct hq *hq)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd, size = UDP_RCVBUF;

	/* the TCP socket's address: the same host and port number */
	if (getsockname(hq->listen_fd, (struct sockaddr *)&ss, &len))
		return -1;
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len)) {
		hq_log("cannot bind UDP on %s:%u: %s", hq->o.listen_host,
		       hq->o.port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* a burst a few ms long must fit while a flush writes files */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	hq->udp_fd = fd;
	return 0;
}

static bool addr_ok(struct hq *hq, struct trace *t, const char *addr)
{
	unsigned int i;

	if (hq->o.data_from_any || (t->agent_addr[0] &&
				    !strcmp(t->agent_addr, addr)))
		return true;
	for (i = 0; i < hq->o.ndata_from; i++)
		if (!strcmp(hq->o.data_from[i], addr))
			return true;
	return false;
}

/*
 * The trace of run, or (run < 0) the first whose agent is at addr, among
 * those not finished: one whose control connection closed still takes
 * what was on its way (a datagram may come after the TCP close).
 */
static struct trace *trace_of(struct hq *hq, int run, const char *addr)
{
	unsigned int i;

	for (i = 0; i < hq->ntraces; i++) {
		struct trace *t = hq->traces[i];

		if (t->finished || t->failed || !addr_ok(hq, t, addr))
			continue;
		if (run < 0 || t->run_id == run)
			return t;
	}
	return NULL;
}

static struct udp_state *state(struct trace *t)
{
	if (!t->udp && !t->finished)
		t->udp = calloc(1, sizeof(*t->udp));
	t->udp_seen = true;
	return t->udp;
}

unsigned int hq_reorder_bound(const struct hq_opts *o, const struct trace *t)
{
	return t->udp_seen ? o->udp_reorder_bound : o->reorder_bound;
}

/* Whether packet p of s is news; counts duplicates and the too old. */
static bool packet_news(struct trace *t, struct udp_stream *s, uint32_t p)
{
	uint64_t *w;
	uint64_t bit;

	if (!s->seen_any || (int32_t)(p - s->top) >= 0) {
		uint32_t from = s->seen_any ? s->top : p, k;

		/* forget the numbers the window slides past */
		if (s->seen_any && p - from >= UDP_WINDOW)
			memset(s->bits, 0, sizeof(s->bits));
		else
			for (k = from; k != p; k++)
				s->bits[(k % UDP_WINDOW) / 64] &=
					~(1ull << (k % 64));
		s->bits[(p % UDP_WINDOW) / 64] &= ~(1ull << (p % 64));
		s->top = p + 1;
		s->seen_any = true;
	} else if (s->top - p > UDP_WINDOW) {
		t->udp_late++;
		return false;
	}
	w = &s->bits[(p % UDP_WINDOW) / 64];
	bit = 1ull << (p % 64);
	if (*w & bit) {
		t->udp_dup++;
		return false;
	}
	*w |= bit;
	s->received++;
	return true;
}

static void apply(struct hq *hq, struct trace *t, const uint8_t *p, size_t n)
{
	struct bfp_msg m = { 0 };
	struct bfp_error err;
	size_t pos = BFU_HDR_LEN;
	bool first = true;

	while (pos < n && !t->finished && !t->failed) {
		int r = bfp_decode(p + pos, n - pos, t->version,
				   BFP_CTX_HQ_DATA, &m, &err);

		if (r <= 0)
			break;	/* bfu_check() said it cannot be */
		pos += (size_t)r;
		t->wire_bytes += (size_t)r;
		if (first && bfp_id_sequenced(m.id)) {
			first = false;
			if ((int32_t)(m.seq - t->next_seq) < 0)
				t->udp_late++;
		}
		hq_trace_data_msg(hq, t, NULL, &m);
	}
	bfp_msg_free(&m);
}

static void one(struct hq *hq, const uint8_t *p, size_t n, const char *addr,
		const char *peer)
{
	struct bfu_hdr h;
	struct trace *t;
	char why[192] = "";
	int version = 0;

	/* the check needs the trace's version: the run id names it */
	t = n > 3 ? trace_of(hq, p[3], addr) : NULL;
	if (t)
		version = t->version;
	if (!t || bfu_check(p, n, (unsigned int)version, &h, why,
			    sizeof(why))) {
		struct trace *at = trace_of(hq, -1, addr);

		if (!why[0])
			snprintf(why, sizeof(why), "no running trace of run "
				 "%d from this address", n > 3 ? p[3] : -1);
		if (at) {
			if (!at->udp_malformed++ || hq->o.verbose)
				hq_log("run %u: %s: datagram refused: %s "
				       "(counted)", at->run_id, peer, why);
		} else if (!hq->udp_foreign++ || hq->o.verbose) {
			hq_log("%s: datagram refused: %s (counted; bfhq logs "
			       "only the first of these)", peer, why);
		}
		return;
	}
	if (!state(t) || h.stream >= UDP_STREAMS) {
		t->udp_malformed++;
		return;
	}
	t->udp_dgrams++;
	if (packet_news(t, &t->udp->s[h.stream], h.packet))
		apply(hq, t, p, n);
}

void hq_udp_read(struct hq *hq)
{
	uint8_t buf[BFU_PAYLOAD_MAX + 1];
	int k;

	/* a bounded batch: TCP's control messages wait for none of it */
	for (k = 0; k < 4096; k++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		char host[64] = "?", addr[48] = "", peer[80];
		unsigned int port = 0;
		ssize_t n = recvfrom(hq->udp_fd, buf, sizeof(buf), MSG_TRUNC,
				     (struct sockaddr *)&ss, &len);

		if (n < 0)
			return;
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
			port = ntohs(in->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *in = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof(host));
			port = ntohs(in->sin6_port);
		}
		if (hq_addr_canon(host, addr))
			addr[0] = 0;
		snprintf(peer, sizeof(peer), "%s:%u (UDP)", host, port);
		/* MSG_TRUNC: n is the datagram's length, a long one fails */
		one(hq, buf, (size_t)n, addr, peer);
	}
}

void hq_udp_feed(struct hq *hq, const uint8_t *p, size_t n, const char *addr)
{
	one(hq, p, n, addr, "fed");
}

void hq_udp_data_end(struct hq *hq, struct trace *t, const struct bfp_msg *m)
{
	struct udp_stream *s;

	if (!state(t) || m->stream >= UDP_STREAMS) {
		hq_trace_fail(hq, t, t->control, "DataEnd for stream %u: "
			      "at most %u streams", m->stream, UDP_STREAMS);
		return;
	}
	s = &t->udp->s[m->stream];
	s->end = m->packets;
	s->ended = true;
	t->udp_end_seq = m->seq;
	t->udp_end_known = true;
	if (hq->o.verbose)
		hq_log("run %u: stream %u ended after %u datagrams, before "
		       "sequence %u", t->run_id, m->stream, m->packets, m->seq);
}

bool hq_udp_waiting(const struct trace *t)
{
	return t->udp && t->udp_end_known &&
	       (int32_t)(t->next_seq - t->udp_end_seq) < 0;
}

void hq_udp_finish(struct trace *t)
{
	unsigned int i;

	if (!t->udp)
		return;
	for (i = 0; i < UDP_STREAMS; i++) {
		struct udp_stream *s = &t->udp->s[i];
		uint64_t sent = s->ended ? s->end : s->top;

		if (sent > s->received)
			t->udp_lost += sent - s->received;
	}
	free(t->udp);
	t->udp = NULL;
}
