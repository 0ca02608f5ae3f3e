// SPDX-License-Identifier: GPL-2.0
/*
 * The inline backend's ptrace layer on real child processes: stopping
 * every thread (spinning, blocked in read, in nanosleep, being born),
 * system calls run inside the child, its memory (read-only text too), its
 * vDSO, and the refusals.  Every child is killed and reaped by the
 * fixture's teardown, whatever failed.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "inline/bfi_proc.h"
#include "inline/bfi_ptrace.h"
#include "inline/bfi_remote.h"
#include "inline/bfi_vdso.h"

#define SLEEP_NS	1500000000ll

struct shared {
	volatile uint64_t spin[2];
	volatile int read_ret, read_byte, read_done;
	volatile int sleep_ret, sleep_done;
	volatile int64_t slept_ns;
	volatile int ready;
	volatile uint64_t fn;	/* target_unused in the child */
};

static struct shared *sh;
static int pipefd[2];

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Never run: its first byte is rewritten and put back. */
__attribute__((noinline, used)) int target_unused(int x)
{
	return x * 3 + 1;
}

static void *spin_fn(void *arg)
{
	volatile uint64_t *c = arg;

	for (;;)
		(*c)++;
	return NULL;
}

static void *read_fn(void *arg)
{
	char b = 0;
	int r;

	(void)arg;
	r = (int)read(pipefd[0], &b, 1);
	sh->read_ret = r < 0 ? -errno : r;
	sh->read_byte = b;
	sh->read_done = 1;
	return NULL;
}

static void *sleep_fn(void *arg)
{
	struct timespec ts = { SLEEP_NS / 1000000000ll, SLEEP_NS % 1000000000ll };
	int64_t t0 = mono_ns();

	(void)arg;
	sh->sleep_ret = nanosleep(&ts, NULL) ? -errno : 0;
	sh->slept_ns = mono_ns() - t0;
	sh->sleep_done = 1;
	/* still one of the threads a stop finds, however long the stops take */
	for (;;)
		pause();
	return NULL;
}

static void *brief_fn(void *arg)
{
	(void)arg;
	usleep(2000);
	return NULL;
}

static volatile sig_atomic_t usr1;

static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
	sh->spin[0] = (uint64_t)usr1;
}

enum kind { QUIET, FOUR, CHURN, VFORK, ZOMBIE_LEADER };

/* Valgrind preloads its own objects into the processes it runs. */
static bool under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}

static __attribute__((noreturn)) void child_main(enum kind k)
{
	pthread_t th;

	sh->fn = (uint64_t)(uintptr_t)target_unused;
	if (k == FOUR) {
		pthread_create(&th, NULL, spin_fn, (void *)&sh->spin[0]);
		pthread_create(&th, NULL, spin_fn, (void *)&sh->spin[1]);
		pthread_create(&th, NULL, read_fn, NULL);
		pthread_create(&th, NULL, sleep_fn, NULL);
	}
	if (k == VFORK && vfork() == 0) {
		/* the parent waits, killable only, until this child is gone */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	if (k == ZOMBIE_LEADER) {
		pthread_create(&th, NULL, spin_fn, (void *)&sh->spin[0]);
		sh->ready = 1;
		/* not pthread_exit: it unwinds, and a constructor's frames
		 * (child_by_exec) have nothing to unwind to */
		syscall(SYS_exit, 0);
	}
	signal(SIGUSR1, on_usr1);
	sh->ready = 1;
	for (;;) {
		if (k == CHURN) {
			pthread_attr_t a;

			pthread_attr_init(&a);
			pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
			pthread_create(&th, &a, brief_fn, NULL);
			usleep(300);
		} else {
			pause();
		}
	}
}

/*
 * Under valgrind the child runs natively: this program again, by exec,
 * which valgrind does not follow.  The layer under test runs in the test
 * process, under valgrind; a target serialised by valgrind's scheduler
 * would test valgrind.  The shared page and the pipe come as fds.
 */
#define CHILD_ENV "BFT_KIDS_CHILD"

static int shfd = -1;

static pid_t start_child(enum kind k)
{
	char *argv[] = { "test_inline_ptrace", NULL };
	char env[64], exe[PATH_MAX];
	/* valgrind answers for its client here, not in an exec */
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	pid_t pid = fork();

	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (under_valgrind() && n > 0) {
		exe[n] = 0;
		snprintf(env, sizeof(env), "%d %d %d %d", (int)k, shfd,
			 pipefd[0], pipefd[1]);
		setenv(CHILD_ENV, env, 1);
		execv(exe, argv);
		_exit(127);
	}
	child_main(k);
}

__attribute__((constructor)) static void child_by_exec(void)
{
	const char *e = getenv(CHILD_ENV);
	int k, fd;

	if (!e || sscanf(e, "%d %d %d %d", &k, &fd, &pipefd[0],
			 &pipefd[1]) != 4)
		return;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (sh == MAP_FAILED)
		_exit(126);
	child_main((enum kind)k);
}

FIXTURE(kids) {
	pid_t pid[3];
};

FIXTURE_SETUP(kids)
{
	memset(self->pid, 0, sizeof(self->pid));
	shfd = memfd_create("bft-kids", 0);
	ASSERT_LE(0, shfd);
	ASSERT_EQ(0, ftruncate(shfd, sizeof(*sh)));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED,
		  shfd, 0);
	ASSERT_NE(MAP_FAILED, sh);
	ASSERT_EQ(0, pipe(pipefd));
}

