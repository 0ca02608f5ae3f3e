// SPDX-License-Identifier: GPL-2.0
/*
 * The inline backend and a target's life: patched code that threads are
 * inside of at every stop, vfork and exec in a traced process, and signal
 * handlers on an alternate stack that run traced functions while the
 * interrupted thread is inside them (or inside the recorder).
 *
 * The targets are forks of this test (bst_proc_fork) running the traced
 * functions below: this file is their executable, and a stop must leave
 * every byte of it in their memory as the file has it.  Their results are
 * checked against the same functions run here, where nothing is patched.
 *
 * BFT_INLINE_CYCLES sets the stress test's attach/stop cycles (100).  The
 * guests skip this test (BFT_INLINE_VARIANTS=0): it needs no kernel feature.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "capture/bft_backend.h"
#include "bft_selftest.h"

#define M_TOP		31
#define M_MID		32
#define M_LEAF		33
#define M_FORK		34
#define LEAF_SPIN	400	/* threads spend their time inside leaf_fn */
#define SIG_SPIN	20000	/* the signal target's: about 10 us a call */
#define STRESS_THREADS	4
#define STRESS_STRIDE	1000003L
#define SIG_SENT	2000	/* signals sent to the signal target */
#define VFORK_STATUS	7
#define EXEC_STATUS	9
#define EXEC_ENV	"BFT_INLINE_TEST_EXIT"

/*
 * A traced process that exec's this file ends here, before the harness:
 * at once (a vfork child), or once told on stdin, after saying that it
 * runs on stdout (a target whose stop comes after its exec).
 */
__attribute__((constructor)) static void exec_end(void)
{
	const char *env = getenv(EXEC_ENV);
	int st = env ? atoi(env) : 0;
	char c;

	if (!env)
		return;
	if (st == EXEC_STATUS) {
		dprintf(STDOUT_FILENO, "execd\n");
		if (read(STDIN_FILENO, &c, 1) != 1)
			_exit(3);
	}
	_exit(st);
}

static volatile int leaf_spin = LEAF_SPIN;

__attribute__((noipa, used)) long leaf_fn(long v)
{
	long x = v;

	for (int k = 0; k < leaf_spin; k++)
		asm volatile("" : "+r"(x));
	return x * 3 + 1;
}

__attribute__((noipa, used)) long mid_fn(long v)
{
	return leaf_fn(v) + leaf_fn(v + 1);
}

__attribute__((noipa, used)) long top_fn(long v)
{
	return mid_fn(v) ^ (v << 1);
}

static char exe[4096];

static const struct bst_fn fns[] = {
	{ .file = exe, .func = "top_fn", .method_id = M_TOP },
	{ .file = exe, .func = "mid_fn", .method_id = M_MID },
	{ .file = exe, .func = "leaf_fn", .method_id = M_LEAF },
	{ .file = exe, .func = "fork_fn", .method_id = M_FORK },
};

/*
 * What a thread of a target computes from its first n calls, here where
 * nothing is patched; without the spin, which changes no result.
 */
static long sum_expect(long first, long n)
{
	int spin = leaf_spin;
	long sum = 0;

	leaf_spin = 0;
	for (long i = 0; i < n; i++)
		sum += top_fn(first + i);
	leaf_spin = spin;
	return sum;
}

FIXTURE(inline) {
	void *inl;
	char *dir;
	struct bst_proc kid;
	struct bst_trace t;
};

FIXTURE_SETUP(inline)
{
	char why[512];
	ssize_t n;
	int r;

	self->kid.in_fd = self->kid.out_fd = -1;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_LT(0, n);
	exe[n] = '\0';
	r = bst_inline_open(&self->inl, &self->dir, why, sizeof(why));
	if (r > 0)
		SKIP(return, "inline backend: %s", why);
	ASSERT_EQ(0, r) TH_LOG("inline backend: %s", why);
}

FIXTURE_TEARDOWN(inline)
{
	bst_proc_kill(&self->kid);
	bst_inline_close(self->inl, self->dir);
	bst_trace_free(&self->t);
}

