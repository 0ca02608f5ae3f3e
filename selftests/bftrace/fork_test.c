// SPDX-License-Identifier: GPL-2.0
/*
 * A traced process forks inside traced functions, on both backends.  The
 * child is not a target, yet the kernel gives it copies of the pending
 * return probes (uprobe_copy_process()), so it returns through them, and
 * its pages keep the parent's breakpoints until a handler asks for their
 * removal.  The child must run as it would untraced, and the trace must
 * hold the parent's calls and nothing of the child's: before Linux 6.6
 * the BPF backend's links are perf events, whose return programs the
 * kernel runs without the process filter it applies to entries.
 *
 * On 6.1 the same path runs, at each return, the return programs of every
 * perf-event link on the probe: two processes of one program, both traced,
 * each had every return recorded twice.
 *
 * The BPF variants: uprobe_multi links where the kernel has them, and the
 * perf-event links forced with BFT_BPF_UPROBE_MULTI=0.
 *
 * The inline variant patches another process (ptrace cannot stop this
 * one's own threads): a fork of this test that runs the same calls on
 * command.  Its fork children inherit the patched code and a copy of the
 * area, with the control page wiped (MADV_WIPEONFORK): they record
 * nothing, write nothing into the parent's rings, and return through
 * their copy of the shadow stack.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "capture/bft_backend.h"
#include "bft_selftest.h"

#define PIN_DIR		"/sys/fs/bpf/bftrace-fork"
#define FORKS		8
#define M_OUTER		21
#define M_FORK		22
#define M_CHILD		23
#define CHILD_OK	42

static pid_t child_pid;

/* The child returns 3v, the parent 0 (or -1: fork failed). */
__attribute__((noipa, used)) long fork_fn(long v)
{
	pid_t pid = fork();

	if (pid > 0)
		child_pid = pid;
	asm volatile("" : : : "memory");
	return pid == 0 ? 3 * v : pid < 0 ? -1 : 0;
}

__attribute__((noipa, used)) long outer_fn(long v)
{
	return fork_fn(v) + 1;
}

/* Called by the child only, through the breakpoint it inherited. */
__attribute__((noipa, used)) long child_fn(long v)
{
	asm volatile("" : : "r"(v) : "memory");
	return v + 1;
}

static char exe[4096];

static const struct bst_fn fns[] = {
	{ .file = exe, .func = "outer_fn", .method_id = M_OUTER },
	{ .file = exe, .func = "fork_fn", .method_id = M_FORK },
	{ .file = exe, .func = "child_fn", .method_id = M_CHILD },
};

FIXTURE(fork) {
	struct bst_session s;
	struct bft_bpf *b;
	struct bst_trace t;
	void *inl;		/* the inline backend's session, or NULL */
	char *inl_dir;
	struct bst_proc kid[2];	/* the inline variant's targets */
};

FIXTURE_VARIANT(fork) {
	bool bpf;
	bool inl;
	const char *multi;	/* BFT_BPF_UPROBE_MULTI, NULL: the default */
};

FIXTURE_VARIANT_ADD(fork, module) {
	.bpf = false,
};

FIXTURE_VARIANT_ADD(fork, bpf) {
	.bpf = true,
};

FIXTURE_VARIANT_ADD(fork, bpf_perf_links) {
	.bpf = true,
	.multi = "0",
};

FIXTURE_VARIANT_ADD(fork, inline) {
	.inl = true,
};

FIXTURE_SETUP(fork)
{
	struct bft_nl_probe probes[3];
	int r, res[3];
	char why[512];
	ssize_t n;

	for (int i = 0; i < 2; i++)
		self->kid[i].in_fd = self->kid[i].out_fd = -1;
	if (variant->inl) {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		ASSERT_LT(0, n);
		exe[n] = '\0';
		r = bst_inline_open(&self->inl, &self->inl_dir, why,
				    sizeof(why));
		if (r > 0)
			SKIP(return, "inline backend: %s", why);
		ASSERT_EQ(0, r) TH_LOG("inline backend: %s", why);
		return;
	}
	setenv("BFT_BPF_PIN_DIR", PIN_DIR, 1);
	if (variant->multi)
		setenv("BFT_BPF_UPROBE_MULTI", variant->multi, 1);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_LT(0, n);
	exe[n] = '\0';
	r = bst_backend_open(variant->bpf, &self->s, &self->b, 2, why,
			     sizeof(why));
	if (r > 0)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	if (variant->bpf) {
		ASSERT_EQ(0, bst_resolve(fns, 3, probes));
		ASSERT_EQ(0, bft_bpf_attach(self->b, (uint32_t)getpid(), probes,
					    3, res))
			TH_LOG("%s", bft_bpf_errmsg(self->b));
		for (int i = 0; i < 3; i++) {
			ASSERT_EQ(0, res[i]) TH_LOG("probe %d", i);
		}
		/* the variant is the kind of link it says */
		if (variant->multi)
			ASSERT_FALSE(bft_bpf_multi(self->b));
		TH_LOG("%s links", bft_bpf_multi(self->b) ? "uprobe_multi" :
		       "perf-event");
		ASSERT_EQ(0, bft_bpf_start(self->b, true, NULL))
			TH_LOG("%s", bft_bpf_errmsg(self->b));
	} else {
		ASSERT_EQ(0, bst_attach_fns(&self->s, getpid(), fns, 3));
		ASSERT_EQ(0, bst_start(&self->s, false));
	}
}

