// SPDX-License-Identifier: GPL-2.0
/*
 * bfi_rec_unwind: the hooks (include/uapi/linux/bftrace.h, 2.3), as
 * kmod/bft_unwind.c does them with the kernel's return instances, here
 * with the thread's shadow stack; the evicted ring that keeps the real
 * return address of every entry taken off other than by its own return;
 * and the exception types copied into the area.
 *
 * A stack slot is written only where it belongs to a pending entry above
 * the hook's stack pointer (a live frame of the stack being unwound), and
 * only with the value it held before: the real address or exit_common.
 */
#include "bfi_rec.h"

#define NR_SIGALTSTACK		131
#define BFI_SS_ONSTACK		1

/* The kernel's stack_t on x86-64. */
struct bfi_stack {
	uint64_t sp;
	int32_t flags;
	int32_t pad;
	uint64_t size;
};

/* glibc's x86-64 jmp_buf: rsp is word 6, mangled as rol(sp ^ guard, 17). */
#define BFI_JB_RSP		6
#define BFI_TCB_POINTER_GUARD	0x30
/* struct _Unwind_Exception (Itanium C++ ABI): private_1, private_2 */
#define BFI_UE_PRIVATE_1	16
#define BFI_UE_PRIVATE_2	24

/*
 * Entries [from, depth) leave the shadow stack without their own return:
 * into the evicted ring, so a frame wrongly taken for gone (another
 * stack) still finds its real return address in bfi_exit.
 */
void bfi_evict(struct bfi_ctx *c, uint32_t from)
{
	struct bfi_slot *s = c->slot;
	uint32_t i;

	for (i = from; i < s->depth; i++)
		s->evicted[s->nevicted++ % BFI_EVICTED] = bfi_shadow(s)[i];
	bfi_barrier();
	s->depth = from;
}

void bfi_unwind_close(struct bfi_ctx *c, uint32_t n, uint32_t reason)
{
	if (n && c->tracing)
		bfi_ring_event(c, BFI_EV_UNWIND, n, reason);
}

/* Entries from the top whose slot is below @limit (at or below: @incl). */
static uint32_t unwind_keep_count(struct bfi_ctx *c, uint64_t limit,
				  int incl)
{
	uint32_t i = c->slot->depth;

	while (i && (bfi_shadow(c->slot)[i - 1].slot < limit ||
		     (incl && bfi_shadow(c->slot)[i - 1].slot == limit)))
		i--;
	return i;
}

/*
 * A signal handler on an alternate stack mapped above the thread's own:
 * the interrupted frames are below this call's slot, yet live.  When this
 * call runs on the alternate stack, only entries on it can be gone.  Its
 * own frame, not on the recording path's: the recorder's stack is bounded.
 */
static __attribute__((noinline)) uint32_t
unwind_altstack_keep(struct bfi_ctx *c, uint64_t retslot, int chained,
		     uint32_t keep)
{
	struct bfi_frame *sh = bfi_shadow(c->slot);
	struct bfi_stack ss;
	uint32_t i = c->slot->depth;

	if (bfi_syscall(NR_SIGALTSTACK, 0, (long)(uintptr_t)&ss, 0) ||
	    !(ss.flags & BFI_SS_ONSTACK) || retslot < ss.sp ||
	    retslot - ss.sp >= ss.size)
		return keep;
	while (i && sh[i - 1].slot >= ss.sp && sh[i - 1].slot - ss.sp < ss.size &&
	       (sh[i - 1].slot < retslot ||
		(!chained && sh[i - 1].slot == retslot)))
		i--;
	return i;
}

/*
 * The entry of a method with a return: entries whose slot is not above
 * this call's are of frames something no hook saw has left (a landing
 * pad's cleanup runs in the frame that caught, before any hook).  They
 * are closed with one UNWIND (FOUND), where the module closes the
 * kernel's return instances that it drops at the same point.  A tail
 * call's caller shares the slot and lives on.
 */
void bfi_found_close(struct bfi_ctx *c, uint64_t retslot)
{
	int chained = *(const uint64_t *)(uintptr_t)retslot ==
		      bfi_exit_addr(c->area);
	uint32_t keep = unwind_keep_count(c, retslot, !chained);
	uint32_t n = c->slot->depth - keep;

	if (!n)
		return;
	keep = unwind_altstack_keep(c, retslot, chained, keep);
	n = c->slot->depth - keep;
	if (!n)
		return;
	bfi_evict(c, keep);
	bfi_unwind_close(c, n, BFT_UNWIND_FOUND);
}

/* Before an unwinder walks the stack: the real callers back in place. */
static void unwind_restore(struct bfi_ctx *c, uint64_t sp)
{
	struct bfi_frame *sh = bfi_shadow(c->slot);
	uint32_t i;

	for (i = 0; i < c->slot->depth; i++) {
		uint64_t *slot = (uint64_t *)(uintptr_t)sh[i].slot;

		if ((uint64_t)(uintptr_t)slot > sp && *slot == bfi_exit_addr(c->area))
			*slot = sh[i].ret;
	}
}

/*
 * The lowest slot still of a live frame: the catching frame's own return
 * slot, just below its frame address (private_2 after the search phase);
 * without one, sp + 1.
 */