/* Attach the first n of fns to pid; 0 or -errno, and why. */
static int kid_attach(void *inl, pid_t pid, size_t n, char *why, size_t len)
{
	const struct bft_backend_ops *ops = &bft_backend_inline;
	struct bft_nl_probe probes[ARRAY_SIZE(fns)];
	int res[ARRAY_SIZE(fns)], e;

	e = bst_resolve(fns, n, probes);
	if (e) {
		snprintf(why, len, "resolving: %s", strerror(-e));
		return e;
	}
	e = ops->attach(inl, (uint32_t)pid, probes, n, res);
	if (e) {
		snprintf(why, len, "attach: %s", ops->errmsg(inl));
		return e;
	}
	for (size_t i = 0; i < n; i++) {
		if (res[i]) {
			snprintf(why, len, "%s not patched: %s", fns[i].func,
				 strerror(-res[i]));
			return res[i];
		}
	}
	return 0;
}

/* Events of kind and method id in th. */
static size_t trace_count(const struct bst_thread *th, uint8_t kind,
			  uint32_t id)
{
	size_t n = 0;

	for (size_t i = 0; th && i < th->n; i++)
		n += th->ev[i].kind == kind && th->ev[i].id == id;
	return n;
}

/* ---- the stress target: threads that never leave the traced code ---- */

static volatile int stress_stop;
static long stress_iters[STRESS_THREADS], stress_sum[STRESS_THREADS];

static void *stress_thread(void *arg)
{
	long t = (long)arg, i = 0, sum = 0;

	while (!__atomic_load_n(&stress_stop, __ATOMIC_RELAXED))
		sum += top_fn(t * STRESS_STRIDE + i++);
	stress_iters[t] = i;
	stress_sum[t] = sum;
	return NULL;
}

static int stress_body(int in, int out, void *arg)
{
	pthread_t th[STRESS_THREADS];
	char c;

	(void)arg;
	for (long t = 0; t < STRESS_THREADS; t++)
		if (pthread_create(&th[t], NULL, stress_thread, (void *)t))
			return 2;
	dprintf(out, "ready\n");
	if (read(in, &c, 1) != 1)
		return 3;
	__atomic_store_n(&stress_stop, 1, __ATOMIC_RELAXED);
	for (int t = 0; t < STRESS_THREADS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < STRESS_THREADS; t++)
		dprintf(out, "%ld %ld\n", stress_iters[t], stress_sum[t]);
	return 0;
}

static unsigned int stress_cycles(void)
{
	const char *env = getenv("BFT_INLINE_CYCLES");
	long n = env ? strtol(env, NULL, 10) : 100;

	return n > 0 && n < 100000 ? (unsigned int)n : 100;
}

/*
 * Attach, start, a few ms of tracing, stop, again and again, each stop
 * coming while every thread of the target is deep in patched functions:
 * after each stop the code is the file's, and at the end the target's
 * sums are those of an untraced run.
 */
