// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU record rings: the writer side that uprobe handlers call, the
 * control records (SYNC, BREAK), and the read() side of /dev/bftrace.
 *
 * A ring is a byte array of power-of-two size addressed by free-running
 * 64-bit positions:
 *
 *        tail                     head
 *   ......|#########################|.............
 *         ^ reader copies from here ^ writers append here, on its CPU
 *
 * [tail, head) holds whole records only: a writer encodes everything one
 * uprobe hit produces past head, where no reader looks, and publishes it
 * with one store of head.  In the common case (same thread, nothing owed,
 * room up to the end of the array) it encodes in place; otherwise into a
 * local buffer that is copied in, or dropped whole with the loss counted.
 *
 * Exits of one thread that follow each other within one time unit form a
 * run; the run stays in the writer state (@run) and becomes one EXIT record
 * when anything else is written, or when the flush work seals it.
 *
 * No lock: ring n is written only on CPU n with preemption off, by the
 * handlers that run there and, through a work item bound to CPU n
 * (bft_ring_on_cpu()), by the flush work, the control path and the
 * reader.  Neither can run on that CPU while the other is writing.
 */
#include <linux/cpu.h>
#include <linux/math64.h>
#include <linux/percpu.h>
#include <linux/poll.h>
#include <linux/reciprocal_div.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "bft_internal.h"
#include "bft_varint.h"

static DEFINE_PER_CPU(struct bft_ring, bft_rings);
static bool bft_rings_allocated;

/* An ARG record: its escape and a 64-bit LEB128 value. */
#define BFT_ARG_REC_MAX (2 + 10)
/*
 * Room for every record one hit can produce: LOST, SYNC, BREAK, THREAD,
 * NAME, event, and a USDT event's ARGs, which must go in with their MARK.
 */
#define BFT_HIT_MAX (6 * BFT_RECORD_MAX + \
		     BFT_USDT_MAX_ARGS * BFT_ARG_REC_MAX)
/* ... and on the fast path: a sealed EXIT run, a TIME, the event. */
#define BFT_FAST_MAX (3 * BFT_RECORD_MAX)

struct bft_recbuf {
	u8 b[BFT_HIT_MAX];
	u32 len;
	u64 time;		/* stream time after these records */
	u8 tbits;		/* time bits of their ENTER and EXIT values */
	bool sync;		/* they hold a SYNC, which chose @tbits */
	bool named;		/* they hold a NAME of @comm */
	char comm[TASK_COMM_LEN];
};

static void bft_recbuf_init(struct bft_recbuf *rb, const struct bft_ring *r)
{
	rb->len = 0;
	rb->time = r->time;
	rb->tbits = r->tbits;
	rb->sync = false;
	rb->named = false;
}

struct bft_ring *bft_ring_get(unsigned int cpu)
{
	return per_cpu_ptr(&bft_rings, cpu);
}

static u32 bft_ring_used(struct bft_ring *r)
{
	/* pairs with smp_store_release(&r->head) in bft_ring_put() */
	return smp_load_acquire(&r->head) - READ_ONCE(r->tail);
}

static u32 bft_ring_watermark(struct bft_ring *r)
{
	return bft_watermark(READ_ONCE(bft_opts.watermark), r->size);
}

/* Writers only, on the ring's CPU with preemption off. */
static bool bft_ring_put(struct bft_ring *r, const u8 *buf, u32 len)
{
	/* pairs with smp_store_release(&r->tail) in bft_ring_read() */
	u64 tail = smp_load_acquire(&r->tail);
	u32 pos = r->head & (r->size - 1);
	u32 first = min(len, r->size - pos);

	if (len > r->size - (u32)(r->head - tail))
		return false;
	memcpy(r->data + pos, buf, first);
	memcpy(r->data, buf + first, len - first);
	/* pairs with smp_load_acquire(&r->head) in the reader */
	smp_store_release(&r->head, r->head + len);
	r->bytes_written += len;
	return true;
}

static void bft_ring_drop(struct bft_ring *r, u64 n)
{
	r->lost += n;
	r->pending_lost += n;
}

static void bft_ring_seal(struct bft_ring *r)
{
	u8 b[BFT_RECORD_MAX];
	unsigned int n;

	if (!r->run)
		return;
	n = bft_put_exits(b, r->tbits, r->run, r->run_units);
	if (bft_ring_put(r, b, n))
		r->written += r->run;
	else
		bft_ring_drop(r, r->run);
	r->run = 0;
}

