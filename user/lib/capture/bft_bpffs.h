/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The BPF filesystem the BPF backend pins its session on.  The pins go in
 * a directory made in an existing directory of a bpffs (the "parent").
 * On a machine where nothing mounted bpffs at its usual place, the first
 * session mounts it there, as bpftool does; a parent anywhere else is the
 * user's to mount, since a mount would hide what that directory holds.
 */
#ifndef BFT_BPFFS_H
#define BFT_BPFFS_H

#include <stdbool.h>
#include <stddef.h>

/* Where bpffs belongs (sysfs makes this directory for it). */
#define BFT_BPFFS_HOME	"/sys/fs/bpf"

/* The directory the pin directory dir is made in, into buf. */
void bft_bpffs_parent(const char *dir, char *buf, size_t len);

/*
 * Whether parent can hold pins, changing nothing: 0 if it is on a bpffs,
 * or is BFT_BPFFS_HOME with none mounted (bft_bpffs_mount() will);
 * -errno if it cannot be read, -ENODEV for another filesystem.  err says
 * which and what to do.
 */
int bft_bpffs_check(const char *parent, char *err, size_t errlen);

/*
 * Make parent hold pins: nothing if it is on a bpffs; if it is
 * BFT_BPFFS_HOME, mount one there (mode 0700) and set *mounted.  0, or
 * -errno with err saying what failed.
 */
int bft_bpffs_mount(const char *parent, bool *mounted, char *err,
		    size_t errlen);

#endif
