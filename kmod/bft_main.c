// SPDX-License-Identifier: GPL-2.0
/*
 * bftrace.ko: uprobe function tracing of native processes into per-CPU
 * rings, driven over generic netlink.  See include/uapi/linux/bftrace.h.
 */
#include <linux/module.h>

#include "bft_internal.h"

/* Nothing is allocated and nothing is armed until a session needs it. */
static int __init bft_init(void)
{
	int err;

	bft_control_init();
	bft_rings_init();
	err = bft_dev_init();
	if (err)
		return err;
	err = bft_session_init();
	if (err)
		goto err_dev;
	err = bft_genl_init();
	if (err)
		goto err_session;
	return 0;

err_session:
	bft_session_exit();
err_dev:
	bft_dev_exit();
	return err;
}

/*
 * No reader can hold /dev/bftrace here (an open file pins the module).
 * The family goes first: it waits for a running command, and no command
 * runs after it, so none can arm a work again; then the owner notifier,
 * which may be stopping a session right now.  Then the works, which
 * re-arm only themselves; then every probe is unregistered and
 * synchronised before the rings are freed.
 */
static void __exit bft_exit(void)
{
	bft_genl_exit();
	bft_session_exit();
	bft_control_quiesce();
	bft_control_exit();
	bft_dev_exit();
	bft_rings_exit();
}

module_init(bft_init);
module_exit(bft_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("bftrace: uprobe function tracer with per-CPU rings");
MODULE_ALIAS_GENL_FAMILY(BFT_GENL_NAME);
