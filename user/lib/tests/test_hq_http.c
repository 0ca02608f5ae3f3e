// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq --http (user/hq/http.c) on a live directory bfhq itself writes:
 * the trace list, the page's files and nothing outside them, and a
 * viewer's event stream: what the indexes cover up to the safe frontier
 * first, then each flush's news pushed to every open viewer, "end" once
 * the trace has ended; a viewer that went away is freed; index entries
 * that make no sense are counted, not followed; the counters' record, a
 * line an event.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "bft_test.h"
#include "collector_fixture.h"
#include "hq.h"
#include "hq_feed.h"
#include "http.h"
#include "live.h"

/* Bounds on waiting for the server; no timing is asserted. */
#define WAIT_MS		20000

FIXTURE(http)
{
	char dir[PATH_MAX];
	char live[PATH_MAX + 32];
	struct hq hq;
	struct conn *ctl, *data;
	struct trace *t;
	struct hq_http *h;
};

static void ev(FIXTURE_DATA(http) *self, uint8_t id, uint32_t seq,
	       uint32_t method, uint16_t thread)
{
	hq_test_event(&self->hq, self->data, id, seq, method, thread);
}

static void map(FIXTURE_DATA(http) *self, uint8_t id, uint32_t n,
		const char *name)
{
	hq_test_map(&self->hq, self->data, id, n, name);
}

static void flush_now(FIXTURE_DATA(http) *self)
{
	live_tick(self->t->live, self->t, hq_now_ms(), true, false);
}

FIXTURE_SETUP(http)
{
	char www[PATH_MAX];

	hq_log_quiet = true;
	/* the page's files, from the source tree */
	snprintf(www, sizeof(www), "%s/../../../hq/www", BFT_TEST_VECTORS);
	setenv("BFHQ_WWW", www, 1);
	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	memset(&self->hq, 0, sizeof(self->hq));
	self->hq.listen_fd = self->hq.ctl_fd = -1;
	self->hq.o.outdir = self->dir;
	self->hq.o.gap_ms = 2000;
	self->hq.o.live_flush_ms = 3600000;	/* the tests flush */
	bfp_config_init(&self->hq.o.config);
	self->t = hq_test_connect(&self->hq, &self->ctl, &self->data);
	ASSERT_NE(NULL, self->t);
	ASSERT_NE(NULL, self->t->live);
	snprintf(self->live, sizeof(self->live), "%s/trace-1/live", self->dir);
	self->h = hq_http_start("127.0.0.1", 0, self->dir, NULL);
	ASSERT_NE(NULL, self->h);
}

FIXTURE_TEARDOWN(http)
{
	hq_http_stop(self->h);
	hq_free(&self->hq);
	bfp_config_free(&self->hq.o.config);
	remove_tmpdir(self->dir);
}

/*
 * An HTTP/1.0 request (no chunked reply) with these header lines (each
 * ending in \r\n): the connected socket.
 */
static int request_with(FIXTURE_DATA(http) *self, const char *path,
			const char *headers)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char req[512];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n;

	if (fd < 0)
		return -1;
	sa.sin_port = htons((uint16_t)hq_http_port(self->h));
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n%s\r\n", path,
		     headers);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    write(fd, req, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	return fd;
}

static int request(FIXTURE_DATA(http) *self, const char *path)
{
	return request_with(self, path, "");
}

/*
 * Read from fd into b until want is in it (NULL: until EOF), WAIT_MS at
 * most.  true if it came.
 */
static bool read_until(int fd, struct bft_buf *b, const char *want)
{
	uint64_t end = hq_now_ms() + WAIT_MS;
	char tmp[4096];

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = hq_now_ms();
		ssize_t n;

		if (want) {
			bft_buf_reserve(b, 1);
			b->data[b->len] = 0;
			if (strstr((char *)b->data, want))
				return true;
		}
		if (now >= end || poll(&p, 1, (int)(end - now)) <= 0)
			return false;
		n = read(fd, tmp, sizeof(tmp));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return !want;
		bft_buf_append(b, tmp, (size_t)n);
	}
}

