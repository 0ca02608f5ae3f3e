// SPDX-License-Identifier: GPL-2.0
/*
 * bft_nl_sock: the socket and message layer of the netlink client
 * (bft_nl.h) that every command shares: opening a handle (resolving the
 * family), one exchange, and the errors with the kernel's extended ACK.
 * The commands live in bft_nl_<command>.c.
 *
 * Every exchange is: build one request, send it, then read until the
 * message that ends it (the ACK or error for a do-command, NLMSG_DONE for a
 * dump).  Each received message is checked against our port id and the
 * request's sequence number before libmnl's mnl_cb_run2() dispatches it:
 * data messages to a per-command parser, control messages to our own
 * handlers, which read the extended ACK that plain libmnl ignores.
 */
#define _GNU_SOURCE
#include "capture/bft_nl_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Generous: attaching a thousand probes registers a thousand uprobes. */
#define BFT_NL_REPLY_TIMEOUT_S	60

/* ---- errors ------------------------------------------------------------ */

void bft_nl_err_clear(struct bft_nl *nl)
{
	nl->errmsg[0] = '\0';
	nl->err_extack = false;
	nl->erroff = -1;
}

__attribute__((format(printf, 3, 4)))
int bft_nl_err_set(struct bft_nl *nl, int err, const char *fmt, ...)
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

/* ---- one exchange ------------------------------------------------------ */

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
static void extack_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
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
int bft_nl_wire_errno(int32_t e)
{
	if (e < -4095 || e > 4095)
		return -EPROTO;
	return e < 0 ? e : -e;
}

static void errmsg_default(struct bft_nl_xfer *x)
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
		bft_nl_err_set(nl, x->err, "%s: %s (needs CAP_PERFMON or CAP_SYS_ADMIN%s)",
			       bft_cmd_name(x->cmd), strerror(EPERM),
			       x->cmd == BFT_CMD_ATTACH ? ", and ptrace access" : "");
	else
		bft_nl_err_set(nl, x->err, "%s", strerror(-x->err));
}

static int ctl_error(const struct nlmsghdr *nlh, void *data)
{
	struct bft_nl_xfer *x = data;
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	size_t plen = mnl_nlmsg_get_payload_len(nlh);
	size_t echoed;

	if (plen < sizeof(*e)) {
		x->err = bft_nl_err_set(x->nl, -EBADMSG, "truncated netlink error message");
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
		x->err = bft_nl_wire_errno(e->error);
		extack_parse(x->nl, nlh, sizeof(e->error) + echoed);
		errmsg_default(x);
	}
	return MNL_CB_ERROR;
}

/* A dump that fails half-way says so in NLMSG_DONE: an int, then TLVs. */
static int ctl_done(const struct nlmsghdr *nlh, void *data)
{
	struct bft_nl_xfer *x = data;
	int err = 0;

	x->done = true;
	if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(int))
		memcpy(&err, mnl_nlmsg_get_payload(nlh), sizeof(int));
	if (err && !x->err) {
		x->err = bft_nl_wire_errno(err);
		extack_parse(x->nl, nlh, sizeof(int));
		errmsg_default(x);
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
	struct bft_nl_xfer *x = data;
	int err;

	/* After a failure keep reading to the end, but parse nothing. */
	if (x->err)
		return MNL_CB_OK;
	if (nlh->nlmsg_type != x->type ||
	    mnl_nlmsg_get_payload_len(nlh) < GENL_HDRLEN) {
		x->err = bft_nl_err_set(x->nl, -EPROTO,
					"unexpected netlink message type %u length %u",
					nlh->nlmsg_type, nlh->nlmsg_len);
		return MNL_CB_OK;
	}
	err = x->parse ? x->parse(x->nl, nlh, x->arg) : 0;
	if (err) {
		x->err = err;
		if (!x->nl->errmsg[0])
			bft_nl_err_set(x->nl, err, "%s", strerror(-err));
	}
	if (x->single)
		x->done = true;
	return MNL_CB_OK;
}

static int reply_recv(struct bft_nl *nl, ssize_t *len)
{
	*len = mnl_socket_recvfrom(nl->sock, nl->rbuf, sizeof(nl->rbuf));
	if (*len >= 0)
		return 0;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return bft_nl_err_set(nl, -ETIMEDOUT, "no reply from bftrace within %d s",
				      BFT_NL_REPLY_TIMEOUT_S);
	if (errno == ENOSPC)
		return bft_nl_err_set(nl, -EMSGSIZE,
				      "netlink reply larger than %d bytes", BFT_NL_RCVBUF);
	return bft_nl_err_set(nl, -errno, "netlink receive: %s", strerror(errno));
}

