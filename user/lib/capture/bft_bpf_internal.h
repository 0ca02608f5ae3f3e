/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of the BPF backend (user/lib/capture/bft_bpf_*.c) share: the
 * handle, and the steps one of them takes for another.  Tools use
 * bft_bpf.h; the rules the backend shares with the module are
 * kmod/bft_rules.h.
 */
#ifndef BFT_BPF_INTERNAL_H
#define BFT_BPF_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/bft_bpf.h"
#include "bft_bpf_shared.h"
#include "capture/bft_owner.h"
#include "../../../kmod/bft_rules.h"

struct bft_bpf {
	int ctl_fd;		/* bft_ctl_map */
	int cpus_fd;		/* bft_cpus */
	int rings_fd;		/* bft_rings */
	int hits_fd;		/* bft_hits: ids below BFT_BPF_NEAR_IDS */
	int hits_far_fd;	/* bft_hits_far: the others */
	int methods_fd;
	int read_fd;
	int enter_fd, exit_fd, prog_ctl_fd;
	int usdt_fd;		/* bft_usdt: the USDT probes' specs */
	int usdt_prog_fd;	/* bft_usdt_hit */
	unsigned int nr_cpus;
	bool own;		/* this handle started the session, not persist */
	bool count_owed;	/* reaped while the lock was taken: recount */
	char err[512];
	char notice[PATH_MAX + 96];	/* what a call did, for the user */
};

/* The per-CPU array's values as one lookup returns them, 8-byte aligned. */
#define BFT_BPF_CPU_STRIDE ((sizeof(struct bft_bpf_cpu) + 7) & ~(size_t)7)

/*
 * The options this backend implements (bft_opt_rule() has them all): no
 * overwrite, and no max_ring_mem, which caps the module's own rings.
 */
#define BFT_BPF_OPTS ((1U << BFT_OPT_BUF_SIZE) | (1U << BFT_OPT_FLUSH_MS) | \
		      (1U << BFT_OPT_HEARTBEAT_MS) |			\
		      (1U << BFT_OPT_MAX_DEPTH) |			\
		      (1U << BFT_OPT_TIME_RES_NS) |			\
		      (1U << BFT_OPT_WATERMARK) | (1U << BFT_OPT_MAX_PROBES))

static inline bool bft_bpf_opt_supported(uint32_t id)
{
	return id >= 1 && id <= BFT_OPT_MAX && ((BFT_BPF_OPTS >> id) & 1);
}

/* ---- the session (bft_bpf_session.c) ---- */

