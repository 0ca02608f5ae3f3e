// SPDX-License-Identifier: GPL-2.0
/*
 * bft_flow: the flow agent's output, .flow files per thread and
 * ids.properties, written and read.  See bft_flow.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "wire/bft_flow.h"

void bft_flow_writer_init_mem(struct bft_flow_writer *w, struct bft_buf *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
}

void bft_flow_writer_init_file(struct bft_flow_writer *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
}

static int flush_file(struct bft_flow_writer *w)
{
	if (!w->f || !w->buf.len)
		return 0;
	if (fwrite(w->buf.data, 1, w->buf.len, w->f) != w->buf.len)
		return -EIO;
	w->buf.len = 0;
	return 0;
}

/* Encoded in place: an event is a byte or two, too small for a copy. */
static int put(struct bft_flow_writer *w, unsigned int flag, uint64_t v)
{
	struct bft_buf *b = w->out ? w->out : &w->buf;
	unsigned int n;

	if (w->err)
		return w->err;
	if (b->cap - b->len < BFT_VARINT_MAX &&
	    (w->err = bft_buf_reserve(b, BFT_VARINT_MAX)))
		return w->err;
	n = bft_packed_put(b->data + b->len, flag, v);
	b->len += n;
	if (w->f && b->len >= BFT_FLOW_FILE_BLOCK && (w->err = flush_file(w)))
		return w->err;
	w->bytes += n;
	return 0;
}

/* The pending run: "n exits" is written as EXIT n - 1. */
static int flush_pending(struct bft_flow_writer *w)
{
	int r;

	if (!w->pending)
		return w->err;
	r = put(w, BFT_FLAG_EXIT, w->pending - 1);
	w->pending = 0;
	return r;
}

int bft_flow_enter_slow(struct bft_flow_writer *w, uint64_t id)
{
	int r = flush_pending(w);

	return r ? r : put(w, BFT_FLAG_ENTER, id);
}

int bft_flow_exit_slow(struct bft_flow_writer *w, uint64_t n)
{
	/* a run beyond 2^64 - 1 exits cannot be one event */
	if (n > UINT64_MAX - w->pending) {
		int r = flush_pending(w);

		if (r)
			return r;
	}
	w->pending += n;
	return w->err;
}

int bft_flow_writer_close(struct bft_flow_writer *w)
{
	int r = flush_pending(w);

	if (!r)
		r = flush_file(w);
	if (!r && w->f && fflush(w->f))
		r = -EIO;
	if (r && !w->err)
		w->err = r;
	bft_buf_free(&w->buf);
	return r;
}

uint64_t bft_flow_writer_bytes(const struct bft_flow_writer *w)
{
	return w->bytes;
}

int bft_flow_filename(char *buf, size_t size, uint64_t tid)
{
	return snprintf(buf, size, "thread-%" PRIu64 ".flow", tid);
}

static int flow_fail(struct bft_flow_error *err, uint64_t off,
		     const char *what)
{
	if (err) {
		err->offset = off;
		snprintf(err->msg, sizeof(err->msg), "offset %" PRIu64 ": %s",
			 off, what);
	}
	return -EPROTO;
}

int bft_flow_read(const void *buf, size_t n, unsigned int flags,
		  int (*on_event)(void *ctx, const struct bft_flow_event *ev),
		  void *ctx, struct bft_flow_error *err)
{
	const uint8_t *p = buf;
	uint64_t depth = 0;
	size_t pos = 0;
	int prev_exit = 0;

	while (pos < n) {
		struct bft_flow_event ev;
		uint64_t v;
		int r = bft_packed_get(p + pos, n - pos, &v);

		if (r <= 0)
			return flow_fail(err, pos, bft_varint_strerror(r));
		if ((flags & BFT_FLOW_STRICT) &&
		    bft_varint_overlong(p + pos, (size_t)r))
			return flow_fail(err, pos, "overlong varint");
		ev.offset = pos;
		if (p[pos] & BFT_FLAG_ENTER) {
			ev.kind = BFT_FLOW_ENTER;
			ev.value = v;
			depth++;
			prev_exit = 0;
		} else {
			if (v == UINT64_MAX)
				return flow_fail(err, pos,
						 "exit run beyond 2^64 - 1");
			if ((flags & BFT_FLOW_STRICT) && prev_exit)
				return flow_fail(err, pos,
						 "adjacent EXIT events");
			ev.kind = BFT_FLOW_EXIT;
			ev.value = v + 1;
			if ((flags & BFT_FLOW_BALANCED) && ev.value > depth)
				return flow_fail(err, pos,
						 "exit with no open frame");
			depth = ev.value > depth ? 0 : depth - ev.value;
			prev_exit = 1;
		}
		pos += (size_t)r;
		if (on_event) {
			r = on_event(ctx, &ev);
			if (r)
				return r;
		}
	}
	return 0;
}

