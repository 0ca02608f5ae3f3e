/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bytefrog data messages in UDP datagrams (bftrace's own, docs/udp-data.md).
 *
 * A datagram is a 12-byte header and whole data messages, never a message
 * cut in two, at most BFU_PAYLOAD_MAX bytes in all so that it fits one
 * Ethernet frame:
 *
 *   0  u8  'B'           magic, with the next byte
 *   1  u8  'U'
 *   2  u8  layout        BFU_LAYOUT (1)
 *   3  u8  run id        the run HQ gave the control connection
 *   4  u8  stream        0 .. numDataSenders-1 (the data sender)
 *   5  u8  messages      how many messages follow (>= 1)
 *   6  u16 reserved      0
 *   8  u32 packet        the stream's datagram sequence number, from 0
 *  12  messages          Bytefrog data messages, whole
 *
 * Numbers are big-endian, as everywhere in Bytefrog.
 */
#ifndef BFU_DGRAM_H
#define BFU_DGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/bfp_msg.h"

#define BFU_PAYLOAD_MAX	1472	/* UDP payload in one 1500-byte frame */
#define BFU_HDR_LEN	12
#define BFU_LAYOUT	1
#define BFU_MSGS_MAX	255

struct bfu_hdr {
	uint8_t run_id;
	uint8_t stream;
	uint8_t nmsgs;
	uint32_t packet;
};

/* Write h's header at p (BFU_HDR_LEN bytes). */
void bfu_put_hdr(uint8_t *p, const struct bfu_hdr *h);

/*
 * Check the n bytes of a datagram: its header into *h, and that it holds
 * exactly h->nmsgs whole data messages of protocol version that HQ may
 * route (maps and sequenced events).  0, or -EPROTO with why filled (a
 * sentence); nothing of a refused datagram may be used.
 */
int bfu_check(const uint8_t *p, size_t n, unsigned int version,
	      struct bfu_hdr *h, char *why, size_t whylen);

#endif /* BFU_DGRAM_H */
