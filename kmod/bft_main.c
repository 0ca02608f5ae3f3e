// SPDX-License-Identifier: GPL-2.0
/*
 * bftrace.ko: uprobe function tracing of native processes into per-CPU
 * rings, driven over generic netlink.  See include/uapi/linux/bftrace.h.
 */
#include <linux/module.h>

#include "bft_internal.h"

static int __init bft_init(void)
{
	int err;

	err = bft_rings_init(bft_opts.buf_size);
	if (err)
		return err;
	err = bft_dev_init();
	if (err)
		goto err_rings;
	err = bft_genl_init();
	if (err)
		goto err_dev;
	err = bft_control_init();
	if (err)
		goto err_genl;
	return 0;

err_genl:
	bft_control_quiesce();
	bft_genl_exit();
err_dev:
	bft_dev_exit();
err_rings:
	bft_rings_exit();
	return err;
}

/*
 * No reader can hold /dev/bftrace here (an open file pins the module).
 * The timers go first so nothing re-arms; then the family, so no command
 * runs; then every probe is unregistered and synchronised before the
 * rings are freed.
 */
static void __exit bft_exit(void)
{
	bft_control_quiesce();
	bft_genl_exit();
	bft_control_exit();
	bft_dev_exit();
	bft_rings_exit();
}

module_init(bft_init);
module_exit(bft_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("bftrace: uprobe function tracer with per-CPU rings");
MODULE_ALIAS_GENL_FAMILY(BFT_GENL_NAME);
