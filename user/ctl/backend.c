// SPDX-License-Identifier: GPL-2.0
/*
 * The capture backend bfctl drives: bftrace.ko over netlink, or the BPF
 * backend (bft_bpf.h).  Every command goes through these calls, which
 * take and return the same values either way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bfctl.h"

const char *ctl_backend_name(const struct ctl *c)
{
	return c->bpf ? "bpf" : "kmod";
}

int ctl_backend_choose(struct ctl *c)
{
	const char *b = c->backend ? c->backend : getenv("BFT_BACKEND");

	if (!b || !*b || !strcmp(b, "auto")) {
		/* the module if it is loaded; else BPF, unless it cannot run */
		c->use_bpf = access("/sys/module/bftrace", F_OK) != 0;
		return 0;
	}
	if (!strcmp(b, "kmod")) {
		c->use_bpf = false;
		return 0;
	}
	if (!strcmp(b, "bpf")) {
		c->use_bpf = true;
		return 0;
	}
	err_msg("unknown backend '%s' (kmod, bpf or auto)", b);
	return -EINVAL;
}

const char *ctl_errmsg(const struct ctl *c)
{
	if (c->bpf)
		return bft_bpf_errmsg(c->bpf);
	return c->nl ? bft_nl_errmsg(c->nl) : "";
}

int ctl_attach(struct ctl *c, uint32_t tgid, const struct bft_nl_probe *p,
	       size_t n, int *results)
{
	if (c->bpf)
		return bft_bpf_attach(c->bpf, tgid, p, n, results);
	return bft_nl_attach(c->nl, tgid, p, n, results);
}

int ctl_detach(struct ctl *c, uint32_t tgid)
{
	if (c->bpf)
		return bft_bpf_detach(c->bpf, tgid);
	return bft_nl_detach(c->nl, tgid);
}

int ctl_mode_cmd(struct ctl *c, int cmd, uint8_t *mode)
{
	if (c->bpf)
		return bft_bpf_mode_cmd(c->bpf, cmd, mode);
	return bft_nl_mode_cmd(c->nl, cmd, mode);
}

int ctl_start(struct ctl *c, bool persist, uint8_t *mode)
{
	if (c->bpf)
		return bft_bpf_start(c->bpf, persist, mode);
	return bft_nl_start(c->nl, persist, mode);
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
	if (c->bpf)
		return bft_bpf_get_status(c->bpf, st);
	return bft_nl_get_status(c->nl, st);
}

int ctl_get_opt(struct ctl *c, uint32_t id, struct bft_nl_opt *out)
{
	if (c->bpf)
		return bft_bpf_get_opt(c->bpf, id, out);
	return bft_nl_get_opt(c->nl, id, out);
}

int ctl_get_opts(struct ctl *c, struct bft_nl_opt *out, size_t cap, size_t *n)
{
	if (c->bpf)
		return bft_bpf_get_opts(c->bpf, out, cap, n);
	return bft_nl_get_opts(c->nl, out, cap, n);
}

int ctl_set_opt(struct ctl *c, uint32_t id, uint64_t value,
		struct bft_nl_opt *out)
{
	if (c->bpf)
		return bft_bpf_set_opt(c->bpf, id, value, out);
	return bft_nl_set_opt(c->nl, id, value, out);
}

int ctl_get_methods(struct ctl *c, bft_nl_method_cb cb, void *arg)
{
	if (c->bpf)
		return bft_bpf_get_methods(c->bpf, cb, arg);
	return bft_nl_get_methods(c->nl, cb, arg);
}
