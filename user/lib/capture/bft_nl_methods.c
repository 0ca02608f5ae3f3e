// SPDX-License-Identifier: GPL-2.0
/*
 * bft_nl_methods: the BFT_CMD_GET_METHODS dump, every attached probe with
 * its hits, one callback each.
 */
#include "capture/bft_nl_internal.h"

#include <errno.h>
#include <string.h>

/*
 * The contract puts BFT_A_TGID and the BFT_P_* side by side at the top of a
 * GET_METHODS message, and BFT_A_TGID has the number of BFT_P_NAME: the
 * first attribute of that number is the tgid, the next one the name, in
 * the order the contract lists them.  A BFT_A_PROBE nest holding the
 * BFT_P_* is understood too, should the module send that instead.
 */
_Static_assert((int)BFT_A_TGID == (int)BFT_P_NAME,
	       "see bft_nl_method_parse()");
_Static_assert((int)BFT_A_PROBE == (int)BFT_P_PAD,
	       "see bft_nl_method_parse()");

static void method_take(const struct nlattr *const *pt, struct bft_nl_method *v)
{
	attr_take_u32(pt[BFT_P_METHOD_ID], &v->method_id);
	attr_take_u64(pt[BFT_P_OFFSET], &v->offset);
	attr_take_u32(pt[BFT_P_FLAGS], &v->flags);
	attr_take_u64(pt[BFT_P_HITS], &v->hits);
	if (pt[BFT_P_PATH])
		v->path = mnl_attr_get_str(pt[BFT_P_PATH]);
	if (pt[BFT_P_NAME])
		v->name = mnl_attr_get_str(pt[BFT_P_NAME]);
}

int bft_nl_method_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
			void *arg)
{
	const struct nlattr *pt[BFT_P_MAX + 1] = { 0 }, *a;
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(nlh);
	struct bft_nl_method v = { .path = "", .name = "" };
	struct bft_nl_methods_ctx *m = arg;
	bool have_tgid = false;
	int ret;

	if (g->cmd != BFT_CMD_GET_METHODS)
		return bft_nl_err_set(nl, -EPROTO, "unexpected command %u in methods dump",
				      g->cmd);
	mnl_attr_for_each(a, nlh, GENL_HDRLEN) {
		unsigned int type = mnl_attr_get_type(a);

		if (type == BFT_A_TGID && !have_tgid) {
			if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
				return bft_nl_err_set(nl, -EPROTO,
						      "malformed tgid in methods dump");
			v.tgid = mnl_attr_get_u32(a);
			have_tgid = true;
		} else if (type == BFT_A_PROBE && mnl_attr_get_payload_len(a)) {
			const struct nlattr *nt[BFT_P_MAX + 1];

			if (mnl_attr_validate(a, MNL_TYPE_NESTED) < 0 ||
			    bft_nl_nest_parse(nl, a, nt, BFT_P_MAX, bft_nl_probe_types,
					      "method", NULL))
				return bft_nl_err_set(nl, -EPROTO,
						      "malformed probe in methods dump");
			for (unsigned int i = 0; i <= BFT_P_MAX; i++)
				if (nt[i])
					pt[i] = nt[i];
		} else if (type <= BFT_P_MAX) {
			struct bft_nl_attr_tab t = { nl, pt, bft_nl_probe_types,
						     BFT_P_MAX, "method", 0 };

			if (bft_nl_attr_tab_cb(a, &t) != MNL_CB_OK)
				return -EPROTO;
		}
	}
	method_take(pt, &v);
	ret = m->cb ? m->cb(&v, m->arg) : 0;
	if (ret < 0)
		return bft_nl_err_set(nl, ret, "methods dump stopped by its callback (%s)",
				      strerror(-ret));
	return 0;
}

int bft_nl_get_methods(struct bft_nl *nl, bft_nl_method_cb cb, void *arg)
{
	struct bft_nl_methods_ctx m = { cb, arg };
	char buf[256];
	int err = bft_nl_control_check(nl);

	if (err)
		return err;
	return bft_nl_transact(nl, bft_nl_cmd_put(nl, buf, BFT_CMD_GET_METHODS, NLM_F_DUMP),
			       bft_nl_method_parse, &m);
}
