/* SPDX-License-Identifier: GPL-2.0 */
/*
 * USDT probes by "PROVIDER:NAME" glob, over the objects a process maps.
 */
#ifndef BFCTL_USDT_H
#define BFCTL_USDT_H

#include "bfctl.h"
#include "symbols/bft_sdt.h"

struct usdt_pick {
	char *path;		/* as the target sees the object */
	char *open_path;	/* as bfctl opens it */
	const char *object;	/* basename of path */
	uint64_t dev, ino;
	struct bft_sdt_probe pr;
};

struct usdt_set {
	struct usdt_pick *v;
	size_t n, cap;
	size_t objects;		/* objects searched */
};

/*
 * Every USDT probe of pid whose "provider:name" one of globs matches (a
 * glob without ':' matches the name under any provider).  Probes that
 * cannot be used are said on stderr and left out.  EXIT_OK with none
 * found is possible; else an exit code, said.
 */
int usdt_select(struct ctl *c, pid_t pid, const struct strlist *globs,
		struct usdt_set *u);
void usdt_set_free(struct usdt_set *u);

#endif /* BFCTL_USDT_H */
