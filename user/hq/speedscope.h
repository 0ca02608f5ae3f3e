/* SPDX-License-Identifier: GPL-2.0 */
/*
 * trace.speedscope.json: the trace in speedscope's file format
 * (https://www.speedscope.app/file-format-schema.json).  A frame per
 * method, named by its full signature; an "evented" profile per thread
 * that had a call, its calls as "O" and "C" events, "at" in microseconds
 * from the trace's first event (trace.json's times).  Every "O" is closed
 * in the order it was opened: a "C" closes the thread's newest open frame,
 * and frames still open at the end close at the profile's endValue.
 * route_chrome.c calls it where it writes the same calls to trace.json.
 * speedscope has no instants: entries-only methods, throws, data breaks
 * and markers are left out.
 */
#ifndef BFT_HQ_SPEEDSCOPE_H
#define BFT_HQ_SPEEDSCOPE_H

#include <stdint.h>

struct speedscope;

/* NULL (with errno) if path cannot be written; dir holds its spill file. */
struct speedscope *speedscope_open(const char *path, const char *dir);
/* Thread (route's 16-bit id) is named name: the last name given wins. */
void speedscope_thread(struct speedscope *s, uint16_t thread,
		       const char *name);
void speedscope_begin(struct speedscope *s, uint16_t thread, uint64_t us,
		      const char *name);
void speedscope_end(struct speedscope *s, uint16_t thread, uint64_t us);
/* Write the file and close it: 0, or -errno if a write failed. */
int speedscope_close(struct speedscope *s);

#endif
