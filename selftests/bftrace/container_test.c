// SPDX-License-Identifier: GPL-2.0
/*
 * A target in a container: its own pid and mount namespaces, its root an
 * overlayfs whose lower layer holds the calltree target and the libraries
 * it runs with, attached by its host pid through /proc/PID/root.
 *
 * An overlayfs copy-up (a chmod is enough) moves the path to a new upper
 * inode while the process keeps running the lower one.  The module must
 * unregister from the inode it registered on (it once computed the inode
 * again and left a freed consumer registered), and a later attach must
 * probe what the process runs, not the copy nobody executes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "bft_selftest.h"
#include "calltree_shape.h"

enum { FN_A, FN_B, FN_C, FN_EVEN, FN_ODD, FN_BODY, FN_LEAF, FN_LIB, NR_FN };

static const char *const fn_name[NR_FN] = {
	CT_FN_A, CT_FN_B, CT_FN_C, CT_FN_EVEN, CT_FN_ODD,
	CT_FN_THREAD_BODY, CT_FN_T_LEAF, CT_FN_LIB,
};

/* Calls of each function in one run (calltree_shape.h). */
static unsigned int calls_per_run(int f)
{
	unsigned int leaves = CT_NR_THREADS * (CT_NR_THREADS + 1) / 2;

	switch (f) {
	case FN_A:
	case FN_LIB:
		return CT_NEST_REPS;
	case FN_B:
		return CT_NEST_REPS + CT_NR_THREADS;
	case FN_C:
		return 2 * CT_NEST_REPS + CT_NR_THREADS;
	case FN_EVEN:
		return CT_RECUR_DEPTH / 2 + 1;
	case FN_ODD:
		return (CT_RECUR_DEPTH + 1) / 2;
	case FN_BODY:
		return CT_NR_THREADS;
	default:
		return leaves;
	}
}

#define METHOD_BASE 700

FIXTURE(container) {
	struct bst_session s;
	char dir[64];		/* lower, upper, work, merged below it */
	pid_t shell;		/* our child: unshares, mounts, waits */
	struct bst_proc target;	/* its child, pid 1 of the container */
	struct bst_trace t;
};

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in, out, err = 0;
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (out < 0) {
		err = -errno;
		close(in);
		return err;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n) {
			err = -EIO;
			break;
		}
	if (n < 0)
		err = -errno;
	close(in);
	close(out);
	return err;
}

/* The lower layer: the target, its library, and the C library's two. */
static int make_lower(const char *dir)
{
	char *exe = bst_target_path("calltree");
	char *lib = bst_target_path("libbftgt.so");
	char ld[PATH_MAX], libc[PATH_MAX], p[PATH_MAX + 64];
	int err = -ENOMEM;

	if (!exe || !lib)
		goto out;
	err = -errno;
	if (!realpath("/lib64/ld-linux-x86-64.so.2", ld) ||
	    !realpath("/lib/x86_64-linux-gnu/libc.so.6", libc))
		goto out;
	snprintf(p, sizeof(p), "%s/lower/lib64", dir);
	if (mkdir(p, 0755))
		goto out;
	snprintf(p, sizeof(p), "%s/lower/lib", dir);
	if (mkdir(p, 0755))
		goto out;
	snprintf(p, sizeof(p), "%s/lower/lib/x86_64-linux-gnu", dir);
	if (mkdir(p, 0755))
		goto out;
	snprintf(p, sizeof(p), "%s/lower/lib64/ld-linux-x86-64.so.2", dir);
	err = copy_file(ld, p, 0755);
	if (err)
		goto out;
	snprintf(p, sizeof(p), "%s/lower/lib/x86_64-linux-gnu/libc.so.6", dir);
	err = copy_file(libc, p, 0755);
	if (err)
		goto out;
	snprintf(p, sizeof(p), "%s/lower/ct", dir);
	if (mkdir(p, 0755))
		goto out;
	/* the loader finds $ORIGIN through /proc/self/exe */
	snprintf(p, sizeof(p), "%s/lower/proc", dir);
	if (mkdir(p, 0555))
		goto out;
	snprintf(p, sizeof(p), "%s/lower/ct/calltree", dir);
	err = copy_file(exe, p, 0755);
	if (err)
		goto out;
	snprintf(p, sizeof(p), "%s/lower/ct/libbftgt.so", dir);
	err = copy_file(lib, p, 0755);
out:
	free(exe);
	free(lib);
	return err;
}

/*
 * In the child: a mount and a pid namespace, the overlay mounted in it,
 * and pid 1 of the new namespace chrooted into the overlay running the
 * target.  The target's host pid goes back on report; the child then
 * waits for it and exits with its status.
 */
