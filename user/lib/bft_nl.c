// SPDX-License-Identifier: GPL-2.0
/*
 * bft_nl: generic netlink client of bftrace.ko.  See bft_nl.h.
 *
 * Every exchange is: build one request, send it, then read until the
 * message that ends it (the ACK or error for a do-command, NLMSG_DONE for a
 * dump).  Each received message is checked against our port id and the
 * request's sequence number before libmnl's mnl_cb_run2() dispatches it:
 * data messages to a per-command parser, control messages to our own
 * handlers, which read the extended ACK that plain libmnl ignores.
 */
#define _GNU_SOURCE
#include "bft_nl.h"
#include "bft_util.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

/*
 * The kernel sizes a dump's messages by the reader's buffer, up to 32 KiB;
 * a smaller buffer only means more round trips, a larger one is not used.
 */
#define BFT_NL_RCVBUF		32768
/* A nest's length is 16 bits: BFT_A_PROBES cannot carry more than this. */
#define BFT_NL_NEST_MAX		65535
/* Generous: attaching a thousand probes registers a thousand uprobes. */
#define BFT_NL_REPLY_TIMEOUT_S	60

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

/* ---- errors ------------------------------------------------------------ */

static void clear_err(struct bft_nl *nl)
{
	nl->errmsg[0] = '\0';
	nl->err_extack = false;
	nl->erroff = -1;
}

__attribute__((format(printf, 3, 4)))
static int set_err(struct bft_nl *nl, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(nl->errmsg, sizeof(nl->errmsg), fmt, ap);
	va_end(ap);
	nl->err_extack = false;
	return err;
}

const char *bft_nl_errmsg(const struct bft_nl *nl)
{
	return nl ? nl->errmsg : "no handle";
}

int bft_nl_erroff(const struct bft_nl *nl)
{
	return nl->erroff;
}

bool bft_nl_err_is_extack(const struct bft_nl *nl)
{
	return nl->err_extack;
}

int bft_nl_fd(const struct bft_nl *nl)
{
	return mnl_socket_get_fd(nl->sock);
}

uint16_t bft_nl_family_id(const struct bft_nl *nl)
{
	return nl->family;
}

uint32_t bft_nl_events_group_id(const struct bft_nl *nl)
{
	return nl->events_group;
}

uint32_t bft_nl_family_version(const struct bft_nl *nl)
{
	return nl->family_version;
}

/* ---- attribute tables -------------------------------------------------- */

/*
 * One parse: attributes up to max are validated against types[] (UNSPEC:
 * not checked, e.g. pads) and the last of each type is kept in tb[].
 * Attributes above max come from a newer module: ignored.
 */
struct attr_tab {
	struct bft_nl *nl;
	const struct nlattr **tb;
	const enum mnl_attr_data_type *types;
	unsigned int max;
	const char *what;
	uint32_t have;
};

static int attr_tab_cb(const struct nlattr *a, void *data)
{
	struct attr_tab *t = data;
	unsigned int type = mnl_attr_get_type(a);

	if (type > t->max)
		return MNL_CB_OK;
	if (t->types[type] != MNL_TYPE_UNSPEC &&
	    mnl_attr_validate(a, t->types[type]) < 0) {
		set_err(t->nl, -EPROTO, "malformed %s attribute %u (length %u)",
			t->what, type, mnl_attr_get_payload_len(a));
		return MNL_CB_ERROR;
	}
	t->tb[type] = a;
	if (type < 32)
		t->have |= 1u << type;
	return MNL_CB_OK;
}

static const enum mnl_attr_data_type top_types[BFT_A_MAX + 1] = {
	[BFT_A_PROTO_VERSION]	= MNL_TYPE_U32,
	[BFT_A_FEATURES]	= MNL_TYPE_U64,
	[BFT_A_NR_CPUS]		= MNL_TYPE_U32,
	[BFT_A_LIMITS]		= MNL_TYPE_NESTED,
	[BFT_A_TGID]		= MNL_TYPE_U32,
	[BFT_A_PROBES]		= MNL_TYPE_NESTED,
	[BFT_A_PROBE]		= MNL_TYPE_NESTED,
	[BFT_A_RESULTS]		= MNL_TYPE_NESTED,
	[BFT_A_RESULT]		= MNL_TYPE_NESTED,
	[BFT_A_MODE]		= MNL_TYPE_U8,
	[BFT_A_NR_PROBES]	= MNL_TYPE_U32,
	[BFT_A_NR_TARGETS]	= MNL_TYPE_U32,
	[BFT_A_CPU_STATS]	= MNL_TYPE_NESTED,
	[BFT_A_CPU]		= MNL_TYPE_NESTED,
	[BFT_A_OPT_ID]		= MNL_TYPE_U32,
	[BFT_A_OPT_VALUE]	= MNL_TYPE_U64,
	[BFT_A_OPT]		= MNL_TYPE_NESTED,
	[BFT_A_EVENT]		= MNL_TYPE_U8,
	[BFT_A_FILL_PERMILLE]	= MNL_TYPE_U32,
	[BFT_A_ERRNO]		= MNL_TYPE_U32,
	[BFT_A_PERSIST]		= MNL_TYPE_FLAG,
	[BFT_A_OWNER]		= MNL_TYPE_U32,
};

/* GET_METHODS messages carry BFT_P_* at top level, like BFT_A_* ones. */
static const enum mnl_attr_data_type probe_types[BFT_P_MAX + 1] = {
	[BFT_P_PATH]		= MNL_TYPE_NUL_STRING,
	[BFT_P_OFFSET]		= MNL_TYPE_U64,
	[BFT_P_METHOD_ID]	= MNL_TYPE_U32,
	[BFT_P_FLAGS]		= MNL_TYPE_U32,
	[BFT_P_NAME]		= MNL_TYPE_NUL_STRING,
	[BFT_P_HITS]		= MNL_TYPE_U64,
};

static const enum mnl_attr_data_type result_types[BFT_R_MAX + 1] = {
	[BFT_R_INDEX]		= MNL_TYPE_U32,
	[BFT_R_ERRNO]		= MNL_TYPE_U32,
};

static const enum mnl_attr_data_type limit_types[BFT_LIM_MAX + 1] = {
	[BFT_LIM_MAX_TARGETS]	= MNL_TYPE_U32,
	[BFT_LIM_MAX_PROBES]	= MNL_TYPE_U32,
	[BFT_LIM_NAME_MAX]	= MNL_TYPE_U32,
	[BFT_LIM_PATH_MAX]	= MNL_TYPE_U32,
	[BFT_LIM_URETPROBE_DEPTH] = MNL_TYPE_U32,
};

static const enum mnl_attr_data_type stat_types[BFT_S_MAX + 1] = {
	[BFT_S_CPU]		= MNL_TYPE_U32,
	[BFT_S_PRODUCED]	= MNL_TYPE_U64,
	[BFT_S_WRITTEN]		= MNL_TYPE_U64,
	[BFT_S_LOST]		= MNL_TYPE_U64,
	[BFT_S_SUSPENDED]	= MNL_TYPE_U64,
	[BFT_S_BYTES_WRITTEN]	= MNL_TYPE_U64,
	[BFT_S_BYTES_READ]	= MNL_TYPE_U64,
	[BFT_S_USED]		= MNL_TYPE_U32,
	[BFT_S_READER]		= MNL_TYPE_U8,
	[BFT_S_SIZE]		= MNL_TYPE_U32,
};

