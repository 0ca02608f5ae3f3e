// SPDX-License-Identifier: GPL-2.0
/*
 * fx_usdt's probe behind a semaphore (see fx_usdt.c); a file of its own,
 * since <sys/sdt.h> gives every probe of a file with semaphores one.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <sys/sdt.h>

__extension__ unsigned short fxu_gated_semaphore
	__attribute__((section(".probes")));

__attribute__((noipa)) void fxu_gated(int k, int r)
{
	if (fxu_gated_semaphore) {
		printf("gated %d\n", 10 * k + r);
		STAP_PROBE1(fxu, gated, 10 * k + r);
	}
}
