// SPDX-License-Identifier: GPL-2.0
/*
 * Lifetimes: of the module (unloading while tracing, while a target is
 * paused, while a reader holds a ring, and many times over) and of targets
 * (one that exits while traced is announced and cleaned up).  Every test
 * that unloads bftrace.ko loads $BFT_KO again before it returns, so later
 * tests find the module in place.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "capture/bft_rings.h"
#include "bft_selftest.h"
#include "calltree_shape.h"

FIXTURE(lifetime) {
	struct bst_session s;
	struct bst_proc target;
	struct bft_nl *ev;
};

FIXTURE_SETUP(lifetime)
{
	ASSERT_EQ(0, bst_session_open(&self->s));
}

FIXTURE_TEARDOWN(lifetime)
{
	if (self->ev)
		bft_nl_close(self->ev);
	bst_session_close_loaded(&self->s);
	bst_proc_kill(&self->target);
}

/* Close the control handle: the module must go with none of ours open. */
static void drop_session(struct bst_session *s)
{
	if (s->nl)
		bft_nl_close(s->nl);
	s->nl = NULL;
}

static void expect_module_gone(struct __test_metadata *_metadata)
{
	bool listed = true;

	EXPECT_FALSE(bst_module_loaded());
	EXPECT_EQ(-1, access("/sys/module/bftrace", F_OK));
	EXPECT_EQ(-1, access("/dev/" BFT_DEV_NAME, F_OK));
	ASSERT_EQ(0, bst_family_listed(BFT_GENL_NAME, &listed));
	EXPECT_FALSE(listed) TH_LOG("the genl family outlived the module");
}

static void expect_module_back(struct __test_metadata *_metadata,
			       struct bst_session *s)
{
	struct bft_nl_status st;
	bool listed = false;

	ASSERT_TRUE(bst_module_loaded());
	ASSERT_EQ(0, bst_family_listed(BFT_GENL_NAME, &listed));
	EXPECT_TRUE(listed);
	EXPECT_EQ(0, access("/dev/" BFT_DEV_NAME, F_OK));
	ASSERT_EQ(0, bst_session_open(s));
	ASSERT_EQ(0, bft_nl_get_status(s->nl, &st));
	EXPECT_EQ(BFT_MODE_INITIALIZING, st.mode);
	EXPECT_EQ(0, st.nr_probes);
	EXPECT_EQ(0, st.nr_targets);
	bft_nl_status_free(&st);
}

TEST_F_TIMEOUT(lifetime, rmmod_while_tracing_is_clean, 90)
{
	static const char *const args[] = { "-t", "2", "-d", "500", NULL };

	if (!bst_ko_path())
		SKIP(return, "BFT_KO is not set: cannot load the module again");
	/* persistent: the session must outlive the handle closed below */
	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, args, 11, false));
	ASSERT_EQ(0, bst_start(&self->s, true));
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 50, 20000));
	drop_session(&self->s);

	ASSERT_EQ(0, bst_rmmod());
	expect_module_gone(_metadata);
	/* The probes are gone and the target runs on, unharmed. */
	EXPECT_EQ(0, bst_spin_wait_calls(&self->target, 200, 20000));
	EXPECT_TRUE(bst_proc_alive(&self->target));

	ASSERT_EQ(0, bst_insmod(bst_ko_path()));
	expect_module_back(_metadata, &self->s);
	EXPECT_TRUE(bst_proc_alive(&self->target));
}

TEST_F_TIMEOUT(lifetime, rmmod_continues_a_paused_target, 90)
{
	static const char *const args[] = { "-t", "2", "-d", "1000", NULL };

	if (!bst_ko_path())
		SKIP(return, "BFT_KO is not set: cannot load the module again");
	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, args, 11, false));
	ASSERT_EQ(0, bst_start(&self->s, true));
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 20, 20000));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_PAUSE));
	ASSERT_EQ(0, bst_wait_all_threads(self->target.pid, 'T', 5000));
	drop_session(&self->s);

	ASSERT_EQ(0, bst_rmmod());
	EXPECT_EQ(0, bst_spin_wait_calls(&self->target, 50, 20000))
		TH_LOG("the target stayed stopped after the module went");
	ASSERT_EQ(0, bst_insmod(bst_ko_path()));
	expect_module_back(_metadata, &self->s);
}

TEST_F_TIMEOUT(lifetime, rmmod_waits_for_ring_readers, 60)
{
	struct bft_rings *r;
	char msg[256] = "";

	if (!bst_ko_path())
		SKIP(return, "BFT_KO is not set: cannot load the module again");
	ASSERT_EQ(0, bft_rings_open(&r, NULL, self->s.caps.nr_cpus, msg,
				    sizeof(msg)))
		TH_LOG("%s", msg);
	drop_session(&self->s);
	/* An open /dev/bftrace pins the module. */
	EXPECT_EQ(-EWOULDBLOCK, bst_rmmod());
	EXPECT_TRUE(bst_module_loaded());
	bft_rings_close(r);

	ASSERT_EQ(0, bst_rmmod());
	expect_module_gone(_metadata);
	ASSERT_EQ(0, bst_insmod(bst_ko_path()));
	expect_module_back(_metadata, &self->s);
}

