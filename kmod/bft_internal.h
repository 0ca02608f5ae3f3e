/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bftrace.ko internals shared between its files.  The user-space contract
 * lives in include/uapi/linux/bftrace.h.
 */
#ifndef BFT_INTERNAL_H
#define BFT_INTERNAL_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/path.h>
#include <linux/reciprocal_div.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/uprobes.h>
#include <net/genetlink.h>
#include <linux/bftrace.h>

#include "bft_compat.h"
#include "bft_rules.h"
#include "bft_tbits.h"

/* Options: read locklessly by the hot path, written under bft_lock. */
struct bft_opts {
	u32 buf_size;
	u32 flush_ms;
	u32 heartbeat_ms;
	u32 max_depth;		/* 0: unlimited */
	u32 time_res_ns;
	u32 watermark;		/* 0: bft_watermark()'s default */
	u32 max_probes;
	u32 max_ring_mem;	/* MiB, all rings together */
};

extern struct bft_opts bft_opts;
/* Guards targets, probes, modes and options; never taken by handlers. */
extern struct mutex bft_lock;
extern int bft_mode;		/* enum bft_mode; READ_ONCE in handlers */

/* ---- rings (bft_ring.c) ---- */

/* Threads a ring named since its last SYNC (uapi 2.2, BFT_ESC_NAME). */
#define BFT_RING_NAMES	8

struct bft_ring_name {
	pid_t tid;		/* 0: free */
	char comm[TASK_COMM_LEN];
};

/*
 * One per possible CPU, and written only on that CPU with preemption off:
 * by whatever uprobe handler runs there, and by the flush work, the control
 * path and the reader through a work item on that CPU (bft_ring_on_cpu()),
 * so writers exclude each other without a lock.  The reader owns @tail and
 * reads @head with acquire semantics.
 *
 * Who writes what:
 *   data[head..], head, writer state, counters: on the ring's CPU,
 *                                                preemption off
 *   tail, bytes_read:                            the bound reader
 *   flushed:                                     set on the CPU, cleared by
 *                                                the reader (WRITE_ONCE)
 */
struct bft_ring {
	u8 *data;
	u32 size;
	unsigned int cpu;	/* the only CPU that writes it */
	u64 head;		/* published: smp_store_release() */
	u64 tail;		/* consumed: smp_store_release() by the reader */

	/* writer state, on the ring's CPU only */
	u64 time;		/* stream time, ns, never ahead of the clock */
	u32 res;		/* TIME unit, ns */
	struct reciprocal_value res_recip;	/* divides by @res */
	pid_t tgid, tid;	/* thread of the last THREAD record */
	unsigned long nsw;	/* its context switch count then */
	bool have_thread;
	bool need_sync;
	u64 pending_lost;	/* dropped, LOST record not yet written */
	u8 pending_break;	/* BREAK reason not yet written */
	u32 run;		/* exits in the open, unpublished EXIT run */
	u8 run_units;		/* the time units its record carries */
	u8 tbits;		/* time bits of the last SYNC (uapi 2.1) */
	struct bft_tb_hist tb;	/* the records since, for the next one */
	/* by tid modulo BFT_RING_NAMES: a miss only costs a NAME again */
	struct bft_ring_name names[BFT_RING_NAMES];
	bool flushed;		/* the flush timer sealed data not yet read */

	/* counters */
	u64 produced, written, lost, bytes_written;
	u64 sync_written;	/* @produced a flush's SYNC covers, for activity */
	u64 flush_seen;		/* @produced when the flush began */
	u64 suspended;
	u64 bytes_read;

	struct mutex read_mutex;	/* one read() at a time; resize */
	atomic_t bound;			/* a reader holds this ring */
	wait_queue_head_t wait;
};

enum bft_rec {
	BFT_REC_ENTER,		/* id: method */
	BFT_REC_NORET,		/* id: method */
	BFT_REC_EXIT,
	BFT_REC_THROW,		/* id: exception type, arg: BFT_THROW_* */
	BFT_REC_UNWIND,		/* id: frames, arg: BFT_UNWIND_* */
	BFT_REC_USDT,		/* id: method; MARK and its ARGs */
};

