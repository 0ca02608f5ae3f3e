/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The call structure of the naptree target, whose calls are of two known
 * kinds of length: nt_nap sleeps NT_NAP_MS, every other call returns at
 * once.  A filter on call length set between the two (NT_MIN_TIME) must
 * keep exactly the sleeping calls and their callers, whatever the machine.
 *
 * One run (one byte on the target's stdin), on the main thread:
 *
 *   NT_REPS times:  nt_outer -> { nt_quick ; nt_nap -> { nt_quick } ;
 *                                 nt_quick }
 *   NT_LONE times:  nt_quick
 *
 * The line protocol is calltree's (calltree_shape.h): "ready", then
 * "done" after each run; 'q' or EOF ends it.
 */
#ifndef BFT_NAPTREE_SHAPE_H
#define BFT_NAPTREE_SHAPE_H

#define NT_REPS		2
#define NT_LONE		3
/*
 * The margin is wide on both sides: a sleep is never shorter than asked,
 * and a call that returns at once would need to be held off a CPU for a
 * whole NT_MIN_TIME to look long, which not even a loaded guest does.
 */
#define NT_NAP_MS	400
#define NT_MIN_TIME	"100ms"

#define NT_FN_OUTER	"nt_outer"
#define NT_FN_NAP	"nt_nap"
#define NT_FN_QUICK	"nt_quick"

#endif /* BFT_NAPTREE_SHAPE_H */
