// SPDX-License-Identifier: GPL-2.0
/* libfx.so: exported functions, a local one, an alias. */
#include "fx.h"

volatile int fxlib_noise;

FX_FN static int fxlib_local(int x)
{
	return x ^ fxlib_noise;
}

FX_FN int fxlib_add(int a, int b)
{
	return fxlib_local(a) + b;
}

FX_FN int fxlib_mul(int a, int b)
{
	return a * b + fxlib_noise;
}

int fxlib_mul_alias(int a, int b) __attribute__((alias("fxlib_mul")));