FIXTURE_TEARDOWN(kids)
{
	for (int i = 2; i >= 0; i--)
		if (self->pid[i] > 0) {
			kill(self->pid[i], SIGKILL);
			waitpid(self->pid[i], NULL, 0);
		}
	close(pipefd[0]);
	close(pipefd[1]);
	munmap(sh, sizeof(*sh));
	close(shfd);
}

static void wait_ready(void)
{
	for (int i = 0; i < 2000 && !sh->ready; i++)
		usleep(1000);
	usleep(20000);	/* the threads reach their loops and calls */
}

/* Threads of pid /proc lists, zombies aside. */
static size_t live_threads(pid_t pid)
{
	char path[300], buf[512], *p;
	struct dirent *d;
	size_t n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	while (dir && (d = readdir(dir))) {
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid,
			 d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		buf[fread(buf, 1, sizeof(buf) - 1, f)] = 0;
		fclose(f);
		p = strrchr(buf, ')');
		if (p && p[2] != 'Z' && p[2] != 'X')
			n++;
	}
	if (dir)
		closedir(dir);
	return n;
}

TEST_F(kids, hundred_stops_with_injections)
{
	char err[256];
	uint64_t before[2];

	self->pid[0] = start_child(FOUR);
	ASSERT_GT(self->pid[0], 0);
	wait_ready();
	for (int i = 0; i < 100; i++) {
		unsigned char pat[64], back[64];
		struct bfi_world *w;
		uint64_t a;

		ASSERT_EQ(0, bfi_world_stop(self->pid[0], &w, err, sizeof(err)))
			TH_LOG("stop %d: %s", i, err);
		EXPECT_EQ(5, bfi_world_nthreads(w));
		for (size_t t = 0; t < bfi_world_nthreads(w); t++) {
			EXPECT_NE(0, bfi_world_rip(w, t));
			EXPECT_GT(bfi_world_tid(w, t), 0);
		}
		EXPECT_EQ(0, bfi_remote_mmap(w, 0, 0, 4096, PROT_READ | PROT_WRITE,
					     &a, err, sizeof(err)))
			TH_LOG("mmap: %s", err);
		memset(pat, i, sizeof(pat));
		EXPECT_EQ(0, bfi_mem_write(w, a + 100, pat, sizeof(pat)));
		EXPECT_EQ(0, bfi_mem_read(w, a + 100, back, sizeof(back)));
		EXPECT_EQ(0, memcmp(pat, back, sizeof(pat)));
		EXPECT_EQ(0, bfi_remote_mprotect(w, a, 4096, PROT_READ));
		EXPECT_EQ(0, bfi_remote_munmap(w, a, 4096));
		EXPECT_EQ(-EINVAL, bfi_remote_munmap(w, a + 1, 4096));
		bfi_world_release(w);
	}
	before[0] = sh->spin[0];
	before[1] = sh->spin[1];
	usleep(20000);
	EXPECT_LT(before[0], sh->spin[0]);
	EXPECT_LT(before[1], sh->spin[1]);
	EXPECT_EQ(0, sh->read_done);
	ASSERT_EQ(1, write(pipefd[1], "k", 1));
	for (int i = 0; i < 3000 && !(sh->read_done && sh->sleep_done); i++)
		usleep(1000);
	EXPECT_EQ(1, sh->read_ret);
	EXPECT_EQ('k', sh->read_byte);
	EXPECT_EQ(1, sh->sleep_done);
	EXPECT_EQ(0, sh->sleep_ret);
	EXPECT_GE(sh->slept_ns, SLEEP_NS);
}

