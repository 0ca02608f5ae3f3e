// SPDX-License-Identifier: GPL-2.0
/*
 * The native floor of scripts/bench: a uprobe and a uretprobe program that
 * do nothing, so that a traced call costs the trap and the BPF dispatch and
 * nothing a tracer adds.  bench-bpffloor loads and attaches them.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("uprobe")
int floor_entry(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_return(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
