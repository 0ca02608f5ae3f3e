// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of bft_elf: small programs are compiled at test time with the
 * system compiler (env BFT_FIXTURE_CC, default "cc") in every way a traced
 * binary can be built, and what bft_elf computes is checked against tools
 * that share no code with it: the symbol value against nm, the bytes at
 * the computed file offset against objdump's disassembly of that address.
 *
 * The fixtures go to a fresh directory next to the test binary (under
 * build/), or under $BFT_TEST_TMPDIR, removed afterwards unless
 * $BFT_KEEP_FIXTURES is set.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbols/bft_elf.h"
/* The 6.1 harness leaves a parameter unused; not our code to change. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "bft_test.h"
#pragma GCC diagnostic pop
#include "fixture_build.h"

static const char prog_src[] =
	"#include <stdlib.h>\n"
	"int bft_fixture_data = 42;\n"
	"__attribute__((noinline, used)) int bft_fixture_add(int a, int b)\n"
	"{ return a * 3 + b + bft_fixture_data; }\n"
	"__attribute__((noinline, used)) static int bft_fixture_local(int x)\n"
	"{ return x * x - bft_fixture_data; }\n"
	"__attribute__((noinline, used)) long bft_fixture_mul(long a, long b)\n"
	"{ return a * b + bft_fixture_local((int)a); }\n"
	"int main(int argc, char **argv)\n"
	"{ (void)argv; if (bft_fixture_add(argc, bft_fixture_local(argc)) == 1234) exit(3);\n"
	"  return (int)bft_fixture_mul(argc, 2) == 77; }\n";

static const char lib_src[] =
	"__attribute__((noinline, used)) static int bft_lib_hidden(int x)\n"
	"{ return x ^ 0x5a5a; }\n"
	"int bft_lib_exported(int x)\n"
	"{ return bft_lib_hidden(x) + 1; }\n";

/* Two translation units, each with its own static bft_dup(). */
static const char dup1_src[] =
	"__attribute__((noinline, used)) static int bft_dup(int x) { return x + 1; }\n"
	"int bft_dup_one(int x) { return bft_dup(x); }\n";
static const char dup2_src[] =
	"__attribute__((noinline, used)) static int bft_dup(int x) { return x * 7; }\n"
	"int bft_dup_two(int x) { return bft_dup(x); }\n"
	"int main(int c, char **v) { (void)v; extern int bft_dup_one(int);\n"
	"  return bft_dup_one(c) + bft_dup_two(c) == 5; }\n";

/* A symbol typed as a function that lives in writable data. */
static const char datafunc_src[] =
	"__asm__(\".pushsection .data\\n\"\n"
	"        \".globl bft_data_func\\n\"\n"
	"        \".type bft_data_func, @function\\n\"\n"
	"        \"bft_data_func: .byte 0xc3, 0x90, 0x90, 0x90\\n\"\n"
	"        \".size bft_data_func, 4\\n\"\n"
	"        \".popsection\\n\");\n"
	"int main(void) { return 0; }\n";

FIXTURE(elf) {
	char dir[PATH_MAX];
};

FIXTURE_SETUP(elf)
{
	ASSERT_EQ(0, fx_tmpdir(self->dir, sizeof(self->dir), "elf-fixtures"))
		TH_LOG("mkdtemp: %s", strerror(errno));
}

