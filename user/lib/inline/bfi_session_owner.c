// SPDX-License-Identifier: GPL-2.0
/*
 * Who an inline session belongs to: a session started without persist
 * ends (every target restored, mode SHUTTING_DOWN) when its starter dies
 * or closes its handle, as the module's ends with its starter's socket and
 * the BPF backend's with its owner (bft_bpf_owner.c).  A guard process
 * notices the death; without one, the next tool that looks ends it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "inline/bfi_session.h"

static bool owner_same(const struct bft_owner *a, const struct bft_owner *b)
{
	return a->tgid && a->tgid == b->tgid && a->start == b->start &&
	       a->pidns == b->pidns;
}

/* Stop the session as BFT_CMD_STOP would, if o still owns it. */
static int owner_session_end(struct bfi_session *s, const struct bft_owner *o)
{
	int e = bfi_session_lock(s);

	if (e)
		return e;
	if (owner_same(&s->st.owner, o))
		e = bfi_session_set_mode(s, BFT_CMD_STOP, NULL, NULL);
	bfi_session_unlock(s);
	return e;
}

/* In the guard: is the session still the one it guards? */
static bool guard_watch(void *arg)
{
	const struct bft_owner *o = arg;
	struct bfi_session *s;
	char err[256];
	bool same;

	if (bfi_session_open(&s, false, err, sizeof(err)))
		return false;
	same = owner_same(&s->st.owner, o);
	bfi_session_close(s);
	return same;
}

static void guard_reap(void *arg)
{
	struct bfi_session *s;
	char err[256];

	if (bfi_session_open(&s, false, err, sizeof(err)))
		return;
	owner_session_end(s, arg);
	bfi_session_close(s);
}

void bfi_session_guard_start(struct bfi_session *s)
{
	static struct bft_owner o;	/* the guard's copy outlives us */
	pid_t guard;

	o = s->st.owner;
	if (!o.tgid)
		return;
	guard = bft_owner_guard(&o, guard_watch, guard_reap, &o);
	if (guard <= 0)
		return;	/* the next tool to look ends it instead */
	if (bfi_session_lock(s))
		return;
	if (owner_same(&s->st.owner, &o)) {
		s->st.guard = (uint32_t)guard;
		bfi_session_save(s);
	}
	bfi_session_unlock(s);
}

int bfi_session_owner_reap(struct bfi_session *s)
{
	struct bft_owner o = s->st.owner;
	char why[sizeof(s->err)];
	int e;

	if (!o.tgid || bft_owner_dead(&o) != 1)
		return 0;
	e = owner_session_end(s, &o);
	if (e) {
		snprintf(why, sizeof(why), "%s", s->err);
		return bfi_session_err(s, e, "ending the session of dead "
				       "owner %u: %s", o.tgid, why);
	}
	return 0;
}

void bfi_session_owner_release(struct bfi_session *s)
{
	struct bft_owner self;

	s->own = false;
	if (!bft_owner_self(&self))
		owner_session_end(s, &self);
}
