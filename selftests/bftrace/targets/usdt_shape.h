/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What targets/usdt.c passes at its sites, shared with usdt_test so that
 * the test knows every argument of round r in thread t (0 main, 1 worker).
 */
#ifndef BFT_USDT_SHAPE_H
#define BFT_USDT_SHAPE_H

#include <stdint.h>

#define USDT_WORKER_NAME "usdt-worker"

struct usdt_vals {
	int one;
	int neg;			/* negative, 32 bits */
	unsigned long long big;		/* needs all 64 bits */
	signed char ch;			/* negative, 8 bits */
	unsigned short ush;		/* 16 bits, top bit set */
	long long neg64;		/* negative, 64 bits */
	unsigned long long u64max;	/* near 2^64 */
	long long global;		/* what usdt_global holds */
};

/* targets/usdt_sema.c: the site behind the semaphore */
void usdt_sema(unsigned int r, unsigned int t);

static inline void usdt_shape(unsigned int r, unsigned int t,
			      struct usdt_vals *v)
{
	v->one = (int)(r * 10 + t);
	v->neg = -(int)(r * 100 + t);
	v->big = 0x8000000000000000ull + r * 16 + t;
	v->ch = (signed char)(-(int)(r + t) - 1);
	v->ush = (unsigned short)(0xfff0 + r + t);
	v->neg64 = -(1ll << 40) - (long long)(r * 2 + t);
	v->u64max = ~0ull - r - t;
	v->global = -(long long)(r * 1000 + t) * 1000000007ll;
}

#endif /* BFT_USDT_SHAPE_H */