FIXTURE_TEARDOWN(elf)
{
	if (!getenv("BFT_KEEP_FIXTURES"))
		bft_test_rmtree(self->dir);
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;
	int ok;

	fx_path_of(path, sizeof(path), dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* Compile dir/src into dir/out with flags. */
static int build(const char *dir, const char *out, const char *flags,
		 const char *src)
{
	return fx_run("cd '%s' && %s -O1 -w %s -o %s %s", dir, fx_cc(), flags, out, src);
}

/* The value nm (or nm -D) prints for name, or UINT64_MAX. */
static uint64_t nm_value(const char *path, const char *name, bool dynamic)
{
	char cmd[PATH_MAX + 64], line[1024];
	uint64_t v = UINT64_MAX;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s '%s' 2>/dev/null", dynamic ? "-D" : "",
		 path);
	p = popen(cmd, "r");
	if (!p)
		return v;
	while (fgets(line, sizeof(line), p)) {
		char sym[512], type;
		unsigned long long val;

		if (sscanf(line, "%llx %c %511s", &val, &type, sym) == 3 &&
		    !strcmp(sym, name))
			v = val;
	}
	pclose(p);
	return v;
}

/*
 * The code bytes objdump disassembles in [addr, addr + n).  Its lines read
 * "  addr:\tb0 b1 b2 ...\tmnemonic"; continuation lines carry only bytes.
 * Returns how many bytes were found.
 */
static size_t objdump_bytes(const char *path, uint64_t addr, uint8_t *out,
			    size_t n)
{
	char cmd[PATH_MAX + 128], line[1024];
	size_t got = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "objdump -d -w --start-address=0x%" PRIx64
		 " --stop-address=0x%" PRIx64 " '%s' 2>/dev/null",
		 addr, addr + n, path);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p)) {
		char *s = line, *end;

		while (*s == ' ')
			s++;
		strtoull(s, &end, 16);
		if (end == s || end[0] != ':' || end[1] != '\t')
			continue;
		s = end + 2;
		while (got < n) {
			unsigned long b;

			while (*s == ' ')
				s++;
			if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1]))
				break;
			b = strtoul(s, &end, 16);
			if (end != s + 2)
				break;
			out[got++] = (uint8_t)b;
			s = end;
		}
	}
	pclose(p);
	return got;
}

static size_t file_bytes(const char *path, uint64_t off, uint8_t *out,
			 size_t n)
{
	int fd = open(path, O_RDONLY);
	ssize_t r;

	if (fd < 0)
		return 0;
	r = pread(fd, out, n, (off_t)off);
	close(fd);
	return r < 0 ? 0 : (size_t)r;
}

static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };

/*
 * The checks every resolved function must pass: the address is nm's, and
 * the file holds at the offset exactly the bytes objdump shows at the
 * address; the endbr64 verdict agrees with those bytes.
 */
#define CHECK_FUNC(path, f, dynamic) do {					\
	uint8_t _want[16], _have[16];						\
	size_t _n, _len = (f)->size < 16 ? (size_t)(f)->size : 16;		\
	EXPECT_EQ(nm_value(path, (f)->name, dynamic), (f)->addr);		\
	_n = objdump_bytes(path, (f)->addr, _want, _len);			\
	ASSERT_EQ(_len, _n) TH_LOG("objdump shows no code at 0x%" PRIx64,	\
				(f)->addr);					\
	ASSERT_EQ(_n, file_bytes(path, (f)->offset, _have, _n));		\
	EXPECT_EQ(0, memcmp(_want, _have, _n))					\
		TH_LOG("%s: bytes at offset 0x%" PRIx64 " differ from "	\
		       "objdump at 0x%" PRIx64, (f)->name, (f)->offset,		\
		       (f)->addr);						\
	EXPECT_EQ(!memcmp(_have, endbr64, 4), (f)->endbr64);			\
	EXPECT_EQ((f)->offset + ((f)->endbr64 ? 4 : 0), (f)->probe_offset);	\
} while (0)

TEST_F(elf, cet_pie_function_starts_with_endbr64)
{
	struct bft_elf_func f;
	struct bft_elf *e;
	char path[PATH_MAX], err[256];

	ASSERT_EQ(0, write_file(self->dir, "prog.c", prog_src));
	ASSERT_EQ(0, build(self->dir, "cet-pie", "-fcf-protection=full -fPIE -pie",
			   "prog.c"));
	fx_path_of(path, sizeof(path), self->dir, "cet-pie");
	ASSERT_EQ(0, bft_elf_open(path, &e, err, sizeof(err))) TH_LOG("%s", err);

	ASSERT_EQ(0, bft_elf_find_func(e, "bft_fixture_add", &f))
		TH_LOG("%s", bft_elf_errmsg(e));
	EXPECT_TRUE(f.endbr64);
	EXPECT_FALSE(f.dynamic);
	EXPECT_EQ(STB_GLOBAL, f.bind);
	CHECK_FUNC(path, &f, false);

	ASSERT_EQ(0, bft_elf_find_func(e, "bft_fixture_local", &f))
		TH_LOG("%s", bft_elf_errmsg(e));
	EXPECT_TRUE(f.endbr64);
	EXPECT_EQ(STB_LOCAL, f.bind);
	CHECK_FUNC(path, &f, false);
	bft_elf_close(e);
}

