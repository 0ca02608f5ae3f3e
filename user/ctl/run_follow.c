// SPDX-License-Identifier: GPL-2.0
/*
 * bfctl run, following: bfctl stays the tracer (PTRACE_SEIZE, with
 * PTRACE_O_TRACEFORK, TRACEVFORK, TRACECLONE and TRACEEXEC) of every task
 * the command creates, until the command ends.
 *
 *  - A new process (fork, vfork, clone without CLONE_THREAD) is held at its
 *    first stop, before it runs: it has its parent's image, but the module
 *    and the BPF backend filter probes per process, so it needs its own
 *    attach.  The child of a process whose image matched nothing is let go
 *    without a look: its image matches nothing either.
 *  - A new thread just continues: its process's probes cover it.
 *  - An exec is held like the command's first one (run_hold), the probes of
 *    the old image detached, the patterns resolved in the new one.
 *  - A library loaded later stops its loading thread on the loader's hook
 *    (run_loads.c), and the patterns are resolved again.  A new process
 *    has its parent's copy of the hook, so it is followed even when its
 *    image matched nothing: a library it loads may match.  Which hook it
 *    has is taken at its parent's fork event, where the parent is stopped:
 *    by the child's first stop the parent may have exited or exec'd.
 *  - Signals are delivered unchanged; a group-stop (SIGSTOP, SIGTSTP, the
 *    module's pause) stays a stop through PTRACE_LISTEN until SIGCONT.
 *
 * When the command's process ends, the rest are detached, their hooks
 * lifted first: they run on, untraced once the session ends.  Tasks are
 * known by their first stop; which process is which is read from /proc,
 * so the order in which the parent's fork event and the child's first stop
 * arrive does not matter.  A child announced by a fork event but not seen
 * yet is waited for before bfctl lets go: it carries the hook too.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include "follow.h"
#include "output.h"
#include "run.h"

struct tracee {
	pid_t pid;
	pid_t tgid;		/* its process, once known */
	bool seen;		/* its first stop came (else a fork event told) */
	bool traced;		/* a process with probes attached */
	struct run_loader ld;	/* a process's loader hook */
};

struct tracees {
	struct tracee *v;
	size_t n, cap;
};

static struct tracee *find(struct tracees *t, pid_t pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].pid == pid)
			return &t->v[i];
	return NULL;
}

static struct tracee *add(struct tracees *t, pid_t pid)
{
	if (t->n == t->cap) {
		size_t ncap = t->cap ? 2 * t->cap : 16;
		void *p = realloc(t->v, ncap * sizeof(*t->v));

		if (!p)
			return NULL;
		t->v = p;
		t->cap = ncap;
	}
	t->v[t->n] = (struct tracee){ .pid = pid, .tgid = pid, .seen = true };
	return &t->v[t->n++];
}

static void drop(struct tracees *t, pid_t pid)
{
	struct tracee *e = find(t, pid);

	if (e)
		*e = t->v[--t->n];
}

/* Tgid and PPid of a task; -1 when it is gone. */
static int task_ids(pid_t tid, pid_t *tgid, pid_t *ppid)
{
	char fn[64], line[256];
	int found = 0;
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/status", (int)tid);
	f = fopen(fn, "re");
	if (!f)
		return -1;
	while (found < 2 && fgets(line, sizeof(line), f)) {
		found += sscanf(line, "Tgid: %d", tgid) == 1;
		found += sscanf(line, "PPid: %d", ppid) == 1;
	}
	fclose(f);
	return found == 2 ? 0 : -1;
}

/* A tracee that has gone meanwhile is no error: its end is reported. */
static void resume(pid_t pid, int req, int sig)
{
	if (ptrace(req, pid, NULL, (void *)(long)sig) && errno != ESRCH)
		err_msg("run: resuming process %d: %s", (int)pid, strerror(errno));
}

static void released_untraced(struct run *r, pid_t pid, int rc)
{
	if (rc == EXIT_NOMATCH)
		vlog(r->c, 1, "run: process %d released untraced: nothing matches in it",
		     (int)pid);
	else if (rc)
		err_msg("run: process %d released untraced", (int)pid);
}

/*
 * A fork, vfork or clone event of parent: its child, whose first stop may
 * come later, gets the parent's hook now, while the parent is stopped.
 */
static void on_fork_event(struct tracees *t, pid_t parent)
{
	struct tracee *p = find(t, parent), *proc, *e;
	struct run_loader ld = { 0 };
	unsigned long child;

	if (!p || ptrace(PTRACE_GETEVENTMSG, parent, NULL, &child) || find(t, (pid_t)child))
		return;
	proc = find(t, p->tgid);
	if (proc)
		ld = proc->ld;
	e = add(t, (pid_t)child);
	if (e) {
		e->seen = false;
		e->ld = ld;
	}
}

