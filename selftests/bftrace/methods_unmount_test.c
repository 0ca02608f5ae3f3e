// SPDX-License-Identifier: GPL-2.0
/*
 * A detached probe's method table entry keeps its file's name, not the
 * file: a container whose program was traced can unmount its file system
 * once the probes are gone, without waiting for the next start.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

#define METHOD	61

FIXTURE(unmount) {
	struct bst_session s;
	char dir[64];
	char exe[96];
	pid_t pid;
	bool mounted;
};

FIXTURE_SETUP(unmount)
{
	ASSERT_EQ(0, bst_session_open(&self->s));
	snprintf(self->dir, sizeof(self->dir), "/run/bft-umount.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_EQ(0, mount("bft-umount", self->dir, "tmpfs", 0, "size=16m"));
	self->mounted = true;
	snprintf(self->exe, sizeof(self->exe), "%s/spinner", self->dir);
}

FIXTURE_TEARDOWN(unmount)
{
	if (self->pid > 0) {
		kill(self->pid, SIGKILL);
		waitpid(self->pid, NULL, 0);
	}
	bst_session_close(&self->s);
	if (self->mounted)
		umount2(self->dir, MNT_DETACH);
	rmdir(self->dir);
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	struct stat st;
	ssize_t n = -1;

	if (in < 0 || fstat(in, &st))
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (out >= 0)
		n = sendfile(out, in, NULL, (size_t)st.st_size);
	close(in);
	if (out < 0 || close(out) || n != st.st_size)
		return -EIO;
	return 0;
}

struct gone {
	const char *path;
	int n, same;
};

static int gone_cb(const struct bft_nl_method *m, void *arg)
{
	struct gone *g = arg;

	if (m->method_id == METHOD && (m->flags & BFT_PF_GONE)) {
		g->n++;
		g->same += !strcmp(m->path, g->path);
	}
	return 0;
}

static void traced_then(struct __test_metadata *_metadata,
			FIXTURE_DATA(unmount) *self, bool stop)
{
	char *orig = bst_target_path("spinner");
	struct bst_fn fn = { self->exe, SPIN_FN, METHOD };
	struct gone g = { self->exe, 0, 0 };
	struct bft_nl_probe probe;

	ASSERT_NE(NULL, orig);
	ASSERT_EQ(0, copy_file(orig, self->exe));
	free(orig);
	ASSERT_EQ(0, bst_resolve(&fn, 1, &probe));
	self->pid = fork();
	if (self->pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execl(self->exe, self->exe, "-d", "1000", (char *)NULL);
		_exit(127);
	}
	ASSERT_LT(0, self->pid);
	/* attach retries until the exec has mapped the copy */
	for (int i = 0; i < 100; i++) {
		if (!bft_nl_attach(self->s.nl, (uint32_t)self->pid, &probe, 1, NULL))
			break;
		bst_sleep_ms(20);
	}
	ASSERT_EQ(0, bst_start(&self->s, false));
	/* detached by the controller, whose root names the file as we do */
	ASSERT_EQ(0, stop ? bst_mode(&self->s, BFT_CMD_STOP) :
		  bft_nl_detach(self->s.nl, 0));
	kill(self->pid, SIGKILL);
	ASSERT_EQ(self->pid, waitpid(self->pid, NULL, 0));
	self->pid = 0;
	/* the entry stays, by name */
	ASSERT_EQ(0, bft_nl_get_methods(self->s.nl, gone_cb, &g));
	EXPECT_EQ(1, g.n);
	EXPECT_EQ(1, g.same) TH_LOG("the entry does not name %s", self->exe);
	/* and the file system goes */
	EXPECT_EQ(0, umount2(self->dir, 0)) TH_LOG("umount: %s", strerror(errno));
	self->mounted = umount2(self->dir, 0) && errno != EINVAL;
}

TEST_F_TIMEOUT(unmount, after_stop, 60)
{
	traced_then(_metadata, self, true);
}

TEST_F_TIMEOUT(unmount, after_detach, 60)
{
	traced_then(_metadata, self, false);
}

TEST_HARNESS_MAIN
