// SPDX-License-Identifier: GPL-2.0
/*
 * spinner: calls one traced function (spin_fn) in a loop, on one or more
 * threads, and counts the returned calls in a page shared with the test
 * (spinner_shm.h) when file descriptor SPIN_SHM_FD is open.
 *
 *   spinner [-t threads] [-d busy_us] [-n calls] [-x] [-L]
 *
 *   -t  spinning threads, the main thread included (default 1)
 *   -d  busy-wait this many microseconds between calls (default 0), to
 *       keep the event rate modest under an emulated CPU
 *   -n  each thread stops after this many calls; the process then exits 0
 *       (default: spin forever)
 *   -x  exec itself again (same arguments) when an 'x' arrives on stdin:
 *       the same pid, a new address space
 *   -L  the main thread exits when an 'L' arrives on stdin; the others go
 *       on (a process whose /proc/PID refers to a zombie leader)
 *
 * Prints "ready\n" on stdout once every thread is running.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "spinner_shm.h"

static volatile long sink;
static struct spin_shm local_shm;
static struct spin_shm *shm = &local_shm;
static unsigned long busy_us;
static unsigned long max_calls;
static atomic_uint started;

__attribute__((noipa, used)) void spin_fn(long v)
{
	asm volatile("" : : "r"(v) : "memory");
	sink += v;
}

static void busy_wait(unsigned long us)
{
	struct timespec t0, t;

	if (!us)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000L +
	       (t.tv_nsec - t0.tv_nsec) / 1000 < (long)us);
}

static void register_thread(unsigned int idx)
{
	shm->tids[idx] = (int32_t)syscall(SYS_gettid);
	atomic_fetch_add(&started, 1);
}

static void spin_loop(unsigned int idx)
{
	for (unsigned long n = 0; !max_calls || n < max_calls; n++) {
		spin_fn((long)n);
		__atomic_store_n(&shm->calls[idx], n + 1, __ATOMIC_RELEASE);
		busy_wait(busy_us);
	}
}

static void *spin_thread(void *arg)
{
	unsigned int idx = (unsigned int)(long)arg;

	register_thread(idx);
	spin_loop(idx);
	return NULL;
}

static struct spin_shm *map_shared_page(void)
{
	struct stat st;
	void *p;

	if (fstat(SPIN_SHM_FD, &st) || (size_t)st.st_size < sizeof(*shm))
		return &local_shm;
	p = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED,
		 SPIN_SHM_FD, 0);
	return p == MAP_FAILED ? &local_shm : p;
}

static char **self_argv;

static void *exec_on_x(void *arg)
{
	char c;

	(void)arg;
	while (read(0, &c, 1) == 1) {
		if (c == 'x') {
			execv("/proc/self/exe", self_argv);
			perror("spinner: exec");
			exit(1);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[SPIN_MAX_THREADS], xth;
	unsigned int nr = 1;
	int opt, reexec = 0, leaderless = 0;

	self_argv = argv;
	while ((opt = getopt(argc, argv, "t:d:n:xL")) != -1) {
		switch (opt) {
		case 't':
			nr = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'd':
			busy_us = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			max_calls = strtoul(optarg, NULL, 0);
			break;
		case 'x':
			reexec = 1;
			break;
		case 'L':
			leaderless = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-t threads] [-d busy_us] [-n calls] [-x] [-L]\n",
				argv[0]);
			return 2;
		}
	}
	if (nr < 1 || nr > SPIN_MAX_THREADS) {
		fprintf(stderr, "spinner: -t must be 1..%d\n", SPIN_MAX_THREADS);
		return 2;
	}
	shm = map_shared_page();
	shm->nr_threads = nr;

	for (unsigned int i = 1; i < nr; i++) {
		int err = pthread_create(&th[i], NULL, spin_thread, (void *)(long)i);

		if (err) {
			fprintf(stderr, "spinner: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	/* Thread 0 is the main thread, so a one-thread spinner has tid == pid. */
	register_thread(0);
	while (atomic_load(&started) < nr)
		usleep(1000);
	if (reexec && pthread_create(&xth, NULL, exec_on_x, NULL)) {
		fprintf(stderr, "spinner: pthread_create failed\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (leaderless && getchar() != EOF)
		pthread_exit(NULL);

	spin_loop(0);
	for (unsigned int i = 1; i < nr; i++)
		pthread_join(th[i], NULL);
	return 0;
}
