/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_nl: the generic netlink client of bftrace.ko (libmnl).
 *
 * One struct bft_nl is one netlink socket.  A control handle sends the
 * commands of include/uapi/linux/bftrace.h section 1 and reads their
 * replies; an events handle (bft_nl_open_events) only receives
 * BFT_CMD_EVENT multicasts.  Keep the two apart: events arriving on the
 * control socket would interleave with replies.
 *
 * Conventions:
 *   - Every function returning int returns 0 on success or -errno.
 *   - After a failure, bft_nl_errmsg() holds the reason: the kernel's
 *     extack text when it sent one, else a message of this library.  It is
 *     "" after a success.  bft_nl_erroff() is the byte offset of the
 *     offending attribute in the request (NLMSGERR_ATTR_OFFS), or -1.
 *   - A handle is not thread-safe; use one per thread.
 *   - Strings and arrays handed to callbacks live only during the call.
 *
 * Link with -lmnl.
 */
#ifndef BFT_NL_H
#define BFT_NL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/bftrace.h>

/* What callers print: the names of modes, options, commands, events. */
#include "capture/bft_names.h"

struct bft_nl;

/*
 * Open a control socket: resolve the "bftrace" family and its "events"
 * group through CTRL_CMD_GETFAMILY (which also autoloads the module when
 * run with the right to do so), enable NETLINK_EXT_ACK and NETLINK_CAP_ACK.
 * -ENOENT: the family is not registered (bftrace.ko not loaded).
 * On failure *nlp is NULL and the reason is copied into err (may be NULL).
 */
int bft_nl_open(struct bft_nl **nlp, char *err, size_t errlen);

/*
 * Open an events socket: like bft_nl_open, then join BFT_MCGRP_EVENTS.
 * Only bft_nl_event_recv(), bft_nl_fd() and bft_nl_close() make sense on it.
 */
int bft_nl_open_events(struct bft_nl **nlp, char *err, size_t errlen);

void bft_nl_close(struct bft_nl *nl);

const char *bft_nl_errmsg(const struct bft_nl *nl);
int bft_nl_erroff(const struct bft_nl *nl);
/*
 * True when bft_nl_errmsg() is the kernel's extack text (NLMSGERR_ATTR_MSG)
 * of the last failure, false when it is this library's own.
 */
bool bft_nl_err_is_extack(const struct bft_nl *nl);

/* The socket, for poll(); readable when an event is waiting. */
int bft_nl_fd(const struct bft_nl *nl);
uint16_t bft_nl_family_id(const struct bft_nl *nl);
uint32_t bft_nl_events_group_id(const struct bft_nl *nl);
/* The family version the controller reported (CTRL_ATTR_VERSION). */
uint32_t bft_nl_family_version(const struct bft_nl *nl);

/* ---- BFT_CMD_GET_CAPS ------------------------------------------------ */

struct bft_nl_limits {
	uint32_t max_targets;
	uint32_t max_probes;
	uint32_t name_max;
	uint32_t path_max;
	uint32_t uretprobe_depth;
};

struct bft_nl_caps {
	uint32_t proto_version;
	uint64_t features;		/* BFT_FEAT_* */
	uint32_t nr_cpus;		/* possible CPUs = rings */
	struct bft_nl_limits limits;
	uint32_t have;			/* bit (1u << BFT_A_x) per attribute seen */
};

int bft_nl_get_caps(struct bft_nl *nl, struct bft_nl_caps *caps);

/* ---- BFT_CMD_ATTACH / BFT_CMD_DETACH ----------------------------------- */

struct bft_nl_probe {
	const char *path;		/* file holding the code, < BFT_PATH_MAX */
	uint64_t offset;		/* file offset of the probed instruction */
	uint32_t method_id;		/* the id ENTER records carry */
	uint32_t flags;			/* BFT_PF_* */
	const char *name;		/* display signature; NULL sends "" */
	/* BFT_PF_USDT only (bftrace.h 2.4); 0 and NULL otherwise */
	uint64_t ref_ctr_offset;	/* the semaphore's file offset, 0 none */
	const struct bft_usdt_arg *args;
	uint32_t nargs;			/* <= BFT_USDT_MAX_ARGS */
};

