// SPDX-License-Identifier: GPL-2.0
/*
 * bfctl attach, following the libraries a running process loads later:
 * a follower process, forked by attach, that stays for the session.
 *
 * It seizes every thread of the target (PTRACE_SEIZE, new threads with
 * PTRACE_O_TRACECLONE) and puts the loader hook of follow_hook.c on its
 * _dl_debug_state().  At a hook hit the loading thread is held in a
 * signal-delivery stop (of the SIGURG the hook sends it; SIGSTOP where the
 * thread blocks SIGURG), as run_loads.c holds a thread on its breakpoint:
 * after a load, before the new libraries' constructors, the patterns are
 * resolved again and what they select attached; after a dlclose(), the
 * probes on what is no longer mapped are detached.  Other threads run on.
 *
 * Unlike run's breakpoint, nothing of the follower's stays in the target
 * should the follower die: the hook is a uprobe the kernel removes with
 * the follower's files, and the kernel detaches a dead tracer's tracees.
 * A thread it held then, or that the hook had signalled, may get the
 * SIGURG untraced, which it ignores unless it handles SIGURG itself; only a
 * thread that blocks SIGURG gets a SIGSTOP, which would then stop the
 * process until SIGCONT.
 *
 * It ends, letting every thread go, when the target exits or execs, on
 * SIGTERM, SIGINT or SIGHUP (detach and stop send SIGTERM), and when it
 * sees the session end without it: probes of the target it did not
 * detach itself gone, or the mode leaving a session.  It looks once a
 * second, and before every attach.  Its messages go to the log beside its
 * state file (follow_state.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "follow.h"
#include "output.h"
#include "run.h"

struct follower {
	struct ctl *c;
	struct run r;
	struct run_loader ld;
	struct follow_hook hook;
	struct follow_state st;
	pid_t tgid;
	pid_t *tids;
	size_t n, cap;
	uint32_t live;		/* the target's attached probes at the last look */
	bool session;		/* a session ran at the last look */
};

static pid_t *find(struct follower *f, pid_t tid)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->tids[i] == tid)
			return &f->tids[i];
	return NULL;
}

static int add(struct follower *f, pid_t tid)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		pid_t *v = realloc(f->tids, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->tids = v;
		f->cap = cap;
	}
	f->tids[f->n++] = tid;
	return 0;
}

static void drop(struct follower *f, pid_t tid)
{
	pid_t *p = find(f, tid);

	if (p)
		*p = f->tids[--f->n];
}

/* A number from /proc/PID/status ("Tgid:", "TracerPid:"); -1 if none. */
static int status_field(pid_t pid, const char *key)
{
	char fn[64], line[256];
	size_t len = strlen(key);
	int v = -1;
	FILE *fp;

	snprintf(fn, sizeof(fn), "/proc/%d/status", (int)pid);
	fp = fopen(fn, "re");
	while (fp && fgets(line, sizeof(line), fp))
		if (!strncmp(line, key, len) && sscanf(line + len, "%d", &v) == 1)
			break;
	if (fp)
		fclose(fp);
	return v;
}

/* Every thread, those started meanwhile included. */
static int seize_all(struct follower *f)
{
	const long opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC;
	char dir[64];
	struct dirent *e;
	bool more = true;
	DIR *d;
	int rc = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)f->tgid);
	while (more && !rc) {
		more = false;
		d = opendir(dir);
		if (!d)
			return -errno;
		while (!rc && (e = readdir(d))) {
			pid_t tid = (pid_t)atoi(e->d_name);

			if (tid <= 0 || find(f, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)opts)) {
				/* ended, or started by a seized thread: ours */
				if (errno == EPERM &&
				    status_field(tid, "TracerPid:") == getpid())
					rc = add(f, tid);
				else if (errno != ESRCH)
					rc = -errno;
				continue;
			}
			rc = add(f, tid);
			more = true;
		}
		closedir(d);
	}
	return rc;
}

/* The target's probes, not counting those its dlclose()s left GONE. */
static int count_live(const struct bft_nl_method *m, void *arg)
{
	struct follower *f = arg;

	if (m->tgid == (uint32_t)f->tgid && !(m->flags & BFT_PF_GONE))
		f->live++;
	return 0;
}

