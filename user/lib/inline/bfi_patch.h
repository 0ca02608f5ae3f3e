/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_patch: writing and undoing the jumps of the inline backend
 * (docs/inline-probes.md, "Patching a live process"): map the areas, copy
 * the recorder, write stubs and jumps, restore.  Both are called with the
 * registry locked and record what they change in it.
 *
 * Conventions: 0 or -errno, and err (errlen bytes) says why.
 */
#ifndef BFI_PATCH_H
#define BFI_PATCH_H

#include <stddef.h>
#include <stdint.h>

#include "capture/bft_nl.h"

struct bfi_session;

/*
 * Patch n functions of tgid; results[i] (may be NULL): 0 or the -errno
 * that refused probe i.
 */
int bfi_patch_attach(struct bfi_session *s, uint32_t tgid,
		     const struct bft_nl_probe *p, size_t n, int *results,
		     char *err, size_t errlen);
/* Restore every function of tgid and drop it from the registry. */
int bfi_patch_detach(struct bfi_session *s, uint32_t tgid, char *err,
		     size_t errlen);

#endif /* BFI_PATCH_H */
