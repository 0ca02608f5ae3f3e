// SPDX-License-Identifier: GPL-2.0
/*
 * The choice of a capture backend by name: the list of the tables
 * (bft_backend.h) and the auto rule, for bfctl and bfcollector alike.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/bft_backend.h"

/* Every backend there is; auto never picks inline. */
static const struct bft_backend_ops *const backend_list[] = {
	&bft_backend_kmod,
	&bft_backend_bpf,
	&bft_backend_inline,
};

#define BACKEND_COUNT (sizeof(backend_list) / sizeof(backend_list[0]))

/* "kmod, bpf, inline or auto" into buf. */
static void backend_names(char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < BACKEND_COUNT && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s, ",
					backend_list[i]->name);
	if (off < len && off >= 2)
		snprintf(buf + off - 2, len - off + 2, " or auto");
}

int bft_backend_choose(const char *name, const struct bft_backend_ops **ops,
		       char *err, size_t errlen)
{
	const char *b = name ? name : getenv("BFT_BACKEND");
	char names[128];

	if (!b || !*b || !strcmp(b, "auto")) {
		/* the module if it is loaded; else BPF, unless it cannot run */
		*ops = access("/sys/module/bftrace", F_OK) ? &bft_backend_bpf :
							      &bft_backend_kmod;
		return 0;
	}
	for (size_t i = 0; i < BACKEND_COUNT; i++) {
		if (!strcmp(b, backend_list[i]->name)) {
			*ops = backend_list[i];
			return 0;
		}
	}
	backend_names(names, sizeof(names));
	if (err && errlen)
		snprintf(err, errlen, "unknown backend '%s' (%s)", b, names);
	return -EINVAL;
}
