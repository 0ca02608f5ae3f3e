/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_hooks: where a process's exceptions and non-local jumps need
 * bftrace.ko's hooks (BFT_PF_HOOK_*, linux/bftrace.h 2.3), and whether
 * they can all be found.
 *
 * The hooks go on the functions bft_symclass names (the unwinder's entry
 * points, __cxa_begin_catch, __cxa_throw, __cxa_rethrow, longjmp & co.),
 * in every object the process maps, and in the libgcc_s.so.1 that glibc
 * would dlopen() at the first pthread_cancel or pthread_exit when it is
 * not mapped yet: uprobes are per file, so a probe on that file is in
 * place when it gets mapped.  That file is looked for where the dynamic
 * loader would find it on a standard system: the target's LD_LIBRARY_PATH,
 * the directory of its libc, then the system library directories, all
 * under the target's root.  One file reached under two names is one
 * object; aliases are one hook.
 *
 * A process is "at risk" when a return-probed frame could be unwound:
 *   - an object imports or defines the C++ runtime's or the unwinder's
 *     entry points, or imports pthread_cancel or pthread_exit;
 *   - or it has exception tables (.gcc_except_table) and is not the C
 *     library (whose tables serve only pthread_cancel and pthread_exit,
 *     covered by the imports), e.g. a static, stripped C++ program whose
 *     runtime cannot be named.
 * The hooks are complete when an unwinder entry point was found, and,
 * where C++ may throw (or the tables' owner is unknown), __cxa_begin_catch,
 * and where a thread may be cancelled or exit, _Unwind_ForcedUnwind.
 */
#ifndef BFT_HOOKS_H
#define BFT_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bft_hook {
	char *path;		/* as the target sees it */
	char *open_path;	/* as this process opens it */
	char *object;		/* file name */
	const char *symbol;	/* the hook's name (a static string) */
	uint64_t offset;	/* file offset of the function */
	uint64_t probe_offset;	/* where the probe goes (after endbr64) */
	bool endbr64;
	uint32_t flag;		/* one BFT_PF_HOOK_* */
	uint64_t dev, ino;	/* of open_path */
	bool mapped;		/* false: the libgcc_s.so.1 not mapped yet */
};

struct bft_hooks {
	struct bft_hook *v;
	size_t n;
	bool at_risk;
	char risk[256];		/* what puts it at risk, for messages */
	bool complete;		/* every hook the risk needs was found */
	char missing[256];	/* what was not found, for messages */
	const char *libgcc;	/* the libgcc_s.so.1 hooked though not mapped,
				 * or NULL (points into v[]) */
};

/*
 * Find the hooks of process pid.  no_endbr: probe at the function's first
 * byte even when it is endbr64 (as bft_resolve_opts.no_endbr).
 *   -ESRCH, -EACCES   from bft_maps_read()
 *   -ENOMEM
 * An object that cannot be read is skipped (it has no hooks to give).
 */
int bft_hooks_find(pid_t pid, bool no_endbr, struct bft_hooks *h,
		   char *err, size_t errlen);
void bft_hooks_free(struct bft_hooks *h);

/* The hook at (dev, ino, probe_offset), or NULL. */
const struct bft_hook *bft_hooks_at(const struct bft_hooks *h, uint64_t dev,
				    uint64_t ino, uint64_t probe_offset);

#endif /* BFT_HOOKS_H */
