/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_backend: one shape for every capture backend.  A table of
 * operations per backend (bftrace.ko: bft_backend_kmod.c; BPF:
 * bft_backend_bpf.c), each wrapping that backend's own library (bft_nl.h
 * and bft_rings.h; bft_bpf.h) with the values and errnos of bft_nl.h, and
 * the one rule that picks a backend from a name (bft_backend_choose).
 * bfctl and bfcollector call a backend only through its table, so a new
 * backend is a new table in bft_backend_list and nothing else.
 *
 * A session handle (void *) is what the table's open made; only that
 * table's operations take it.  Conventions as bft_nl.h: 0 or -errno, and
 * errmsg() says why.
 */
#ifndef BFT_BACKEND_H
#define BFT_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/bft_nl.h"
#include "capture/bft_rings.h"

/* How open() finds its session. */
enum bft_backend_open {
	BFT_BACKEND_EXISTING,	/* the session there is, else -ENOENT */
	BFT_BACKEND_CREATE,	/* the session there is, else a new one */
	BFT_BACKEND_LAZY,	/* made by the first call that changes it */
};

/* A reader of every CPU's ring of one session (rings_open). */
struct bft_backend_rings;

struct bft_backend_ops {
	const char *name;	/* for --backend: "kmod", "bpf" */
	const char *label;	/* in messages: "module", "BPF backend" */
	const char *what;	/* its subject: "bftrace.ko", "the BPF backend" */
	const char *rings_name;	/* in messages: "rings", "BPF rings" */
	/* Why a process that leaves root cannot keep the session, or NULL. */
	const char *root_only;
	/* For a log line once a session closes: what stays of it. */
	const char *closed;
	/*
	 * BFT_FEAT_* of every session, known without opening one (a dry run
	 * opens nothing that could change it); 0: only get_caps() knows.
	 */
	uint64_t features;
	/*
	 * attach may refuse single functions (their results -EOPNOTSUPP, or
	 * -ENOENT for a library not loaded yet) and keep the rest: the
	 * inline backend cannot rewrite every function.  The kernel backends
	 * take a batch whole or not at all.
	 */
	bool refusals_partial;

	int (*open)(void **h, enum bft_backend_open how, char *err,
		    size_t errlen);
	void (*close)(void *h);
	const char *(*errmsg)(const void *h);
	/* What opening did that the user should be told, or "". */
	const char *(*notice)(const void *h);
	/* Where the session lives, for logs; NULL: nowhere to name. */
	const char *(*where)(void);
	/*
	 * Whether open()'s -errno says the backend cannot run on this
	 * machine at all (bfctl's exit 3), not that this open failed.
	 */
	bool (*absent)(int e);
	/*
	 * What a failed open's err is about, to start a message with, by
	 * open()'s -errno; "": err says it on its own.
	 */
	const char *(*open_subject)(int e);
	/* The open session and how it talks to the kernel, for a log line. */
	void (*describe)(const void *h, char *buf, size_t len);
	/*
	 * Whether errmsg() says why the last request was refused.  A module
	 * older than its capability checks refuses with a bare -EPERM, and a
	 * caller has to say what it needs.  NULL: errmsg() always says.
	 */
	bool (*explains)(const void *h);
	/*
	 * The descriptor a child process must not keep (it would hold what
	 * the backend ties to it past this process, such as probes attached
	 * outside a session).  NULL: nothing of the session's to close.
	 */
	int (*fd)(const void *h);

