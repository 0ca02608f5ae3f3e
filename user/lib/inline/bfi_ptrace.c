// SPDX-License-Identifier: GPL-2.0
/*
 * Stopping a whole target (bfi_ptrace.h): seize and interrupt every
 * thread, catch the ones born meanwhile, wait for every stop under one
 * deadline, keep the signals that arrive for release, and let go.  Also
 * the target's memory through /proc/PID/mem.  The system calls run inside
 * a stopped target are bfi_inject.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bft_util.h"
#include "inline/bfi_world.h"

/*
 * Threads seized whose stop had not come by the deadline.  ptrace cannot
 * let go of a thread that is not stopped, and it will stop (on our
 * interrupt) once it leaves its uninterruptible sleep: each later stop or
 * release lets go of those that did.  The kernel lets go of the rest when
 * the tracing thread exits.
 */
#define LEFTOVERS	64
static pid_t leftover[LEFTOVERS];
static size_t nleftover;

static void leftovers_sweep(void)
{
	size_t i = 0;

	while (i < nleftover) {
		pid_t tid = leftover[i];
		int st, sig = 0;
		pid_t r = waitpid(tid, &st, __WALL | WNOHANG);

		if (r == 0) {
			i++;
			continue;
		}
		if (r > 0 && WIFSTOPPED(st)) {
			/* a signal-delivery stop: hand the signal on */
			if (st >> 16 == 0 && WSTOPSIG(st) != SIGTRAP)
				sig = WSTOPSIG(st);
			ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig);
		}
		leftover[i] = leftover[--nleftover];
	}
}

static void leftovers_add(pid_t tid)
{
	if (nleftover < LEFTOVERS)
		leftover[nleftover++] = tid;
}

/* The state letter of one thread (/proc/PID/task/TID/stat), 0: gone. */
static char world_thread_state(pid_t tgid, pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", tgid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* the command name may hold ')': the state follows the last one */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* A number after "key:" in /proc/PID/status; -1 if absent. */
static long world_status_field(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtol(line + klen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static long world_yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static struct bfi_tracee *world_find(struct bfi_world *w, pid_t tid)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->t[i].tid == tid)
			return &w->t[i];
	return NULL;
}

static int world_add(struct bfi_world *w, pid_t tid)
{
	struct bfi_tracee *t;

	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;

		t = realloc(w->t, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		w->t = t;
		w->cap = cap;
	}
	t = &w->t[w->n++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->state = BFI_T_PENDING;
	/* a clone without CLONE_THREAD is another process: let it go */
	t->foreign = world_status_field(tid, "Tgid") != w->tgid;
	return 0;
}

/* Seize one thread found in /proc/PID/task and interrupt it. */
static int world_seize(struct bfi_world *w, pid_t tid, char *err,
		       size_t errlen)
{
	long tracer, scope;
	char state;
	int e;

	if (!ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)PTRACE_O_TRACECLONE)) {
		e = world_add(w, tid);
		if (e)
			return e;
		ptrace(PTRACE_INTERRUPT, tid, 0, 0);
		return 0;
	}
	e = errno;
	if (e == ESRCH)
		return 0;	/* it exited meanwhile */
	if (e != EPERM) {
		snprintf(err, errlen, "cannot trace thread %d of process %d: %s",
			 tid, w->tgid, strerror(e));
		return -e;
	}
	tracer = world_status_field(tid, "TracerPid");
	state = world_thread_state(w->tgid, tid);
	if (tracer < 0 || !state || state == 'Z' || state == 'X')
		return 0;	/* it exited meanwhile: EPERM for a zombie */
	if (tracer == syscall(SYS_gettid))
		/* a clone of a seized thread: ours, its stop is coming */
		return world_add(w, tid);
	if (tracer > 0) {
		snprintf(err, errlen,
			 "process %d is already traced by process %ld (a debugger "
			 "or strace?): only one tracer at a time, detach it first",
			 w->tgid, tracer);
		return -EBUSY;
	}
	scope = world_yama_scope();
	if (scope == 3)
		snprintf(err, errlen,
			 "no ptrace access to process %d: Yama forbids ptrace to "
			 "everyone (kernel.yama.ptrace_scope = 3)", w->tgid);
	else if (scope >= 1)
		snprintf(err, errlen,
			 "no ptrace access to process %d: Yama restricts ptrace "
			 "(kernel.yama.ptrace_scope = %ld); run as root or with "
			 "CAP_SYS_PTRACE", w->tgid, scope);
	else
		snprintf(err, errlen,
			 "no ptrace access to process %d: another user's process, "
			 "or not dumpable; run as root or with CAP_SYS_PTRACE",
			 w->tgid);
	return -EPERM;
}

