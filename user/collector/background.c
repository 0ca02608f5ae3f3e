// SPDX-License-Identifier: GPL-2.0
/*
 * --background: the shell gets its prompt back only once the collector
 * records, so that a "bfctl run" typed next is traced from its first
 * call.  With "bfcollector &" it raced: a short program could start, run
 * and end before the collector opened the rings, whose records it then
 * took for an earlier session's and discarded.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector.h"

int coll_background(struct coll *c)
{
	int fds[2], st;
	ssize_t n;
	pid_t pid;
	char b;

	if (pipe2(fds, O_CLOEXEC)) {
		coll_log("--background: %s", strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		coll_log("--background: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -EAGAIN;
	}
	if (pid) {
		/* the parent: a byte says ready; an end, that it exited */
		close(fds[1]);
		do
			n = read(fds[0], &b, 1);
		while (n < 0 && errno == EINTR);
		if (n == 1)
			exit(EXIT_OK);
		if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
			exit(WEXITSTATUS(st));
		exit(EXIT_FATAL);
	}
	close(fds[0]);
	c->ready_fd = fds[1];
	/* the terminal's ^C and hangup are for the shell's jobs, not us */
	setsid();
	return 0;
}

void coll_ready(struct coll *c)
{
	if (c->ready_fd < 0)
		return;
	if (write(c->ready_fd, "r", 1) != 1)
		coll_log("--background: cannot tell the shell: %s",
			 strerror(errno));
	close(c->ready_fd);
	c->ready_fd = -1;
}
