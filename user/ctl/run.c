// SPDX-License-Identifier: GPL-2.0
/*
 * bfctl run: launch a command under trace without missing its first call.
 *
 * The probes must sit on the exec'd image, and on the libraries the
 * dynamic loader maps for it, before any of their code runs.  So:
 *
 *   1. The child stops itself (SIGSTOP); bfctl seizes it (PTRACE_SEIZE,
 *      PTRACE_O_TRACEEXEC) and lets it exec: the kernel stops it with
 *      PTRACE_EVENT_EXEC once the new image is in place, before its first
 *      instruction.  A static executable is complete at that point.
 *   2. A dynamic one has only itself and the loader mapped.  A breakpoint
 *      goes on the loader's _dl_debug_state(), the hook debuggers use: the
 *      loader calls it with r_debug.r_state == RT_CONSISTENT once every
 *      DT_NEEDED library is mapped, before any library constructor or any
 *      code of the program runs.  (The loader's own work until then, e.g.
 *      IFUNC resolvers, is not traced.)  Without that symbol the hold point
 *      is the program's entry point (AT_ENTRY) instead, after the library
 *      constructors.
 *   3. There, with the breakpoint removed, the patterns are resolved over
 *      /proc/N/maps, the probes attached, tracing started, and the child
 *      released.  bfctl waits for it and exits with its status.
 *
 * With --no-follow the release is a PTRACE_DETACH.  Otherwise bfctl stays
 * the tracer of the command's process tree (run_follow.c): every exec of
 * it goes through 1-3 again, every new process gets its own attach, and
 * the breakpoint of 2 stays for the libraries it loads later (run_loads.c).
 *
 * If anything fails before the first release, the child is killed, never
 * left running untraced, and whatever was attached is detached.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include <elf.h>

#include "capture/bft_backend.h"
#include "follow.h"
#include "output.h"
#include "probes.h"
#include "run.h"

struct hold {
	pid_t pid;
	uint64_t bp;		/* breakpoint address, 0: none needed */
	uint64_t r_debug;	/* 0: stop at the first hit */
	uint8_t saved;		/* the byte the breakpoint replaced */
	bool armed;
	int gone;		/* its wait status once it ended, else -1 */
};

static int read_auxv(pid_t pid, uint64_t *base, uint64_t *entry)
{
	char fn[64];
	Elf64_auxv_t av;
	int fd;

	*base = *entry = 0;
	snprintf(fn, sizeof(fn), "/proc/%d/auxv", (int)pid);
	fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (read(fd, &av, sizeof(av)) == sizeof(av) && av.a_type != AT_NULL) {
		if (av.a_type == AT_BASE)
			*base = av.a_un.a_val;
		else if (av.a_type == AT_ENTRY)
			*entry = av.a_un.a_val;
	}
	close(fd);
	return 0;
}

int run_find_loader(pid_t pid, char *path, size_t len, uint64_t *bp,
		    uint64_t *r_debug, uint64_t *entry, char *err, size_t errlen)
{
	uint64_t base, dbg, rdbg, lmin;
	const struct bft_map_obj *ld;
	struct bft_maps maps;
	int rc;

	rc = read_auxv(pid, &base, entry);
	if (rc) {
		snprintf(err, errlen, "cannot read /proc/%d/auxv: %s", (int)pid, strerror(-rc));
		return rc;
	}
	if (!base) {
		snprintf(err, errlen, "it has no program interpreter (a static program)");
		return RUN_LOADER_NONE;
	}
	rc = bft_maps_read(pid, &maps, err, errlen);
	if (rc)
		return rc;
	ld = bft_maps_find_base(&maps, base);
	rc = RUN_LOADER_NO_HOOK;
	if (!ld)
		snprintf(err, errlen, "its loader at %#" PRIx64 " is not in its maps", base);
	else if (!bft_elf_symbol(ld->open_path, "_dl_debug_state", &dbg, &lmin, err, errlen) &&
		 !bft_elf_symbol(ld->open_path, "_r_debug", &rdbg, &lmin, err, errlen))
		rc = snprintf(path, len, "%s", ld->open_path) < (int)len ? 0 : -ENAMETOOLONG;
	if (!rc) {
		*bp = base + dbg - lmin;
		*r_debug = base + rdbg - lmin;
	}
	bft_maps_free(&maps);
	return rc;
}

