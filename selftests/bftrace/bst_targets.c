// SPDX-License-Identifier: GPL-2.0
/*
 * bst_targets: the programs the selftests trace (the header's "targets"),
 * and forks of a test that run its own functions as a target.
 * Starting one from build/selftests/targets/ with pipes on its stdin and
 * stdout, waiting for its lines, reading the spinner's progress page,
 * the states of its threads from /proc, and killing and reaping it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bft_selftest.h"
#include "bst_internal.h"

char *bst_target_path(const char *name)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash, *path;

	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	if (asprintf(&path, "%s/targets/%s", exe, name) < 0)
		return NULL;
	return path;
}

static void child_exec(const char *path, const char *const *argv, int in_r,
		       int out_w, int shm_fd)
{
	const char *args[16] = { path };
	size_t i;

	/* The target must not outlive a test that dies. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (dup2(in_r, STDIN_FILENO) < 0 || dup2(out_w, STDOUT_FILENO) < 0)
		_exit(127);
	if (shm_fd >= 0) {
		if (shm_fd == SPIN_SHM_FD)
			fcntl(SPIN_SHM_FD, F_SETFD, 0);
		else if (dup2(shm_fd, SPIN_SHM_FD) < 0)
			_exit(127);
	}
	for (i = 0; argv && argv[i] && i + 2 < ARRAY_SIZE(args); i++)
		args[i + 1] = argv[i];
	args[i + 1] = NULL;
	execv(path, (char *const *)args);
	fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
	_exit(127);
}

int bst_proc_start(struct bst_proc *p, const char *name,
		   const char *const *argv, bool with_shm, int timeout_ms)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, shm_fd = -1, err;
	char *path = bst_target_path(name);

	memset(p, 0, sizeof(*p));
	p->in_fd = p->out_fd = -1;
	if (!path)
		return -ENOMEM;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
		err = -errno;
		goto fail;
	}
	if (with_shm) {
		shm_fd = memfd_create("bft-spin", MFD_CLOEXEC);
		if (shm_fd < 0 || ftruncate(shm_fd, sizeof(struct spin_shm))) {
			err = -errno;
			goto fail;
		}
		p->shm = mmap(NULL, sizeof(struct spin_shm),
			      PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0);
		if (p->shm == MAP_FAILED) {
			p->shm = NULL;
			err = -errno;
			goto fail;
		}
	}
	p->pid = fork();
	if (p->pid < 0) {
		err = -errno;
		p->pid = 0;
		goto fail;
	}
	if (p->pid == 0)
		child_exec(path, argv, in[0], out[1], shm_fd);
	close(in[0]);
	close(out[1]);
	if (shm_fd >= 0)
		close(shm_fd);
	p->in_fd = in[1];
	p->out_fd = out[0];
	/* A target killed by SIGPIPE would hide the real failure. */
	signal(SIGPIPE, SIG_IGN);
	free(path);
	err = bst_proc_wait_line(p, "ready", timeout_ms);
	if (err) {
		LOG("target %s did not get ready: %s\n", name, strerror(-err));
		bst_proc_kill(p);
	}
	return err;
fail:
	LOG("starting target %s: %s\n", name, strerror(-err));
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	if (shm_fd >= 0)
		close(shm_fd);
	if (p->shm)
		munmap(p->shm, sizeof(struct spin_shm));
	p->shm = NULL;
	free(path);
	return err;
}

int bst_proc_send(struct bst_proc *p, char c)
{
	if (p->in_fd < 0)
		return -EBADF;
	return write(p->in_fd, &c, 1) == 1 ? 0 : -errno;
}

int bst_proc_read_line(struct bst_proc *p, char *buf, size_t len,
		       int timeout_ms)
{
	uint64_t deadline = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	for (;;) {
		char *nl = memchr(p->line, '\n', p->line_len);

		if (nl) {
			size_t n = (size_t)(nl - p->line);

			if (len) {
				size_t k = n < len - 1 ? n : len - 1;

				memcpy(buf, p->line, k);
				buf[k] = '\0';
			}
			p->line_len -= n + 1;
			memmove(p->line, nl + 1, p->line_len);
			return 0;
		}
		if (p->line_len == sizeof(p->line))
			p->line_len = 0;	/* an absurd line: drop it */

		uint64_t now = bst_now_ns();
		struct pollfd pfd = { .fd = p->out_fd, .events = POLLIN };
		int r;
		ssize_t n;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)((deadline - now) / 1000000ull) + 1);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		n = read(p->out_fd, p->line + p->line_len,
			 sizeof(p->line) - p->line_len);
		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p->line_len += (size_t)n;
	}
}

