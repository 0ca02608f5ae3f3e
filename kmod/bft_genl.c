// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink family "bftrace": per-command policies, the command
 * handlers, and the multicast events.  The commands are documented in
 * include/uapi/linux/bftrace.h.
 */
#include <linux/cpumask.h>
#include <net/genetlink.h>
#include <net/sock.h>

#include "bft_internal.h"

static struct genl_family bft_family;
static bool bft_family_live;

#ifndef NETLINK_MAX_FMTMSG_LEN
#define BFT_ERRBUFS 16
static char bft_errbufs[BFT_ERRBUFS][BFT_ERRBUF_LEN];
static atomic_t bft_errbuf_next;

char *bft_errbuf(void)
{
	return bft_errbufs[(u32)atomic_inc_return(&bft_errbuf_next) %
			   BFT_ERRBUFS];
}
#endif

static const struct nla_policy bft_attach_policy[BFT_A_MAX + 1] = {
	[BFT_A_TGID] = NLA_POLICY_MIN(NLA_U32, 1),
	[BFT_A_PROBES] = { .type = NLA_NESTED },
	[BFT_A_PERSIST] = { .type = NLA_FLAG },
};

static const struct nla_policy bft_detach_policy[BFT_A_MAX + 1] = {
	[BFT_A_TGID] = NLA_POLICY_MIN(NLA_U32, 1),
	[BFT_A_PROBES] = { .type = NLA_NESTED },
};

static const struct nla_policy bft_opt_policy[BFT_A_MAX + 1] = {
	[BFT_A_OPT_ID] = { .type = NLA_U32 },
	[BFT_A_OPT_VALUE] = { .type = NLA_U64 },
};

static const struct nla_policy bft_start_policy[BFT_A_MAX + 1] = {
	[BFT_A_PERSIST] = { .type = NLA_FLAG },
};

/* Commands without attributes: the core rejects any that are sent. */
static const struct nla_policy bft_none_policy[BFT_A_MAX + 1] = {};

struct sk_buff *bft_reply_new(struct genl_info *info, size_t size, void **hdr)
{
	struct sk_buff *skb = genlmsg_new(size, GFP_KERNEL);

	if (!skb)
		return NULL;
	*hdr = genlmsg_put_reply(skb, info, &bft_family, 0,
				 info->genlhdr->cmd);
	if (!*hdr) {
		nlmsg_free(skb);
		return NULL;
	}
	return skb;
}

int bft_reply_send(struct sk_buff *skb, void *hdr, struct genl_info *info)
{
	genlmsg_end(skb, hdr);
	return genlmsg_reply(skb, info);
}

static size_t bft_cpu_stats_size(void)
{
	return nla_total_size(0) + num_possible_cpus() *
	       (nla_total_size(0) + 2 * nla_total_size(sizeof(u32)) +
		6 * nla_total_size_64bit(sizeof(u64)));
}

int bft_put_cpu_stats(struct sk_buff *skb)
{
	struct bft_ring_stats st;
	struct nlattr *all, *one;
	unsigned int cpu;

	all = nla_nest_start(skb, BFT_A_CPU_STATS);
	if (!all)
		return -EMSGSIZE;
	for_each_possible_cpu(cpu) {
		bft_ring_stats(cpu, &st);
		one = nla_nest_start(skb, BFT_A_CPU);
		if (!one ||
		    nla_put_u32(skb, BFT_S_CPU, cpu) ||
		    nla_put_u64_64bit(skb, BFT_S_PRODUCED, st.produced, BFT_S_PAD) ||
		    nla_put_u64_64bit(skb, BFT_S_WRITTEN, st.written, BFT_S_PAD) ||
		    nla_put_u64_64bit(skb, BFT_S_LOST, st.lost, BFT_S_PAD) ||
		    nla_put_u64_64bit(skb, BFT_S_SUSPENDED, st.suspended, BFT_S_PAD) ||
		    nla_put_u64_64bit(skb, BFT_S_BYTES_WRITTEN, st.bytes_written,
				      BFT_S_PAD) ||
		    nla_put_u64_64bit(skb, BFT_S_BYTES_READ, st.bytes_read,
				      BFT_S_PAD) ||
		    nla_put_u32(skb, BFT_S_USED, st.used) ||
		    nla_put_u32(skb, BFT_S_SIZE, st.size) ||
		    nla_put_u8(skb, BFT_S_READER, st.reader))
			return -EMSGSIZE;
		nla_nest_end(skb, one);
	}
	nla_nest_end(skb, all);
	return 0;
}

