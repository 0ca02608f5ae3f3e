/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the bfcollector <-> bfhq tests: a synthetic multi-threaded
 * trace written as per-CPU streams (bft_writer) with its method table and
 * thread names, the per-thread event sequences HQ must reconstruct from it
 * (computed by an independent model of the kernel's rules, not by the code
 * under test), and running the two programs with bounded waits.
 *
 * The tools are found next to the test binary's directory (build/user/),
 * which `make -C user` builds before `make -C user check` runs the tests.
 */
#ifndef COLLECTOR_FIXTURE_H
#define COLLECTOR_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bft_test.h"
#include "wire/bft_writer.h"

#define SYN_MAX_THREADS	16
#define SYN_MAX_CPUS	8
#define SYN_TGID	4000

struct syn_opts {
	unsigned int threads, cpus, steps, methods;
	unsigned int noret_depth;	/* deeper frames are NORET (0: none) */
	uint64_t seed;
	uint64_t lost_at;		/* step of one LOST record (0: none) */
	/* methods whose name starts with this are excluded at HQ (NULL) */
	const char *excluded_prefix;
};

struct syn_frame {
	uint32_t id;
	bool noret;
};

struct syn_thread {
	uint32_t tid;
	unsigned int cpu;
	struct syn_frame real[256], model[256];
	unsigned int nreal, nmodel;
	bool seen;			/* an event reached HQ */
	struct bft_buf tokens;		/* " e1 e2 x2 ..." as HQ writes them */
	char name[64];
};

struct syn {
	struct syn_opts o;
	struct syn_thread th[SYN_MAX_THREADS];
	struct bft_writer w[SYN_MAX_CPUS];
	uint64_t events;
};

static inline void syn_tok(struct bft_buf *b, const char *fmt, uint32_t v)
{
	char t[32];
	int n = snprintf(t, sizeof(t), fmt, v);

	bft_buf_append(b, t, (size_t)n);
}

static inline const char *syn_method_name(uint32_t id, char *buf, size_t n)
{
	/* every fifth method is "skip_*": the exclusion tests drop those */
	snprintf(buf, n, "%s_%u", id % 5 == 4 ? "skip" : "fn", id);
	return buf;
}

static inline bool syn_excluded(const struct syn *s, uint32_t id)
{
	char name[32];

	if (!s->o.excluded_prefix)
		return false;
	syn_method_name(id, name, sizeof(name));
	/* the signature is "prog!<name>" */
	return !strncmp(s->o.excluded_prefix, "prog!", 5) &&
	       !strncmp(name, s->o.excluded_prefix + 5,
			strlen(s->o.excluded_prefix + 5));
}

static inline void syn_emit(struct syn *s, struct syn_thread *t, char kind,
			    uint32_t id)
{
	if (syn_excluded(s, id))
		return;
	syn_tok(&t->tokens, kind == 'e' ? " e%u" : " x%u", id);
	t->seen = true;
}

/* The kernel's rule: an exit closes the NORET frames on top, then one. */
static inline void syn_model_exit(struct syn *s, struct syn_thread *t)
{
	while (t->nmodel && t->model[t->nmodel - 1].noret)
		syn_emit(s, t, 'x', t->model[--t->nmodel].id);
	if (t->nmodel)
		syn_emit(s, t, 'x', t->model[--t->nmodel].id);
}

static inline int syn_write_file(const char *dir, const char *name,
				 const void *p, size_t n)
{
	char path[PATH_MAX];
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (n && fwrite(p, 1, n, f) != n) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) ? -EIO : 0;
}

