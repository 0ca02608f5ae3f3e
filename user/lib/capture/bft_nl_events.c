// SPDX-License-Identifier: GPL-2.0
/*
 * bft_nl_events: BFT_CMD_EVENT multicasts on an events handle, read one
 * at a time from the datagrams that carry them.
 */
#include "capture/bft_nl_internal.h"
#include "bft_util.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

_Static_assert((int)BFT_P_METHOD_ID == (int)BFT_A_NR_CPUS,
	       "see bft_nl_event_parse()");

int bft_nl_event_parse(struct bft_nl *nl, const struct nlmsghdr *nlh,
		       struct bft_nl_event *ev)
{
	const struct nlattr *tb[BFT_A_MAX + 1];

	memset(ev, 0, sizeof(*ev));
	if (bft_nl_msg_parse(nl, nlh, tb, BFT_A_MAX, bft_nl_top_types, "event", &ev->have))
		return -EPROTO;
	if (!tb[BFT_A_EVENT])
		return bft_nl_err_set(nl, -EPROTO, "event without BFT_A_EVENT");
	ev->type = mnl_attr_get_u8(tb[BFT_A_EVENT]);
	attr_take_u8(tb[BFT_A_MODE], &ev->mode);
	attr_take_u32(tb[BFT_A_TGID], &ev->tgid);
	attr_take_u32(tb[BFT_A_FILL_PERMILLE], &ev->fill_permille);
	attr_take_u32(tb[BFT_A_NR_PROBES], &ev->nr_probes);
	if (tb[BFT_A_ERRNO])
		ev->error = (int32_t)mnl_attr_get_u32(tb[BFT_A_ERRNO]);
	/*
	 * PROBE_FAILED carries BFT_P_METHOD_ID at the top, where its number
	 * is BFT_A_NR_CPUS's; or inside a BFT_A_PROBE nest.
	 */
	if (ev->type == BFT_EV_PROBE_FAILED) {
		if (tb[BFT_A_PROBE]) {
			const struct nlattr *pt[BFT_P_MAX + 1];

			if (bft_nl_nest_parse(nl, tb[BFT_A_PROBE], pt, BFT_P_MAX,
					      bft_nl_probe_types, "event probe", NULL))
				return -EPROTO;
			attr_take_u32(pt[BFT_P_METHOD_ID], &ev->method_id);
		} else {
			attr_take_u32(tb[BFT_P_METHOD_ID], &ev->method_id);
		}
	}
	if (tb[BFT_A_CPU_STATS])
		return bft_nl_cpu_stats_parse(nl, tb[BFT_A_CPU_STATS], &ev->cpus,
					      &ev->nr_cpus);
	return 0;
}

int bft_nl_event_recv(struct bft_nl *nl, struct bft_nl_event *ev,
		      int timeout_ms)
{
	int64_t deadline = timeout_ms > 0 ? bft_mono_ms() + timeout_ms : 0;

	bft_nl_err_clear(nl);
	if (!nl->events)
		return bft_nl_err_set(nl, -EINVAL, "not an events handle");
	for (;;) {
		/* First whatever the last datagram still holds. */
		while (nl->ev_off < nl->ev_len) {
			const struct nlmsghdr *nlh =
				(const void *)(nl->rbuf + nl->ev_off);
			int left = (int)(nl->ev_len - nl->ev_off);
			const struct genlmsghdr *g;

			if (!bft_nl_msg_fits(nlh, left)) {
				nl->ev_len = 0;
				break;
			}
			nl->ev_off += MNL_ALIGN(nlh->nlmsg_len);
			if (nlh->nlmsg_type != nl->family ||
			    mnl_nlmsg_get_payload_len(nlh) < GENL_HDRLEN)
				continue;
			g = mnl_nlmsg_get_payload(nlh);
			if (g->cmd != BFT_CMD_EVENT)
				continue;
			return bft_nl_event_parse(nl, nlh, ev);
		}
		nl->ev_off = nl->ev_len = 0;

		struct pollfd pfd = { .fd = bft_nl_fd(nl), .events = POLLIN };
		int wait = timeout_ms < 0 ? -1 : 0;
		ssize_t len;
		int r;

		if (timeout_ms > 0) {
			int64_t left = deadline - bft_mono_ms();

			wait = left > 0 ? (int)left : 0;
		}
		r = poll(&pfd, 1, wait);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return bft_nl_err_set(nl, -errno, "poll: %s", strerror(errno));
		}
		if (r == 0)
			return bft_nl_err_set(nl, -ETIMEDOUT, "no event within %d ms",
					      timeout_ms);
		len = recv(pfd.fd, nl->rbuf, sizeof(nl->rbuf), MSG_DONTWAIT);
		if (len < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			if (errno == ENOBUFS)
				return bft_nl_err_set(nl, -ENOBUFS,
						      "events lost: the socket overran");
			return bft_nl_err_set(nl, -errno, "netlink receive: %s",
					      strerror(errno));
		}
		nl->ev_len = (size_t)len;
	}
}

void bft_nl_event_free(struct bft_nl_event *ev)
{
	free(ev->cpus);
	ev->cpus = NULL;
	ev->nr_cpus = 0;
}
