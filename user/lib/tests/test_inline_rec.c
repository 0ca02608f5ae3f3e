// SPDX-License-Identifier: GPL-2.0
/*
 * The inline backend's recorder (user/inline, embedded as bfi_rec_bin),
 * run for real in this process: an area and a code area mapped here, the
 * recorder copied in, and hand-written stubs in front of ordinary C
 * functions, so that calling a stub is calling a patched function.  Each
 * slot's ring is decoded with the project's stream decoder and call tree.
 */
#include "kselftest_harness.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <sys/prctl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "../../inline/bfi_layout.h"
#include "inline/bfi_rec_blob.h"
#include "model/bft_calltree.h"
#include "bft_test.h"

#define STUB_SIZE	32
#define RES_NS		1000

/* The method indexes of the test functions; ids are index + 1. */
enum {
	M_LEAF, M_REC, M_TWO, M_TAIL, M_PAIR, M_DBL, M_OUTER, M_DEEP,
	M_LONGJMP, M_UNWIND, M_CATCH, M_THROW, M_CO_F, M_CO_G, M_LOSE,
	M_COUNT
};

static struct {
	struct bfi_area *area;
	size_t area_size;
	uint8_t *code;
	const struct bfi_rec_hdr *hdr;
} R;

static void *stub(int i)
{
	return R.code + BFI_CODE_SIZE / 2 + i * STUB_SIZE;
}

#define CALL(type, i) ((type)stub(i))

static uint64_t exit_addr(void)
{
	return (uint64_t)(uintptr_t)(R.code + BFI_TEXT_OFF + R.hdr->exit_off);
}

static struct bfi_live *live(void)
{
	return (struct bfi_live *)((uint8_t *)R.area + BFI_LIVE_OFF);
}

static struct bfi_method *method(int i)
{
	return (struct bfi_method *)((uint8_t *)R.area + BFI_METHODS_OFF) + i;
}

static struct bfi_slot *slot_at(uint32_t i)
{
	return (struct bfi_slot *)((uint8_t *)R.area + BFI_SLOTS_OFF +
				   i * BFI_SLOT_SIZE(R.area->ring_size));
}

static struct bfi_slot *slot_of(uint32_t tid)
{
	uint32_t i;

	for (i = 0; i < BFI_NSLOTS; i++)
		if (slot_at(i)->tp && slot_at(i)->tid == tid)
			return slot_at(i);
	return NULL;
}

static uint32_t my_tid(void)
{
	return (uint32_t)gettid();
}

/* mov $i,%r11d; call enter_common; movabs $impl,%r11; jmp *%r11 */
static void stub_write(int i, void *impl, uint32_t flags)
{
	uint8_t *p = stub(i);
	uint64_t enter = (uint64_t)(uintptr_t)(R.code + BFI_TEXT_OFF +
					       R.hdr->enter_off);
	int32_t rel = (int32_t)(enter - (uint64_t)(uintptr_t)(p + 11));
	uint32_t idx = (uint32_t)i;

	p[0] = 0x41;
	p[1] = 0xbb;
	memcpy(p + 2, &idx, 4);
	p[6] = 0xe8;
	memcpy(p + 7, &rel, 4);
	p[11] = 0x49;
	p[12] = 0xbb;
	memcpy(p + 13, &impl, 8);
	p[21] = 0x41;
	p[22] = 0xff;
	p[23] = 0xe3;
	method(i)->id = (uint32_t)i + 1;
	method(i)->flags = flags;
}

/* ---- the traced functions ---- */

#define OPAQUE(x) __asm__ volatile("" : "+r"(x))

static __attribute__((noinline)) int f_leaf(int x)
{
	OPAQUE(x);
	return x + 1;
}

static __attribute__((noinline)) int f_rec(int n)
{
	OPAQUE(n);
	if (!n)
		return 0;
	return CALL(int (*)(int), M_REC)(n - 1) + 1;
}

static __attribute__((noinline)) int f_two(int x)
{
	int a = CALL(int (*)(int), M_LEAF)(x);

	return a + CALL(int (*)(int), M_LEAF)(x + 1);
}

/* A tail call whatever the compiler: jump to the leaf's stub. */
void *t_tail_target;
int t_tail_impl(int x);
__asm__(".text\n"
	".globl t_tail_impl\n"
	".type t_tail_impl, @function\n"
	"t_tail_impl:\n"
	"	jmp *t_tail_target(%rip)\n"
	".size t_tail_impl, . - t_tail_impl\n");

