// SPDX-License-Identifier: GPL-2.0
/*
 * Durations as people read them in tree.txt and summary.txt: the unit
 * the live page's fmtUs() picks (µs below a millisecond, ms below a
 * second, s above), and no digit the trace did not measure.
 */
#include <inttypes.h>
#include <stdio.h>

#include "hq.h"

size_t hq_duration(char *b, size_t n, uint64_t us, bool micro)
{
	uint64_t ms = us / 1000;
	int len;

	if (us >= 1000000) {
		/* to the ms, rounded, as the page's toFixed(3) */
		ms = (us + 500) / 1000;
		len = snprintf(b, n, "%" PRIu64 ".%03u s", ms / 1000,
			       (unsigned int)(ms % 1000));
	} else if (!micro) {
		len = snprintf(b, n, "%" PRIu64 " ms", ms);
	} else if (us >= 1000) {
		len = snprintf(b, n, "%" PRIu64 ".%03u ms", ms,
			       (unsigned int)(us % 1000));
	} else {
		/* "µ" is two bytes and one column */
		return (size_t)snprintf(b, n, "%" PRIu64 " \u00b5s", us) - 1;
	}
	return (size_t)len;
}

void hq_bduration(struct bft_buf *b, uint64_t us, bool micro, int width)
{
	char s[48];
	size_t cols = hq_duration(s, sizeof(s), us, micro);

	hq_bprintf(b, "%*s%s", width > (int)cols ? width - (int)cols : 0, "",
		   s);
}
