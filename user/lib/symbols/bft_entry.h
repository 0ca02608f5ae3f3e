/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_entry: where in a function's first instructions an entry probe costs
 * least and still sees every entry, and only entries (x86-64).
 *
 * x86-64 uprobes emulate a few instructions (arch/x86/kernel/uprobes.c in
 * 6.1 and 6.12): jmp, call and jcc with a relative target (no 0x66
 * prefix), the one-byte nop 0x90 and push %reg (50-57, or 41 50-57).
 * Every other instruction is single-stepped out of line, roughly forty
 * times dearer per hit (bench/notes.md).  So, past any endbr64, the walk
 * goes over the function's first instructions up to the first emulated
 * one, and a probe there is as good as one at the start when:
 *   - no instruction from the start up to it (that one included) is the
 *     target of a direct branch in the function or elsewhere in the
 *     object (the caller passes the object's targets), or else a second
 *     way in would count as an entry;
 *   - none before it branches (jmp, jcc, call, ret, syscall...), or some
 *     entries would not reach it;
 *   - none before it names %rsp or touches the stack (push, pop, enter,
 *     leave, a memory operand based on %rsp or %rbp): the return probe
 *     takes the return address at the stack pointer, and the entry
 *     handlers of both backends read only that pointer and that word
 *     (kmod/bft_probe.c, user/bpf/bft.bpf.c), no argument register;
 *   - when the emulated instruction is not a push, the function has no
 *     indirect jump: a jump table could lead back to any instruction;
 *   - the walk ends within BFT_ENTRY_MAX_WALK instructions, before the
 *     function does, over bytes capstone can decode.
 * Otherwise the probe stays at the start (past any endbr64, which is the
 * same rule with nothing to walk).  A store or load before the probe that
 * faults is an entry the probe does not see: the process gets the signal
 * before bftrace records it.
 *
 * Decoding is capstone's.  Functions return 0 or -errno.
 */
#ifndef BFT_ENTRY_H
#define BFT_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* More than this many instructions before an emulated one: not moved. */
#define BFT_ENTRY_MAX_WALK 8

/* Why the probe is where it is (bft_entry_place's answer). */
enum bft_entry_rule {
	BFT_ENTRY_AT_START,	/* the first instruction is emulated */
	BFT_ENTRY_MOVED,	/* moved onto the first emulated one */
	BFT_ENTRY_OFF,		/* placement turned off: the first byte */
	BFT_ENTRY_HOOK,		/* an exception hook reads argument registers */
	BFT_ENTRY_TARGET,	/* an instruction on the way is a branch target */
	BFT_ENTRY_BRANCH,	/* an instruction on the way branches */
	BFT_ENTRY_STACK,	/* an instruction on the way uses the stack */
	BFT_ENTRY_INDIRECT,	/* a jump table could lead back in */
	BFT_ENTRY_TOO_FAR,	/* no emulated one within BFT_ENTRY_MAX_WALK */
	BFT_ENTRY_END,		/* the function ends first */
	BFT_ENTRY_UNDECODABLE,	/* capstone cannot decode the function */
	BFT_ENTRY_NRULES
};

/* "moved", "at_start", ...: for -v, JSON and the tests. */
const char *bft_entry_rule_name(enum bft_entry_rule r);
/* A sentence that says why, for people. */
const char *bft_entry_rule_why(enum bft_entry_rule r);

/* Direct branch targets (addresses), sorted once complete. */
struct bft_entry_targets {
	uint64_t *v;
	size_t n, cap;
	size_t undecodable;	/* bytes skipped: capstone could not decode */
};

struct bft_entry;	/* a decoder */

int bft_entry_open(struct bft_entry **ep);
void bft_entry_close(struct bft_entry *e);

/*
 * Add the targets of the direct jumps and calls in size bytes of code
 * loaded at addr (a function, or a whole section swept linearly) to t.
 * An undecodable byte is skipped and counted in t->undecodable.  -ENOMEM.
 */
int bft_entry_targets_add(struct bft_entry *e, struct bft_entry_targets *t,
			  const uint8_t *code, size_t size, uint64_t addr);
/*
 * The targets of every executable section of the ELF file open on fd
 * (bft_entry_sweep.c), sorted.  -ENOEXEC not ELF, -ENOMEM.
 */
int bft_entry_targets_sweep(struct bft_entry *e, int fd,
			    struct bft_entry_targets *t);
/* Sort and deduplicate, once every function is in. */
void bft_entry_targets_sort(struct bft_entry_targets *t);
void bft_entry_targets_free(struct bft_entry_targets *t);

/*
 * The offset from the function's start (code, size bytes, loaded at addr)
 * at which its entry probe goes, in *offset, and why.  others: the
 * object's branch targets (sorted), or NULL for the function's own only.
 * When the rule refuses, *offset is 4 past an endbr64, else 0.
 * Returns the rule, or -ENOMEM.
 */
int bft_entry_place(struct bft_entry *e, const uint8_t *code, size_t size,
		    uint64_t addr, const struct bft_entry_targets *others,
		    uint64_t *offset);

#endif /* BFT_ENTRY_H */
