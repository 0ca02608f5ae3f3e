// SPDX-License-Identifier: GPL-2.0
/*
 * C++ exceptions and non-local exits through traced frames (issue 10).
 *
 * The exc target (targets/exc.cc, its cases and their model in
 * targets/exc_shape.h) runs one case untraced, then under
 * "bfctl run" with a return probe on every ex_* function (bfctl adds the
 * exception hooks).  Per case:
 *   - the traced run's exit status, stdout and stderr equal the untraced
 *     run's (bfctl's own lines aside);
 *   - the rings, decoded by user/lib (bft_merge, bft_calltree), give each
 *     thread exactly the calls of the model: entries, exits, frames
 *     unwound with their reason, throws with their type name;
 *   - nothing was lost and every event the module counted was decoded.
 * Then: the loop of 1000 throws through 10 frames, three rounds, with the
 * target's memory and threads and the module's counters compared between
 * rounds; and a static, stripped build whose unwinder cannot be named,
 * where bfctl must warn and record entries only (and where --force shows
 * that the warning is right: the target dies as the issue describes).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"
#include "exc_shape.h"
#include "capture/bft_backend.h"

#define RUN_TIMEOUT_MS	240000

static char *tool_path(const char *name)
{
	char rel[64];

	/* build/selftests/targets/../../user/<name> = build/user/<name> */
	snprintf(rel, sizeof(rel), "../../user/%s", name);
	return bst_target_path(rel);
}

/* A finished run: exit status (or 128 + signal), stdout, stderr. */
struct run {
	int status;
	char *out, *err;
	pid_t pid;		/* while it runs */
	int in_fd, out_fd;	/* stdin write end, stdout read end (live runs) */
	char err_path[64];
};

/* The whole file; "" for one that was never written (a run that failed early). */
static char *output_read(const char *path)
{
	char *s = bst_slurp(path);

	return s ? s : strdup("");
}

/* Start argv with stdout to a pipe (live) or a file, stderr to a file. */
static int run_start(struct run *r, const char *const *argv, bool live)
{
	char out_path[64];
	int in[2], out[2] = { -1, -1 }, efd, ofd = -1;

	memset(r, 0, sizeof(*r));
	r->in_fd = r->out_fd = -1;
	snprintf(r->err_path, sizeof(r->err_path), "/tmp/exc_test.err.XXXXXX");
	efd = mkostemp(r->err_path, O_CLOEXEC);
	snprintf(out_path, sizeof(out_path), "/tmp/exc_test.out.XXXXXX");
	if (efd < 0 || pipe2(in, O_CLOEXEC))
		return -errno;
	if (live ? pipe2(out, O_CLOEXEC) : (ofd = mkostemp(out_path, O_CLOEXEC)) < 0)
		return -errno;
	if (!live)
		unlink(out_path);
	unlink(r->err_path);
	fflush(NULL);
	r->pid = fork();
	if (r->pid == 0) {
		if (dup2(in[0], 0) < 0 || dup2(live ? out[1] : ofd, 1) < 0 ||
		    dup2(efd, 2) < 0)
			_exit(127);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	if (live) {
		close(out[1]);
		r->out_fd = out[0];
	} else {
		r->out_fd = ofd;	/* read back from the start at the end */
	}
	r->in_fd = in[1];
	/* keep stderr readable by its descriptor: the file is unlinked */
	snprintf(r->err_path, sizeof(r->err_path), "/proc/self/fd/%d", efd);
	return r->pid < 0 ? -errno : 0;
}

/* The next stdout line of a live run equal to want; -ETIMEDOUT, -EPIPE. */
static int run_wait_line(struct run *r, const char *want, int timeout_ms)
{
	struct bst_proc p = { .out_fd = r->out_fd, .in_fd = -1 };

	return bst_proc_wait_line(&p, want, timeout_ms);
}

/*
 * Wait for the end (killing it after timeout_ms); collect its output.
 * rd: rings to read meanwhile (the inline backend's die with the target).
 */
static int run_finish(struct run *r, int timeout_ms, struct bst_reader *rd)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int st = 0, efd = atoi(r->err_path + strlen("/proc/self/fd/"));
	pid_t w;

	if (r->in_fd >= 0)
		close(r->in_fd);
	r->in_fd = -1;
	while ((w = waitpid(r->pid, &st, WNOHANG)) == 0) {
		if (bst_now_ns() > end) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, &st, 0);
			r->status = -ETIMEDOUT;
			break;
		}
		if (rd)
			bst_reader_poll(rd, 10);
		else
			bst_sleep_ms(10);
	}
	if (w == r->pid)
		r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r->pid = 0;
	r->err = output_read(r->err_path);
	close(efd);
	if (r->out_fd >= 0) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", r->out_fd);
		lseek(r->out_fd, 0, SEEK_SET);
		r->out = output_read(path);
		close(r->out_fd);
	}
	r->out_fd = -1;
	return r->status;
}