/* Read a whole file into a malloc'ed buffer. */
static int slurp(const char *path, char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct bft_buf b = { 0 };
	int r = 0;

	if (!f)
		return -errno;
	for (;;) {
		size_t got;

		r = bft_buf_reserve(&b, 65536);
		if (r)
			break;
		got = fread(b.data + b.len, 1, b.cap - b.len, f);
		b.len += got;
		if (got == 0) {
			if (ferror(f))
				r = -EIO;
			break;
		}
	}
	fclose(f);
	if (r) {
		bft_buf_free(&b);
		return r;
	}
	*data = (char *)b.data;
	*len = b.len;
	return 0;
}

int bft_flow_read_file(const char *path, unsigned int flags,
		       int (*on_event)(void *ctx,
				       const struct bft_flow_event *ev),
		       void *ctx, struct bft_flow_error *err)
{
	char *data = NULL;
	size_t len = 0;
	int r = slurp(path, &data, &len);

	if (r)
		return r;
	r = bft_flow_read(data, len, flags, on_event, ctx, err);
	free(data);
	return r;
}

int bft_ids_write(FILE *f, const char *key, uint64_t id)
{
	if (!key[0] || key[0] == '#' || strpbrk(key, "=\r\n"))
		return -EINVAL;
	if (fprintf(f, "%s=%" PRIu64 "\n", key, id) < 0)
		return -EIO;
	return 0;
}

static int ids_fail(struct bft_ids_error *err, unsigned int line,
		    const char *what)
{
	if (err) {
		err->line = line;
		snprintf(err->msg, sizeof(err->msg), "line %u: %s", line,
			 what);
	}
	return -EPROTO;
}

int bft_ids_parse(const char *buf, size_t n,
		  int (*on_line)(void *ctx, const char *key, size_t keylen,
				 uint64_t id),
		  void *ctx, struct bft_ids_error *err)
{
	unsigned int line = 0;
	size_t pos = 0;

	while (pos < n) {
		const char *s = buf + pos, *nl, *eq = NULL, *d;
		size_t len, i;
		uint64_t id = 0;
		int r;

		nl = memchr(s, '\n', n - pos);
		len = nl ? (size_t)(nl - s) : n - pos;
		pos += len + (nl != NULL);
		line++;
		if (len && s[len - 1] == '\r')
			len--;
		if (!len || s[0] == '#')
			continue;
		for (i = len; i-- > 0;)
			if (s[i] == '=') {
				eq = s + i;
				break;
			}
		if (!eq)
			return ids_fail(err, line, "no '=' in the line");
		if (eq == s)
			return ids_fail(err, line, "empty key");
		if (eq + 1 == s + len)
			return ids_fail(err, line, "no id after '='");
		for (d = eq + 1; d < s + len; d++) {
			unsigned int digit = (unsigned int)(*d - '0');

			if (digit > 9)
				return ids_fail(err, line,
						"id is not a decimal number");
			if (id > (UINT64_MAX - digit) / 10)
				return ids_fail(err, line,
						"id beyond 2^64 - 1");
			id = id * 10 + digit;
		}
		if (on_line) {
			r = on_line(ctx, s, (size_t)(eq - s), id);
			if (r)
				return r;
		}
	}
	return 0;
}

int bft_ids_read_file(const char *path,
		      int (*on_line)(void *ctx, const char *key,
				     size_t keylen, uint64_t id),
		      void *ctx, struct bft_ids_error *err)
{
	char *data = NULL;
	size_t len = 0;
	int r = slurp(path, &data, &len);

	if (r)
		return r;
	r = bft_ids_parse(data, len, on_line, ctx, err);
	free(data);
	return r;
}
