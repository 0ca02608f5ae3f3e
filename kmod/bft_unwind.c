// SPDX-License-Identifier: GPL-2.0
/*
 * Exceptions and non-local exits (include/uapi/linux/bftrace.h, 2.3).
 *
 * A return probe leaves the address of the kernel's return trampoline in
 * the probed frame's return slot.  An unwinder walking the stack finds no
 * unwind information there and gives up, so before an unwinder runs the
 * hooks put the real return addresses back, and when a catch block starts
 * they give the frames that are still on the stack their trampoline again.
 *
 * The kernel forgets the return instances of frames that were left
 * without returning at two points: when a probe with a return probe hits
 * (the instances gone at that stack pointer), and when the trampoline is
 * hit (those above the returning frame), the latter without telling any
 * handler.  The stream must close every recorded frame exactly once, so
 * frames are closed either where the kernel is about to drop them (the
 * entry handlers below, which see the same stack pointer and apply the
 * same rule) or at a longjmp, before the kernel drops them; the latter are
 * remembered until then so that they are not closed twice.
 *
 * Everything here runs in the traced thread, from its uprobe handlers:
 * process context, may fault and sleep, and only that thread touches its
 * return instances.  Every user access is checked, and a stack slot is
 * only ever written with a value that it held before, the real return
 * address or the trampoline, and only when it holds the other one.
 */
#include <linux/bitops.h>
#include <linux/hash.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <asm/fsgsbase.h>
#include <asm/ptrace.h>

#include "bft_internal.h"

/* ---- the trampoline ---- */

/*
 * The kernel places the trampoline at the start of the "[uprobes]"
 * mapping, which lives as long as the address space.
 */
static unsigned long bft_find_trampoline(struct mm_struct *mm)
{
	struct vm_area_struct *vma;
	unsigned long addr = 0;
	const char *name;

	mmap_read_lock(mm);
	for (vma = find_vma(mm, 0); vma; vma = find_vma(mm, vma->vm_end)) {
		if (!vma->vm_ops || !vma->vm_ops->name)
			continue;
		name = vma->vm_ops->name(vma);
		if (name && !strcmp(name, "[uprobes]")) {
			addr = vma->vm_start;
			break;
		}
	}
	mmap_read_unlock(mm);
	return addr;
}

static unsigned long bft_trampoline(struct bft_target *t)
{
	unsigned long addr = READ_ONCE(t->trampoline);

	if (!addr) {
		addr = bft_find_trampoline(current->mm);
		WRITE_ONCE(t->trampoline, addr);
	}
	return addr;
}

static bool bft_slot_read(unsigned long slot, unsigned long *val)
{
	return !get_user(*val, (unsigned long __user *)slot);
}

/* Write @to into @slot if it holds @from. */
static void bft_slot_swap(unsigned long slot, unsigned long from,
			  unsigned long to)
{
	unsigned long val;

	if (bft_slot_read(slot, &val) && val == from)
		put_user(to, (unsigned long __user *)slot);
}

/* ---- frames closed at a longjmp, until the kernel drops them ---- */

#define BFT_JMP_SLOTS 256

struct bft_jmp_closed {
	const struct return_instance *ri;
	unsigned long stack;
	pid_t tid;
};

static struct bft_jmp_closed bft_jmp[BFT_JMP_SLOTS];
static unsigned int bft_jmp_next;
static atomic_t bft_jmp_nr = ATOMIC_INIT(0);
static DEFINE_SPINLOCK(bft_jmp_lock);

static bool bft_jmp_match(const struct bft_jmp_closed *c,
			  const struct return_instance *ri)
{
	return c->ri == ri && c->stack == ri->stack && c->tid == current->pid;
}

/* The oldest entry goes when full: at worst a frame is closed twice. */
static void bft_jmp_mark(const struct return_instance *ri)
{
	struct bft_jmp_closed *c;

	spin_lock(&bft_jmp_lock);
	c = &bft_jmp[bft_jmp_next];
	bft_jmp_next = (bft_jmp_next + 1) % BFT_JMP_SLOTS;
	if (!c->ri)
		atomic_inc(&bft_jmp_nr);
	c->ri = ri;
	c->stack = ri->stack;
	c->tid = current->pid;
	spin_unlock(&bft_jmp_lock);
}

/* Was @ri closed at a longjmp?  Forget it: the kernel drops it now. */
static bool bft_jmp_take(const struct return_instance *ri)
{
	bool found = false;
	unsigned int i;

	if (!atomic_read(&bft_jmp_nr))
		return false;
	spin_lock(&bft_jmp_lock);
	for (i = 0; i < BFT_JMP_SLOTS; i++) {
		if (bft_jmp_match(&bft_jmp[i], ri)) {
			bft_jmp[i].ri = NULL;
			atomic_dec(&bft_jmp_nr);
			found = true;
			break;
		}
	}
	spin_unlock(&bft_jmp_lock);
	return found;
}