static const enum mnl_attr_data_type opt_types[BFT_O_MAX_ATTR + 1] = {
	[BFT_O_ID]		= MNL_TYPE_U32,
	[BFT_O_VALUE]		= MNL_TYPE_U64,
	[BFT_O_MIN]		= MNL_TYPE_U64,
	[BFT_O_MAX]		= MNL_TYPE_U64,
	[BFT_O_FLAGS]		= MNL_TYPE_U32,
};

/* Copy an optional attribute's value: absent ones leave *v alone. */
static void take_u8(const struct nlattr *a, uint8_t *v)
{
	if (a)
		*v = mnl_attr_get_u8(a);
}

static void take_u32(const struct nlattr *a, uint32_t *v)
{
	if (a)
		*v = mnl_attr_get_u32(a);
}

static void take_u64(const struct nlattr *a, uint64_t *v)
{
	if (a)
		*v = mnl_attr_get_u64(a);
}

static int parse_msg(struct bft_nl *nl, const struct nlmsghdr *nlh,
		     const struct nlattr **tb, unsigned int max,
		     const enum mnl_attr_data_type *types, const char *what,
		     uint32_t *have)
{
	struct attr_tab t = { nl, tb, types, max, what, 0 };

	memset(tb, 0, (max + 1) * sizeof(*tb));
	if (mnl_attr_parse(nlh, GENL_HDRLEN, attr_tab_cb, &t) < 0)
		return -EPROTO;
	if (have)
		*have = t.have;
	return 0;
}

static int parse_nest(struct bft_nl *nl, const struct nlattr *nest,
		      const struct nlattr **tb, unsigned int max,
		      const enum mnl_attr_data_type *types, const char *what,
		      uint32_t *have)
{
	struct attr_tab t = { nl, tb, types, max, what, 0 };

	memset(tb, 0, (max + 1) * sizeof(*tb));
	if (mnl_attr_parse_nested(nest, attr_tab_cb, &t) < 0)
		return -EPROTO;
	if (have)
		*have = t.have;
	return 0;
}

/* ---- one exchange ------------------------------------------------------ */

struct xfer {
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

static int extack_cb(const struct nlattr *a, void *data)
{
	struct bft_nl *nl = data;

	switch (mnl_attr_get_type(a)) {
	case NLMSGERR_ATTR_MSG:
		if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0) {
			snprintf(nl->errmsg, sizeof(nl->errmsg), "%s",
				 mnl_attr_get_str(a));
			nl->err_extack = true;
		}
		break;
	case NLMSGERR_ATTR_OFFS:
		if (mnl_attr_validate(a, MNL_TYPE_U32) == 0)
			nl->erroff = (int)mnl_attr_get_u32(a);
		break;
	}
	return MNL_CB_OK;
}

/*
 * The TLVs of an extended ACK follow the error code and the echoed
 * request: the whole request, or only its header when NLM_F_CAPPED says
 * the kernel cut it (we ask for that with NETLINK_CAP_ACK).
 */
static void parse_extack(struct bft_nl *nl, const struct nlmsghdr *nlh,
			 size_t tlv_off)
{
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (MNL_ALIGN(tlv_off) >= mnl_nlmsg_get_payload_len(nlh))
		return;
	mnl_attr_parse(nlh, tlv_off, extack_cb, nl);
}

/*
 * An errno from the wire as -errno: either sign is accepted; what is no
 * errno at all (INT_MIN cannot even be negated) is -EPROTO.
 */
static int wire_errno(int32_t e)
{
	if (e < -4095 || e > 4095)
		return -EPROTO;
	return e < 0 ? e : -e;
}

static void default_errmsg(struct xfer *x)
{
	struct bft_nl *nl = x->nl;

	if (nl->errmsg[0])
		return;
	/*
	 * Refused without text: by the netlink core (the events group), or
	 * by an older module, which refused a dump in its start callback
	 * even where that has no extack (6.1).
	 */
	if (x->err == -EPERM)
		set_err(nl, x->err, "%s: %s (needs CAP_PERFMON or CAP_SYS_ADMIN%s)",
			bft_cmd_name(x->cmd), strerror(EPERM),
			x->cmd == BFT_CMD_ATTACH ? ", and ptrace access" : "");
	else
		set_err(nl, x->err, "%s", strerror(-x->err));
}

static int ctl_error(const struct nlmsghdr *nlh, void *data)
{
	struct xfer *x = data;
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	size_t plen = mnl_nlmsg_get_payload_len(nlh);
	size_t echoed;

	if (plen < sizeof(*e)) {
		x->err = set_err(x->nl, -EBADMSG, "truncated netlink error message");
		return MNL_CB_ERROR;
	}
	if (nlh->nlmsg_flags & NLM_F_CAPPED)
		echoed = sizeof(e->msg);
	else
		echoed = e->msg.nlmsg_len < sizeof(e->msg) ?
			 sizeof(e->msg) : e->msg.nlmsg_len;
	x->done = true;
	if (e->error == 0)
		return MNL_CB_STOP;
	if (!x->err) {
		x->err = wire_errno(e->error);
		parse_extack(x->nl, nlh, sizeof(e->error) + echoed);
		default_errmsg(x);
	}
	return MNL_CB_ERROR;
}

/* A dump that fails half-way says so in NLMSG_DONE: an int, then TLVs. */
static int ctl_done(const struct nlmsghdr *nlh, void *data)
{
	struct xfer *x = data;
	int err = 0;

	x->done = true;
	if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(int))
		memcpy(&err, mnl_nlmsg_get_payload(nlh), sizeof(int));
	if (err && !x->err) {
		x->err = wire_errno(err);
		parse_extack(x->nl, nlh, sizeof(int));
		default_errmsg(x);
	}
	return MNL_CB_STOP;
}

static int ctl_ignore(const struct nlmsghdr *nlh, void *data)
{
	(void)nlh;
	(void)data;
	return MNL_CB_OK;
}

static mnl_cb_t ctl_cbs[NLMSG_MIN_TYPE] = {
	[NLMSG_NOOP]	= ctl_ignore,
	[NLMSG_ERROR]	= ctl_error,
	[NLMSG_DONE]	= ctl_done,
	[NLMSG_OVERRUN]	= ctl_ignore,
};

static int data_cb(const struct nlmsghdr *nlh, void *data)
{
	struct xfer *x = data;
	int err;

	/* After a failure keep reading to the end, but parse nothing. */
	if (x->err)
		return MNL_CB_OK;
	if (nlh->nlmsg_type != x->type ||
	    mnl_nlmsg_get_payload_len(nlh) < GENL_HDRLEN) {
		x->err = set_err(x->nl, -EPROTO,
				 "unexpected netlink message type %u length %u",
				 nlh->nlmsg_type, nlh->nlmsg_len);
		return MNL_CB_OK;
	}
	err = x->parse ? x->parse(x->nl, nlh, x->arg) : 0;
	if (err) {
		x->err = err;
		if (!x->nl->errmsg[0])
			set_err(x->nl, err, "%s", strerror(-err));
	}
	if (x->single)
		x->done = true;
	return MNL_CB_OK;
}

static int recv_some(struct bft_nl *nl, ssize_t *len)
{
	*len = mnl_socket_recvfrom(nl->sock, nl->rbuf, sizeof(nl->rbuf));
	if (*len >= 0)
		return 0;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return set_err(nl, -ETIMEDOUT, "no reply from bftrace within %d s",
			       BFT_NL_REPLY_TIMEOUT_S);
	if (errno == ENOSPC)
		return set_err(nl, -EMSGSIZE,
			       "netlink reply larger than %d bytes", BFT_NL_RCVBUF);
	return set_err(nl, -errno, "netlink receive: %s", strerror(errno));
}

