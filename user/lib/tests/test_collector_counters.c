// SPDX-License-Identifier: GPL-2.0
/*
 * bfcollector's counters agent (--counters) against an inspector played
 * by this test over loopback, no kernel: bfcollector replays streams
 * written here, whose per-method call counts are known by construction.
 * The inspector lists, adds (OK, EXISTING, NOTFOUND), reads samples until
 * the input has ended and compares the sampled calls with the true
 * count, removes, lists again and says Good Bye.  Then garbage, a
 * vanishing inspector and unknown counters: the agent says why in its log,
 * reconnects and goes on.  Last, the same through bfhq --counters, the
 * inspector's command line, driven by its standard input.
 */
#include <jansson.h>

#include "kselftest_harness.h"

#include "wire/bfc_wire.h"
#include "collector_fixture.h"

#define TGID 5000
#define CALLS_PER_THREAD 300	/* fn_1 on each CPU's thread */

FIXTURE(ctr) {
	char dir[PATH_MAX];
	char log[PATH_MAX + 16];
	int port, lfd, fd;
	struct bft_buf in;
	pid_t pid;
};

FIXTURE_SETUP(ctr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int one = 1;

	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	snprintf(self->log, sizeof(self->log), "%s/log", self->dir);
	self->fd = -1;
	self->pid = -1;
	memset(&self->in, 0, sizeof(self->in));
	self->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, self->lfd);
	setsockopt(self->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ASSERT_EQ(0, bind(self->lfd, (struct sockaddr *)&sa, sizeof(sa)));
	ASSERT_EQ(0, listen(self->lfd, 4));
	ASSERT_EQ(0, getsockname(self->lfd, (struct sockaddr *)&sa, &len));
	self->port = ntohs(sa.sin_port);
}

FIXTURE_TEARDOWN(ctr)
{
	if (self->pid > 0)
		wait_exit(self->pid, 10);
	if (self->fd >= 0)
		close(self->fd);
	if (self->lfd >= 0)
		close(self->lfd);
	bft_buf_free(&self->in);
	remove_tmpdir(self->dir);
}

/*
 * Two CPUs, one thread each: CALLS_PER_THREAD calls of fn_1, every third
 * with a call of fn_2 inside.  repeat copies make the input longer.
 */
static int write_replay(const char *dir, unsigned int repeat)
{
	static const char methods[] = "1\t/usr/bin/prog\tfn_1\n"
				      "2\t/usr/bin/prog\tfn_2\n";
	uint64_t t = 1000000000ull;
	int err = syn_write_file(dir, "methods", methods, strlen(methods));

	for (unsigned int cpu = 0; cpu < 2 && !err; cpu++) {
		struct bft_writer w;
		const uint8_t *p;
		size_t n;
		char name[16];

		if (bft_writer_init(&w, 1000, 0))
			return -ENOMEM;
		for (unsigned int r = 0; r < repeat; r++)
			for (unsigned int i = 0; i < CALLS_PER_THREAD; i++) {
				uint32_t tid = TGID + 1 + cpu;

				t += 2000;
				err |= bft_writer_enter(&w, t, TGID, tid, 1);
				if (i % 3 == 0) {
					err |= bft_writer_enter(&w, t + 500,
								TGID, tid, 2);
					err |= bft_writer_exit(&w, t + 700,
							       TGID, tid);
				}
				err |= bft_writer_exit(&w, t + 1000, TGID, tid);
				if (i % 50 == 0)
					err |= bft_writer_sync(&w, t + 1000);
			}
		err |= bft_writer_seal(&w);
		p = bft_writer_data(&w, &n);
		snprintf(name, sizeof(name), "cpu%u.bft", cpu);
		if (!err)
			err = syn_write_file(dir, name, p, n);
		bft_writer_free(&w);
	}
	return err;
}

static int accept_agent(int lfd, int ms)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	if (poll(&p, 1, ms) != 1)
		return -1;
	return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

/* The next message from the agent: 1, 0 (closed), -1 (timeout, bad). */
static int next_msg(int fd, struct bft_buf *in, struct bfc_msg *m, int ms)
{
	char err[200];

	for (int waited = 0; waited <= ms; waited += 50) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint8_t buf[4096];
		int r = bfc_decode(in->data, in->len, BFC_TO_INSPECTOR, m, err,
				   sizeof(err));
		ssize_t got;

		if (r > 0) {
			bft_buf_consume(in, (size_t)r);
			return 1;
		}
		if (r < 0) {
			fprintf(stderr, "# agent sent garbage: %s\n", err);
			return -1;
		}
		if (poll(&p, 1, 50) != 1)
			continue;
		got = recv(fd, buf, sizeof(buf), 0);
		if (got <= 0)
			return 0;
		bft_buf_append(in, buf, (size_t)got);
	}
	return -1;
}

