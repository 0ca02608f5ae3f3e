// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF capture backend: uprobe and uretprobe handlers that write the
 * records of include/uapi/linux/bftrace.h (section 2), byte for byte what
 * bftrace.ko's kmod/bft_ring.c writes for the same events, into one BPF
 * ring buffer per CPU; and bft_ctl, which user space runs on a chosen CPU
 * (BPF_PROG_TEST_RUN with BPF_F_TEST_RUN_ON_CPU), or for an offline CPU on
 * its own, for what the module's flush work and mode changes write there:
 * seals, SYNC, BREAK.
 *
 * A CPU's records collect in its scratch buffer and go out as one ring
 * buffer sample once BFT_BPF_BATCH bytes are there, or when bft_ctl seals
 * the CPU (the reader's flush): a reader sees whole records only, and a
 * CPU's samples, in order, are its stream.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

/*
 * linux/bftrace.h defines only constants and enums; the types its
 * includes would bring are in vmlinux.h, which cannot coexist with them.
 */
#define _LINUX_TYPES_H
#define _LINUX_IOCTL_H
#include <linux/bftrace.h>

#include "bft_bpf_shared.h"

char LICENSE[] SEC("license") = "GPL";

#define MASK		(BFT_BPF_SCRATCH - 1)
#define F_ENTER		0x80
#define F_EXIT		0x00
#define PACK_CONT	0x40
#define PACK_LOW	0x3f

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);		/* possible CPUs, set by the loader */
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_RINGBUF);
		__uint(max_entries, 1 << 20);	/* set by the loader */
	});
} bft_rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bft_bpf_cpu);
} bft_cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bft_bpf_ctl);
} bft_ctl_map SEC(".maps");

/*
 * Entry hits recorded per method id (BFT_P_HITS).  Ids below
 * BFT_BPF_NEAR_IDS index an array, whose lookup is a bounds check: a
 * hash lookup was a fifth of what the handlers cost over the bare trap.
 * Any other id has an entry in the hash, made at attach.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BFT_BPF_NEAR_IDS);
	__type(key, __u32);
	__type(value, __u64);
} bft_hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, __u64);
} bft_hits_far SEC(".maps");

/* The method table and the readers' progress: user space only. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct bft_bpf_method_key);
	__type(value, struct bft_bpf_method);
} bft_methods SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* possible CPUs, set by the loader */
	__type(key, __u32);
	__type(value, __u64);
} bft_read SEC(".maps");

/* USDT probes by the slot their cookie carries (BFT_BPF_COOKIE). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bft_bpf_usdt);
} bft_usdt SEC(".maps");

enum rec { REC_ENTER, REC_NORET, REC_EXIT, REC_MARK };

/* A USDT hit's arguments, read before its records are written. */
struct usdt_vals {
	__u64 v[BFT_USDT_MAX_ARGS];	/* zigzagged where signed */
	__u32 n;
	__u32 is_signed;		/* bit i: argument i is signed */
	__u32 unread;			/* bit i: argument i faulted */
};

/* ---- encoding into the CPU's scratch buffer ---- */

/*
 * The length lives in the map value, not on the stack: the verifier then
 * knows it only as "masked", so the paths through the varint encoders
 * converge instead of multiplying.
 */
static __always_inline void put_byte(struct bft_bpf_cpu *c, __u8 b)
{
	__u32 n = c->len;

	c->buf[n & MASK] = b;
	c->len = n + 1;
}

static __always_inline void put_varint(struct bft_bpf_cpu *c, __u64 v)
{
	for (int i = 0; i < 10; i++) {
		if (v < 0x80) {
			put_byte(c, v);
			return;
		}
		put_byte(c, (v & 0x7f) | 0x80);
		v >>= 7;
	}
}

static __always_inline void put_packed(struct bft_bpf_cpu *c, __u8 flag,
				       __u64 v)
{
	if (v <= PACK_LOW) {
		put_byte(c, flag | v);
		return;
	}
	put_byte(c, flag | PACK_CONT | (v & PACK_LOW));
	put_varint(c, v >> 6);
}

static __always_inline void put_esc(struct bft_bpf_cpu *c, __u8 kind)
{
	put_byte(c, BFT_ESC_LEAD | kind);
	put_byte(c, 0);
}