TEST_F(kids, threads_born_during_the_stop)
{
	char err[256];

	self->pid[0] = start_child(CHURN);
	wait_ready();
	for (int i = 0; i < 30; i++) {
		struct bfi_world *w;

		ASSERT_EQ(0, bfi_world_stop(self->pid[0], &w, err, sizeof(err)))
			TH_LOG("stop %d: %s", i, err);
		EXPECT_EQ(live_threads(self->pid[0]), bfi_world_nthreads(w));
		bfi_world_release(w);
		usleep(3000);
	}
}

TEST_F(kids, near_mapping_and_text_write)
{
	unsigned char orig, b, cc = 0xcc;
	struct bfi_world *w;
	uint64_t fn, a;
	char err[256];

	self->pid[0] = start_child(QUIET);
	wait_ready();
	fn = sh->fn;
	ASSERT_EQ(0, bfi_world_stop(self->pid[0], &w, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(0, bfi_remote_mmap(w, fn, fn + 16, 2u << 20,
				     PROT_READ | PROT_WRITE, &a, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_LT(a > fn ? a + (2u << 20) - fn : fn + 16 - a, BFI_NEAR_SPAN);
	EXPECT_EQ(0, bfi_remote_munmap(w, a, 2u << 20));
	/* read-only text, written through /proc/PID/mem */
	ASSERT_EQ(0, bfi_mem_read(w, fn, &orig, 1));
	EXPECT_EQ(*(unsigned char *)target_unused, orig);
	EXPECT_EQ(0, bfi_mem_write(w, fn, &cc, 1));
	EXPECT_EQ(0, bfi_mem_read(w, fn, &b, 1));
	EXPECT_EQ(0xcc, b);
	EXPECT_EQ(0, bfi_mem_write(w, fn, &orig, 1));
	EXPECT_EQ(0, bfi_mem_read(w, fn, &b, 1));
	EXPECT_EQ(orig, b);
	bfi_world_release(w);
	EXPECT_EQ(0, kill(self->pid[0], 0));
}

/* The [vdso] mapping of pid. */
static uint64_t vdso_range(pid_t pid, uint64_t *hi)
{
	char path[64], line[512];
	unsigned long long a = 0, b = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]")) {
			sscanf(line, "%llx-%llx", &a, &b);
			break;
		}
	if (f)
		fclose(f);
	*hi = b;
	return a;
}

TEST_F(kids, vdso_clock_and_syscall)
{
	uint64_t mine, theirs, lo, hi, sc;
	int (*gettime)(clockid_t, struct timespec *);
	struct timespec ts;
	char err[256];
	unsigned char two[2];
	struct bfi_world *w;

	if (under_valgrind())
		SKIP(return, "valgrind gives its processes no vDSO");
	self->pid[0] = start_child(QUIET);
	wait_ready();
	ASSERT_EQ(0, bfi_vdso_clock(getpid(), &mine, err, sizeof(err)));
	ASSERT_EQ(0, bfi_vdso_clock(self->pid[0], &theirs, err, sizeof(err)));
	lo = vdso_range(self->pid[0], &hi);
	ASSERT_NE(0, theirs);
	EXPECT_LE(lo, theirs);
	EXPECT_GT(hi, theirs);
	EXPECT_EQ(mine - getauxval(AT_SYSINFO_EHDR), theirs - lo);
	gettime = (int (*)(clockid_t, struct timespec *))(uintptr_t)mine;
	ASSERT_EQ(0, gettime(CLOCK_MONOTONIC, &ts));
	EXPECT_LT(llabs(mono_ns() - (ts.tv_sec * 1000000000ll + ts.tv_nsec)),
		  1000000000ll);
	ASSERT_EQ(0, bfi_vdso_syscall(self->pid[0], &sc, err, sizeof(err)));
	EXPECT_LE(lo, sc);
	EXPECT_GT(hi, sc + 1);
	ASSERT_EQ(0, bfi_world_stop(self->pid[0], &w, err, sizeof(err)));
	EXPECT_EQ(0, bfi_mem_read(w, sc, two, 2));
	EXPECT_EQ(0x0f, two[0]);
	EXPECT_EQ(0x05, two[1]);
	bfi_world_release(w);
}

TEST_F(kids, proc_probe_and_group_stop)
{
	struct bfi_proc_info pi;
	struct bfi_world *w;
	char err[256];
	long ret, args[6] = { 0 };
	int st;

	self->pid[0] = start_child(QUIET);
	wait_ready();
	ASSERT_EQ(0, bfi_proc_probe(self->pid[0], &pi, err, sizeof(err)));
	EXPECT_EQ(0, pi.seccomp);
	EXPECT_FALSE(pi.shstk);
	EXPECT_FALSE(pi.group_stop);
	EXPECT_NE(0, pi.start);
	ASSERT_EQ(0, kill(self->pid[0], SIGSTOP));
	ASSERT_EQ(self->pid[0], waitpid(self->pid[0], &st, WUNTRACED));
	ASSERT_EQ(0, bfi_proc_probe(self->pid[0], &pi, err, sizeof(err)));
	EXPECT_TRUE(pi.group_stop);
	ASSERT_EQ(0, bfi_world_stop(self->pid[0], &w, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_TRUE(bfi_world_group_stopped(w));
	EXPECT_EQ(-EAGAIN, bfi_world_syscall(w, SYS_getpid, args, &ret, err,
					     sizeof(err)));
	bfi_world_release(w);
	usleep(20000);
	ASSERT_EQ(0, bfi_proc_probe(self->pid[0], &pi, err, sizeof(err)));
	EXPECT_TRUE(pi.group_stop);
	kill(self->pid[0], SIGCONT);
}

TEST_F(kids, refusals)
{
	struct bfi_proc_info pi;
	struct bfi_world *w;
	char err[256], c;
	int sync[2];

	/* a pid that names nothing: a reaped child's */
	self->pid[0] = fork();
	if (!self->pid[0])
		_exit(0);
	waitpid(self->pid[0], NULL, 0);
	EXPECT_EQ(-ESRCH, bfi_world_stop(self->pid[0], &w, err, sizeof(err)));
	EXPECT_EQ(-ESRCH, bfi_proc_probe(self->pid[0], &pi, err, sizeof(err)));
	/* a child another tracer holds */
	self->pid[0] = start_child(QUIET);
	wait_ready();
	ASSERT_EQ(0, pipe(sync));
	self->pid[1] = fork();
	if (!self->pid[1]) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		c = ptrace(PTRACE_SEIZE, self->pid[0], 0, 0) ? 'n' : 'y';
		if (write(sync[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	ASSERT_EQ(1, read(sync[0], &c, 1));
	close(sync[0]);
	close(sync[1]);
	ASSERT_EQ('y', c);
	EXPECT_EQ(-EBUSY, bfi_world_stop(self->pid[0], &w, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "already traced")) TH_LOG("%s", err);
}

TEST_F(kids, signal_during_the_stop_is_delivered_once)
{
	struct bfi_world *w;
	char err[256];

	self->pid[0] = start_child(QUIET);
	wait_ready();
	ASSERT_EQ(0, bfi_world_stop(self->pid[0], &w, err, sizeof(err)));
	ASSERT_EQ(0, kill(self->pid[0], SIGUSR1));
	usleep(20000);
	EXPECT_EQ(0, sh->spin[0]);	/* the handler waits for release */
	bfi_world_release(w);
	/* kept while stopping again too */
	ASSERT_EQ(0, bfi_world_stop(self->pid[0], &w, err, sizeof(err)));
	bfi_world_release(w);
	for (int i = 0; i < 1000 && !sh->spin[0]; i++)
		usleep(1000);
	usleep(20000);
	EXPECT_EQ(1, sh->spin[0]);
}

/* The leader's state in /proc/PID/stat is Z (its threads live on). */
static bool leader_is_zombie(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'Z';
}

TEST_F(kids, zombie_leader_is_skipped)
{
	long ret, args[6] = { 0 };
	struct bfi_world *w;
	char err[256];

	self->pid[0] = start_child(ZOMBIE_LEADER);
	wait_ready();
	/* ready comes before the leader's pthread_exit: wait for its end */
	for (int i = 0; i < 5000 && !leader_is_zombie(self->pid[0]); i++)
		usleep(1000);
	ASSERT_TRUE(leader_is_zombie(self->pid[0]));
	ASSERT_EQ(0, bfi_world_stop(self->pid[0], &w, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(1, bfi_world_nthreads(w));
	EXPECT_NE(self->pid[0], bfi_world_tid(w, 0));
	EXPECT_EQ(0, bfi_world_syscall(w, SYS_gettid, args, &ret, err,
				       sizeof(err))) TH_LOG("%s", err);
	EXPECT_EQ(bfi_world_tid(w, 0), ret);
	bfi_world_release(w);
}

TEST_F(kids, a_thread_that_never_stops_hits_the_deadline)
{
	struct bfi_world *w;
	char err[256];
	int64_t t0;

	self->pid[0] = start_child(VFORK);
	usleep(50000);
	t0 = mono_ns();
	EXPECT_EQ(-EBUSY, bfi_world_stop(self->pid[0], &w, err, sizeof(err)));
	EXPECT_LT(mono_ns() - t0, 2 * BFI_STOP_DEADLINE_MS * 1000000ll);
	EXPECT_NE(NULL, strstr(err, "did not stop")) TH_LOG("%s", err);
}

/* Cost of one stop, one injected call and one release, for the report. */
/*
 * A short loop that threads call again and again and are inside of at
 * almost every stop, as busy threads are inside the recorder: its bounds
 * are labels, so the test knows the range exactly.
 */
__asm__(".text\n"
    ".globl bfi_test_busy_lo, bfi_test_busy_hi\n"
    "bfi_test_busy_lo:\n"
    "	mov $400, %ecx\n"
    "1:	dec %ecx\n"
    "	jnz 1b\n"
    "	ret\n"
    "bfi_test_busy_hi:\n");
extern char bfi_test_busy_lo[], bfi_test_busy_hi[];

static void *busy_fn(void *arg)
{
	volatile uint64_t *c = arg;

	for (;;) {
		/* past the red zone, which the call would overwrite */
		__asm__ __volatile__("sub $128, %%rsp\n\t"
				     "call bfi_test_busy_lo\n\t"
				     "add $128, %%rsp" : : : "rcx", "memory");
		(*c)++;
	}
	return NULL;
}

/* Threads inside the ranges at every stop are stepped out of them. */
TEST_F(kids, threads_busy_in_a_range_are_stepped_out)
{
	const uint64_t r[1][2] = { { (uint64_t)(uintptr_t)bfi_test_busy_lo,
				     (uint64_t)(uintptr_t)bfi_test_busy_hi } };
	uint64_t before;
	char err[256];

	self->pid[0] = fork();
	ASSERT_LE(0, self->pid[0]);
	if (self->pid[0] == 0) {
		pthread_t th[2];

		for (int i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, busy_fn,
				       (void *)&sh->spin[i]);
		sh->ready = 1;
		pause();
		_exit(0);
	}
	wait_ready();
	for (int i = 0; i < 50; i++) {
		struct bfi_world *w;

		ASSERT_EQ(0, bfi_world_stop_clear(self->pid[0], r, 1, &w, err,
						  sizeof(err)))
			TH_LOG("stop %d: %s", i, err);
		EXPECT_EQ(3, bfi_world_nthreads(w));
		for (size_t t = 0; t < bfi_world_nthreads(w); t++) {
			uint64_t rip = bfi_world_rip(w, t);

			EXPECT_TRUE(rip < r[0][0] || rip >= r[0][1])
				TH_LOG("stop %d: thread %zu at %#llx", i, t,
				       (unsigned long long)rip);
		}
		bfi_world_release(w);
	}
	before = sh->spin[0] + sh->spin[1];
	usleep(20000);
	EXPECT_LT(before, sh->spin[0] + sh->spin[1]);
}

TEST_F(kids, cycle_cost)
{
	long ret, args[6] = { 0 };
	struct bfi_world *w;
	char err[256];
	int64_t t0, t1, t2, stop = 0, call = 0, rel = 0;

	self->pid[0] = start_child(FOUR);
	wait_ready();
	for (int i = 0; i < 50; i++) {
		t0 = mono_ns();
		ASSERT_EQ(0, bfi_world_stop(self->pid[0], &w, err, sizeof(err)));
		t1 = mono_ns();
		ASSERT_EQ(0, bfi_world_syscall(w, SYS_getpid, args, &ret, err,
					       sizeof(err)));
		EXPECT_EQ(self->pid[0], ret);
		t2 = mono_ns();
		bfi_world_release(w);
		stop += t1 - t0;
		call += t2 - t1;
		rel += mono_ns() - t2;
	}
	TH_LOG("5 threads: stop %lld us, one injected call %lld us, release %lld us",
	       (long long)stop / 50000, (long long)call / 50000,
	       (long long)rel / 50000);
	ASSERT_EQ(1, write(pipefd[1], "k", 1));
}

TEST_HARNESS_MAIN