struct pair {
	long a, b;
};

static __attribute__((noinline)) struct pair f_pair(long x)
{
	struct pair p = { x * 3, x * 5 };

	OPAQUE(p.a);
	return p;
}

static __attribute__((noinline)) double f_dbl(double x)
{
	volatile double k = 0.25;

	return x * k + 1.5;
}

static jmp_buf t_env;

static __attribute__((noinline)) void f_longjmp(jmp_buf env, int v)
{
	longjmp(env, v);
}

static __attribute__((noinline)) int f_deep(int n)
{
	OPAQUE(n);
	if (!n)
		CALL(void (*)(jmp_buf, int), M_LONGJMP)(t_env, 1);
	return CALL(int (*)(int), M_DEEP)(n - 1) + 1;
}

static __attribute__((noinline)) int f_outer(int n)
{
	volatile int r = 0;

	if (!setjmp(t_env))
		r = CALL(int (*)(int), M_DEEP)(n);
	else
		r = 77;
	return r;
}

static __attribute__((noinline)) void f_hook(uint64_t a, uint64_t b)
{
	OPAQUE(a);
	OPAQUE(b);
}

/* ---- set-up and decoding ---- */

/* __vdso_clock_gettime of this process, through its own symbol table. */
static uint64_t vdso_clock(void)
{
	const uint8_t *base = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	uint64_t addr = 0, load = 0;
	Elf_Scn *scn = NULL;
	size_t size, i;
	Elf *e;

	if (!base)
		return 0;
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	for (i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph =
			(const Elf64_Phdr *)(base + eh->e_phoff) + i;

		if (ph->p_type == PT_LOAD) {
			load = ph->p_vaddr - ph->p_offset;
			break;
		}
	}
	elf_version(EV_CURRENT);
	e = elf_memory((char *)base, size);
	if (!e)
		return 0;
	while (!addr && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Sym sym;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym))
				break;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (name && !strcmp(name, "__vdso_clock_gettime")) {
				addr = (uint64_t)(uintptr_t)base +
				       sym.st_value - load;
				break;
			}
		}
	}
	elf_end(e);
	return addr;
}

