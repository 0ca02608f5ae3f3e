// SPDX-License-Identifier: GPL-2.0
/*
 * bst_tools: the tools of build/user that the selftests run (the header's
 * "the tools of build/user").  Finding one next to the tests, spawning it with
 * its output in a log, waiting for its exit, and reading a whole file.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bft_selftest.h"
#include "bst_internal.h"

char *bst_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, len = 0, n;

	if (!f)
		return NULL;
	do {
		if (len + 4096 + 1 > cap) {
			char *b = realloc(buf, cap = 2 * cap + 8192);

			if (!b) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = b;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n);
	fclose(f);
	buf[len] = '\0';
	return buf;
}

char *bst_tool_path(const char *name)
{
	char rel[64];

	/* build/selftests/targets/../../user/<name> = build/user/<name> */
	snprintf(rel, sizeof(rel), "../../user/%s", name);
	return bst_target_path(rel);
}

pid_t bst_spawn(const char *const *argv, const char *log)
{
	char *path = bst_tool_path(argv[0]);
	pid_t pid;

	if (!path)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	free(path);
	return pid;
}

int bst_wait_exit(pid_t pid, int timeout_ms)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) :
			       128 + WTERMSIG(st);
		if (r < 0)
			return -errno;
		if (bst_now_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		bst_sleep_ms(20);
	}
}
