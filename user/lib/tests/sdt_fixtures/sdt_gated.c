// SPDX-License-Identifier: GPL-2.0
/*
 * The probe of the USDT fixture that only fires while a tracer has raised
 * its semaphore: "bft:gated" is printed, and the probe reached, only then.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <sys/sdt.h>

__extension__ unsigned short bft_gated_semaphore __attribute__((section(".probes")));

void sdt_gated(int round)
{
	if (bft_gated_semaphore) {
		printf("bft:gated %d\n", round);
		STAP_PROBE1(bft, gated, round);
	}
}