/* A new session starts from the default, not from the last one's rate. */
static void bft_ring_reset_tbits(struct bft_ring *r)
{
	r->tbits = BFT_TIME_BITS;
	memset(&r->tb, 0, sizeof(r->tb));
}

static void bft_ring_set_res(struct bft_ring *r, u32 res)
{
	r->res = res;
	r->res_recip = reciprocal_value(res);
}

/*
 * Whole time units in @delta ns, exactly delta / res rounded down.  Every
 * hit needs this; a multiplication is far cheaper than a 64-bit divide,
 * and gaps of 4 s or more are rare enough to divide.
 */
static u64 bft_ring_units(const struct bft_ring *r, u64 delta)
{
	if (delta < r->res)
		return 0;
	if (delta <= U32_MAX)
		return reciprocal_divide((u32)delta, r->res_recip);
	return div_u64(delta, r->res);
}

/*
 * The time before an event: an ENTER or EXIT carries up to
 * bft_units_inline(@tbits) units itself, anything else gets a TIME record
 * at *@p.  Returns the units the event carries.
 */
static __always_inline u8 bft_put_lead_time(u8 **p, u8 tbits,
					    enum bft_rec kind, u64 units)
{
	if ((kind == BFT_REC_ENTER || kind == BFT_REC_EXIT) &&
	    units <= bft_units_inline(tbits))
		return units;
	*p += bft_put_units(*p, units);
	return 0;
}

/* The event itself; an exit's byte waits in the run (bft_ring_seal()). */
static inline unsigned int bft_put_event(u8 *p, u8 tbits, enum bft_rec kind,
					 u32 id, u32 arg, u8 units)
{
	unsigned int n;

	switch (kind) {
	case BFT_REC_ENTER:
		return bft_put_packed(p, BFT_F_ENTER, ((u64)id << tbits) | units);
	case BFT_REC_NORET:
		n = bft_put_esc(p, BFT_ESC_ENTER_NORET);
		return n + bft_put_varint(p + n, id);
	case BFT_REC_THROW:
		n = bft_put_esc(p, BFT_ESC_THROW);
		break;
	case BFT_REC_UNWIND:
		n = bft_put_esc(p, BFT_ESC_UNWIND);
		break;
	default:
		return 0;
	}
	n += bft_put_varint(p + n, id);
	return n + bft_put_varint(p + n, arg);
}

/* (v << 1) ^ (v >> 63): small negative numbers stay short (uapi 2.2). */
static u64 bft_zigzag(u64 v)
{
	return (v << 1) ^ (u64)((s64)v >> 63);
}

/* A MARK and its ARGs, which no other record may come between. */
static unsigned int bft_put_usdt(u8 *p, u32 id,
				 const struct bft_usdt_vals *uv)
{
	unsigned int n = bft_put_esc(p, BFT_ESC_MARK);
	u8 i;

	n += bft_put_varint(p + n, id);
	n += bft_put_varint(p + n, uv->n);
	n += bft_put_varint(p + n, uv->is_signed);
	n += bft_put_varint(p + n, uv->unread);
	for (i = 0; i < uv->n; i++) {
		u64 v = uv->v[i];

		if (uv->is_signed & BIT(i))
			v = bft_zigzag(v);
		n += bft_put_esc(p + n, BFT_ESC_ARG);
		n += bft_put_varint(p + n, v);
	}
	return n;
}

/* Records owed before anything else: LOST, then SYNC, then BREAK. */
static void bft_put_owed(struct bft_ring *r, struct bft_recbuf *rb, u64 now)
{
	u8 *p = rb->b + rb->len;

	if (r->pending_lost) {
		p += bft_put_esc(p, BFT_ESC_LOST);
		p += bft_put_varint(p, r->pending_lost);
	}
	if (r->need_sync || r->pending_break) {
		/* seq counts what precedes, the owed LOST included */
		p += bft_put_esc(p, BFT_ESC_SYNC);
		p += bft_put_varint(p, r->written + r->lost);
		p += bft_put_varint(p, now);
		p += bft_put_varint(p, r->res);
		rb->tbits = bft_tb_pick(&r->tb, r->tbits);
		p += bft_put_varint(p, rb->tbits);
		rb->time = now;
		rb->sync = true;
	}
	if (r->pending_break) {
		p += bft_put_esc(p, BFT_ESC_BREAK);
		p += bft_put_varint(p, r->pending_break);
	}
	rb->len = p - rb->b;
}

