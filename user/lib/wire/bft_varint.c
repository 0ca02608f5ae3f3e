// SPDX-License-Identifier: GPL-2.0
/*
 * bft_varint: the record format's plain and packed varints, and the
 * growable byte buffer encoders write into.  See bft_varint.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/bft_varint.h"

unsigned int bft_leb128_len(uint64_t v)
{
	unsigned int n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

unsigned int bft_packed_len(uint64_t v)
{
	return v <= BFT_PACK_PAYLOAD ? 1 : 1 + bft_leb128_len(v >> 6);
}

/*
 * Shared tail of both decoders: plain LEB128 groups starting at bit 'shift'
 * of the value, with at most 'room' bytes allowed before the encoding counts
 * as too long.
 */
static int leb128_tail(const uint8_t *p, size_t n, unsigned int shift,
		       unsigned int room, uint64_t *v)
{
	uint64_t val = *v;
	unsigned int i;

	for (i = 0; i < room; i++) {
		uint64_t g;

		if (i >= n)
			return 0;
		g = p[i] & 0x7f;
		/* room keeps shift <= 63; only the top group can overflow */
		if (shift > 57 && (g >> (64 - shift)) != 0)
			return BFT_VARINT_OVERFLOW;
		val |= g << shift;
		if (!(p[i] & 0x80)) {
			*v = val;
			return (int)i + 1;
		}
		shift += 7;
	}
	return BFT_VARINT_TOO_LONG;
}

int bft_leb128_get(const uint8_t *p, size_t n, uint64_t *v)
{
	uint64_t val = 0;
	int r;

	/* one-byte fast path: most payload fields are small */
	if (n && !(p[0] & 0x80)) {
		*v = p[0];
		return 1;
	}
	r = leb128_tail(p, n, 0, BFT_VARINT_MAX, &val);
	if (r > 0)
		*v = val;
	return r;
}

int bft_packed_get(const uint8_t *p, size_t n, uint64_t *v)
{
	uint64_t val;
	int r;

	if (!n)
		return 0;
	val = p[0] & BFT_PACK_PAYLOAD;
	if (!(p[0] & BFT_PACK_CONT)) {
		*v = val;
		return 1;
	}
	r = leb128_tail(p + 1, n - 1, 6, BFT_VARINT_MAX - 1, &val);
	if (r <= 0)
		return r;
	*v = val;
	return r + 1;
}

const char *bft_varint_strerror(int err)
{
	switch (err) {
	case 0:
		return "truncated varint";
	case BFT_VARINT_TOO_LONG:
		return "varint longer than 10 bytes";
	case BFT_VARINT_OVERFLOW:
		return "varint value beyond 64 bits";
	default:
		return err > 0 ? "no error" : "unknown varint error";
	}
}

int bft_buf_reserve(struct bft_buf *b, size_t extra)
{
	size_t want, cap;
	uint8_t *p;

	if (extra <= b->cap - b->len)
		return 0;
	if (extra > SIZE_MAX / 2 - b->len)
		return -ENOMEM;
	want = b->len + extra;
	cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int bft_buf_append(struct bft_buf *b, const void *p, size_t n)
{
	int r = bft_buf_reserve(b, n);

	if (r)
		return r;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void bft_buf_consume(struct bft_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

void bft_buf_free(struct bft_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
