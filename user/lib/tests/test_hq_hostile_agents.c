// SPDX-License-Identifier: GPL-2.0
/*
 * A real bfhq against agents that flood it (bfhq.1, "Bounds"): the peak
 * memory of its process (VmHWM) and the bytes under its output directory
 * are measured after each flood, printed, and held to the bound per agent
 * (128 MiB of memory, 64 MiB of disk); then a fresh agent still gets its
 * trace written out right.  And a bfhq that served many traces keeps
 * nothing of those that ended.
 */
#include <ftw.h>
#include <netinet/tcp.h>

#include "kselftest_harness.h"

#include "bft_test.h"
#include "wire/bfp_msg.h"
#include "collector_fixture.h"
#include "hq.h"

#define MIB		(1024ull * 1024)
#define RSS_BOUND	(128 * MIB)
#define DISK_BOUND	(64 * MIB)
#define WAIT_MS		60000

/* A figure as a TAP comment, out at once (the harness forks each test). */
#define FIGURE(...)	(printf(__VA_ARGS__), fflush(stdout))

FIXTURE(hostile)
{
	char dir[PATH_MAX / 2];
	char out[PATH_MAX / 2 + 8];
	char log[PATH_MAX / 2 + 8];
	int port;
	pid_t pid;
};

FIXTURE_SETUP(hostile)
{
	char port[16];
	char *argv[] = { "bfhq", "-p", port, "-o", self->out, "--start",
			 "--timeout", "900", NULL };

	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	snprintf(self->out, sizeof(self->out), "%s/hq", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/log", self->dir);
	self->port = free_port();
	snprintf(port, sizeof(port), "%d", self->port);
	self->pid = spawn(argv, self->log);
	ASSERT_GT(self->pid, 0);
	ASSERT_TRUE(wait_listening(self->port, 30000));
}

FIXTURE_TEARDOWN(hostile)
{
	if (self->pid > 0) {
		kill(self->pid, SIGTERM);
		wait_exit(self->pid, 30000);
	}
	remove_tmpdir(self->dir);
}

/* A field of /proc/PID/status, in bytes (0: not there). */
static uint64_t proc_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	size_t n = strlen(field);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			sscanf(line + n + 1, "%llu", &kb);
	fclose(f);
	return kb * 1024;
}

static uint64_t disk_total;

static int add_size(const char *p, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)p, (void)ftw;
	if (flag == FTW_F)
		disk_total += (uint64_t)st->st_size;
	return 0;
}

/* Bytes of the files under dir. */
static uint64_t disk_use(const char *dir)
{
	disk_total = 0;
	nftw(dir, add_size, 16, FTW_PHYS);
	return disk_total;
}

static int connect_hq(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* n bytes to fd: how many went before the peer closed. */
static size_t send_all(int fd, const void *p, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = send(fd, (const char *)p + done, n - done,
				 MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	return done;
}

static void send_msg(int fd, const struct bfp_msg *m)
{
	struct bft_buf b = { 0 };

	if (!bfp_encode(&b, 2, m))
		send_all(fd, b.data, b.len);
	bft_buf_free(&b);
}

/*
 * An agent's hello (version 2): the control socket, its run id from the
 * configuration HQ sends back (-1: none).
 */
static int agent_hello(int port, int *run)
{
	uint8_t hello[2] = { BFP_HELLO, 2 }, buf[65536];
	size_t len = 0;
	int fd = connect_hq(port);

	*run = -1;
	if (fd < 0)
		return -1;
	send_all(fd, hello, 2);
	while (*run < 0 && len < sizeof(buf)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct bfp_msg m = { 0 };
		struct bfp_error err;
		ssize_t r;
		int n;

		if (poll(&p, 1, WAIT_MS) <= 0)
			break;
		r = read(fd, buf + len, sizeof(buf) - len);
		if (r <= 0)
			break;
		len += (size_t)r;
		n = bfp_decode(buf, len, 2, BFP_CTX_AGENT_CONTROL, &m, &err);
		if (n > 0 && m.id == BFP_CONFIG && m.config)
			*run = (uint8_t)m.config->run_id;
		bfp_msg_free(&m);
		if (n < 0)
			break;
	}
	return fd;
}

/* A data connection for run: the socket (its reply is not waited for). */
static int agent_data(int port, int run)
{
	uint8_t dhello[2] = { BFP_DATA_HELLO, (uint8_t)run };
	int fd = connect_hq(port);

	if (fd >= 0)
		send_all(fd, dhello, 2);
	return fd;
}

/*
 * Hang up as an agent does: what bfhq sent read to its end, for a close
 * with unread bytes would be a reset, which drops what bfhq has not read.
 */
static void hang_up(int fd)
{
	char buf[4096];

	shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, WAIT_MS) <= 0 || read(fd, buf, sizeof(buf)) <= 0)
			break;
	}
	close(fd);
}