static void run_free(struct run *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
	}
	if (r->in_fd >= 0)
		close(r->in_fd);
	if (r->out_fd >= 0)
		close(r->out_fd);
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

/* stderr without bfctl's own lines (its messages and its attach report). */
static char *target_lines(const char *err, bool *warned, const char *warning)
{
	char *res = calloc(1, strlen(err) + 1), *line, *copy = strdup(err), *save;

	if (!res || !copy)
		abort();
	for (line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "bfctl: ", 7) ||
		    !strncmp(line, "attached to process ", 20)) {
			if (warned && warning && strstr(line, warning))
				*warned = true;
			continue;
		}
		strcat(res, line);
		strcat(res, "\n");
	}
	free(copy);
	return res;
}

/* ---- names ---------------------------------------------------------------- */

#define MAX_IDS 4096

struct names {
	char *fn[MAX_IDS];	/* method id -> function, "ex_a" */
	char *exc[MAX_IDS];	/* type id -> mangled type name */
	uint32_t hooks;		/* methods with a hook bit */
	uint32_t hooked_unwind, hooked_catch;
};

static int name_cb(const struct bft_nl_method *m, void *arg)
{
	struct names *n = arg;
	const char *bang = strchr(m->name, '!');
	const char *s = bang ? bang + 1 : m->name;
	size_t len = strcspn(s, "(");

	if (m->method_id < MAX_IDS && !n->fn[m->method_id])
		n->fn[m->method_id] = strndup(s, len);
	if (m->flags & BFT_PF_HOOKS)
		n->hooks++;
	if (m->flags & BFT_PF_HOOK_UNWIND)
		n->hooked_unwind++;
	if (m->flags & BFT_PF_HOOK_CATCH)
		n->hooked_catch++;
	return 0;
}

static int exc_cb(const struct bft_nl_exception *e, void *arg)
{
	struct names *n = arg;

	if (e->id < MAX_IDS && !n->exc[e->id])
		n->exc[e->id] = strdup(e->name);
	return 0;
}

static void names_free(struct names *n)
{
	for (int i = 0; i < MAX_IDS; i++) {
		free(n->fn[i]);
		free(n->exc[i]);
	}
	memset(n, 0, sizeof(*n));
}

static const char *fn_of(const struct names *n, uint32_t id)
{
	return id < MAX_IDS && n->fn[id] ? n->fn[id] : "?";
}

/* ---- comparing a thread with its model --------------------------------------- */

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void ev_text(char *buf, size_t len, uint8_t kind, const char *fn,
		    bool noret, uint8_t unwound, uint8_t how, const char *exc)
{
	if (kind == EXM_ENTER)
		snprintf(buf, len, "%s%s", noret ? "n:" : "e:", fn);
	else if (kind == EXM_EXIT && unwound)
		snprintf(buf, len, "u%u%s:%s", unwound, noret ? "n" : "", fn);
	else if (kind == EXM_EXIT)
		snprintf(buf, len, "x%s:%s", noret ? "n" : "", fn);
	else
		snprintf(buf, len, "t%u:%s:%s", how, fn ? fn : "-", exc ? exc : "?");
}

static uint8_t call_kind(uint8_t k)
{
	return k == BFT_CALL_ENTER ? EXM_ENTER : k == BFT_CALL_EXIT ? EXM_EXIT :
	       k == BFT_CALL_THROW ? EXM_THROW : 0;
}

