// SPDX-License-Identifier: GPL-2.0
/*
 * A session belongs to the netlink socket that started it.  When that
 * socket is released (its process closed it, exited or was killed), the
 * session stops as BFT_CMD_STOP stops it: every probe is detached and a
 * paused target is continued.  BFT_A_PERSIST on BFT_CMD_START makes a
 * session without an owner, which only BFT_CMD_STOP or rmmod ends.
 *
 * Before a start, a target belongs to the socket that attached it (unless
 * it said BFT_A_PERSIST): its release detaches the targets it owns, so a
 * controller that dies between attach and start leaves no probe behind.
 * A start hands every target to the session.
 *
 * The family is not netns-aware, so every request comes from init_net and
 * a port id alone names the socket.  A released port id may be reused by
 * a later socket; the owner is forgotten at release, so it never is.
 */
#include <linux/netlink.h>
#include <linux/notifier.h>

#include "bft_internal.h"

/* Under bft_lock; 0: no owner (persistent, or no session). */
static u32 bft_owner;
/* Targets with an owner, written under bft_lock, read unlocked as a hint. */
static u32 bft_nr_owned;

u32 bft_session_owner(void)
{
	return bft_owner;
}

void bft_session_own(u32 portid)
{
	WRITE_ONCE(bft_owner, portid);
}

void bft_session_disown(void)
{
	WRITE_ONCE(bft_owner, 0);
}

/*
 * Under bft_lock; @portid 0 makes @t nobody's, as its detach must: the
 * count then stays exact, and sockets close without taking the lock once
 * no target has an owner.
 */
void bft_target_own(struct bft_target *t, u32 portid)
{
	if (!t->owner != !portid)
		WRITE_ONCE(bft_nr_owned, portid ? bft_nr_owned + 1 :
			   bft_nr_owned - 1);
	t->owner = portid;
}

/* Under bft_lock: a start makes the targets the session's. */
void bft_targets_disown(void)
{
	struct bft_target *t;

	list_for_each_entry(t, &bft_targets, node)
		t->owner = 0;
	WRITE_ONCE(bft_nr_owned, 0);
}

/* Under bft_lock, outside a session: detach what @portid attached. */
static void bft_targets_release(u32 portid)
{
	struct bft_target *t, *tn;
	u32 left = 0;

	list_for_each_entry_safe(t, tn, &bft_targets, node) {
		if (t->owner == portid)
			bft_target_detach(t);
		else if (t->owner)
			left++;
	}
	WRITE_ONCE(bft_nr_owned, left);
}

/*
 * Runs in the releasing process, which may sleep: the stop unregisters
 * probes and waits for their handlers here, before close() returns, so
 * once a killed owner is reaped its session is gone.
 */
static int bft_netlink_event(struct notifier_block *nb, unsigned long event,
			     void *ptr)
{
	struct netlink_notify *n = ptr;

	if (event != NETLINK_URELEASE || n->protocol != NETLINK_GENERIC ||
	    !net_eq(n->net, &init_net) || !n->portid)
		return NOTIFY_DONE;
	/* unlocked peek: every socket of the system passes here */
	if (READ_ONCE(bft_owner) != n->portid && !READ_ONCE(bft_nr_owned))
		return NOTIFY_DONE;
	mutex_lock(&bft_lock);
	if (bft_owner == n->portid)
		bft_session_end();
	else if (!bft_session_active(bft_mode))
		bft_targets_release(n->portid);
	mutex_unlock(&bft_lock);
	return NOTIFY_OK;
}

static struct notifier_block bft_netlink_nb = {
	.notifier_call = bft_netlink_event,
};

int bft_session_init(void)
{
	return netlink_register_notifier(&bft_netlink_nb);
}

/* Waits for a running callback: after this none runs, none starts. */
void bft_session_exit(void)
{
	netlink_unregister_notifier(&bft_netlink_nb);
}