/*
 * A look at the backend, c connected: has the session ended without the
 * follower?  Either way, what it sees is what the next look compares with.
 */
static bool session_over(struct follower *f)
{
	struct bft_nl_status st;
	uint32_t before = f->live;
	bool session, over;

	if (ctl_get_status(f->c, &st))
		return false;	/* said by the caller's next attach, if any */
	session = st.mode == BFT_MODE_TRACING || st.mode == BFT_MODE_PAUSED ||
		  st.mode == BFT_MODE_SUSPENDED;
	/* a stop left behind (shutting_down until the next start) is no end */
	over = f->session && !session;
	f->live = 0;
	if (ctl_get_methods(f->c, count_live, f))
		f->live = before;
	over = over || f->live < before;
	/* a process that ended lost its probes: its exit is said */
	if (over && !bft_proc_exited((uint32_t)f->tgid))
		vlog(f->c, 1, "attach: the session of process %d ended (%u of its %u probes left, mode %s)",
		     (int)f->tgid, f->live, before, bft_mode_name(st.mode));
	f->session = session;
	bft_nl_status_free(&st);
	return over;
}

/* Connect quietly: the follower looks every second. */
static int connect_quiet(struct follower *f)
{
	unsigned int v = f->c->verbose;
	int rc;

	f->c->verbose = 0;
	rc = ctl_connect(f->c, BFT_FEAT_ENTRY);
	f->c->verbose = v;
	if (!rc)
		ctl_attach_persist(f->c);
	return rc;
}

static void save_state(struct follower *f)
{
	int rc = follow_state_write(&f->st);

	if (rc)
		err_msg("attach: writing the state of the follower of process %d in %s: %s",
			(int)f->tgid, follow_dir(), strerror(-rc));
}

/* Resolve the patterns again: at the start, and after each load. */
static int resolve(struct follower *f)
{
	size_t searched = f->r.searched;
	int rc = run_attach(&f->r, f->tgid);

	f->r.searched = searched;
	return rc == EXIT_NOMATCH ? EXIT_OK : rc;
}

static sigset_t end_set, wait_set;

/* Has detach, stop or a signal asked the follower to end? */
static bool ending(void)
{
	sigset_t pending;

	sigpending(&pending);
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&end_set, sig) && sigismember(&pending, sig))
			return true;
	return false;
}

/* $BFT_FOLLOW_HOLD_MS: a test's pause in every hold; 0 else. */
static long hold_ms;

/* tid is held on the hook: returns true when following should end. */
static bool on_hook(struct follower *f, pid_t tid)
{
	bool adding = f->ld.adding, over;
	int rc;

	if (!run_loads_due(tid, &f->ld)) {
		run_loads_state(&f->r, tid, f->tgid, &f->ld);	/* ADD or DELETE */
		return false;
	}
	vlog(f->c, 1, "attach: process %d, thread %d: held on the loader hook",
	     (int)f->tgid, (int)tid);
	if (hold_ms)	/* the tests' window to kill the follower in a hold */
		nanosleep(&(struct timespec){ hold_ms / 1000, hold_ms % 1000 * 1000000L }, NULL);
	if (connect_quiet(f)) {
		err_msg("attach: process %d changed its libraries, and the backend cannot be reached: not followed",
			(int)f->tgid);
		f->ld.adding = f->ld.deleting = false;
		return false;
	}
	over = session_over(f) || ending();
	if (!over) {
		rc = run_loads_state(&f->r, tid, f->tgid, &f->ld);
		f->st.loads += adding;
		if (rc == RUN_LOADS_LOST)
			over = true;	/* every probe of the process went */
		f->live = 0;
		ctl_get_methods(f->c, count_live, f);
		save_state(f);
	}
	ctl_close(f->c);
	return over;
}

