// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF backend as a capture backend (bft_backend.h): the table of
 * operations over bft_bpf.h.  It sends no events and has no exception
 * hooks, and its reader does the flush work the module's timers do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "capture/bft_backend.h"
#include "capture/bft_bpf.h"

/* The reader, and the session whose errmsg() says why it failed. */
struct bft_backend_rings {
	struct bft_bpf_rings *r;
	struct bft_bpf *b;
};

static int bpf_open(void **h, enum bft_backend_open how, char *err,
		    size_t errlen)
{
	struct bft_bpf *b = NULL;
	int e;

	if (how == BFT_BACKEND_LAZY)
		e = bft_bpf_open_lazy(&b, err, errlen);
	else
		e = bft_bpf_open(&b, how == BFT_BACKEND_CREATE, err, errlen);
	*h = b;
	return e;
}

static void bpf_close(void *h)
{
	bft_bpf_close(h);
}

static const char *bpf_errmsg(const void *h)
{
	return h ? bft_bpf_errmsg(h) : "";
}

static const char *bpf_notice(const void *h)
{
	return bft_bpf_notice(h);
}

/*
 * No bpf(), no BTF or a kernel without attach cookies (ENOTSUP and
 * EOPNOTSUPP are one errno on Linux), no bpffs.
 */
static bool bpf_absent(int e)
{
	return e == -ENOSYS || e == -EOPNOTSUPP || e == -ENODEV;
}

static const char *bpf_open_subject(int e)
{
	(void)e;
	return "BPF backend";
}

static void bpf_describe(const void *h, char *buf, size_t len)
{
	snprintf(buf, len, "BPF backend, session %s %s (%s)",
		 bft_bpf_loaded() ? "pinned at" : "to be made at",
		 bft_bpf_pin_dir(), bft_bpf_multi(h) ?
		 "uprobe_multi links" : "one link per function");
}

static int bpf_get_caps(void *h, struct bft_nl_caps *caps)
{
	return bft_bpf_get_caps(h, caps);
}

static int bpf_attach(void *h, uint32_t tgid, const struct bft_nl_probe *p,
		      size_t n, int *results)
{
	return bft_bpf_attach(h, tgid, p, n, results);
}

static int bpf_detach(void *h, uint32_t tgid)
{
	return bft_bpf_detach(h, tgid);
}

static int bpf_detach_some(void *h, uint32_t tgid, const uint32_t *ids,
			   size_t n)
{
	return bft_bpf_detach_some(h, tgid, ids, n);
}

static int bpf_start(void *h, bool persist, uint8_t *mode)
{
	return bft_bpf_start(h, persist, mode);
}

static int bpf_mode_cmd(void *h, int cmd, uint8_t *mode)
{
	return bft_bpf_mode_cmd(h, cmd, mode);
}

static int bpf_get_status(void *h, struct bft_nl_status *st)
{
	return bft_bpf_get_status(h, st);
}

static int bpf_get_opt(void *h, uint32_t id, struct bft_nl_opt *out)
{
	return bft_bpf_get_opt(h, id, out);
}

static int bpf_get_opts(void *h, struct bft_nl_opt *out, size_t cap,
			size_t *n)
{
	return bft_bpf_get_opts(h, out, cap, n);
}

static int bpf_set_opt(void *h, uint32_t id, uint64_t value,
		       struct bft_nl_opt *out)
{
	return bft_bpf_set_opt(h, id, value, out);
}

static int bpf_get_methods(void *h, bft_nl_method_cb cb, void *arg)
{
	return bft_bpf_get_methods(h, cb, arg);
}

/* No exception hooks, so no types. */
static int bpf_get_exceptions(void *h, bft_nl_exception_cb cb, void *arg)
{
	(void)h;
	(void)cb;
	(void)arg;
	return 0;
}

static int bpf_flush(void *h, bool heartbeat)
{
	return bft_bpf_flush(h, heartbeat);
}