/*
 * mnl_nlmsg_ok() compares nlmsg_len as an int: a length of 2^31 or more
 * passes, and mnl_nlmsg_next() then jumps gigabytes ahead.  Compared
 * unsigned here.
 */
static bool nlmsg_fits(const struct nlmsghdr *nlh, int left)
{
	return left >= (int)sizeof(*nlh) && nlh->nlmsg_len >= sizeof(*nlh) &&
	       nlh->nlmsg_len <= (unsigned int)left;
}

/* The messages of one datagram of a reply, for x. */
static void reply_run(struct xfer *x, const void *buf, size_t len,
		      unsigned int seq)
{
	const struct nlmsghdr *nlh = buf;
	int left = len > INT32_MAX ? INT32_MAX : (int)len;

	for (; nlmsg_fits(nlh, left) && !x->done;
	     nlh = mnl_nlmsg_next(nlh, &left)) {
		if (nlh->nlmsg_pid != x->nl->portid || nlh->nlmsg_seq != seq)
			continue;
		mnl_cb_run2(nlh, nlh->nlmsg_len, seq, x->nl->portid, data_cb, x,
			    ctl_cbs, MNL_ARRAY_SIZE(ctl_cbs));
	}
}

/*
 * Send req and read until it is answered.  Messages from another sender or
 * for another sequence number (leftovers of an exchange given up after a
 * timeout) are skipped, not parsed.
 */
static int transact(struct bft_nl *nl, struct nlmsghdr *req,
		    int (*parse)(struct bft_nl *, const struct nlmsghdr *,
				 void *),
		    void *arg)
{
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(req);
	struct xfer x = { .nl = nl, .parse = parse, .arg = arg,
			  .type = req->nlmsg_type,
			  .cmd = req->nlmsg_type == nl->family ? g->cmd : 0,
			  .single = !(req->nlmsg_flags &
				      (NLM_F_ACK | NLM_F_DUMP)) };
	unsigned int seq = req->nlmsg_seq;

	if (mnl_socket_sendto(nl->sock, req, req->nlmsg_len) < 0)
		return set_err(nl, -errno, "netlink send (%u bytes): %s",
			       req->nlmsg_len, strerror(errno));
	while (!x.done) {
		ssize_t len;
		int err;

		err = recv_some(nl, &len);
		if (err)
			return err;
		reply_run(&x, nl->rbuf, (size_t)len, seq);
	}
	return x.err;
}

static struct nlmsghdr *put_request(struct bft_nl *nl, void *buf,
				    uint16_t type, uint8_t cmd, uint8_t version,
				    uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = ++nl->seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = version;
	g->reserved = 0;
	return nlh;
}

static struct nlmsghdr *put_cmd(struct bft_nl *nl, void *buf, uint8_t cmd,
				uint16_t flags)
{
	return put_request(nl, buf, nl->family, cmd, BFT_GENL_VERSION, flags);
}

/* ---- open: family resolution ------------------------------------------- */

struct family_info {
	bool found_family;
	uint32_t group;
};

static int group_cb(struct bft_nl *nl, const struct nlattr *groups,
		    struct family_info *fi)
{
	const struct nlattr *g;

	mnl_attr_for_each_nested(g, groups) {
		static const enum mnl_attr_data_type types[CTRL_ATTR_MCAST_GRP_MAX + 1] = {
			[CTRL_ATTR_MCAST_GRP_NAME] = MNL_TYPE_NUL_STRING,
			[CTRL_ATTR_MCAST_GRP_ID] = MNL_TYPE_U32,
		};
		const struct nlattr *tb[CTRL_ATTR_MCAST_GRP_MAX + 1];

		if (mnl_attr_validate(g, MNL_TYPE_NESTED) < 0)
			return set_err(nl, -EPROTO, "malformed multicast group");
		if (parse_nest(nl, g, tb, CTRL_ATTR_MCAST_GRP_MAX, types,
			       "multicast group", NULL))
			return -EPROTO;
		if (tb[CTRL_ATTR_MCAST_GRP_NAME] && tb[CTRL_ATTR_MCAST_GRP_ID] &&
		    !strcmp(mnl_attr_get_str(tb[CTRL_ATTR_MCAST_GRP_NAME]),
			    BFT_MCGRP_EVENTS))
			fi->group = mnl_attr_get_u32(tb[CTRL_ATTR_MCAST_GRP_ID]);
	}
	return 0;
}

static int family_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
			void *arg)
{
	static const enum mnl_attr_data_type types[CTRL_ATTR_MAX + 1] = {
		[CTRL_ATTR_FAMILY_ID]	= MNL_TYPE_U16,
		[CTRL_ATTR_FAMILY_NAME]	= MNL_TYPE_NUL_STRING,
		[CTRL_ATTR_VERSION]	= MNL_TYPE_U32,
		[CTRL_ATTR_MCAST_GROUPS] = MNL_TYPE_NESTED,
	};
	const struct nlattr *tb[CTRL_ATTR_MAX + 1];
	struct family_info *fi = arg;

	if (parse_msg(nl, nlh, tb, CTRL_ATTR_MAX, types, "controller", NULL))
		return -EPROTO;
	if (!tb[CTRL_ATTR_FAMILY_ID] || !tb[CTRL_ATTR_FAMILY_NAME] ||
	    strcmp(mnl_attr_get_str(tb[CTRL_ATTR_FAMILY_NAME]), BFT_GENL_NAME))
		return set_err(nl, -EPROTO, "controller reply names no family \"%s\"",
			       BFT_GENL_NAME);
	nl->family = mnl_attr_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
	if (tb[CTRL_ATTR_VERSION])
		nl->family_version = mnl_attr_get_u32(tb[CTRL_ATTR_VERSION]);
	fi->found_family = true;
	if (tb[CTRL_ATTR_MCAST_GROUPS])
		return group_cb(nl, tb[CTRL_ATTR_MCAST_GROUPS], fi);
	return 0;
}

static int resolve_family(struct bft_nl *nl)
{
	char buf[256];
	struct nlmsghdr *nlh;
	struct family_info fi = { 0 };
	int err;

	nlh = put_request(nl, buf, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, NLM_F_ACK);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, BFT_GENL_NAME);
	err = transact(nl, nlh, family_parse, &fi);
	if (err == -ENOENT)
		return set_err(nl, err,
			       "generic netlink family \"%s\" not found: is bftrace.ko loaded?",
			       BFT_GENL_NAME);
	if (err)
		return err;
	if (!fi.found_family)
		return set_err(nl, -EPROTO, "controller sent no family id for \"%s\"",
			       BFT_GENL_NAME);
	nl->events_group = fi.group;
	return 0;
}

