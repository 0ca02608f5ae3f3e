// SPDX-License-Identifier: GPL-2.0
/*
 * bfi_rec_ring: the writer of one thread's ring, inside the target.  The
 * records are the module's (include/uapi/linux/bftrace.h, section 2, as
 * kmod/bft_ring.c writes them), with the encoding shared through
 * kmod/bft_tbits.h and user/lib/wire/bft_varint.h, and two differences the
 * reader does not see: an exit is published at once as an EXIT of one
 * (nothing in the target could seal a run held open later), and a thread
 * writes its own SYNC once flush_ns passed since its last one.  Also the
 * clock.
 */
#include "bfi_rec.h"
#include "../../kmod/bft_tbits.h"
#include "wire/bft_varint.h"

_Static_assert(sizeof(struct bft_tb_hist) ==
	       sizeof(((struct bfi_slot *)0)->tb_keys) +
	       sizeof(((struct bfi_slot *)0)->tb_gaps),
	       "the slot holds a struct bft_tb_hist");
_Static_assert(BFT_TB_KEYS == 16 && BFT_TB_GAPS == 8,
	       "tb_keys and tb_gaps are sized for bft_tbits.h");

/*
 * The bytes of one hit at most but its NAME (ring_put): LOST (12), SYNC
 * (27: a time in ns takes 9), BREAK (3), THREAD (13: no delta after a
 * SYNC) and the event (12); or, without a SYNC, LOST, THREAD or TIME (22)
 * and the event.
 */
#define BFI_HIT_MAX	80

#define NR_PRCTL		157
#define PR_GET_NAME_ID		16

#define CLOCK_MONOTONIC_ID	1
#define NR_CLOCK_GETTIME	228

struct bfi_timespec {
	int64_t sec;
	int64_t nsec;
};

/*
 * The vDSO's clock when the controller found one (its reads are ordered
 * after busy's xchg: rdtsc_ordered), else the system call.
 */
uint64_t bfi_clock(const struct bfi_area *area)
{
	int (*vdso)(int, struct bfi_timespec *);
	struct bfi_timespec ts = { 0, 0 };

	vdso = (int (*)(int, struct bfi_timespec *))(uintptr_t)area->vdso_clock;
	if (!vdso || vdso(CLOCK_MONOTONIC_ID, &ts))
		bfi_syscall(NR_CLOCK_GETTIME, CLOCK_MONOTONIC_ID, (long)&ts, 0);
	return (uint64_t)ts.sec * 1000000000ull + (uint64_t)ts.nsec;
}

static unsigned int ring_esc_put(uint8_t *p, unsigned int kind)
{
	p[0] = (uint8_t)(BFT_ESC_LEAD | kind);
	p[1] = 0;
	return 2;
}

/* A time delta as TIME_SHORT or TIME (kmod: bft_put_units). */
static unsigned int ring_units_put(uint8_t *p, uint64_t units)
{
	unsigned int n;

	if (!units)
		return 0;
	if (units <= 32)
		return ring_esc_put(p, BFT_ESC_TIME_SHORT - 1 +
				       (unsigned int)units);
	n = ring_esc_put(p, BFT_ESC_TIME);
	return n + bft_leb128_put(p + n, units);
}

static unsigned int ring_event_put(uint8_t *p, unsigned int tbits,
			       enum bfi_ev kind, uint32_t id, uint32_t arg,
			       uint64_t units)
{
	unsigned int n;

	switch (kind) {
	case BFI_EV_ENTER:
		return bft_packed_put(p, BFT_FLAG_ENTER,
				      ((uint64_t)id << tbits) | units);
	case BFI_EV_EXIT:
		return bft_packed_put(p, BFT_FLAG_EXIT, units);
	case BFI_EV_NORET:
		n = ring_esc_put(p, BFT_ESC_ENTER_NORET);
		return n + bft_leb128_put(p + n, id);
	case BFI_EV_THROW:
		n = ring_esc_put(p, BFT_ESC_THROW);
		break;
	default:
		n = ring_esc_put(p, BFT_ESC_UNWIND);
		break;
	}
	n += bft_leb128_put(p + n, id);
	return n + bft_leb128_put(p + n, arg);
}