static int rec_init(uint32_t ring_size, uint64_t vdso)
{
	struct bfi_code *bc;
	int i;

	R.area_size = BFI_AREA_SIZE(ring_size);
	R.area = mmap(NULL, R.area_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	R.code = mmap(NULL, BFI_CODE_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (R.area == MAP_FAILED || R.code == MAP_FAILED)
		return -1;
	R.area->magic = BFI_MAGIC;
	R.area->version = BFI_VERSION;
	R.area->nslots = BFI_NSLOTS;
	R.area->size = R.area_size;
	R.area->ring_size = ring_size;
	R.area->shadow_depth = BFI_SHADOW_DEPTH;
	R.area->nmethods = M_COUNT;
	R.area->res_ns = RES_NS;
	R.area->tgid = (uint32_t)getpid();
	R.area->vdso_clock = vdso;
	live()->ctl = BFI_CTL(BFT_MODE_TRACING, 0, 1);
	bc = (struct bfi_code *)R.code;
	bc->magic = BFI_MAGIC;
	bc->area = (uint64_t)(uintptr_t)R.area;
	bc->text = (uint64_t)(uintptr_t)(R.code + BFI_TEXT_OFF);
	memcpy(R.code + BFI_TEXT_OFF, bfi_rec_bin, bfi_rec_bin_len);
	R.hdr = (const struct bfi_rec_hdr *)(R.code + BFI_TEXT_OFF);
	bc->exit = exit_addr();
	stub_write(M_LEAF, (void *)f_leaf, BFT_PF_ALL);
	stub_write(M_REC, (void *)f_rec, BFT_PF_ALL);
	stub_write(M_TWO, (void *)f_two, BFT_PF_ALL);
	stub_write(M_TAIL, (void *)t_tail_impl, BFT_PF_ALL);
	stub_write(M_PAIR, (void *)f_pair, BFT_PF_ALL);
	stub_write(M_DBL, (void *)f_dbl, BFT_PF_ALL);
	stub_write(M_OUTER, (void *)f_outer, BFT_PF_ALL);
	stub_write(M_DEEP, (void *)f_deep, BFT_PF_ALL);
	stub_write(M_LONGJMP, (void *)f_longjmp, BFT_PF_HOOK_LONGJMP);
	stub_write(M_UNWIND, (void *)f_hook, BFT_PF_HOOK_UNWIND);
	stub_write(M_CATCH, (void *)f_hook, BFT_PF_HOOK_CATCH);
	stub_write(M_THROW, (void *)f_hook, BFT_PF_HOOK_THROW);
	t_tail_target = stub(M_LEAF);
	for (i = M_CO_F; i < M_COUNT; i++)
		method(i)->id = (uint32_t)i + 1;
	return 0;
}

static void rec_fini(void)
{
	munmap(R.area, R.area_size);
	munmap(R.code, BFI_CODE_SIZE);
}

struct decoded {
	struct bft_stream s;
	struct bft_calltree ct;
	char *text;
	uint64_t first_sync_ns;
	uint32_t threads, thread_tid[8];
	uint32_t names;			/* NAME records, the first and last */
	char first_name[BFT_THREAD_NAME_MAX + 1];
	char last_name[BFT_THREAD_NAME_MAX + 1];
};

static int decoded_rec(void *ctx, const struct bft_record *r)
{
	struct decoded *d = ctx;

	if (r->kind == BFT_REC_SYNC && !d->first_sync_ns)
		d->first_sync_ns = r->time_ns;
	if (r->kind == BFT_REC_THREAD && d->threads < 8)
		d->thread_tid[d->threads++] = r->tid;
	if (r->kind == BFT_REC_NAME) {
		bft_record_name(r, d->last_name);
		if (!d->names++)
			memcpy(d->first_name, d->last_name, sizeof(d->first_name));
	}
	return bft_calltree_feed(&d->ct, r);
}

/* The bytes [tail, head) of a slot's ring, consumed (tail = head). */
static size_t slot_take(struct bfi_slot *s, uint8_t *out, size_t max)
{
	const uint8_t *ring = (const uint8_t *)s + BFI_RING_OFF;
	uint64_t i, n = s->head - s->tail;

	if (n > max)
		n = max;
	for (i = 0; i < n; i++)
		out[i] = ring[(s->tail + i) & (R.area->ring_size - 1)];
	s->tail += n;
	return n;
}

static int decode_init(struct decoded *d)
{
	struct bft_stream_opts so = { .on_record = decoded_rec, .ctx = d };
	struct bft_calltree_opts co = { .text = true, .start_known = true };

	memset(d, 0, sizeof(*d));
	bft_stream_init(&d->s, &so);
	return bft_calltree_init(&d->ct, &co);
}

static int decode_feed(struct decoded *d, struct bfi_slot *s)
{
	static uint8_t buf[1 << 20];
	size_t n = slot_take(s, buf, sizeof(buf));

	return bft_stream_feed(&d->s, buf, n);
}

static void decode_end(struct decoded *d)
{
	bft_stream_finish(&d->s);
	d->text = bft_calltree_text(&d->ct);
}

static void decode_free(struct decoded *d)
{
	free(d->text);
	bft_calltree_free(&d->ct);
}

/* The text of one thread's line without its "tid N: " head. */
static const char *line_of(const char *text)
{
	const char *p = strchr(text ? text : "", ':');

	return p ? p + 2 : "";
}

static void expect_line(struct __test_metadata *_metadata,
			struct bfi_slot *s, const char *want)
{
	struct decoded d;
	char line[4096];
	size_t n;

	ASSERT_NE(NULL, s);
	ASSERT_EQ(0, decode_init(&d));
	ASSERT_EQ(0, decode_feed(&d, s));
	decode_end(&d);
	ASSERT_NE(NULL, d.text);
	snprintf(line, sizeof(line), "%s", line_of(d.text));
	n = strlen(line);
	if (n && line[n - 1] == '\n')
		line[n - 1] = 0;
	EXPECT_STREQ(want, line);
	EXPECT_EQ(s->produced, s->written + s->lost);
	EXPECT_EQ(bft_stream_seq(&d.s), s->produced);
	EXPECT_EQ(0, bft_stream_stats(&d.s)->errors);
	EXPECT_EQ(s->tid, d.thread_tid[0]);
	decode_free(&d);
}

/* ---- tests ---- */

static void calls_basic(struct __test_metadata *_metadata, uint64_t vdso)
{
	struct timespec t0, t1;
	struct pair p;
	struct decoded d;
	uint64_t before, after;

	ASSERT_EQ(0, rec_init(1 << 16, vdso));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	EXPECT_EQ(6, CALL(int (*)(int), M_LEAF)(5));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_EQ(10, CALL(int (*)(int), M_REC)(10));
	EXPECT_EQ(23, CALL(int (*)(int), M_TWO)(10));
	EXPECT_EQ(8, CALL(int (*)(int), M_TAIL)(7));
	p = CALL(struct pair (*)(long), M_PAIR)(7);
	EXPECT_EQ(21, p.a);
	EXPECT_EQ(35, p.b);
	EXPECT_EQ(3.5, CALL(double (*)(double), M_DBL)(8.0));
	expect_line(_metadata, slot_of(my_tid()),
		    "e1 x1 e2 e2 e2 e2 e2 e2 e2 e2 e2 e2 e2 x2 x2 x2 x2 x2 x2 "
		    "x2 x2 x2 x2 x2 e3 e1 x1 e1 x1 x3 e4 n1 x1 x4 e5 x5 e6 x6");
	EXPECT_EQ(0, slot_of(my_tid())->depth);
	/* the first SYNC's time lies within the first call */
	before = (uint64_t)t0.tv_sec * 1000000000 + t0.tv_nsec;
	after = (uint64_t)t1.tv_sec * 1000000000 + t1.tv_nsec;
	slot_of(my_tid())->tail = 0;
	ASSERT_EQ(0, decode_init(&d));
	ASSERT_EQ(0, decode_feed(&d, slot_of(my_tid())));
	EXPECT_LE(before, d.first_sync_ns);
	EXPECT_GE(after, d.first_sync_ns);
	decode_end(&d);
	decode_free(&d);
	rec_fini();
}

TEST(calls_syscall_clock)
{
	calls_basic(_metadata, 0);
}

TEST(calls_vdso_clock)
{
	uint64_t v = vdso_clock();

	if (!v && !getauxval(AT_SYSINFO_EHDR))
		SKIP(return, "this process has no vDSO (under valgrind)");
	ASSERT_NE(0, v);
	calls_basic(_metadata, v);
}

static void *thread_body(void *arg)
{
	int i, sum = 0;

	(void)arg;
	for (i = 0; i < 100; i++)
		sum += CALL(int (*)(int), M_TWO)(i);
	*(int *)arg = sum;
	return (void *)(uintptr_t)my_tid();
}

TEST(three_threads)
{
	pthread_t th[3];
	int sum[3], i, j;
	char want[8192] = "";

	ASSERT_EQ(0, rec_init(1 << 16, vdso_clock()));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, thread_body,
					    &sum[i]));
	for (j = 0; j < 100; j++)
		strcat(want, j ? " e3 e1 x1 e1 x1 x3" : "e3 e1 x1 e1 x1 x3");
	for (i = 0; i < 3; i++) {
		void *tid;

		ASSERT_EQ(0, pthread_join(th[i], &tid));
		EXPECT_EQ(10200, sum[i]);
		expect_line(_metadata, slot_of((uint32_t)(uintptr_t)tid), want);
	}
	EXPECT_EQ(0, R.area->no_slot);
	rec_fini();
}

