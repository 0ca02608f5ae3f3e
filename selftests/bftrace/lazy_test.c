// SPDX-License-Identifier: GPL-2.0
/*
 * What loading costs and what limits hold:
 *   - any user can load the module (the family alias), so a fresh module
 *     arms no periodic work and allocates no ring until a session needs
 *     them (attach, start, or a reader);
 *   - the rings of all CPUs together stay under max_ring_mem;
 *   - an attach to a pid that exec'd since the reaper last ran gets the
 *     new image, not the dead target.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

FIXTURE(lazy) {
	struct bst_session s;
	struct bst_proc target;
	struct bft_nl *ev;
};

FIXTURE_SETUP(lazy)
{
	ASSERT_EQ(0, bst_session_open(&self->s));
}

FIXTURE_TEARDOWN(lazy)
{
	if (self->ev)
		bft_nl_close(self->ev);
	bst_session_close_loaded(&self->s);
	bst_proc_kill(&self->target);
}

/* The next heartbeat within timeout_ms: 0, or -ETIMEDOUT. */
static int wait_heartbeat(struct bft_nl *ev, int timeout_ms)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct bft_nl_event e;

	while (bst_now_ns() < end) {
		int err = bft_nl_event_recv(ev, &e, 100);

		if (err == -ETIMEDOUT || err == -ENOBUFS)
			continue;
		if (err)
			return err;
		bft_nl_event_free(&e);
		if (e.type == BFT_EV_HEARTBEAT)
			return 0;
	}
	return -ETIMEDOUT;
}

TEST_F_TIMEOUT(lazy, fresh_module_arms_no_work_until_a_session, 90)
{
	if (!bst_ko_path())
		SKIP(return, "BFT_KO is not set: cannot load the module again");
	bft_nl_close(self->s.nl);
	self->s.nl = NULL;
	ASSERT_EQ(0, bst_rmmod());
	ASSERT_EQ(0, bst_insmod(bst_ko_path()));
	ASSERT_EQ(0, bft_nl_open_events(&self->ev, NULL, 0));
	/* the default heartbeat is 1 s: three of them would have come */
	EXPECT_EQ(-ETIMEDOUT, wait_heartbeat(self->ev, 3000))
		TH_LOG("a freshly loaded module runs its periodic work");
	ASSERT_EQ(0, bst_session_open(&self->s));
	ASSERT_EQ(0, bst_start(&self->s, false));
	EXPECT_EQ(0, wait_heartbeat(self->ev, 10000))
		TH_LOG("no heartbeat once a session started");
}

TEST_F_TIMEOUT(lazy, ring_memory_stays_under_max_ring_mem, 60)
{
	struct bft_nl_opt opt;
	int err;

	if (self->s.caps.nr_cpus < 2)
		SKIP(return, "one ring of 1 MiB fits under any cap");
	ASSERT_EQ(0, bst_set_opt(&self->s, BFT_OPT_BUF_SIZE, 1 << 20));
	/* a cap below what the rings take now */
	err = bft_nl_set_opt(self->s.nl, BFT_OPT_MAX_RING_MEM, 1, NULL);
	EXPECT_EQ(-ERANGE, err);
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "max_ring_mem"));
	/* rings that would not fit under the cap */
	ASSERT_EQ(0, bst_set_opt(&self->s, BFT_OPT_BUF_SIZE, 4096));
	ASSERT_EQ(0, bst_set_opt(&self->s, BFT_OPT_MAX_RING_MEM, 1));
	err = bft_nl_set_opt(self->s.nl, BFT_OPT_BUF_SIZE, 1 << 20, NULL);
	EXPECT_EQ(-ERANGE, err);
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "max_ring_mem"));
	ASSERT_EQ(0, bft_nl_get_opt(self->s.nl, BFT_OPT_BUF_SIZE, &opt));
	EXPECT_EQ(4096, opt.value);
}

static int live_hits(const struct bft_nl_method *m, void *arg)
{
	if (!(m->flags & BFT_PF_GONE))
		*(uint64_t *)arg += m->hits;
	return 0;
}

TEST_F_TIMEOUT(lazy, attach_after_exec_gets_the_new_image, 90)
{
	static const char *const args[] = { "-d", "1000", "-x", NULL };
	char *exe = bst_target_path("spinner");
	struct bst_fn fn = { exe, SPIN_FN, 51 };
	struct bft_nl_status st;
	uint64_t hits = 0;
	pid_t pid;

	ASSERT_NE(NULL, exe);
	/* the reaper, which would notice the exec, runs every flush */
	ASSERT_EQ(0, bst_set_opt(&self->s, BFT_OPT_FLUSH_MS, 10000));
	ASSERT_EQ(0, bst_proc_start(&self->target, "spinner", args, false, 10000));
	pid = self->target.pid;
	ASSERT_EQ(0, bst_attach_fns(&self->s, pid, &fn, 1));
	ASSERT_EQ(0, bst_start(&self->s, false));
	ASSERT_EQ(0, bst_proc_send(&self->target, 'x'));
	ASSERT_EQ(0, bst_proc_wait_line(&self->target, "ready", 10000));

	/* same pid, new image: a new target, not the old one's duplicate */
	ASSERT_EQ(0, bst_attach_fns(&self->s, pid, &fn, 1));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_EQ(1, st.nr_targets);
	EXPECT_EQ(1, st.nr_probes);
	bft_nl_status_free(&st);
	for (int i = 0; i < 100 && !hits; i++) {
		bst_sleep_ms(100);
		hits = 0;
		ASSERT_EQ(0, bft_nl_get_methods(self->s.nl, live_hits, &hits));
	}
	EXPECT_LT(0, hits) TH_LOG("the probe on the new image never fired");
	free(exe);
}

TEST_HARNESS_MAIN
