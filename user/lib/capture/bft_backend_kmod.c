// SPDX-License-Identifier: GPL-2.0
/*
 * bftrace.ko as a capture backend (bft_backend.h): the table of
 * operations over its netlink client (bft_nl.h) and its ring reader
 * (bft_rings.h, with BFT_IOC_STATUS through bft_dev_status.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "capture/bft_backend.h"
#include "capture/bft_dev_status.h"

/* The rings, and what bft_rings_poll() and _drain() hand their bytes to. */
struct bft_backend_rings {
	struct bft_rings *r;
	bft_rings_cb cb;
	void *arg;
	bool status_by_nl;	/* the module has no BFT_IOC_STATUS */
};

/* A module session is its socket: there is nothing to create or defer. */
static int kmod_open(void **h, enum bft_backend_open how, char *err,
		     size_t errlen)
{
	struct bft_nl *nl = NULL;
	int e;

	(void)how;
	e = bft_nl_open(&nl, err, errlen);
	*h = nl;
	return e;
}

static void kmod_close(void *h)
{
	if (h)
		bft_nl_close(h);
}

static const char *kmod_errmsg(const void *h)
{
	return h ? bft_nl_errmsg(h) : "";
}

static const char *kmod_notice(const void *h)
{
	(void)h;
	return "";
}

/* The family is not registered: the module is not loaded. */
static bool kmod_absent(int e)
{
	return e == -ENOENT;
}

static const char *kmod_open_subject(int e)
{
	return kmod_absent(e) ? "" : "cannot open the bftrace netlink socket";
}

static void kmod_describe(const void *h, char *buf, size_t len)
{
	snprintf(buf, len, "netlink family \"%s\" id %u version %u, events group %u",
		 BFT_GENL_NAME, bft_nl_family_id(h), bft_nl_family_version(h),
		 bft_nl_events_group_id(h));
}

/* Only the kernel's extack text says why; a module without it, nothing. */
static bool kmod_explains(const void *h)
{
	return bft_nl_err_is_extack(h);
}

/* The module detaches what a socket attached outside a session as it closes. */
static int kmod_fd(const void *h)
{
	return bft_nl_fd(h);
}

static int kmod_get_caps(void *h, struct bft_nl_caps *caps)
{
	return bft_nl_get_caps(h, caps);
}

static int kmod_attach(void *h, uint32_t tgid, const struct bft_nl_probe *p,
		       size_t n, int *results)
{
	return bft_nl_attach(h, tgid, p, n, results);
}

static void kmod_attach_persist(void *h, bool persist)
{
	bft_nl_set_attach_persist(h, persist);
}

static int kmod_detach(void *h, uint32_t tgid)
{
	return bft_nl_detach(h, tgid);
}

static int kmod_detach_some(void *h, uint32_t tgid, const uint32_t *ids,
			    size_t n)
{
	return bft_nl_detach_some(h, tgid, ids, n);
}

static int kmod_start(void *h, bool persist, uint8_t *mode)
{
	return bft_nl_start(h, persist, mode);
}

static int kmod_mode_cmd(void *h, int cmd, uint8_t *mode)
{
	return bft_nl_mode_cmd(h, cmd, mode);
}

static int kmod_get_status(void *h, struct bft_nl_status *st)
{
	return bft_nl_get_status(h, st);
}

static int kmod_get_opt(void *h, uint32_t id, struct bft_nl_opt *out)
{
	return bft_nl_get_opt(h, id, out);
}

static int kmod_get_opts(void *h, struct bft_nl_opt *out, size_t cap,
			 size_t *n)
{
	return bft_nl_get_opts(h, out, cap, n);
}

static int kmod_set_opt(void *h, uint32_t id, uint64_t value,
			struct bft_nl_opt *out)
{
	return bft_nl_set_opt(h, id, value, out);
}

static int kmod_get_methods(void *h, bft_nl_method_cb cb, void *arg)
{
	return bft_nl_get_methods(h, cb, arg);
}

static int kmod_get_exceptions(void *h, bft_nl_exception_cb cb, void *arg)
{
	return bft_nl_get_exceptions(h, cb, arg);
}

static int kmod_events_open(void **ev, char *err, size_t errlen)
{
	struct bft_nl *nl = NULL;
	int e = bft_nl_open_events(&nl, err, errlen);

	*ev = nl;
	return e;
}

static void kmod_events_close(void *ev)
{
	if (ev)
		bft_nl_close(ev);
}

static int kmod_events_fd(const void *ev)
{
	return bft_nl_fd(ev);
}

