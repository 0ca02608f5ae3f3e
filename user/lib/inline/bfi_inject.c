// SPDX-License-Identifier: GPL-2.0
/*
 * One system call run inside a stopped target (bfi_world_syscall): through
 * a `syscall` instruction the target already has, so no code byte is ever
 * written for it and a tracer killed halfway leaves no foreign bytes.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include "bft_util.h"
#include "inline/bfi_vdso.h"
#include "inline/bfi_world.h"

/* An injected call that has not returned by then is given up. */
#define INJECT_TIMEOUT_MS	1000

/* Without a vDSO: the first `0f 05` in the target's executable mappings. */
static int inject_find_in_text(struct bfi_world *w, uint64_t *at)
{
	char path[64], line[512];
	static unsigned char buf[65536];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", bfi_world_tid(w, 0));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		char perm[8];
		size_t len;
		void *p;

		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perm) != 3 ||
		    perm[2] != 'x')
			continue;
		len = hi - lo < sizeof(buf) ? hi - lo : sizeof(buf);
		if (bfi_mem_read(w, lo, buf, len))
			continue;
		p = memmem(buf, len, "\x0f\x05", 2);
		if (p) {
			*at = lo + (uint64_t)((unsigned char *)p - buf);
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -ENOENT;
}

static struct bfi_tracee *inject_thread(struct bfi_world *w)
{
	for (size_t i = 0; i < w->nown; i++)
		if (w->t[i].state == BFI_T_STOPPED &&
		    w->t[i].stop != BFI_STOP_GROUP)
			return &w->t[i];
	return NULL;
}

/* Step t until it stands after the syscall instruction; regs: there. */
static int inject_step(struct bfi_world *w, struct bfi_tracee *t,
		       struct user_regs_struct *regs)
{
	int64_t deadline = bft_mono_ms() + INJECT_TIMEOUT_MS;

	for (;;) {
		int st;
		pid_t r;

		if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0))
			return -errno;
		while (!(r = waitpid(t->tid, &st, __WALL | WNOHANG))) {
			if (bft_mono_ms() >= deadline) {
				ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
				if (waitpid(t->tid, &st, __WALL) != t->tid ||
				    !WIFSTOPPED(st))
					return -ESRCH;
				return -ETIMEDOUT;
			}
			nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
		}
		if (r < 0 || !WIFSTOPPED(st))
			return -ESRCH;
		if (ptrace(PTRACE_GETREGS, t->tid, 0, regs))
			return -ESRCH;
		if (regs->rip == w->syscall_at + 2 &&
		    st >> 16 == 0 && WSTOPSIG(st) == SIGTRAP)
			return 0;
		if (st >> 16 == 0 && WSTOPSIG(st) != SIGTRAP) {
			/* someone's signal: kept for release */
			siginfo_t si;

			memset(&si, 0, sizeof(si));
			ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si);
			if (t->nkept < BFI_KEPT_SIGS)
				t->kept[t->nkept++] = si;
		}
		if (regs->rip != w->syscall_at && regs->rip != w->syscall_at + 2)
			return -EFAULT;	/* not where we sent it */
	}
}

int bfi_world_syscall(struct bfi_world *w, long nr, const long args[6],
		      long *ret, char *err, size_t errlen)
{
	struct user_regs_struct saved, regs;
	struct bfi_tracee *t = inject_thread(w);
	char scratch[256];
	int r;

	if (!err) {
		err = scratch;
		errlen = sizeof(scratch);
	}
	if (w->group_stop || !t) {
		snprintf(err, errlen,
			 "process %d is stopped (SIGSTOP): nothing is run inside a "
			 "stopped process; continue it first", w->tgid);
		return -EAGAIN;
	}
	if (!w->syscall_at &&
	    bfi_vdso_syscall(bfi_world_tid(w, 0), &w->syscall_at, err,
			     errlen) < 0)
		w->syscall_at = 0;
	if (!w->syscall_at && inject_find_in_text(w, &w->syscall_at)) {
		snprintf(err, errlen,
			 "process %d has no syscall instruction to run a system "
			 "call through (no vDSO, none in its code)", w->tgid);
		return -ENOENT;
	}
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &saved)) {
		t->state = BFI_T_GONE;
		snprintf(err, errlen, "thread %d of process %d is gone", t->tid,
			 w->tgid);
		return -ESRCH;
	}
	regs = saved;
	regs.rax = (unsigned long)nr;
	regs.rdi = (unsigned long)args[0];
	regs.rsi = (unsigned long)args[1];
	regs.rdx = (unsigned long)args[2];
	regs.r10 = (unsigned long)args[3];
	regs.r8 = (unsigned long)args[4];
	regs.r9 = (unsigned long)args[5];
	/* not in a system call: the one it was in is not restarted by ours */
	regs.orig_rax = (unsigned long)-1;
	regs.rip = w->syscall_at;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &regs)) {
		snprintf(err, errlen, "cannot set the registers of thread %d: %s",
			 t->tid, strerror(errno));
		return -errno;
	}
	r = inject_step(w, t, &regs);
	if (r == -ESRCH) {
		t->state = BFI_T_GONE;
		snprintf(err, errlen, "thread %d of process %d died in a system "
			 "call run inside it", t->tid, w->tgid);
		return r;
	}
	*ret = (long)regs.rax;
	/* exactly as stopped: an interrupted call restarts as it would have */
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &saved) && !r)
		r = -errno;
	t->stop = BFI_STOP_STEPPED;
	t->regs = saved;
	if (r)
		snprintf(err, errlen, "system call %ld inside process %d failed: %s",
			 nr, w->tgid, strerror(-r));
	return r;
}
