// SPDX-License-Identifier: GPL-2.0
/*
 * A session belongs to the socket that started it.  Kill -9 of whatever
 * started tracing (a plain process, bfctl run, bfcollector) while its
 * target is paused: the target runs on, nothing stays attached.  A
 * session started with BFT_A_PERSIST outlives its starter.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

#define SPIN_METHOD	21

FIXTURE(session) {
	struct bst_session s;
	struct bst_proc target;
	pid_t starter;		/* a child of ours, killed in teardown */
	pid_t orphan;		/* a target that is not our child */
	char dir[64];
};

FIXTURE_SETUP(session)
{
	ASSERT_EQ(0, bst_session_open(&self->s));
	snprintf(self->dir, sizeof(self->dir), "/tmp/bft-session.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
}

FIXTURE_TEARDOWN(session)
{
	char cmd[96];
	int st;

	if (self->starter > 0) {
		kill(self->starter, SIGKILL);
		waitpid(self->starter, &st, 0);
	}
	if (self->orphan > 0) {
		kill(self->orphan, SIGCONT);
		kill(self->orphan, SIGKILL);
	}
	bst_session_close(&self->s);
	bst_proc_kill(&self->target);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	if (system(cmd))
		fprintf(stderr, "# could not remove %s\n", self->dir);
}

/* In a child: its own control socket, tracing started from it. */
static int start_own(void *persist)
{
	struct bft_nl *nl;

	return bft_nl_open(&nl, NULL, 0) || bft_nl_start(nl, *(bool *)persist, NULL);
}

static pid_t start_from_child(bool persist)
{
	return bst_child_starter(start_own, &persist);
}

static int wait_status(struct bst_session *s, int mode, uint32_t targets,
		       int timeout_ms)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct bft_nl_status st;

	do {
		int err = bft_nl_get_status(s->nl, &st);
		bool done;

		if (err)
			return err;
		done = st.mode == mode && st.nr_targets == targets;
		bft_nl_status_free(&st);
		if (done)
			return 0;
		bst_sleep_ms(50);
	} while (bst_now_ns() < end);
	return -ETIMEDOUT;
}

/* Nothing attached, nobody owns anything, the mode as after a stop. */
static void expect_session_over(struct __test_metadata *_metadata,
				struct bst_session *s)
{
	struct bft_nl_status st;

	ASSERT_EQ(0, bft_nl_get_status(s->nl, &st));
	EXPECT_EQ(BFT_MODE_SHUTTING_DOWN, st.mode)
		TH_LOG("mode %s", bft_mode_name(st.mode));
	EXPECT_EQ(0, st.nr_probes);
	EXPECT_EQ(0, st.nr_targets);
	EXPECT_EQ(0, st.owner);
	bft_nl_status_free(&st);
}

static void pause_target(struct __test_metadata *_metadata,
			 struct bst_session *s, pid_t pid)
{
	ASSERT_EQ(0, bst_mode(s, BFT_CMD_PAUSE));
	ASSERT_EQ(0, bst_wait_all_threads(pid, 'T', 5000));
}

static const char *const spin_args[] = { "-t", "2", "-d", "1000", NULL };

TEST_F_TIMEOUT(session, starter_killed_while_paused_ends_session, 90)
{
	struct bft_nl_status st;

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, spin_args,
					SPIN_METHOD, false));
	self->starter = start_from_child(false);
	ASSERT_LT(0, self->starter);
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_EQ(BFT_MODE_TRACING, st.mode);
	EXPECT_NE(0, st.owner) TH_LOG("a started session has an owner");
	bft_nl_status_free(&st);
	pause_target(_metadata, &self->s, self->target.pid);

	ASSERT_EQ(0, bst_kill_and_reap(&self->starter));
	/* close() of the owner's socket stopped the session before the reap */
	EXPECT_EQ(0, bst_wait_none_stopped(self->target.pid, 5000))
		TH_LOG("the target stayed stopped after its session's owner died");
	expect_session_over(_metadata, &self->s);
	EXPECT_EQ(0, bst_spin_wait_calls(&self->target, 20, 20000));
}

TEST_F_TIMEOUT(session, persistent_session_outlives_its_starter, 90)
{
	struct bft_nl_status st;

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, spin_args,
					SPIN_METHOD, false));
	self->starter = start_from_child(true);
	ASSERT_LT(0, self->starter);
	pause_target(_metadata, &self->s, self->target.pid);
	ASSERT_EQ(0, bst_kill_and_reap(&self->starter));

	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_EQ(BFT_MODE_PAUSED, st.mode);
	EXPECT_EQ(1, st.nr_probes);
	EXPECT_EQ(0, st.owner);
	bft_nl_status_free(&st);
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	EXPECT_EQ(0, bst_wait_none_stopped(self->target.pid, 5000));
	expect_session_over(_metadata, &self->s);
}

