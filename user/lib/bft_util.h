/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers every bftrace tool needs the same way.
 */
#ifndef BFT_UTIL_H
#define BFT_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC, the clock of the module's stream times too. */
static inline uint64_t bft_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int64_t bft_mono_ms(void)
{
	return (int64_t)(bft_mono_ns() / 1000000);
}

/* One line on stderr: "prog: message\n". */
void bft_vlog(const char *prog, const char *fmt, va_list ap);

#endif /* BFT_UTIL_H */