static int open_common(struct bft_nl **nlp, bool events, char *err,
		       size_t errlen)
{
	struct timeval tv = { .tv_sec = BFT_NL_REPLY_TIMEOUT_S };
	struct bft_nl *nl;
	int one = 1, ret;

	*nlp = NULL;
	if (err && errlen)
		err[0] = '\0';
	nl = calloc(1, sizeof(*nl));
	if (!nl) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	clear_err(nl);
	nl->events = events;
	/* Sequence numbers that a previous process's leftovers cannot match. */
	nl->seq = (unsigned int)time(NULL) ^ ((unsigned int)getpid() << 16);

	nl->sock = mnl_socket_open2(NETLINK_GENERIC, SOCK_CLOEXEC);
	if (!nl->sock) {
		ret = set_err(nl, -errno, "cannot open a generic netlink socket: %s",
			      strerror(errno));
		goto fail;
	}
	if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = set_err(nl, -errno, "cannot bind the netlink socket: %s",
			      strerror(errno));
		goto fail;
	}
	nl->portid = mnl_socket_get_portid(nl->sock);
	/* Both are best effort: without them errors just lose their text. */
	mnl_socket_setsockopt(nl->sock, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(nl->sock, NETLINK_CAP_ACK, &one, sizeof(one));
	setsockopt(mnl_socket_get_fd(nl->sock), SOL_SOCKET, SO_RCVTIMEO, &tv,
		   sizeof(tv));

	ret = resolve_family(nl);
	if (ret)
		goto fail;
	if (events) {
		int grp;

		if (!nl->events_group) {
			ret = set_err(nl, -ENOENT,
				      "family \"%s\" has no multicast group \"%s\"",
				      BFT_GENL_NAME, BFT_MCGRP_EVENTS);
			goto fail;
		}
		grp = (int)nl->events_group;
		if (mnl_socket_setsockopt(nl->sock, NETLINK_ADD_MEMBERSHIP, &grp,
					  sizeof(grp)) < 0) {
			ret = set_err(nl, -errno, "cannot join group \"%s\": %s",
				      BFT_MCGRP_EVENTS, strerror(errno));
			goto fail;
		}
	}
	clear_err(nl);
	*nlp = nl;
	return 0;
fail:
	if (err && errlen)
		snprintf(err, errlen, "%s", nl->errmsg);
	bft_nl_close(nl);
	return ret;
}

int bft_nl_open(struct bft_nl **nlp, char *err, size_t errlen)
{
	return open_common(nlp, false, err, errlen);
}

int bft_nl_open_events(struct bft_nl **nlp, char *err, size_t errlen)
{
	return open_common(nlp, true, err, errlen);
}

void bft_nl_close(struct bft_nl *nl)
{
	if (!nl)
		return;
	if (nl->sock)
		mnl_socket_close(nl->sock);
	free(nl);
}

static int check_control(struct bft_nl *nl)
{
	clear_err(nl);
	if (nl->events)
		return set_err(nl, -EINVAL,
			       "requests need a control handle, not an events handle");
	return 0;
}

/* ---- GET_CAPS ------------------------------------------------------------ */

static int caps_parse(struct bft_nl *nl, const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[BFT_A_MAX + 1], *lim[BFT_LIM_MAX + 1];
	struct bft_nl_caps *c = arg;

	if (parse_msg(nl, nlh, tb, BFT_A_MAX, top_types, "caps", &c->have))
		return -EPROTO;
	if (!tb[BFT_A_PROTO_VERSION])
		return set_err(nl, -EPROTO, "caps reply without a protocol version");
	c->proto_version = mnl_attr_get_u32(tb[BFT_A_PROTO_VERSION]);
	take_u64(tb[BFT_A_FEATURES], &c->features);
	take_u32(tb[BFT_A_NR_CPUS], &c->nr_cpus);
	if (tb[BFT_A_LIMITS]) {
		if (parse_nest(nl, tb[BFT_A_LIMITS], lim, BFT_LIM_MAX,
			       limit_types, "limits", NULL))
			return -EPROTO;
		take_u32(lim[BFT_LIM_MAX_TARGETS], &c->limits.max_targets);
		take_u32(lim[BFT_LIM_MAX_PROBES], &c->limits.max_probes);
		take_u32(lim[BFT_LIM_NAME_MAX], &c->limits.name_max);
		take_u32(lim[BFT_LIM_PATH_MAX], &c->limits.path_max);
		take_u32(lim[BFT_LIM_URETPROBE_DEPTH], &c->limits.uretprobe_depth);
	}
	return 0;
}

int bft_nl_get_caps(struct bft_nl *nl, struct bft_nl_caps *caps)
{
	char buf[256];
	int err = check_control(nl);

	if (err)
		return err;
	memset(caps, 0, sizeof(*caps));
	return transact(nl, put_cmd(nl, buf, BFT_CMD_GET_CAPS, NLM_F_ACK),
			caps_parse, caps);
}

/* ---- ATTACH / DETACH ----------------------------------------------------- */

static size_t probe_attrs_size(const struct bft_nl_probe *p)
{
	size_t sz = MNL_ATTR_HDRLEN;				/* the nest */

	sz += MNL_ALIGN(MNL_ATTR_HDRLEN + strlen(p->path) + 1);
	sz += MNL_ALIGN(MNL_ATTR_HDRLEN + sizeof(uint64_t));
	sz += 2 * MNL_ALIGN(MNL_ATTR_HDRLEN + sizeof(uint32_t));
	if (p->name)
		sz += MNL_ALIGN(MNL_ATTR_HDRLEN + strlen(p->name) + 1);
	return sz;
}

struct attach_ctx {
	int *results;		/* this request's slice */
	size_t n;
};

static int attach_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
			void *arg)
{
	const struct nlattr *tb[BFT_A_MAX + 1], *rt[BFT_R_MAX + 1], *r;
	struct attach_ctx *a = arg;

	if (parse_msg(nl, nlh, tb, BFT_A_MAX, top_types, "attach", NULL))
		return -EPROTO;
	if (!tb[BFT_A_RESULTS])
		return set_err(nl, -EPROTO, "attach reply without results");
	mnl_attr_for_each_nested(r, tb[BFT_A_RESULTS]) {
		uint32_t idx;
		int32_t e;

		if (mnl_attr_get_type(r) != BFT_A_RESULT)
			continue;
		if (mnl_attr_validate(r, MNL_TYPE_NESTED) < 0 ||
		    parse_nest(nl, r, rt, BFT_R_MAX, result_types, "result", NULL))
			return set_err(nl, -EPROTO, "malformed attach result");
		if (!rt[BFT_R_INDEX] || !rt[BFT_R_ERRNO])
			return set_err(nl, -EPROTO, "attach result without index or errno");
		idx = mnl_attr_get_u32(rt[BFT_R_INDEX]);
		e = (int32_t)mnl_attr_get_u32(rt[BFT_R_ERRNO]);
		if (idx >= a->n)
			return set_err(nl, -EPROTO, "attach result for probe %u of %zu",
				       idx, a->n);
		if (a->results)
			a->results[idx] = wire_errno(e);
	}
	return 0;
}

