/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every harness of user/fuzz shares.  A harness is one
 * LLVMFuzzerTestOneInput(); it is linked with libFuzzer by `make fuzz`
 * (clang) and with replay.c by `make -C user check`, which runs the
 * committed corpus of each harness through it without clang.
 *
 * A harness checks properties, not only survival: when one does not hold
 * it calls fuzz_fail(), which aborts, so libFuzzer keeps the input as a
 * crash.
 */
#ifndef BFT_FUZZ_H
#define BFT_FUZZ_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn, format(printf, 1, 2)))
static inline void fuzz_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("fuzz: property violated: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

/* Take the first byte of the input as a selector (0 if there is none). */
static inline uint8_t fuzz_take(const uint8_t **data, size_t *size)
{
	uint8_t b = 0;

	if (*size) {
		b = **data;
		(*data)++;
		(*size)--;
	}
	return b;
}

#endif /* BFT_FUZZ_H */