/*
 * Only a session that is not running records nothing: paused is the
 * module's pause, the target stopped and recording on, so what is in
 * flight is not lost.
 */
TEST(mode_off_records_nothing)
{
	uint32_t i;

	ASSERT_EQ(0, rec_init(1 << 12, 0));
	live()->ctl = BFI_CTL(BFT_MODE_SHUTTING_DOWN, BFT_BREAK_STOP, 2);
	EXPECT_EQ(23, CALL(int (*)(int), M_TWO)(10));
	live()->ctl = BFI_CTL(BFT_MODE_INITIALIZING, 0, 3);
	EXPECT_EQ(23, CALL(int (*)(int), M_TWO)(10));
	live()->ctl = 0;	/* a fork child's wiped page */
	EXPECT_EQ(10, CALL(int (*)(int), M_REC)(10));
	for (i = 0; i < BFI_NSLOTS; i++)
		EXPECT_EQ(0, slot_at(i)->head);
	EXPECT_EQ(NULL, slot_of(my_tid()));
	rec_fini();
}

TEST(suspend_counts_then_breaks)
{
	struct bfi_slot *s;
	struct decoded d;
	int i;

	ASSERT_EQ(0, rec_init(1 << 12, 0));
	CALL(int (*)(int), M_LEAF)(1);
	s = slot_of(my_tid());
	ASSERT_NE(NULL, s);
	live()->ctl = BFI_CTL(BFT_MODE_SUSPENDED, 0, 2);
	for (i = 0; i < 3; i++)
		CALL(int (*)(int), M_LEAF)(1);
	EXPECT_EQ(3, s->suspended);
	EXPECT_EQ(2, s->produced);
	live()->ctl = BFI_CTL(BFT_MODE_TRACING, BFT_BREAK_SUSPEND, 3);
	CALL(int (*)(int), M_LEAF)(1);
	ASSERT_EQ(0, decode_init(&d));
	ASSERT_EQ(0, decode_feed(&d, s));
	decode_end(&d);
	EXPECT_EQ(1, bft_stream_stats(&d.s)->breaks);
	EXPECT_EQ(2, bft_stream_stats(&d.s)->by_kind[BFT_REC_SYNC]);
	EXPECT_EQ(2, bft_stream_stats(&d.s)->by_kind[BFT_REC_THREAD]);
	EXPECT_STREQ("e1 x1 | e1 x1\n", line_of(d.text));
	decode_free(&d);
	rec_fini();
}

