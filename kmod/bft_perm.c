// SPDX-License-Identifier: GPL-2.0
/*
 * Who may do what (the model is documented in include/uapi/linux/bftrace.h
 * and docs/kernel-module.md, "Security model").
 *
 * Capabilities are checked against the netlink socket as well as against
 * the sender (netlink_capable()): a privileged process that hands its
 * socket to an unprivileged one, or an unprivileged one that passes its
 * socket to a privileged helper, gets nothing.
 *
 * Access to a process is the kernel's ptrace access check in attach mode,
 * so Yama, SELinux and AppArmor decide as they do for ptrace.
 * ptrace_may_access() is not exported to modules; opening /proc/PID/mem
 * runs exactly that check (PTRACE_MODE_ATTACH with the caller's fs
 * credentials, which a control tool does not change), through the
 * caller's own /proc.
 */
#include <linux/capability.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/namei.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>

#include "bft_internal.h"

bool bft_capable(const struct sk_buff *skb)
{
	return netlink_capable(skb, CAP_PERFMON) ||
	       netlink_capable(skb, CAP_SYS_ADMIN);
}

/* The same rule for a /dev/bftrace file: its opener and the caller. */
bool bft_file_capable(const struct file *file)
{
	return (file_ns_capable(file, &init_user_ns, CAP_PERFMON) &&
		capable(CAP_PERFMON)) ||
	       (file_ns_capable(file, &init_user_ns, CAP_SYS_ADMIN) &&
		capable(CAP_SYS_ADMIN));
}

int bft_check_capable(const struct sk_buff *skb, struct netlink_ext_ack *ext)
{
	if (bft_capable(skb))
		return 0;
	NL_SET_ERR_MSG_MOD(ext,
			   "needs CAP_PERFMON or CAP_SYS_ADMIN (in the initial user namespace)");
	return -EPERM;
}

/*
 * May the caller ptrace-attach to the process /proc names @name, and is
 * that process still the address space @mm (NULL: any)?  The /proc file
 * proves both: its private data is the mm it was opened on.  A /proc of
 * another pid namespace than the caller's names other processes: refused
 * too.
 */
static int bft_may_access(const char *name, pid_t tgid, struct mm_struct *mm,
			  struct netlink_ext_ack *ext)
{
	struct file *f;
	int err = 0;

	f = filp_open(name, O_RDONLY | O_LARGEFILE, 0);
	if (IS_ERR(f)) {
		err = PTR_ERR(f);
		if (err == -EACCES || err == -EPERM) {
			BFT_SET_ERR_MSG_FMT(ext,
					    "ptrace policy forbids access to tgid %d",
					    tgid);
			return -EPERM;
		}
		BFT_SET_ERR_MSG_FMT(ext, "cannot check access to tgid %d: %s %d",
				    tgid, name, err);
		return err == -ENOENT ? -ESRCH : err;
	}
	if (mm && f->private_data != mm) {
		BFT_SET_ERR_MSG_FMT(ext,
				    "tgid %d in the caller's /proc is another process or image",
				    tgid);
		err = -ESRCH;
	}
	fput(f);
	return err;
}

int bft_may_trace(pid_t tgid, struct mm_struct *mm,
		  struct netlink_ext_ack *ext)
{
	char name[32];

	snprintf(name, sizeof(name), "/proc/%d/mem", tgid);
	return bft_may_access(name, tgid, mm, ext);
}

/* A thread of @t still in its address space, as the caller numbers it. */
static pid_t bft_live_thread(struct bft_target *t)
{
	struct task_struct *leader, *th;
	pid_t tid = 0;

	rcu_read_lock();
	leader = pid_task(t->pid, PIDTYPE_TGID);
	if (leader) {
		for_each_thread(leader, th) {
			if (READ_ONCE(th->mm) == t->mm) {
				tid = task_pid_vnr(th);
				if (tid)
					break;
			}
		}
	}
	rcu_read_unlock();
	return tid;
}

/*
 * Stopping, detaching or pausing @t acts on another process: the caller
 * needs ptrace access to it, whoever made the session.  A process whose
 * main thread exited has no mm there, and its /proc/PID/mem opens without
 * a check; so the check is made on a live thread, and on none at all is a
 * refusal.  An address space nobody uses any more (the process exited or
 * exec'd) is nobody's: the probes act on nothing, nothing to check.
 */
int bft_may_control(struct bft_target *t, struct netlink_ext_ack *ext)
{
	char name[48];
	pid_t tid;

	if (!atomic_read(&t->mm->mm_users))
		return 0;
	tid = bft_live_thread(t);
	if (!tid) {
		BFT_SET_ERR_MSG_FMT(ext,
				    "target %d has no live thread to check ptrace access on",
				    t->tgid);
		return -EPERM;
	}
	snprintf(name, sizeof(name), "/proc/%d/task/%d/mem", t->tgid, tid);
	return bft_may_access(name, t->tgid, t->mm, ext);
}

/*
 * Pause stops a target with SIGSTOP sent by the kernel, so it must not
 * stop what the caller could not stop itself: init, the caller's own
 * process, or a process the caller may not ptrace.
 */
int bft_may_stop(struct bft_target *t, struct netlink_ext_ack *ext)
{
	struct task_struct *task = get_pid_task(t->pid, PIDTYPE_TGID);
	int err = 0;

	if (!task)
		return 0;	/* gone: nothing to stop, the reaper cleans up */
	if (is_global_init(task) || task_tgid_vnr(task) == 1) {
		BFT_SET_ERR_MSG_FMT(ext, "target %d is PID 1: not stopping it",
				    t->tgid);
		err = -EPERM;
	} else if (same_thread_group(task, current)) {
		BFT_SET_ERR_MSG_FMT(ext,
				    "target %d is the caller itself: not stopping it",
				    t->tgid);
		err = -EPERM;
	}
	put_task_struct(task);
	if (err)
		return err;
	return bft_may_control(t, ext);
}

/* Every target, for a stop or a detach of all. */
int bft_may_control_all(struct netlink_ext_ack *ext)
{
	struct bft_target *t;
	int err;

	list_for_each_entry(t, &bft_targets, node) {
		err = bft_may_control(t, ext);
		if (err)
			return err;
	}
	return 0;
}
