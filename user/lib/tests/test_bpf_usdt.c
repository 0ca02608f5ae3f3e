// SPDX-License-Identifier: GPL-2.0
/*
 * USDT probes on the BPF backend (bftrace.h 2.4), natively: the SDT
 * fixture of test_sdt (0, 1, 3 and 6 arguments, negative and 64-bit
 * values, a global, an array element, one probe behind a semaphore) runs
 * under ptrace, pinned to one CPU, held at its exec until the probes are
 * attached and at its exit until they are detached, so its memory can be
 * read before and after.  Checked:
 *   - the semaphore is up by one while attached, back after the detach;
 *   - the MARKs come in the order the fixture printed its lines, each
 *     with exactly the values it printed, signed where the note says;
 *   - the empty probe, given arguments of its own: memory that is not
 *     mapped reads as unread 0, BFT_USDT_SITE is the site's address, a
 *     signed constant;
 *   - the methods list them with BFT_PF_USDT and their hits; each MARK is
 *     one event of the CPU's counters, none lost;
 *   - after the detach no site holds a breakpoint;
 *   - bad arguments, flags and semaphores are refused, naming the probe.
 * Both kinds of link: uprobe_multi and perf-event uprobes.  Skips where
 * the backend cannot run (not root, no BTF).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "capture/bft_bpf.h"
#include "symbols/bft_sdt.h"
#include "wire/bft_stream.h"
/* The 6.1 harness leaves a parameter unused; not our code to change. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "bft_test.h"
#pragma GCC diagnostic pop
#include "fixture_build.h"

#define FIXTURE_SRC	BFT_TEST_SRCDIR "/sdt_fixtures"

enum site { S_ZERO, S_ONE, S_THREE, S_SIX, S_GATED, NR_SITES };

static const char *const site_name[NR_SITES] = {
	"zero", "one", "three", "six", "gated",
};

/* ids of several varint lengths; 70000 counts its hits in the far map */
static const uint32_t site_id[NR_SITES] = { 1, 63, 64, 200, 70000 };

/* The empty probe's own arguments. */
#define NR_OWN_ARGS 3
static const struct bft_usdt_arg own_args[NR_OWN_ARGS] = {
	/* page 0 is never mapped: unread */
	{ .loc = BFT_USDT_MEM, .size = 8, .base = BFT_USDT_NOREG,
	  .index = BFT_USDT_NOREG, .scale = 1, .value = 8 },
	{ .loc = BFT_USDT_REG, .size = 8, .base = BFT_USDT_SITE,
	  .index = BFT_USDT_NOREG, .scale = 1 },
	{ .loc = BFT_USDT_CONST, .size = 2, .is_signed = 1,
	  .base = BFT_USDT_NOREG, .index = BFT_USDT_NOREG, .scale = 1,
	  .value = -7 },
};

/* One MARK with its ARGs, as decoded. */
struct mark {
	uint32_t id, tid, cpu;
	uint32_t n;
	uint16_t sgn, unread;
	uint64_t v[BFT_USDT_MAX_ARGS];
};

/* Each CPU's bytes, as the rings gave them. */
struct bytes {
	uint8_t *p;
	size_t n, cap;
};

FIXTURE(bpf_usdt) {
	char dir[PATH_MAX], exe[PATH_MAX], pins[64];
	struct bft_sdt_list sdt;
	const struct bft_sdt_probe *site[NR_SITES];
	struct bft_usdt_arg args[NR_SITES][BFT_USDT_MAX_ARGS];
	struct bft_nl_probe probes[NR_SITES];
	struct bft_bpf *b;
	struct bft_bpf_rings *rings;
	struct bytes *cpu;
	unsigned int nr_cpus;
	int cpu_pin;
	pid_t pid;
	int out;			/* the fixture's stdout */
	uint64_t bias;
	bool skip;
};

FIXTURE_VARIANT(bpf_usdt) {
	const char *multi;		/* BFT_BPF_UPROBE_MULTI */
};

FIXTURE_VARIANT_ADD(bpf_usdt, multi) { .multi = "1" };
FIXTURE_VARIANT_ADD(bpf_usdt, perf) { .multi = "0" };