TEST_F_TIMEOUT(lifetime, insmod_rmmod_loop_leaves_nothing_behind, 180)
{
	if (!bst_ko_path())
		SKIP(return, "BFT_KO is not set: cannot load the module again");
	drop_session(&self->s);
	for (int i = 0; i < 20; i++) {
		struct bft_nl *nl;
		struct bft_nl_caps caps;

		ASSERT_EQ(0, bst_rmmod()) TH_LOG("round %d", i);
		expect_module_gone(_metadata);
		ASSERT_EQ(0, bst_insmod(bst_ko_path())) TH_LOG("round %d", i);
		ASSERT_TRUE(bst_module_loaded());
		ASSERT_EQ(0, bft_nl_open(&nl, NULL, 0)) TH_LOG("round %d", i);
		EXPECT_EQ(0, bft_nl_get_caps(nl, &caps));
		EXPECT_EQ(BFT_PROTO_VERSION, caps.proto_version);
		bft_nl_close(nl);
	}
	expect_module_back(_metadata, &self->s);
}

/* Wait for TARGET_EXIT of tgid; 0 and *ev filled, or -ETIMEDOUT. */
static int wait_target_exit(struct bft_nl *evs, pid_t tgid, int timeout_ms,
			    struct bft_nl_event *ev)
{
	uint64_t deadline = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	while (bst_now_ns() < deadline) {
		int err = bft_nl_event_recv(evs, ev, 200);

		if (err == -ETIMEDOUT || err == -ENOBUFS)
			continue;
		if (err)
			return err;
		if (ev->type == BFT_EV_TARGET_EXIT && ev->tgid == (uint32_t)tgid)
			return 0;
		bft_nl_event_free(ev);
	}
	return -ETIMEDOUT;
}

static void exiting_target(struct __test_metadata *_metadata,
			   FIXTURE_DATA(lifetime) *self, bool tracing)
{
	char *exe = bst_target_path("calltree");
	struct bst_fn fns[] = {
		{ exe, CT_FN_A, 1 }, { exe, CT_FN_B, 2 }, { exe, CT_FN_C, 3 },
	};
	uint64_t heartbeat = self->s.opts[BFT_OPT_HEARTBEAT_MS].value;
	struct bft_nl_event ev = { 0 };
	struct bft_nl_status st;
	size_t live, gone;
	pid_t tgid;

	ASSERT_NE(NULL, exe);
	ASSERT_EQ(0, bft_nl_open_events(&self->ev, NULL, 0));
	ASSERT_EQ(0, bst_proc_start(&self->target, "calltree", NULL, false, 10000));
	tgid = self->target.pid;
	ASSERT_EQ(0, bst_attach_fns(&self->s, tgid, fns, 3));
	if (tracing) {
		ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
		ASSERT_EQ(0, bst_proc_send(&self->target, 'r'));
		ASSERT_EQ(0, bst_proc_wait_line(&self->target, CT_LINE_DONE, 30000));
	}
	ASSERT_EQ(0, bst_proc_send(&self->target, 'q'));
	ASSERT_EQ(0, bst_proc_wait_exit(&self->target, 10000));
	EXPECT_TRUE(WIFEXITED(self->target.status) &&
		    !WEXITSTATUS(self->target.status));

	/* Within a few heartbeats, the exit is announced... */
	ASSERT_EQ(0, wait_target_exit(self->ev, tgid,
				      (int)(5 * heartbeat) + 2000, &ev))
		TH_LOG("no TARGET_EXIT for %d within 5 heartbeats of %llu ms",
		       tgid, (unsigned long long)heartbeat);
	EXPECT_EQ(3, ev.nr_probes);
	bft_nl_event_free(&ev);

	/* ...and the target is gone. */
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_EQ(0, st.nr_targets);
	EXPECT_EQ(0, st.nr_probes);
	bft_nl_status_free(&st);
	ASSERT_EQ(0, bst_count_methods(&self->s, (uint32_t)tgid, &live, &gone));
	EXPECT_EQ(0, live);
	EXPECT_EQ(3, gone);
	EXPECT_EQ(-ENOENT, bft_nl_detach(self->s.nl, (uint32_t)tgid));
	free(exe);
}

TEST_F_TIMEOUT(lifetime, exiting_target_is_announced_and_cleaned_up, 60)
{
	exiting_target(_metadata, self, true);
}

TEST_F_TIMEOUT(lifetime, exiting_idle_target_is_announced_and_cleaned_up, 60)
{
	exiting_target(_metadata, self, false);
}

TEST_HARNESS_MAIN