/* Say why in b->err; returns err. */
int bft_bpf_err_set(struct bft_bpf *b, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void bft_bpf_pin_path(char *buf, size_t len, const char *name);
/*
 * The pins, opened by the first call that needs them; with create, the
 * session is made if there is none (else -ENOENT).
 */
int bft_bpf_session_open(struct bft_bpf *b, bool create);
/* The session lock's descriptor, or -errno. */
int bft_bpf_session_lock(struct bft_bpf *b);
void bft_bpf_session_unlock(int fd);
int bft_bpf_session_open_locked(struct bft_bpf *b, bool create);
int bft_bpf_ctl_read(struct bft_bpf *b, struct bft_bpf_ctl *ctl);
int bft_bpf_ctl_write(struct bft_bpf *b, const struct bft_bpf_ctl *ctl);
/* A new session's control map: what status and options show before one. */
void bft_bpf_ctl_default(struct bft_bpf_ctl *ctl);
int bft_bpf_ctl_read_or_default(struct bft_bpf *b, struct bft_bpf_ctl *ctl);
/* New empty rings of size bytes; every CPU's writer state reset. */
int bft_bpf_ringbufs_make(struct bft_bpf *b, uint32_t size);
int bft_bpf_cpus_reset(struct bft_bpf *b, uint32_t res);

/* ---- links (bft_bpf_links.c) ---- */

/*
 * One perf-event uprobe with the program on it, raising the 2-byte
 * semaphore at file offset ref_ctr (0: none; below 2^32) while it lives:
 * a link fd or -errno.
 */
int bft_bpf_link_uprobe(int prog_fd, uint32_t tgid, const char *path,
			uint64_t offset, uint64_t ref_ctr, bool ret,
			uint64_t cookie);
/* bft_bpf_link_multi() with a semaphore per offset (ref_ctrs may be NULL). */
int bft_bpf_link_multi_ref(int prog_fd, uint32_t tgid, const char *path,
			   const uint64_t *offsets, const uint64_t *ref_ctrs,
			   const uint64_t *cookies, uint32_t cnt, bool ret);
/* Pin (and close) link fd as the target's next free seq. */
int bft_bpf_link_pin(struct bft_bpf *b, int fd, uint32_t tgid,
		     unsigned int *seq);
/* Pin (and close) the return link of the probes of entry link seq. */
int bft_bpf_link_pin_ret(struct bft_bpf *b, int fd, uint32_t tgid,
			 unsigned int seq);
/*
 * Unpin entry link seq and its return link (if any), and free them now,
 * not when the kernel gets to an unpinned link: when it returns, they
 * fire no more.  Also what undoes a probe group that half failed.
 */
void bft_bpf_link_release(uint32_t tgid, unsigned int seq);

/* ---- targets (bft_bpf_attach.c) ---- */

size_t bft_bpf_targets_list(uint32_t *out, size_t cap);
/* Detach tgid, or every target (0); under the session lock. */
int bft_bpf_targets_detach(struct bft_bpf *b, uint32_t tgid);
int bft_bpf_targets_signal(int sig);
void bft_bpf_targets_reap(struct bft_bpf *b);

/* ---- USDT probes (bft_bpf_usdt.c) ---- */

/*
 * The module's checks of probe i's BFT_PF_USDT, arguments and semaphore
 * (file_size: its file's); a probe without BFT_PF_USDT passes if it has
 * neither arguments nor a semaphore.  0, -EINVAL or -ERANGE.
 */
int bft_bpf_usdt_check(struct bft_bpf *b, size_t i,
		       const struct bft_nl_probe *p, uint64_t file_size);
/*
 * The specs of the batch's USDT probes of tgid, each in a slot of its
 * own (slots[i], 0 for other probes), for their cookies.  All or none.
 */
int bft_bpf_usdt_store(struct bft_bpf *b, uint32_t tgid,
		       const struct bft_nl_probe *probes, size_t n,
		       uint32_t *slots);
/* Free the slots (those not 0) of the first n, and zero them. */
void bft_bpf_usdt_drop(struct bft_bpf *b, uint32_t *slots, size_t n);
/* Free every spec of tgid (0: all), once its links are gone. */
void bft_bpf_usdt_release(struct bft_bpf *b, uint32_t tgid);

/* ---- methods (bft_bpf_methods.c) ---- */

size_t bft_bpf_probes_count(struct bft_bpf *b);
void bft_bpf_probes_recount(struct bft_bpf *b);
/* link: its entry link's pin + 1; slot: its USDT spec's, 0 if none. */
int bft_bpf_method_record(struct bft_bpf *b, uint32_t tgid,
			  const struct bft_nl_probe *p, uint32_t link,
			  uint32_t slot);
int bft_bpf_method_get(struct bft_bpf *b, uint32_t tgid, uint32_t id,
		       struct bft_bpf_method *m);
int bft_bpf_method_put(struct bft_bpf *b, uint32_t tgid, uint32_t id,
		       const struct bft_bpf_method *m);
void bft_bpf_methods_retire(struct bft_bpf *b, uint32_t tgid);
void bft_bpf_methods_forget(struct bft_bpf *b);

/* ---- modes (bft_bpf_control.c) ---- */

/*
 * A mode command, under the session lock; owner is the starter of a
 * session that ends with it (START without persist), NULL otherwise.
 */
int bft_bpf_mode_change(struct bft_bpf *b, int cmd,
			const struct bft_owner *owner, uint8_t *mode);

/* ---- status (bft_bpf_status.c) ---- */

/* The pid that holds an flock on dir, from /proc/locks; 0 if unknown. */
pid_t bft_bpf_flock_holder(const char *dir);

/* ---- owners (bft_bpf_owner.c) ---- */

/* End the session if its owner died. */
int bft_bpf_owner_reap(struct bft_bpf *b);
/* The owner's handle closes: its session ends. */
void bft_bpf_owner_release(struct bft_bpf *b);
void bft_bpf_guard_start(struct bft_bpf *b, const struct bft_owner *self);

#endif /* BFT_BPF_INTERNAL_H */
