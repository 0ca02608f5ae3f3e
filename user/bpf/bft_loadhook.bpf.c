// SPDX-License-Identifier: GPL-2.0
/*
 * The loader hook of bfctl attach's follower (user/ctl/follow.c): a
 * uprobe on the target's _dl_debug_state(), which the loader calls after
 * mapping a library and before its constructors run.
 *
 * The follower is the ptrace tracer of every thread of the target, so a
 * signal sent to the hitting thread becomes a signal-delivery stop that
 * the follower takes and suppresses: the thread is held while the new
 * library's probes go in.  The signal is SIGURG, whose default action is
 * to ignore it: should the follower die while it holds the thread, the
 * kernel delivers it untraced, and nothing happens.  A thread that blocks
 * SIGURG would not stop for it; it gets SIGSTOP, which cannot be blocked.
 *
 * A thread whose tracer is not the follower is left alone, so the hook can
 * do no harm once the follower is gone (its link is the follower's file:
 * the kernel removes it then anyway).  The follower is known by its name,
 * which holds in any pid namespace.  The thread's count in `held` tells
 * the follower that a stop is the hook's and not a signal of somebody's.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

#define SIGSTOP 19
#define SIGURG 23
#define FOLLOWER_COMM "bfctl-follow"	/* prctl(PR_SET_NAME) in follow.c */

/* thread id -> stops sent by the hook and not yet taken by the follower */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} held SEC(".maps");

static bool traced_by_follower(struct task_struct *t)
{
	char comm[sizeof(FOLLOWER_COMM)];

	if (!BPF_CORE_READ(t, ptrace))
		return false;
	if (bpf_probe_read_kernel_str(comm, sizeof(comm), BPF_CORE_READ(t, parent, comm)) !=
	    sizeof(comm))
		return false;
	for (int i = 0; i < (int)sizeof(comm); i++)
		if (comm[i] != FOLLOWER_COMM[i])
			return false;
	return true;
}

SEC("uprobe")
int bft_load_hook(void *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 blocked;
	__u32 one = 1, *n;
	int sig;

	if (!traced_by_follower(t))
		return 0;
	blocked = BPF_CORE_READ(t, blocked.sig[0]);
	sig = blocked & (1ULL << (SIGURG - 1)) ? SIGSTOP : SIGURG;
	/* counted first: a stop the follower cannot tell for the hook's
	 * would be passed on to the process */
	n = bpf_map_lookup_elem(&held, &tid);
	if (n)
		__sync_fetch_and_add(n, 1);
	else if (bpf_map_update_elem(&held, &tid, &one, BPF_ANY))
		return 0;	/* full: the thread is not held, the load not seen */
	if (bpf_send_signal_thread(sig)) {
		/* not sent: the follower must not wait for it */
		n = bpf_map_lookup_elem(&held, &tid);
		if (n && *n > 1)
			__sync_fetch_and_sub(n, 1);
		else
			bpf_map_delete_elem(&held, &tid);
	}
	return 0;
}
