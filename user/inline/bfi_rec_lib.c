// SPDX-License-Identifier: GPL-2.0
/*
 * bfi_rec_lib: the two C library functions a compiler may call on its own
 * (to clear or copy a struct) even in freestanding code; the recorder has
 * no C library.
 */
#include "bfi_rec.h"

void *memset(void *d, int v, size_t n)
{
	volatile unsigned char *p = d;

	while (n--)
		*p++ = (unsigned char)v;
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	volatile unsigned char *p = d;
	const unsigned char *q = s;

	while (n--)
		*p++ = *q++;
	return d;
}
