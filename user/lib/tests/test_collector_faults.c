// SPDX-License-Identifier: GPL-2.0
/*
 * Faults between bfcollector and HQ, without a kernel:
 *   - HQ (played by this test) sends an unknown message id, or a truncated
 *     configuration: bfcollector answers Error (99), closes cleanly and
 *     exits non-zero, within a bounded time;
 *   - an agent sends garbage to bfhq: it gets an error message and bfhq
 *     goes on serving a real agent;
 *   - bfhq is killed mid-trace and restarted: bfcollector suspends,
 *     reconnects, sends a data break, and the new trace is consistent;
 *   - bfcollector is killed and restarted: bfhq ends the first trace and
 *     reconstructs the second one exactly;
 *   - frames cut while they are leaves (a break, a missed exit, the end)
 *     are closed in bfhq's outputs without it crashing.
 */
#include "kselftest_harness.h"

#include "wire/bfp_msg.h"
#include "collector_fixture.h"
#include "fake_hq.h"

FIXTURE(faults) {
	char dir[PATH_MAX];
	char replay[PATH_MAX + 16];
	char hqout[PATH_MAX + 16];
	char log[PATH_MAX + 16];
	struct syn syn;
	int port;
	int lfd;
	pid_t pids[4];
};

FIXTURE_SETUP(faults)
{
	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	snprintf(self->replay, sizeof(self->replay), "%s/replay", self->dir);
	snprintf(self->hqout, sizeof(self->hqout), "%s/hq", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/log", self->dir);
	ASSERT_EQ(0, mkdir(self->replay, 0755));
	memset(&self->syn, 0, sizeof(self->syn));
	memset(self->pids, 0, sizeof(self->pids));
	self->port = free_port();
	self->lfd = -1;
	ASSERT_GT(self->port, 0);
	self->syn.o = (struct syn_opts){
		.threads = 4, .cpus = 2, .methods = 30, .noret_depth = 6,
		.steps = slow_env() ? 4000 : 40000, .seed = 77,
	};
	ASSERT_EQ(0, syn_generate(&self->syn, self->replay));
}

FIXTURE_TEARDOWN(faults)
{
	unsigned int i;

	/* only the processes this test started */
	for (i = 0; i < 4; i++)
		if (self->pids[i] > 0)
			wait_exit(self->pids[i], 0);
	if (self->lfd >= 0)
		close(self->lfd);
	syn_free(&self->syn);
	remove_tmpdir(self->dir);
}

static pid_t start_collector(FIXTURE_DATA(faults) *self, const char *extra,
			     const char *extra2)
{
	static char hq[64];
	char *argv[] = { "bfcollector", "--hq", hq, "--replay", self->replay,
			 "--connect-timeout", "20", "--handshake-timeout",
			 "1500", (char *)extra, (char *)extra2, NULL };

	snprintf(hq, sizeof(hq), "127.0.0.1:%d", self->port);
	return spawn(argv, self->log);
}

/* The collector's hello, then what HQ sends; the collector's answer. */
static void hq_sends(struct __test_metadata *_metadata,
		     FIXTURE_DATA(faults) *self, const uint8_t *msg, size_t n,
		     const char *expect_error)
{
	uint8_t hello[2], reply[4096];
	struct bfp_msg m = { 0 };
	struct bfp_error err;
	size_t got;
	bool eof;
	int fd, rc;

	self->lfd = listen_on(self->port);
	ASSERT_GE(self->lfd, 0);
	self->pids[0] = start_collector(self, NULL, NULL);
	ASSERT_GT(self->pids[0], 0);
	fd = accept_within(self->lfd, 10000);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(2, read_until_eof(fd, hello, 2, 5000, &eof));
	EXPECT_EQ(0, hello[0]);
	EXPECT_EQ(1, hello[1]);
	ASSERT_EQ((ssize_t)n, write(fd, msg, n));
	/* Error (99), then a clean close (EOF, not a reset) */
	got = read_until_eof(fd, reply, sizeof(reply), 5000, &eof);
	EXPECT_TRUE(eof);
	ASSERT_GT(got, 3);
	ASSERT_EQ((int)got, bfp_decode(reply, got, 1, BFP_CTX_ANY, &m, &err))
		TH_LOG("%s", err.msg);
	EXPECT_EQ(BFP_ERROR, m.id);
	EXPECT_NE(NULL, strstr(m.str, expect_error)) TH_LOG("%s", m.str);
	bfp_msg_free(&m);
	close(fd);
	rc = wait_exit(self->pids[0], 10000);
	self->pids[0] = 0;
	EXPECT_EQ(3, rc);	/* EXIT_PROTOCOL */
}

static size_t valid_config(uint8_t *out, size_t cap)
{
	struct bfp_config c;
	struct bfp_msg m = { .id = BFP_CONFIG, .config = &c };
	struct bft_buf b = { 0 };
	size_t n;

	bfp_config_init(&c);
	bfp_encode(&b, 1, &m);
	n = b.len < cap ? b.len : cap;
	memcpy(out, b.data, n);
	bft_buf_free(&b);
	return n;
}

TEST_F_TIMEOUT(faults, hq_sends_an_unknown_message_id, 600)
{
	uint8_t msg[1024];
	size_t n = valid_config(msg, sizeof(msg));

	msg[n++] = 13;		/* no such message */
	hq_sends(_metadata, self, msg, n, "unknown message id 13");
}

TEST_F_TIMEOUT(faults, hq_sends_a_message_out_of_place, 600)
{
	uint8_t msg[1024];
	size_t n = valid_config(msg, sizeof(msg));

	/* a method entry on the control connection */
	memset(msg + n, 0, 15);
	msg[n] = BFP_METHOD_ENTRY;
	hq_sends(_metadata, self, msg, n + 15, "unexpected message");
}

TEST_F_TIMEOUT(faults, hq_sends_a_configuration_shorter_than_its_length, 600)
{
	uint8_t msg[1024];
	size_t n = valid_config(msg, sizeof(msg));

	/* the length announces it all; a third never comes (HQ stays) */
	hq_sends(_metadata, self, msg, n - n / 3, "stopped in the middle");
}

TEST_F_TIMEOUT(faults, hq_sends_a_configuration_cut_inside, 600)
{
	uint8_t msg[1024];
	size_t n = valid_config(msg, sizeof(msg)), len = (n - 5) / 2;

	/* a consistent length, but the serialization stream ends early */
	msg[1] = (uint8_t)(len >> 24), msg[2] = (uint8_t)(len >> 16);
	msg[3] = (uint8_t)(len >> 8), msg[4] = (uint8_t)len;
	hq_sends(_metadata, self, msg, 5 + len, "truncated");
}

TEST_F_TIMEOUT(faults, hq_sends_start_before_the_configuration, 600)
{
	uint8_t msg[1] = { BFP_START };

	hq_sends(_metadata, self, msg, 1, "not the configuration");
}

/* ---- bfhq ---- */

static pid_t start_hq(FIXTURE_DATA(faults) *self, const char *out,
		      const char *count)
{
	static char port[16];
	char *argv[] = { "bfhq", "-p", port, "-o", (char *)out, "--start",
			 "--count", (char *)count, "--timeout", "120",
			 "--gap-timeout", "500", "--heartbeat", "200", NULL };

	snprintf(port, sizeof(port), "%d", self->port);
	return spawn(argv, self->log);
}

static int connect_port(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

TEST_F_TIMEOUT(faults, garbage_from_an_agent_does_not_stop_bfhq, 600)
{
	uint8_t buf[512];
	struct bfp_msg m = { 0 };
	struct bfp_error err;
	char *calls, *expected;
	size_t n;
	bool eof;
	int fd, fd2, rc;

	self->pids[1] = start_hq(self, self->hqout, "2");
	ASSERT_GT(self->pids[1], 0);
	ASSERT_TRUE(wait_listening(self->port, slow_env() ? 30000 : 5000));
	/* garbage as a greeting: an error, and the connection closes */
	fd = connect_port(self->port);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(16, write(fd, "GET / HTTP/1.0\r\n", 16));
	n = read_until_eof(fd, buf, sizeof(buf), 5000, &eof);
	EXPECT_TRUE(eof);
	ASSERT_GT(n, 3);
	ASSERT_EQ((int)n, bfp_decode(buf, n, 1, BFP_CTX_ANY, &m, &err));
	EXPECT_EQ(BFP_ERROR, m.id);
	close(fd);
	/* a proper hello, then garbage on the control connection */
	fd2 = connect_port(self->port);
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(2, write(fd2, "\x00\x01", 2));
	usleep(200000);
	ASSERT_EQ(4, write(fd2, "\xee\xee\xee\xee", 4));
	n = read_until_eof(fd2, buf, sizeof(buf), 5000, &eof);
	EXPECT_TRUE(eof);
	/* configuration, start, then the error naming the garbage */
	EXPECT_NE(NULL, memmem(buf, n, "unknown message id 238", 22));
	close(fd2);
	/* and a real agent is served in full meanwhile */
	self->pids[0] = start_collector(self, NULL, NULL);
	ASSERT_GT(self->pids[0], 0);
	rc = wait_exit(self->pids[0], slow_env() ? 300000 : 60000);
	self->pids[0] = 0;
	EXPECT_EQ(0, rc);
	rc = wait_exit(self->pids[1], slow_env() ? 60000 : 20000);
	self->pids[1] = 0;
	EXPECT_EQ(0, rc);
	calls = complete_calls(self->hqout, 2);
	expected = syn_expected_calls(&self->syn);
	ASSERT_NE(NULL, calls) show_log(self->log);
	EXPECT_STREQ(expected, calls);
	free(calls);
	free(expected);
	bfp_msg_free(&m);
}

/* Replay pacing that makes the trace last about 4 s, however long. */
static const char *paced_chunk(FIXTURE_DATA(faults) *self)
{
	static char opt[48];
	char path[PATH_MAX + 32];
	struct stat st;
	long chunk = 1024;

	snprintf(path, sizeof(path), "%s/cpu0.bft", self->replay);
	if (!stat(path, &st))
		chunk = st.st_size / 100 > 16 ? st.st_size / 100 : 16;
	snprintf(opt, sizeof(opt), "--replay-chunk=%ld", chunk);
	return opt;
}

/* Wait (bounded) until the log holds text n times. */
static bool log_has(const char *log, const char *text, int n, int ms)
{
	int i;

	for (i = 0; i < ms / 50; i++) {
		char *s = bft_test_slurp(log, NULL), *p = s;
		int k = 0;

		while (p && (p = strstr(p, text))) {
			k++;
			p++;
		}
		free(s);
		if (k >= n)
			return true;
		usleep(50000);
	}
	return false;
}

/* No exit names a frame that is not open, in any thread. */
static void consistent_calls(struct __test_metadata *_metadata,
			     const char *path)
{
	char *calls = bft_test_slurp(path, NULL);

	ASSERT_NE(NULL, calls) TH_LOG("%s", path);
	EXPECT_EQ(NULL, strstr(calls, "x!"));
	EXPECT_NE(NULL, strstr(calls, " e"));
	free(calls);
}

TEST_F_TIMEOUT(faults, bfhq_killed_mid_trace_and_restarted, 600)
{
	char out2[PATH_MAX + 16], path[PATH_MAX + 64], *log, *sum;
	int rc;

	snprintf(out2, sizeof(out2), "%s/hq2", self->dir);
	self->pids[1] = start_hq(self, self->hqout, "1");
	ASSERT_GT(self->pids[1], 0);
	ASSERT_TRUE(wait_listening(self->port, slow_env() ? 30000 : 5000));
	/* a paced replay: the trace lasts a few seconds */
	self->pids[0] = start_collector(self, slow_env() ? "--replay-delay=100" :
					"--replay-delay=40",
					paced_chunk(self));
	ASSERT_GT(self->pids[0], 0);
	ASSERT_TRUE(log_has(self->log, "connected to HQ", 1, 30000));
	usleep(slow_env() ? 1500000 : 800000);
	kill(self->pids[1], SIGKILL);
	wait_exit(self->pids[1], 5000);
	self->pids[1] = 0;
	usleep(300000);
	self->pids[2] = start_hq(self, out2, "1");
	ASSERT_GT(self->pids[2], 0);
	rc = wait_exit(self->pids[0], slow_env() ? 300000 : 60000);
	self->pids[0] = 0;
	EXPECT_EQ(0, rc);
	rc = wait_exit(self->pids[2], 20000);
	self->pids[2] = 0;
	EXPECT_EQ(0, rc);
	log = bft_test_slurp(self->log, NULL);
	ASSERT_NE(NULL, log);
	EXPECT_NE(NULL, strstr(log, "lost the connection to HQ"));
	EXPECT_NE(NULL, strstr(log, "tracing is suspended"));
	snprintf(path, sizeof(path), "%s/trace-1/calls.txt", out2);
	consistent_calls(_metadata, path);
	snprintf(path, sizeof(path), "%s/trace-1/summary.txt", out2);
	sum = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, sum);
	/* the data break sent after reconnecting */
	EXPECT_EQ(NULL, strstr(sum, "data breaks:   0 ")) TH_LOG("%s", sum);
	EXPECT_NE(NULL, strstr(sum, "status:        complete"));
	if (!_metadata->passed)
		show_log(self->log);
	free(sum);
	free(log);
}

TEST_F_TIMEOUT(faults, collector_killed_and_restarted, 600)
{
	char path[PATH_MAX + 64], *calls, *expected, *sum;
	int rc;

	self->pids[1] = start_hq(self, self->hqout, "2");
	ASSERT_GT(self->pids[1], 0);
	ASSERT_TRUE(wait_listening(self->port, slow_env() ? 30000 : 5000));
	self->pids[0] = start_collector(self, slow_env() ? "--replay-delay=100" :
					"--replay-delay=40",
					paced_chunk(self));
	ASSERT_GT(self->pids[0], 0);
	ASSERT_TRUE(log_has(self->log, "connected to HQ", 1, 30000));
	usleep(slow_env() ? 1500000 : 800000);
	kill(self->pids[0], SIGKILL);
	wait_exit(self->pids[0], 5000);
	self->pids[0] = 0;
	self->pids[2] = start_collector(self, NULL, NULL);
	ASSERT_GT(self->pids[2], 0);
	rc = wait_exit(self->pids[2], slow_env() ? 300000 : 60000);
	self->pids[2] = 0;
	EXPECT_EQ(0, rc);
	rc = wait_exit(self->pids[1], 20000);
	self->pids[1] = 0;
	EXPECT_EQ(0, rc);
	/* the killed agent's trace ends, consistent as far as it went */
	snprintf(path, sizeof(path), "%s/trace-1/calls.txt", self->hqout);
	consistent_calls(_metadata, path);
	snprintf(path, sizeof(path), "%s/trace-1/summary.txt", self->hqout);
	sum = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, sum);
	free(sum);
	/* the restarted one is complete and exact */
	snprintf(path, sizeof(path), "%s/trace-2/calls.txt", self->hqout);
	calls = bft_test_slurp(path, NULL);
	expected = syn_expected_calls(&self->syn);
	ASSERT_NE(NULL, calls);
	EXPECT_STREQ(expected, calls);
	if (!_metadata->passed)
		show_log(self->log);
	free(calls);
	free(expected);
}

