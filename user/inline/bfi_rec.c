// SPDX-License-Identifier: GPL-2.0
/*
 * bfi_rec: the recorder's two C entry points, bfi_enter and bfi_exit
 * (docs/inline-probes.md), and the thread table that gives each thread
 * its slot.  Runs inside the target, freestanding, on the stack of the
 * traced thread: no C library, no TLS of its own, no writable global.
 */
#include "bfi_rec.h"

_Static_assert(BFI_MAGIC == 0x656e696c6e496642ULL && BFI_VERSION == 1,
	       "bfi_rec_entry.S writes the same magic and version");

#define NR_WRITE	1
#define NR_GETPID	39
#define NR_EXIT_GROUP	231
#define NR_GETTID	186
#define NR_TGKILL	234
#define NR_NANOSLEEP	35
#define SIGABRT_NR	6
/* a table entry whose thread found every slot taken */
#define BFI_THREAD_NONE	(~0ull)

static struct bfi_area *rec_area_get(void)
{
	const struct bfi_code *code;
	uintptr_t text;

	/* the page before the text, which no C object covers */
	__asm__("lea bfi_rec_start(%%rip), %0" : "=r"(text));
	code = (const struct bfi_code *)(text - BFI_TEXT_OFF);
	return (struct bfi_area *)(uintptr_t)code->area;
}

/* The control word: mode, break reason and generation of one change. */
static uint64_t rec_ctl_read(const struct bfi_area *a)
{
	const struct bfi_live *l = (const void *)bfi_at(a, BFI_LIVE_OFF);

	return bfi_load(&l->ctl);
}

static struct bfi_slot *rec_slot_get(struct bfi_area *a, uint64_t i)
{
	return (struct bfi_slot *)bfi_at(a, BFI_SLOTS_OFF +
					 i * BFI_SLOT_SIZE(a->ring_size));
}

static uint32_t rec_slots_count(const struct bfi_area *a)
{
	return a->nslots < BFI_NSLOTS ? a->nslots : BFI_NSLOTS;
}

/* A free slot for @tp, set up and owed a SYNC; NULL when all are taken. */
static struct bfi_slot *rec_slot_claim(struct bfi_area *a, uint64_t tp,
				       uint64_t ctl, uint64_t *index)
{
	uint32_t i, n = rec_slots_count(a);

	for (i = 0; i < n; i++) {
		struct bfi_slot *s = rec_slot_get(a, i);

		if (bfi_load(&s->tp) ||
		    __sync_val_compare_and_swap(&s->tp, 0, tp))
			continue;
		s->tid = (uint32_t)bfi_syscall(NR_GETTID, 0, 0, 0);
		s->tbits = BFT_TIME_BITS;
		s->gen = BFI_CTL_GEN(ctl);
		s->owed = BFI_OWE_SYNC;
		*index = i;
		return s;
	}
	return 0;
}

/*
 * The thread's slot, keyed on %fs:0 (the TLS ABI: the thread pointer's
 * first word is the thread pointer).  @claim: a thread new to the table
 * takes an entry (lock cmpxchg) and a slot.  An entry still being claimed
 * (a fork may copy one half-claimed) is never waited on.
 */
static struct bfi_slot *rec_slot_find(struct bfi_area *a, uint64_t ctl,
				      int claim)
{
	struct bfi_thread *t = (struct bfi_thread *)bfi_at(a, BFI_THREADS_OFF);
	uint64_t tp = bfi_fs_u64(0), n = 2 * (uint64_t)rec_slots_count(a), i, h;
	uint64_t slot;

	if (!tp || !n)
		return 0;
	/*
	 * The hash's high bits scaled to [0, n) by a multiply: a division
	 * here (h % n) was a tenth of a traced call's time.
	 */
	h = (tp >> 4) * 0x9e3779b97f4a7c15ull;
	h = (uint64_t)(((unsigned __int128)h * n) >> 64);
	for (i = 0; i < n; i++, h = h + 1 < n ? h + 1 : 0) {
		struct bfi_thread *e = &t[h];
		uint64_t v = bfi_load(&e->tp);

		if (!v && claim)
			v = __sync_val_compare_and_swap(&e->tp, 0, tp);
		if (!v) {
			struct bfi_slot *s;

			if (!claim)
				return 0;
			s = rec_slot_claim(a, tp, ctl, &slot);
			bfi_barrier();
			*(volatile uint64_t *)&e->slot = s ? slot + 1 :
							     BFI_THREAD_NONE;
			return s;
		}
		if (v != tp)
			continue;
		slot = bfi_load(&e->slot);
		if (!slot || slot == BFI_THREAD_NONE ||
		    slot > rec_slots_count(a))
			return 0;
		return rec_slot_get(a, slot - 1);
	}
	return 0;
}

static void rec_ctx_init(struct bfi_ctx *c, struct bfi_area *a,
		    struct bfi_slot *s, uint64_t ctl)
{
	c->area = a;
	c->slot = s;
	c->ctl = ctl;
	c->now = 0;
	/* paused as the module pauses: stopped, with recording on */
	c->tracing = bft_recording(BFI_CTL_MODE(ctl));
}

