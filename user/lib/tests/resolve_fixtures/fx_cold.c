// SPDX-License-Identifier: GPL-2.0
/*
 * Symbols that look like functions but are no call's entry, for the
 * resolver's tests:
 *   - cf_work's unlikely branch, which gcc -O2 moves to cf_work.cold
 *     (entered by a jump from cf_work);
 *   - setjmp (returns twice) and _start (the ELF entry point).
 * Modes:
 *   N        print cf_work(N); N > 1000 runs the cold path, which says
 *            "cold path N" on stderr
 *   jump     setjmp, then longjmp back once; prints "jumped"
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int sink;

__attribute__((cold, noinline)) void cf_report(int x)
{
	fprintf(stderr, "cold path %d\n", x);
}

__attribute__((noinline)) int cf_work(int x)
{
	int r = x * 3;

	if (__builtin_expect(x > 1000, 0)) {
		cf_report(x);
		for (int i = 0; i < x % 7; i++)
			sink += i;
		r -= 5;
	}
	sink += r;
	return r;
}

int main(int argc, char **argv)
{
	static jmp_buf jb;
	static volatile int jumps;

	if (argc > 1 && !strcmp(argv[1], "jump")) {
		if (setjmp(jb))
			return puts("jumped") < 0;
		if (!jumps++)
			longjmp(jb, 1);
		return 1;
	}
	printf("%d\n", cf_work(argc > 1 ? atoi(argv[1]) : 1));
	return 0;
}