TEST_F_TIMEOUT(session, closing_the_owner_socket_ends_session, 60)
{
	struct bft_nl *nl;

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, spin_args,
					SPIN_METHOD, false));
	ASSERT_EQ(0, bft_nl_open(&nl, NULL, 0));
	ASSERT_EQ(0, bft_nl_start(nl, false, NULL));
	pause_target(_metadata, &self->s, self->target.pid);
	bft_nl_close(nl);
	EXPECT_EQ(0, bst_wait_none_stopped(self->target.pid, 5000));
	expect_session_over(_metadata, &self->s);
}

/* Another socket's close, even of the same process, ends nothing. */
TEST_F_TIMEOUT(session, other_sockets_closing_end_nothing, 60)
{
	struct bft_nl *nl;
	struct bft_nl_status st;

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, spin_args,
					SPIN_METHOD, true));
	ASSERT_EQ(0, bft_nl_open(&nl, NULL, 0));
	bft_nl_close(nl);
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_EQ(BFT_MODE_TRACING, st.mode);
	EXPECT_EQ(1, st.nr_probes);
	bft_nl_status_free(&st);
}

/*
 * Ownership starts at the attach: a controller that attaches outside a
 * session and dies before the start leaves nothing registered, unless it
 * attached to persist (as bfctl attach does).  In a child: its own socket,
 * one probe on the spinner, and exit.
 */
static int attach_and_exit(pid_t tgid, bool persist)
{
	char *exe = bst_target_path("spinner");
	struct bst_fn fn = { exe, SPIN_FN, SPIN_METHOD };
	struct bft_nl_probe probe;
	struct bft_nl *nl;
	pid_t pid;
	int ws;

	if (!exe || bst_resolve(&fn, 1, &probe))
		return -ENOENT;
	pid = fork();
	if (pid == 0) {
		if (bft_nl_open(&nl, NULL, 0))
			_exit(1);
		bft_nl_set_attach_persist(nl, persist);
		_exit(bft_nl_attach(nl, (uint32_t)tgid, &probe, 1, NULL) ? 2 : 0);
	}
	free(exe);
	if (pid < 0 || waitpid(pid, &ws, 0) != pid)
		return -ECHILD;
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : -EINTR;
}

static void expect_attached(struct __test_metadata *_metadata,
			    struct bst_session *s, uint32_t probes)
{
	struct bft_nl_status st;

	ASSERT_EQ(0, bft_nl_get_status(s->nl, &st));
	EXPECT_EQ(probes, st.nr_probes);
	EXPECT_EQ(probes, st.nr_targets);
	bft_nl_status_free(&st);
}

TEST_F_TIMEOUT(session, attacher_dying_before_start_leaves_nothing, 60)
{
	ASSERT_TRUE(self->s.caps.features & BFT_FEAT_ATTACH_PERSIST);
	ASSERT_EQ(0, bst_proc_start(&self->target, "spinner", spin_args, false,
				    10000));
	ASSERT_EQ(0, attach_and_exit(self->target.pid, false));
	expect_attached(_metadata, &self->s, 0);
}

TEST_F_TIMEOUT(session, persistent_attach_outlives_its_attacher, 60)
{
	ASSERT_EQ(0, bst_proc_start(&self->target, "spinner", spin_args, false,
				    10000));
	ASSERT_EQ(0, attach_and_exit(self->target.pid, true));
	expect_attached(_metadata, &self->s, 1);
	/* and a start makes it the session's, as bfctl start --persist does */
	ASSERT_EQ(0, bst_start(&self->s, true));
	expect_attached(_metadata, &self->s, 1);
}

/* A start hands the attacher's targets to the session. */
TEST_F_TIMEOUT(session, attacher_closing_after_start_ends_nothing, 60)
{
	char *exe = bst_target_path("spinner");
	struct bst_fn fn = { exe, SPIN_FN, SPIN_METHOD };
	struct bft_nl_probe probe;
	struct bft_nl *nl;

	ASSERT_NE(NULL, exe);
	ASSERT_EQ(0, bst_resolve(&fn, 1, &probe));
	ASSERT_EQ(0, bst_proc_start(&self->target, "spinner", spin_args, false,
				    10000));
	ASSERT_EQ(0, bft_nl_open(&nl, NULL, 0));
	ASSERT_EQ(0, bft_nl_attach(nl, (uint32_t)self->target.pid, &probe, 1,
				   NULL)) TH_LOG("%s", bft_nl_errmsg(nl));
	ASSERT_EQ(0, bst_start(&self->s, true));
	bft_nl_close(nl);
	expect_attached(_metadata, &self->s, 1);
	free(exe);
}

static int first_tgid(const struct bft_nl_method *m, void *arg)
{
	*(pid_t *)arg = (pid_t)m->tgid;
	return 1;
}

