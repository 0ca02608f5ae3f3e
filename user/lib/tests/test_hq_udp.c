// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq --udp's datagram path without sockets (hq_udp_feed): a datagram
 * that comes after its trace's control connection closed is still taken
 * (the network may deliver it after the TCP close), duplicates and
 * datagrams from another address are dropped and counted, and DataEnd
 * makes the sequence numbers never received count as missing, exactly.
 */
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "bft_test.h"
#include "hq.h"
#include "wire/bfu_dgram.h"

FIXTURE(hqu)
{
	char dir[64];
	struct hq hq;
	struct conn *ctl;
	struct trace *t;
};

FIXTURE_SETUP(hqu)
{
	uint8_t hello[2] = { BFP_HELLO, 1 };

	hq_log_quiet = true;
	snprintf(self->dir, sizeof(self->dir), "/tmp/bft-hqudp-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	memset(&self->hq, 0, sizeof(self->hq));
	self->hq.listen_fd = self->hq.ctl_fd = self->hq.udp_fd = -1;
	self->hq.o.outdir = self->dir;
	self->hq.o.gap_ms = 2000;
	self->hq.o.start = true;
	self->hq.o.udp = true;
	self->hq.o.udp_reorder_bound = HQ_UDP_REORDER_BOUND;
	bfp_config_init(&self->hq.o.config);
	self->ctl = hq_conn_add(&self->hq, -1, CONN_GREETING);
	ASSERT_NE(NULL, self->ctl);
	snprintf(self->ctl->addr, sizeof(self->ctl->addr), "127.0.0.1");
	hq_conn_feed(&self->hq, self->ctl, hello, 2, false);
	self->t = self->ctl->trace;
	ASSERT_NE(NULL, self->t);
}

FIXTURE_TEARDOWN(hqu)
{
	hq_free(&self->hq);
	bfp_config_free(&self->hq.o.config);
	bft_test_rmtree(self->dir);
}

/* A datagram of stream 0, packet pkt: entries of method 1 from seq on. */
static size_t dgram(uint8_t *p, uint8_t run, uint32_t pkt, uint32_t seq,
		    unsigned int n, bool maps)
{
	struct bfp_msg th = { .id = BFP_MAP_THREAD, .thread = 1, .str = "t",
			      .str_len = 1 };
	struct bfp_msg me = { .id = BFP_MAP_METHOD, .method = 1,
			      .str = "prog!f", .str_len = 6 };
	struct bfu_hdr h = { .run_id = run, .packet = pkt };
	struct bft_buf b = { 0 };
	unsigned int i;
	size_t len;

	if (maps) {
		bfp_encode(&b, 1, &th);
		bfp_encode(&b, 1, &me);
		h.nmsgs = 2;
	}
	for (i = 0; i < n; i++) {
		struct bfp_msg e = { .id = BFP_METHOD_ENTRY, .time = 1,
				     .seq = seq + i, .method = 1, .thread = 1 };

		bfp_encode(&b, 1, &e);
		h.nmsgs++;
	}
	bfu_put_hdr(p, &h);
	memcpy(p + BFU_HDR_LEN, b.data, b.len);
	len = BFU_HDR_LEN + b.len;
	bft_buf_free(&b);
	return len;
}

static void control(struct hq *hq, struct conn *c, const struct bfp_msg *m)
{
	struct bft_buf b = { 0 };

	bfp_encode(&b, 1, m);
	hq_conn_feed(hq, c, b.data, b.len, false);
	bft_buf_free(&b);
}

TEST_F(hqu, datagrams_after_the_control_close_are_taken_and_counted)
{
	struct bfp_msg end = { .id = BFP_DATA_END, .stream = 0, .packets = 3,
			       .seq = 12 };
	uint8_t p[BFU_PAYLOAD_MAX];
	size_t n;
	char path[128], *sum;

	/* packet 0: maps and sequences 0..3; packet 1 (4..7) never comes;
	 * packet 2 (8..10) after the close; 11 was sent in none of them */
	n = dgram(p, self->t->run_id, 0, 0, 4, true);
	hq_udp_feed(&self->hq, p, n, "127.0.0.1");
	EXPECT_EQ(4, self->t->routed);
	hq_udp_feed(&self->hq, p, n, "127.0.0.1");
	EXPECT_EQ(1, self->t->udp_dup);
	hq_udp_feed(&self->hq, p, n, "10.1.2.3");
	EXPECT_EQ(1, self->hq.udp_foreign);
	control(&self->hq, self->ctl, &end);
	hq_conn_feed(&self->hq, self->ctl, NULL, 0, true);
	ASSERT_TRUE(self->t->control_closed);
	EXPECT_TRUE(hq_udp_waiting(self->t));
	hq_trace_tick(&self->hq, self->t, hq_now_ms());
	EXPECT_FALSE(self->t->finished);	/* it waits for what is due */

	n = dgram(p, self->t->run_id, 2, 8, 3, false);
	hq_udp_feed(&self->hq, p, n, "127.0.0.1");
	EXPECT_EQ(3, self->t->udp_dgrams);	/* a duplicate is one too */
	EXPECT_EQ(0, self->t->udp_malformed);
	/* not all of it: gap timeout */
	hq_trace_tick(&self->hq, self->t, hq_now_ms() + 3000);
	ASSERT_TRUE(self->t->finished);
	EXPECT_EQ(7, self->t->routed);
	EXPECT_EQ(5, self->t->gap_missing);	/* 4..7 and 11 */
	EXPECT_EQ(1, self->t->udp_lost);	/* packet 1 */
	snprintf(path, sizeof(path), "%s/trace-1/summary.txt", self->dir);
	sum = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, sum);
	EXPECT_NE(NULL, strstr(sum, "datagrams:     3 received, 1 lost, 1 "
			       "duplicated, 0 late, 0 malformed\n"))
		TH_LOG("%s", sum);
	free(sum);
}

TEST_F(hqu, a_datagram_for_a_run_from_elsewhere_is_refused)
{
	uint8_t p[BFU_PAYLOAD_MAX];
	size_t n = dgram(p, self->t->run_id, 0, 0, 2, true);

	/* not the agent's address: bfhq-wide, not the trace's */
	hq_udp_feed(&self->hq, p, n, "192.0.2.7");
	EXPECT_EQ(1, self->hq.udp_foreign);
	EXPECT_EQ(0, self->t->udp_dgrams);
	/* the agent's address, another run: malformed, the agent's */
	n = dgram(p, (uint8_t)(self->t->run_id + 1), 0, 0, 2, true);
	hq_udp_feed(&self->hq, p, n, "127.0.0.1");
	EXPECT_EQ(1, self->t->udp_malformed);
	EXPECT_EQ(0, self->t->routed);
	/* --data-from any takes it */
	self->hq.o.data_from_any = true;
	n = dgram(p, self->t->run_id, 0, 0, 2, true);
	hq_udp_feed(&self->hq, p, n, "192.0.2.7");
	EXPECT_EQ(2, self->t->routed);
}

TEST_HARNESS_MAIN
