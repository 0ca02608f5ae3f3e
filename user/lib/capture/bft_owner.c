// SPDX-License-Identifier: GPL-2.0
/*
 * The owner of a BPF backend session and its guard (bft_owner.h).  The
 * module ends a session from the kernel when its starter's socket is
 * released; BPF links have no such owner, so a process of ours watches
 * the starter and ends the session for it (docs/bpf-backend.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/bft_owner.h"

/* How often the guard asks whether it still has a session to guard. */
#define GUARD_TICK_MS	1000
/* Without pidfd_open (Linux < 5.3) it polls the owner's /proc entry. */
#define GUARD_POLL_MS	50

static int own_pidns(uint64_t *ino)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st))
		return -errno;
	*ino = st.st_ino;
	return 0;
}

/*
 * State and start time of tgid from /proc/<tgid>/stat.  The command name
 * (field 2) may hold spaces and parentheses: the fields after it start
 * after the last ')'.
 */
static int proc_stat(uint32_t tgid, char *state, uint64_t *start)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", tgid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	p += 2;
	*state = *p;
	/* field 3 is the state, the start time is field 22 */
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	*start = strtoull(p, NULL, 10);
	return 0;
}

bool bft_proc_exited(uint32_t tgid)
{
	uint64_t start;
	char state;
	int err = proc_stat(tgid, &state, &start);

	if (err)	/* unreadable or unparsable: not known to be gone */
		return err == -ENOENT || err == -ESRCH;
	return state == 'Z' || state == 'X';
}

int bft_owner_self(struct bft_owner *o)
{
	char state;
	int err;

	memset(o, 0, sizeof(*o));
	o->tgid = (uint32_t)getpid();
	err = proc_stat(o->tgid, &state, &o->start);
	if (!err)
		err = own_pidns(&o->pidns);
	return err;
}

int bft_owner_of(uint32_t tgid, struct bft_owner *o)
{
	char state;
	int err;

	memset(o, 0, sizeof(*o));
	o->tgid = tgid;
	err = proc_stat(tgid, &state, &o->start);
	if (err == -ENOENT || (!err && (state == 'Z' || state == 'X')))
		return -ESRCH;
	if (!err)
		err = own_pidns(&o->pidns);
	return err;
}

int bft_owner_dead(const struct bft_owner *o)
{
	uint64_t ns, start;
	char state;

	if (!o->tgid)
		return 1;
	if (own_pidns(&ns) || ns != o->pidns)
		return -1;
	if (proc_stat(o->tgid, &state, &start))
		return 1;
	/* a zombie has released everything but its pid */
	return start != o->start || state == 'Z' || state == 'X';
}

/* Alone: a session of our own, no terminal, no signal handler or
 * descriptor of the process we were forked from. */
static void guard_detach(void)
{
	sigset_t none;
	int fd;

	setsid();
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);	/* SIGKILL, SIGSTOP: EINVAL, fine */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
	}
	/* a pipe inherited from a test harness would never see EOF */
	close_range(3, ~0U, 0);
	/* so that no mount stays busy; staying where we are is harmless */
	(void)!chdir("/");
	prctl(PR_SET_NAME, "bft-bpf-guard");
}

static void guard_run(const struct bft_owner *o, bool (*watching)(void *),
		      void (*died)(void *), void *arg)
{
	int pfd = (int)syscall(SYS_pidfd_open, (pid_t)o->tgid, 0);
	int tick = pfd >= 0 ? GUARD_TICK_MS : GUARD_POLL_MS, waited = 0;

	/* the pidfd names whatever has the tgid now: check it is o */
	while (bft_owner_dead(o) == 0) {
		struct pollfd p = { .fd = pfd, .events = POLLIN };

		if (pfd >= 0) {
			if (poll(&p, 1, tick) > 0)
				break;	/* readable: o exited */
		} else {
			struct timespec ts = { 0, tick * 1000000L };

			nanosleep(&ts, NULL);
		}
		waited += tick;
		if (waited >= GUARD_TICK_MS) {
			waited = 0;
			if (!watching(arg))
				return;
		}
	}
	died(arg);
}

pid_t bft_owner_guard(const struct bft_owner *o, bool (*watching)(void *),
		      void (*died)(void *), void *arg)
{
	int fds[2], st;
	pid_t mid, guard = 0;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	mid = fork();
	if (mid < 0) {
		int err = -errno;

		close(fds[0]);
		close(fds[1]);
		return err;
	}
	if (mid == 0) {
		/* a grandchild: init (or a subreaper) reaps it, not us */
		pid_t g = fork();

		if (g == 0) {
			guard_detach();
			guard_run(o, watching, died, arg);
			_exit(0);
		}
		_exit(write(fds[1], &g, sizeof(g)) == sizeof(g) ? 0 : 1);
	}
	close(fds[1]);
	if (read(fds[0], &guard, sizeof(guard)) != sizeof(guard))
		guard = 0;
	close(fds[0]);
	while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
		;
	return guard > 0 ? guard : -ECHILD;
}