/*
 * A thread that finds another tid in its slot got a finished thread's
 * %fs:0 (glibc reuses thread blocks): it takes the slot over.  The old
 * thread's frames died with it; their entries are evicted, not dropped,
 * in case the tid was misread.
 */
static void rec_slot_takeover(struct bfi_ctx *c)
{
	struct bfi_area *a = c->area;
	uint32_t tid;

	if (!a->tid_off)
		return;
	tid = bfi_fs_u32(a->tid_off);
	if (tid == c->slot->tid)
		return;
	bfi_evict(c, 0);
	c->slot->tid = tid;
	c->slot->owed |= BFI_OWE_THREAD;
	bfi_ring_name_take(c->slot);
}

/* The control word changed since this thread last recorded. */
static void rec_gen_check(struct bfi_ctx *c)
{
	struct bfi_slot *s = c->slot;
	uint32_t brk = BFI_CTL_BREAK(c->ctl);

	if (s->gen == BFI_CTL_GEN(c->ctl))
		return;
	s->gen = BFI_CTL_GEN(c->ctl);
	/* one BREAK is owed at most, and a stop's outweighs a suspend's */
	if (BFI_OWED_BREAK(s->owed) == BFT_BREAK_STOP || !brk)
		brk = BFI_OWED_BREAK(s->owed);
	s->owed = (s->owed & ~BFI_OWE_BREAK(0xffu)) | BFI_OWE_SYNC |
		  BFI_OWE_BREAK(brk);
	/*
	 * A start after a stop begins the stream a new reader starts at, as
	 * the module's start resets its rings: a LOST still owed from the
	 * last session goes after that SYNC (ring_write).
	 */
}

static int rec_busy_take(struct bfi_slot *s)
{
	uint32_t b = *(volatile uint32_t *)&s->busy;

	if (b & 1)
		return 0;
	/* a full barrier: the clock is read after busy is seen odd */
	__atomic_exchange_n(&s->busy, b + 1, __ATOMIC_SEQ_CST);
	return 1;
}

static void rec_busy_give(struct bfi_slot *s)
{
	uint32_t b = s->busy;

	bfi_barrier();
	*(volatile uint32_t *)&s->busy = (b + 1) & ~1u;
}

/* The method's entry: ENTER, NORET or nothing; a pushed return. */
static void rec_entry_record(struct bfi_ctx *c, struct bfi_method *m,
		      uint64_t *retslot)
{
	struct bfi_area *a = c->area;
	struct bfi_slot *s = c->slot;
	uint32_t depth = s->depth;
	uint32_t cap = a->shadow_depth < BFI_SHADOW_DEPTH ?
		       a->shadow_depth : BFI_SHADOW_DEPTH;

	if (!c->tracing) {
		s->suspended++;
		return;
	}
	if (m->flags & BFT_PF_RETURN) {
		bfi_found_close(c, (uint64_t)(uintptr_t)retslot);
		depth = s->depth;
	}
	if (a->max_depth && depth >= a->max_depth)
		return;
	m->hits++;
	if (!(m->flags & BFT_PF_RETURN) || a->no_ret || depth >= cap ||
	    *retslot == bfi_exit_addr(a)) {
		/* no room, or a tail call whose caller's exit is pending */
		bfi_ring_event(c, BFI_EV_NORET, m->id, 0);
		return;
	}
	/* the entry first: a thread stopped before the swap owes nothing */
	bfi_shadow(c->slot)[depth].slot = (uint64_t)(uintptr_t)retslot;
	bfi_shadow(c->slot)[depth].ret = *retslot;
	bfi_barrier();
	s->depth = depth + 1;
	bfi_barrier();
	*retslot = bfi_exit_addr(a);
	bfi_ring_event(c, BFI_EV_ENTER, m->id, 0);
}

/* Whether every claimed slot's ring has been read to its head. */
static int rec_all_read(struct bfi_area *a)
{
	for (uint32_t i = 0; i < rec_slots_count(a); i++) {
		struct bfi_slot *s = rec_slot_get(a, i);

		if (s->tp && bfi_load(&s->tail) != bfi_load(&s->head))
			return 0;
	}
	return 1;
}

/*
 * exit(): the rings die with the process, so wait for a reader to take
 * them (BFI_MF_DRAIN), a millisecond at a time, at most BFI_DRAIN_MS.
 */
static void rec_drain(struct bfi_area *a, uint64_t ctl)
{
	const struct { long sec, nsec; } ms = { 0, 1000000 };
	uint64_t t0;

	if (!bft_session_active(BFI_CTL_MODE(ctl)))
		return;
	t0 = bfi_clock(a);
	for (;;) {
		uint32_t reader = *(volatile uint32_t *)&a->reader;
		uint64_t waited = bfi_clock(a) - t0;

		if ((reader && rec_all_read(a)) ||
		    waited >= (reader ? BFI_DRAIN_MS : BFI_DRAIN_NONE_MS) *
			      1000000ull)
			return;
		bfi_syscall(NR_NANOSLEEP, (long)(uintptr_t)&ms, 0, 0);
	}
}

