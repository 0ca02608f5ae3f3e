/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the BPF programs of user/bpf/bft.bpf.c and their loader
 * (user/lib/capture/bft_bpf_*.c) share: the layout of the maps' values and the
 * operations of the control program.  Included by both sides, so only
 * __u8/__u32/__u64 appear here.  Both include linux/bftrace.h first.
 */
#ifndef BFT_BPF_SHARED_H
#define BFT_BPF_SHARED_H

/* the module's rule for choosing tbits at a SYNC, so the bytes agree */
#include "../../kmod/bft_tbits.h"

/*
 * A batch below BFT_BPF_BATCH plus one hit's records, or what one hit
 * can produce after an emptied batch, as in the module: an EXIT run,
 * LOST, SYNC, BREAK, THREAD, NAME and the event, each at most
 * BFT_RECORD_MAX (32) bytes.  A power of two: the programs mask offsets with it for the
 * verifier.
 */
#define BFT_BPF_SCRATCH		256

/*
 * The most a USDT hit writes, always after an emptied batch (bft.bpf.c
 * takes the slow path for it): LOST 12, SYNC 28, BREAK 3, THREAD 22,
 * NAME 18 (or a TIME of 12 instead of THREAD and NAME), the MARK 12
 * (id 5, n 1, each 12-bit mask 2) and 12 ARGs of 12.  An offset past the
 * scratch would wrap under the mask and tear the records: it must fit.
 */
#define BFT_BPF_ARG_MAX		(2 + 10)
#define BFT_BPF_USDT_HIT_MAX	(12 + 28 + 3 + 22 + 18 + 12 +		\
				 BFT_USDT_MAX_ARGS * BFT_BPF_ARG_MAX)
/*
 * + 12: the bytes stored past the records' end (bft.bpf.c: put_arg(),
 * an ARG stored and not kept)
 */
_Static_assert(BFT_BPF_USDT_HIT_MAX + BFT_BPF_ARG_MAX < BFT_BPF_SCRATCH,
	       "a USDT hit's records must fit the scratch buffer");

/*
 * The records of many hits go out together once this many bytes wait:
 * a hit adds at most 32 (an EXIT run, a TIME, the event) to a batch,
 * and the slow path's records follow an emptied one.
 */
#define BFT_BPF_BATCH		192

/* Threads a CPU remembers having named (kmod: BFT_RING_NAMES). */
#define BFT_BPF_NAMES		8

/*
 * Method ids below this count their hits in an array, the rest in a
 * hash (bft.bpf.c: bft_enter()).  bfctl numbers a process's methods from 1.
 */
#define BFT_BPF_NEAR_IDS	65536

/*
 * The attach cookie: the method id in bits 0-31 (a USDT probe's slot in
 * bft_usdt instead), the probe's BFT_PF_* (the entry, return, hook and
 * USDT bits, 0-9) in bits 32-41, and the target's tgid
 * in bits 42-63 (pids stay below 2^22), or 0 where the loader cannot name
 * it as the programs see it (from another pid namespace than the first).
 * The programs ignore a hit in any other process: before Linux 6.6 the
 * links are perf events, whose return programs the kernel runs without
 * the process filter it applies to entries, and a child forked inside a
 * traced function returns through copies of its parent's return probes.
 */
#define BFT_BPF_COOKIE_PF_MASK		((1U << 10) - 1)
#define BFT_BPF_COOKIE_TGID_SHIFT	42
#define BFT_BPF_COOKIE(id, flags, tgid)					\
	(((__u64)(tgid) << BFT_BPF_COOKIE_TGID_SHIFT) |			\
	 ((__u64)((flags) & BFT_BPF_COOKIE_PF_MASK) << 32) | (__u32)(id))

/*
 * One CPU's writer state: the module's struct bft_ring without the bytes
 * (those live in the CPU's BPF ring buffer).  A handler owns it while
 * @busy is set; a handler that finds it set (another one on this CPU was
 * preempted or interrupted while writing, or bft_ctl serves the CPU from
 * another one as it comes back online) drops its event into
 * @nested_lost, which the owner turns into a LOST record later.
 */