FIXTURE_TEARDOWN(fork)
{
	bst_trace_free(&self->t);
	for (int i = 0; i < 2; i++)
		bst_proc_kill(&self->kid[i]);
	if (variant->inl)
		bst_inline_close(self->inl, self->inl_dir);
	else if (variant->bpf)
		bst_bpf_close(self->b);
	else if (self->s.nl)
		bst_session_close(&self->s);
	unsetenv("BFT_BPF_UPROBE_MULTI");
}

static int stop_and_collect(FIXTURE_DATA(fork) *self, bool bpf)
{
	int err;

	if (bpf) {
		err = bft_bpf_mode_cmd(self->b, BFT_CMD_STOP, NULL);
		return err ? err : bst_bpf_collect(self->b, 300, 10000, &self->t);
	}
	err = bst_mode(&self->s, BFT_CMD_STOP);
	return err ? err : bst_collect(&self->s, 300, 10000, &self->t);
}

/* Whether thread th holds n calls of child_fn, and nothing else. */
static bool only_child_fn_calls(const struct bst_thread *th, size_t n)
{
	if (!th || th->n != 2 * n)
		return false;
	for (size_t i = 0; i < th->n; i++)
		if (th->ev[i].kind != (i % 2 ? BST_EXIT : BST_ENTER) ||
		    th->ev[i].id != (i % 2 ? 0 : M_CHILD))
			return false;
	return true;
}

/* ---- the inline variant: a target forked from this test ---- */

/* FORKS forks inside outer_fn and fork_fn; how many children were right. */
static int fork_loop(void)
{
	const pid_t me = getpid();
	int ok = 0;

	for (long i = 1; i <= FORKS; i++) {
		long r = outer_fn(i);
		int st;

		if (getpid() != me)	/* the child, out of both frames */
			_exit(r == 3 * i + 1 && child_fn(r) == r + 1 ?
			      CHILD_OK : 1);
		if (r != 1 || waitpid(child_pid, &st, 0) != child_pid)
			return -1;
		ok += WIFEXITED(st) && WEXITSTATUS(st) == CHILD_OK;
	}
	return ok;
}

/* 'f': fork_loop(), 'c': FORKS calls of child_fn, anything else: exit. */
static int kid_body(int in, int out, void *arg)
{
	char c;

	(void)arg;
	dprintf(out, "ready\n");
	while (read(in, &c, 1) == 1) {
		if (c == 'f') {
			dprintf(out, "forked %d\n", fork_loop());
		} else if (c == 'c') {
			for (long i = 0; i < FORKS; i++)
				child_fn(i);
			dprintf(out, "called\n");
		} else {
			return 0;
		}
	}
	return 3;
}

static int kid_attach(FIXTURE_DATA(fork) *self, pid_t pid)
{
	const struct bft_backend_ops *ops = &bft_backend_inline;
	struct bft_nl_probe probes[3];
	int res[3], e;

	e = bst_resolve(fns, 3, probes);
	if (!e)
		e = ops->attach(self->inl, (uint32_t)pid, probes, 3, res);
	if (e) {
		fprintf(stderr, "# attach to %d: %s\n", pid, ops->errmsg(self->inl));
		return e;
	}
	for (int i = 0; i < 3; i++) {
		if (res[i]) {
			fprintf(stderr, "# %s not patched: %s\n", fns[i].func,
			    strerror(-res[i]));
			return res[i];
		}
	}
	return 0;
}

/* Stop, check the code is the file's again, collect. */
static int kid_stop_collect(FIXTURE_DATA(fork) *self)
{
	const struct bft_backend_ops *ops = &bft_backend_inline;
	uint8_t mode;
	int e = ops->mode_cmd(self->inl, BFT_CMD_STOP, &mode);

	if (e) {
		snprintf(self->t.err, sizeof(self->t.err), "stop: %s",
			 ops->errmsg(self->inl));
		return e;
	}
	for (int i = 0; i < 2; i++) {
		if (self->kid[i].pid &&
		    bst_text_matches_files(self->kid[i].pid)) {
			snprintf(self->t.err, sizeof(self->t.err), "the code "
				 "of %d differs from its files after stop",
				 self->kid[i].pid);
			return -EIO;
		}
	}
	return bst_ops_collect(ops, self->inl, 300, 10000, &self->t);
}