/* Where to hold a dynamic executable; bp 0 when held enough already. */
static int hold_point(struct ctl *c, struct hold *h)
{
	char path[4096], err[512];
	uint64_t entry;
	int rc;

	rc = run_find_loader(h->pid, path, sizeof(path), &h->bp, &h->r_debug, &entry,
			     err, sizeof(err));
	if (rc == RUN_LOADER_NONE) {
		vlog(c, 2, "run: no program interpreter: held at the first instruction");
		return EXIT_OK;
	}
	if (rc == RUN_LOADER_NO_HOOK) {
		h->bp = entry;
		vlog(c, 1, "run: the loader has no _dl_debug_state; holding at the entry point %#" PRIx64
		     " (library constructors run untraced)", entry);
		return EXIT_OK;
	}
	if (rc) {
		err_msg("run: %s", err);
		return EXIT_TARGET;
	}
	vlog(c, 2, "run: holding at %s!_dl_debug_state (%#" PRIx64 ") until the libraries are mapped",
	     path, h->bp);
	return EXIT_OK;
}

/*
 * The tracer's options, PTRACE_O_EXITKILL aside: that one is set only
 * while a process has a breakpoint in it or has not been released, which
 * would kill or free it untraced if bfctl died then.  A released process
 * must outlive bfctl, as it did before bfctl followed, unless it carries
 * the loader hook of run_loads.c: that would kill it at its next dlopen().
 */
static long trace_opts;

int run_exitkill(pid_t pid, bool on)
{
	long o = trace_opts | (on ? PTRACE_O_EXITKILL : 0);

	return ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)o) ? -errno : 0;
}

int run_poke_byte(pid_t pid, uint64_t addr, uint8_t want, uint8_t *was)
{
	long word;

	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, pid, (void *)addr, NULL);
	if (errno)
		return -errno;
	if (was)
		*was = (uint8_t)word;
	word = (word & ~0xffL) | want;
	return ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)word) ? -errno : 0;
}

static int arm(struct hold *h)
{
	int rc;

	if (run_exitkill(h->pid, true))
		return -errno;
	rc = run_poke_byte(h->pid, h->bp, 0xcc, &h->saved);
	if (rc)
		return rc;
	h->armed = true;
	return 0;
}

/* Put the original byte back and re-execute the instruction at bp. */
static int disarm(struct hold *h)
{
	struct user_regs_struct regs;
	int rc = run_poke_byte(h->pid, h->bp, h->saved, NULL);

	if (rc)
		return rc;
	if (ptrace(PTRACE_GETREGS, h->pid, NULL, &regs))
		return -errno;
	regs.rip = h->bp;
	h->armed = false;
	if (ptrace(PTRACE_SETREGS, h->pid, NULL, &regs))
		return -errno;
	return run_exitkill(h->pid, false);
}

static bool at_bp(const struct hold *h)
{
	struct user_regs_struct regs;

	return !ptrace(PTRACE_GETREGS, h->pid, NULL, &regs) && regs.rip == h->bp + 1;
}

/*
 * Wait for the breakpoint's SIGTRAP; other signals go to the child.  The
 * loader creates no process, and a group-stop in these few instructions is
 * let go rather than held: the hold must end.
 */
