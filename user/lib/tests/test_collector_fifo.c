// SPDX-License-Identifier: GPL-2.0
/*
 * A FIFO as a --replay input: its writer stalls mid-stream, and
 * bfcollector must go on serving HQ (heartbeats keep coming); when the
 * writer sends the rest and closes, that is the input's end, and every
 * event reaches HQ before bfcollector finishes with status 0.
 */
#include "kselftest_harness.h"

#include "collector_fixture.h"
#include "fake_hq.h"

FIXTURE(fifo) {
	char dir[PATH_MAX];
	char replay[PATH_MAX + 16];
	char fifo[PATH_MAX + 32];
	char log[PATH_MAX + 16];
	struct syn syn;
	int port, lfd, ctl, data, wfd;
	pid_t pid;
	struct bft_buf cin;
};

FIXTURE_SETUP(fifo)
{
	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	snprintf(self->replay, sizeof(self->replay), "%s/replay", self->dir);
	snprintf(self->fifo, sizeof(self->fifo), "%s/cpu0.bft", self->replay);
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
	self->lfd = fake_hq_listen(self->port);
	ASSERT_GE(self->lfd, 0);
}

FIXTURE_TEARDOWN(fifo)
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

TEST_F_TIMEOUT(fifo, a_stalled_writer_does_not_stop_the_loop, 120)
{
	char hq[64], want[64], *stream, *log;
	char *argv[] = { "bfcollector", "--hq", hq, "--replay", self->replay,
			 "--connect-timeout", "20", NULL };
	size_t len, half;
	struct bft_buf din = { 0 };
	int i, rc;
	bool ok;

	/* the stream goes through a FIFO instead of the file */
	stream = slurp(self->fifo, &len);
	ASSERT_NE(NULL, stream);
	ASSERT_GT(len, 1000u);
	half = len / 2;
	ASSERT_EQ(0, unlink(self->fifo));
	ASSERT_EQ(0, mkfifo(self->fifo, 0600));
	snprintf(hq, sizeof(hq), "127.0.0.1:%d", self->port);
	self->pid = spawn(argv, self->log);
	ASSERT_GT(self->pid, 0);
	self->wfd = open_writer(self->fifo);
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
	log = slurp(self->log, NULL);
	ASSERT_NE(NULL, log);
	snprintf(want, sizeof(want), "%llu events sent, 0 excluded, 0 lost",
		 (unsigned long long)self->syn.events);
	EXPECT_NE(NULL, strstr(log, want)) TH_LOG("%s", log);
	free(log);
	free(stream);
	bft_buf_free(&din);
}

TEST_HARNESS_MAIN
