/* SPDX-License-Identifier: GPL-2.0 */
/*
 * trace.pftrace: the trace as Perfetto's protobuf Trace, a TracePacket
 * per event on one packet sequence.  A track per thread (and per process
 * above them), one for the markers of no thread; a call is a TYPE_SLICE_BEGIN and
 * TYPE_SLICE_END pair, a throw, a data break, a marker or a group of
 * entries-only calls a TYPE_INSTANT; event names are interned.  Times are
 * nanoseconds from the trace's first event.  route_chrome.c calls it where it
 * writes the same events to trace.json.
 */
#ifndef BFT_HQ_PFTRACE_H
#define BFT_HQ_PFTRACE_H

#include <stdint.h>

struct pftrace;

/* NULL (with errno) if path cannot be written. */
struct pftrace *pft_open(const char *path);

/* Thread track thread (route's 16-bit id) is pid/tid, named name. */
void pft_thread(struct pftrace *p, uint16_t thread, uint32_t pid,
		uint32_t tid, const char *name);
void pft_begin(struct pftrace *p, uint16_t thread, uint64_t ns,
	       const char *name);
void pft_end(struct pftrace *p, uint16_t thread, uint64_t ns);
/* An instant on the thread's track; with count > 1, the calls it stands for. */
void pft_instant(struct pftrace *p, uint16_t thread, uint64_t ns,
		 const char *name, uint64_t count);
/* An instant on the markers' track. */
void pft_marker(struct pftrace *p, uint64_t ns, const char *key,
		const char *value);
/* The same on a thread's track: a marker bfcollector placed in it. */
void pft_thread_marker(struct pftrace *p, uint16_t thread, uint64_t ns,
		       const char *key, const char *value);

/* Write the rest and close: 0, or -errno if a write failed. */
int pft_close(struct pftrace *p);

#endif