/*
 * Attach n probes to process tgid.  results (n entries, may be NULL)
 * receives, per probe, 0 if attached or -errno if the kernel refused it
 * (-EPROTO if the kernel's reply left that probe out).
 *
 * Splitting: one request carries at most BFT_NL_ATTACH_CHUNK probes and
 * at most 64 KiB of probe attributes (a netlink nest length is 16 bits),
 * so a larger batch goes out as several requests in order.  The kernel's
 * all-or-nothing check holds per request only: if request k is rejected,
 * the probes of requests before it stay attached (their results say so),
 * the rejected request's probes get its errno, the probes after it get
 * -ECANCELED, the call returns the errno, and bft_nl_errmsg() prefixes the
 * kernel's text (whose probe index is relative to that request) with
 * "probes <first>..<last>: ".  A batch of one request behaves exactly like
 * the kernel's single request, message unchanged.
 * Returns 0 when every request was accepted (results may still hold
 * per-probe errnos), else -errno.
 */
#define BFT_NL_ATTACH_CHUNK	1024
int bft_nl_attach(struct bft_nl *nl, uint32_t tgid,
		  const struct bft_nl_probe *probes, size_t n, int *results);

/*
 * Probes attached outside a session belong to this handle's socket, and
 * are detached when it closes, unless it attaches with persist (a module
 * with BFT_FEAT_ATTACH_PERSIST; older ones keep every probe): then only a
 * detach, a stop, or the end of the session that a start makes of them
 * removes them.
 */
void bft_nl_set_attach_persist(struct bft_nl *nl, bool persist);

/* Detach every probe of tgid, or of every target when tgid is 0. */
int bft_nl_detach(struct bft_nl *nl, uint32_t tgid);
/* Detach the n probes of tgid with these method ids (one request). */
int bft_nl_detach_some(struct bft_nl *nl, uint32_t tgid, const uint32_t *ids,
		       size_t n);

/* ---- mode commands ----------------------------------------------------- */

/*
 * cmd is one of BFT_CMD_START, _STOP, _PAUSE, _UNPAUSE, _SUSPEND,
 * _UNSUSPEND (else -EINVAL without asking the kernel).  *mode (may be
 * NULL) receives the mode in force afterwards (enum bft_mode).
 */
int bft_nl_mode_cmd(struct bft_nl *nl, int cmd, uint8_t *mode);
/*
 * BFT_CMD_START.  Without persist the session belongs to this handle's
 * socket: closing it (or dying) stops the session.  With persist the
 * session has no owner and lasts until BFT_CMD_STOP.
 */
int bft_nl_start(struct bft_nl *nl, bool persist, uint8_t *mode);

/* ---- BFT_CMD_GET_STATUS ------------------------------------------------ */

struct bft_nl_cpu_stats {
	uint32_t cpu;
	uint64_t produced;
	uint64_t written;
	uint64_t lost;
	uint64_t suspended;
	uint64_t bytes_written;
	uint64_t bytes_read;
	uint32_t used;
	uint32_t size;
	uint8_t reader;			/* a reader holds the ring (if have says) */
	uint32_t have;			/* bit (1u << BFT_S_x) per attribute seen */
};

struct bft_nl_status {
	uint8_t mode;			/* enum bft_mode */
	uint32_t nr_probes;
	uint32_t nr_targets;
	uint32_t owner;			/* port id owning the session, 0 none */
	uint32_t nr_cpus;		/* entries in cpus[] */
	struct bft_nl_cpu_stats *cpus;	/* malloc'ed, in reply order */
	uint32_t have;			/* bit (1u << BFT_A_x) per attribute seen */
};

/* Fills *st; release st->cpus with bft_nl_status_free(). */
int bft_nl_get_status(struct bft_nl *nl, struct bft_nl_status *st);
void bft_nl_status_free(struct bft_nl_status *st);

/* ---- BFT_CMD_GET_OPT / BFT_CMD_SET_OPT --------------------------------- */

struct bft_nl_opt {
	uint32_t id;			/* enum bft_opt */
	uint64_t value;
	uint64_t min;
	uint64_t max;
	uint32_t flags;			/* BFT_OPTF_* */
};

/* One option. */
int bft_nl_get_opt(struct bft_nl *nl, uint32_t id, struct bft_nl_opt *out);
/*
 * Every option the kernel reports: up to cap of them into out[], their
 * number in *n (which may exceed cap: then only cap were stored).
 */
