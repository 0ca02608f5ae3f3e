// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/bftrace as a reader sees it: one reader per ring, whole records per
 * read() however small the buffer, EAGAIN on an empty ring, and a live
 * reader that gets every event, the last exit run included, within a flush
 * interval and without a stop.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "capture/bft_rings.h"
#include "bft_selftest.h"
#include "calltree_shape.h"

FIXTURE(rings) {
	struct bst_session s;
	struct bst_proc target;
	struct bft_nl_status st0, st;
	int fd[2];
};

FIXTURE_SETUP(rings)
{
	self->fd[0] = self->fd[1] = -1;
	ASSERT_EQ(0, bst_session_open(&self->s));
}

FIXTURE_TEARDOWN(rings)
{
	for (int i = 0; i < 2; i++) {
		if (self->fd[i] >= 0)
			close(self->fd[i]);
	}
	bst_session_close(&self->s);
	bst_proc_kill(&self->target);
	bft_nl_status_free(&self->st0);
	bft_nl_status_free(&self->st);
}

static int open_ring(uint32_t cpu)
{
	int fd = open("/dev/" BFT_DEV_NAME, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, BFT_IOC_BIND_CPU, &cpu)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

TEST_F(rings, second_reader_of_a_ring_is_busy)
{
	self->fd[0] = open_ring(0);
	ASSERT_LE(0, self->fd[0]) TH_LOG("bind cpu 0: %s", strerror(-self->fd[0]));
	EXPECT_EQ(-EBUSY, open_ring(0));
	/* The ring is free again once its reader is gone. */
	close(self->fd[0]);
	self->fd[0] = open_ring(0);
	EXPECT_LE(0, self->fd[0]);
}

TEST_F(rings, read_on_empty_ring_would_block)
{
	char buf[256];

	self->fd[0] = open_ring(0);
	ASSERT_LE(0, self->fd[0]);
	EXPECT_EQ(-1, read(self->fd[0], buf, sizeof(buf)));
	EXPECT_EQ(EAGAIN, errno);
}

/* Trace ct_a/ct_b/ct_c and the recursion (NORET escapes, 3-byte ids). */
static void trace_calltree(struct __test_metadata *_metadata,
			   FIXTURE_DATA(rings) *self, bool stop)
{
	char *exe = bst_target_path("calltree");
	struct bst_fn fns[] = {
		{ exe, CT_FN_A, 1 }, { exe, CT_FN_B, 2 }, { exe, CT_FN_C, 3 },
		{ exe, CT_FN_EVEN, 8192 }, { exe, CT_FN_ODD, 70000 },
	};

	ASSERT_NE(NULL, exe);
	ASSERT_EQ(0, bst_proc_start(&self->target, "calltree", NULL, false, 10000));
	ASSERT_EQ(0, bst_attach_fns(&self->s, self->target.pid, fns, 5));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->st0));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
	ASSERT_EQ(0, bst_proc_send(&self->target, 'r'));
	ASSERT_EQ(0, bst_proc_wait_line(&self->target, CT_LINE_DONE, 30000));
	if (stop) {
		ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
		ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->st));
	}
	free(exe);
}