static int bft_put_limits(struct sk_buff *skb)
{
	struct nlattr *lim = nla_nest_start(skb, BFT_A_LIMITS);

	if (!lim ||
	    nla_put_u32(skb, BFT_LIM_MAX_TARGETS, BFT_MAX_TARGETS) ||
	    nla_put_u32(skb, BFT_LIM_MAX_PROBES, 65536) ||
	    nla_put_u32(skb, BFT_LIM_NAME_MAX, BFT_NAME_MAX) ||
	    nla_put_u32(skb, BFT_LIM_PATH_MAX, BFT_PATH_MAX) ||
	    nla_put_u32(skb, BFT_LIM_URETPROBE_DEPTH, BFT_URETPROBE_DEPTH))
		return -EMSGSIZE;
	nla_nest_end(skb, lim);
	return 0;
}

#ifndef BFT_HAVE_BROADCAST_FILTER
/*
 * Without a filtered broadcast, events reach every member of the group.
 * The core checks a member's capability when it joins a group that a
 * family owns, so a member that is there when the family registers joined
 * an id nobody owned, unchecked: nobody legitimate can have, since a
 * client finds the id by asking for the family, which loads the module
 * first.  Such a member could not be told apart from a later one, so no
 * event is sent at all until the module is loaded again, and the
 * capabilities say so (no BFT_FEAT_EVENTS).
 */
static bool bft_events_withheld;
#else
#define bft_events_withheld false
#endif

static int bft_cmd_get_caps(struct sk_buff *req, struct genl_info *info)
{
	u64 features = BFT_FEAT_ENTRY | BFT_FEAT_RETURN | BFT_FEAT_NORET |
		       BFT_FEAT_PAUSE | BFT_FEAT_SUSPEND |
		       BFT_FEAT_EVENTS | BFT_FEAT_READ |
		       BFT_FEAT_UNWIND | BFT_FEAT_OWNER |
		       BFT_FEAT_ATTACH_PERSIST | BFT_FEAT_USDT |
		       BFT_FEAT_DETACH_SOME;
	struct sk_buff *skb;
	void *hdr;

	if (bft_events_withheld)
		features &= ~BFT_FEAT_EVENTS;

	skb = bft_reply_new(info, NLMSG_GOODSIZE, &hdr);
	if (!skb)
		return -ENOMEM;
	if (nla_put_u32(skb, BFT_A_PROTO_VERSION, BFT_PROTO_VERSION) ||
	    nla_put_u64_64bit(skb, BFT_A_FEATURES, features, BFT_A_PAD) ||
	    nla_put_u32(skb, BFT_A_NR_CPUS, nr_cpu_ids) ||
	    bft_put_limits(skb)) {
		nlmsg_free(skb);
		return -EMSGSIZE;
	}
	return bft_reply_send(skb, hdr, info);
}

static int bft_cmd_attach(struct sk_buff *req, struct genl_info *info)
{
	struct bft_target *t;
	int err = bft_check_capable(req, info->extack);

	if (err)
		return err;
	mutex_lock(&bft_lock);
	err = bft_attach(info);
	/* outside a session, the target is the attacher's (bft_session.c) */
	t = err ? NULL : bft_target_find(nla_get_u32(info->attrs[BFT_A_TGID]));
	if (t && !bft_session_active(bft_mode))
		bft_target_own(t, info->attrs[BFT_A_PERSIST] ? 0 :
			       info->snd_portid);
	mutex_unlock(&bft_lock);
	return err;
}

static int bft_cmd_detach(struct sk_buff *req, struct genl_info *info)
{
	const struct nlattr *probes = info->attrs[BFT_A_PROBES];
	struct bft_target *t;
	pid_t tgid;
	int err = bft_check_capable(req, info->extack);

	if (err)
		return err;
	/* the ids are method ids of one target */
	if (probes && !info->attrs[BFT_A_TGID]) {
		NL_SET_ERR_MSG_ATTR(info->extack, probes,
				    "detaching chosen probes needs BFT_A_TGID");
		return -EINVAL;
	}
	mutex_lock(&bft_lock);
	if (info->attrs[BFT_A_TGID]) {
		tgid = nla_get_u32(info->attrs[BFT_A_TGID]);
		t = bft_target_find(tgid);
		if (t) {
			err = bft_may_control(t, info->extack);
			if (!err && probes)
				err = bft_target_detach_some(t, probes,
							     info->extack);
			else if (!err)
				bft_target_detach(t);
		} else {
			BFT_SET_ERR_MSG_FMT(info->extack,
					    "tgid %d is not a target", tgid);
			err = -ENOENT;
		}
	} else {
		err = bft_may_control_all(info->extack);
		if (!err)
			bft_detach_all();
	}
	mutex_unlock(&bft_lock);
	return err;
}

