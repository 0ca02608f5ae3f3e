// SPDX-License-Identifier: GPL-2.0
/*
 * bfp_wire: the Bytefrog wire's primitives (big-endian integers, Java
 * modified UTF-8 strings) and their conversions.  See bfp_wire.h.
 */
#include <errno.h>
#include <string.h>

#include "wire/bfp_wire.h"

bool bfp_get_bytes(struct bfp_rd *r, size_t n, const uint8_t **p)
{
	if (r->short_read || bfp_rd_left(r) < n) {
		r->short_read = true;
		return false;
	}
	*p = r->p + r->pos;
	r->pos += n;
	return true;
}

static bool get_be(struct bfp_rd *r, unsigned int n, uint64_t *v)
{
	const uint8_t *p;
	uint64_t x = 0;
	unsigned int i;

	if (!bfp_get_bytes(r, n, &p))
		return false;
	for (i = 0; i < n; i++)
		x = x << 8 | p[i];
	*v = x;
	return true;
}

bool bfp_get_u8(struct bfp_rd *r, uint8_t *v)
{
	uint64_t x;

	if (!get_be(r, 1, &x))
		return false;
	*v = (uint8_t)x;
	return true;
}

bool bfp_get_u16(struct bfp_rd *r, uint16_t *v)
{
	uint64_t x;

	if (!get_be(r, 2, &x))
		return false;
	*v = (uint16_t)x;
	return true;
}

bool bfp_get_u32(struct bfp_rd *r, uint32_t *v)
{
	uint64_t x;

	if (!get_be(r, 4, &x))
		return false;
	*v = (uint32_t)x;
	return true;
}

bool bfp_get_u64(struct bfp_rd *r, uint64_t *v)
{
	return get_be(r, 8, v);
}

