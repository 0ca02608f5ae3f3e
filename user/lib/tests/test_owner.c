// SPDX-License-Identifier: GPL-2.0
/*
 * bft_owner: a BPF backend session's owner is a process, not a pid.  A
 * running child is alive; once it exits it is dead already as a zombie,
 * and stays dead when its pid names nothing or another process; an owner
 * counted in another pid namespace cannot be judged from here.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "capture/bft_owner.h"

TEST(self_is_alive)
{
	struct bft_owner o;

	ASSERT_EQ(0, bft_owner_self(&o));
	EXPECT_EQ((uint32_t)getpid(), o.tgid);
	EXPECT_NE(0, o.start);
	EXPECT_NE(0, o.pidns);
	EXPECT_EQ(0, bft_owner_dead(&o));
}

TEST(nobody_is_dead)
{
	struct bft_owner o = { 0 };

	EXPECT_EQ(1, bft_owner_dead(&o));
}

/* A child's identity, read in the child and sent over a pipe. */
static pid_t child_owner(struct bft_owner *o, int *release)
{
	int to[2], from[2];
	pid_t pid;
	char c;

	if (pipe(to) || pipe(from))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct bft_owner me;

		close(to[1]);
		close(from[0]);
		if (bft_owner_self(&me) ||
		    write(from[1], &me, sizeof(me)) != sizeof(me))
			_exit(1);
		/* wait until told to exit */
		_exit(read(to[0], &c, 1) < 0 ? 2 : 0);
	}
	close(to[0]);
	close(from[1]);
	if (pid < 0 || read(from[0], o, sizeof(*o)) != sizeof(*o))
		pid = -1;
	close(from[0]);
	*release = to[1];
	return pid;
}

/* Whether pid is a zombie yet, without reaping it. */
static int wait_zombie(pid_t pid)
{
	siginfo_t si;

	return waitid(P_PID, pid, &si, WEXITED | WNOWAIT);
}

TEST(child_alive_then_zombie_then_gone)
{
	struct bft_owner o;
	int release, st;
	pid_t pid = child_owner(&o, &release);

	ASSERT_LT(0, pid);
	EXPECT_EQ((uint32_t)pid, o.tgid);
	EXPECT_EQ(0, bft_owner_dead(&o));
	EXPECT_FALSE(bft_proc_exited((uint32_t)pid));
	close(release);
	ASSERT_EQ(0, wait_zombie(pid));
	EXPECT_EQ(1, bft_owner_dead(&o)) TH_LOG("a zombie counted as alive");
	EXPECT_TRUE(bft_proc_exited((uint32_t)pid));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(1, bft_owner_dead(&o));
	EXPECT_TRUE(bft_proc_exited((uint32_t)pid));
}

/* The tgid of a live process with another start time: pid reused. */
TEST(reused_pid_is_dead)
{
	struct bft_owner o;

	ASSERT_EQ(0, bft_owner_self(&o));
	o.start += 1;
	EXPECT_EQ(1, bft_owner_dead(&o));
}

TEST(other_pid_namespace_cannot_be_judged)
{
	struct bft_owner o;

	ASSERT_EQ(0, bft_owner_self(&o));
	o.pidns += 1;
	EXPECT_EQ(-1, bft_owner_dead(&o));
}

TEST_HARNESS_MAIN
