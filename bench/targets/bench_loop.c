// SPDX-License-Identifier: GPL-2.0
/*
 * The traced program of scripts/bench: THREADS threads (one per CPU) each
 * call bench_work() CALLS times in a tight loop, after WARMUP calls that
 * are not timed, and report the time per call.  Every tracer under test
 * probes bench_work's entry and return, so the time per call is the
 * program's own few nanoseconds plus what one traced call costs.
 *
 *   bench-loop CALLS [THREADS [RATE [WARMUP]]]
 *
 * RATE (calls per second per thread, 0 = flat out) paces the calls against
 * absolute deadlines, busy-waiting on CLOCK_MONOTONIC between them: a
 * tracer slower than the pace makes the loop fall behind, and the rate
 * achieved, which is printed, says so.
 *
 * Output, one line per thread and one in total:
 *   thread=I cpu=C calls=N ns_per_call=X
 *   total threads=T calls=N ns_per_call=X calls_per_s=R elapsed_ns=E
 * ns_per_call in the total line is the mean over the threads.
 *
 * With BENCH_GO=PATH in the environment it first waits, before any call,
 * until PATH exists: a tracer that attaches to a running process (the
 * inline backend) attaches in that wait and then creates PATH.  With
 * BENCH_END=PATH it waits again after printing, until PATH exists, so that
 * the tracer's counters can be read while the process still lives.
 *
 * Built with -DBENCH_MCOUNT (and -pg), bench_work calls mcount after its
 * frame is set up, as gcc -pg compiles a function: uftrace's entry point.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

/*
 * The probed function, written out so that every build has the same
 * prologue whatever the compiler would choose: push %rbp, an instruction
 * uprobes emulate instead of single-stepping, as most frame-pointer code
 * starts.  With -fcf-protection (__CET__) it starts with endbr64 first, as
 * distribution binaries do, and push %rbp is at +4.
 */
#ifdef __CET__
#define BENCH_ENDBR "endbr64\n\t"
#else
#define BENCH_ENDBR ""
#endif
#ifdef BENCH_MCOUNT
/* mcount keeps the argument registers, as gcc -pg relies on */
#define BENCH_PG "call mcount\n\t"
#else
#define BENCH_PG ""
#endif
unsigned long bench_work(unsigned long x);
__asm__(".text\n\t"
	".globl bench_work\n\t"
	".type bench_work, @function\n"
	"bench_work:\n\t"
	BENCH_ENDBR
	"push %rbp\n\t"
	"mov %rsp, %rbp\n\t"
	BENCH_PG
	"imul $0x5bd1e995, %rdi, %rax\n\t"
	"add $1, %rax\n\t"
	"pop %rbp\n\t"
	"ret\n\t"
	".size bench_work, .-bench_work\n\t"
	".previous");

struct worker {
	pthread_t thread;
	int index;
	int cpu;
	unsigned long calls;
	unsigned long warmup;
	double rate;
	uint64_t start_ns;
	uint64_t end_ns;
	unsigned long sink;
};

static pthread_barrier_t start_line;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	unsigned long x = (unsigned long)w->index, i;
	uint64_t period = w->rate > 0 ? (uint64_t)(1e9 / w->rate) : 0;

	if (w->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		/* best effort: a failure only loses the pinning */
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	for (i = 0; i < w->warmup; i++)
		x = bench_work(x);
	pthread_barrier_wait(&start_line);
	w->start_ns = now_ns();
	if (!period) {
		for (i = 0; i < w->calls; i++)
			x = bench_work(x);
	} else {
		uint64_t due = w->start_ns;

		for (i = 0; i < w->calls; i++) {
			while (now_ns() < due)
				;
			x = bench_work(x);
			due += period;
		}
	}
	w->end_ns = now_ns();
	w->sink = x;
	return NULL;
}

/* BENCH_GO: polled, not a blocking wait, so an attach's stop is harmless. */
static void wait_file(const char *var)
{
	const char *go = getenv(var);
	struct timespec ms = { 0, 1000000 };

	if (!go || !*go)
		return;
	while (access(go, F_OK))
		nanosleep(&ms, NULL);
}

static int number(const char *s, const char *what, double max, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || *out < 0 || *out > max) {
		fprintf(stderr, "bench-loop: bad %s '%s' (0..%.0f)\n", what, s,
			max);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_THREADS];
	double calls, threads = 1, rate = 0, warmup = 200, sum = 0;
	uint64_t first = UINT64_MAX, last = 0;
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), i, n, err;

	if (argc < 2 || argc > 5) {
		fprintf(stderr, "usage: bench-loop CALLS [THREADS [RATE [WARMUP]]]\n");
		return 2;
	}
	if (number(argv[1], "CALLS", 1e12, &calls) ||
	    (argc > 2 && number(argv[2], "THREADS", MAX_THREADS, &threads)) ||
	    (argc > 3 && number(argv[3], "RATE", 1e10, &rate)) ||
	    (argc > 4 && number(argv[4], "WARMUP", 1e12, &warmup)))
		return 2;
	n = (int)threads;
	if (calls < 1 || n < 1) {
		fprintf(stderr, "bench-loop: CALLS and THREADS must be at least 1\n");
		return 2;
	}
	wait_file("BENCH_GO");
	err = pthread_barrier_init(&start_line, NULL, (unsigned int)n);
	if (err) {
		fprintf(stderr, "bench-loop: barrier: %s\n", strerror(err));
		return 1;
	}
	for (i = 0; i < n; i++) {
		w[i].index = i;
		w[i].cpu = ncpu > 0 ? i % ncpu : -1;
		w[i].calls = (unsigned long)calls;
		w[i].warmup = (unsigned long)warmup;
		w[i].rate = rate;
		err = pthread_create(&w[i].thread, NULL, run, &w[i]);
		if (err) {
			fprintf(stderr, "bench-loop: pthread_create: %s\n",
				strerror(err));
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		double per;

		pthread_join(w[i].thread, NULL);
		per = (double)(w[i].end_ns - w[i].start_ns) / (double)w[i].calls;
		sum += per;
		if (w[i].start_ns < first)
			first = w[i].start_ns;
		if (w[i].end_ns > last)
			last = w[i].end_ns;
		printf("thread=%d cpu=%d calls=%lu ns_per_call=%.2f\n", i,
		       w[i].cpu, w[i].calls, per);
	}
	printf("total threads=%d calls=%lu ns_per_call=%.2f calls_per_s=%.0f elapsed_ns=%" PRIu64 "\n",
	       n, (unsigned long)calls * (unsigned long)n, sum / n,
	       calls * n * 1e9 / (double)(last - first), last - first);
	fflush(stdout);
	wait_file("BENCH_END");
	return 0;
}
