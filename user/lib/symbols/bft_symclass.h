/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_symclass: what a function symbol's name says about how its code is
 * entered and left, for the probes bft_resolve offers and bfctl places.
 *
 *   - Fragments: gcc moves the rarely run part of a function into a
 *     symbol of its own, "foo.cold" (older gcc and clang: "foo.cold.N";
 *     on clones "foo.part.0.cold"), which the function enters by a jump.
 *     Its "entry" is no call: an entry probe records a phantom call and a
 *     return probe overwrites whatever the stack holds at the jump.  Such
 *     symbols are no functions to probe at all.
 *   - Returns twice: setjmp and its kin (sigsetjmp, getcontext, vfork,
 *     savectx, swapcontext, ...; with or without leading underscores, as
 *     gcc's own list has them) store their return address for a second
 *     return.  Under a return probe they would store the trampoline's:
 *     the later longjmp would jump into it with no return instance to
 *     match.  They get entry probes only.
 *   - Hooks: the entry points of the C++ runtime, the unwinder and the C
 *     library's non-local jumps, where bftrace.ko keeps return probes
 *     consistent with the stack (BFT_PF_HOOK_*, linux/bftrace.h 2.3).
 */
#ifndef BFT_SYMCLASS_H
#define BFT_SYMCLASS_H

#include <stdbool.h>
#include <stdint.h>

/* A gcc/clang cold fragment: NAME.cold or NAME.cold.N (N digits). */
bool bft_sym_is_cold_fragment(const char *raw);

/* setjmp and its kin: a function that may return twice. */
bool bft_sym_returns_twice(const char *raw);

/* The BFT_PF_HOOK_* flag for a function of this name, 0 for none. */
uint32_t bft_sym_hook(const char *raw);

/* Every name that gets a hook, NULL-terminated. */
const char *const *bft_sym_hook_names(void);

/* "unwind", "catch", "throw", "rethrow", "forced", "longjmp"; NULL when
 * flags hold no hook bit. */
const char *bft_hook_name(uint32_t flags);

#endif /* BFT_SYMCLASS_H */
