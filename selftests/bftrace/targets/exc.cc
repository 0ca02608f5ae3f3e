// SPDX-License-Identifier: GPL-2.0
/*
 * exc: C++ exceptions and non-local exits through traced frames.  One case
 * per run, named by argv[1]; the cases and the trace they must give are in
 * exc_shape.h.  Output goes to stdout (and, for "cold" and "uncaught", to
 * stderr), so that a traced run can be compared with an untraced one.
 */
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <pthread.h>
#include <stdexcept>
#include <unistd.h>

#include "exc_lib.h"
#include "exc_shape.h"

#define TRACED __attribute__((noipa, used))

static volatile long sink;

static inline void touch(long v)
{
	asm volatile("" : : "r"(v) : "memory");
	sink += v;
}

TRACED void ex_note(int v)
{
	touch(v);
}

/* ---- catch3, thread ---- */

TRACED void ex_c(void)
{
	throw std::runtime_error("from ex_c");
}

TRACED void ex_b(void)
{
	ex_c();
	touch(2);
}

TRACED void ex_a(void)
{
	ex_b();
	touch(1);
}

TRACED void ex_catch3(void)
{
	try {
		ex_a();
	} catch (const std::runtime_error &e) {
		ex_note(3);
		std::printf("catch3: caught %s\n", e.what());
	}
}

/* ---- rethrow ---- */

TRACED void ex_throw_logic(void)
{
	throw std::logic_error("logic");
}

TRACED void ex_rethrow_mid(void)
{
	try {
		ex_throw_logic();
	} catch (...) {
		ex_note(1);
		std::printf("rethrow: mid caught, rethrowing\n");
		throw;
	}
	touch(1);
}

TRACED void ex_rethrow_outer(void)
{
	try {
		ex_rethrow_mid();
	} catch (const std::logic_error &e) {
		ex_note(2);
		std::printf("rethrow: outer caught %s\n", e.what());
	}
}

/* ---- nested ---- */

TRACED void ex_throw_int(int v)
{
	throw v;
}

TRACED void ex_throw_range(void)
{
	throw std::out_of_range("range");
}

TRACED void ex_range_outer(void)
{
	ex_throw_range();
	touch(1);
}

TRACED void ex_nested(void)
{
	try {
		try {
			ex_throw_int(42);
		} catch (int v) {
			ex_note(v);
			std::printf("nested: inner caught %d\n", v);
		}
		ex_range_outer();
	} catch (const std::out_of_range &e) {
		ex_note(5);
		std::printf("nested: outer caught %s\n", e.what());
	}
}

/* ---- cross ---- */

TRACED void ex_cb_throw(void)
{
	throw std::domain_error("callback");
}

TRACED void ex_cross(void)
{
	try {
		ex_lib_thrower(EX_LIB_DEPTH - 1);
	} catch (const std::runtime_error &e) {
		ex_note(1);
		std::printf("cross: caught %s from the library\n", e.what());
	}
	try {
		ex_lib_relay(ex_cb_throw);
	} catch (const std::domain_error &e) {
		ex_note(2);
		std::printf("cross: caught %s through the library\n", e.what());
	}
}

/* ---- threads ---- */

struct ex_guard {
	int v;
	TRACED ex_guard(int x) : v(x) { touch(x); }
	TRACED ~ex_guard() { touch(v); }
};

TRACED void *ex_thread_body(void *arg)
{
	try {
		ex_a();
	} catch (const std::runtime_error &e) {
		ex_note(4);
		std::printf("thread: caught %s\n", e.what());
	}
	return arg;
}

static int cancel_pipe[2] = { -1, -1 };

TRACED void ex_exit_now(void)
{
	pthread_exit(nullptr);
}

TRACED void ex_cancel_wait(void)
{
	char c;

	/* a cancellation point that blocks until the thread is cancelled */
	if (read(cancel_pipe[0], &c, 1) >= 0)
		touch(c);
}

TRACED void ex_guarded(bool cancel)
{
	ex_guard g(7);

	if (cancel)
		ex_cancel_wait();
	else
		ex_exit_now();
	touch(g.v);
}

TRACED void *ex_exit_body(void *arg)
{
	ex_guarded(false);
	return arg;
}

TRACED void *ex_cancel_body(void *arg)
{
	ex_guarded(true);
	return arg;
}

TRACED void ex_spawn(void *(*body)(void *), bool cancel)
{
	pthread_t t;
	void *ret = nullptr;

	if (pthread_create(&t, nullptr, body, nullptr)) {
		std::perror("pthread_create");
		return;
	}
	if (cancel)
		pthread_cancel(t);
	pthread_join(t, &ret);
	std::printf("spawn: thread ended%s\n",
		    ret == PTHREAD_CANCELED ? ", cancelled" : "");
}