/* The next message that is not a Sample. */
static int next_reply(int fd, struct bft_buf *in, struct bfc_msg *m)
{
	int r;

	while ((r = next_msg(fd, in, m, 10000)) == 1 && m->cmd == BFC_SAMPLE)
		bfc_msg_free(m);
	return r;
}

static void send_req(int fd, const struct bfc_msg *m)
{
	struct bft_buf b = { 0 };

	if (!bfc_encode(&b, BFC_TO_AGENT, m))
		(void)!send(fd, b.data, b.len, MSG_NOSIGNAL);
	bft_buf_free(&b);
}

static int16_t header_index(const struct bfc_msg *hello, const char *name)
{
	for (uint32_t i = 0; i < hello->nheaders; i++)
		if (!strcmp(hello->headers[i].name, name))
			return hello->headers[i].index;
	return -1;
}

/* A sample's value at index, as a number; false if it is not there. */
static bool value_at(const struct bfc_msg *s, int16_t index, int32_t type,
		     int64_t *v)
{
	double d;

	for (uint32_t i = 0; i < s->nvalues; i++)
		if (s->values[i].index == index)
			return bfc_value_get(type, s->values[i].data,
					     s->values[i].size, &d, v);
	return false;
}

/* BFC_CHANGES on or off; the agent's status, or 0xff for no answer */
static uint8_t changes(int fd, struct bft_buf *in, uint8_t on)
{
	struct bfc_msg m;
	uint8_t st = 0xff;

	send_req(fd, &(struct bfc_msg){ .cmd = BFC_CHANGES, .changes = on });
	if (next_reply(fd, in, &m) == 1) {
		if (m.cmd == BFC_CHANGES)
			st = m.status;
		bfc_msg_free(&m);
	}
	return st;
}

/* Whether the next Sample carries the counter at index. */
static bool next_sample_has(int fd, struct bft_buf *in, int16_t index)
{
	struct bfc_msg m;
	bool has = false;

	while (next_msg(fd, in, &m, 10000) == 1) {
		bool sample = m.cmd == BFC_SAMPLE;

		for (uint32_t i = 0; sample && i < m.nvalues; i++)
			has |= m.values[i].index == index;
		bfc_msg_free(&m);
		if (sample)
			break;
	}
	return has;
}

static bool listed(const struct bfc_msg *l, const char *name, const char *cat)
{
	for (uint32_t i = 0; i < l->ncounters; i++)
		if (!strcmp(l->counters[i].name, name) &&
		    !strcmp(l->counters[i].category, cat))
			return true;
	return false;
}

static uint8_t add(int fd, struct bft_buf *in, const char *name,
		   const char *cat, struct bfc_header *h)
{
	struct bfc_msg req = { .cmd = BFC_ADD, .name = (char *)name,
			       .category = (char *)cat }, m;
	uint8_t st = 0xff;

	send_req(fd, &req);
	if (next_reply(fd, in, &m) == 1 && m.cmd == BFC_ADD) {
		st = m.status;
		if (h && st == BFC_OK && m.nheaders == 1) {
			*h = m.headers[0];
			h->name = NULL;
		}
	}
	bfc_msg_free(&m);
	return st;
}

static uint8_t remove_counter(int fd, struct bft_buf *in, int16_t index)
{
	struct bfc_msg req = { .cmd = BFC_REMOVE, .index = index }, m;
	uint8_t st = 0xff;

	send_req(fd, &req);
	if (next_reply(fd, in, &m) == 1 && m.cmd == BFC_REMOVE)
		st = m.status;
	bfc_msg_free(&m);
	return st;
}

static pid_t start_agent(struct __test_metadata *_metadata,
			 FIXTURE_DATA(ctr) *self, const char *chunk,
			 const char *delay)
{
	char where[32];
	char *argv[] = { "bfcollector", "--replay", self->dir, "--counters",
			 where, "--counters-interval", "20", "--replay-chunk",
			 (char *)chunk, "--replay-delay", (char *)delay, NULL };

	snprintf(where, sizeof(where), "127.0.0.1:%d", self->port);
	self->pid = spawn(argv, self->log);
	EXPECT_LT(0, self->pid);
	return self->pid;
}