static __always_inline void put_units(struct bft_bpf_cpu *c, __u64 units)
{
	if (!units)
		return;
	if (units <= BFT_TIME_SHORT_MAX) {
		put_esc(c, BFT_ESC_TIME_SHORT - 1 + units);
		return;
	}
	put_esc(c, BFT_ESC_TIME);
	put_varint(c, units);
}

/* An EXIT run of n exits, units after the record before it. */
static __always_inline void put_exits(struct bft_bpf_cpu *c, __u32 n,
				      __u8 units)
{
	put_packed(c, F_EXIT, ((__u64)(n - 1) << (c->tbits & 7)) | units);
}

/*
 * The time before an event: an ENTER or EXIT carries up to 2^tbits - 1
 * units itself, anything else gets a TIME record.  Returns the units the
 * event carries.
 */
static __always_inline __u8 put_lead_time(struct bft_bpf_cpu *c, __u8 tbits,
					  enum rec kind, __u64 units)
{
	if ((kind == REC_ENTER || kind == REC_EXIT) &&
	    units < (1U << (tbits & 7)))
		return units;
	put_units(c, units);
	return 0;
}

/*
 * 1 if x is not 0, without a branch: (x | -x) has its top bit set.  The
 * barrier hides the comparison from clang, which would otherwise make a
 * branch of it again (BPF has no set-on-condition instruction).
 */
static __always_inline __u64 nonzero(__u64 x)
{
	__u64 m = x | (0 - x);

	barrier_var(m);
	return m >> 63;
}

/* 1 if i < n (both small), without a branch (see nonzero()). */
static __always_inline __u64 below(__u64 i, __u64 n)
{
	__u64 d = i - n;

	barrier_var(d);
	return d >> 63;
}

/*
 * A MARK and its ARGs are written without a branch.  put_varint()'s
 * early exits in thirteen varints, and a branch per argument on their
 * number, gave the verifier more paths than it follows (the number
 * became precise, and every count its own pass through the slow path: a
 * million instructions).  Here every varint stores all ten bytes and the
 * length moves by its own; an ARG past the probe's count is stored and
 * not kept.  The bytes past the length are scratch that the next record
 * overwrites or ring_put() leaves out; a MARK starts an emptied batch, so
 * they stay in the buffer (bft_bpf_shared.h: BFT_BPF_USDT_HIT_MAX).
 */
static __always_inline __u32 varint_store(struct bft_bpf_cpu *c, __u32 n,
					  __u64 v)
{
	__u32 len = 1;

#pragma clang loop unroll(full)
	for (int k = 0; k < 9; k++) {
		__u64 more = nonzero(v >> (7 * (k + 1)));

		c->buf[(n + k) & MASK] = ((v >> (7 * k)) & 0x7f) | (more << 7);
		len += more;
	}
	c->buf[(n + 9) & MASK] = v >> 63;
	return len;
}

static __always_inline void put_varint_flat(struct bft_bpf_cpu *c, __u64 v)
{
	__u32 n = c->len;

	c->len = n + varint_store(c, n, v);
}

/* An ARG record, kept (the length moved past it) only if keep is 1. */
static __always_inline void put_arg(struct bft_bpf_cpu *c, __u64 v,
				    __u64 keep)
{
	__u32 n = c->len;

	c->buf[n & MASK] = BFT_ESC_LEAD | BFT_ESC_ARG;
	c->buf[(n + 1) & MASK] = 0;
	c->len = n + ((0 - keep) & (2 + varint_store(c, n + 2, v)));
}

/* A MARK and its ARGs (uapi 2.2), which nothing may come between. */
static __always_inline void put_mark(struct bft_bpf_cpu *c, __u32 id,
				     const struct usdt_vals *uv)
{
	put_esc(c, BFT_ESC_MARK);
	put_varint_flat(c, id);
	put_varint_flat(c, uv->n);
	put_varint_flat(c, uv->is_signed);
	put_varint_flat(c, uv->unread);
	/* unrolled: the values sit on the stack, read at fixed offsets */
#pragma clang loop unroll(full)
	for (int i = 0; i < BFT_USDT_MAX_ARGS; i++)
		put_arg(c, uv->v[i], below(i, uv->n));
}

