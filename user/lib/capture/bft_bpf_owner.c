// SPDX-License-Identifier: GPL-2.0
/*
 * Who a BPF session belongs to: the starter of a session without persist,
 * whose exit or closed handle stops it as a module session ends with its
 * owner's socket (kmod/bft_session.c), and the guard process that notices
 * the exit.  Whoever opens the session after its owner died ends it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "capture/bft_bpf_internal.h"

static void owner_from_ctl(const struct bft_bpf_ctl *ctl, struct bft_owner *o)
{
	o->tgid = ctl->owner;
	o->start = ctl->owner_start;
	o->pidns = ctl->owner_pidns;
}

static bool owner_matches(const struct bft_bpf_ctl *ctl,
			  const struct bft_owner *o)
{
	return ctl->owner && ctl->owner == o->tgid &&
	       ctl->owner_start == o->start && ctl->owner_pidns == o->pidns;
}

/* Stop the session as BFT_CMD_STOP would, if o still owns it. */
static int owner_session_end(struct bft_bpf *b, const struct bft_owner *o)
{
	struct bft_bpf_ctl ctl;
	int fd = bft_bpf_session_lock(b), err;

	if (fd < 0)
		return fd;
	err = bft_bpf_ctl_read(b, &ctl);
	if (!err && owner_matches(&ctl, o))
		err = bft_bpf_mode_change(b, BFT_CMD_STOP, NULL, NULL);
	bft_bpf_session_unlock(fd);
	return err;
}

/* In the guard: is the session still the one it guards? */
static bool guard_watch(void *arg)
{
	const struct bft_owner *o = arg;
	struct bft_bpf_ctl ctl;
	char p[PATH_MAX];
	uint32_t zero = 0;
	bool same;
	int fd;

	bft_bpf_pin_path(p, sizeof(p), "ctl");
	fd = bpf_obj_get(p);
	if (fd < 0)
		return false;	/* unloaded */
	same = !bpf_map_lookup_elem(fd, &zero, &ctl) && owner_matches(&ctl, o);
	close(fd);
	return same;
}

/* In the guard, once the owner died: opening the session ends it. */
static void guard_reap(void *arg)
{
	char err[512];
	struct bft_bpf *b;
	int ret;

	(void)arg;
	for (int tries = 0; tries < 50; tries++) {
		ret = bft_bpf_open(&b, false, err, sizeof(err));
		if (!ret)
			bft_bpf_close(b);
		if (ret != -EBUSY && ret != -EAGAIN && ret != -EINTR)
			return;
		usleep(100000);	/* a CPU stayed busy: again */
	}
}

/*
 * Without a guard the session would end only when the next tool looks;
 * the guard ends it within a poll of the owner's death.  Its tgid goes
 * into the control map for status and the tests.
 */
void bft_bpf_guard_start(struct bft_bpf *b, const struct bft_owner *self)
{
	struct bft_owner o = *self;
	struct bft_bpf_ctl ctl;
	pid_t guard;
	int fd;

	guard = bft_owner_guard(&o, guard_watch, guard_reap, &o);
	if (guard <= 0)
		return;	/* the next tool to look ends it instead */
	fd = bft_bpf_session_lock(b);
	if (fd < 0)
		return;
	if (!bft_bpf_ctl_read(b, &ctl) && owner_matches(&ctl, &o)) {
		ctl.guard = (uint32_t)guard;
		bft_bpf_ctl_write(b, &ctl);
	}
	bft_bpf_session_unlock(fd);
}

int bft_bpf_get_owner(struct bft_bpf *b, pid_t *owner, pid_t *guard)
{
	struct bft_bpf_ctl ctl;
	int err = bft_bpf_ctl_read_or_default(b, &ctl);

	*owner = err ? 0 : (pid_t)ctl.owner;
	*guard = err ? 0 : (pid_t)ctl.guard;
	return err;
}

/* The owner's handle closes: as the module's session ends when the
 * starter's socket closes. */
void bft_bpf_owner_release(struct bft_bpf *b)
{
	struct bft_owner self;

	b->own = false;
	if (b->ctl_fd >= 0 && !bft_owner_self(&self))
		owner_session_end(b, &self);
}

/*
 * Whoever opens the session first after its owner died (the guard, or
 * any tool if the guard was killed too) ends it.
 */
int bft_bpf_owner_reap(struct bft_bpf *b)
{
	struct bft_bpf_ctl ctl;
	struct bft_owner o;
	int err = bft_bpf_ctl_read(b, &ctl);

	if (err || !ctl.owner)
		return err;
	owner_from_ctl(&ctl, &o);
	if (bft_owner_dead(&o) != 1)
		return 0;
	err = owner_session_end(b, &o);
	if (err) {
		/* b->err is the format's argument and its destination */
		char why[sizeof(b->err)];

		snprintf(why, sizeof(why), "%s", b->err);
		return bft_bpf_err_set(b, err, "ending the session of dead "
				       "owner %u: %s", o.tgid, why);
	}
	return 0;
}
