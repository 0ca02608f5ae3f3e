// SPDX-License-Identifier: GPL-2.0
/*
 * bft_nl_parse: replies from bytes (tests, fuzzing).  The bytes go through
 * the parser of the command and the exchange's own dispatch, as a live
 * reply would, on a handle without a socket.
 */
#include "capture/bft_nl_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bft_nl_parse_reply(uint8_t cmd, uint16_t family, const void *buf,
		       size_t len, char *err, size_t errlen)
{
	struct bft_nl *nl = calloc(1, sizeof(*nl));
	struct bft_nl_xfer x = { .nl = nl, .type = family, .cmd = cmd };
	struct bft_nl_family_info fi = { 0 };
	struct bft_nl_caps caps;
	int results[64];
	struct bft_nl_attach_ctx actx = { results, 64 };
	struct bft_nl_mode_ctx mctx = { 0 };
	struct bft_nl_status st = { 0 };
	struct bft_nl_opt opts[16];
	struct bft_nl_opt_ctx octx = { opts, 16, 0 };
	struct bft_nl_methods_ctx methods = { NULL, NULL };
	struct bft_nl_event ev;
	int rc;

	if (errlen)
		err[0] = '\0';
	if (!nl)
		return -ENOMEM;
	bft_nl_err_clear(nl);
	nl->family = family;
	/* Where a datagram lands: aligned, and no larger than a socket's. */
	if (len > sizeof(nl->rbuf)) {
		rc = bft_nl_err_set(nl, -EMSGSIZE, "netlink reply larger than %d bytes",
				    BFT_NL_RCVBUF);
		goto out;
	}
	memcpy(nl->rbuf, buf, len);
	buf = nl->rbuf;
	switch (cmd) {
	case BFT_CMD_UNSPEC:	/* the controller's answer naming the family */
		x.type = GENL_ID_CTRL;
		x.parse = bft_nl_family_parse;
		x.arg = &fi;
		break;
	case BFT_CMD_GET_CAPS:
		memset(&caps, 0, sizeof(caps));
		x.parse = bft_nl_caps_parse;
		x.arg = &caps;
		break;
	case BFT_CMD_ATTACH:
		x.parse = bft_nl_attach_parse;
		x.arg = &actx;
		break;
	case BFT_CMD_START:
	case BFT_CMD_STOP:
	case BFT_CMD_PAUSE:
	case BFT_CMD_UNPAUSE:
	case BFT_CMD_SUSPEND:
	case BFT_CMD_UNSUSPEND:
		x.parse = bft_nl_mode_parse;
		x.arg = &mctx;
		break;
	case BFT_CMD_GET_STATUS:
		x.parse = bft_nl_status_parse;
		x.arg = &st;
		break;
	case BFT_CMD_GET_OPT:
	case BFT_CMD_SET_OPT:
		x.parse = bft_nl_opt_parse;
		x.arg = &octx;
		break;
	case BFT_CMD_GET_METHODS:
		x.parse = bft_nl_method_parse;
		x.arg = &methods;
		break;
	case BFT_CMD_EVENT: {
		/* Events come alone, not as a reply: each message parsed. */
		const struct nlmsghdr *nlh = buf;
		int left = len > INT32_MAX ? INT32_MAX : (int)len;

		for (rc = 0; !rc && bft_nl_msg_fits(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left)) {
			if (nlh->nlmsg_type != family ||
			    mnl_nlmsg_get_payload_len(nlh) < GENL_HDRLEN)
				continue;
			rc = bft_nl_event_parse(nl, nlh, &ev);
			bft_nl_event_free(&ev);
		}
		goto out;
	}
	default:
		free(nl);
		snprintf(err, errlen, "no parser for command %u", cmd);
		return -EINVAL;
	}
	bft_nl_reply_run(&x, buf, len, 0);
	rc = x.err;
	if (!rc && !x.done)
		rc = bft_nl_err_set(nl, -ENODATA, "the reply does not end");
	bft_nl_status_free(&st);
out:
	if (rc && errlen)
		snprintf(err, errlen, "%s", nl->errmsg);
	free(nl);
	return rc;
}
