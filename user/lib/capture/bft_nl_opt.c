// SPDX-License-Identifier: GPL-2.0
/*
 * bft_nl_opt: BFT_CMD_GET_OPT and BFT_CMD_SET_OPT, one option or all of
 * them, each with its value, bounds and flags.
 */
#include "capture/bft_nl_internal.h"

#include <errno.h>

static const enum mnl_attr_data_type opt_types[BFT_O_MAX_ATTR + 1] = {
	[BFT_O_ID]		= MNL_TYPE_U32,
	[BFT_O_VALUE]		= MNL_TYPE_U64,
	[BFT_O_MIN]		= MNL_TYPE_U64,
	[BFT_O_MAX]		= MNL_TYPE_U64,
	[BFT_O_FLAGS]		= MNL_TYPE_U32,
};

int bft_nl_opt_parse(struct bft_nl *nl, const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *a, *ot[BFT_O_MAX_ATTR + 1];
	struct bft_nl_opt_ctx *o = arg;

	/* BFT_A_OPT repeats, so this walks the message instead of a table. */
	mnl_attr_for_each(a, nlh, GENL_HDRLEN) {
		struct bft_nl_opt v = { 0 };

		if (mnl_attr_get_type(a) != BFT_A_OPT)
			continue;
		if (mnl_attr_validate(a, MNL_TYPE_NESTED) < 0 ||
		    bft_nl_nest_parse(nl, a, ot, BFT_O_MAX_ATTR, opt_types, "option", NULL))
			return bft_nl_err_set(nl, -EPROTO, "malformed option");
		if (!ot[BFT_O_ID] || !ot[BFT_O_VALUE])
			return bft_nl_err_set(nl, -EPROTO, "option without id or value");
		v.id = mnl_attr_get_u32(ot[BFT_O_ID]);
		v.value = mnl_attr_get_u64(ot[BFT_O_VALUE]);
		attr_take_u64(ot[BFT_O_MIN], &v.min);
		attr_take_u64(ot[BFT_O_MAX], &v.max);
		attr_take_u32(ot[BFT_O_FLAGS], &v.flags);
		if (o->n < o->cap)
			o->out[o->n] = v;
		o->n++;
	}
	return 0;
}

static int opt_request(struct bft_nl *nl, uint8_t cmd, uint32_t id,
		       const uint64_t *value, struct bft_nl_opt_ctx *o)
{
	char buf[256];
	struct nlmsghdr *nlh;
	int err = bft_nl_control_check(nl);

	if (err)
		return err;
	nlh = bft_nl_cmd_put(nl, buf, cmd, NLM_F_ACK);
	if (id)
		mnl_attr_put_u32(nlh, BFT_A_OPT_ID, id);
	if (value)
		mnl_attr_put_u64(nlh, BFT_A_OPT_VALUE, *value);
	return bft_nl_transact(nl, nlh, bft_nl_opt_parse, o);
}

static int opt_single(struct bft_nl *nl, uint8_t cmd, uint32_t id,
		      const uint64_t *value, struct bft_nl_opt *out)
{
	struct bft_nl_opt v;
	struct bft_nl_opt_ctx o = { &v, 1, 0 };
	int err = opt_request(nl, cmd, id, value, &o);

	if (err)
		return err;
	if (o.n != 1 || v.id != id)
		return bft_nl_err_set(nl, -EPROTO, "%s %s: reply holds %zu options",
				      bft_cmd_name(cmd), bft_opt_name(id), o.n);
	if (out)
		*out = v;
	return 0;
}

int bft_nl_get_opt(struct bft_nl *nl, uint32_t id, struct bft_nl_opt *out)
{
	if (!id) {
		bft_nl_err_clear(nl);
		return bft_nl_err_set(nl, -EINVAL, "option id 0: use bft_nl_get_opts()");
	}
	return opt_single(nl, BFT_CMD_GET_OPT, id, NULL, out);
}

int bft_nl_get_opts(struct bft_nl *nl, struct bft_nl_opt *out, size_t cap,
		    size_t *n)
{
	struct bft_nl_opt_ctx o = { out, cap, 0 };
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
