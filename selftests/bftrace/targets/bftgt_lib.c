// SPDX-License-Identifier: GPL-2.0
/*
 * libbftgt.so: a traced function that lives in a shared library, so the
 * tests cover a probe on a file other than the executable.
 */
#include "bftgt_lib.h"

__attribute__((noipa, used)) int bftgt_scale(int x)
{
	int r = x * 3 + 1;

	/* Keeps the body (and so the function) from being folded away. */
	asm volatile("" : "+r"(r) : : "memory");
	return r;
}