/*
 * Compare; on a difference, log the first one with some context.  The
 * stop's BREAK voids the stack at the end: a trailing VOID is expected to
 * drop exactly the frames the model leaves open (none, or those of a
 * thread that died with them).
 */
static bool thread_matches(const struct bst_thread *th,
			   const struct exm_thread *m, const struct names *nm,
			   const char *what)
{
	size_t n = th->ncalls, i;
	char e[160], g[160];

	while (n && th->calls[n - 1].kind == BFT_CALL_VOID &&
	       (!th->calls[n - 1].depth || th->calls[n - 1].depth == m->depth))
		n--;
	for (i = 0; i < n && i < m->n; i++) {
		const struct bst_call *c = &th->calls[i];
		const struct exm_ev *x = &m->ev[i];
		const char *fn = fn_of(nm, c->id);
		const char *exc = c->exc < MAX_IDS ? nm->exc[c->exc] : NULL;

		if (call_kind(c->kind) != x->kind || !same_str(fn, x->fn) ||
		    (x->kind != EXM_THROW && c->noret != x->noret) ||
		    (x->kind == EXM_EXIT && c->unwound != x->unwound) ||
		    (x->kind == EXM_THROW &&
		     (c->how != x->how || !same_str(exc, x->exc))))
			break;
	}
	if (i == n && i == m->n)
		return true;
	if (i < m->n)
		ev_text(e, sizeof(e), m->ev[i].kind, m->ev[i].fn, m->ev[i].noret,
			m->ev[i].unwound, m->ev[i].how, m->ev[i].exc);
	else
		snprintf(e, sizeof(e), "(end)");
	if (i < n)
		ev_text(g, sizeof(g), call_kind(th->calls[i].kind),
			fn_of(nm, th->calls[i].id), th->calls[i].noret,
			th->calls[i].unwound, th->calls[i].how,
			th->calls[i].exc < MAX_IDS ? nm->exc[th->calls[i].exc] : NULL);
	else
		snprintf(g, sizeof(g), "(end)");
	fprintf(stderr, "# %s: %zu calls, model %zu; first difference at %zu: expected %s, got %s\n",
		what, n, m->n, i, e, g);
	fprintf(stderr, "#   call model                            trace\n");
	for (size_t k = i > 4 ? i - 4 : 0; k < i + 6; k++) {
		if (k < n)
			ev_text(g, sizeof(g), call_kind(th->calls[k].kind),
				fn_of(nm, th->calls[k].id), th->calls[k].noret,
				th->calls[k].unwound, th->calls[k].how,
				th->calls[k].exc < MAX_IDS ?
				nm->exc[th->calls[k].exc] : NULL);
		else
			snprintf(g, sizeof(g), "-");
		if (k < m->n)
			ev_text(e, sizeof(e), m->ev[k].kind, m->ev[k].fn,
				m->ev[k].noret, m->ev[k].unwound, m->ev[k].how,
				m->ev[k].exc);
		else
			snprintf(e, sizeof(e), "-");
		fprintf(stderr, "#   %4zu %-32s %s\n", k, e, g);
	}
	return false;
}

/* The trace thread whose first call enters fn (main: tid == tgid). */
static const struct bst_thread *thread_for(const struct bst_trace *t,
					   const struct names *nm,
					   const char *first, bool main_thread)
{
	for (size_t i = 0; i < t->nth; i++) {
		const struct bst_thread *th = &t->th[i];

		if (main_thread != (th->tid == th->tgid) || !th->ncalls)
			continue;
		if (th->calls[0].kind == BFT_CALL_ENTER &&
		    !strcmp(fn_of(nm, th->calls[0].id), first))
			return th;
	}
	return NULL;
}

/* ---- the fixture -------------------------------------------------------------- */

FIXTURE(exc) {
	struct bst_session s;
	struct bst_trace t;
	struct names nm;
	struct bft_nl_status st0, st;
	char *exe, *lib, *bfctl;
	struct run plain, traced;
	bool static_glibc;	/* exe is linked statically */
	bool inl;		/* bfctl run --backend inline */
	char *inl_dir;		/* its registry, this test's own */
	void *inl_h;		/* the inline backend, open on it */
	struct bst_reader rd;	/* its rings, read while the target runs */
	unsigned int depth;	/* the backend's pending returns, at most */
};

