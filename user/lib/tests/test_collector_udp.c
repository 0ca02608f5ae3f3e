// SPDX-License-Identifier: GPL-2.0
/*
 * bfcollector --data-udp -> bfhq --udp over loopback, no kernel, through a
 * relay of the test's own that stands where HQ is: it passes the control
 * connection through and forwards the datagrams, dropping, holding back
 * (so they arrive out of order), duplicating or adding garbage as a seeded
 * RNG says, and counts what it did.  The same replayed stream over TCP is
 * the reference:
 *   - without loss, bfhq's outputs equal the TCP run's, byte for byte;
 *   - with loss, bfhq finishes, messages routed + sequence numbers declared
 *     missing = the messages sent (the TCP run's routed), and the datagrams
 *     it counts lost are exactly the ones the relay dropped;
 *   - duplicates and garbage are counted exactly and change no output.
 * The runs that count use --ms-only: a bftrace.us marker is a sequenced
 * message bfhq consumes without routing it, which the sum would miss; the
 * reordered run has the markers (at most 1212 bytes over UDP), and the
 * microseconds they give must come out the same.
 */
#include <jansson.h>
#include <poll.h>
#include <pthread.h>

#include "kselftest_harness.h"

#include "collector_fixture.h"

/* ---- the relay ---- */

struct relay_opts {
	unsigned int drop_pct, hold_pct, dup_pct, garbage_pct;
	uint64_t seed;
};

struct relay {
	struct relay_opts o;
	int port, hq_port;
	int tcp_fd, udp_in, udp_out, stop_fd[2];
	pthread_t thread;
	/* counts, read once the thread is joined */
	uint64_t in, forwarded, dropped, held, duplicated, garbage;
	uint64_t rng;
	struct { uint8_t b[1600]; size_t n; unsigned int after; } hold[64];
	unsigned int nhold;
};

static uint32_t rnd(struct relay *r)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return (uint32_t)(r->rng >> 16);
}

static bool chance(struct relay *r, unsigned int pct)
{
	return pct && rnd(r) % 100 < pct;
}

static void fwd(struct relay *r, const uint8_t *b, size_t n)
{
	if (send(r->udp_out, b, n, 0) == (ssize_t)n)
		r->forwarded++;
}

/* A datagram bfhq must refuse, made from a real one (b, n bytes). */
static void garbage(struct relay *r, const uint8_t *b, size_t n)
{
	uint8_t g[1600];
	size_t len, i;

	memcpy(g, b, n);
	switch (rnd(r) % 4) {
	case 0:		/* the last message cut short */
		len = n - 1 - rnd(r) % 4;
		break;
	case 1:		/* one message more than there is */
		g[5]++;
		len = n;
		break;
	case 2:		/* a header and nothing */
		len = 12;
		break;
	default:	/* noise, not even the magic */
		len = 1 + rnd(r) % 200;
		for (i = 0; i < len; i++)
			g[i] = (uint8_t)rnd(r);
		g[0] = 'x';
		break;
	}
	fwd(r, g, len);
	r->forwarded--;
	r->garbage++;
}

static void release_held(struct relay *r, bool all)
{
	unsigned int i = 0;

	while (i < r->nhold) {
		if (all || !r->hold[i].after--) {
			fwd(r, r->hold[i].b, r->hold[i].n);
			r->hold[i] = r->hold[--r->nhold];
		} else {
			i++;
		}
	}
}

static void datagram(struct relay *r)
{
	uint8_t b[1600];
	ssize_t n = recv(r->udp_in, b, sizeof(b), 0);

	if (n <= 0)
		return;
	r->in++;
	release_held(r, false);
	if (chance(r, r->o.drop_pct)) {
		r->dropped++;
		return;
	}
	if (r->nhold < 64 && chance(r, r->o.hold_pct)) {
		memcpy(r->hold[r->nhold].b, b, (size_t)n);
		r->hold[r->nhold].n = (size_t)n;
		r->hold[r->nhold].after = 1 + rnd(r) % 8;
		r->nhold++;
		r->held++;
		return;
	}
	fwd(r, b, (size_t)n);
	if (chance(r, r->o.dup_pct)) {
		fwd(r, b, (size_t)n);
		r->forwarded--;
		r->duplicated++;
	}
	if (chance(r, r->o.garbage_pct))
		garbage(r, b, (size_t)n);
}