TEST_F(ctr, sampled_calls_equal_the_true_count)
{
	struct bfc_msg hello, m, list = { .cmd = BFC_LIST };
	struct bfc_header calls = { 0 }, rate = { 0 };
	int16_t input_open;
	int64_t v = -1, open = 1;
	int r;

	ASSERT_EQ(0, write_replay(self->dir, 1));
	ASSERT_LT(0, start_agent(_metadata, self, "65536", "0"));
	self->fd = accept_agent(self->lfd, 10000);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(1, next_msg(self->fd, &self->in, &hello, 10000));
	ASSERT_EQ(BFC_HELLO, hello.cmd);
	EXPECT_EQ(BFC_VERSION, hello.version);
	input_open = header_index(&hello, "input open");
	ASSERT_LE(0, input_open);
	EXPECT_LE(0, header_index(&hello, "RSS"));
	EXPECT_LE(0, header_index(&hello, "total hits"));
	bfc_msg_free(&hello);

	send_req(self->fd, &list);
	ASSERT_EQ(1, next_reply(self->fd, &self->in, &m));
	ASSERT_EQ(BFC_LIST, m.cmd);
	EXPECT_TRUE(listed(&m, "prog!fn_1 calls", "Method"));
	EXPECT_TRUE(listed(&m, "prog!fn_2 exits", "Method"));
	EXPECT_TRUE(listed(&m, "prog!fn_1 calls/s", "Method"));
	EXPECT_TRUE(listed(&m, "cpu1 records", "Ring"));
	EXPECT_TRUE(listed(&m, "cpu0 bytes used", "Ring"));
	EXPECT_TRUE(listed(&m, "HQ queue", "Collector"));
	EXPECT_TRUE(listed(&m, "mode", "Kernel"));
	EXPECT_FALSE(listed(&m, "cpu2 records", "Ring"));
	bfc_msg_free(&m);

	EXPECT_EQ(BFC_OK, add(self->fd, &self->in, "prog!fn_1 calls",
			      "Method", &calls));
	EXPECT_EQ(BFC_TYPE_LONG, calls.type);
	EXPECT_EQ(BFC_UNIT_EVENTS, calls.unit);
	EXPECT_EQ(BFC_VAR_MONOTONIC, calls.variance);
	EXPECT_EQ(BFC_CAT_METHOD, calls.category);
	EXPECT_EQ(BFC_OK, add(self->fd, &self->in, "prog!fn_2 calls/s",
			      "Method", &rate));
	EXPECT_EQ(BFC_TYPE_DOUBLE, rate.type);
	EXPECT_NE(calls.index, rate.index);
	EXPECT_EQ(BFC_EXISTING, add(self->fd, &self->in, "prog!fn_1 calls",
				    "Method", NULL));
	EXPECT_EQ(BFC_NOTFOUND, add(self->fd, &self->in, "prog!fn_9 calls",
				    "Method", NULL));
	EXPECT_EQ(BFC_NOTFOUND, add(self->fd, &self->in, "RSS", "Kernel",
				    NULL));
	EXPECT_EQ(BFC_NOTFOUND, add(self->fd, &self->in, "cpu7 lost", "Ring",
				    NULL));

	/* the samples until the input has ended: then the count is final */
	while (open && (r = next_msg(self->fd, &self->in, &m, 10000)) == 1) {
		if (m.cmd == BFC_SAMPLE &&
		    value_at(&m, input_open, BFC_TYPE_INT, &open) && !open)
			EXPECT_TRUE(value_at(&m, calls.index, BFC_TYPE_LONG,
					     &v));
		bfc_msg_free(&m);
	}
	EXPECT_EQ(0, open);
	EXPECT_EQ(2 * CALLS_PER_THREAD, v);

	EXPECT_EQ(BFC_OK, remove_counter(self->fd, &self->in, calls.index));
	EXPECT_EQ(BFC_NOTFOUND, remove_counter(self->fd, &self->in,
					       calls.index));
	/* the next sample has it no more */
	do {
		ASSERT_EQ(1, next_msg(self->fd, &self->in, &m, 10000));
		if (m.cmd != BFC_SAMPLE)
			bfc_msg_free(&m);
	} while (m.cmd != BFC_SAMPLE);
	EXPECT_FALSE(value_at(&m, calls.index, BFC_TYPE_LONG, &v));
	EXPECT_TRUE(value_at(&m, input_open, BFC_TYPE_INT, &open));
	bfc_msg_free(&m);

	/* changed values only: the first sample after the answer carries
	 * them all, the next leaves out "input open" (0 since the end),
	 * and asking for every value brings it back */
	EXPECT_EQ(BFC_OK, add(self->fd, &self->in, "prog!fn_2 calls",
			      "Method", &calls));
	EXPECT_EQ(BFC_OK, changes(self->fd, &self->in, 1));
	EXPECT_TRUE(next_sample_has(self->fd, &self->in, input_open));
	EXPECT_FALSE(next_sample_has(self->fd, &self->in, input_open));
	EXPECT_FALSE(next_sample_has(self->fd, &self->in, calls.index));
	EXPECT_EQ(BFC_OK, changes(self->fd, &self->in, 0));
	EXPECT_TRUE(next_sample_has(self->fd, &self->in, input_open));
	EXPECT_TRUE(next_sample_has(self->fd, &self->in, calls.index));

	send_req(self->fd, &list);
	ASSERT_EQ(1, next_reply(self->fd, &self->in, &m));
	EXPECT_TRUE(listed(&m, "prog!fn_1 calls", "Method"));
	bfc_msg_free(&m);
	/* every counter at once */
	EXPECT_EQ(BFC_OK, remove_counter(self->fd, &self->in, -1));

	send_req(self->fd, &(struct bfc_msg){ .cmd = BFC_BYE });
	EXPECT_EQ(0, wait_exit(self->pid, 10000));
	self->pid = -1;
	if (_metadata->passed != 1 || getenv("BFT_SHOW_LOG"))
		show_log(self->log);
}

