// SPDX-License-Identifier: GPL-2.0
/*
 * bft_nl_exceptions: the BFT_CMD_GET_EXCEPTIONS dump, the module's table
 * of C++ exception types, from a socket or from bytes.
 */
#include "capture/bft_nl_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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
	int err = bft_nl_control_check(nl);

	if (err)
		return err;
	err = bft_nl_transact(nl, bft_nl_cmd_put(nl, buf, BFT_CMD_GET_EXCEPTIONS, NLM_F_DUMP),
			      exc_parse, &x);
	if (exc_unsupported(err) && !x.count) {
		bft_nl_err_clear(nl);
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
	for (; bft_nl_msg_fits(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
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
				 strerror(-bft_nl_wire_errno(e->error)));
			return bft_nl_wire_errno(e->error);
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
