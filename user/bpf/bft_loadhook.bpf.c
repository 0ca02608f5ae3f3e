// SPDX-License-Identifier: GPL-2.0
/*
 * The loader hook of bfctl attach's follower (user/ctl/follow.c): a
 * uprobe on the target's _dl_debug_state(), which the loader calls after
 * mapping a library and before its constructors run.
 *
 * The follower is the ptrace tracer of every thread of the target, so a
 * SIGSTOP sent to the hitting thread becomes a signal-delivery stop that
 * the follower takes and suppresses: the thread is held while the new
 * library's probes go in, and no group stop ever happens.  SIGSTOP
 * because it cannot be blocked: a worker thread that blocks every signal
 * is held like any other.
 *
 * A thread not traced by this follower is left alone, so the hook can do
 * no harm once the follower is gone; its link is the follower's file, so
 * the kernel removes it then anyway.  The thread's entry in `held` tells
 * the follower the stop is the hook's and not a SIGSTOP of somebody's.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

#define SIGSTOP 19

/* The follower's process: set before load. */
const volatile __u32 follower_tgid;

/* thread id -> stops sent by the hook and not yet taken by the follower */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} held SEC(".maps");

SEC("uprobe")
int bft_load_hook(void *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 one = 1, *n;

	if (!BPF_CORE_READ(t, ptrace) ||
	    BPF_CORE_READ(t, parent, tgid) != (int)follower_tgid)
		return 0;
	/* counted first: a SIGSTOP the follower cannot tell for the hook's
	 * would be delivered, and stop the whole process */
	n = bpf_map_lookup_elem(&held, &tid);
	if (n)
		__sync_fetch_and_add(n, 1);
	else if (bpf_map_update_elem(&held, &tid, &one, BPF_ANY))
		return 0;	/* full: the thread is not held, the load not seen */
	if (bpf_send_signal_thread(SIGSTOP)) {
		/* not sent: the follower must not wait for it */
		n = bpf_map_lookup_elem(&held, &tid);
		if (n && *n > 1)
			__sync_fetch_and_sub(n, 1);
		else
			bpf_map_delete_elem(&held, &tid);
	}
	return 0;
}
