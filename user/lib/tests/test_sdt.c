// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of bft_sdt.  The USDT fixture (sdt_fixtures/) is compiled at
 * test time, -O2 PIE and -O0 not PIE, so the compiler chooses registers,
 * stack slots, globals and constants for the arguments.  What bft_sdt
 * reads is checked against readelf(1), which shares no code with it; its
 * argument evaluation against the program itself: the test runs the
 * fixture under ptrace with a breakpoint on every probe site and its
 * semaphore raised, evaluates each argument at each hit from the
 * registers and memory there, and compares with the line the fixture
 * printed just before, from the C values.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbols/bft_sdt.h"
/* The 6.1 harness leaves a parameter unused; not our code to change. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "bft_test.h"
#pragma GCC diagnostic pop
#include "fixture_build.h"

#define FIXTURE_SRC	BFT_TEST_SRCDIR "/sdt_fixtures"

/* A note whose argument has a size no compiler writes. */
static const char bad_note_src[] =
	"__asm__(\".pushsection .note.stapsdt,\\\"?\\\",\\\"note\\\"\\n\"\n"
	"        \".balign 4\\n\"\n"
	"        \".4byte 992f-991f, 994f-993f, 3\\n\"\n"
	"        \"991: .asciz \\\"stapsdt\\\"\\n\"\n"
	"        \"992: .balign 4\\n\"\n"
	"        \"993: .8byte bad_site\\n .8byte 0\\n .8byte 0\\n\"\n"
	"        \".asciz \\\"bad\\\"\\n .asciz \\\"arg\\\"\\n .asciz \\\"3@%eax\\\"\\n\"\n"
	"        \"994: .balign 4\\n\"\n"
	"        \".popsection\\n\"\n"
	"        \".text\\n bad_site: nop\\n ret\\n\");\n"
	"int main(void) { return 0; }\n";

FIXTURE(sdt) {
	char dir[PATH_MAX];
	char pie[PATH_MAX], nopie[PATH_MAX];
};

FIXTURE_SETUP(sdt)
{
	ASSERT_EQ(0, fx_tmpdir(self->dir, sizeof(self->dir), "sdt-fixtures"));
	fx_path_of(self->pie, sizeof(self->pie), self->dir, "sdt_pie");
	fx_path_of(self->nopie, sizeof(self->nopie), self->dir, "sdt_nopie");
	ASSERT_EQ(0, fx_run("%s -O2 -fPIE -pie -o %s %s/sdt_prog.c %s/sdt_gated.c", fx_cc(),
			    self->pie, FIXTURE_SRC, FIXTURE_SRC));
	ASSERT_EQ(0, fx_run("%s -O0 -no-pie -o %s %s/sdt_prog.c %s/sdt_gated.c", fx_cc(),
			    self->nopie, FIXTURE_SRC, FIXTURE_SRC));
}

FIXTURE_TEARDOWN(sdt)
{
	if (!getenv("BFT_KEEP_FIXTURES"))
		bft_test_rmtree(self->dir);
}

/* One probe as readelf -n prints it. */
struct seen {
	char provider[64], name[64], args[512];
	uint64_t pc, semaphore;
};

static size_t readelf_notes(const char *path, struct seen *v, size_t max)
{
	char cmd[PATH_MAX + 64], line[1024];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p)) {
		char *s = line + strspn(line, " ");
		unsigned long long loc, base, sem;

		line[strcspn(line, "\n")] = 0;
		if (!strncmp(s, "Provider: ", 10) && n < max) {
			memset(&v[n], 0, sizeof(v[n]));
			snprintf(v[n++].provider, sizeof(v[0].provider), "%s", s + 10);
		} else if (n && !strncmp(s, "Name: ", 6)) {
			snprintf(v[n - 1].name, sizeof(v[0].name), "%s", s + 6);
		} else if (n && sscanf(s, "Location: %llx, Base: %llx, Semaphore: %llx",
				       &loc, &base, &sem) == 3) {
			v[n - 1].pc = loc;
			v[n - 1].semaphore = sem;
		} else if (n && !strncmp(s, "Arguments:", 10)) {
			snprintf(v[n - 1].args, sizeof(v[0].args), "%s", s + 10 + (s[10] == ' '));
		}
	}
	pclose(p);
	return n;
}

static size_t count_words(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s != ' ' && (s[1] == ' ' || !s[1]);
	return n;
}

