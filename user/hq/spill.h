/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Text that the route (route.h) writes out only when the trace ends
 * (each thread's part of tree.txt and calls.txt), kept on disk as it
 * grows instead of in memory: one unlinked file per trace, in its
 * directory, and per buffer the list of the pieces it put there, copied
 * back out in order.
 */
#ifndef BFT_HQ_SPILL_H
#define BFT_HQ_SPILL_H

#include <stdint.h>
#include <stdio.h>

#include "wire/bft_varint.h"

struct spill_piece {
	uint64_t off, len;
};

/* What one buffer put in the spill file, in order. */
struct spill_list {
	struct spill_piece *v;
	uint32_t n, cap;
};

struct spill {
	int fd;			/* -1 until the first spill */
	uint64_t size;
	int err;		/* the first failure: no more spills, 0 if none */
};

/* Bytes spilled by every trace, for the tests. */
extern uint64_t spill_bytes_total;

void spill_init(struct spill *s);
/*
 * b's bytes to the spill file (made in dir), recorded in l, and b emptied;
 * on failure b is kept whole in memory and s->err set.
 */
void spill_put(struct spill *s, const char *dir, struct spill_list *l,
	       struct bft_buf *b);
/* l's pieces to out, in order: 0, or -errno. */
int spill_copy(struct spill *s, const struct spill_list *l, FILE *out);
void spill_list_free(struct spill_list *l);
void spill_close(struct spill *s);

#endif
