// SPDX-License-Identifier: GPL-2.0
/*
 * A pause of HQ's does not outlive HQ: the test, as HQ, starts a replay
 * and pauses it (bfcollector's simulated kernel stops reading, as the
 * module stops the targets), then goes away (closes) or falls silent.
 * bfcollector must unpause: its heartbeats say so (after a reconnection
 * when HQ closed: not 'P'), and its log.
 */
#include "kselftest_harness.h"

#include "collector_fixture.h"
#include "fake_hq.h"

#define HB_MS	100

FIXTURE(pause) {
	char dir[PATH_MAX];
	char replay[PATH_MAX + 16];
	char log[PATH_MAX + 16];
	struct syn syn;
	int port, lfd, ctl, data;
	pid_t pid;
	struct bft_buf cin;
};

FIXTURE_SETUP(pause)
{
	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	snprintf(self->replay, sizeof(self->replay), "%s/replay", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/log", self->dir);
	ASSERT_EQ(0, mkdir(self->replay, 0755));
	memset(&self->syn, 0, sizeof(self->syn));
	memset(&self->cin, 0, sizeof(self->cin));
	self->syn.o = (struct syn_opts){
		.threads = 2, .cpus = 1, .methods = 10, .steps = 4000,
		.seed = 5,
	};
	ASSERT_EQ(0, syn_generate(&self->syn, self->replay));
	self->pid = 0;
	self->ctl = self->data = -1;
	self->port = free_port();
	ASSERT_GT(self->port, 0);
	self->lfd = fake_hq_listen(self->port);
	ASSERT_GE(self->lfd, 0);
}

FIXTURE_TEARDOWN(pause)
{
	if (self->pid > 0) {
		kill(self->pid, SIGTERM);
		wait_exit(self->pid, 5000);
	}
	if (self->ctl >= 0)
		close(self->ctl);
	if (self->data >= 0)
		close(self->data);
	close(self->lfd);
	bft_buf_free(&self->cin);
	syn_free(&self->syn);
	remove_tmpdir(self->dir);
}

/*
 * bfcollector with a replay slow enough to last the test (a 512-byte
 * read per second), configured, started and paused: its heartbeat says
 * 'P'.
 */
static void start_paused(struct __test_metadata *_metadata,
			 FIXTURE_DATA(pause) *self, const char *lease)
{
	char hq[64];
	char *argv[] = { "bfcollector", "--hq", hq, "--replay", self->replay,
			 "--replay-chunk", "512", "--replay-delay", "1000",
			 "--connect-timeout", "20", "--pause-lease",
			 (char *)lease, NULL };

	snprintf(hq, sizeof(hq), "127.0.0.1:%d", self->port);
	self->pid = spawn(argv, self->log);
	ASSERT_GT(self->pid, 0);
	ASSERT_EQ(0, fake_hq_greet(self->lfd, HB_MS, &self->cin, &self->ctl,
				   &self->data));
	ASSERT_EQ(0, send_byte(self->ctl, BFP_START));
	ASSERT_TRUE(fake_hq_wait_mode(self->ctl, self->data, &self->cin,
				      BFP_MODE_TRACING, 10000));
	ASSERT_EQ(0, send_byte(self->ctl, BFP_PAUSE));
	ASSERT_TRUE(fake_hq_wait_mode(self->ctl, self->data, &self->cin,
				      BFP_MODE_PAUSED, 10000));
}

static bool log_has(const char *log, const char *what)
{
	char *s = slurp(log, NULL);
	bool has = s && strstr(s, what);

	if (!has)
		fprintf(stderr, "# no \"%s\" in the log:\n%s", what,
			s ? s : "(none)\n");
	free(s);
	return has;
}

TEST_F_TIMEOUT(pause, hq_closes_while_paused, 120)
{
	uint8_t mode;
	int i;

	start_paused(_metadata, self, "0");
	close(self->ctl);
	close(self->data);
	/*
	 * It comes back: the pause was undone before it reconnected (T, or
	 * S if it suspended for the loss meanwhile), from the first beat on.
	 */
	ASSERT_EQ(0, fake_hq_greet(self->lfd, HB_MS, &self->cin, &self->ctl,
				   &self->data));
	for (i = 0, mode = BFP_MODE_TRACING; i < 3 &&
	     (mode == BFP_MODE_TRACING || mode == BFP_MODE_SUSPENDED); i++)
		mode = fake_hq_next_mode(self->ctl, self->data, &self->cin,
					 5000);
	EXPECT_TRUE(mode == BFP_MODE_TRACING || mode == BFP_MODE_SUSPENDED)
		TH_LOG("heartbeat %d after the reconnection: mode %c", i, mode);
	EXPECT_TRUE(log_has(self->log, "HQ's control connection is gone "
			    "while HQ held the targets paused: unpaused them"));
}

TEST_F_TIMEOUT(pause, hq_falls_silent_while_paused, 120)
{
	/* 3 heartbeat intervals: 300 ms of silence end the pause */
	start_paused(_metadata, self, "3");
	EXPECT_TRUE(fake_hq_wait_mode(self->ctl, self->data, &self->cin,
				      BFP_MODE_TRACING, 10000));
	EXPECT_TRUE(log_has(self->log, "HQ said nothing for 3 heartbeat "
			    "intervals"));
}

TEST_F_TIMEOUT(pause, a_renewed_pause_holds, 120)
{
	bool ok;
	int i;

	/* renewed at each heartbeat, a 2 s lease holds twice as long */
	start_paused(_metadata, self, "20");
	for (i = 0, ok = true; i < 40 && ok; i++)
		ok = !send_byte(self->ctl, BFP_PAUSE) &&
		     fake_hq_next_mode(self->ctl, self->data, &self->cin,
				       5000) == BFP_MODE_PAUSED;
	ASSERT_TRUE(ok) TH_LOG("not paused at heartbeat %d", i);
	ASSERT_EQ(0, send_byte(self->ctl, BFP_UNPAUSE));
	EXPECT_TRUE(fake_hq_wait_mode(self->ctl, self->data, &self->cin,
				      BFP_MODE_TRACING, 5000));
}

TEST_HARNESS_MAIN