static __always_inline void put_event(struct bft_bpf_cpu *c, __u8 tbits,
				      enum rec kind, __u32 id, __u8 units,
				      const struct usdt_vals *uv)
{
	if (kind == REC_ENTER) {
		put_packed(c, F_ENTER, ((__u64)id << (tbits & 7)) | units);
	} else if (kind == REC_NORET) {
		put_esc(c, BFT_ESC_ENTER_NORET);
		put_varint(c, id);
	} else if (kind == REC_MARK) {
		put_mark(c, id, uv);
	}
	/* an exit's byte waits in the run */
}

/* ---- the ring ---- */

static __always_inline void *cpu_ring(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&bft_rings, &cpu);
}

/* ring_put()'s wake_at for the flush work: wake the reader now. */
#define WAKE_NOW	0

/*
 * A wakeup is an irq_work, which on x86 is a self-IPI: asking for one on
 * every record cost a fifth of a traced thread's time.  Without a flag
 * the kernel wakes whenever the reader has caught up, i.e. at the first
 * record after every drain, which at a modest rate is every record.  So
 * the reader is woken once, by the record that makes the ring cross
 * wake_at bytes; below that, and above it until the reader drains, it
 * reads on its own timer (bft_bpf_rings_poll()).  A sample takes its
 * length plus the header, rounded up to 8, as the kernel reserves it.
 */
static __always_inline __u64 wake_flag(void *ring, __u32 wake_at, __u32 n)
{
	__u64 before, after;

	if (wake_at == WAKE_NOW)
		return BPF_RB_FORCE_WAKEUP;
	before = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA);
	after = before + ((n + BPF_RINGBUF_HDR_SZ + 7) & ~7U);
	if (before < wake_at && after >= wake_at)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/* Publish buf[0, len) as one sample; false if the ring has no room. */
static __always_inline bool ring_put(struct bft_bpf_cpu *c, void *ring,
				     __u32 wake_at)
{
	__u32 n = c->len & MASK;

	c->len = 0;
	if (!n)
		return true;
	if (bpf_ringbuf_output(ring, c->buf, n, wake_flag(ring, wake_at, n)))
		return false;
	c->bytes_written += n;
	return true;
}

/*
 * A SYNC follows every LOST: a lost batch moved the time base, and a
 * reader resynchronises after a loss at an exact time and sequence.
 */
static __always_inline void ring_drop(struct bft_bpf_cpu *c, __u64 n)
{
	c->lost += n;
	c->pending_lost += n;
	c->need_sync = 1;
}

/* n records entered the batch: written now, unless the batch is lost. */
static __always_inline void batched(struct bft_bpf_cpu *c, __u64 n)
{
	c->written += n;
	c->batch_n += n;
}

/*
 * Records wait in a batch: a ring buffer sample per hit (the reservation's
 * lock, the header, the commit) was about a third of what a call cost
 * over the bare trap.  They count as written when they enter it; a batch
 * the ring has no room for is lost whole, with the open EXIT run that
 * follows it, and a LOST, then a SYNC for the time base, come next.
 */
static __always_inline bool batch_flush(struct bft_bpf_cpu *c, void *ring,
					__u32 wake_at)
{
	__u64 n = c->batch_n;

	c->batch_n = 0;
	if (ring_put(c, ring, wake_at))
		return true;
	c->written -= n;
	ring_drop(c, n + c->run);
	c->run = 0;
	return false;
}

/* Everything held back goes to the ring: the open EXIT run, the batch. */
static __always_inline void ring_seal(struct bft_bpf_cpu *c, void *ring,
				      __u32 wake_at)
{
	if (c->run) {
		put_exits(c, c->run, c->run_units);
		batched(c, c->run);
		c->run = 0;
	}
	batch_flush(c, ring, wake_at);
}

/*
 * Records owed before anything else: LOST, then SYNC, then BREAK.  A SYNC
 * chooses the time bits of what follows it (kmod/bft_tbits.h) into
 * *tbits, which commit_owed() makes the CPU's once the records are out.
 */
static __always_inline void put_owed(struct bft_bpf_cpu *c, __u64 now,
				     __u64 *time, __u8 *tbits)
{
	if (c->pending_lost) {
		put_esc(c, BFT_ESC_LOST);
		put_varint(c, c->pending_lost);
	}
	if (c->need_sync || c->pending_break) {
		put_esc(c, BFT_ESC_SYNC);
		put_varint(c, c->written + c->lost);
		put_varint(c, now);
		put_varint(c, c->res);
		*tbits = bft_tb_pick(&c->tb, c->tbits);
		put_varint(c, *tbits);
		*time = now;
	}
	if (c->pending_break) {
		put_esc(c, BFT_ESC_BREAK);
		put_varint(c, c->pending_break);
	}
}