static int attach_one(struct bft_nl *nl, uint32_t tgid,
		      const struct bft_nl_probe *probes, size_t n,
		      size_t attrs_size, int *results)
{
	size_t bufsz = MNL_NLMSG_HDRLEN + GENL_HDRLEN +
		       MNL_ALIGN(MNL_ATTR_HDRLEN + sizeof(uint32_t)) +
		       MNL_ATTR_HDRLEN + MNL_ATTR_HDRLEN + attrs_size;
	struct attach_ctx ctx = { results, n };
	struct nlmsghdr *nlh;
	struct nlattr *outer;
	void *buf;
	int err;

	buf = malloc(bufsz);
	if (!buf)
		return set_err(nl, -ENOMEM, "out of memory for %zu probes", n);
	nlh = put_cmd(nl, buf, BFT_CMD_ATTACH, NLM_F_ACK);
	mnl_attr_put_u32(nlh, BFT_A_TGID, tgid);
	if (nl->attach_persist)
		mnl_attr_put(nlh, BFT_A_PERSIST, 0, NULL);
	outer = mnl_attr_nest_start(nlh, BFT_A_PROBES);
	for (size_t i = 0; i < n; i++) {
		const struct bft_nl_probe *p = &probes[i];
		struct nlattr *in = mnl_attr_nest_start(nlh, BFT_A_PROBE);

		mnl_attr_put_strz(nlh, BFT_P_PATH, p->path);
		mnl_attr_put_u64(nlh, BFT_P_OFFSET, p->offset);
		mnl_attr_put_u32(nlh, BFT_P_METHOD_ID, p->method_id);
		mnl_attr_put_u32(nlh, BFT_P_FLAGS, p->flags);
		/* the module requires a name; NULL means an empty one */
		mnl_attr_put_strz(nlh, BFT_P_NAME, p->name ? p->name : "");
		mnl_attr_nest_end(nlh, in);
	}
	mnl_attr_nest_end(nlh, outer);
	/* Probes the reply leaves out are the module's fault: say so. */
	if (results)
		for (size_t i = 0; i < n; i++)
			results[i] = -EPROTO;
	err = transact(nl, nlh, attach_parse, &ctx);
	free(buf);
	return err;
}

void bft_nl_set_attach_persist(struct bft_nl *nl, bool persist)
{
	nl->attach_persist = persist;
}

int bft_nl_attach(struct bft_nl *nl, uint32_t tgid,
		  const struct bft_nl_probe *probes, size_t n, int *results)
{
	size_t first = 0;
	int err = check_control(nl);

	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		if (!probes[i].path)
			return set_err(nl, -EINVAL, "probe %zu has no path", i);
		if (probe_attrs_size(&probes[i]) > BFT_NL_NEST_MAX - MNL_ATTR_HDRLEN)
			return set_err(nl, -ENAMETOOLONG,
				       "probe %zu: path and name too long for a netlink request", i);
	}
	/* An empty batch is still one request: the kernel judges it. */
	do {
		size_t last = first, size = 0;
		bool split;

		while (last < n && last - first < BFT_NL_ATTACH_CHUNK) {
			size_t s = probe_attrs_size(&probes[last]);

			if (size + s > BFT_NL_NEST_MAX - MNL_ATTR_HDRLEN)
				break;
			size += s;
			last++;
		}
		split = first > 0 || last < n;
		err = attach_one(nl, tgid, probes + first, last - first, size,
				 results ? results + first : NULL);
		if (err) {
			if (split) {
				char msg[sizeof(nl->errmsg)];
				int w;

				memcpy(msg, nl->errmsg, sizeof(msg));
				w = snprintf(nl->errmsg, sizeof(nl->errmsg),
					     "probes %zu..%zu: ", first, last - 1);
				if (w > 0 && (size_t)w < sizeof(nl->errmsg))
					snprintf(nl->errmsg + w, sizeof(nl->errmsg) - (size_t)w,
						 "%.*s", (int)(sizeof(nl->errmsg) - (size_t)w - 1), msg);
			}
			/* A rejected request attaches nothing. */
			for (size_t i = first; results && i < last; i++)
				results[i] = err;
			for (size_t i = last; results && i < n; i++)
				results[i] = -ECANCELED;
			return err;
		}
		first = last;
	} while (first < n);
	return 0;
}

int bft_nl_detach(struct bft_nl *nl, uint32_t tgid)
{
	char buf[256];
	struct nlmsghdr *nlh;
	int err = check_control(nl);

	if (err)
		return err;
	nlh = put_cmd(nl, buf, BFT_CMD_DETACH, NLM_F_ACK);
	if (tgid)
		mnl_attr_put_u32(nlh, BFT_A_TGID, tgid);
	return transact(nl, nlh, NULL, NULL);
}

/* ---- mode commands ------------------------------------------------------- */

struct mode_ctx {
	uint8_t mode;
	bool seen;
};

static int mode_parse(struct bft_nl *nl, const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[BFT_A_MAX + 1];
	struct mode_ctx *m = arg;

	if (parse_msg(nl, nlh, tb, BFT_A_MAX, top_types, "mode", NULL))
		return -EPROTO;
	if (!tb[BFT_A_MODE])
		return set_err(nl, -EPROTO, "mode reply without a mode");
	m->mode = mnl_attr_get_u8(tb[BFT_A_MODE]);
	m->seen = true;
	return 0;
}

static int mode_cmd(struct bft_nl *nl, int cmd, bool persist, uint8_t *mode)
{
	struct mode_ctx m = { 0 };
	struct nlmsghdr *nlh;
	char buf[256];
	int err = check_control(nl);

	if (err)
		return err;
	if (cmd < BFT_CMD_START || cmd > BFT_CMD_UNSUSPEND)
		return set_err(nl, -EINVAL, "command %d is not a mode command", cmd);
	nlh = put_cmd(nl, buf, (uint8_t)cmd, NLM_F_ACK);
	if (persist)
		mnl_attr_put(nlh, BFT_A_PERSIST, 0, NULL);
	err = transact(nl, nlh, mode_parse, &m);
	if (err)
		return err;
	if (!m.seen)
		return set_err(nl, -EPROTO, "%s: no reply", bft_cmd_name((unsigned int)cmd));
	if (mode)
		*mode = m.mode;
	return 0;
}

int bft_nl_mode_cmd(struct bft_nl *nl, int cmd, uint8_t *mode)
{
	return mode_cmd(nl, cmd, false, mode);
}

int bft_nl_start(struct bft_nl *nl, bool persist, uint8_t *mode)
{
	return mode_cmd(nl, BFT_CMD_START, persist, mode);
}

/* ---- per-CPU statistics (status and heartbeat) --------------------------- */

static int parse_cpu_stats(struct bft_nl *nl, const struct nlattr *stats,
			   struct bft_nl_cpu_stats **cpus, uint32_t *nr)
{
	const struct nlattr *c, *st[BFT_S_MAX + 1];
	struct bft_nl_cpu_stats *v = NULL;
	uint32_t n = 0, cap = 0;

	mnl_attr_for_each_nested(c, stats) {
		struct bft_nl_cpu_stats *s;

		if (mnl_attr_get_type(c) != BFT_A_CPU)
			continue;
		if (n == cap) {
			struct bft_nl_cpu_stats *nv;

			cap = cap ? 2 * cap : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return set_err(nl, -ENOMEM, "out of memory");
			}
			v = nv;
		}
		s = &v[n];
		memset(s, 0, sizeof(*s));
		if (mnl_attr_validate(c, MNL_TYPE_NESTED) < 0 ||
		    parse_nest(nl, c, st, BFT_S_MAX, stat_types, "cpu stats",
			       &s->have)) {
			free(v);
			return set_err(nl, -EPROTO, "malformed per-CPU statistics");
		}
		take_u32(st[BFT_S_CPU], &s->cpu);
		take_u64(st[BFT_S_PRODUCED], &s->produced);
		take_u64(st[BFT_S_WRITTEN], &s->written);
		take_u64(st[BFT_S_LOST], &s->lost);
		take_u64(st[BFT_S_SUSPENDED], &s->suspended);
		take_u64(st[BFT_S_BYTES_WRITTEN], &s->bytes_written);
		take_u64(st[BFT_S_BYTES_READ], &s->bytes_read);
		take_u32(st[BFT_S_USED], &s->used);
		take_u32(st[BFT_S_SIZE], &s->size);
		if (st[BFT_S_READER])
			s->reader = mnl_attr_get_u8(st[BFT_S_READER]);
		n++;
	}
	free(*cpus);
	*cpus = v;
	*nr = n;
	return 0;
}