/* A USDT hit's arguments, evaluated, for its MARK and ARG records. */
struct bft_usdt_vals {
	u8 n;
	u16 is_signed;		/* bit i: argument i is signed */
	u16 unread;		/* bit i: argument i could not be read */
	u64 v[BFT_USDT_MAX_ARGS];	/* sign-extended when signed */
};

void bft_rings_init(void);
int bft_rings_ensure(u32 size);
bool bft_rings_ready(void);
void bft_rings_exit(void);
int bft_rings_resize(u32 size);
struct bft_ring *bft_ring_get(unsigned int cpu);
void bft_ring_record(enum bft_rec kind, u32 id, u32 arg);
void bft_ring_usdt(u32 id, const struct bft_usdt_vals *vals);
void bft_rings_start(void);
void bft_rings_break(u8 reason);
bool bft_rings_flush(bool heartbeat);
void bft_rings_sync(void);
u32 bft_rings_fill_permille(void);
ssize_t bft_ring_read(struct bft_ring *r, char __user *buf, size_t count,
		      bool nonblock);
__poll_t bft_ring_poll(struct bft_ring *r, struct file *file,
		       struct poll_table_struct *pt);

struct bft_ring_stats {
	u64 produced, written, lost, suspended, bytes_written, bytes_read;
	u32 used, size;
	bool reader;
};

void bft_ring_stats(unsigned int cpu, struct bft_ring_stats *st);

/* ---- /dev/bftrace (bft_dev.c) ---- */
int bft_dev_init(void);
void bft_dev_exit(void);

/* ---- targets and probes (bft_probe.c, bft_attach.c) ---- */

struct bft_target {
	struct list_head node;
	pid_t tgid;
	struct pid *pid;
	struct mm_struct *mm;	/* mmgrab()ed: the filter compares pointers */
	struct list_head probes;
	u32 nr_probes;
	/* hooks detached by id that restore only, until the target goes */
	struct list_head lingering;
	/* a return probe was registered: frames may hold the trampoline */
	bool had_ret;
	bool stopped;		/* we sent SIGSTOP */
	u32 owner;		/* port id owning it until a start; 0: none */
	unsigned long trampoline;	/* uretprobe trampoline; 0: unknown yet */
};

struct bft_probe {
	struct uprobe_consumer uc;
	struct list_head node;
	struct bft_target *target;
	struct path path;	/* as the caller named it: for the method table */
	/*
	 * The inode the uprobe is registered on, ihold()ed: the one the
	 * target maps, which on a stacked file system is not always the one
	 * the path resolves to now (an overlayfs copy-up moves the path to a
	 * new inode); unregistering must name the same inode.
	 */
	struct inode *inode;
	loff_t offset;
	u32 method_id;
	u32 flags;
	char *name;
	u64 __percpu *hits;	/* per CPU: handlers on two CPUs share no line */
	bool lingers;		/* detached, restoring return addresses only */
	bool chosen;		/* named by the detach being checked */
	/* BFT_PF_USDT: the semaphore (0: none) and the arguments */
	loff_t ref_ctr_offset;
	u8 nargs;
	struct bft_usdt_arg *args;
#if BFT_UPROBE_GEN >= 2
	struct uprobe *uprobe;
#endif
};

struct bft_method_path;

/* A detached probe's method table entry (bft_methods.c). */
struct bft_method {
	struct list_head node;
	pid_t tgid;
	u32 method_id;
	u64 offset;
	u32 flags;		/* with BFT_PF_GONE */
	u64 hits;
	struct bft_method_path *path;	/* its name, shared; NULL: none */
	struct path file;	/* until named: retired by the reaper */
	char name[];
};

/* Bounds the memory of retired entries; the oldest go first. */
#define BFT_MAX_RETIRED 65536

extern struct list_head bft_retired;
void bft_method_retire(struct bft_probe *p, pid_t tgid);
const char *bft_method_path(const struct bft_method *m, char *buf);
void bft_methods_name(void);
void bft_methods_forget(void);

