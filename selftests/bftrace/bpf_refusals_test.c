// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF backend's refusals: each with its errno, a text that says what
 * to do, and bfctl's exit code for it (bfctl.8).  Where this machine
 * cannot run BPF at all, there is nothing to refuse: the tests skip.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

/* Run bfctl with args, stdout and stderr to /dev/null; its exit status. */
static int bfctl(const char *const *args)
{
	char *path = bst_target_path("../../user/bfctl");
	const char *argv[16] = { "bfctl" };
	int n = 1, st;
	pid_t pid;

	if (!path)
		return -1;
	for (; *args && n < 15; args++)
		argv[n++] = *args;
	pid = fork();
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout) ||
		    !freopen("/dev/null", "w", stderr))
			_exit(126);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	free(path);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Skip unless this machine runs the backend (as root, with bpffs). */
#define NEED_BPF()							\
	do {								\
		char why_[512];						\
		struct bft_bpf *b_;					\
		int r_;							\
									\
		setenv("BFT_BPF_PIN_DIR", "/sys/fs/bpf/bftrace-refusals", 1); \
		r_ = bst_bpf_open(&b_, why_, sizeof(why_));		\
		if (r_ > 0)						\
			SKIP(return, "BPF backend: %s", why_);		\
		ASSERT_EQ(0, r_) TH_LOG("%s", why_);			\
		bst_bpf_close(b_);					\
	} while (0)

/* Without CAP_BPF/CAP_PERFMON/CAP_SYS_ADMIN: EPERM, exit 7. */
TEST(no_capabilities_is_eperm_and_exit_7)
{
	char why[512] = "";

	NEED_BPF();
	/*
	 * This test's own process (the harness forks one per test) becomes
	 * nobody: that drops every capability, and bfctl exec'd from it
	 * gets none back, as it would from root.
	 */
	ASSERT_EQ(0, setresgid(65534, 65534, 65534));
	ASSERT_EQ(0, setresuid(65534, 65534, 65534));
	EXPECT_EQ(-EPERM, bft_bpf_probe(why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "CAP_BPF")) TH_LOG("%s", why);
	EXPECT_EQ(7, bfctl((const char *const[]){ "--backend", "bpf", "caps",
						  NULL }));
}

/* The pins must go on a BPF filesystem: ENODEV, a mount hint, exit 3. */
TEST(pin_dir_off_bpffs_is_enodev_and_exit_3)
{
	char why[512] = "";

	NEED_BPF();
	setenv("BFT_BPF_PIN_DIR", "/tmp/bftrace-not-bpffs", 1);
	EXPECT_EQ(-ENODEV, bft_bpf_probe(why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "mount -t bpf")) TH_LOG("%s", why);
	EXPECT_EQ(3, bfctl((const char *const[]){ "--backend", "bpf", "status",
						  NULL }));
}

/* Opening without creating, where there is no session: ENOENT. */
TEST(no_session_is_enoent)
{
	struct bft_bpf *b = NULL;
	char why[512] = "";

	NEED_BPF();
	EXPECT_FALSE(bft_bpf_loaded());
	EXPECT_EQ(-ENOENT, bft_bpf_open(&b, false, why, sizeof(why)));
	EXPECT_EQ(NULL, b);
	EXPECT_NE(NULL, strstr(why, "no BPF session")) TH_LOG("%s", why);
}

/* A backend bfctl does not know is a usage error, exit 2. */
TEST(unknown_backend_is_exit_2)
{
	EXPECT_EQ(2, bfctl((const char *const[]){ "--backend", "dtrace",
						  "caps", NULL }));
}

/* A second thread: says its id, then waits to be cancelled. */
static void *park(void *arg)
{
	__atomic_store_n((pid_t *)arg, gettid(), __ATOMIC_RELEASE);
	for (;;)
		pause();
	return NULL;
}