static struct bft_ring_name *bft_ring_name_slot(struct bft_ring *r, pid_t tid)
{
	return &r->names[(u32)tid % BFT_RING_NAMES];
}

/*
 * NAME after a THREAD, unless this ring named the thread so since its last
 * SYNC.  The comm is read without the task lock, as bpf_get_current_comm()
 * reads it, a race KCSAN is told of: only a rename racing this very hit
 * can tear it, and then the thread's next THREAD names it again.
 */
static u8 *bft_put_name(struct bft_ring *r, struct bft_recbuf *rb, u8 *p)
{
	struct bft_ring_name *slot = bft_ring_name_slot(r, current->pid);
	size_t n;

	/* racy by design: see above */
	data_race(strscpy_pad(rb->comm, current->comm, sizeof(rb->comm)));
	if (!rb->sync && slot->tid == current->pid &&
	    !memcmp(slot->comm, rb->comm, sizeof(rb->comm)))
		return p;
	n = strnlen(rb->comm, BFT_THREAD_NAME_MAX);
	p += bft_put_esc(p, BFT_ESC_NAME);
	p += bft_put_varint(p, n);
	memcpy(p, rb->comm, n);
	rb->named = true;
	return p + n;
}

/*
 * THREAD or time before an event; returns the units the event carries,
 * and the units since the record before in *@units (0 after a THREAD).
 */
static u8 bft_put_when(struct bft_ring *r, struct bft_recbuf *rb, u64 now,
		       bool new_thread, enum bft_rec kind, u64 *units)
{
	u8 *p = rb->b + rb->len;
	u8 inline_units = 0;

	*units = 0;
	if (new_thread) {
		p += bft_put_esc(p, BFT_ESC_THREAD);
		p += bft_put_varint(p, current->tgid);
		p += bft_put_varint(p, current->pid);
		p += bft_put_varint(p, now - rb->time);
		rb->time = now;
		p = bft_put_name(r, rb, p);
	} else {
		*units = bft_ring_units(r, now - rb->time);
		inline_units = bft_put_lead_time(&p, rb->tbits, kind, *units);
		rb->time += *units * r->res;
	}
	rb->len = p - rb->b;
	return inline_units;
}

/* The owed records went out: forget that they are owed. */
static void bft_ring_commit_owed(struct bft_ring *r, struct bft_recbuf *rb)
{
	r->pending_lost = 0;
	r->need_sync = false;
	r->pending_break = 0;
	r->time = rb->time;
	if (rb->sync) {
		/* the SYNC's tbits hold from here; count afresh for the next */
		r->tbits = rb->tbits;
		memset(&r->tb, 0, sizeof(r->tb));
		/* a reader may start here: it learns the names again */
		memset(r->names, 0, sizeof(r->names));
	}
}

/* An ENTER or EXIT went out, @units after the record before it. */
static __always_inline void bft_ring_note(struct bft_ring *r,
					  enum bft_rec kind, u32 id, u64 units)
{
	if (kind == BFT_REC_ENTER || kind == BFT_REC_EXIT)
		bft_tb_note(&r->tb, kind == BFT_REC_ENTER, id, units);
}

static u64 bft_ring_now(struct bft_ring *r)
{
	u64 now = ktime_get_ns();

	/* a SYNC written from another CPU may carry a later clock reading */
	return max(now, r->time);
}

/*
 * The common hit: the same thread as the last record here, nothing owed,
 * and room for BFT_FAST_MAX bytes both free and before the end of the
 * array.  The records then cannot fail to fit, so they are encoded
 * straight into the ring, past head, and published at once.  Preemption off.
 * False if the slow path must run; else *@used is the ring's fill.
 */