/*
 * The trampoline was hit at @sp: the kernel has dropped, silently, every
 * instance of this thread below the returning frame.
 */
void bft_unwind_returned(unsigned long sp)
{
	unsigned int i;

	if (likely(!atomic_read(&bft_jmp_nr)))
		return;
	spin_lock(&bft_jmp_lock);
	for (i = 0; i < BFT_JMP_SLOTS; i++) {
		struct bft_jmp_closed *c = &bft_jmp[i];

		if (c->ri && c->tid == current->pid && c->stack < sp) {
			c->ri = NULL;
			atomic_dec(&bft_jmp_nr);
		}
	}
	spin_unlock(&bft_jmp_lock);
}

/* ---- counting the frames that are gone ---- */

/* Was the frame at @index from the bottom (0) recorded with an ENTER? */
static bool bft_index_recorded(unsigned int index)
{
	u32 max = READ_ONCE(bft_opts.max_depth);

	return !max || index < max;
}

/*
 * The recorded frames among the instances gone at @sp, not closed yet.
 * Gone means what the kernel's cleanup on x86 takes it to mean: the
 * instance's slot is not above @sp (at or above it for a tail call,
 * @chained, whose slot is the caller's).
 */
static u32 bft_count_gone(struct uprobe_task *ut, unsigned long sp,
			  bool chained, bool take)
{
	const struct return_instance *ri;
	unsigned int index = ut->depth;
	u32 n = 0;

	for (ri = ut->return_instances; ri && index; ri = ri->next) {
		if (chained ? sp <= ri->stack : sp < ri->stack)
			break;
		index--;
		if (take && bft_jmp_take(ri))
			continue;
		if (bft_index_recorded(index))
			n++;
	}
	return n;
}

static void bft_close(u32 n, u32 reason)
{
	if (n)
		bft_ring_record(BFT_REC_UNWIND, n, reason);
}

/*
 * A probe with a return probe hit: the kernel is about to drop the
 * instances gone at this stack pointer, unless it is at its nesting limit,
 * where it gives up before looking.  Close their frames first.
 */
void bft_unwind_found(struct bft_target *t, struct pt_regs *regs)
{
	struct uprobe_task *ut = current->utask;
	unsigned long sp = user_stack_pointer(regs), val;
	const struct return_instance *top;
	bool chained = false;

	if (!ut || !ut->return_instances || ut->depth >= BFT_URETPROBE_DEPTH)
		return;
	top = ut->return_instances;
	if (likely(sp < top->stack))
		return;
	/* a tail call from a probed frame: its slot is ours too */
	if (sp == top->stack && bft_slot_read(sp, &val) &&
	    val == bft_trampoline(t))
		chained = true;
	bft_close(bft_count_gone(ut, sp, chained, true), BFT_UNWIND_FOUND);
}

/* ---- the hooks ---- */

/* Before an unwinder walks the stack: the real callers back in place. */
static void bft_hook_restore(struct bft_target *t, unsigned long sp)
{
	struct uprobe_task *ut = current->utask;
	const struct return_instance *ri;
	unsigned long tramp;

	if (!ut || !ut->return_instances)
		return;
	tramp = bft_trampoline(t);
	if (!tramp)
		return;
	for (ri = ut->return_instances; ri; ri = ri->next)
		if (ri->stack > sp)
			bft_slot_swap(ri->stack, tramp, ri->orig_ret_vaddr);
}

/*
 * struct _Unwind_Exception, as the Itanium C++ ABI lays it out on x86-64:
 * exception_class, exception_cleanup, private_1, private_2.  After the
 * search phase of a throw (private_1 == 0), private_2 is the canonical
 * frame address of the frame that catches, in libgcc and libunwind alike.
 */
#define BFT_UE_PRIVATE_1	16
#define BFT_UE_PRIVATE_2	24

/*
 * The lowest slot that still belongs to a live frame: the catching frame's
 * own return slot lies just below its frame address.  Without a usable
 * frame address (a forced unwind, a foreign exception), @sp + 1.
 */
static unsigned long bft_catch_floor(unsigned long exc, unsigned long sp)
{
	unsigned long p1, cfa;

	if (!exc || get_user(p1, (unsigned long __user *)(exc +
							  BFT_UE_PRIVATE_1)) ||
	    p1 || get_user(cfa, (unsigned long __user *)(exc +
							 BFT_UE_PRIVATE_2)))
		return sp + 1;
	if (cfa <= sp + sizeof(long))
		return sp + 1;
	return cfa - sizeof(long);
}