/* The whole reply on fd (-1: none), NUL-ended (caller frees). */
static char *whole_reply(int fd)
{
	struct bft_buf b = { 0 };

	if (fd < 0)
		return NULL;
	if (!read_until(fd, &b, NULL))
		b.len = 0;
	close(fd);
	bft_buf_append(&b, "", 1);
	return (char *)b.data;
}

static char *get(FIXTURE_DATA(http) *self, const char *path)
{
	return whole_reply(request(self, path));
}

/* The reply to GET /api/traces with Host: host (its port: the server's if port). */
static char *get_host(FIXTURE_DATA(http) *self, const char *host, bool port)
{
	char headers[300];

	if (port)
		snprintf(headers, sizeof(headers), "Host: %s:%u\r\n", host,
			 hq_http_port(self->h));
	else
		snprintf(headers, sizeof(headers), "Host: %s\r\n", host);
	return whole_reply(request_with(self, "/api/traces", headers));
}

/* Whether GET with Host: host (get_host()) is answered with status. */
static bool host_status(FIXTURE_DATA(http) *self, const char *host, bool port,
			const char *status)
{
	char *r = get_host(self, host, port);
	bool is = r && strstr(r, status);

	if (!is)
		fprintf(stderr, "# Host %s: %s\n", host, r ? r : "(none)");
	free(r);
	return is;
}

TEST_F(http, only_requests_for_this_server_s_names_are_served)
{
	static const char *const ok[] = { "127.0.0.1", "localhost",
					  "LocalHost", "[::1]" };
	static const char *const names[] = { "bfhq.example" };
	struct hq_http_names any = { .any_host = true };
	struct hq_http_names more = { .names = names, .n = 1 };
	char *r;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		EXPECT_TRUE(host_status(self, ok[i], true, " 200 OK\r\n"));
	/* a page that rebinds its name to us brings that name */
	r = get_host(self, "attacker.example", true);
	ASSERT_NE(NULL, r);
	EXPECT_NE(NULL, strstr(r, " 421 ")) TH_LOG("%s", r);
	EXPECT_NE(NULL, strstr(r, "Host \"attacker.example:"))
		TH_LOG("%s", r);
	EXPECT_EQ(NULL, strstr(r, "\"trace\""));
	free(r);
	/* the right name on another port is another server */
	EXPECT_TRUE(host_status(self, "127.0.0.1", false, " 421 "));
	EXPECT_TRUE(host_status(self, "127.0.0.1:1:2", false, " 421 "));
	/* --http-host NAME, --http-any-host */
	hq_http_stop(self->h);
	self->h = hq_http_start("127.0.0.1", 0, self->dir, &more);
	ASSERT_NE(NULL, self->h);
	EXPECT_TRUE(host_status(self, "bfhq.example", true, " 200 OK\r\n"));
	EXPECT_TRUE(host_status(self, "attacker.example", true, " 421 "));
	hq_http_stop(self->h);
	self->h = hq_http_start("127.0.0.1", 0, self->dir, &any);
	ASSERT_NE(NULL, self->h);
	EXPECT_TRUE(host_status(self, "attacker.example", true,
				" 200 OK\r\n"));
}

TEST_F(http, lists_traces_and_serves_the_page_and_only_its_files)
{
	char *r;

	ev(self, BFP_METHOD_ENTRY, 0, 1, 1);
	flush_now(self);
	r = get(self, "/api/traces");
	ASSERT_NE(NULL, r);
	EXPECT_NE(NULL, strstr(r, " 200 OK\r\n")) TH_LOG("%s", r);
	EXPECT_NE(NULL, strstr(r, "application/json"));
	EXPECT_NE(NULL, strstr(r, "[{\"trace\":1,\"meta\":{")) TH_LOG("%s", r);
	EXPECT_NE(NULL, strstr(r, "\"state\":\"running\""));
	free(r);
	r = get(self, "/");
	ASSERT_NE(NULL, r);
	EXPECT_NE(NULL, strstr(r, "200 OK"));
	EXPECT_NE(NULL, strstr(r, "text/html"));
	EXPECT_NE(NULL, strstr(r, "<title>bfhq live</title>"));
	free(r);
	r = get(self, "/static/app.js");
	ASSERT_NE(NULL, r);
	EXPECT_NE(NULL, strstr(r, "text/javascript"));
	free(r);
	r = get(self, "/static/..%2fhttp.c");
	ASSERT_NE(NULL, r);
	EXPECT_NE(NULL, strstr(r, " 404 ")) TH_LOG("%s", r);
	free(r);
	r = get(self, "/static/../hq.h");
	ASSERT_NE(NULL, r);
	EXPECT_NE(NULL, strstr(r, " 404 ")) TH_LOG("%s", r);
	free(r);
	r = get(self, "/api/traces/2/events");
	ASSERT_NE(NULL, r);
	EXPECT_NE(NULL, strstr(r, " 404 ")) TH_LOG("%s", r);
	free(r);
}