/* Generate the trace into dir (cpu<N>.bft, methods, threads). */
static inline int syn_generate(struct syn *s, const char *dir)
{
	uint64_t rng = s->o.seed, t = 1000000000ull;
	unsigned int i, step;
	char path[PATH_MAX];
	FILE *f;

	for (i = 0; i < s->o.cpus; i++)
		if (bft_writer_init(&s->w[i], 1000, 0))
			return -ENOMEM;
	snprintf(path, sizeof(path), "%s/methods", dir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "# id\tpath\tfunction\n");
	for (i = 1; i <= s->o.methods; i++) {
		char name[32];

		fprintf(f, "%u\t/usr/bin/prog\t%s\n", i,
			syn_method_name(i, name, sizeof(name)));
	}
	fprintf(f, "ignored\t/lib/libnothing.so\n");
	fclose(f);
	snprintf(path, sizeof(path), "%s/threads", dir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	for (i = 0; i < s->o.threads; i++) {
		struct syn_thread *th = &s->th[i];

		th->tid = SYN_TGID + 1 + i;
		th->cpu = i % s->o.cpus;
		fprintf(f, "%u\t%u\t%s%u\n", SYN_TGID, th->tid,
			i ? "worker-" : "main", i);
		snprintf(th->name, sizeof(th->name), "%s%u (%u/%u)",
			 i ? "worker-" : "main", i, SYN_TGID, th->tid);
	}
	fclose(f);
	for (step = 1; step <= s->o.steps; step++) {
		struct syn_thread *th = &s->th[rng_below(&rng, s->o.threads)];
		struct bft_writer *w;
		bool enter;

		t += rng_below(&rng, 4) ? 1000 + rng_below(&rng, 20000) : 0;
		if (!rng_below(&rng, 16)) {
			/* migrate: a new CPU, at least one time unit later */
			bft_writer_sched_out(&s->w[th->cpu]);
			th->cpu = (unsigned int)rng_below(&rng, s->o.cpus);
			t += 1000;
		}
		w = &s->w[th->cpu];
		if (s->o.lost_at && step == s->o.lost_at) {
			/* every thread's stack is void from here */
			t += 1000;	/* no other event shares its time */
			if (bft_writer_lost(w, t, 3))
				return -ENOMEM;
			for (i = 0; i < s->o.threads; i++) {
				struct syn_thread *x = &s->th[i];

				if (x->seen)
					bft_buf_append(&x->tokens, " |", 2);
				x->nmodel = 0;
			}
			t += 1000;
			continue;
		}
		enter = (!th->nreal ||
			 (th->nreal < 40 && rng_below(&rng, 100) < 55)) &&
			th->nmodel < 250;
		if (!enter && !th->nreal)
			continue;
		if (enter) {
			uint32_t id = 1 + (uint32_t)rng_below(&rng,
							       s->o.methods);
			bool noret = s->o.noret_depth &&
				     th->nreal >= s->o.noret_depth;

			if ((noret ? bft_writer_enter_noret :
			     bft_writer_enter)(w, t, SYN_TGID, th->tid, id))
				return -ENOMEM;
			th->real[th->nreal++] = (struct syn_frame){ id, noret };
			th->model[th->nmodel++] = (struct syn_frame){ id,
								       noret };
			syn_emit(s, th, 'e', id);
		} else {
			struct syn_frame f = th->real[--th->nreal];

			if (!f.noret) {
				if (bft_writer_exit(w, t, SYN_TGID, th->tid))
					return -ENOMEM;
				syn_model_exit(s, th);
			}
		}
		s->events++;
		if (!(step % 97))	/* the flush timer's SYNC heartbeat */
			for (i = 0; i < s->o.cpus; i++)
				bft_writer_sync(&s->w[i], t);
	}
	for (i = 0; i < s->o.cpus; i++) {
		const uint8_t *p;
		size_t n;
		char name[32];
		int err;

		bft_writer_seal(&s->w[i]);
		p = bft_writer_data(&s->w[i], &n);
		snprintf(name, sizeof(name), "cpu%u.bft", i);
		err = syn_write_file(dir, name, p, n);
		if (err)
			return err;
	}
	return 0;
}

static inline int syn_cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What bfhq's calls.txt must hold: threads with events, sorted by name. */
static inline char *syn_expected_calls(struct syn *s)
{
	char *lines[SYN_MAX_THREADS];
	struct bft_buf out = { 0 };
	unsigned int i, n = 0;

	for (i = 0; i < s->o.threads; i++) {
		struct syn_thread *th = &s->th[i];

		if (!th->seen)
			continue;
		if (asprintf(&lines[n], "%s:%.*s\n", th->name,
			     (int)th->tokens.len, (char *)th->tokens.data) < 0)
			return NULL;
		n++;
	}
	qsort(lines, n, sizeof(*lines), syn_cmp_line);
	for (i = 0; i < n; i++) {
		bft_buf_append(&out, lines[i], strlen(lines[i]));
		free(lines[i]);
	}
	bft_buf_append(&out, "", 1);
	return (char *)out.data;
}

static inline void syn_free(struct syn *s)
{
	unsigned int i;

	for (i = 0; i < s->o.cpus; i++)
		bft_writer_free(&s->w[i]);
	for (i = 0; i < s->o.threads; i++)
		bft_buf_free(&s->th[i].tokens);
}

/* ---- processes ---- */

/* build/user/<tool>, from the test binary in build/user/tests*. */
static inline void tool_path(const char *tool, char *out, size_t n)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	self[len > 0 ? len : 0] = 0;
	snprintf(out, n, "%s/../%s", dirname(self), tool);
}