	int (*get_caps)(void *h, struct bft_nl_caps *caps);
	int (*attach)(void *h, uint32_t tgid, const struct bft_nl_probe *p,
		      size_t n, int *results);
	/*
	 * Let the probes that this handle attaches outside a session outlive
	 * it (only a detach, a stop, or the end of the session that a start
	 * makes of them removes them), where caps says
	 * BFT_FEAT_ATTACH_PERSIST.  NULL: they outlive it anyway.
	 */
	void (*attach_persist)(void *h, bool persist);
	int (*detach)(void *h, uint32_t tgid);
	/*
	 * Detach the n probes of tgid with these method ids, where caps says
	 * BFT_FEAT_DETACH_SOME (BFT_CMD_DETACH with BFT_A_PROBES).  NULL:
	 * the backend cannot.
	 */
	int (*detach_some)(void *h, uint32_t tgid, const uint32_t *ids,
			   size_t n);
	int (*start)(void *h, bool persist, uint8_t *mode);
	int (*mode_cmd)(void *h, int cmd, uint8_t *mode);
	int (*get_status)(void *h, struct bft_nl_status *st);
	int (*get_opt)(void *h, uint32_t id, struct bft_nl_opt *out);
	int (*get_opts)(void *h, struct bft_nl_opt *out, size_t cap,
			size_t *n);
	int (*set_opt)(void *h, uint32_t id, uint64_t value,
		       struct bft_nl_opt *out);
	int (*get_methods)(void *h, bft_nl_method_cb cb, void *arg);
	/* A backend without exception hooks has no types: 0, no callback. */
	int (*get_exceptions)(void *h, bft_nl_exception_cb cb, void *arg);
	/*
	 * The work a backend without timers of its own leaves to its reader
	 * (bft_bpf_flush): seal runs, SYNC heartbeats, reap targets.  NULL:
	 * the backend does it itself, and a reader need not wake for it.
	 */
	int (*flush)(void *h, bool heartbeat);

	/*
	 * Events (mode changes, failed probes, targets leaving) on a handle
	 * of their own.  NULL events_open: the backend sends none, and what
	 * they would say shows in the status.
	 */
	int (*events_open)(void **ev, char *err, size_t errlen);
	void (*events_close)(void *ev);
	int (*events_fd)(const void *ev);
	int (*events_recv)(void *ev, struct bft_nl_event *e, int timeout_ms);

	/*
	 * The rings.  dev and nr_cpus as bft_rings_open() takes them (a
	 * backend may ignore them); cb gets each CPU's bytes in order.
	 */
	int (*rings_open)(void *h, struct bft_backend_rings **rp,
			  const char *dev, unsigned int nr_cpus,
			  bft_rings_cb cb, void *arg, char *err,
			  size_t errlen);
	void (*rings_close)(struct bft_backend_rings *r);
	const char *(*rings_errmsg)(const struct bft_backend_rings *r);
	/*
	 * Where the reader learns itself that a ring is idle up to a time
	 * (bft_merge_advance), or ended (until_ns UINT64_MAX:
	 * bft_merge_close), idle(stream, until_ns, arg) with rings_open's
	 * arg.  NULL: the backend's own records (SYNC heartbeats) say it.
	 */
	void (*rings_idle)(struct bft_backend_rings *r,
			   int (*idle)(unsigned int stream, uint64_t until_ns,
				       void *arg));
	/* For a caller's poll(): readable when the rings want reading. */
	int (*rings_fd)(struct bft_backend_rings *r);
	/* How many rings woke since the last look; > 0 when unknown. */
	int (*rings_woken)(struct bft_backend_rings *r);
	/* A ring holds so much that no wakeup will come: read it now. */
	bool (*rings_behind)(const struct bft_backend_rings *r);
	/* Poll the rings that reported their end again (after a start). */
	void (*rings_rearm)(struct bft_backend_rings *r);
	ssize_t (*rings_poll)(struct bft_backend_rings *r, int timeout_ms);
	ssize_t (*rings_drain)(struct bft_backend_rings *r, int quiet_ms,
			       int max_ms);
	/* The session's status, the cheapest way the open rings allow. */
	int (*rings_status)(void *h, struct bft_backend_rings *r,
			    struct bft_nl_status *st);
};

extern const struct bft_backend_ops bft_backend_kmod;
extern const struct bft_backend_ops bft_backend_bpf;
extern const struct bft_backend_ops bft_backend_inline;

/*
 * The backend called name: "kmod", "bpf", "inline" (by name only), or
 * "auto" or "" for the module when it is loaded, else BPF.  NULL: the name in $BFT_BACKEND, auto if
 * unset.  An unknown name: -EINVAL, and err says which names there are.
 */
int bft_backend_choose(const char *name, const struct bft_backend_ops **ops,
		       char *err, size_t errlen);

#endif /* BFT_BACKEND_H */
