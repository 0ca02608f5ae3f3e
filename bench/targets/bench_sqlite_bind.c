// SPDX-License-Identifier: GPL-2.0
/*
 * A real library's function in a tight loop, for bench/singlestep-share.sh:
 * sqlite3_bind_int() on one prepared "SELECT ?", CALLS times.  Debian's
 * libsqlite3 starts it with movslq (single-stepped by uprobes) followed by
 * a jmp (emulated), so a probe at +0 and one at the jmp show what the
 * generalised endbr64 rule saves per call.
 *
 *   bench-sqlite-bind CALLS     prints "total calls=N ns_per_call=X"
 */
#define _GNU_SOURCE
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 100000;
	sqlite3_stmt *st;
	sqlite3 *db;
	double t0, t1;
	long i;

	if (calls <= 0 || sqlite3_open(":memory:", &db) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT ?", -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "usage: bench-sqlite-bind CALLS (sqlite3 setup failed)\n");
		return 1;
	}
	t0 = now_ns();
	for (i = 0; i < calls; i++) {
		if (sqlite3_bind_int(st, 1, (int)i) != SQLITE_OK) {
			fprintf(stderr, "bench-sqlite-bind: bind failed\n");
			return 1;
		}
	}
	t1 = now_ns();
	printf("total calls=%ld ns_per_call=%.2f\n", calls, (t1 - t0) / calls);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return 0;
}