struct bft_bpf_cpu {
	__u64 time;		/* stream time */
	__u64 nsw;		/* context switches of @tid at its last record */
	__u64 produced;
	__u64 written;
	__u64 lost;
	__u64 suspended;
	__u64 bytes_written;
	__u64 pending_lost;	/* LOST owed */
	__u64 sync_written;	/* @produced at the last heartbeat SYNC */
	__u64 nested_lost;	/* atomic: drops while @busy */
	__u64 busy;		/* atomic: a handler owns this state */
	__u64 last_sync;	/* stream time of the last SYNC written */
	__u64 batch_n;		/* records in @buf, counted in @written */
	__u32 tgid;
	__u32 tid;
	__u32 run;		/* exits of the open EXIT run */
	__u32 res;		/* TIME unit, ns */
	__u32 len;		/* bytes in @buf */
	__u8 have_thread;
	__u8 need_sync;
	__u8 pending_break;	/* BFT_BREAK_* owed, 0 none */
	__u8 run_units;		/* time units the open run's record carries */
	__u8 tbits;		/* time bits of the last SYNC (uapi 2.1) */
	struct bft_tb_hist tb;	/* the records since, for the next SYNC */
	/*
	 * The threads this CPU named since its last SYNC (uapi 2.2,
	 * BFT_ESC_NAME), by tid modulo BFT_BPF_NAMES, as the module's
	 * struct bft_ring_name: tid 0 is a free slot.
	 */
	__u32 name_tid[BFT_BPF_NAMES];
	__u64 name_comm[BFT_BPF_NAMES][2];
	__u8 buf[BFT_BPF_SCRATCH];	/* the batch, not yet in the ring */
};

/*
 * A USDT probe as its program needs it (the bft_usdt map).  Its links
 * carry the key, a slot the loader picks, in the cookie where other
 * links carry the method id: a slot names one probe of one target even
 * where the cookie cannot name the target (its tgid 0).
 */
struct bft_bpf_usdt {
	__u32 method_id;
	__u32 nargs;
	__u32 tgid;		/* the target, as the loader names it (user
				 * space only: freed when it is detached) */
	__u32 pad;
	struct bft_usdt_arg args[BFT_USDT_MAX_ARGS];
};

/* The one entry of the control map: what the module keeps in globals. */
struct bft_bpf_ctl {
	__u32 mode;		/* enum bft_mode */
	__u32 max_depth;	/* BFT_OPT_MAX_DEPTH, 0: no limit */
	__u32 time_res_ns;	/* BFT_OPT_TIME_RES_NS, taken at start */
	__u32 watermark;	/* crossing this fill wakes the reader; never 0 */
	__u32 flags;		/* BFT_BPF_F_* (user space only) */
	__u32 sync_ms;		/* a busy CPU writes a SYNC this often */
	__u64 opts[16];		/* BFT_OPT_* values by id (user space only) */
	/* the session's owner (docs/bpf-backend.md), user space only */
	__u32 owner;		/* tgid of the starter, 0: none (persistent) */
	__u32 guard;		/* tgid of its guard process, 0: none yet */
	__u64 owner_start;	/* the starter's start time, clock ticks */
	__u64 owner_pidns;	/* inode of the starter's pid namespace */
	/* live methods, counted again under the session lock whenever the
	 * table changes, so that status need not walk it (user space only) */
	__u32 nr_probes;
	__u32 unused;
};

/* The programs were loaded for uprobe_multi links, not one per function. */
#define BFT_BPF_F_MULTI		(1U << 0)

/*
 * The control program (bft_ctl, run with BPF_PROG_TEST_RUN): ctx args[0]
 * is the operation, args[1] its argument, args[2] the CPU whose state and
 * ring it works on.  It runs on that CPU, or, when the CPU is offline, on
 * any other.  It returns BFT_BPF_BUSY when a handler owns the CPU's state
 * (the caller retries), BFT_BPF_NOCPU when it cannot reach that CPU's
 * state from where it runs (an offline CPU, before Linux 5.19).
 */
enum bft_bpf_op {
	BFT_BPF_OP_SEAL = 1,	/* seal the EXIT run; ret 1 if active */
	BFT_BPF_OP_MARK,	/* SYNC, and BREAK arg if non-zero */
	BFT_BPF_OP_RESTART,	/* new unit (args[1]), then a SYNC */
	BFT_BPF_OP_OWED,	/* write what is owed, if anything */
	BFT_BPF_OP_HEARTBEAT,	/* SYNC, and remember @produced */
};

#define BFT_BPF_BUSY	0x100
#define BFT_BPF_NOCPU	0x101

/*
 * The method table (bft_methods, user space only): what the module keeps
 * for BFT_CMD_GET_METHODS.  Sized like the netlink attributes.
 */
struct bft_bpf_method_key {
	__u32 tgid;
	__u32 method_id;
};

struct bft_bpf_method {
	__u64 offset;
	__u32 flags;		/* BFT_PF_*, BFT_PF_GONE once detached */
	/*
	 * The pin of the link that holds the probe, + 1 (links/<tgid>/<n>,
	 * its return link <n>r), shared with the other probes of one
	 * uprobe_multi link: a detach of some probes must know which links
	 * to release and which probes they held besides.
	 */
	__u32 link;
	/* what that link carries for it, to attach the others again */
	__u64 ref_ctr;		/* a USDT probe's semaphore, 0: none */
	__u32 slot;		/* a USDT probe's spec in bft_usdt, 0: none */
	__u32 pad;
	char path[4096];	/* BFT_PATH_MAX */
	char name[512];		/* BFT_NAME_MAX */
};

#endif /* BFT_BPF_SHARED_H */
