// SPDX-License-Identifier: GPL-2.0
/*
 * USDT probes (bftrace.h 2.4).  targets/usdt.c has <sys/sdt.h> sites of
 * 0, 1, 3 and 6 arguments and one behind a semaphore; the test reads
 * their notes with bft_sdt, attaches them with BFT_PF_USDT, and checks:
 *   - the semaphore is up by one in the target while attached, and back
 *     after the detach;
 *   - every thread's MARKs come in the order it passed its sites, each
 *     with exactly the arguments targets/usdt_shape.h says it passed;
 *   - arguments of the test's own at the empty site: memory that is not
 *     mapped reads as unread 0, the site's address, a signed constant;
 *   - the methods dump lists the probes with BFT_PF_USDT and their hits;
 *   - suspended, hits are counted as such and record nothing;
 *   - after the detach no site holds a breakpoint any more;
 *   - bad arguments, flags and semaphores are rejected, naming the probe.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "symbols/bft_sdt.h"
#include "bft_selftest.h"
#include "usdt_shape.h"

#define NR_ROUNDS 2

enum site { S_ZERO, S_ONE, S_THREE, S_SIX, S_SEMA, S_SITE, NR_SITES };

static const char *const site_name[NR_SITES] = {
	"zero", "one", "three", "six", "sema", "site",
};

/* ids of several varint lengths */
static const uint32_t site_id[NR_SITES] = { 1, 63, 64, 200, 8192, 70000 };

/* The empty site's own arguments: see expect_site_args(). */
#define NR_OWN_ARGS 4
static const struct bft_usdt_arg own_args[NR_OWN_ARGS] = {
	/* page 0 is never mapped: unread */
	{ .loc = BFT_USDT_MEM, .size = 8, .base = BFT_USDT_NOREG,
	  .index = BFT_USDT_NOREG, .scale = 1, .value = 8 },
	{ .loc = BFT_USDT_REG, .size = 8, .base = BFT_USDT_SITE,
	  .index = BFT_USDT_NOREG, .scale = 1 },
	/* rip: the kernel puts it back on the site for the handlers */
	{ .loc = BFT_USDT_REG, .size = 8, .base = 16,
	  .index = BFT_USDT_NOREG, .scale = 1 },
	{ .loc = BFT_USDT_CONST, .size = 2, .is_signed = 1,
	  .base = BFT_USDT_NOREG, .index = BFT_USDT_NOREG, .scale = 1,
	  .value = -7 },
};

FIXTURE(usdt) {
	struct bst_session s;
	struct bst_proc target;
	char *exe;
	struct bft_sdt_list sdt;
	const struct bft_sdt_probe *site[NR_SITES];
	struct bft_usdt_arg args[NR_SITES][BFT_USDT_MAX_ARGS];
	struct bft_nl_probe probes[NR_SITES];
	uint64_t bias;			/* load bias of the target's exe */
};

/* len bytes of pid at addr, through /proc/PID/mem. */
static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)addr);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

/*
 * Where file offset off of exe is mapped in pid, less link-time address
 * pc: the load bias, found in the mapping that holds the offset.
 */