static bool group_stop(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* A ptrace request on a thread that may have ended meanwhile. */
static void resume(pid_t tid, int req, int sig)
{
	if (ptrace(req, tid, NULL, (void *)(long)sig) && errno != ESRCH)
		err_msg("attach: resuming thread %d: %s", (int)tid, strerror(errno));
}

/*
 * One event.  Returns true when following should end: the target ended
 * or exec'd, or the session is over.
 */
static bool on_event(struct follower *f, pid_t pid, int st)
{
	int ev = st >> 16, sig;

	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		drop(f, pid);
		follow_hook_forget(&f->hook, pid);
		return pid == f->tgid || !f->n;
	}
	if (!WIFSTOPPED(st))
		return false;
	sig = WSTOPSIG(st);
	if (!find(f, pid)) {
		/* a new thread stays; a process that clone() made goes */
		if (status_field(pid, "Tgid:") == f->tgid && !add(f, pid))
			resume(pid, PTRACE_CONT, 0);
		else
			resume(pid, PTRACE_DETACH, 0);
		return false;
	}
	switch (ev) {
	case PTRACE_EVENT_EXEC:
		vlog(f->c, 1, "attach: process %d exec'd: its new program is not followed",
		     (int)f->tgid);
		/* the other threads are gone, this one is stopped: let go */
		follow_hook_lift(&f->hook);
		resume(pid, PTRACE_DETACH, 0);
		f->n = 0;
		return true;
	case PTRACE_EVENT_STOP:
		resume(pid, group_stop(sig) ? PTRACE_LISTEN : PTRACE_CONT, 0);
		return false;
	case 0:
		if ((sig == SIGURG || sig == SIGSTOP) && follow_hook_took(&f->hook, pid, sig)) {
			bool over = on_hook(f, pid);

			resume(pid, PTRACE_CONT, 0);
			return over;
		}
		resume(pid, PTRACE_CONT, sig);	/* delivered unchanged */
		return false;
	default:
		resume(pid, PTRACE_CONT, 0);	/* a clone: the thread shows */
		return false;
	}
}

/*
 * Let every thread go: the hook out first, so that no stop is sent from
 * then on; a thread the hook sent one takes it here, not after.
 */
static void let_go(struct follower *f)
{
	const struct timespec nap = { 0, 10 * 1000 * 1000 };
	int st, ev, sig, naps = 0;
	pid_t pid;

	follow_hook_lift(&f->hook);
	for (size_t i = 0; i < f->n; i++)
		ptrace(PTRACE_INTERRUPT, f->tids[i], NULL, NULL);
	/* 10 s at most: what is left then goes when the follower exits */
	while (f->n && naps < 1000) {
		pid = waitpid(-1, &st, __WALL | WNOHANG);
		if (!pid) {
			nanosleep(&nap, NULL);
			naps++;
			continue;
		}
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!WIFSTOPPED(st)) {
			drop(f, pid);
			continue;
		}
		ev = st >> 16;
		sig = ev ? 0 : WSTOPSIG(st);
		if (find(f, pid) && !ev && (sig == SIGURG || sig == SIGSTOP) &&
		    follow_hook_took(&f->hook, pid, sig)) {
			sig = 0;
		} else if (find(f, pid) && follow_hook_owes(&f->hook, pid)) {
			/* the hook's signal comes next: take it before letting go */
			resume(pid, PTRACE_CONT, sig);
			continue;
		}
		ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)sig);
		drop(f, pid);
	}
	follow_hook_free(&f->hook);
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The next event's pid; 0 once the time for a look has come; -1 to end. */
static pid_t next_event(int *st, int64_t look_at)
{
	static const struct timespec now;
	struct timespec wait;
	int64_t left;
	pid_t pid;
	int sig;

	for (;;) {
		if (sigtimedwait(&end_set, NULL, &now) > 0)
			return -1;
		pid = waitpid(-1, st, __WALL | WNOHANG);
		if (pid > 0 || (pid < 0 && errno != EINTR))
			return pid > 0 ? pid : -1;
		left = look_at - now_ms();
		if (left <= 0)
			return 0;
		wait = (struct timespec){ left / 1000, left % 1000 * 1000000L };
		/* every stop of a tracee sends SIGCHLD: one more waitpid() */
		sig = sigtimedwait(&wait_set, NULL, &wait);
		if (sig > 0 && sig != SIGCHLD)
			return -1;
	}
}

/* Looks in a row that could not reach the backend before the follower gives up. */
#define LOOKS_MISSED_MAX 3