TEST_F_TIMEOUT(inline, attach_stop_cycles_leave_code_and_results_intact, 300)
{
	const struct bft_backend_ops *ops = &bft_backend_inline;
	const unsigned int cycles = stress_cycles();
	uint64_t t_attach = 0, t_stop = 0, t_check = 0, t_collect = 0;
	uint64_t max_cycle = 0;
	uint64_t t0 = bst_now_ns(), e;
	uint64_t events = 0;
	unsigned int collected = 0;
	char why[512];
	uint8_t mode;

	if (_metadata->skip)
		return;
	/* small rings: the stress is in the patching, not the decoding */
	ASSERT_EQ(0, ops->set_opt(self->inl, BFT_OPT_BUF_SIZE, 1 << 14, NULL))
		TH_LOG("%s", ops->errmsg(self->inl));
	ASSERT_EQ(0, bst_proc_fork(&self->kid, stress_body, NULL, 10000));
	for (unsigned int c = 0; c < cycles; c++) {
		uint64_t a = bst_now_ns(), b, d;

		ASSERT_EQ(0, kid_attach(self->inl, self->kid.pid, 3, why,
					sizeof(why)))
			TH_LOG("cycle %u: %s", c, why);
		ASSERT_EQ(0, ops->mode_cmd(self->inl, BFT_CMD_START, &mode))
			TH_LOG("cycle %u: start: %s", c, ops->errmsg(self->inl));
		b = bst_now_ns();
		bst_sleep_ms(2 + c % 4);
		d = bst_now_ns();
		ASSERT_EQ(0, ops->mode_cmd(self->inl, BFT_CMD_STOP, &mode))
			TH_LOG("cycle %u: stop: %s", c, ops->errmsg(self->inl));
		t_attach += b - a;
		t_stop += bst_now_ns() - d;
		if (bst_now_ns() - a > max_cycle)
			max_cycle = bst_now_ns() - a;
		e = bst_now_ns();
		ASSERT_EQ(0, bst_text_matches_files(self->kid.pid))
			TH_LOG("cycle %u: the code differs from the files", c);
		t_check += bst_now_ns() - e;
		ASSERT_TRUE(bst_proc_alive(&self->kid)) TH_LOG("cycle %u", c);
		/* read the rings every few cycles: a full ring only loses */
		if (c % 5)
			continue;
		bst_trace_free(&self->t);
		e = bst_now_ns();
		ASSERT_EQ(0, bst_ops_collect(ops, self->inl, 20, 5000, &self->t))
			TH_LOG("cycle %u: %s", c, self->t.err);
		t_collect += bst_now_ns() - e;
		collected++;
		for (size_t i = 0; i < self->t.nth; i++) {
			EXPECT_EQ((uint32_t)self->kid.pid, self->t.th[i].tgid);
			events += self->t.th[i].n;
		}
	}
	ASSERT_EQ(0, bst_proc_send(&self->kid, 'q'));
	for (int t = 0; t < STRESS_THREADS; t++) {
		char line[128];
		long iters, sum;

		ASSERT_EQ(0, bst_proc_read_line(&self->kid, line, sizeof(line),
						30000));
		ASSERT_EQ(2, sscanf(line, "%ld %ld", &iters, &sum));
		EXPECT_LT(0, iters);
		EXPECT_EQ(sum_expect(t * STRESS_STRIDE, iters), sum)
			TH_LOG("thread %d, %ld calls", t, iters);
	}
	ASSERT_EQ(0, bst_proc_wait_exit(&self->kid, 10000));
	EXPECT_TRUE(WIFEXITED(self->kid.status) &&
		    WEXITSTATUS(self->kid.status) == 0)
		TH_LOG("wait status %#x", self->kid.status);
	EXPECT_LT(0, events);
	TH_LOG("%u cycles in %.2f s: attach+start %.2f ms, stop %.2f ms, "
	       "code check %.2f ms on average, longest attach to stop %.2f ms; "
	       "%u collections (%.2f s), %llu events", cycles,
	       (double)(bst_now_ns() - t0) / 1e9,
	       (double)t_attach / cycles / 1e6, (double)t_stop / cycles / 1e6,
	       (double)t_check / cycles / 1e6,
	       (double)max_cycle / 1e6, collected, (double)t_collect / 1e9,
	       (unsigned long long)events);
}

/* ---- vfork and exec inside traced functions ---- */

/*
 * The vfork child runs a traced call on its parent's slot, then exec's.
 * A negative v: this process exec's, from inside this traced frame.
 */
__attribute__((noipa, used)) long fork_fn(long v)
{
	char env[64];
	char *const argv[] = { exe, NULL }, *const envp[] = { env, NULL };
	pid_t pid;
	int st;

	snprintf(env, sizeof(env), EXEC_ENV "=%d",
		 v < 0 ? EXEC_STATUS : VFORK_STATUS);
	if (v < 0) {
		execve(exe, argv, envp);
		return -1;
	}
	pid = vfork();
	if (pid == 0) {
		leaf_fn(v);
		execve(exe, argv, envp);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) + v : -2;
}

static int life_body(int in, int out, void *arg)
{
	char c;

	(void)arg;
	dprintf(out, "ready\n");
	while (read(in, &c, 1) == 1) {
		switch (c) {
		case 'v':
			dprintf(out, "%ld %ld\n", top_fn(fork_fn(100)),
				top_fn(5));
			break;
		case 'e':	/* the new image talks on stdin and stdout */
			if (dup2(in, STDIN_FILENO) < 0 ||
			    dup2(out, STDOUT_FILENO) < 0)
				return 5;
			fork_fn(-1);
			return 4;
		default:
			return 0;
		}
	}
	return 3;
}