static int wait_trap(struct hold *h)
{
	int st;

	for (;;) {
		if (waitpid(h->pid, &st, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			h->gone = st;
			return -ESRCH;
		}
		if (!WIFSTOPPED(st))
			continue;
		if (!(st >> 16) && WSTOPSIG(st) == SIGTRAP)
			return 0;
		if (ptrace(PTRACE_CONT, h->pid, NULL,
			   (void *)(long)((st >> 16) ? 0 : WSTOPSIG(st))))
			return -errno;
	}
}

/* Run the child to the hold point. */
static int run_to_hold(struct ctl *c, struct hold *h)
{
	long state;
	int rc;

	if (!h->bp)
		return 0;
	for (;;) {
		rc = arm(h);
		if (!rc && ptrace(PTRACE_CONT, h->pid, NULL, NULL))
			rc = -errno;
		while (!rc) {
			rc = wait_trap(h);
			if (rc || at_bp(h))
				break;
			/* a SIGTRAP of its own: deliver it */
			if (ptrace(PTRACE_CONT, h->pid, NULL, (void *)(long)SIGTRAP))
				rc = -errno;
		}
		if (!rc)
			rc = disarm(h);
		if (rc || !h->r_debug)
			return rc;
		errno = 0;
		state = ptrace(PTRACE_PEEKDATA, h->pid,
			       (void *)(h->r_debug + R_STATE_OFFSET), NULL);
		if (errno)
			return -errno;
		vlog(c, 3, "run: loader hook, r_state %d", (int)(int32_t)state);
		if ((int32_t)state == RT_CONSISTENT)
			return 0;
		/* step over the original instruction, then re-arm */
		if (ptrace(PTRACE_SINGLESTEP, h->pid, NULL, NULL))
			return -errno;
		rc = wait_trap(h);
		if (rc)
			return rc;
	}
}

int run_kill(pid_t pid)
{
	int st = 0;

	kill(pid, SIGKILL);
	/* a tracee reports stops on its way out: wait for its end */
	for (;;) {
		if (waitpid(pid, &st, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return st;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return st;
	}
}

int run_hold(struct ctl *c, pid_t pid, int *gone, struct run_loader *ld)
{
	struct hold h = { .pid = pid, .gone = -1 };
	int rc, e;

	*ld = (struct run_loader){ 0 };
	rc = hold_point(c, &h);
	if (!rc) {
		e = run_to_hold(c, &h);
		if (e == -ESRCH) {
			err_msg("run: process %d ended before it could be traced", (int)pid);
			rc = EXIT_TARGET;
		} else if (e) {
			err_msg("run: holding process %d: %s", (int)pid, strerror(-e));
			rc = EXIT_FAIL;
		}
	}
	if (rc && h.gone == -1)
		h.gone = run_kill(pid);
	*gone = h.gone;
	if (!rc && h.r_debug) {
		ld->bp = h.bp;
		ld->r_debug = h.r_debug;
	}
	return rc;
}

/* The program of pid, for the summary when no process matched. */
static void note_program(struct run *r, pid_t pid)
{
	char fn[64], exe[4096];
	const char *base;
	ssize_t n;

	snprintf(fn, sizeof(fn), "/proc/%d/exe", (int)pid);
	n = readlink(fn, exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = 0;
	base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	for (size_t i = 0; i < r->nnames; i++)
		if (!strncmp(r->names[i], base, sizeof(r->names[i]) - 1))
			return;
	r->names_cut |= r->nnames == RUN_NAMES;
	if (r->nnames < RUN_NAMES) {
		size_t len = strnlen(base, sizeof(r->names[0]) - 1);

		/* cut to fit: a name in a summary */
		memcpy(r->names[r->nnames], base, len);
		r->names[r->nnames++][len] = 0;
	}
}

/*
 * Tracing on (and suspended with --suspended), whatever the mode was.  A
 * session started here belongs to this bfctl (it stops when bfctl exits
 * or is killed) unless persist.
 */
static int start_tracing(struct ctl *c, bool suspended, bool persist)
{
	struct bft_nl_status st;
	uint8_t mode;
	int rc;

	rc = ctl_get_status(c, &st);
	if (rc)
		return ctl_nl_fail(c, "status", rc);
	mode = st.mode;
	bft_nl_status_free(&st);
	if (mode == BFT_MODE_INITIALIZING || mode == BFT_MODE_SHUTTING_DOWN) {
		rc = ctl_start(c, persist, &mode);
		if (rc)
			return ctl_nl_fail(c, "start", rc);
		vlog(c, 1, "run: tracing started%s",
		     persist ? " (persistent session)" : "");
	} else {
		vlog(c, 1, "run: the module is %s already", bft_mode_name(mode));
	}
	if (suspended && mode == BFT_MODE_TRACING) {
		rc = ctl_mode_cmd(c, BFT_CMD_SUSPEND, &mode);
		if (rc)
			return ctl_nl_fail(c, "suspend", rc);
		vlog(c, 1, "run: recording suspended ('bfctl unsuspend' resumes it)");
	} else {
		ctl_warn_no_reader(c);
	}
	return EXIT_OK;
}

/* What status shows of pid while a pattern waits for its object. */
static void note_pending(struct run *r, pid_t pid)
{
	struct follow_state s = {
		.tgid = pid, .follower = r->self, .run = true,
		.regex = r->o->regex, .patterns = r->o->patterns, .usdt = r->o->usdt,
		.pending = r->pending,
	};

	if (r->o->pending != &r->pending)
		return;		/* not run's: attach's follower keeps its own */
	snprintf(s.backend, sizeof(s.backend), "%s", ctl_backend(r->c)->name);
	if (!s.pending.n)
		follow_state_forget(pid);
	else if (follow_state_write(&s))
		vlog(r->c, 1, "run: the pending patterns of process %d cannot be written in %s for status",
		     (int)pid, follow_dir());
}

int run_attach(struct run *r, pid_t pid)
{
	struct probe_set set = { 0 };
	struct bft_plan pl;
	int rc, d;

	r->searched++;
	rc = probes_select(r->c, pid, r->o, &pl);
	if (rc == EXIT_NOMATCH)
		note_program(r, pid);
	if (rc)
		return rc;
	rc = probes_build(r->c, pid, &pl, r->o, probes_features(r->c), &set);
	if (rc == EXIT_NOMATCH)		/* no USDT probe either */
		note_program(r, pid);
	/* a library loaded again, or one with nothing new */
	set.quiet_known = r->follow;
	if (!rc)
		rc = probes_attach(r->c, pid, &set);
	if (!rc && !r->started) {
		rc = start_tracing(r->c, r->suspended, r->persist);
		r->started = !rc;
		d = rc ? ctl_detach(r->c, (uint32_t)pid) : 0;
		if (d && d != -ENOENT)
			ctl_nl_fail(r->c, "detach", d);
	}
	r->traced += !rc;
	probes_set_free(&set);
	bft_plan_free(&pl);
	note_pending(r, pid);
	return rc;
}

static int child_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return EXIT_FAIL;
}

/*
 * Seize the child, stopped by its own SIGSTOP, and let it go up to its
 * exec.  Returns 0 at the PTRACE_EVENT_EXEC stop; -ESRCH with *st set if
 * it ended (its exec failed).
 */
static int seize_to_exec(pid_t pid, bool follow, int *st)
{
	long opts = PTRACE_O_EXITKILL | PTRACE_O_TRACEEXEC;
	int ev, sig;

	if (follow)
		opts |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE;
	trace_opts = opts & ~PTRACE_O_EXITKILL;
	if (waitpid(pid, st, WUNTRACED) < 0)
		return -errno;
	if (!WIFSTOPPED(*st))
		return -ESRCH;
	/* If bfctl dies before the release, nothing must run on. */
	if (ptrace(PTRACE_SEIZE, pid, NULL, (void *)opts))
		return -errno;
	kill(pid, SIGCONT);
	for (;;) {
		if (waitpid(pid, st, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (WIFEXITED(*st) || WIFSIGNALED(*st))
			return -ESRCH;
		if (!WIFSTOPPED(*st))
			continue;
		ev = *st >> 16;
		sig = WSTOPSIG(*st);
		if (ev == PTRACE_EVENT_EXEC)
			return 0;
		/* our SIGSTOP and SIGCONT, and their stops, are not the command's */
		if (ptrace(PTRACE_CONT, pid, NULL,
			   (void *)(long)(ev || sig == SIGSTOP || sig == SIGCONT ? 0 : sig)))
			return -errno;
	}
}

static void say_nothing_matched(const struct run *r)
{
	char list[RUN_NAMES * 66] = "";
	size_t len = 0;

	for (size_t i = 0; i < r->nnames; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
					i ? ", " : "", r->names[i]);
	err_msg("run: no process of the command matched the patterns: %zu program images searched (%s%s); nothing traced",
		r->searched, list, r->names_cut ? ", ..." : "");
}

int cmd_run(struct ctl *c, int argc, char **argv)
{
	struct probe_opts o = { 0 };
	bool no_follow = false;
	struct run r = { .c = c, .o = &o };
	const struct arg_def defs[] = {
		PROBE_ARG_DEFS(&o),
		{ .name = "suspended", .short_name = 's', .kind = ARG_FLAG,
		  .dest = &r.suspended,
		  .help = "attach and start, but suspend recording at once" },
		{ .name = "persist", .kind = ARG_FLAG, .dest = &r.persist,
		  .help = "a session started here outlives bfctl" },
		{ .name = "no-follow", .kind = ARG_FLAG, .dest = &no_follow,
		  .help = "trace the command's first program only, not the "
			  "processes and programs it starts nor the libraries "
			  "it loads later (always so with --backend inline)" },
		ARG_END
	};
	struct strlist cmdline = { 0 };
	struct probe_set set = { 0 };
	struct bft_plan pl;
	bool planned = false;
	char **child_argv = NULL;
	pid_t pid;
	int rc, pipefd[2], st, gone, child_errno = 0;
	struct run_park park = { 0 };
	struct run_loader ld;
	bool inline_be = false;

	rc = cmd_args(c, current_cmd, defs, argc, argv, ARGS_STOP_AT_POSITIONAL,
		      &cmdline, NULL);
	if (rc >= 0)
		goto out;
	r.follow = !no_follow && !o.list;
	o.quiet_nomatch = r.follow;
	if (r.follow)
		o.pending = &r.pending;
	bft_owner_self(&r.self);
	rc = EXIT_USAGE;
	if (!cmdline.n) {
		err_msg("run: no command given: bfctl run --pattern P -- COMMAND [ARG...]");
		goto out;
	}
	if (!o.patterns.n && !o.usdt.n) {
		err_msg("run: give at least one --pattern or --usdt");
		goto out;
	}
	if (r.suspended && o.list) {
		err_msg("run: --suspended and --list do not go together");
		goto out;
	}
	if (!o.list) {
		rc = ctl_connect(c, BFT_FEAT_ENTRY | (r.suspended ? BFT_FEAT_SUSPEND : 0));
		if (rc)
			goto out;
		/* the backend seizes each target itself: bfctl cannot stay
		 * the tracer of the process tree */
		inline_be = c->be == &bft_backend_inline;
		if (inline_be && r.follow) {
			vlog(c, 1, "run: the inline backend traces the command's first program only (--no-follow)");
			r.follow = false;
			o.quiet_nomatch = false;
		}
	}
	child_argv = calloc(cmdline.n + 1, sizeof(*child_argv));
	if (!child_argv || pipe2(pipefd, O_CLOEXEC)) {
		err_msg("run: %s", strerror(errno ? errno : ENOMEM));
		rc = EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < cmdline.n; i++)
		child_argv[i] = (char *)cmdline.v[i];
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err_msg("run: fork: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		rc = EXIT_FAIL;
		goto out;
	}
	if (!pid) {
		int e;

		close(pipefd[0]);
		if (c->beh && c->be->fd)
			close(c->be->fd(c->beh));	/* not the child's */
		raise(SIGSTOP);		/* until bfctl has seized it */
		execvp(child_argv[0], child_argv);
		e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	rc = seize_to_exec(pid, r.follow, &st);
	if (rc) {
		if (read(pipefd[0], &child_errno, sizeof(child_errno)) != sizeof(child_errno))
			child_errno = rc == -ESRCH ? 0 : -rc;
		close(pipefd[0]);
		err_msg("run: cannot run '%s': %s", child_argv[0],
			child_errno ? strerror(child_errno) : "it did not start");
		if (rc != -ESRCH)
			run_kill(pid);
		rc = child_errno == ENOENT ? EXIT_USAGE : EXIT_FAIL;
		goto out;
	}
	close(pipefd[0]);
	vlog(c, 2, "run: process %d stopped after exec", (int)pid);

	rc = run_hold(c, pid, &gone, &ld);
	if (rc)
		goto out;
	if (o.list) {
		rc = probes_select(c, pid, &o, &pl);
		planned = !rc;
		if (!rc)
			rc = probes_build(c, pid, &pl, &o, probes_features(c), &set);
		if (!rc)
			probes_print_list(&pl, &set, pid);
		run_kill(pid);
		goto out;
	}
	/* The child's stdout is the user's: bfctl's report goes to stderr,
	 * unless it is JSON that a script asked for. */
	if (!c->json)
		out_init(stderr, false);
	if (inline_be && run_inline_park(pid, &park)) {
		run_kill(pid);
		rc = EXIT_FAIL;
		goto out;
	}
	rc = run_attach(&r, pid);
	if (rc && !(r.follow && rc == EXIT_NOMATCH)) {
		run_kill(pid);
		goto out;
	}
	if (inline_be) {
		if (run_inline_unpark(pid, &park)) {
			run_kill(pid);
			rc = EXIT_FAIL;
			goto out;
		}
		signal(SIGINT, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		if (r.persist)
			ctl_close(c);
		vlog(c, 1, "run: process %d released", (int)pid);
		goto wait;
	}
	/* Like system(3): the terminal's signals are the child's business. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	/* The socket stays open until the command ends: it owns the session
	 * (and a followed command needs it for its next attach). */
	if (r.persist && !r.follow)
		ctl_close(c);
	/* following, bfctl stays the tracer; else it lets go */
	if (r.follow)
		run_loads_arm(&r, pid, &ld);
	if ((r.follow && !ld.armed && run_exitkill(pid, false)) ||
	    ptrace(r.follow ? PTRACE_CONT : PTRACE_DETACH, pid, NULL, NULL)) {
		err_msg("run: releasing process %d: %s", (int)pid, strerror(errno));
		run_kill(pid);
		rc = EXIT_FAIL;
		goto out;
	}
	vlog(c, 1, "run: process %d released%s", (int)pid,
	     r.follow ? "; following its processes" : "");
	if (r.follow) {
		rc = run_follow(&r, pid, rc == EXIT_OK, &ld, &st);
		if (rc)
			goto out;
	}
wait:
	while (!r.follow && waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			err_msg("run: waiting for process %d: %s", (int)pid, strerror(errno));
			rc = EXIT_FAIL;
			goto out;
		}
	}
	rc = child_status(st);
	vlog(c, 1, "run: process %d ended, exit status %d", (int)pid, rc);
	if (!r.traced) {
		say_nothing_matched(&r);
		rc = EXIT_NOMATCH;
	}
out:
	if (o.pending)
		follow_state_forget(0);
	strlist_free(&r.pending);
	probes_set_free(&set);
	if (planned)
		bft_plan_free(&pl);
	ctl_close(c);
	free(child_argv);
	strlist_free(&cmdline);
	strlist_free(&o.patterns);
	strlist_free(&o.usdt);
	return rc;
}