static int on_bytes(unsigned int cpu, const void *data, size_t len, void *arg)
{
	FIXTURE_DATA(bpf_usdt) *self = arg;
	struct bytes *c;

	if (cpu >= self->nr_cpus)
		return 0;
	c = &self->cpu[cpu];
	if (c->n + len > c->cap) {
		size_t cap = (c->n + len) * 2;
		uint8_t *p = realloc(c->p, cap);

		if (!p)
			return -ENOMEM;
		c->p = p;
		c->cap = cap;
	}
	memcpy(c->p + c->n, data, len);
	c->n += len;
	return 0;
}

static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)addr);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

/* Where exe's file offset off is in pid, less its link-time address pc. */
static int load_bias(pid_t pid, const char *exe, uint64_t off, uint64_t pc,
		     uint64_t *bias)
{
	char maps[64], line[PATH_MAX + 128], real[PATH_MAX];
	int err = -ENOENT;
	FILE *f;

	if (!realpath(exe, real))
		return -errno;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "re");
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

static uint64_t site_addr(const FIXTURE_DATA(bpf_usdt) *self, int k)
{
	return self->bias + self->site[k]->pc;
}

static int semaphore(const FIXTURE_DATA(bpf_usdt) *self, uint16_t *v)
{
	return read_mem(self->pid, self->bias + self->site[S_GATED]->semaphore,
			v, sizeof(*v));
}

/* Sites holding an int3; -1 if one cannot be read. */
static int breakpoints(const FIXTURE_DATA(bpf_usdt) *self)
{
	int n = 0;

	for (int k = 0; k < NR_SITES; k++) {
		uint8_t b;

		if (read_mem(self->pid, site_addr(self, k), &b, 1))
			return -1;
		n += b == 0xcc;
	}
	return n;
}

/* The first CPU this process may run on: the fixture is pinned there. */
static int first_cpu(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			return c;
	return 0;
}

/* The fixture, stopped by ptrace at its exec, its stdout a pipe. */
static pid_t fixture_start(const char *exe, int cpu, int *out)
{
	int fds[2];
	pid_t pid;
	int st;

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
		dup2(fds[1], 1);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(exe, exe, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	*out = fds[0];
	if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st) ||
	    ptrace(PTRACE_SETOPTIONS, pid, NULL,
		   (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL))) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return -1;
	}
	return pid;
}

/* Run the fixture on to its exit, where it stops with its memory: 0. */
static int fixture_run_to_exit(pid_t pid)
{
	int st, sig = 0;

	for (;;) {
		if (ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig))
			return -errno;
		if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))
			return -ECHILD;
		if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8)))
			return 0;
		sig = WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st);
	}
}

/* Valgrind preloads its own objects into the processes it runs. */
static bool under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}