TEST_F_TIMEOUT(inline, vfork_and_exec_in_a_traced_process, 120)
{
	const struct bft_backend_ops *ops = &bft_backend_inline;
	const struct bst_thread *th = NULL;
	char why[512], line[128];
	long got, five;
	uint8_t mode;

	if (_metadata->skip)
		return;
	ASSERT_EQ(0, bst_proc_fork(&self->kid, life_body, NULL, 10000));
	ASSERT_EQ(0, kid_attach(self->inl, self->kid.pid, 4, why, sizeof(why)))
		TH_LOG("%s", why);
	ASSERT_EQ(0, ops->mode_cmd(self->inl, BFT_CMD_START, &mode))
		TH_LOG("start: %s", ops->errmsg(self->inl));

	/* vfork: the parent survives, its child's exit status comes back */
	ASSERT_EQ(0, bst_proc_send(&self->kid, 'v'));
	ASSERT_EQ(0, bst_proc_read_line(&self->kid, line, sizeof(line), 10000));
	ASSERT_EQ(2, sscanf(line, "%ld %ld", &got, &five));
	EXPECT_EQ(top_fn(VFORK_STATUS + 100), got);
	EXPECT_EQ(top_fn(5), five);
	ASSERT_TRUE(bst_proc_alive(&self->kid));
	ASSERT_EQ(0, bst_ops_collect(ops, self->inl, 100, 5000, &self->t))
		TH_LOG("%s", self->t.err);
	ASSERT_EQ(1, bst_trace_threads_of(&self->t, (uint32_t)self->kid.pid,
					  &th, 1));
	/* the vfork child's leaf_fn lands in its parent's slot (the doc) */
	EXPECT_EQ(1, trace_count(th, BST_ENTER, M_FORK));
	EXPECT_EQ(2, trace_count(th, BST_ENTER, M_TOP));
	EXPECT_EQ(5, trace_count(th, BST_ENTER, M_LEAF));
	EXPECT_EQ(0, self->t.orphans);
	EXPECT_EQ(0, self->t.unbalanced);
	bst_trace_free(&self->t);

	/*
	 * exec from inside a traced frame: the image goes, patches and all;
	 * the stop that comes after it writes nothing into the new one
	 */
	ASSERT_EQ(0, bst_proc_send(&self->kid, 'e'));
	ASSERT_EQ(0, bst_proc_wait_line(&self->kid, "execd", 10000));
	EXPECT_EQ(0, ops->mode_cmd(self->inl, BFT_CMD_STOP, &mode))
		TH_LOG("stop: %s", ops->errmsg(self->inl));
	EXPECT_EQ(0, bst_text_matches_files(self->kid.pid));
	EXPECT_EQ(0, bst_ops_collect(ops, self->inl, 100, 5000, &self->t))
		TH_LOG("%s", self->t.err);
	ASSERT_TRUE(bst_proc_alive(&self->kid));
	ASSERT_EQ(0, bst_proc_send(&self->kid, 'q'));
	ASSERT_EQ(0, bst_proc_wait_exit(&self->kid, 10000));
	EXPECT_TRUE(WIFEXITED(self->kid.status) &&
		    WEXITSTATUS(self->kid.status) == EXEC_STATUS)
		TH_LOG("wait status %#x", self->kid.status);
}

/* ---- signal handlers on an alternate stack ---- */

#define ALT_SIZE	16384

static volatile long sig_hits, sig_sum, sig_on_alt;
static volatile int sig_done;
static char *sig_alt;

static void sig_handler(int sig)
{
	char here;

	(void)sig;
	sig_hits++;
	sig_on_alt += &here >= sig_alt && &here < sig_alt + ALT_SIZE;
	sig_sum += leaf_fn(sig_hits);
}

static void *sig_sender(void *arg)
{
	pthread_t main_th = *(pthread_t *)arg;

	for (int i = 0; i < SIG_SENT; i++) {
		pthread_kill(main_th, SIGUSR1);
		usleep(50);
	}
	__atomic_store_n(&sig_done, 1, __ATOMIC_RELAXED);
	return NULL;
}

