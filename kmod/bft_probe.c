// SPDX-License-Identifier: GPL-2.0
/*
 * Targets and their probes: the uprobe handlers, registration, and
 * teardown.  Everything here except the handlers runs under bft_lock.
 */
#include <linux/percpu.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "bft_internal.h"

LIST_HEAD(bft_targets);
u32 bft_nr_probes;
u32 bft_nr_targets;

/*
 * Targets detached while frames entered under a return probe may still be
 * on their stacks: such a frame keeps the kernel's trampoline in its return
 * slot until it returns, and an unwinder walking through it would make the
 * program terminate.  Their unwinder hooks stay registered, restoring
 * return addresses only, until the process exits (or the module goes).
 */
static LIST_HEAD(bft_lingering);
static u32 bft_nr_lingering;
#define BFT_MAX_LINGERING 256

static bool bft_probe_may_linger(const struct bft_probe *p)
{
	return p->flags & (BFT_PF_HOOK_UNWIND | BFT_PF_HOOK_FORCED);
}

/* Pending return probes of the current thread, ours and anybody else's. */
static unsigned int bft_uretprobe_depth(void)
{
	struct uprobe_task *utask = current->utask;

	return utask ? utask->depth : 0;
}

static bool bft_too_deep(unsigned int depth)
{
	u32 max = READ_ONCE(bft_opts.max_depth);

	return max && depth >= max;
}

/* A register operand: an 8-byte slot of pt_regs, or the site (uapi 2.4). */
static unsigned long bft_usdt_reg(struct pt_regs *regs, u8 reg)
{
	/* the attach let through no other register numbers */
	if (reg == BFT_USDT_SITE)
		return instruction_pointer(regs);
	if (reg == BFT_USDT_NOREG)
		return 0;
	return ((unsigned long *)regs)[reg];
}

/*
 * One argument, cut to its size and extended; false if its memory could
 * not be read.  May fault, so runs before the ring is touched.
 */
static bool bft_usdt_eval(const struct bft_usdt_arg *a, struct pt_regs *regs,
			  u64 *out)
{
	unsigned int bits = a->size * 8;
	u64 v;

	switch (a->loc) {
	case BFT_USDT_CONST:
		v = a->value;
		break;
	case BFT_USDT_REG:
		v = bft_usdt_reg(regs, a->base) >> a->shift;
		break;
	default: {
		unsigned long addr = a->value + bft_usdt_reg(regs, a->base) +
				     bft_usdt_reg(regs, a->index) * a->scale;
		union { u8 b; u16 h; u32 w; u64 q; } m;

		if (copy_from_user(&m, (const void __user *)addr, a->size)) {
			*out = 0;
			return false;
		}
		v = a->size == 1 ? m.b : a->size == 2 ? m.h :
		    a->size == 4 ? m.w : m.q;
		break;
	}
	}
	if (bits < 64)
		v = a->is_signed ? (u64)sign_extend64(v, bits - 1) :
				   v & (BIT_ULL(bits) - 1);
	*out = v;
	return true;
}

static int bft_usdt_hit(struct bft_probe *p, struct pt_regs *regs)
{
	struct bft_usdt_vals uv = { .n = p->nargs };
	unsigned int depth = bft_uretprobe_depth();
	int mode = READ_ONCE(bft_mode);
	u8 i;

	if (!bft_session_active(mode))
		return 0;
	/*
	 * Inside the deepest frame recorded the kernel holds max_depth
	 * return instances: only a site in a frame below that one is out.
	 */
	if (depth && bft_too_deep(depth - 1))
		return 0;
	this_cpu_inc(*p->hits);
	for (i = 0; i < uv.n; i++) {
		if (p->args[i].is_signed)
			uv.is_signed |= BIT(i);
		/*
		 * Suspended, the ring only counts the hit: read nothing.
		 * Should the mode change before the ring looks, the MARK
		 * says its arguments were not read.
		 */
		if (!bft_recording(mode) ||
		    !bft_usdt_eval(&p->args[i], regs, &uv.v[i]))
			uv.unread |= BIT(i);
	}
	bft_ring_usdt(p->method_id, &uv);
	return 0;
}

