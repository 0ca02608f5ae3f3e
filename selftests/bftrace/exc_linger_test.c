// SPDX-License-Identifier: GPL-2.0
/*
 * A frame entered under a return probe keeps the kernel's trampoline in
 * its return slot until it returns, also after tracing stops.  The
 * exc_serve target has such a frame, serve(), when tracing stops, and then
 * throws an exception through it: the module must have left the target's
 * unwinder hooks in place, or the unwinder meets the trampoline and the
 * program terminates.  The control case, with no hooks ever attached,
 * shows that it would.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "symbols/bft_hooks.h"
#include "bft_selftest.h"

#define ID_SERVE	1
#define ID_THROWER	2
#define ID_HOOKS	100

FIXTURE(linger) {
	struct bst_session s;
	struct bst_proc target;
};

FIXTURE_SETUP(linger)
{
	ASSERT_EQ(0, bst_session_open(&self->s));
	ASSERT_EQ(0, bst_proc_start(&self->target, "exc_serve", NULL, false,
				    10000));
}

FIXTURE_TEARDOWN(linger)
{
	bst_session_close(&self->s);
	bst_proc_kill(&self->target);
}

/* serve() and thrower() traced, and with_hooks: the hooks bfctl would add. */
static int attach(struct __test_metadata *_metadata, struct bst_session *s,
		  pid_t pid, bool with_hooks)
{
	char *exe = bst_target_path("exc_serve");
	struct bst_fn fns[] = {
		{ exe, "serve", ID_SERVE },
		{ exe, "thrower", ID_THROWER },
	};
	struct bft_nl_probe probes[64];
	struct bft_hooks h = { 0 };
	char err[256];
	size_t n = 2;
	int ret;

	if (bst_resolve(fns, n, probes))
		return -ENOENT;
	if (with_hooks) {
		ret = bft_hooks_find(pid, false, &h, err, sizeof(err));
		if (ret) {
			TH_LOG("hooks of %d: %s", (int)pid, err);
			return ret;
		}
		for (size_t i = 0; i < h.n && n < 64; i++, n++) {
			probes[n] = (struct bft_nl_probe){
				.path = h.v[i].open_path,
				.offset = h.v[i].probe_offset,
				.method_id = ID_HOOKS + i,
				.flags = h.v[i].flag,
				.name = h.v[i].symbol,
			};
		}
	}
	ret = bft_nl_attach(s->nl, pid, probes, n, NULL);
	if (ret)
		TH_LOG("attach: %s", bft_nl_errmsg(s->nl));
	bft_hooks_free(&h);
	free(exe);
	return ret;
}

/* Enter serve() traced, make one traced call, end tracing, then throw. */
static void stop_then_throw(struct __test_metadata *_metadata,
			    struct bst_session *s, struct bst_proc *p,
			    bool with_hooks, int end_cmd)
{
	ASSERT_EQ(0, attach(_metadata, s, p->pid, with_hooks));
	ASSERT_EQ(0, bst_mode(s, BFT_CMD_START));
	ASSERT_EQ(0, bst_proc_send(p, 'g'));
	ASSERT_EQ(0, bst_proc_send(p, 'a'));
	ASSERT_EQ(0, bst_proc_wait_line(p, "got a", 20000));
	if (end_cmd == BFT_CMD_DETACH) {
		ASSERT_EQ(0, bft_nl_detach(s->nl, p->pid));
	} else {
		ASSERT_EQ(0, bst_mode(s, end_cmd));
	}
	ASSERT_EQ(0, bst_proc_send(p, 'x'));
	ASSERT_EQ(0, bst_proc_wait_line(p, "got x", 20000));
}

TEST_F_TIMEOUT(linger, throw_after_stop_is_caught, 90)
{
	stop_then_throw(_metadata, &self->s, &self->target, true,
			BFT_CMD_STOP);
	ASSERT_EQ(0, bst_proc_wait_line(&self->target,
					"caught after the stop", 20000));
	ASSERT_EQ(0, bst_proc_wait_exit(&self->target, 20000));
	EXPECT_TRUE(WIFEXITED(self->target.status));
	EXPECT_EQ(0, WEXITSTATUS(self->target.status));
}

TEST_F_TIMEOUT(linger, throw_after_detach_is_caught, 90)
{
	stop_then_throw(_metadata, &self->s, &self->target, true,
			BFT_CMD_DETACH);
	ASSERT_EQ(0, bst_proc_wait_line(&self->target,
					"caught after the stop", 20000));
	ASSERT_EQ(0, bst_proc_wait_exit(&self->target, 20000));
	EXPECT_TRUE(WIFEXITED(self->target.status));
	EXPECT_EQ(0, WEXITSTATUS(self->target.status));
}

/* What the hooks prevent: without them the same throw terminates it. */
TEST_F_TIMEOUT(linger, without_hooks_the_throw_terminates, 90)
{
	stop_then_throw(_metadata, &self->s, &self->target, false,
			BFT_CMD_STOP);
	ASSERT_EQ(0, bst_proc_wait_exit(&self->target, 20000));
	ASSERT_TRUE(WIFSIGNALED(self->target.status));
	EXPECT_EQ(SIGABRT, WTERMSIG(self->target.status));
}

TEST_HARNESS_MAIN