static __always_inline bool bft_ring_fast(struct bft_ring *r,
					  enum bft_rec kind, u32 id, u32 arg,
					  u64 units, u32 *used)
{
	/* pairs with smp_store_release(&r->tail) in bft_ring_read() */
	u64 tail = smp_load_acquire(&r->tail);
	u64 head = r->head;
	u32 pos = head & (r->size - 1);
	u8 *start, *p, inline_units;

	if (r->size - pos < BFT_FAST_MAX ||
	    r->size - (u32)(head - tail) < BFT_FAST_MAX)
		return false;
	start = r->data + pos;
	p = start;
	if (r->run) {
		p += bft_put_exits(p, r->tbits, r->run, r->run_units);
		r->written += r->run;
		r->run = 0;
	}
	inline_units = bft_put_lead_time(&p, r->tbits, kind, units);
	r->time += units * r->res;
	p += bft_put_event(p, r->tbits, kind, id, arg, inline_units);
	bft_ring_note(r, kind, id, units);
	if (kind == BFT_REC_EXIT) {
		/* its byte goes out when the run is sealed */
		r->run = 1;
		r->run_units = inline_units;
	} else {
		r->written++;
	}
	head += p - start;
	/* pairs with smp_load_acquire(&r->head) in the reader */
	smp_store_release(&r->head, head);
	r->bytes_written += p - start;
	*used = head - tail;
	return true;
}

/*
 * Everything else: a new thread, owed records, a ring (nearly) full or
 * about to wrap.  Returns the bytes now in the ring, or 0 on a drop.
 */
static noinline u32 bft_ring_slow(struct bft_ring *r, enum bft_rec kind,
				  u32 id, u32 arg,
				  const struct bft_usdt_vals *uv, u64 now,
				  unsigned long nsw, bool new_thread)
{
	struct task_struct *tsk = current;
	struct bft_recbuf rb;
	u8 inline_units;
	u64 units;

	bft_ring_seal(r);
	bft_recbuf_init(&rb, r);
	bft_put_owed(r, &rb, now);
	inline_units = bft_put_when(r, &rb, now, new_thread, kind, &units);
	if (kind == BFT_REC_USDT)
		rb.len += bft_put_usdt(rb.b + rb.len, id, uv);
	else
		rb.len += bft_put_event(rb.b + rb.len, rb.tbits, kind, id,
					arg, inline_units);
	if (!bft_ring_put(r, rb.b, rb.len)) {
		bft_ring_drop(r, 1);
		return 0;
	}
	bft_ring_commit_owed(r, &rb);
	bft_ring_note(r, kind, id, units);
	if (rb.named) {
		struct bft_ring_name *slot = bft_ring_name_slot(r, tsk->pid);

		slot->tid = tsk->pid;
		memcpy(slot->comm, rb.comm, sizeof(slot->comm));
	}
	if (new_thread) {
		r->have_thread = true;
		r->tgid = tsk->tgid;
		r->tid = tsk->pid;
		r->nsw = nsw;
	}
	if (kind == BFT_REC_EXIT) {
		/* its byte goes out when the run is sealed */
		r->run = 1;
		r->run_units = inline_units;
	} else {
		r->written++;
	}
	return r->head - READ_ONCE(r->tail);
}

/*
 * Called from uprobe handlers: process context, preemptible, any CPU.
 * Preemption is off while this CPU's ring is written, which keeps out the
 * work items that bring every other writer here.
 */
static __always_inline void bft_ring_hit(enum bft_rec kind, u32 id, u32 arg,
					 const struct bft_usdt_vals *uv)
{
	struct task_struct *tsk = current;
	struct bft_ring *r;
	unsigned long nsw;
	bool new_thread;
	u32 used = 0;
	int mode;
	u64 now, units;

	preempt_disable();
	r = this_cpu_ptr(&bft_rings);
	/* read with preemption off: pairs with bft_rings_break() */
	mode = READ_ONCE(bft_mode);
	if (unlikely(!bft_recording(mode))) {
		if (mode == BFT_MODE_SUSPENDED)
			r->suspended++;
		goto out;
	}
	now = bft_ring_now(r);
	nsw = tsk->nvcsw + tsk->nivcsw;
	/* an owed SYNC is written below, and a THREAD must follow it */
	new_thread = !r->have_thread || r->need_sync || r->pending_break ||
		     r->tid != tsk->pid || r->nsw != nsw;
	r->produced++;

	/* a MARK's ARGs may not fit the fast path's room */
	if (kind != BFT_REC_USDT && likely(!new_thread && !r->pending_lost)) {
		units = bft_ring_units(r, now - r->time);
		if (kind == BFT_REC_EXIT && r->run && !units) {
			r->run++;
			goto out;
		}
		if (bft_ring_fast(r, kind, id, arg, units, &used))
			goto out;
	}
	used = bft_ring_slow(r, kind, id, arg, uv, now, nsw, new_thread);
out:
	preempt_enable();
	if (used && used >= bft_ring_watermark(r) && wq_has_sleeper(&r->wait))
		wake_up_interruptible(&r->wait);
}