static int load_bias(pid_t pid, const char *exe, uint64_t off, uint64_t pc,
		     uint64_t *bias)
{
	char maps[64], line[PATH_MAX + 128], real[PATH_MAX];
	int err = -ENOENT;
	FILE *f;

	if (!realpath(exe, real))
		return -errno;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, foff;
		char *path = strchr(line, '/');

		if (!path ||
		    sscanf(line, "%llx-%llx %*s %llx", &start, &end, &foff) != 3)
			continue;
		path[strcspn(path, "\n")] = 0;
		if (strcmp(path, real) || off < foff || off >= foff + end - start)
			continue;
		*bias = start + (off - foff) - pc;
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

static uint64_t site_addr(const FIXTURE_DATA(usdt) *self,
			  enum site i)
{
	return self->bias + self->site[i]->pc;
}

static int semaphore(const FIXTURE_DATA(usdt) *self, uint16_t *v)
{
	return read_mem(self->target.pid,
			self->bias + self->site[S_SEMA]->semaphore, v,
			sizeof(*v));
}

FIXTURE_SETUP(usdt)
{
	char err[256] = "";

	ASSERT_EQ(0, bst_session_open(&self->s));
	if (!(self->s.caps.features & BFT_FEAT_USDT))
		SKIP(return, "the module has no BFT_FEAT_USDT");
	self->exe = bst_target_path("usdt");
	ASSERT_NE(NULL, self->exe);
	ASSERT_EQ(0, bft_sdt_read(self->exe, &self->sdt, err, sizeof(err)))
		TH_LOG("%s", err);
	for (size_t i = 0; i < self->sdt.n; i++) {
		const struct bft_sdt_probe *p = &self->sdt.v[i];

		for (int k = 0; k < NR_SITES; k++)
			if (!strcmp(p->provider, "bftgt") &&
			    !strcmp(p->name, site_name[k]))
				self->site[k] = p;
	}
	for (int k = 0; k < NR_SITES; k++) {
		const struct bft_sdt_probe *p = self->site[k];
		struct bft_nl_probe *np = &self->probes[k];

		ASSERT_NE(NULL, p) TH_LOG("no site bftgt:%s", site_name[k]);
		ASSERT_STREQ("", p->why);
		bft_sdt_uapi_args(p, self->args[k]);
		*np = (struct bft_nl_probe){
			.path = self->exe, .offset = p->offset,
			.method_id = site_id[k], .flags = BFT_PF_USDT,
			.name = site_name[k], .ref_ctr_offset = p->sema_offset,
			.args = self->args[k], .nargs = (uint32_t)p->nargs,
		};
	}
	ASSERT_EQ(0, self->site[S_ZERO]->nargs);
	ASSERT_EQ(1, self->site[S_ONE]->nargs);
	ASSERT_EQ(3, self->site[S_THREE]->nargs);
	ASSERT_EQ(6, self->site[S_SIX]->nargs);
	ASSERT_EQ(0, self->site[S_SITE]->nargs);
	ASSERT_NE(0, self->site[S_SEMA]->sema_offset);
	self->probes[S_SITE].args = own_args;
	self->probes[S_SITE].nargs = NR_OWN_ARGS;
	ASSERT_EQ(0, bst_proc_start(&self->target, "usdt", NULL, false, 10000));
	ASSERT_EQ(0, load_bias(self->target.pid, self->exe,
			       self->site[S_ZERO]->offset,
			       self->site[S_ZERO]->pc, &self->bias));
}

FIXTURE_TEARDOWN(usdt)
{
	bst_session_close(&self->s);
	bst_proc_kill(&self->target);
	bft_sdt_free(&self->sdt);
	free(self->exe);
}

/* What thread t passed at site k in round r. */
static size_t expected_args(const FIXTURE_DATA(usdt) *self,
			    enum site k, unsigned int r, unsigned int t,
			    uint64_t *v, uint16_t *sgn)
{
	struct usdt_vals u;

	usdt_shape(r, t, &u);
	switch (k) {
	case S_ONE:
		v[0] = (uint64_t)(int64_t)u.one;
		*sgn = 1;
		return 1;
	case S_THREE:
		v[0] = (uint64_t)(int64_t)u.neg;
		v[1] = u.big;
		v[2] = (uint64_t)u.global;
		*sgn = 1 | 4;
		return 3;
	case S_SIX:
		v[0] = (uint64_t)(int64_t)u.ch;
		v[1] = u.ush;
		v[2] = (uint64_t)u.neg64;
		v[3] = u.u64max;
		v[4] = 42;
		v[5] = (uint64_t)u.global;
		*sgn = 1 | 4 | 16 | 32;
		return 6;
	case S_SEMA:
		v[0] = r;
		v[1] = t;
		*sgn = 0;
		return 2;
	case S_SITE:
		v[0] = 0;
		v[1] = v[2] = site_addr(self, S_SITE);
		v[3] = (uint64_t)-7;
		*sgn = 8;
		return 4;
	default:
		*sgn = 0;
		return 0;
	}
}

/* One thread's MARKs: every site, in order, NR_ROUNDS times. */
static void expect_thread(struct __test_metadata *_metadata,
			  const FIXTURE_DATA(usdt) *self,
			  const struct bst_thread *th, unsigned int t)
{
	size_t i = 0;

	ASSERT_NE(NULL, th);
	EXPECT_EQ(NR_ROUNDS * NR_SITES, th->nusdt);
	for (unsigned int r = 1; r <= NR_ROUNDS; r++) {
		for (int k = 0; k < NR_SITES && i < th->nusdt; k++, i++) {
			const struct bst_usdt *m = &th->usdt[i];
			uint64_t v[BFT_USDT_MAX_ARGS];
			uint16_t sgn;
			size_t n = expected_args(self, k, r, t, v, &sgn);

			EXPECT_EQ(site_id[k], m->id)
				TH_LOG("thread %u round %u: MARK %zu", t, r, i);
			EXPECT_EQ(n, m->nargs) TH_LOG("site %s", site_name[k]);
			EXPECT_EQ(sgn, m->is_signed)
				TH_LOG("site %s", site_name[k]);
			EXPECT_EQ(k == S_SITE ? 1 : 0, m->unread)
				TH_LOG("site %s", site_name[k]);
			for (size_t a = 0; a < n && a < m->nargs; a++) {
				EXPECT_EQ(v[a], m->args[a])
					TH_LOG("thread %u round %u site %s arg %zu: %#" PRIx64
					       " != %#" PRIx64, t, r, site_name[k],
					       a, m->args[a], v[a]);
			}
		}
	}
}

struct methods_seen {
	pid_t tgid;
	size_t usdt;
	uint64_t hits[NR_SITES];
	bool bad_flags;
};

static int on_method(const struct bft_nl_method *m, void *arg)
{
	struct methods_seen *ms = arg;

	if (m->tgid != (uint32_t)ms->tgid || (m->flags & BFT_PF_GONE))
		return 0;
	for (int k = 0; k < NR_SITES; k++) {
		if (m->method_id != site_id[k])
			continue;
		ms->usdt++;
		ms->hits[k] = m->hits;
		if ((m->flags & ~BFT_PF_GONE) != BFT_PF_USDT)
			ms->bad_flags = true;
	}
	return 0;
}

TEST_F(usdt, marks_args_semaphore)
{
	int results[NR_SITES];
	struct methods_seen ms = { .tgid = self->target.pid };
	struct bst_trace tr;
	const struct bst_thread *th[4];
	uint16_t sema0, sema;
	uint8_t b;
	size_t n;

	ASSERT_EQ(0, semaphore(self, &sema0));
	ASSERT_EQ(0, bft_nl_attach(self->s.nl, (uint32_t)self->target.pid,
				   self->probes, NR_SITES, results))
		TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	for (int k = 0; k < NR_SITES; k++) {
		ASSERT_EQ(0, results[k]) TH_LOG("site %s", site_name[k]);
	}
	ASSERT_EQ(0, semaphore(self, &sema));
	EXPECT_EQ(sema0 + 1, sema) TH_LOG("semaphore while attached");
	for (int k = 0; k < NR_SITES; k++) {
		ASSERT_EQ(0, read_mem(self->target.pid, site_addr(self, k),
				      &b, 1));
		EXPECT_EQ(0xcc, b) TH_LOG("site %s: no breakpoint", site_name[k]);
	}

	ASSERT_EQ(0, bst_start(&self->s, false));
	for (int r = 0; r < NR_ROUNDS; r++) {
		ASSERT_EQ(0, bst_proc_send(&self->target, 'r'));
		ASSERT_EQ(0, bst_proc_wait_line(&self->target, "done", 30000));
	}
	ASSERT_EQ(0, bft_nl_get_methods(self->s.nl, on_method, &ms));
	EXPECT_EQ(NR_SITES, ms.usdt);
	EXPECT_FALSE(ms.bad_flags);
	for (int k = 0; k < NR_SITES; k++) {
		EXPECT_EQ(2 * NR_ROUNDS, ms.hits[k])
			TH_LOG("hits of %s", site_name[k]);
	}
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	ASSERT_EQ(0, bst_collect(&self->s, 200, 10000, &tr)) TH_LOG("%s", tr.err);
	EXPECT_EQ(0, tr.orphans);
	n = bst_trace_threads_of(&tr, (uint32_t)self->target.pid, th, 4);
	/* the main thread, and one worker per round */
	EXPECT_EQ(1 + NR_ROUNDS, n);
	if (n >= 1)
		expect_thread(_metadata, self, th[0], 0);
	for (size_t w = 1; w < n && w <= NR_ROUNDS; w++) {
		const struct bst_usdt *m = th[w]->usdt;

		/* a worker runs one round: check its round's MARKs alone */
		EXPECT_EQ(NR_SITES, th[w]->nusdt);
		EXPECT_STREQ(USDT_WORKER_NAME,
			     bst_trace_name(&tr, th[w]->tgid, th[w]->tid) ?: "");
		for (int k = 0; k < NR_SITES && k < (int)th[w]->nusdt; k++) {
			uint64_t v[BFT_USDT_MAX_ARGS];
			uint16_t sgn;
			size_t na = expected_args(self, k, (unsigned int)w, 1,
						  v, &sgn);

			EXPECT_EQ(site_id[k], m[k].id);
			EXPECT_EQ(na, m[k].nargs);
			EXPECT_EQ(sgn, m[k].is_signed);
			EXPECT_EQ(k == S_SITE ? 1 : 0, m[k].unread);
			for (size_t a = 0; a < na && a < m[k].nargs; a++) {
				EXPECT_EQ(v[a], m[k].args[a])
					TH_LOG("worker %zu site %s arg %zu", w,
					       site_name[k], a);
			}
		}
	}
	bst_trace_free(&tr);

	/* the stop detached everything: semaphore down, no int3 left */
	ASSERT_EQ(0, semaphore(self, &sema));
	EXPECT_EQ(sema0, sema) TH_LOG("semaphore after detach");
	for (int k = 0; k < NR_SITES; k++) {
		ASSERT_EQ(0, read_mem(self->target.pid, site_addr(self, k),
				      &b, 1));
		EXPECT_NE(0xcc, b) TH_LOG("site %s: breakpoint left", site_name[k]);
	}
	/* and the target still runs its sites, now without us */
	ASSERT_EQ(0, bst_proc_send(&self->target, 'r'));
	ASSERT_EQ(0, bst_proc_wait_line(&self->target, "done", 30000));
}

/* An explicit detach gives the semaphore back too, without a session. */
TEST_F(usdt, detach_lowers_semaphore)
{
	int results[NR_SITES];
	uint16_t sema0, sema;

	ASSERT_EQ(0, semaphore(self, &sema0));
	ASSERT_EQ(0, bft_nl_attach(self->s.nl, (uint32_t)self->target.pid,
				   self->probes, NR_SITES, results))
		TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	ASSERT_EQ(0, semaphore(self, &sema));
	EXPECT_EQ(sema0 + 1, sema);
	ASSERT_EQ(0, bft_nl_detach(self->s.nl, (uint32_t)self->target.pid));
	ASSERT_EQ(0, semaphore(self, &sema));
	EXPECT_EQ(sema0, sema);
}

static uint64_t suspended_hits(struct __test_metadata *_metadata,
			       struct bst_session *s)
{
	struct bft_nl_status st;
	uint64_t n = 0;

	EXPECT_EQ(0, bft_nl_get_status(s->nl, &st));
	for (uint32_t c = 0; c < st.nr_cpus; c++)
		n += st.cpus[c].suspended;
	bft_nl_status_free(&st);
	return n;
}

/*
 * Suspended, a hit is counted as suspended and records nothing: the
 * thread's MARKs are those of the round after the unsuspend alone, and
 * every one of them counts as one event.
 */
TEST_F(usdt, suspend_drops_marks)
{
	int results[NR_SITES];
	const struct bst_thread *th[4];
	struct bst_trace tr;
	uint64_t events = 0;
	size_t n;

	ASSERT_EQ(0, bft_nl_attach(self->s.nl, (uint32_t)self->target.pid,
				   self->probes, NR_SITES, results))
		TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	ASSERT_EQ(0, bst_start(&self->s, false));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_SUSPEND));
	ASSERT_EQ(0, bst_proc_send(&self->target, 'r'));
	ASSERT_EQ(0, bst_proc_wait_line(&self->target, "done", 30000));
	/* both threads passed every site */
	EXPECT_EQ(2 * NR_SITES, suspended_hits(_metadata, &self->s));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_UNSUSPEND));
	ASSERT_EQ(0, bst_proc_send(&self->target, 'r'));
	ASSERT_EQ(0, bst_proc_wait_line(&self->target, "done", 30000));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	ASSERT_EQ(0, bst_collect(&self->s, 200, 10000, &tr)) TH_LOG("%s", tr.err);
	for (uint32_t c = 0; c < tr.nr_cpus; c++)
		events += tr.cpu[c].events;
	EXPECT_EQ(2 * NR_SITES, events);
	n = bst_trace_threads_of(&tr, (uint32_t)self->target.pid, th, 4);
	ASSERT_EQ(2, n);
	for (size_t t = 0; t < n; t++) {
		ASSERT_EQ(NR_SITES, th[t]->nusdt);
		for (int k = 0; k < NR_SITES; k++) {
			uint64_t v[BFT_USDT_MAX_ARGS];
			uint16_t sgn;
			size_t na = expected_args(self, k, 2, (unsigned int)t,
						  v, &sgn);

			EXPECT_EQ(site_id[k], th[t]->usdt[k].id);
			for (size_t a = 0; a < na; a++) {
				EXPECT_EQ(v[a], th[t]->usdt[k].args[a])
					TH_LOG("thread %zu site %s arg %zu", t,
					       site_name[k], a);
			}
		}
	}
	bst_trace_free(&tr);
}

