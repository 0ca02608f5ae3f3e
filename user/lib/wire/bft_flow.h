/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The flow agent's output: one .flow file per thread ("thread-<tid>.flow")
 * and a method id mapping, ids.properties.
 *
 * .flow: packed varints with no header (bft_varint.h): ENTER id, or EXIT
 * (n - 1) for n consecutive exits.  The writer is canonical, byte for byte
 * what the flow agent's BinaryThreadRecorder writes: exits are only counted;
 * the pending run is written before the next ENTER and at close.  So two
 * EXIT events are never adjacent and no varint is overlong.  Ids are u64.
 *
 * ids.properties: UTF-8 lines "<key>=<decimal id>\n", LF only, no header, in
 * no particular order.
 *
 * Functions return 0 or a negative errno unless said otherwise.
 */
#ifndef BFT_FLOW_H
#define BFT_FLOW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "wire/bft_varint.h"

struct bft_flow_writer {
	/* private */
	struct bft_buf buf;	/* bytes not yet handed to f */
	struct bft_buf *out;	/* memory sink, or NULL */
	FILE *f;		/* file sink, or NULL */
	uint64_t pending;	/* exits counted, not written */
	uint64_t bytes;		/* written in total, pending run excluded */
	int err;		/* first error, sticky */
};

/* Write into out (appended to), or into f (buffered; f stays open). */
void bft_flow_writer_init_mem(struct bft_flow_writer *w, struct bft_buf *out);
void bft_flow_writer_init_file(struct bft_flow_writer *w, FILE *f);
/* A file sink is written in blocks of about this size. */
#define BFT_FLOW_FILE_BLOCK	65536

/* What the inline bft_flow_enter() and bft_flow_exit() leave to them. */
int bft_flow_enter_slow(struct bft_flow_writer *w, uint64_t id);
int bft_flow_exit_slow(struct bft_flow_writer *w, uint64_t n);

/*
 * Inline, as the collector calls them for every event: the usual ENTER is
 * the pending run, if any, and the id, into a buffer with room for both.
 */
static inline int bft_flow_enter(struct bft_flow_writer *w, uint64_t id)
{
	struct bft_buf *b = w->out ? w->out : &w->buf;
	size_t len = b->len;

	if (w->err || len + 2 * BFT_VARINT_MAX >= b->cap ||
	    (w->f && len + 2 * BFT_VARINT_MAX >= BFT_FLOW_FILE_BLOCK))
		return bft_flow_enter_slow(w, id);
	if (w->pending) {
		len += bft_packed_put(b->data + len, BFT_FLAG_EXIT,
				      w->pending - 1);
		w->pending = 0;
	}
	len += bft_packed_put(b->data + len, BFT_FLAG_ENTER, id);
	w->bytes += len - b->len;
	b->len = len;
	return 0;
}

/* n consecutive exits, n >= 1 (n = 0 is a no-op). */
static inline int bft_flow_exit(struct bft_flow_writer *w, uint64_t n)
{
	if (n > UINT64_MAX - w->pending)
		return bft_flow_exit_slow(w, n);
	w->pending += n;
	return w->err;
}
/* Write the pending exits and flush to the file: the file is complete. */
int bft_flow_writer_close(struct bft_flow_writer *w);
uint64_t bft_flow_writer_bytes(const struct bft_flow_writer *w);

/* "thread-<tid>.flow"; returns snprintf's result. */
int bft_flow_filename(char *buf, size_t size, uint64_t tid);

enum bft_flow_kind {
	BFT_FLOW_ENTER,
	BFT_FLOW_EXIT,
};

struct bft_flow_event {
	uint64_t value;		/* ENTER: method id; EXIT: number of exits */
	uint64_t offset;	/* of the event in the file */
	int kind;		/* enum bft_flow_kind */
};

struct bft_flow_error {
	uint64_t offset;
	char msg[160];
};

/*
 * Reader flags.  Without BFT_FLOW_STRICT the reader accepts everything that
 * decodes; with it, it also rejects what the canonical writer never writes:
 * overlong varints and adjacent EXIT events.  BFT_FLOW_BALANCED also rejects
 * an exit with no open frame (frames left open at the end are normal: a
 * thread may still be running when the file is closed).
 */
#define BFT_FLOW_STRICT		(1u << 0)
#define BFT_FLOW_BALANCED	(1u << 1)

/*
 * Read a whole .flow image.  Returns 0, -EPROTO with *err filled (truncated
 * or malformed varint, ...), or on_event's nonzero value.
 */
int bft_flow_read(const void *buf, size_t n, unsigned int flags,
		  int (*on_event)(void *ctx, const struct bft_flow_event *ev),
		  void *ctx, struct bft_flow_error *err);
/* The same for a file; -errno if it cannot be read. */
int bft_flow_read_file(const char *path, unsigned int flags,
		       int (*on_event)(void *ctx,
				       const struct bft_flow_event *ev),
		       void *ctx, struct bft_flow_error *err);

/*
 * ids.properties.  The writer refuses (-EINVAL) keys that would not read
 * back as written: empty, starting with '#', or holding '=', CR or LF.
 */
int bft_ids_write(FILE *f, const char *key, uint64_t id);

struct bft_ids_error {
	unsigned int line;	/* 1-based */
	char msg[160];
};

/*
 * Parse an ids.properties image.  Empty lines and lines starting with '#'
 * are skipped; a CR before the LF is dropped.  Every other line must be
 * "<non-empty key>=<decimal u64>", split at its last '='.  on_line gets the
 * key (not NUL-terminated) and the id.  Returns 0, -EPROTO with *err filled,
 * or on_line's nonzero value.
 */
int bft_ids_parse(const char *buf, size_t n,
		  int (*on_line)(void *ctx, const char *key, size_t keylen,
				 uint64_t id),
		  void *ctx, struct bft_ids_error *err);
int bft_ids_read_file(const char *path,
		      int (*on_line)(void *ctx, const char *key,
				     size_t keylen, uint64_t id),
		      void *ctx, struct bft_ids_error *err);

#endif /* BFT_FLOW_H */
