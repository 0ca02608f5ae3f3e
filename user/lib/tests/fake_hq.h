/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The test as HQ for a bfcollector it runs: a listening socket on
 * 127.0.0.1, bounded reads of whole messages, the handshake (hello,
 * configuration, one data connection) and the heartbeats that come back.
 */
#ifndef BFT_TEST_FAKE_HQ_H
#define BFT_TEST_FAKE_HQ_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire/bfp_msg.h"
#include "bft_util.h"
#include "collector_fixture.h"

/* Append what fd has within ms to in; false at EOF or error. */
static inline bool read_some(int fd, struct bft_buf *in, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint8_t tmp[4096];
	ssize_t r;

	if (poll(&p, 1, ms) != 1)
		return true;
	r = read(fd, tmp, sizeof(tmp));
	if (r <= 0)
		return false;
	bft_buf_append(in, tmp, (size_t)r);
	return true;
}

/*
 * One whole message of version v from fd into m, waiting at most about
 * 10 s: its length, 0 if none came, -1 at EOF or on a decoding error.
 */
static inline int get_msg(int fd, struct bft_buf *in, unsigned int v,
			  enum bfp_ctx ctx, struct bfp_msg *m)
{
	struct bfp_error err;
	int i;

	for (i = 0; i < 500; i++) {
		int r = in->len ? bfp_decode(in->data, in->len, v, ctx, m,
					     &err) : 0;

		if (r > 0) {
			bft_buf_consume(in, (size_t)r);
			return r;
		}
		if (r < 0) {
			fprintf(stderr, "# decoding: %s\n", err.msg);
			return r;
		}
		if (!read_some(fd, in, 20))
			return -1;
	}
	return 0;
}

static inline int send_byte(int fd, uint8_t b)
{
	return write(fd, &b, 1) == 1 ? 0 : -1;
}

/*
 * Accept bfcollector's control connection (protocol 1), configure it
 * (heartbeat_ms, one data connection, run 1) and answer its data hello:
 * 0 with *ctl and *data open, or -1.
 */
static inline int fake_hq_greet(int lfd, int heartbeat_ms, struct bft_buf *cin,
				int *ctl, int *data)
{
	struct bfp_config cfg;
	struct bfp_msg m = { 0 }, cm = { .id = BFP_CONFIG, .config = &cfg };
	struct bft_buf out = { 0 };
	uint8_t hello[2];
	int ok;

	*ctl = accept_within(lfd, 20000);
	*data = -1;
	cin->len = 0;
	if (*ctl < 0 || get_msg(*ctl, cin, 1, BFP_CTX_HQ_GREETING, &m) != 2 ||
	    m.id != BFP_HELLO)
		return -1;
	bfp_config_init(&cfg);
	cfg.run_id = 1;
	cfg.heartbeat_ms = heartbeat_ms;
	ok = !bfp_encode(&out, 1, &cm) &&
	     write(*ctl, out.data, out.len) == (ssize_t)out.len;
	bfp_config_free(&cfg);
	bft_buf_free(&out);
	bfp_msg_free(&m);
	if (!ok)
		return -1;
	*data = accept_within(lfd, 20000);
	if (*data < 0 || read(*data, hello, 2) != 2 ||
	    hello[0] != BFP_DATA_HELLO || hello[1] != 1)
		return -1;
	return send_byte(*data, BFP_DATA_HELLO_REPLY);
}

/*
 * The mode of the next heartbeat on the control connection, or 0 if none
 * came within about ms; the data connection (data >= 0) is drained
 * meanwhile, so that bfcollector never waits on it.
 */
static inline uint8_t fake_hq_next_mode(int ctl, int data, struct bft_buf *cin,
					int ms)
{
	int64_t end = bft_mono_ms() + ms;

	while (bft_mono_ms() < end) {
		struct bfp_msg m = { 0 };
		struct bfp_error err;
		int r = cin->len ? bfp_decode(cin->data, cin->len, 1,
					      BFP_CTX_HQ_CONTROL, &m, &err) : 0;

		if (r < 0)
			return 0;
		if (r > 0) {
			uint8_t mode = m.id == BFP_HEARTBEAT ? m.mode : 0;

			bft_buf_consume(cin, (size_t)r);
			bfp_msg_free(&m);
			if (mode)
				return mode;
			continue;
		}
		if (data >= 0) {
			struct bft_buf junk = { 0 };

			read_some(data, &junk, 0);
			bft_buf_free(&junk);
		}
		if (!read_some(ctl, cin, 20))
			return 0;
	}
	return 0;
}

/* Heartbeats until one says mode (true), or none did within about ms. */
static inline bool fake_hq_wait_mode(int ctl, int data, struct bft_buf *cin,
				     uint8_t mode, int ms)
{
	int64_t end = bft_mono_ms() + ms;
	uint8_t got;

	do {
		got = fake_hq_next_mode(ctl, data, cin,
					(int)(end - bft_mono_ms()));
		if (got == mode)
			return true;
	} while (got && bft_mono_ms() < end);
	return false;
}

#endif /* BFT_TEST_FAKE_HQ_H */