/* Send the kid its last command and check it exits with 0. */
static bool kid_quit(struct bst_proc *kid)
{
	return !bst_proc_send(kid, 'q') && !bst_proc_wait_exit(kid, 10000) &&
	       WIFEXITED(kid->status) && WEXITSTATUS(kid->status) == 0;
}

static void fork_inline(struct __test_metadata *_metadata,
			FIXTURE_DATA(fork) *self)
{
	const struct bft_backend_ops *ops = &bft_backend_inline;
	struct bst_proc *kid = &self->kid[0];
	const struct bst_thread *th = NULL;
	char line[64];
	uint8_t mode;
	int ok = -2;

	ASSERT_EQ(0, bst_proc_fork(kid, kid_body, NULL, 10000));
	ASSERT_EQ(0, kid_attach(self, kid->pid));
	ASSERT_EQ(0, ops->mode_cmd(self->inl, BFT_CMD_START, &mode))
		TH_LOG("start: %s", ops->errmsg(self->inl));
	ASSERT_EQ(0, bst_proc_send(kid, 'f'));
	ASSERT_EQ(0, bst_proc_read_line(kid, line, sizeof(line), 30000));
	EXPECT_EQ(1, sscanf(line, "forked %d", &ok));
	EXPECT_EQ(FORKS, ok) TH_LOG("children that ran right: %d", ok);
	ASSERT_EQ(0, kid_stop_collect(self)) TH_LOG("%s", self->t.err);
	for (size_t i = 0; i < self->t.nth; i++) {
		EXPECT_EQ((uint32_t)kid->pid, self->t.th[i].tgid)
			TH_LOG("process %u in the trace", self->t.th[i].tgid);
	}
	ASSERT_EQ(1, bst_trace_threads_of(&self->t, (uint32_t)kid->pid, &th,
					  1));
	EXPECT_EQ(0, self->t.orphans);
	EXPECT_EQ(0, self->t.unbalanced);
	if (th->n != 4 * FORKS) {
		char *text = bst_ev_text(th->ev, th->n);

		TH_LOG("the parent: %s", text ? text : "?");
		free(text);
	}
	ASSERT_EQ(4 * FORKS, th->n);
	for (size_t i = 0; i < th->n; i++) {
		static const uint32_t id[4] = { M_OUTER, M_FORK, 0, 0 };

		EXPECT_EQ(i % 4 < 2 ? BST_ENTER : BST_EXIT, th->ev[i].kind)
			TH_LOG("record %zu", i);
		EXPECT_EQ(id[i % 4], th->ev[i].id) TH_LOG("record %zu", i);
	}
	EXPECT_TRUE(kid_quit(kid)) TH_LOG("wait status %#x", kid->status);
}

static void two_inline(struct __test_metadata *_metadata,
		       FIXTURE_DATA(fork) *self)
{
	const struct bft_backend_ops *ops = &bft_backend_inline;
	const struct bst_thread *th[2] = { NULL, NULL };
	uint8_t mode;

	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, bst_proc_fork(&self->kid[i], kid_body, NULL,
					   10000));
		ASSERT_EQ(0, kid_attach(self, self->kid[i].pid));
	}
	ASSERT_EQ(0, ops->mode_cmd(self->inl, BFT_CMD_START, &mode))
		TH_LOG("start: %s", ops->errmsg(self->inl));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, bst_proc_send(&self->kid[i], 'c'));
		ASSERT_EQ(0, bst_proc_wait_line(&self->kid[i], "called",
						10000));
	}
	ASSERT_EQ(0, kid_stop_collect(self)) TH_LOG("%s", self->t.err);
	for (int i = 0; i < 2; i++) {
		char *text;

		EXPECT_EQ(1, bst_trace_threads_of(&self->t,
						  (uint32_t)self->kid[i].pid,
						  &th[i], 1));
		text = th[i] ? bst_ev_text(th[i]->ev, th[i]->n) : NULL;
		EXPECT_TRUE(only_child_fn_calls(th[i], FORKS))
			TH_LOG("process %d: %s", i, text ? text : "no thread");
		free(text);
		EXPECT_TRUE(kid_quit(&self->kid[i]))
			TH_LOG("wait status %#x", self->kid[i].status);
	}
	EXPECT_EQ(0, self->t.orphans);
	EXPECT_EQ(0, self->t.unbalanced);
}

