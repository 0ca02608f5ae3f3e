/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of bft_resolve share inside user/lib: an ELF file's
 * symbols as read, before aliases merge into functions, and what the file
 * says about itself.  Not part of bft_resolve.h's interface.
 */
#ifndef BFT_RESOLVE_ELF_H
#define BFT_RESOLVE_ELF_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/bft_resolve.h"

/* A symbol as read, before aliases are merged. */
struct raw_sym {
	uint64_t addr;
	uint64_t size;
	char *name;
	unsigned char bind;
	unsigned int src;
};

struct raw_syms {
	struct raw_sym *v;
	size_t n, cap;
};

struct range {
	uint64_t start, end;
};

/* What one ELF file tells: its segments, PLT sections, debug links. */
struct elf_info {
	GElf_Phdr *load;	/* PT_LOAD headers */
	size_t nload;
	struct range plt[8];	/* .plt, .plt.got, .plt.sec, ... */
	size_t nplt;
	unsigned char build_id[64];
	size_t build_id_len;
	char debuglink[256];
	uint32_t debuglink_crc;
	bool has_debuglink;
	bool has_symtab;
	uint64_t entry;		/* e_entry */
};

/* Formats into err (if any) and returns rc. */
int bft_resolve_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

bool bft_resolve_elf_ready(void);
int bft_resolve_elf_open(const char *path, int *fdp, Elf **ep, char *err,
			 size_t errlen);
int bft_resolve_elf_info_read(Elf *e, struct elf_info *in, char *err,
			      size_t errlen);
void bft_resolve_elf_info_free(struct elf_info *in);

/* Function symbols of the table of type (SHT_SYMTAB or SHT_DYNSYM). */
int bft_resolve_read_funcs(Elf *e, Elf64_Word type, unsigned int src,
			   struct raw_syms *out);
void bft_resolve_syms_free(struct raw_syms *s);

/* A separate debug file for path (malloc'ed), or NULL; and its symbols. */
char *bft_resolve_find_debug(const char *path, const struct elf_info *main,
			     const struct bft_resolve_opts *o);
int bft_resolve_read_debug_syms(const char *dpath, struct raw_syms *out,
				struct elf_info *din);

#endif /* BFT_RESOLVE_ELF_H */