/*
 * __cxa_begin_catch: close the frames the exception left (the kernel
 * drops their instances right after this handler, in the cleanup that
 * our return probe on __cxa_begin_catch triggers) and re-arm the frames
 * that live on, so that their exits are recorded.
 */
static void bft_hook_catch(struct bft_target *t, struct pt_regs *regs)
{
	struct uprobe_task *ut = current->utask;
	unsigned long sp = user_stack_pointer(regs), floor, tramp;
	const struct return_instance *ri;
	u32 n;

	if (!ut || !ut->return_instances)
		return;
	/*
	 * At the nesting limit the kernel does not clean up here; the gone
	 * instances then stay until the next trampoline hit, which drops
	 * them silently, and no probe can clean up before that: closing them
	 * now is right in both cases.
	 */
	n = bft_count_gone(ut, sp, false, true);
	floor = bft_catch_floor(regs->di, sp);
	tramp = bft_trampoline(t);
	if (tramp)
		for (ri = ut->return_instances; ri; ri = ri->next)
			if (ri->stack > sp && ri->stack >= floor)
				bft_slot_swap(ri->stack, ri->orig_ret_vaddr,
					      tramp);
	bft_close(n, BFT_UNWIND_CATCH);
}

/*
 * glibc's x86-64 jmp_buf: the stack pointer is the 7th word, mangled with
 * the thread's pointer guard (at %fs:0x30) as rol(sp ^ guard, 0x11).
 */
#define BFT_JB_RSP		6
#define BFT_TCB_POINTER_GUARD	0x30

static bool bft_jmp_target(unsigned long env, unsigned long *sp)
{
	unsigned long mangled, guard, fs = x86_fsbase_read_cpu();

	if (get_user(mangled, (unsigned long __user *)env + BFT_JB_RSP) ||
	    get_user(guard, (unsigned long __user *)(fs +
						     BFT_TCB_POINTER_GUARD)))
		return false;
	*sp = ror64(mangled, 0x11) ^ guard;
	return true;
}

/*
 * longjmp: the frames below the target stack pointer are left now.  The
 * kernel drops their instances later, silently at a trampoline or at the
 * next probe hit, which must then not close them again.
 */
static void bft_hook_longjmp(struct pt_regs *regs)
{
	struct uprobe_task *ut = current->utask;
	unsigned long sp = user_stack_pointer(regs), target;
	const struct return_instance *ri;
	unsigned int index;
	u32 n = 0;

	if (!ut || !ut->return_instances ||
	    !bft_jmp_target(regs->di, &target) || target <= sp)
		return;	/* not a jump up this stack: nothing we can tell */
	index = ut->depth;
	for (ri = ut->return_instances; ri && index; ri = ri->next) {
		if (ri->stack >= target)
			break;
		index--;
		if (ri->stack <= sp)
			continue;	/* gone already: the next hit sees it */
		if (bft_index_recorded(index)) {
			n++;
			bft_jmp_mark(ri);
		}
	}
	bft_close(n, BFT_UNWIND_LONGJMP);
}

/*
 * __call_tls_dtors: the thread's start routine is over.  After
 * pthread_exit or pthread_cancel, glibc's last jump back into the thread's
 * start (an internal __libc_longjmp that no hook can name) left the
 * frames below; they are gone at this stack pointer, and the kernel drops
 * their instances right after, in the cleanup our return probe on this
 * function triggers (at its nesting limit, at the next trampoline hit).
 */
static void bft_hook_exit(struct pt_regs *regs)
{
	struct uprobe_task *ut = current->utask;

	if (ut && ut->return_instances)
		bft_close(bft_count_gone(ut, user_stack_pointer(regs), false,
					 true), BFT_UNWIND_EXIT);
}

/* ---- exception types ---- */

struct bft_exc_type {
	struct hlist_node node;
	struct list_head order;
	pid_t tgid;
	unsigned long tinfo;
	u32 id;
	char name[];
};

#define BFT_EXC_HASH_BITS 6
static struct hlist_head bft_exc_hash[1 << BFT_EXC_HASH_BITS];
static LIST_HEAD(bft_exc_list);
static u32 bft_nr_exc;
static DEFINE_MUTEX(bft_exc_lock);

static u32 bft_exc_hash_of(pid_t tgid, unsigned long tinfo)
{
	return hash_long(tinfo ^ tgid, BFT_EXC_HASH_BITS);
}

static struct bft_exc_type *bft_exc_find(pid_t tgid, unsigned long tinfo)
{
	struct bft_exc_type *e;

	hlist_for_each_entry(e, &bft_exc_hash[bft_exc_hash_of(tgid, tinfo)],
			     node)
		if (e->tgid == tgid && e->tinfo == tinfo)
			return e;
	return NULL;
}

/*
 * std::type_info on x86-64: a vtable pointer, then the mangled name.  The
 * name is read before the lock is taken: reading may fault and sleep.
 */