FIXTURE_VARIANT(exc) {
	const char *exe;
	bool inl;
};

FIXTURE_VARIANT_ADD(exc, plain) {
	.exe = "exc",
};

FIXTURE_VARIANT_ADD(exc, cet) {
	.exe = "exc_cet",
};

/*
 * The inline variants: bfctl run patches the target itself, and the rings
 * live in the target's memory, gone when it exits: the test reads them
 * while it runs, and the target's exit waits for that reader.
 */
FIXTURE_VARIANT_ADD(exc, inline_plain) {
	.exe = "exc", .inl = true,
};

FIXTURE_VARIANT_ADD(exc, inline_cet) {
	.exe = "exc_cet", .inl = true,
};

FIXTURE_SETUP(exc)
{
	const char *only = getenv("BFT_BACKEND");
	struct bft_nl_opt depth;

	self->bfctl = tool_path("bfctl");
	ASSERT_NE(NULL, self->bfctl);
	ASSERT_EQ(0, access(self->bfctl, X_OK)) TH_LOG("%s: build user/ first", self->bfctl);
	if (variant->inl) {
		struct bft_nl_caps caps;
		char why[256];
		int r;

		if (only && *only && strcmp(only, "inline") && strcmp(only, "auto"))
			SKIP(return, "BFT_BACKEND=%s: the inline variants do not run", only);
		/* a registry of this test's own: 16 targets at most each */
		r = bst_inline_open(&self->inl_h, &self->inl_dir, why, sizeof(why));

		if (r > 0)
			SKIP(return, "inline backend: %s", why);
		ASSERT_EQ(0, r) TH_LOG("%s", why);
		ASSERT_EQ(0, bft_backend_inline.get_caps(self->inl_h, &caps));
		self->depth = caps.limits.uretprobe_depth;
		/* the test owns the session: bfctl run's end does not end it */
		ASSERT_EQ(0, bft_backend_inline.start(self->inl_h, false, NULL))
			TH_LOG("%s", bft_backend_inline.errmsg(self->inl_h));
		self->inl = true;
		self->exe = bst_target_path(variant->exe);
		ASSERT_NE(NULL, self->exe);
		return;
	}
	if (only && (!strcmp(only, "bpf") || !strcmp(only, "inline")))
		SKIP(return, "BFT_BACKEND=%s: the module's variants do not run", only);
	ASSERT_EQ(0, bst_session_open(&self->s));
	if (!(self->s.caps.features & BFT_FEAT_UNWIND))
		SKIP(return, "the module has no exception hooks (feature 'unwind')");
	self->depth = self->s.caps.limits.uretprobe_depth;
	self->exe = bst_target_path(variant->exe);
	self->lib = bst_target_path("libbftexc.so");
	ASSERT_NE(NULL, self->exe);
	/* the deep case must not be cut by BFT_OPT_MAX_DEPTH (0: no limit) */
	ASSERT_EQ(0, bft_nl_get_opt(self->s.nl, BFT_OPT_MAX_DEPTH, &depth));
	if (depth.value && depth.value <= EX_DEEP_DEPTH + 8)
		ASSERT_EQ(0, bst_set_opt(&self->s, BFT_OPT_MAX_DEPTH,
					 depth.min == 0 ? 0 : depth.max));
}

FIXTURE_TEARDOWN(exc)
{
	run_free(&self->plain);
	run_free(&self->traced);
	bst_reader_free(&self->rd);
	if (self->inl_dir) {
		bst_inline_close(self->inl_h, self->inl_dir);
	} else if (self->s.nl) {
		bst_session_close(&self->s);
	}
	bst_trace_free(&self->t);
	names_free(&self->nm);
	bft_nl_status_free(&self->st0);
	bft_nl_status_free(&self->st);
	free(self->exe);
	free(self->lib);
	free(self->bfctl);
}

