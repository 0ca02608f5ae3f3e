/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bst_internal: what the bst_*.c files that implement bft_selftest.h share
 * and the tests do not see.
 */
#ifndef BST_INTERNAL_H
#define BST_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

/* On stderr as a TAP comment, next to the check that fails. */
#define LOG(...) fprintf(stderr, "# " __VA_ARGS__)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Make room for need elements of elem bytes in *arr (capacity *cap, at
 * least doubled); 0 or -ENOMEM, *arr untouched on failure.
 */
int bst_grow(void **arr, size_t *cap, size_t need, size_t elem);

#endif /* BST_INTERNAL_H */