/* ---- GET_STATUS ---------------------------------------------------------- */

static int status_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
			void *arg)
{
	const struct nlattr *tb[BFT_A_MAX + 1];
	struct bft_nl_status *st = arg;

	if (parse_msg(nl, nlh, tb, BFT_A_MAX, top_types, "status", &st->have))
		return -EPROTO;
	if (!tb[BFT_A_MODE])
		return set_err(nl, -EPROTO, "status reply without a mode");
	st->mode = mnl_attr_get_u8(tb[BFT_A_MODE]);
	take_u32(tb[BFT_A_NR_PROBES], &st->nr_probes);
	take_u32(tb[BFT_A_NR_TARGETS], &st->nr_targets);
	take_u32(tb[BFT_A_OWNER], &st->owner);
	if (tb[BFT_A_CPU_STATS])
		return parse_cpu_stats(nl, tb[BFT_A_CPU_STATS], &st->cpus,
				       &st->nr_cpus);
	return 0;
}

int bft_nl_get_status(struct bft_nl *nl, struct bft_nl_status *st)
{
	char buf[256];
	int err = check_control(nl);

	memset(st, 0, sizeof(*st));
	if (err)
		return err;
	/*
	 * No ACK: the reply says it all, and a failure comes as an error
	 * message anyway.  One receive fewer for what the collector asks
	 * ten times a second while sampling.
	 */
	err = transact(nl, put_cmd(nl, buf, BFT_CMD_GET_STATUS, 0),
		       status_parse, st);
	if (err)
		bft_nl_status_free(st);
	return err;
}

void bft_nl_status_free(struct bft_nl_status *st)
{
	free(st->cpus);
	st->cpus = NULL;
	st->nr_cpus = 0;
}

/* ---- GET_OPT / SET_OPT --------------------------------------------------- */

struct opt_ctx {
	struct bft_nl_opt *out;
	size_t cap, n;
};

static int opt_parse(struct bft_nl *nl, const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *a, *ot[BFT_O_MAX_ATTR + 1];
	struct opt_ctx *o = arg;

	/* BFT_A_OPT repeats, so this walks the message instead of a table. */
	mnl_attr_for_each(a, nlh, GENL_HDRLEN) {
		struct bft_nl_opt v = { 0 };

		if (mnl_attr_get_type(a) != BFT_A_OPT)
			continue;
		if (mnl_attr_validate(a, MNL_TYPE_NESTED) < 0 ||
		    parse_nest(nl, a, ot, BFT_O_MAX_ATTR, opt_types, "option", NULL))
			return set_err(nl, -EPROTO, "malformed option");
		if (!ot[BFT_O_ID] || !ot[BFT_O_VALUE])
			return set_err(nl, -EPROTO, "option without id or value");
		v.id = mnl_attr_get_u32(ot[BFT_O_ID]);
		v.value = mnl_attr_get_u64(ot[BFT_O_VALUE]);
		take_u64(ot[BFT_O_MIN], &v.min);
		take_u64(ot[BFT_O_MAX], &v.max);
		take_u32(ot[BFT_O_FLAGS], &v.flags);
		if (o->n < o->cap)
			o->out[o->n] = v;
		o->n++;
	}
	return 0;
}

static int opt_request(struct bft_nl *nl, uint8_t cmd, uint32_t id,
		       const uint64_t *value, struct opt_ctx *o)
{
	char buf[256];
	struct nlmsghdr *nlh;
	int err = check_control(nl);

	if (err)
		return err;
	nlh = put_cmd(nl, buf, cmd, NLM_F_ACK);
	if (id)
		mnl_attr_put_u32(nlh, BFT_A_OPT_ID, id);
	if (value)
		mnl_attr_put_u64(nlh, BFT_A_OPT_VALUE, *value);
	return transact(nl, nlh, opt_parse, o);
}

static int opt_single(struct bft_nl *nl, uint8_t cmd, uint32_t id,
		      const uint64_t *value, struct bft_nl_opt *out)
{
	struct bft_nl_opt v;
	struct opt_ctx o = { &v, 1, 0 };
	int err = opt_request(nl, cmd, id, value, &o);

	if (err)
		return err;
	if (o.n != 1 || v.id != id)
		return set_err(nl, -EPROTO, "%s %s: reply holds %zu options",
			       bft_cmd_name(cmd), bft_opt_name(id), o.n);
	if (out)
		*out = v;
	return 0;
}

int bft_nl_get_opt(struct bft_nl *nl, uint32_t id, struct bft_nl_opt *out)
{
	if (!id) {
		clear_err(nl);
		return set_err(nl, -EINVAL, "option id 0: use bft_nl_get_opts()");
	}
	return opt_single(nl, BFT_CMD_GET_OPT, id, NULL, out);
}

int bft_nl_get_opts(struct bft_nl *nl, struct bft_nl_opt *out, size_t cap,
		    size_t *n)
{
	struct opt_ctx o = { out, cap, 0 };
	int err = opt_request(nl, BFT_CMD_GET_OPT, 0, NULL, &o);

	if (!err && n)
		*n = o.n;
	return err;
}

int bft_nl_set_opt(struct bft_nl *nl, uint32_t id, uint64_t value,
		   struct bft_nl_opt *out)
{
	return opt_single(nl, BFT_CMD_SET_OPT, id, &value, out);
}

/* ---- GET_METHODS (dump) -------------------------------------------------- */

struct methods_ctx {
	bft_nl_method_cb cb;
	void *arg;
};

/*
 * The contract puts BFT_A_TGID and the BFT_P_* side by side at the top of a
 * GET_METHODS message, and BFT_A_TGID has the number of BFT_P_NAME: the
 * first attribute of that number is the tgid, the next one the name, in
 * the order the contract lists them.  A BFT_A_PROBE nest holding the
 * BFT_P_* is understood too, should the module send that instead.
 */
_Static_assert((int)BFT_A_TGID == (int)BFT_P_NAME, "see method_parse()");
_Static_assert((int)BFT_A_PROBE == (int)BFT_P_PAD, "see method_parse()");
_Static_assert((int)BFT_P_METHOD_ID == (int)BFT_A_NR_CPUS, "see event_parse()");

static void method_take(const struct nlattr *const *pt, struct bft_nl_method *v)
{
	take_u32(pt[BFT_P_METHOD_ID], &v->method_id);
	take_u64(pt[BFT_P_OFFSET], &v->offset);
	take_u32(pt[BFT_P_FLAGS], &v->flags);
	take_u64(pt[BFT_P_HITS], &v->hits);
	if (pt[BFT_P_PATH])
		v->path = mnl_attr_get_str(pt[BFT_P_PATH]);
	if (pt[BFT_P_NAME])
		v->name = mnl_attr_get_str(pt[BFT_P_NAME]);
}