/* The batch checks of the module, before anything is attached. */
TEST(bad_batches_are_refused_whole)
{
	struct bft_bpf *b;
	char why[512], *exe;
	struct bft_nl_probe p[2] = {
		{ .path = "/", .offset = 0, .method_id = 1,
		  .flags = BFT_PF_ALL },
		{ .path = NULL, .offset = 0, .method_id = 2,
		  .flags = BFT_PF_ALL },
	};
	int res[2];

	NEED_BPF();
	ASSERT_EQ(0, bst_bpf_open(&b, why, sizeof(why)));
	exe = bst_target_path("calltree");
	ASSERT_NE(NULL, exe);
	/* a directory */
	p[1].path = exe;
	EXPECT_EQ(-EISDIR, bft_bpf_attach(b, getpid(), p, 2, res));
	EXPECT_EQ(-EISDIR, res[1]) TH_LOG("every probe gets the batch's errno");
	/* a file that does not exist */
	p[0].path = "/nonexistent/bftrace";
	EXPECT_EQ(-ENOENT, bft_bpf_attach(b, getpid(), p, 2, res));
	/* past the end of the file */
	p[0].path = exe;
	p[0].offset = 1ULL << 40;
	EXPECT_EQ(-ERANGE, bft_bpf_attach(b, getpid(), p, 2, res));
	/* not ELF */
	p[0].path = "/proc/self/status";
	p[0].offset = 0;
	EXPECT_EQ(-ENOEXEC, bft_bpf_attach(b, getpid(), p, 2, res));
	/* the same method id twice */
	p[0].path = exe;
	p[1].method_id = 1;
	EXPECT_EQ(-EEXIST, bft_bpf_attach(b, getpid(), p, 2, res));
	/* no such process */
	p[1].method_id = 2;
	EXPECT_EQ(-ESRCH, bft_bpf_attach(b, 0x3ffffff0, p, 2, res));
	/* a thread, not a process: the programs would drop its every hit */
	{
		pthread_t th;
		pid_t tid = 0;

		ASSERT_EQ(0, pthread_create(&th, NULL, park, &tid));
		while (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE))
			usleep(1000);
		EXPECT_EQ(-ESRCH, bft_bpf_attach(b, tid, p, 2, res));
		EXPECT_TRUE(strstr(bft_bpf_errmsg(b), "thread"))
			TH_LOG("%s", bft_bpf_errmsg(b));
		pthread_cancel(th);
		pthread_join(th, NULL);
	}
	/* nothing attached by any of it */
	{
		struct bft_nl_status st;

		ASSERT_EQ(0, bft_bpf_get_status(b, &st));
		EXPECT_EQ(0, st.nr_probes);
		EXPECT_EQ(0, st.nr_targets);
		bft_nl_status_free(&st);
	}
	free(exe);
	bst_bpf_close(b);
}

/* Mode transitions and options follow the module's rules. */
TEST(modes_and_options_as_the_module)
{
	struct bft_bpf *b;
	struct bft_nl_opt o;
	char why[512];
	uint8_t mode;

	NEED_BPF();
	ASSERT_EQ(0, bst_bpf_open(&b, why, sizeof(why)));
	EXPECT_EQ(-EINVAL, bft_bpf_mode_cmd(b, BFT_CMD_UNPAUSE, &mode));
	EXPECT_NE(NULL, strstr(bft_bpf_errmsg(b), "initializing"));
	EXPECT_EQ(-ENOENT, bft_bpf_get_opt(b, 99, &o));
	EXPECT_EQ(-EOPNOTSUPP, bft_bpf_get_opt(b, BFT_OPT_OVERWRITE, &o));
	EXPECT_EQ(-ERANGE, bft_bpf_set_opt(b, BFT_OPT_BUF_SIZE, 5000, &o));
	ASSERT_EQ(0, bft_bpf_set_opt(b, BFT_OPT_BUF_SIZE, 1 << 16, &o));
	EXPECT_EQ(1 << 16, o.value);
	ASSERT_EQ(0, bft_bpf_mode_cmd(b, BFT_CMD_START, &mode));
	EXPECT_EQ(BFT_MODE_TRACING, mode);
	EXPECT_EQ(-EBUSY, bft_bpf_set_opt(b, BFT_OPT_TIME_RES_NS, 10, &o));
	EXPECT_EQ(-EINVAL, bft_bpf_mode_cmd(b, BFT_CMD_START, &mode));
	ASSERT_EQ(0, bft_bpf_mode_cmd(b, BFT_CMD_SUSPEND, &mode));
	EXPECT_EQ(-EINVAL, bft_bpf_mode_cmd(b, BFT_CMD_PAUSE, &mode));
	ASSERT_EQ(0, bft_bpf_mode_cmd(b, BFT_CMD_UNSUSPEND, &mode));
	ASSERT_EQ(0, bft_bpf_mode_cmd(b, BFT_CMD_STOP, &mode));
	EXPECT_EQ(BFT_MODE_SHUTTING_DOWN, mode);
	bst_bpf_close(b);
}

TEST_HARNESS_MAIN