/*
 * Start argv[0] (a tool name) with its output appended to log, its address
 * space limited to as_bytes (0: not): a test of a memory bound then fails
 * fast on a tool that breaks it, instead of eating the machine.
 */
static inline pid_t spawn_limited(char *const argv[], const char *log,
				  rlim_t as_bytes)
{
	char path[PATH_MAX];
	pid_t pid;

	tool_path(argv[0], path, sizeof(path));
	if (access(path, X_OK)) {
		fprintf(stderr, "# %s is not built: run make -C user first\n",
			path);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		struct rlimit rl = { as_bytes, as_bytes };

		if (as_bytes)
			setrlimit(RLIMIT_AS, &rl);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execv(path, argv);
		_exit(127);
	}
	return pid;
}

static inline pid_t spawn(char *const argv[], const char *log)
{
	return spawn_limited(argv, log, 0);
}

/*
 * Wait for pid at most ms; its exit status, or -1 (then it is killed).
 * What it used in *ru (NULL: not wanted): ru_maxrss is its peak RSS, KiB.
 */
static inline int wait_exit_usage(pid_t pid, int ms, struct rusage *ru)
{
	struct rusage dummy;
	int st, i;

	if (!ru)
		ru = &dummy;
	for (i = 0; i < ms / 10; i++) {
		pid_t r = wait4(pid, &st, WNOHANG, ru);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) :
					       128 + WTERMSIG(st);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	wait4(pid, &st, 0, ru);
	return -1;
}

static inline int wait_exit(pid_t pid, int ms)
{
	return wait_exit_usage(pid, ms, NULL);
}

static inline bool slow_env(void)
{
	return getenv("BFT_TEST_SLOW") != NULL;
}

/* A port nobody listens on now (the kernel picks it). */
static inline int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd < 0)
		return -1;
	if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &len))
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/* Wait until something accepts on 127.0.0.1:port (at most ms). */
static inline bool wait_listening(int port, int ms)
{
	int i;

	for (i = 0; i < ms / 20; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(port),
					  .sin_addr.s_addr =
						  htonl(INADDR_LOOPBACK) };
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int ok = fd >= 0 &&
			 !connect(fd, (struct sockaddr *)&sa, sizeof(sa));

		if (fd >= 0)
			close(fd);
		if (ok)
			return true;
		usleep(20000);
	}
	return false;
}

/* A fresh directory for one test, under $BFT_TEST_TMPDIR or build/. */
static inline int make_tmpdir(char *out, size_t n)
{
	const char *base = getenv("BFT_TEST_TMPDIR");
	char self[PATH_MAX];
	ssize_t len;

	if (!base) {
		len = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[len > 0 ? len : 0] = 0;
		base = dirname(self);
	}
	snprintf(out, n, "%s/collector-XXXXXX", base);
	return mkdtemp(out) ? 0 : -errno;
}

static inline void remove_tmpdir(const char *dir)
{
	if (!getenv("BFT_KEEP_FIXTURES"))
		bft_test_rmtree(dir);
}

/* ---- a test as HQ ---- */

static inline void show_log(const char *log)
{
	char *s = bft_test_slurp(log, NULL), *line, *save = NULL;

	if (!s)
		return;
	for (line = strtok_r(s, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		fprintf(stderr, "#   | %s\n", line);
	free(s);
}

static inline int listen_on(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8)) {
		close(fd);
		return -1;
	}
	return fd;
}