FIXTURE_SETUP(bpf_usdt)
{
	char err[256] = "";

	self->pid = -1;
	self->out = -1;
	/*
	 * Its bpf() wrapper knows neither BPF_LINK_CREATE nor a NULL key to
	 * BPF_MAP_GET_NEXT_KEY (the first key, as libbpf asks for it): every
	 * call of the backend would be a report about valgrind.
	 */
	if (under_valgrind()) {
		self->skip = true;
		SKIP(return, "the BPF backend under valgrind");
	}
	if (bft_bpf_probe(err, sizeof(err))) {
		self->skip = true;
		SKIP(return, "%s", err);
	}
	snprintf(self->pins, sizeof(self->pins),
		 "/sys/fs/bpf/bft-usdt-test-%d", (int)getpid());
	setenv("BFT_BPF_PIN_DIR", self->pins, 1);
	setenv("BFT_BPF_UPROBE_MULTI", variant->multi, 1);
	ASSERT_EQ(0, fx_tmpdir(self->dir, sizeof(self->dir), "bpf-usdt"));
	fx_path_of(self->exe, sizeof(self->exe), self->dir, "sdt_pie");
	ASSERT_EQ(0, fx_run("%s -O2 -fPIE -pie -o %s %s/sdt_prog.c %s/sdt_gated.c",
			    fx_cc(), self->exe, FIXTURE_SRC, FIXTURE_SRC));
	ASSERT_EQ(0, bft_sdt_read(self->exe, &self->sdt, err, sizeof(err)))
		TH_LOG("%s", err);
	for (size_t i = 0; i < self->sdt.n; i++)
		for (int k = 0; k < NR_SITES; k++)
			if (!strcmp(self->sdt.v[i].provider, "bft") &&
			    !strcmp(self->sdt.v[i].name, site_name[k]))
				self->site[k] = &self->sdt.v[i];
	for (int k = 0; k < NR_SITES; k++) {
		const struct bft_sdt_probe *p = self->site[k];

		ASSERT_NE(NULL, p) TH_LOG("no probe bft:%s", site_name[k]);
		ASSERT_STREQ("", p->why);
		bft_sdt_uapi_args(p, self->args[k]);
		self->probes[k] = (struct bft_nl_probe){
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
	ASSERT_NE(0, self->site[S_GATED]->sema_offset);
	self->probes[S_ZERO].args = own_args;
	self->probes[S_ZERO].nargs = NR_OWN_ARGS;

	ASSERT_EQ(0, bft_bpf_open(&self->b, true, err, sizeof(err)))
		TH_LOG("%s", err);
	self->nr_cpus = (unsigned int)libbpf_num_possible_cpus();
	self->cpu = calloc(self->nr_cpus, sizeof(*self->cpu));
	ASSERT_NE(NULL, self->cpu);
	ASSERT_EQ(0, bft_bpf_rings_open(self->b, &self->rings, on_bytes, self))
		TH_LOG("%s", bft_bpf_errmsg(self->b));
	self->cpu_pin = first_cpu();
	self->pid = fixture_start(self->exe, self->cpu_pin, &self->out);
	ASSERT_LT(0, self->pid);
	ASSERT_EQ(0, load_bias(self->pid, self->exe, self->site[S_ZERO]->offset,
			       self->site[S_ZERO]->pc, &self->bias));
}

FIXTURE_TEARDOWN(bpf_usdt)
{
	char err[256];

	if (self->skip)
		return;
	if (self->pid > 0) {
		kill(self->pid, SIGKILL);
		/* held at its exit, SIGKILL does not move it: let it go */
		ptrace(PTRACE_CONT, self->pid, NULL, NULL);
		waitpid(self->pid, NULL, 0);
	}
	if (self->out >= 0)
		close(self->out);
	bft_bpf_rings_close(self->rings);
	bft_bpf_close(self->b);
	bft_bpf_unload(err, sizeof(err));
	for (unsigned int c = 0; self->cpu && c < self->nr_cpus; c++)
		free(self->cpu[c].p);
	free(self->cpu);
	bft_sdt_free(&self->sdt);
	if (!getenv("BFT_KEEP_FIXTURES"))
		bft_test_rmtree(self->dir);
}

/* The MARKs of a CPU's stream, with their ARGs. */
struct marks {
	struct mark *v;
	size_t n, cap;
	uint32_t tgid;
	size_t other;		/* MARKs of other processes */
	size_t loose;		/* an ARG beyond its MARK's n */
};

static int on_record(void *ctx, const struct bft_record *r)
{
	struct marks *m = ctx;
	struct mark *k;

	if (r->kind == BFT_REC_MARK) {
		if (r->tgid != m->tgid) {
			m->other++;
			return 0;
		}
		if (m->n == m->cap) {
			size_t cap = m->cap * 2 + 16;
			struct mark *v = realloc(m->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			m->v = v;
			m->cap = cap;
		}
		k = &m->v[m->n++];
		memset(k, 0, sizeof(*k));
		k->id = (uint32_t)r->value;
		k->tid = r->tid;
		k->cpu = r->cpu;
		k->sgn = r->mark_signed;
		k->unread = r->mark_unread;
		return 0;
	}
	if (r->kind == BFT_REC_ARG && r->tgid == m->tgid && m->n) {
		k = &m->v[m->n - 1];
		if (k->n < BFT_USDT_MAX_ARGS && r->value2 == k->n)
			k->v[k->n++] = r->value;
		else
			m->loose++;
	}
	return 0;
}

/* Decode every CPU's bytes; the fixture's MARKs into m. */
static void decode_all(struct __test_metadata *_metadata,
		       FIXTURE_DATA(bpf_usdt) *self, struct marks *m,
		       uint64_t *marks_total)
{
	*marks_total = 0;
	for (unsigned int c = 0; c < self->nr_cpus; c++) {
		struct bft_stream_opts o = {
			.cpu = c, .on_record = on_record, .ctx = m,
		};
		const struct bft_stream_error *e;
		struct bft_stream s;
		size_t before = m->n;

		bft_stream_init(&s, &o);
		EXPECT_EQ(0, bft_stream_feed(&s, self->cpu[c].p, self->cpu[c].n));
		EXPECT_EQ(0, bft_stream_finish(&s));
		e = bft_stream_last_error(&s);
		EXPECT_EQ(BFT_SERR_NONE, e->code)
			TH_LOG("cpu %u: %s", c, bft_stream_strerror(e->code));
		EXPECT_EQ(0, bft_stream_stats(&s)->lost);
		*marks_total += bft_stream_stats(&s)->marks;
		/* the fixture runs on one CPU only */
		if ((int)c != self->cpu_pin) {
			EXPECT_EQ(before, m->n) TH_LOG("MARKs on cpu %u", c);
		}
	}
}

/* The fixture's lines, "provider:name v1 v2 ...", one per string. */
static size_t read_lines(int fd, char *buf, size_t cap, char **line,
			 size_t max)
{
	size_t len = 0, n = 0;
	ssize_t r;

	/* the writer is held at its exit: what it wrote is all there is */
	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (len + 1 < cap && (r = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = 0;
	for (char *save = NULL, *t = strtok_r(buf, "\n", &save);
	     t && n < max; t = strtok_r(NULL, "\n", &save))
		line[n++] = t;
	return n;
}

struct methods_seen {
	uint32_t tgid;
	size_t n;
	uint64_t hits[NR_SITES];
	uint32_t flags[NR_SITES];
};

static int on_method(const struct bft_nl_method *nm, void *arg)
{
	struct methods_seen *ms = arg;

	if (nm->tgid != ms->tgid)
		return 0;
	for (int k = 0; k < NR_SITES; k++) {
		if (nm->method_id == site_id[k]) {
			ms->n++;
			ms->hits[k] = nm->hits;
			ms->flags[k] = nm->flags;
		}
	}
	return 0;
}

/* Poll up to 3 s: the kernel may unregister a link's uprobe from a work item. */
static bool settled(const FIXTURE_DATA(bpf_usdt) *self, uint16_t sema0)
{
	for (int i = 0; i < 300; i++) {
		uint16_t sema = 0xffff;

		if (!semaphore(self, &sema) && sema == sema0 &&
		    breakpoints(self) == 0)
			return true;
		usleep(10000);
	}
	return false;
}

TEST_F(bpf_usdt, marks_args_semaphore)
{
	char text[8192], *line[64], err[256];
	struct methods_seen ms = { .tgid = (uint32_t)self->pid };
	struct marks m = { .tgid = (uint32_t)self->pid };
	int results[NR_SITES];
	struct bft_nl_status st;
	uint64_t produced = 0, written = 0, lost = 0, marks_total;
	uint16_t sema0, sema;
	size_t nl, site_args = 0;
	uint8_t mode;

	(void)err;
	if (self->skip)	/* the harness runs the test after its setup's SKIP */
		return;
	for (int k = 0; k < NR_SITES; k++)
		for (uint32_t a = 0; a < self->probes[k].nargs; a++)
			site_args += self->probes[k].args[a].base == BFT_USDT_SITE;
	/* the global's operand is sym(%rip): the site's address is used */
	ASSERT_LT(1, site_args);

	ASSERT_EQ(0, semaphore(self, &sema0));
	ASSERT_EQ(0, bft_bpf_attach(self->b, (uint32_t)self->pid, self->probes,
				    NR_SITES, results))
		TH_LOG("%s", bft_bpf_errmsg(self->b));
	for (int k = 0; k < NR_SITES; k++) {
		ASSERT_EQ(0, results[k]) TH_LOG("site %s", site_name[k]);
	}
	ASSERT_EQ(0, semaphore(self, &sema));
	EXPECT_EQ(sema0 + 1, sema) TH_LOG("semaphore while attached");
	EXPECT_EQ(NR_SITES, breakpoints(self));
	ASSERT_EQ(0, bft_bpf_start(self->b, false, &mode))
		TH_LOG("%s", bft_bpf_errmsg(self->b));

	ASSERT_EQ(0, fixture_run_to_exit(self->pid));
	nl = read_lines(self->out, text, sizeof(text), line, 64);
	/* 2 rounds of zero, one, three, six, gated: the semaphore worked */
	ASSERT_EQ(2 * NR_SITES, nl);

	ASSERT_EQ(0, bft_bpf_get_methods(self->b, on_method, &ms));
	EXPECT_EQ(NR_SITES, ms.n);
	for (int k = 0; k < NR_SITES; k++) {
		EXPECT_EQ(2, ms.hits[k]) TH_LOG("hits of %s", site_name[k]);
		EXPECT_EQ(BFT_PF_USDT, ms.flags[k]) TH_LOG("%s", site_name[k]);
	}

	/* the fixture still holds its memory: the detach must show there */
	ASSERT_EQ(0, bft_bpf_detach(self->b, (uint32_t)self->pid))
		TH_LOG("%s", bft_bpf_errmsg(self->b));
	EXPECT_TRUE(settled(self, sema0))
		TH_LOG("semaphore or a breakpoint left after the detach");

	ASSERT_EQ(0, bft_bpf_mode_cmd(self->b, BFT_CMD_STOP, &mode));
	ASSERT_LE(0, bft_bpf_rings_drain(self->rings, 100, 5000));
	ASSERT_EQ(0, bft_bpf_get_status(self->b, &st));
	for (uint32_t c = 0; c < st.nr_cpus; c++) {
		produced += st.cpus[c].produced;
		written += st.cpus[c].written;
		lost += st.cpus[c].lost;
	}
	bft_nl_status_free(&st);
	decode_all(_metadata, self, &m, &marks_total);
	/* a MARK is one event; its ARGs are none */
	EXPECT_EQ(2 * NR_SITES, produced);
	EXPECT_EQ(2 * NR_SITES, written);
	EXPECT_EQ(0, lost);
	EXPECT_EQ(2 * NR_SITES, marks_total);
	EXPECT_EQ(0, m.other);
	EXPECT_EQ(0, m.loose);

	ASSERT_EQ(nl, m.n);
	TH_LOG("%zu MARKs on cpu %d, %zu arguments from the site's address",
	       m.n, self->cpu_pin, site_args);
	for (size_t i = 0; i < nl && i < m.n; i++) {
		const struct mark *k = &m.v[i];
		char *save = NULL, *tok = strtok_r(line[i], " ", &save);
		int site = -1;

		for (int j = 0; j < NR_SITES; j++)
			if (!strncmp(tok, "bft:", 4) && !strcmp(tok + 4, site_name[j]))
				site = j;
		ASSERT_LE(0, site) TH_LOG("line %zu: %s", i, tok);
		EXPECT_EQ(site_id[site], k->id) TH_LOG("MARK %zu", i);
		EXPECT_EQ((uint32_t)self->pid, k->tid);
		EXPECT_EQ(self->probes[site].nargs, k->n) TH_LOG("MARK %zu", i);
		if (site == S_ZERO) {
			EXPECT_EQ(1, k->unread);
			EXPECT_EQ(4, k->sgn);
			EXPECT_EQ(0, k->v[0]);
			EXPECT_EQ(site_addr(self, S_ZERO), k->v[1])
				TH_LOG("BFT_USDT_SITE %#" PRIx64 " != %#" PRIx64,
				       k->v[1], site_addr(self, S_ZERO));
			EXPECT_EQ((uint64_t)-7, k->v[2]);
			continue;
		}
		EXPECT_EQ(0, k->unread) TH_LOG("MARK %zu", i);
		for (uint32_t a = 0; a < k->n; a++) {
			const struct bft_usdt_arg *ua = &self->probes[site].args[a];
			char got[32];

			tok = strtok_r(NULL, " ", &save);
			ASSERT_NE(NULL, tok) TH_LOG("line %zu arg %u", i, a);
			EXPECT_EQ(ua->is_signed, (k->sgn >> a) & 1);
			if (ua->is_signed)
				snprintf(got, sizeof(got), "%" PRId64, (int64_t)k->v[a]);
			else
				snprintf(got, sizeof(got), "%" PRIu64, k->v[a]);
			EXPECT_STREQ(tok, got)
				TH_LOG("%s arg %u (loc %u base %#x value %" PRId64 ")",
				       site_name[site], a, ua->loc, ua->base, ua->value);
		}
	}
	free(m.v);
}

/* Attach {a good probe, bad}: the errno, and a text naming probe 1. */
static void attach_bad(struct __test_metadata *_metadata,
		       FIXTURE_DATA(bpf_usdt) *self,
		       const struct bft_nl_probe *bad, int want)
{
	struct bft_nl_probe pair[2] = { self->probes[S_THREE], *bad };
	int results[2] = { 0, 0 };
	struct bft_nl_status st;
	const char *msg;
	uint16_t sema;
	int err;

	err = bft_bpf_attach(self->b, (uint32_t)self->pid, pair, 2, results);
	msg = bft_bpf_errmsg(self->b);
	EXPECT_EQ(-want, err) TH_LOG("%s", msg);
	EXPECT_NE(NULL, strstr(msg, "probe 1")) TH_LOG("text: %s", msg);
	/* all or nothing: the good one is not kept either */
	ASSERT_EQ(0, bft_bpf_get_status(self->b, &st));
	EXPECT_EQ(0, st.nr_probes);
	bft_nl_status_free(&st);
	EXPECT_EQ(0, breakpoints(self));
	ASSERT_EQ(0, semaphore(self, &sema));
	EXPECT_EQ(0, sema);
}

TEST_F(bpf_usdt, bad_args_rejected)
{
	struct bft_usdt_arg many[BFT_USDT_MAX_ARGS + 1];
	struct bft_nl_probe bad;
	const struct bft_usdt_arg good = self->args[S_THREE][0];
	struct bft_usdt_arg a;

	if (self->skip)
		return;
	for (int c = 0; c < 9; c++) {
		a = good;
		switch (c) {
		case 0: a.loc = 3; break;
		case 1: a.size = 3; break;
		case 2: a.scale = 3; break;
		case 3: a.loc = BFT_USDT_REG; a.base = 10; a.index = BFT_USDT_NOREG;
			a.scale = 1; a.shift = 4; break;
		case 4: a.loc = BFT_USDT_REG; a.base = BFT_USDT_NREGS;
			a.index = BFT_USDT_NOREG; a.scale = 1; break;
		case 5: a.pad = 1; break;
		case 6: a.loc = BFT_USDT_MEM; a.base = 4; a.index = BFT_USDT_SITE;
			break;
		case 7: a.is_signed = 2; break;
		case 8: a.loc = BFT_USDT_CONST; a.base = 4; break;
		}
		bad = self->probes[S_SIX];
		bad.args = &a;
		bad.nargs = 1;
		TH_LOG("bad argument, case %d", c);
		attach_bad(_metadata, self, &bad, EINVAL);
	}
	for (size_t i = 0; i < BFT_USDT_MAX_ARGS + 1; i++)
		many[i] = good;
	bad = self->probes[S_SIX];
	bad.args = many;
	bad.nargs = BFT_USDT_MAX_ARGS + 1;
	attach_bad(_metadata, self, &bad, EINVAL);
	/* arguments, or a semaphore, without BFT_PF_USDT */
	bad = self->probes[S_SIX];
	bad.flags = BFT_PF_ENTRY;
	attach_bad(_metadata, self, &bad, EINVAL);
	bad = self->probes[S_ONE];
	bad.flags = BFT_PF_ENTRY;
	bad.args = NULL;
	bad.nargs = 0;
	bad.ref_ctr_offset = self->site[S_GATED]->sema_offset;
	attach_bad(_metadata, self, &bad, EINVAL);
	/* BFT_PF_USDT with another flag */
	bad = self->probes[S_ONE];
	bad.flags = BFT_PF_USDT | BFT_PF_ENTRY;
	attach_bad(_metadata, self, &bad, EINVAL);
	/* a semaphore past the end of the file */
	bad = self->probes[S_GATED];
	bad.ref_ctr_offset = 1ull << 40;
	attach_bad(_metadata, self, &bad, ERANGE);
}

TEST_HARNESS_MAIN
