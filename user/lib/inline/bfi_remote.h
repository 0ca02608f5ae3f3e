/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_remote: memory calls run inside a stopped target (bfi_world_syscall)
 * to map the inline backend's area and code areas.  Each returns 0 or the
 * target kernel's -errno, or the injection's own failure.
 */
#ifndef BFI_REMOTE_H
#define BFI_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "inline/bfi_ptrace.h"

/* Farthest a code area may lie from the code that jumps into it. */
#define BFI_NEAR_SPAN	((1ull << 31) - (1ull << 16))

/*
 * A private anonymous mapping of size bytes with prot: anywhere when
 * near_lo == near_hi == 0, else in a free gap of /proc/PID/maps such that
 * the mapping and [near_lo, near_hi) fit in BFI_NEAR_SPAN (a rel32 reaches
 * every byte from every byte), nearest gap first, with
 * MAP_FIXED_NOREPLACE (-EEXIST: the maps changed, read again).  -ENOMEM
 * when no gap fits; err says so.
 */
int bfi_remote_mmap(struct bfi_world *w, uint64_t near_lo, uint64_t near_hi,
		    uint64_t size, int prot, uint64_t *addr, char *err,
		    size_t errlen);
int bfi_remote_mprotect(struct bfi_world *w, uint64_t addr, uint64_t size,
			int prot);
int bfi_remote_munmap(struct bfi_world *w, uint64_t addr, uint64_t size);
int bfi_remote_madvise(struct bfi_world *w, uint64_t addr, uint64_t size,
		       int advice);

#endif /* BFI_REMOTE_H */