static void check_against_readelf(struct __test_metadata *_metadata, const char *path)
{
	struct seen want[16];
	struct bft_sdt_list l;
	char err[512];
	size_t n = readelf_notes(path, want, 16);

	ASSERT_EQ(0, bft_sdt_read(path, &l, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(5, n);
	ASSERT_EQ(n, l.n);
	EXPECT_EQ(0, l.malformed);
	for (size_t i = 0; i < n; i++) {
		const struct bft_sdt_probe *p = &l.v[i];

		TH_LOG("%s:%s at %#" PRIx64 " (file offset %#" PRIx64 "), %zu args: %s",
		       p->provider, p->name, p->pc, p->offset, p->nargs, want[i].args);
		EXPECT_STREQ(want[i].provider, p->provider);
		EXPECT_STREQ(want[i].name, p->name);
		EXPECT_EQ(want[i].pc, p->pc);
		EXPECT_EQ(want[i].semaphore, p->semaphore);
		EXPECT_EQ(count_words(want[i].args), p->nargs);
		EXPECT_EQ(!!p->semaphore, !!p->sema_offset);
		EXPECT_STREQ("", p->why);
	}
	bft_sdt_free(&l);
}

TEST_F(sdt, notes_equal_readelfs)
{
	check_against_readelf(_metadata, self->pie);
	check_against_readelf(_metadata, self->nopie);
}

/* Stripped, the global one argument names is gone: that probe alone is out. */
TEST_F(sdt, a_stripped_file_loses_only_the_probe_whose_symbol_went)
{
	char stripped[PATH_MAX], err[512];
	struct bft_sdt_list l;

	fx_path_of(stripped, sizeof(stripped), self->dir, "sdt_stripped");
	ASSERT_EQ(0, fx_run("strip --strip-all -o %s %s", stripped, self->pie));
	ASSERT_EQ(0, bft_sdt_read(stripped, &l, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(5, l.n);
	for (size_t i = 0; i < l.n; i++) {
		TH_LOG("%s:%s: '%s'", l.v[i].provider, l.v[i].name, l.v[i].why);
		if (strcmp(l.v[i].name, "six")) {
			EXPECT_STREQ("", l.v[i].why);
		} else {
			EXPECT_STREQ("argument 4: symbol 'sdt_global' is not defined in the file",
				     l.v[i].why);
		}
	}
	bft_sdt_free(&l);
}

/* ---- evaluation under ptrace ---- */

struct peek_ctx {
	pid_t pid;
};

static int peek(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct peek_ctx *c = ctx;
	unsigned char *out = buf;

	for (size_t i = 0; i < len; i++) {
		long w;

		errno = 0;
		w = ptrace(PTRACE_PEEKDATA, c->pid, (void *)(addr + i), NULL);
		if (errno)
			return -errno;
		out[i] = (unsigned char)w;
	}
	return 0;
}

/* Start of the first mapping of path in pid, minus its first PT_LOAD. */
static uint64_t load_bias(pid_t pid, const char *path, uint64_t first_vaddr)
{
	char fn[64], line[PATH_MAX + 128];
	uint64_t bias = UINT64_MAX;
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)pid);
	f = fopen(fn, "r");
	if (!f)
		return bias;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, off;
		char *p = strchr(line, '/');

		line[strcspn(line, "\n")] = 0;
		if (p && !strcmp(p, path) &&
		    sscanf(line, "%llx-%*x %*s %llx", &start, &off) == 2 && !off) {
			bias = start - (first_vaddr & ~0xfffULL);
			break;
		}
	}
	fclose(f);
	return bias;
}

static void trace_values(struct __test_metadata *_metadata, const char *path,
			 uint64_t first_vaddr)
{
	struct bft_sdt_list l;
	struct peek_ctx pc;
	char err[512], line[1024], got[1024];
	int fds[2], st, hits = 0;
	uint64_t bias;
	FILE *out;
	pid_t pid;

	ASSERT_EQ(0, bft_sdt_read(path, &l, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		dup2(fds[1], 1);
		close(fds[0]);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	ASSERT_NE(NULL, out);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFSTOPPED(st));
	pc.pid = pid;
	bias = load_bias(pid, path, first_vaddr);
	ASSERT_NE(UINT64_MAX, bias);
	for (size_t i = 0; i < l.n; i++) {
		uint64_t at = bias + l.v[i].pc;
		long w;

		errno = 0;
		w = ptrace(PTRACE_PEEKTEXT, pid, (void *)at, NULL);
		ASSERT_EQ(0, errno);
		ASSERT_EQ(0x90, w & 0xff) TH_LOG("%s:%s: no nop at the site", l.v[i].provider,
						 l.v[i].name);
		ASSERT_EQ(0, ptrace(PTRACE_POKETEXT, pid, (void *)at, (void *)((w & ~0xffL) | 0xcc)));
		if (l.v[i].semaphore) {
			at = bias + l.v[i].semaphore;
			w = ptrace(PTRACE_PEEKDATA, pid, (void *)at, NULL);
			ASSERT_EQ(0, ptrace(PTRACE_POKEDATA, pid, (void *)at, (void *)(w + 1)));
		}
	}
	for (;;) {
		struct user_regs_struct regs;
		uint64_t slots[BFT_SDT_NREGS];
		const struct bft_sdt_probe *p = NULL;
		size_t len;

		ASSERT_EQ(0, ptrace(PTRACE_CONT, pid, NULL, NULL));
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		if (WIFEXITED(st))
			break;
		ASSERT_TRUE(WIFSTOPPED(st));
		ASSERT_EQ(SIGTRAP, WSTOPSIG(st));
		ASSERT_EQ(0, ptrace(PTRACE_GETREGS, pid, NULL, &regs));
		for (size_t i = 0; i < l.n; i++)
			if (bias + l.v[i].pc == regs.rip - 1)
				p = &l.v[i];
		ASSERT_NE(NULL, p) TH_LOG("a trap at %#llx, on no probe", regs.rip);
		/* the site's nop did nothing: the program goes on after it */
		_Static_assert(sizeof(regs) >= sizeof(slots), "pt_regs slots");
		memcpy(slots, &regs, sizeof(slots));
		len = (size_t)snprintf(got, sizeof(got), "%s:%s", p->provider, p->name);
		for (size_t a = 0; a < p->nargs; a++) {
			uint64_t v;

			ASSERT_EQ(0, bft_sdt_eval(&p->args[a], slots, bias, peek, &pc, &v));
			len += (size_t)snprintf(got + len, sizeof(got) - len,
						p->args[a].is_signed ? " %" PRId64 : " %" PRIu64,
						v);
		}
		ASSERT_NE(NULL, fgets(line, sizeof(line), out));
		line[strcspn(line, "\n")] = 0;
		EXPECT_STREQ(line, got);
		hits++;
	}
	EXPECT_EQ(0, WEXITSTATUS(st));
	/* 4 probes twice, and the gated one twice: its semaphore was up */
	EXPECT_EQ(10, hits);
	EXPECT_EQ(NULL, fgets(line, sizeof(line), out));
	fclose(out);
	bft_sdt_free(&l);
}

TEST_F(sdt, each_hit_evaluates_to_the_programs_values)
{
	trace_values(_metadata, self->pie, 0);
	trace_values(_metadata, self->nopie, 0x400000);
}

TEST_F(sdt, a_bad_probe_is_listed_with_its_reason)
{
	char src[PATH_MAX], exe[PATH_MAX], err[512];
	struct bft_sdt_list l;
	FILE *f;

	fx_path_of(src, sizeof(src), self->dir, "bad.c");
	fx_path_of(exe, sizeof(exe), self->dir, "bad");
	f = fopen(src, "w");
	ASSERT_NE(NULL, f);
	fputs(bad_note_src, f);
	fclose(f);
	ASSERT_EQ(0, fx_run("%s -o %s %s", fx_cc(), exe, src));
	ASSERT_EQ(0, bft_sdt_read(exe, &l, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(1, l.n);
	EXPECT_STREQ("bad", l.v[0].provider);
	EXPECT_STREQ("arg", l.v[0].name);
	EXPECT_STREQ("argument 1: '3@%eax': size 3 is not 1, 2, 4 or 8", l.v[0].why);
	EXPECT_EQ(0, l.malformed);
	bft_sdt_free(&l);
	ASSERT_EQ(-ENOEXEC, bft_sdt_read(src, &l, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "not an x86-64 ELF file"));
}

static int fake_lookup(void *ctx, const char *sym, uint64_t *addr)
{
	(void)ctx;
	if (!strcmp(sym, "twice"))
		return -ENOTUNIQ;
	if (strcmp(sym, "counter"))
		return -ENOENT;
	*addr = 0x4010;
	return 0;
}

TEST(arguments_parse_into_what_a_handler_evaluates)
{
	static const struct {
		const char *text;
		enum bft_sdt_loc loc;
		uint8_t size, base, index, scale, shift;
		bool is_signed;
		int64_t value;
	} ok[] = {
		{ "-4@%eax", BFT_SDT_REG, 4, 10, BFT_SDT_NOREG, 1, 0, true, 0 },
		{ "1@%ah", BFT_SDT_REG, 1, 10, BFT_SDT_NOREG, 1, 8, false, 0 },
		{ "2@%r12w", BFT_SDT_REG, 2, 3, BFT_SDT_NOREG, 1, 0, false, 0 },
		{ "-8@$-1", BFT_SDT_CONST, 8, BFT_SDT_NOREG, BFT_SDT_NOREG, 1, 0, true, -1 },
		{ "4@$0x10", BFT_SDT_CONST, 4, BFT_SDT_NOREG, BFT_SDT_NOREG, 1, 0, false, 16 },
		{ "-4@-20(%rbp)", BFT_SDT_MEM, 4, 4, BFT_SDT_NOREG, 1, 0, true, -20 },
		{ "8@(%rax,%rbx,8)", BFT_SDT_MEM, 8, 10, 5, 8, 0, false, 0 },
		{ "8@16(,%rcx,4)", BFT_SDT_MEM, 8, BFT_SDT_NOREG, 11, 4, 0, false, 16 },
		{ "-4@counter(%rip)", BFT_SDT_MEM, 4, BFT_SDT_BIAS, BFT_SDT_NOREG, 1, 0, true, 0x4010 },
		{ "-4@counter+8(%rip)", BFT_SDT_MEM, 4, BFT_SDT_BIAS, BFT_SDT_NOREG, 1, 0, true, 0x4018 },
		{ "4@counter", BFT_SDT_MEM, 4, BFT_SDT_BIAS, BFT_SDT_NOREG, 1, 0, false, 0x4010 },
		{ "8@0x601040", BFT_SDT_MEM, 8, BFT_SDT_NOREG, BFT_SDT_NOREG, 1, 0, false, 0x601040 },
		{ "%rdi", BFT_SDT_REG, 8, 14, BFT_SDT_NOREG, 1, 0, true, 0 },
	};
	static const char *const bad[][2] = {
		{ "3@%eax", "size 3" },
		{ "16@%rax", "size 16" },
		{ "-9223372036854775808@%rax", "size 9223372036854775808 is not" },
		{ "4@twice(%rip)", "'twice' is defined more than once" },
		{ "4@%foo", "unknown register %foo" },
		{ "4@", "no operand" },
		{ "x@%eax", "bad size" },
		{ "-4@$x", "bad constant" },
		{ "8@5(%rip)", "relative to %rip" },
		{ "8@(%rip)", "relative to %rip" },
		{ "8@(%rax,%rbx,3)", "bad scale" },
		{ "4@nosuch(%rip)", "'nosuch' is not defined" },
		{ "4@counter(%rax)", "other than %rip" },
		{ "8@%rip", "%rip is no value" },
		{ "8@(%rax", "bad memory operand" },
	};
	struct bft_sdt_arg a;
	char err[256];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ASSERT_EQ(0, bft_sdt_parse_arg(ok[i].text, &a, fake_lookup, NULL, err,
					       sizeof(err))) TH_LOG("%s: %s", ok[i].text, err);
		EXPECT_EQ(ok[i].loc, a.loc) TH_LOG("%s", ok[i].text);
		EXPECT_EQ(ok[i].size, a.size) TH_LOG("%s", ok[i].text);
		EXPECT_EQ(ok[i].is_signed, a.is_signed) TH_LOG("%s", ok[i].text);
		EXPECT_EQ(ok[i].base, a.base) TH_LOG("%s", ok[i].text);
		EXPECT_EQ(ok[i].index, a.index) TH_LOG("%s", ok[i].text);
		EXPECT_EQ(ok[i].scale, a.scale) TH_LOG("%s", ok[i].text);
		EXPECT_EQ(ok[i].shift, a.shift) TH_LOG("%s", ok[i].text);
		EXPECT_EQ(ok[i].value, a.value) TH_LOG("%s", ok[i].text);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		EXPECT_EQ(-EINVAL, bft_sdt_parse_arg(bad[i][0], &a, fake_lookup, NULL, err,
						     sizeof(err))) TH_LOG("%s", bad[i][0]);
		EXPECT_NE(NULL, strstr(err, bad[i][1])) TH_LOG("%s: said '%s'", bad[i][0], err);
	}
}

TEST(values_are_cut_to_their_size_and_extended_by_their_sign)
{
	uint64_t regs[BFT_SDT_NREGS] = { 0 }, v;
	struct bft_sdt_arg a = { .loc = BFT_SDT_REG, .base = 10, .index = BFT_SDT_NOREG };

	regs[10] = 0x11223344deadbeefULL;
	a.size = 4;
	a.is_signed = true;
	ASSERT_EQ(0, bft_sdt_eval(&a, regs, 0, NULL, NULL, &v));
	EXPECT_EQ((uint64_t)(int64_t)(int32_t)0xdeadbeef, v);
	a.is_signed = false;
	ASSERT_EQ(0, bft_sdt_eval(&a, regs, 0, NULL, NULL, &v));
	EXPECT_EQ(0xdeadbeefULL, v);
	a.size = 1;
	a.shift = 8;		/* %ah */
	ASSERT_EQ(0, bft_sdt_eval(&a, regs, 0, NULL, NULL, &v));
	EXPECT_EQ(0xbeULL, v);
	a.is_signed = true;
	ASSERT_EQ(0, bft_sdt_eval(&a, regs, 0, NULL, NULL, &v));
	EXPECT_EQ(UINT64_MAX - 0x41, v);	/* (int8_t)0xbe = -66 */
}

TEST_HARNESS_MAIN
