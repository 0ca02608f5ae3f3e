/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The exc target's cases (targets/exc.cc, targets/exc_lib.cc) and their
 * model: what each thread's trace must be when every ex_* function has a
 * return probe and the exception hooks are in place.  Shared by the
 * target and by exc_test.c, so the expected trace comes from the same
 * numbers the target runs with.
 *
 * Every traced function is called ex_* (or is a member of struct
 * ex_guard), is noipa, and does some work after each call it makes, so
 * each one is a real call with a real return in the binary.  The target
 * runs one case, named by argv[1], on its main thread (and the threads it
 * starts), prints what it did on stdout, and exits 0 (except "uncaught").
 *
 * The model is written as the calls the target makes (exm_call, exm_ret),
 * the throws (exm_throw) and where they land (exm_catch: the frames above
 * the catching one are left; exm_jump: a longjmp or the end of a forced
 * unwind; exm_found: frames found gone at the next traced call).  It
 * yields, per thread, the events bft_calltree rebuilds from the records:
 *   enter (noret past the kernel's BFT_URETPROBE_DEPTH pending returns),
 *   exit (unwound: 0, or the BFT_UNWIND_* reason),
 *   throw (the innermost open frame, the mangled type name or NULL when
 *   unknown, and BFT_THROW_*).
 */
#ifndef BFT_EXC_SHAPE_H
#define BFT_EXC_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EX_DEEP_DEPTH	100	/* ex_deep recursion: > 64 pending returns */
#define EX_LOOP_THROWS	1000	/* throws per loop round */
#define EX_LOOP_FRAMES	10	/* traced frames each loop throw leaves */
#define EX_LIB_DEPTH	3	/* ex_lib_thrower frames in libbftexc.so */
#define EX_COLD_ARG	5000	/* ex_cold_work's argument: its cold path runs */

/* Mangled type names, as std::type_info::name() gives them. */
#define EX_T_RUNTIME	"St13runtime_error"
#define EX_T_LOGIC	"St11logic_error"
#define EX_T_RANGE	"St12out_of_range"
#define EX_T_DOMAIN	"St12domain_error"
#define EX_T_INT	"i"

/* Line protocol of "loop": "ready" at start; per input byte one round of
 * EX_LOOP_THROWS throws, then "done"; 'q' or EOF exits. */
#define EX_LINE_READY	"ready"
#define EX_LINE_DONE	"done"

/* The cases, argv[1] of the target. */
#define EX_CASES(X)							\
	X(catch3)	/* throw through 3 frames, caught */		\
	X(rethrow)	/* caught, rethrown, caught again */		\
	X(nested)	/* nested try blocks, two types */		\
	X(cross)	/* across libbftexc.so, both ways */		\
	X(thread)	/* a throw in another thread */			\
	X(pexit)	/* pthread_exit: forced unwind */		\
	X(cancel)	/* pthread_cancel: forced unwind */		\
	X(uncaught)	/* terminate */					\
	X(ljmp)		/* longjmp out of 2 frames */			\
	X(deep)		/* throw at the bottom of 101 frames */		\
	X(dtor)		/* a traced destructor runs while unwinding */	\
	X(cold)		/* ex_cold_work's cold fragment runs */		\
	X(loop)		/* rounds of 1000 throws through 10 frames */

#ifndef __cplusplus

/* ---- the model (C, for the tests) ---------------------------------------- */

enum exm_kind { EXM_ENTER = 1, EXM_EXIT, EXM_THROW };

struct exm_ev {
	uint8_t kind;
	uint8_t noret;
	uint8_t unwound;	/* EXIT: BFT_UNWIND_* or 0 */
	uint8_t how;		/* THROW: BFT_THROW_* */
	const char *fn;		/* ENTER/EXIT: the frame; THROW: innermost */
	const char *exc;	/* THROW: mangled type, NULL if unknown */
};

struct exm_frame {
	const char *fn;
	bool noret;
};

struct exm_thread {
	const char *first;	/* the function the thread enters first */
	struct exm_ev *ev;
	size_t n, cap;
	struct exm_frame stack[256];
	unsigned int depth;
	unsigned int pending;	/* frames with a return probe */
	/* return instances of frames left without returning that the
	 * kernel still holds: it drops them at the next return, or at the
	 * next entry below its limit, and counts them against the limit
	 * until then */
	unsigned int stale;
	unsigned int limit;	/* BFT_URETPROBE_DEPTH */
};

static inline void exm_push(struct exm_thread *t, struct exm_ev ev)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 256;
		t->ev = (struct exm_ev *)realloc(t->ev, t->cap * sizeof(*t->ev));
		if (!t->ev)
			abort();
	}
	t->ev[t->n++] = ev;
}

static inline void exm_init(struct exm_thread *t, unsigned int limit)
{
	memset(t, 0, sizeof(*t));
	t->limit = limit;
}

static inline void exm_free(struct exm_thread *t)
{
	free(t->ev);
	t->ev = NULL;
	t->n = t->cap = 0;
}