void bfi_enter(uint32_t index, uint64_t *retslot, struct bfi_regs *regs)
{
	struct bfi_area *a = rec_area_get();
	struct bfi_method *m;
	struct bfi_slot *s;
	struct bfi_ctx c;
	uint64_t ctl = rec_ctl_read(a);
	uint32_t mode = BFI_CTL_MODE(ctl), flags;
	int active = bft_session_active(mode);

	if (index >= BFI_MAX_METHODS)
		return;
	m = (struct bfi_method *)bfi_at(a, BFI_METHODS_OFF) + index;
	flags = m->flags;
	if (flags & BFI_MF_DRAIN) {
		rec_drain(a, ctl);
		return;
	}
	/* a hook fixes the stack in every mode; a plain method costs this */
	if (!active && !(flags & BFT_PF_HOOKS))
		return;
	s = rec_slot_find(a, ctl, active);
	if (!s) {
		if (bft_recording(mode) && (flags & BFT_PF_ENTRY))
			__sync_fetch_and_add(&a->no_slot, 1);
		return;
	}
	rec_ctx_init(&c, a, s, ctl);
	if (!rec_busy_take(s)) {
		if (c.tracing)
			s->nested++;
		return;
	}
	if (active)
		rec_slot_takeover(&c);
	if (c.tracing) {
		rec_gen_check(&c);
		c.now = bfi_clock(a);
	}
	if (flags & BFT_PF_HOOKS)
		bfi_hook(&c, flags, (uint64_t)(uintptr_t)retslot, regs);
	if (active && (flags & BFT_PF_ENTRY))
		rec_entry_record(&c, m, retslot);
	rec_busy_give(s);
}

static long rec_msg_len(const char *p)
{
	long n = 0;

	while (p[n])
		n++;
	return n;
}

/* No address to return to: what a corrupted return stack would do. */
static __attribute__((noreturn)) void rec_abort(void)
{
	static const char msg[] =
		"bftrace inline recorder: a return through exit_common has no "
		"recorded return address (its shadow stack entry is gone); "
		"aborting\n";

	bfi_syscall(NR_WRITE, 2, (long)msg, rec_msg_len(msg));
	bfi_syscall(NR_TGKILL, bfi_syscall(NR_GETPID, 0, 0, 0),
		    bfi_syscall(NR_GETTID, 0, 0, 0), SIGABRT_NR);
	for (;;)
		bfi_syscall(NR_EXIT_GROUP, 134, 0, 0);
}

/* A return owed to an evicted entry (its frame was wrongly taken for gone). */
static uint64_t rec_evicted_take(struct bfi_slot *s, uint64_t slot)
{
	uint32_t n = s->nevicted < BFI_EVICTED ? s->nevicted : BFI_EVICTED;
	uint32_t i, k;

	for (i = 0; i < n; i++) {
		k = (s->nevicted - 1 - i) % BFI_EVICTED;
		if (s->evicted[k].slot == slot) {
			s->evicted[k].slot = 0;
			return s->evicted[k].ret;
		}
	}
	return 0;
}

/*
 * A traced function returned into exit_common, rsp = its slot + 8.  The
 * entry of that slot, from the top; entries above it were pushed later
 * by this thread, so their frames are gone: one UNWIND (FOUND), then the
 * EXIT.  Works in every mode, in a fork child too: a return owed is
 * always paid.
 */
uint64_t bfi_exit(uint64_t rsp)
{
	struct bfi_area *a = rec_area_get();
	uint64_t ctl = rec_ctl_read(a);
	uint64_t slot = rsp - 8, ret;
	struct bfi_slot *s = rec_slot_find(a, ctl, 0);
	struct bfi_ctx c;
	uint32_t i, n, busy;

	if (!s)
		rec_abort();
	rec_ctx_init(&c, a, s, ctl);
	busy = rec_busy_take(s);
	if (!busy)
		c.tracing = 0;
	for (i = s->depth; i && bfi_shadow(s)[i - 1].slot != slot; i--)
		;
	if (!i) {
		ret = rec_evicted_take(s, slot);
		if (busy)
			rec_busy_give(s);
		if (!ret)
			rec_abort();
		return ret;
	}
	ret = bfi_shadow(s)[i - 1].ret;
	n = s->depth - i;
	bfi_evict(&c, i);
	s->depth = i - 1;
	if (c.tracing) {
		rec_gen_check(&c);
		c.now = bfi_clock(a);
		bfi_unwind_close(&c, n, BFT_UNWIND_FOUND);
		bfi_ring_event(&c, BFI_EV_EXIT, 0, 0);
	} else if (BFI_CTL_MODE(ctl) == BFT_MODE_SUSPENDED && busy) {
		s->suspended++;
	} else if (!busy && bft_recording(BFI_CTL_MODE(ctl))) {
		s->nested++;
	}
	if (busy)
		rec_busy_give(s);
	return ret;
}