/*
 * The calling thread's name as it is now, for the NAME after each THREAD
 * of its ring (uapi 2.2): taken before each SYNC (ring_sync_prepare) and
 * when the thread takes its slot over, not in ring_write, whose stack is
 * the recorder's deepest.  The system call is written out here, not made
 * through bfi_syscall: the compiler then knows the few registers it
 * clobbers, and bfi_ring_event, on the deepest chain, saves no more.
 */
void bfi_ring_name_take(struct bfi_slot *s)
{
	register long name __asm__("rsi") = (long)s->name;
	register long opt __asm__("rdi") = PR_GET_NAME_ID;
	long ret = NR_PRCTL;
	unsigned int i;

	for (i = 0; i < sizeof(s->name); i++)
		s->name[i] = 0;
	__asm__ __volatile__("syscall"
			     : "+a"(ret)
			     : "r"(opt), "r"(name)
			     : "rcx", "r11", "memory");
	if (ret)
		s->name[0] = 0;
	s->name[BFT_THREAD_NAME_MAX] = 0;
}

/* NAME's length for the slot's name (uapi 2.2): its bytes follow it. */
static unsigned int ring_name_len(const struct bfi_slot *s)
{
	unsigned int n = 0;

	while (n < BFT_THREAD_NAME_MAX && s->name[n])
		n++;
	return n;
}

/*
 * Publish b[0, len), with a NAME of the slot's name at c->name_at - 1 if
 * that is not 0 (a THREAD ends there), or false when [tail, head) leaves
 * no room:
 * bytes the reader has not taken are never written.  The NAME is copied
 * from the slot, not built in ring_write's buffer: the recorder's stack
 * has no room for it.  head is stored after the bytes (x86 keeps stores
 * in order: a plain store releases them).
 */
static int ring_put(struct bfi_ctx *c, const uint8_t *b, unsigned int len)
{
	unsigned int at = c->name_at;

	struct bfi_slot *s = c->slot;
	uint64_t size = c->area->ring_size, head = s->head, mask = size - 1;
	uint64_t used = head - bfi_load(&s->tail);
	unsigned int name_len = at ? ring_name_len(s) : 0, i;
	unsigned int total = len + (at ? 3 + name_len : 0);
	uint8_t *ring = (uint8_t *)s + BFI_RING_OFF;

	if (used > size || total > size - used)
		return 0;
	for (i = 0; i + 1 < at; i++)
		ring[(head++) & mask] = b[i];
	if (at) {
		ring[(head++) & mask] = (uint8_t)(BFT_ESC_LEAD | BFT_ESC_NAME);
		ring[(head++) & mask] = 0;
		ring[(head++) & mask] = (uint8_t)name_len;
		for (unsigned int k = 0; k < name_len; k++)
			ring[(head++) & mask] = (uint8_t)s->name[k];
	}
	for (; i < len; i++)
		ring[(head++) & mask] = b[i];
	bfi_barrier();
	*(volatile uint64_t *)&s->head = head;
	bfi_barrier();
	return 1;
}

/*
 * What a SYNC needs, on its own frame, never on top of ring_write's bytes
 * (the recorder's stack bound): the thread's name as it is now, for the
 * NAME after the THREAD that follows the SYNC, and the tbits from here
 * (bft_tbits.h).  A rename shows at the next flush's SYNC at the latest.
 */
static __attribute__((noinline)) unsigned int
ring_sync_prepare(struct bfi_slot *s)
{
	bfi_ring_name_take(s);
	return bft_tb_pick((const struct bft_tb_hist *)s->tb_keys,
			   (unsigned char)s->tbits);
}

/*
 * One event, with what it owes first (kmod/bft_ring.c: bft_ring_slow,
 * which every hit here is): LOST, SYNC, BREAK, THREAD and NAME, the time,
 * the event; all of it, or nothing and one more lost event.  @sync: the
 * records start with a SYNC choosing @tbits.
 */