void bft_ring_record(enum bft_rec kind, u32 id, u32 arg)
{
	bft_ring_hit(kind, id, arg, NULL);
}

/* @uv was read from user memory before: nothing here may fault. */
void bft_ring_usdt(u32 id, const struct bft_usdt_vals *uv)
{
	bft_ring_hit(BFT_REC_USDT, id, 0, uv);
}

/* A SYNC, and a BREAK if @brk, now; owed until there is room.  On its CPU. */
static void bft_ring_mark(struct bft_ring *r, u64 now, u8 brk)
{
	struct bft_recbuf rb;

	bft_ring_seal(r);
	bft_recbuf_init(&rb, r);
	r->need_sync = true;
	if (brk)
		r->pending_break = brk;
	bft_put_owed(r, &rb, max(now, r->time));
	if (bft_ring_put(r, rb.b, rb.len)) {
		bft_ring_commit_owed(r, &rb);
		/* a reader may start at any SYNC: name the thread again */
		r->have_thread = false;
	}
}

/* A LOST or BREAK record that did not fit yet.  On its CPU. */
static bool bft_ring_owes(struct bft_ring *r)
{
	return r->pending_lost || r->pending_break;
}

static void bft_ring_wake(struct bft_ring *r)
{
	if (wq_has_sleeper(&r->wait))
		wake_up_interruptible(&r->wait);
}

/* What a control-side writer asks of one ring, and what it answers. */
struct bft_ring_op {
	struct bft_ring *r;
	void (*fn)(struct bft_ring_op *op);
	u64 now;
	u32 res;		/* restart: the new TIME unit */
	u8 brk;			/* mark: BREAK reason, 0 none */
	bool restart, heartbeat;
	bool active;		/* flush: some CPU recorded since the last */
	bool busy;		/* resize: unread records */
	struct bft_ring_stats *st;
	u8 *data;		/* reset: the new array, then the old one */
	u32 size;
};

/* Two control paths never write one offline ring at once. */
static DEFINE_MUTEX(bft_rings_ctl);

static long bft_ring_op_run(void *arg)
{
	struct bft_ring_op *op = arg;

	preempt_disable();
	op->fn(op);
	preempt_enable();
	return 0;
}

/*
 * Run @fn(@op) where ring @cpu may be written: in a work item on @cpu,
 * with preemption off, so that no handler there is halfway through a
 * record.  An offline CPU runs no handler (hotplug is held off meanwhile):
 * @fn runs here.  Process context only; waits for @fn.
 */
static void bft_ring_on_cpu(unsigned int cpu,
			    void (*fn)(struct bft_ring_op *op),
			    struct bft_ring_op *op)
{
	op->r = bft_ring_get(cpu);
	op->fn = fn;
	mutex_lock(&bft_rings_ctl);
	cpus_read_lock();
	if (cpu_online(cpu))
		work_on_cpu(cpu, bft_ring_op_run, op);
	else
		bft_ring_op_run(op);
	cpus_read_unlock();
	mutex_unlock(&bft_rings_ctl);
}

static void bft_ring_mark_fn(struct bft_ring_op *op)
{
	struct bft_ring *r = op->r;

	if (op->restart) {
		/* an open run goes out under the tbits it was begun with */
		bft_ring_seal(r);
		bft_ring_set_res(r, op->res);
		bft_ring_reset_tbits(r);
		r->have_thread = false;
	}
	bft_ring_mark(r, op->now, op->brk);
	WRITE_ONCE(r->flushed, r->head != READ_ONCE(r->tail));
}

/* Every ring gets the same mark; used by start, suspend and stop. */
static void bft_rings_mark(u8 brk, bool restart)
{
	struct bft_ring_op op = {
		.now = ktime_get_ns(),
		.res = READ_ONCE(bft_opts.time_res_ns),
		.brk = brk,
		.restart = restart,
	};
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		bft_ring_on_cpu(cpu, bft_ring_mark_fn, &op);
		bft_ring_wake(op.r);
	}
}

void bft_rings_start(void)
{
	bft_rings_mark(0, true);
}

/*
 * The caller has set the new mode.  A handler reads it with preemption
 * off, so one that saw the old mode has written its record before the
 * work that writes the BREAK runs on its CPU, and one after that work
 * sees the new mode.
 */
void bft_rings_break(u8 reason)
{
	smp_mb();	/* the mode store before the BREAK records */
	bft_rings_mark(reason, false);
}