TEST_F_TIMEOUT(fork, child_runs_untraced_and_stays_out_of_the_trace, 120)
{
	const pid_t me = getpid();
	const struct bst_thread *th[4];
	struct bst_ev want[4 * FORKS];
	size_t nth, nw = 0;
	int ok = 0;

	/* this harness runs the body after a SKIP in the setup */
	if (_metadata->skip)
		return;
	if (variant->inl) {
		fork_inline(_metadata, self);
		return;
	}
	for (long i = 1; i <= FORKS; i++) {
		long r = outer_fn(i);
		int st;

		if (getpid() != me)	/* the child, out of both frames */
			_exit(r == 3 * i + 1 && child_fn(r) == r + 1 ?
			      CHILD_OK : 1);
		ASSERT_EQ(1, r);
		ASSERT_EQ(child_pid, waitpid(child_pid, &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == CHILD_OK)
			TH_LOG("child %d of %ld: wait status %#x", child_pid, i,
			       st);
		ok += WIFEXITED(st) && WEXITSTATUS(st) == CHILD_OK;
		want[nw++] = (struct bst_ev){ .kind = BST_ENTER, .id = M_OUTER };
		want[nw++] = (struct bst_ev){ .kind = BST_ENTER, .id = M_FORK };
		want[nw++] = (struct bst_ev){ .kind = BST_EXIT };
		want[nw++] = (struct bst_ev){ .kind = BST_EXIT };
	}
	EXPECT_EQ(FORKS, ok);

	ASSERT_EQ(0, stop_and_collect(self, variant->bpf))
		TH_LOG("%s", self->t.err);

	for (size_t i = 0; i < self->t.nth; i++) {
		const struct bst_thread *o = &self->t.th[i];
		char *text = bst_ev_text(o->ev, o->n);

		EXPECT_EQ((uint32_t)me, o->tgid)
			TH_LOG("process %u in the trace, thread %u: %s",
			       o->tgid, o->tid, text ? text : "?");
		free(text);
	}
	nth = bst_trace_threads_of(&self->t, me, th, 4);
	ASSERT_EQ(1, nth);
	EXPECT_EQ(0, self->t.orphans);
	EXPECT_EQ(0, self->t.unbalanced);
	if (th[0]->n != nw) {
		char *text = bst_ev_text(th[0]->ev, th[0]->n);

		TH_LOG("the parent: %s", text ? text : "?");
		free(text);
	}
	ASSERT_EQ(nw, th[0]->n);
	for (size_t i = 0; i < nw; i++) {
		EXPECT_EQ(want[i].kind, th[0]->ev[i].kind) TH_LOG("record %zu", i);
		EXPECT_EQ(want[i].id, th[0]->ev[i].id) TH_LOG("record %zu", i);
	}
}

TEST_F_TIMEOUT(fork, two_processes_on_the_same_probes_each_get_their_own, 120)
{
	const pid_t me = getpid();
	const struct bst_thread *th[2] = { NULL, NULL };
	int go[2], res[3], st;
	struct bft_nl_probe probes[3];
	pid_t kid;

	if (_metadata->skip)
		return;
	if (variant->inl) {
		two_inline(_metadata, self);
		return;
	}
	/* forked before anything traced runs: it inherits no return probe */
	ASSERT_EQ(0, pipe(go));
	kid = fork();
	ASSERT_LE(0, kid);
	if (kid == 0) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		for (long i = 0; i < FORKS; i++)
			child_fn(i);
		_exit(CHILD_OK);
	}
	close(go[0]);
	if (variant->bpf) {
		ASSERT_EQ(0, bst_resolve(fns, 3, probes));
		ASSERT_EQ(0, bft_bpf_attach(self->b, (uint32_t)kid, probes, 3,
					    res))
			TH_LOG("%s", bft_bpf_errmsg(self->b));
	} else {
		ASSERT_EQ(0, bst_attach_fns(&self->s, kid, fns, 3));
	}
	for (long i = 0; i < FORKS; i++)
		child_fn(i);
	ASSERT_EQ(1, write(go[1], "g", 1));
	close(go[1]);
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == CHILD_OK)
		TH_LOG("wait status %#x", st);
	ASSERT_EQ(0, stop_and_collect(self, variant->bpf))
		TH_LOG("%s", self->t.err);

	EXPECT_EQ(1, bst_trace_threads_of(&self->t, me, &th[0], 1));
	EXPECT_EQ(1, bst_trace_threads_of(&self->t, kid, &th[1], 1));
	for (int i = 0; i < 2; i++) {
		char *text = th[i] ? bst_ev_text(th[i]->ev, th[i]->n) : NULL;

		EXPECT_TRUE(only_child_fn_calls(th[i], FORKS))
			TH_LOG("%s: %s", i ? "the second process" : "this one",
			       text ? text : "no thread");
		free(text);
	}
	EXPECT_EQ(0, self->t.orphans);
	EXPECT_EQ(0, self->t.unbalanced);
}

TEST_HARNESS_MAIN
