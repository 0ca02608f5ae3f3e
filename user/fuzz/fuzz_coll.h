/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What bfcollector's main.c gives the rest of the collector, for the
 * harnesses that link the collector without it: the clocks, and a log
 * that says nothing.  Included by one file of a harness.
 */
#ifndef BFT_FUZZ_COLL_H
#define BFT_FUZZ_COLL_H

#include "bft_util.h"
#include "collector.h"

uint64_t coll_mono_ns(void)
{
	return bft_mono_ns();
}

uint64_t coll_now_ms(void)
{
	return bft_mono_ms();
}

void coll_log(const char *fmt, ...)
{
	(void)fmt;
}

#endif /* BFT_FUZZ_COLL_H */