static int bft_entry_handler(BFT_HANDLER_ARGS)
{
	struct bft_probe *p = container_of(uc, struct bft_probe, uc);
	unsigned int depth;

	/* another tracer's breakpoint, or a child that inherited ours */
	if (current->mm != p->target->mm)
		return UPROBE_HANDLER_REMOVE;
	/*
	 * Return probes hijack return slots in every mode, so the stack is
	 * repaired in every mode too; hooks that close frames do so here,
	 * where the kernel drops their return instances.
	 */
	if (unlikely(READ_ONCE(p->lingers))) {
		bft_unwind_restore(p, regs);
		return 0;
	}
	if (p->flags & BFT_PF_USDT)
		return bft_usdt_hit(p, regs);
	if (unlikely(p->flags & BFT_PF_HOOKS))
		bft_unwind_hook(p, regs);
	else if (p->flags & BFT_PF_RETURN)
		bft_unwind_found(p->target, regs);
	if (!(p->flags & BFT_PF_ENTRY) ||
	    !bft_session_active(READ_ONCE(bft_mode)))
		return 0;
	/*
	 * The kernel checks this same depth right after the handlers, and
	 * gives up the return probe at BFT_URETPROBE_DEPTH: say so now, in
	 * the record, so no later exit is taken for this frame's.
	 */
	depth = bft_uretprobe_depth();
	if (bft_too_deep(depth))
		return 0;
	this_cpu_inc(*p->hits);
	if (!(p->flags & BFT_PF_RETURN) || depth >= BFT_URETPROBE_DEPTH)
		bft_ring_record(BFT_REC_NORET, p->method_id, 0);
	else
		bft_ring_record(BFT_REC_ENTER, p->method_id, 0);
	return 0;
}

static int bft_return_handler(BFT_RET_HANDLER_ARGS)
{
	struct bft_probe *p = container_of(uc, struct bft_probe, uc);

	if (current->mm != p->target->mm || READ_ONCE(p->lingers))
		return 0;
	/* the kernel just dropped the instances of frames left below us */
	bft_unwind_returned(user_stack_pointer(regs));
	if (!(p->flags & BFT_PF_RETURN) ||
	    !bft_session_active(READ_ONCE(bft_mode)))
		return 0;
	/* this frame's return instance is still counted in the depth */
	if (bft_too_deep(bft_uretprobe_depth() - 1))
		return 0;
	bft_ring_record(BFT_REC_EXIT, 0, 0);
	return 0;
}

static bool bft_filter(BFT_FILTER_ARGS)
{
	struct bft_probe *p = container_of(uc, struct bft_probe, uc);

	return mm == p->target->mm;
}

int bft_probe_register(struct bft_probe *p)
{
	struct inode *inode = p->inode;

	p->uc.handler = bft_entry_handler;
	if (bft_probe_has_ret(p))
		p->uc.ret_handler = bft_return_handler;
	p->uc.filter = bft_filter;
#if BFT_UPROBE_GEN >= 2
	p->uprobe = uprobe_register(inode, p->offset, p->ref_ctr_offset,
				    &p->uc);
	if (IS_ERR(p->uprobe)) {
		int err = PTR_ERR(p->uprobe);

		p->uprobe = NULL;
		return err;
	}
	return 0;
#else
	if (p->ref_ctr_offset)
		return uprobe_register_refctr(inode, p->offset,
					      p->ref_ctr_offset, &p->uc);
	return uprobe_register(inode, p->offset, &p->uc);
#endif
}

static void bft_probe_unregister_nosync(struct bft_probe *p)
{
#if BFT_UPROBE_GEN >= 2
	uprobe_unregister_nosync(p->uprobe, &p->uc);
#else
	uprobe_unregister(p->inode, p->offset, &p->uc);
#endif
}

static void bft_probes_unregister_sync(void)
{
#if BFT_UPROBE_GEN >= 2
	uprobe_unregister_sync();
#endif
}

void bft_probe_free(struct bft_probe *p)
{
	iput(p->inode);
	path_put(&p->path);
	free_percpu(p->hits);
	kfree(p->args);
	kfree(p->name);
	kfree(p);
}

/* Racy against running handlers, as any count of a live probe is. */
u64 bft_probe_hits(const struct bft_probe *p)
{
	unsigned int cpu;
	u64 n = 0;

	for_each_possible_cpu(cpu)
		n += READ_ONCE(*per_cpu_ptr(p->hits, cpu));
	return n;
}