TEST(tiny_ring_overflows_with_exact_accounting)
{
	struct bfi_slot *s;
	struct decoded d;
	int i;

	ASSERT_EQ(0, rec_init(256, 0));
	ASSERT_EQ(0, decode_init(&d));
	for (i = 0; i < 500; i++)
		CALL(int (*)(int), M_LEAF)(i);
	s = slot_of(my_tid());
	ASSERT_NE(NULL, s);
	EXPECT_EQ(1000, s->produced);
	EXPECT_LT(0, s->lost);
	EXPECT_EQ(s->produced, s->written + s->lost);
	EXPECT_EQ(s->lost, s->lost_owed);
	/* the reader drains; the next record that fits carries the LOST */
	ASSERT_EQ(0, decode_feed(&d, s));
	CALL(int (*)(int), M_LEAF)(1);
	EXPECT_EQ(0, s->lost_owed);
	ASSERT_EQ(0, decode_feed(&d, s));
	decode_end(&d);
	EXPECT_EQ(s->lost, bft_stream_stats(&d.s)->lost);
	EXPECT_EQ(s->written, bft_stream_stats(&d.s)->events);
	EXPECT_EQ(s->produced, bft_stream_seq(&d.s));
	EXPECT_EQ(0, bft_stream_stats(&d.s)->errors);
	decode_free(&d);
	rec_fini();
}

/*
 * A session stops with its ring full: the next session's stream, read
 * from where the last reader stopped, starts at its SYNC and BREAK, and
 * the LOST the last session still owed comes right after them.
 */
TEST(start_after_stop_opens_with_a_sync)
{
	struct bfi_slot *s;
	struct decoded d;
	uint64_t lost, owed;
	int i;

	ASSERT_EQ(0, rec_init(256, 0));
	live()->ctl = BFI_CTL(BFT_MODE_TRACING, 0, 1);
	for (i = 0; i < 500; i++)
		CALL(int (*)(int), M_LEAF)(i);
	s = slot_of(my_tid());
	ASSERT_NE(NULL, s);
	ASSERT_LT(0, s->lost_owed);
	lost = s->lost;
	owed = s->lost_owed;
	live()->ctl = BFI_CTL(BFT_MODE_SHUTTING_DOWN, 0, 2);
	s->tail = s->head;	/* the last session's reader drains */
	live()->ctl = BFI_CTL(BFT_MODE_TRACING, BFT_BREAK_STOP, 3);
	CALL(int (*)(int), M_LEAF)(1);
	EXPECT_EQ(0, s->lost_owed);
	EXPECT_EQ(lost, s->lost);
	ASSERT_EQ(0, decode_init(&d));	/* a new reader */
	ASSERT_EQ(0, decode_feed(&d, s));
	decode_end(&d);
	EXPECT_EQ(0, bft_stream_stats(&d.s)->errors);
	EXPECT_EQ(owed, bft_stream_stats(&d.s)->lost);
	EXPECT_EQ(1, bft_stream_stats(&d.s)->breaks);
	EXPECT_EQ(s->produced, bft_stream_seq(&d.s));
	decode_free(&d);
	rec_fini();
}

/*
 * The same, read by one reader across the stop and the start: every
 * event lost in either session is counted, with no sequence gap.
 */
