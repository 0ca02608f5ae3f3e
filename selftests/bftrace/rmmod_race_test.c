// SPDX-License-Identifier: GPL-2.0
/*
 * rmmod against commands in flight: processes keep starting sessions and
 * setting the options that re-arm the periodic works (flush_ms,
 * heartbeat_ms) while the module is unloaded and loaded again, over and
 * over.  A work re-armed into unloaded code shows as an oops in the
 * kernel log, which scripts/guest-run turns into a failure.
 *
 * More hammers than CPUs, each sending options back to back, so that at
 * any moment some command is half-way through when rmmod comes.  The
 * module then stays unloaded for longer than any period a hammer sets:
 * a work armed into the old incarnation must fire into unmapped code,
 * not into a new module that happens to sit at the same address.
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

#define HAMMERS	4
#define ROUNDS	30
/*
 * Periods up to half a second: a work armed with a short one may fire
 * while the module is still being torn down (6.12 takes long there), run
 * there harmlessly and not re-arm; a long one outlives the teardown.
 */
#define PERIOD_MIN_MS	10
#define PERIOD_SPAN_MS	490
/* unloaded for longer than the longest period set */
#define DWELL_MS	(PERIOD_MIN_MS + PERIOD_SPAN_MS + 100)

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
		/* until the family goes away under this socket */
		for (unsigned int i = 0; !atomic_load(&sh->stop); i++) {
			uint32_t id = i & 1 ? BFT_OPT_FLUSH_MS :
					      BFT_OPT_HEARTBEAT_MS;
			uint32_t ms = PERIOD_MIN_MS +
				      rand_r(&seed) % PERIOD_SPAN_MS;

			if (bft_nl_set_opt(nl, id, ms, NULL))
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

FIXTURE(race) {};
FIXTURE_SETUP(race) {}
FIXTURE_TEARDOWN(race) {}

/* ROUNDS dwells and reloads take longer than the harness's default 30 s */
TEST_F_TIMEOUT(race, set_opt_while_rmmod_insmod, 300)
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
		bst_sleep_ms(DWELL_MS);
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