static char *slurp_path(const char *dir, unsigned int trace, const char *name)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/trace-%u/%s", dir, trace, name);
	return bft_test_slurp(path, NULL);
}

/* Wait until trace-N/summary.txt is written (bfhq writes it last). */
static bool wait_trace(const char *dir, unsigned int trace)
{
	char path[PATH_MAX + 64];
	int i;

	snprintf(path, sizeof(path), "%s/trace-%u/summary.txt", dir, trace);
	for (i = 0; i < WAIT_MS / 10; i++) {
		if (!access(path, R_OK))
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * A well-behaved agent: `calls` calls of one method on one thread, then
 * it hangs up.  Its trace is trace-<trace>.
 */
static void good_agent(struct __test_metadata *_metadata, int port,
		       const char *dir, unsigned int trace, uint32_t calls)
{
	struct bfp_msg map = { .id = BFP_MAP_METHOD, .method = 1,
			       .str = "demo.work()", .str_len = 11 };
	struct bfp_msg tmap = { .id = BFP_MAP_THREAD, .thread = 1,
				.str = "main", .str_len = 4 };
	struct bft_buf b = { 0 };
	char *text;
	uint32_t i;
	int run, ctl = agent_hello(port, &run), data;

	ASSERT_LE(0, ctl);
	ASSERT_LE(0, run);
	data = agent_data(port, run);
	ASSERT_LE(0, data);
	send_msg(data, &tmap);
	send_msg(data, &map);
	for (i = 0; i < 2 * calls; i++) {
		struct bfp_msg m = { .id = i % 2 ? BFP_METHOD_EXIT :
						   BFP_METHOD_ENTRY,
				     .seq = i, .time = i, .method = 1,
				     .thread = 1 };

		bfp_encode(&b, 2, &m);
	}
	send_all(data, b.data, b.len);
	bft_buf_free(&b);
	hang_up(data);
	hang_up(ctl);
	ASSERT_TRUE(wait_trace(dir, trace));
	text = slurp_path(dir, trace, "methods.txt");
	ASSERT_NE(NULL, text);
	b.len = 0;
	hq_bprintf(&b, "1 %u demo.work()\n", calls);
	EXPECT_STREQ((char *)b.data, text);
	free(text);
	bft_buf_free(&b);
	text = slurp_path(dir, trace, "summary.txt");
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "status:        complete\n"))
		TH_LOG("%s", text);
	free(text);
}

static void check_bounds(struct __test_metadata *_metadata, pid_t pid,
			 const char *out, const char *what, uint64_t disk0)
{
	uint64_t hwm = proc_kb(pid, "VmHWM"), disk = disk_use(out);

	FIGURE("# %s: bfhq peak RSS %.1f MiB, output %.1f MiB (%+.1f)\n",
	       what, hwm / (double)MIB, disk / (double)MIB,
	       (disk - disk0) / (double)MIB);
	EXPECT_LT(0u, hwm);
	EXPECT_GE(RSS_BOUND, hwm);
	EXPECT_GE(DISK_BOUND, disk - disk0);
}

/* Wait for the log to say s (bfhq's log lines), WAIT_MS at most. */
static bool log_says(const char *log, const char *s)
{
	int i;

	for (i = 0; i < WAIT_MS / 20; i++) {
		char *text = bft_test_slurp(log, NULL);
		bool found = text && strstr(text, s);

		free(text);
		if (found)
			return true;
		usleep(20000);
	}
	return false;
}

