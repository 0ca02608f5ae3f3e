/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The call structure of the calltree target, shared with the tests so the
 * expected trace is computed from the same numbers the target runs with.
 *
 * One run (triggered by one byte on the target's stdin) does, on the main
 * thread:
 *
 *   CT_NEST_REPS times:  ct_a -> { ct_b -> ct_c ; ct_c ; bftgt_scale }
 *   once:                ct_even(CT_RECUR_DEPTH), which alternates with
 *                        ct_odd down to 0: CT_RECUR_DEPTH + 1 frames
 *
 * then starts CT_NR_THREADS threads; thread k (0-based) runs
 *
 *   ct_thread_body -> { ct_t_leaf x (k + 1) ; ct_b -> ct_c }
 *
 * and the main thread joins them.  The thread part differs per thread only
 * in the ct_t_leaf count, so a test tells the threads apart by it.  Thread
 * k names itself CT_WORKER_NAME first, and exits right after its calls.
 */
#ifndef BFT_CALLTREE_SHAPE_H
#define BFT_CALLTREE_SHAPE_H

#define CT_NEST_REPS	3
#define CT_RECUR_DEPTH	100
#define CT_NR_THREADS	4
#define CT_WORKER_NAME	"ct-worker-%d"	/* of k */

/* Function names, as the tests resolve them in the ELF files. */
#define CT_FN_A			"ct_a"
#define CT_FN_B			"ct_b"
#define CT_FN_C			"ct_c"
#define CT_FN_EVEN		"ct_even"
#define CT_FN_ODD		"ct_odd"
#define CT_FN_THREAD_BODY	"ct_thread_body"
#define CT_FN_T_LEAF		"ct_t_leaf"
#define CT_FN_LIB		"bftgt_scale"	/* in libbftgt.so */

/*
 * Line protocol on the target's stdout: "ready\n" once main() has started
 * (every library mapped), "done\n" after each run.  Input: any byte but 'q'
 * starts a run; 'q' or EOF makes the target exit with status 0.
 */
#define CT_LINE_READY	"ready"
#define CT_LINE_DONE	"done"

#endif /* BFT_CALLTREE_SHAPE_H */