TEST_F(http, viewers_get_the_past_then_each_flush_then_the_end)
{
	struct bft_buf a = { 0 }, b = { 0 };
	char *p;
	int fa, fb;

	map(self, BFP_MAP_METHOD, 1, "main");
	/* a display form for the page: the escaped one of the escaped name */
	map(self, BFP_MAP_METHOD, 2, "lib.so!Box<a\x01>::get(std::vector<int, "
	    "std::allocator<int> >) const");
	map(self, BFP_MAP_THREAD, 1, "one (5/5)");
	ev(self, BFP_METHOD_ENTRY, 0, 1, 1);
	ev(self, BFP_METHOD_ENTRY, 1, 1, 2);
	flush_now(self);
	/* thread 2 idle from here: its empty entries let thread 1 show */
	ev(self, BFP_METHOD_EXIT, 2, 1, 1);
	flush_now(self);

	fa = request(self, "/api/traces/1/events");
	ASSERT_LE(0, fa);
	ASSERT_TRUE(read_until(fa, &a, "event: frontier\ndata: 2000\n\n"))
		TH_LOG("%s", a.data);
	p = (char *)a.data;
	EXPECT_NE(NULL, strstr(p, "text/event-stream"));
	EXPECT_NE(NULL, strstr(p, "event: meta\ndata: {"));
	EXPECT_NE(NULL, strstr(p, "event: names\ndata: M 1 main\n"
			       "data: M 2 lib.so!Box<a\\x01>::get(std::vector"
			       "<int, std::allocator<int> >) const\n"
			       "data: S 2 lib.so!Box<a\\x01>::get\n"
			       "data: T 1 one (5/5)\n\n")) TH_LOG("%s", p);
	EXPECT_NE(NULL, strstr(p, "event: stream\ndata: 1\ndata: e 0 0 1\n"
			       "data: x 2 2000 1\n\n")) TH_LOG("%s", p);
	EXPECT_NE(NULL, strstr(p, "event: stream\ndata: 2\n"
			       "data: e 1 1000 1\n\n")) TH_LOG("%s", p);

	/* a second viewer, then news for both */
	fb = request(self, "/api/traces/1/events");
	ASSERT_LE(0, fb);
	ASSERT_TRUE(read_until(fb, &b, "data: 2000\n\n"));
	a.len = b.len = 0;
	ev(self, BFP_METHOD_ENTRY, 3, 1, 1);
	flush_now(self);
	EXPECT_TRUE(read_until(fa, &a, "event: stream\ndata: 1\n"
			       "data: e 3 3000 1\n\nevent: frontier\n"
			       "data: 3000\n\n")) TH_LOG("%s", a.data);
	EXPECT_TRUE(read_until(fb, &b, "data: e 3 3000 1\n"));
	EXPECT_EQ(NULL, strstr((char *)a.data, "e 0 0 1"));

	/* the end: the last lines, "end", and the server closes */
	a.len = 0;
	ev(self, BFP_METHOD_EXIT, 4, 1, 1);
	hq_trace_finish(&self->hq, self->t);
	EXPECT_TRUE(read_until(fa, &a, NULL));
	p = (char *)a.data;
	EXPECT_NE(NULL, strstr(p, "\"state\":\"finished\"")) TH_LOG("%s", p);
	EXPECT_NE(NULL, strstr(p, "data: x 4 4000 1\n")) TH_LOG("%s", p);
	EXPECT_NE(NULL, strstr(p, "event: end\n")) TH_LOG("%s", p);
	close(fa);
	close(fb);
	bft_buf_free(&a);
	bft_buf_free(&b);
}