static __always_inline void commit_owed(struct bft_bpf_cpu *c, __u64 time,
					bool sync, __u8 tbits)
{
	c->pending_lost = 0;
	c->need_sync = 0;
	c->pending_break = 0;
	c->time = time;
	if (sync) {
		/* the SYNC's tbits hold from here; count afresh for the next */
		c->tbits = tbits;
		__builtin_memset(&c->tb, 0, sizeof(c->tb));
		/* a reader may start here: it learns the names again */
		__builtin_memset(c->name_tid, 0, sizeof(c->name_tid));
	}
}

/*
 * kmod/bft_ring.c: bft_put_name().  NAME after a THREAD, unless this CPU
 * named the thread so since its last SYNC (@sync: these records hold a
 * SYNC).  Returns whether it wrote one, whose name is then in @comm.
 */
static __always_inline bool put_name(struct bft_bpf_cpu *c, __u32 tid,
				     bool sync, __u64 comm[2])
{
	__u32 slot = tid % BFT_BPF_NAMES, n = 0;
	const char *s = (const char *)comm;

	comm[0] = comm[1] = 0;
	bpf_get_current_comm(comm, 2 * sizeof(__u64));
	if (!sync && c->name_tid[slot] == tid &&
	    c->name_comm[slot][0] == comm[0] &&
	    c->name_comm[slot][1] == comm[1])
		return false;
	for (int i = 0; i < BFT_THREAD_NAME_MAX; i++) {
		if (!s[i])
			break;
		n++;
	}
	put_esc(c, BFT_ESC_NAME);
	put_byte(c, n);
	for (int i = 0; i < BFT_THREAD_NAME_MAX; i++) {
		if (i >= n)
			break;
		put_byte(c, s[i]);
	}
	return true;
}

/* An ENTER or EXIT went out, units after the record before it. */
static __always_inline void note(struct bft_bpf_cpu *c, enum rec kind,
				 __u32 id, __u64 units)
{
	if (kind == REC_ENTER || kind == REC_EXIT)
		bft_tb_note(&c->tb, kind == REC_ENTER, id, units);
}

/* Drops while another handler owned the state become owed LOSTs. */
static __always_inline void take_nested(struct bft_bpf_cpu *c)
{
	__u64 n;

	if (!c->nested_lost)
		return;
	n = __sync_lock_test_and_set(&c->nested_lost, 0);
	c->produced += n;
	ring_drop(c, n);
}

static __always_inline bool cpu_claim(struct bft_bpf_cpu *c)
{
	return __sync_val_compare_and_swap(&c->busy, 0, 1) == 0;
}

/*
 * The handlers run on the CPU whose state they use, with migration
 * disabled, so a preempting claimant sees these stores in program order:
 * a plain store releases, without the locked exchange that cost each
 * handler a few nanoseconds.  bft_ctl may serve an offline CPU from
 * another one while it comes back; x86 keeps stores in order (TSO), so
 * the release holds across CPUs too (the programs are built for x86 only:
 * a weakly ordered CPU would need the exchange here), and bft_ctl
 * releases with an exchange all the same.
 */
static __always_inline void cpu_release(struct bft_bpf_cpu *c)
{
	asm volatile("" ::: "memory");
	*(volatile __u64 *)&c->busy = 0;
}

static __always_inline __u64 units_of(struct bft_bpf_cpu *c, __u64 delta)
{
	if (!c->res || delta < c->res)
		return 0;
	return delta / c->res;
}

static __always_inline bool recording(__u32 mode)
{
	return mode == BFT_MODE_TRACING || mode == BFT_MODE_PAUSED;
}

/*
 * kmod/bft_ring.c: bft_ring_record(), the fast and the slow path in one.
 * uv: a MARK's arguments (REC_MARK only).
 */