static int bft_cmd_mode(struct sk_buff *req, struct genl_info *info)
{
	u32 owner = info->attrs[BFT_A_PERSIST] ? 0 : info->snd_portid;
	struct sk_buff *skb;
	void *hdr;
	int err;

	err = bft_check_capable(req, info->extack);
	if (err)
		return err;
	skb = bft_reply_new(info, nla_total_size(sizeof(u8)), &hdr);
	if (!skb)
		return -ENOMEM;
	mutex_lock(&bft_lock);
	err = bft_mode_change(info->genlhdr->cmd, owner, info->extack);
	if (!err && nla_put_u8(skb, BFT_A_MODE, bft_mode))
		err = -EMSGSIZE;
	mutex_unlock(&bft_lock);
	if (err) {
		nlmsg_free(skb);
		return err;
	}
	return bft_reply_send(skb, hdr, info);
}

static int bft_cmd_get_status(struct sk_buff *req, struct genl_info *info)
{
	struct sk_buff *skb;
	void *hdr;
	int err;

	err = bft_check_capable(req, info->extack);
	if (err)
		return err;
	skb = bft_reply_new(info, 4 * nla_total_size(sizeof(u32)) +
			    bft_cpu_stats_size(), &hdr);
	if (!skb)
		return -ENOMEM;
	mutex_lock(&bft_lock);
	err = nla_put_u8(skb, BFT_A_MODE, bft_mode) ||
	      nla_put_u32(skb, BFT_A_NR_PROBES, bft_nr_probes) ||
	      nla_put_u32(skb, BFT_A_NR_TARGETS, bft_nr_targets) ||
	      nla_put_u32(skb, BFT_A_OWNER, bft_session_owner()) ||
	      bft_put_cpu_stats(skb);
	mutex_unlock(&bft_lock);
	if (err) {
		nlmsg_free(skb);
		return -EMSGSIZE;
	}
	return bft_reply_send(skb, hdr, info);
}

