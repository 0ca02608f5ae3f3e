// SPDX-License-Identifier: GPL-2.0
/*
 * BFT_CMD_DETACH of chosen probes (BFT_FEAT_DETACH_SOME) on the BPF
 * backend, natively, through its table of operations (bft_backend.h) as
 * bfctl drives it.  A fixture calls four functions and passes two USDT
 * sites in a loop until signalled; all six are attached (four functions'
 * probes share one uprobe_multi link, the two sites another), then:
 *   - two functions and one site are detached by id: their hits stop,
 *     their ENTERs and MARKs are gone from the rings after the detach
 *     while the others' (the survivors of the shared links, attached
 *     again) go on, their breakpoints are gone and the others' stay, the
 *     methods list them BFT_PF_GONE with path and name, the status counts
 *     three probes of one target;
 *   - an id of no live probe is -ENOENT, an id given twice -EINVAL, each
 *     naming the id, and nothing is detached;
 *   - the same ids attach again and record;
 *   - all six detached by id leave the target, with no probe and no
 *     breakpoint; a whole detach and a stop after that are clean.
 * And a shared link's other probes are not attached again by path to a
 * file that replaced theirs.
 * On uprobe_multi links and on perf-event links.  Skips where the backend
 * cannot run (not root, no BTF) and under valgrind (see test_bpf_usdt.c).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "capture/bft_backend.h"
#include "capture/bft_bpf.h"
#include "symbols/bft_elf.h"
#include "symbols/bft_sdt.h"
#include "wire/bft_stream.h"
/* The 6.1 harness leaves a parameter unused; not our code to change. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "bft_test.h"
#pragma GCC diagnostic pop
#include "fixture_build.h"

static const char fixture_src[] =
	"#include <signal.h>\n"
	"#include <sys/sdt.h>\n"
	"#include <unistd.h>\n"
	"static volatile sig_atomic_t stop;\n"
	"volatile int sink;\n"
	"static void on_term(int s) { (void)s; stop = 1; }\n"
	"__attribute__((noipa)) void f1(int i) { sink += i; }\n"
	"__attribute__((noipa)) void f2(int i) { sink ^= i; }\n"
	"__attribute__((noipa)) void f3(int i) { sink -= i; }\n"
	"__attribute__((noipa)) void f4(int i)\n"
	"{ sink += 2 * i; DTRACE_PROBE1(bftds, u1, i); }\n"
	"int main(void)\n"
	"{\n"
	"	signal(SIGTERM, on_term);\n"
	"	if (write(1, \"r\", 1) != 1) return 1;\n"
	"	for (int i = 0; !stop; i++) {\n"
	"		f1(i); f2(i); f3(i); f4(i);\n"
	"		DTRACE_PROBE(bftds, u2);\n"
	"		usleep(200);\n"
	"	}\n"
	"	return 0;\n"
	"}\n";

enum { P_F1, P_F2, P_F3, P_F4, P_U1, P_U2, NR_P };

static const char *const p_name[NR_P] = { "f1", "f2", "f3", "f4", "u1", "u2" };
/* 70001 counts its hits in the far map */
static const uint32_t p_id[NR_P] = { 1, 2, 3, 70001, 10, 11 };
static const uint32_t p_flags[NR_P] = {
	BFT_PF_ENTRY | BFT_PF_RETURN, BFT_PF_ENTRY,
	BFT_PF_ENTRY | BFT_PF_RETURN, BFT_PF_ENTRY | BFT_PF_RETURN,
	BFT_PF_USDT, BFT_PF_USDT,
};

/* What the detach by id takes: two functions, one of them the far id's
 * neighbour in the shared link, and one USDT site. */
static const int chosen[] = { P_F1, P_F3, P_U1 };
#define NR_CHOSEN (sizeof(chosen) / sizeof(chosen[0]))

struct bytes {
	uint8_t *p;
	size_t n, cap;
};

FIXTURE(detach_some) {
	char dir[PATH_MAX], exe[PATH_MAX], pins[64];
	const struct bft_backend_ops *ops;
	void *h;
	struct bft_backend_rings *rings;
	struct bft_sdt_list sdt;
	struct bft_usdt_arg args[NR_P][BFT_USDT_MAX_ARGS];
	struct bft_nl_probe probes[NR_P];
	uint64_t addr[NR_P];		/* where each probe is in the fixture */
	struct bytes *cpu;
	unsigned int nr_cpus;
	pid_t pid;
	bool skip;
};

