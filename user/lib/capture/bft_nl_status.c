// SPDX-License-Identifier: GPL-2.0
/*
 * bft_nl_status: what the module says about itself: BFT_CMD_GET_CAPS,
 * BFT_CMD_GET_STATUS, and the per-CPU ring statistics that a status reply
 * and a heartbeat event both carry.
 */
#include "capture/bft_nl_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- GET_CAPS ------------------------------------------------------------ */

int bft_nl_caps_parse(struct bft_nl *nl, const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[BFT_A_MAX + 1], *lim[BFT_LIM_MAX + 1];
	struct bft_nl_caps *c = arg;

	if (bft_nl_msg_parse(nl, nlh, tb, BFT_A_MAX, bft_nl_top_types, "caps", &c->have))
		return -EPROTO;
	if (!tb[BFT_A_PROTO_VERSION])
		return bft_nl_err_set(nl, -EPROTO, "caps reply without a protocol version");
	c->proto_version = mnl_attr_get_u32(tb[BFT_A_PROTO_VERSION]);
	attr_take_u64(tb[BFT_A_FEATURES], &c->features);
	attr_take_u32(tb[BFT_A_NR_CPUS], &c->nr_cpus);
	if (tb[BFT_A_LIMITS]) {
		if (bft_nl_nest_parse(nl, tb[BFT_A_LIMITS], lim, BFT_LIM_MAX,
				      limit_types, "limits", NULL))
			return -EPROTO;
		attr_take_u32(lim[BFT_LIM_MAX_TARGETS], &c->limits.max_targets);
		attr_take_u32(lim[BFT_LIM_MAX_PROBES], &c->limits.max_probes);
		attr_take_u32(lim[BFT_LIM_NAME_MAX], &c->limits.name_max);
		attr_take_u32(lim[BFT_LIM_PATH_MAX], &c->limits.path_max);
		attr_take_u32(lim[BFT_LIM_URETPROBE_DEPTH], &c->limits.uretprobe_depth);
	}
	return 0;
}

int bft_nl_get_caps(struct bft_nl *nl, struct bft_nl_caps *caps)
{
	char buf[256];
	int err = bft_nl_control_check(nl);

	if (err)
		return err;
	memset(caps, 0, sizeof(*caps));
	return bft_nl_transact(nl, bft_nl_cmd_put(nl, buf, BFT_CMD_GET_CAPS, NLM_F_ACK),
			       bft_nl_caps_parse, caps);
}

/* ---- per-CPU statistics (status and heartbeat) --------------------------- */

int bft_nl_cpu_stats_parse(struct bft_nl *nl, const struct nlattr *stats,
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
				return bft_nl_err_set(nl, -ENOMEM, "out of memory");
			}
			v = nv;
		}
		s = &v[n];
		memset(s, 0, sizeof(*s));
		if (mnl_attr_validate(c, MNL_TYPE_NESTED) < 0 ||
		    bft_nl_nest_parse(nl, c, st, BFT_S_MAX, stat_types, "cpu stats",
				      &s->have)) {
			free(v);
			return bft_nl_err_set(nl, -EPROTO, "malformed per-CPU statistics");
		}
		attr_take_u32(st[BFT_S_CPU], &s->cpu);
		attr_take_u64(st[BFT_S_PRODUCED], &s->produced);
		attr_take_u64(st[BFT_S_WRITTEN], &s->written);
		attr_take_u64(st[BFT_S_LOST], &s->lost);
		attr_take_u64(st[BFT_S_SUSPENDED], &s->suspended);
		attr_take_u64(st[BFT_S_BYTES_WRITTEN], &s->bytes_written);
		attr_take_u64(st[BFT_S_BYTES_READ], &s->bytes_read);
		attr_take_u32(st[BFT_S_USED], &s->used);
		attr_take_u32(st[BFT_S_SIZE], &s->size);
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

int bft_nl_status_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
			void *arg)
{
	const struct nlattr *tb[BFT_A_MAX + 1];
	struct bft_nl_status *st = arg;

	if (bft_nl_msg_parse(nl, nlh, tb, BFT_A_MAX, bft_nl_top_types, "status", &st->have))
		return -EPROTO;
	if (!tb[BFT_A_MODE])
		return bft_nl_err_set(nl, -EPROTO, "status reply without a mode");
	st->mode = mnl_attr_get_u8(tb[BFT_A_MODE]);
	attr_take_u32(tb[BFT_A_NR_PROBES], &st->nr_probes);
	attr_take_u32(tb[BFT_A_NR_TARGETS], &st->nr_targets);
	attr_take_u32(tb[BFT_A_OWNER], &st->owner);
	if (tb[BFT_A_CPU_STATS])
		return bft_nl_cpu_stats_parse(nl, tb[BFT_A_CPU_STATS], &st->cpus,
					      &st->nr_cpus);
	return 0;
}

int bft_nl_get_status(struct bft_nl *nl, struct bft_nl_status *st)
{
	char buf[256];
	int err = bft_nl_control_check(nl);

	memset(st, 0, sizeof(*st));
	if (err)
		return err;
	/*
	 * No ACK: the reply says it all, and a failure comes as an error
	 * message anyway.  One receive fewer for what the collector asks
	 * ten times a second while sampling.
	 */
	err = bft_nl_transact(nl, bft_nl_cmd_put(nl, buf, BFT_CMD_GET_STATUS, 0),
			      bft_nl_status_parse, st);
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
