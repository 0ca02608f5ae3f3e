// SPDX-License-Identifier: GPL-2.0
/*
 * bst_owners: processes that own a session, and what the tests watch of
 * them (the header's "session owners").  A child that starts a session and
 * waits to be killed, whether a target is left stopped, whether a port
 * listens, and a tool's log shown as TAP comments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bft_selftest.h"
#include "bst_internal.h"

pid_t bst_child_starter(int (*start)(void *arg), void *arg)
{
	int fds[2];
	char ok = 0;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		if (start(arg))
			_exit(1);
		if (write(fds[1], "y", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], &ok, 1) != 1 || ok != 'y') {
		close(fds[0]);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -1;
	}
	close(fds[0]);
	return pid;
}

int bst_kill_and_reap(pid_t *pid)
{
	int st;

	if (kill(*pid, SIGKILL) || waitpid(*pid, &st, 0) != *pid)
		return -errno;
	*pid = 0;
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : -ECHILD;
}

/* 1 if a thread of pid is stopped, 0 if none, -ESRCH if pid is gone. */
static int stopped(pid_t pid)
{
	char st[64];
	size_t n;

	if (bst_thread_states(pid, st, sizeof(st), &n))
		return -ESRCH;
	for (size_t i = 0; i < n && i < sizeof(st); i++)
		if (st[i] == 'T' || st[i] == 't')
			return 1;
	return 0;
}

bool bst_any_stopped(pid_t pid)
{
	return stopped(pid) == 1;
}

int bst_wait_none_stopped(pid_t pid, int timeout_ms)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int r;

	while ((r = stopped(pid)) == 1) {
		if (bst_now_ns() >= end)
			return -ETIMEDOUT;
		bst_sleep_ms(20);
	}
	return r;	/* 0, or -ESRCH: a target that died is no success */
}

bool bst_port_listening(int port, int timeout_ms)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000;
	struct sockaddr_in a = {
		.sin_family = AF_INET, .sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};

	do {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		bool ok = fd >= 0 &&
			  !connect(fd, (struct sockaddr *)&a, sizeof(a));

		if (fd >= 0)
			close(fd);
		if (ok)
			return true;
		bst_sleep_ms(50);
	} while (bst_now_ns() < end);
	return false;
}

void bst_show_log(const char *path)
{
	char *text = bst_slurp(path);
	char *line, *save = NULL;

	if (!text)
		return;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		fprintf(stderr, "#   | %s\n", line);
	free(text);
}
