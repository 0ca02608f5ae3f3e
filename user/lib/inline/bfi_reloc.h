/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_reloc: whether a function's first instructions can move into a stub,
 * and which (docs/inline-probes.md, "What is refused").  The jump takes 5
 * bytes past any endbr64; the whole instructions it covers are displaced.
 * They move when they mean the same wherever they run, or when the meaning
 * that depends on their place is one the stub builder rewrites: a
 * RIP-relative memory operand, and a relative jmp, jcc or call, or a call
 * through a register or memory, as the last of them (the call pushes the
 * original next instruction's address, so the callee returns into the
 * function, not the stub), or a ret as the last (a function of 5 bytes or
 * so returns from the stub).  Everything else that depends on its place
 * (a call before the last, whose return would land in the stub for
 * unwinders and our own exits to see; an indirect call through %rsp or
 * %rip; any call under a CET shadow stack; a 32-bit address; ret, loop,
 * jrcxz, system calls, traps) refuses the function.
 *
 * Decoding is Capstone's.  Functions return 0 or -errno.
 */
#ifndef BFI_RELOC_H
#define BFI_RELOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../inline/bfi_layout.h"
#include "symbols/bft_entry.h"

/* The jump written over a function's first bytes: e9 rel32. */
#define BFI_JMP_LEN		5
/* At most this many displaced bytes (the jump's 5, plus an instruction). */
#define BFI_DISPLACED_MAX	16

enum bfi_refusal {
	BFI_REFUSE_NONE,	/* relocatable */
	BFI_REFUSE_SHORT,	/* the function is shorter than the jump */
	BFI_REFUSE_UNDECODABLE,	/* Capstone cannot decode the bytes */
	BFI_REFUSE_INSN,	/* an instruction that cannot move */
	BFI_REFUSE_TARGET,	/* a branch lands inside the displaced bytes */
	BFI_REFUSE_INDIRECT,	/* the function has a jump table */
	BFI_REFUSE_NRULES
};

/* "short", "undecodable", ...: for counts and JSON. */
const char *bfi_refusal_name(enum bfi_refusal r);
/* A sentence that says why. */
const char *bfi_refusal_why(enum bfi_refusal r);

/* What one function's rewrite displaces. */
struct bfi_plan {
	uint64_t func;		/* the function's address */
	uint64_t at;		/* where the jump goes: func, or func + 4 */
	uint32_t len;		/* displaced bytes, whole instructions, >= 5 */
	uint32_t ninsn;		/* displaced instructions */
	uint8_t orig[BFI_DISPLACED_MAX];	/* the bytes at [at, at + len) */
	enum bfi_refusal why;
	char detail[160];	/* e.g. "a call (call 0x401005) at +1" */
};

struct bfi_reloc;	/* a decoder with details on */

int bfi_reloc_open(struct bfi_reloc **rp);
void bfi_reloc_close(struct bfi_reloc *r);
/* The target runs with a CET shadow stack: refuse to move any call. */
void bfi_reloc_shstk(struct bfi_reloc *r, bool on);

/*
 * Plan the function of size bytes at code, loaded at addr.  others: every
 * direct branch target of its object (bft_entry_targets_sweep), in the
 * same addresses as addr.  plan->why says whether it can be rewritten;
 * the return value is only for -ENOMEM.
 */
int bfi_reloc_plan(struct bfi_reloc *r, const uint8_t *code, size_t size,
		   uint64_t addr, const struct bft_entry_targets *others,
		   struct bfi_plan *plan);

/*
 * The stub for plan (its addresses those of the target) at stub:
 *   mov $index, %r11d; call enter; the displaced instructions, moved;
 *   jmp plan->at + plan->len (unless the last one was a jmp, ret or call).
 * At most BFI_STUB_MAX bytes into buf; their number in *len.  -ERANGE:
 * a displacement does not reach from stub, -EINVAL: plan is not one that
 * bfi_reloc_plan accepted.
 */
int bfi_stub_build(struct bfi_reloc *r, const struct bfi_plan *plan,
		   uint64_t stub, uint32_t index, uint64_t enter, uint8_t *buf,
		   size_t cap, size_t *len);

/* jmp rel32 from from to to, in out.  -ERANGE: beyond +-2 GiB. */
int bfi_stub_jump(uint64_t from, uint64_t to, uint8_t out[BFI_JMP_LEN]);

#endif /* BFI_RELOC_H */