/* bfhq --control/--send: one command, one answer line. */
static int hq_ctl(FIXTURE_DATA(faults) *self, const char *sock,
		  const char *cmd)
{
	char *argv[] = { "bfhq", "--control", (char *)sock, "--send",
			 (char *)cmd, NULL };
	pid_t pid = spawn(argv, self->log);

	return pid > 0 ? wait_exit(pid, 10000) : -1;
}

/* Usage errors exit 2 as bfctl's do; --timeout's end is 3. */
TEST_F(faults, bfhq_usage_errors_exit_2)
{
	char *bad_opt[] = { "bfhq", "--no-such-option", NULL };
	char *bad_val[] = { "bfhq", "--port", "seven", NULL };
	char *bad_insp[] = { "bfhq", "--counters", "7001", "--bogus", NULL };
	char port[16];
	char *timeout[] = { "bfhq", "-p", port, "-o", self->hqout,
			    "--timeout", "1", NULL };

	EXPECT_EQ(2, wait_exit(spawn(bad_opt, self->log), 10000));
	EXPECT_EQ(2, wait_exit(spawn(bad_val, self->log), 10000));
	EXPECT_EQ(2, wait_exit(spawn(bad_insp, self->log), 10000));
	snprintf(port, sizeof(port), "%d", self->port);
	EXPECT_EQ(3, wait_exit(spawn(timeout, self->log), 30000));
}

