// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile HQ against bfcollector, without a kernel: regexes that
 * crashed it or take exponential time, configurations that cost far more
 * memory than their bytes.  The collector must answer Error (99) when it
 * refuses, go on when it can, and stay within its bounds: its peak RSS is
 * measured (wait4's ru_maxrss) and, for the costly configurations, its
 * address space limited, so that a collector without the bounds fails the
 * test quickly rather than taking the machine's memory.
 */
#include "kselftest_harness.h"

#include "wire/bfp_config.h"
#include "wire/bfp_joss.h"
#include "wire/bfp_msg.h"
#include "collector_fixture.h"

/* What a configuration may take (bfcollector.1), and the test's cap. */
#define RSS_BOUND_KIB	(256u << 10)
#define AS_LIMIT	(1024ull << 20)

FIXTURE(hostile) {
	char dir[PATH_MAX];
	char replay[PATH_MAX + 16];
	char hqout[PATH_MAX + 16];
	char log[PATH_MAX + 16];
	struct syn syn;
	int port;
	int lfd;
	pid_t pids[2];
};

FIXTURE_SETUP(hostile)
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
		.threads = 2, .cpus = 2, .methods = 20, .noret_depth = 6,
		.steps = 2000, .seed = 29,
	};
	ASSERT_EQ(0, syn_generate(&self->syn, self->replay));
}

FIXTURE_TEARDOWN(hostile)
{
	unsigned int i;

	for (i = 0; i < 2; i++)
		if (self->pids[i] > 0)
			wait_exit(self->pids[i], 0);
	if (self->lfd >= 0)
		close(self->lfd);
	syn_free(&self->syn);
	remove_tmpdir(self->dir);
}

/* ---- bfhq sends the regexes ---- */

/* bfhq with "--exclude" pattern for each of pats, then the collector. */
static void run_with_bfhq(struct __test_metadata *_metadata,
			  FIXTURE_DATA(hostile) *self,
			  const char *const *pats, unsigned int n,
			  int *coll_rc, int *hq_rc)
{
	char port[16], hq[64];
	char *argv[64] = { "bfhq", "-p", port, "-o", self->hqout, "--start",
			   "--count", "1", "--timeout", "120" };
	char *cargv[] = { "bfcollector", "--hq", hq, "--replay",
			  self->replay, "--connect-timeout", "20", NULL };
	unsigned int k = 10, i;

	ASSERT_LT(k + 2 * n, 63u);
	for (i = 0; i < n; i++) {
		argv[k++] = "--exclude";
		argv[k++] = (char *)pats[i];
	}
	snprintf(port, sizeof(port), "%d", self->port);
	snprintf(hq, sizeof(hq), "127.0.0.1:%d", self->port);
	self->pids[1] = spawn(argv, self->log);
	ASSERT_GT(self->pids[1], 0);
	ASSERT_TRUE(wait_listening(self->port, slow_env() ? 30000 : 5000));
	self->pids[0] = spawn(cargv, self->log);
	ASSERT_GT(self->pids[0], 0);
	/* bounded: a regex that takes exponential time is a hang */
	*coll_rc = wait_exit(self->pids[0], 120000);
	self->pids[0] = 0;
	*hq_rc = wait_exit(self->pids[1], 20000);
	self->pids[1] = 0;
}

TEST_F_TIMEOUT(hostile, backreference_bomb_regex_does_not_kill_it, 300)
{
	/* glibc's regexec overflowed its stack on this one (status 139) */
	const char *pats[] = { "(|)(\\1\\1)*" };
	int rc, hq_rc;
	char *calls;

	run_with_bfhq(_metadata, self, pats, 1, &rc, &hq_rc);
	fprintf(stderr, "# collector exit status %d, bfhq %d\n", rc, hq_rc);
	EXPECT_EQ(0, rc);
	EXPECT_EQ(0, hq_rc);
	/* it matches the empty string at the start: everything excluded */
	calls = complete_calls(self->hqout, 1);
	ASSERT_NE(NULL, calls);
	EXPECT_EQ(NULL, strstr(calls, " e")) TH_LOG("%.200s", calls);
	free(calls);
	if (!_metadata->passed)
		show_log(self->log);
}

