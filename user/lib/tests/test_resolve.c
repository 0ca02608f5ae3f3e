// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of bft_resolve, bft_pattern, bft_maps and bft_demangle.
 *
 * The fixture programs of tests/resolve_fixtures/ are built at test time by
 * its build.sh (C, PIE + shared library, -fcf-protection, static,
 * stripped to .dynsym, separate debug file, C++) into resolve-fixtures/
 * next to the test binary; a fresh build is reused.  What the resolver says
 * is checked against what shares no code with it:
 *   - the number of functions against nm (distinct addresses of text
 *     symbols with a size; gcc's cold fragments apart),
 *   - the bytes at each computed file offset against the bytes the fixture
 *     process itself finds at the function's address ("X bytes" mode),
 *   - endbr64 placement against the bytes of the file.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libelf.h>
#include <linux/bftrace.h>

#include "symbols/bft_demangle.h"
#include "symbols/bft_entry.h"
#include "symbols/bft_hooks.h"
#include "symbols/bft_maps.h"
#include "symbols/bft_pattern.h"
#include "symbols/bft_resolve.h"
#include "symbols/bft_symclass.h"
/* The 6.1 harness leaves a parameter unused; not our code to change. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

static char fx_dir[PATH_MAX];

static void fx_path(char *buf, size_t len, const char *name)
{
	if ((size_t)snprintf(buf, len, "%s/%s", fx_dir, name) >= len)
		abort();
}

/* Build (or reuse) the fixtures; returns 0 or -1. */
static int fixtures(void)
{
	char exe[PATH_MAX], src[PATH_MAX], cmd[3 * PATH_MAX], stamp[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (fx_dir[0])
		return 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	snprintf(fx_dir, sizeof(fx_dir), "%s/resolve-fixtures", dirname(exe));
	snprintf(src, sizeof(src), "%s", __FILE__);
	snprintf(cmd, sizeof(cmd), "sh '%s/resolve_fixtures/build.sh' '%s' >&2",
		 dirname(src), fx_dir);
	fx_path(stamp, sizeof(stamp), "stamp");
	/* Under valgrind every child is traced too: reuse a finished build. */
	if (getenv("BFT_TEST_SLOW") && !stat(stamp, &st))
		return 0;
	if (system(cmd) != 0) {
		fx_dir[0] = '\0';
		return -1;
	}
	return 0;
}

static int load(struct bft_object *o, const char *name,
		const struct bft_resolve_opts *opts)
{
	char p[PATH_MAX];
	char err[512] = "";
	int rc;

	fx_path(p, sizeof(p), name);
	rc = bft_object_load(o, p, p, opts, err, sizeof(err));
	if (rc)
		fprintf(stderr, "# load %s: %s\n", name, err);
	return rc;
}

static const struct bft_func *find(const struct bft_object *o, const char *name)
{
	for (size_t i = 0; i < o->nfuncs; i++)
		for (uint32_t k = 0; k < o->funcs[i].nnames; k++) {
			const struct bft_fname *n = &o->funcs[i].names[k];

			if (!strcmp(n->raw, name) ||
			    (n->demangled && !strcmp(n->demangled, name)))
				return &o->funcs[i];
		}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Distinct addresses of sized text symbols (T t W w) in an nm -S listing:
 * of cold fragments ("NAME.cold", "NAME.cold.N") when cold, else of the
 * others.
 */
static long nm_count(const char *listing, bool cold)
{
	char p[PATH_MAX], line[4096];
	uint64_t *addrs = NULL;
	size_t n = 0, cap = 0;
	long distinct = 0;
	FILE *f;

	fx_path(p, sizeof(p), listing);
	f = fopen(p, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr, size;
		char type, name[1024];

		if (sscanf(line, "%llx %llx %c %1023s", &addr, &size, &type,
			   name) != 4 || !size || !strchr("TtWw", type))
			continue;
		/* the name as the symbol table has it, without @VERSION */
		if (strchr(name, '@'))
			*strchr(name, '@') = '\0';
		if (cold != (strstr(name, ".cold") &&
			     (!strcmp(strstr(name, ".cold"), ".cold") ||
			      !strncmp(strstr(name, ".cold"), ".cold.", 6))))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			addrs = realloc(addrs, cap * sizeof(*addrs));
			if (!addrs)
				abort();
		}
		addrs[n++] = addr;
	}
	fclose(f);
	qsort(addrs, n, sizeof(*addrs), cmp_u64);
	for (size_t i = 0; i < n; i++)
		distinct += !i || addrs[i] != addrs[i - 1];
	free(addrs);
	return distinct;
}

static long nm_functions(const char *listing)
{
	return nm_count(listing, false);
}

static int hexval(int c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

/*
 * For each "name hex" line of X.bytes: the function is found in one of the
 * objects (or, unless need_all, is absent), and the file holds those bytes
 * at its offset.  Returns the
 * number of lines checked, or -1 (with a message) on the first mismatch.
 */
static int check_bytes(const char *listing, struct bft_object *objs, size_t nobj,
		       bool need_all)
{
	char p[PATH_MAX], line[1024];
	int checked = 0;
	FILE *f;

	fx_path(p, sizeof(p), listing);
	f = fopen(p, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');
		unsigned char want[16], got[16];
		const struct bft_func *fn = NULL;
		size_t k;
		int fd;

		if (!sp || strlen(sp + 1) < 32)
			continue;
		*sp = '\0';
		for (int i = 0; i < 16; i++)
			want[i] = (unsigned char)(hexval(sp[1 + 2 * i]) << 4 |
						  hexval(sp[2 + 2 * i]));
		for (k = 0; k < nobj && !fn; k++)
			fn = find(&objs[k], line);
		if (!fn && !need_all)
			continue;
		if (!fn) {
			fprintf(stderr, "# %s: no function %s\n", listing, line);
			checked = -1;
			break;
		}
		k--;
		fd = open(objs[k].open_path, O_RDONLY);
		if (fd < 0 || pread(fd, got, sizeof(got), (off_t)fn->offset) != 16 ||
		    memcmp(got, want, sizeof(want))) {
			fprintf(stderr, "# %s: %s: file bytes at offset %#llx differ from memory\n",
				listing, line, (unsigned long long)fn->offset);
			checked = -1;
			if (fd >= 0)
				close(fd);
			break;
		}
		close(fd);
		checked++;
	}
	fclose(f);
	return checked;
}

FIXTURE(fx) {
	struct bft_object o[2];
};

FIXTURE_SETUP(fx)
{
	memset(self->o, 0, sizeof(self->o));
	ASSERT_EQ(0, fixtures()) TH_LOG("building the fixtures failed");
}

FIXTURE_TEARDOWN(fx)
{
	bft_object_free(&self->o[0]);
	bft_object_free(&self->o[1]);
}

TEST_F(fx, c_executable_counts_and_offsets)
{
	ASSERT_EQ(0, load(&self->o[0], "fx_c", NULL));
	EXPECT_TRUE(self->o[0].has_symtab);
	EXPECT_EQ(nm_functions("fx_c.nm"), (long)self->o[0].nfuncs);
	EXPECT_EQ(6, check_bytes("fx_c.bytes", self->o, 1, true));
}

TEST_F(fx, pie_and_its_library_counts_and_offsets)
{
	ASSERT_EQ(0, load(&self->o[0], "fx_pie", NULL));
	ASSERT_EQ(0, load(&self->o[1], "libfx.so", NULL));
	EXPECT_EQ(nm_functions("fx_pie.nm"), (long)self->o[0].nfuncs);
	EXPECT_EQ(nm_functions("libfx.so.nm"), (long)self->o[1].nfuncs);
	EXPECT_EQ(8, check_bytes("fx_pie.bytes", self->o, 2, true));
}

TEST_F(fx, static_executable_counts_and_offsets)
{
	ASSERT_EQ(0, load(&self->o[0], "fx_static", NULL));
	EXPECT_EQ(nm_functions("fx_static.nm"), (long)self->o[0].nfuncs);
	EXPECT_GT(self->o[0].nfuncs, 500);	/* libc came along */
	EXPECT_EQ(6, check_bytes("fx_static.bytes", self->o, 1, true));
}

TEST_F(fx, stripped_executable_resolves_through_dynsym)
{
	const struct bft_func *f, *g;

	ASSERT_EQ(0, load(&self->o[0], "fx_stripped", NULL));
	ASSERT_EQ(0, load(&self->o[1], "fx_stripped.full", NULL));
	EXPECT_FALSE(self->o[0].has_symtab);
	EXPECT_EQ(NULL, self->o[0].debug_path);
	EXPECT_EQ(nm_functions("fx_stripped.nmd"), (long)self->o[0].nfuncs);
	/* the local function is gone with .symtab */
	EXPECT_EQ(NULL, find(&self->o[0], "fx_local_helper"));
	f = find(&self->o[0], "foo_slow");
	g = find(&self->o[1], "foo_slow");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, g);
	EXPECT_EQ(g->offset, f->offset);
	EXPECT_EQ(BFT_SRC_DYNSYM, f->src);
	EXPECT_EQ(5, check_bytes("fx_stripped.bytes", self->o, 1, false));
}

TEST_F(fx, cet_functions_are_probed_after_endbr64)
{
	struct bft_resolve_opts off = { .no_endbr = true };
	unsigned char head[4];
	const struct bft_func *f;
	size_t with = 0;
	int fd;

	ASSERT_EQ(0, load(&self->o[0], "fx_cet", NULL));
	fd = open(self->o[0].open_path, O_RDONLY);
	ASSERT_LE(0, fd);
	for (size_t i = 0; i < self->o[0].nfuncs; i++) {
		f = &self->o[0].funcs[i];
		ASSERT_EQ(4, pread(fd, head, 4, (off_t)f->offset));
		EXPECT_EQ(!memcmp(head, "\xf3\x0f\x1e\xfa", 4) && f->size > 4,
			  f->endbr64);
		EXPECT_EQ(f->offset + (f->endbr64 ? 4 : 0), f->probe_offset);
		with += f->endbr64;
	}
	close(fd);
	f = find(&self->o[0], "foo_slow");
	ASSERT_NE(NULL, f);
	EXPECT_TRUE(f->endbr64);
	EXPECT_GT(with, 5);
	bft_object_free(&self->o[0]);

	ASSERT_EQ(0, load(&self->o[0], "fx_cet", &off));
	f = find(&self->o[0], "foo_slow");
	ASSERT_NE(NULL, f);
	EXPECT_TRUE(f->endbr64);
	EXPECT_EQ(f->offset, f->probe_offset);

	/* and a build without CET has no endbr64 to skip */
	ASSERT_EQ(0, load(&self->o[1], "fx_c", NULL));
	f = find(&self->o[1], "foo_slow");
	ASSERT_NE(NULL, f);
	EXPECT_FALSE(f->endbr64);
	EXPECT_EQ(f->offset, f->probe_offset);
}

/* What the kernel emulates, by the bytes (bft_entry.h): the place of a move. */
static bool emulated_at(const unsigned char *b)
{
	if (b[0] == 0xf2)
		b++;
	return b[0] == 0x90 || (b[0] >= 0x50 && b[0] <= 0x57) ||
	       (b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57) ||
	       b[0] == 0xeb || b[0] == 0xe9 || b[0] == 0xe8 ||
	       (b[0] >= 0x70 && b[0] <= 0x7f) ||
	       (b[0] == 0x0f && b[1] >= 0x80 && b[1] <= 0x8f);
}

/*
 * A plan moves the probes of its picks onto emulated instructions where
 * the rule allows, says why elsewhere, leaves the exception hooks' functions
 * past endbr64, and with no_endbr puts every probe on the first byte.  The
 * static binary brings libc's -O2 code and its hand-written functions.
 */
TEST_F(fx, plans_move_entry_probes_off_single_step)
{
	struct bft_resolve_opts off = { .no_endbr = true };
	const char *pats[] = { "*" };
	size_t moved = 0, hooks = 0;
	char path[PATH_MAX], err[512];
	const char *pv[] = { path };
	struct bft_patterns ps;
	struct bft_plan pl;
	int fd;

	fx_path(path, sizeof(path), "fx_static");
	ASSERT_EQ(0, bft_patterns_init(&ps, pats, 1, false, err, sizeof(err)));
	ASSERT_EQ(0, bft_plan_files(&pl, pv, 1, &ps, NULL, err, sizeof(err)));
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_LT(100, pl.npicks);
	for (size_t i = 0; i < pl.npicks; i++) {
		const struct bft_func *f = &pl.objs[0].funcs[pl.picks[i].func];
		uint64_t skip = f->probe_offset - f->offset;
		unsigned char b[2];

		ASSERT_EQ(2, pread(fd, b, 2, (off_t)f->probe_offset));
		ASSERT_NE(BFT_ENTRY_OFF, f->entry_rule);
		if (f->entry_rule == BFT_ENTRY_MOVED) {
			moved++;
			EXPECT_LT(f->endbr64 ? 4u : 0u, skip);
			/* at most 8 instructions of at most 15 bytes */
			EXPECT_GE(15u * BFT_ENTRY_MAX_WALK + 4, skip);
			EXPECT_TRUE(emulated_at(b)) {
				TH_LOG("%s: moved onto %02x %02x", bft_func_name(f), b[0], b[1]);
			}
			continue;
		}
		hooks += f->entry_rule == BFT_ENTRY_HOOK;
		EXPECT_TRUE(skip == 0 || (skip == 4 && f->endbr64)) {
			TH_LOG("%s: %s at +%llu", bft_func_name(f),
			       bft_entry_rule_name(f->entry_rule),
			       (unsigned long long)skip);
		}
		if (f->entry_rule == BFT_ENTRY_AT_START)
			EXPECT_TRUE(emulated_at(b)) {
				TH_LOG("%s: at the start on %02x %02x", bft_func_name(f), b[0], b[1]);
			}
	}
	close(fd);
	EXPECT_LT(20u, moved);
	EXPECT_LT(0u, hooks);
	bft_plan_free(&pl);

	ASSERT_EQ(0, bft_plan_files(&pl, pv, 1, &ps, &off, err, sizeof(err)));
	for (size_t i = 0; i < pl.npicks; i++) {
		const struct bft_func *f = &pl.objs[0].funcs[pl.picks[i].func];

		EXPECT_EQ(BFT_ENTRY_OFF, f->entry_rule);
		EXPECT_EQ(f->offset, f->probe_offset);
	}
	bft_plan_free(&pl);
	bft_patterns_free(&ps);
}

TEST_F(fx, aliases_are_one_function_with_every_name)
{
	const struct bft_func *a, *b;

	ASSERT_EQ(0, load(&self->o[0], "fx_c", NULL));
	a = find(&self->o[0], "bar");
	b = find(&self->o[0], "bar_alias");
	ASSERT_NE(NULL, a);
	EXPECT_EQ(a, b);
	EXPECT_EQ(2, a->nnames);
	EXPECT_STREQ("bar", bft_func_name(a));

	ASSERT_EQ(0, load(&self->o[1], "libfx.so", NULL));
	a = find(&self->o[1], "fxlib_mul_alias");
	ASSERT_NE(NULL, a);
	EXPECT_STREQ("fxlib_mul", bft_func_name(a));
	/* .dynsym repeats the exported names of .symtab: merged as well */
	EXPECT_EQ(BFT_SRC_SYMTAB | BFT_SRC_DYNSYM, a->src);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Static glibc has static functions of one name in several files
 * (free_mem, check_match, ...): each must show under a name of its own,
 * its offset added, or a trace would merge them.  Patterns still match
 * the plain name.
 */
TEST_F(fx, functions_that_share_a_name_get_names_of_their_own)
{
	const struct bft_object *o;
	const char **names;
	size_t i, shared = 0;

	ASSERT_EQ(0, load(&self->o[0], "fx_static", NULL));
	o = &self->o[0];
	names = calloc(o->nfuncs, sizeof(*names));
	ASSERT_NE(NULL, names);
	for (i = 0; i < o->nfuncs; i++) {
		names[i] = bft_func_name(&o->funcs[i]);
		shared += o->funcs[i].unique != NULL;
	}
	qsort(names, o->nfuncs, sizeof(*names), cmp_str);
	for (i = 1; i < o->nfuncs; i++)
		EXPECT_STRNE(names[i - 1], names[i]);
	free(names);
	/* the fixture has what this test is about */
	EXPECT_LT(1u, shared);
	for (i = 0; i < o->nfuncs; i++) {
		const struct bft_func *f = &o->funcs[i];
		char want[512];

		if (!f->unique)
			continue;
		snprintf(want, sizeof(want), "%s[%#" PRIx64 "]",
			 f->names[0].raw, f->offset);
		EXPECT_STREQ(want, f->unique);
	}
}

TEST_F(fx, plt_stubs_are_never_functions)
{
	ASSERT_EQ(0, load(&self->o[0], "fx_pie", NULL));
	/* fx_pie calls fxlib_add through its PLT; only libfx.so defines it */
	EXPECT_EQ(NULL, find(&self->o[0], "fxlib_add"));
	EXPECT_EQ(NULL, find(&self->o[0], "printf"));
}

TEST_F(fx, debug_file_found_by_debuglink_and_by_build_id)
{
	char dir[PATH_MAX];
	struct bft_resolve_opts opts = { .debug_dir = "/nonexistent" };
	const struct bft_func *f, *g;

	/* .gnu_debuglink: fx_dbg.debug next to fx_dbg */
	ASSERT_EQ(0, load(&self->o[0], "fx_dbg", &opts));
	ASSERT_NE(NULL, self->o[0].debug_path);
	EXPECT_NE(NULL, strstr(self->o[0].debug_path, "fx_dbg.debug"));
	EXPECT_EQ(nm_functions("fx_dbg.full.nm"), (long)self->o[0].nfuncs);
	f = find(&self->o[0], "fx_local_helper");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(BFT_SRC_DEBUG, f->src);
	EXPECT_EQ(6, check_bytes("fx_dbg.bytes", self->o, 1, true));

	/* with no debug files looked for, only .dynsym remains */
	opts.no_debug = true;
	ASSERT_EQ(0, load(&self->o[1], "fx_dbg", &opts));
	EXPECT_EQ(NULL, find(&self->o[1], "fx_local_helper"));
	bft_object_free(&self->o[1]);

	/* build-id: DEBUG_DIR/.build-id/xx/rest.debug (fx_dbg2 has no
	 * debuglink, so only the build-id can find it) */
	fx_path(dir, sizeof(dir), "dbgroot");
	opts.no_debug = false;
	opts.debug_dir = dir;
	ASSERT_EQ(0, load(&self->o[1], "fx_dbg2", &opts));
	ASSERT_NE(NULL, self->o[1].debug_path);
	EXPECT_NE(NULL, strstr(self->o[1].debug_path, "/.build-id/"));
	g = find(&self->o[1], "fx_local_helper");
	ASSERT_NE(NULL, g);
	EXPECT_EQ(f->offset, g->offset);
	bft_object_free(&self->o[1]);

	/* a debug file of another build under that name is refused */
	fx_path(dir, sizeof(dir), "dbgbad");
	ASSERT_EQ(0, load(&self->o[1], "fx_dbg2", &opts));
	EXPECT_EQ(NULL, self->o[1].debug_path);
	EXPECT_EQ(NULL, find(&self->o[1], "fx_local_helper"));
}

TEST_F(fx, cpp_names_are_demangled_and_matched)
{
	const struct bft_func *f;

	ASSERT_EQ(0, load(&self->o[0], "fx_cpp", NULL));
	EXPECT_EQ(nm_functions("fx_cpp.nm"), (long)self->o[0].nfuncs);
	EXPECT_EQ(3, check_bytes("fx_cpp.bytes", self->o, 1, true));
	f = find(&self->o[0], "ns::add(int, int)");
	ASSERT_NE(NULL, f);
	EXPECT_STREQ("_ZN2ns3addEii", f->names[0].raw);
	EXPECT_STREQ("ns::add(int, int)", bft_func_name(f));
	EXPECT_NE(NULL, find(&self->o[0], "ns::add(double, double)"));
	EXPECT_NE(NULL, find(&self->o[0], "ns::Square::scale(int)"));
	EXPECT_NE(NULL, find(&self->o[0], "ns::Square::scale(double)"));
	EXPECT_NE(NULL, find(&self->o[0], "ns::Square::area() const"));
	/* the complete and base object constructors are one function */
	f = find(&self->o[0], "_ZN2ns6SquareC1Ei");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(f, find(&self->o[0], "_ZN2ns6SquareC2Ei"));
}

static const struct bft_func *find_left_out(const struct bft_object *o,
					    const char *name)
{
	for (size_t i = 0; i < o->nleft_out; i++)
		for (uint32_t k = 0; k < o->left_out[i].nnames; k++)
			if (!strcmp(o->left_out[i].names[k].raw, name))
				return &o->left_out[i];
	return NULL;
}

TEST(symbol_classes_by_name)
{
	EXPECT_TRUE(bft_sym_is_cold_fragment("cf_work.cold"));
	EXPECT_TRUE(bft_sym_is_cold_fragment("cf_work.cold.12"));
	EXPECT_TRUE(bft_sym_is_cold_fragment("_Z3fooi.part.0.cold"));
	EXPECT_TRUE(bft_sym_is_cold_fragment("a.cold.x.cold"));
	EXPECT_FALSE(bft_sym_is_cold_fragment("cf_work"));
	EXPECT_FALSE(bft_sym_is_cold_fragment(".cold"));
	EXPECT_FALSE(bft_sym_is_cold_fragment("x.cold."));
	EXPECT_FALSE(bft_sym_is_cold_fragment("x.cold.1a"));
	EXPECT_FALSE(bft_sym_is_cold_fragment("x.coldstart"));
	EXPECT_FALSE(bft_sym_is_cold_fragment("x.part.0"));
	EXPECT_FALSE(bft_sym_is_cold_fragment("x.cold_path"));

	EXPECT_TRUE(bft_sym_returns_twice("setjmp"));
	EXPECT_TRUE(bft_sym_returns_twice("_setjmp"));
	EXPECT_TRUE(bft_sym_returns_twice("__sigsetjmp"));
	EXPECT_TRUE(bft_sym_returns_twice("sigsetjmp"));
	EXPECT_TRUE(bft_sym_returns_twice("vfork"));
	EXPECT_TRUE(bft_sym_returns_twice("__vfork"));
	EXPECT_TRUE(bft_sym_returns_twice("getcontext"));
	EXPECT_TRUE(bft_sym_returns_twice("swapcontext"));
	EXPECT_TRUE(bft_sym_returns_twice("savectx"));
	EXPECT_FALSE(bft_sym_returns_twice("___setjmp"));
	EXPECT_FALSE(bft_sym_returns_twice("longjmp"));
	EXPECT_FALSE(bft_sym_returns_twice("setjmp_helper"));
	EXPECT_FALSE(bft_sym_returns_twice("fork"));

	EXPECT_EQ(BFT_PF_HOOK_UNWIND, bft_sym_hook("_Unwind_RaiseException"));
	EXPECT_EQ(BFT_PF_HOOK_UNWIND, bft_sym_hook("_Unwind_Resume"));
	EXPECT_EQ(BFT_PF_HOOK_UNWIND, bft_sym_hook("_Unwind_Resume_or_Rethrow"));
	EXPECT_EQ(BFT_PF_HOOK_FORCED, bft_sym_hook("_Unwind_ForcedUnwind"));
	EXPECT_EQ(BFT_PF_HOOK_CATCH, bft_sym_hook("__cxa_begin_catch"));
	EXPECT_EQ(BFT_PF_HOOK_THROW, bft_sym_hook("__cxa_throw"));
	EXPECT_EQ(BFT_PF_HOOK_RETHROW, bft_sym_hook("__cxa_rethrow"));
	EXPECT_EQ(BFT_PF_HOOK_LONGJMP, bft_sym_hook("siglongjmp"));
	EXPECT_EQ(BFT_PF_HOOK_LONGJMP, bft_sym_hook("__longjmp_chk"));
	EXPECT_EQ(0, bft_sym_hook("_Unwind_Backtrace"));
	EXPECT_EQ(0, bft_sym_hook("__cxa_end_catch"));
	EXPECT_STREQ("catch", bft_hook_name(BFT_PF_ALL | BFT_PF_HOOK_CATCH));
	EXPECT_EQ(NULL, bft_hook_name(BFT_PF_ALL));
	for (const char *const *n = bft_sym_hook_names(); *n; n++)
		EXPECT_NE(0, bft_sym_hook(*n));
}

TEST_F(fx, cold_fragments_are_left_out_and_said_so)
{
	const struct bft_func *f, *cold;
	char path[PATH_MAX], cmd[PATH_MAX + 64], out[64] = "";
	FILE *p;

	ASSERT_EQ(0, load(&self->o[0], "fx_cold", NULL));
	/* the fixture has the fragment this test is about */
	ASSERT_LT(0, nm_count("fx_cold.nm", true));
	EXPECT_EQ(nm_count("fx_cold.nm", true), (long)self->o[0].nleft_out);
	EXPECT_EQ(nm_functions("fx_cold.nm"), (long)self->o[0].nfuncs);
	f = find(&self->o[0], "cf_work");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(0, f->traits);
	EXPECT_EQ(NULL, bft_func_why(f));
	EXPECT_EQ(NULL, find(&self->o[0], "cf_work.cold"));
	cold = find_left_out(&self->o[0], "cf_work.cold");
	ASSERT_NE(NULL, cold);
	EXPECT_EQ(BFT_TRAIT_COLD, cold->traits);
	EXPECT_NE(NULL, strstr(bft_func_why(cold), "cold fragment"));
	/* entered by a jump from cf_work, not at cf_work's entry */
	EXPECT_TRUE(cold->addr < f->addr || cold->addr >= f->addr + f->size);

	/* the cold path runs, and the program survives it */
	fx_path(path, sizeof(path), "fx_cold");
	snprintf(cmd, sizeof(cmd), "'%s' 2000 2>&1", path);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	EXPECT_NE(NULL, fgets(out, sizeof(out), p));
	EXPECT_STREQ("cold path 2000\n", out);
	EXPECT_NE(NULL, fgets(out, sizeof(out), p));
	EXPECT_STREQ("5995\n", out);
	EXPECT_EQ(0, pclose(p));
}

TEST_F(fx, setjmp_and_the_entry_point_get_entry_probes_only)
{
	const char *twice[] = { "_setjmp", "__sigsetjmp" };
	const struct bft_func *f;

	ASSERT_EQ(0, load(&self->o[0], "fx_cold_static", NULL));
	for (size_t i = 0; i < sizeof(twice) / sizeof(twice[0]); i++) {
		f = find(&self->o[0], twice[i]);
		ASSERT_NE(NULL, f) TH_LOG("%s", twice[i]);
		EXPECT_EQ(BFT_TRAIT_RETURNS_TWICE, f->traits & BFT_TRAIT_RETURNS_TWICE)
			TH_LOG("%s", twice[i]);
		EXPECT_NE(NULL, strstr(bft_func_why(f), "returns twice"));
	}
	f = find(&self->o[0], "_start");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(BFT_TRAIT_ENTRY_POINT, f->traits);
	EXPECT_NE(NULL, strstr(bft_func_why(f), "entry point"));
	f = find(&self->o[0], "cf_work");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(0, f->traits);
	/* static glibc has cold fragments of its own */
	EXPECT_EQ(nm_count("fx_cold_static.nm", true), (long)self->o[0].nleft_out);
	EXPECT_EQ(nm_functions("fx_cold_static.nm"), (long)self->o[0].nfuncs);
	f = find(&self->o[0], "longjmp");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(0, f->traits);

	/* a PIE's entry point too */
	ASSERT_EQ(0, load(&self->o[1], "fx_cold", NULL));
	f = find(&self->o[1], "_start");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(BFT_TRAIT_ENTRY_POINT, f->traits);
}

/* ---- selection over files: patterns --------------------------------------- */

static long select_count(const char *const *pats, size_t n, bool regex,
			 const char *const *files, size_t nfiles,
			 struct bft_plan *keep)
{
	char paths[4][PATH_MAX], err[512] = "";
	const char *pv[4];
	struct bft_patterns ps;
	struct bft_plan pl;
	long count;

	for (size_t i = 0; i < nfiles; i++) {
		fx_path(paths[i], sizeof(paths[i]), files[i]);
		pv[i] = paths[i];
	}
	if (bft_patterns_init(&ps, pats, n, regex, err, sizeof(err))) {
		fprintf(stderr, "# patterns: %s\n", err);
		return -1;
	}
	if (bft_plan_files(&pl, pv, nfiles, &ps, NULL, err, sizeof(err))) {
		fprintf(stderr, "# plan: %s\n", err);
		bft_patterns_free(&ps);
		return -1;
	}
	bft_patterns_free(&ps);
	count = (long)pl.npicks;
	if (keep)
		*keep = pl;
	else
		bft_plan_free(&pl);
	return count;
}

static bool plan_has(const struct bft_plan *pl, const char *obj, const char *name)
{
	for (size_t i = 0; i < pl->npicks; i++) {
		const struct bft_object *o = &pl->objs[pl->picks[i].obj];

		if (!strcmp(o->name, obj) &&
		    !strcmp(bft_func_name(&o->funcs[pl->picks[i].func]), name))
			return true;
	}
	return false;
}

TEST_F(fx, globs_several_patterns_and_exclusions)
{
	const char *files[] = { "fx_pie", "libfx.so" };
	const char *p1[] = { "foo_*" };
	const char *p2[] = { "foo_*", "bar" };
	const char *p3[] = { "foo_*", "!*_slow" };
	const char *p4[] = { "*", "!fxlib*", "!*_slow", "!_*" };
	const char *p5[] = { "fxlib_mul_alias" };
	struct bft_plan pl;

	EXPECT_EQ(2, select_count(p1, 1, false, files, 2, NULL));
	EXPECT_EQ(3, select_count(p2, 2, false, files, 2, NULL));
	ASSERT_EQ(1, select_count(p3, 2, false, files, 2, &pl));
	EXPECT_TRUE(plan_has(&pl, "fx_pie", "foo_fast"));
	bft_plan_free(&pl);
	ASSERT_LT(0, select_count(p4, 4, false, files, 2, &pl));
	EXPECT_FALSE(plan_has(&pl, "fx_pie", "foo_slow"));
	EXPECT_FALSE(plan_has(&pl, "libfx.so", "fxlib_add"));
	EXPECT_TRUE(plan_has(&pl, "fx_pie", "foo_fast"));
	EXPECT_TRUE(plan_has(&pl, "fx_pie", "main"));
	bft_plan_free(&pl);
	/* any alias selects the function, shown under its preferred name */
	ASSERT_EQ(1, select_count(p5, 1, false, files, 2, &pl));
	EXPECT_TRUE(plan_has(&pl, "libfx.so", "fxlib_mul"));
	bft_plan_free(&pl);
}

TEST_F(fx, patterns_find_left_out_fragments_apart)
{
	const char *files[] = { "fx_cold" };
	const char *p1[] = { "cf_work*" };
	const char *p2[] = { "cf_*", "!*.cold" };
	struct bft_plan pl;

	ASSERT_EQ(1, select_count(p1, 1, false, files, 1, &pl));
	EXPECT_TRUE(plan_has(&pl, "fx_cold", "cf_work"));
	ASSERT_EQ(1, pl.nleft);
	EXPECT_STREQ("cf_work.cold",
		     pl.objs[pl.left[0].obj].left_out[pl.left[0].func].names[0].raw);
	bft_plan_free(&pl);
	ASSERT_EQ(2, select_count(p2, 2, false, files, 1, &pl));
	EXPECT_EQ(0, pl.nleft);
	bft_plan_free(&pl);
}

TEST_F(fx, object_scope_selects_in_one_object)
{
	const char *files[] = { "fx_pie", "libfx.so" };
	const char *p1[] = { "libfx*:*" };
	const char *p2[] = { "libfx*:fxlib_*", "fx_pie:foo_fast" };
	const char *p3[] = { "*:main" };
	const char *p4[] = { "nosuchobj*:*" };
	struct bft_plan pl;

	ASSERT_EQ(nm_functions("libfx.so.nm"),
		  select_count(p1, 1, false, files, 2, &pl));
	EXPECT_EQ(1, pl.out_of_scope);
	EXPECT_EQ(1, pl.nobjs);
	bft_plan_free(&pl);
	ASSERT_EQ(4, select_count(p2, 2, false, files, 2, &pl));
	EXPECT_TRUE(plan_has(&pl, "libfx.so", "fxlib_local"));
	EXPECT_TRUE(plan_has(&pl, "fx_pie", "foo_fast"));
	EXPECT_FALSE(plan_has(&pl, "fx_pie", "foo_slow"));
	bft_plan_free(&pl);
	EXPECT_EQ(1, select_count(p3, 1, false, files, 2, NULL));
	EXPECT_EQ(0, select_count(p4, 1, false, files, 2, NULL));
}

TEST_F(fx, cpp_patterns_on_demangled_and_mangled_names)
{
	const char *files[] = { "fx_cpp" };
	const char *p1[] = { "ns::add*" };
	const char *p2[] = { "ns::add(int, int)" };
	const char *p3[] = { "_ZN2ns3addEii" };
	const char *p4[] = { "ns::Square::scale*" };
	const char *p5[] = { "fx_cpp:ns::*", "!*Square*", "!*Shape*" };
	const char *p6[] = { "*ns::twice<int>*" };
	const char *p7[] = { "ns::twice<int>(int)" };

	EXPECT_EQ(2, select_count(p1, 1, false, files, 1, NULL));
	EXPECT_EQ(1, select_count(p2, 1, false, files, 1, NULL));
	EXPECT_EQ(1, select_count(p3, 1, false, files, 1, NULL));
	EXPECT_EQ(2, select_count(p4, 1, false, files, 1, NULL));
	EXPECT_EQ(3, select_count(p5, 3, false, files, 1, NULL));
	EXPECT_EQ(1, select_count(p6, 1, false, files, 1, NULL));
	EXPECT_EQ(1, select_count(p7, 1, false, files, 1, NULL));
}

TEST_F(fx, regex_patterns)
{
	const char *files[] = { "fx_pie", "libfx.so" };
	const char *p1[] = { "^foo_(fast|slow)$" };
	const char *p2[] = { "foo" };	/* matches anywhere */
	const char *p3[] = { "libfx*:^fxlib_[a-z]+$", "!_local$" };

	EXPECT_EQ(2, select_count(p1, 1, true, files, 2, NULL));
	EXPECT_EQ(2, select_count(p2, 1, true, files, 2, NULL));
	EXPECT_EQ(2, select_count(p3, 2, true, files, 2, NULL));
}

TEST(malformed_patterns_are_refused_with_a_reason)
{
	const char *bad_re[] = { "foo", "a(" };
	const char *only_excl[] = { "!foo" };
	const char *empty_obj[] = { ":foo" };
	const char *empty_sym[] = { "libc.so*:" };
	const char *bang[] = { "!" };
	struct bft_patterns ps;
	char err[512];

	EXPECT_EQ(-EINVAL, bft_patterns_init(&ps, bad_re, 2, true, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "bad regex 'a('"));
	EXPECT_EQ(-EINVAL, bft_patterns_init(&ps, only_excl, 1, false, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "only exclusions"));
	EXPECT_EQ(-EINVAL, bft_patterns_init(&ps, empty_obj, 1, false, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "empty object"));
	EXPECT_EQ(-EINVAL, bft_patterns_init(&ps, empty_sym, 1, false, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "empty symbol"));
	EXPECT_EQ(-EINVAL, bft_patterns_init(&ps, bang, 1, false, err, sizeof(err)));
	EXPECT_EQ(-EINVAL, bft_patterns_init(&ps, NULL, 0, false, err, sizeof(err)));
	/* the same text is a fine glob */
	ASSERT_EQ(0, bft_patterns_init(&ps, bad_re, 2, false, err, sizeof(err)));
	bft_patterns_free(&ps);
}

TEST(scope_colon_is_not_half_of_a_cpp_scope)
{
	const char *pats[] = { "ns::f*", "libx*:ns::g", "/usr/lib/*/libc.so.6:malloc" };
	const char *n1[] = { "ns::f(int)" };
	const char *n2[] = { "ns::g" };
	const char *n3[] = { "malloc" };
	struct bft_patterns ps;
	char err[256];

	ASSERT_EQ(0, bft_patterns_init(&ps, pats, 3, false, err, sizeof(err)));
	EXPECT_EQ(NULL, ps.p[0].object);
	EXPECT_STREQ("ns::f*", ps.p[0].symbol);
	EXPECT_STREQ("libx*", ps.p[1].object);
	EXPECT_STREQ("ns::g", ps.p[1].symbol);
	EXPECT_TRUE(ps.p[2].object_path);
	EXPECT_TRUE(bft_patterns_match(&ps, "/any/obj", n1, 1));
	EXPECT_TRUE(bft_patterns_match(&ps, "/lib/libx.so.1", n2, 1));
	EXPECT_FALSE(bft_patterns_match(&ps, "/lib/liby.so.1", n2, 1));
	EXPECT_TRUE(bft_patterns_match(&ps, "/usr/lib/x86_64-linux-gnu/libc.so.6", n3, 1));
	EXPECT_FALSE(bft_patterns_match(&ps, "/opt/libc.so.6", n3, 1));
	bft_patterns_free(&ps);
}

TEST(demangle_only_touches_cpp_names)
{
	char *d = bft_demangle("_ZN2ns5Class6methodEi");

	ASSERT_NE(NULL, d);
	EXPECT_STREQ("ns::Class::method(int)", d);
	free(d);
	EXPECT_EQ(NULL, bft_demangle("main"));
	EXPECT_EQ(NULL, bft_demangle("foo__Fi"));
	EXPECT_EQ(NULL, bft_demangle("_Zgarbage"));
}

/* ---- selection over a live process: this one ------------------------------- */

static long plan_self(const char *pat, struct bft_plan *pl, char *err, size_t len)
{
	const char *pats[] = { pat };
	struct bft_patterns ps;
	int rc;

	rc = bft_patterns_init(&ps, pats, 1, false, err, len);
	if (rc)
		return rc;
	rc = bft_plan_pid(pl, getpid(), &ps, NULL, err, len);
	bft_patterns_free(&ps);
	return rc ? rc : (long)pl->npicks;
}

static const struct bft_func *only_pick(const struct bft_plan *pl,
					const struct bft_object **o)
{
	*o = &pl->objs[pl->picks[0].obj];
	return &(*o)->funcs[pl->picks[0].func];
}

/* The bytes of the file at the function's offset are those in memory. */
static bool file_matches_memory(const struct bft_object *o,
				const struct bft_func *f, const void *mem)
{
	unsigned char got[16];
	int fd = open(o->open_path, O_RDONLY);
	bool ok;

	ok = fd >= 0 && pread(fd, got, sizeof(got), (off_t)f->offset) == 16 &&
	     !memcmp(got, mem, sizeof(got));
	if (fd >= 0)
		close(fd);
	return ok;
}

TEST(maps_of_this_process_resolve_a_library_function)
{
	const struct bft_object *o;
	const struct bft_func *f;
	struct bft_plan pl;
	char err[512] = "";

	ASSERT_EQ(1, plan_self("libelf*:elf_begin", &pl, err, sizeof(err)))
		TH_LOG("%s", err);
	f = only_pick(&pl, &o);
	EXPECT_STREQ("elf_begin", bft_func_name(f));
	EXPECT_TRUE(file_matches_memory(o, f, (const void *)elf_begin));
	bft_plan_free(&pl);
}

/* No cp(1): under valgrind every child would be checked too. */
static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n = 0;
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);

	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out))
		n = -1;
	return in >= 0 && out >= 0 && n == 0 ? 0 : -1;
}