static int put_be(struct bft_buf *b, unsigned int n, uint64_t v)
{
	uint8_t tmp[8];
	unsigned int i;

	for (i = 0; i < n; i++)
		tmp[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	return bft_buf_append(b, tmp, n);
}

int bfp_put_u8(struct bft_buf *b, uint8_t v)
{
	return put_be(b, 1, v);
}

int bfp_put_u16(struct bft_buf *b, uint16_t v)
{
	return put_be(b, 2, v);
}

int bfp_put_u32(struct bft_buf *b, uint32_t v)
{
	return put_be(b, 4, v);
}

int bfp_put_u64(struct bft_buf *b, uint64_t v)
{
	return put_be(b, 8, v);
}

/*
 * Next code point of standard UTF-8 at s[*i] (n bytes); advances *i.
 * Invalid input (overlong forms, surrogates, beyond U+10FFFF, truncated or
 * stray bytes) yields U+FFFD and consumes one byte.
 */
static uint32_t utf8_next(const uint8_t *s, size_t n, size_t *i)
{
	uint8_t c = s[*i];
	uint32_t cp, min;
	unsigned int len, k;

	if (c < 0x80) {
		(*i)++;
		return c;
	}
	if ((c & 0xe0) == 0xc0) {
		len = 2; cp = c & 0x1f; min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3; cp = c & 0x0f; min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4; cp = c & 0x07; min = 0x10000;
	} else {
		goto bad;
	}
	if (n - *i < len)
		goto bad;
	for (k = 1; k < len; k++) {
		if ((s[*i + k] & 0xc0) != 0x80)
			goto bad;
		cp = cp << 6 | (s[*i + k] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		goto bad;
	*i += len;
	return cp;
bad:
	(*i)++;
	return 0xfffd;
}

/* The modified UTF-8 of one code point into o (room for 6); its length. */
static unsigned int mutf8_char(uint32_t cp, uint8_t *o)
{
	if (cp >= 0x10000) {
		uint32_t v = cp - 0x10000;
		unsigned int n = mutf8_char(0xd800 + (v >> 10), o);

		return n + mutf8_char(0xdc00 + (v & 0x3ff), o + n);
	}
	if (cp >= 1 && cp < 0x80) {
		o[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {	/* NUL included: C0 80 */
		o[0] = (uint8_t)(0xc0 | cp >> 6);
		o[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	o[0] = (uint8_t)(0xe0 | cp >> 12);
	o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
	o[2] = (uint8_t)(0x80 | (cp & 0x3f));
	return 3;
}

/*
 * How many bytes from s (at most n) modified UTF-8 keeps as they are:
 * 0x01..0x7f.  Eight at a time: a byte with its top bit set shows in w, a
 * zero byte in w - ones, which borrows from nothing else while every byte
 * is 1..0x7f.
 */
static size_t ascii_run(const uint8_t *s, size_t n)
{
	const uint64_t ones = 0x0101010101010101ull, top = ones << 7;
	size_t i = 0;

	for (; n - i >= 8; i += 8) {
		uint64_t w;

		memcpy(&w, s + i, 8);
		if ((w | (w - ones)) & top)
			break;
	}
	while (i < n && s[i] && s[i] < 0x80)
		i++;
	return i;
}

size_t bfp_mutf8_encode(const char *s, size_t n, uint8_t *out, size_t cap)
{
	const uint8_t *u = (const uint8_t *)s;
	size_t i = 0, len = 0;

	while (i < n) {
		uint8_t tmp[6];
		unsigned int k;

		if (u[i] && u[i] < 0x80) {	/* most of them: as they are */
			if (out && len < cap)
				out[len] = u[i];
			len++;
			i++;
			continue;
		}
		k = mutf8_char(utf8_next(u, n, &i), tmp);
		if (out && len + k <= cap)
			memcpy(out + len, tmp, k);
		len += k;
	}
	return len;
}

/* Standard UTF-8 of one code point (never a surrogate) into o. */
static unsigned int utf8_char(uint32_t cp, char *o)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* One Java char (UTF-16 unit) from modified UTF-8, as readUTF decodes it. */
static int mutf8_unit(const uint8_t *in, size_t n, size_t *i, uint32_t *u)
{
	uint8_t c = in[*i];

	if (c < 0x80) {
		*u = c;
		*i += 1;
		return 0;
	}
	if ((c & 0xe0) == 0xc0) {
		if (n - *i < 2 || (in[*i + 1] & 0xc0) != 0x80)
			return -EILSEQ;
		*u = (uint32_t)(c & 0x1f) << 6 | (in[*i + 1] & 0x3f);
		*i += 2;
		return 0;
	}
	if ((c & 0xf0) == 0xe0) {
		if (n - *i < 3 || (in[*i + 1] & 0xc0) != 0x80 ||
		    (in[*i + 2] & 0xc0) != 0x80)
			return -EILSEQ;
		*u = (uint32_t)(c & 0x0f) << 12 |
		     (uint32_t)(in[*i + 1] & 0x3f) << 6 | (in[*i + 2] & 0x3f);
		*i += 3;
		return 0;
	}
	return -EILSEQ;
}

int bfp_mutf8_decode(const uint8_t *in, size_t n, char *out)
{
	size_t i = 0, o = 0;

	while (i < n) {
		uint32_t u, lo;
		int err = mutf8_unit(in, n, &i, &u);

		if (err)
			return err;
		if (u >= 0xd800 && u <= 0xdbff && i < n) {
			size_t j = i;

			if (!mutf8_unit(in, n, &j, &lo) &&
			    lo >= 0xdc00 && lo <= 0xdfff) {
				i = j;
				o += utf8_char(0x10000 + ((u - 0xd800) << 10) +
					       (lo - 0xdc00), out + o);
				continue;
			}
		}
		if (u >= 0xd800 && u <= 0xdfff)
			u = 0xfffd;
		o += utf8_char(u, out + o);
	}
	out[o] = 0;
	return (int)o;
}

int bfp_put_utf(struct bft_buf *b, const char *s, size_t n, bool truncate)
{
	const uint8_t *u = (const uint8_t *)s;
	size_t i = 0, len = 0, at;
	int err;

	/* a byte takes 3 at most: only a long string may not fit */
	if (!truncate && n > BFP_UTF_MAX / 3 &&
	    bfp_mutf8_encode(s, n, NULL, 0) > BFP_UTF_MAX)
		return -EMSGSIZE;
	/*
	 * At most 3 bytes per byte of @s (an invalid byte becomes U+FFFD):
	 * not the whole 64 KiB a string may take, which made every buffer
	 * that ever held a short name 128 KiB.
	 */
	err = bft_buf_reserve(b, 2 + (n < BFP_UTF_MAX / 3 ? 3 * n : BFP_UTF_MAX));
	if (err)
		return err;
	at = b->len;
	b->len += 2;
	while (i < n) {
		size_t run = ascii_run(u + i, n - i);
		uint8_t tmp[6];
		unsigned int k;

		if (run) {	/* most of them: as they are */
			if (run > BFP_UTF_MAX - len)
				run = BFP_UTF_MAX - len;
			if (!run)
				break;
			memcpy(b->data + b->len, u + i, run);
			b->len += run;
			len += run;
			i += run;
			continue;
		}
		k = mutf8_char(utf8_next(u, n, &i), tmp);
		if (len + k > BFP_UTF_MAX)
			break;
		memcpy(b->data + b->len, tmp, k);
		b->len += k;
		len += k;
	}
	b->data[at] = (uint8_t)(len >> 8);
	b->data[at + 1] = (uint8_t)len;
	return 0;
}

int bfp_get_utf(struct bfp_rd *r, char *out, size_t *outlen)
{
	const uint8_t *p;
	uint16_t n;
	int len;

	if (!bfp_get_u16(r, &n) || !bfp_get_bytes(r, n, &p))
		return -EAGAIN;
	len = bfp_mutf8_decode(p, n, out);
	if (len < 0)
		return len;
	*outlen = (size_t)len;
	return 0;
}