TEST(one_reader_across_a_stop_counts_every_loss)
{
	struct bfi_slot *s;
	struct decoded d;
	int i;

	ASSERT_EQ(0, rec_init(256, 0));
	ASSERT_EQ(0, decode_init(&d));
	live()->ctl = BFI_CTL(BFT_MODE_TRACING, 0, 1);
	for (i = 0; i < 500; i++)
		CALL(int (*)(int), M_LEAF)(i);
	s = slot_of(my_tid());
	ASSERT_NE(NULL, s);
	ASSERT_LT(0, s->lost_owed);
	live()->ctl = BFI_CTL(BFT_MODE_SHUTTING_DOWN, 0, 2);
	ASSERT_EQ(0, decode_feed(&d, s));
	live()->ctl = BFI_CTL(BFT_MODE_TRACING, BFT_BREAK_STOP, 3);
	for (i = 0; i < 500; i++)
		CALL(int (*)(int), M_LEAF)(i);
	ASSERT_EQ(0, decode_feed(&d, s));
	CALL(int (*)(int), M_LEAF)(1);
	ASSERT_EQ(0, decode_feed(&d, s));
	decode_end(&d);
	EXPECT_EQ(0, bft_stream_stats(&d.s)->errors);
	EXPECT_EQ(0, bft_stream_stats(&d.s)->gaps);
	EXPECT_EQ(s->lost - s->lost_owed, bft_stream_stats(&d.s)->lost);
	EXPECT_EQ(1, bft_stream_stats(&d.s)->breaks);
	EXPECT_EQ(s->produced - s->lost_owed, bft_stream_seq(&d.s));
	decode_free(&d);
	rec_fini();
}

/*
 * The thread's name as it is at each SYNC: the first one names it as it
 * was, and after a rename the next flush's SYNC names it anew.
 */
TEST(names_follow_a_rename_at_the_next_flush)
{
	struct decoded d;
	char saved[16] = { 0 };

	ASSERT_EQ(0, prctl(PR_GET_NAME, saved));
	ASSERT_EQ(0, prctl(PR_SET_NAME, "before"));
	ASSERT_EQ(0, rec_init(4096, 0));
	ASSERT_EQ(0, decode_init(&d));
	CALL(int (*)(int), M_LEAF)(1);
	ASSERT_EQ(0, prctl(PR_SET_NAME, "after-rename"));
	CALL(int (*)(int), M_LEAF)(2);		/* no SYNC due: no NAME */
	R.area->flush_ns = 1000;
	usleep(1000);
	CALL(int (*)(int), M_LEAF)(3);		/* the flush's SYNC */
	ASSERT_EQ(0, prctl(PR_SET_NAME, saved));
	ASSERT_EQ(0, decode_feed(&d, slot_of(my_tid())));
	decode_end(&d);
	EXPECT_EQ(0, bft_stream_stats(&d.s)->errors);
	EXPECT_STREQ("before", d.first_name);
	EXPECT_STREQ("after-rename", d.last_name);
	EXPECT_LE(2u, d.names);
	EXPECT_GE(3u, d.names);		/* per SYNC, not per event */
	decode_free(&d);
	rec_fini();
}

TEST(recursion_past_the_shadow_stack)
{
	const struct bft_calltree_stats *st;
	struct bfi_slot *s;
	struct decoded d;
	int n = BFI_SHADOW_DEPTH + 76;

	ASSERT_EQ(0, rec_init(1 << 16, 0));
	EXPECT_EQ(n, CALL(int (*)(int), M_REC)(n));
	s = slot_of(my_tid());
	ASSERT_NE(NULL, s);
	EXPECT_EQ(0, s->depth);
	ASSERT_EQ(0, decode_init(&d));
	ASSERT_EQ(0, decode_feed(&d, s));
	decode_end(&d);
	st = bft_calltree_stats(&d.ct);
	EXPECT_EQ(BFI_SHADOW_DEPTH, st->enters);
	EXPECT_EQ(n + 1 - BFI_SHADOW_DEPTH, st->noret_enters);
	EXPECT_EQ(n + 1, st->exits);	/* NORET frames included */
	EXPECT_EQ(n + 1 - BFI_SHADOW_DEPTH, st->noret_closed);
	EXPECT_EQ(0, st->unbalanced);
	EXPECT_EQ(0, bft_calltree_depth(&d.ct, getpid(), my_tid()));
	decode_free(&d);
	rec_fini();
}

TEST(max_depth_records_the_top_only)
{
	ASSERT_EQ(0, rec_init(1 << 16, 0));
	R.area->max_depth = 3;
	EXPECT_EQ(10, CALL(int (*)(int), M_REC)(10));
	expect_line(_metadata, slot_of(my_tid()), "e2 e2 e2 x2 x2 x2");
	rec_fini();
}

