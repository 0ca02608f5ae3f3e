// SPDX-License-Identifier: GPL-2.0
/*
 * bft_nl_attach: BFT_CMD_ATTACH, split into as many requests as netlink
 * nests can hold, with a result per probe; and BFT_CMD_DETACH.
 */
#include "capture/bft_nl_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A nest's length is 16 bits: BFT_A_PROBES cannot carry more than this. */
#define BFT_NL_NEST_MAX		65535

static const enum mnl_attr_data_type result_types[BFT_R_MAX + 1] = {
	[BFT_R_INDEX]		= MNL_TYPE_U32,
	[BFT_R_ERRNO]		= MNL_TYPE_U32,
};

static size_t probe_attrs_size(const struct bft_nl_probe *p)
{
	size_t sz = MNL_ATTR_HDRLEN;				/* the nest */

	sz += MNL_ALIGN(MNL_ATTR_HDRLEN + strlen(p->path) + 1);
	sz += MNL_ALIGN(MNL_ATTR_HDRLEN + sizeof(uint64_t));
	sz += 2 * MNL_ALIGN(MNL_ATTR_HDRLEN + sizeof(uint32_t));
	/* NULL goes out as "" */
	sz += MNL_ALIGN(MNL_ATTR_HDRLEN + (p->name ? strlen(p->name) : 0) + 1);
	if (p->ref_ctr_offset)
		sz += MNL_ALIGN(MNL_ATTR_HDRLEN + sizeof(uint64_t));
	if (p->nargs)
		sz += MNL_ALIGN(MNL_ATTR_HDRLEN +
				p->nargs * sizeof(struct bft_usdt_arg));
	return sz;
}

int bft_nl_attach_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
			void *arg)
{
	const struct nlattr *tb[BFT_A_MAX + 1], *rt[BFT_R_MAX + 1], *r;
	struct bft_nl_attach_ctx *a = arg;

	if (bft_nl_msg_parse(nl, nlh, tb, BFT_A_MAX, bft_nl_top_types, "attach", NULL))
		return -EPROTO;
	if (!tb[BFT_A_RESULTS])
		return bft_nl_err_set(nl, -EPROTO, "attach reply without results");
	mnl_attr_for_each_nested(r, tb[BFT_A_RESULTS]) {
		uint32_t idx;
		int32_t e;

		if (mnl_attr_get_type(r) != BFT_A_RESULT)
			continue;
		if (mnl_attr_validate(r, MNL_TYPE_NESTED) < 0 ||
		    bft_nl_nest_parse(nl, r, rt, BFT_R_MAX, result_types, "result", NULL))
			return bft_nl_err_set(nl, -EPROTO, "malformed attach result");
		if (!rt[BFT_R_INDEX] || !rt[BFT_R_ERRNO])
			return bft_nl_err_set(nl, -EPROTO, "attach result without index or errno");
		idx = mnl_attr_get_u32(rt[BFT_R_INDEX]);
		e = (int32_t)mnl_attr_get_u32(rt[BFT_R_ERRNO]);
		if (idx >= a->n)
			return bft_nl_err_set(nl, -EPROTO, "attach result for probe %u of %zu",
					      idx, a->n);
		if (a->results)
			a->results[idx] = bft_nl_wire_errno(e);
	}
	return 0;
}

static int chunk_attach(struct bft_nl *nl, uint32_t tgid,
			const struct bft_nl_probe *probes, size_t n,
			size_t attrs_size, int *results)
{
	size_t bufsz = MNL_NLMSG_HDRLEN + GENL_HDRLEN +
		       MNL_ALIGN(MNL_ATTR_HDRLEN + sizeof(uint32_t)) +
		       MNL_ATTR_HDRLEN + MNL_ATTR_HDRLEN + attrs_size;
	struct bft_nl_attach_ctx ctx = { results, n };
	struct nlmsghdr *nlh;
	struct nlattr *outer;
	void *buf;
	int err;

	buf = malloc(bufsz);
	if (!buf)
		return bft_nl_err_set(nl, -ENOMEM, "out of memory for %zu probes", n);
	nlh = bft_nl_cmd_put(nl, buf, BFT_CMD_ATTACH, NLM_F_ACK);
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
		if (p->ref_ctr_offset)
			mnl_attr_put_u64(nlh, BFT_P_REF_CTR_OFFSET,
					 p->ref_ctr_offset);
		if (p->nargs)
			mnl_attr_put(nlh, BFT_P_ARGS,
				     p->nargs * sizeof(*p->args), p->args);
		mnl_attr_nest_end(nlh, in);
	}
	mnl_attr_nest_end(nlh, outer);
	/* Probes the reply leaves out are the module's fault: say so. */
	if (results)
		for (size_t i = 0; i < n; i++)
			results[i] = -EPROTO;
	err = bft_nl_transact(nl, nlh, bft_nl_attach_parse, &ctx);
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
	int err = bft_nl_control_check(nl);

	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		if (!probes[i].path)
			return bft_nl_err_set(nl, -EINVAL, "probe %zu has no path", i);
		if (probe_attrs_size(&probes[i]) > BFT_NL_NEST_MAX - MNL_ATTR_HDRLEN)
			return bft_nl_err_set(nl, -ENAMETOOLONG,
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
		err = chunk_attach(nl, tgid, probes + first, last - first, size,
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

int bft_nl_detach_some(struct bft_nl *nl, uint32_t tgid, const uint32_t *ids,
		       size_t n)
{
	/* a nest of nests of one u32 each: 16 bytes an id */
	size_t bufsz = MNL_NLMSG_HDRLEN + GENL_HDRLEN + 64 + 16 * n;
	struct nlmsghdr *nlh;
	struct nlattr *outer;
	void *buf;
	int err = bft_nl_control_check(nl);

	if (err)
		return err;
	if (!tgid || 16 * n > BFT_NL_NEST_MAX - MNL_ATTR_HDRLEN)
		return bft_nl_err_set(nl, -EINVAL, "detaching %zu probes of process %u: %s",
				      n, tgid, tgid ? "too many for one request" : "no process");
	buf = malloc(bufsz);
	if (!buf)
		return bft_nl_err_set(nl, -ENOMEM, "out of memory for %zu ids", n);
	nlh = bft_nl_cmd_put(nl, buf, BFT_CMD_DETACH, NLM_F_ACK);
	mnl_attr_put_u32(nlh, BFT_A_TGID, tgid);
	outer = mnl_attr_nest_start(nlh, BFT_A_PROBES);
	for (size_t i = 0; i < n; i++) {
		struct nlattr *in = mnl_attr_nest_start(nlh, BFT_A_PROBE);

		mnl_attr_put_u32(nlh, BFT_P_METHOD_ID, ids[i]);
		mnl_attr_nest_end(nlh, in);
	}
	mnl_attr_nest_end(nlh, outer);
	err = bft_nl_transact(nl, nlh, NULL, NULL);
	free(buf);
	return err;
}

int bft_nl_detach(struct bft_nl *nl, uint32_t tgid)
{
	char buf[256];
	struct nlmsghdr *nlh;
	int err = bft_nl_control_check(nl);

	if (err)
		return err;
	nlh = bft_nl_cmd_put(nl, buf, BFT_CMD_DETACH, NLM_F_ACK);
	if (tgid)
		mnl_attr_put_u32(nlh, BFT_A_TGID, tgid);
	return bft_nl_transact(nl, nlh, NULL, NULL);
}