static __attribute__((noinline)) void ring_write(struct bfi_ctx *c,
						  enum bfi_ev kind, uint32_t id,
						  uint32_t arg, uint32_t owed,
						  unsigned int sync,
						  unsigned int tbits)
{
	struct bfi_slot *s = c->slot;
	struct bfi_area *a = c->area;
	uint64_t res = a->res_ns ? a->res_ns : 1, now = c->now;
	uint64_t time = s->time_ns, units = 0, inl = 0;
	unsigned int n = 0;
	uint8_t b[BFI_HIT_MAX];

	if (now < time)
		now = time;
	c->name_at = 0;
	s->produced++;
	/*
	 * What a stopped session still owes goes after the start's SYNC and
	 * BREAK: a reader of the new session starts at that SYNC, and one
	 * that read on across the stop finds every event counted.
	 */
	if (s->lost_owed && BFI_OWED_BREAK(owed) != BFT_BREAK_STOP) {
		n += ring_esc_put(b + n, BFT_ESC_LOST);
		n += bft_leb128_put(b + n, s->lost_owed);
	}
	if (sync) {
		/* seq counts what precedes, an owed LOST before it included */
		n += ring_esc_put(b + n, BFT_ESC_SYNC);
		n += bft_leb128_put(b + n, s->written + s->lost -
				    (BFI_OWED_BREAK(owed) == BFT_BREAK_STOP ?
				     s->lost_owed : 0));
		n += bft_leb128_put(b + n, now);
		n += bft_leb128_put(b + n, res);
		n += bft_leb128_put(b + n, tbits);
		time = now;
	}
	if (BFI_OWED_BREAK(owed)) {
		n += ring_esc_put(b + n, BFT_ESC_BREAK);
		n += bft_leb128_put(b + n, BFI_OWED_BREAK(owed));
	}
	if (s->lost_owed && BFI_OWED_BREAK(owed) == BFT_BREAK_STOP) {
		n += ring_esc_put(b + n, BFT_ESC_LOST);
		n += bft_leb128_put(b + n, s->lost_owed);
	}
	if (sync || (owed & BFI_OWE_THREAD)) {
		n += ring_esc_put(b + n, BFT_ESC_THREAD);
		n += bft_leb128_put(b + n, a->tgid);
		n += bft_leb128_put(b + n, s->tid);
		n += bft_leb128_put(b + n, now - time);
		time = now;
		c->name_at = n + 1;
	} else {
		units = (now - time) / res;
		if ((kind == BFI_EV_ENTER || kind == BFI_EV_EXIT) &&
		    units < (1ull << tbits))
			inl = units;
		else
			n += ring_units_put(b + n, units);
		time += units * res;
	}
	n += ring_event_put(b + n, tbits, kind, id, arg, inl);
	if (!ring_put(c, b, n)) {
		s->lost++;
		s->lost_owed++;
		return;
	}
	s->lost_owed = 0;
	s->owed = 0;
	s->time_ns = time;
	if (sync) {
		/* the SYNC's tbits hold from here; count afresh for the next */
		s->tbits = tbits;
		for (n = 0; n < BFT_TB_KEYS; n++)
			s->tb_keys[n] = 0;
		for (n = 0; n < BFT_TB_GAPS; n++)
			s->tb_gaps[n] = 0;
		s->sync_ns = now;
	}
	if (kind == BFI_EV_ENTER || kind == BFI_EV_EXIT)
		bft_tb_note((struct bft_tb_hist *)s->tb_keys,
			    kind == BFI_EV_ENTER, id, units);
	s->written++;
}

void bfi_ring_event(struct bfi_ctx *c, enum bfi_ev kind, uint32_t id,
		    uint32_t arg)
{
	struct bfi_slot *s = c->slot;
	uint32_t owed = s->owed;
	unsigned int sync;

	if (c->area->flush_ns && c->now - s->sync_ns >= c->area->flush_ns &&
	    c->now >= s->sync_ns)
		owed |= BFI_OWE_SYNC;
	sync = (owed & BFI_OWE_SYNC) || BFI_OWED_BREAK(owed);
	ring_write(c, kind, id, arg, owed, sync,
		   sync ? ring_sync_prepare(s) : (s->tbits & 7));
}
