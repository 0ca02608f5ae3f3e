/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Primitives of the Bytefrog wire (seeds/000, notes/bytefrog-wire.md §1):
 * what java.io.DataOutputStream writes and DataInputStream reads.
 *
 *   - integers are big-endian; "int" is 32 bits, "short" 16, "byte" 8;
 *   - a string ("UTF") is a u16 byte length followed by Java modified
 *     UTF-8: NUL is C0 80, a character beyond U+FFFF is a surrogate pair
 *     written as two 3-byte sequences, and the 4-byte form of standard
 *     UTF-8 is never used (HQ's readUTF rejects it).
 *
 * In this program strings are standard UTF-8; the conversions happen here
 * and nowhere else.
 *
 * struct bfp_rd is a bounds-checked reader over a byte range: every get
 * fails (returns false, sets r->short_read) instead of reading past the end,
 * so a decoder can read a whole message and check once at the end.
 */
#ifndef BFP_WIRE_H
#define BFP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/bft_varint.h"

#define BFP_UTF_MAX	65535u	/* writeUTF's limit, in encoded bytes */

struct bfp_rd {
	const uint8_t *p;
	size_t len;
	size_t pos;
	bool short_read;	/* a get wanted more bytes than were left */
};

static inline void bfp_rd_init(struct bfp_rd *r, const void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->pos = 0;
	r->short_read = false;
}

static inline size_t bfp_rd_left(const struct bfp_rd *r)
{
	return r->len - r->pos;
}

bool bfp_get_u8(struct bfp_rd *r, uint8_t *v);
bool bfp_get_u16(struct bfp_rd *r, uint16_t *v);
bool bfp_get_u32(struct bfp_rd *r, uint32_t *v);
bool bfp_get_u64(struct bfp_rd *r, uint64_t *v);
/* n raw bytes: *p points into the reader's buffer. */
bool bfp_get_bytes(struct bfp_rd *r, size_t n, const uint8_t **p);

/* Appenders: 0 or -ENOMEM. */
int bfp_put_u8(struct bft_buf *b, uint8_t v);
int bfp_put_u16(struct bft_buf *b, uint16_t v);
int bfp_put_u32(struct bft_buf *b, uint32_t v);
int bfp_put_u64(struct bft_buf *b, uint64_t v);

/*
 * Modified UTF-8 from standard UTF-8.  A byte that is not part of a valid
 * UTF-8 sequence becomes U+FFFD (names come from /proc and ELF files, which
 * promise nothing).  Returns the encoded length it would have (it may exceed
 * BFP_UTF_MAX); writes at most cap bytes into out (out may be NULL).
 */
size_t bfp_mutf8_encode(const char *s, size_t n, uint8_t *out, size_t cap);

/*
 * Standard UTF-8 from modified UTF-8, as readUTF accepts it: a 4-byte
 * sequence or a broken one is an error (-EILSEQ).  A lone surrogate, legal
 * in a Java string but not in UTF-8, becomes U+FFFD.  The result is never
 * longer than the input; out must hold n + 1 bytes (it is NUL-terminated,
 * though it may hold NULs of its own).  Returns the length, or -EILSEQ.
 */
int bfp_mutf8_decode(const uint8_t *in, size_t n, char *out);

/*
 * writeUTF: u16 length and modified UTF-8 of the UTF-8 string s (n bytes).
 * A string whose encoding exceeds BFP_UTF_MAX is cut at the last whole
 * character that fits if truncate is set (the protocol says names are
 * truncated), else -EMSGSIZE.  Returns 0, -ENOMEM or -EMSGSIZE.
 */
int bfp_put_utf(struct bft_buf *b, const char *s, size_t n, bool truncate);

/*
 * readUTF into out (BFP_UTF_MAX + 1 bytes suffice), NUL-terminated, length
 * in *outlen.  Returns 0, -EAGAIN if the reader ran short (r->short_read
 * set), or -EILSEQ.
 */
int bfp_get_utf(struct bfp_rd *r, char *out, size_t *outlen);

#endif /* BFP_WIRE_H */