static __always_inline void record(struct bft_bpf_cpu *c,
				   struct bft_bpf_ctl *ctl,
				   struct task_struct *tsk, enum rec kind,
				   __u32 id, const struct usdt_vals *uv)
{
	/* direct loads from the BTF task: no helper calls */
	__u32 tid = tsk->pid, tgid = tsk->tgid;
	__u32 wake_at = ctl->watermark;
	__u64 now, nsw, units, time;
	bool new_thread, sync, named = false;
	__u8 inline_units = 0, tbits;
	__u64 comm[2];
	void *ring;

	ring = cpu_ring();
	if (!ring)
		return;
	take_nested(c);
	if (!recording(ctl->mode)) {
		if (ctl->mode == BFT_MODE_SUSPENDED)
			c->suspended++;
		return;
	}
	now = bpf_ktime_get_ns();
	if (now < c->time)
		now = c->time;
	nsw = tsk->nvcsw + tsk->nivcsw;
	/*
	 * The module's flush timer writes a SYNC into a busy ring every
	 * flush interval whether or not anybody reads; here the reader runs
	 * the flush, so a CPU that records with no reader about would give a
	 * later reader nothing to resynchronise at.  It writes its own.
	 */
	if (ctl->sync_ms && now - c->last_sync >= ctl->sync_ms * 1000000ULL)
		c->need_sync = 1;
	new_thread = !c->have_thread || c->need_sync || c->pending_break ||
		     c->tid != tid || c->nsw != nsw;
	c->produced++;

	/*
	 * A MARK with its ARGs can outgrow what is left after a batch just
	 * below BFT_BPF_BATCH: it goes out alone, as the module's slow path
	 * writes it (BFT_BPF_USDT_HIT_MAX).
	 */
	if (kind != REC_MARK && !new_thread && !c->pending_lost) {
		units = units_of(c, now - c->time);
		if (kind == REC_EXIT && c->run && !units) {
			c->run++;
			return;
		}
		if (c->run)
			put_exits(c, c->run, c->run_units);
		inline_units = put_lead_time(c, c->tbits, kind, units);
		put_event(c, c->tbits, kind, id, inline_units, uv);
		note(c, kind, id, units);
		batched(c, c->run);
		c->run = 0;
		c->time += units * c->res;
		c->run_units = inline_units;
		if (kind == REC_EXIT)
			c->run = 1;
		else
			batched(c, 1);
		if (c->len >= BFT_BPF_BATCH)
			batch_flush(c, ring, wake_at);
		return;
	}

	/* the batch first: what it could not write is owed before this */
	ring_seal(c, ring, wake_at);
	sync = c->need_sync || c->pending_break;
	new_thread = new_thread || sync;
	time = c->time;
	tbits = c->tbits;
	units = 0;
	put_owed(c, now, &time, &tbits);
	if (new_thread) {
		put_esc(c, BFT_ESC_THREAD);
		put_varint(c, tgid);
		put_varint(c, tid);
		put_varint(c, now - time);
		time = now;
		named = put_name(c, tid, sync, comm);
	} else {
		units = units_of(c, now - time);
		inline_units = put_lead_time(c, tbits, kind, units);
		time += units * c->res;
	}
	put_event(c, tbits, kind, id, inline_units, uv);
	/* a MARK's ARGs go with it or not at all: one lost event */
	if (!ring_put(c, ring, wake_at)) {
		ring_drop(c, 1);
		return;
	}
	commit_owed(c, time, sync, tbits);
	note(c, kind, id, units);
	if (named) {
		__u32 slot = tid % BFT_BPF_NAMES;

		c->name_tid[slot] = tid;
		c->name_comm[slot][0] = comm[0];
		c->name_comm[slot][1] = comm[1];
	}
	if (sync)
		c->last_sync = now;
	if (new_thread) {
		c->have_thread = 1;
		c->tgid = tgid;
		c->tid = tid;
		c->nsw = nsw;
	}
	c->run_units = inline_units;
	if (kind == REC_EXIT)
		c->run = 1;
	else
		c->written++;
}

static __always_inline struct bft_bpf_ctl *get_ctl(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&bft_ctl_map, &zero);
}

static __always_inline struct bft_bpf_cpu *get_cpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&bft_cpus, &zero);
}

static __always_inline bool session_active(__u32 mode)
{
	return recording(mode) || mode == BFT_MODE_SUSPENDED;
}

