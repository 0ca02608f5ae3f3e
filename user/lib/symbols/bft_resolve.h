/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_resolve: from "functions matching these patterns in process N" to the
 * (file, offset) pairs bftrace.ko probes.
 *
 * One struct bft_object is the function table of one ELF file:
 *   - symbols of .symtab and .dynsym; when the file has no .symtab (a
 *     stripped distribution binary), also the .symtab of its separate debug
 *     file, found by build-id (DEBUG_DIR/.build-id/xx/yyyy.debug) or by
 *     .gnu_debuglink (DIR/NAME, DIR/.debug/NAME, DEBUG_DIR/DIR/NAME), and
 *     accepted only if its build-id (or the debuglink CRC) matches;
 *   - only defined STT_FUNC symbols of non-zero size, lying in an
 *     executable PT_LOAD segment with file bytes, and outside the .plt*
 *     sections (a PLT stub is not the function it jumps to);
 *   - one entry per address: aliases are merged, their names kept for
 *     matching, the preferred one (global or weak before local; then
 *     without leading '_'; then the shortest) first;
 *   - C++ names demangled (bft_demangle.h);
 *   - no function-entry look-alikes (bft_symclass.h): gcc's cold fragments
 *     ("foo.cold", entered by a jump) are left out, kept apart in
 *     left_out so that tools can say so; setjmp and its kin (returns
 *     twice) and the ELF entry point (entered with argc, not a return
 *     address, on top of the stack) are marked for entry probes only;
 *   - the file offset from the program headers:
 *         offset = st_value - p_vaddr + p_offset
 *     and the probe offset: offset + 4 when the function starts with
 *     endbr64 (f3 0f 1e fa), since uprobes single-step endbr64; for the
 *     functions a plan selects, further on where bft_entry.h's rule finds
 *     an emulated instruction that sees every entry and only entries
 *     (bft_plan_place); no_endbr turns both off.
 *
 * A struct bft_plan is the selection over a process (its /proc/N/maps
 * objects, bft_maps.h) or over files: the objects in scope of the patterns
 * and the functions they select, in object order then address order.
 *
 * Functions return 0 or -errno with a message in err.  Link with -lelf
 * -liberty.
 */
#ifndef BFT_RESOLVE_H
#define BFT_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbols/bft_maps.h"
#include "symbols/bft_pattern.h"

#define BFT_RESOLVE_DEBUG_DIR	"/usr/lib/debug"
#define BFT_ENDBR64_BYTES	"\xf3\x0f\x1e\xfa"

/* Where a function's symbol came from (struct bft_func.src). */
#define BFT_SRC_SYMTAB		(1u << 0)
#define BFT_SRC_DYNSYM		(1u << 1)
#define BFT_SRC_DEBUG		(1u << 2)	/* the separate debug file */

struct bft_fname {
	char *raw;		/* as in the symbol table */
	char *demangled;	/* NULL unless a C++ name */
	unsigned char bind;	/* STB_* */
};

/* struct bft_func.traits */
#define BFT_TRAIT_RETURNS_TWICE	(1u << 0)	/* setjmp & co.: no return probe */
#define BFT_TRAIT_ENTRY_POINT	(1u << 1)	/* e_entry: no return probe */
#define BFT_TRAIT_COLD		(1u << 2)	/* a cold fragment: left out */
#define BFT_TRAITS_ENTRY_ONLY	(BFT_TRAIT_RETURNS_TWICE | BFT_TRAIT_ENTRY_POINT)

struct bft_func {
	uint64_t addr;		/* link-time virtual address */
	uint64_t size;
	uint64_t offset;	/* file offset of the first byte */
	uint64_t probe_offset;	/* where the probe goes */
	bool endbr64;
	unsigned char entry_rule; /* enum bft_entry_rule: why it goes there */
	unsigned int src;	/* BFT_SRC_* of all its names */
	unsigned int traits;	/* BFT_TRAIT_* */
	struct bft_fname *names;/* names[0] is the display name */
	uint32_t nnames;
	/* names[0] with the function's offset, "glob[0xd7640]", where the
	 * object has several functions of that name; else NULL */
	char *unique;
};