static int connect_hq(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Control connections pass through whole, in both directions. */
static void *relay_main(void *arg)
{
	struct relay *r = arg;
	int pair[8][2], npairs = 0, i;

	for (;;) {
		struct pollfd p[4 + 16];
		int n = 0, k;

		p[n++] = (struct pollfd){ .fd = r->stop_fd[0], .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = r->tcp_fd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = r->udp_in, .events = POLLIN };
		for (i = 0; i < npairs; i++) {
			p[n++] = (struct pollfd){ .fd = pair[i][0], .events = POLLIN };
			p[n++] = (struct pollfd){ .fd = pair[i][1], .events = POLLIN };
		}
		/* idle: what is held goes (the stream paused or ended) */
		k = poll(p, (nfds_t)n, 5);
		if (k == 0)
			release_held(r, true);
		if (p[0].revents)
			break;
		if (p[2].revents & POLLIN)
			datagram(r);
		for (i = 0; i < npairs; i++) {
			int s;

			for (s = 0; s < 2; s++) {
				char buf[65536];
				ssize_t m;

				if (!(p[3 + 2 * i + s].revents & (POLLIN | POLLHUP)))
					continue;
				m = recv(pair[i][s], buf, sizeof(buf), 0);
				if (m > 0) {
					if (send(pair[i][!s], buf, (size_t)m,
						 MSG_NOSIGNAL) != m)
						m = 0;
				}
				if (m <= 0) {
					/* one end closed: the other hears it,
					 * after what was held back */
					release_held(r, true);
					shutdown(pair[i][!s], SHUT_WR);
					if (m < 0 || s == 1) {
						close(pair[i][0]);
						close(pair[i][1]);
						pair[i][0] = pair[--npairs][0];
						pair[i][1] = pair[npairs][1];
						break;
					}
				}
			}
		}
		/* after the pairs: a new one has no poll entry yet */
		if ((p[1].revents & POLLIN) && npairs < 8) {
			int a = accept(r->tcp_fd, NULL, NULL);
			int b = a >= 0 ? connect_hq(r->hq_port) : -1;

			if (b >= 0) {
				pair[npairs][0] = a;
				pair[npairs][1] = b;
				npairs++;
			} else if (a >= 0) {
				close(a);
			}
		}
	}
	for (i = 0; i < npairs; i++) {
		close(pair[i][0]);
		close(pair[i][1]);
	}
	return NULL;
}

static int relay_start(struct relay *r, int port, int hq_port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in hq = sa;
	int one = 1, size = 8 << 20;

	r->port = port;
	r->hq_port = hq_port;
	r->rng = r->o.seed * 2654435761u + 1;
	hq.sin_port = htons(hq_port);
	r->tcp_fd = socket(AF_INET, SOCK_STREAM, 0);
	r->udp_in = socket(AF_INET, SOCK_DGRAM, 0);
	r->udp_out = socket(AF_INET, SOCK_DGRAM, 0);
	if (r->tcp_fd < 0 || r->udp_in < 0 || r->udp_out < 0 ||
	    pipe(r->stop_fd))
		return -1;
	setsockopt(r->tcp_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(r->udp_in, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
	if (bind(r->tcp_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(r->tcp_fd, 8) ||
	    bind(r->udp_in, (struct sockaddr *)&sa, sizeof(sa)) ||
	    connect(r->udp_out, (struct sockaddr *)&hq, sizeof(hq)))
		return -1;
	return pthread_create(&r->thread, NULL, relay_main, r) ? -1 : 0;
}

static void relay_stop(struct relay *r)
{
	if (write(r->stop_fd[1], "x", 1) == 1)
		pthread_join(r->thread, NULL);
	close(r->stop_fd[0]);
	close(r->stop_fd[1]);
	close(r->tcp_fd);
	close(r->udp_in);
	close(r->udp_out);
}

/* ---- the runs ---- */

FIXTURE(udp) {
	char dir[PATH_MAX];
	char replay[PATH_MAX + 16];
	char tcp_out[PATH_MAX + 16];
	char udp_out[PATH_MAX + 16];
	char log[PATH_MAX + 16];
	struct syn syn;
};

FIXTURE_SETUP(udp)
{
	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	snprintf(self->replay, sizeof(self->replay), "%s/replay", self->dir);
	snprintf(self->tcp_out, sizeof(self->tcp_out), "%s/tcp", self->dir);
	snprintf(self->udp_out, sizeof(self->udp_out), "%s/udp", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/log", self->dir);
	ASSERT_EQ(0, mkdir(self->replay, 0755));
	memset(&self->syn, 0, sizeof(self->syn));
	self->syn.o = (struct syn_opts){
		.threads = 4, .cpus = 2, .methods = 30, .noret_depth = 7,
		.steps = 20000, .seed = 34,
	};
	ASSERT_EQ(0, syn_generate(&self->syn, self->replay));
}

FIXTURE_TEARDOWN(udp)
{
	syn_free(&self->syn);
	if (!getenv("BFT_KEEP"))	/* to look at a failure */
		remove_tmpdir(self->dir);
}

/* One bfhq, one bfcollector; udp: through a relay with those odds. */
static void run(struct __test_metadata *_metadata, FIXTURE_DATA(udp) *self,
		const char *out, const struct relay_opts *udp,
		struct relay *r, bool ms_only)
{
	int hq_port = free_port(), port = hq_port;
	char hq_p[16], target[64];
	char *hq_argv[16] = { "bfhq", "-p", hq_p, "-o", (char *)out, "--start",
			      "--count", "1", "--timeout", "120",
			      "--data-senders", "2", NULL };
	char *coll_argv[16] = { "bfcollector", "--hq", target, "--replay",
				self->replay, "--ms-only", "--connect-timeout",
				"30", NULL };
	pid_t hq_pid, coll_pid;
	int hq_rc, coll_rc;

	ASSERT_GT(hq_port, 0);
	snprintf(hq_p, sizeof(hq_p), "%d", hq_port);
	if (!ms_only)
		coll_argv[5] = "-v";
	if (udp) {
		hq_argv[12] = "--udp";
		coll_argv[8] = "--data-udp";
	}
	hq_pid = spawn(hq_argv, self->log);
	ASSERT_GT(hq_pid, 0);
	if (!wait_listening(hq_port, slow_env() ? 30000 : 5000)) {
		wait_exit(hq_pid, 0);
		ASSERT_TRUE(false);
	}
	if (udp) {
		memset(r, 0, sizeof(*r));
		r->o = *udp;
		port = free_port();
		if (port <= 0 || relay_start(r, port, hq_port)) {
			wait_exit(hq_pid, 0);
			ASSERT_TRUE(false);
		}
	}
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	coll_pid = spawn(coll_argv, self->log);
	coll_rc = coll_pid > 0 ? wait_exit(coll_pid, slow_env() ? 300000 :
					   60000) : -1;
	hq_rc = wait_exit(hq_pid, slow_env() ? 120000 : 30000);
	if (udp)
		relay_stop(r);
	if (coll_rc || hq_rc)
		show_log(self->log);
	ASSERT_EQ(0, coll_rc);
	ASSERT_EQ(0, hq_rc);
}

static json_int_t counter(struct __test_metadata *_metadata,
			  const char *out, const char *key)
{
	char path[PATH_MAX + 64];
	json_t *meta, *v;
	json_int_t n;

	snprintf(path, sizeof(path), "%s/trace-1/live/meta.json", out);
	meta = json_load_file(path, 0, NULL);
	EXPECT_NE(NULL, meta);
	if (!meta)
		return -1;
	v = json_object_get(json_object_get(meta, "counters"), key);
	EXPECT_TRUE(json_is_integer(v)) TH_LOG("no counter %s", key);
	n = json_integer_value(v);
	json_decref(meta);
	return n;
}

static void same_outputs(struct __test_metadata *_metadata,
			 FIXTURE_DATA(udp) *self)
{
	static const char *const files[] = { "calls.txt", "tree.txt",
					     "folded.txt", "trace.json" };
	unsigned int i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char a[PATH_MAX + 64], b[PATH_MAX + 64];
		size_t na = 0, nb = 0;
		char *ta, *tb;

		snprintf(a, sizeof(a), "%s/trace-1/%s", self->tcp_out, files[i]);
		snprintf(b, sizeof(b), "%s/trace-1/%s", self->udp_out, files[i]);
		ta = bft_test_slurp(a, &na);
		tb = bft_test_slurp(b, &nb);
		ASSERT_NE(NULL, ta);
		ASSERT_NE(NULL, tb);
		EXPECT_TRUE(na == nb && !memcmp(ta, tb, na))
			TH_LOG("%s differs over UDP", files[i]);
		free(ta);
		free(tb);
	}
}

static void check_counts(struct __test_metadata *_metadata,
			 FIXTURE_DATA(udp) *self, const struct relay *r,
			 bool ms_only)
{
	json_int_t sent = counter(_metadata, self->tcp_out, "routed");

	ASSERT_GT(sent, 1000);
	if (ms_only)
		EXPECT_EQ(sent, counter(_metadata, self->udp_out, "routed") +
				counter(_metadata, self->udp_out, "gap_missing") +
				counter(_metadata, self->udp_out, "lost_missing"));
	/* received: every well-formed one, a duplicate too */
	EXPECT_EQ((json_int_t)(r->forwarded + r->duplicated),
		  counter(_metadata, self->udp_out, "udp_datagrams"));
	EXPECT_EQ((json_int_t)r->dropped,
		  counter(_metadata, self->udp_out, "udp_lost"));
	EXPECT_EQ((json_int_t)r->duplicated,
		  counter(_metadata, self->udp_out, "udp_duplicated"));
	EXPECT_EQ((json_int_t)r->garbage,
		  counter(_metadata, self->udp_out, "udp_malformed"));
}

TEST_F_TIMEOUT(udp, reordered_without_loss_equals_tcp, 600)
{
	struct relay_opts o = { .hold_pct = 10, .seed = 1 };
	struct relay r;

	run(_metadata, self, self->tcp_out, NULL, NULL, false);
	run(_metadata, self, self->udp_out, &o, &r, false);
	EXPECT_GT(r.held, 10);
	check_counts(_metadata, self, &r, false);
	EXPECT_EQ(0, counter(_metadata, self->udp_out, "us_malformed"));
	EXPECT_EQ(0, counter(_metadata, self->udp_out, "gap_missing"));
	EXPECT_EQ(0, counter(_metadata, self->udp_out, "lost_missing"));
	same_outputs(_metadata, self);
}

TEST_F_TIMEOUT(udp, loss_is_counted_exactly_and_never_stalls, 600)
{
	struct relay_opts o = { .drop_pct = 3, .hold_pct = 10, .seed = 2 };
	struct relay r;

	run(_metadata, self, self->tcp_out, NULL, NULL, true);
	run(_metadata, self, self->udp_out, &o, &r, true);
	EXPECT_GT(r.dropped, 5);
	check_counts(_metadata, self, &r, true);
	EXPECT_GT(counter(_metadata, self->udp_out, "gap_missing") +
		  counter(_metadata, self->udp_out, "lost_missing"), 0);
}

TEST_F_TIMEOUT(udp, duplicates_are_dropped_and_counted, 600)
{
	struct relay_opts o = { .dup_pct = 5, .hold_pct = 5, .seed = 3 };
	struct relay r;

	run(_metadata, self, self->tcp_out, NULL, NULL, true);
	run(_metadata, self, self->udp_out, &o, &r, true);
	EXPECT_GT(r.duplicated, 5);
	check_counts(_metadata, self, &r, true);
	same_outputs(_metadata, self);
}

TEST_F_TIMEOUT(udp, garbage_is_refused_and_counted, 600)
{
	struct relay_opts o = { .garbage_pct = 5, .hold_pct = 5, .seed = 4 };
	struct relay r;

	run(_metadata, self, self->tcp_out, NULL, NULL, true);
	run(_metadata, self, self->udp_out, &o, &r, true);
	EXPECT_GT(r.garbage, 5);
	check_counts(_metadata, self, &r, true);
	same_outputs(_metadata, self);
}

TEST_HARNESS_MAIN