int bst_proc_wait_line(struct bst_proc *p, const char *want, int timeout_ms)
{
	uint64_t deadline = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	char got[sizeof(p->line) + 1];

	for (;;) {
		uint64_t now = bst_now_ns();
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = bst_proc_read_line(p, got, sizeof(got),
				       (int)((deadline - now) / 1000000ull) + 1);
		if (r)
			return r;
		if (!strcmp(got, want))
			return 0;
	}
}

int bst_proc_fork(struct bst_proc *p, int (*body)(int in, int out, void *arg),
		  void *arg, int timeout_ms)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err;

	memset(p, 0, sizeof(*p));
	p->in_fd = p->out_fd = -1;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
		err = -errno;
		goto fail;
	}
	p->pid = fork();
	if (p->pid < 0) {
		err = -errno;
		p->pid = 0;
		goto fail;
	}
	if (p->pid == 0) {
		/* The target must not outlive a test that dies. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(in[1]);
		close(out[0]);
		_exit(body(in[0], out[1], arg));
	}
	close(in[0]);
	close(out[1]);
	p->in_fd = in[1];
	p->out_fd = out[0];
	signal(SIGPIPE, SIG_IGN);
	err = bst_proc_wait_line(p, "ready", timeout_ms);
	if (err) {
		LOG("forked target did not get ready: %s\n", strerror(-err));
		bst_proc_kill(p);
	}
	return err;
fail:
	LOG("forking a target: %s\n", strerror(-err));
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	return err;
}

int bst_proc_wait_exit(struct bst_proc *p, int timeout_ms)
{
	uint64_t deadline = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	if (!p->pid)
		return 0;
	for (;;) {
		pid_t r = waitpid(p->pid, &p->status, WNOHANG);

		if (r == p->pid) {
			p->pid = 0;
			return 0;
		}
		if (r < 0)
			return -errno;
		if (bst_now_ns() >= deadline)
			return -ETIMEDOUT;
		bst_sleep_ms(5);
	}
}

void bst_proc_kill(struct bst_proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		kill(p->pid, SIGCONT);
		waitpid(p->pid, &p->status, 0);
		p->pid = 0;
	}
	if (p->in_fd >= 0)
		close(p->in_fd);
	if (p->out_fd >= 0)
		close(p->out_fd);
	p->in_fd = p->out_fd = -1;
	if (p->shm)
		munmap(p->shm, sizeof(struct spin_shm));
	p->shm = NULL;
}

static int proc_state(const char *stat_path, char *state)
{
	char buf[1024], *rp;
	ssize_t n;
	int fd = open(stat_path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: skip to the last ')'. */
	rp = strrchr(buf, ')');
	if (!rp || rp[1] != ' ' || !rp[2])
		return -EIO;
	*state = rp[2];
	return 0;
}

bool bst_proc_alive(const struct bst_proc *p)
{
	char path[64], st;

	if (p->pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", p->pid);
	if (proc_state(path, &st))
		return false;
	return st != 'Z' && st != 'X';
}

uint64_t bst_spin_calls(const struct bst_proc *p)
{
	uint64_t sum = 0;

	if (!p->shm)
		return 0;
	for (unsigned int i = 0; i < SPIN_MAX_THREADS; i++)
		sum += __atomic_load_n(&p->shm->calls[i], __ATOMIC_ACQUIRE);
	return sum;
}

int bst_spin_wait_calls(const struct bst_proc *p, uint64_t more,
			int timeout_ms)
{
	uint64_t deadline = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	uint64_t goal = bst_spin_calls(p) + more;

	while (bst_spin_calls(p) < goal) {
		if (bst_now_ns() >= deadline)
			return -ETIMEDOUT;
		bst_sleep_ms(2);
	}
	return 0;
}

int bst_thread_states(pid_t pid, char *states, size_t cap, size_t *n)
{
	char path[320];
	struct dirent *de;
	DIR *d;

	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid,
			 de->d_name);
		if (proc_state(path, &st))
			continue;	/* the thread just exited */
		if (*n < cap)
			states[*n] = st;
		(*n)++;
	}
	closedir(d);
	return 0;
}

int bst_wait_all_threads(pid_t pid, char want, int timeout_ms)
{
	uint64_t deadline = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	char st[64];
	size_t n;

	for (;;) {
		bool all = true;
		int err = bst_thread_states(pid, st, sizeof(st), &n);

		if (err)
			return err;
		/* a stop under a tracer's PTRACE_LISTEN (bfctl run) is 't' */
		for (size_t i = 0; i < n && i < sizeof(st); i++)
			all &= st[i] == want || (want == 'T' && st[i] == 't');
		if (all && n)
			return 0;
		if (bst_now_ns() >= deadline)
			return -ETIMEDOUT;
		bst_sleep_ms(5);
	}
}
