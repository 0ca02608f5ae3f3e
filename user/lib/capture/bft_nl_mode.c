// SPDX-License-Identifier: GPL-2.0
/*
 * bft_nl_mode: the mode commands, BFT_CMD_START to BFT_CMD_UNSUSPEND,
 * each answered with the mode in force afterwards.
 */
#include "capture/bft_nl_internal.h"

#include <errno.h>

int bft_nl_mode_parse(struct bft_nl *nl, const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[BFT_A_MAX + 1];
	struct bft_nl_mode_ctx *m = arg;

	if (bft_nl_msg_parse(nl, nlh, tb, BFT_A_MAX, bft_nl_top_types, "mode", NULL))
		return -EPROTO;
	if (!tb[BFT_A_MODE])
		return bft_nl_err_set(nl, -EPROTO, "mode reply without a mode");
	m->mode = mnl_attr_get_u8(tb[BFT_A_MODE]);
	m->seen = true;
	return 0;
}

static int mode_request(struct bft_nl *nl, int cmd, bool persist, uint8_t *mode)
{
	struct bft_nl_mode_ctx m = { 0 };
	struct nlmsghdr *nlh;
	char buf[256];
	int err = bft_nl_control_check(nl);

	if (err)
		return err;
	if (cmd < BFT_CMD_START || cmd > BFT_CMD_UNSUSPEND)
		return bft_nl_err_set(nl, -EINVAL, "command %d is not a mode command", cmd);
	nlh = bft_nl_cmd_put(nl, buf, (uint8_t)cmd, NLM_F_ACK);
	if (persist)
		mnl_attr_put(nlh, BFT_A_PERSIST, 0, NULL);
	err = bft_nl_transact(nl, nlh, bft_nl_mode_parse, &m);
	if (err)
		return err;
	if (!m.seen)
		return bft_nl_err_set(nl, -EPROTO, "%s: no reply",
				      bft_cmd_name((unsigned int)cmd));
	if (mode)
		*mode = m.mode;
	return 0;
}

int bft_nl_mode_cmd(struct bft_nl *nl, int cmd, uint8_t *mode)
{
	return mode_request(nl, cmd, false, mode);
}

int bft_nl_start(struct bft_nl *nl, bool persist, uint8_t *mode)
{
	return mode_request(nl, BFT_CMD_START, persist, mode);
}
