/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_bpf: the BPF capture backend (docs/bpf-backend.md).  The programs
 * of user/bpf/bft.bpf.c write the same record streams as bftrace.ko; this
 * is their control side, with the calls and the errno values of the
 * module's netlink commands (bft_nl.h), so a tool drives either backend
 * the same way.
 *
 * A session is a set of objects pinned under the pin directory
 * (BFT_BPF_PIN_DIR, or $BFT_BPF_PIN_DIR): the maps, the programs and one
 * link per attached probe group.  They outlive the process that made
 * them, as the module's state outlives a bfctl invocation; removing the
 * directory (bft_bpf_unload) ends the session and frees everything.
 * Tracing started without persist belongs to its starter, as a module
 * session belongs to its socket: when the starter exits or closes its
 * handle, the session stops (bft_bpf_start).
 * What the module does from its own timers (seal exit runs, SYNC
 * heartbeats, reap exited targets) is bft_bpf_flush(), which the reader
 * (bfcollector) calls every BFT_OPT_FLUSH_MS.
 *
 * Conventions: 0 or -errno; bft_bpf_errmsg() says why.
 */
#ifndef BFT_BPF_H
#define BFT_BPF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/bft_nl.h"
#include "capture/bft_rings.h"

#define BFT_BPF_PIN_DIR	"/sys/fs/bpf/bftrace"

/* BFT_A_FEATURES of the BPF backend: no events, no exception hooks. */
#define BFT_BPF_FEATURES (BFT_FEAT_ENTRY | BFT_FEAT_RETURN | BFT_FEAT_NORET | \
			  BFT_FEAT_PAUSE | BFT_FEAT_SUSPEND | BFT_FEAT_READ | \
			  BFT_FEAT_USDT | BFT_FEAT_DETACH_SOME)

struct bft_bpf;

/*
 * What the handle did that the user should be told ("" if nothing): the
 * session that mounts bpffs where none was says so here.
 */
const char *bft_bpf_notice(const struct bft_bpf *b);

/* The pin directory in use: $BFT_BPF_PIN_DIR or BFT_BPF_PIN_DIR. */
const char *bft_bpf_pin_dir(void);

/*
 * Whether this machine can run the backend, without changing anything:
 *   -ENOSYS      the kernel has no bpf() (CONFIG_BPF_SYSCALL off)
 *   -EPERM       neither CAP_BPF+CAP_PERFMON nor CAP_SYS_ADMIN
 *   -ENOTSUP     no kernel BTF (/sys/kernel/btf/vmlinux)
 *   -EOPNOTSUPP  kernel older than 5.15 (no attach cookies for uprobes)
 *   -ENODEV      no bpffs where the pins go, and it is not the usual
 *                place (/sys/fs/bpf), which the first session mounts
 * The text in err says which and what to do.
 */
int bft_bpf_probe(char *err, size_t errlen);

/* Whether a session's pins exist. */
bool bft_bpf_loaded(void);

/*
 * Open the session; with create, make one (load and pin) if there is
 * none.  Without create and no session: -ENOENT.  A session another
 * version of bftrace made (a pin of this version's missing): -ESTALE.
 * Opening a session whose owner died ends it first.
 */
int bft_bpf_open(struct bft_bpf **bp, bool create, char *err, size_t errlen);
/*
 * Open the session if there is one (-ESTALE as above); if not, a handle
 * that reads as an idle session with the default options (status, caps, options, methods
 * change nothing) and makes the session at the first call that changes
 * something (attach, a mode command, set, a ring reader).
 */
int bft_bpf_open_lazy(struct bft_bpf **bp, char *err, size_t errlen);
void bft_bpf_close(struct bft_bpf *b);
const char *bft_bpf_errmsg(const struct bft_bpf *b);

/* Remove the session: stop, detach, unpin.  0 or -errno. */
int bft_bpf_unload(char *err, size_t errlen);

/* Whether the programs attach with uprobe_multi links (else per function). */
bool bft_bpf_multi(const struct bft_bpf *b);

/* Debian 12's UAPI headers predate uprobe_multi (Linux 6.6). */
#define BFT_TRACE_UPROBE_MULTI		48

/*
 * One uprobe_multi link of prog_fd (loaded for BFT_TRACE_UPROBE_MULTI) on
 * cnt offsets of path: return probes if ret; only in process tgid unless
 * 0; cookies may be NULL.  The link's fd, or -errno.
 */
int bft_bpf_link_multi(int prog_fd, uint32_t tgid, const char *path,
		       const uint64_t *offsets, const uint64_t *cookies,
		       uint32_t cnt, bool ret);

