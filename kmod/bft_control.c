// SPDX-License-Identifier: GPL-2.0
/*
 * Modes, options, and the two periodic works: the flush timer and the
 * heartbeat.
 */
#include <linux/workqueue.h>

#include "bft_internal.h"

/* targets, probes, mode transitions and options; see bft_internal.h */
DEFINE_MUTEX(bft_lock);
int bft_mode = BFT_MODE_INITIALIZING;

/* Defaults from bft_opt_rule(), by bft_control_init(). */
struct bft_opts bft_opts;

/* Where each option lives; NULL: defined by the protocol, unsupported. */
static u32 *const bft_opt_vals[BFT_OPT_MAX + 1] = {
	[BFT_OPT_BUF_SIZE] = &bft_opts.buf_size,
	[BFT_OPT_FLUSH_MS] = &bft_opts.flush_ms,
	[BFT_OPT_HEARTBEAT_MS] = &bft_opts.heartbeat_ms,
	[BFT_OPT_MAX_DEPTH] = &bft_opts.max_depth,
	[BFT_OPT_TIME_RES_NS] = &bft_opts.time_res_ns,
	[BFT_OPT_WATERMARK] = &bft_opts.watermark,
	[BFT_OPT_MAX_PROBES] = &bft_opts.max_probes,
	[BFT_OPT_MAX_RING_MEM] = &bft_opts.max_ring_mem,
};

static bool bft_exiting;
static bool bft_works_armed;	/* under bft_lock */
static void bft_flush_fn(struct work_struct *work);
static void bft_heartbeat_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(bft_flush_work, bft_flush_fn);
static DECLARE_DELAYED_WORK(bft_heartbeat_work, bft_heartbeat_fn);

static void bft_rearm(struct delayed_work *dw, u32 ms)
{
	if (READ_ONCE(bft_works_armed) && !READ_ONCE(bft_exiting))
		mod_delayed_work(system_wq, dw, msecs_to_jiffies(ms));
}

static void bft_flush_fn(struct work_struct *work)
{
	bft_rings_flush(bft_recording(READ_ONCE(bft_mode)));
	/* a control command holds the lock: reap on the next round */
	if (mutex_trylock(&bft_lock)) {
		bft_targets_reap();
		mutex_unlock(&bft_lock);
	}
	bft_rearm(&bft_flush_work, READ_ONCE(bft_opts.flush_ms));
}

static void bft_heartbeat_fn(struct work_struct *work)
{
	bft_notify_heartbeat();
	bft_rearm(&bft_heartbeat_work, READ_ONCE(bft_opts.heartbeat_ms));
}

static void bft_set_mode(int mode)
{
	WRITE_ONCE(bft_mode, mode);
	bft_notify_mode(mode);
}

static int bft_stop(void)
{
	int mode = bft_mode;

	bft_session_disown();
	WRITE_ONCE(bft_mode, BFT_MODE_SHUTTING_DOWN);
	if (bft_session_active(mode))
		bft_rings_break(BFT_BREAK_STOP);
	bft_detach_all();
	bft_rings_flush(false);
	bft_notify_mode(BFT_MODE_SHUTTING_DOWN);
	return 0;
}

/* Under bft_lock: the owner's socket is gone (bft_session.c). */
void bft_session_end(void)
{
	bft_stop();
}

static bool bft_ring_mem_ok(u64 buf_size, u64 cap_mib)
{
	return buf_size * num_possible_cpus() <= cap_mib << 20;
}

/* The rings are charged to the caller's memory cgroup (bft_ring.c). */
static void bft_rings_nomem(struct netlink_ext_ack *ext, u64 size)
{
	BFT_SET_ERR_MSG_FMT(ext,
			    "no memory for %u rings of %llu bytes (caller's memory cgroup)",
			    num_possible_cpus(), size);
}

/*
 * Under bft_lock, before anything needs the rings or the periodic works:
 * the first attach, start or reader.  Loading the module costs nothing.
 */
int bft_session_prepare(struct netlink_ext_ack *ext)
{
	int err;

	if (!bft_ring_mem_ok(bft_opts.buf_size, bft_opts.max_ring_mem)) {
		BFT_SET_ERR_MSG_FMT(ext, "%u rings of %u bytes exceed max_ring_mem (%u MiB)",
				    num_possible_cpus(), bft_opts.buf_size,
				    bft_opts.max_ring_mem);
		return -ENOSPC;
	}
	err = bft_rings_ensure(bft_opts.buf_size);
	if (err) {
		bft_rings_nomem(ext, bft_opts.buf_size);
		return err;
	}
	if (!bft_works_armed) {
		WRITE_ONCE(bft_works_armed, true);
		bft_rearm(&bft_flush_work, bft_opts.flush_ms);
		bft_rearm(&bft_heartbeat_work, bft_opts.heartbeat_ms);
	}
	return 0;
}

static int bft_start(u32 owner, struct netlink_ext_ack *ext)
{
	int err = bft_session_prepare(ext);

	if (err)
		return err;
	bft_methods_forget();
	bft_unwind_forget();
	bft_rings_start();
	bft_targets_disown();
	bft_session_own(owner);
	bft_set_mode(BFT_MODE_TRACING);
	return 0;
}

