// SPDX-License-Identifier: GPL-2.0
/*
 * Attach obeys ptrace policy even for root: with Yama's ptrace_scope 3
 * ("no attach") the module refuses every attach, with the reason.
 *
 * Yama never lowers ptrace_scope once it is 3, so this test must be the
 * last of a boot: scripts/guest-selftests.sh runs it after every other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

#define SCOPE "/proc/sys/kernel/yama/ptrace_scope"

static int scope_rw(int set, int *old)
{
	FILE *f = fopen(SCOPE, "r+");
	int ok;

	if (!f)
		return -errno;
	ok = fscanf(f, "%d", old) == 1;
	if (ok && set >= 0) {
		rewind(f);
		ok = fprintf(f, "%d\n", set) > 0;
	}
	if (fclose(f) || !ok)
		return -EIO;
	return 0;
}

FIXTURE(yama) {
	struct bst_session s;
	struct bst_proc target;
};

FIXTURE_SETUP(yama)
{
	ASSERT_EQ(0, bst_session_open(&self->s));
}

FIXTURE_TEARDOWN(yama)
{
	bst_session_close(&self->s);
	bst_proc_kill(&self->target);
}

TEST_F_TIMEOUT(yama, scope_3_refuses_attach_even_for_root, 60)
{
	char *exe = bst_target_path("spinner");
	struct bst_fn fn = { exe, SPIN_FN, 41 };
	struct bft_nl_probe p;
	struct bft_nl_status st;
	int old, now, err;

	if (scope_rw(-1, &old))
		SKIP(return, "Yama is not in this kernel (no " SCOPE ")");
	ASSERT_NE(NULL, exe);
	ASSERT_EQ(0, bst_resolve(&fn, 1, &p));
	ASSERT_EQ(0, bst_proc_start(&self->target, "spinner", NULL, false, 10000));
	/* allowed before: the refusal below is the policy's */
	ASSERT_EQ(0, bft_nl_attach(self->s.nl, (uint32_t)self->target.pid, &p, 1,
				   NULL));
	ASSERT_EQ(0, bft_nl_detach(self->s.nl, (uint32_t)self->target.pid));

	ASSERT_EQ(0, scope_rw(3, &now));
	err = bft_nl_attach(self->s.nl, (uint32_t)self->target.pid, &p, 1, NULL);
	EXPECT_EQ(-EPERM, err) TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	EXPECT_NE(NULL, strstr(bft_nl_errmsg(self->s.nl), "ptrace policy"))
		TH_LOG("extack text '%s'", bft_nl_errmsg(self->s.nl));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_EQ(0, st.nr_probes);
	EXPECT_EQ(0, st.nr_targets);
	bft_nl_status_free(&st);
	/* Yama refuses to lower 3 again: say so rather than fail */
	if (scope_rw(old, &now))
		TH_LOG("ptrace_scope stays 3 until reboot (Yama locks it)");
	free(exe);
}

TEST_HARNESS_MAIN