int bft_bpf_get_caps(struct bft_bpf *b, struct bft_nl_caps *caps);
int bft_bpf_attach(struct bft_bpf *b, uint32_t tgid,
		   const struct bft_nl_probe *probes, size_t n, int *results);
int bft_bpf_detach(struct bft_bpf *b, uint32_t tgid);
/*
 * BFT_CMD_DETACH of the n probes of tgid with these method ids
 * (BFT_FEAT_DETACH_SOME), all checked before any goes: -ENOENT for an id
 * that names no attached probe of tgid (or no target tgid), -EINVAL for
 * an id given twice or none at all.  The probes' uprobe_multi links
 * held others too: those are attached again, by links of their own.
 * The target stays, even with no probe left.
 */
int bft_bpf_detach_some(struct bft_bpf *b, uint32_t tgid, const uint32_t *ids,
			size_t n);
/*
 * BFT_CMD_START.  Without persist the session belongs to this process:
 * a guard process (bft_owner.h) stops it as BFT_CMD_STOP would (probes
 * detached, paused targets continued) once this process exits, and so
 * does bft_bpf_close() of this handle, and any tool that opens the
 * session after the owner died.  With persist, only a stop ends it.
 */
int bft_bpf_start(struct bft_bpf *b, bool persist, uint8_t *mode);
/* A mode command; BFT_CMD_START is bft_bpf_start() without persist. */
int bft_bpf_mode_cmd(struct bft_bpf *b, int cmd, uint8_t *mode);
/* The owner's tgid (0: none) and its guard's (0: none running). */
int bft_bpf_get_owner(struct bft_bpf *b, pid_t *owner, pid_t *guard);
int bft_bpf_get_status(struct bft_bpf *b, struct bft_nl_status *st);
int bft_bpf_get_opt(struct bft_bpf *b, uint32_t id, struct bft_nl_opt *out);
int bft_bpf_get_opts(struct bft_bpf *b, struct bft_nl_opt *out, size_t cap,
		     size_t *n);
int bft_bpf_set_opt(struct bft_bpf *b, uint32_t id, uint64_t value,
		    struct bft_nl_opt *out);
int bft_bpf_get_methods(struct bft_bpf *b, bft_nl_method_cb cb, void *arg);

/*
 * One round of the module's flush work: seal open exit runs, write a SYNC
 * into every CPU's ring when any CPU recorded since the last round (and
 * heartbeat is set), write owed LOST/BREAK records, detach targets that
 * exited.  0 or -errno.
 */
int bft_bpf_flush(struct bft_bpf *b, bool heartbeat);

/* ---- reading the rings ---- */

struct bft_bpf_rings;

/* One reader of every CPU's ring; cb gets each CPU's bytes in order. */
int bft_bpf_rings_open(struct bft_bpf *b, struct bft_bpf_rings **rp,
		       bft_rings_cb cb, void *arg);
void bft_bpf_rings_close(struct bft_bpf_rings *r);
/*
 * Wait up to timeout_ms for a wakeup (not at all when a ring is half
 * full), then read every ring, woken or not, and deliver what it holds.
 * The programs wake a reader only when a ring crosses its watermark and
 * when a flush seals, so a reader must also come by on a timer: at least
 * every flush interval.  Bytes delivered or -errno.
 */
ssize_t bft_bpf_rings_poll(struct bft_bpf_rings *r, int timeout_ms);
/*
 * For a caller's own poll(): readable once a ring was woken since the
 * last bft_bpf_rings_poll() or bft_bpf_rings_woken(); a ring that holds
 * data but was not woken does not make it readable.
 */
int bft_bpf_rings_fd(const struct bft_bpf_rings *r);
/* How many rings were woken since the last look (and re-arm the fd). */
int bft_bpf_rings_woken(struct bft_bpf_rings *r);
/*
 * Whether a ring holds its watermark's worth (or half its size) unread:
 * no wakeup will come for it, read it now.
 */
bool bft_bpf_rings_behind(const struct bft_bpf_rings *r);
/*
 * Flush (seal runs) and read until no byte came for quiet_ms; max_ms
 * bounds the call (-ETIME).  Bytes delivered or -errno.
 */
ssize_t bft_bpf_rings_drain(struct bft_bpf_rings *r, int quiet_ms, int max_ms);
uint64_t bft_bpf_rings_bytes_read(const struct bft_bpf_rings *r,
				  unsigned int cpu);

#endif /* BFT_BPF_H */
