// SPDX-License-Identifier: GPL-2.0
/*
 * bfcollector stays live for HQ, the test playing HQ against a replay:
 *   - a pause of HQ's does not outlive HQ: HQ pauses (the simulated
 *     kernel stops reading, as the module stops the targets), then goes
 *     away (closes) or falls silent; bfcollector must unpause: its
 *     heartbeats say so (after a reconnection when HQ closed: not 'P'),
 *     and its log;
 *   - a FIFO as the replay's stream, whose writer stalls mid-stream: HQ
 *     still gets heartbeats; the writer's close is the input's end, and
 *     every event reaches HQ before bfcollector finishes with status 0.
 */
#include "kselftest_harness.h"

#include "collector_fixture.h"
#include "fake_hq.h"

#define HB_MS	100

FIXTURE(hqpeer) {
	char dir[PATH_MAX];
	char replay[PATH_MAX + 16];
	char log[PATH_MAX + 16];
	struct syn syn;
	int port, lfd, ctl, data, wfd;
	pid_t pid;
	struct bft_buf cin;
};

FIXTURE_SETUP(hqpeer)
{
	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	snprintf(self->replay, sizeof(self->replay), "%s/replay", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/log", self->dir);
	ASSERT_EQ(0, mkdir(self->replay, 0755));
	memset(&self->syn, 0, sizeof(self->syn));
	memset(&self->cin, 0, sizeof(self->cin));
	self->syn.o = (struct syn_opts){
		.threads = 3, .cpus = 1, .methods = 12, .steps = 3000,
		.seed = 11,
	};
	ASSERT_EQ(0, syn_generate(&self->syn, self->replay));
	self->pid = 0;
	self->ctl = self->data = self->wfd = -1;
	self->port = free_port();
	ASSERT_GT(self->port, 0);
	self->lfd = listen_on(self->port);
	ASSERT_GE(self->lfd, 0);
}

FIXTURE_TEARDOWN(hqpeer)
{
	if (self->wfd >= 0)
		close(self->wfd);
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
			 FIXTURE_DATA(hqpeer) *self, const char *lease)
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
	char *s = bft_test_slurp(log, NULL);
	bool has = s && strstr(s, what);

	if (!has)
		fprintf(stderr, "# no \"%s\" in the log:\n%s", what,
			s ? s : "(none)\n");
	free(s);
	return has;
}

TEST_F_TIMEOUT(hqpeer, hq_closes_while_paused, 120)
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

TEST_F_TIMEOUT(hqpeer, hq_falls_silent_while_paused, 120)
{
	/* 3 heartbeat intervals: 300 ms of silence end the pause */
	start_paused(_metadata, self, "3");
	EXPECT_TRUE(fake_hq_wait_mode(self->ctl, self->data, &self->cin,
				      BFP_MODE_TRACING, 10000));
	EXPECT_TRUE(log_has(self->log, "HQ said nothing for 3 heartbeat "
			    "intervals"));
}

TEST_F_TIMEOUT(hqpeer, a_renewed_pause_holds, 120)
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

/* The FIFO's write end, once bfcollector has it open (at most ~10 s). */
static int open_writer(const char *fifo)
{
	int i, fd = -1;

	for (i = 0; i < 500 && fd < 0; i++) {
		fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			usleep(20000);	/* ENXIO: no reader yet */
	}
	return fd;
}

static int write_all_fd(int fd, const char *p, size_t n)
{
	while (n) {
		struct pollfd w = { .fd = fd, .events = POLLOUT };
		ssize_t r;

		if (poll(&w, 1, 10000) != 1)
			return -1;
		r = write(fd, p, n);
		if (r < 0 && errno != EAGAIN)
			return -1;
		if (r > 0)
			p += r, n -= (size_t)r;
	}
	return 0;
}

TEST_F_TIMEOUT(hqpeer, a_stalled_writer_does_not_stop_the_loop, 120)
{
	char hq[64], want[64], *stream, *log, fifo[PATH_MAX + 32];
	char *argv[] = { "bfcollector", "--hq", hq, "--replay", self->replay,
			 "--connect-timeout", "20", NULL };
	size_t len, half;
	struct bft_buf din = { 0 };
	int i, rc;
	bool ok;

	/* the stream goes through a FIFO instead of the file */
	snprintf(fifo, sizeof(fifo), "%s/cpu0.bft", self->replay);
	stream = bft_test_slurp(fifo, &len);
	ASSERT_NE(NULL, stream);
	ASSERT_GT(len, 1000u);
	half = len / 2;
	ASSERT_EQ(0, unlink(fifo));
	ASSERT_EQ(0, mkfifo(fifo, 0600));
	snprintf(hq, sizeof(hq), "127.0.0.1:%d", self->port);
	self->pid = spawn(argv, self->log);
	ASSERT_GT(self->pid, 0);
	self->wfd = open_writer(fifo);
	ASSERT_GE(self->wfd, 0);
	ASSERT_EQ(0, write_all_fd(self->wfd, stream, half));
	ASSERT_EQ(0, fake_hq_greet(self->lfd, 100, &self->cin, &self->ctl,
				   &self->data));
	ASSERT_EQ(0, send_byte(self->ctl, BFP_START));
	/* the writer stalls: HQ still hears from bfcollector, beat after beat */
	for (i = 0, ok = true; i < 10 && ok; i++)
		ok = fake_hq_wait_mode(self->ctl, self->data, &self->cin,
				       BFP_MODE_TRACING, 5000);
	ASSERT_TRUE(ok) TH_LOG("no heartbeat %d after the writer stalled", i);
	/* the rest, and the writer's close is the end of the input */
	ASSERT_EQ(0, write_all_fd(self->wfd, stream + half, len - half));
	close(self->wfd);
	self->wfd = -1;
	EXPECT_TRUE(fake_hq_wait_mode(self->ctl, self->data, &self->cin,
				      BFP_MODE_SHUTDOWN, 10000));
	/* up to its end: bfcollector shuts the data connection down */
	for (i = 0; i < 200 && read_some(self->data, &din, 100); i++)
		din.len = 0;
	close(self->data);
	close(self->ctl);
	self->data = self->ctl = -1;
	rc = wait_exit(self->pid, 10000);
	self->pid = 0;
	EXPECT_EQ(0, rc);
	log = bft_test_slurp(self->log, NULL);
	ASSERT_NE(NULL, log);
	snprintf(want, sizeof(want), "%llu events sent, 0 excluded, 0 lost",
		 (unsigned long long)self->syn.events);
	EXPECT_NE(NULL, strstr(log, want)) TH_LOG("%s", log);
	free(log);
	free(stream);
	bft_buf_free(&din);
}

TEST_HARNESS_MAIN