struct bft_target *bft_target_find(pid_t tgid)
{
	struct bft_target *t;

	list_for_each_entry(t, &bft_targets, node)
		if (t->tgid == tgid)
			return t;
	return NULL;
}

struct bft_target *bft_target_new(pid_t tgid, struct netlink_ext_ack *extack)
{
	struct task_struct *task;
	struct bft_target *t;
	struct mm_struct *mm;
	struct pid *pid;

	if (bft_nr_targets >= BFT_MAX_TARGETS) {
		NL_SET_ERR_MSG_MOD(extack, "too many targets");
		return ERR_PTR(-E2BIG);
	}
	pid = find_get_pid(tgid);
	task = pid ? get_pid_task(pid, PIDTYPE_TGID) : NULL;
	if (!task) {
		put_pid(pid);
		BFT_SET_ERR_MSG_FMT(extack, "no process with tgid %d", tgid);
		return ERR_PTR(-ESRCH);
	}
	mm = get_task_mm(task);
	put_task_struct(task);
	if (!mm) {
		put_pid(pid);
		BFT_SET_ERR_MSG_FMT(extack, "tgid %d has no user address space",
				    tgid);
		return ERR_PTR(-ESRCH);
	}
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t) {
		mmput(mm);
		put_pid(pid);
		return ERR_PTR(-ENOMEM);
	}
	t->tgid = tgid;
	t->pid = pid;
	t->mm = mm;
	mmgrab(mm);	/* keeps the pointer unique for the filter */
	mmput(mm);	/* but does not keep the address space alive */
	INIT_LIST_HEAD(&t->probes);
	INIT_LIST_HEAD(&t->lingering);
	list_add_tail(&t->node, &bft_targets);
	bft_nr_targets++;
	return t;
}

static void bft_target_release(struct bft_target *t)
{
	mmdrop(t->mm);
	put_pid(t->pid);
	kfree(t);
}

static void bft_target_free(struct bft_target *t)
{
	if (t->stopped)
		kill_pid(t->pid, SIGCONT, 1);
	bft_target_own(t, 0);
	list_del(&t->node);
	bft_nr_targets--;
	bft_target_release(t);
}

void bft_target_free_if_empty(struct bft_target *t)
{
	if (list_empty(&t->probes) && list_empty(&t->lingering))
		bft_target_free(t);
}

static bool bft_target_gone(struct bft_target *t)
{
	bool alive;

	/* an exec also ends the traced address space */
	if (!atomic_read(&t->mm->mm_users))
		return true;
	rcu_read_lock();
	alive = pid_task(t->pid, PIDTYPE_TGID);
	rcu_read_unlock();
	return !alive;
}

/* A detached target whose hooks stay: only they remain on its list. */
static void bft_target_linger(struct bft_target *t)
{
	if (t->stopped)
		kill_pid(t->pid, SIGCONT, 1);
	t->stopped = false;
	bft_target_own(t, 0);
	list_move_tail(&t->node, &bft_lingering);
	bft_nr_targets--;
	bft_nr_lingering++;
}

/* Unregister and free lingering targets: all, or the gone ones. */
static void bft_lingering_drop(bool all)
{
	struct bft_probe *p, *pn;
	struct bft_target *t, *tn;
	LIST_HEAD(drop);

	list_for_each_entry_safe(t, tn, &bft_lingering, node)
		if (all || bft_target_gone(t) ||
		    bft_nr_lingering > BFT_MAX_LINGERING) {
			list_move(&t->node, &drop);
			bft_nr_lingering--;
		}
	if (list_empty(&drop))
		return;
	list_for_each_entry(t, &drop, node)
		list_for_each_entry(p, &t->probes, node)
			bft_probe_unregister_nosync(p);
	bft_probes_unregister_sync();
	list_for_each_entry_safe(t, tn, &drop, node) {
		list_for_each_entry_safe(p, pn, &t->probes, node) {
			list_del(&p->node);
			bft_probe_free(p);
		}
		list_del(&t->node);
		bft_target_release(t);
	}
}

void bft_lingering_release(void)
{
	bft_lingering_drop(true);
}

