// SPDX-License-Identifier: GPL-2.0
/*
 * The USDT target of usdt_test: <sys/sdt.h> sites of 0, 1, 3 and 6
 * arguments (registers, constants, negative and 64-bit values, a global in
 * memory), one behind a semaphore (targets/usdt_sema.c: <sys/sdt.h> gives
 * semaphores to every site of a file or none), and an empty one the test
 * gives arguments of its own.  The line protocol of serve_runs.h: each byte on
 * stdin is one round, run by the main thread and then by a worker thread
 * ("usdt-worker"), one after the other, so the global each reads holds
 * the value targets/usdt_shape.h says.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/sdt.h>

#include "serve_runs.h"
#include "usdt_shape.h"

long long usdt_global;
static unsigned int round_no;

/* noipa: the arguments stay runtime values, not folded constants */
static __attribute__((noipa)) void usdt_round(unsigned int r, unsigned int t)
{
	struct usdt_vals v;

	usdt_shape(r, t, &v);
	usdt_global = v.global;
	DTRACE_PROBE(bftgt, zero);
	DTRACE_PROBE1(bftgt, one, v.one);
	DTRACE_PROBE3(bftgt, three, v.neg, v.big, usdt_global);
	DTRACE_PROBE6(bftgt, six, v.ch, v.ush, v.neg64, v.u64max, 42,
		      usdt_global);
	usdt_sema(r, t);
	DTRACE_PROBE(bftgt, site);
}

static void *worker(void *arg)
{
	pthread_setname_np(pthread_self(), USDT_WORKER_NAME);
	usdt_round(*(unsigned int *)arg, 1);
	return NULL;
}

static int run(void)
{
	unsigned int r = ++round_no;
	pthread_t th;

	usdt_round(r, 0);
	if (pthread_create(&th, NULL, worker, &r))
		return 1;
	return pthread_join(th, NULL) != 0;
}

int main(void)
{
	return serve_runs(run);
}