TEST_F(fx, maps_reach_a_deleted_but_mapped_library)
{
	char lib[PATH_MAX], src[PATH_MAX], err[512] = "";
	const struct bft_object *o;
	const struct bft_func *f;
	struct bft_plan pl;
	void *h, *fn;

	fx_path(src, sizeof(src), "libfx.so");
	fx_path(lib, sizeof(lib), "libfxgone.so");
	ASSERT_EQ(0, copy_file(src, lib));
	h = dlopen(lib, RTLD_NOW);
	ASSERT_NE(NULL, h) TH_LOG("dlopen: %s", dlerror());
	fn = dlsym(h, "fxlib_add");
	ASSERT_NE(NULL, fn);
	ASSERT_EQ(0, unlink(lib));
	if (geteuid() != 0) {
		dlclose(h);
		SKIP(return, "map_files needs CAP_SYS_ADMIN");
	}
	ASSERT_EQ(1, plan_self("libfxgone*:fxlib_add", &pl, err, sizeof(err)))
		TH_LOG("%s", err);
	f = only_pick(&pl, &o);
	EXPECT_NE(NULL, strstr(o->open_path, "/map_files/"));
	EXPECT_STREQ(lib, o->path);
	EXPECT_TRUE(file_matches_memory(o, f, fn));
	bft_plan_free(&pl);
	dlclose(h);
}

