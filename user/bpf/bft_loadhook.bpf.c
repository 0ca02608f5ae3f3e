// SPDX-License-Identifier: GPL-2.0
/*
 * The loader hook of bfctl attach's follower (user/ctl/follow.c): a
 * uprobe on _dl_debug_state() of the target's loader, which the loader
 * calls after mapping a library and before its constructors run.
 *
 * The follower is the ptrace tracer of every thread of the target, so a
 * signal sent to the hitting thread becomes a signal-delivery stop that
 * the follower takes and suppresses: the thread is held while the new
 * library's probes go in.  The signal is SIGURG, whose default action is
 * to ignore it: should the follower die while it holds the thread, the
 * kernel delivers it untraced, and nothing happens.  A thread that blocks
 * SIGURG would not stop for it; it gets SIGSTOP, which cannot be blocked.
 *
 * The uprobe is on the loader's file for every process (one attached to
 * the target alone stops firing once its main thread has exited), so the
 * program picks the target's threads itself: its process in the
 * follower's pid namespace, and a tracer named as the follower names
 * itself.  A thread traced by anybody else is left alone, so the hook can
 * do no harm once the follower is gone (its link is the follower's file:
 * the kernel removes it then anyway).  A thread's entry in `held` tells
 * the follower that a stop is the hook's, and by which signal.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

#define SIGSTOP 19
#define SIGURG 23
#define COMM_LEN 16
#define FOLLOWER_COMM "bfctl-follow"	/* prctl(PR_SET_NAME) in follow.c */

/* Set before load: the target, in the pid namespace given by dev, ino. */
const volatile __u32 target_tgid;
const volatile __u64 pidns_dev;
const volatile __u64 pidns_ino;

/*
 * Thread id (in that namespace) -> the signal sent, << 24, plus how many
 * the follower has not taken yet (user/ctl/follow_hook.c reads it).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} held SEC(".maps");

static bool traced_by_follower(struct task_struct *t)
{
	static const char want[] = FOLLOWER_COMM;
	struct task_struct *tracer;
	char comm[COMM_LEN];

	if (!BPF_CORE_READ(t, ptrace))
		return false;
	tracer = BPF_CORE_READ(t, parent);
	if (bpf_core_read_str(comm, sizeof(comm), &tracer->comm) != sizeof(want))
		return false;
	for (int i = 0; i < (int)sizeof(want); i++)
		if (comm[i] != want[i])
			return false;
	return true;
}

SEC("uprobe")
int bft_load_hook(void *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct bpf_pidns_info ns;
	__u32 tid, v, *n;
	__u64 blocked;
	int sig;

	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)) ||
	    ns.tgid != target_tgid || !traced_by_follower(t))
		return 0;
	tid = ns.pid;
	blocked = BPF_CORE_READ(t, blocked.sig[0]);
	sig = blocked & (1ULL << (SIGURG - 1)) ? SIGSTOP : SIGURG;
	/* counted first: a stop the follower cannot tell for the hook's
	 * would be passed on to the process */
	v = (__u32)sig << 24 | 1;
	n = bpf_map_lookup_elem(&held, &tid);
	if (n)
		__sync_fetch_and_add(n, 1);
	else if (bpf_map_update_elem(&held, &tid, &v, BPF_ANY))
		return 0;	/* full: the thread is not held, the load not seen */
	if (bpf_send_signal_thread(sig)) {
		/* not sent: the follower must not wait for it */
		n = bpf_map_lookup_elem(&held, &tid);
		if (n && (*n & 0xffffff) > 1)
			__sync_fetch_and_sub(n, 1);
		else
			bpf_map_delete_elem(&held, &tid);
	}
	return 0;
}
