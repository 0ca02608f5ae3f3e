// SPDX-License-Identifier: GPL-2.0
/*
 * The counters protocol (seed 003) on a real kernel: bfcollector --counters
 * drains the rings of the calltree target and serves its counters to an
 * inspector, bfhq --counters, driven here through its standard input and
 * read as JSON lines.
 *
 * The inspector adds per-method counters; once the target's runs are over,
 * the sampled calls and exits equal what the target's model
 * (targets/calltree_shape.h) says ran, exactly, and stay there.  It removes
 * one (gone from the next sample, a second removal is NOTFOUND), lists,
 * and asks for a counter nobody has (NOTFOUND).  Then the inspector is
 * killed, a second one sends garbage, and a third adds a counter again:
 * the agent says why it let each go in its log, keeps tracing and counting
 * across them (a run done meanwhile is counted), and after Good Bye keeps
 * tracing without a counters connection.
 *
 * The bpf_ variant runs the same on the BPF backend; it skips where BPF
 * cannot run.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "kselftest_harness.h"
#include "wire/bfc_wire.h"
#include "bft_selftest.h"
#include "calltree_shape.h"

/* Under TCG everything is slow; these bound a stuck tool, not a fast one. */
#define EVENT_MS	60000
#define TOOL_EXIT_MS	60000
/* What one run of the target calls, from its model. */
#define RUN_CT_C	(2 * CT_NEST_REPS + CT_NR_THREADS)
#define RUN_CT_EVEN	(CT_RECUR_DEPTH / 2 + 1)
#define RUN_CT_T_LEAF	(CT_NR_THREADS * (CT_NR_THREADS + 1) / 2)
#define RUN_LIB		CT_NEST_REPS

#define C_CT_C		"Method:calltree!" CT_FN_C " calls"
#define C_CT_C_EXITS	"Method:calltree!" CT_FN_C " exits"
#define C_CT_EVEN	"Method:calltree!" CT_FN_EVEN " calls"
#define C_CT_T_LEAF	"Method:calltree!" CT_FN_T_LEAF " calls"
#define C_LIB		"Method:libbftgt.so!" CT_FN_LIB " calls"
#define C_LIB_RATE	"Method:libbftgt.so!" CT_FN_LIB " calls/s"

/* bfhq --counters --json, its stdin and stdout ours. */
struct insp {
	pid_t pid;
	int to, from;
	char buf[1 << 16];
	size_t len;
	char *last;		/* the last sample wait_values saw */
};

FIXTURE(counters) {
	struct bst_session s;
	struct bft_bpf *bpf;
	struct bst_proc target;
	struct insp insp;
	char dir[64], log[128], hqlog[128], port_s[16], where[32];
	int port;
	pid_t coll;
};

FIXTURE_VARIANT(counters) {
	bool bpf;		/* through the BPF backend */
};

FIXTURE_VARIANT_ADD(counters, kmod) {
	.bpf = false,
};

FIXTURE_VARIANT_ADD(counters, bpf) {
	.bpf = true,
};

FIXTURE_SETUP(counters)
{
	char why[600];
	int ret;

	self->insp.pid = -1;
	self->insp.to = self->insp.from = -1;
	ret = bst_backend_open(variant->bpf, &self->s, &self->bpf,
			       CT_RECUR_DEPTH + 1, why, sizeof(why));
	if (ret > 0)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, ret) TH_LOG("%s", why);
	strcpy(self->dir, "/tmp/bft-counters-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->log, sizeof(self->log), "%s/collector.log", self->dir);
	snprintf(self->hqlog, sizeof(self->hqlog), "%s/bfhq.log", self->dir);
	self->port = bst_run_port(13);
	snprintf(self->port_s, sizeof(self->port_s), "%d", self->port);
	snprintf(self->where, sizeof(self->where), "127.0.0.1:%d", self->port);
}

static void insp_close(struct insp *in)
{
	if (in->to >= 0)
		close(in->to);
	if (in->from >= 0)
		close(in->from);
	if (in->pid > 0)
		bst_wait_exit(in->pid, 5000);
	in->pid = -1;
	in->to = in->from = -1;
	in->len = 0;
	free(in->last);
	in->last = NULL;
}

