/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_apply: rewrite a live target's functions into jumps to the inline
 * recorder, and put them back (docs/inline-probes.md, "Patching a live
 * process").  Works on a struct bfi_target that the session keeps in its
 * registry; save() is called with the target's record before any byte of
 * the target's code changes and after, so a tool that dies halfway leaves
 * a record of what to undo.  Functions return 0 or -errno and say why in
 * err.
 */
#ifndef BFI_APPLY_H
#define BFI_APPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/bft_nl.h"
#include "inline/bfi_reloc.h"
#include "inline/bfi_target.h"

struct bfi_patch_opts {
	uint32_t ring_size;	/* bytes of each thread's ring */
	uint64_t res_ns;	/* BFT_OPT_TIME_RES_NS */
	uint64_t flush_ns;	/* a SYNC at least this often */
	uint32_t max_depth;	/* BFT_OPT_MAX_DEPTH */
	uint64_t ctl;		/* the control word a new area starts with */
	/* called with the record before and after the code changes */
	int (*save)(void *arg, struct bfi_target *t);
	void *arg;
};

/* What one attach did: how many functions went each way. */
struct bfi_patch_report {
	size_t patched;
	size_t refused[BFI_REFUSE_NRULES];	/* by reason */
	size_t other;		/* refused for another reason (see first) */
	bool no_ret;		/* every entry of the target is ENTER_NORET */
	char first[256];	/* the first refusal, in words */
};

/*
 * Patch the n probes into tgid (probes' path, offset, method id and flags
 * as the other backends take them; the jump goes at the start of the
 * function that holds the offset, past any endbr64).  results[i]: 0, or
 * -EOPNOTSUPP when the function cannot be rewritten (rep says why),
 * -EEXIST when it is patched already, other -errno.  Returns 0 when at
 * least one probe is in, else the first result.
 */
int bfi_patch_apply(struct bfi_target *t, const struct bfi_patch_opts *o,
		    const struct bft_nl_probe *p, size_t n, int *results,
		    struct bfi_patch_report *rep, char *err, size_t errlen);

/*
 * Put back every rewritten byte of t, pay back the returns its threads
 * owe (their real return addresses into their stack slots), and set the
 * control word to ctl.  Nothing is written into a process that is no
 * longer the one patched (exec, or a reused pid): then -ESRCH, and t is
 * cleared all the same.
 */
int bfi_patch_restore(struct bfi_target *t, uint64_t ctl,
		      int (*save)(void *arg, struct bfi_target *t),
		      void *arg, char *err, size_t errlen);

#endif /* BFI_APPLY_H */
