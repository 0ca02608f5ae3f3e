// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF backend's modes, options and flush work, as the module's
 * kmod/bft_control.c, with the rules both obey from kmod/bft_rules.h.  What
 * the module does on each CPU's ring (restart, mark a break, seal, a
 * heartbeat SYNC) is the control program bft_ctl run on that CPU.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/bft_bpf_internal.h"

static int prog_run(struct bft_bpf *b, unsigned int cpu, uint64_t op,
		    uint64_t arg, int *ret)
{
	uint64_t args[3] = { op, arg, cpu };
	struct timespec ts = { 0, 100000 };
	bool offline = false;

	for (int tries = 0; tries < 10000; tries++) {
		LIBBPF_OPTS(bpf_test_run_opts, o,
			    .ctx_in = args, .ctx_size_in = sizeof(args),
			    .flags = offline ? 0 : BPF_F_TEST_RUN_ON_CPU,
			    .cpu = offline ? 0 : cpu);

		if (bpf_prog_test_run_opts(b->prog_ctl_fd, &o)) {
			/*
			 * An offline CPU: served from this one, or its
			 * batch and heartbeats wait until it is back.
			 */
			if (errno == ENXIO && !offline) {
				offline = true;
				continue;
			}
			return bft_bpf_err_set(b, -errno, "running the "
					       "control program for CPU %u: %s",
					       cpu, strerror(errno));
		}
		/* a kernel before 5.19 cannot serve it: it waits */
		if (o.retval == BFT_BPF_NOCPU && offline)
			return 0;
		if (o.retval != BFT_BPF_BUSY) {
			if (ret)
				*ret = (int)o.retval;
			return 0;
		}
		/* a handler on that CPU was preempted mid-record (or, served
		 * from here, runs there again as it comes back): wait */
		nanosleep(&ts, NULL);
	}
	return bft_bpf_err_set(b, -EBUSY, "CPU %u stays busy", cpu);
}

static int prog_run_all(struct bft_bpf *b, uint64_t op, uint64_t arg)
{
	for (unsigned int cpu = 0; cpu < b->nr_cpus; cpu++) {
		int err = prog_run(b, cpu, op, arg, NULL);

		if (err)
			return err;
	}
	return 0;
}

static int cpus_flush(struct bft_bpf *b, bool heartbeat)
{
	bool active = false;
	int err, r;

	for (unsigned int cpu = 0; cpu < b->nr_cpus; cpu++) {
		r = 0;
		err = prog_run(b, cpu, BFT_BPF_OP_SEAL, 0, &r);
		if (err)
			return err;
		if (r == 1)
			active = true;
	}
	err = prog_run_all(b, active && heartbeat ? BFT_BPF_OP_HEARTBEAT :
			   BFT_BPF_OP_OWED, 0);
	return err;
}

static void ctl_owner_set(struct bft_bpf_ctl *ctl, const struct bft_owner *o)
{
	ctl->owner = o ? o->tgid : 0;
	ctl->owner_start = o ? o->start : 0;
	ctl->owner_pidns = o ? o->pidns : 0;
	ctl->guard = 0;
}

static int ctl_mode_set(struct bft_bpf *b, struct bft_bpf_ctl *ctl,
			uint32_t mode)
{
	ctl->mode = mode;
	return bft_bpf_ctl_write(b, ctl);
}

/*
 * Which command is allowed when is bft_mode_next()'s, as in the module
 * (kmod/bft_control.c: bft_mode_change()); this does what each one takes.
 */