FIXTURE_TEARDOWN(counters)
{
	char cmd[200];

	if (self->insp.pid > 0)
		kill(self->insp.pid, SIGKILL);
	insp_close(&self->insp);
	if (self->coll > 0) {
		kill(self->coll, SIGTERM);
		bst_wait_exit(self->coll, 5000);
	}
	bst_proc_kill(&self->target);
	if (self->bpf)
		bst_bpf_close(self->bpf);
	else if (self->s.nl)
		bst_session_close(&self->s);
	if (!getenv("BFT_KEEP") && self->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
		if (system(cmd))
			fprintf(stderr, "# could not remove %s\n", self->dir);
	}
}

/* ---- the inspector ----------------------------------------------------- */

/* bfhq --counters PORT --json [extra...], stderr to hqlog. */
static int insp_start(FIXTURE_DATA(counters) *self, const char *add)
{
	const char *argv[] = { "bfhq", "--counters", self->port_s, "--json",
			       "--timeout", "240", add ? "--add" : NULL, add,
			       NULL };
	struct insp *in = &self->insp;
	char *path = bst_tool_path("bfhq");
	int to[2], from[2];

	if (!path || pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC)) {
		free(path);
		return -errno;
	}
	in->pid = fork();
	if (in->pid == 0) {
		int fd = open(self->hqlog, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd < 0 || dup2(to[0], 0) < 0 || dup2(from[1], 1) < 0 ||
		    dup2(fd, 2) < 0)
			_exit(127);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	free(path);
	close(to[0]);
	close(from[1]);
	in->to = to[1];
	in->from = from[0];
	in->len = 0;
	return in->pid > 0 ? 0 : -ECHILD;
}

/* A request line on the inspector's stdin. */
static void insp_say(struct insp *in, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	if (write(in->to, line, (size_t)n) != n)
		fprintf(stderr, "# bfhq did not take \"%.*s\"\n", n - 1, line);
}

/* The next JSON line of this event (others are skipped); NULL when the
 * inspector ends or none comes within timeout_ms. */
static json_t *insp_event(struct insp *in, const char *event, int timeout_ms)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000;

	for (;;) {
		char *nl = memchr(in->buf, '\n', in->len);
		struct pollfd p = { .fd = in->from, .events = POLLIN };
		uint64_t now = bst_now_ns();
		ssize_t r;

		if (nl) {
			json_t *j = json_loadb(in->buf, (size_t)(nl - in->buf),
					       0, NULL);
			const char *e = json_string_value(
				json_object_get(j, "event"));

			in->len -= (size_t)(nl + 1 - in->buf);
			memmove(in->buf, nl + 1, in->len);
			if (e && !strcmp(e, event))
				return j;
			json_decref(j);
			continue;
		}
		if (in->len == sizeof(in->buf) || now >= end ||
		    poll(&p, 1, (int)((end - now) / 1000000) + 1) <= 0)
			return NULL;
		r = read(in->from, in->buf + in->len, sizeof(in->buf) - in->len);
		if (r <= 0)
			return NULL;
		in->len += (size_t)r;
	}
}

static const char *status_of(json_t *j)
{
	return json_string_value(json_object_get(j, "status")) ?: "(none)";
}

/* add CATEGORY:NAME; the reply's status, the counter's index in *index. */
static char *insp_add(struct insp *in, const char *counter, int *index)
{
	json_t *j;
	char *st;

	insp_say(in, "add %s", counter);
	j = insp_event(in, "add", EVENT_MS);
	st = strdup(j ? status_of(j) : "(no reply)");
	if (index)
		*index = (int)json_integer_value(json_object_get(
			json_object_get(j, "counter"), "index"));
	json_decref(j);
	return st;
}

static bool sample_has(json_t *sample, const char *counter, int64_t *v)
{
	json_t *x = json_object_get(json_object_get(sample, "values"),
				    counter);

	if (!json_is_number(x))
		return false;
	if (v)
		*v = json_is_integer(x) ? json_integer_value(x) :
		     (int64_t)json_number_value(x);
	return true;
}