/*
 * mnl_nlmsg_ok() compares nlmsg_len as an int: a length of 2^31 or more
 * passes, and mnl_nlmsg_next() then jumps gigabytes ahead.  Compared
 * unsigned here.
 */
bool bft_nl_msg_fits(const struct nlmsghdr *nlh, int left)
{
	return left >= (int)sizeof(*nlh) && nlh->nlmsg_len >= sizeof(*nlh) &&
	       nlh->nlmsg_len <= (unsigned int)left;
}

/* The messages of one datagram of a reply, for x. */
void bft_nl_reply_run(struct bft_nl_xfer *x, const void *buf, size_t len,
		      unsigned int seq)
{
	const struct nlmsghdr *nlh = buf;
	int left = len > INT32_MAX ? INT32_MAX : (int)len;

	for (; bft_nl_msg_fits(nlh, left) && !x->done;
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
int bft_nl_transact(struct bft_nl *nl, struct nlmsghdr *req,
		    int (*parse)(struct bft_nl *, const struct nlmsghdr *,
				 void *),
		    void *arg)
{
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(req);
	struct bft_nl_xfer x = { .nl = nl, .parse = parse, .arg = arg,
			  .type = req->nlmsg_type,
			  .cmd = req->nlmsg_type == nl->family ? g->cmd : 0,
			  .single = !(req->nlmsg_flags &
				      (NLM_F_ACK | NLM_F_DUMP)) };
	unsigned int seq = req->nlmsg_seq;

	if (mnl_socket_sendto(nl->sock, req, req->nlmsg_len) < 0)
		return bft_nl_err_set(nl, -errno, "netlink send (%u bytes): %s",
				      req->nlmsg_len, strerror(errno));
	while (!x.done) {
		ssize_t len;
		int err;

		err = reply_recv(nl, &len);
		if (err)
			return err;
		bft_nl_reply_run(&x, nl->rbuf, (size_t)len, seq);
	}
	return x.err;
}

static struct nlmsghdr *request_put(struct bft_nl *nl, void *buf,
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

struct nlmsghdr *bft_nl_cmd_put(struct bft_nl *nl, void *buf, uint8_t cmd,
				uint16_t flags)
{
	return request_put(nl, buf, nl->family, cmd, BFT_GENL_VERSION, flags);
}

/* ---- open: family resolution ------------------------------------------- */

static int groups_parse(struct bft_nl *nl, const struct nlattr *groups,
			struct bft_nl_family_info *fi)
{
	const struct nlattr *g;

	mnl_attr_for_each_nested(g, groups) {
		static const enum mnl_attr_data_type types[CTRL_ATTR_MCAST_GRP_MAX + 1] = {
			[CTRL_ATTR_MCAST_GRP_NAME] = MNL_TYPE_NUL_STRING,
			[CTRL_ATTR_MCAST_GRP_ID] = MNL_TYPE_U32,
		};
		const struct nlattr *tb[CTRL_ATTR_MCAST_GRP_MAX + 1];

		if (mnl_attr_validate(g, MNL_TYPE_NESTED) < 0)
			return bft_nl_err_set(nl, -EPROTO, "malformed multicast group");
		if (bft_nl_nest_parse(nl, g, tb, CTRL_ATTR_MCAST_GRP_MAX, types,
				      "multicast group", NULL))
			return -EPROTO;
		if (tb[CTRL_ATTR_MCAST_GRP_NAME] && tb[CTRL_ATTR_MCAST_GRP_ID] &&
		    !strcmp(mnl_attr_get_str(tb[CTRL_ATTR_MCAST_GRP_NAME]),
			    BFT_MCGRP_EVENTS))
			fi->group = mnl_attr_get_u32(tb[CTRL_ATTR_MCAST_GRP_ID]);
	}
	return 0;
}

int bft_nl_family_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
			void *arg)
{
	static const enum mnl_attr_data_type types[CTRL_ATTR_MAX + 1] = {
		[CTRL_ATTR_FAMILY_ID]	= MNL_TYPE_U16,
		[CTRL_ATTR_FAMILY_NAME]	= MNL_TYPE_NUL_STRING,
		[CTRL_ATTR_VERSION]	= MNL_TYPE_U32,
		[CTRL_ATTR_MCAST_GROUPS] = MNL_TYPE_NESTED,
	};
	const struct nlattr *tb[CTRL_ATTR_MAX + 1];
	struct bft_nl_family_info *fi = arg;

	if (bft_nl_msg_parse(nl, nlh, tb, CTRL_ATTR_MAX, types, "controller", NULL))
		return -EPROTO;
	if (!tb[CTRL_ATTR_FAMILY_ID] || !tb[CTRL_ATTR_FAMILY_NAME] ||
	    strcmp(mnl_attr_get_str(tb[CTRL_ATTR_FAMILY_NAME]), BFT_GENL_NAME))
		return bft_nl_err_set(nl, -EPROTO, "controller reply names no family \"%s\"",
				      BFT_GENL_NAME);
	nl->family = mnl_attr_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
	if (tb[CTRL_ATTR_VERSION])
		nl->family_version = mnl_attr_get_u32(tb[CTRL_ATTR_VERSION]);
	fi->found_family = true;
	if (tb[CTRL_ATTR_MCAST_GROUPS])
		return groups_parse(nl, tb[CTRL_ATTR_MCAST_GROUPS], fi);
	return 0;
}

static int family_resolve(struct bft_nl *nl)
{
	char buf[256];
	struct nlmsghdr *nlh;
	struct bft_nl_family_info fi = { 0 };
	int err;

	nlh = request_put(nl, buf, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, NLM_F_ACK);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, BFT_GENL_NAME);
	err = bft_nl_transact(nl, nlh, bft_nl_family_parse, &fi);
	if (err == -ENOENT)
		return bft_nl_err_set(nl, err,
				      "generic netlink family \"%s\" not found: is bftrace.ko loaded?",
				      BFT_GENL_NAME);
	if (err)
		return err;
	if (!fi.found_family)
		return bft_nl_err_set(nl, -EPROTO, "controller sent no family id for \"%s\"",
				      BFT_GENL_NAME);
	nl->events_group = fi.group;
	return 0;
}

static int handle_open(struct bft_nl **nlp, bool events, char *err,
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
	bft_nl_err_clear(nl);
	nl->events = events;
	/* Sequence numbers that a previous process's leftovers cannot match. */
	nl->seq = (unsigned int)time(NULL) ^ ((unsigned int)getpid() << 16);

	nl->sock = mnl_socket_open2(NETLINK_GENERIC, SOCK_CLOEXEC);
	if (!nl->sock) {
		ret = bft_nl_err_set(nl, -errno, "cannot open a generic netlink socket: %s",
				     strerror(errno));
		goto fail;
	}
	if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = bft_nl_err_set(nl, -errno, "cannot bind the netlink socket: %s",
				     strerror(errno));
		goto fail;
	}
	nl->portid = mnl_socket_get_portid(nl->sock);
	/* Both are best effort: without them errors just lose their text. */
	mnl_socket_setsockopt(nl->sock, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(nl->sock, NETLINK_CAP_ACK, &one, sizeof(one));
	setsockopt(mnl_socket_get_fd(nl->sock), SOL_SOCKET, SO_RCVTIMEO, &tv,
		   sizeof(tv));

	ret = family_resolve(nl);
	if (ret)
		goto fail;
	if (events) {
		int grp;

		if (!nl->events_group) {
			ret = bft_nl_err_set(nl, -ENOENT,
					     "family \"%s\" has no multicast group \"%s\"",
					     BFT_GENL_NAME, BFT_MCGRP_EVENTS);
			goto fail;
		}
		grp = (int)nl->events_group;
		if (mnl_socket_setsockopt(nl->sock, NETLINK_ADD_MEMBERSHIP, &grp,
					  sizeof(grp)) < 0) {
			ret = bft_nl_err_set(nl, -errno, "cannot join group \"%s\": %s",
					     BFT_MCGRP_EVENTS, strerror(errno));
			goto fail;
		}
	}
	bft_nl_err_clear(nl);
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
	return handle_open(nlp, false, err, errlen);
}

int bft_nl_open_events(struct bft_nl **nlp, char *err, size_t errlen)
{
	return handle_open(nlp, true, err, errlen);
}

void bft_nl_close(struct bft_nl *nl)
{
	if (!nl)
		return;
	if (nl->sock)
		mnl_socket_close(nl->sock);
	free(nl);
}

int bft_nl_control_check(struct bft_nl *nl)
{
	bft_nl_err_clear(nl);
	if (nl->events)
		return bft_nl_err_set(nl, -EINVAL,
				      "requests need a control handle, not an events handle");
	return 0;
}
