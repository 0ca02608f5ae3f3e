/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers every bftrace tool needs the same way.
 */
#ifndef BFT_UTIL_H
#define BFT_UTIL_H

#include <stdarg.h>
#include <stddef.h>
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

/*
 * The bytes of the valid UTF-8 character s starts with (NUL-ended s), or 0
 * if s[0] does not start one: a JSON writer puts U+FFFD in its place.
 */
size_t bft_utf8_len(const unsigned char *s);

/*
 * s as a quoted JSON string, through put: escaped as RFC 8259 asks, and a
 * byte that is not part of valid UTF-8 as U+FFFD, so the document always
 * parses.
 */
void bft_json_string(const char *s,
		     void (*put)(const char *p, size_t n, void *arg),
		     void *arg);

/* One line on stderr: "prog: message\n". */
void bft_vlog(const char *prog, const char *fmt, va_list ap);

#endif /* BFT_UTIL_H */