static int bft_put_opt(struct sk_buff *skb, u32 id)
{
	struct nlattr *nest;
	u64 val, min, max;
	u32 flags;
	int err;

	err = bft_opt_get(id, &val, &min, &max, &flags);
	if (err)
		return err;
	nest = nla_nest_start(skb, BFT_A_OPT);
	if (!nest ||
	    nla_put_u32(skb, BFT_O_ID, id) ||
	    nla_put_u64_64bit(skb, BFT_O_VALUE, val, BFT_O_PAD) ||
	    nla_put_u64_64bit(skb, BFT_O_MIN, min, BFT_O_PAD) ||
	    nla_put_u64_64bit(skb, BFT_O_MAX, max, BFT_O_PAD) ||
	    nla_put_u32(skb, BFT_O_FLAGS, flags))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

static int bft_cmd_opt(struct sk_buff *req, struct genl_info *info)
{
	bool set = info->genlhdr->cmd == BFT_CMD_SET_OPT;
	struct nlattr **a = info->attrs;
	struct sk_buff *skb;
	u32 id = 0;
	void *hdr;
	int err = 0;

	if (set) {
		err = bft_check_capable(req, info->extack);
		if (err)
			return err;
	}
	if (set && (GENL_REQ_ATTR_CHECK(info, BFT_A_OPT_ID) ||
		    GENL_REQ_ATTR_CHECK(info, BFT_A_OPT_VALUE)))
		return -EINVAL;
	if (a[BFT_A_OPT_ID])
		id = nla_get_u32(a[BFT_A_OPT_ID]);
	skb = bft_reply_new(info, NLMSG_GOODSIZE, &hdr);
	if (!skb)
		return -ENOMEM;
	mutex_lock(&bft_lock);
	if (set)
		err = bft_opt_set(id, nla_get_u64(a[BFT_A_OPT_VALUE]),
				  info->extack);
	if (!err && id) {
		err = bft_put_opt(skb, id);
		if (err == -ENOENT)
			BFT_SET_ERR_MSG_FMT(info->extack, "unknown option %u", id);
		else if (err == -EOPNOTSUPP)
			BFT_SET_ERR_MSG_FMT(info->extack,
					    "option %u is not supported by this module",
					    id);
	} else if (!err) {
		for (id = 1; id <= BFT_OPT_MAX && !err; id++) {
			err = bft_put_opt(skb, id);
			if (err == -EOPNOTSUPP)
				err = 0;
		}
	}
	mutex_unlock(&bft_lock);
	if (err) {
		nlmsg_free(skb);
		return err;
	}
	return bft_reply_send(skb, hdr, info);
}

static int bft_put_method(struct sk_buff *skb, struct netlink_callback *cb,
			  const struct bft_method *m, const char *name,
			  const char *path)
{
	void *hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				cb->nlh->nlmsg_seq, &bft_family, NLM_F_MULTI,
				BFT_CMD_GET_METHODS);
	struct nlattr *nest = NULL;

	if (!hdr)
		return -EMSGSIZE;
	if (!nla_put_u32(skb, BFT_A_TGID, m->tgid))
		nest = nla_nest_start(skb, BFT_A_PROBE);
	if (!nest ||
	    nla_put_u32(skb, BFT_P_METHOD_ID, m->method_id) ||
	    nla_put_string(skb, BFT_P_PATH, path) ||
	    nla_put_u64_64bit(skb, BFT_P_OFFSET, m->offset, BFT_P_PAD) ||
	    nla_put_u32(skb, BFT_P_FLAGS, m->flags) ||
	    nla_put_string(skb, BFT_P_NAME, name) ||
	    nla_put_u64_64bit(skb, BFT_P_HITS, m->hits, BFT_P_PAD)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
}

/* A live probe's path is resolved here, against the reader's root. */
static int bft_put_live_method(struct sk_buff *skb,
			       struct netlink_callback *cb,
			       struct bft_probe *p, char *buf)
{
	struct bft_method m = {
		.tgid = p->target->tgid,
		.method_id = p->method_id,
		.offset = p->offset,
		.flags = p->flags,
		.hits = bft_probe_hits(p),
	};
	char *path = d_path(&p->path, buf, BFT_PATH_MAX);

	return bft_put_method(skb, cb, &m, p->name, IS_ERR(path) ? "" : path);
}

/*
 * Paths, pids, hit counts and exception types of other users' processes:
 * privileged, as every dump is.  A refusal should say why, but 6.1 calls
 * .start with no extack (its __netlink_dump_start() sets cb->extack only
 * around .dumpit): there the first .dumpit refuses, and its text travels
 * in NLMSG_DONE.  Every .dumpit checks, so a start that could not say
 * why lets nothing through.
 */
static int bft_dump_start(struct netlink_callback *cb)
{
	if (!cb->extack)
		return 0;
	return bft_check_capable(cb->skb, cb->extack);
}

/* cb->args[0]: how many entries earlier calls have sent. */
static int bft_dump_methods(struct sk_buff *skb, struct netlink_callback *cb)
{
	long i = 0, done = cb->args[0];
	struct bft_method *m;
	struct bft_target *t;
	struct bft_probe *p;
	int err;
	char *buf;

	err = bft_check_capable(cb->skb, cb->extack);
	if (err)
		return err;
	buf = kmalloc(BFT_PATH_MAX, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	mutex_lock(&bft_lock);
	list_for_each_entry(t, &bft_targets, node) {
		list_for_each_entry(p, &t->probes, node) {
			if (i++ < done)
				continue;
			err = bft_put_live_method(skb, cb, p, buf);
			if (err)
				goto out;
			cb->args[0] = i;
		}
	}
	list_for_each_entry(m, &bft_retired, node) {
		if (i++ < done)
			continue;
		err = bft_put_method(skb, cb, m, m->name,
				     bft_method_path(m, buf));
		if (err)
			goto out;
		cb->args[0] = i;
	}
out:
	mutex_unlock(&bft_lock);
	kfree(buf);
	if (err == -EMSGSIZE && skb->len)
		return skb->len;
	return err ?: skb->len;
}

static int bft_put_exc_type(struct sk_buff *skb, struct netlink_callback *cb,
			    pid_t tgid, u32 id, const char *name)
{
	void *hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				cb->nlh->nlmsg_seq, &bft_family, NLM_F_MULTI,
				BFT_CMD_GET_EXCEPTIONS);
	struct nlattr *nest = NULL;

	if (!hdr)
		return -EMSGSIZE;
	if (!nla_put_u32(skb, BFT_A_TGID, tgid))
		nest = nla_nest_start(skb, BFT_A_EXC);
	if (!nest || nla_put_u32(skb, BFT_X_ID, id) ||
	    nla_put_string(skb, BFT_X_NAME, name)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
}

/* cb->args[0]: how many types earlier calls have sent. */
static int bft_dump_exceptions(struct sk_buff *skb,
			       struct netlink_callback *cb)
{
	int err = bft_check_capable(cb->skb, cb->extack);

	if (err)
		return err;
	err = bft_unwind_dump_types(skb, cb, bft_put_exc_type);
	if (err == -EMSGSIZE && skb->len)
		return skb->len;
	return err ?: skb->len;
}

#define BFT_OP(c, fn, pol, fl) {				\
	.cmd = (c), .doit = (fn), .policy = (pol),		\
	.maxattr = BFT_A_MAX, .flags = (fl),			\
}

static const struct genl_ops bft_ops[] = {
	BFT_OP(BFT_CMD_GET_CAPS, bft_cmd_get_caps, bft_none_policy, 0),
	BFT_OP(BFT_CMD_ATTACH, bft_cmd_attach, bft_attach_policy, 0),
	BFT_OP(BFT_CMD_DETACH, bft_cmd_detach, bft_detach_policy, 0),
	BFT_OP(BFT_CMD_START, bft_cmd_mode, bft_start_policy, 0),
	BFT_OP(BFT_CMD_STOP, bft_cmd_mode, bft_none_policy, 0),
	BFT_OP(BFT_CMD_PAUSE, bft_cmd_mode, bft_none_policy, 0),
	BFT_OP(BFT_CMD_UNPAUSE, bft_cmd_mode, bft_none_policy, 0),
	BFT_OP(BFT_CMD_SUSPEND, bft_cmd_mode, bft_none_policy, 0),
	BFT_OP(BFT_CMD_UNSUSPEND, bft_cmd_mode, bft_none_policy, 0),
	BFT_OP(BFT_CMD_GET_STATUS, bft_cmd_get_status, bft_none_policy, 0),
	BFT_OP(BFT_CMD_GET_OPT, bft_cmd_opt, bft_opt_policy, 0),
	BFT_OP(BFT_CMD_SET_OPT, bft_cmd_opt, bft_opt_policy, 0),
	{
		.cmd = BFT_CMD_GET_METHODS,
		.start = bft_dump_start,
		.dumpit = bft_dump_methods,
		.policy = bft_none_policy,
		.maxattr = BFT_A_MAX,
	},
	{
		.cmd = BFT_CMD_GET_EXCEPTIONS,
		.start = bft_dump_start,
		.dumpit = bft_dump_exceptions,
		.policy = bft_none_policy,
		.maxattr = BFT_A_MAX,
	},
};

static const struct genl_multicast_group bft_mcgrps[] = {
	/* the core checks groups only for these two capabilities */
	{ .name = BFT_MCGRP_EVENTS, .flags = GENL_MCAST_CAP_SYS_ADMIN },
};

static struct genl_family bft_family = {
	.name = BFT_GENL_NAME,
	.version = BFT_GENL_VERSION,
	.maxattr = BFT_A_MAX,
	.module = THIS_MODULE,
	.ops = bft_ops,
	.n_ops = ARRAY_SIZE(bft_ops),
	.mcgrps = bft_mcgrps,
	.n_mcgrps = ARRAY_SIZE(bft_mcgrps),
};

/* ---- events ---- */

static struct sk_buff *bft_event_new(u8 event, size_t size, void **hdr)
{
	struct sk_buff *skb;

	if (!READ_ONCE(bft_family_live) || bft_events_withheld ||
	    !genl_has_listeners(&bft_family, &init_net, 0))
		return NULL;
	skb = genlmsg_new(nla_total_size(sizeof(u8)) + size, GFP_KERNEL);
	if (!skb)
		return NULL;
	*hdr = genlmsg_put(skb, 0, 0, &bft_family, 0, BFT_CMD_EVENT);
	if (!*hdr || nla_put_u8(skb, BFT_A_EVENT, event)) {
		nlmsg_free(skb);
		return NULL;
	}
	return skb;
}

#ifdef BFT_HAVE_BROADCAST_FILTER
/*
 * The core checks the group's capability when a socket joins a group id
 * that a family owns; an id that nobody owns yet (the family autoloads by
 * alias, and a reloaded module may get its old id back) is joined with no
 * check.  So the rule is applied again here, to the socket's opener: a
 * socket that joined early, or was handed over, gets nothing.
 */
static int bft_event_filter(struct sock *dsk, struct sk_buff *skb, void *data)
{
	struct socket *sock = dsk->sk_socket;

	return !sock || !sock->file ||
	       !file_ns_capable(sock->file, &init_user_ns, CAP_SYS_ADMIN);
}

static void bft_event_multicast(struct sk_buff *skb)
{
	u32 group = bft_family.mcgrp_offset;

	NETLINK_CB(skb).dst_group = group;
	netlink_broadcast_filtered(init_net.genl_sock, skb, 0, group,
				   GFP_KERNEL, bft_event_filter, NULL);
}
#else
static void bft_event_multicast(struct sk_buff *skb)
{
	genlmsg_multicast(&bft_family, skb, 0, 0, GFP_KERNEL);
}
#endif

static void bft_event_send(struct sk_buff *skb, void *hdr, int err)
{
	if (err) {
		nlmsg_free(skb);
		return;
	}
	genlmsg_end(skb, hdr);
	bft_event_multicast(skb);
}

void bft_notify_mode(int mode)
{
	void *hdr;
	struct sk_buff *skb = bft_event_new(BFT_EV_MODE,
					    nla_total_size(sizeof(u8)), &hdr);

	if (skb)
		bft_event_send(skb, hdr, nla_put_u8(skb, BFT_A_MODE, mode));
}

void bft_notify_target_exit(pid_t tgid, u32 nr_probes)
{
	void *hdr;
	struct sk_buff *skb = bft_event_new(BFT_EV_TARGET_EXIT,
					    2 * nla_total_size(sizeof(u32)),
					    &hdr);

	if (skb)
		bft_event_send(skb, hdr,
			       nla_put_u32(skb, BFT_A_TGID, tgid) ||
			       nla_put_u32(skb, BFT_A_NR_PROBES, nr_probes));
}

void bft_notify_probe_failed(pid_t tgid, u32 method_id, int err)
{
	struct nlattr *nest;
	void *hdr;
	struct sk_buff *skb = bft_event_new(BFT_EV_PROBE_FAILED,
					    nla_total_size(0) +
					    3 * nla_total_size(sizeof(u32)),
					    &hdr);

	if (!skb)
		return;
	nest = NULL;
	if (!nla_put_u32(skb, BFT_A_TGID, tgid) &&
	    !nla_put_s32(skb, BFT_A_ERRNO, -err))
		nest = nla_nest_start(skb, BFT_A_PROBE);
	if (nest && !nla_put_u32(skb, BFT_P_METHOD_ID, method_id))
		nla_nest_end(skb, nest);
	else
		nest = NULL;
	bft_event_send(skb, hdr, nest ? 0 : -EMSGSIZE);
}

void bft_notify_heartbeat(void)
{
	void *hdr;
	struct sk_buff *skb = bft_event_new(BFT_EV_HEARTBEAT,
					    2 * nla_total_size(sizeof(u32)) +
					    bft_cpu_stats_size(), &hdr);

	if (skb)
		bft_event_send(skb, hdr,
			       nla_put_u8(skb, BFT_A_MODE, READ_ONCE(bft_mode)) ||
			       nla_put_u32(skb, BFT_A_FILL_PERMILLE,
					   bft_rings_fill_permille()) ||
			       bft_put_cpu_stats(skb));
}

int bft_genl_init(void)
{
	int err = genl_register_family(&bft_family);

	if (err)
		return err;
#ifndef BFT_HAVE_BROADCAST_FILTER
	if (genl_has_listeners(&bft_family, &init_net, 0)) {
		bft_events_withheld = true;
		pr_notice("bftrace: the events group had a member before the family existed; this kernel cannot filter a broadcast, so no events are sent until the module is loaded again\n");
	}
#endif
	WRITE_ONCE(bft_family_live, true);
	return 0;
}

void bft_genl_exit(void)
{
	WRITE_ONCE(bft_family_live, false);
	genl_unregister_family(&bft_family);
}