TEST_F(fx, non_elf_file_mapped_executable_is_an_error_in_scope)
{
	char path[PATH_MAX], err[512] = "";
	struct bft_plan pl;
	void *m;
	int fd;

	fx_path(path, sizeof(path), "not-elf.bin");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(4096, pwrite(fd, memset(alloca(4096), 0x90, 4096), 4096, 0));
	m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(-ENOEXEC, plan_self("elf_begin", &pl, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "not-elf.bin"));
	EXPECT_NE(NULL, strstr(err, "not an ELF"));
	/* scoped away from it, the same process resolves */
	EXPECT_EQ(1, plan_self("libelf*:elf_begin", &pl, err, sizeof(err)));
	bft_plan_free(&pl);
	munmap(m, 4096);
}

TEST(a_pid_that_does_not_exist)
{
	struct bft_maps m;
	char err[256];

	/* beyond PID_MAX_LIMIT (4M) */
	EXPECT_EQ(-ESRCH, bft_maps_read(5000000, &m, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "no process"));
	EXPECT_EQ(-ESRCH, bft_maps_read(0, &m, err, sizeof(err)));
}

/* ---- exception hooks over a live process ---------------------------------- */

/* Start fixture name with args, wait for its "ready" line; pid or -1. */
static pid_t start_ready(const char *name, const char *arg, const char *arg2,
			 int *in_w)
{
	char path[PATH_MAX], line[128];
	int in[2], out[2];
	FILE *f;
	pid_t pid;

	fx_path(path, sizeof(path), name);
	if (pipe(in) || pipe(out))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(path, path, arg, arg2, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	*in_w = in[1];
	f = fdopen(out[0], "r");
	if (pid < 0 || !f || !fgets(line, sizeof(line), f) ||
	    strncmp(line, "ready", 5)) {
		if (pid > 0)
			kill(pid, SIGKILL);
		pid = -1;
	}
	if (f)
		fclose(f);
	return pid;
}

static void stop_ready(pid_t pid, int in_w)
{
	close(in_w);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static const struct bft_hook *hook_named(const struct bft_hooks *h,
					 const char *sym, const char *obj)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->v[i].symbol, sym) &&
		    (!obj || !strncmp(h->v[i].object, obj, strlen(obj))))
			return &h->v[i];
	return NULL;
}

