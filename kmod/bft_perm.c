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
 * May the caller ptrace-attach to @tgid, and is that process still the
 * address space @mm (NULL: any)?  The /proc file proves both: its
 * private data is the mm it was opened on.  A /proc of another pid
 * namespace than the caller's names other processes: refused too.
 */
int bft_may_trace(pid_t tgid, struct mm_struct *mm,
		  struct netlink_ext_ack *ext)
{
	char name[32];
	struct file *f;
	int err = 0;

	snprintf(name, sizeof(name), "/proc/%d/mem", tgid);
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

/*
 * Pause stops a target with SIGSTOP sent by the kernel, so it must not
 * stop what the caller could not stop itself: init, the caller's own
 * process (it would never send the unpause), or a process the caller
 * may not ptrace (attach rights imply the right to stop it).
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
	return bft_may_trace(t->tgid, NULL, ext);
}