static int bpf_rings_open(void *h, struct bft_backend_rings **rp,
			  const char *dev, unsigned int nr_cpus,
			  bft_rings_cb cb, void *arg, char *err, size_t errlen)
{
	struct bft_backend_rings *r = calloc(1, sizeof(*r));
	int e;

	(void)dev;
	(void)nr_cpus;
	*rp = NULL;
	if (!r)
		return -ENOMEM;
	r->b = h;
	e = bft_bpf_rings_open(h, &r->r, cb, arg);
	if (e) {
		snprintf(err, errlen, "BPF rings: %s", bft_bpf_errmsg(h));
		free(r);
		return e;
	}
	*rp = r;
	return 0;
}

static void bpf_rings_close(struct bft_backend_rings *r)
{
	if (!r)
		return;
	bft_bpf_rings_close(r->r);
	free(r);
}

static const char *bpf_rings_errmsg(const struct bft_backend_rings *r)
{
	return bft_bpf_errmsg(r->b);
}

/*
 * A BPF ring wakes its reader only when it crosses its watermark; below
 * that it is read at each flush.
 */
static int bpf_rings_fd(struct bft_backend_rings *r)
{
	return bft_bpf_rings_fd(r->r);
}

static int bpf_rings_woken(struct bft_backend_rings *r)
{
	return bft_bpf_rings_woken(r->r);
}

static bool bpf_rings_behind(const struct bft_backend_rings *r)
{
	return bft_bpf_rings_behind(r->r);
}

/* Nothing to rearm: every ring is read at every flush. */
static void bpf_rings_rearm(struct bft_backend_rings *r)
{
	(void)r;
}

static ssize_t bpf_rings_poll(struct bft_backend_rings *r, int timeout_ms)
{
	return bft_bpf_rings_poll(r->r, timeout_ms);
}

static ssize_t bpf_rings_drain(struct bft_backend_rings *r, int quiet_ms,
			       int max_ms)
{
	return bft_bpf_rings_drain(r->r, quiet_ms, max_ms);
}

/* The status is a map read either way. */
static int bpf_rings_status(void *h, struct bft_backend_rings *r,
			    struct bft_nl_status *st)
{
	(void)r;
	return bft_bpf_get_status(h, st);
}

const struct bft_backend_ops bft_backend_bpf = {
	.name = "bpf",
	.label = "BPF backend",
	.what = "the BPF backend",
	.rings_name = "BPF rings",
	.root_only = "the BPF backend's session needs root (its guard process and pinned objects)",
	.closed = "BPF session closed (it stays pinned unless this bfctl started it without --persist)",
	.features = BFT_BPF_FEATURES,
	.open = bpf_open,
	.close = bpf_close,
	.errmsg = bpf_errmsg,
	.notice = bpf_notice,
	.where = bft_bpf_pin_dir,
	.absent = bpf_absent,
	.open_subject = bpf_open_subject,
	.describe = bpf_describe,
	.get_caps = bpf_get_caps,
	.attach = bpf_attach,
	.detach = bpf_detach,
	.detach_some = bpf_detach_some,
	.start = bpf_start,
	.mode_cmd = bpf_mode_cmd,
	.get_status = bpf_get_status,
	.get_opt = bpf_get_opt,
	.get_opts = bpf_get_opts,
	.set_opt = bpf_set_opt,
	.get_methods = bpf_get_methods,
	.get_exceptions = bpf_get_exceptions,
	.flush = bpf_flush,
	.rings_open = bpf_rings_open,
	.rings_close = bpf_rings_close,
	.rings_errmsg = bpf_rings_errmsg,
	.rings_fd = bpf_rings_fd,
	.rings_woken = bpf_rings_woken,
	.rings_behind = bpf_rings_behind,
	.rings_rearm = bpf_rings_rearm,
	.rings_poll = bpf_rings_poll,
	.rings_drain = bpf_rings_drain,
	.rings_status = bpf_rings_status,
};