static u32 bft_exc_id(unsigned long tinfo)
{
	char buf[BFT_EXC_NAME_MAX];
	struct bft_exc_type *e, *old;
	unsigned long name;
	pid_t tgid = current->tgid;
	long len;
	u32 id = 0;

	mutex_lock(&bft_exc_lock);
	e = bft_exc_find(tgid, tinfo);
	if (e)
		id = e->id;
	mutex_unlock(&bft_exc_lock);
	if (id || !tinfo)
		return id;
	if (get_user(name, (unsigned long __user *)(tinfo + sizeof(long))))
		return 0;
	len = strncpy_from_user(buf, (const char __user *)name, sizeof(buf));
	if (len <= 0 || len >= sizeof(buf))
		return 0;
	e = kmalloc(struct_size(e, name, len + 1), GFP_KERNEL);
	if (!e)
		return 0;
	memcpy(e->name, buf, len + 1);
	e->tgid = tgid;
	e->tinfo = tinfo;
	mutex_lock(&bft_exc_lock);
	old = bft_exc_find(tgid, tinfo);	/* another thread was first */
	if (old || bft_nr_exc >= BFT_MAX_EXC_TYPES) {
		id = old ? old->id : 0;
		mutex_unlock(&bft_exc_lock);
		kfree(e);
		return id;
	}
	e->id = ++bft_nr_exc;
	hlist_add_head(&e->node,
		       &bft_exc_hash[bft_exc_hash_of(tgid, tinfo)]);
	list_add_tail(&e->order, &bft_exc_list);
	mutex_unlock(&bft_exc_lock);
	return e->id;
}

/* At each start, like the retired methods; and at unload. */
void bft_unwind_forget(void)
{
	struct bft_exc_type *e, *en;
	unsigned int i;

	mutex_lock(&bft_exc_lock);
	list_for_each_entry_safe(e, en, &bft_exc_list, order) {
		hlist_del(&e->node);
		list_del(&e->order);
		kfree(e);
	}
	bft_nr_exc = 0;
	mutex_unlock(&bft_exc_lock);
	spin_lock(&bft_jmp_lock);
	for (i = 0; i < BFT_JMP_SLOTS; i++)
		bft_jmp[i].ri = NULL;
	atomic_set(&bft_jmp_nr, 0);
	spin_unlock(&bft_jmp_lock);
}

/*
 * One message per type from cb->args[0] on; the caller's dump callback.
 * @put returns non-zero when the message does not fit.
 */
int bft_unwind_dump_types(struct sk_buff *skb, struct netlink_callback *cb,
			  int (*put)(struct sk_buff *skb,
				     struct netlink_callback *cb, pid_t tgid,
				     u32 id, const char *name))
{
	struct bft_exc_type *e;
	long i = 0;
	int err = 0;

	mutex_lock(&bft_exc_lock);
	list_for_each_entry(e, &bft_exc_list, order) {
		if (i++ < cb->args[0])
			continue;
		err = put(skb, cb, e->tgid, e->id, e->name);
		if (err)
			break;
		cb->args[0] = i;
	}
	mutex_unlock(&bft_exc_lock);
	return err;
}

/* ---- dispatch ---- */

/* A hook left on a detached target (bft_probe.c, bft_lingering). */
void bft_unwind_restore(struct bft_probe *p, struct pt_regs *regs)
{
	if (user_64bit_mode(regs))
		bft_hook_restore(p->target, user_stack_pointer(regs));
}

/* An entry handler's first step: whatever the mode, the stack is fixed. */
void bft_unwind_hook(struct bft_probe *p, struct pt_regs *regs)
{
	unsigned long sp = user_stack_pointer(regs);

	if (!user_64bit_mode(regs))
		return;
	switch (p->flags & BFT_PF_HOOKS) {
	case BFT_PF_HOOK_UNWIND:
		bft_hook_restore(p->target, sp);
		break;
	case BFT_PF_HOOK_FORCED:
		bft_hook_restore(p->target, sp);
		bft_ring_record(BFT_REC_THROW, 0, BFT_THROW_FORCED);
		break;
	case BFT_PF_HOOK_CATCH:
		bft_hook_catch(p->target, regs);
		break;
	case BFT_PF_HOOK_THROW:
		bft_ring_record(BFT_REC_THROW, bft_exc_id(regs->si),
				BFT_THROW_THROW);
		break;
	case BFT_PF_HOOK_RETHROW:
		bft_ring_record(BFT_REC_THROW, 0, BFT_THROW_RETHROW);
		break;
	case BFT_PF_HOOK_LONGJMP:
		bft_hook_longjmp(regs);
		break;
	case BFT_PF_HOOK_EXIT:
		bft_hook_exit(regs);
		break;
	}
}