/*
 * A backend bfcollector does not know is a usage error, and says which it
 * knows, as bfctl does: from --backend, and from $BFT_BACKEND, which it
 * once took as auto.
 */
TEST_F(faults, collector_refuses_an_unknown_backend)
{
	char *by_opt[] = { "bfcollector", "--backend", "foo", "--output",
			   self->hqout, NULL };
	char *by_env[] = { "bfcollector", "--output", self->hqout, NULL };
	char *log;

	EXPECT_EQ(2, wait_exit(spawn(by_opt, self->log), 10000));
	setenv("BFT_BACKEND", "foo", 1);
	EXPECT_EQ(2, wait_exit(spawn(by_env, self->log), 10000));
	unsetenv("BFT_BACKEND");
	log = bft_test_slurp(self->log, NULL);
	ASSERT_NE(NULL, log);
	{
		const char *first = strstr(log, "bfcollector: unknown backend 'foo' (kmod, bpf, inline or auto)");

		ASSERT_NE(NULL, first);
		EXPECT_NE(NULL, strstr(first + 1, "unknown backend 'foo'"));
	}
	free(log);
}

/* The count of the collector's summary line ("..., N dropped while ..."). */
static long long dropped_while_suspended(const char *log)
{
	const char *p = strstr(log, " dropped while suspended");

	while (p && p > log && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return p ? strtoll(p, NULL, 10) : -1;
}

TEST_F_TIMEOUT(faults, bfhq_control_socket_drives_the_agent, 600)
{
	char sock[PATH_MAX + 16], port[16], path[PATH_MAX + 64], *sum, *log;
	char *argv[] = { "bfhq", "-p", port, "-o", self->hqout, "-c", sock,
			 "--count", "1", "--timeout", "120", NULL };
	int rc;

	snprintf(sock, sizeof(sock), "%s/ctl.sock", self->dir);
	snprintf(port, sizeof(port), "%d", self->port);
	self->pids[1] = spawn(argv, self->log);
	ASSERT_GT(self->pids[1], 0);
	ASSERT_TRUE(wait_listening(self->port, slow_env() ? 30000 : 5000));
	/* nobody to start yet */
	EXPECT_EQ(1, hq_ctl(self, sock, "start"));
	self->pids[0] = start_collector(self, slow_env() ? "--replay-delay=100" :
					"--replay-delay=40",
					paced_chunk(self));
	ASSERT_GT(self->pids[0], 0);
	/* the agent waits for start */
	ASSERT_TRUE(log_has(self->log, "connected to HQ", 1, 30000));
	EXPECT_EQ(0, hq_ctl(self, sock, "status"));
	usleep(slow_env() ? 2000000 : 500000);
	EXPECT_EQ(0, hq_ctl(self, sock, "start"));
	usleep(slow_env() ? 2000000 : 400000);
	EXPECT_EQ(0, hq_ctl(self, sock, "suspend"));
	usleep(slow_env() ? 1000000 : 300000);
	EXPECT_EQ(0, hq_ctl(self, sock, "unsuspend"));
	usleep(slow_env() ? 1000000 : 300000);
	EXPECT_EQ(0, hq_ctl(self, sock, "stop"));
	EXPECT_EQ(1, hq_ctl(self, sock, "dance"));
	rc = wait_exit(self->pids[0], slow_env() ? 120000 : 30000);
	self->pids[0] = 0;
	EXPECT_EQ(0, rc);
	rc = wait_exit(self->pids[1], 20000);
	self->pids[1] = 0;
	EXPECT_EQ(0, rc);
	snprintf(path, sizeof(path), "%s/trace-1/calls.txt", self->hqout);
	consistent_calls(_metadata, path);
	snprintf(path, sizeof(path), "%s/trace-1/summary.txt", self->hqout);
	sum = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, sum);
	/* the suspension is a data break; stop ended the trace early */
	EXPECT_EQ(NULL, strstr(sum, "data breaks:   0 ")) TH_LOG("%s", sum);
	EXPECT_NE(NULL, strstr(sum, "status:        complete"));
	log = bft_test_slurp(self->log, NULL);
	ASSERT_NE(NULL, log);
	EXPECT_NE(NULL, strstr(log, "HQ: stop: finishing"));
	EXPECT_NE(NULL, strstr(log, "ok suspend sent to 1 agent"));
	/* the replay went on reading while suspended, as a kernel writes */
	EXPECT_LT(0, dropped_while_suspended(log));
	if (!_metadata->passed)
		show_log(self->log);
	free(sum);
	free(log);
}