FIXTURE_VARIANT(detach_some) {
	const char *multi;		/* BFT_BPF_UPROBE_MULTI */
};

FIXTURE_VARIANT_ADD(detach_some, multi) { .multi = "1" };
FIXTURE_VARIANT_ADD(detach_some, perf) { .multi = "0" };

static int on_bytes(unsigned int cpu, const void *data, size_t len, void *arg)
{
	FIXTURE_DATA(detach_some) *self = arg;
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

static bool under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}

/* Where file offset off of exe is mapped in pid; 0 if it is not. */
static uint64_t mapped_at(pid_t pid, const char *exe, uint64_t off)
{
	char maps[64], line[PATH_MAX + 128], real[PATH_MAX];
	uint64_t at = 0;
	FILE *f;

	if (!realpath(exe, real))
		return 0;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return 0;
	while (!at && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, foff;
		char *path = strchr(line, '/');

		if (!path ||
		    sscanf(line, "%llx-%llx %*s %llx", &start, &end, &foff) != 3)
			continue;
		path[strcspn(path, "\n")] = 0;
		if (!strcmp(path, real) && off >= foff && off < foff + end - start)
			at = start + (off - foff);
	}
	fclose(f);
	return at;
}

/* The byte at addr in pid, -1 if it cannot be read. */
static int byte_at(pid_t pid, uint64_t addr)
{
	char path[64];
	uint8_t b;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = pread(fd, &b, 1, (off_t)addr);
	close(fd);
	return n == 1 ? b : -1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

FIXTURE_SETUP(detach_some)
{
	char err[512] = "";
	struct bft_elf *e = NULL;
	int fds[2];
	char c;

	self->pid = -1;
	self->ops = &bft_backend_bpf;
	if (under_valgrind()) {
		self->skip = true;
		SKIP(return, "the BPF backend under valgrind");
	}
	if (bft_bpf_probe(err, sizeof(err))) {
		self->skip = true;
		SKIP(return, "%s", err);
	}
	snprintf(self->pins, sizeof(self->pins),
		 "/sys/fs/bpf/bft-detach-some-test-%d", (int)getpid());
	setenv("BFT_BPF_PIN_DIR", self->pins, 1);
	setenv("BFT_BPF_UPROBE_MULTI", variant->multi, 1);

	ASSERT_EQ(0, fx_tmpdir(self->dir, sizeof(self->dir), "bpf-detach-some"));
	{
		char src[PATH_MAX];
		FILE *f;

		fx_path_of(src, sizeof(src), self->dir, "loop.c");
		f = fopen(src, "we");
		ASSERT_NE(NULL, f);
		fputs(fixture_src, f);
		ASSERT_EQ(0, fclose(f));
		fx_path_of(self->exe, sizeof(self->exe), self->dir, "loop");
		ASSERT_EQ(0, fx_run("%s -O2 -fPIE -pie -o %s %s", fx_cc(),
				    self->exe, src));
	}
	ASSERT_EQ(0, bft_elf_open(self->exe, &e, err, sizeof(err)))
		TH_LOG("%s", err);
	for (int k = P_F1; k <= P_F4; k++) {
		struct bft_elf_func fn;

		ASSERT_EQ(0, bft_elf_find_func(e, p_name[k], &fn))
			TH_LOG("%s", p_name[k]);
		self->probes[k] = (struct bft_nl_probe){
			.path = self->exe, .offset = fn.probe_offset,
			.method_id = p_id[k], .flags = p_flags[k],
			.name = p_name[k],
		};
	}
	bft_elf_close(e);
	ASSERT_EQ(0, bft_sdt_read(self->exe, &self->sdt, err, sizeof(err)))
		TH_LOG("%s", err);
	for (int k = P_U1; k <= P_U2; k++) {
		const struct bft_sdt_probe *p = NULL;

		for (size_t i = 0; i < self->sdt.n; i++)
			if (!strcmp(self->sdt.v[i].provider, "bftds") &&
			    !strcmp(self->sdt.v[i].name, p_name[k]))
				p = &self->sdt.v[i];
		ASSERT_NE(NULL, p) TH_LOG("no probe bftds:%s", p_name[k]);
		ASSERT_STREQ("", p->why);
		bft_sdt_uapi_args(p, self->args[k]);
		self->probes[k] = (struct bft_nl_probe){
			.path = self->exe, .offset = p->offset,
			.method_id = p_id[k], .flags = p_flags[k],
			.name = p_name[k], .ref_ctr_offset = p->sema_offset,
			.args = self->args[k], .nargs = (uint32_t)p->nargs,
		};
	}

	ASSERT_EQ(0, self->ops->open(&self->h, BFT_BACKEND_CREATE, err,
				     sizeof(err)))
		TH_LOG("%s", err);
	self->nr_cpus = (unsigned int)libbpf_num_possible_cpus();
	self->cpu = calloc(self->nr_cpus, sizeof(*self->cpu));
	ASSERT_NE(NULL, self->cpu);
	ASSERT_EQ(0, self->ops->rings_open(self->h, &self->rings, NULL,
					   self->nr_cpus, on_bytes, self, err,
					   sizeof(err)))
		TH_LOG("%s", err);

	ASSERT_EQ(0, pipe2(fds, O_CLOEXEC));
	self->pid = fork();
	ASSERT_LE(0, self->pid);
	if (!self->pid) {
		dup2(fds[1], 1);
		execl(self->exe, self->exe, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	/* it has its handler and runs its loop: its image is mapped */
	ASSERT_EQ(1, read(fds[0], &c, 1));
	close(fds[0]);
	for (int k = 0; k < NR_P; k++) {
		self->addr[k] = mapped_at(self->pid, self->exe,
					  self->probes[k].offset);
		ASSERT_NE(0, self->addr[k]) TH_LOG("%s not mapped", p_name[k]);
	}
}

FIXTURE_TEARDOWN(detach_some)
{
	char err[256];

	if (self->skip)
		return;
	if (self->pid > 0) {
		kill(self->pid, SIGKILL);
		waitpid(self->pid, NULL, 0);
	}
	if (self->rings)
		self->ops->rings_close(self->rings);
	if (self->h)
		self->ops->close(self->h);
	bft_bpf_unload(err, sizeof(err));
	for (unsigned int c = 0; self->cpu && c < self->nr_cpus; c++)
		free(self->cpu[c].p);
	free(self->cpu);
	bft_sdt_free(&self->sdt);
	if (!getenv("BFT_KEEP_FIXTURES"))
		bft_test_rmtree(self->dir);
}

/* The fixture's methods, by probe index. */
struct methods {
	uint32_t tgid;
	size_t n, other;
	bool seen[NR_P];
	uint32_t flags[NR_P];
	uint64_t hits[NR_P];
	char name[NR_P][32];
	char path[NR_P][PATH_MAX];
};

static int on_method(const struct bft_nl_method *m, void *arg)
{
	struct methods *ms = arg;

	if (m->tgid != ms->tgid) {
		ms->other++;
		return 0;
	}
	ms->n++;
	for (int k = 0; k < NR_P; k++) {
		if (m->method_id != p_id[k])
			continue;
		ms->seen[k] = true;
		ms->flags[k] = m->flags;
		ms->hits[k] = m->hits;
		snprintf(ms->name[k], sizeof(ms->name[k]), "%s", m->name);
		snprintf(ms->path[k], sizeof(ms->path[k]), "%s", m->path);
	}
	return 0;
}

static int methods_get(FIXTURE_DATA(detach_some) *self, struct methods *ms)
{
	memset(ms, 0, sizeof(*ms));
	ms->tgid = (uint32_t)self->pid;
	return self->ops->get_methods(self->h, on_method, ms);
}

static void status_get(struct __test_metadata *_metadata,
		       FIXTURE_DATA(detach_some) *self, uint32_t *probes,
		       uint32_t *targets)
{
	struct bft_nl_status st;

	ASSERT_EQ(0, self->ops->get_status(self->h, &st))
		TH_LOG("%s", self->ops->errmsg(self->h));
	*probes = st.nr_probes;
	*targets = st.nr_targets;
	bft_nl_status_free(&st);
}

/* Read the rings now, everything recorded so far (the batches sealed). */
static void rings_take(struct __test_metadata *_metadata,
		       FIXTURE_DATA(detach_some) *self)
{
	ASSERT_EQ(0, self->ops->flush(self->h, false))
		TH_LOG("%s", self->ops->errmsg(self->h));
	ASSERT_LE(0, self->ops->rings_poll(self->rings, 0))
		TH_LOG("%s", self->ops->rings_errmsg(self->rings));
}

/* Keep the rings read for ms while the fixture runs on. */
static void run_for(struct __test_metadata *_metadata,
		    FIXTURE_DATA(detach_some) *self, long ms)
{
	for (long t = 0; t < ms; t += 50) {
		sleep_ms(50);
		rings_take(_metadata, self);
	}
}

/* The fixture's ENTERs and MARKs by probe, past each CPU's from[]. */
struct counts {
	uint32_t tgid;
	const size_t *from;
	uint64_t n[NR_P];
	uint64_t exits, other;
};

static int on_record(void *ctx, const struct bft_record *r)
{
	struct counts *c = ctx;

	if (r->offset < c->from[r->cpu])
		return 0;
	if (r->kind != BFT_REC_ENTER && r->kind != BFT_REC_ENTER_NORET &&
	    r->kind != BFT_REC_MARK && r->kind != BFT_REC_EXIT)
		return 0;
	if (r->tgid != c->tgid) {
		c->other++;
		return 0;
	}
	if (r->kind == BFT_REC_EXIT) {
		c->exits += r->value;
		return 0;
	}
	for (int k = 0; k < NR_P; k++)
		if (r->value == p_id[k])
			c->n[k]++;
	return 0;
}

static void decode_from(struct __test_metadata *_metadata,
			FIXTURE_DATA(detach_some) *self, const size_t *from,
			struct counts *c)
{
	memset(c, 0, sizeof(*c));
	c->tgid = (uint32_t)self->pid;
	c->from = from;
	for (unsigned int cpu = 0; cpu < self->nr_cpus; cpu++) {
		struct bft_stream_opts o = {
			.cpu = cpu, .on_record = on_record, .ctx = c,
		};
		const struct bft_stream_error *e;
		struct bft_stream s;

		bft_stream_init(&s, &o);
		EXPECT_EQ(0, bft_stream_feed(&s, self->cpu[cpu].p,
					     self->cpu[cpu].n));
		EXPECT_EQ(0, bft_stream_finish(&s));
		e = bft_stream_last_error(&s);
		EXPECT_EQ(BFT_SERR_NONE, e->code)
			TH_LOG("cpu %u: %s", cpu, bft_stream_strerror(e->code));
		EXPECT_EQ(0, bft_stream_stats(&s)->lost) TH_LOG("cpu %u", cpu);
	}
}

static void marks_now(FIXTURE_DATA(detach_some) *self, size_t *at)
{
	for (unsigned int c = 0; c < self->nr_cpus; c++)
		at[c] = self->cpu[c].n;
}

static bool is_chosen(int k)
{
	for (size_t i = 0; i < NR_CHOSEN; i++)
		if (chosen[i] == k)
			return true;
	return false;
}

/* Entries directly in the target's links directory; -1 if there is none. */
static int pins_of(FIXTURE_DATA(detach_some) *self)
{
	char p[PATH_MAX];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(p, sizeof(p), "%s/links/%d", self->pins, (int)self->pid);
	d = opendir(p);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

TEST_F(detach_some, chosen_probes_go_others_stay)
{
	uint32_t tgid, ids[NR_CHOSEN], all[NR_P], bad[2], probes, targets;
	struct bft_nl_probe again[NR_CHOSEN];
	size_t *from = NULL;
	int results[NR_P];
	struct bft_nl_caps caps;
	struct methods ms, ms2;
	struct counts cnt;
	uint8_t mode;
	const char *msg;

	if (self->skip)
		return;
	tgid = (uint32_t)self->pid;
	from = calloc(self->nr_cpus, sizeof(*from));
	ASSERT_NE(NULL, from);
	ASSERT_EQ(0, self->ops->get_caps(self->h, &caps));
	EXPECT_TRUE(caps.features & BFT_FEAT_DETACH_SOME);
	EXPECT_TRUE(self->ops->features & BFT_FEAT_DETACH_SOME);
	ASSERT_NE(NULL, self->ops->detach_some);

	ASSERT_EQ(0, self->ops->start(self->h, false, &mode))
		TH_LOG("%s", self->ops->errmsg(self->h));
	ASSERT_EQ(0, self->ops->attach(self->h, tgid, self->probes, NR_P,
				       results))
		TH_LOG("%s", self->ops->errmsg(self->h));
	for (int k = 0; k < NR_P; k++) {
		ASSERT_EQ(0, results[k]) TH_LOG("%s", p_name[k]);
	}
	run_for(_metadata, self, 300);
	ASSERT_EQ(0, methods_get(self, &ms));
	for (int k = 0; k < NR_P; k++) {
		EXPECT_LT(0, ms.hits[k]) TH_LOG("%s never hit", p_name[k]);
		EXPECT_EQ(0xcc, byte_at(self->pid, self->addr[k]))
			TH_LOG("%s", p_name[k]);
	}
	status_get(_metadata, self, &probes, &targets);
	EXPECT_EQ(NR_P, probes);
	EXPECT_EQ(1, targets);

	/* ---- some by id ---- */
	for (size_t i = 0; i < NR_CHOSEN; i++)
		ids[i] = p_id[chosen[i]];
	ASSERT_EQ(0, self->ops->detach_some(self->h, tgid, ids, NR_CHOSEN))
		TH_LOG("%s", self->ops->errmsg(self->h));
	/* what was recorded before returned is in the rings from here */
	rings_take(_metadata, self);
	marks_now(self, from);
	ASSERT_EQ(0, methods_get(self, &ms));
	run_for(_metadata, self, 400);
	ASSERT_EQ(0, methods_get(self, &ms2));
	EXPECT_EQ(NR_P, ms2.n);
	for (int k = 0; k < NR_P; k++) {
		ASSERT_TRUE(ms2.seen[k]) TH_LOG("%s", p_name[k]);
		EXPECT_STREQ(p_name[k], ms2.name[k]);
		EXPECT_STREQ(self->exe, ms2.path[k]);
		EXPECT_EQ(p_flags[k] | (is_chosen(k) ? BFT_PF_GONE : 0),
			  ms2.flags[k]) TH_LOG("%s", p_name[k]);
		if (is_chosen(k)) {
			EXPECT_EQ(ms.hits[k], ms2.hits[k])
				TH_LOG("%s hit after its detach", p_name[k]);
			if (k != P_U1) {	/* a USDT site is a nop */
				EXPECT_NE(0xcc, byte_at(self->pid,
							self->addr[k]))
					TH_LOG("%s kept its breakpoint",
					       p_name[k]);
			}
		} else {
			EXPECT_LT(ms.hits[k], ms2.hits[k])
				TH_LOG("%s stopped recording", p_name[k]);
			EXPECT_EQ(0xcc, byte_at(self->pid, self->addr[k]))
				TH_LOG("%s", p_name[k]);
		}
	}
	EXPECT_NE(0xcc, byte_at(self->pid, self->addr[P_U1]));
	decode_from(_metadata, self, from, &cnt);
	for (int k = 0; k < NR_P; k++) {
		if (is_chosen(k)) {
			EXPECT_EQ(0, cnt.n[k])
				TH_LOG("%s recorded after its detach",
				       p_name[k]);
		} else {
			EXPECT_LT(0, cnt.n[k])
				TH_LOG("%s not recorded after the detach",
				       p_name[k]);
		}
	}
	/* f4's returns, the one survivor with a return probe */
	EXPECT_LT(0, cnt.exits);
	EXPECT_GE(cnt.n[P_F4] + 1, cnt.exits);
	EXPECT_EQ(0, cnt.other);
	status_get(_metadata, self, &probes, &targets);
	EXPECT_EQ(NR_P - NR_CHOSEN, probes);
	EXPECT_EQ(1, targets);

	/* ---- refusals: nothing detached ---- */
	bad[0] = p_id[P_F2];
	bad[1] = 999;
	EXPECT_EQ(-ENOENT, self->ops->detach_some(self->h, tgid, bad, 2));
	msg = self->ops->errmsg(self->h);
	EXPECT_NE(NULL, strstr(msg, "999")) TH_LOG("%s", msg);
	bad[1] = p_id[P_F1];		/* detached already */
	EXPECT_EQ(-ENOENT, self->ops->detach_some(self->h, tgid, bad, 2));
	msg = self->ops->errmsg(self->h);
	EXPECT_NE(NULL, strstr(msg, "id 1 ")) TH_LOG("%s", msg);
	bad[0] = bad[1] = p_id[P_F4];
	EXPECT_EQ(-EINVAL, self->ops->detach_some(self->h, tgid, bad, 2));
	msg = self->ops->errmsg(self->h);
	EXPECT_NE(NULL, strstr(msg, "70001")) TH_LOG("%s", msg);
	EXPECT_NE(NULL, strstr(msg, "twice")) TH_LOG("%s", msg);
	EXPECT_EQ(-EINVAL, self->ops->detach_some(self->h, tgid, bad, 0));
	EXPECT_EQ(-ENOENT, self->ops->detach_some(self->h, 1,
						  bad, 1));
	status_get(_metadata, self, &probes, &targets);
	EXPECT_EQ(NR_P - NR_CHOSEN, probes);
	ASSERT_EQ(0, methods_get(self, &ms));
	for (int k = 0; k < NR_P; k++) {
		EXPECT_EQ(is_chosen(k), !!(ms.flags[k] & BFT_PF_GONE))
			TH_LOG("%s", p_name[k]);
	}
	run_for(_metadata, self, 200);
	ASSERT_EQ(0, methods_get(self, &ms2));
	for (int k = 0; k < NR_P; k++) {
		if (!is_chosen(k)) {
			EXPECT_LT(ms.hits[k], ms2.hits[k])
				TH_LOG("%s stopped after a refusal", p_name[k]);
		}
	}

	/* ---- the same ids again ---- */
	for (size_t i = 0; i < NR_CHOSEN; i++)
		again[i] = self->probes[chosen[i]];
	ASSERT_EQ(0, self->ops->attach(self->h, tgid, again, NR_CHOSEN,
				       results))
		TH_LOG("%s", self->ops->errmsg(self->h));
	ASSERT_EQ(0, methods_get(self, &ms));
	run_for(_metadata, self, 300);
	ASSERT_EQ(0, methods_get(self, &ms2));
	for (int k = 0; k < NR_P; k++) {
		EXPECT_EQ(p_flags[k], ms2.flags[k]) TH_LOG("%s", p_name[k]);
		EXPECT_LT(ms.hits[k], ms2.hits[k])
			TH_LOG("%s does not record", p_name[k]);
	}
	status_get(_metadata, self, &probes, &targets);
	EXPECT_EQ(NR_P, probes);
	EXPECT_EQ(1, targets);

	/* ---- all of them by id: the target stays, with nothing ---- */
	for (int k = 0; k < NR_P; k++)
		all[k] = p_id[NR_P - 1 - k];
	ASSERT_EQ(0, self->ops->detach_some(self->h, tgid, all, NR_P))
		TH_LOG("%s", self->ops->errmsg(self->h));
	rings_take(_metadata, self);
	marks_now(self, from);
	status_get(_metadata, self, &probes, &targets);
	EXPECT_EQ(0, probes);
	EXPECT_EQ(1, targets);
	EXPECT_EQ(0, pins_of(self)) TH_LOG("links of the emptied target");
	ASSERT_EQ(0, methods_get(self, &ms));
	run_for(_metadata, self, 200);
	ASSERT_EQ(0, methods_get(self, &ms2));
	EXPECT_EQ(NR_P, ms2.n);
	for (int k = 0; k < NR_P; k++) {
		EXPECT_EQ(p_flags[k] | BFT_PF_GONE, ms2.flags[k]);
		EXPECT_EQ(ms.hits[k], ms2.hits[k]) TH_LOG("%s", p_name[k]);
		EXPECT_NE(0xcc, byte_at(self->pid, self->addr[k]))
			TH_LOG("%s", p_name[k]);
	}
	decode_from(_metadata, self, from, &cnt);
	for (int k = 0; k < NR_P; k++) {
		EXPECT_EQ(0, cnt.n[k]) TH_LOG("%s", p_name[k]);
	}
	EXPECT_EQ(0, cnt.exits);

	/* ---- a whole detach and a stop after that ---- */
	ASSERT_EQ(0, self->ops->detach(self->h, tgid))
		TH_LOG("%s", self->ops->errmsg(self->h));
	status_get(_metadata, self, &probes, &targets);
	EXPECT_EQ(0, probes);
	EXPECT_EQ(0, targets);
	EXPECT_EQ(-1, pins_of(self));
	EXPECT_EQ(-ENOENT, self->ops->detach_some(self->h, tgid, all, 1));
	ASSERT_EQ(0, self->ops->mode_cmd(self->h, BFT_CMD_STOP, &mode))
		TH_LOG("%s", self->ops->errmsg(self->h));
	rings_take(_metadata, self);
	status_get(_metadata, self, &probes, &targets);
	EXPECT_EQ(0, probes);
	EXPECT_EQ(0, targets);
	free(from);
}

/*
 * The fixture's file replaced at its path while it runs (as a package
 * upgrade does): on uprobe_multi, f1's link-mates cannot be attached again
 * by path, which would take the new file at the old one's offsets; they
 * go with it, and the error says so.  The USDT sites' link is untouched.
 * On perf-event links f1 has its link alone.
 */
TEST_F(detach_some, shared_link_of_a_replaced_file)
{
	uint32_t tgid, id = p_id[P_F1], probes, targets;
	bool multi = !strcmp(variant->multi, "1");
	char tmp[PATH_MAX + 8];
	struct methods ms, ms2;
	int results[NR_P], err;
	uint8_t mode;

	if (self->skip)
		return;
	tgid = (uint32_t)self->pid;
	ASSERT_EQ(0, self->ops->start(self->h, false, &mode));
	ASSERT_EQ(0, self->ops->attach(self->h, tgid, self->probes, NR_P,
				       results))
		TH_LOG("%s", self->ops->errmsg(self->h));
	snprintf(tmp, sizeof(tmp), "%s.new", self->exe);
	ASSERT_EQ(0, fx_run("cp %s %s && mv %s %s", self->exe, tmp, tmp,
			    self->exe));
	err = self->ops->detach_some(self->h, tgid, &id, 1);
	if (multi) {
		EXPECT_EQ(-ESTALE, err);
		EXPECT_NE(NULL, strstr(self->ops->errmsg(self->h), "replaced"))
			TH_LOG("%s", self->ops->errmsg(self->h));
	} else {
		EXPECT_EQ(0, err) TH_LOG("%s", self->ops->errmsg(self->h));
	}
	run_for(_metadata, self, 100);
	ASSERT_EQ(0, methods_get(self, &ms));
	run_for(_metadata, self, 300);
	ASSERT_EQ(0, methods_get(self, &ms2));
	for (int k = 0; k < NR_P; k++) {
		bool gone = k == P_F1 || (multi && k <= P_F4);

		EXPECT_EQ(p_flags[k] | (gone ? BFT_PF_GONE : 0), ms2.flags[k])
			TH_LOG("%s", p_name[k]);
		if (gone) {
			EXPECT_EQ(ms.hits[k], ms2.hits[k]) TH_LOG("%s", p_name[k]);
		} else {
			EXPECT_LT(ms.hits[k], ms2.hits[k]) TH_LOG("%s", p_name[k]);
		}
	}
	status_get(_metadata, self, &probes, &targets);
	EXPECT_EQ(multi ? 2 : NR_P - 1, probes);
	EXPECT_EQ(1, targets);
	ASSERT_EQ(0, self->ops->mode_cmd(self->h, BFT_CMD_STOP, &mode));
	status_get(_metadata, self, &probes, &targets);
	EXPECT_EQ(0, probes);
	EXPECT_EQ(0, targets);
}

TEST_HARNESS_MAIN