static int sig_body(int in, int out, void *arg)
{
	struct sigaction sa = { .sa_handler = sig_handler,
				.sa_flags = SA_ONSTACK | SA_RESTART };
	stack_t ss = { .ss_size = ALT_SIZE };
	pthread_t me = pthread_self(), sender;
	sigset_t block;
	long sum = 0, i;
	char c;

	(void)arg;
	leaf_spin = SIG_SPIN;
	sig_alt = ss.ss_sp = malloc(ALT_SIZE);
	if (!ss.ss_sp || sigaltstack(&ss, NULL) ||
	    sigaction(SIGUSR1, &sa, NULL))
		return 2;
	dprintf(out, "ready\n");
	if (read(in, &c, 1) != 1)
		return 3;
	if (pthread_create(&sender, NULL, sig_sender, &me))
		return 2;
	for (i = 0; !__atomic_load_n(&sig_done, __ATOMIC_RELAXED); i++)
		sum += top_fn(i);
	pthread_join(sender, NULL);
	/* no handler runs past this line: the sums are final */
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, NULL);
	dprintf(out, "%ld %ld %ld %ld %ld\n", i, sum, sig_hits, sig_sum,
		sig_on_alt);
	return read(in, &c, 1) == 1 ? 0 : 3;
}

TEST_F_TIMEOUT(inline, signal_handlers_on_an_alternate_stack, 120)
{
	const struct bft_backend_ops *ops = &bft_backend_inline;
	const struct bst_thread *th = NULL;
	struct bft_nl_status st;
	long iters, sum, hits, hsum, on_alt, want = 0;
	uint64_t lost = 0;
	char why[512], line[256];
	size_t leaves;
	uint8_t mode;

	if (_metadata->skip)
		return;
	ASSERT_EQ(0, bst_proc_fork(&self->kid, sig_body, NULL, 10000));
	ASSERT_EQ(0, kid_attach(self->inl, self->kid.pid, 3, why, sizeof(why)))
		TH_LOG("%s", why);
	ASSERT_EQ(0, ops->mode_cmd(self->inl, BFT_CMD_START, &mode));
	ASSERT_EQ(0, bst_proc_send(&self->kid, 'g'));
	ASSERT_EQ(0, bst_proc_read_line(&self->kid, line, sizeof(line), 60000));
	ASSERT_EQ(5, sscanf(line, "%ld %ld %ld %ld %ld", &iters, &sum, &hits,
			    &hsum, &on_alt));
	EXPECT_EQ(sum_expect(0, iters), sum);
	leaf_spin = 0;
	for (long i = 1; i <= hits; i++)
		want += leaf_fn(i);
	EXPECT_EQ(want, hsum);
	EXPECT_EQ(hits, on_alt);
	EXPECT_LT(0, hits);
	ASSERT_EQ(0, ops->get_status(self->inl, &st));
	for (uint32_t i = 0; i < st.nr_cpus; i++)
		lost += st.cpus[i].lost;
	bft_nl_status_free(&st);
	ASSERT_EQ(0, ops->mode_cmd(self->inl, BFT_CMD_STOP, &mode));
	EXPECT_EQ(0, bst_text_matches_files(self->kid.pid));
	ASSERT_EQ(0, bst_ops_collect(ops, self->inl, 100, 10000, &self->t))
		TH_LOG("%s", self->t.err);
	ASSERT_EQ(1, bst_trace_threads_of(&self->t, (uint32_t)self->kid.pid,
					  &th, 1));
	EXPECT_EQ(0, self->t.orphans);
	EXPECT_EQ(0, self->t.unbalanced);
	EXPECT_EQ(iters, trace_count(th, BST_ENTER, M_TOP));
	EXPECT_EQ(iters, trace_count(th, BST_ENTER, M_MID));
	/* a handler's call inside the recorder is nested: lost, counted */
	leaves = trace_count(th, BST_ENTER, M_LEAF);
	EXPECT_EQ((uint64_t)(2 * iters + hits), leaves + lost)
		TH_LOG("%zu leaf_fn entries, %llu lost", leaves,
		       (unsigned long long)lost);
	EXPECT_EQ(0, bst_proc_send(&self->kid, 'q'));
	ASSERT_EQ(0, bst_proc_wait_exit(&self->kid, 10000));
	EXPECT_TRUE(WIFEXITED(self->kid.status) &&
		    WEXITSTATUS(self->kid.status) == 0)
		TH_LOG("wait status %#x", self->kid.status);
	TH_LOG("%ld top_fn calls, %ld signals handled on the alternate stack, "
	       "%zu leaf_fn entries recorded, %llu nested (lost)", iters, hits,
	       leaves, (unsigned long long)lost);
}

TEST_HARNESS_MAIN