/* Methods named prog!aaa...a_ (n a's), ids from first on. */
static int add_long_names(const char *replay, uint32_t first,
			  unsigned int count, size_t n)
{
	char path[PATH_MAX + 32], *a = malloc(n + 1);
	unsigned int i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/methods", replay);
	f = fopen(path, "a");
	if (!f || !a) {
		free(a);
		if (f)
			fclose(f);
		return -1;
	}
	memset(a, 'a', n);
	a[n] = 0;
	for (i = 0; i < count; i++)
		fprintf(f, "%u\t/usr/bin/prog\t%s_\n", first + i, a);
	free(a);
	return fclose(f);
}

TEST_F_TIMEOUT(hostile, catastrophic_backtracking_is_bounded, 600)
{
	/*
	 * Nested quantifiers fail in exponential time on a long run of a's
	 * not followed by what they want; the last one is also slow (more
	 * than cubic) in glibc, which backtracks for back references.
	 */
	const char *pats[] = { "prog!(a+)+$", "prog!(a|aa)+$",
			       "prog!(a*a*)*$", "prog!(a|a)*\\1$" };
	int rc, hq_rc;
	char *log, *calls, *want;
	unsigned int i;

	ASSERT_EQ(0, add_long_names(self->replay, 1000, 16, 4000));
	run_with_bfhq(_metadata, self, pats, 4, &rc, &hq_rc);
	fprintf(stderr, "# collector exit status %d, bfhq %d\n", rc, hq_rc);
	EXPECT_EQ(0, rc);
	EXPECT_EQ(0, hq_rc);
	log = bft_test_slurp(self->log, NULL);
	ASSERT_NE(NULL, log);
	/* each pattern gave up once, on the first long name, and says so */
	for (i = 0; i < 4; i++) {
		char what[64];
		char *at;

		snprintf(what, sizeof(what), "exclusion pattern %u \"", i + 1);
		at = strstr(log, what);
		EXPECT_NE(NULL, at) TH_LOG("%s", pats[i]);
		if (at)
			EXPECT_NE(NULL, strstr(at, "matches nothing from now on"));
	}
	/* no match, so nothing was excluded: the whole trace arrived */
	calls = complete_calls(self->hqout, 1);
	want = syn_expected_calls(&self->syn);
	ASSERT_NE(NULL, calls);
	ASSERT_NE(NULL, want);
	EXPECT_STREQ(want, calls);
	if (!_metadata->passed)
		show_log(self->log);
	free(want);
	free(calls);
	free(log);
}

/* ---- this test is HQ: configurations the collector must refuse ---- */

/*
 * The collector's hello, then msg; its Error text (malloc'ed) or NULL, its
 * exit status in *rc and its peak RSS (KiB) in *rss.  Its address space is
 * limited to AS_LIMIT.
 */
static char *hq_sends_config(struct __test_metadata *_metadata,
			     FIXTURE_DATA(hostile) *self,
			     const uint8_t *msg, size_t n, int *rc, long *rss)
{
	char hq[64];
	char *argv[] = { "bfcollector", "--hq", hq, "--replay", self->replay,
			 "--connect-timeout", "20", "--handshake-timeout",
			 "20000", NULL };
	uint8_t hello[2], reply[4096];
	struct bfp_msg m = { 0 };
	struct bfp_error err;
	struct rusage ru = { 0 };
	char *text = NULL;
	size_t got, off;
	bool eof;
	int fd;

	*rc = -2;
	*rss = 0;
	snprintf(hq, sizeof(hq), "127.0.0.1:%d", self->port);
	self->lfd = listen_on(self->port);
	if (self->lfd < 0)
		return NULL;
	self->pids[0] = spawn_limited(argv, self->log, AS_LIMIT);
	if (self->pids[0] <= 0)
		return NULL;
	fd = accept_within(self->lfd, 10000);
	if (fd < 0)
		return NULL;
	if (read_until_eof(fd, hello, 2, 5000, &eof) == 2) {
		for (off = 0; off < n;) {
			ssize_t w = write(fd, msg + off, n - off);

			if (w <= 0)
				break;
			off += (size_t)w;
		}
		got = read_until_eof(fd, reply, sizeof(reply), 60000, &eof);
		EXPECT_TRUE(eof);
		if (got > 3 && bfp_decode(reply, got, 1, BFP_CTX_ANY, &m,
					  &err) == (int)got &&
		    m.id == BFP_ERROR)
			text = strndup(m.str, m.str_len);
		bfp_msg_free(&m);
	}
	close(fd);
	*rc = wait_exit_usage(self->pids[0], 60000, &ru);
	self->pids[0] = 0;
	*rss = ru.ru_maxrss;
	return text;
}

