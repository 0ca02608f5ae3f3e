// SPDX-License-Identifier: GPL-2.0
/*
 * The inline backend's modes: the transitions of kmod/bft_rules.h
 * (bft_mode_next), carried out by writing the control word into every
 * target's area through /proc/PID/mem.  No stopped world is needed: the
 * word is one aligned u64 that the recorder reads with one load.  Pause
 * and unpause signal the targets, as the module does.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "inline/bfi_patch.h"
#include "inline/bfi_session.h"
#include "../../../kmod/bft_rules.h"

static int mem_pwrite(uint32_t tgid, uint64_t addr, const void *buf,
		      size_t len)
{
	char p[64];
	ssize_t n;
	int fd, e = 0;

	snprintf(p, sizeof(p), "/proc/%u/mem", tgid);
	fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = pwrite(fd, buf, len, (off_t)addr);
	if (n < 0)
		e = errno == EIO ? -ESRCH : -errno;	/* unmapped: exec'd */
	else if ((size_t)n != len)
		e = -EIO;
	close(fd);
	return e;
}

int bfi_area_write_ctl(struct bfi_session *s, const struct bfi_target *t)
{
	const struct bfi_state *st = &s->st;
	uint64_t ctl = BFI_CTL(st->mode, st->break_reason, st->gen);
	int e = 0;

	if (st->mode == BFT_MODE_TRACING) {
		/* the options the recorder reads come first (idle-only:
		 * unchanged since the start, so rewriting them is harmless) */
		uint64_t v[2] = { st->opts[BFT_OPT_TIME_RES_NS],
				  st->opts[BFT_OPT_FLUSH_MS] * 1000000ull };
		uint32_t depth = (uint32_t)st->opts[BFT_OPT_MAX_DEPTH];

		e = mem_pwrite(t->tgid, t->area + offsetof(struct bfi_area,
							   max_depth),
			       &depth, sizeof(depth));
		if (!e)
			e = mem_pwrite(t->tgid, t->area +
				       offsetof(struct bfi_area, res_ns),
				       v, sizeof(v));
	}
	if (!e)
		e = mem_pwrite(t->tgid, t->area + BFI_LIVE_OFF, &ctl,
			       sizeof(ctl));
	if (e && e != -ESRCH)
		return bfi_session_err(s, e, "writing the mode into process "
				       "%u: %s", t->tgid, strerror(-e));
	return e;
}

/* The mode into every area; targets found gone are dropped. */
static int mode_publish(struct bfi_session *s)
{
	int e = 0;

	for (size_t i = 0; i < s->ntargets;) {
		int r = bfi_area_write_ctl(s, &s->targets[i]);

		if (r == -ESRCH) {
			bfi_session_target_drop(s, s->targets[i].tgid);
			continue;
		}
		if (r && !e)
			e = r;
		i++;
	}
	return e;
}

/* As the module refuses a pause: PID 1, ourselves, no ptrace access. */
static int mode_signal_check(struct bfi_session *s)
{
	char p[64];

	for (size_t i = 0; i < s->ntargets; i++) {
		uint32_t tgid = s->targets[i].tgid;
		int fd;

		if (tgid == 1 || tgid == (uint32_t)getpid())
			return bfi_session_err(s, -EPERM, "process %u cannot "
					       "be paused (%s)", tgid, tgid == 1 ?
					       "it is init" : "it is this "
					       "process");
		/* /proc/PID/mem opens only with ptrace access */
		snprintf(p, sizeof(p), "/proc/%u/mem", tgid);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0 && errno != ENOENT)
			return bfi_session_err(s, -EPERM, "no ptrace access "
					       "to process %u", tgid);
		if (fd >= 0)
			close(fd);
	}
	return 0;
}

static int mode_signal(struct bfi_session *s, int sig)
{
	int e = 0;

	for (size_t i = 0; i < s->ntargets; i++)
		if (kill((pid_t)s->targets[i].tgid, sig) && errno != ESRCH &&
		    !e)
			e = -errno;
	return e;
}