extern struct list_head bft_targets;
extern u32 bft_nr_probes;
extern u32 bft_nr_targets;

struct bft_target *bft_target_find(pid_t tgid);
struct bft_target *bft_target_new(pid_t tgid, struct netlink_ext_ack *extack);
void bft_target_free_if_empty(struct bft_target *t);
int bft_probe_register(struct bft_probe *p);
void bft_probe_free(struct bft_probe *p);
u64 bft_probe_hits(const struct bft_probe *p);
void bft_target_detach(struct bft_target *t);
int bft_target_detach_some(struct bft_target *t, const struct nlattr *list,
			   struct netlink_ext_ack *ext);
void bft_detach_all(void);
void bft_lingering_release(void);
int bft_targets_signal(int sig);
bool bft_target_stale(struct bft_target *t);
void bft_target_reap(struct bft_target *t);
void bft_targets_reap(void);

int bft_attach(struct genl_info *info);

/* ---- exceptions and non-local exits (bft_unwind.c) ---- */

/* Probes whose uprobe needs a return consumer. */
static inline bool bft_probe_has_ret(const struct bft_probe *p)
{
	return p->flags & (BFT_PF_RETURN | BFT_PF_HOOK_CATCH |
			   BFT_PF_HOOK_EXIT);
}

void bft_unwind_hook(struct bft_probe *p, struct pt_regs *regs);
void bft_unwind_restore(struct bft_probe *p, struct pt_regs *regs);
void bft_unwind_found(struct bft_target *t, struct pt_regs *regs);
void bft_unwind_returned(unsigned long sp);
void bft_unwind_forget(void);
int bft_unwind_dump_types(struct sk_buff *skb, struct netlink_callback *cb,
			  int (*put)(struct sk_buff *skb,
				     struct netlink_callback *cb, pid_t tgid,
				     u32 id, const char *name));

/* ---- modes, options, timers (bft_control.c) ---- */
void bft_control_init(void);
void bft_control_quiesce(void);
void bft_control_exit(void);
int bft_session_prepare(struct netlink_ext_ack *extack);
void bft_session_end(void);
int bft_mode_change(u8 cmd, u32 owner, struct netlink_ext_ack *extack);
int bft_opt_get(u32 id, u64 *val, u64 *min, u64 *max, u32 *flags);
int bft_opt_set(u32 id, u64 val, struct netlink_ext_ack *extack);

/* ---- session owner (bft_session.c) ---- */
int bft_session_init(void);
void bft_session_exit(void);
u32 bft_session_owner(void);
void bft_session_own(u32 portid);
void bft_session_disown(void);
void bft_target_own(struct bft_target *t, u32 portid);
void bft_targets_disown(void);

/* ---- permissions (bft_perm.c) ---- */
bool bft_capable(const struct sk_buff *skb);
bool bft_file_capable(const struct file *file);
int bft_check_capable(const struct sk_buff *skb, struct netlink_ext_ack *ext);
int bft_may_trace(pid_t tgid, struct mm_struct *mm,
		  struct netlink_ext_ack *ext);
int bft_may_control(struct bft_target *t, struct netlink_ext_ack *ext);
int bft_may_control_all(struct netlink_ext_ack *ext);
int bft_may_stop(struct bft_target *t, struct netlink_ext_ack *ext);

/* ---- generic netlink (bft_genl.c) ---- */
int bft_genl_init(void);
void bft_genl_exit(void);
void bft_notify_mode(int mode);
void bft_notify_target_exit(pid_t tgid, u32 nr_probes);
void bft_notify_heartbeat(void);
void bft_notify_probe_failed(pid_t tgid, u32 method_id, int err);
int bft_put_cpu_stats(struct sk_buff *skb);
struct sk_buff *bft_reply_new(struct genl_info *info, size_t size, void **hdr);
int bft_reply_send(struct sk_buff *skb, void *hdr, struct genl_info *info);

#endif /* BFT_INTERNAL_H */