int bft_nl_get_opts(struct bft_nl *nl, struct bft_nl_opt *out, size_t cap,
		    size_t *n);
/* Set one option; *out (may be NULL) receives the option as now in force. */
int bft_nl_set_opt(struct bft_nl *nl, uint32_t id, uint64_t value,
		   struct bft_nl_opt *out);

/* ---- BFT_CMD_GET_METHODS (dump) ---------------------------------------- */

struct bft_nl_method {
	uint32_t tgid;
	uint32_t method_id;
	const char *path;		/* "" if absent */
	uint64_t offset;
	uint32_t flags;
	const char *name;		/* "" if absent */
	uint64_t hits;
};

/*
 * Called once per probe.  Return 0 to go on; a negative value stops the
 * callbacks, the rest of the dump is read and discarded, and
 * bft_nl_get_methods() returns that value.
 */
typedef int (*bft_nl_method_cb)(const struct bft_nl_method *m, void *arg);
int bft_nl_get_methods(struct bft_nl *nl, bft_nl_method_cb cb, void *arg);

/* ---- BFT_CMD_GET_EXCEPTIONS (dump) ------------------------------------- */

struct bft_nl_exception {
	uint32_t tgid;			/* 0 if absent */
	uint32_t id;			/* what BFT_ESC_THROW records carry, >= 1 */
	const char *name;		/* as type_info::name(): "St13runtime_error" */
};

/*
 * Called once per exception type; return 0 to go on, a negative value to
 * stop (the functions below then return it).
 */
typedef int (*bft_nl_exception_cb)(const struct bft_nl_exception *e,
				   void *arg);
/*
 * The module's exception type table.  A module that predates the command
 * (it answers EOPNOTSUPP or EINVAL) has no types: 0, and no callback.
 */
int bft_nl_get_exceptions(struct bft_nl *nl, bft_nl_exception_cb cb,
			  void *arg);
/*
 * The same from the len bytes of a dump's netlink messages at buf (as the
 * kernel sends them, NLMSG_DONE or an error at the end optional): the
 * number of types, or -EPROTO with a message in err (errlen bytes) for a
 * malformed message, or the callback's value.
 */
int bft_nl_parse_exceptions(const void *buf, size_t len,
			    bft_nl_exception_cb cb, void *arg, char *err,
			    size_t errlen);

/* ---- BFT_CMD_EVENT (events handle) ------------------------------------- */

struct bft_nl_event {
	uint8_t type;			/* enum bft_event */
	uint8_t mode;			/* HEARTBEAT, MODE */
	uint32_t tgid;			/* TARGET_EXIT, PROBE_FAILED */
	uint32_t fill_permille;		/* HEARTBEAT */
	uint32_t nr_probes;		/* TARGET_EXIT: probes detached */
	uint32_t method_id;		/* PROBE_FAILED */
	int32_t error;			/* PROBE_FAILED: positive errno, as sent */
	uint32_t nr_cpus;		/* HEARTBEAT: entries in cpus[] */
	struct bft_nl_cpu_stats *cpus;	/* malloc'ed or NULL */
	uint32_t have;			/* bit (1u << BFT_A_x) per attribute seen */
};

/*
 * Wait up to timeout_ms (-1: forever, 0: just look) for the next event.
 * -ETIMEDOUT: none came.  -ENOBUFS: the socket overran and events were
 * lost (the next call reads on).  Release ev->cpus with
 * bft_nl_event_free(); a call overwrites *ev without freeing it.
 */
int bft_nl_event_recv(struct bft_nl *nl, struct bft_nl_event *ev,
		      int timeout_ms);
void bft_nl_event_free(struct bft_nl_event *ev);

/*
 * The reply parsers without a socket (tests, fuzzing): buf holds the
 * netlink messages a socket would have given for a request of cmd
 * (BFT_CMD_*; BFT_CMD_UNSPEC: the controller's GETFAMILY answer;
 * BFT_CMD_EVENT: multicast events) to the family id family, from port 0
 * with sequence number 0.  They are parsed as a live reply is and the
 * results dropped.  Returns 0 or -errno with the reason in err.
 */
int bft_nl_parse_reply(uint8_t cmd, uint16_t family, const void *buf,
		       size_t len, char *err, size_t errlen);

#endif /* BFT_NL_H */
