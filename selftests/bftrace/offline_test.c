// SPDX-License-Identifier: GPL-2.0
/*
 * A CPU that goes offline during a session, on both backends.  The BPF
 * handlers leave records in the CPU's batch (user/bpf/bft.bpf.c), counted
 * as written; nothing runs on an offline CPU, so the control program must
 * serve it from another one (user/lib/capture/bft_bpf_control.c, prog_run()).  Otherwise
 * those records and the CPU's stop mark stay in its state until it comes
 * back: the reader is short of what the status counts as written, and a
 * live merge waits for that CPU's heartbeat.  The module writes an offline
 * CPU's ring in place (docs/kernel-module.md); the same checks hold there.
 *
 * Taking a CPU offline is for a machine of the test's own: it runs only
 * where BFT_TEST_HOTPLUG=1 says so (scripts/guest-selftests.sh, in the
 * guests), and puts the CPU back online whatever the outcome.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

#define PIN_DIR		"/sys/fs/bpf/bftrace-offline"
#define CPU		1
#define CALLS		10	/* 20 events: well inside one batch */
#define METHOD		11

__attribute__((noipa, used)) void offline_fn(long v)
{
	asm volatile("" : : "r"(v) : "memory");
}

static int cpu_online_set(unsigned int cpu, bool on)
{
	char path[64];
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%u/online",
		 cpu);
	f = fopen(path, "w");
	if (!f)
		return -1;
	err = fputs(on ? "1" : "0", f) < 0;
	return fclose(f) || err ? -1 : 0;
}

static int run_on(unsigned int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static char exe[4096];

FIXTURE(offline) {
	struct bst_session s;
	struct bft_bpf *b;
	struct bst_trace t;
	struct bft_nl_status before, after;
	bool offlined;
};

FIXTURE_VARIANT(offline) {
	bool bpf;
};

FIXTURE_VARIANT_ADD(offline, module) {
	.bpf = false,
};

FIXTURE_VARIANT_ADD(offline, bpf) {
	.bpf = true,
};

static int get_status(FIXTURE_DATA(offline) *self, bool bpf,
		      struct bft_nl_status *st)
{
	return bpf ? bft_bpf_get_status(self->b, st) :
		     bft_nl_get_status(self->s.nl, st);
}

FIXTURE_SETUP(offline)
{
	const char *ok = getenv("BFT_TEST_HOTPLUG");
	struct bst_fn fn = { .file = exe, .func = "offline_fn",
			     .method_id = METHOD };
	struct bft_nl_probe probe;
	char why[512];
	ssize_t n;
	int r;

	if (!ok || strcmp(ok, "1"))
		SKIP(return, "takes CPU %d offline: only where "
		     "BFT_TEST_HOTPLUG=1 (the guests)", CPU);
	if (access("/sys/devices/system/cpu/cpu1/online", W_OK))
		SKIP(return, "CPU %d cannot be taken offline here", CPU);
	setenv("BFT_BPF_PIN_DIR", PIN_DIR, 1);
	r = bst_backend_open(variant->bpf, &self->s, &self->b, 1, why,
			     sizeof(why));
	if (r > 0)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	/* every traced call runs on CPU 1 */
	ASSERT_EQ(0, run_on(CPU));
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_LT(0, n);
	exe[n] = '\0';
	if (variant->bpf) {
		ASSERT_EQ(0, bst_resolve(&fn, 1, &probe));
		ASSERT_EQ(0, bft_bpf_attach(self->b, (uint32_t)getpid(), &probe,
					    1, &r))
			TH_LOG("%s", bft_bpf_errmsg(self->b));
		ASSERT_EQ(0, get_status(self, true, &self->before));
		ASSERT_EQ(0, bft_bpf_start(self->b, true, NULL))
			TH_LOG("%s", bft_bpf_errmsg(self->b));
	} else {
		ASSERT_EQ(0, bst_attach_fns(&self->s, getpid(), &fn, 1));
		ASSERT_EQ(0, get_status(self, false, &self->before));
		ASSERT_EQ(0, bst_start(&self->s, false));
	}
}

FIXTURE_TEARDOWN(offline)
{
	if (self->offlined && cpu_online_set(CPU, true))
		fprintf(stderr, "# cannot bring CPU %d back online\n", CPU);
	bst_trace_free(&self->t);
	bft_nl_status_free(&self->before);
	bft_nl_status_free(&self->after);
	if (variant->bpf)
		bst_bpf_close(self->b);
	else if (self->s.nl)
		bst_session_close(&self->s);
}

TEST_F_TIMEOUT(offline, the_cpus_records_and_stop_mark_are_delivered, 120)
{
	const struct bft_nl_cpu_stats *c = NULL;
	const struct bst_cpu *d;
	uint64_t written, stops = 0;

	/* this harness runs the body after a SKIP in the setup */
	if (_metadata->skip)
		return;
	for (long i = 0; i < CALLS; i++)
		offline_fn(i);
	ASSERT_EQ(0, run_on(0));
	/* before the write: a write that fails half-way is undone too */
	self->offlined = true;
	ASSERT_EQ(0, cpu_online_set(CPU, false));

	if (variant->bpf) {
		ASSERT_EQ(0, bft_bpf_mode_cmd(self->b, BFT_CMD_STOP, NULL))
			TH_LOG("%s", bft_bpf_errmsg(self->b));
		ASSERT_EQ(0, get_status(self, true, &self->after));
		ASSERT_EQ(0, bst_bpf_collect(self->b, 300, 10000, &self->t))
			TH_LOG("%s", self->t.err);
	} else {
		ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
		ASSERT_EQ(0, get_status(self, false, &self->after));
		ASSERT_EQ(0, bst_collect(&self->s, 300, 10000, &self->t))
			TH_LOG("%s", self->t.err);
	}
	ASSERT_LT(CPU, self->t.nr_cpus);
	ASSERT_EQ(self->after.nr_cpus, self->before.nr_cpus);
	for (uint32_t i = 0; i < self->after.nr_cpus; i++)
		if (self->after.cpus[i].cpu == CPU)
			c = &self->after.cpus[i];
	ASSERT_NE(NULL, c);
	written = c->written - self->before.cpus[c - self->after.cpus].written;
	d = &self->t.cpu[CPU];

	EXPECT_EQ(2 * CALLS, written);
	EXPECT_EQ(written, d->events)
		TH_LOG("CPU %d, offline: written %llu, delivered %llu", CPU,
		       (unsigned long long)written,
		       (unsigned long long)d->events);
	EXPECT_EQ(0, d->lost);
	for (size_t i = 0; i < self->t.nmarks; i++)
		if (self->t.marks[i].cpu == CPU &&
		    self->t.marks[i].kind == BFT_REC_BREAK &&
		    self->t.marks[i].value == BFT_BREAK_STOP)
			stops++;
	EXPECT_EQ(1, stops) TH_LOG("CPU %d, offline: %llu stop marks", CPU,
				    (unsigned long long)stops);
}

TEST_HARNESS_MAIN