TEST_F(elf, nocet_nopie_offset_is_translated)
{
	struct bft_elf_func f;
	struct bft_elf *e;
	char path[PATH_MAX], err[256];

	ASSERT_EQ(0, write_file(self->dir, "prog.c", prog_src));
	ASSERT_EQ(0, build(self->dir, "plain", "-fcf-protection=none -fno-pie -no-pie",
			   "prog.c"));
	fx_path_of(path, sizeof(path), self->dir, "plain");
	ASSERT_EQ(0, bft_elf_open(path, &e, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, bft_elf_find_func(e, "bft_fixture_mul", &f))
		TH_LOG("%s", bft_elf_errmsg(e));
	EXPECT_FALSE(f.endbr64);
	EXPECT_EQ(f.offset, f.probe_offset);
	/* A non-PIE is linked high: the address is no file offset. */
	EXPECT_NE(f.addr, f.offset);
	CHECK_FUNC(path, &f, false);
	bft_elf_close(e);
}

TEST_F(elf, static_binary_resolves_own_and_libc_functions)
{
	struct bft_elf_func f;
	struct bft_elf *e;
	char path[PATH_MAX], err[256];

	ASSERT_EQ(0, write_file(self->dir, "prog.c", prog_src));
	if (build(self->dir, "static", "-static -fcf-protection=full", "prog.c"))
		SKIP(return, "no static libc to link against");
	fx_path_of(path, sizeof(path), self->dir, "static");
	ASSERT_EQ(0, bft_elf_open(path, &e, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, bft_elf_find_func(e, "bft_fixture_add", &f))
		TH_LOG("%s", bft_elf_errmsg(e));
	EXPECT_TRUE(f.endbr64);
	EXPECT_NE(f.addr, f.offset);
	CHECK_FUNC(path, &f, false);
	ASSERT_EQ(0, bft_elf_find_func(e, "exit", &f)) TH_LOG("%s", bft_elf_errmsg(e));
	CHECK_FUNC(path, &f, false);
	bft_elf_close(e);
}

TEST_F(elf, stripped_shared_library_resolves_through_dynsym)
{
	struct bft_elf_func f;
	struct bft_elf *e;
	char path[PATH_MAX], full[PATH_MAX], err[256];

	ASSERT_EQ(0, write_file(self->dir, "lib.c", lib_src));
	ASSERT_EQ(0, build(self->dir, "libfix.so",
			   "-shared -fPIC -fcf-protection=full", "lib.c"));
	ASSERT_EQ(0, fx_run("cd '%s' && strip --strip-all -o libfix-stripped.so libfix.so",
			    self->dir));
	fx_path_of(path, sizeof(path), self->dir, "libfix-stripped.so");
	fx_path_of(full, sizeof(full), self->dir, "libfix.so");
	/* The premise: strip removed .symtab and kept .dynsym. */
	ASSERT_EQ(0, fx_run("! readelf -SW '%s' | grep -q '\\.symtab'", path));
	ASSERT_EQ(0, fx_run("readelf -SW '%s' | grep -q '\\.dynsym'", path));

	ASSERT_EQ(0, bft_elf_open(path, &e, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, bft_elf_find_func(e, "bft_lib_exported", &f))
		TH_LOG("%s", bft_elf_errmsg(e));
	EXPECT_TRUE(f.dynamic);
	EXPECT_TRUE(f.endbr64);
	CHECK_FUNC(path, &f, true);
	/* The static helper was only in .symtab. */
	EXPECT_EQ(-ENOENT, bft_elf_find_func(e, "bft_lib_hidden", &f));
	EXPECT_NE(NULL, strstr(bft_elf_errmsg(e), "stripped"))
		TH_LOG("%s", bft_elf_errmsg(e));
	bft_elf_close(e);

	/* Unstripped, the same library resolves both, from .symtab. */
	ASSERT_EQ(0, bft_elf_open(full, &e, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, bft_elf_find_func(e, "bft_lib_hidden", &f))
		TH_LOG("%s", bft_elf_errmsg(e));
	EXPECT_FALSE(f.dynamic);
	CHECK_FUNC(full, &f, false);
	ASSERT_EQ(0, bft_elf_find_func(e, "bft_lib_exported", &f));
	EXPECT_FALSE(f.dynamic);
	bft_elf_close(e);
}

struct seen {
	char names[16][64];
	uint64_t offsets[16];
	bool dynamic[16];
	size_t n;
	int stop_with;
};

static int remember(const struct bft_elf_func *f, void *arg)
{
	struct seen *s = arg;

	if (s->n < 16) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", f->name);
		s->offsets[s->n] = f->offset;
		s->dynamic[s->n] = f->dynamic;
	}
	s->n++;
	return s->stop_with;
}

static int find_seen(const struct seen *s, const char *name)
{
	int hits = -1;

	for (size_t i = 0; i < s->n && i < 16; i++)
		if (!strcmp(s->names[i], name))
			hits = hits < 0 ? (int)i : -2;
	return hits;
}

TEST_F(elf, glob_reports_each_matching_function_once)
{
	struct bft_elf_func f;
	struct seen s = { 0 };
	struct bft_elf *e;
	char path[PATH_MAX], err[256];
	static const char *const names[] = { "bft_fixture_add", "bft_fixture_local",
					      "bft_fixture_mul" };
	size_t count = 0;

	ASSERT_EQ(0, write_file(self->dir, "prog.c", prog_src));
	ASSERT_EQ(0, build(self->dir, "cet-pie", "-fcf-protection=full -fPIE -pie",
			   "prog.c"));
	fx_path_of(path, sizeof(path), self->dir, "cet-pie");
	ASSERT_EQ(0, bft_elf_open(path, &e, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, bft_elf_for_each_func(e, "bft_fixture_*", remember, &s, &count));
	EXPECT_EQ(3U, s.n);
	EXPECT_EQ(3U, count);
	for (size_t i = 0; i < 3; i++) {
		int at = find_seen(&s, names[i]);

		ASSERT_GE(at, 0) TH_LOG("%s reported %s", names[i],
					at == -1 ? "never" : "twice");
		ASSERT_EQ(0, bft_elf_find_func(e, names[i], &f));
		EXPECT_EQ(f.offset, s.offsets[at]);
	}
	/* The data object matches the glob but is no function. */
	EXPECT_EQ(-1, find_seen(&s, "bft_fixture_data"));

	/* A non-zero callback return stops the walk and is returned. */
	memset(&s, 0, sizeof(s));
	s.stop_with = 7;
	EXPECT_EQ(7, bft_elf_for_each_func(e, NULL, remember, &s, &count));
	EXPECT_EQ(1U, s.n);
	EXPECT_EQ(1U, count);
	bft_elf_close(e);
}

TEST_F(elf, dynsym_copies_of_symtab_functions_are_skipped)
{
	struct seen s = { 0 };
	struct bft_elf *e;
	char path[PATH_MAX], err[256];
	size_t count;
	int at;

	ASSERT_EQ(0, write_file(self->dir, "lib.c", lib_src));
	ASSERT_EQ(0, build(self->dir, "libfix.so", "-shared -fPIC", "lib.c"));
	fx_path_of(path, sizeof(path), self->dir, "libfix.so");
	ASSERT_EQ(0, bft_elf_open(path, &e, err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, bft_elf_for_each_func(e, "bft_lib_*", remember, &s, &count));
	EXPECT_EQ(2U, s.n);
	at = find_seen(&s, "bft_lib_exported");
	ASSERT_GE(at, 0);
	EXPECT_FALSE(s.dynamic[at]);
	bft_elf_close(e);
	/* Stripped: only the exported one, now from .dynsym. */
	ASSERT_EQ(0, fx_run("cd '%s' && strip --strip-all libfix.so", self->dir));
	ASSERT_EQ(0, bft_elf_open(path, &e, err, sizeof(err))) TH_LOG("%s", err);
	memset(&s, 0, sizeof(s));
	ASSERT_EQ(0, bft_elf_for_each_func(e, "bft_lib_*", remember, &s, &count));
	EXPECT_EQ(1U, s.n);
	EXPECT_STREQ("bft_lib_exported", s.names[0]);
	EXPECT_TRUE(s.dynamic[0]);
	bft_elf_close(e);
}

TEST_F(elf, same_named_locals_are_ambiguous)
{
	struct bft_elf_func f;
	struct bft_elf *e;
	char path[PATH_MAX], err[256];

	ASSERT_EQ(0, write_file(self->dir, "dup1.c", dup1_src));
	ASSERT_EQ(0, write_file(self->dir, "dup2.c", dup2_src));
	ASSERT_EQ(0, build(self->dir, "dup", "-fcf-protection=none", "dup1.c dup2.c"));
	fx_path_of(path, sizeof(path), self->dir, "dup");
	/* The premise: two local functions of that name. */
	ASSERT_EQ(0, fx_run("test \"$(nm '%s' | grep -c ' t bft_dup$')\" = 2", path));
	ASSERT_EQ(0, bft_elf_open(path, &e, err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_EQ(-ENOTUNIQ, bft_elf_find_func(e, "bft_dup", &f));
	EXPECT_NE(NULL, strstr(bft_elf_errmsg(e), "bft_dup"));
	ASSERT_EQ(0, bft_elf_find_func(e, "bft_dup_two", &f));
	CHECK_FUNC(path, &f, false);
	bft_elf_close(e);
}

TEST_F(elf, function_outside_executable_segment_is_rejected)
{
	struct bft_elf_func f;
	struct bft_elf *e;
	char path[PATH_MAX], err[256];

	ASSERT_EQ(0, write_file(self->dir, "datafunc.c", datafunc_src));
	ASSERT_EQ(0, build(self->dir, "datafunc", "", "datafunc.c"));
	fx_path_of(path, sizeof(path), self->dir, "datafunc");
	ASSERT_EQ(0, fx_run("nm '%s' | grep -q ' D bft_data_func$'", path));
	ASSERT_EQ(0, bft_elf_open(path, &e, err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_EQ(-EINVAL, bft_elf_find_func(e, "bft_data_func", &f));
	EXPECT_NE(NULL, strstr(bft_elf_errmsg(e), "not in an executable segment"))
		TH_LOG("%s", bft_elf_errmsg(e));
	bft_elf_close(e);
}

TEST_F(elf, missing_functions_and_data_objects_are_not_found)
{
	struct bft_elf_func f;
	struct bft_elf *e;
	char path[PATH_MAX], err[256];

	ASSERT_EQ(0, write_file(self->dir, "prog.c", prog_src));
	ASSERT_EQ(0, build(self->dir, "prog", "", "prog.c"));
	fx_path_of(path, sizeof(path), self->dir, "prog");
	ASSERT_EQ(0, bft_elf_open(path, &e, err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_EQ(-ENOENT, bft_elf_find_func(e, "bft_no_such_function", &f));
	EXPECT_NE(NULL, strstr(bft_elf_errmsg(e), "no function 'bft_no_such_function'"))
		TH_LOG("%s", bft_elf_errmsg(e));
	EXPECT_EQ(-ENOENT, bft_elf_find_func(e, "bft_fixture_data", &f));
	/* Imported from libc: undefined here. */
	EXPECT_EQ(-ENOENT, bft_elf_find_func(e, "exit", &f));
	bft_elf_close(e);
}

TEST_F(elf, non_elf_inputs_are_rejected_clearly)
{
	struct bft_elf *e = (struct bft_elf *)&e;
	char path[PATH_MAX], err[256];

	ASSERT_EQ(0, write_file(self->dir, "prog.c", prog_src));
	fx_path_of(path, sizeof(path), self->dir, "prog.c");
	EXPECT_EQ(-ENOEXEC, bft_elf_open(path, &e, err, sizeof(err)));
	EXPECT_EQ(NULL, e);
	EXPECT_NE(NULL, strstr(err, "not an ELF file")) TH_LOG("%s", err);

	ASSERT_EQ(0, fx_run("cd '%s' && %s -c -o prog.o prog.c", self->dir, fx_cc()));
	fx_path_of(path, sizeof(path), self->dir, "prog.o");
	EXPECT_EQ(-ENOEXEC, bft_elf_open(path, &e, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "neither an executable nor a shared object"))
		TH_LOG("%s", err);

	fx_path_of(path, sizeof(path), self->dir, "no-such-file");
	EXPECT_EQ(-ENOENT, bft_elf_open(path, &e, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "no-such-file")) TH_LOG("%s", err);

	EXPECT_EQ(-EISDIR, bft_elf_open(self->dir, &e, NULL, 0));
}

TEST_HARNESS_MAIN