/* Attach {a good USDT probe, bad}: errno, and a text naming index 1. */
static int attach_bad(struct __test_metadata *_metadata,
		      FIXTURE_DATA(usdt) *self,
		      const struct bft_nl_probe *bad, int want)
{
	struct bft_nl_probe pair[2] = { self->probes[S_THREE], *bad };
	int results[2] = { 0, 0 };
	struct bft_nl_status st;
	const char *msg;
	int err;

	err = bft_nl_attach(self->s.nl, (uint32_t)self->target.pid, pair, 2,
			    results);
	msg = bft_nl_errmsg(self->s.nl) ?: "";
	EXPECT_EQ(-want, err) TH_LOG("%s", msg);
	EXPECT_NE(NULL, strstr(msg, "probe 1")) TH_LOG("text: %s", msg);
	/* all or nothing: the good one is not kept either */
	if (!bft_nl_get_status(self->s.nl, &st)) {
		EXPECT_EQ(0, st.nr_probes);
		bft_nl_status_free(&st);
	}
	return err;
}

TEST_F(usdt, bad_args_rejected)
{
	struct bft_usdt_arg many[BFT_USDT_MAX_ARGS + 1];
	struct bft_usdt_arg a;
	struct bft_nl_probe bad = self->probes[S_SIX];
	const struct bft_usdt_arg good = self->args[S_THREE][0];
	static const char *const what[] = {
		"loc", "size", "scale", "shift", "register", "pad", "index",
	};

	for (size_t c = 0; c < sizeof(what) / sizeof(what[0]); c++) {
		a = good;
		switch (c) {
		case 0: a.loc = 3; break;
		case 1: a.size = 3; break;
		case 2: a.scale = 3; break;
		case 3: a.shift = 4; break;
		case 4: a.loc = BFT_USDT_REG; a.base = BFT_USDT_NREGS; break;
		case 5: a.pad = 1; break;
		case 6: a.loc = BFT_USDT_MEM; a.base = 4; a.index = 0xfe; break;
		}
		bad.args = &a;
		bad.nargs = 1;
		TH_LOG("bad %s", what[c]);
		attach_bad(_metadata, self, &bad, EINVAL);
	}
	/* one entry too many */
	for (size_t i = 0; i < BFT_USDT_MAX_ARGS + 1; i++)
		many[i] = good;
	bad.args = many;
	bad.nargs = BFT_USDT_MAX_ARGS + 1;
	attach_bad(_metadata, self, &bad, EINVAL);
	/* arguments, or a semaphore, without BFT_PF_USDT */
	bad = self->probes[S_SIX];
	bad.flags = BFT_PF_ENTRY;
	attach_bad(_metadata, self, &bad, EINVAL);
	bad = self->probes[S_ZERO];
	bad.flags = BFT_PF_ENTRY;
	bad.ref_ctr_offset = self->site[S_SEMA]->sema_offset;
	attach_bad(_metadata, self, &bad, EINVAL);
	/* BFT_PF_USDT with another flag */
	bad = self->probes[S_ZERO];
	bad.flags = BFT_PF_USDT | BFT_PF_ENTRY;
	attach_bad(_metadata, self, &bad, EINVAL);
	/* a semaphore past the end of the file */
	bad = self->probes[S_SEMA];
	bad.ref_ctr_offset = 1ull << 40;
	attach_bad(_metadata, self, &bad, ERANGE);
}

TEST_HARNESS_MAIN