static void follow_loop(struct follower *f)
{
	int64_t look_at = now_ms() + 1000;
	int st, missed = 0;
	bool over = false;
	pid_t pid;

	while (!over) {
		pid = next_event(&st, look_at);
		if (pid > 0) {
			over = on_event(f, pid, st);
			continue;
		}
		if (pid < 0)
			break;
		look_at = now_ms() + 1000;
		if (connect_quiet(f)) {
			/* bftrace.ko unloaded, the BPF session's pins removed */
			over = ++missed >= LOOKS_MISSED_MAX;
			if (over)
				err_msg("attach: the backend cannot be reached: following process %d ends",
					(int)f->tgid);
			continue;
		}
		missed = 0;
		over = session_over(f);
		ctl_close(f->c);
	}
	let_go(f);
}

/* Stdio to the log, for the rest of the follower's life. */
static void to_log(pid_t tgid)
{
	char fn[4200];
	int fd, nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	time_t t = time(NULL);

	snprintf(fn, sizeof(fn), "%s/%d.log", follow_dir(), (int)tgid);
	fd = open(fn, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	fflush(stdout);
	fflush(stderr);
	dup2(nul, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
	close(nul);
	fprintf(stderr, "bfctl: follower %d of process %d, from %s", (int)getpid(),
		(int)tgid, ctime(&t));
}

/*
 * A load or unload under way as the hook went in: its RT_ADD or RT_DELETE
 * passed unseen, its RT_CONSISTENT is still to come.
 */
static void preset_state(struct follower *f)
{
	char fn[64];
	int32_t state = -1;
	int fd;

	snprintf(fn, sizeof(fn), "/proc/%d/mem", (int)f->tgid);
	fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pread(fd, &state, sizeof(state),
			     (off_t)(f->ld.r_debug + R_STATE_OFFSET)) == sizeof(state)) {
		f->ld.adding = state == RT_ADD;
		f->ld.deleting = state == RT_DELETE;
	}
	if (fd >= 0)
		close(fd);
}

/*
 * The child: seize, hook, catch up, report to the parent through ready:
 * "" once it follows, "L" when its attach failed and took every probe of
 * the process with it; nothing when it could not start.
 */
static int follower_main(struct follower *f, int ready)
{
	bool lost = false;
	char err[1024];
	int rc;

	rc = seize_all(f);
	if (rc) {
		int tracer = status_field(f->tgid, "TracerPid:");

		if (bft_proc_exited((uint32_t)f->tgid)) {
			err_msg("attach: process %d exited", (int)f->tgid);
			return EXIT_TARGET;
		}
		if (rc == -EPERM && tracer > 0 && tracer != getpid())
			err_msg("attach: process %d is traced by process %d (a debugger?): later loads are not followed",
				(int)f->tgid, tracer);
		else
			err_msg("attach: tracing process %d: %s; later loads are not followed",
				(int)f->tgid, strerror(-rc));
		return rc == -EPERM ? EXIT_PERM : EXIT_FAIL;
	}
	rc = follow_hook_arm(&f->hook, f->tgid, err, sizeof(err));
	if (rc) {
		let_go(f);
		if (bft_proc_exited((uint32_t)f->tgid)) {
			err_msg("attach: process %d exited", (int)f->tgid);
			return EXIT_TARGET;
		}
		err_msg("attach: process %d: no hook on its loader: %s; later loads are not followed",
			(int)f->tgid, err);
		return EXIT_FAIL;
	}
	f->ld.r_debug = f->hook.r_debug;
	preset_state(f);
	/* what it loaded since attach looked, and the baseline of the looks */
	rc = connect_quiet(f);
	if (!rc) {
		unsigned int v = f->c->verbose;

		session_over(f);
		f->c->verbose = 0;	/* attach said it all */
		rc = resolve(f);
		f->c->verbose = v;
		f->live = 0;
		if (!ctl_get_methods(f->c, count_live, f) && rc && !f->live)
			lost = true;	/* probes_attach() rolled the process back */
		ctl_close(f->c);
	}
	if (rc) {
		if (lost && write(ready, "L", 1) != 1)
			rc = EXIT_FAIL;
		let_go(f);
		return rc;
	}
	save_state(f);
	to_log(f->tgid);
	if (f->c->verbose < 1)
		f->c->verbose = 1;	/* the log tells what happened */
	if (write(ready, "", 1) != 1)
		vlog(f->c, 1, "attach: the attach that started the follower is gone");
	close(ready);
	follow_loop(f);
	follow_state_remove(f->tgid);
	vlog(f->c, 1, "attach: follower of process %d ends", (int)f->tgid);
	return EXIT_OK;
}

static void close_others(int keep)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fd;

	while (d && (e = readdir(d))) {
		fd = atoi(e->d_name);
		if (fd > STDERR_FILENO && fd != keep && fd != dirfd(d))
			close(fd);
	}
	if (d)
		closedir(d);
}