static int kmod_events_recv(void *ev, struct bft_nl_event *e, int timeout_ms)
{
	return bft_nl_event_recv(ev, e, timeout_ms);
}

static int kmod_rings_open(void *h, struct bft_backend_rings **rp,
			   const char *dev, unsigned int nr_cpus,
			   bft_rings_cb cb, void *arg, char *err, size_t errlen)
{
	struct bft_backend_rings *r = calloc(1, sizeof(*r));
	int e;

	(void)h;
	*rp = NULL;
	if (!r)
		return -ENOMEM;
	e = bft_rings_open(&r->r, dev, nr_cpus, err, errlen);
	if (e) {
		free(r);
		return e;
	}
	r->cb = cb;
	r->arg = arg;
	*rp = r;
	return 0;
}

static void kmod_rings_close(struct bft_backend_rings *r)
{
	if (!r)
		return;
	bft_rings_close(r->r);
	free(r);
}

static const char *kmod_rings_errmsg(const struct bft_backend_rings *r)
{
	return bft_rings_errmsg(r->r);
}

/*
 * Readable when a ring holds a watermark's worth, or what the flush timer
 * sealed: an idle reader need not wake to look at empty rings.
 */
static int kmod_rings_fd(struct bft_backend_rings *r)
{
	return bft_rings_wait_fd(r->r);
}

/* The module does not say which ring woke: the poll finds out. */
static int kmod_rings_woken(struct bft_backend_rings *r)
{
	(void)r;
	return 1;
}

/* The module's timer seals what lies below the watermark. */
static bool kmod_rings_behind(const struct bft_backend_rings *r)
{
	(void)r;
	return false;
}

static void kmod_rings_rearm(struct bft_backend_rings *r)
{
	bft_rings_rearm(r->r);
}

static ssize_t kmod_rings_poll(struct bft_backend_rings *r, int timeout_ms)
{
	return bft_rings_poll(r->r, timeout_ms, r->cb, r->arg);
}

static ssize_t kmod_rings_drain(struct bft_backend_rings *r, int quiet_ms,
				int max_ms)
{
	return bft_rings_drain(r->r, quiet_ms, max_ms, r->cb, r->arg);
}

/*
 * Through BFT_IOC_STATUS on a ring's file when the rings are open (a
 * netlink round trip costs several times as much, and bfcollector's
 * counters ask ten times a second), else, or from a module without the
 * ioctl, over netlink.
 */
static int kmod_rings_status(void *h, struct bft_backend_rings *r,
			     struct bft_nl_status *st)
{
	int fd = r ? bft_rings_dev_fd(r->r) : -1;
	int e;

	if (fd >= 0 && !r->status_by_nl) {
		e = bft_dev_status(fd, st);
		if (e != -ENOTTY)
			return e;
		r->status_by_nl = true;
	}
	return bft_nl_get_status(h, st);
}

const struct bft_backend_ops bft_backend_kmod = {
	.name = "kmod",
	.label = "module",
	.what = "bftrace.ko",
	.rings_name = "rings",
	.closed = "connection closed",
	.open = kmod_open,
	.close = kmod_close,
	.errmsg = kmod_errmsg,
	.notice = kmod_notice,
	.absent = kmod_absent,
	.open_subject = kmod_open_subject,
	.describe = kmod_describe,
	.explains = kmod_explains,
	.fd = kmod_fd,
	.get_caps = kmod_get_caps,
	.attach = kmod_attach,
	.attach_persist = kmod_attach_persist,
	.detach = kmod_detach,
	.detach_some = kmod_detach_some,
	.start = kmod_start,
	.mode_cmd = kmod_mode_cmd,
	.get_status = kmod_get_status,
	.get_opt = kmod_get_opt,
	.get_opts = kmod_get_opts,
	.set_opt = kmod_set_opt,
	.get_methods = kmod_get_methods,
	.get_exceptions = kmod_get_exceptions,
	.events_open = kmod_events_open,
	.events_close = kmod_events_close,
	.events_fd = kmod_events_fd,
	.events_recv = kmod_events_recv,
	.rings_open = kmod_rings_open,
	.rings_close = kmod_rings_close,
	.rings_errmsg = kmod_rings_errmsg,
	.rings_fd = kmod_rings_fd,
	.rings_woken = kmod_rings_woken,
	.rings_behind = kmod_rings_behind,
	.rings_rearm = kmod_rings_rearm,
	.rings_poll = kmod_rings_poll,
	.rings_drain = kmod_rings_drain,
	.rings_status = kmod_rings_status,
};