/* bfctl run with return probes on every ex_* function of exe and the lib. */
static void traced_argv(const char **argv, const char *bfctl, const char *exe,
			const char *tcase, const char *extra, bool inl)
{
	int n = 0;

	argv[n++] = bfctl;
	if (inl) {
		argv[n++] = "--backend";
		argv[n++] = "inline";
	}
	argv[n++] = "run";
	argv[n++] = "-p";
	argv[n++] = "exc*:ex_*";
	argv[n++] = "-p";
	argv[n++] = "libbftexc*:ex_*";
	if (extra)
		argv[n++] = extra;
	argv[n++] = "--";
	argv[n++] = exe;
	argv[n++] = tcase;
	argv[n] = NULL;
}

/* Stop, read the method and exception tables, collect the rings. */
static void stop_and_collect(struct __test_metadata *_metadata,
			     FIXTURE_DATA(exc) *self)
{
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->st));
	ASSERT_EQ(0, bft_nl_get_methods(self->s.nl, name_cb, &self->nm));
	ASSERT_LE(0, bft_nl_get_exceptions(self->s.nl, exc_cb, &self->nm));
	ASSERT_EQ(0, bst_collect(&self->s, 300, 20000, &self->t))
		TH_LOG("%s", self->t.err);
}

/* Nothing lost; every event counted was decoded; no unbalanced exit. */
static void expect_complete(struct __test_metadata *_metadata,
			    FIXTURE_DATA(exc) *self)
{
	for (uint32_t i = 0; i < self->st.nr_cpus; i++) {
		const struct bft_nl_cpu_stats *c = &self->st.cpus[i];
		const struct bft_nl_cpu_stats *c0 = &self->st0.cpus[i];

		ASSERT_GT(self->t.nr_cpus, c->cpu);
		EXPECT_EQ(c0->lost, c->lost) TH_LOG("cpu %u lost events", c->cpu);
		EXPECT_EQ(c->produced - c0->produced, c->written - c0->written);
		EXPECT_EQ(c->written - c0->written, self->t.cpu[c->cpu].events)
			TH_LOG("cpu %u: written %llu, decoded %llu", c->cpu,
			       (unsigned long long)(c->written - c0->written),
			       (unsigned long long)self->t.cpu[c->cpu].events);
		EXPECT_EQ(0, self->t.cpu[c->cpu].lost);
	}
	for (size_t i = 0; i < self->t.nmarks; i++) {
		EXPECT_EQ(BFT_REC_BREAK, self->t.marks[i].kind)
			TH_LOG("a %s record on cpu %u",
			       bft_rec_kind_name(self->t.marks[i].kind),
			       self->t.marks[i].cpu);
	}
	EXPECT_EQ(0, self->t.orphans);
	EXPECT_EQ(0, self->t.unbalanced);
}

/*
 * The inline rings, read while bfctl run ran; the names of the ended
 * target, which its registry keeps until the next start.
 */
static void inline_collect(struct __test_metadata *_metadata,
			   FIXTURE_DATA(exc) *self)
{
	const struct bft_backend_ops *ops = &bft_backend_inline;

	ASSERT_EQ(0, bst_reader_finish(&self->rd, 300, 20000, &self->t))
		TH_LOG("%s", self->t.err);
	ASSERT_EQ(0, ops->get_methods(self->inl_h, name_cb, &self->nm))
		TH_LOG("%s", ops->errmsg(self->inl_h));
	ASSERT_LE(0, ops->get_exceptions(self->inl_h, exc_cb, &self->nm))
		TH_LOG("%s", ops->errmsg(self->inl_h));
}

/*
 * The same for the inline backend, whose counters are per thread slot and
 * end with the target: the records say nothing was lost, and so does the
 * last status taken while the target ran, if the reader got one.  It may
 * not have (a short target under load ends between two polls), and one
 * taken while a thread writes a record shows it produced, not yet
 * written: the model comparison is what proves the trace whole.
 */
