// SPDX-License-Identifier: GPL-2.0
/*
 * bfi_patch: the session's side of attach and detach.  The registry holds
 * each target's record; bfi_apply.c and bfi_restore.c change the target
 * and hand the record back to be saved before and after its code changes,
 * so what a dying tool leaves half done is on record for the next detach
 * or stop (docs/inline-probes.md, "Patching a live process").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/bft_owner.h"
#include "inline/bfi_apply.h"
#include "inline/bfi_patch.h"
#include "inline/bfi_session.h"

static int patch_save(void *arg, struct bfi_target *t)
{
	return bfi_session_target_save(arg, t);
}

/* The counts of one attach, for bfctl to print: how many went each way. */
static void patch_summary(struct bfi_session *s,
			  const struct bfi_patch_report *rep, size_t n)
{
	char *p = s->notice;
	size_t left = sizeof(s->notice), refused = n - rep->patched;
	int w;

	w = snprintf(p, left, "inline: %zu of %zu functions rewritten",
		     rep->patched, n);
	for (unsigned int r = 1; r < BFI_REFUSE_NRULES && w > 0 &&
	     (size_t)w < left; r++) {
		if (!rep->refused[r])
			continue;
		p += w;
		left -= (size_t)w;
		w = snprintf(p, left, ", %zu %s", rep->refused[r],
			     bfi_refusal_name((enum bfi_refusal)r));
	}
	if (refused && rep->first[0] && w > 0 && (size_t)w < left) {
		p += w;
		left -= (size_t)w;
		w = snprintf(p, left, " (first: %s)", rep->first);
	}
	if (rep->no_ret && w > 0 && (size_t)w < left)
		snprintf(p + w, left - (size_t)w, "; entries only: %s",
			 "no return address is swapped in this process");
}

int bfi_patch_attach(struct bfi_session *s, uint32_t tgid,
		     const struct bft_nl_probe *p, size_t n, int *results,
		     char *err, size_t errlen)
{
	const uint64_t *opt = s->st.opts;
	struct bfi_patch_opts o = {
		.ring_size = (uint32_t)opt[BFT_OPT_BUF_SIZE],
		.res_ns = opt[BFT_OPT_TIME_RES_NS],
		.flush_ns = opt[BFT_OPT_FLUSH_MS] * 1000000ULL,
		.max_depth = (uint32_t)opt[BFT_OPT_MAX_DEPTH],
		.ctl = BFI_CTL(s->st.mode, s->st.break_reason, s->st.gen),
		.save = patch_save, .arg = s,
	};
	struct bfi_target *t;
	struct bfi_patch_report rep;
	int *res = results, rc;

	if (!res) {
		res = calloc(n ? n : 1, sizeof(*res));
		if (!res)
			return -ENOMEM;
	}
	t = bfi_session_target(s, tgid);
	if (t && t->gone) {
		/* its pid names another process now: a new target */
		bfi_session_target_drop(s, tgid);
		t = NULL;
	}
	if (!t) {
		struct bfi_target fresh = { .tgid = tgid,
					    .index = BFI_NO_INDEX };
		struct bft_owner who;

		rc = bft_owner_of(tgid, &who);
		if (rc) {
			snprintf(err, errlen, "process %u: %s", tgid,
				 rc == -ESRCH ? "no such process" :
				 strerror(-rc));
			goto out;
		}
		fresh.start = who.start;
		fresh.pidns = who.pidns;
		t = bfi_session_target_add(s, &fresh);
		if (!t) {
			rc = -ENOMEM;
			goto out;
		}
	}
	s->notice[0] = '\0';
	rc = bfi_patch_apply(t, &o, p, n, res, &rep, err, errlen);
	patch_summary(s, &rep, n);
	/* nothing of it on record: it was never the registry's */
	if (t->index == BFI_NO_INDEX)
		bfi_session_target_drop(s, tgid);
out:
	if (res != results)
		free(res);
	return rc;
}

int bfi_patch_detach(struct bfi_session *s, uint32_t tgid, char *err,
		     size_t errlen)
{
	struct bfi_target *t = bfi_session_target(s, tgid);
	uint64_t ctl = BFI_CTL(BFT_MODE_SHUTTING_DOWN, 0, s->st.gen);
	int rc;

	if (!t)
		return 0;
	rc = bfi_patch_restore(t, ctl, patch_save, s, err, errlen);
	/* a process that is gone, or another one now: nothing to undo */
	return rc == -ESRCH ? 0 : rc;
}
