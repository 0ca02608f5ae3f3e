// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF backend's sessions follow the module's ownership rule
 * (session_test.c): kill -9 of whatever started tracing without persist
 * (a plain process, bfctl run, bfcollector) while its target is paused
 * leaves the target running and no BPF link behind; a persistent session
 * outlives its starter.  And asking (status, caps, get, methods) makes no
 * session.  Runs natively and in the guests; skips where BPF cannot run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

#define PIN_DIR		"/sys/fs/bpf/bftrace-session"
#define SPIN_METHOD	31

FIXTURE(bpf_session) {
	struct bft_bpf *b;
	struct bst_proc target;
	pid_t starter;		/* a child of ours, killed in teardown */
	pid_t orphan;		/* a target that is not our child */
	char dir[64];
};

FIXTURE_SETUP(bpf_session)
{
	char why[512];
	int r;

	setenv("BFT_BPF_PIN_DIR", PIN_DIR, 1);
	r = bst_bpf_open(&self->b, why, sizeof(why));
	if (r > 0)
		SKIP(return, "BPF backend: %s", why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	snprintf(self->dir, sizeof(self->dir), "/tmp/bft-bpfsession.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
}

FIXTURE_TEARDOWN(bpf_session)
{
	char cmd[96];

	if (self->starter > 0) {
		kill(self->starter, SIGKILL);
		waitpid(self->starter, NULL, 0);
	}
	if (self->orphan > 0) {
		kill(self->orphan, SIGCONT);
		kill(self->orphan, SIGKILL);
	}
	bst_proc_kill(&self->target);
	bst_bpf_close(self->b);
	if (self->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
		if (system(cmd))
			fprintf(stderr, "# could not remove %s\n", self->dir);
	}
}

/* bfctl with args, its output to /dev/null; its exit status. */
static int bfctl_quiet(const char *const *args)
{
	const char *argv[12] = { "bfctl" };
	pid_t pid;
	int n = 1;

	for (; *args && n < 11; args++)
		argv[n++] = *args;
	pid = bst_spawn(argv, "/dev/null");
	return pid < 0 ? -1 : bst_wait_exit(pid, 60000);
}

static const char *const spin_args[] = { "-t", "2", "-d", "1000", NULL };

/* The spinner, its spin_fn attached (not started). */
static int spinner_attached(struct bft_bpf *b, struct bst_proc *p)
{
	char *path = bst_target_path("spinner");
	struct bst_fn fn = { path, SPIN_FN, SPIN_METHOD };
	struct bft_nl_probe probe;
	int err, res = 0;

	if (!path)
		return -ENOMEM;
	err = bst_proc_start(p, "spinner", spin_args, true, 10000);
	if (!err)
		err = bst_resolve(&fn, 1, &probe);
	if (!err)
		err = bft_bpf_attach(b, (uint32_t)p->pid, &probe, 1, &res);
	free(path);
	return err ? err : res;
}

/* In a child: the session opened there, tracing started from it. */
static int start_own(void *persist)
{
	struct bft_bpf *b;

	return bft_bpf_open(&b, false, NULL, 0) ||
	       bft_bpf_start(b, *(bool *)persist, NULL);
}

static pid_t start_from_child(bool persist)
{
	return bst_child_starter(start_own, &persist);
}

/* The links that run this session's programs, counted system-wide (as
 * bpftool link lists them), whether pinned or held by a process. */
static int links_of_session(void)
{
	const char *progs[] = { "prog_enter", "prog_exit" };
	uint32_t ids[2] = { 0 }, id = 0;
	int n = 0;

	for (int i = 0; i < 2; i++) {
		struct bpf_prog_info pi = { 0 };
		uint32_t len = sizeof(pi);
		char p[128];
		int fd;

		snprintf(p, sizeof(p), "%s/%s", PIN_DIR, progs[i]);
		fd = bpf_obj_get(p);
		if (fd < 0)
			return -errno;
		if (!bpf_obj_get_info_by_fd(fd, &pi, &len))
			ids[i] = pi.id;
		close(fd);
	}
	while (!bpf_link_get_next_id(id, &id)) {
		struct bpf_link_info li = { 0 };
		uint32_t len = sizeof(li);
		int fd = bpf_link_get_fd_by_id(id);

		if (fd < 0)
			continue;	/* gone since */
		if (!bpf_obj_get_info_by_fd(fd, &li, &len) &&
		    (li.prog_id == ids[0] || li.prog_id == ids[1]))
			n++;
		close(fd);
	}
	return n;
}

/* Entries of the pinned links directory. */
static int pinned_targets(void)
{
	DIR *d = opendir(PIN_DIR "/links");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * Until the session is in mode with targets targets (and, with none, no
 * probe) and, with unowned, no owner.
 */
static int wait_session(struct bft_bpf *b, uint32_t mode, uint32_t targets,
			bool unowned, int timeout_ms)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct bft_nl_status st;

	do {
		bool done;

		if (bft_bpf_get_status(b, &st))
			return -EIO;
		done = st.mode == mode && st.nr_targets == targets &&
		       (targets || !st.nr_probes) && (!unowned || !st.owner);
		bft_nl_status_free(&st);
		if (done)
			return 0;
		bst_sleep_ms(20);
	} while (bst_now_ns() < end);
	return -ETIMEDOUT;
}

/* Stopped as BFT_CMD_STOP stops: nothing attached, nobody owns it. */
static int wait_session_over(struct bft_bpf *b, int timeout_ms)
{
	return wait_session(b, BFT_MODE_SHUTTING_DOWN, 0, true, timeout_ms);
}

static int wait_tracing(struct bft_bpf *b, uint32_t targets, int timeout_ms)
{
	return wait_session(b, BFT_MODE_TRACING, targets, false, timeout_ms);
}

static void expect_nothing_left(struct __test_metadata *_metadata,
				struct bft_bpf *b)
{
	pid_t owner = -1, guard = -1;

	EXPECT_EQ(0, wait_session_over(b, 5000))
		TH_LOG("the session did not end with its owner");
	EXPECT_EQ(0, pinned_targets());
	EXPECT_EQ(0, links_of_session()) TH_LOG("a BPF link outlived the owner");
	EXPECT_EQ(0, bft_bpf_get_owner(b, &owner, &guard));
	EXPECT_EQ(0, owner);
}

static void pause_target(struct __test_metadata *_metadata,
			 struct bft_bpf *b, pid_t pid)
{
	ASSERT_EQ(0, bft_bpf_mode_cmd(b, BFT_CMD_PAUSE, NULL))
		TH_LOG("%s", bft_bpf_errmsg(b));
	ASSERT_EQ(0, bst_wait_all_threads(pid, 'T', 5000));
}

TEST_F_TIMEOUT(bpf_session, starter_killed_while_paused_ends_session, 90)
{
	pid_t owner = 0, guard = 0;

	ASSERT_EQ(0, spinner_attached(self->b, &self->target));
	self->starter = start_from_child(false);
	ASSERT_LT(0, self->starter);
	ASSERT_EQ(0, bft_bpf_get_owner(self->b, &owner, &guard));
	EXPECT_EQ(self->starter, owner);
	EXPECT_LT(0, guard) TH_LOG("no guard process watches the owner");
	EXPECT_LT(0, links_of_session());
	pause_target(_metadata, self->b, self->target.pid);

	ASSERT_EQ(0, bst_kill_and_reap(&self->starter));
	EXPECT_EQ(0, bst_wait_none_stopped(self->target.pid, 5000))
		TH_LOG("the target stayed stopped after its session's owner died");
	expect_nothing_left(_metadata, self->b);
	EXPECT_EQ(0, bst_spin_wait_calls(&self->target, 20, 20000));
}

/* With its guard killed as well, the next tool that looks ends it. */
TEST_F_TIMEOUT(bpf_session, owner_and_guard_killed_next_tool_ends_it, 90)
{
	pid_t owner = 0, guard = 0;

	ASSERT_EQ(0, spinner_attached(self->b, &self->target));
	self->starter = start_from_child(false);
	ASSERT_LT(0, self->starter);
	ASSERT_EQ(0, bft_bpf_get_owner(self->b, &owner, &guard));
	ASSERT_LT(0, guard);
	pause_target(_metadata, self->b, self->target.pid);
	ASSERT_EQ(0, kill(guard, SIGKILL));
	ASSERT_EQ(0, bst_kill_and_reap(&self->starter));
	EXPECT_TRUE(bst_any_stopped(self->target.pid));

	EXPECT_EQ(0, bfctl_quiet((const char *const[]){
		"--backend", "bpf", "status", NULL }));
	EXPECT_EQ(0, bst_wait_none_stopped(self->target.pid, 5000));
	expect_nothing_left(_metadata, self->b);
}

TEST_F_TIMEOUT(bpf_session, persistent_session_outlives_its_starter, 90)
{
	struct bft_nl_status st;

	ASSERT_EQ(0, spinner_attached(self->b, &self->target));
	self->starter = start_from_child(true);
	ASSERT_LT(0, self->starter);
	pause_target(_metadata, self->b, self->target.pid);
	ASSERT_EQ(0, bst_kill_and_reap(&self->starter));

	ASSERT_EQ(0, bft_bpf_get_status(self->b, &st));
	EXPECT_EQ(BFT_MODE_PAUSED, st.mode);
	EXPECT_EQ(1, st.nr_probes);
	EXPECT_EQ(0, st.owner);
	bft_nl_status_free(&st);
	EXPECT_TRUE(bst_any_stopped(self->target.pid));
	EXPECT_LT(0, links_of_session());
	ASSERT_EQ(0, bft_bpf_mode_cmd(self->b, BFT_CMD_STOP, NULL));
	EXPECT_EQ(0, bst_wait_none_stopped(self->target.pid, 5000));
	expect_nothing_left(_metadata, self->b);
}

/* As closing the owner's netlink socket: closing its handle ends it. */
TEST_F_TIMEOUT(bpf_session, closing_the_owner_handle_ends_session, 60)
{
	struct bft_bpf *b;

	ASSERT_EQ(0, spinner_attached(self->b, &self->target));
	ASSERT_EQ(0, bft_bpf_open(&b, false, NULL, 0));
	ASSERT_EQ(0, bft_bpf_start(b, false, NULL));
	pause_target(_metadata, self->b, self->target.pid);
	bft_bpf_close(b);
	EXPECT_EQ(0, bst_wait_none_stopped(self->target.pid, 5000));
	expect_nothing_left(_metadata, self->b);
}

/* Another handle's close, even of the same process, ends nothing. */
TEST_F_TIMEOUT(bpf_session, other_handles_closing_end_nothing, 60)
{
	struct bft_nl_status st;
	struct bft_bpf *b;

	ASSERT_EQ(0, spinner_attached(self->b, &self->target));
	ASSERT_EQ(0, bft_bpf_start(self->b, true, NULL));
	ASSERT_EQ(0, bft_bpf_open(&b, false, NULL, 0));
	bft_bpf_close(b);
	ASSERT_EQ(0, bft_bpf_get_status(self->b, &st));
	EXPECT_EQ(BFT_MODE_TRACING, st.mode);
	EXPECT_EQ(1, st.nr_probes);
	bft_nl_status_free(&st);
}

static int first_tgid(const struct bft_nl_method *m, void *arg)
{
	*(pid_t *)arg = (pid_t)m->tgid;
	return 1;
}

TEST_F_TIMEOUT(bpf_session, bfctl_run_killed_while_paused, 120)
{
	char *spinner = bst_target_path("spinner");
	const char *argv[] = {
		"bfctl", "--backend", "bpf", "run", "-p", SPIN_FN, "--",
		spinner, "-d", "1000", NULL,
	};
	pid_t tgid = 0;

	ASSERT_NE(NULL, spinner);
	self->starter = bst_spawn(argv, "/dev/null");
	ASSERT_LT(0, self->starter);
	ASSERT_EQ(0, wait_tracing(self->b, 1, 30000))
		TH_LOG("bfctl run did not attach and start");
	bft_bpf_get_methods(self->b, first_tgid, &tgid);
	ASSERT_LT(0, tgid);
	self->orphan = tgid;
	pause_target(_metadata, self->b, tgid);

	ASSERT_EQ(0, bst_kill_and_reap(&self->starter));
	EXPECT_EQ(0, bst_wait_none_stopped(tgid, 5000))
		TH_LOG("bfctl run's target stayed stopped after bfctl died");
	expect_nothing_left(_metadata, self->b);
	free(spinner);
}

TEST_F_TIMEOUT(bpf_session, collector_killed_while_paused, 120)
{
	const char *argv[] = {
		"bfcollector", "--backend", "bpf", "--output", self->dir, NULL,
	};

	ASSERT_EQ(0, spinner_attached(self->b, &self->target));
	/* with no HQ to wait for, the collector starts recording itself */
	self->starter = bst_spawn(argv, "/dev/null");
	ASSERT_LT(0, self->starter);
	ASSERT_EQ(0, wait_tracing(self->b, 1, 30000))
		TH_LOG("bfcollector did not start tracing");
	pause_target(_metadata, self->b, self->target.pid);

	ASSERT_EQ(0, bst_kill_and_reap(&self->starter));
	EXPECT_EQ(0, bst_wait_none_stopped(self->target.pid, 5000))
		TH_LOG("the target stayed stopped after the collector died");
	expect_nothing_left(_metadata, self->b);
}

/* Asking makes nothing: status, caps, get and methods with no session. */
TEST(asking_makes_no_session)
{
	static const char *const cmds[][2] = {
		{ "status", NULL }, { "caps", NULL }, { "get", NULL },
		{ "methods", NULL },
	};
	const char *backends[] = { "bpf", "auto" };
	struct bft_nl_status st;
	struct bft_nl_opt opts[BFT_OPT_MAX];
	struct bft_bpf *b;
	struct stat sb;
	char why[512];
	size_t n;

	setenv("BFT_BPF_PIN_DIR", PIN_DIR "-asking", 1);
	bst_bpf_mount();
	if (bft_bpf_probe(why, sizeof(why)))
		SKIP(return, "BPF backend: %s", why);
	if (!stat(PIN_DIR "-asking", &sb))
		ASSERT_EQ(0, bft_bpf_unload(why, sizeof(why))) TH_LOG("%s", why);

	for (size_t i = 0; i < 2; i++) {
		/* auto is the module where it is loaded: nothing to see */
		if (i && bst_module_loaded())
			continue;
		for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
			EXPECT_EQ(0, bfctl_quiet((const char *const[]){
				"--backend", backends[i], cmds[c][0], NULL }))
				TH_LOG("bfctl --backend %s %s", backends[i],
				       cmds[c][0]);
			EXPECT_NE(0, stat(PIN_DIR "-asking", &sb))
				TH_LOG("bfctl --backend %s %s made %s",
				       backends[i], cmds[c][0],
				       PIN_DIR "-asking");
		}
	}

	ASSERT_EQ(0, bft_bpf_open_lazy(&b, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, bft_bpf_get_status(b, &st));
	EXPECT_EQ(BFT_MODE_INITIALIZING, st.mode);
	EXPECT_EQ(0, st.nr_probes);
	bft_nl_status_free(&st);
	EXPECT_EQ(0, bft_bpf_get_opts(b, opts, BFT_OPT_MAX, &n));
	EXPECT_LT(0, n);
	EXPECT_EQ(-ENOENT, bft_bpf_detach(b, 1));
	EXPECT_NE(0, stat(PIN_DIR "-asking", &sb));
	/* the first change makes it */
	EXPECT_EQ(0, bft_bpf_set_opt(b, BFT_OPT_FLUSH_MS, 50, NULL))
		TH_LOG("%s", bft_bpf_errmsg(b));
	EXPECT_EQ(0, stat(PIN_DIR "-asking", &sb));
	bft_bpf_close(b);
	EXPECT_EQ(0, bft_bpf_unload(why, sizeof(why))) TH_LOG("%s", why);
}

#define STALE_DIR	PIN_DIR "-stale"

/*
 * A session of this version in STALE_DIR, for a test to spoil; false if
 * the BPF backend cannot run here (@why says why).
 */
static bool stale_session(struct __test_metadata *_metadata, char *why,
			  size_t n)
{
	struct bft_bpf *b;

	setenv("BFT_BPF_PIN_DIR", STALE_DIR, 1);
	bst_bpf_mount();
	if (bft_bpf_probe(why, n))
		return false;
	ASSERT_EQ(0, system("rm -rf " STALE_DIR));
	ASSERT_EQ(0, bft_bpf_open_lazy(&b, why, n)) TH_LOG("%s", why);
	ASSERT_EQ(0, bft_bpf_set_opt(b, BFT_OPT_FLUSH_MS, 50, NULL))
		TH_LOG("%s", bft_bpf_errmsg(b));
	bft_bpf_close(b);
	return true;
}

/*
 * A session made by another version of bftrace (here: one pin missing) is
 * refused with what it lacks and how to end it, by the library and by
 * bfctl, instead of being read as this version's.
 */
TEST(other_versions_session_is_named)
{
	char why[512], log[] = "/tmp/bft-stale.XXXXXX", *out;
	const char *argv[] = { "bfctl", "--backend", "bpf", "status", NULL };
	struct bft_bpf *b;
	pid_t pid;
	int fd;

	if (!stale_session(_metadata, why, sizeof(why)))
		SKIP(return, "BPF backend: %s", why);
	ASSERT_EQ(0, unlink(STALE_DIR "/hits_far"));

	EXPECT_EQ(-ESTALE, bft_bpf_open_lazy(&b, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "has no hits_far: another version of "
			       "bftrace made it; remove that directory"))
		TH_LOG("%s", why);

	fd = mkstemp(log);
	ASSERT_LE(0, fd);
	close(fd);
	pid = bst_spawn(argv, log);
	ASSERT_LT(0, pid);
	EXPECT_NE(0, bst_wait_exit(pid, 60000));
	out = bst_slurp(log);
	ASSERT_NE(NULL, out);
	EXPECT_NE(NULL, strstr(out, "has no hits_far")) TH_LOG("%s", out);
	free(out);
	unlink(log);
	EXPECT_EQ(0, system("rm -rf " STALE_DIR));
}

/*
 * Its per-CPU state in another layout (here: a map of another value size
 * pinned in its place) is refused too, before anything reads it into a
 * buffer of this version's size.
 */
TEST(other_layouts_state_is_refused)
{
	char why[512];
	struct bft_bpf *b;
	int fd;

	if (!stale_session(_metadata, why, sizeof(why)))
		SKIP(return, "BPF backend: %s", why);
	ASSERT_EQ(0, unlink(STALE_DIR "/cpus_tbits"));
	fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "bft_cpus", 4, 64, 1,
			    NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bpf_obj_pin(fd, STALE_DIR "/cpus_tbits"));
	close(fd);

	EXPECT_EQ(-ESTALE, bft_bpf_open_lazy(&b, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "per-CPU state in another layout (64 "
			       "bytes"))
		TH_LOG("%s", why);
	EXPECT_EQ(0, system("rm -rf " STALE_DIR));
}

TEST_HARNESS_MAIN
