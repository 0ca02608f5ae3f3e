/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_layout: the memory the inline backend maps into a target, as the
 * recorder inside the target (user/inline/bfi_rec*.c, freestanding) and the
 * tools outside it (user/lib/inline/, bfcollector) both see it.  The design
 * and its reasons are docs/inline-probes.md.
 *
 * Two kinds of mapping, both private and anonymous (so a fork child writes
 * into its own copy, never into its parent's):
 *
 *   the area (read-write, one per target, anywhere): struct bfi_area, the
 *   method table, the thread table, then nslots slots of
 *   BFI_SLOT_SIZE(area): struct bfi_slot, the shadow stack, the ring.
 *
 *   a code area (read-execute, one per loaded object that has patched
 *   functions, within +-2 GiB of it): struct bfi_code (the page the
 *   recorder finds its area through), the recorder's text copied from
 *   build/user/inline/bfi_rec.bin, then the stubs, one per patched function.
 *
 * Everything is little-endian x86-64, naturally aligned, with explicit
 * padding: the layout is the same for the freestanding recorder and for
 * the tools.  Only <stdint.h> types: the recorder has no libc.
 *
 * Who writes what:
 *   the controller (bfctl, the guard, bfcollector's commands) writes the
 *   area's header and method table through /proc/PID/mem;
 *   a thread of the target writes its own slot (claiming it with a locked
 *   cmpxchg on the thread table), except tail;
 *   the reader (bfcollector) writes only each slot's tail.
 * A reader treats everything in the area as hostile input: every index and
 * length is bounded by the geometry it recorded at attach time, never by
 * what the area says later.
 */
#ifndef BFI_LAYOUT_H
#define BFI_LAYOUT_H

#include <stdint.h>

#define BFI_MAGIC		0x656e696c6e496642ULL	/* "BfInline" */
#define BFI_VERSION		1

#define BFI_PAGE		4096u
/* Threads per target with a slot; later ones are counted in no_slot. */
#define BFI_NSLOTS		64u
/* Pending returns per thread; deeper entries are ENTER_NORET. */
#define BFI_SHADOW_DEPTH	1024u
/* Methods per target (patched functions, hooks included). */
#define BFI_MAX_METHODS		65536u
/* Bytes of one stub at most (the relocated prologue included). */
#define BFI_STUB_MAX		96u
/* A code area: struct bfi_code + recorder text + stubs. */
#define BFI_CODE_SIZE		(2u << 20)

/* struct bfi_area.mode: enum bft_mode (bftrace.h). */

/* struct bfi_method.flags: BFT_PF_* (bftrace.h) as attached, and: */
/*
 * The process is about to exit (the C library's exit()): its memory, the
 * rings with it, is gone once it has.  The recorder waits there until a
 * reader has taken every ring's bytes, at most BFI_DRAIN_MS; with no
 * reader yet, at most BFI_DRAIN_NONE_MS (a reader looks for new targets
 * every 100 ms).  Nothing is recorded for it.
 */
#define BFI_MF_DRAIN		(1u << 29)
#define BFI_DRAIN_MS		1500u
#define BFI_DRAIN_NONE_MS	300u

struct bfi_method {
	uint32_t id;		/* the id ENTER records carry */
	uint32_t flags;		/* BFT_PF_* */
	uint64_t hits;		/* plain increments: exact per thread, may
				 * miss a few under contention (status only) */
};

/* Evicted entries a slot remembers (struct bfi_slot.evicted). */
#define BFI_EVICTED		128u

/* A pending return: what the exit path needs to go back. */
struct bfi_frame {
	uint64_t slot;		/* address of the return-address slot */
	uint64_t ret;		/* the real return address */
};

/* One thread's state, written only by that thread (tail: the reader). */
struct bfi_slot {
	/* -- identity (written once, at claim) -- */
	uint64_t tp;		/* %fs:0 of the thread; 0: free */
	uint32_t tid;
	uint32_t pad0;
	/* -- the recording protocol -- */
	uint32_t busy;		/* odd while the thread is in the recorder */
	uint32_t gen;		/* the area's gen this ring last wrote in */
	uint64_t head;		/* bytes published (store after the bytes) */
	uint64_t tail;		/* bytes consumed: written by the reader */
	/* -- counters (BFT_S_* of this ring) -- */
	uint64_t produced;	/* events made, lost ones included */
	uint64_t written;	/* events in the ring */
	uint64_t lost;		/* events dropped: the ring was full */
	uint64_t suspended;	/* events dropped on purpose: suspended */
	uint64_t nested;	/* hits inside the recorder (signals): lost */
	/* -- the writer's encoder state -- */
	uint64_t time_ns;	/* stream time of the last record */
	uint64_t sync_ns;	/* time of the last SYNC */
	uint64_t lost_owed;	/* LOST not yet written */
	uint32_t tbits;
	uint32_t depth;		/* entries in the shadow stack */
	uint32_t owed;		/* BFI_OWE_*: records due before the next
				 * event, and BFI_OWE_BREAK(reason) */
	uint32_t pad1;
	/* the tbits rule's tallies since the last SYNC: struct bft_tb_hist
	 * of kmod/bft_tbits.h (keys, then gaps), checked by the recorder */
	uint32_t tb_keys[16];
	uint32_t tb_gaps[8];
	uint32_t nevicted;	/* evictions so far: the next one goes to
				 * evicted[nevicted % BFI_EVICTED] */
	uint32_t pad2;
	/* the thread's name for the next NAME record (bfi_rec_ring.c) */
	char name[16];
	uint64_t reserved[6];
	/*
	 * Entries taken off the shadow stack other than by their own return
	 * (their frames looked gone); bfi_exit looks here when the shadow
	 * stack has no entry for a return, so a frame wrongly taken for gone
	 * (another stack) still returns to its real address.  The oldest is
	 * overwritten first.
	 */
	struct bfi_frame evicted[BFI_EVICTED];
};

/* struct bfi_slot.owed */
#define BFI_OWE_SYNC		1u	/* a SYNC (and so a THREAD) */
#define BFI_OWE_THREAD		2u	/* a THREAD: the slot changed hands */
#define BFI_OWE_BREAK(r)	((uint32_t)(r) << 8)	/* a BREAK of reason r */
#define BFI_OWED_BREAK(o)	(((o) >> 8) & 0xffu)

/* The header of the area: page 0. */
struct bfi_area {
	uint64_t magic;		/* BFI_MAGIC */
	uint32_t version;	/* BFI_VERSION */
	uint32_t nslots;	/* BFI_NSLOTS */
	uint64_t size;		/* bytes of the whole area */
	uint32_t ring_size;	/* bytes of each slot's ring, a power of 2 */
	uint32_t shadow_depth;	/* BFI_SHADOW_DEPTH */
	uint32_t nmethods;	/* entries of methods[] in use */
	uint32_t max_depth;	/* BFT_OPT_MAX_DEPTH */
	uint64_t res_ns;	/* BFT_OPT_TIME_RES_NS */
	uint64_t flush_ns;	/* a SYNC at least this often while busy */
	uint32_t tgid;		/* the target, as the controller sees it */
	uint32_t no_ret;	/* 1: every entry is ENTER_NORET (a CET
				 * shadow stack, or unwinder hooks that could
				 * not be patched): no return address is
				 * ever swapped */
	/* -- how the recorder reads the clock and knows its threads -- */
	uint64_t vdso_clock;	/* __vdso_clock_gettime in the target; 0:
				 * the clock_gettime system call */
	int64_t tid_off;	/* the C library's thread id at %fs:tid_off
				 * (glibc's _thread_db_pthread_tid); 0:
				 * unknown, threads are told apart by %fs:0
				 * alone */
	uint64_t no_slot;	/* events of threads that found no slot
				 * (locked add): lost, counted in status */
	uint32_t reader;	/* the reader's pid while one reads this
				 * area (bfi_rings.c); 0: none */
	uint32_t pad;
	uint64_t exit_addr;	/* the exit_common every swapped return slot
				 * holds: the first recorder copy to swap one
				 * sets it (cmpxchg), so a hook running in
				 * another object's copy knows the slots */
	uint64_t reserved[30];
	/* then: struct bfi_live at BFI_LIVE_OFF,
	 * struct bfi_method methods[BFI_MAX_METHODS] at BFI_METHODS_OFF,
	 * struct bfi_thread threads[2 * nslots] at BFI_THREADS_OFF,
	 * uint64_t exc[BFT_MAX_EXC_TYPES] at BFI_EXC_OFF, the slots at
	 * BFI_SLOTS_OFF. */
};

/*
 * The control word, alone on a page that is MADV_WIPEONFORK: a fork child
 * reads 0 (INITIALIZING) and records nothing, while its copies of the slots
 * still give its pending returns their real addresses.  One aligned u64,
 * written by the controller with one 8-byte pwrite, so a thread never reads
 * a mode of one change with the generation of another.
 */
struct bfi_live {
	uint64_t ctl;		/* BFI_CTL(mode, break_reason, gen) */
};

/*
 * A thread that records (TRACING) and finds gen changed since its last
 * record writes a SYNC, then a BREAK of reason brk when brk is not 0: so
 * the controller puts BFT_BREAK_SUSPEND in the word that resumes tracing
 * after a suspend, BFT_BREAK_STOP in the one that starts after a stop,
 * and 0 in any other.  A thread never writes while suspended: it counts.
 */
#define BFI_CTL(mode, brk, gen) \
	((uint64_t)(mode) | ((uint64_t)(brk) << 8) | ((uint64_t)(gen) << 32))
#define BFI_CTL_MODE(c)		((uint32_t)((c) & 0xff))	/* enum bft_mode */
#define BFI_CTL_BREAK(c)	((uint32_t)(((c) >> 8) & 0xff))	/* BFT_BREAK_* */
#define BFI_CTL_GEN(c)		((uint32_t)((c) >> 32))	/* +1 per change */

/* The thread table: open addressing on tp; claimed with lock cmpxchg. */
struct bfi_thread {
	uint64_t tp;		/* %fs:0; 0: empty */
	uint64_t slot;		/* slot index + 1; 0: being claimed */
};

#define BFI_LIVE_OFF		BFI_PAGE
#define BFI_METHODS_OFF		(2 * BFI_PAGE)
#define BFI_THREADS_OFF \
	(BFI_METHODS_OFF + BFI_MAX_METHODS * (uint64_t)sizeof(struct bfi_method))
#define BFI_PAGE_UP(x)		(((x) + BFI_PAGE - 1) & ~(uint64_t)(BFI_PAGE - 1))
#define BFI_SLOTS_OFF \
	BFI_PAGE_UP(BFI_EXC_OFF + BFI_MAX_EXC * (uint64_t)sizeof(struct bfi_exc))
/*
 * Exception types (BFT_PF_HOOK_THROW): each std::type_info thrown, in the
 * order first thrown, claimed with lock cmpxchg on tinfo; a THROW record's
 * type is the index + 1.  The recorder copies the mangled name in (it reads
 * its own process) before it sets ready, so a reader never follows a
 * pointer of the target's: it reads only the area.
 */
#define BFI_MAX_EXC		1024u	/* BFT_MAX_EXC_TYPES */
#define BFI_EXC_NAME		240u
struct bfi_exc {
	uint64_t tinfo;		/* 0: free */
	uint64_t ready;		/* 1: name complete */
	char name[BFI_EXC_NAME];	/* NUL-terminated, cut if longer */
};
#define BFI_EXC_OFF \
	(BFI_THREADS_OFF + 2 * BFI_NSLOTS * (uint64_t)sizeof(struct bfi_thread))
/* A slot: its header page, the shadow stack, then the ring (page-aligned). */
#define BFI_SHADOW_OFF		BFI_PAGE
#define BFI_RING_OFF \
	(BFI_SHADOW_OFF + BFI_SHADOW_DEPTH * (uint64_t)sizeof(struct bfi_frame))
#define BFI_SLOT_SIZE(ring_size)	(BFI_RING_OFF + (uint64_t)(ring_size))
#define BFI_AREA_SIZE(ring_size) \
	(BFI_SLOTS_OFF + BFI_NSLOTS * BFI_SLOT_SIZE(ring_size))

/*
 * The first page of a code area.  The recorder's entry points are at fixed
 * offsets of its text (bfi_rec.bin's header, struct bfi_rec_hdr), so a stub
 * calls code_base + BFI_TEXT_OFF + enter_off.
 */
struct bfi_code {
	uint64_t magic;		/* BFI_MAGIC */
	uint64_t area;		/* address of the target's struct bfi_area */
	uint64_t text;		/* address of the recorder text here */
	uint64_t exit;		/* address of the exit stub here */
	uint64_t stubs_used;	/* bytes of stubs written after the text */
	uint64_t reserved[11];
};

#define BFI_TEXT_OFF		BFI_PAGE

/*
 * The head of bfi_rec.bin: offsets from the start of the text of the
 * recorder's entry points.  The text is position-independent and finds
 * its struct bfi_code at text - BFI_TEXT_OFF.
 */
struct bfi_rec_hdr {
	uint64_t magic;		/* BFI_MAGIC */
	uint32_t version;	/* BFI_VERSION */
	uint32_t size;		/* bytes of the text, this header included */
	uint32_t enter_off;	/* bfi_enter_common: the stubs call it */
	uint32_t exit_off;	/* bfi_exit_common: return addresses go here */
	uint32_t pad[2];
};

_Static_assert(sizeof(struct bfi_area) <= BFI_PAGE, "the area header is a page");
_Static_assert(sizeof(struct bfi_slot) <= BFI_SHADOW_OFF, "a slot header is a page");
_Static_assert(sizeof(struct bfi_code) <= BFI_TEXT_OFF, "bfi_code is a page");

#endif /* BFI_LAYOUT_H */