TEST_F(http, a_viewer_that_goes_away_is_freed)
{
	struct bft_buf a = { 0 };
	uint64_t end;
	uint32_t seq = 1;
	int fa;

	ev(self, BFP_METHOD_ENTRY, 0, 1, 1);
	flush_now(self);
	fa = request(self, "/api/traces/1/events");
	ASSERT_LE(0, fa);
	ASSERT_TRUE(read_until(fa, &a, "event: frontier\n"));
	EXPECT_EQ(1u, hq_http_viewers(self->h));
	close(fa);
	/* its next writes fail: news makes the server write */
	end = hq_now_ms() + WAIT_MS;
	while (hq_http_viewers(self->h) && hq_now_ms() < end) {
		ev(self, BFP_METHOD_ENTRY, seq, 1, 1);
		seq++;
		flush_now(self);
		usleep(20000);
	}
	EXPECT_EQ(0u, hq_http_viewers(self->h));
	bft_buf_free(&a);
}

TEST_F(http, a_torn_record_waits_and_a_bad_entry_is_counted)
{
	char path[PATH_MAX + 64], junk[LIVE_INDEX_RECORD] = { 0 };
	struct bft_buf a = { 0 };
	FILE *f;
	int fa;

	ev(self, BFP_METHOD_ENTRY, 0, 1, 1);
	flush_now(self);
	snprintf(path, sizeof(path), "%s/stream-1.index", self->live);
	f = fopen(path, "a");
	ASSERT_NE(NULL, f);
	/* half a record: ignored until whole */
	ASSERT_EQ(1u, fwrite(junk, 17, 1, f));
	fflush(f);
	fa = request(self, "/api/traces/1/events");
	ASSERT_LE(0, fa);
	ASSERT_TRUE(read_until(fa, &a, "event: frontier\ndata: 0\n\n"))
		TH_LOG("%s", a.data);
	EXPECT_EQ(NULL, strstr((char *)a.data, "event: bad"));
	/* made whole, it covers data at offset 0 again: not contiguous */
	ASSERT_EQ(1u, fwrite(junk, LIVE_INDEX_RECORD - 17, 1, f));
	fclose(f);
	ev(self, BFP_METHOD_ENTRY, 1, 1, 2);
	flush_now(self);
	EXPECT_TRUE(read_until(fa, &a, "event: bad\ndata: 1\n\n"))
		TH_LOG("%s", a.data);
	close(fa);
	bft_buf_free(&a);
}

/* Append text to the counters' record under dir. */
static void record(const char *dir, const char *text)
{
	char path[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/" HQ_COUNTERS_FILE, dir);
	f = fopen(path, "a");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

TEST_F(http, counters_are_sent_a_line_an_event_whole_lines_only)
{
	struct bft_buf b = { 0 };
	char *r;
	int fd;

	r = get(self, "/api/counters/events");
	ASSERT_NE(NULL, r);
	EXPECT_NE(NULL, strstr(r, " 404 "));
	free(r);

	record(self->dir, "{\"event\":\"hello\"}\n{\"event\":\"sam");
	fd = request(self, "/api/counters/events");
	ASSERT_LE(0, fd);
	EXPECT_TRUE(read_until(fd, &b, "data: {\"event\":\"hello\"}\n\n"));
	EXPECT_NE(NULL, strstr((char *)b.data, "event: counters\n"));
	/* the line being written waits for its end */
	EXPECT_EQ(NULL, strstr((char *)b.data, "sam"));
	record(self->dir, "ple\",\"n\":1}\n\n{\"event\":\"sample\",\"n\":2}\n");
	EXPECT_TRUE(read_until(fd, &b, "\"n\":2}\n\n"));
	EXPECT_NE(NULL, strstr((char *)b.data,
			       "data: {\"event\":\"sample\",\"n\":1}\n\n"));
	/* an empty line is no event */
	EXPECT_EQ(NULL, strstr((char *)b.data, "data: \n"));
	close(fd);
	bft_buf_free(&b);
}

TEST_HARNESS_MAIN
