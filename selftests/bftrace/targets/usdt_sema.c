// SPDX-License-Identifier: GPL-2.0
/*
 * The semaphore site of targets/usdt.c, in a file of its own: with
 * _SDT_HAS_SEMAPHORES every site of a file has one.  Its arguments are
 * only worked out while a tracer holds the semaphore up, as a program
 * with costly arguments does.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include "usdt_shape.h"

/* <sys/sdt.h> names a site's semaphore provider_name_semaphore */
__extension__ unsigned short bftgt_sema_semaphore
	__attribute__((unused)) __attribute__((section(".probes")));

__attribute__((noipa)) void usdt_sema(unsigned int r, unsigned int t)
{
	if (bftgt_sema_semaphore)
		DTRACE_PROBE2(bftgt, sema, r, t);
}
