// SPDX-License-Identifier: GPL-2.0
/*
 * The throw benchmark of scripts/bench: THROWS times, a C++ exception is
 * thrown at the bottom of DEPTH nested calls of bt_frame() and caught in
 * main, after WARMUP throws that are not timed.  Traced with return probes
 * on bt_frame, every throw passes DEPTH return-probed frames: the unwinder
 * hooks put their return addresses back, the catch closes them.
 *
 *   bench-throw THROWS DEPTH [WARMUP]
 *
 * Output:  total throws=N depth=D ns_per_throw=X caught=N
 */
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>

static volatile int bt_sink;

extern "C" __attribute__((noinline)) void bt_frame(int depth)
{
	if (depth <= 1)
		throw std::runtime_error("bench");
	bt_frame(depth - 1);
	bt_sink = depth;	/* no tail call: every level keeps its frame */
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static long arg(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0) {
		fprintf(stderr, "bench-throw: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

static long run(long n, int depth)
{
	long caught = 0;

	for (long i = 0; i < n; i++) {
		try {
			bt_frame(depth);
		} catch (const std::runtime_error &) {
			caught++;
		}
	}
	return caught;
}

int main(int argc, char **argv)
{
	long throws, depth, warmup = 20, caught;
	uint64_t t0, t1;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: bench-throw THROWS DEPTH [WARMUP]\n");
		return 2;
	}
	throws = arg(argv[1], "THROWS");
	depth = arg(argv[2], "DEPTH");
	if (argc == 4)
		warmup = arg(argv[3], "WARMUP");
	if (throws < 1 || depth < 1) {
		fprintf(stderr, "bench-throw: THROWS and DEPTH must be at least 1\n");
		return 2;
	}
	run(warmup, (int)depth);
	t0 = now_ns();
	caught = run(throws, (int)depth);
	t1 = now_ns();
	printf("total throws=%ld depth=%ld ns_per_throw=%.1f caught=%ld\n",
	       throws, depth, (double)(t1 - t0) / throws, caught);
	return caught == throws ? 0 : 1;
}