int bft_bpf_mode_change(struct bft_bpf *b, int cmd,
			const struct bft_owner *owner, uint8_t *mode)
{
	struct bft_bpf_ctl ctl;
	int cur, next, err;

	err = bft_bpf_ctl_read(b, &ctl);
	if (err)
		return err;
	cur = (int)ctl.mode;
	next = bft_mode_next((unsigned int)cmd, cur);
	if (next == BFT_MODE_NOT_A_CMD)
		return bft_bpf_err_set(b, -EINVAL,
				       "command %d is not a mode command", cmd);
	if (next == BFT_MODE_REFUSED)
		return bft_bpf_err_set(b, -EINVAL, BFT_MODE_REFUSAL_FMT,
				       bft_mode_name(ctl.mode));
	switch (cmd) {
	case BFT_CMD_START:
		bft_bpf_methods_forget(b);
		ctl.time_res_ns = ctl.opts[BFT_OPT_TIME_RES_NS];
		ctl.max_depth = ctl.opts[BFT_OPT_MAX_DEPTH];
		ctl.sync_ms = ctl.opts[BFT_OPT_FLUSH_MS];
		ctl.watermark = bft_watermark(ctl.opts[BFT_OPT_WATERMARK],
					      ctl.opts[BFT_OPT_BUF_SIZE]);
		ctl_owner_set(&ctl, owner);
		err = bft_bpf_ctl_write(b, &ctl);
		if (!err)
			err = prog_run_all(b, BFT_BPF_OP_RESTART,
					   ctl.time_res_ns);
		if (!err)
			err = ctl_mode_set(b, &ctl, next);
		break;
	case BFT_CMD_STOP:
		ctl_owner_set(&ctl, NULL);
		err = ctl_mode_set(b, &ctl, next);
		if (!err && bft_session_active(cur))
			err = prog_run_all(b, BFT_BPF_OP_MARK, BFT_BREAK_STOP);
		if (!err && cur == BFT_MODE_PAUSED)
			bft_bpf_targets_signal(SIGCONT);
		if (!err)
			err = bft_bpf_targets_detach(b, 0);
		if (!err)
			err = cpus_flush(b, false);
		break;
	case BFT_CMD_PAUSE:
		err = bft_bpf_targets_signal(SIGSTOP);
		if (err) {
			bft_bpf_targets_signal(SIGCONT);
			return bft_bpf_err_set(b, err,
					       "a target could not be stopped");
		}
		err = ctl_mode_set(b, &ctl, next);
		break;
	case BFT_CMD_UNPAUSE:
		bft_bpf_targets_signal(SIGCONT);
		err = ctl_mode_set(b, &ctl, next);
		break;
	case BFT_CMD_SUSPEND:
		err = ctl_mode_set(b, &ctl, next);
		if (!err)
			err = prog_run_all(b, BFT_BPF_OP_MARK,
					   BFT_BREAK_SUSPEND);
		break;
	default:	/* BFT_CMD_UNSUSPEND */
		err = ctl_mode_set(b, &ctl, next);
		break;
	}
	if (!err && mode)
		*mode = ctl.mode;
	return err;
}

int bft_bpf_start(struct bft_bpf *b, bool persist, uint8_t *mode)
{
	struct bft_owner self;
	int fd, err;

	if (!persist && bft_owner_self(&self))
		return bft_bpf_err_set(b, -ENOENT, "/proc is needed to own a "
				       "session: start it with persist");
	fd = bft_bpf_session_open_locked(b, true);
	if (fd < 0)
		return fd;
	err = bft_bpf_mode_change(b, BFT_CMD_START, persist ? NULL : &self,
				  mode);
	bft_bpf_session_unlock(fd);
	if (err || persist)
		return err;
	b->own = true;
	bft_bpf_guard_start(b, &self);
	return 0;
}

int bft_bpf_mode_cmd(struct bft_bpf *b, int cmd, uint8_t *mode)
{
	int fd, err;

	if (cmd == BFT_CMD_START)
		return bft_bpf_start(b, false, mode);
	fd = bft_bpf_session_open_locked(b, true);
	if (fd < 0)
		return fd;
	err = bft_bpf_mode_change(b, cmd, NULL, mode);
	bft_bpf_session_unlock(fd);
	return err;
}

static void opt_fill(const struct bft_bpf_ctl *ctl, uint32_t id,
		     struct bft_nl_opt *o)
{
	o->id = id;
	o->value = ctl->opts[id];
	o->min = bft_opt_rule(id)->min;
	o->max = bft_opt_rule(id)->max;
	o->flags = bft_opt_rule(id)->flags;
}

/* As the module answers an option it does not know, or does not implement. */
static int opt_check(struct bft_bpf *b, uint32_t id)
{
	if (!id || id > BFT_OPT_MAX)
		return bft_bpf_err_set(b, -ENOENT, "unknown option %u", id);
	if (!bft_bpf_opt_supported(id))
		return bft_bpf_err_set(b, -EOPNOTSUPP, "option %u is not "
				       "supported by the BPF backend", id);
	return 0;
}

