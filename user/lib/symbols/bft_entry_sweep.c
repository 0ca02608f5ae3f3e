// SPDX-License-Identifier: GPL-2.0
/*
 * bft_entry_sweep: every direct branch target of an object's executable
 * sections, whatever its symbols say.  A stripped library's static
 * functions and hand-written code such as glibc's string functions jump
 * into other functions' first instructions, so both the probe placement
 * (bft_resolve_place.c) and the inline backend's relocation (bfi_patch.c)
 * need the whole object's targets, not the function's own.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>

#include "symbols/bft_entry.h"

int bft_entry_targets_sweep(struct bft_entry *e, int fd,
			    struct bft_entry_targets *t)
{
	Elf_Scn *scn = NULL;
	Elf *elf;
	int rc = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	while (!rc && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *d = NULL;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		while (!rc && (d = elf_rawdata(scn, d)))
			if (d->d_buf)
				rc = bft_entry_targets_add(e, t, d->d_buf,
							   d->d_size,
							   sh.sh_addr + d->d_off);
	}
	elf_end(elf);
	bft_entry_targets_sort(t);
	return rc;
}
