// SPDX-License-Identifier: GPL-2.0
/*
 * The C fixture, built as a plain, PIE (+ libfx.so), CET, static and
 * stripped executable.  Modes:
 *   bytes        print each function's first bytes as mapped ("name hex")
 *   work N       print "ready PID", wait for SIGUSR1, make the calls below N
 *                times, print "done", wait for SIGUSR1 again, exit
 *   bench N      time N calls of foo_fast, print "ns_per_call X"
 *   junk FILE    map FILE (not ELF) executable, then as "work 1"
 *   fork         fork; the child makes the calls below once and exits 0,
 *                the parent waits for it, makes them once, and exits with
 *                3 (and 4 if the child did not exit 0)
 *   (none)       one call of each, exit
 * fx_first() is always the very first call main makes.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fx.h"

volatile int fx_sink;

FX_FN int fx_first(int x)
{
	return x + 1;
}

FX_FN int foo_fast(int x)
{
	return x * 2;
}

FX_FN int foo_slow(int x)
{
	volatile int i, s = 0;

	for (i = 0; i < 10; i++)
		s += x;
	return s;
}

FX_FN int bar(int x)
{
	return foo_fast(x) + 1;
}

int bar_alias(int x) __attribute__((alias("bar")));

FX_FN static int fx_local_helper(int x)
{
	return x - 1;
}

static void dump(const char *name, const void *fn)
{
	const unsigned char *p = fn;

	printf("%s ", name);
	for (int i = 0; i < FX_BYTES; i++)
		printf("%02x", p[i]);
	printf("\n");
}

static void wait_usr1(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigwait(&set, &sig);
}

static void work(long n)
{
	for (long i = 0; i < n; i++) {
		fx_sink += foo_fast((int)i);
		if (i % 3 == 0)
			fx_sink += foo_slow((int)i);
		fx_sink += bar((int)i);
#ifdef FX_WITH_LIB
		fx_sink += fxlib_add((int)i, 1);
		if (i % 2 == 0)
			fx_sink += fxlib_mul((int)i, 3);
#endif
	}
	fx_sink += fx_local_helper((int)n);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	sigset_t set;

	fx_sink = fx_first(argc);
	/* blocked from the start, so an early SIGUSR1 waits for sigwait */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (argc > 1 && !strcmp(argv[1], "bytes")) {
		dump("fx_first", fx_first);
		dump("foo_fast", foo_fast);
		dump("foo_slow", foo_slow);
		dump("bar", bar);
		dump("fx_local_helper", fx_local_helper);
		dump("main", main);
#ifdef FX_WITH_LIB
		dump("fxlib_add", fxlib_add);
		dump("fxlib_mul", fxlib_mul);
#endif
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "junk")) {
		int fd = open(argv[2], O_RDONLY);

		if (fd < 0 || mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE,
				   fd, 0) == MAP_FAILED) {
			perror(argv[2]);
			return 1;
		}
		argv[2] = "1";
	}
	if (argc > 2 && (!strcmp(argv[1], "work") || !strcmp(argv[1], "junk"))) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		wait_usr1();
		work(atol(argv[2]));
		printf("done\n");
		fflush(stdout);
		wait_usr1();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "fork")) {
		pid_t pid = fork();
		int st = 0;

		if (pid < 0)
			return 1;
		if (!pid) {
			work(1);
			_exit(0);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 4;
		work(1);
		return 3;
	}
	if (argc > 2 && !strcmp(argv[1], "bench")) {
		long n = atol(argv[2]);
		double t = now_ns();

		for (long i = 0; i < n; i++)
			fx_sink += foo_fast((int)i);
		printf("ns_per_call %.1f\n", (now_ns() - t) / (double)n);
		return 0;
	}
	work(1);
	return 0;
}