static inline void exm_call(struct exm_thread *t, const char *fn)
{
	bool noret = t->pending + t->stale >= t->limit;

	if (t->depth >= sizeof(t->stack) / sizeof(t->stack[0]))
		abort();
	if (!t->first)
		t->first = fn;
	t->stack[t->depth].fn = fn;
	t->stack[t->depth++].noret = noret;
	t->pending += !noret;
	if (!noret)
		t->stale = 0;
	exm_push(t, (struct exm_ev){ .kind = EXM_ENTER, .noret = noret, .fn = fn });
}

/* The innermost frame closes, by a return (reason 0) or unwound. */
static inline void exm_close(struct exm_thread *t, uint8_t reason)
{
	struct exm_frame *f = &t->stack[--t->depth];

	t->pending -= !f->noret;
	exm_push(t, (struct exm_ev){ .kind = EXM_EXIT, .noret = f->noret,
				     .unwound = reason, .fn = f->fn });
}

static inline void exm_ret(struct exm_thread *t)
{
	if (!t->stack[t->depth - 1].noret)
		t->stale = 0;	/* the trampoline drops them */
	exm_close(t, 0);
}

static inline void exm_leaf(struct exm_thread *t, const char *fn)
{
	exm_call(t, fn);
	exm_ret(t);
}

static inline void exm_throw(struct exm_thread *t, const char *exc, uint8_t how)
{
	exm_push(t, (struct exm_ev){
		.kind = EXM_THROW, .how = how,
		.fn = t->depth ? t->stack[t->depth - 1].fn : NULL, .exc = exc,
	});
}

/*
 * Frames above depth keep are left, innermost first.  Their return
 * instances stay with the kernel for now, except at a catch below the
 * limit, where the return probe on __cxa_begin_catch drops them, and for
 * FOUND, which is the kernel dropping them.
 */
static inline void exm_leave(struct exm_thread *t, unsigned int keep,
			     uint8_t reason)
{
	bool at_limit = t->pending + t->stale >= t->limit;
	unsigned int left = 0;

	while (t->depth > keep) {
		left += !t->stack[t->depth - 1].noret;
		exm_close(t, reason);
	}
	if (reason == BFT_UNWIND_LONGJMP ||
	    ((reason == BFT_UNWIND_CATCH || reason == BFT_UNWIND_EXIT) &&
	     at_limit))
		t->stale += left;
	else
		t->stale = 0;
}

/* A thread's model, by the first function it enters. */
struct exm_case {
	struct exm_thread th[4];
	unsigned int nth;
};

static inline struct exm_thread *exm_new_thread(struct exm_case *c,
						unsigned int limit)
{
	struct exm_thread *t = &c->th[c->nth++];

	if (c->nth > sizeof(c->th) / sizeof(c->th[0]))
		abort();
	exm_init(t, limit);
	return t;
}

static inline void exm_case_free(struct exm_case *c)
{
	for (unsigned int i = 0; i < c->nth; i++)
		exm_free(&c->th[i]);
	c->nth = 0;
}

/* throw std::runtime_error from ex_c through ex_b and ex_a */
static inline void exm_abc(struct exm_thread *t)
{
	unsigned int keep = t->depth;

	exm_call(t, "ex_a");
	exm_call(t, "ex_b");
	exm_call(t, "ex_c");
	exm_throw(t, EX_T_RUNTIME, BFT_THROW_THROW);
	exm_leave(t, keep, BFT_UNWIND_CATCH);
}

/*
 * The model of one case; rounds: "loop" rounds.  limit: the kernel's
 * pending-return limit.  The forced unwinds end with glibc's longjmp to
 * the thread's start, which leaves the frames still open.  In a dynamic
 * glibc (2.36) that jump goes through __libc_longjmp, a second copy of
 * longjmp that libc.so.6 does not export, so no hook can be named for it:
 * the frames are closed by the hook on __call_tls_dtors, which the thread
 * calls next (reason EXIT).
 */