/* A configuration message (version 1) whose exclusions are "x", "@M". */
static int marked_config(struct bft_buf *b)
{
	struct bfp_config c;
	struct bfp_msg m = { .id = BFP_CONFIG, .config = &c };
	int err;

	bfp_config_init(&c);
	c.exclusions.list_class = BFP_LIST_ASLIST;
	err = bfp_strlist_add(&c.exclusions, "x") ?:
	      bfp_strlist_add(&c.exclusions, "@M") ?:
	      bfp_encode(b, 1, &m);
	bfp_config_free(&c);
	return err;
}

/*
 * The handle of "x" in the marked configuration: after the class
 * descriptor, its List type string, the object, Arrays$ArrayList's
 * descriptor, its Object[] type string, the list, String[]'s descriptor
 * and the array.
 */
static const uint8_t ref_x[] = { TC_REFERENCE, 0x00, 0x7e, 0x00, 0x08 };
static const uint8_t null_elem[] = { TC_NULL };

/*
 * The marked configuration with its String[] made of count copies of
 * elem (len bytes), after "x" if keep_x; as many as fit in the largest
 * message if count is 0.
 */
static uint8_t *amplifier(const uint8_t *elem, size_t len, uint32_t count,
			  bool keep_x, size_t *n)
{
	static const uint8_t mark[] = { TC_STRING, 0, 1, 'x',
					TC_STRING, 0, 2, '@', 'M' };
	struct bft_buf b = { 0 };
	size_t head, tail, x = keep_x ? 4 : 0;
	uint8_t *out, *at, *p;
	uint32_t i, joss, total;

	if (marked_config(&b))
		return NULL;
	at = memmem(b.data, b.len, mark, sizeof(mark));
	if (!at || at - b.data < 9) {
		bft_buf_free(&b);
		return NULL;
	}
	head = (size_t)(at - b.data) - 4;	/* up to the array's count */
	tail = b.len - head - 4 - sizeof(mark);
	if (!count)
		count = (uint32_t)((BFP_CONFIG_V1_MAX - (head - 5) - 4 - x -
				    tail) / len);
	*n = head + 4 + x + (size_t)count * len + tail;
	total = count + (keep_x ? 1 : 0);
	out = malloc(*n);
	if (out) {
		memcpy(out, b.data, head);
		p = out + head;
		*p++ = (uint8_t)(total >> 24), *p++ = (uint8_t)(total >> 16);
		*p++ = (uint8_t)(total >> 8), *p++ = (uint8_t)total;
		memcpy(p, mark, x);
		p += x;
		for (i = 0; i < count; i++, p += len)
			memcpy(p, elem, len);
		memcpy(p, at + sizeof(mark), tail);
		joss = (uint32_t)(*n - 5);
		out[1] = (uint8_t)(joss >> 24), out[2] = (uint8_t)(joss >> 16);
		out[3] = (uint8_t)(joss >> 8), out[4] = (uint8_t)joss;
	}
	bft_buf_free(&b);
	return out;
}