static void put_msg(struct bft_buf *b, const struct bfp_msg *m)
{
	bfp_encode(b, 1, m);
}

TEST_F_TIMEOUT(faults, bfhq_reports_a_gap_without_waiting_forever, 120)
{
	struct bft_buf out = { 0 }, in = { 0 }, din = { 0 };
	struct bfp_msg m = { 0 }, e = { 0 };
	char path[PATH_MAX + 64], *calls;
	uint32_t seqs[] = { 0, 1, 3, 4 };	/* 2 never comes */
	uint8_t run;
	int ctl, data, i;

	self->pids[1] = start_hq(self, self->hqout, "1");
	ASSERT_GT(self->pids[1], 0);
	ASSERT_TRUE(wait_listening(self->port, slow_env() ? 30000 : 5000));
	ctl = connect_port(self->port);
	ASSERT_GE(ctl, 0);
	ASSERT_EQ(2, write(ctl, "\x00\x01", 2));
	ASSERT_GT(get_msg(ctl, &in, 1, BFP_CTX_ANY, &m), 0);
	ASSERT_EQ(BFP_CONFIG, m.id);
	run = (uint8_t)m.config->run_id;
	data = connect_port(self->port);
	ASSERT_GE(data, 0);
	ASSERT_EQ(2, write(data, (uint8_t[]){ BFP_DATA_HELLO, run }, 2));
	ASSERT_GT(get_msg(data, &din, 1, BFP_CTX_ANY, &m), 0);
	ASSERT_EQ(BFP_DATA_HELLO_REPLY, m.id);
	e = (struct bfp_msg){ .id = BFP_MAP_THREAD, .str = "t (1/1)",
			      .str_len = 7 };
	put_msg(&out, &e);
	for (i = 0; i < 4; i++) {
		e = (struct bfp_msg){ .id = i % 2 ? BFP_METHOD_EXIT :
						    BFP_METHOD_ENTRY,
				      .seq = seqs[i], .method = 7 + i / 2,
				      .time = (uint32_t)i };
		put_msg(&out, &e);
	}
	ASSERT_EQ((ssize_t)out.len, write(data, out.data, out.len));
	/* gap timeout 500 ms: reported while the agent is still there */
	EXPECT_TRUE(log_has(self->log, "gap: sequences 2..2 (1) never arrived",
			    1, 5000));
	/* a data break at the next sequence (an idle agent's) is taken */
	out.len = 0;
	e = (struct bfp_msg){ .id = BFP_DATA_BREAK, .seq = 5 };
	put_msg(&out, &e);
	ASSERT_EQ((ssize_t)out.len, write(ctl, out.data, out.len));
	usleep(300000);
	close(data);
	close(ctl);
	EXPECT_EQ(0, wait_exit(self->pids[1], 20000));
	self->pids[1] = 0;
	snprintf(path, sizeof(path), "%s/trace-1/calls.txt", self->hqout);
	calls = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, calls);
	/* the gap cuts the stacks ("|"), routing goes on, the break too */
	EXPECT_STREQ("t (1/1): e7 x7 | e8 x8 |\n", calls);
	free(calls);
	bfp_msg_free(&m);
	bft_buf_free(&out);
	bft_buf_free(&in);
	bft_buf_free(&din);
}