/* Whether the list holds "category:name". */
static bool listed(json_t *list, const char *counter)
{
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(list, "counters"), i, c) {
		const char *cat = json_string_value(
			json_object_get(c, "category"));
		const char *name = json_string_value(
			json_object_get(c, "name"));
		size_t cl = cat ? strlen(cat) : 0;

		if (cat && name && !strncmp(counter, cat, cl) &&
		    counter[cl] == ':' && !strcmp(counter + cl + 1, name))
			return true;
	}
	return false;
}

/* List until the counter is there: the collector names a method once it
 * has read the module's method table after the attach. */
static bool wait_listed(struct insp *in, const char *counter, int timeout_ms)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000;

	do {
		json_t *j;
		bool found;

		insp_say(in, "list");
		j = insp_event(in, "list", EVENT_MS);
		found = j && listed(j, counter);
		json_decref(j);
		if (found)
			return true;
		bst_sleep_ms(200);
	} while (bst_now_ns() < end);
	return false;
}

/*
 * Samples until every counter has its wanted value, then two more that
 * must still have it (a count that overshoots is caught too).  The values
 * last seen go to got[]; false if a sample did not come.
 */
static bool wait_values(struct insp *in, const char *const *counters,
			const int64_t *want, int64_t *got, size_t n)
{
	uint64_t end = bst_now_ns() + (uint64_t)EVENT_MS * 1000000;
	int after = -1;

	while (after < 2) {
		json_t *j = insp_event(in, "sample", EVENT_MS);
		bool all = true;

		if (!j)
			return false;
		free(in->last);
		in->last = json_dumps(j, JSON_COMPACT);
		for (size_t i = 0; i < n; i++) {
			got[i] = -1;
			sample_has(j, counters[i], &got[i]);
			all &= got[i] == want[i];
		}
		json_decref(j);
		if (after >= 0 || all)
			after++;
		else if (bst_now_ns() > end)
			return true;	/* the caller shows what differs */
	}
	return true;
}

/* ---- the rest ------------------------------------------------------- */

static bool log_says(const char *log, const char *what)
{
	char *text = bst_slurp(log);
	bool found = text && strstr(text, what);

	free(text);
	return found;
}

/* bfctl attach --pid <target> -p calltree:ct_* -p libbftgt*:bftgt_scale */
static int bfctl_attach(FIXTURE_DATA(counters) *self)
{
	char pid[16];
	const char *argv[] = { "bfctl", "attach", "--pid", pid,
			       "-p", "calltree:ct_*",
			       "-p", "libbftgt*:" CT_FN_LIB, NULL };
	pid_t p;

	snprintf(pid, sizeof(pid), "%d", self->target.pid);
	p = bst_spawn(argv, self->log);
	return p < 0 ? -1 : bst_wait_exit(p, TOOL_EXIT_MS);
}

static void run_target(struct __test_metadata *_metadata,
		       FIXTURE_DATA(counters) *self)
{
	ASSERT_EQ(0, bst_proc_send(&self->target, 'r'));
	ASSERT_EQ(0, bst_proc_wait_line(&self->target, CT_LINE_DONE, EVENT_MS));
}

/* One accepted agent on a socket of the test's own, its Hello read. */
static int accept_hello(struct __test_metadata *_metadata, int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	struct bft_buf in = { 0 };
	struct bfc_msg m;
	char err[200];
	int fd, r = 0;

	if (poll(&p, 1, EVENT_MS) != 1)
		return -1;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -1;
	while (!r) {
		uint8_t buf[4096];
		ssize_t got;

		p = (struct pollfd){ .fd = fd, .events = POLLIN };
		got = poll(&p, 1, EVENT_MS) == 1 ?
		      recv(fd, buf, sizeof(buf), 0) : -1;
		if (got <= 0 || bft_buf_append(&in, buf, (size_t)got))
			break;
		r = bfc_decode(in.data, in.len, BFC_TO_INSPECTOR, &m, err,
			       sizeof(err));
	}
	bft_buf_free(&in);
	EXPECT_LT(0, r) TH_LOG("no Hello: %s", r < 0 ? err : "none came");
	if (r > 0) {
		EXPECT_EQ(BFC_HELLO, m.cmd);
		bfc_msg_free(&m);
	}
	return fd;
}