static void expect_complete_inline(struct __test_metadata *_metadata,
				   FIXTURE_DATA(exc) *self)
{
	const struct bft_nl_status *st = &self->rd.st;

	for (uint32_t i = 0; self->rd.polls && i < st->nr_cpus; i++) {
		EXPECT_EQ(0, st->cpus[i].lost)
			TH_LOG("slot %u lost events", st->cpus[i].cpu);
		EXPECT_LE(st->cpus[i].written, st->cpus[i].produced);
	}
	for (uint32_t i = 0; i < self->t.nr_cpus; i++)
		EXPECT_EQ(0, self->t.cpu[i].lost);
	for (size_t i = 0; i < self->t.nmarks; i++) {
		EXPECT_EQ(BFT_REC_BREAK, self->t.marks[i].kind)
			TH_LOG("a %s record in ring %u",
			       bft_rec_kind_name(self->t.marks[i].kind),
			       self->t.marks[i].cpu);
	}
	EXPECT_EQ(0, self->t.orphans);
	EXPECT_EQ(0, self->t.unbalanced);
	EXPECT_LT(0, self->t.nth);
}

/* Every model thread has its trace thread, equal to it; no other thread. */
static void expect_model(struct __test_metadata *_metadata,
			 FIXTURE_DATA(exc) *self, const char *tcase,
			 unsigned int rounds)
{
	struct exm_case mc = { 0 };
	uint32_t tgid = 0;

	ASSERT_EQ(0, exm_build(&mc, tcase, self->depth, rounds));
	/* a static glibc's own longjmp is hooked: it closes what a forced
	 * unwind leaves, before the thread's exit hook could */
	for (unsigned int k = 0; self->static_glibc && k < mc.nth; k++)
		for (size_t i = 0; i < mc.th[k].n; i++)
			if (mc.th[k].ev[i].unwound == BFT_UNWIND_EXIT)
				mc.th[k].ev[i].unwound = BFT_UNWIND_LONGJMP;
	for (size_t i = 0; i < self->t.nth; i++) {
		if (!tgid)
			tgid = self->t.th[i].tgid;
		EXPECT_EQ(tgid, self->t.th[i].tgid) TH_LOG("events of two processes");
	}
	EXPECT_EQ(mc.nth, bst_trace_threads_of(&self->t, tgid, NULL, 0));
	for (unsigned int k = 0; k < mc.nth; k++) {
		const struct bst_thread *th =
			thread_for(&self->t, &self->nm, mc.th[k].first, k == 0);
		char what[96];

		snprintf(what, sizeof(what), "%s: thread %u (%s)", tcase, k,
			 mc.th[k].first);
		EXPECT_NE(NULL, th) TH_LOG("%s: not in the trace", what);
		if (th)
			EXPECT_TRUE(thread_matches(th, &mc.th[k], &self->nm, what));
	}
	exm_case_free(&mc);
}

/* One case: untraced, traced, compared; the trace against the model. */
static void check_case(struct __test_metadata *_metadata,
		       FIXTURE_DATA(exc) *self, const char *tcase)
{
	const char *pargv[] = { self->exe, tcase, NULL };
	const char *targv[16];
	const char *only = getenv("BFT_EXC_ONLY");
	char *e0, *e1;

	if (!self->inl && !self->s.nl)
		return;		/* skipped at setup */
	/* BFT_EXC_ONLY=case,case... runs only those (for debugging) */
	if (only && !strstr(only, tcase))
		SKIP(return, "not in BFT_EXC_ONLY");
	ASSERT_EQ(0, run_start(&self->plain, pargv, false));
	run_finish(&self->plain, RUN_TIMEOUT_MS, NULL);
	ASSERT_LE(0, self->plain.status);

	if (self->inl) {
		ASSERT_EQ(0, bst_reader_open(&self->rd, &bft_backend_inline,
					     self->inl_h)) TH_LOG("%s", self->rd.err);
	} else {
		ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->st0));
	}
	traced_argv(targv, self->bfctl, self->exe, tcase, NULL, self->inl);
	ASSERT_EQ(0, run_start(&self->traced, targv, false));
	run_finish(&self->traced, RUN_TIMEOUT_MS, self->inl ? &self->rd : NULL);
	e0 = target_lines(self->plain.err, NULL, NULL);
	e1 = target_lines(self->traced.err, NULL, NULL);
	EXPECT_EQ(self->plain.status, self->traced.status)
		TH_LOG("bfctl run said: %s", self->traced.err);
	EXPECT_STREQ(self->plain.out, self->traced.out);
	EXPECT_STREQ(e0, e1);
	free(e0);
	free(e1);
	if (self->inl)
		inline_collect(_metadata, self);
	else
		stop_and_collect(_metadata, self);
	/* bfctl put the hooks in: the unwinder, the catch */
	EXPECT_LT(0, self->nm.hooked_unwind);
	EXPECT_LT(0, self->nm.hooked_catch);
	if (self->inl)
		expect_complete_inline(_metadata, self);
	else
		expect_complete(_metadata, self);
	expect_model(_metadata, self, tcase, 1);
}