/* The hook's bytes are those of the function bft_elf finds by name. */
static bool hook_is_function(const struct bft_hook *k)
{
	struct bft_object o;
	bool ok = false;

	if (bft_object_load(&o, k->path, k->open_path, NULL, NULL, 0))
		return false;
	for (size_t i = 0; i < o.nfuncs && !ok; i++)
		for (uint32_t n = 0; n < o.funcs[i].nnames; n++)
			if (!strcmp(o.funcs[i].names[n].raw, k->symbol))
				ok = o.funcs[i].probe_offset == k->probe_offset;
	bft_object_free(&o);
	return ok;
}

TEST_F(fx, cpp_process_gets_every_hook)
{
	const uint32_t want[] = {
		BFT_PF_HOOK_UNWIND, BFT_PF_HOOK_CATCH, BFT_PF_HOOK_THROW,
		BFT_PF_HOOK_RETHROW, BFT_PF_HOOK_FORCED, BFT_PF_HOOK_LONGJMP,
	};
	struct bft_hooks h;
	const struct bft_hook *k;
	char err[256] = "";
	int in_w;
	pid_t pid = start_ready("fx_exc", "wait", NULL, &in_w);

	ASSERT_LT(0, pid);
	ASSERT_EQ(0, bft_hooks_find(pid, false, &h, err, sizeof(err))) TH_LOG("%s", err);
	stop_ready(pid, in_w);
	EXPECT_TRUE(h.at_risk);
	EXPECT_TRUE(h.complete) TH_LOG("missing: %s", h.missing);
	EXPECT_NE(NULL, strstr(h.risk, "C++"));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		bool seen = false;

		for (size_t j = 0; j < h.n; j++)
			seen |= h.v[j].flag == want[i];
		EXPECT_TRUE(seen) TH_LOG("no hook %s", bft_hook_name(want[i]));
	}
	k = hook_named(&h, "__cxa_begin_catch", "libstdc++");
	ASSERT_NE(NULL, k);
	EXPECT_TRUE(k->mapped);
	EXPECT_TRUE(hook_is_function(k));
	k = hook_named(&h, "_Unwind_RaiseException", "libgcc_s");
	ASSERT_NE(NULL, k);
	EXPECT_TRUE(hook_is_function(k));
	/* aliases and one file under two names are one hook each */
	for (size_t i = 0; i < h.n; i++)
		for (size_t j = i + 1; j < h.n; j++)
			EXPECT_FALSE(h.v[i].dev == h.v[j].dev && h.v[i].ino == h.v[j].ino &&
				     h.v[i].probe_offset == h.v[j].probe_offset);
	EXPECT_EQ(k, bft_hooks_at(&h, k->dev, k->ino, k->probe_offset));
	bft_hooks_free(&h);
}

