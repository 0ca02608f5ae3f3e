// SPDX-License-Identifier: GPL-2.0
/*
 * bfctl run with the inline backend: hand the held child over to the
 * backend's own ptrace.  The backend seizes its target (PTRACE_SEIZE),
 * which the kernel refuses while bfctl still traces it, so the child is
 * parked on a `jmp .` at its hold point and let go; the backend attaches
 * to a process that spins in place, and the jump is then taken back out
 * under a world stop of our own.  Nothing of the target runs meanwhile:
 * the parked thread is the only one (the loader has started none).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "bfctl.h"
#include "inline/bfi_ptrace.h"
#include "run.h"

static const uint8_t park_jmp_self[2] = { 0xeb, 0xfe };

int run_inline_park(pid_t pid, struct run_park *p)
{
	struct user_regs_struct regs;
	long word, patched;

	if (ptrace(PTRACE_GETREGS, pid, NULL, &regs))
		goto fail;
	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, pid, (void *)regs.rip, NULL);
	if (errno)
		goto fail;
	p->rip = regs.rip;
	memcpy(p->saved, &word, sizeof(p->saved));
	patched = word;
	memcpy(&patched, park_jmp_self, sizeof(park_jmp_self));
	if (ptrace(PTRACE_POKETEXT, pid, (void *)regs.rip, (void *)patched))
		goto fail;
	if (ptrace(PTRACE_DETACH, pid, NULL, NULL))
		goto fail;
	return 0;
fail:
	err_msg("run: handing process %d to the inline backend: %s",
		(int)pid, strerror(errno));
	return -errno;
}

int run_inline_unpark(pid_t pid, const struct run_park *p)
{
	struct bfi_world *w;
	uint8_t now[2];
	char err[256];
	int rc;

	rc = bfi_world_stop(pid, &w, err, sizeof(err));
	if (rc) {
		err_msg("run: stopping process %d to let it run: %s", (int)pid, err);
		return rc;
	}
	/* the jump must still be ours: attach never rewrites a thread's rip */
	rc = bfi_mem_read(w, p->rip, now, sizeof(now));
	if (!rc && memcmp(now, park_jmp_self, sizeof(now)))
		rc = -EIO;
	if (!rc)
		rc = bfi_mem_write(w, p->rip, p->saved, sizeof(p->saved));
	bfi_world_release(w);
	if (rc)
		err_msg("run: putting back the code of process %d at %#llx: %s",
			(int)pid, (unsigned long long)p->rip, strerror(-rc));
	return rc;
}