static int method_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
			void *arg)
{
	const struct nlattr *pt[BFT_P_MAX + 1] = { 0 }, *a;
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(nlh);
	struct bft_nl_method v = { .path = "", .name = "" };
	struct methods_ctx *m = arg;
	bool have_tgid = false;
	int ret;

	if (g->cmd != BFT_CMD_GET_METHODS)
		return set_err(nl, -EPROTO, "unexpected command %u in methods dump",
			       g->cmd);
	mnl_attr_for_each(a, nlh, GENL_HDRLEN) {
		unsigned int type = mnl_attr_get_type(a);

		if (type == BFT_A_TGID && !have_tgid) {
			if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
				return set_err(nl, -EPROTO, "malformed tgid in methods dump");
			v.tgid = mnl_attr_get_u32(a);
			have_tgid = true;
		} else if (type == BFT_A_PROBE && mnl_attr_get_payload_len(a)) {
			const struct nlattr *nt[BFT_P_MAX + 1];

			if (mnl_attr_validate(a, MNL_TYPE_NESTED) < 0 ||
			    parse_nest(nl, a, nt, BFT_P_MAX, probe_types, "method", NULL))
				return set_err(nl, -EPROTO, "malformed probe in methods dump");
			for (unsigned int i = 0; i <= BFT_P_MAX; i++)
				if (nt[i])
					pt[i] = nt[i];
		} else if (type <= BFT_P_MAX) {
			struct attr_tab t = { nl, pt, probe_types, BFT_P_MAX, "method", 0 };

			if (attr_tab_cb(a, &t) != MNL_CB_OK)
				return -EPROTO;
		}
	}
	method_take(pt, &v);
	ret = m->cb ? m->cb(&v, m->arg) : 0;
	if (ret < 0)
		return set_err(nl, ret, "methods dump stopped by its callback (%s)",
			       strerror(-ret));
	return 0;
}

int bft_nl_get_methods(struct bft_nl *nl, bft_nl_method_cb cb, void *arg)
{
	struct methods_ctx m = { cb, arg };
	char buf[256];
	int err = check_control(nl);

	if (err)
		return err;
	return transact(nl, put_cmd(nl, buf, BFT_CMD_GET_METHODS, NLM_F_DUMP),
			method_parse, &m);
}

/* ---- GET_EXCEPTIONS (dump) ---------------------------------------------- */

struct exc_ctx {
	bft_nl_exception_cb cb;
	void *arg;
	int count;
};

/*
 * One type: BFT_A_TGID and a BFT_A_EXC nest of BFT_X_ID and BFT_X_NAME.
 * Attributes of a newer module are ignored.  No struct bft_nl here, so a
 * test can parse bytes it made.
 */
static int exc_parse_one(const struct nlmsghdr *nlh, struct exc_ctx *x,
			 char *err, size_t errlen)
{
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(nlh);
	struct bft_nl_exception e = { 0 };
	const struct nlattr *a, *n;
	bool have_exc = false;
	int ret;

	if (mnl_nlmsg_get_payload_len(nlh) < GENL_HDRLEN) {
		snprintf(err, errlen, "exceptions dump: message of %u bytes",
			 nlh->nlmsg_len);
		return -EPROTO;
	}
	if (g->cmd != BFT_CMD_GET_EXCEPTIONS) {
		snprintf(err, errlen, "unexpected command %u in exceptions dump",
			 g->cmd);
		return -EPROTO;
	}
	mnl_attr_for_each(a, nlh, GENL_HDRLEN) {
		switch (mnl_attr_get_type(a)) {
		case BFT_A_TGID:
			if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
				goto bad;
			e.tgid = mnl_attr_get_u32(a);
			break;
		case BFT_A_EXC:
			if (mnl_attr_validate(a, MNL_TYPE_NESTED) < 0)
				goto bad;
			have_exc = true;
			mnl_attr_for_each_nested(n, a) {
				unsigned int t = mnl_attr_get_type(n);

				if (t == BFT_X_ID) {
					if (mnl_attr_validate(n, MNL_TYPE_U32) < 0)
						goto bad;
					e.id = mnl_attr_get_u32(n);
				} else if (t == BFT_X_NAME) {
					if (mnl_attr_validate(n, MNL_TYPE_NUL_STRING) < 0 ||
					    mnl_attr_get_payload_len(n) > BFT_EXC_NAME_MAX)
						goto bad;
					e.name = mnl_attr_get_str(n);
				}
			}
			break;
		}
	}
	if (!have_exc || !e.id || !e.name) {
		snprintf(err, errlen, "exceptions dump: an entry without %s",
			 !have_exc ? "BFT_A_EXC" : !e.id ? "a type id (>= 1)" :
			 "a name");
		return -EPROTO;
	}
	x->count++;
	ret = x->cb ? x->cb(&e, x->arg) : 0;
	if (ret < 0)
		snprintf(err, errlen,
			 "exceptions dump stopped by its callback (%s)",
			 strerror(-ret));
	return ret < 0 ? ret : 0;
bad:
	snprintf(err, errlen, "malformed attribute %u in exceptions dump",
		 mnl_attr_get_type(a));
	return -EPROTO;
}

static int exc_parse(struct bft_nl *nl, const struct nlmsghdr *nlh, void *arg)
{
	return exc_parse_one(nlh, arg, nl->errmsg, sizeof(nl->errmsg));
}

/* An old module knows no such command: that is a table without types. */
static bool exc_unsupported(int err)
{
	return err == -EOPNOTSUPP || err == -EINVAL;
}

int bft_nl_get_exceptions(struct bft_nl *nl, bft_nl_exception_cb cb,
			  void *arg)
{
	struct exc_ctx x = { cb, arg, 0 };
	char buf[256];
	int err = check_control(nl);

	if (err)
		return err;
	err = transact(nl, put_cmd(nl, buf, BFT_CMD_GET_EXCEPTIONS, NLM_F_DUMP),
		       exc_parse, &x);
	if (exc_unsupported(err) && !x.count) {
		clear_err(nl);
		return 0;
	}
	return err;
}

int bft_nl_parse_exceptions(const void *buf, size_t len,
			    bft_nl_exception_cb cb, void *arg, char *err,
			    size_t errlen)
{
	const struct nlmsghdr *nlh = buf;
	struct exc_ctx x = { cb, arg, 0 };
	int left = len > INT32_MAX ? INT32_MAX : (int)len;

	if (errlen)
		err[0] = '\0';
	for (; nlmsg_fits(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
		int r;

		if (nlh->nlmsg_type == NLMSG_DONE)
			return x.count;
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

			if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*e)) {
				snprintf(err, errlen, "truncated netlink error");
				return -EPROTO;
			}
			if (!e->error || (exc_unsupported(e->error) && !x.count))
				return x.count;
			snprintf(err, errlen, "exceptions dump: %s",
				 strerror(-wire_errno(e->error)));
			return wire_errno(e->error);
		}
		if (nlh->nlmsg_type < NLMSG_MIN_TYPE)
			continue;
		r = exc_parse_one(nlh, &x, err, errlen);
		if (r)
			return r;
	}
	if (left) {
		snprintf(err, errlen, "exceptions dump: %d bytes of a truncated "
			 "message", left);
		return -EPROTO;
	}
	return x.count;
}

/* ---- events -------------------------------------------------------------- */

static int event_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
		       struct bft_nl_event *ev)
{
	const struct nlattr *tb[BFT_A_MAX + 1];