static inline int exm_build(struct exm_case *c, const char *name,
			    unsigned int limit, unsigned int rounds)
{
	struct exm_thread *m = exm_new_thread(c, limit), *t;
	unsigned int keep;

	exm_call(m, "ex_main");
	if (!strcmp(name, "catch3")) {
		exm_call(m, "ex_catch3");
		exm_abc(m);
		exm_leaf(m, "ex_note");
		exm_ret(m);
	} else if (!strcmp(name, "rethrow")) {
		exm_call(m, "ex_rethrow_outer");
		exm_call(m, "ex_rethrow_mid");
		exm_call(m, "ex_throw_logic");
		exm_throw(m, EX_T_LOGIC, BFT_THROW_THROW);
		exm_leave(m, 3, BFT_UNWIND_CATCH);
		exm_leaf(m, "ex_note");
		exm_throw(m, NULL, BFT_THROW_RETHROW);
		exm_leave(m, 2, BFT_UNWIND_CATCH);
		exm_leaf(m, "ex_note");
		exm_ret(m);
	} else if (!strcmp(name, "nested")) {
		exm_call(m, "ex_nested");
		exm_call(m, "ex_throw_int");
		exm_throw(m, EX_T_INT, BFT_THROW_THROW);
		exm_leave(m, 2, BFT_UNWIND_CATCH);
		exm_leaf(m, "ex_note");
		exm_call(m, "ex_range_outer");
		exm_call(m, "ex_throw_range");
		exm_throw(m, EX_T_RANGE, BFT_THROW_THROW);
		exm_leave(m, 2, BFT_UNWIND_CATCH);
		exm_leaf(m, "ex_note");
		exm_ret(m);
	} else if (!strcmp(name, "cross")) {
		exm_call(m, "ex_cross");
		for (int i = 0; i <= EX_LIB_DEPTH - 1; i++)
			exm_call(m, "ex_lib_thrower");
		exm_throw(m, EX_T_RUNTIME, BFT_THROW_THROW);
		exm_leave(m, 2, BFT_UNWIND_CATCH);
		exm_leaf(m, "ex_note");
		exm_call(m, "ex_lib_relay");
		exm_call(m, "ex_cb_throw");
		exm_throw(m, EX_T_DOMAIN, BFT_THROW_THROW);
		exm_leave(m, 2, BFT_UNWIND_CATCH);
		exm_leaf(m, "ex_note");
		exm_ret(m);
	} else if (!strcmp(name, "thread")) {
		exm_leaf(m, "ex_spawn");
		t = exm_new_thread(c, limit);
		exm_call(t, "ex_thread_body");
		exm_abc(t);
		exm_leaf(t, "ex_note");
		exm_ret(t);
	} else if (!strcmp(name, "pexit") || !strcmp(name, "cancel")) {
		bool cancel = !strcmp(name, "cancel");

		exm_leaf(m, "ex_spawn");
		t = exm_new_thread(c, limit);
		exm_call(t, cancel ? "ex_cancel_body" : "ex_exit_body");
		exm_call(t, "ex_guarded");
		exm_leaf(t, "ex_guard::ex_guard");
		exm_call(t, cancel ? "ex_cancel_wait" : "ex_exit_now");
		exm_throw(t, NULL, BFT_THROW_FORCED);
		/* the guard's destructor runs in ex_guarded: the frame below
		 * is found gone there */
		exm_leave(t, 2, BFT_UNWIND_FOUND);
		exm_leaf(t, "ex_guard::~ex_guard");
		/* glibc's jump back to the thread's start: closed at its end */
		exm_leave(t, 0, BFT_UNWIND_EXIT);
	} else if (!strcmp(name, "uncaught")) {
		exm_call(m, "ex_uncaught");
		exm_call(m, "ex_a_uncaught");
		exm_throw(m, EX_T_RUNTIME, BFT_THROW_THROW);
		/* libstdc++'s terminate handler rethrows it to print what() */
		exm_throw(m, NULL, BFT_THROW_RETHROW);
		return 0;	/* terminate: the frames stay open */
	} else if (!strcmp(name, "ljmp")) {
		exm_call(m, "ex_ljmp");
		exm_call(m, "ex_lj_a");
		exm_call(m, "ex_lj_b");
		exm_leave(m, 2, BFT_UNWIND_LONGJMP);
		exm_leaf(m, "ex_note");
		exm_ret(m);
	} else if (!strcmp(name, "deep")) {
		exm_call(m, "ex_deep_case");
		for (int i = EX_DEEP_DEPTH; i >= 0; i--)
			exm_call(m, "ex_deep");
		exm_throw(m, EX_T_RUNTIME, BFT_THROW_THROW);
		exm_leave(m, 2, BFT_UNWIND_CATCH);
		exm_leaf(m, "ex_note");
		exm_ret(m);
	} else if (!strcmp(name, "dtor")) {
		exm_call(m, "ex_dtor_case");
		exm_call(m, "ex_guarded_throw");
		exm_leaf(m, "ex_guard::ex_guard");
		exm_call(m, "ex_dtor_b");
		exm_call(m, "ex_c");
		exm_throw(m, EX_T_RUNTIME, BFT_THROW_THROW);
		exm_leave(m, 3, BFT_UNWIND_FOUND);
		exm_leaf(m, "ex_guard::~ex_guard");
		exm_leave(m, 2, BFT_UNWIND_CATCH);
		exm_leaf(m, "ex_note");
		exm_ret(m);
	} else if (!strcmp(name, "cold")) {
		exm_call(m, "ex_cold_work");
		exm_leaf(m, "ex_cold_report");
		exm_ret(m);
	} else if (!strcmp(name, "loop")) {
		for (unsigned int r = 0; r < rounds; r++) {
			exm_call(m, "ex_loop_round");
			for (int i = 0; i < EX_LOOP_THROWS; i++) {
				keep = m->depth;
				for (int k = EX_LOOP_FRAMES; k >= 1; k--)
					exm_call(m, "ex_chain");
				exm_throw(m, EX_T_RUNTIME, BFT_THROW_THROW);
				exm_leave(m, keep, BFT_UNWIND_CATCH);
			}
			exm_ret(m);
		}
	} else {
		return -1;
	}
	exm_ret(m);	/* ex_main */
	return 0;
}

#endif /* !__cplusplus */

#endif /* BFT_EXC_SHAPE_H */