TEST_F_TIMEOUT(rings, small_reads_return_whole_records, 60)
{
	uint64_t events = 0, written = 0;

	trace_calltree(_metadata, self, true);
	for (uint32_t cpu = 0; cpu < self->s.caps.nr_cpus; cpu++) {
		struct bft_stream_opts o = { .cpu = cpu };
		struct bft_stream dec, probe;
		uint64_t bytes = 0;
		char buf[BFT_RECORD_MAX];
		int fd = open_ring(cpu);

		ASSERT_LE(0, fd) TH_LOG("cpu %u: %s", cpu, strerror(-fd));
		ASSERT_EQ(cpu, self->st.cpus[cpu].cpu);
		ASSERT_EQ(cpu, self->st0.cpus[cpu].cpu);
		bft_stream_init(&dec, &o);
		for (;;) {
			ssize_t n = read(fd, buf, sizeof(buf));

			if (n < 0 && errno == EAGAIN)
				break;
			ASSERT_LT(0, n) TH_LOG("cpu %u: read: %s", cpu,
					       n ? strerror(errno) : "0 bytes");
			bytes += (uint64_t)n;
			ASSERT_EQ(0, bft_stream_feed(&dec, buf, (size_t)n))
				TH_LOG("%s", bft_stream_last_error(&dec)->msg);
			/* A copy of the decoder must end cleanly here: no
			 * record was cut at the end of this read. */
			probe = dec;
			ASSERT_EQ(0, bft_stream_finish(&probe))
				TH_LOG("cpu %u: a record split at stream offset %llu",
				       cpu, (unsigned long long)bytes);
		}
		close(fd);
		EXPECT_EQ(self->st.cpus[cpu].bytes_written -
			  self->st0.cpus[cpu].bytes_written, bytes)
			TH_LOG("cpu %u", cpu);
		events += bft_stream_stats(&dec)->events;
		written += self->st.cpus[cpu].written - self->st0.cpus[cpu].written;
	}
	EXPECT_EQ(written, events);
	EXPECT_LT(0, events);
}

static uint64_t count_events(struct bft_rings *r, uint32_t nr_cpus,
			     char *err, size_t errlen)
{
	uint64_t events = 0;

	for (uint32_t cpu = 0; cpu < nr_cpus; cpu++) {
		struct bft_stream_opts o = { .cpu = cpu };
		struct bft_stream dec;
		const uint8_t *data;
		size_t len = 0;

		if (!bft_rings_bound(r, cpu))
			continue;
		data = bft_rings_data(r, cpu, &len);
		bft_stream_init(&dec, &o);
		if (len && bft_stream_feed(&dec, data, len)) {
			snprintf(err, errlen, "%s", bft_stream_last_error(&dec)->msg);
			return 0;
		}
		events += bft_stream_stats(&dec)->events;
	}
	return events;
}

TEST_F_TIMEOUT(rings, live_reader_gets_last_exits_within_flush_interval, 60)
{
	/* Per run: the main thread enters ct_a, ct_b, ct_c, ct_c per rep and
	 * CT_RECUR_DEPTH + 1 recursion frames (of which 64 return traced);
	 * each thread enters ct_b and ct_c. */
	const uint64_t want = 2 * 4 * CT_NEST_REPS +
			      (CT_RECUR_DEPTH + 1) + BFT_URETPROBE_DEPTH +
			      2 * 2 * CT_NR_THREADS;
	uint64_t flush = self->s.opts[BFT_OPT_FLUSH_MS].value;
	uint64_t t0, got = 0, limit_ns;
	struct bft_rings *r;
	char msg[256] = "";

	ASSERT_EQ(0, bft_rings_open(&r, NULL, self->s.caps.nr_cpus, msg,
				    sizeof(msg)))
		TH_LOG("%s", msg);
	trace_calltree(_metadata, self, false);
	t0 = bst_now_ns();
	/* Under an emulated CPU, allow twice the interval and a second. */
	limit_ns = (2 * flush + 1000) * 1000000ull;
	while (bst_now_ns() - t0 < limit_ns) {
		ssize_t n = bft_rings_poll(r, 50, NULL, NULL);

		ASSERT_LE(0, n) TH_LOG("%s", bft_rings_errmsg(r));
		got = count_events(r, self->s.caps.nr_cpus, msg, sizeof(msg));
		ASSERT_EQ(0, msg[0]) TH_LOG("%s", msg);
		if (got >= want)
			break;
	}
	TH_LOG("all %llu events after %llu ms (flush interval %llu ms)",
	       (unsigned long long)got,
	       (unsigned long long)((bst_now_ns() - t0) / 1000000),
	       (unsigned long long)flush);
	EXPECT_EQ(want, got);
	bft_rings_close(r);
}

TEST_HARNESS_MAIN
