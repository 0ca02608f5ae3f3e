// SPDX-License-Identifier: GPL-2.0
/*
 * The USDT fixture: USDT probes inside traced functions, hit by two
 * threads, two rounds each.  Thread k (0 main, 1 its worker), round r:
 *   fxu_work(k, r)     fxu:zero; fxu:one -(10k + r) - 1;
 *                      fxu:three 0x123456789abcdef0 + r, 200 + r, -300 - r;
 *                      fxu:six -(10k + r) - 1, 0xfedcba9876543210 + r,
 *                          -1 - r, fxu_global (-123456, from memory), 7,
 *                          fxu_array[r] (INT64_MIN, then -1, from memory)
 *   fxu_gated(k, r)    fxu:gated 10k + r, behind a semaphore: only while a
 *                      tracer holds it raised
 *   fxul_call(k, r)    in libfxusdt.so: fxul:lib -7r - k, 2^64 - 1 - r
 * so the signed and unsigned extremes of every width go through.  It
 * prints "gated N" for each gated hit it made, to tell a test whether the
 * semaphore was up.  With the argument "wait" it prints "ready PID" and
 * waits for SIGUSR1 first, and after the rounds prints "done" and waits
 * for SIGUSR1 again before it exits.
 */
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/sdt.h>

volatile int fxu_global = -123456;
volatile int64_t fxu_array[2] = { INT64_MIN, -1 };

void fxul_call(int k, int r);
void fxu_gated(int k, int r);

__attribute__((noipa)) void fxu_work(int k, int r)
{
	int neg = -(10 * k + r) - 1;
	long long big = (long long)0x123456789abcdef0ULL + r;
	unsigned char u8 = (unsigned char)(200 + r);
	short s16 = (short)(-300 - r);
	signed char s8 = (signed char)(-1 - r);
	unsigned long ul = 0xfedcba9876543210UL + (unsigned long)r;

	DTRACE_PROBE(fxu, zero);
	DTRACE_PROBE1(fxu, one, neg);
	DTRACE_PROBE3(fxu, three, big, u8, s16);
	DTRACE_PROBE6(fxu, six, neg, ul, s8, fxu_global, 7, fxu_array[r]);
}

static void rounds(int k)
{
	for (int r = 0; r < 2; r++) {
		fxu_work(k, r);
		fxu_gated(k, r);
		fxul_call(k, r);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	rounds(1);
	return NULL;
}

static void wait_usr1(sigset_t *set)
{
	int sig;

	sigwait(set, &sig);
}

int main(int argc, char **argv)
{
	bool wait = argc > 1 && !strcmp(argv[1], "wait");
	pthread_t t;
	sigset_t set;

	setvbuf(stdout, NULL, _IONBF, 0);
	/* blocked before the worker exists, so it inherits the mask */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (wait) {
		printf("ready %d\n", (int)getpid());
		wait_usr1(&set);
	}
	if (pthread_create(&t, NULL, worker, NULL))
		return 2;
	rounds(0);
	pthread_join(t, NULL);
	if (wait) {
		printf("done\n");
		wait_usr1(&set);
	}
	return 0;
}
