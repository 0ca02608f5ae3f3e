/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bst_internal: what the bst_*.c files that implement bft_selftest.h share
 * and the tests do not see.
 */
#ifndef BST_INTERNAL_H
#define BST_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* On stderr as a TAP comment, next to the check that fails. */
#define LOG(...) fprintf(stderr, "# " __VA_ARGS__)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Make room for need elements of elem bytes in *arr (capacity *cap, at
 * least doubled); 0 or -ENOMEM, *arr untouched on failure.
 */
int bst_grow(void **arr, size_t *cap, size_t need, size_t elem);

/* Each ring's bytes, as a rings callback hands them over (bst_traces.c). */
struct bst_bufs {
	uint8_t **data;
	size_t *len, *cap;
	uint32_t n;
};

int bst_bufs_init(struct bst_bufs *bb, uint32_t n);
/* A bft_rings_cb: appends to ring cpu's buffer.  0 or -ENOMEM. */
int bst_bufs_append(unsigned int cpu, const void *data, size_t len,
		    void *arg);
void bst_bufs_free(struct bst_bufs *bb);

#endif /* BST_INTERNAL_H */