/*
 * Unregister every probe of @ts first, wait once, then free.  With
 * @keep_hooks, a target's unwinder hooks stay, restoring only, when it had
 * return probes: see bft_lingering.  Those a detach by id left lingering
 * (already retired) stay with them, or go with the rest without.
 */
static void bft_targets_detach(struct list_head *ts, bool keep_hooks)
{
	struct bft_probe *p, *pn;
	struct bft_target *t, *tn;
	LIST_HEAD(kept);

	list_for_each_entry(t, ts, node) {
		list_for_each_entry_safe(p, pn, &t->probes, node) {
			if (keep_hooks && t->had_ret && bft_probe_may_linger(p)) {
				WRITE_ONCE(p->lingers, true);
				list_move_tail(&p->node, &kept);
				continue;
			}
			bft_probe_unregister_nosync(p);
		}
		/* the kept ones, first in line, until the free below */
		list_splice_init(&kept, &t->probes);
		if (!keep_hooks)
			list_for_each_entry(p, &t->lingering, node)
				bft_probe_unregister_nosync(p);
	}
	bft_probes_unregister_sync();
	list_for_each_entry_safe(t, tn, ts, node) {
		list_for_each_entry_safe(p, pn, &t->probes, node) {
			bft_method_retire(p, t->tgid);
			if (p->lingers)
				continue;
			list_del(&p->node);
			bft_probe_free(p);
		}
		if (keep_hooks) {
			list_splice_tail_init(&t->lingering, &t->probes);
		} else {
			list_for_each_entry_safe(p, pn, &t->lingering, node) {
				list_del(&p->node);
				bft_probe_free(p);
			}
		}
		bft_nr_probes -= t->nr_probes;
		t->nr_probes = 0;
		if (list_empty(&t->probes))
			bft_target_free(t);
		else
			bft_target_linger(t);
	}
	bft_lingering_drop(false);
	bft_methods_name();
}

void bft_target_detach(struct bft_target *t)
{
	LIST_HEAD(one);

	list_move(&t->node, &one);
	bft_targets_detach(&one, true);
}

/*
 * A hook chosen by a detach by id lingers, restoring only, as a whole
 * detach would leave it, whenever the target ever had a return probe:
 * the return probes it keeps need it at the next throw, and those gone
 * may have left frames (main()'s, say) holding the trampoline until
 * they return, which an unwinder cannot walk through.  Should its own
 * library be the one dlclose()d, a lingering hook costs nothing: an
 * unmapped function is never hit.  It goes with the target.
 * Only a target that never had a return probe has nothing for it to
 * restore, and there it goes plainly; so does one whose function a
 * lingering hook of the target already covers, so that detaching and
 * attaching again cannot pile them up.
 */
static bool bft_hook_stays(struct bft_target *t, const struct bft_probe *p)
{
	struct bft_probe *q;

	if (!t->had_ret || !bft_probe_may_linger(p))
		return false;
	list_for_each_entry(q, &t->lingering, node)
		if (q->inode == p->inode && q->offset == p->offset)
			return false;
	return true;
}

static const struct nla_policy bft_detach_probe_policy[BFT_P_MAX + 1] = {
	[BFT_P_METHOD_ID] = { .type = NLA_U32 },
};

static struct bft_probe *bft_probe_by_id(struct bft_target *t, u32 id)
{
	struct bft_probe *p;

	list_for_each_entry(p, &t->probes, node)
		if (p->method_id == id)
			return p;
	return NULL;
}

/*
 * Mark the probes @list names, and count them in @n; on an error none
 * stays marked, so that the request detaches nothing.
 */
