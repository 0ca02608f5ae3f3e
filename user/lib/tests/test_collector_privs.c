// SPDX-License-Identifier: GPL-2.0
/*
 * bfcollector --user: started as root on a replay, it runs as that user
 * with no capability left (/proc/PID/status of the running collector),
 * and its --output files, made after the switch in a directory under
 * root's private test directory, are all written.  Skipped unless root.
 */
#include <pwd.h>

#include "kselftest_harness.h"

#include "collector_fixture.h"

FIXTURE(privs) {
	char dir[PATH_MAX];
	char replay[PATH_MAX + 16];
	char out[PATH_MAX + 16];
	char log[PATH_MAX + 16];
	struct syn syn;
	pid_t pid;
};

FIXTURE_SETUP(privs)
{
	if (geteuid() != 0)
		SKIP(return, "needs root, to become another user");
	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	snprintf(self->replay, sizeof(self->replay), "%s/replay", self->dir);
	snprintf(self->out, sizeof(self->out), "%s/out", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/log", self->dir);
	ASSERT_EQ(0, mkdir(self->replay, 0700));
	memset(&self->syn, 0, sizeof(self->syn));
	self->syn.o = (struct syn_opts){
		.threads = 2, .cpus = 1, .methods = 8, .steps = 2000,
		.seed = 3,
	};
	ASSERT_EQ(0, syn_generate(&self->syn, self->replay));
	self->pid = 0;
}

FIXTURE_TEARDOWN(privs)
{
	if (geteuid() != 0)
		return;
	if (self->pid > 0) {
		kill(self->pid, SIGTERM);
		wait_exit(self->pid, 5000);
	}
	syn_free(&self->syn);
	remove_tmpdir(self->dir);
}

/* The value of a "Key:\t..." line of /proc/pid/status (at most n). */
static bool status_line(pid_t pid, const char *key, char *val, size_t n)
{
	char path[64], *s, *p;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	s = bft_test_slurp(path, NULL);
	for (p = s; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, strlen(key)) && p[strlen(key)] == ':') {
			p += strlen(key) + 1;
			p += strspn(p, " \t");
			snprintf(val, n, "%.*s", (int)strcspn(p, "\n"), p);
			found = true;
			break;
		}
	free(s);
	return found;
}

/* Wait (at most ms) until the log holds what. */
static bool log_says(const char *log, const char *what, int ms)
{
	int i;

	for (i = 0; i < ms / 20; i++) {
		char *s = bft_test_slurp(log, NULL);
		bool has = s && strstr(s, what);

		free(s);
		if (has)
			return true;
		usleep(20000);
	}
	return false;
}

TEST_F_TIMEOUT(privs, a_replay_runs_as_nobody_without_capabilities, 120)
{
	/* paced to last a few seconds: looked at while it runs */
	char *argv[] = { "bfcollector", "--replay", self->replay, "--output",
			 self->out, "--replay-chunk", "2048",
			 "--replay-delay", "200", "--user", "nobody", NULL };
	struct passwd *pw = getpwnam("nobody");
	char want[64], val[128], path[PATH_MAX + 64], *f;
	int rc;

	ASSERT_NE(NULL, pw);
	self->pid = spawn(argv, self->log);
	ASSERT_GT(self->pid, 0);
	ASSERT_TRUE(log_says(self->log, "running as nobody", 10000));
	snprintf(want, sizeof(want), "%u\t%u\t%u\t%u",
		 (unsigned int)pw->pw_uid, (unsigned int)pw->pw_uid,
		 (unsigned int)pw->pw_uid, (unsigned int)pw->pw_uid);
	ASSERT_TRUE(status_line(self->pid, "Uid", val, sizeof(val)));
	EXPECT_STREQ(want, val);
	snprintf(want, sizeof(want), "%u\t%u\t%u\t%u",
		 (unsigned int)pw->pw_gid, (unsigned int)pw->pw_gid,
		 (unsigned int)pw->pw_gid, (unsigned int)pw->pw_gid);
	ASSERT_TRUE(status_line(self->pid, "Gid", val, sizeof(val)));
	EXPECT_STREQ(want, val);
	ASSERT_TRUE(status_line(self->pid, "Groups", val, sizeof(val)));
	EXPECT_STREQ("", val);
	ASSERT_TRUE(status_line(self->pid, "CapEff", val, sizeof(val)));
	EXPECT_STREQ("0000000000000000", val);
	ASSERT_TRUE(status_line(self->pid, "CapPrm", val, sizeof(val)));
	EXPECT_STREQ("0000000000000000", val);
	ASSERT_TRUE(status_line(self->pid, "CapBnd", val, sizeof(val)));
	EXPECT_STREQ("0000000000000000", val);
	ASSERT_TRUE(status_line(self->pid, "NoNewPrivs", val, sizeof(val)));
	EXPECT_STREQ("1", val);
	rc = wait_exit(self->pid, 60000);
	self->pid = 0;
	EXPECT_EQ(0, rc);
	/* written after the switch, in the directory it made */
	snprintf(path, sizeof(path), "%s/thread-%u.flow", self->out,
		 SYN_TGID + 1);
	f = bft_test_slurp(path, NULL);
	EXPECT_NE(NULL, f);
	free(f);
	snprintf(path, sizeof(path), "%s/ids.properties", self->out);
	f = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, f);
	EXPECT_NE(NULL, strstr(f, "fn_1=1"));
	free(f);
}

TEST_F_TIMEOUT(privs, an_unknown_user_is_refused_before_any_work, 60)
{
	char *argv[] = { "bfcollector", "--replay", self->replay, "--output",
			 self->out, "--user", "no-such-user-bftrace", NULL };

	self->pid = spawn(argv, self->log);
	ASSERT_GT(self->pid, 0);
	EXPECT_EQ(2, wait_exit(self->pid, 20000));	/* usage */
	self->pid = 0;
	EXPECT_TRUE(log_says(self->log, "--user no-such-user-bftrace: no such "
			     "user", 1000));
}

TEST_HARNESS_MAIN
