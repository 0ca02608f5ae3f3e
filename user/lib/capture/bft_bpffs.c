// SPDX-License-Identifier: GPL-2.0
/*
 * bpffs for the BPF backend's pins: finding the directory they go in,
 * telling whether it can hold them, and mounting bpffs at its usual place
 * when nothing did (a minimal system, a container with its own /sys).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>

#include "capture/bft_bpffs.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

void bft_bpffs_parent(const char *dir, char *buf, size_t len)
{
	char *slash;

	snprintf(buf, len, "%s", dir);
	slash = strrchr(buf, '/');
	if (slash && slash != buf)
		*slash = '\0';
}

/* 1 on a bpffs, 0 on another filesystem, -errno if unreadable. */
static int on_bpffs(const char *parent)
{
	struct statfs sfs;

	if (statfs(parent, &sfs))
		return -errno;
	return sfs.f_type == BPF_FS_MAGIC;
}

int bft_bpffs_check(const char *parent, char *err, size_t errlen)
{
	int r = on_bpffs(parent);

	if (r < 0) {
		snprintf(err, errlen, "the pin directory's parent %s: %s (the "
			 "pin directory is made in an existing directory of a "
			 "BPF filesystem)", parent, strerror(-r));
		return r;
	}
	if (r || !strcmp(parent, BFT_BPFFS_HOME))
		return 0;
	snprintf(err, errlen, "%s is not on a BPF filesystem: mount one "
		 "(mount -t bpf bpf %s), or put the pins under %s", parent,
		 parent, BFT_BPFFS_HOME);
	return -ENODEV;
}

int bft_bpffs_mount(const char *parent, bool *mounted, char *err,
		    size_t errlen)
{
	int r = bft_bpffs_check(parent, err, errlen);

	*mounted = false;
	if (r)
		return r;
	if (on_bpffs(parent) == 1)
		return 0;
	/* mode 0700: pins are root's, as where systemd mounts it */
	if (mount("bpf", parent, "bpf", 0, "mode=0700")) {
		r = -errno;
		snprintf(err, errlen, "no BPF filesystem on %s, and mounting "
			 "one there failed: %s", parent, strerror(-r));
		return r;
	}
	*mounted = true;
	return 0;
}
