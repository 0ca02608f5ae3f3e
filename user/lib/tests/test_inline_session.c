// SPDX-License-Identifier: GPL-2.0
/*
 * The inline backend's registry, modes and reader (bfi_session.h,
 * bfi_rings.h) against a child that maps an area-sized anonymous mapping
 * and sleeps: the test plays the recorder by writing the child's memory
 * through /proc/PID/mem, and checks what the registry, the control word
 * and the reader make of it, hostile rings included.  Every child is
 * killed and reaped in the teardown, even when a check fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "inline/bfi_rings.h"
#include "inline/bfi_session.h"

#define RING	4096u

/* The child's identity, as the controller records it at attach. */
static struct bft_owner child_id;

/* A child with a fresh area; its address and identity come over a pipe. */
static pid_t area_child(uint64_t *area)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct bfi_area *a = mmap(NULL, BFI_AREA_SIZE(RING),
					  PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t addr = (uint64_t)(uintptr_t)a;
		struct bft_owner me;

		if (a == MAP_FAILED || bft_owner_self(&me))
			_exit(1);
		a->magic = BFI_MAGIC;
		a->version = BFI_VERSION;
		a->nslots = BFI_NSLOTS;
		a->size = BFI_AREA_SIZE(RING);
		a->ring_size = RING;
		if (write(p[1], &addr, sizeof(addr)) != sizeof(addr) ||
		    write(p[1], &me, sizeof(me)) != sizeof(me))
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (pid > 0 && (read(p[0], area, sizeof(*area)) != sizeof(*area) ||
			read(p[0], &child_id, sizeof(child_id)) !=
			sizeof(child_id))) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

static int mem_io(pid_t pid, uint64_t addr, void *buf, size_t len, bool wr)
{
	char p[64];
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/mem", pid);
	fd = open(p, O_RDWR);
	if (fd < 0)
		return -errno;
	n = wr ? pwrite(fd, buf, len, (off_t)addr) :
		 pread(fd, buf, len, (off_t)addr);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

static void target_of(struct bfi_target *t, pid_t pid, uint64_t area)
{
	memset(t, 0, sizeof(*t));
	t->tgid = (uint32_t)pid;
	t->start = child_id.start;
	t->pidns = child_id.pidns;
	t->area = area;
	t->area_size = BFI_AREA_SIZE(RING);
	t->ring_size = RING;
	t->nslots = BFI_NSLOTS;
}

FIXTURE(reg) {
	char dir[64];
	pid_t child;
	uint64_t area;
	struct bfi_session *s;
};

FIXTURE_SETUP(reg)
{
	char err[256];

	snprintf(self->dir, sizeof(self->dir), "/tmp/bfi-test-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	setenv("BFT_INLINE_DIR", self->dir, 1);
	self->child = area_child(&self->area);
	ASSERT_LT(0, self->child);
	ASSERT_EQ(0, bfi_session_open(&self->s, true, err, sizeof(err)));
}

FIXTURE_TEARDOWN(reg)
{
	char cmd[128];

	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	bfi_session_close(self->s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", self->dir);
}

static void register_child(struct __test_metadata *_metadata,
			   FIXTURE_DATA(reg) *self)
{
	struct bfi_target t;

	target_of(&t, self->child, self->area);
	ASSERT_EQ(0, bfi_session_lock(self->s));
	ASSERT_EQ(0, bfi_session_target_save(self->s, &t));
	bfi_session_unlock(self->s);
	bfi_target_free(&t);
}

TEST_F(reg, round_trip)
{
	struct bfi_target t, *u;
	struct bfi_session *s2;
	struct stat st;
	char err[256];

	ASSERT_EQ(0, stat(self->dir, &st));
	EXPECT_EQ(0700, st.st_mode & 0777);
	target_of(&t, self->child, self->area);
	t.ncodes = 1;
	t.codes = calloc(1, sizeof(*t.codes));
	t.codes[0] = (struct bfi_code_area){ 0x7f0000000000, BFI_CODE_SIZE,
					     8192 };
	t.npatches = 1;
	t.patches = calloc(1, sizeof(*t.patches));
	t.patches[0] = (struct bfi_patch){ .at = 0x401000, .stub = 0x7f0000002000,
					   .len = 5, .index = 0, .live = 1,
					   .orig = { 0xf3, 0x0f, 0x1e, 0xfa,
						     0x55, 0x48 } };
	t.nmethods = 1;
	t.methods = calloc(1, sizeof(*t.methods));
	t.methods[0] = (struct bfi_method_rec){ 7, BFT_PF_RETURN, 0x1000,
		strdup("/usr/lib/a b%c.so"), strdup("ns::f(int, char)") };
	ASSERT_EQ(0, bfi_session_lock(self->s));
	ASSERT_EQ(0, bfi_session_target_save(self->s, &t));
	bfi_session_unlock(self->s);

	ASSERT_EQ(0, bfi_session_open(&s2, false, err, sizeof(err)));
	ASSERT_EQ(1, s2->ntargets);
	u = bfi_session_target(s2, (uint32_t)self->child);
	ASSERT_NE(NULL, u);
	EXPECT_EQ(t.start, u->start);
	EXPECT_EQ(self->area, u->area);
	EXPECT_EQ(RING, u->ring_size);
	ASSERT_EQ(1, u->ncodes);
	EXPECT_EQ(8192, u->codes[0].used);
	ASSERT_EQ(1, u->npatches);
	EXPECT_EQ(0, memcmp(&t.patches[0], &u->patches[0],
			    sizeof(t.patches[0])));
	ASSERT_EQ(1, u->nmethods);
	EXPECT_STREQ("/usr/lib/a b%c.so", u->methods[0].path);
	EXPECT_STREQ("ns::f(int, char)", u->methods[0].name);
	EXPECT_EQ(1, bfi_session_probes(s2));
	EXPECT_EQ(0, u->index);
	bfi_session_close(s2);
	bfi_target_free(&t);
}

TEST_F(reg, reaps_the_dead)
{
	char p[128];

	register_child(_metadata, self);
	snprintf(p, sizeof(p), "%s/%d", self->dir, self->child);
	ASSERT_EQ(0, access(p, F_OK));
	kill(self->child, SIGKILL);
	waitpid(self->child, NULL, 0);
	self->child = 0;
	ASSERT_EQ(0, bfi_session_lock(self->s));
	EXPECT_EQ(0, self->s->ntargets);
	bfi_session_unlock(self->s);
	EXPECT_NE(0, access(p, F_OK));
}

static uint64_t ctl_of(FIXTURE_DATA(reg) *self)
{
	uint64_t c = ~0ull;

	mem_io(self->child, self->area + BFI_LIVE_OFF, &c, sizeof(c), false);
	return c;
}

static char proc_state(pid_t pid)
{
	char p[64], buf[512], *q;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	f = fopen(p, "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		if (f)
			fclose(f);
		return '?';
	}
	fclose(f);
	q = strrchr(buf, ')');
	return q ? q[2] : '?';
}

TEST_F(reg, modes_reach_the_area)
{
	uint8_t mode;
	uint64_t c;

	register_child(_metadata, self);
	EXPECT_EQ(-EINVAL, bfi_session_set_mode(self->s, BFT_CMD_UNPAUSE,
						NULL, &mode));
	ASSERT_EQ(0, bfi_session_set_mode(self->s, BFT_CMD_START, NULL,
					  &mode));
	EXPECT_EQ(BFT_MODE_TRACING, mode);
	c = ctl_of(self);
	EXPECT_EQ(BFT_MODE_TRACING, BFI_CTL_MODE(c));
	EXPECT_EQ(1, BFI_CTL_GEN(c));
	ASSERT_EQ(0, bfi_session_set_mode(self->s, BFT_CMD_SUSPEND, NULL,
					  &mode));
	c = ctl_of(self);
	EXPECT_EQ(BFT_MODE_SUSPENDED, BFI_CTL_MODE(c));
	EXPECT_EQ(0, BFI_CTL_BREAK(c));
	EXPECT_EQ(2, BFI_CTL_GEN(c));
	/* the break is in the word that resumes: the recorder writes it */
	ASSERT_EQ(0, bfi_session_set_mode(self->s, BFT_CMD_UNSUSPEND, NULL,
					  &mode));
	c = ctl_of(self);
	EXPECT_EQ(BFT_MODE_TRACING, BFI_CTL_MODE(c));
	EXPECT_EQ(BFT_BREAK_SUSPEND, BFI_CTL_BREAK(c));
	ASSERT_EQ(0, bfi_session_set_mode(self->s, BFT_CMD_PAUSE, NULL,
					  &mode));
	c = ctl_of(self);
	EXPECT_EQ(BFT_MODE_PAUSED, BFI_CTL_MODE(c));
	EXPECT_EQ(0, BFI_CTL_BREAK(c));
	for (int i = 0; i < 100 && proc_state(self->child) != 'T'; i++)
		usleep(10000);
	EXPECT_EQ('T', proc_state(self->child));
	ASSERT_EQ(0, bfi_session_set_mode(self->s, BFT_CMD_UNPAUSE, NULL,
					  &mode));
	for (int i = 0; i < 100 && proc_state(self->child) == 'T'; i++)
		usleep(10000);
	EXPECT_NE('T', proc_state(self->child));
	/* the options the recorder reads went in at the start */
	{
		struct bfi_area a;

		ASSERT_EQ(0, mem_io(self->child, self->area, &a, sizeof(a),
				    false));
		EXPECT_EQ(1000, a.res_ns);
		EXPECT_EQ(100000000ull, a.flush_ns);
	}
	ASSERT_EQ(0, bfi_session_set_mode(self->s, BFT_CMD_STOP, NULL,
					  &mode));
	c = ctl_of(self);
	EXPECT_EQ(BFT_MODE_SHUTTING_DOWN, BFI_CTL_MODE(c));
	EXPECT_EQ(0, BFI_CTL_BREAK(c));
	EXPECT_EQ(6, BFI_CTL_GEN(c));
}

/* A start after a stop carries BREAK_STOP, for threads that slept. */
TEST_F(reg, start_after_stop_says_stop)
{
	uint8_t mode;
	uint64_t c;

	ASSERT_EQ(0, bfi_session_set_mode(self->s, BFT_CMD_START, NULL,
					  &mode));
	ASSERT_EQ(0, bfi_session_set_mode(self->s, BFT_CMD_STOP, NULL,
					  &mode));
	register_child(_metadata, self);
	ASSERT_EQ(0, bfi_session_set_mode(self->s, BFT_CMD_START, NULL,
					  &mode));
	c = ctl_of(self);
	EXPECT_EQ(BFT_MODE_TRACING, BFI_CTL_MODE(c));
	EXPECT_EQ(BFT_BREAK_STOP, BFI_CTL_BREAK(c));
	EXPECT_EQ(3, BFI_CTL_GEN(c));
}

/* What the reader gave, per stream. */
struct seen {
	uint8_t bytes[4 * RING];
	size_t n;
	unsigned int stream;
	uint64_t idle[BFI_STREAMS];
	unsigned int ended;
	uint64_t area;
	uint64_t size;
	unsigned int outside;
};

static struct seen *seen_now;

static int seen_bytes(unsigned int stream, const void *d, size_t len,
		      void *arg)
{
	struct seen *s = arg;

	s->stream = stream;
	if (s->n + len <= sizeof(s->bytes)) {
		memcpy(s->bytes + s->n, d, len);
		s->n += len;
	}
	return 0;
}

static int seen_idle(unsigned int stream, uint64_t until, void *arg)
{
	struct seen *s = arg;

	if (until == BFI_RINGS_END)
		s->ended++;
	else if (stream < BFI_STREAMS)
		s->idle[stream] = until;
	return 0;
}

static void seen_pread(uint32_t tgid, uint64_t addr, size_t len)
{
	(void)tgid;
	if (addr < seen_now->area ||
	    addr + len > seen_now->area + seen_now->size)
		seen_now->outside++;
}

static uint64_t slot_at(FIXTURE_DATA(reg) *self, unsigned int i)
{
	return self->area + BFI_SLOTS_OFF + (uint64_t)i * BFI_SLOT_SIZE(RING);
}

static void slot_set(FIXTURE_DATA(reg) *self, unsigned int i, size_t field,
		     uint64_t v, size_t len)
{
	mem_io(self->child, slot_at(self, i) + field, &v, len, true);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

TEST_F(reg, rings_read_and_wrap)
{
	static struct seen s;
	struct bfi_rings *r;
	uint8_t data[300];
	uint64_t tail = 0, before;
	char err[256];

	memset(&s, 0, sizeof(s));
	s.area = self->area;
	s.size = BFI_AREA_SIZE(RING);
	seen_now = &s;
	bfi_rings_pread_hook = seen_pread;
	register_child(_metadata, self);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)i;
	/* 300 bytes that wrap: they start 100 bytes before the ring's end */
	mem_io(self->child, slot_at(self, 3) + BFI_RING_OFF + RING - 100,
	       data, 100, true);
	mem_io(self->child, slot_at(self, 3) + BFI_RING_OFF, data + 100, 200,
	       true);
	slot_set(self, 3, offsetof(struct bfi_slot, tail), 3 * RING - 100, 8);
	slot_set(self, 3, offsetof(struct bfi_slot, head), 3 * RING + 200, 8);
	ASSERT_EQ(0, bfi_rings_open(&r, seen_bytes, seen_idle, &s, err,
				    sizeof(err)));
	before = mono_ns();
	EXPECT_EQ(300, bfi_rings_read(r));
	EXPECT_EQ(3, s.stream);
	ASSERT_EQ(300, s.n);
	EXPECT_EQ(0, memcmp(data, s.bytes, 300));
	mem_io(self->child, slot_at(self, 3) + offsetof(struct bfi_slot, tail),
	       &tail, 8, false);
	EXPECT_EQ(3 * RING + 200, tail);
	EXPECT_LT(before - 1000, s.idle[3]);
	EXPECT_GE(mono_ns(), s.idle[3]);
	EXPECT_NE(0, s.idle[BFI_NSLOTS]);	/* no target: idle too */
	EXPECT_EQ(0, bfi_rings_read(r));
	EXPECT_EQ(0, bfi_rings_lost_bytes(r));
	EXPECT_STREQ("", bfi_rings_errmsg(r));
	/* the target exits: its streams end */
	kill(self->child, SIGKILL);
	waitpid(self->child, NULL, 0);
	self->child = 0;
	EXPECT_EQ(0, bfi_rings_read(r));
	EXPECT_EQ(BFI_NSLOTS, s.ended);
	EXPECT_EQ(0, s.outside);
	bfi_rings_close(r);
	bfi_rings_pread_hook = NULL;
}

TEST_F(reg, rings_hostile)
{
	static struct seen s;
	struct bfi_rings *r;
	char err[256];

	memset(&s, 0, sizeof(s));
	s.area = self->area;
	s.size = BFI_AREA_SIZE(RING);
	seen_now = &s;
	bfi_rings_pread_hook = seen_pread;
	register_child(_metadata, self);
	/* a head far beyond the ring, and beyond the area */
	slot_set(self, 0, offsetof(struct bfi_slot, head), 1ull << 40, 8);
	/* busy stuck odd with nothing new */
	slot_set(self, 1, offsetof(struct bfi_slot, busy), 1, 4);
	/* the last slot, at the very end of the area */
	slot_set(self, BFI_NSLOTS - 1, offsetof(struct bfi_slot, head),
		 ~0ull, 8);
	ASSERT_EQ(0, bfi_rings_open(&r, seen_bytes, seen_idle, &s, err,
				    sizeof(err)));
	EXPECT_EQ(0, bfi_rings_read(r));
	EXPECT_EQ(0, s.n);
	EXPECT_EQ((1ull << 40) + ~0ull, bfi_rings_lost_bytes(r));
	EXPECT_NE(NULL, strstr(bfi_rings_errmsg(r), "more than its size"));
	EXPECT_EQ(0, s.idle[1]);	/* busy: not idle yet */
	EXPECT_NE(0, s.idle[2]);
	/* the head goes backwards: nothing read, and reading goes on */
	slot_set(self, 0, offsetof(struct bfi_slot, head), 5, 8);
	EXPECT_EQ(0, bfi_rings_read(r));
	/* a tail that the reader did not write */
	slot_set(self, 0, offsetof(struct bfi_slot, tail), 1, 8);
	slot_set(self, 0, offsetof(struct bfi_slot, head), 20, 8);
	EXPECT_EQ(15, bfi_rings_read(r));
	EXPECT_EQ(0, s.outside);
	bfi_rings_close(r);
	bfi_rings_pread_hook = NULL;
}

TEST_HARNESS_MAIN
