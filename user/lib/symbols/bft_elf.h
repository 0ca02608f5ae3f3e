/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_elf: find functions in an ELF file and the file offsets uprobes need.
 *
 * A uprobe is placed at a FILE offset, not at a virtual address, so every
 * symbol is translated through the program headers: the PT_LOAD segment
 * that contains st_value, which must be executable (PF_X), gives
 *     offset = st_value - p_vaddr + p_offset.
 * The same holds for executables (PIE or not), static executables and
 * shared libraries.
 *
 * On x86-64 a function built with -fcf-protection starts with endbr64
 * (f3 0f 1e fa).  A probe on that instruction is single-stepped out of
 * line; a probe on the next one (usually push %rbp, which is emulated) is
 * about ten times cheaper and still precedes any stack change, so return
 * probes work there.  struct bft_elf_func offers both offsets.
 *
 * Conventions: functions return 0 or -errno; after a failure
 * bft_elf_errmsg() says why (e.g. "not an ELF file", "no function 'foo'",
 * "'foo' is not in an executable segment").  Symbol names point into the
 * open file's data and stay valid until bft_elf_close().
 *
 * Link with -lelf.
 */
#ifndef BFT_ELF_H
#define BFT_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bft_elf;

#define BFT_ENDBR64_LEN 4

struct bft_elf_func {
	const char *name;
	uint64_t addr;			/* st_value: link-time virtual address */
	uint64_t size;			/* st_size, > 0 */
	uint64_t offset;		/* file offset of the first byte */
	bool endbr64;			/* the first bytes are f3 0f 1e fa */
	/* Where to probe: offset + BFT_ENDBR64_LEN if endbr64, else offset. */
	uint64_t probe_offset;
	bool dynamic;			/* found in .dynsym, not .symtab */
	unsigned char bind;		/* STB_GLOBAL, STB_LOCAL, STB_WEAK */
};

/*
 * Open an ELF file for lookups.  -ENOEXEC: not ELF, or not an executable or
 * shared object (ET_EXEC/ET_DYN).  On failure *ep is NULL and the reason is
 * copied into err (may be NULL).
 */
int bft_elf_open(const char *path, struct bft_elf **ep, char *err,
		 size_t errlen);
void bft_elf_close(struct bft_elf *e);
const char *bft_elf_errmsg(const struct bft_elf *e);
const char *bft_elf_path(const struct bft_elf *e);

/*
 * Find the function symbol (STT_FUNC, size > 0, defined) called name,
 * looking in .symtab and then in .dynsym.  A global or weak definition
 * wins over local ones; several local ones at different addresses with no
 * global one are ambiguous.
 *   -ENOENT     no such function
 *   -ENOTUNIQ   ambiguous local name
 *   -EINVAL     its address is in no executable PT_LOAD segment, or the
 *               function does not fit in the segment's file image
 */
int bft_elf_find_func(struct bft_elf *e, const char *name,
		      struct bft_elf_func *out);

/*
 * Call cb for each function symbol whose name matches the fnmatch(3)
 * pattern glob (NULL matches all), .symtab first; a .dynsym symbol at an
 * address .symtab already reported is skipped.  Aliases (several names at
 * one address) are reported once per name: deduplicate by offset before
 * attaching, the kernel rejects the same offset twice.  Functions outside
 * executable segments are skipped.  cb returns 0 to go on, non-zero to stop;
 * that value is then returned.  Returns the number of functions reported
 * through *count (may be NULL).
 */
typedef int (*bft_elf_func_cb)(const struct bft_elf_func *f, void *arg);
int bft_elf_for_each_func(struct bft_elf *e, const char *glob,
			  bft_elf_func_cb cb, void *arg, size_t *count);

#endif /* BFT_ELF_H */
