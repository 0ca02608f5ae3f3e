/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_rings: the reader of every slot's ring of every target of the
 * inline backend, through /proc/PID/mem (docs/inline-probes.md, "Records
 * and time", "Security").  Stream s of the callbacks is target index *
 * BFI_NSLOTS + slot: the "cpu" of bft_rings_cb.
 *
 * Everything read from a target is hostile: offsets are bounded by the
 * geometry of the registry, never by the area; a ring that claims more
 * than its size, a head that goes backwards or a tail we did not write is
 * counted as lost bytes, the reader resynchronises (tail = head) and says
 * so once in bfi_rings_errmsg().
 *
 * Conventions: 0 / byte counts, or -errno.
 */
#ifndef BFI_RINGS_H
#define BFI_RINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/bft_rings.h"
#include "inline/bfi_target.h"

struct bfi_rings;

/* until_ns of a stream that ended (its target exited or exec'd). */
#define BFI_RINGS_END	UINT64_MAX
/* How often the reader looks for new targets in the registry. */
#define BFI_RINGS_SCAN_NS	100000000ull

/*
 * Stream s delivers nothing earlier than until_ns (CLOCK_MONOTONIC, the
 * unit of bft_merge_advance), or, for BFI_RINGS_END, nothing more.
 * Non-zero stops the pass.
 */
typedef int (*bfi_rings_idle_cb)(unsigned int stream, uint64_t until_ns,
				 void *arg);

/*
 * A reader of the registry's targets (bfi_session_dir()); idle may be
 * NULL.  Targets appearing later are picked up at most once a second.
 */
int bfi_rings_open(struct bfi_rings **rp, bft_rings_cb cb,
		   bfi_rings_idle_cb idle, void *arg, char *err,
		   size_t errlen);
void bfi_rings_close(struct bfi_rings *r);
const char *bfi_rings_errmsg(const struct bfi_rings *r);
void bfi_rings_set_idle(struct bfi_rings *r, bfi_rings_idle_cb idle);
/* Read every target's rings once: the bytes handed over, or -errno. */
ssize_t bfi_rings_read(struct bfi_rings *r);
/* Look at the registry now rather than within the second. */
void bfi_rings_rescan(struct bfi_rings *r);
/* Streams that ended may start again (a new session). */
void bfi_rings_rearm(struct bfi_rings *r);
/* Readable every flush interval: the reader has no wakeups. */
int bfi_rings_fd(struct bfi_rings *r);
/* Bytes dropped as hostile or overrun, and rings found stuck busy. */
uint64_t bfi_rings_lost_bytes(const struct bfi_rings *r);
uint64_t bfi_rings_stuck(const struct bfi_rings *r);

/* For the tests: every pread of a target's memory, before it is made. */
extern void (*bfi_rings_pread_hook)(uint32_t tgid, uint64_t addr,
				    size_t len);

/*
 * The exception types' names the reader copied from tgid's area while it
 * lived (ids from 1, as THROW records carry them); cb's non-zero return
 * stops and is returned.  Empty in a process that reads no rings.
 */
int bfi_rings_exc_names(uint32_t tgid,
			int (*cb)(uint32_t id, const char *name, void *arg),
			void *arg);

#endif /* BFI_RINGS_H */