/* The first stop of a task bfctl has not seen: a new thread or process. */
static void on_new(struct run *r, struct tracees *t, pid_t pid)
{
	struct tracee *e = find(t, pid), *parent;
	pid_t tgid = pid, ppid = 0;
	bool announced = e != NULL;
	int rc;

	if (!e)
		e = add(t, pid);
	if (!e)
		err_msg("run: out of memory: process %d not followed", (int)pid);
	if (!e || task_ids(pid, &tgid, &ppid) || tgid != pid) {
		if (e) {
			e->seen = true;
			e->tgid = tgid;
		}
		resume(pid, PTRACE_CONT, 0);
		return;
	}
	e->seen = true;
	parent = find(t, ppid);
	/* a fork has the parent's memory, its hook too (taken at its event) */
	if (!announced && parent)
		e->ld = parent->ld;
	if (parent && !parent->traced) {
		/* the parent's image matched nothing: neither does this copy */
		vlog(r->c, 2, "run: process %d, a child of %d, runs its image: untraced",
		     (int)pid, (int)ppid);
		resume(pid, PTRACE_CONT, 0);
		return;
	}
	vlog(r->c, 2, "run: new process %d, a child of %d", (int)pid, (int)ppid);
	rc = run_attach(r, pid);
	find(t, pid)->traced = !rc;
	released_untraced(r, pid, rc);
	resume(pid, PTRACE_CONT, 0);
}

/* Returns true when the process ended meanwhile (*gone its status). */
static bool on_exec(struct run *r, struct tracees *t, pid_t pid, int *gone)
{
	struct run_loader ld;
	unsigned long former;
	struct tracee *e;
	int rc, d;

	/* a thread's exec: it took the leader's pid, its own tid is gone */
	if (!ptrace(PTRACE_GETEVENTMSG, pid, NULL, &former) && (pid_t)former != pid)
		drop(t, (pid_t)former);
	e = find(t, pid);
	if (e && e->traced) {
		d = ctl_detach(r->c, (uint32_t)pid);
		if (d && d != -ENOENT)
			ctl_nl_fail(r->c, "detaching the probes of the image before the exec", d);
		e->traced = false;
	}
	if (e)
		e->ld = (struct run_loader){ 0 };	/* gone with the old image */
	vlog(r->c, 2, "run: process %d stopped after exec", (int)pid);
	if (run_hold(r->c, pid, gone, &ld))
		return *gone != -1;
	rc = run_attach(r, pid);
	e = find(t, pid);
	if (e) {
		e->traced = !rc;
		e->ld = ld;
		run_loads_arm(r, pid, &e->ld);
		if (!e->ld.armed)
			run_exitkill(pid, false);
	}
	released_untraced(r, pid, rc);
	resume(pid, PTRACE_CONT, 0);
	return false;
}

static bool group_stop(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/*
 * Let everything left go.  A running tracee is interrupted first (only a
 * stopped one can be detached); one stopped by a signal keeps that stop.
 * A process's hook is lifted at the first stop of any of its threads; a
 * thread stopped on it is stepped past, its SIGTRAP not delivered.
 */
static void detach_all(struct tracees *t)
{
	struct tracee *e, *proc;
	int st, ev, sig, hook;
	pid_t pid;

	for (size_t i = 0; i < t->n; i++)
		ptrace(PTRACE_INTERRUPT, t->v[i].pid, NULL, NULL);
	while (t->n) {
		pid = waitpid(-1, &st, __WALL);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!WIFSTOPPED(st)) {
			drop(t, pid);
			continue;
		}
		ev = st >> 16;
		sig = ev ? 0 : WSTOPSIG(st);
		e = find(t, pid);
		if (!e) {
			/* a child nothing announced: no hook bfctl knows of */
			ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)sig);
			continue;
		}
		if (!e->seen) {
			pid_t tgid = pid, ppid;

			/* its first stop: a thread's process is its own record */
			if (!task_ids(pid, &tgid, &ppid))
				e->tgid = tgid;
			e->seen = true;
		}
		proc = find(t, e->tgid);
		if (ev == PTRACE_EVENT_EXEC && proc) {
			/* the old image, its hook with it, is gone */
			proc->ld = (struct run_loader){ 0 };
		} else if (ev == PTRACE_EVENT_FORK || ev == PTRACE_EVENT_VFORK ||
			   ev == PTRACE_EVENT_CLONE) {
			/* born meanwhile, with the hook as it is now */
			on_fork_event(t, pid);
			e = find(t, pid);
			proc = find(t, e->tgid);
		} else if (ev == PTRACE_EVENT_STOP && proc && run_loads_hit(pid, &proc->ld)) {
			/* on the hook, its SIGTRAP still pending: take that first */
			ptrace(PTRACE_CONT, pid, NULL, NULL);
			continue;
		}
		if (proc) {
			hook = run_loads_let_go(pid, &proc->ld, sig == SIGTRAP);
			if (hook < 0)
				err_msg("run: lifting the loader hook of process %d: %s",
					(int)proc->pid, strerror(-hook));
			sig = hook > 0 ? 0 : sig;
		}
		ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)sig);
		drop(t, pid);
	}
}