TEST(longjmp_through_traced_frames)
{
	ASSERT_EQ(0, rec_init(1 << 16, 0));
	EXPECT_EQ(77, CALL(int (*)(int), M_OUTER)(3));
	EXPECT_EQ(0, slot_of(my_tid())->depth);
	/* outer enters deep(3..0); the jump leaves 4 frames */
	expect_line(_metadata, slot_of(my_tid()),
		    "e7 e8 e8 e8 e8 u8 u8 u8 u8 x7");
	EXPECT_EQ(4, slot_of(my_tid())->nevicted);
	rec_fini();
}

/* ---- the unwinder's hooks, called with crafted registers ---- */

static jmp_buf h_env;
static uint64_t h_ret_seen;

static __attribute__((noinline)) int h_f3(int x)
{
	/* an unwinder starts: the real callers go back into their slots */
	CALL(void (*)(uint64_t, uint64_t), M_UNWIND)(0, 0);
	h_ret_seen = (uint64_t)(uintptr_t)__builtin_return_address(0);
	longjmp(h_env, 1);
	return x;
}

static __attribute__((noinline)) int h_f2(int x)
{
	return CALL(int (*)(int), M_DEEP + 100)(x) + 1;
}

static __attribute__((noinline)) int h_f1(int x)
{
	volatile int r = x;

	if (!setjmp(h_env))
		r = CALL(int (*)(int), M_DEEP + 99)(x);
	else	/* the catch block: no exception object, sp's rule */
		CALL(void (*)(uint64_t, uint64_t), M_CATCH)(0, 0);
	return r + 40;
}

TEST(unwind_and_catch_hooks)
{
	ASSERT_EQ(0, rec_init(1 << 16, 0));
	stub_write(M_DEEP + 98, (void *)h_f1, BFT_PF_ALL);
	stub_write(M_DEEP + 99, (void *)h_f2, BFT_PF_ALL);
	stub_write(M_DEEP + 100, (void *)h_f3, BFT_PF_ALL);
	EXPECT_EQ(41, CALL(int (*)(int), M_DEEP + 98)(1));
	EXPECT_NE(exit_addr(), h_ret_seen);
	EXPECT_EQ(0, slot_of(my_tid())->depth);
	expect_line(_metadata, slot_of(my_tid()),
		    "e106 e107 e108 u108 u107 x106");
	rec_fini();
}

TEST(throw_hook_names_types)
{
	static const char *const n1 = "St13runtime_error", *n2 = "i";
	const void *ti1[2] = { NULL, n1 }, *ti2[2] = { NULL, n2 };
	struct bfi_exc *exc;
	struct decoded d;

	ASSERT_EQ(0, rec_init(1 << 12, 0));
	CALL(void (*)(uint64_t, uint64_t), M_THROW)(0, (uintptr_t)ti1);
	CALL(void (*)(uint64_t, uint64_t), M_THROW)(0, (uintptr_t)ti2);
	CALL(void (*)(uint64_t, uint64_t), M_THROW)(0, (uintptr_t)ti1);
	exc = (struct bfi_exc *)((uint8_t *)R.area + BFI_EXC_OFF);
	EXPECT_EQ((uintptr_t)ti1, exc[0].tinfo);
	EXPECT_EQ(1, exc[0].ready);
	EXPECT_STREQ(n1, exc[0].name);
	EXPECT_STREQ(n2, exc[1].name);
	EXPECT_EQ(0, exc[2].tinfo);
	ASSERT_EQ(0, decode_init(&d));
	ASSERT_EQ(0, decode_feed(&d, slot_of(my_tid())));
	decode_end(&d);
	EXPECT_EQ(3, bft_stream_stats(&d.s)->throws);
	EXPECT_STREQ("t1 t2 t1\n", line_of(d.text));
	decode_free(&d);
	rec_fini();
}

/* ---- a frame on another stack, wrongly taken for gone ---- */

static ucontext_t co_main, co_ctx;

static __attribute__((noinline)) int co_g(int x)
{
	swapcontext(&co_ctx, &co_main);	/* g stays pending over there */
	return x + 100;
}

static int co_result;

static void co_body(void)
{
	co_result = CALL(int (*)(int), M_CO_G)(5);
}

static __attribute__((noinline)) int co_f(int x)
{
	swapcontext(&co_main, &co_ctx);
	return x + 1;
}

