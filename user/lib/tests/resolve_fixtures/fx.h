/* SPDX-License-Identifier: GPL-2.0 */
/* Fixture programs for the resolver's unit tests and bfctl's guest tests. */
#ifndef FX_H
#define FX_H

/* noipa: no clones (foo.constprop.0), no inlining, no interprocedural
 * shortcuts, so every call in the source is one call at run time. */
#define FX_FN __attribute__((noipa))

int fxlib_add(int a, int b);
int fxlib_mul(int a, int b);

/* What "bytes" mode prints: a function's first bytes as the process sees
 * them in memory, "name hex", for the tests to compare with the file. */
#define FX_BYTES 16

#endif /* FX_H */