/* ---- uncaught, ljmp, deep, dtor, cold, loop ---- */

TRACED void ex_a_uncaught(void)
{
	throw std::runtime_error("uncaught");
}

TRACED void ex_uncaught(void)
{
	ex_a_uncaught();
	touch(1);
}

static std::jmp_buf jb;

TRACED void ex_lj_b(void)
{
	std::longjmp(jb, 1);
}

TRACED void ex_lj_a(void)
{
	ex_lj_b();
	touch(1);
}

TRACED void ex_ljmp(void)
{
	if (!setjmp(jb)) {
		ex_lj_a();
		touch(2);
	}
	ex_note(6);
	std::printf("ljmp: back from the jump\n");
}

TRACED void ex_deep(int n)
{
	if (n == 0)
		throw std::runtime_error("deep");
	ex_deep(n - 1);
	touch(n);
}

TRACED void ex_deep_case(void)
{
	try {
		ex_deep(EX_DEEP_DEPTH);
	} catch (const std::runtime_error &e) {
		ex_note(7);
		std::printf("deep: caught %s\n", e.what());
	}
}

TRACED void ex_dtor_b(void)
{
	ex_c();
	touch(3);
}

TRACED void ex_guarded_throw(void)
{
	ex_guard g(8);

	ex_dtor_b();
	touch(g.v);
}

TRACED void ex_dtor_case(void)
{
	try {
		ex_guarded_throw();
	} catch (const std::runtime_error &e) {
		ex_note(8);
		std::printf("dtor: caught %s\n", e.what());
	}
}

__attribute__((noipa, used, cold)) void ex_cold_report(int x)
{
	std::fprintf(stderr, "cold: path taken for %d\n", x);
}

/* -O2 moves the unlikely branch into ex_cold_work.cold, entered by a jump. */
TRACED int ex_cold_work(int x)
{
	int r = x * 3;

	if (__builtin_expect(x > 1000, 0)) {
		ex_cold_report(x);
		for (int i = 0; i < x % 7; i++)
			touch(i);
		r -= 5;
	}
	touch(r);
	return r;
}

TRACED void ex_chain(int k)
{
	if (k == 1)
		throw std::runtime_error("loop");
	ex_chain(k - 1);
	touch(k);
}

TRACED void ex_loop_round(void)
{
	long caught = 0;

	for (int i = 0; i < EX_LOOP_THROWS; i++) {
		try {
			ex_chain(EX_LOOP_FRAMES);
		} catch (const std::runtime_error &) {
			caught++;
		}
	}
	std::printf("loop: caught %ld\n", caught);
}

TRACED int ex_main(const char *c)
{
	if (!strcmp(c, "catch3")) {
		ex_catch3();
	} else if (!strcmp(c, "rethrow")) {
		ex_rethrow_outer();
	} else if (!strcmp(c, "nested")) {
		ex_nested();
	} else if (!strcmp(c, "cross")) {
		ex_cross();
	} else if (!strcmp(c, "thread")) {
		ex_spawn(ex_thread_body, false);
	} else if (!strcmp(c, "pexit")) {
		ex_spawn(ex_exit_body, false);
	} else if (!strcmp(c, "cancel")) {
		ex_spawn(ex_cancel_body, true);
	} else if (!strcmp(c, "uncaught")) {
		ex_uncaught();
	} else if (!strcmp(c, "ljmp")) {
		ex_ljmp();
	} else if (!strcmp(c, "deep")) {
		ex_deep_case();
	} else if (!strcmp(c, "dtor")) {
		ex_dtor_case();
	} else if (!strcmp(c, "cold")) {
		std::printf("cold: %d\n", ex_cold_work(EX_COLD_ARG));
	} else if (!strcmp(c, "loop")) {
		char b;

		std::printf("%s\n", EX_LINE_READY);
		std::fflush(stdout);
		while (read(0, &b, 1) == 1 && b != 'q') {
			ex_loop_round();
			std::printf("%s\n", EX_LINE_DONE);
			std::fflush(stdout);
		}
	} else {
		return 2;
	}
	std::fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc != 2) {
		std::fprintf(stderr, "usage: exc CASE\n");
		return 2;
	}
	if (pipe(cancel_pipe))
		return 1;
	rc = ex_main(argv[1]);
	if (rc == 2)
		std::fprintf(stderr, "exc: unknown case '%s'\n", argv[1]);
	return rc;
}
