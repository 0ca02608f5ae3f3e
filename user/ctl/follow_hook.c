// SPDX-License-Identifier: GPL-2.0
/*
 * The follower's loader hook (user/bpf/bft_loadhook.bpf.c): a uprobe on
 * _dl_debug_state() of the target's loader, owned by the follower's file
 * table, so that the kernel takes it out whenever the follower ends,
 * however it ends.  It works under either capture backend: it only needs
 * bpf().
 */
#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bft_loadhook.skel.h"
#include "follow.h"
#include "run.h"

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

#define SIG_SHIFT 24	/* held's value: the signal << 24, plus the count */
#define COUNT_MASK ((1U << SIG_SHIFT) - 1)

int follow_hook_arm(struct follow_hook *h, pid_t tgid, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "_dl_debug_state");
	uint64_t bp, entry;
	char path[4096];
	struct stat ns;
	int rc;

	memset(h, 0, sizeof(*h));
	rc = run_find_loader(tgid, path, sizeof(path), &bp, &h->r_debug, &entry, err, errlen);
	if (rc > 0)
		return -ENOENT;	/* static, or no _dl_debug_state: err says */
	if (rc)
		return rc;
	libbpf_set_print(quiet_print);
	/* the program sees pids as this process does, in its namespace */
	if (stat("/proc/self/ns/pid", &ns)) {
		rc = -errno;
		snprintf(err, errlen, "/proc/self/ns/pid: %s", strerror(-rc));
		return rc;
	}
	h->skel = bft_loadhook_skel__open();
	if (!h->skel) {
		rc = -errno;
		snprintf(err, errlen, "opening its BPF program: %s", strerror(-rc));
		return rc;
	}
	h->skel->rodata->target_tgid = (uint32_t)tgid;
	h->skel->rodata->pidns_dev = ns.st_dev;
	h->skel->rodata->pidns_ino = ns.st_ino;
	rc = bft_loadhook_skel__load(h->skel);
	if (rc) {
		snprintf(err, errlen, "loading its BPF program: %s", strerror(-rc));
		goto fail;
	}
	/* every process's: one attached to tgid alone goes quiet once its
	 * main thread has exited; the program picks tgid's threads */
	h->link = bpf_program__attach_uprobe_opts(h->skel->progs.bft_load_hook, -1,
						  path, 0, &uo);
	if (!h->link) {
		rc = -errno;
		snprintf(err, errlen, "a uprobe on %s!_dl_debug_state: %s", path,
			 strerror(-rc));
		goto fail;
	}
	return 0;
fail:
	bft_loadhook_skel__destroy(h->skel);
	h->skel = NULL;
	return rc;
}

bool follow_hook_took(struct follow_hook *h, pid_t tid, int sig)
{
	uint32_t key = (uint32_t)tid, v;
	siginfo_t si;
	int fd;

	if (!h->skel)
		return false;
	fd = bpf_map__fd(h->skel->maps.held);
	if (bpf_map_lookup_elem(fd, &key, &v) || !(v & COUNT_MASK) ||
	    (int)(v >> SIG_SHIFT) != sig)
		return false;
	/* the kernel's, as bpf_send_signal_thread() sends: not a kill() */
	if (!ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) && si.si_code != SI_KERNEL)
		return false;
	/* tid is stopped: the hook cannot count for it meanwhile */
	if ((v & COUNT_MASK) > 1) {
		v--;
		bpf_map_update_elem(fd, &key, &v, BPF_EXIST);
	} else {
		bpf_map_delete_elem(fd, &key);
	}
	return true;
}

bool follow_hook_owes(struct follow_hook *h, pid_t tid)
{
	uint32_t key = (uint32_t)tid, v;

	return h->skel && !bpf_map_lookup_elem(bpf_map__fd(h->skel->maps.held), &key, &v) &&
	       (v & COUNT_MASK);
}

void follow_hook_forget(struct follow_hook *h, pid_t tid)
{
	uint32_t key = (uint32_t)tid;

	if (h->skel)
		bpf_map_delete_elem(bpf_map__fd(h->skel->maps.held), &key);
}

void follow_hook_lift(struct follow_hook *h)
{
	bpf_link__destroy(h->link);
	h->link = NULL;
}

void follow_hook_free(struct follow_hook *h)
{
	follow_hook_lift(h);
	bft_loadhook_skel__destroy(h->skel);
	h->skel = NULL;
}