static int bft_targets_may_stop(struct netlink_ext_ack *ext)
{
	struct bft_target *t;
	int err;

	list_for_each_entry(t, &bft_targets, node) {
		err = bft_may_stop(t, ext);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Under bft_lock.  @cmd is one of the six mode commands; @owner the
 * sender's port id for a start (0: a persistent session).  Which command
 * is allowed when is bft_mode_next()'s; this does what each one takes.
 */
int bft_mode_change(u8 cmd, u32 owner, struct netlink_ext_ack *ext)
{
	int mode = bft_mode, next = bft_mode_next(cmd, mode), err;

	if (next == BFT_MODE_NOT_A_CMD)
		return -EOPNOTSUPP;
	if (next == BFT_MODE_REFUSED) {
		BFT_SET_ERR_MSG_FMT(ext, BFT_MODE_REFUSAL_FMT,
				    bft_mode_str(mode));
		return -EINVAL;
	}
	switch (cmd) {
	case BFT_CMD_START:
		return bft_start(owner, ext);
	case BFT_CMD_STOP:
		err = bft_may_control_all(ext);
		if (err)
			return err;
		return bft_stop();
	case BFT_CMD_PAUSE:
		err = bft_targets_may_stop(ext);
		if (err)
			return err;
		err = bft_targets_signal(SIGSTOP);
		if (err) {
			NL_SET_ERR_MSG_MOD(ext, "a target could not be stopped");
			bft_targets_signal(SIGCONT);
			return err;
		}
		break;
	case BFT_CMD_UNPAUSE:
		bft_targets_signal(SIGCONT);
		break;
	case BFT_CMD_SUSPEND:
		WRITE_ONCE(bft_mode, next);
		bft_rings_break(BFT_BREAK_SUSPEND);
		bft_notify_mode(next);
		return 0;
	}
	bft_set_mode(next);
	return 0;
}

int bft_opt_get(u32 id, u64 *val, u64 *min, u64 *max, u32 *flags)
{
	const struct bft_opt_rule *r;

	if (!id || id > BFT_OPT_MAX)
		return -ENOENT;
	if (!bft_opt_vals[id])
		return -EOPNOTSUPP;
	r = bft_opt_rule(id);
	*val = *bft_opt_vals[id];
	*min = r->min;
	*max = r->max;
	*flags = r->flags;
	return 0;
}

/* Under bft_lock. */
int bft_opt_set(u32 id, u64 val, struct netlink_ext_ack *ext)
{
	const struct bft_opt_rule *r;
	int err;

	if (!id || id > BFT_OPT_MAX) {
		BFT_SET_ERR_MSG_FMT(ext, "unknown option %u", id);
		return -ENOENT;
	}
	if (!bft_opt_vals[id]) {
		BFT_SET_ERR_MSG_FMT(ext, "option %u is not supported by this module",
				    id);
		return -EOPNOTSUPP;
	}
	r = bft_opt_rule(id);
	switch (bft_opt_refusal(id, val, bft_mode, bft_nr_probes)) {
	case BFT_OPT_OK:
		break;
	case BFT_OPT_OUT_OF_RANGE:
		BFT_SET_ERR_MSG_FMT(ext, BFT_OPT_RANGE_FMT, id, val, r->min,
				    r->max, r->flags & BFT_OPTF_POW2 ?
				    " or not a power of 2" : "");
		return -ERANGE;
	case BFT_OPT_BUSY:
		BFT_SET_ERR_MSG_FMT(ext, BFT_OPT_BUSY_FMT, id,
				    bft_nr_probes ? "probes are attached" :
				    bft_mode_str(bft_mode));
		return -EBUSY;
	case BFT_OPT_BELOW_PROBES:
		BFT_SET_ERR_MSG_FMT(ext, BFT_OPT_PROBES_FMT, bft_nr_probes);
		return -ERANGE;
	}
	if ((id == BFT_OPT_BUF_SIZE &&
	     !bft_ring_mem_ok(val, bft_opts.max_ring_mem)) ||
	    (id == BFT_OPT_MAX_RING_MEM &&
	     !bft_ring_mem_ok(bft_opts.buf_size, val))) {
		BFT_SET_ERR_MSG_FMT(ext, "%u rings of %llu bytes exceed max_ring_mem %llu MiB",
				    num_possible_cpus(),
				    id == BFT_OPT_BUF_SIZE ? val : bft_opts.buf_size,
				    id == BFT_OPT_BUF_SIZE ?
				    (u64)bft_opts.max_ring_mem : val);
		return -ERANGE;
	}
	if (id == BFT_OPT_BUF_SIZE && val != bft_opts.buf_size) {
		err = bft_rings_resize(val);
		if (err == -EBUSY)
			NL_SET_ERR_MSG_MOD(ext, "a ring still holds unread records");
		if (err == -ENOMEM)
			bft_rings_nomem(ext, val);
		if (err)
			return err;
	}
	WRITE_ONCE(*bft_opt_vals[id], val);
	if (id == BFT_OPT_FLUSH_MS)
		bft_rearm(&bft_flush_work, val);
	if (id == BFT_OPT_HEARTBEAT_MS)
		bft_rearm(&bft_heartbeat_work, val);
	return 0;
}

/* Before anything reads an option: each one's default. */
void bft_control_init(void)
{
	for (u32 id = 1; id <= BFT_OPT_MAX; id++)
		if (bft_opt_vals[id])
			*bft_opt_vals[id] = bft_opt_rule(id)->def;
}

/*
 * After the netlink family and the owner notifier are gone, so no command
 * can arm a work again: only the works themselves re-arm, and they see
 * bft_exiting.
 */
void bft_control_quiesce(void)
{
	WRITE_ONCE(bft_exiting, true);
	cancel_delayed_work_sync(&bft_flush_work);
	cancel_delayed_work_sync(&bft_heartbeat_work);
}

/* After the netlink family is gone: no command can attach again. */
void bft_control_exit(void)
{
	mutex_lock(&bft_lock);
	bft_stop();
	bft_lingering_release();
	bft_methods_forget();
	bft_unwind_forget();
	mutex_unlock(&bft_lock);
}
