/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_ptrace: every thread of one target stopped under PTRACE_SEIZE (a
 * "world"), its memory through /proc/PID/mem, and one system call run
 * inside it.  docs/inline-probes.md, "Patching a live process", says why
 * each step is done the way it is.
 *
 * A world belongs to the thread that stopped it: ptrace answers only the
 * tracer thread, so every call on a world comes from that thread.
 */
#ifndef BFI_PTRACE_H
#define BFI_PTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bfi_world;

/* The whole stop gives up after this long (a thread in D state). */
#define BFI_STOP_DEADLINE_MS	500
/* bfi_world_stop_clear: stops tried before -EBUSY. */
#define BFI_STOP_TRIES		20
/* bfi_world_stop_clear: steps, and ms, to take a thread out of the ranges. */
#define BFI_STEP_OUT_MAX	20000
#define BFI_STEP_OUT_MS		100

/*
 * Seize (PTRACE_O_TRACECLONE) and interrupt every thread of tgid but
 * zombies, reading /proc/PID/task again until a pass after every thread
 * stopped finds none new, and open /proc/PID/mem.  A signal that arrives
 * meanwhile is kept and sent back at release.  A fork or vfork child is
 * not followed: it is another process, with the memory it had before the
 * stop (or, after release, the patched memory: the design's fork rules).
 * A target in a group stop (SIGSTOP) is stopped as it is and stays so;
 * bfi_world_syscall refuses to run anything in it.
 *
 * 0, or -ESRCH no such process (or it died meanwhile), -EBUSY another
 * tracer has it or a thread did not stop within BFI_STOP_DEADLINE_MS (a
 * vfork parent, uninterruptible sleep), -EPERM no ptrace access (Yama,
 * credentials); err says which.  On failure every thread is let go.
 */
int bfi_world_stop(pid_t tgid, struct bfi_world **wp, char *err,
		   size_t errlen);

/*
 * Stop, and while a thread's rip lies in one of the n [lo, hi) ranges,
 * single-step it alone out of them (BFI_STEP_OUT_MAX steps within
 * BFI_STEP_OUT_MS); failing that, release and stop again (BFI_STOP_TRIES,
 * 1 ms apart); -EBUSY if a thread never leaves them, else as
 * bfi_world_stop.
 */
int bfi_world_stop_clear(pid_t tgid, const uint64_t (*ranges)[2], size_t n,
			 struct bfi_world **wp, char *err, size_t errlen);

/* Let go of every thread, sending back the signals kept; frees w. */
void bfi_world_release(struct bfi_world *w);

pid_t bfi_world_tgid(const struct bfi_world *w);
/* Threads stopped, numbered 0 .. n-1 (the order they were seized in). */
size_t bfi_world_nthreads(const struct bfi_world *w);
pid_t bfi_world_tid(const struct bfi_world *w, size_t i);
uint64_t bfi_world_rip(const struct bfi_world *w, size_t i);
/* Whether the target was in a group stop (SIGSTOP) when stopped. */
bool bfi_world_group_stopped(const struct bfi_world *w);
/* Whether any thread's rip lies in one of the n [lo, hi) ranges. */
bool bfi_world_inside(const struct bfi_world *w, const uint64_t (*ranges)[2],
		      size_t n);

/*
 * The target's memory, through /proc/PID/mem: a write goes through
 * read-only text (copy-on-write of a private file page).  0, or -errno
 * (-EIO: part of the range is not mapped; -EPERM: the kernel refuses
 * writes through read-only mappings, proc_mem.force_override=never).
 */
int bfi_mem_read(struct bfi_world *w, uint64_t addr, void *buf, size_t len);
int bfi_mem_write(struct bfi_world *w, uint64_t addr, const void *buf,
		  size_t len);

/*
 * Run system call nr with args inside the target, on its first thread in
 * an interrupt stop, through a `syscall` instruction already in the
 * target (its vDSO's, else one in its executable mappings): no code byte
 * is written.  The thread's registers are saved, orig_rax set to -1 so an
 * interrupted system call of the thread is not restarted by ours, the
 * thread single-steps, and every register is put back exactly, so the
 * interrupted call restarts as it would have.  *ret is the kernel's raw
 * answer (-4095..-1: -errno).
 *
 * 0, or -EAGAIN the target is in a group stop, -ENOENT no syscall
 * instruction found, -ESRCH the thread died, -ETIMEDOUT the call did not
 * return within a second (the thread is put back and the world stays
 * stopped); err, when not NULL, says which.
 */
int bfi_world_syscall(struct bfi_world *w, long nr, const long args[6],
		      long *ret, char *err, size_t errlen);

#endif /* BFI_PTRACE_H */
