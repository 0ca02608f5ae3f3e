/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_dev_status: BFT_CMD_GET_STATUS's answer through BFT_IOC_STATUS on an
 * open /dev/bftrace file (bftrace.h section 2.6), for callers that sample
 * it often: one system call, no netlink message.
 */
#ifndef BFT_DEV_STATUS_H
#define BFT_DEV_STATUS_H

#include "capture/bft_nl.h"

/*
 * Fills *st as bft_nl_get_status() would (every have bit set); release
 * st->cpus with bft_nl_status_free().  0 or -errno: -ENOTTY from a module
 * older than the ioctl (ask over netlink instead), -EPERM unprivileged.
 */
int bft_dev_status(int fd, struct bft_nl_status *st);

#endif /* BFT_DEV_STATUS_H */