	memset(ev, 0, sizeof(*ev));
	if (parse_msg(nl, nlh, tb, BFT_A_MAX, top_types, "event", &ev->have))
		return -EPROTO;
	if (!tb[BFT_A_EVENT])
		return set_err(nl, -EPROTO, "event without BFT_A_EVENT");
	ev->type = mnl_attr_get_u8(tb[BFT_A_EVENT]);
	take_u8(tb[BFT_A_MODE], &ev->mode);
	take_u32(tb[BFT_A_TGID], &ev->tgid);
	take_u32(tb[BFT_A_FILL_PERMILLE], &ev->fill_permille);
	take_u32(tb[BFT_A_NR_PROBES], &ev->nr_probes);
	if (tb[BFT_A_ERRNO])
		ev->error = (int32_t)mnl_attr_get_u32(tb[BFT_A_ERRNO]);
	/*
	 * PROBE_FAILED carries BFT_P_METHOD_ID at the top, where its number
	 * is BFT_A_NR_CPUS's; or inside a BFT_A_PROBE nest.
	 */
	if (ev->type == BFT_EV_PROBE_FAILED) {
		if (tb[BFT_A_PROBE]) {
			const struct nlattr *pt[BFT_P_MAX + 1];

			if (parse_nest(nl, tb[BFT_A_PROBE], pt, BFT_P_MAX,
				       probe_types, "event probe", NULL))
				return -EPROTO;
			take_u32(pt[BFT_P_METHOD_ID], &ev->method_id);
		} else {
			take_u32(tb[BFT_P_METHOD_ID], &ev->method_id);
		}
	}
	if (tb[BFT_A_CPU_STATS])
		return parse_cpu_stats(nl, tb[BFT_A_CPU_STATS], &ev->cpus,
				       &ev->nr_cpus);
	return 0;
}

int bft_nl_event_recv(struct bft_nl *nl, struct bft_nl_event *ev,
		      int timeout_ms)
{
	int64_t deadline = timeout_ms > 0 ? bft_mono_ms() + timeout_ms : 0;

	clear_err(nl);
	if (!nl->events)
		return set_err(nl, -EINVAL, "not an events handle");
	for (;;) {
		/* First whatever the last datagram still holds. */
		while (nl->ev_off < nl->ev_len) {
			const struct nlmsghdr *nlh =
				(const void *)(nl->rbuf + nl->ev_off);
			int left = (int)(nl->ev_len - nl->ev_off);
			const struct genlmsghdr *g;

			if (!nlmsg_fits(nlh, left)) {
				nl->ev_len = 0;
				break;
			}
			nl->ev_off += MNL_ALIGN(nlh->nlmsg_len);
			if (nlh->nlmsg_type != nl->family ||
			    mnl_nlmsg_get_payload_len(nlh) < GENL_HDRLEN)
				continue;
			g = mnl_nlmsg_get_payload(nlh);
			if (g->cmd != BFT_CMD_EVENT)
				continue;
			return event_parse(nl, nlh, ev);
		}
		nl->ev_off = nl->ev_len = 0;

		struct pollfd pfd = { .fd = bft_nl_fd(nl), .events = POLLIN };
		int wait = timeout_ms < 0 ? -1 : 0;
		ssize_t len;
		int r;

		if (timeout_ms > 0) {
			int64_t left = deadline - bft_mono_ms();

			wait = left > 0 ? (int)left : 0;
		}
		r = poll(&pfd, 1, wait);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return set_err(nl, -errno, "poll: %s", strerror(errno));
		}
		if (r == 0)
			return set_err(nl, -ETIMEDOUT, "no event within %d ms",
				       timeout_ms);
		len = recv(pfd.fd, nl->rbuf, sizeof(nl->rbuf), MSG_DONTWAIT);
		if (len < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			if (errno == ENOBUFS)
				return set_err(nl, -ENOBUFS,
					       "events lost: the socket overran");
			return set_err(nl, -errno, "netlink receive: %s",
				       strerror(errno));
		}
		nl->ev_len = (size_t)len;
	}
}

void bft_nl_event_free(struct bft_nl_event *ev)
{
	free(ev->cpus);
	ev->cpus = NULL;
	ev->nr_cpus = 0;
}

/* ---- replies from bytes (tests, fuzzing) ------------------------------- */

int bft_nl_parse_reply(uint8_t cmd, uint16_t family, const void *buf,
		       size_t len, char *err, size_t errlen)
{
	struct bft_nl *nl = calloc(1, sizeof(*nl));
	struct xfer x = { .nl = nl, .type = family, .cmd = cmd };
	struct family_info fi = { 0 };
	struct bft_nl_caps caps;
	int results[64];
	struct attach_ctx actx = { results, 64 };
	struct mode_ctx mctx = { 0 };
	struct bft_nl_status st = { 0 };
	struct bft_nl_opt opts[16];
	struct opt_ctx octx = { opts, 16, 0 };
	struct methods_ctx methods = { NULL, NULL };
	struct bft_nl_event ev;
	int rc;

	if (errlen)
		err[0] = '\0';
	if (!nl)
		return -ENOMEM;
	clear_err(nl);
	nl->family = family;
	/* Where a datagram lands: aligned, and no larger than a socket's. */
	if (len > sizeof(nl->rbuf)) {
		rc = set_err(nl, -EMSGSIZE, "netlink reply larger than %d bytes",
			     BFT_NL_RCVBUF);
		goto out;
	}
	memcpy(nl->rbuf, buf, len);
	buf = nl->rbuf;
	switch (cmd) {
	case BFT_CMD_UNSPEC:	/* the controller's answer naming the family */
		x.type = GENL_ID_CTRL;
		x.parse = family_parse;
		x.arg = &fi;
		break;
	case BFT_CMD_GET_CAPS:
		memset(&caps, 0, sizeof(caps));
		x.parse = caps_parse;
		x.arg = &caps;
		break;
	case BFT_CMD_ATTACH:
		x.parse = attach_parse;
		x.arg = &actx;
		break;
	case BFT_CMD_START:
	case BFT_CMD_STOP:
	case BFT_CMD_PAUSE:
	case BFT_CMD_UNPAUSE:
	case BFT_CMD_SUSPEND:
	case BFT_CMD_UNSUSPEND:
		x.parse = mode_parse;
		x.arg = &mctx;
		break;
	case BFT_CMD_GET_STATUS:
		x.parse = status_parse;
		x.arg = &st;
		break;
	case BFT_CMD_GET_OPT:
	case BFT_CMD_SET_OPT:
		x.parse = opt_parse;
		x.arg = &octx;
		break;
	case BFT_CMD_GET_METHODS:
		x.parse = method_parse;
		x.arg = &methods;
		break;
	case BFT_CMD_EVENT: {
		/* Events come alone, not as a reply: each message parsed. */
		const struct nlmsghdr *nlh = buf;
		int left = len > INT32_MAX ? INT32_MAX : (int)len;

		for (rc = 0; !rc && nlmsg_fits(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left)) {
			if (nlh->nlmsg_type != family ||
			    mnl_nlmsg_get_payload_len(nlh) < GENL_HDRLEN)
				continue;
			rc = event_parse(nl, nlh, &ev);
			bft_nl_event_free(&ev);
		}
		goto out;
	}
	default:
		free(nl);
		snprintf(err, errlen, "no parser for command %u", cmd);
		return -EINVAL;
	}
	reply_run(&x, buf, len, 0);
	rc = x.err;
	if (!rc && !x.done)
		rc = set_err(nl, -ENODATA, "the reply does not end");
	bft_nl_status_free(&st);
out:
	if (rc && errlen)
		snprintf(err, errlen, "%s", nl->errmsg);
	free(nl);
	return rc;
}