int bft_bpf_get_opt(struct bft_bpf *b, uint32_t id, struct bft_nl_opt *out)
{
	struct bft_bpf_ctl ctl;
	int err = opt_check(b, id);

	if (err)
		return err;
	err = bft_bpf_ctl_read_or_default(b, &ctl);
	if (!err)
		opt_fill(&ctl, id, out);
	return err;
}

int bft_bpf_get_opts(struct bft_bpf *b, struct bft_nl_opt *out, size_t cap,
		     size_t *n)
{
	struct bft_bpf_ctl ctl;
	int err = bft_bpf_ctl_read_or_default(b, &ctl);

	*n = 0;
	if (err)
		return err;
	for (uint32_t id = 1; id <= BFT_OPT_MAX; id++) {
		if (!bft_bpf_opt_supported(id))
			continue;
		if (*n < cap)
			opt_fill(&ctl, id, &out[*n]);
		(*n)++;
	}
	return 0;
}

static int opt_set(struct bft_bpf *b, uint32_t id, uint64_t val,
		   struct bft_nl_opt *out)
{
	const struct bft_opt_rule *r;
	struct bft_bpf_ctl ctl;
	unsigned int probes;
	int err = opt_check(b, id);

	if (err)
		return err;
	r = bft_opt_rule(id);
	err = bft_bpf_ctl_read(b, &ctl);
	if (err)
		return err;
	probes = (unsigned int)bft_bpf_probes_count(b);
	switch (bft_opt_refusal(id, val, (int)ctl.mode, probes)) {
	case BFT_OPT_OK:
		break;
	case BFT_OPT_OUT_OF_RANGE:
		return bft_bpf_err_set(b, -ERANGE, BFT_OPT_RANGE_FMT, id,
				       (unsigned long long)val, r->min, r->max,
				       r->flags & BFT_OPTF_POW2 ?
				       " or not a power of 2" : "");
	case BFT_OPT_BUSY:
		return bft_bpf_err_set(b, -EBUSY, BFT_OPT_BUSY_FMT, id,
				       probes ? "probes are attached" :
				       bft_mode_name(ctl.mode));
	case BFT_OPT_BELOW_PROBES:
		return bft_bpf_err_set(b, -ERANGE, BFT_OPT_PROBES_FMT, probes);
	}
	if (id == BFT_OPT_BUF_SIZE && val != ctl.opts[id]) {
		/* unread records would vanish: only onto drained rings */
		struct bft_nl_status st;

		err = bft_bpf_get_status(b, &st);
		if (err)
			return err;
		for (uint32_t i = 0; i < st.nr_cpus && !err; i++)
			if (st.cpus[i].used)
				err = bft_bpf_err_set(b, -EBUSY, "a ring "
						      "still holds unread "
						      "records");
		bft_nl_status_free(&st);
		if (!err)
			err = bft_bpf_ringbufs_make(b, val);
		if (!err)
			err = bft_bpf_cpus_reset(b,
					ctl.opts[BFT_OPT_TIME_RES_NS]);
		for (uint32_t cpu = 0; cpu < b->nr_cpus && !err; cpu++) {
			uint64_t zero = 0;

			bpf_map_update_elem(b->read_fd, &cpu, &zero, BPF_ANY);
		}
		if (err)
			return err;
	}
	ctl.opts[id] = val;
	err = bft_bpf_ctl_write(b, &ctl);
	if (!err && out)
		opt_fill(&ctl, id, out);
	return err;
}

int bft_bpf_set_opt(struct bft_bpf *b, uint32_t id, uint64_t val,
		    struct bft_nl_opt *out)
{
	int fd = bft_bpf_session_open_locked(b, true), err;

	if (fd < 0)
		return fd;
	err = opt_set(b, id, val, out);
	bft_bpf_session_unlock(fd);
	return err;
}

int bft_bpf_flush(struct bft_bpf *b, bool heartbeat)
{
	int err = bft_bpf_session_open(b, false);

	if (err)
		return err == -ENOENT ? 0 : err;
	/* a reader notices a dead owner as soon as its guard would */
	err = bft_bpf_owner_reap(b);
	if (!err)
		err = cpus_flush(b, heartbeat);
	if (!err)
		bft_bpf_targets_reap(b);
	return err;
}