TEST_F_TIMEOUT(hostile, floods_stay_within_the_bounds_per_agent, 900)
{
	/* 64 KiB of modified UTF-8 at most: 65535 bytes */
	static char name[65535];
	struct bfp_msg map = { .id = BFP_MAP_METHOD, .method = 1, .str = name,
			       .str_len = sizeof(name) };
	struct bft_buf enc = { 0 };
	uint64_t disk0, sent = 0;
	size_t len, at, i;
	char *text, *noise;
	int run, ctl, data;
	unsigned int trace = 0;

	/* 1. 4000 re-maps of one id with names of 64 KiB, each new */
	memset(name, 'n', sizeof(name));
	ASSERT_EQ(0, bfp_encode(&enc, 2, &map));
	at = enc.len - 8;	/* inside the name */
	disk0 = disk_use(self->out);
	ctl = agent_hello(self->port, &run);
	ASSERT_LE(0, ctl);
	data = agent_data(self->port, run);
	ASSERT_LE(0, data);
	for (i = 0; i < 4000; i++) {
		snprintf((char *)enc.data + at, 5, "%04zu", i);
		enc.data[at + 4] = 'n';
		sent += send_all(data, enc.data, enc.len);
	}
	hang_up(data);
	hang_up(ctl);
	trace++;
	ASSERT_TRUE(wait_trace(self->out, trace));
	FIGURE("# re-maps: %.1f MiB sent\n", sent / (double)MIB);
	text = slurp_path(self->out, trace, "live/names");
	ASSERT_NE(NULL, text);
	len = strlen(text);
	FIGURE("# re-maps: live/names %.1f MiB\n", len / (double)MIB);
	EXPECT_GE(16 * MIB, len);
	free(text);
	text = slurp_path(self->out, trace, "summary.txt");
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "maps refused past")) TH_LOG("%s", text);
	free(text);
	check_bounds(_metadata, self->pid, self->out, "re-maps", disk0);
	bft_buf_free(&enc);

	/* 2. a data connection for a run nobody has, flooding */
	disk0 = disk_use(self->out);
	noise = calloc(1, 1 << 20);
	ASSERT_NE(NULL, noise);
	for (i = 0; i < (1 << 20); i++)
		noise[i] = (char)(i * 2654435761u >> 24);
	data = agent_data(self->port, 250);
	ASSERT_LE(0, data);
	for (sent = 0, i = 0; i < 256; i++) {
		size_t n = send_all(data, noise, 1 << 20);

		sent += n;
		if (n < (1 << 20))
			break;
	}
	close(data);
	FIGURE("# unknown run: %.1f MiB taken before bfhq hung up\n",
	       sent / (double)MIB);
	EXPECT_GT(256 * MIB, sent);
	EXPECT_TRUE(log_says(self->log, "bytes for unknown run 250: closed"));
	check_bounds(_metadata, self->pid, self->out, "unknown run", disk0);

	/* 3. noise after the hellos, on both connections */
	disk0 = disk_use(self->out);
	ctl = agent_hello(self->port, &run);
	ASSERT_LE(0, ctl);
	data = agent_data(self->port, run);
	ASSERT_LE(0, data);
	for (i = 0; i < 64; i++)
		if (send_all(data, noise, 1 << 20) < (1 << 20))
			break;
	send_all(ctl, noise, 1 << 20);
	close(data);
	close(ctl);
	free(noise);
	trace++;
	ASSERT_TRUE(wait_trace(self->out, trace));
	check_bounds(_metadata, self->pid, self->out, "noise", disk0);

	/* and a fresh agent still gets its trace */
	good_agent(_metadata, self->port, self->out, ++trace, 1000);
}

TEST_F_TIMEOUT(hostile, a_long_running_bfhq_keeps_nothing_of_ended_traces, 900)
{
	unsigned int n = slow_env() ? 20 : 40, i;
	uint64_t early = 0, late;

	/* each trace's text outputs take about 1 MiB while it runs */
	for (i = 1; i <= n; i++) {
		good_agent(_metadata, self->port, self->out, i, 20000);
		if (i == 5)
			early = proc_kb(self->pid, "VmRSS");
	}
	late = proc_kb(self->pid, "VmRSS");
	FIGURE("# bfhq RSS after 5 traces %.1f MiB, after %u %.1f MiB, "
	       "peak %.1f MiB\n", early / (double)MIB, n, late / (double)MIB,
	       proc_kb(self->pid, "VmHWM") / (double)MIB);
	EXPECT_LT(0u, early);
	EXPECT_GT(early + 8 * MIB, late);
}

TEST_HARNESS_MAIN