static void world_keep_signal(struct bfi_world *w, struct bfi_tracee *t,
			      int sig)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si)) {
		si.si_signo = sig;
		si.si_code = SI_TKILL;
	}
	/* standard signals do not queue: a second one merges */
	for (int i = 0; i < t->nkept; i++)
		if (t->kept[i].si_signo == sig && sig < SIGRTMIN)
			return;
	if (t->nkept < BFI_KEPT_SIGS)
		t->kept[t->nkept++] = si;
	(void)w;
}

/* One waitpid status of a pending thread. */
static void world_handle(struct bfi_world *w, struct bfi_tracee *t, int st)
{
	int ev = st >> 16, sig;
	unsigned long msg;

	if (!WIFSTOPPED(st)) {
		t->state = BFI_T_GONE;
		return;
	}
	sig = WSTOPSIG(st);
	if (ev == PTRACE_EVENT_STOP) {
		bool group = sig == SIGSTOP || sig == SIGTSTP ||
			     sig == SIGTTIN || sig == SIGTTOU;

		t->stop = group ? BFI_STOP_GROUP : BFI_STOP_INTERRUPT;
		if (group && !t->foreign)
			w->group_stop = true;
		t->state = ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs) ?
			   BFI_T_GONE : BFI_T_STOPPED;
		return;
	}
	if (ev == PTRACE_EVENT_CLONE &&
	    !ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) &&
	    !world_find(w, (pid_t)msg)) {
		size_t at = (size_t)(t - w->t);

		/* on ENOMEM the next scan seizes it (EPERM: ours) */
		world_add(w, (pid_t)msg);
		t = &w->t[at];	/* world_add may move the array */
	}
	if (ev == 0)
		world_keep_signal(w, t, sig);
	/* our interrupt is still pending: it stops the thread next */
	ptrace(PTRACE_CONT, t->tid, 0, 0);
	ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
}

/* Let go of one stopped thread, its kept signals sent back first. */
static void world_let_go(struct bfi_world *w, struct bfi_tracee *t)
{
	for (int i = 0; i < t->nkept; i++) {
		siginfo_t *si = &t->kept[i];
		int s = si->si_signo;

		/* a fault the kernel raised comes again with the instruction */
		if (si->si_code > 0 && (s == SIGSEGV || s == SIGBUS ||
					s == SIGILL || s == SIGFPE))
			continue;
		/* queued with data: the kernel lets us queue it again so */
		if (si->si_code < 0 && si->si_code != SI_TKILL &&
		    !syscall(SYS_rt_tgsigqueueinfo, w->tgid, t->tid, s, si))
			continue;
		syscall(SYS_tgkill, w->tgid, t->tid, s);
	}
	t->nkept = 0;
	ptrace(PTRACE_DETACH, t->tid, 0, 0);
}

static void world_free(struct bfi_world *w)
{
	if (w->mem >= 0)
		close(w->mem);
	free(w->t);
	free(w);
}

/* Release what is stopped, leave the rest to leftovers_sweep. */
static void world_abort(struct bfi_world *w)
{
	for (size_t i = 0; i < w->n; i++) {
		if (w->t[i].state == BFI_T_STOPPED)
			world_let_go(w, &w->t[i]);
		else if (w->t[i].state == BFI_T_PENDING)
			leftovers_add(w->t[i].tid);
	}
	world_free(w);
	leftovers_sweep();
}

/* Seize the threads /proc/PID/task lists that are new; *fresh: any. */
static int world_scan(struct bfi_world *w, bool *fresh, char *err,
		      size_t errlen)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int r = 0;

	*fresh = false;
	snprintf(path, sizeof(path), "/proc/%d/task", w->tgid);
	dir = opendir(path);
	if (!dir) {
		snprintf(err, errlen, "process %d exited", w->tgid);
		return -ESRCH;
	}
	while (!r && (d = readdir(dir))) {
		pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);
		char s;

		if (tid <= 0 || world_find(w, tid))
			continue;
		s = world_thread_state(w->tgid, tid);
		if (!s || s == 'Z' || s == 'X')
			continue;	/* a zombie never stops */
		r = world_seize(w, tid, err, errlen);
		*fresh = true;
	}
	closedir(dir);
	return r;
}