void bft_rings_sync(void)
{
	bft_rings_mark(0, false);
}

static void bft_ring_seal_fn(struct bft_ring_op *op)
{
	struct bft_ring *r = op->r;

	bft_ring_seal(r);
	op->busy = r->head != READ_ONCE(r->tail);
}

static void bft_ring_flush_fn(struct bft_ring_op *op)
{
	struct bft_ring *r = op->r;

	bft_ring_seal(r);
	if (op->active && op->heartbeat) {
		bft_ring_mark(r, op->now, 0);
		/*
		 * Not @produced now: a hit since the flush began may be later
		 * than the SYNC written into the rings marked before this one,
		 * and only an active next flush moves those rings past it.
		 */
		r->sync_written = r->flush_seen;
	} else if (bft_ring_owes(r)) {
		bft_ring_mark(r, op->now, 0);
	}
	op->busy = r->head != READ_ONCE(r->tail);
	if (op->busy)
		WRITE_ONCE(r->flushed, true);
}

/*
 * The flush timer: seal open exit runs so an idle CPU's last records reach
 * the reader, and, when any CPU recorded something since the last flush,
 * write a SYNC into every ring: an idle ring's SYNC tells a merger that it
 * holds nothing older (seeds/002).
 */
bool bft_rings_flush(bool heartbeat)
{
	struct bft_ring_op op = { .heartbeat = heartbeat };
	bool pending = false;
	unsigned int cpu;

	/*
	 * Read from here, racing with the handlers: a hit counted too late
	 * for this flush makes the next one active.  The time is taken after
	 * the counts, so that every hit they include is older than the SYNC.
	 */
	for_each_possible_cpu(cpu) {
		struct bft_ring *r = bft_ring_get(cpu);
		u64 produced = READ_ONCE(r->produced);

		WRITE_ONCE(r->flush_seen, produced);
		if (produced != READ_ONCE(r->sync_written))
			op.active = true;
	}
	op.now = ktime_get_ns();
	for_each_possible_cpu(cpu) {
		bft_ring_on_cpu(cpu, bft_ring_flush_fn, &op);
		pending |= op.busy;
		if (READ_ONCE(op.r->flushed))
			bft_ring_wake(op.r);
	}
	return pending;
}

u32 bft_rings_fill_permille(void)
{
	unsigned int cpu;
	u32 fill = 0;

	for_each_possible_cpu(cpu) {
		struct bft_ring *r = bft_ring_get(cpu);

		if (!r->size)
			continue;
		fill = max_t(u32, fill, div_u64((u64)bft_ring_used(r) * 1000,
						r->size));
	}
	return fill;
}

/* On the ring's CPU: the counters of one moment, produced == written + lost. */
static void bft_ring_stats_fn(struct bft_ring_op *op)
{
	struct bft_ring *r = op->r;
	struct bft_ring_stats *st = op->st;

	st->produced = r->produced;
	st->written = r->written;
	st->lost = r->lost;
	st->suspended = r->suspended;
	st->bytes_written = r->bytes_written;
	/* not allocated yet: the size it will have */
	st->size = r->size ?: READ_ONCE(bft_opts.buf_size);
}

void bft_ring_stats(unsigned int cpu, struct bft_ring_stats *st)
{
	struct bft_ring_op op = { .st = st };
	struct bft_ring *r;

	/*
	 * On 64-bit an aligned u64 load is whole, so the counters are read
	 * from here: a handler bumping them meanwhile makes them a moment
	 * apart, as two hits would, and a stopped or flushed ring reads
	 * exact.  A work item on every CPU made each status (the counters
	 * ask ten times a second) wait for a kworker on each of them.
	 */
	if (!IS_ENABLED(CONFIG_64BIT)) {
		bft_ring_on_cpu(cpu, bft_ring_stats_fn, &op);
		r = op.r;
	} else {
		r = bft_ring_get(cpu);
		st->produced = READ_ONCE(r->produced);
		st->written = READ_ONCE(r->written);
		st->lost = READ_ONCE(r->lost);
		st->suspended = READ_ONCE(r->suspended);
		st->bytes_written = READ_ONCE(r->bytes_written);
		st->size = READ_ONCE(r->size) ?: READ_ONCE(bft_opts.buf_size);
	}
	st->bytes_read = READ_ONCE(r->bytes_read);
	st->used = bft_ring_used(r);
	st->reader = atomic_read(&r->bound);
}

/* ---- reader side ---- */

