/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Varints of the record format (include/uapi/linux/bftrace.h, section 2.1),
 * and the growable byte buffer the encoders write into.
 *
 * Two encodings share the 7-bit groups of unsigned LEB128:
 *
 *   plain LEB128   every byte: bit 7 "more follows", bits 6..0 payload.
 *                  Used by escape payloads.
 *   packed         first byte: bit 7 flag (BFT_FLAG_ENTER / BFT_FLAG_EXIT),
 *                  bit 6 "more follows", bits 5..0 the low 6 bits; then, iff
 *                  bit 6, plain LEB128 of (value >> 6).  Used by ENTER/EXIT.
 *
 * Any u64 fits in at most BFT_VARINT_MAX bytes in either encoding.  The
 * decoders reject longer encodings and encodings whose value needs more than
 * 64 bits, and never read past the length they are given.
 *
 * A multi-byte encoding whose last byte is 0x00 is "overlong": the canonical
 * encoders here never produce one.  The decoders return it (the value is
 * well defined); callers decide whether it is an error, using
 * bft_varint_overlong().  bftrace's escape records are exactly the packed
 * overlong form "0x40|kind, 0x00".
 */
#ifndef BFT_VARINT_H
#define BFT_VARINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define BFT_VARINT_MAX		10
#define BFT_FLAG_ENTER		0x80
#define BFT_FLAG_EXIT		0x00
#define BFT_PACK_CONT		0x40
#define BFT_PACK_PAYLOAD	0x3f

/* Negative results of the decoders; 0 means "incomplete, need more bytes". */
enum bft_varint_err {
	BFT_VARINT_TOO_LONG = -1,	/* continuation past BFT_VARINT_MAX bytes */
	BFT_VARINT_OVERFLOW = -2,	/* value does not fit in 64 bits */
};

/* Bytes the canonical encodings of v take. */
unsigned int bft_leb128_len(uint64_t v);
unsigned int bft_packed_len(uint64_t v);

/*
 * Canonical encoders.  p must have room for BFT_VARINT_MAX bytes; they return
 * the number of bytes written (1..10).  flag is BFT_FLAG_ENTER or
 * BFT_FLAG_EXIT.  Inline: the collector encodes every event it writes.
 */
static inline unsigned int bft_leb128_put(uint8_t *p, uint64_t v)
{
	unsigned int n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline unsigned int bft_packed_put(uint8_t *p, unsigned int flag,
					  uint64_t v)
{
	if (v <= BFT_PACK_PAYLOAD) {
		p[0] = (uint8_t)(flag | v);
		return 1;
	}
	p[0] = (uint8_t)(flag | BFT_PACK_CONT | (v & BFT_PACK_PAYLOAD));
	return 1 + bft_leb128_put(p + 1, v >> 6);
}

/*
 * Decoders of the n bytes at p.  Return the length of the varint (> 0) and
 * store its value, 0 if the n bytes end inside the varint (n < 10), or a
 * negative enum bft_varint_err.  bft_packed_get ignores bit 7 of the first
 * byte: the caller reads the flag from p[0].
 */
int bft_leb128_get(const uint8_t *p, size_t n, uint64_t *v);
int bft_packed_get(const uint8_t *p, size_t n, uint64_t *v);

/* True if the len-byte varint at p is overlong (multi-byte, ends in 0x00). */
static inline bool bft_varint_overlong(const uint8_t *p, size_t len)
{
	return len > 1 && p[len - 1] == 0;
}

const char *bft_varint_strerror(int err);

/*
 * A growable byte buffer.  Zero-initialise it ({0}) before first use; free
 * it with bft_buf_free().  Functions return 0 or -ENOMEM.
 */
struct bft_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

int bft_buf_reserve(struct bft_buf *b, size_t extra);
int bft_buf_append(struct bft_buf *b, const void *p, size_t n);
/* Drop the first n bytes (what a consumer has taken). */
void bft_buf_consume(struct bft_buf *b, size_t n);
void bft_buf_free(struct bft_buf *b);

#endif /* BFT_VARINT_H */