TEST(the_amplifiers_are_what_they_claim)
{
	struct bfp_config c;
	char err[160] = "";
	uint8_t *b;
	size_t n;
	uint32_t i;

	b = amplifier(ref_x, sizeof(ref_x), 3, true, &n);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, bfp_config_decode_java(b + 5, n - 5, &c, err,
					    sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(4u, c.exclusions.n);
	for (i = 0; i < 4; i++)
		EXPECT_STREQ("x", c.exclusions.v[i]);
	EXPECT_EQ(0u, c.inclusions.n);
	bfp_config_free(&c);
	free(b);
	b = amplifier(null_elem, 1, 3, false, &n);
	ASSERT_NE(NULL, b);
	EXPECT_EQ(-EPROTO, bfp_config_decode_java(b + 5, n - 5, &c, err,
						  sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "not a string")) TH_LOG("%s", err);
	free(b);
	/* the largest: the decoder's limit exactly */
	b = amplifier(null_elem, 1, 0, false, &n);
	ASSERT_NE(NULL, b);
	EXPECT_EQ(5 + BFP_CONFIG_V1_MAX, n);
	free(b);
}

/* A configuration of n exclusions, pattern; the collector's Error text. */
static char *refused(struct __test_metadata *_metadata,
		     FIXTURE_DATA(hostile) *self, const char *pattern,
		     unsigned int n, int *rc)
{
	struct bfp_config c;
	struct bfp_msg m = { .id = BFP_CONFIG, .config = &c };
	struct bft_buf b = { 0 };
	unsigned int i;
	char *text;
	long rss;

	bfp_config_init(&c);
	for (i = 0; i < n; i++)
		if (bfp_strlist_add(&c.exclusions, pattern))
			return NULL;
	if (bfp_encode(&b, 1, &m))
		return NULL;
	bfp_config_free(&c);
	text = hq_sends_config(_metadata, self, b.data, b.len, rc, &rss);
	bft_buf_free(&b);
	return text;
}

static char *repeat(const char *unit, unsigned int n)
{
	size_t len = strlen(unit);
	char *s = malloc(n * len + 1);
	unsigned int i;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++)
		memcpy(s + i * len, unit, len);
	s[n * len] = 0;
	return s;
}

TEST_F_TIMEOUT(hostile, patterns_past_the_limits_are_refused, 300)
{
	char *deep = repeat("(", 40), *bytes = repeat("a", 5000);
	struct {
		const char *pattern;
		unsigned int n;
		const char *why;
	} cases[] = {
		{ "prog!(", 1, "missing closing parenthesis" },
		{ bytes, 1, "longer than the limit" },
		{ deep, 1, "too deeply nested" },
		/* 25 bytes that compile to 43 KB */
		{ "(?:a|b|c|d|e|f|g|h){1000}", 200, "more than 8192 KiB" },
	};
	unsigned int i;

	ASSERT_NE(NULL, deep);
	ASSERT_NE(NULL, bytes);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;
		char *text = refused(_metadata, self, cases[i].pattern,
				     cases[i].n, &rc);

		fprintf(stderr, "# %.20s x %u: exit status %d, Error \"%s\"\n",
			cases[i].pattern, cases[i].n, rc, text ? text : "-");
		EXPECT_NE(NULL, text);
		if (text)
			EXPECT_NE(NULL, strstr(text, cases[i].why));
		EXPECT_EQ(3, rc);
		free(text);
		close(self->lfd);
		self->lfd = -1;
	}
	if (!_metadata->passed)
		show_log(self->log);
	free(deep);
	free(bytes);
}

TEST_F_TIMEOUT(hostile, null_array_configuration_is_bounded, 300)
{
	size_t n;
	uint8_t *msg = amplifier(null_elem, 1, 0, false, &n);
	char *text;
	long rss;
	int rc;

	ASSERT_NE(NULL, msg);
	text = hq_sends_config(_metadata, self, msg, n, &rc, &rss);
	fprintf(stderr, "# %zu bytes of nulls: exit status %d, peak RSS %ld "
		"MiB, Error \"%s\"\n", n, rc, rss >> 10, text ? text : "-");
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "more than 64 MiB")) TH_LOG("%s", text);
	EXPECT_EQ(3, rc);		/* EXIT_PROTOCOL */
	EXPECT_LE(rss, (long)RSS_BOUND_KIB);
	if (!_metadata->passed)
		show_log(self->log);
	free(text);
	free(msg);
}

TEST_F_TIMEOUT(hostile, millions_of_references_to_one_pattern_are_refused, 300)
{
	size_t n;
	uint8_t *msg = amplifier(ref_x, sizeof(ref_x), 0, true, &n);
	char *text;
	long rss;
	int rc;

	ASSERT_NE(NULL, msg);
	text = hq_sends_config(_metadata, self, msg, n, &rc, &rss);
	fprintf(stderr, "# %zu references to \"x\": exit status %d, peak RSS "
		"%ld MiB, Error \"%s\"\n", (n - 400) / sizeof(ref_x), rc,
		rss >> 10, text ? text : "-");
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "more than 4096 patterns"))
		TH_LOG("%s", text);
	EXPECT_EQ(3, rc);
	EXPECT_LE(rss, (long)RSS_BOUND_KIB);
	if (!_metadata->passed)
		show_log(self->log);
	free(text);
	free(msg);
}

TEST_HARNESS_MAIN