static u8 bft_ring_byte(struct bft_ring *r, u64 pos)
{
	return r->data[pos & (r->size - 1)];
}

static u32 bft_ring_varint_len(struct bft_ring *r, u64 pos)
{
	u32 n = 1;

	while (bft_ring_byte(r, pos + n - 1) & 0x80)
		n++;
	return n;
}

/* Length of the well-formed record at @pos (we wrote it). */
static u32 bft_ring_record_len(struct bft_ring *r, u64 pos)
{
	u8 lead = bft_ring_byte(r, pos);
	u32 kind = lead & BFT_ESC_KIND_MASK;
	u32 n, args;

	if (!(lead & BFT_PACK_CONT))
		return 1;
	n = 1 + bft_ring_varint_len(r, pos + 1);
	if (n != 2 || bft_ring_byte(r, pos + 1) != 0 || (lead & BFT_F_ENTER))
		return n;
	/* its count is one byte, and the bytes it counts are no varints */
	if (kind == BFT_ESC_NAME)
		return 3 + bft_ring_byte(r, pos + 2);
	if (kind >= BFT_ESC_TIME_SHORT)
		args = 0;
	else if (kind == BFT_ESC_SYNC)
		args = 4;
	else if (kind == BFT_ESC_THREAD)
		args = 3;
	else if (kind == BFT_ESC_THROW || kind == BFT_ESC_UNWIND)
		args = 2;
	else if (kind == BFT_ESC_MARK)
		args = 4;
	else
		args = 1;
	while (args--)
		n += bft_ring_varint_len(r, pos + n);
	return n;
}

/* The longest run of whole records from @tail that fits in @count bytes. */
static u32 bft_ring_whole(struct bft_ring *r, u64 tail, u32 count)
{
	u32 n = 0, len;

	for (;;) {
		len = bft_ring_record_len(r, tail + n);
		if (n + len > count)
			return n;
		n += len;
	}
}

ssize_t bft_ring_read(struct bft_ring *r, char __user *buf, size_t count,
		      bool nonblock)
{
	u64 head, tail;
	u32 n, pos, first;
	ssize_t ret;

	if (count < BFT_RECORD_MAX)
		return -EINVAL;
	for (;;) {
		if (mutex_lock_interruptible(&r->read_mutex))
			return -ERESTARTSYS;
		tail = r->tail;
		/* pairs with smp_store_release(&r->head) in bft_ring_put() */
		head = smp_load_acquire(&r->head);
		if (head != tail)
			break;
		mutex_unlock(&r->read_mutex);
		if (nonblock)
			return -EAGAIN;
		ret = wait_event_interruptible(r->wait, bft_ring_used(r));
		if (ret)
			return ret;
	}
	n = head - tail;
	if (n > count)
		n = bft_ring_whole(r, tail, count);
	pos = tail & (r->size - 1);
	first = min(n, r->size - pos);
	if (copy_to_user(buf, r->data + pos, first) ||
	    copy_to_user(buf + first, r->data, n - first)) {
		ret = -EFAULT;
		goto out;
	}
	/* pairs with smp_load_acquire(&r->tail) in bft_ring_put() */
	smp_store_release(&r->tail, tail + n);
	WRITE_ONCE(r->bytes_read, r->bytes_read + n);
	/* the room just made may take what a full ring still owes */
	if (READ_ONCE(r->pending_lost) || READ_ONCE(r->pending_break)) {
		struct bft_ring_op op = { .now = ktime_get_ns() };

		bft_ring_on_cpu(r->cpu, bft_ring_flush_fn, &op);
	}
	/*
	 * Nothing left: no POLLIN for it.  A flush that seals more just
	 * now may see its flag cleared here; the next flush sets it again.
	 */
	if (smp_load_acquire(&r->head) == tail + n)
		WRITE_ONCE(r->flushed, false);
	ret = n;
out:
	mutex_unlock(&r->read_mutex);
	return ret;
}

__poll_t bft_ring_poll(struct bft_ring *r, struct file *file,
		       struct poll_table_struct *pt)
{
	u32 used;

	poll_wait(file, &r->wait, pt);
	used = bft_ring_used(r);
	if (used >= bft_ring_watermark(r) || (used && READ_ONCE(r->flushed)))
		return EPOLLIN | EPOLLRDNORM;
	return 0;
}

/* ---- life cycle ---- */

