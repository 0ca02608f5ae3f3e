/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the codec unit tests: hex byte strings, collecting
 * decoded records and errors, decoding a whole stream.
 */
#ifndef BFT_TEST_H
#define BFT_TEST_H

#include <ftw.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/bft_stream.h"
#include "wire/bft_varint.h"

/* Parse "41 00 c0" (spaces optional) into out; returns bytes, -1 if bad. */
static inline int hex_parse(const char *hex, uint8_t *out, size_t max)
{
	size_t n = 0;

	while (*hex) {
		unsigned int v;

		if (*hex == ' ') {
			hex++;
			continue;
		}
		if (n == max || sscanf(hex, "%2x", &v) != 1 || !hex[1])
			return -1;
		out[n++] = (uint8_t)v;
		hex += 2;
	}
	return (int)n;
}

/* Format n bytes as lowercase hex without spaces into out (2n+1 bytes). */
static inline char *hex_format(const uint8_t *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = 0;
	return out;
}

/* Records and errors a decoder produced. */
struct rec_log {
	struct bft_record *r;
	size_t n, cap;
	struct bft_stream_error err[16];
	size_t nerr;
	int action;		/* what on_error answers */
};

static inline int rec_log_add(void *ctx, const struct bft_record *r)
{
	struct rec_log *l = ctx;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct bft_record *n = realloc(l->r, cap * sizeof(*n));

		if (!n)
			return -1;
		l->r = n;
		l->cap = cap;
	}
	l->r[l->n++] = *r;
	return 0;
}

static inline int rec_log_err(void *ctx, const struct bft_stream_error *e)
{
	struct rec_log *l = ctx;

	if (l->nerr < sizeof(l->err) / sizeof(l->err[0]))
		l->err[l->nerr] = *e;
	l->nerr++;
	return l->action;
}

static inline void rec_log_free(struct rec_log *l)
{
	free(l->r);
	memset(l, 0, sizeof(*l));
}

/* A decoder for cpu that logs into l. */
static inline void stream_open(struct bft_stream *s, struct rec_log *l,
			       uint32_t cpu, int action)
{
	struct bft_stream_opts o = {
		.cpu = cpu,
		.on_record = rec_log_add,
		.on_error = rec_log_err,
		.ctx = l,
	};

	l->action = action;
	bft_stream_init(s, &o);
}

/* Decode a whole buffer, fed in chunks of chunk bytes (0: at once). */
static inline int stream_decode(struct bft_stream *s, const uint8_t *p,
				size_t n, size_t chunk)
{
	size_t i;
	int r;

	if (!chunk)
		chunk = n ? n : 1;
	for (i = 0; i < n; i += chunk) {
		r = bft_stream_feed(s, p + i, n - i < chunk ? n - i : chunk);
		if (r)
			return r;
	}
	return bft_stream_finish(s);
}

/* A small deterministic PRNG (xorshift64*), so random tests replay. */
static inline uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static inline uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return n ? rng_next(s) % n : 0;
}

/* Valgrind is ~50x slower: randomized tests shrink under BFT_TEST_SLOW. */
static inline int test_scale(int normal)
{
	return getenv("BFT_TEST_SLOW") ? (normal / 20 ? normal / 20 : 1) :
					 normal;
}

/*
 * A whole file, NUL-terminated; its length without the NUL in *len if
 * len.  Read in pieces, so /proc files and pipes work too.  NULL if it
 * cannot be opened.
 */
static inline char *bft_test_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	struct bft_buf b = { 0 };
	char tmp[65536];
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		bft_buf_append(&b, tmp, n);
	fclose(f);
	bft_buf_append(&b, "", 1);
	if (len)
		*len = b.len - 1;
	return (char *)b.data;
}

static inline int bft_test_rm_one(const char *path, const struct stat *st,
				  int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Remove dir and everything under it (a test's scratch directory). */
static inline void bft_test_rmtree(const char *dir)
{
	nftw(dir, bft_test_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif /* BFT_TEST_H */