/* Wait for every pending thread's stop, until deadline_ms. */
static int world_wait(struct bfi_world *w, int64_t deadline_ms, char *err,
		      size_t errlen)
{
	for (unsigned round = 0;; round++) {
		bool pending = false, moved = false;

		for (size_t i = 0; i < w->n; i++) {
			struct bfi_tracee *t = &w->t[i];
			int st;
			pid_t r;

			if (t->state != BFI_T_PENDING)
				continue;
			r = waitpid(t->tid, &st, __WALL | WNOHANG);
			if (r < 0) {
				t->state = BFI_T_GONE;	/* ECHILD: reaped */
			} else if (r > 0) {
				world_handle(w, &w->t[i], st);
				moved = true;
			} else if (round % 16 == 15 &&
				   world_thread_state(w->tgid, t->tid) == 'Z') {
				/* exited, its end not reported while the
				 * group lives (a leader): it never stops */
				leftovers_add(t->tid);
				t->state = BFI_T_GONE;
			}
			if (w->t[i].state == BFI_T_PENDING)
				pending = true;
		}
		if (!pending)
			return 0;
		if (bft_mono_ms() >= deadline_ms) {
			for (size_t i = 0; i < w->n; i++)
				if (w->t[i].state == BFI_T_PENDING) {
					snprintf(err, errlen,
						 "thread %d of process %d did not stop "
						 "within %d ms (uninterruptible sleep, "
						 "or a vfork parent waiting for its "
						 "child): nothing was changed",
						 w->t[i].tid, w->tgid,
						 BFI_STOP_DEADLINE_MS);
					break;
				}
			return -EBUSY;
		}
		if (!moved)
			nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
	}
}

/* Drop the threads that are gone, let go of other processes' ones. */
static void world_settle(struct bfi_world *w)
{
	size_t k = 0;

	for (size_t i = 0; i < w->n; i++) {
		struct bfi_tracee *t = &w->t[i];

		if (t->state == BFI_T_STOPPED && t->foreign)
			world_let_go(w, t);
		if (t->state == BFI_T_STOPPED && !t->foreign)
			w->t[k++] = *t;
	}
	w->n = w->nown = k;
}

int bfi_world_stop(pid_t tgid, struct bfi_world **wp, char *err,
		   size_t errlen)
{
	int64_t deadline = bft_mono_ms() + BFI_STOP_DEADLINE_MS;
	struct bfi_world *w;
	char path[64];
	bool fresh;
	int r;

	*wp = NULL;
	leftovers_sweep();
	if (tgid <= 0 || world_status_field(tgid, "Tgid") < 0) {
		snprintf(err, errlen, "no process with pid %d", (int)tgid);
		return -ESRCH;
	}
	if (world_status_field(tgid, "Tgid") != tgid) {
		snprintf(err, errlen, "%d is a thread of process %ld, not a process",
			 (int)tgid, world_status_field(tgid, "Tgid"));
		return -ESRCH;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	w->tgid = tgid;
	w->mem = -1;
	do {
		r = world_scan(w, &fresh, err, errlen);
		if (!r)
			r = world_wait(w, deadline, err, errlen);
	} while (!r && fresh);
	if (!r) {
		world_settle(w);
		if (!w->n) {
			snprintf(err, errlen, "process %d exited", tgid);
			r = -ESRCH;
		}
	}
	if (!r) {
		/* a live thread's: a leader that exited has no memory left */
		snprintf(path, sizeof(path), "/proc/%d/task/%d/mem", tgid,
			 w->t[0].tid);
		w->mem = open(path, O_RDWR | O_CLOEXEC);
		if (w->mem < 0) {
			r = -errno;
			snprintf(err, errlen, "cannot open the memory of process %d: %s",
				 tgid, strerror(errno));
		}
	}
	if (r) {
		world_abort(w);
		return r;
	}
	*wp = w;
	return 0;
}

void bfi_world_release(struct bfi_world *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++)
		if (w->t[i].state == BFI_T_STOPPED)
			world_let_go(w, &w->t[i]);
	world_free(w);
	leftovers_sweep();
}

static bool world_rip_in(uint64_t rip, const uint64_t (*ranges)[2], size_t n)
{
	for (size_t j = 0; j < n; j++)
		if (rip >= ranges[j][0] && rip < ranges[j][1])
			return true;
	return false;
}