/* The name shown to people: demangled if C++, unique in its object. */
static inline const char *bft_func_name(const struct bft_func *f)
{
	if (f->unique)
		return f->unique;
	return f->names[0].demangled ? f->names[0].demangled : f->names[0].raw;
}

struct bft_object {
	char *path;		/* as the target sees it */
	char *open_path;	/* as this process opens it */
	char *name;		/* basename of path */
	char *debug_path;	/* separate debug file used, or NULL */
	bool has_symtab;	/* the file itself has a .symtab */
	size_t nsyms;		/* function symbols read, before merging */
	struct bft_func *funcs;	/* by address */
	size_t nfuncs;
	struct bft_func *left_out;	/* symbols that are no entries */
	size_t nleft_out;
};

/* Why a function gets no return probe, or is left out; NULL if neither. */
const char *bft_func_why(const struct bft_func *f);

struct bft_resolve_opts {
	const char *debug_dir;	/* NULL: BFT_RESOLVE_DEBUG_DIR */
	/* Prefix through which the target's files are reached when looking
	 * for debug files (e.g. "/proc/N/root"); NULL: none. */
	const char *root;
	bool no_debug;		/* never look for separate debug files */
	bool no_endbr;		/* probe_offset = offset, always */
};

/*
 * Move the entry probes of the plan's picks off single-step where
 * bft_entry.h's rule allows (probe_offset, entry_rule); the exception
 * hooks' functions stay where bft_hooks puts their probes.  Done by
 * bft_plan_pid and bft_plan_files; nothing with opts->no_endbr.  -ENOMEM.
 */
struct bft_plan;
int bft_plan_place(struct bft_plan *pl, const struct bft_resolve_opts *opts);

/*
 * Read the function table of one ELF file.  path is the name shown and
 * matched (may be NULL: open_path).
 *   -ENOENT, -EACCES, ...   the file cannot be opened
 *   -ENOEXEC                not ELF, or neither executable nor shared object
 */
int bft_object_load(struct bft_object *o, const char *path,
		    const char *open_path, const struct bft_resolve_opts *opts,
		    char *err, size_t errlen);
/*
 * The same from an image in memory (len bytes at buf, not kept), named
 * name in messages; no separate debug file is looked for.  For tests and
 * fuzzing of the ELF reading on malformed files.
 */
int bft_object_load_mem(struct bft_object *o, const char *name,
			const void *buf, size_t len,
			const struct bft_resolve_opts *opts, char *err,
			size_t errlen);
void bft_object_free(struct bft_object *o);

/*
 * Any defined symbol (function or data) called name, in .dynsym or .symtab:
 * its link-time address, and the lowest PT_LOAD address of the file rounded
 * down to a page (so a mapping at base has the symbol at
 * base + *vaddr - *load_min).  -ENOENT if none.
 */
int bft_elf_symbol(const char *open_path, const char *name, uint64_t *vaddr,
		   uint64_t *load_min, char *err, size_t errlen);

struct bft_pick {
	size_t obj;		/* index into plan->objs */
	size_t func;		/* index into plan->objs[obj].funcs */
};

struct bft_plan {
	struct bft_object *objs;
	size_t nobjs;
	struct bft_pick *picks;
	size_t npicks;
	/* The left-out symbols the patterns match (func indexes left_out). */
	struct bft_pick *left;
	size_t nleft;
	size_t out_of_scope;	/* objects no inclusion pattern could match */
};

/*
 * Select over process pid.  Every object in scope must load: a non-ELF
 * file in scope is -ENOEXEC.  -ESRCH / -EACCES from bft_maps_read().
 * A plan that selects nothing is not an error here (npicks == 0).
 */
int bft_plan_pid(struct bft_plan *pl, pid_t pid,
		 const struct bft_patterns *ps,
		 const struct bft_resolve_opts *opts, char *err, size_t errlen);
/* Select over files, each object named by its own path. */
int bft_plan_files(struct bft_plan *pl, const char *const *paths, size_t n,
		   const struct bft_patterns *ps,
		   const struct bft_resolve_opts *opts, char *err,
		   size_t errlen);
void bft_plan_free(struct bft_plan *pl);

#endif /* BFT_RESOLVE_H */