/*
 * A leaf frame (entered, nothing under it yet) that ends with a note: cut by
 * a data break, closed by a mismatched exit, still open at the end.  When it
 * was a thread's only frame, bfhq read below its stack and crashed (the
 * control socket test hit it when a suspension's data break came at such a
 * moment); deeper, tree.txt named its parent instead.
 */
TEST_F_TIMEOUT(faults, bfhq_closes_leaf_frames_that_end_with_a_note, 120)
{
	static const char tree[] =
		"# thread 1: a (1/1) (1 calls, depth 1)\n"
		"  DURATION | FUNCTION\n"
		"           | #7() {\n"
		"      0 ms | } /* #7: data break */\n"
		"           | ---- data break: 1 frame cut ----\n"
		"\n"
		"# thread 2: b (1/2) (3 calls, depth 2)\n"
		"  DURATION | FUNCTION\n"
		"           | #8() {\n"
		"           |   #9() {\n"
		"      2 ms |   } /* #9: no exit seen */\n"
		"      3 ms | } /* #8 */\n"
		"           | #10() {\n"
		"      0 ms | } /* #10: still open at the end */\n"
		"\n";
	/* sequence numbers from 0 */
	static const struct {
		uint16_t thread;
		uint8_t id;
		uint32_t method, time;
	} ev[] = {
		{ 1, BFP_METHOD_ENTRY, 7, 1 },	/* a's lone leaf: the break */
		{ 2, BFP_METHOD_ENTRY, 8, 2 },
		{ 2, BFP_METHOD_ENTRY, 9, 3 },	/* a leaf over 8 ... */
		{ 2, BFP_METHOD_EXIT, 8, 5 },	/* ... that never exits */
		{ 2, BFP_METHOD_ENTRY, 10, 6 },	/* b's lone leaf: the end */
	};
	struct bft_buf out = { 0 }, in = { 0 }, din = { 0 };
	struct bfp_msg m = { 0 }, e = { 0 };
	char path[PATH_MAX + 64], *got;
	unsigned int i;
	uint8_t run;
	int ctl, data;

	self->pids[1] = start_hq(self, self->hqout, "1");
	ASSERT_GT(self->pids[1], 0);
	ASSERT_TRUE(wait_listening(self->port, slow_env() ? 30000 : 5000));
	ctl = connect_port(self->port);
	ASSERT_GE(ctl, 0);
	ASSERT_EQ(2, write(ctl, "\x00\x01", 2));
	ASSERT_GT(get_msg(ctl, &in, 1, BFP_CTX_ANY, &m), 0);
	ASSERT_EQ(BFP_CONFIG, m.id);
	run = (uint8_t)m.config->run_id;
	/* The break, before sequence 1, is on the control socket before the
	 * data connection exists: bfhq has read it once it answers the data
	 * hello, so it lands between a's entry and b's events. */
	e = (struct bfp_msg){ .id = BFP_DATA_BREAK, .seq = 1 };
	put_msg(&out, &e);
	ASSERT_EQ((ssize_t)out.len, write(ctl, out.data, out.len));
	data = connect_port(self->port);
	ASSERT_GE(data, 0);
	ASSERT_EQ(2, write(data, (uint8_t[]){ BFP_DATA_HELLO, run }, 2));
	ASSERT_GT(get_msg(data, &din, 1, BFP_CTX_ANY, &m), 0);
	ASSERT_EQ(BFP_DATA_HELLO_REPLY, m.id);
	out.len = 0;
	e = (struct bfp_msg){ .id = BFP_MAP_THREAD, .thread = 1,
			      .str = "a (1/1)", .str_len = 7 };
	put_msg(&out, &e);
	e = (struct bfp_msg){ .id = BFP_MAP_THREAD, .thread = 2,
			      .str = "b (1/2)", .str_len = 7 };
	put_msg(&out, &e);
	for (i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		e = (struct bfp_msg){ .id = ev[i].id, .seq = i,
				      .thread = ev[i].thread,
				      .method = ev[i].method,
				      .time = ev[i].time };
		put_msg(&out, &e);
	}
	ASSERT_EQ((ssize_t)out.len, write(data, out.data, out.len));
	close(data);
	close(ctl);
	EXPECT_EQ(0, wait_exit(self->pids[1], 20000));
	self->pids[1] = 0;
	snprintf(path, sizeof(path), "%s/trace-1/calls.txt", self->hqout);
	got = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, got) show_log(self->log);
	EXPECT_STREQ("a (1/1): e7 |\nb (1/2): e8 e9 x8 e10\n", got);
	free(got);
	snprintf(path, sizeof(path), "%s/trace-1/tree.txt", self->hqout);
	got = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, got);
	EXPECT_STREQ(tree, got);
	free(got);
	bfp_msg_free(&m);
	bft_buf_free(&out);
	bft_buf_free(&in);
	bft_buf_free(&din);
}

TEST_HARNESS_MAIN
