// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF backend's wakeups (user/bpf/bft.bpf.c, wake_flag()): a ring
 * wakes its reader once, when a record makes it cross the watermark, not
 * for every record after that; below the watermark it wakes nobody, and a
 * read takes every ring whether it was woken or not.  So a reader that
 * sleeps through a burst larger than the watermark, and one that reads
 * unannounced records, lose nothing.  The test traces a function of its
 * own, on one CPU.  Runs natively and in the guests; skips where BPF
 * cannot run.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

#define PIN_DIR		"/sys/fs/bpf/bftrace-wake"
#define WATERMARK	4096
/*
 * A call writes 2 bytes of records (its ENTER and EXIT), which go out in
 * batches of about BFT_BPF_BATCH bytes: 20 KB, about 5x the mark.
 */
#define BURST		10000
#define METHOD		7

__attribute__((noipa, used)) void wake_fn(long v)
{
	asm volatile("" : : "r"(v) : "memory");
}

static int count_bytes(unsigned int cpu, const void *data, size_t len,
		       void *arg)
{
	uint64_t *bytes = arg;

	(void)cpu;
	(void)data;
	*bytes += len;
	return 0;
}

FIXTURE(bpf_wake) {
	struct bft_bpf *b;
	struct bft_bpf_rings *r;
	uint64_t bytes;		/* delivered to count_bytes */
};

FIXTURE_SETUP(bpf_wake)
{
	char why[512];
	int r;

	setenv("BFT_BPF_PIN_DIR", PIN_DIR, 1);
	r = bst_bpf_open(&self->b, why, sizeof(why));
	if (r > 0)
		SKIP(return, "BPF backend: %s", why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	ASSERT_EQ(0, bft_bpf_set_opt(self->b, BFT_OPT_WATERMARK, WATERMARK,
				     NULL)) TH_LOG("%s", bft_bpf_errmsg(self->b));
	ASSERT_EQ(0, bst_bpf_attach_self(self->b, "wake_fn", METHOD));
	ASSERT_EQ(0, bft_bpf_rings_open(self->b, &self->r, count_bytes,
					&self->bytes));
	ASSERT_EQ(0, bft_bpf_start(self->b, true, NULL))
		TH_LOG("%s", bft_bpf_errmsg(self->b));
	/* what the start wrote, and its wakeup: then nothing is pending */
	ASSERT_LE(0, bft_bpf_rings_poll(self->r, 0));
	ASSERT_LE(0, bft_bpf_rings_poll(self->r, 0));
	ASSERT_EQ(0, bft_bpf_rings_woken(self->r));
}

FIXTURE_TEARDOWN(bpf_wake)
{
	if (self->r)
		bft_bpf_rings_close(self->r);
	bst_bpf_close(self->b);
}

static void calls(int n)
{
	for (int i = 0; i < n; i++)
		wake_fn(i);
}

static bool readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* After a stop and a drain: everything written was delivered, none lost. */
static void expect_all_read(struct __test_metadata *_metadata,
			    FIXTURE_DATA(bpf_wake) *self)
{
	struct bft_nl_status st;
	uint64_t written = 0, lost = 0;

	ASSERT_EQ(0, bft_bpf_mode_cmd(self->b, BFT_CMD_STOP, NULL));
	ASSERT_LE(0, bft_bpf_rings_drain(self->r, 200, 10000));
	ASSERT_EQ(0, bft_bpf_get_status(self->b, &st));
	for (uint32_t i = 0; i < st.nr_cpus; i++) {
		written += st.cpus[i].bytes_written;
		lost += st.cpus[i].lost;
	}
	bft_nl_status_free(&st);
	EXPECT_EQ(0, lost);
	EXPECT_EQ(written, self->bytes);
}

TEST_F_TIMEOUT(bpf_wake, records_below_the_watermark_are_read_unannounced, 60)
{
	uint64_t before = self->bytes;

	calls(10);
	EXPECT_FALSE(readable(bft_bpf_rings_fd(self->r), 0))
		TH_LOG("records below the watermark woke the reader");
	ASSERT_LT(0, bft_bpf_rings_poll(self->r, 0));
	EXPECT_LT(before, self->bytes);
	expect_all_read(_metadata, self);
}

TEST_F_TIMEOUT(bpf_wake, a_burst_wakes_the_reader_once, 60)
{
	int fd = bft_bpf_rings_fd(self->r);

	calls(BURST);
	/* bounds a hang only: the wakeup is an IPI to this CPU */
	ASSERT_TRUE(readable(fd, 10000))
		TH_LOG("crossing the watermark did not wake the reader");
	EXPECT_EQ(1, bft_bpf_rings_woken(self->r));
	/* still over the watermark, unread: no more wakeups */
	calls(BURST);
	EXPECT_EQ(0, bft_bpf_rings_woken(self->r))
		TH_LOG("records past the watermark each woke the reader");
	EXPECT_FALSE(readable(fd, 0));
	expect_all_read(_metadata, self);
}

TEST_HARNESS_MAIN