static void bft_ring_reset(struct bft_ring *r, u8 *data, u32 size)
{
	r->data = data;
	r->size = size;
	r->head = 0;
	r->tail = 0;
	r->time = 0;
	bft_ring_set_res(r, READ_ONCE(bft_opts.time_res_ns));
	r->have_thread = false;
	r->need_sync = true;
	r->pending_lost = 0;
	r->pending_break = 0;
	r->run = 0;
	bft_ring_reset_tbits(r);
	r->flushed = false;
}

/* On the ring's CPU: take op->data as the array, hand the old one back. */
static void bft_ring_reset_fn(struct bft_ring_op *op)
{
	u8 *old = op->r->data;

	bft_ring_reset(op->r, op->data, op->size);
	op->data = old;
}

static void bft_rings_free(u8 **bufs)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		kvfree(bufs[cpu]);
	kfree(bufs);
}

/*
 * Charged to the caller's memory cgroup, like a pipe's buffers.  A cgroup
 * too small for the rings refuses them: without __GFP_RETRY_MAYFAIL a
 * charge over memory.max wakes the cgroup's OOM killer, which kills the
 * caller or its neighbours for memory that no kill gives back.  The
 * refusal goes to the caller (extack), not to the kernel log.
 */
#define BFT_RING_GFP	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

static u8 **bft_rings_alloc(u32 size)
{
	unsigned int cpu;
	u8 **bufs;

	bufs = kcalloc(nr_cpu_ids, sizeof(*bufs), GFP_KERNEL);
	if (!bufs)
		return NULL;
	for_each_possible_cpu(cpu) {
		bufs[cpu] = kvmalloc_node(size, BFT_RING_GFP, cpu_to_node(cpu));
		if (!bufs[cpu]) {
			bft_rings_free(bufs);
			return NULL;
		}
	}
	return bufs;
}

/* No memory yet: anyone can load the module through the family alias. */
void bft_rings_init(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct bft_ring *r = bft_ring_get(cpu);

		memset(r, 0, sizeof(*r));
		r->cpu = cpu;
		mutex_init(&r->read_mutex);
		init_waitqueue_head(&r->wait);
		atomic_set(&r->bound, 0);
	}
}

/*
 * Under bft_lock, from the first attach, start or reader: the rings are
 * allocated once and kept until rmmod.  Before this the writers find
 * every ring zero-sized and write nothing.
 */
int bft_rings_ensure(u32 size)
{
	struct bft_ring_op op = { .size = size };
	unsigned int cpu;
	u8 **bufs;

	if (bft_rings_ready())
		return 0;
	bufs = bft_rings_alloc(size);
	if (!bufs)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		op.data = bufs[cpu];
		bft_ring_on_cpu(cpu, bft_ring_reset_fn, &op);
	}
	kfree(bufs);
	/* pairs with smp_load_acquire() in bft_rings_ready() */
	smp_store_release(&bft_rings_allocated, true);
	return 0;
}

bool bft_rings_ready(void)
{
	/* pairs with smp_store_release() in bft_rings_ensure() */
	return smp_load_acquire(&bft_rings_allocated);
}

void bft_rings_exit(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct bft_ring *r = bft_ring_get(cpu);

		kvfree(r->data);
		r->data = NULL;
	}
}

/*
 * Only while idle, under bft_lock.  Unread records would vanish without a
 * count, so a ring that still holds any makes this -EBUSY.
 */
int bft_rings_resize(u32 size)
{
	struct bft_ring_op op = { .size = size };
	unsigned int cpu, locked = 0;
	int ret = 0;
	u8 **bufs;

	if (!bft_rings_ready())
		return 0;	/* allocated at the new size when needed */
	bufs = bft_rings_alloc(size);
	if (!bufs)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		struct bft_ring *r = bft_ring_get(cpu);

		mutex_lock(&r->read_mutex);
		locked++;
		bft_ring_on_cpu(cpu, bft_ring_seal_fn, &op);
		if (op.busy) {
			ret = -EBUSY;
			break;
		}
	}
	for_each_possible_cpu(cpu) {
		struct bft_ring *r = bft_ring_get(cpu);

		if (!locked)
			break;
		locked--;
		if (!ret) {
			op.data = bufs[cpu];
			bft_ring_on_cpu(cpu, bft_ring_reset_fn, &op);
			bufs[cpu] = op.data;
		}
		mutex_unlock(&r->read_mutex);
	}
	bft_rings_free(bufs);
	return ret;
}