/* Whether the peer closes fd within timeout_ms. */
static bool hangs_up(int fd, int timeout_ms)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000;
	uint8_t buf[4096];

	while (bst_now_ns() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, 100) != 1)
			continue;
		r = recv(fd, buf, sizeof(buf), 0);
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return true;
	}
	return false;
}

static int listen_on(int port)
{
	struct sockaddr_in a = {
		.sin_family = AF_INET, .sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4)) {
		close(fd);
		return -1;
	}
	return fd;
}

TEST_F_TIMEOUT(counters, sampled_calls_equal_the_model_across_inspectors,
	       400)
{
	static const char *const counted[] = {
		C_CT_C, C_CT_C_EXITS, C_CT_EVEN, C_CT_T_LEAF, C_LIB,
	};
	const int64_t want[] = {
		2 * RUN_CT_C, 2 * RUN_CT_C, 2 * RUN_CT_EVEN,
		2 * RUN_CT_T_LEAF, 2 * RUN_LIB,
	};
	const char *coll_argv[] = {
		"bfcollector", "--counters", self->where,
		"--counters-interval", "100", NULL,
	};
	static const uint8_t garbage[] = { 0x55, 'h', 'e', 'l', 'l', 'o' };
	struct bft_nl_status ks;
	int64_t got[5], v = -1;
	char said[160], *st;
	int idx = -1, lfd, fd;
	json_t *j;

	/* this harness runs the body after a SKIP in the setup */
	if (_metadata->skip)
		return;
	ASSERT_EQ(0, bst_proc_start(&self->target, "calltree", NULL, false,
				    10000));
	ASSERT_EQ(0, insp_start(self, NULL));
	self->coll = bst_spawn(coll_argv, self->log);
	ASSERT_LT(0, self->coll);
	j = insp_event(&self->insp, "hello", EVENT_MS);
	ASSERT_NE(NULL, j) bst_show_log(self->log);
	EXPECT_EQ(BFC_VERSION, json_integer_value(json_object_get(j,
								  "version")));
	json_decref(j);
	/* no HQ: the collector starts recording itself, as Kernel:mode says */
	do {
		j = insp_event(&self->insp, "sample", EVENT_MS);
		ASSERT_NE(NULL, j) bst_show_log(self->log);
		sample_has(j, "Kernel:mode", &v);
		json_decref(j);
	} while (v != BFT_MODE_TRACING);

	ASSERT_EQ(0, bfctl_attach(self)) bst_show_log(self->log);
	ASSERT_TRUE(wait_listed(&self->insp, C_CT_C, EVENT_MS))
		bst_show_log(self->log);
	for (size_t i = 0; i < ARRAY_SIZE(counted); i++) {
		st = insp_add(&self->insp, counted[i], NULL);
		EXPECT_STREQ("OK", st) {
			TH_LOG("add %s", counted[i]);
		}
		free(st);
	}
	st = insp_add(&self->insp, C_LIB_RATE, &idx);
	EXPECT_STREQ("OK", st);
	free(st);
	st = insp_add(&self->insp, C_CT_C, NULL);
	EXPECT_STREQ("EXISTING", st);
	free(st);

	run_target(_metadata, self);
	run_target(_metadata, self);
	ASSERT_TRUE(wait_values(&self->insp, counted, want, got,
				ARRAY_SIZE(counted)));
	for (size_t i = 0; i < ARRAY_SIZE(counted); i++) {
		EXPECT_EQ(want[i], got[i]) TH_LOG("%s", counted[i]);
	}
	if (!_metadata->passed)
		TH_LOG("last sample: %s", self->insp.last);
	/* the probes (with the module, its exception hooks too), as the
	 * kernel counts them */
	ASSERT_EQ(0, self->bpf ? bft_bpf_get_status(self->bpf, &ks) :
		     bft_nl_get_status(self->s.nl, &ks));
	j = insp_event(&self->insp, "sample", EVENT_MS);
	EXPECT_TRUE(sample_has(j, "Kernel:probes", &v));
	EXPECT_EQ(ks.nr_probes, v);
	bft_nl_status_free(&ks);
	EXPECT_TRUE(sample_has(j, C_LIB_RATE, NULL));
	json_decref(j);

	/* remove: gone from the next sample; a second time NOTFOUND */
	insp_say(&self->insp, "remove %d", idx);
	j = insp_event(&self->insp, "remove", EVENT_MS);
	EXPECT_STREQ("OK", status_of(j));
	json_decref(j);
	j = insp_event(&self->insp, "sample", EVENT_MS);
	EXPECT_FALSE(sample_has(j, C_LIB_RATE, NULL));
	EXPECT_TRUE(sample_has(j, C_LIB, NULL));
	json_decref(j);
	insp_say(&self->insp, "remove %d", idx);
	j = insp_event(&self->insp, "remove", EVENT_MS);
	EXPECT_STREQ("NOTFOUND", status_of(j));
	json_decref(j);

	/* list: every method's counters, the rings', the kernel's */
	insp_say(&self->insp, "list");
	j = insp_event(&self->insp, "list", EVENT_MS);
	EXPECT_TRUE(listed(j, C_LIB_RATE));
	EXPECT_TRUE(listed(j, "Method:calltree!" CT_FN_ODD " exits"));
	EXPECT_TRUE(listed(j, "Method:calltree!" CT_FN_A " calls"));
	EXPECT_TRUE(listed(j, "Ring:cpu0 records"));
	EXPECT_TRUE(listed(j, "Kernel:total hits"));
	EXPECT_FALSE(listed(j, "Method:calltree!main calls"));
	json_decref(j);

	/* a counter nobody has */
	st = insp_add(&self->insp, "Method:calltree!ct_nowhere calls", NULL);
	EXPECT_STREQ("NOTFOUND", st);
	free(st);

	/* the inspector vanishes */
	kill(self->insp.pid, SIGKILL);
	insp_close(&self->insp);
	/* the next one sends garbage */
	lfd = listen_on(self->port);
	ASSERT_LE(0, lfd);
	fd = accept_hello(_metadata, lfd);
	EXPECT_LE(0, fd);
	if (fd >= 0) {
		EXPECT_EQ((ssize_t)sizeof(garbage),
			  send(fd, garbage, sizeof(garbage), MSG_NOSIGNAL));
		EXPECT_TRUE(hangs_up(fd, EVENT_MS));
		close(fd);
	}
	close(lfd);
	/* tracing and counting went on without an inspector */
	run_target(_metadata, self);

	ASSERT_EQ(0, insp_start(self, C_CT_C));
	j = insp_event(&self->insp, "add", EVENT_MS);
	EXPECT_STREQ("OK", status_of(j)) bst_show_log(self->log);
	json_decref(j);
	ASSERT_TRUE(wait_values(&self->insp, counted, (int64_t[]){
		3 * RUN_CT_C }, got, 1));
	EXPECT_EQ(3 * RUN_CT_C, got[0]) TH_LOG("%s", self->insp.last);

	/* Good Bye ends the counters connection, not the tracing */
	insp_say(&self->insp, "bye");
	EXPECT_EQ(0, bst_wait_exit(self->insp.pid, TOOL_EXIT_MS));
	self->insp.pid = -1;
	insp_close(&self->insp);
	bst_sleep_ms(300);
	EXPECT_EQ(0, waitpid(self->coll, NULL, WNOHANG));
	EXPECT_EQ(0, bst_proc_send(&self->target, 'q'));
	EXPECT_EQ(0, bst_proc_wait_exit(&self->target, 10000));
	kill(self->coll, SIGTERM);
	EXPECT_EQ(0, bst_wait_exit(self->coll, TOOL_EXIT_MS));
	self->coll = 0;

	/* what the agent said about each inspector it let go */
	snprintf(said, sizeof(said), "counters: inspector %s: ", self->where);
	EXPECT_TRUE(log_says(self->log, said));
	EXPECT_TRUE(log_says(self->log, "went away; reconnecting"));
	EXPECT_TRUE(log_says(self->log, "unknown request 85; disconnected"));
	EXPECT_TRUE(log_says(self->log, "the inspector asked for "
			     "\"calltree!ct_nowhere calls\" (Method): no such "
			     "counter"));
	EXPECT_TRUE(log_says(self->log, "the inspector said good bye"));
	if (!_metadata->passed || getenv("BFT_SHOW_LOG")) {
		bst_show_log(self->log);
		bst_show_log(self->hqlog);
	}
}

TEST_HARNESS_MAIN
