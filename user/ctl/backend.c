// SPDX-License-Identifier: GPL-2.0
/*
 * The capture backend bfctl drives, chosen by bft_backend_choose() and
 * called through its table (bft_backend.h): bftrace.ko over netlink, or
 * the BPF backend.  Every command goes through these calls, which take and
 * return the same values either way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bfctl.h"

const char *ctl_backend_name(const struct ctl *c)
{
	return c->beh ? c->be->name : bft_backend_kmod.name;
}

int ctl_backend_choose(struct ctl *c)
{
	char err[160];

	if (bft_backend_choose(c->backend, &c->be, err, sizeof(err))) {
		err_msg("%s", err);
		return -EINVAL;
	}
	return 0;
}

const struct bft_backend_ops *ctl_backend(const struct ctl *c)
{
	return c->be ? c->be : &bft_backend_kmod;
}

const char *ctl_errmsg(const struct ctl *c)
{
	return c->beh ? c->be->errmsg(c->beh) : "";
}

int ctl_attach(struct ctl *c, uint32_t tgid, const struct bft_nl_probe *p,
	       size_t n, int *results)
{
	return c->be->attach(c->beh, tgid, p, n, results);
}

void ctl_attach_persist(struct ctl *c)
{
	if (c->be->attach_persist &&
	    (c->caps.features & BFT_FEAT_ATTACH_PERSIST))
		c->be->attach_persist(c->beh, true);
}

int ctl_detach(struct ctl *c, uint32_t tgid)
{
	return c->be->detach(c->beh, tgid);
}

int ctl_detach_some(struct ctl *c, uint32_t tgid, const uint32_t *ids, size_t n)
{
	if (!c->be->detach_some || !(c->caps.features & BFT_FEAT_DETACH_SOME))
		return -EOPNOTSUPP;
	return c->be->detach_some(c->beh, tgid, ids, n);
}

int ctl_mode_cmd(struct ctl *c, int cmd, uint8_t *mode)
{
	return c->be->mode_cmd(c->beh, cmd, mode);
}

int ctl_start(struct ctl *c, bool persist, uint8_t *mode)
{
	return c->be->start(c->beh, persist, mode);
}

/*
 * Readers of the rings, of st: 0 or more; -1 when the backend does not
 * say (a module older than BFT_S_READER).
 */
int ctl_readers(const struct bft_nl_status *st)
{
	int n = 0;

	for (uint32_t i = 0; i < st->nr_cpus; i++) {
		if (!(st->cpus[i].have & (1u << BFT_S_READER)))
			return -1;
		n += st->cpus[i].reader;
	}
	return n;
}

/* A session that records with nothing reading fills its rings, then loses. */
void ctl_warn_no_reader(struct ctl *c)
{
	struct bft_nl_status st;

	if (ctl_get_status(c, &st))
		return;
	if (st.nr_cpus && ctl_readers(&st) == 0)
		err_msg("nothing reads the rings: each fills (%u KiB per CPU) and then loses events; run 'bfctl record' in another shell, or bfcollector",
			st.cpus[0].size / 1024);
	bft_nl_status_free(&st);
}

int ctl_get_status(struct ctl *c, struct bft_nl_status *st)
{
	return c->be->get_status(c->beh, st);
}

int ctl_get_opt(struct ctl *c, uint32_t id, struct bft_nl_opt *out)
{
	return c->be->get_opt(c->beh, id, out);
}

int ctl_get_opts(struct ctl *c, struct bft_nl_opt *out, size_t cap, size_t *n)
{
	return c->be->get_opts(c->beh, out, cap, n);
}

int ctl_set_opt(struct ctl *c, uint32_t id, uint64_t value,
		struct bft_nl_opt *out)
{
	return c->be->set_opt(c->beh, id, value, out);
}

int ctl_get_methods(struct ctl *c, bft_nl_method_cb cb, void *arg)
{
	return c->be->get_methods(c->beh, cb, arg);
}