static int bft_detach_choose(struct bft_target *t, const struct nlattr *list,
			     u32 *n, struct netlink_ext_ack *ext)
{
	struct nlattr *tb[BFT_P_MAX + 1];
	struct bft_probe *p;
	struct nlattr *nest;
	int rem, err = 0;
	u32 idx = 0, id;

	nla_for_each_nested(nest, list, rem) {
		if (nla_type(nest) != BFT_A_PROBE) {
			NL_SET_ERR_MSG_ATTR(ext, nest, "expected a BFT_A_PROBE nest");
			err = -EINVAL;
			break;
		}
		err = nla_parse_nested(tb, BFT_P_MAX, nest,
				       bft_detach_probe_policy, ext);
		if (err)
			break;
		if (!tb[BFT_P_METHOD_ID]) {
			BFT_SET_ERR_MSG_FMT(ext, "probe %u: no method id", idx);
			NL_SET_BAD_ATTR(ext, nest);
			err = -EINVAL;
			break;
		}
		id = nla_get_u32(tb[BFT_P_METHOD_ID]);
		p = bft_probe_by_id(t, id);
		if (!p) {
			BFT_SET_ERR_MSG_FMT(ext, "probe %u: method id %u is no probe of tgid %d",
					    idx, id, t->tgid);
			NL_SET_BAD_ATTR(ext, tb[BFT_P_METHOD_ID]);
			err = -ENOENT;
			break;
		}
		if (p->chosen) {
			BFT_SET_ERR_MSG_FMT(ext, "probe %u: method id %u is given twice",
					    idx, id);
			NL_SET_BAD_ATTR(ext, tb[BFT_P_METHOD_ID]);
			err = -EINVAL;
			break;
		}
		p->chosen = true;
		idx++;
	}
	if (!err && !idx) {
		NL_SET_ERR_MSG_ATTR(ext, list, "no probes");
		err = -EINVAL;
	}
	if (err)
		list_for_each_entry(p, &t->probes, node)
			p->chosen = false;
	*n = idx;
	return err;
}

/*
 * The probes of @t that @list names (uapi BFT_CMD_DETACH), all checked
 * before any goes; then as bft_targets_detach() does it, but @t stays,
 * even with no probe left: its owner and its stop are the caller's still.
 */
int bft_target_detach_some(struct bft_target *t, const struct nlattr *list,
			   struct netlink_ext_ack *ext)
{
	struct bft_probe *p, *pn;
	LIST_HEAD(chosen);
	u32 n;
	int err;

	err = bft_detach_choose(t, list, &n, ext);
	if (err)
		return err;
	list_for_each_entry_safe(p, pn, &t->probes, node) {
		if (!p->chosen)
			continue;
		p->chosen = false;
		list_move_tail(&p->node, &chosen);
		if (bft_hook_stays(t, p))
			WRITE_ONCE(p->lingers, true);
		else
			bft_probe_unregister_nosync(p);
	}
	bft_probes_unregister_sync();
	list_for_each_entry_safe(p, pn, &chosen, node) {
		/* after the sync: the hits are final */
		bft_method_retire(p, t->tgid);
		if (p->lingers) {
			list_move_tail(&p->node, &t->lingering);
			continue;
		}
		list_del(&p->node);
		bft_probe_free(p);
	}
	t->nr_probes -= n;
	bft_nr_probes -= n;
	bft_methods_name();
	return 0;
}

void bft_detach_all(void)
{
	LIST_HEAD(all);

	list_splice_init(&bft_targets, &all);
	bft_targets_detach(&all, true);
}

int bft_targets_signal(int sig)
{
	struct bft_target *t;
	int ret = 0, err;

	list_for_each_entry(t, &bft_targets, node) {
		err = kill_pid(t->pid, sig, 1);
		if (err && !ret)
			ret = err;
		if (!err)
			t->stopped = sig == SIGSTOP;
	}
	return ret;
}

/*
 * Is @t's address space no longer its process's?  An exec replaces the
 * mm, and its old one may live on for a moment (a reference held
 * elsewhere), so compare the pointers rather than only count users.
 */
bool bft_target_stale(struct bft_target *t)
{
	struct task_struct *task;
	bool stale;

	if (bft_target_gone(t))
		return true;
	task = get_pid_task(t->pid, PIDTYPE_TGID);
	if (!task)
		return true;
	task_lock(task);
	stale = task->mm != t->mm;
	task_unlock(task);
	put_task_struct(task);
	return stale;
}

/* Forget a target that exited or exec'd, and say so. */
void bft_target_reap(struct bft_target *t)
{
	pid_t tgid = t->tgid;
	u32 n = t->nr_probes;
	LIST_HEAD(gone);

	list_move(&t->node, &gone);
	bft_targets_detach(&gone, false);
	bft_notify_target_exit(tgid, n);
}

/* From the flush work. */
void bft_targets_reap(void)
{
	struct bft_target *t, *tn;

	list_for_each_entry_safe(t, tn, &bft_targets, node)
		if (bft_target_gone(t))
			bft_target_reap(t);
	bft_lingering_drop(false);
}
