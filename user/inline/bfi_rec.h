/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_rec: what the parts of the freestanding recorder (bfi_rec*.c and
 * bfi_rec_entry.S) share.  Nothing here is seen by the tools: they know
 * the recorder only as bfi_rec.bin and bfi_layout.h.
 *
 * The recorder has no writable global: every piece of state is in the
 * area (found through struct bfi_code, just before the text) or on the
 * stack of the call.  Every symbol is hidden, so every reference is
 * RIP-relative and the text runs wherever it is copied.
 */
#ifndef BFI_REC_H
#define BFI_REC_H

#include <stddef.h>
#include <stdint.h>
#include <linux/bftrace.h>

#include "bfi_layout.h"
#include "../../kmod/bft_rules.h"

#define BFI_HIDDEN __attribute__((visibility("hidden")))

/* The registers enter_common saved, in the order it pushed them. */
struct bfi_regs {
	uint64_t r10, r9, r8, rdi, rsi, rdx, rcx, rax;
};

/* What one visit to the recorder works with. */
struct bfi_ctx {
	struct bfi_area *area;
	struct bfi_slot *slot;
	uint64_t ctl;			/* the control word, read once */
	uint64_t now;			/* CLOCK_MONOTONIC, when recording */
	int tracing;			/* mode TRACING: records are written */
	/* ring_write: a NAME goes at this offset - 1 of its bytes; 0 none.
	 * Here, not on ring_write's frame: the recorder's deepest. */
	unsigned int name_at;
};

/* The kinds of event a thread writes (kmod/bft_ring.c's enum bft_rec). */
enum bfi_ev {
	BFI_EV_ENTER,
	BFI_EV_NORET,
	BFI_EV_EXIT,
	BFI_EV_THROW,
	BFI_EV_UNWIND,
};

/* bfi_rec_entry.S */
BFI_HIDDEN extern const char bfi_rec_start[];
BFI_HIDDEN void bfi_exit_common(void);
BFI_HIDDEN long bfi_syscall(long nr, long a, long b, long c);

/* bfi_rec.c: called from bfi_rec_entry.S */
BFI_HIDDEN void bfi_enter(uint32_t index, uint64_t *retslot,
			  struct bfi_regs *regs);
BFI_HIDDEN uint64_t bfi_exit(uint64_t rsp);

/* bfi_rec_ring.c */
BFI_HIDDEN void bfi_ring_event(struct bfi_ctx *c, enum bfi_ev kind,
			       uint32_t id, uint32_t arg);
BFI_HIDDEN uint64_t bfi_clock(const struct bfi_area *area);
BFI_HIDDEN void bfi_ring_name_take(struct bfi_slot *s);

/* bfi_rec_unwind.c */
BFI_HIDDEN void bfi_hook(struct bfi_ctx *c, uint32_t flags, uint64_t sp,
			 const struct bfi_regs *regs);
BFI_HIDDEN void bfi_evict(struct bfi_ctx *c, uint32_t from);
BFI_HIDDEN void bfi_found_close(struct bfi_ctx *c, uint64_t retslot);
BFI_HIDDEN void bfi_unwind_close(struct bfi_ctx *c, uint32_t n,
				 uint32_t reason);

/* bfi_rec_lib.c: what the compiler may call by itself */
BFI_HIDDEN void *memset(void *d, int v, size_t n);
BFI_HIDDEN void *memcpy(void *d, const void *s, size_t n);

static inline uint64_t bfi_load(const volatile uint64_t *p)
{
	return *p;
}

static inline void bfi_barrier(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/* %fs:off: the thread pointer's own words (the TLS ABI's TCB). */
static inline uint64_t bfi_fs_u64(int64_t off)
{
	uint64_t v;

	__asm__ __volatile__("movq %%fs:(%1), %0" : "=r"(v) : "r"(off));
	return v;
}

static inline uint32_t bfi_fs_u32(int64_t off)
{
	uint32_t v;

	__asm__ __volatile__("movl %%fs:(%1), %0" : "=r"(v) : "r"(off));
	return v;
}

/* The slot's shadow stack. */
static inline struct bfi_frame *bfi_shadow(const struct bfi_slot *s)
{
	return (struct bfi_frame *)((uint8_t *)s + BFI_SHADOW_OFF);
}

/*
 * What a swapped return slot holds: one exit_common for the whole target,
 * though each object's code area has its copy, so that every copy (a
 * hook in libgcc_s, a method in the executable) tells swapped slots alike.
 */
static inline uint64_t bfi_exit_addr(struct bfi_area *a)
{
	uint64_t mine = (uint64_t)(uintptr_t)bfi_exit_common;
	uint64_t v = __atomic_load_n(&a->exit_addr, __ATOMIC_RELAXED);

	if (v)
		return v;
	if (__atomic_compare_exchange_n(&a->exit_addr, &v, mine, 0,
					__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return mine;
	return v;
}

static inline uint8_t *bfi_at(const struct bfi_area *a, uint64_t off)
{
	return (uint8_t *)a + off;
}

#endif /* BFI_REC_H */
