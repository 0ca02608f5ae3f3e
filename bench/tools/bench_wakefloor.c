// SPDX-License-Identifier: GPL-2.0
/*
 * The floor under the counters' figure (bench/guest-counters.sh): what
 * any agent that samples at 10 Hz pays for each sample on this machine,
 * with no agent code at all.  Each variant sleeps 100 ms WAKES times and
 * then does its work; its CPU time per wake (the process's, so the
 * kernel's side of each system call is in it):
 *   wake    nothing: the wake-up and going back to sleep
 *   status  BFT_IOC_STATUS on /dev/bftrace (skipped without the device)
 *   send    one SAMPLE_BYTES-byte TCP send to a reader on loopback, the
 *           size of a sample that carries one value
 *   all     status, then send, as one sample of the collector does
 *
 *   bench-wakefloor [WAKES]
 *
 * Prints "@res counters.floor.VARIANT cpu_us=N pct_10hz=P" lines.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/bftrace.h>

#define SAMPLE_BYTES	32

static int dev = -1, tx = -1;

static double cpu_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void status(void)
{
	struct bft_ioc_cpu_stats cs[64];
	struct bft_ioc_status q = { .nr_cpus = 64, .cpus = (uintptr_t)cs };

	if (ioctl(dev, BFT_IOC_STATUS, &q)) {
		perror("bench-wakefloor: BFT_IOC_STATUS");
		exit(1);
	}
}

static void send_sample(void)
{
	static const char msg[SAMPLE_BYTES];

	if (send(tx, msg, sizeof(msg), 0) != (ssize_t)sizeof(msg)) {
		perror("bench-wakefloor: send");
		exit(1);
	}
}

static void run(const char *name, int wakes, bool st, bool snd)
{
	const struct timespec nap = { 0, 100 * 1000 * 1000 };
	double t0 = cpu_us(), us;

	for (int i = 0; i < wakes; i++) {
		nanosleep(&nap, NULL);
		if (st)
			status();
		if (snd)
			send_sample();
	}
	us = (cpu_us() - t0) / wakes;
	printf("@res counters.floor.%s cpu_us=%.0f pct_10hz=%.3f wakes=%d\n",
	       name, us, us * 10 / 1e4, wakes);
	fflush(stdout);
}

/* A reader on loopback that takes everything, as an inspector would. */
static pid_t sink(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	pid_t pid;

	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &len)) {
		perror("bench-wakefloor: listen");
		exit(1);
	}
	pid = fork();
	if (pid == 0) {
		char buf[4096];
		int c = accept(ls, NULL, NULL);

		while (c >= 0 && read(c, buf, sizeof(buf)) > 0)
			;
		_exit(0);
	}
	tx = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (pid < 0 || tx < 0 ||
	    connect(tx, (struct sockaddr *)&a, sizeof(a))) {
		perror("bench-wakefloor: connect");
		exit(1);
	}
	/* the collector's counters socket sends each sample at once too */
	setsockopt(tx, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(ls);
	return pid;
}

int main(int argc, char **argv)
{
	int wakes = argc > 1 ? atoi(argv[1]) : 50;
	pid_t reader;

	if (wakes < 1) {
		fprintf(stderr, "usage: bench-wakefloor [WAKES]\n");
		return 2;
	}
	dev = open("/dev/" BFT_DEV_NAME, O_RDONLY | O_CLOEXEC);
	reader = sink();
	run("wake", wakes, false, false);
	if (dev >= 0)
		run("status", wakes, true, false);
	run("send", wakes, false, true);
	if (dev >= 0)
		run("all", wakes, true, true);
	close(tx);
	waitpid(reader, NULL, 0);
	return 0;
}
