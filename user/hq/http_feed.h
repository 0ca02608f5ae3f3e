/* SPDX-License-Identifier: GPL-2.0 */
/* What one viewer of bfhq --http is sent (http_feed.c). */
#ifndef BFHQ_HTTP_FEED_H
#define BFHQ_HTTP_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/bft_varint.h"

struct feed;

/* A feed of the live directory dir (not opened yet); NULL: no memory. */
struct feed *feed_new(const char *dir);
/*
 * A feed of the lines of the file at path, each sent as an event named
 * event (a static string), from the first on; it never ends.
 */
struct feed *feed_new_lines(const char *path, const char *event);
/* Also "sent" events: the wall clock when stream lines were queued. */
void feed_stamps(struct feed *f);
/*
 * Append to out the events of what is new since the last call.  true once
 * the trace has ended and "end" was appended: nothing follows.
 */
bool feed_refill(struct feed *f, struct bft_buf *out);
void feed_free(struct feed *f);
/* n bytes of fd at off appended to b: 0, or -1 (short, or an error). */
int feed_read_at(int fd, uint64_t off, size_t n, struct bft_buf *b);

#endif /* BFHQ_HTTP_FEED_H */