TEST_F(fx, c_process_gets_libgcc_before_glibc_loads_it)
{
	struct bft_hooks h;
	const struct bft_hook *k;
	char err[256] = "";
	int in_w;
	pid_t pid = start_ready("fx_pie", "work", "1", &in_w);

	ASSERT_LT(0, pid);
	ASSERT_EQ(0, bft_hooks_find(pid, false, &h, err, sizeof(err))) TH_LOG("%s", err);
	stop_ready(pid, in_w);
	/* a C program that neither throws nor cancels threads */
	EXPECT_FALSE(h.at_risk) TH_LOG("risk: %s", h.risk);
	EXPECT_TRUE(h.complete);
	ASSERT_NE(NULL, h.libgcc);
	k = hook_named(&h, "_Unwind_ForcedUnwind", "libgcc_s");
	ASSERT_NE(NULL, k);
	EXPECT_FALSE(k->mapped);
	EXPECT_STREQ(h.libgcc, k->path);
	EXPECT_TRUE(hook_is_function(k));
	k = hook_named(&h, "longjmp", "libc.so");
	ASSERT_NE(NULL, k);
	EXPECT_EQ(BFT_PF_HOOK_LONGJMP, k->flag);
	EXPECT_TRUE(k->mapped);
	/* longjmp, _longjmp and siglongjmp are one function in glibc */
	EXPECT_EQ(NULL, hook_named(&h, "_longjmp", "libc.so"));
	bft_hooks_free(&h);
}

TEST_F(fx, stripped_static_cpp_has_no_hooks_and_is_at_risk)
{
	struct bft_hooks h;
	char err[256] = "";
	int in_w;
	pid_t pid = start_ready("fx_exc_stripped", "wait", NULL, &in_w);

	ASSERT_LT(0, pid);
	ASSERT_EQ(0, bft_hooks_find(pid, false, &h, err, sizeof(err))) TH_LOG("%s", err);
	stop_ready(pid, in_w);
	EXPECT_TRUE(h.at_risk);
	EXPECT_FALSE(h.complete);
	EXPECT_EQ(0, h.n);
	EXPECT_NE(NULL, strstr(h.risk, "exception tables"));
	EXPECT_NE(NULL, strstr(h.missing, "_Unwind_RaiseException"));
	EXPECT_NE(NULL, strstr(h.missing, "__cxa_begin_catch"));
	EXPECT_EQ(NULL, h.libgcc);
	bft_hooks_free(&h);
}

TEST_HARNESS_MAIN