/* Pending return probes of the thread, as kmod/bft_probe.c reads them. */
static __always_inline __u32 uretprobe_depth(struct task_struct *tsk)
{
	return tsk->utask ? tsk->utask->depth : 0;
}

static __always_inline bool too_deep(struct bft_bpf_ctl *ctl, __u32 depth)
{
	return ctl->max_depth && depth >= ctl->max_depth;
}

/* Another handler on this CPU owns the state: the event is lost. */
static __always_inline void nested_drop(struct bft_bpf_cpu *c,
					struct bft_bpf_ctl *ctl)
{
	if (recording(ctl->mode))
		__sync_fetch_and_add(&c->nested_lost, 1);
}

/* A hit in a process the probe was not attached for (BFT_BPF_COOKIE). */
static __always_inline bool foreign(__u64 cookie, struct task_struct *tsk)
{
	__u32 tgid = cookie >> BFT_BPF_COOKIE_TGID_SHIFT;

	return tgid && tgid != (__u32)tsk->tgid;
}

SEC("uprobe")
int bft_enter(struct pt_regs *regs)
{
	__u64 cookie = bpf_get_attach_cookie(regs);
	__u32 id = (__u32)cookie;
	__u32 pf = (cookie >> 32) & BFT_BPF_COOKIE_PF_MASK;
	struct task_struct *tsk = bpf_get_current_task_btf();
	struct bft_bpf_ctl *ctl = get_ctl();
	struct bft_bpf_cpu *c = get_cpu();
	__u32 depth;
	__u64 *hits;

	if (!ctl || !c || !(pf & BFT_PF_ENTRY) || !session_active(ctl->mode) ||
	    foreign(cookie, tsk))
		return 0;
	/*
	 * The kernel checks this same depth right after the handlers and
	 * gives up the return probe at BFT_URETPROBE_DEPTH: say so now.
	 */
	depth = uretprobe_depth(tsk);
	if (too_deep(ctl, depth))
		return 0;
	if (!cpu_claim(c)) {
		nested_drop(c, ctl);
		return 0;
	}
	/*
	 * Two call sites, kept apart by what follows each: one shared by
	 * both maps would be a helper call where the verifier otherwise
	 * inlines the array's lookup.
	 */
	if (id < BFT_BPF_NEAR_IDS) {
		hits = bpf_map_lookup_elem(&bft_hits, &id);
		if (hits)
			*hits += 1;
	} else {
		hits = bpf_map_lookup_elem(&bft_hits_far, &id);
		if (hits)
			__sync_fetch_and_add(hits, 1);
	}
	if (!(pf & BFT_PF_RETURN) || depth >= BFT_URETPROBE_DEPTH)
		record(c, ctl, tsk, REC_NORET, id, NULL);
	else
		record(c, ctl, tsk, REC_ENTER, id, NULL);
	cpu_release(c);
	return 0;
}

/*
 * Attached only where BFT_PF_RETURN is set (bft_bpf_attach.c), so of the
 * cookie only the tgid counts here.
 */
SEC("uretprobe")
int bft_exit(struct pt_regs *regs)
{
	struct task_struct *tsk = bpf_get_current_task_btf();
	struct bft_bpf_ctl *ctl = get_ctl();
	struct bft_bpf_cpu *c = get_cpu();

	if (!ctl || !c || !session_active(ctl->mode) ||
	    foreign(bpf_get_attach_cookie(regs), tsk))
		return 0;
	/* this frame's return instance is still counted in the depth */
	if (too_deep(ctl, uretprobe_depth(tsk) - 1))
		return 0;
	if (!cpu_claim(c)) {
		nested_drop(c, ctl);
		return 0;
	}
	record(c, ctl, tsk, REC_EXIT, 0, NULL);
	cpu_release(c);
	return 0;
}

/* ---- USDT sites (uapi 2.4) ---- */

/*
 * A register operand: a slot of the user registers the uprobe saved, or
 * the site itself.  The kernel puts the instruction pointer back on the
 * breakpoint before it runs the handlers (handle_swbp()), so it is the
 * site's address.  The verifier takes no variable offset into the
 * context: the slot is read as memory, as libbpf's usdt.bpf.h does.
 */
