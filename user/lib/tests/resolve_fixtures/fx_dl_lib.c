// SPDX-License-Identifier: GPL-2.0
/*
 * libfxdl.so: loaded by fx_dl with dlopen(3) after the trace has begun.
 * Its constructor calls one of its functions, inside dlopen().
 */
#include "fx.h"

volatile int fxdl_sink;

FX_FN int fxdl_ctor_work(int x)
{
	return x + fxdl_sink;
}

__attribute__((constructor)) static void fxdl_init(void)
{
	fxdl_sink = fxdl_ctor_work(1);
}

FX_FN int fxdl_leaf(int x)
{
	return x * 3 + fxdl_sink;
}

FX_FN int fxdl_entry(int x)
{
	return fxdl_leaf(x) + 1;
}
