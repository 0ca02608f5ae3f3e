// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq --udp's datagram path (udp.c over bfu_check()): a trace's control
 * connection says hello (version: the first byte's low bit), then the
 * input is records [u8 op][u16 len][len bytes]: a datagram from the
 * agent's address (op & 1: from another one), and with op & 2 time
 * passes, so gaps are given up.  Everything ends with hq_free(), which
 * writes the trace out.  Properties: a datagram bfu_check() takes has a
 * header that writes back to the same bytes and at least one message;
 * every datagram fed is counted exactly once (received, malformed, or
 * from no agent's address).
 */
#include <string.h>

#include "fuzz.h"
#include "fuzz_scratch.h"
#include "hq.h"
#include "wire/bfu_dgram.h"

static void check_header(const uint8_t *p, size_t n, unsigned int version)
{
	struct bfu_hdr h;
	uint8_t again[BFU_HDR_LEN];
	char why[192] = "";

	if (bfu_check(p, n, version, &h, why, sizeof(why))) {
		if (!why[0])
			fuzz_fail("a refused datagram without a reason");
		return;
	}
	bfu_put_hdr(again, &h);
	if (memcmp(again, p, BFU_HDR_LEN) || !h.nmsgs)
		fuzz_fail("an accepted header does not write back the same");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hq hq = { .listen_fd = -1, .ctl_fd = -1, .udp_fd = -1 };
	unsigned int version = (fuzz_take(&data, &size) & 1) + 1;
	uint8_t hello[2] = { BFP_HELLO, (uint8_t)version };
	uint64_t fed = 0, counted;
	struct trace *t;
	struct conn *c;

	hq_log_quiet = true;
	hq.o.outdir = fuzz_scratch("hq_udp");
	fuzz_scratch_clear();
	hq.o.gap_ms = 100;
	hq.o.live_flush_ms = 1;
	hq.o.udp = true;
	hq.o.reorder_bound = 64;
	hq.o.udp_reorder_bound = 64;
	hq.o.start = true;
	bfp_config_init(&hq.o.config);
	c = hq_conn_add(&hq, -1, CONN_GREETING);
	if (!c)
		goto out;
	snprintf(c->peer, sizeof(c->peer), "agent");
	snprintf(c->addr, sizeof(c->addr), "127.0.0.1");
	hq_conn_feed(&hq, c, hello, 2, false);
	while (size >= 3) {
		uint8_t op = fuzz_take(&data, &size);
		size_t n = (size_t)fuzz_take(&data, &size) << 8;

		n |= fuzz_take(&data, &size);
		if (n > size)
			n = size;
		check_header(data, n, version);
		hq_udp_feed(&hq, data, n, op & 1 ? "10.0.0.9" : "127.0.0.1");
		fed++;
		data += n;
		size -= n;
		if (op & 2) {
			unsigned int i;

			for (i = 0; i < hq.ntraces; i++)
				hq_trace_tick(&hq, hq.traces[i],
					      hq_now_ms() + 1000 * fed);
		}
	}
	t = hq.ntraces ? hq.traces[0] : NULL;
	counted = hq.udp_foreign + (t ? t->udp_dgrams + t->udp_malformed : 0);
	if (counted != fed)
		fuzz_fail("%llu datagrams fed, %llu counted",
			  (unsigned long long)fed, (unsigned long long)counted);
out:
	hq_free(&hq);
	bfp_config_free(&hq.o.config);
	return 0;
}
