// SPDX-License-Identifier: GPL-2.0
/*
 * The UDP datagram layout (bfu_dgram.h): writing its header, and the one
 * check every received datagram passes before anything in it is used.
 * A datagram comes from anyone who can reach the port, so the check
 * decodes every message rather than trusting the header's count.
 */
#include <errno.h>
#include <stdio.h>

#include "wire/bfu_dgram.h"

void bfu_put_hdr(uint8_t *p, const struct bfu_hdr *h)
{
	p[0] = 'B';
	p[1] = 'U';
	p[2] = BFU_LAYOUT;
	p[3] = h->run_id;
	p[4] = h->stream;
	p[5] = h->nmsgs;
	p[6] = 0;
	p[7] = 0;
	bfp_be32(p + 8, h->packet);
}

static bool routable(uint8_t id)
{
	/* An Error belongs on TCP, where the trace's end is ordered. */
	return id == BFP_MAP_THREAD || id == BFP_MAP_METHOD ||
	       id == BFP_MAP_EXCEPTION || bfp_id_sequenced(id);
}

int bfu_check(const uint8_t *p, size_t n, unsigned int version,
	      struct bfu_hdr *h, char *why, size_t whylen)
{
	struct bfp_msg m = { 0 };
	struct bfp_error err;
	size_t pos = BFU_HDR_LEN;
	bool routable_refused = false;
	unsigned int k = 0;
	int r = -EPROTO;

	if (n < BFU_HDR_LEN || n > BFU_PAYLOAD_MAX) {
		snprintf(why, whylen, "a datagram of %zu bytes (a header is %u, "
			 "the most is %u)", n, BFU_HDR_LEN, BFU_PAYLOAD_MAX);
		return -EPROTO;
	}
	if (p[0] != 'B' || p[1] != 'U' || p[2] != BFU_LAYOUT || p[6] || p[7]) {
		snprintf(why, whylen, "not a bftrace data datagram (header "
			 "%02x %02x %02x)", p[0], p[1], p[2]);
		return -EPROTO;
	}
	h->run_id = p[3];
	h->stream = p[4];
	h->nmsgs = p[5];
	h->packet = (uint32_t)p[8] << 24 | (uint32_t)p[9] << 16 |
		    (uint32_t)p[10] << 8 | p[11];
	if (!h->nmsgs) {
		snprintf(why, whylen, "a datagram without messages");
		return -EPROTO;
	}
	while (pos < n && k < h->nmsgs) {
		r = bfp_decode(p + pos, n - pos, version, BFP_CTX_HQ_DATA, &m,
			       &err);
		if (r <= 0)
			break;
		if (!routable(m.id)) {
			snprintf(why, whylen, "message %s in a datagram",
				 bfp_id_name(m.id));
			r = -EPROTO;
			routable_refused = true;
			break;
		}
		pos += (size_t)r;
		k++;
	}
	bfp_msg_free(&m);
	if (r > 0 && k == h->nmsgs && pos == n)
		return 0;
	if (r == 0)
		snprintf(why, whylen, "message %u is cut off at the end", k + 1);
	else if (r > 0)
		snprintf(why, whylen, "the header says %u messages, the "
			 "datagram holds %s", h->nmsgs, k < h->nmsgs ?
			 "fewer" : "more bytes");
	else if (r != -EPROTO || !routable_refused)
		snprintf(why, whylen, "message %u: %s", k + 1, err.msg);
	return -EPROTO;
}
