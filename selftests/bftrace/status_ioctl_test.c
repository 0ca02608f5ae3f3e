// SPDX-License-Identifier: GPL-2.0
/*
 * BFT_IOC_STATUS (include/uapi/linux/bftrace.h section 2.5): on any
 * /dev/bftrace file, what BFT_CMD_GET_STATUS says, field for field; a
 * short array gets the number of CPUs; bad requests are refused.  Who may
 * ask is in perm_test.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "capture/bft_dev_status.h"
#include "bft_selftest.h"

#define SPIN_METHOD	7

FIXTURE(status_ioctl) {
	struct bst_session s;
	struct bst_proc target;
	struct bft_nl_status nl, dev;
	int fd;
};

FIXTURE_SETUP(status_ioctl)
{
	ASSERT_EQ(0, bst_session_open(&self->s));
	self->fd = open("/dev/" BFT_DEV_NAME, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open: %s", strerror(errno));
}

FIXTURE_TEARDOWN(status_ioctl)
{
	close(self->fd);
	bst_session_close(&self->s);
	bst_proc_kill(&self->target);
	bft_nl_status_free(&self->nl);
	bft_nl_status_free(&self->dev);
}

/* Both answers, field by field: they must be the same moment's. */
static void same_status(struct __test_metadata *_metadata,
			const struct bft_nl_status *a,
			const struct bft_nl_status *b)
{
	EXPECT_EQ(a->mode, b->mode);
	EXPECT_EQ(a->nr_probes, b->nr_probes);
	EXPECT_EQ(a->nr_targets, b->nr_targets);
	EXPECT_EQ(a->owner, b->owner);
	ASSERT_EQ(a->nr_cpus, b->nr_cpus);
	EXPECT_EQ(bst_possible_cpus(), b->nr_cpus);
	for (uint32_t i = 0; i < a->nr_cpus; i++) {
		const struct bft_nl_cpu_stats *x = &a->cpus[i], *y = &b->cpus[i];

		EXPECT_EQ(x->cpu, y->cpu);
		EXPECT_EQ(x->size, y->size);
		EXPECT_EQ(x->used, y->used) TH_LOG("cpu %u", x->cpu);
		EXPECT_EQ(x->produced, y->produced) TH_LOG("cpu %u", x->cpu);
		EXPECT_EQ(x->written, y->written);
		EXPECT_EQ(x->lost, y->lost);
		EXPECT_EQ(x->suspended, y->suspended);
		EXPECT_EQ(x->bytes_written, y->bytes_written);
		EXPECT_EQ(x->bytes_read, y->bytes_read);
		/* whether a reader holds the ring is netlink's alone */
		EXPECT_EQ(x->have & ~(1u << BFT_S_READER),
			  y->have & ~(1u << BFT_S_READER));
	}
	EXPECT_EQ(a->have, b->have);
}

static void both(struct __test_metadata *_metadata,
		 FIXTURE_DATA(status_ioctl) *self)
{
	bft_nl_status_free(&self->nl);
	bft_nl_status_free(&self->dev);
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->nl))
		TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	ASSERT_EQ(0, bft_dev_status(self->fd, &self->dev));
	same_status(_metadata, &self->nl, &self->dev);
}

/*
 * With no session (after the fixture's reset), and
 * after a traced session stopped, when nothing moves any more: equal.
 * While tracing, each counter of the ioctl lies between two GET_STATUS.
 */
TEST_F_TIMEOUT(status_ioctl, answers_what_get_status_answers, 60)
{
	struct bft_nl_status later = { 0 };
	uint64_t produced = 0;

	/* the fixture's reset leaves no probes and no session */
	both(_metadata, self);
	EXPECT_NE(BFT_MODE_TRACING, self->dev.mode);
	EXPECT_EQ(0, self->dev.nr_probes);

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, NULL,
					SPIN_METHOD, true));
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 100, 10000));
	bft_nl_status_free(&self->nl);
	bft_nl_status_free(&self->dev);
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->nl));
	ASSERT_EQ(0, bft_dev_status(self->fd, &self->dev));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &later));
	EXPECT_EQ(BFT_MODE_TRACING, self->dev.mode);
	EXPECT_EQ(1, self->dev.nr_probes);
	EXPECT_EQ(1, self->dev.nr_targets);
	EXPECT_NE(0, self->dev.owner);
	EXPECT_EQ(self->nl.owner, self->dev.owner);
	ASSERT_EQ(later.nr_cpus, self->dev.nr_cpus);
	for (uint32_t i = 0; i < self->dev.nr_cpus; i++) {
		const struct bft_nl_cpu_stats *d = &self->dev.cpus[i];

		EXPECT_LE(self->nl.cpus[i].produced, d->produced);
		EXPECT_GE(later.cpus[i].produced, d->produced);
		EXPECT_LE(self->nl.cpus[i].bytes_written, d->bytes_written);
		EXPECT_GE(later.cpus[i].bytes_written, d->bytes_written);
		produced += d->produced;
	}
	bft_nl_status_free(&later);
	/* the spinner made calls, so some CPU counted them */
	EXPECT_LT(100, produced);

	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	both(_metadata, self);
	EXPECT_EQ(BFT_MODE_SHUTTING_DOWN, self->dev.mode);
}

/* A reader's bytes show in both; a bound file answers as well. */
TEST_F_TIMEOUT(status_ioctl, a_bound_file_answers_too, 60)
{
	uint32_t cpu = 0;
	char buf[4096];

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, NULL,
					SPIN_METHOD, true));
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 100, 10000));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	close(self->fd);
	self->fd = open("/dev/" BFT_DEV_NAME, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, BFT_IOC_BIND_CPU, &cpu));
	ASSERT_LT(0, read(self->fd, buf, sizeof(buf)));
	both(_metadata, self);
	EXPECT_LT(0, self->dev.cpus[0].bytes_read);
}

/* Fewer entries than CPUs: those are filled, the rest untouched. */
TEST_F(status_ioctl, a_short_array_gets_the_number_of_cpus)
{
	unsigned int n = bst_possible_cpus();
	struct bft_ioc_cpu_stats v[2];
	struct bft_ioc_status q = { 0 };

	memset(v, 0xa5, sizeof(v));
	q.nr_cpus = 1;
	q.cpus = (uintptr_t)v;
	ASSERT_EQ(0, ioctl(self->fd, BFT_IOC_STATUS, &q)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(n, q.nr_cpus);
	EXPECT_EQ((uintptr_t)v, q.cpus);
	EXPECT_EQ(0, v[0].pad);
	EXPECT_NE(0, v[0].size);
	EXPECT_EQ(0xa5a5a5a5u, v[1].cpu);

	memset(&q, 0, sizeof(q));
	ASSERT_EQ(0, ioctl(self->fd, BFT_IOC_STATUS, &q));
	EXPECT_EQ(n, q.nr_cpus);
	EXPECT_NE(BFT_MODE_TRACING, q.mode);
}

TEST_F(status_ioctl, bad_requests_are_refused)
{
	struct bft_ioc_status q = { 0 };

	q.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, BFT_IOC_STATUS, &q));
	EXPECT_EQ(EINVAL, errno);
	q.pad = 0;
	q.nr_cpus = 1;
	q.cpus = 8;		/* the zero page: never mapped */
	EXPECT_EQ(-1, ioctl(self->fd, BFT_IOC_STATUS, &q));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, BFT_IOC_STATUS, NULL));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IO(BFT_IOC_MAGIC, 99)));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_HARNESS_MAIN