TEST_F_TIMEOUT(session, bfctl_run_killed_while_paused, 120)
{
	char *spinner = bst_target_path("spinner");
	const char *argv[] = {
		"bfctl", "run", "-p", SPIN_FN, "--", spinner, "-d", "1000", NULL,
	};
	pid_t tgid = 0;

	ASSERT_NE(NULL, spinner);
	self->starter = bst_spawn(argv, "/dev/null");
	ASSERT_LT(0, self->starter);
	ASSERT_EQ(0, wait_status(&self->s, BFT_MODE_TRACING, 1, 30000))
		TH_LOG("bfctl run did not attach and start");
	bft_nl_get_methods(self->s.nl, first_tgid, &tgid);
	ASSERT_LT(0, tgid);
	self->orphan = tgid;
	pause_target(_metadata, &self->s, tgid);

	ASSERT_EQ(0, bst_kill_and_reap(&self->starter));
	EXPECT_EQ(0, bst_wait_none_stopped(tgid, 5000))
		TH_LOG("bfctl run's target stayed stopped after bfctl died");
	expect_session_over(_metadata, &self->s);
	free(spinner);
}

TEST_F_TIMEOUT(session, collector_killed_while_paused, 120)
{
	const char *argv[] = { "bfcollector", "--output", self->dir, NULL };

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, spin_args,
					SPIN_METHOD, false));
	/* with no HQ to wait for, the collector starts recording itself */
	self->starter = bst_spawn(argv, "/dev/null");
	ASSERT_LT(0, self->starter);
	ASSERT_EQ(0, wait_status(&self->s, BFT_MODE_TRACING, 1, 30000))
		TH_LOG("bfcollector did not start tracing");
	pause_target(_metadata, &self->s, self->target.pid);

	ASSERT_EQ(0, bst_kill_and_reap(&self->starter));
	EXPECT_EQ(0, bst_wait_none_stopped(self->target.pid, 5000))
		TH_LOG("the target stayed stopped after the collector died");
	expect_session_over(_metadata, &self->s);
}

static pid_t spawn_to(const char *path, const char *const *argv,
		      const char *out, const char *err)
{
	pid_t pid = fork();

	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Whether path, as far as it is written yet, holds word. */
static bool log_mentions(const char *path, const char *word)
{
	char *text = bst_slurp(path);
	bool found = text && strstr(text, word);

	free(text);
	return found;
}

static bool has_method(const char *json, unsigned int id)
{
	char a[32], b[32];

	snprintf(a, sizeof(a), "\"id\":%u,", id);
	snprintf(b, sizeof(b), "\"id\": %u,", id);
	return strstr(json, a) || strstr(json, b);
}

/* bfctl record started after a stop records the next session, not the last. */
TEST_F_TIMEOUT(session, record_after_stop_shows_the_next_session, 120)
{
	char *bfctl = bst_tool_path("bfctl"), *exe = bst_target_path("spinner");
	char out[96], err[96], *text;
	const char *argv[] = { "bfctl", "--json", "record", NULL };
	struct bst_fn fn = { exe, SPIN_FN, 22 };
	int st;

	ASSERT_NE(NULL, bfctl);
	ASSERT_NE(NULL, exe);
	snprintf(out, sizeof(out), "%s/record.json", self->dir);
	snprintf(err, sizeof(err), "%s/record.err", self->dir);
	/* session 1 records method 21 and leaves it in the rings */
	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, spin_args,
					SPIN_METHOD, true));
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 50, 20000));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));

	self->starter = spawn_to(bfctl, argv, out, err);
	ASSERT_LT(0, self->starter);
	/* it waits for the next session instead of ending with the last */
	for (int i = 0; i < 100 && !log_mentions(err, "no session"); i++)
		bst_sleep_ms(50);
	EXPECT_TRUE(log_mentions(err, "recording the next one"))
		bst_show_log(err);
	EXPECT_EQ(0, waitpid(self->starter, &st, WNOHANG))
		TH_LOG("record ended before the next session");

	/* session 2 records method 22 */
	ASSERT_EQ(0, bst_attach_fns(&self->s, self->target.pid, &fn, 1));
	ASSERT_EQ(0, bst_start(&self->s, false));
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 50, 20000));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	ASSERT_EQ(self->starter, waitpid(self->starter, &st, 0));
	self->starter = 0;
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st)) bst_show_log(err);
	text = bst_slurp(out);
	ASSERT_NE(NULL, text) TH_LOG("%s is unreadable", out);
	EXPECT_TRUE(has_method(text, 22)) TH_LOG("record printed %s", text);
	EXPECT_FALSE(has_method(text, SPIN_METHOD)) TH_LOG("record printed %s", text);
	free(text);
	free(bfctl);
	free(exe);
}

TEST_HARNESS_MAIN
