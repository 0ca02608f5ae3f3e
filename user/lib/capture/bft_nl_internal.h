/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_nl_internal: what the files of the netlink client share, and no
 * caller of bft_nl.h may use: the handle, the errors and the exchange
 * (bft_nl_sock.c), the attribute policies (bft_nl_attr.c), and the reply
 * parser of each command with its context, which bft_nl_parse.c also runs
 * on bytes.
 */
#ifndef BFT_NL_INTERNAL_H
#define BFT_NL_INTERNAL_H

#include "capture/bft_nl.h"

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

/*
 * The kernel sizes a dump's messages by the reader's buffer, up to 32 KiB;
 * a smaller buffer only means more round trips, a larger one is not used.
 */
#define BFT_NL_RCVBUF		32768

struct bft_nl {
	struct mnl_socket *sock;
	unsigned int portid;
	unsigned int seq;
	uint16_t family;
	uint32_t family_version;
	uint32_t events_group;
	bool events;		/* an events handle: never sends requests */
	bool attach_persist;	/* attach with BFT_A_PERSIST */
	/* Events: bytes of the last datagram not parsed yet. */
	size_t ev_off, ev_len;
	char errmsg[512];
	bool err_extack;
	int erroff;
	uint8_t rbuf[BFT_NL_RCVBUF];
};

/* ---- errors (bft_nl_sock.c) -------------------------------------------- */

void bft_nl_err_clear(struct bft_nl *nl);
__attribute__((format(printf, 3, 4)))
int bft_nl_err_set(struct bft_nl *nl, int err, const char *fmt, ...);
/*
 * An errno from the wire as -errno: either sign is accepted; what is no
 * errno at all (INT_MIN cannot even be negated) is -EPROTO.
 */
int bft_nl_wire_errno(int32_t e);
/* Clears the last error; a request on an events handle is -EINVAL. */
int bft_nl_control_check(struct bft_nl *nl);

/* ---- attributes (bft_nl_attr.c) ---------------------------------------- */

/*
 * One parse: attributes up to max are validated against types[] (UNSPEC:
 * not checked, e.g. pads) and the last of each type is kept in tb[].
 * Attributes above max come from a newer module: ignored.
 */
struct bft_nl_attr_tab {
	struct bft_nl *nl;
	const struct nlattr **tb;
	const enum mnl_attr_data_type *types;
	unsigned int max;
	const char *what;
	uint32_t have;
};

int bft_nl_attr_tab_cb(const struct nlattr *a, void *data);

extern const enum mnl_attr_data_type bft_nl_top_types[BFT_A_MAX + 1];
/* GET_METHODS messages carry BFT_P_* at top level, like BFT_A_* ones. */
extern const enum mnl_attr_data_type bft_nl_probe_types[BFT_P_MAX + 1];

/* Copy an optional attribute's value: absent ones leave *v alone. */
static inline void attr_take_u8(const struct nlattr *a, uint8_t *v)
{
	if (a)
		*v = mnl_attr_get_u8(a);
}

static inline void attr_take_u32(const struct nlattr *a, uint32_t *v)
{
	if (a)
		*v = mnl_attr_get_u32(a);
}

static inline void attr_take_u64(const struct nlattr *a, uint64_t *v)
{
	if (a)
		*v = mnl_attr_get_u64(a);
}

int bft_nl_msg_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
		     const struct nlattr **tb, unsigned int max,
		     const enum mnl_attr_data_type *types, const char *what,
		     uint32_t *have);
int bft_nl_nest_parse(struct bft_nl *nl, const struct nlattr *nest,
		      const struct nlattr **tb, unsigned int max,
		      const enum mnl_attr_data_type *types, const char *what,
		      uint32_t *have);

/* ---- one exchange (bft_nl_sock.c) -------------------------------------- */

struct bft_nl_xfer {
	struct bft_nl *nl;
	/* Parses one data message; returns 0 or -errno. */
	int (*parse)(struct bft_nl *nl, const struct nlmsghdr *nlh, void *arg);
	void *arg;
	uint16_t type;		/* expected nlmsg_type of data messages */
	uint8_t cmd;		/* the request's command, for messages */
	int err;		/* first failure: the kernel's or ours */
	bool done;
	bool single;		/* no ACK asked: the reply ends it */
};

/*
 * mnl_nlmsg_ok() compares nlmsg_len as an int: a length of 2^31 or more
 * passes, and mnl_nlmsg_next() then jumps gigabytes ahead.  Compared
 * unsigned here.
 */
bool bft_nl_msg_fits(const struct nlmsghdr *nlh, int left);
/* The messages of one datagram of a reply, for x. */
void bft_nl_reply_run(struct bft_nl_xfer *x, const void *buf, size_t len,
		      unsigned int seq);
/*
 * Send req and read until it is answered.  Messages from another sender or
 * for another sequence number (leftovers of an exchange given up after a
 * timeout) are skipped, not parsed.
 */
int bft_nl_transact(struct bft_nl *nl, struct nlmsghdr *req,
		    int (*parse)(struct bft_nl *, const struct nlmsghdr *,
				 void *),
		    void *arg);
/* A request of the bftrace family: its headers, put at buf. */
struct nlmsghdr *bft_nl_cmd_put(struct bft_nl *nl, void *buf, uint8_t cmd,
				uint16_t flags);

/* ---- reply parsers: one per command family, bft_nl_parse.c on bytes ---- */

struct bft_nl_family_info {
	bool found_family;
	uint32_t group;
};

int bft_nl_family_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
			void *arg);

int bft_nl_caps_parse(struct bft_nl *nl, const struct nlmsghdr *nlh, void *arg);

struct bft_nl_attach_ctx {
	int *results;		/* this request's slice */
	size_t n;
};

int bft_nl_attach_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
			void *arg);

struct bft_nl_mode_ctx {
	uint8_t mode;
	bool seen;
};

int bft_nl_mode_parse(struct bft_nl *nl, const struct nlmsghdr *nlh, void *arg);

int bft_nl_status_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
			void *arg);
/* The per-CPU statistics of a status reply or a heartbeat event. */
int bft_nl_cpu_stats_parse(struct bft_nl *nl, const struct nlattr *stats,
			   struct bft_nl_cpu_stats **cpus, uint32_t *nr);

struct bft_nl_opt_ctx {
	struct bft_nl_opt *out;
	size_t cap, n;
};

int bft_nl_opt_parse(struct bft_nl *nl, const struct nlmsghdr *nlh, void *arg);

struct bft_nl_methods_ctx {
	bft_nl_method_cb cb;
	void *arg;
};

int bft_nl_method_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
			void *arg);

int bft_nl_event_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
		       struct bft_nl_event *ev);

#endif /* BFT_NL_INTERNAL_H */
