// SPDX-License-Identifier: GPL-2.0
/*
 * bft_nl_attr: the attribute policies that several commands of the
 * netlink client share, and the parse that checks a message or a nest
 * against a policy.  A policy of one command stays in that command's file.
 */
#include "capture/bft_nl_internal.h"

#include <errno.h>
#include <string.h>

int bft_nl_attr_tab_cb(const struct nlattr *a, void *data)
{
	struct bft_nl_attr_tab *t = data;
	unsigned int type = mnl_attr_get_type(a);

	if (type > t->max)
		return MNL_CB_OK;
	if (t->types[type] != MNL_TYPE_UNSPEC &&
	    mnl_attr_validate(a, t->types[type]) < 0) {
		bft_nl_err_set(t->nl, -EPROTO, "malformed %s attribute %u (length %u)",
			       t->what, type, mnl_attr_get_payload_len(a));
		return MNL_CB_ERROR;
	}
	t->tb[type] = a;
	if (type < 32)
		t->have |= 1u << type;
	return MNL_CB_OK;
}

const enum mnl_attr_data_type bft_nl_top_types[BFT_A_MAX + 1] = {
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
const enum mnl_attr_data_type bft_nl_probe_types[BFT_P_MAX + 1] = {
	[BFT_P_PATH]		= MNL_TYPE_NUL_STRING,
	[BFT_P_OFFSET]		= MNL_TYPE_U64,
	[BFT_P_METHOD_ID]	= MNL_TYPE_U32,
	[BFT_P_FLAGS]		= MNL_TYPE_U32,
	[BFT_P_NAME]		= MNL_TYPE_NUL_STRING,
	[BFT_P_HITS]		= MNL_TYPE_U64,
};

int bft_nl_msg_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
		     const struct nlattr **tb, unsigned int max,
		     const enum mnl_attr_data_type *types, const char *what,
		     uint32_t *have)
{
	struct bft_nl_attr_tab t = { nl, tb, types, max, what, 0 };

	memset(tb, 0, (max + 1) * sizeof(*tb));
	if (mnl_attr_parse(nlh, GENL_HDRLEN, bft_nl_attr_tab_cb, &t) < 0)
		return -EPROTO;
	if (have)
		*have = t.have;
	return 0;
}

int bft_nl_nest_parse(struct bft_nl *nl, const struct nlattr *nest,
		      const struct nlattr **tb, unsigned int max,
		      const enum mnl_attr_data_type *types, const char *what,
		      uint32_t *have)
{
	struct bft_nl_attr_tab t = { nl, tb, types, max, what, 0 };

	memset(tb, 0, (max + 1) * sizeof(*tb));
	if (mnl_attr_parse_nested(nest, bft_nl_attr_tab_cb, &t) < 0)
		return -EPROTO;
	if (have)
		*have = t.have;
	return 0;
}
