// SPDX-License-Identifier: GPL-2.0
/*
 * bench-hqsink: the cheapest HQ a Bytefrog agent can talk to, so that the
 * collector's throughput is measured rather than HQ's.  It answers the
 * handshake of one agent (hello -> configuration with HQ's defaults and
 * start; data hello -> reply) and reads and drops everything else, until
 * every connection of that agent has closed.  bfhq, which builds call
 * trees and writes them out, is the HQ to use for anything but this.
 *
 *   bench-hqsink PORT        (listens on 127.0.0.1; prints "listening")
 *
 * Output at the end: "received control=B data=B connections=N".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire/bfp_msg.h"

#define MAX_CONN 16

enum role { NEW, CONTROL, DATA };

struct conn {
	int fd;
	enum role role;
	uint8_t head[64];	/* the greeting, until it decodes */
	size_t head_len;
};

static struct conn conns[MAX_CONN];
static unsigned int nconns;
static uint64_t control_bytes, data_bytes;
static unsigned int version = 1;

static int send_all(int fd, const struct bft_buf *b)
{
	size_t done = 0;

	while (done < b->len) {
		ssize_t n = write(fd, b->data + done, b->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* The first message of a connection says what it is; answer it. */
static int greet(struct conn *c)
{
	struct bfp_msg m = { 0 }, out = { 0 };
	struct bfp_config cfg;
	struct bfp_error err;
	struct bft_buf b = { 0 };
	int n, r = 0;

	n = bfp_decode(c->head, c->head_len, version, BFP_CTX_HQ_GREETING, &m,
		       &err);
	if (n == 0)
		return 0;
	if (n < 0) {
		fprintf(stderr, "bench-hqsink: bad greeting: %s\n", err.msg);
		return -1;
	}
	bfp_config_init(&cfg);
	if (m.id == BFP_HELLO) {
		version = m.version;
		c->role = CONTROL;
		control_bytes += c->head_len;
		out.id = BFP_CONFIG;
		out.config = &cfg;
		r = bfp_encode(&b, version, &out);
		out = (struct bfp_msg){ .id = BFP_START };
		r = r ? r : bfp_encode(&b, version, &out);
	} else {
		c->role = DATA;
		data_bytes += c->head_len;
		out.id = BFP_DATA_HELLO_REPLY;
		r = bfp_encode(&b, version, &out);
	}
	/* whatever followed the greeting in the same read is dropped data */
	if (!r)
		r = send_all(c->fd, &b);
	bft_buf_free(&b);
	bfp_config_free(&cfg);
	bfp_msg_free(&m);
	return r ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	static uint8_t buf[1 << 16];
	unsigned long port;
	bool had_control = false;
	int lfd, one = 1;
	char *end;

	if (argc != 2 || (port = strtoul(argv[1], &end, 10), *end) ||
	    !port || port > 65535) {
		fprintf(stderr, "usage: bench-hqsink PORT\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 8)) {
		fprintf(stderr, "bench-hqsink: 127.0.0.1:%lu: %s\n", port,
			strerror(errno));
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	for (;;) {
		struct pollfd p[MAX_CONN + 1];
		unsigned int i, live = 0;

		p[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (i = 0; i < nconns; i++) {
			p[i + 1] = (struct pollfd){ .fd = conns[i].fd,
						    .events = POLLIN };
			live += conns[i].fd >= 0;
		}
		if (had_control && !live)
			break;
		if (poll(p, nconns + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("bench-hqsink: poll");
			return 1;
		}
		if (p[0].revents & POLLIN) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0 && nconns < MAX_CONN)
				conns[nconns++] = (struct conn){ .fd = fd };
			else if (fd >= 0)
				close(fd);
		}
		for (i = 0; i < nconns; i++) {
			struct conn *c = &conns[i];
			ssize_t n;

			if (c->fd < 0 || !p[i + 1].revents)
				continue;
			if (c->role == NEW) {
				n = read(c->fd, c->head + c->head_len,
					 sizeof(c->head) - c->head_len);
				if (n > 0) {
					c->head_len += (size_t)n;
					if (greet(c))
						return 1;
					had_control |= c->role == CONTROL;
					continue;
				}
			} else {
				n = read(c->fd, buf, sizeof(buf));
				if (n > 0) {
					if (c->role == CONTROL)
						control_bytes += (uint64_t)n;
					else
						data_bytes += (uint64_t)n;
					continue;
				}
			}
			if (n < 0 && errno == EINTR)
				continue;
			close(c->fd);
			c->fd = -1;
		}
	}
	printf("received control=%" PRIu64 " data=%" PRIu64 " connections=%u\n",
	       control_bytes, data_bytes, nconns);
	return 0;
}