static uint64_t unwind_floor_find(uint64_t exc, uint64_t sp)
{
	uint64_t cfa;

	if (!exc || *(const uint64_t *)(uintptr_t)(exc + BFI_UE_PRIVATE_1))
		return sp + 1;
	cfa = *(const uint64_t *)(uintptr_t)(exc + BFI_UE_PRIVATE_2);
	if (cfa <= sp + 8)
		return sp + 1;
	return cfa - 8;
}

/*
 * __cxa_begin_catch: the frames the exception left are closed; those
 * that live on get exit_common back, so their exits are recorded.
 */
static void unwind_catch_close(struct bfi_ctx *c, uint64_t sp,
			       uint64_t exc)
{
	uint32_t keep = unwind_keep_count(c, sp, 1), i;
	uint32_t n = c->slot->depth - keep;
	struct bfi_frame *sh = bfi_shadow(c->slot);
	uint64_t floor = unwind_floor_find(exc, sp);

	bfi_evict(c, keep);
	for (i = 0; i < keep; i++) {
		uint64_t *slot = (uint64_t *)(uintptr_t)sh[i].slot;

		if ((uint64_t)(uintptr_t)slot > sp &&
		    (uint64_t)(uintptr_t)slot >= floor &&
		    *slot == sh[i].ret)
			*slot = bfi_exit_addr(c->area);
	}
	bfi_unwind_close(c, n, BFT_UNWIND_CATCH);
}

static void unwind_longjmp_close(struct bfi_ctx *c, uint64_t sp,
				 uint64_t env)
{
	uint64_t m, target, guard = bfi_fs_u64(BFI_TCB_POINTER_GUARD);
	uint32_t keep, n;

	if (!env)
		return;
	m = ((const uint64_t *)(uintptr_t)env)[BFI_JB_RSP];
	target = ((m >> 17) | (m << 47)) ^ guard;
	if (target <= sp)
		return;	/* not a jump up this stack: nothing we can tell */
	keep = unwind_keep_count(c, target, 0);
	n = c->slot->depth - keep;
	bfi_evict(c, keep);
	bfi_unwind_close(c, n, BFT_UNWIND_LONGJMP);
}

/* __call_tls_dtors: the thread's start routine is over. */
static void unwind_exit_close(struct bfi_ctx *c, uint64_t sp)
{
	uint32_t keep = unwind_keep_count(c, sp, 1), n = c->slot->depth - keep;

	bfi_evict(c, keep);
	bfi_unwind_close(c, n, BFT_UNWIND_EXIT);
}

/*
 * The id of a thrown type: its index + 1 in the area's table, claimed in
 * the order first thrown, its mangled name copied in before ready is set,
 * so the reader never follows a pointer of the target's.  0 when unknown
 * or the table is full.
 */
static uint32_t unwind_exc_claim(struct bfi_area *a, uint64_t tinfo)
{
	struct bfi_exc *exc = (struct bfi_exc *)bfi_at(a, BFI_EXC_OFF);
	const char *name;
	uint32_t i, k;

	if (!tinfo)
		return 0;
	for (i = 0; i < BFI_MAX_EXC; i++) {
		uint64_t v = bfi_load(&exc[i].tinfo);

		if (!v)
			v = __sync_val_compare_and_swap(&exc[i].tinfo, 0,
							tinfo);
		if (v == tinfo)
			return i + 1;
		if (v)
			continue;
		/* ours: std::type_info is { vtable, const char *name } */
		name = *(const char *const *)(uintptr_t)(tinfo + 8);
		for (k = 0; name && name[k] && k < BFI_EXC_NAME - 1; k++)
			exc[i].name[k] = name[k];
		exc[i].name[k] = 0;
		bfi_barrier();
		*(volatile uint64_t *)&exc[i].ready = 1;
		return i + 1;
	}
	return 0;
}

/* A hook's work at its function's entry (sp: the return slot there). */
void bfi_hook(struct bfi_ctx *c, uint32_t flags, uint64_t sp,
	      const struct bfi_regs *regs)
{
	switch (flags & BFT_PF_HOOKS) {
	case BFT_PF_HOOK_UNWIND:
		unwind_restore(c, sp);
		break;
	case BFT_PF_HOOK_FORCED:
		unwind_restore(c, sp);
		if (c->tracing)
			bfi_ring_event(c, BFI_EV_THROW, 0, BFT_THROW_FORCED);
		break;
	case BFT_PF_HOOK_CATCH:
		unwind_catch_close(c, sp, regs->rdi);
		break;
	case BFT_PF_HOOK_THROW:
		if (c->tracing)
			bfi_ring_event(c, BFI_EV_THROW,
				       unwind_exc_claim(c->area, regs->rsi),
				       BFT_THROW_THROW);
		break;
	case BFT_PF_HOOK_RETHROW:
		if (c->tracing)
			bfi_ring_event(c, BFI_EV_THROW, 0, BFT_THROW_RETHROW);
		break;
	case BFT_PF_HOOK_LONGJMP:
		unwind_longjmp_close(c, sp, regs->rdi);
		break;
	case BFT_PF_HOOK_EXIT:
		unwind_exit_close(c, sp);
		break;
	}
}