bool bfi_world_inside(const struct bfi_world *w, const uint64_t (*ranges)[2],
		      size_t n)
{
	for (size_t i = 0; i < w->nown; i++)
		if (world_rip_in(w->t[i].regs.rip, ranges, n))
			return true;
	return false;
}

/*
 * Single-step t, alone, until its rip leaves the ranges.  The recorder
 * takes no lock another thread holds and makes no system call that
 * blocks, so it leaves them in a few thousand instructions: a busy
 * target, whose threads are inside it at almost every stop, is not
 * refused for that.  Each step is waited for to its end, never
 * interrupted: the SIGTRAP of a step that completed after an interrupt
 * stop would stay pending and kill the thread once let go.  A signal that
 * comes meanwhile is kept for release.  false: it did not leave within
 * the bounds (it stands in a step's stop, which release lets go), or it
 * died; the caller stops again instead.
 */
static bool world_step_out(struct bfi_tracee *t, const uint64_t (*ranges)[2],
			   size_t n)
{
	int64_t deadline = bft_mono_ms() + BFI_STEP_OUT_MS;

	if (t->state != BFI_T_STOPPED || t->stop == BFI_STOP_GROUP)
		return false;
	for (int steps = 0; world_rip_in(t->regs.rip, ranges, n); steps++) {
		int st;
		pid_t r;

		if (steps >= BFI_STEP_OUT_MAX || bft_mono_ms() >= deadline ||
		    ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0))
			return false;
		do
			r = waitpid(t->tid, &st, __WALL);
		while (r < 0 && errno == EINTR);
		if (r != t->tid || !WIFSTOPPED(st)) {
			t->state = BFI_T_GONE;
			return false;
		}
		t->stop = BFI_STOP_STEPPED;
		if (st >> 16 == 0 && WSTOPSIG(st) != SIGTRAP &&
		    t->nkept < BFI_KEPT_SIGS) {
			siginfo_t si;

			memset(&si, 0, sizeof(si));
			ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si);
			t->kept[t->nkept++] = si;
		}
		if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs))
			return false;
	}
	return true;
}

int bfi_world_stop_clear(pid_t tgid, const uint64_t (*ranges)[2], size_t n,
			 struct bfi_world **wp, char *err, size_t errlen)
{
	pid_t tid = 0;
	uint64_t rip = 0;

	for (int i = 0; i < BFI_STOP_TRIES; i++) {
		struct bfi_world *w;
		int r = bfi_world_stop(tgid, &w, err, errlen);
		bool out = true;

		if (r)
			return r;
		for (size_t k = 0; k < w->nown && out; k++)
			if (world_rip_in(w->t[k].regs.rip, ranges, n))
				out = world_step_out(&w->t[k], ranges, n);
		if (out && !bfi_world_inside(w, ranges, n)) {
			*wp = w;
			return 0;
		}
		for (size_t k = 0; k < w->nown; k++)
			if (world_rip_in(w->t[k].regs.rip, ranges, n)) {
				tid = w->t[k].tid;
				rip = w->t[k].regs.rip;
			}
		bfi_world_release(w);
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	*wp = NULL;
	snprintf(err, errlen,
		 "thread %d of process %d was inside code about to be rewritten "
		 "(at %#llx) at each of %d stops: nothing was changed",
		 tid, tgid, (unsigned long long)rip, BFI_STOP_TRIES);
	return -EBUSY;
}

pid_t bfi_world_tgid(const struct bfi_world *w)
{
	return w->tgid;
}

size_t bfi_world_nthreads(const struct bfi_world *w)
{
	return w->nown;
}

pid_t bfi_world_tid(const struct bfi_world *w, size_t i)
{
	return i < w->nown ? w->t[i].tid : 0;
}

uint64_t bfi_world_rip(const struct bfi_world *w, size_t i)
{
	return i < w->nown ? w->t[i].regs.rip : 0;
}

bool bfi_world_group_stopped(const struct bfi_world *w)
{
	return w->group_stop;
}

int bfi_mem_read(struct bfi_world *w, uint64_t addr, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(w->mem, (char *)buf + done, len - done,
				  (off_t)(addr + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

int bfi_mem_write(struct bfi_world *w, uint64_t addr, const void *buf,
		  size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(w->mem, (const char *)buf + done, len - done,
				   (off_t)(addr + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}