/* An earlier follower's patterns join these; it is ended. */
static void take_over(struct ctl *c, struct probe_opts *o, pid_t pid,
		      struct follow_state *old)
{
	const struct strlist *from[2] = { &old->patterns, &old->usdt };
	struct strlist *to[2] = { &o->patterns, &o->usdt };

	if (follow_state_read(pid, old))
		return;
	if (!follow_state_live(old) || old->regex != o->regex) {
		if (follow_state_live(old))
			err_msg("attach: the patterns of the earlier follower of process %d are %s, these are not: they are no longer followed",
				(int)pid, old->regex ? "regexes" : "globs");
		follow_end(c, pid);
		return;
	}
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < from[k]->n; i++) {
			size_t j = 0;

			while (j < to[k]->n && strcmp(to[k]->v[j], from[k]->v[i]))
				j++;
			if (j == to[k]->n)
				strlist_push(to[k], from[k]->v[i]);
		}
	}
	vlog(c, 1, "attach: process %d was followed by bfctl %d: its patterns join these",
	     (int)pid, (int)old->follower.tgid);
	follow_end(c, pid);
}

int follow_start(struct ctl *c, struct probe_opts *o, pid_t pid)
{
	struct follower f = { .c = c, .tgid = pid };
	struct follow_state old = { 0 };
	int p[2], st, rc;
	pid_t child;
	char b = 1;

	follow_sweep();
	take_over(c, o, pid, &old);
	if (pipe2(p, O_CLOEXEC)) {
		err_msg("attach: %s; later loads are not followed", strerror(errno));
		follow_state_free(&old);
		return EXIT_FAIL;
	}
	fflush(NULL);
	child = fork();
	if (!child) {
		close(p[0]);
		/* nothing of the caller's kept open or busy: a pipe it reads
		 * to its end, the directory it was started in */
		close_others(p[1]);
		setsid();
		prctl(PR_SET_NAME, "bfctl-follow");	/* as ps and top show it */
		if (chdir("/"))
			_exit(EXIT_FAIL);
		sigemptyset(&end_set);
		sigaddset(&end_set, SIGTERM);
		sigaddset(&end_set, SIGINT);
		sigaddset(&end_set, SIGHUP);
		wait_set = end_set;
		sigaddset(&wait_set, SIGCHLD);
		sigprocmask(SIG_BLOCK, &wait_set, NULL);
		signal(SIGPIPE, SIG_IGN);
		o->pending = &f.st.pending;
		o->quiet_nomatch = true;
		f.r = (struct run){ .c = c, .o = o, .follow = true, .persist = true,
				    .started = true };
		f.st = (struct follow_state){
			.tgid = pid, .regex = o->regex,
			.patterns = o->patterns, .usdt = o->usdt,
		};
		bft_owner_self(&f.st.follower);
		snprintf(f.st.backend, sizeof(f.st.backend), "%s", ctl_backend(c)->name);
		hold_ms = getenv("BFT_FOLLOW_HOLD_MS") ? atol(getenv("BFT_FOLLOW_HOLD_MS")) : 0;
		rc = follower_main(&f, p[1]);
		_exit(rc);
	}
	close(p[1]);
	follow_state_free(&old);
	if (child < 0) {
		err_msg("attach: fork: %s; later loads are not followed", strerror(errno));
		close(p[0]);
		return EXIT_FAIL;
	}
	rc = read(p[0], &b, 1) == 1 && !b ? EXIT_OK : EXIT_FAIL;
	close(p[0]);
	if (rc) {
		if (waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st))
			rc = WEXITSTATUS(st);
		return b == 'L' ? -rc : rc;
	}
	vlog(c, 1, "attach: later loads of process %d are followed by bfctl %d (log %s/%d.log), until detach or stop",
	     (int)pid, (int)child, follow_dir(), (int)pid);
	return EXIT_OK;
}