TEST(evicted_frame_on_another_stack_still_returns)
{
	static char co_stack[64 << 10];

	ASSERT_EQ(0, rec_init(1 << 16, 0));
	stub_write(M_CO_F, (void *)co_f, BFT_PF_ALL);
	stub_write(M_CO_G, (void *)co_g, BFT_PF_ALL);
	ASSERT_EQ(0, getcontext(&co_ctx));
	co_ctx.uc_stack.ss_sp = co_stack;
	co_ctx.uc_stack.ss_size = sizeof(co_stack);
	co_ctx.uc_link = &co_main;
	makecontext(&co_ctx, co_body, 0);
	/* f switches to g's stack and back, then returns: g looks gone */
	EXPECT_EQ(2, CALL(int (*)(int), M_CO_F)(1));
	EXPECT_EQ(1, slot_of(my_tid())->nevicted);
	/* g resumes and returns through its evicted entry */
	ASSERT_EQ(0, swapcontext(&co_main, &co_ctx));
	EXPECT_EQ(105, co_result);
	expect_line(_metadata, slot_of(my_tid()), "e13 e14 u14 x13");
	EXPECT_EQ(0, slot_of(my_tid())->evicted[0].slot);
	rec_fini();
}

/* ---- a reused thread block: a new tid in the same %fs:0 ---- */

static __thread uint32_t fake_tid;

TEST(tid_change_takes_the_slot_over)
{
	struct decoded d;
	uint64_t tp;

	ASSERT_EQ(0, rec_init(1 << 12, 0));
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	fake_tid = my_tid();
	R.area->tid_off = (int64_t)((uintptr_t)&fake_tid - tp);
	CALL(int (*)(int), M_LEAF)(1);
	fake_tid = 424242;
	CALL(int (*)(int), M_LEAF)(1);
	EXPECT_EQ(424242, slot_at(0)->tid);
	ASSERT_EQ(0, decode_init(&d));
	ASSERT_EQ(0, decode_feed(&d, slot_at(0)));
	decode_end(&d);
	EXPECT_EQ(2, d.threads);
	EXPECT_EQ(my_tid(), d.thread_tid[0]);
	EXPECT_EQ(424242, d.thread_tid[1]);
	decode_free(&d);
	rec_fini();
}

/* A shadow stack the program overwrote: its return has no address. */
static __attribute__((noinline)) int f_lose(int x)
{
	slot_of(my_tid())->depth = 0;
	return x;
}

TEST(a_return_nobody_recorded_aborts)
{
	int status;
	pid_t pid;

	ASSERT_EQ(0, rec_init(1 << 12, 0));
	stub_write(M_LOSE, (void *)f_lose, BFT_PF_ALL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		CALL(int (*)(int), M_LOSE)(1);
		_exit(0);	/* never: the recorder has no address */
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(SIGABRT, WTERMSIG(status));
	rec_fini();
}

TEST(heartbeat_sync_after_flush_ns)
{
	struct decoded d;
	int i;

	ASSERT_EQ(0, rec_init(1 << 16, 0));
	R.area->flush_ns = 1;	/* every record finds it passed */
	for (i = 0; i < 5; i++) {
		struct timespec t = { 0, 2000 };

		CALL(int (*)(int), M_LEAF)(i);
		nanosleep(&t, NULL);
	}
	ASSERT_EQ(0, decode_init(&d));
	ASSERT_EQ(0, decode_feed(&d, slot_of(my_tid())));
	decode_end(&d);
	EXPECT_EQ(10, bft_stream_stats(&d.s)->by_kind[BFT_REC_SYNC]);
	EXPECT_EQ(10, bft_stream_stats(&d.s)->by_kind[BFT_REC_THREAD]);
	EXPECT_EQ(0, bft_stream_stats(&d.s)->errors);
	EXPECT_STREQ("e1 x1 e1 x1 e1 x1 e1 x1 e1 x1\n", line_of(d.text));
	decode_free(&d);
	rec_fini();
}

TEST(blob_header)
{
	const struct bfi_rec_hdr *h = (const void *)bfi_rec_bin;

	EXPECT_EQ(BFI_MAGIC, h->magic);
	EXPECT_EQ(BFI_VERSION, h->version);
	EXPECT_EQ(bfi_rec_bin_len, h->size);
	EXPECT_LT(h->enter_off, h->size);
	EXPECT_LT(h->exit_off, h->size);
}

TEST_HARNESS_MAIN