/* A SIGTRAP stop on the loader hook: true when it was one. */
static bool on_trap(struct run *r, struct tracees *t, pid_t tid)
{
	struct tracee *e = find(t, tid), *proc = find(t, e->tgid);
	int rc;

	if (!proc || !run_loads_hit(tid, &proc->ld))
		return false;
	rc = run_loads_on_hit(r, tid, proc->pid, &proc->ld);
	if (rc < 0 && rc != -ESRCH)
		err_msg("run: process %d, thread %d, on the loader hook: %s",
			(int)proc->pid, (int)tid, strerror(-rc));
	if (rc == RUN_LOADS_LOST)
		proc->traced = false;
	else if (rc > 0)
		proc->traced = true;
	resume(tid, PTRACE_CONT, 0);
	return true;
}

/*
 * SIGTERM and SIGHUP end bfctl as they did before it followed loads, and
 * the command runs on untraced; only the loader hooks must go first.  They
 * are blocked, with SIGCHLD (a tracee's stop sends it), and taken between
 * events: no attach is cut short by one.  SIGPIPE is ignored: a report
 * into a closed pipe must not kill bfctl, and with it the command.
 */
static sigset_t end_set, wait_set, old_mask;

static void block_signals(void)
{
	sigemptyset(&end_set);
	sigaddset(&end_set, SIGTERM);
	sigaddset(&end_set, SIGHUP);
	wait_set = end_set;
	sigaddset(&wait_set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &wait_set, &old_mask);
	signal(SIGPIPE, SIG_IGN);
}

/* The next event's pid, -1 with errno, or 0 with *ending the signal. */
static pid_t next_event(int *st, int *ending)
{
	static const struct timespec now;
	pid_t pid;
	int sig;

	for (;;) {
		sig = sigtimedwait(&end_set, NULL, &now);
		if (sig > 0) {
			*ending = sig;
			return 0;
		}
		pid = waitpid(-1, st, __WALL | WNOHANG);
		if (pid)
			return pid;
		sig = sigwaitinfo(&wait_set, NULL);
		if (sig == SIGTERM || sig == SIGHUP) {
			*ending = sig;
			return 0;
		}
	}
}

int run_follow(struct run *r, pid_t leader, bool traced,
	       const struct run_loader *ld, int *status)
{
	struct tracees t = { 0 };
	int rc = EXIT_OK, st, ev, sig, ending = 0;
	struct tracee *e;
	pid_t pid;

	if (!add(&t, leader)) {
		err_msg("run: out of memory");
		*status = run_kill(leader);
		return EXIT_FAIL;
	}
	t.v[0].traced = traced;
	t.v[0].ld = *ld;
	block_signals();
	for (;;) {
		pid = next_event(&st, &ending);
		if (!pid) {
			vlog(r->c, 1, "run: %s: letting the command go, untraced",
			     strsignal(ending));
			detach_all(&t);
			follow_state_forget(0);
			signal(ending, SIG_DFL);
			sigprocmask(SIG_SETMASK, &old_mask, NULL);
			raise(ending);
		}
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			err_msg("run: waiting for the command: %s", strerror(errno));
			rc = EXIT_FAIL;
			break;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			drop(&t, pid);
			follow_state_forget(pid);	/* its pending patterns */
			if (pid == leader)
				break;
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		ev = st >> 16;
		sig = WSTOPSIG(st);
		e = find(&t, pid);
		if (!e || !e->seen) {
			on_new(r, &t, pid);
			continue;
		}
		switch (ev) {
		case PTRACE_EVENT_EXEC:
			if (on_exec(r, &t, pid, &st)) {
				drop(&t, pid);
				if (pid == leader)
					goto ended;
			}
			break;
		case PTRACE_EVENT_STOP:
			/* a group-stop holds until SIGCONT; anything else goes on */
			resume(pid, group_stop(sig) ? PTRACE_LISTEN : PTRACE_CONT, 0);
			break;
		case 0:
			if (sig == SIGTRAP && on_trap(r, &t, pid))
				break;
			resume(pid, PTRACE_CONT, sig);	/* delivered unchanged */
			break;
		default:
			/* fork, vfork, clone: the child shows at its first stop */
			on_fork_event(&t, pid);
			resume(pid, PTRACE_CONT, 0);
		}
	}
ended:
	*status = st;
	if (t.n)
		vlog(r->c, 1, "run: the command ended; %zu tasks of it left running, untraced",
		     t.n);
	detach_all(&t);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	free(t.v);
	return rc;
}