#define CASE_TEST(name)							\
	TEST_F_TIMEOUT(exc, name, 600)					\
	{								\
		check_case(_metadata, self, #name);			\
	}

CASE_TEST(catch3)
CASE_TEST(rethrow)
CASE_TEST(nested)
CASE_TEST(cross)
CASE_TEST(thread)
CASE_TEST(pexit)
CASE_TEST(cancel)
CASE_TEST(uncaught)
CASE_TEST(ljmp)
CASE_TEST(deep)
CASE_TEST(dtor)
CASE_TEST(cold)

/*
 * The forced unwinds in a static build, where glibc's final longjmp
 * (__libc_longjmp) can be hooked: it closes every frame left (reason
 * LONGJMP), where a dynamic glibc's are closed at the thread's exit hook
 * (exc_shape.h).
 */
TEST_F_TIMEOUT(exc, static_forced_unwinds_close_every_frame, 600)
{
	free(self->exe);
	self->exe = bst_target_path("exc_static");
	ASSERT_NE(NULL, self->exe);
	self->static_glibc = true;
	check_case(_metadata, self, "pexit");
	run_free(&self->plain);
	run_free(&self->traced);
	bst_trace_free(&self->t);
	names_free(&self->nm);
	bft_nl_status_free(&self->st0);
	bft_nl_status_free(&self->st);
	check_case(_metadata, self, "cancel");
}

/* ---- the loop: nothing lost, nothing leaked --------------------------------- */

struct proc_mem {
	long rss_kb;
	long threads;
};

static int read_status(pid_t pid, struct proc_mem *m)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	m->rss_kb = m->threads = -1;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "VmRSS: %ld", &m->rss_kb);
		sscanf(line, "Threads: %ld", &m->threads);
	}
	fclose(f);
	return m->rss_kb < 0 || m->threads < 0 ? -EIO : 0;
}

/* The process bfctl run started: its only child. */
static pid_t child_of(pid_t parent)
{
	char path[64];
	long pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)parent,
		 (int)parent);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = -1;
	fclose(f);
	return (pid_t)pid;
}

TEST_F_TIMEOUT(exc, loop_of_1000_throws_loses_and_leaks_nothing, 900)
{
	const char *targv[16];
	struct proc_mem m1, m2;
	struct bft_nl_status mid;
	pid_t pid;
	uint32_t probes1;

	if (self->inl)
		SKIP(return, "module only: it compares the module counters between rounds");
	if (!self->s.nl)
		return;		/* skipped at setup */
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->st0));
	traced_argv(targv, self->bfctl, self->exe, "loop", NULL, false);
	ASSERT_EQ(0, run_start(&self->traced, targv, true));
	ASSERT_EQ(0, run_wait_line(&self->traced, EX_LINE_READY, 120000));
	pid = child_of(self->traced.pid);
	ASSERT_LT(0, pid);

	/* a first round settles the allocator and the runtime's caches */
	ASSERT_EQ(1, write(self->traced.in_fd, "r", 1));
	ASSERT_EQ(0, run_wait_line(&self->traced, EX_LINE_DONE, RUN_TIMEOUT_MS));
	ASSERT_EQ(0, read_status(pid, &m1));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &mid));
	probes1 = mid.nr_probes;
	bft_nl_status_free(&mid);
	for (int r = 0; r < 2; r++) {
		ASSERT_EQ(1, write(self->traced.in_fd, "r", 1));
		ASSERT_EQ(0, run_wait_line(&self->traced, EX_LINE_DONE, RUN_TIMEOUT_MS));
	}
	ASSERT_EQ(0, read_status(pid, &m2));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &mid));
	EXPECT_EQ(probes1, mid.nr_probes);
	EXPECT_EQ(m1.threads, m2.threads);
	/* 2000 throws that each kept a few bytes would show here */
	EXPECT_GE(m1.rss_kb + 64, m2.rss_kb)
		TH_LOG("VmRSS %ld kB after one round, %ld kB after three",
		       m1.rss_kb, m2.rss_kb);
	TH_LOG("VmRSS %ld kB -> %ld kB, threads %ld -> %ld", m1.rss_kb,
	       m2.rss_kb, m1.threads, m2.threads);
	bft_nl_status_free(&mid);
	ASSERT_EQ(1, write(self->traced.in_fd, "q", 1));
	EXPECT_EQ(0, run_finish(&self->traced, RUN_TIMEOUT_MS, NULL))
		TH_LOG("%s", self->traced.err);

	stop_and_collect(_metadata, self);
	expect_complete(_metadata, self);
	expect_model(_metadata, self, "loop", 3);
}

