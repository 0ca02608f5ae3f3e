// SPDX-License-Identifier: GPL-2.0
/*
 * A fixed SQL workload over libsqlite3's API, for the real-library rows of
 * scripts/bench (bench/sqlite-api.sh): an in-memory table filled with ROWS
 * rows through one prepared INSERT in a transaction (bind, step, reset per
 * row), then read back through a prepared SELECT (step and two column
 * reads per row).  Every probe on sqlite3_* sees these calls plus the
 * library's own calls to its exported functions (sqlite3_exec prepares and
 * steps, the mutex and memory functions), so the tracer's counts, not this
 * program, say how many calls were traced.
 *
 *   bench-sqlite ROWS [ROUNDS]
 *      runs the workload ROUNDS times (default 1), each on a new database,
 *      and prints "total api_calls=N elapsed_ns=T round_ns=M rounds=K
 *      rows=R sum=S"
 * api_calls counts the calls this program makes over all rounds, T is the
 * whole time and M the median round's (the faster middle one of an even
 * count).  Under TCG a run's time moves by
 * tens of per cent with what the emulator translates first; the median
 * round leaves that, and the process's start, out.  sum checks the rows
 * read in the last round.
 *
 * With BENCH_GO=PATH in the environment it first waits until PATH exists,
 * so that a tracer attaching to a running process (the inline backend)
 * sees every round; with BENCH_END=PATH it waits again after printing,
 * until PATH exists, so that the tracer's counters can be read while the
 * process still lives.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int fail(sqlite3 *db, const char *what)
{
	fprintf(stderr, "bench-sqlite: %s: %s\n", what, db ? sqlite3_errmsg(db) : "no database");
	return 1;
}

/* One round of the workload; its API calls are added to *calls. */
static int round_once(long rows, long *calls, long long *sum)
{
	sqlite3_stmt *ins, *sel;
	sqlite3 *db = NULL;
	long i, got = 0;
	char text[32];
	int rc;

	*sum = 0;
	(*calls)++;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK)
		return fail(db, "open");
	*calls += 3;
	if (sqlite3_exec(db, "CREATE TABLE t(a INTEGER, b TEXT)", NULL, NULL, NULL) ||
	    sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?, ?)", -1, &ins, NULL) ||
	    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL))
		return fail(db, "setup");
	for (i = 0; i < rows; i++) {
		snprintf(text, sizeof(text), "row %ld", i);
		*calls += 4;
		if (sqlite3_bind_int(ins, 1, (int)i) ||
		    sqlite3_bind_text(ins, 2, text, -1, SQLITE_TRANSIENT) ||
		    sqlite3_step(ins) != SQLITE_DONE || sqlite3_reset(ins))
			return fail(db, "insert");
	}
	*calls += 3;
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) || sqlite3_finalize(ins) ||
	    sqlite3_prepare_v2(db, "SELECT a, b FROM t ORDER BY a", -1, &sel, NULL))
		return fail(db, "select");
	for (;;) {
		(*calls)++;
		rc = sqlite3_step(sel);
		if (rc != SQLITE_ROW)
			break;
		*calls += 2;
		*sum += sqlite3_column_int(sel, 0);
		got += sqlite3_column_text(sel, 1) != NULL;
	}
	if (rc != SQLITE_DONE)
		return fail(db, "step");
	*calls += 2;
	if (sqlite3_finalize(sel) || sqlite3_close(db))
		return fail(db, "close");
	if (got != rows || *sum != rows * (rows - 1) / 2) {
		fprintf(stderr, "bench-sqlite: read %ld rows (sum %lld) of %ld\n", got, *sum, rows);
		return 1;
	}
	return 0;
}

static int by_value(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* A positive count, or 0. */
static long count_of(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	return errno || end == s || *end || v <= 0 ? 0 : v;
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

int main(int argc, char **argv)
{
	long rows = argc > 1 ? count_of(argv[1]) : 0;
	long rounds = argc > 2 ? count_of(argv[2]) : 1;
	long calls = 0, r;
	long long t0, t1, sum = 0, *took;

	if (argc < 2 || argc > 3 || !rows || !rounds) {
		fprintf(stderr, "usage: bench-sqlite ROWS [ROUNDS]\n");
		return 2;
	}
	took = calloc(rounds, sizeof(*took));
	if (!took) {
		fprintf(stderr, "bench-sqlite: out of memory\n");
		return 1;
	}
	wait_file("BENCH_GO");
	t0 = now_ns();
	for (r = 0; r < rounds; r++) {
		long long start = now_ns();

		if (round_once(rows, &calls, &sum)) {
			free(took);
			return 1;
		}
		took[r] = now_ns() - start;
	}
	t1 = now_ns();
	qsort(took, rounds, sizeof(*took), by_value);
	printf("total api_calls=%ld elapsed_ns=%lld round_ns=%lld rounds=%ld rows=%ld sum=%lld\n",
	       calls, t1 - t0, took[(rounds - 1) / 2], rounds, rows, sum);
	free(took);
	fflush(stdout);
	wait_file("BENCH_END");
	return 0;
}
