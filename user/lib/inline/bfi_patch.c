// SPDX-License-Identifier: GPL-2.0
/*
 * PLACEHOLDER, to be replaced by the integrator's bfi_patch.c: weak
 * definitions of bfi_patch.h so that the session, the reader and the
 * backend's table build and test before the patching exists.  Attach
 * refuses; detach only drops the target from the registry (there is
 * nothing patched to restore while attach refuses).
 */
#include <errno.h>
#include <stdio.h>

#include "inline/bfi_patch.h"
#include "inline/bfi_session.h"

__attribute__((weak))
int bfi_patch_attach(struct bfi_session *s, uint32_t tgid,
		     const struct bft_nl_probe *p, size_t n, int *results,
		     char *err, size_t errlen)
{
	(void)s;
	(void)tgid;
	(void)p;
	for (size_t i = 0; results && i < n; i++)
		results[i] = -ENOSYS;
	snprintf(err, errlen, "inline patching is not built in yet");
	return -ENOSYS;
}

__attribute__((weak))
int bfi_patch_detach(struct bfi_session *s, uint32_t tgid, char *err,
		     size_t errlen)
{
	int e = bfi_session_target_drop(s, tgid);

	if (e)
		snprintf(err, errlen, "%s", bfi_session_errmsg(s));
	return e;
}
