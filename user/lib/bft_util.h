/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers every bftrace tool needs the same way.
 */
#ifndef BFT_UTIL_H
#define BFT_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t bft_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC, the clock of the module's stream times too. */
static inline uint64_t bft_mono_ns(void)
{
	return bft_clock_ns(CLOCK_MONOTONIC);
}

static inline int64_t bft_mono_ms(void)
{
	return (int64_t)(bft_mono_ns() / 1000000);
}

/* One line on stderr: "prog: message\n". */
void bft_vlog(const char *prog, const char *fmt, va_list ap);

#endif /* BFT_UTIL_H */