TEST_F(ctr, survives_garbage_vanishing_and_unknown_counters)
{
	struct bfc_msg m;
	static const uint8_t garbage[] = { 0x55, 'h', 'e', 'l', 'l', 'o' };
	char *log;
	int st;

	/* long enough an input that it is still open at the end */
	ASSERT_EQ(0, write_replay(self->dir, 4));
	ASSERT_LT(0, start_agent(_metadata, self, "16", "100"));
	self->fd = accept_agent(self->lfd, 10000);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(1, next_msg(self->fd, &self->in, &m, 10000));
	EXPECT_EQ(BFC_HELLO, m.cmd);
	bfc_msg_free(&m);
	EXPECT_EQ(BFC_NOTFOUND, add(self->fd, &self->in, "no such thing",
				    "Nowhere", NULL));
	EXPECT_EQ(BFC_NOTFOUND, add(self->fd, &self->in, NULL, "Method",
				    NULL));

	/* garbage: the agent hangs up, then calls again */
	(void)!send(self->fd, garbage, sizeof(garbage), MSG_NOSIGNAL);
	do
		st = next_msg(self->fd, &self->in, &m, 10000);
	while (st == 1 && (bfc_msg_free(&m), 1));
	EXPECT_EQ(0, st);
	close(self->fd);
	self->in.len = 0;
	self->fd = accept_agent(self->lfd, 10000);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(1, next_msg(self->fd, &self->in, &m, 10000));
	EXPECT_EQ(BFC_HELLO, m.cmd);
	bfc_msg_free(&m);

	/* the inspector vanishes: the agent calls again */
	close(self->fd);
	self->in.len = 0;
	self->fd = accept_agent(self->lfd, 10000);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(1, next_msg(self->fd, &self->in, &m, 10000));
	EXPECT_EQ(BFC_HELLO, m.cmd);
	bfc_msg_free(&m);
	EXPECT_EQ(BFC_OK, add(self->fd, &self->in, "cpu0 reads", "Ring",
			      NULL));

	/* a signal still ends it cleanly */
	kill(self->pid, SIGTERM);
	EXPECT_EQ(0, wait_exit(self->pid, 10000));
	self->pid = -1;
	log = bft_test_slurp(self->log, NULL);
	ASSERT_NE(NULL, log);
	EXPECT_NE(NULL, strstr(log, "\"no such thing\" (Nowhere): no such "
			       "counter"));
	EXPECT_NE(NULL, strstr(log, "unknown request 85; disconnected"));
	/* a close with the agent's last message unread is a reset: either way */
	EXPECT_NE(NULL, strstr(log, "went away"));
	EXPECT_NE(NULL, strstr(log, "; reconnecting"));
	free(log);
	if (_metadata->passed != 1 || getenv("BFT_SHOW_LOG"))
		show_log(self->log);
}