static void container_child(const char *dir, int in, int out, int report)
{
	char opts[512], merged[128];
	pid_t pid;
	int st;

	if (unshare(CLONE_NEWNS | CLONE_NEWPID) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		_exit(120);
	snprintf(opts, sizeof(opts), "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work",
		 dir, dir, dir);
	snprintf(merged, sizeof(merged), "%s/merged", dir);
	if (mount("overlay", merged, "overlay", 0, opts))
		_exit(121);
	pid = fork();
	if (pid < 0)
		_exit(122);
	if (pid == 0) {
		if (chroot(merged) || chdir("/") ||
		    mount("proc", "/proc", "proc", 0, NULL) ||
		    dup2(in, 0) < 0 || dup2(out, 1) < 0)
			_exit(123);
		execl("/ct/calltree", "calltree", (char *)NULL);
		_exit(124);
	}
	if (write(report, &pid, sizeof(pid)) != sizeof(pid))
		_exit(125);
	close(report);
	close(in);
	close(out);
	if (waitpid(pid, &st, 0) != pid)
		_exit(126);
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

static int container_start(FIXTURE_DATA(container) *self)
{
	int in[2], out[2], rep[2];
	pid_t pid = 0;
	int err;

	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) ||
	    pipe2(rep, O_CLOEXEC))
		return -errno;
	self->shell = fork();
	if (self->shell < 0)
		return -errno;
	if (self->shell == 0) {
		close(in[1]);
		close(out[0]);
		close(rep[0]);
		container_child(self->dir, in[0], out[1], rep[1]);
	}
	close(in[0]);
	close(out[1]);
	close(rep[1]);
	self->target.in_fd = in[1];
	self->target.out_fd = out[0];
	if (read(rep[0], &pid, sizeof(pid)) != sizeof(pid))
		pid = 0;
	close(rep[0]);
	if (pid <= 0) {
		int st = 0;

		waitpid(self->shell, &st, 0);
		self->shell = 0;
		fprintf(stderr, "# container did not start: status %d\n",
			WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -ECHILD;
	}
	self->target.pid = pid;
	signal(SIGPIPE, SIG_IGN);
	err = bst_proc_wait_line(&self->target, CT_LINE_READY, 20000);
	return err;
}

/* The target's exit status as its parent saw it; -ETIMEDOUT. */
static int container_wait(FIXTURE_DATA(container) *self, int timeout_ms)
{
	int st;

	for (int waited = 0; waited < timeout_ms; waited += 20) {
		pid_t r = waitpid(self->shell, &st, WNOHANG);

		if (r == self->shell) {
			self->shell = 0;
			self->target.pid = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		}
		bst_sleep_ms(20);
	}
	return -ETIMEDOUT;
}

FIXTURE_SETUP(container)
{
	char p[128];

	memset(&self->target, 0, sizeof(self->target));
	self->target.in_fd = self->target.out_fd = -1;
	snprintf(self->dir, sizeof(self->dir), "/run/bft-ct.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	for (int i = 0; i < 4; i++) {
		static const char *const sub[] = { "lower", "upper", "work", "merged" };

		snprintf(p, sizeof(p), "%s/%s", self->dir, sub[i]);
		ASSERT_EQ(0, mkdir(p, 0755));
	}
	ASSERT_EQ(0, make_lower(self->dir));
	ASSERT_EQ(0, bst_session_open(&self->s));
	ASSERT_EQ(0, container_start(self));
}

FIXTURE_TEARDOWN(container)
{
	if (self->target.pid > 0)
		kill(self->target.pid, SIGKILL);
	if (self->shell > 0)
		waitpid(self->shell, NULL, 0);
	self->target.pid = 0;
	bst_proc_kill(&self->target);
	if (self->s.nl)
		bst_session_close(&self->s);
	bst_trace_free(&self->t);
	{
		char cmd[160];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
		if (system(cmd))
			fprintf(stderr, "# could not remove %s\n", self->dir);
	}
}

/* Attach every function through /proc/PID/root, as bfctl names them. */
static void attach_all(struct __test_metadata *_metadata,
		       FIXTURE_DATA(container) *self)
{
	char exe[64], lib[64];
	struct bst_fn fns[NR_FN];

	snprintf(exe, sizeof(exe), "/proc/%d/root/ct/calltree", self->target.pid);
	snprintf(lib, sizeof(lib), "/proc/%d/root/ct/libbftgt.so", self->target.pid);
	for (int f = 0; f < NR_FN; f++)
		fns[f] = (struct bst_fn){
			.file = f == FN_LIB ? lib : exe,
			.func = fn_name[f], .method_id = METHOD_BASE + f,
		};
	ASSERT_EQ(0, bst_attach_fns(&self->s, self->target.pid, fns, NR_FN));
}

static void run_target(struct __test_metadata *_metadata,
		       FIXTURE_DATA(container) *self, int runs)
{
	for (int r = 0; r < runs; r++) {
		ASSERT_EQ(0, bst_proc_send(&self->target, 'r'));
		ASSERT_EQ(0, bst_proc_wait_line(&self->target, CT_LINE_DONE, 60000));
	}
}

/* Stop, collect, and check every function was seen runs times over. */
static void expect_exact(struct __test_metadata *_metadata,
			 FIXTURE_DATA(container) *self, int runs)
{
	unsigned int seen[NR_FN] = { 0 };
	const struct bst_thread *ths[64];
	size_t nth;

	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	bst_trace_free(&self->t);
	ASSERT_EQ(0, bst_collect(&self->s, 300, 20000, &self->t))
		TH_LOG("%s", self->t.err);
	nth = bst_trace_threads_of(&self->t, (uint32_t)self->target.pid, ths, 64);
	for (size_t i = 0; i < nth; i++)
		for (size_t e = 0; e < ths[i]->n; e++) {
			const struct bst_ev *ev = &ths[i]->ev[e];

			if (ev->kind != BST_EXIT && ev->id >= METHOD_BASE &&
			    ev->id < METHOD_BASE + NR_FN)
				seen[ev->id - METHOD_BASE]++;
		}
	for (int f = 0; f < NR_FN; f++) {
		EXPECT_EQ(runs * calls_per_run(f), seen[f])
			TH_LOG("%s", fn_name[f]);
	}
	EXPECT_EQ(0, self->t.orphans);
	for (uint32_t c = 0; c < self->t.nr_cpus; c++) {
		EXPECT_EQ(0, self->t.cpu[c].lost);
	}
}

/* A copy-up that keeps the content: the process keeps the lower inode. */
static void copy_up(struct __test_metadata *_metadata,
		    FIXTURE_DATA(container) *self)
{
	char p[160];
	struct stat before, after;

	snprintf(p, sizeof(p), "/proc/%d/root/ct/calltree", self->target.pid);
	ASSERT_EQ(0, stat(p, &before));
	ASSERT_EQ(0, chmod(p, 0750));
	snprintf(p, sizeof(p), "/proc/%d/root/ct/libbftgt.so", self->target.pid);
	ASSERT_EQ(0, chmod(p, 0750));
	/* the copy-up happened: the file now lives in the upper layer */
	snprintf(p, sizeof(p), "%s/upper/ct/calltree", self->dir);
	ASSERT_EQ(0, stat(p, &after));
	snprintf(p, sizeof(p), "%s/upper/ct/libbftgt.so", self->dir);
	ASSERT_EQ(0, stat(p, &after));
}

TEST_F_TIMEOUT(container, copy_up_while_traced_then_attach_again, 300)
{
	int status;

	attach_all(_metadata, self);
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
	run_target(_metadata, self, 1);
	copy_up(_metadata, self);
	run_target(_metadata, self, 1);
	/* the probes stay on the inode the target runs, through the copy-up */
	expect_exact(_metadata, self, 2);
	ASSERT_EQ(0, bst_reset(&self->s));

	/* a new attach by the same path: the path now names the upper copy */
	attach_all(_metadata, self);
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
	run_target(_metadata, self, 1);
	expect_exact(_metadata, self, 1);

	/* the target exits while attached, then the module goes */
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
	ASSERT_EQ(0, bst_proc_send(&self->target, 'q'));
	status = container_wait(self, 20000);
	ASSERT_EQ(0, status);
	ASSERT_EQ(0, bst_reset(&self->s));
	bst_session_close(&self->s);
	self->s.nl = NULL;
	ASSERT_EQ(0, bst_rmmod());
	ASSERT_EQ(0, bst_ensure_loaded());
}

TEST_F_TIMEOUT(container, target_exits_while_traced_after_copy_up, 300)
{
	attach_all(_metadata, self);
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
	run_target(_metadata, self, 1);
	copy_up(_metadata, self);
	ASSERT_EQ(0, bst_proc_send(&self->target, 'q'));
	ASSERT_EQ(0, container_wait(self, 20000));
	/* the reaper detaches the gone target from the lower inode */
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	ASSERT_EQ(0, bst_reset(&self->s));
	bst_session_close(&self->s);
	self->s.nl = NULL;
	ASSERT_EQ(0, bst_rmmod());
	ASSERT_EQ(0, bst_ensure_loaded());
}

TEST_HARNESS_MAIN
