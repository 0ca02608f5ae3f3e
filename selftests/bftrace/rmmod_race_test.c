// SPDX-License-Identifier: GPL-2.0
/*
 * rmmod against commands in flight: processes keep starting sessions and
 * setting the options that re-arm the periodic works (flush_ms,
 * heartbeat_ms) while the module is unloaded and loaded again, over and
 * over.  A work re-armed into unloaded code shows as an oops in the
 * kernel log, which scripts/guest-run turns into a failure.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

#define HAMMERS	2
#define ROUNDS	30

struct shared {
	atomic_bool stop;
	atomic_ulong sets;	/* SET_OPTs the module accepted */
};

static void hammer(struct shared *sh, unsigned int seed)
{
	while (!atomic_load(&sh->stop)) {
		struct bft_nl *nl;

		if (bft_nl_open(&nl, NULL, 0))
			continue;	/* the family is gone for now */
		bft_nl_start(nl, rand_r(&seed) & 1, NULL);
		for (int i = 0; i < 20; i++) {
			uint32_t id = i & 1 ? BFT_OPT_FLUSH_MS :
					      BFT_OPT_HEARTBEAT_MS;

			if (bft_nl_set_opt(nl, id, 10 + rand_r(&seed) % 50,
					   NULL))
				break;
			atomic_fetch_add(&sh->sets, 1);
		}
		bft_nl_close(nl);
	}
	_exit(0);
}

/* rmmod, retrying while a command holds the module for a moment. */
static int rmmod_retry(void)
{
	int err = -EAGAIN;

	for (int i = 0; i < 500 && err; i++) {
		err = bst_rmmod();
		if (err == -EAGAIN || err == -EWOULDBLOCK || err == -EBUSY)
			bst_sleep_ms(2);
		else if (err)
			return err;
	}
	return err;
}

TEST(set_opt_while_rmmod_insmod)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned long before;
	pid_t pids[HAMMERS];
	int err;

	if (!bst_ko_path())
		SKIP(return, "BFT_KO is not set: cannot load the module again");
	ASSERT_NE(MAP_FAILED, sh);
	ASSERT_EQ(0, bst_ensure_loaded());
	for (int i = 0; i < HAMMERS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			hammer(sh, 1234 + i);
	}
	for (int round = 0; round < ROUNDS; round++) {
		before = atomic_load(&sh->sets);
		/* let commands land on this incarnation first */
		for (int i = 0; i < 200 && atomic_load(&sh->sets) == before; i++)
			bst_sleep_ms(5);
		err = rmmod_retry();
		ASSERT_EQ(0, err) TH_LOG("round %d", round);
		err = bst_insmod(bst_ko_path());
		ASSERT_TRUE(!err || err == -EEXIST) TH_LOG("round %d", round);
	}
	atomic_store(&sh->stop, true);
	for (int i = 0; i < HAMMERS; i++)
		waitpid(pids[i], NULL, 0);
	TH_LOG("%lu options set over %d reloads", atomic_load(&sh->sets),
	       ROUNDS);
	EXPECT_LT(ROUNDS, atomic_load(&sh->sets));
	/* the last incarnation unloads cleanly too, and comes back */
	ASSERT_EQ(0, rmmod_retry());
	ASSERT_EQ(0, bst_insmod(bst_ko_path()));
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