/* Undo every target's patches (stop): the registry keeps the rest. */
static int mode_detach_all(struct bfi_session *s)
{
	char why[256];
	int e = 0;

	for (size_t i = 0; i < s->ntargets; i++) {
		uint32_t tgid = s->targets[i].tgid;
		int r = bfi_patch_detach(s, tgid, why, sizeof(why));

		/* a target that could not be restored keeps its live
		 * patches on record, for the next stop */
		if (r && !e)
			e = bfi_session_err(s, r, "detaching from process %u: "
					    "%s", tgid, why);
	}
	return e;
}

/*
 * A start forgets the targets whose patches were all put back (their
 * records stayed for the readers and the method names since the stop).
 */
static int mode_forget_detached(struct bfi_session *s)
{
	int e = 0;

	for (size_t i = 0; i < s->ntargets && !e;) {
		struct bfi_target *t = &s->targets[i];
		bool live = false;

		for (size_t k = 0; k < t->npatches && !live; k++)
			live = t->patches[k].live;
		if (live || !t->npatches) {
			i++;
			continue;
		}
		e = bfi_session_target_drop(s, t->tgid);	/* shifts the rest */
	}
	if (!e && !s->ntargets)
		s->st.next_index = 0;	/* every stream block is free again */
	return e;
}

static int mode_change(struct bfi_session *s, int cmd,
		       const struct bft_owner *owner, uint8_t *mode)
{
	struct bfi_state *st = &s->st;
	int cur = st->mode, next = bft_mode_next((unsigned int)cmd, cur), e;

	if (next == BFT_MODE_NOT_A_CMD)
		return bfi_session_err(s, -EINVAL, "command %d is not a mode "
				       "command", cmd);
	if (next == BFT_MODE_REFUSED)
		return bfi_session_err(s, -EINVAL, BFT_MODE_REFUSAL_FMT,
				       bft_mode_str(cur));
	if (cmd == BFT_CMD_PAUSE) {
		e = mode_signal_check(s);
		if (!e && (e = mode_signal(s, SIGSTOP))) {
			mode_signal(s, SIGCONT);
			return bfi_session_err(s, e, "a target could not be "
					       "stopped: %s", strerror(-e));
		}
		if (e)
			return e;
	}
	if (cmd == BFT_CMD_UNPAUSE || (cmd == BFT_CMD_STOP &&
				       cur == BFT_MODE_PAUSED))
		mode_signal(s, SIGCONT);
	st->mode = (uint8_t)next;
	st->gen++;
	/*
	 * The recorder writes the BREAK when it records again, so the
	 * reason goes into the word that resumes tracing (bfi_layout.h):
	 * a thread that slept through the suspend or the stop still says it.
	 */
	st->break_reason = cmd == BFT_CMD_UNSUSPEND ? BFT_BREAK_SUSPEND :
			   cmd == BFT_CMD_START &&
			   cur == BFT_MODE_SHUTTING_DOWN ? BFT_BREAK_STOP : 0;
	if (cmd == BFT_CMD_START) {
		e = mode_forget_detached(s);
		if (e)
			return e;
		memset(&st->owner, 0, sizeof(st->owner));
		if (owner)
			st->owner = *owner;
		st->guard = 0;
	}
	if (cmd == BFT_CMD_STOP) {
		memset(&st->owner, 0, sizeof(st->owner));
		st->guard = 0;
	}
	e = bfi_session_save(s);
	if (!e)
		e = mode_publish(s);
	if (!e && cmd == BFT_CMD_STOP)
		e = mode_detach_all(s);
	if (mode)
		*mode = st->mode;
	return e;
}

int bfi_session_set_mode(struct bfi_session *s, int cmd,
			 const struct bft_owner *owner, uint8_t *mode)
{
	int e = bfi_session_lock(s);

	if (e)
		return e;
	e = mode_change(s, cmd, owner, mode);
	bfi_session_unlock(s);
	return e;
}