static __always_inline __u64 usdt_reg(struct pt_regs *regs, __u8 reg)
{
	__u64 v = 0;

	if (reg == BFT_USDT_SITE)
		return PT_REGS_IP(regs);
	if (reg >= BFT_USDT_NREGS)	/* BFT_USDT_NOREG */
		return 0;
	bpf_probe_read_kernel(&v, sizeof(v), (void *)regs + reg * 8);
	return v;
}

/*
 * One argument, cut to its size, extended and, when signed, zigzagged
 * for its ARG record; 0 if its memory could not be read (*out is then 0),
 * else 1.  The attach let through only well-formed entries
 * (bft_bpf_usdt.c).  A global function, which the verifier checks once:
 * inlined, the paths of twelve arguments multiplied past its million
 * instructions.  Not __hidden: libbpf would make it static again.
 */
__noinline int usdt_eval(struct pt_regs *regs,
				  const struct bft_usdt_arg *a, __u64 *out)
{
	__u32 sh;
	__u64 v;

	if (!a || !out)
		return 0;
	*out = 0;
	sh = 64 - 8 * (a->size & 15);
	if (a->loc == BFT_USDT_CONST) {
		v = a->value;
	} else if (a->loc == BFT_USDT_REG) {
		v = usdt_reg(regs, a->base) >> (a->shift & 63);
	} else {
		__u64 addr = a->value + usdt_reg(regs, a->base) +
			     usdt_reg(regs, a->index) * a->scale;
		__u32 len = a->size & 15;

		if (len > 8)
			len = 8;
		/* little-endian: the size bytes land in v's low ones */
		v = 0;
		if (bpf_probe_read_user(&v, len, (const void *)addr))
			return 0;
	}
	if (sh >= 64)
		sh = 0;
	if (a->is_signed) {
		__s64 s = (__s64)(v << sh) >> sh;

		*out = ((__u64)s << 1) ^ (__u64)(s >> 63);
	} else {
		*out = (v << sh) >> sh;
	}
	return 1;
}

/*
 * Every argument, in order; unrolled, so each lands at a fixed offset.
 * Entries past nargs are zeros (a constant 0) and are read too, with no
 * branch on the count (see put_mark()); their bits stay clear.
 */
static __always_inline void usdt_read(const struct bft_bpf_usdt *u,
				      struct pt_regs *regs,
				      struct usdt_vals *uv)
{
	__u32 n = u->nargs;

	/* the attach let through at most 12: this only bounds the bits */
	n &= 15;
	uv->n = n;
	uv->is_signed = 0;
	uv->unread = 0;
#pragma clang loop unroll(full)
	for (int i = 0; i < BFT_USDT_MAX_ARGS; i++) {
		__u32 in = below(i, n);
		__u32 ok = usdt_eval(regs, &u->args[i], &uv->v[i]) & 1;

		uv->is_signed |= (u->args[i].is_signed & in) << i;
		uv->unread |= ((ok ^ 1) & in) << i;
	}
}

/*
 * kmod/bft_probe.c: bft_usdt_hit().  One MARK and its ARGs, nothing else:
 * no ENTER, no return probe.  Arguments are read before the CPU's state
 * is claimed, as the module reads them before its ring.
 */
SEC("uprobe")
int bft_usdt_hit(struct pt_regs *regs)
{
	__u64 cookie = bpf_get_attach_cookie(regs);
	__u32 slot = (__u32)cookie, depth, id;
	struct task_struct *tsk = bpf_get_current_task_btf();
	struct bft_bpf_ctl *ctl = get_ctl();
	struct bft_bpf_cpu *c = get_cpu();
	struct bft_bpf_usdt *u;
	struct usdt_vals uv;
	__u64 *hits;

	if (!ctl || !c || !session_active(ctl->mode) || foreign(cookie, tsk))
		return 0;
	u = bpf_map_lookup_elem(&bft_usdt, &slot);
	if (!u)
		return 0;
	/*
	 * Inside the deepest frame recorded the kernel holds max_depth
	 * return instances: only a site in a frame below that one is out.
	 */
	depth = uretprobe_depth(tsk);
	if (depth && too_deep(ctl, depth - 1))
		return 0;
	id = u->method_id;
	/*
	 * Suspended, the hit is only counted: nothing to read.  Should the
	 * mode change before record() looks, the MARK says its arguments
	 * were not read, as the module's does.
	 */
	if (recording(ctl->mode)) {
		usdt_read(u, regs, &uv);
	} else {
		__builtin_memset(&uv, 0, sizeof(uv));
		uv.n = u->nargs & 15;
		uv.unread = (1U << uv.n) - 1;
#pragma clang loop unroll(full)
		for (int i = 0; i < BFT_USDT_MAX_ARGS; i++)
			uv.is_signed |= (u->args[i].is_signed & below(i, uv.n)) << i;
	}
	if (!cpu_claim(c)) {
		nested_drop(c, ctl);
		return 0;
	}
	if (id < BFT_BPF_NEAR_IDS) {
		hits = bpf_map_lookup_elem(&bft_hits, &id);
		if (hits)
			*hits += 1;
	} else {
		hits = bpf_map_lookup_elem(&bft_hits_far, &id);
		if (hits)
			__sync_fetch_and_add(hits, 1);
	}
	record(c, ctl, tsk, REC_MARK, id, &uv);
	cpu_release(c);
	return 0;
}

