// SPDX-License-Identifier: GPL-2.0
/*
 * bft_util: the small helpers every bftrace tool needs the same way.
 * See bft_util.h.
 */
#include <stdio.h>

#include "bft_util.h"

void bft_vlog(const char *prog, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}