static inline int accept_within(int lfd, int ms)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	if (poll(&p, 1, ms) != 1)
		return -1;
	return accept(lfd, NULL, NULL);
}

/* Read until EOF (at most ms); what arrived. */
static inline size_t read_until_eof(int fd, uint8_t *buf, size_t cap, int ms,
			     bool *eof)
{
	size_t n = 0;

	*eof = false;
	while (n < cap) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, ms) != 1)
			break;
		r = read(fd, buf + n, cap - n);
		if (r <= 0) {
			*eof = r == 0;
			break;
		}
		n += (size_t)r;
	}
	return n;
}

/* The trace directory whose summary says "complete", or NULL. */
static inline char *complete_calls(const char *hqout, int traces)
{
	char path[PATH_MAX + 64], *sum;
	int i;

	for (i = 1; i <= traces; i++) {
		snprintf(path, sizeof(path), "%s/trace-%d/summary.txt", hqout,
			 i);
		sum = bft_test_slurp(path, NULL);
		if (sum && strstr(sum, "status:        complete")) {
			free(sum);
			snprintf(path, sizeof(path), "%s/trace-%d/calls.txt",
				 hqout, i);
			return bft_test_slurp(path, NULL);
		}
		free(sum);
	}
	return NULL;
}

/*
 * One replay through bfhq: a test's own directories, the replay's input
 * (written by the test into @replay), bfhq's output (@out) and the
 * collector's .flow files (@flow).
 */
struct replay_run {
	char dir[PATH_MAX];
	char replay[PATH_MAX + 16];
	char out[PATH_MAX + 16];
	char flow[PATH_MAX + 16];
	char log[PATH_MAX + 16];
	int port;
	pid_t hq, coll;
};

static inline int replay_run_init(struct replay_run *r)
{
	memset(r, 0, sizeof(*r));
	if (make_tmpdir(r->dir, sizeof(r->dir)))
		return -1;
	snprintf(r->replay, sizeof(r->replay), "%s/replay", r->dir);
	snprintf(r->out, sizeof(r->out), "%s/hq", r->dir);
	snprintf(r->flow, sizeof(r->flow), "%s/flow", r->dir);
	snprintf(r->log, sizeof(r->log), "%s/log", r->dir);
	r->port = free_port();
	return mkdir(r->replay, 0755) || r->port <= 0 ? -1 : 0;
}

/*
 * bfhq --start --count 1, then bfcollector --replay into it: 0 once both
 * ended with status 0, else which one did not ("bfhq", "bfcollector").
 */
static inline const char *replay_run_go(struct replay_run *r)
{
	char port[16], hq[64];
	char *hq_argv[] = { "bfhq", "-p", port, "-o", r->out, "--start",
			    "--count", "1", "--timeout", "120", NULL };
	char *coll_argv[] = { "bfcollector", "--hq", hq, "--replay",
			      r->replay, "--output", r->flow,
			      "--connect-timeout", "30", NULL };
	int coll_status, hq_status;

	snprintf(port, sizeof(port), "%d", r->port);
	snprintf(hq, sizeof(hq), "127.0.0.1:%d", r->port);
	r->hq = spawn(hq_argv, r->log);
	if (r->hq <= 0 || !wait_listening(r->port, slow_env() ? 30000 : 5000))
		return "bfhq";
	r->coll = spawn(coll_argv, r->log);
	if (r->coll <= 0)
		return "bfcollector";
	coll_status = wait_exit(r->coll, 60000);
	r->coll = 0;
	hq_status = wait_exit(r->hq, 30000);
	r->hq = 0;
	return coll_status ? "bfcollector" : hq_status ? "bfhq" : NULL;
}

/* A file of bfhq's first trace (its length in *n if n), or NULL. */
static inline char *replay_run_file(const struct replay_run *r,
				    const char *name, size_t *n)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/trace-1/%s", r->out, name);
	return bft_test_slurp(path, n);
}

static inline void replay_run_fini(struct replay_run *r)
{
	if (r->coll > 0)
		wait_exit(r->coll, 0);
	if (r->hq > 0)
		wait_exit(r->hq, 0);
	if (r->dir[0])
		remove_tmpdir(r->dir);
}

#endif /* COLLECTOR_FIXTURE_H */