/* bfhq with its stdin and stdout ours, stderr to log. */
static pid_t spawn_piped(char *const argv[], const char *log, int *to,
			 FILE **from)
{
	char path[PATH_MAX];
	int in[2], out[2];
	pid_t pid;

	tool_path(argv[0], path, sizeof(path));
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(in[0], 0);
		dup2(out[1], 1);
		if (fd >= 0)
			dup2(fd, 2);
		execv(path, argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	*to = in[1];
	*from = fdopen(out[0], "r");
	return pid;
}

/* The next JSON line of this event, within a bounded number of lines. */
static json_t *next_event(FILE *f, const char *event)
{
	char line[65536];

	while (fgets(line, sizeof(line), f)) {
		json_t *j = json_loads(line, 0, NULL);

		if (j && !strcmp(json_string_value(json_object_get(j, "event")) ?:
				 "", event))
			return j;
		json_decref(j);
	}
	return NULL;
}

TEST_F(ctr, bfhq_inspects_through_its_command_line)
{
	char port[16], where[32], hqlog[PATH_MAX + 16];
	char *hq[] = { "bfhq", "--counters", port, "--json", "--add",
		       "Method:prog!fn_1 calls", "--timeout", "20", NULL };
	char *coll[] = { "bfcollector", "--replay", self->dir, "--counters",
			 where, "--counters-interval", "20", NULL };
	json_t *j, *v;
	FILE *from;
	int to, idx = -1;
	int64_t calls = -1;
	pid_t hqpid;
	static const char reqs[] = "list\nadd Kernel:nope\n";

	ASSERT_EQ(0, write_replay(self->dir, 1));
	/* bfhq listens itself: the fixture's socket is not needed */
	close(self->lfd);
	self->lfd = -1;
	snprintf(port, sizeof(port), "%d", self->port);
	snprintf(where, sizeof(where), "127.0.0.1:%d", self->port);
	snprintf(hqlog, sizeof(hqlog), "%s/hq.log", self->dir);
	hqpid = spawn_piped(hq, hqlog, &to, &from);
	ASSERT_LT(0, hqpid);
	ASSERT_NE(NULL, from);
	/* bfhq takes this probe for an agent that went away at once */
	ASSERT_TRUE(wait_listening(self->port, 10000));
	self->pid = spawn(coll, self->log);
	ASSERT_LT(0, self->pid);

	j = next_event(from, "add");
	ASSERT_NE(NULL, j);
	EXPECT_STREQ("OK", json_string_value(json_object_get(j, "status")));
	idx = (int)json_integer_value(json_object_get(
		json_object_get(j, "counter"), "index"));
	json_decref(j);
	/* samples until the input has ended: then the count is final */
	while ((j = next_event(from, "sample"))) {
		v = json_object_get(j, "values");
		if (json_integer_value(json_object_get(v, "Collector:input "
						       "open")) == 0 &&
		    json_object_get(v, "Collector:input open")) {
			calls = json_integer_value(json_object_get(
				v, "Method:prog!fn_1 calls"));
			json_decref(j);
			break;
		}
		json_decref(j);
	}
	EXPECT_EQ(2 * CALLS_PER_THREAD, calls);

	dprintf(to, "remove %d\n", idx);
	j = next_event(from, "remove");
	EXPECT_STREQ("OK", json_string_value(json_object_get(j, "status")));
	json_decref(j);
	ASSERT_EQ((ssize_t)strlen(reqs), write(to, reqs, strlen(reqs)));
	j = next_event(from, "list");
	ASSERT_NE(NULL, j);
	v = json_object_get(j, "counters");
	EXPECT_LT(20u, json_array_size(v));
	json_decref(j);
	j = next_event(from, "add");
	EXPECT_STREQ("NOTFOUND", json_string_value(json_object_get(j,
								   "status")));
	json_decref(j);
	/* a sample after the remove: without the counter */
	j = next_event(from, "sample");
	ASSERT_NE(NULL, j);
	EXPECT_EQ(NULL, json_object_get(json_object_get(j, "values"),
					"Method:prog!fn_1 calls"));
	json_decref(j);

	ASSERT_EQ(4, write(to, "bye\n", 4));
	EXPECT_EQ(0, wait_exit(hqpid, 10000));
	EXPECT_EQ(0, wait_exit(self->pid, 10000));
	self->pid = -1;
	close(to);
	fclose(from);
	if (_metadata->passed != 1 || getenv("BFT_SHOW_LOG")) {
		show_log(hqlog);
		show_log(self->log);
	}
}

TEST_HARNESS_MAIN