/* ---- an unwinder that cannot be named ---------------------------------------- */

TEST_F_TIMEOUT(exc, unknown_unwinder_warns_and_records_entries_only, 600)
{
	const char *pargv[] = { NULL, "catch3", NULL };
	const char *targv[16];
	char *stripped = bst_target_path("exc_stripped");
	bool warned = false, fell_back = false;
	char *e0, *e1;
	size_t enters = 0;

	if (self->inl)
		SKIP(return, "module only: it reads the trace, gone with the target under inline");
	if (!self->s.nl)
		return;		/* skipped at setup */
	ASSERT_NE(NULL, stripped);
	pargv[0] = stripped;
	ASSERT_EQ(0, run_start(&self->plain, pargv, false));
	ASSERT_EQ(0, run_finish(&self->plain, RUN_TIMEOUT_MS, NULL));

	traced_argv(targv, self->bfctl, stripped, "catch3", NULL, false);
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->st0));
	ASSERT_EQ(0, run_start(&self->traced, targv, false));
	run_finish(&self->traced, RUN_TIMEOUT_MS, NULL);
	e0 = target_lines(self->plain.err, NULL, NULL);
	e1 = target_lines(self->traced.err, &warned, "cannot all be found");
	free(target_lines(self->traced.err, &fell_back, "recording entries only"));
	EXPECT_TRUE(warned) TH_LOG("bfctl said: %s", self->traced.err);
	EXPECT_TRUE(fell_back) TH_LOG("bfctl said: %s", self->traced.err);
	/* the target lives, as untraced */
	EXPECT_EQ(0, self->traced.status);
	EXPECT_STREQ(self->plain.out, self->traced.out);
	EXPECT_STREQ(e0, e1);
	free(e0);
	free(e1);
	stop_and_collect(_metadata, self);
	expect_complete(_metadata, self);
	EXPECT_EQ(0, self->nm.hooks);
	/* entries only: every frame is a NORET one, no exit, no throw */
	for (size_t i = 0; i < self->t.nth; i++)
		for (size_t k = 0; k < self->t.th[i].ncalls; k++) {
			const struct bst_call *c = &self->t.th[i].calls[k];

			if (c->kind == BFT_CALL_VOID)
				continue;
			EXPECT_EQ(BFT_CALL_ENTER, c->kind);
			EXPECT_TRUE(c->noret);
			enters++;
		}
	/* ex_main ex_catch3 ex_a ex_b ex_c ex_note */
	EXPECT_EQ(6, enters);

	/* --force keeps the return probes: then the throw kills it, which is
	 * what the warning is about */
	run_free(&self->traced);
	bst_trace_free(&self->t);
	names_free(&self->nm);
	bft_nl_status_free(&self->st);
	traced_argv(targv, self->bfctl, stripped, "catch3", "--force", false);
	ASSERT_EQ(0, run_start(&self->traced, targv, false));
	run_finish(&self->traced, RUN_TIMEOUT_MS, NULL);
	EXPECT_EQ(128 + SIGABRT, self->traced.status)
		TH_LOG("bfctl said: %s", self->traced.err);
	EXPECT_NE(NULL, strstr(self->traced.err, "terminate called"));
	bst_mode(&self->s, BFT_CMD_STOP);
	free(stripped);
}

TEST_HARNESS_MAIN
