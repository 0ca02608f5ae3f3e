// SPDX-License-Identifier: GPL-2.0
/* libfxusdt.so: fx_usdt's probe in a shared library (see fx_usdt.c). */
#include <stdint.h>
#include <sys/sdt.h>

__attribute__((noipa)) void fxul_call(int k, int r)
{
	int v = -7 * r - k;
	unsigned long long u = UINT64_MAX - (unsigned long long)r;

	DTRACE_PROBE2(fxul, lib, v, u);
}