/* kmod/bft_ring.c: bft_ring_mark(). */
static __always_inline void mark(struct bft_bpf_cpu *c, void *ring, __u8 brk)
{
	__u64 now = bpf_ktime_get_ns(), time;
	__u8 tbits;

	ring_seal(c, ring, WAKE_NOW);
	time = c->time;
	c->need_sync = 1;
	if (brk)
		c->pending_break = brk;
	if (now < c->time)
		now = c->time;
	tbits = c->tbits;
	put_owed(c, now, &time, &tbits);
	if (ring_put(c, ring, WAKE_NOW)) {
		commit_owed(c, time, true, tbits);
		c->last_sync = now;
		/* a reader may start at any SYNC: name the thread again */
		c->have_thread = 0;
	}
}

/* a flavour of its own: a vmlinux.h made on such a kernel lacks the value */
enum bpf_func_id___bft { BPF_FUNC_map_lookup_percpu_elem___bft = 195 };

/*
 * Usually the CPU this runs on.  An offline CPU is served from another
 * one: nothing runs there, and its batch and its heartbeat SYNCs must not
 * wait for it to come back (the merge waits on them).  Before Linux 5.19
 * there is no helper to reach another CPU's state; the verifier drops the
 * branch its kernel lacks, and the offline CPU waits, as it used to.
 */
static __always_inline struct bft_bpf_cpu *ctl_cpu(__u32 cpu)
{
	__u32 zero = 0;

	if (bpf_core_enum_value_exists(enum bpf_func_id___bft,
				       BPF_FUNC_map_lookup_percpu_elem___bft))
		return bpf_map_lookup_percpu_elem(&bft_cpus, &zero, cpu);
	if (cpu != bpf_get_smp_processor_id())
		return NULL;
	return get_cpu();
}

SEC("raw_tp")
int bft_ctl(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 op = ctx->args[0], arg = ctx->args[1];
	__u32 cpu = (__u32)ctx->args[2];
	struct bft_bpf_cpu *c = ctl_cpu(cpu);
	void *ring = bpf_map_lookup_elem(&bft_rings, &cpu);
	int ret = 0;

	if (!c)
		return BFT_BPF_NOCPU;
	if (!ring)
		return -1;
	if (!cpu_claim(c))
		return BFT_BPF_BUSY;
	take_nested(c);
	switch (op) {
	case BFT_BPF_OP_SEAL:
		ring_seal(c, ring, WAKE_NOW);
		ret = c->produced != c->sync_written;
		break;
	case BFT_BPF_OP_RESTART:
		/* an open run goes out under the tbits it was begun with */
		ring_seal(c, ring, WAKE_NOW);
		c->res = arg;
		/* kmod/bft_ring.c: bft_ring_reset_tbits() */
		c->tbits = BFT_TIME_BITS;
		__builtin_memset(&c->tb, 0, sizeof(c->tb));
		c->have_thread = 0;
		mark(c, ring, 0);
		break;
	case BFT_BPF_OP_MARK:
		mark(c, ring, arg);
		break;
	case BFT_BPF_OP_HEARTBEAT:
		mark(c, ring, 0);
		c->sync_written = c->produced;
		break;
	case BFT_BPF_OP_OWED:
		if (c->pending_lost || c->pending_break)
			mark(c, ring, 0);
		break;
	default:
		ret = -1;
	}
	__sync_lock_test_and_set(&c->busy, 0);
	return ret;
}
