// SPDX-License-Identifier: GPL-2.0
/*
 * calltree: a target with a known call structure (calltree_shape.h).
 *
 * It waits on stdin so a test can attach before any traced call happens,
 * and it reports on stdout so the test knows when a run is complete.
 * Every traced function is noipa (no inlining, cloning, folding or
 * sibling-call tricks across it) and does a little work behind an asm
 * barrier, so each one is a real call with a real return in the binary.
 */
#define _GNU_SOURCE	/* pthread_setname_np */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bftgt_lib.h"
#include "calltree_shape.h"
#include "serve_runs.h"

#define TRACED __attribute__((noipa, used))

static volatile long sink;

static inline void touch(long v)
{
	asm volatile("" : : "r"(v) : "memory");
	sink += v;
}

TRACED void ct_c(void)
{
	touch(3);
}

TRACED void ct_b(void)
{
	ct_c();
	touch(2);
}

TRACED void ct_a(int i)
{
	ct_b();
	ct_c();
	touch(bftgt_scale(i));
}

TRACED int ct_odd(int n);

TRACED int ct_even(int n)
{
	int r = n == 0 ? 0 : ct_odd(n - 1) + 1;

	/* Work after the call: the recursive call is never a tail call. */
	touch(r);
	return r;
}

TRACED int ct_odd(int n)
{
	int r = n == 0 ? 0 : ct_even(n - 1) + 1;

	touch(r);
	return r;
}

TRACED void ct_t_leaf(int k)
{
	touch(k);
}

static pthread_barrier_t start_line;

TRACED void ct_thread_body(int k)
{
	for (int i = 0; i <= k; i++)
		ct_t_leaf(k);
	ct_b();
}

static void *thread_main(void *arg)
{
	int k = (int)(long)arg;
	char name[16];

	/*
	 * Named by itself, as CT_WORKER_NAME says, then a few calls and gone:
	 * only a name taken while it ran can be in the trace.
	 */
	snprintf(name, sizeof(name), CT_WORKER_NAME, k);
	pthread_setname_np(pthread_self(), name);
	/* All threads run their traced part at once, on whichever CPUs. */
	pthread_barrier_wait(&start_line);
	ct_thread_body(k);
	return NULL;
}

static int run_once(void)
{
	pthread_t th[CT_NR_THREADS];
	int err;

	for (int i = 0; i < CT_NEST_REPS; i++)
		ct_a(i);
	if (ct_even(CT_RECUR_DEPTH) != CT_RECUR_DEPTH) {
		fprintf(stderr, "calltree: recursion returned a wrong depth\n");
		return -1;
	}

	pthread_barrier_init(&start_line, NULL, CT_NR_THREADS);
	for (long k = 0; k < CT_NR_THREADS; k++) {
		err = pthread_create(&th[k], NULL, thread_main, (void *)k);
		if (err) {
			fprintf(stderr, "calltree: pthread_create: %s\n",
				strerror(err));
			exit(1);
		}
	}
	for (int k = 0; k < CT_NR_THREADS; k++)
		pthread_join(th[k], NULL);
	pthread_barrier_destroy(&start_line);
	return 0;
}

int main(void)
{
	return serve_runs(run_once);
}
