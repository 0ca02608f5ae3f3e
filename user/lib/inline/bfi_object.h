/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_object: one ELF file of a target, as the inline backend's patching
 * needs it (bfi_object.c).  Functions return 0 or -errno.
 */
#ifndef BFI_OBJECT_H
#define BFI_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbols/bft_elf.h"
#include "symbols/bft_entry.h"

struct bfi_object {
	char *path;		/* as this process opens it */
	int fd;
	uint64_t dev, ino;
	struct bft_elf *elf;
	struct bft_entry_targets targets;	/* once bfi_object_targets */
	bool swept;
};

int bfi_object_open(struct bfi_object *o, const char *path, char *err,
		    size_t errlen);
void bfi_object_close(struct bfi_object *o);
/* The function whose bytes hold file offset off (the largest, if several). */
int bfi_object_func(struct bfi_object *o, uint64_t off,
		    struct bft_elf_func *f, char *err, size_t errlen);
/* len bytes of the file at off: -EIO if it is shorter. */
int bfi_object_read(const struct bfi_object *o, uint64_t off, void *buf,
		    size_t len);
/* Every direct branch target of the file's code, into o->targets. */
int bfi_object_targets(struct bfi_object *o, struct bft_entry *dec);
/* glibc's thread id offset from the thread pointer; -ENOENT: not glibc. */
int bfi_object_tid_off(const struct bfi_object *o, int64_t *off);
/* Whether the file imports the function name (an undefined .dynsym). */
bool bfi_object_imports(const struct bfi_object *o, const char *name);
/*
 * Where file offset off is mapped in pid (executable mappings of this very
 * file, by device and inode), and the span of those mappings.  -ENOENT:
 * not mapped executable there.
 */
int bfi_object_addr(const struct bfi_object *o, pid_t pid, uint64_t off,
		    uint64_t *addr, uint64_t *text_lo, uint64_t *text_hi);

#endif /* BFI_OBJECT_H */
