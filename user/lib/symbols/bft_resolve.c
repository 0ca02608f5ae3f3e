// SPDX-License-Identifier: GPL-2.0
/*
 * bft_resolve: an object's functions from its symbols (bft_resolve_elf.c
 * reads them): aliases merged into one function per address, names made
 * unique, each function's traits and entry probe's place.  See
 * bft_resolve.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/bft_demangle.h"
#include "symbols/bft_entry.h"
#include "symbols/bft_resolve.h"
#include "symbols/bft_resolve_elf.h"
#include "symbols/bft_symclass.h"

/* ---- merging ------------------------------------------------------------- */

static int cmp_raw(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Exported names first; glibc's weak "nanosleep" beats its "__nanosleep"
 * by the underscore rule that follows. */
static int bind_rank(unsigned char bind)
{
	return bind == STB_GLOBAL || bind == STB_WEAK ? 0 : 1;
}

static int cmp_names(const void *a, const void *b)
{
	const struct bft_fname *x = a, *y = b;
	size_t lx = strlen(x->raw), ly = strlen(y->raw);

	if (bind_rank(x->bind) != bind_rank(y->bind))
		return bind_rank(x->bind) - bind_rank(y->bind);
	if ((x->raw[0] == '_') != (y->raw[0] == '_'))
		return x->raw[0] == '_' ? 1 : -1;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->raw, y->raw);
}

static const GElf_Phdr *exec_segment(const struct elf_info *in, uint64_t addr,
				     uint64_t size)
{
	for (size_t i = 0; i < in->nload; i++) {
		const GElf_Phdr *ph = &in->load[i];

		if ((ph->p_flags & PF_X) && addr >= ph->p_vaddr &&
		    addr + size <= ph->p_vaddr + ph->p_filesz &&
		    addr + size > addr)
			return ph;
	}
	return NULL;
}

static bool in_plt(const struct elf_info *in, uint64_t addr)
{
	for (size_t i = 0; i < in->nplt; i++)
		if (addr >= in->plt[i].start && addr < in->plt[i].end)
			return true;
	return false;
}

static void func_free(struct bft_func *f)
{
	for (uint32_t k = 0; k < f->nnames; k++) {
		free(f->names[k].raw);
		free(f->names[k].demangled);
	}
	free(f->names);
	free(f->unique);
}

static int cmp_func_name(const void *a, const void *b)
{
	return strcmp(bft_func_name(*(struct bft_func *const *)a),
		      bft_func_name(*(struct bft_func *const *)b));
}

/*
 * Two functions of one object may share a name: static functions of
 * different files, or a symbol's old version beside its default one
 * (libc's glob@GLIBC_2.2.5 and glob@@GLIBC_2.27).  A trace would show
 * both under one name, so each of them gets its offset in its name.
 * Patterns still match the names themselves.
 */
static int make_names_unique(struct bft_object *o)
{
	struct bft_func **v;
	size_t i, j;

	if (o->nfuncs < 2)
		return 0;
	v = malloc(o->nfuncs * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < o->nfuncs; i++)
		v[i] = &o->funcs[i];
	qsort(v, o->nfuncs, sizeof(*v), cmp_func_name);
	for (i = 0; i < o->nfuncs; i = j) {
		for (j = i + 1; j < o->nfuncs &&
		     !strcmp(bft_func_name(v[i]), bft_func_name(v[j])); j++)
			;
		for (size_t k = i; j - i > 1 && k < j; k++)
			if (asprintf(&v[k]->unique, "%s[%#" PRIx64 "]",
				     bft_func_name(v[k]), v[k]->offset) < 0) {
				v[k]->unique = NULL;
				free(v);
				return -ENOMEM;
			}
	}
	free(v);
	return 0;
}

void bft_object_free(struct bft_object *o)
{
	for (size_t i = 0; i < o->nfuncs; i++)
		func_free(&o->funcs[i]);
	for (size_t i = 0; i < o->nleft_out; i++)
		func_free(&o->left_out[i]);
	free(o->funcs);
	free(o->left_out);
	free(o->path);
	free(o->open_path);
	free(o->name);
	free(o->debug_path);
	memset(o, 0, sizeof(*o));
}

/*
 * What the names tell about the entry at f (bft_symclass.h): a cold
 * fragment only when every name is one (an alias that is a real name
 * makes it a function).
 */
static unsigned int func_traits(const struct bft_func *f, uint64_t entry)
{
	unsigned int t = 0;
	uint32_t cold = 0;

	for (uint32_t k = 0; k < f->nnames; k++) {
		cold += bft_sym_is_cold_fragment(f->names[k].raw);
		if (bft_sym_returns_twice(f->names[k].raw))
			t |= BFT_TRAIT_RETURNS_TWICE;
	}
	if (f->nnames && cold == f->nnames)
		t |= BFT_TRAIT_COLD;
	if (entry && f->addr == entry)
		t |= BFT_TRAIT_ENTRY_POINT;
	return t;
}

const char *bft_func_why(const struct bft_func *f)
{
	if (f->traits & BFT_TRAIT_COLD)
		return "a cold fragment, entered by a jump: no function entry";
	if (f->traits & BFT_TRAIT_RETURNS_TWICE)
		return "returns twice (like setjmp): entry probe only";
	if (f->traits & BFT_TRAIT_ENTRY_POINT)
		return "the ELF entry point, entered with no return address: entry probe only";
	return NULL;
}

/* The file's bytes: read through fd, or in memory (mem); len bytes. */
struct image {
	int fd;
	const uint8_t *mem;
	uint64_t len;
};

static bool image_read(const struct image *img, void *buf, size_t n,
		       uint64_t off)
{
	if (img->mem) {
		if (off > img->len || n > img->len - off)
			return false;
		memcpy(buf, img->mem + off, n);
		return true;
	}
	return pread(img->fd, buf, n, (off_t)off) == (ssize_t)n;
}

/* Turn sorted raw symbols into one function per address.  Takes the names. */
static int merge(struct bft_object *o, struct raw_syms *s,
		 const struct elf_info *main, const struct elf_info *dbg,
		 const struct image *img, const struct bft_resolve_opts *opts)
{
	size_t i = 0, j;

	o->funcs = calloc(s->n ? s->n : 1, sizeof(*o->funcs));
	if (!o->funcs)
		return -ENOMEM;
	for (; i < s->n; i = j) {
		struct bft_func *f = &o->funcs[o->nfuncs];
		const GElf_Phdr *ph;
		unsigned char head[4];
		uint64_t size = 0;

		for (j = i; j < s->n && s->v[j].addr == s->v[i].addr; j++)
			if (s->v[j].size > size)
				size = s->v[j].size;
		ph = exec_segment(main, s->v[i].addr, size);
		if (!ph || in_plt(main, s->v[i].addr) ||
		    (dbg && in_plt(dbg, s->v[i].addr)))
			continue;
		f->names = calloc(j - i, sizeof(*f->names));
		if (!f->names)
			return -ENOMEM;
		for (size_t k = i; k < j; k++) {
			struct bft_fname *n;

			f->src |= s->v[k].src;
			/* .symtab and .dynsym repeat exported names */
			n = f->nnames ? &f->names[f->nnames - 1] : NULL;
			if (n && !strcmp(s->v[k].name, n->raw)) {
				if (bind_rank(s->v[k].bind) < bind_rank(n->bind))
					n->bind = s->v[k].bind;
				continue;
			}
			n = &f->names[f->nnames++];
			n->raw = s->v[k].name;
			s->v[k].name = NULL;
			n->bind = s->v[k].bind;
			n->demangled = bft_demangle(n->raw);
		}
		qsort(f->names, f->nnames, sizeof(*f->names), cmp_names);
		f->addr = s->v[i].addr;
		f->size = size;
		f->offset = f->addr - ph->p_vaddr + ph->p_offset;
		/* A segment may claim more file than there is (a malformed
		 * or truncated file): no probe beyond its end. */
		if (f->offset > img->len || size > img->len - f->offset) {
			for (uint32_t k = 0; k < f->nnames; k++) {
				free(f->names[k].raw);
				free(f->names[k].demangled);
			}
			free(f->names);
			f->names = NULL;
			f->nnames = 0;
			continue;
		}
		f->endbr64 = size > 4 &&
			     image_read(img, head, 4, f->offset) &&
			     !memcmp(head, BFT_ENDBR64_BYTES, 4);
		f->probe_offset = f->offset + (f->endbr64 && !opts->no_endbr ? 4 : 0);
		f->entry_rule = opts->no_endbr ? BFT_ENTRY_OFF : BFT_ENTRY_AT_START;
		f->traits = func_traits(f, main->entry);
		if (f->traits & BFT_TRAIT_COLD) {
			if (!o->left_out) {
				o->left_out = calloc(s->n, sizeof(*o->left_out));
				if (!o->left_out) {
					func_free(f);
					memset(f, 0, sizeof(*f));
					return -ENOMEM;
				}
			}
			o->left_out[o->nleft_out++] = *f;
			memset(f, 0, sizeof(*f));
			continue;
		}
		o->nfuncs++;
	}
	return 0;
}

/* What bft_object_load and bft_object_load_mem share, once e is open. */
static int object_read(struct bft_object *o, Elf *e, const struct image *img,
		       const char *path, const struct bft_resolve_opts *opts,
		       char *err, size_t errlen)
{
	struct elf_info main = { 0 }, dbg = { 0 };
	struct raw_syms syms = { 0 };
	int rc;

	rc = bft_resolve_elf_info_read(e, &main, err, errlen);
	if (rc)
		goto out;
	o->has_symtab = main.has_symtab;
	rc = bft_resolve_read_funcs(e, SHT_SYMTAB, BFT_SRC_SYMTAB, &syms);
	if (!rc)
		rc = bft_resolve_read_funcs(e, SHT_DYNSYM, BFT_SRC_DYNSYM, &syms);
	if (!rc && !main.has_symtab && !opts->no_debug) {
		o->debug_path = bft_resolve_find_debug(path, &main, opts);
		if (o->debug_path)
			rc = bft_resolve_read_debug_syms(o->debug_path, &syms, &dbg);
		if (rc == -ENOEXEC)
			rc = 0;	/* checked in bft_resolve_find_debug; raced away */
	}
	if (rc)
		goto out;
	o->nsyms = syms.n;
	/* no function symbols: syms.v is NULL, which qsort must not get */
	if (syms.n)
		qsort(syms.v, syms.n, sizeof(*syms.v), cmp_raw);
	rc = merge(o, &syms, &main, o->debug_path ? &dbg : NULL, img, opts);
	if (!rc)
		rc = make_names_unique(o);
out:
	if (rc == -ENOMEM)
		bft_resolve_fail(err, errlen, rc, "out of memory");
	bft_resolve_syms_free(&syms);
	bft_resolve_elf_info_free(&main);
	bft_resolve_elf_info_free(&dbg);
	return rc;
}

static int object_names(struct bft_object *o, const char *path,
			const char *open_path)
{
	const char *base = strrchr(path, '/');

	o->path = strdup(path);
	o->open_path = strdup(open_path);
	o->name = strdup(base ? base + 1 : path);
	return o->path && o->open_path && o->name ? 0 : -ENOMEM;
}

int bft_object_load(struct bft_object *o, const char *path,
		    const char *open_path, const struct bft_resolve_opts *opts,
		    char *err, size_t errlen)
{
	static const struct bft_resolve_opts defaults;
	struct image img = { .fd = -1 };
	Elf *e;
	int rc;

	memset(o, 0, sizeof(*o));
	if (!opts)
		opts = &defaults;
	if (!path)
		path = open_path;
	rc = bft_resolve_elf_open(open_path, &img.fd, &e, err, errlen);
	if (!rc) {
		struct stat st;

		if (fstat(img.fd, &st)) {
			rc = bft_resolve_fail(err, errlen, -errno, "%s: %s", path,
				  strerror(errno));
			elf_end(e);
			close(img.fd);
		}
		img.len = (uint64_t)st.st_size;
	}
	if (rc) {
		/* name the file as the user knows it */
		if (rc == -ENOEXEC && strcmp(path, open_path))
			bft_resolve_fail(err, errlen, rc, "%s: not an ELF executable or shared object",
			     path);
		return rc;
	}
	rc = object_names(o, path, open_path);
	if (!rc)
		rc = object_read(o, e, &img, path, opts, err, errlen);
	else
		bft_resolve_fail(err, errlen, rc, "out of memory");
	elf_end(e);
	close(img.fd);
	if (rc)
		bft_object_free(o);
	return rc;
}

int bft_object_load_mem(struct bft_object *o, const char *name,
			const void *buf, size_t len,
			const struct bft_resolve_opts *opts, char *err,
			size_t errlen)
{
	struct bft_resolve_opts mine = { 0 };
	/* libelf wants a writable image; a private copy keeps buf const */
	struct image img = { .fd = -1, .mem = malloc(len ? len : 1),
			     .len = len };
	GElf_Ehdr eh;
	Elf *e = NULL;
	int rc;

	memset(o, 0, sizeof(*o));
	if (opts)
		mine = *opts;
	mine.no_debug = true;	/* a debug file would be looked up by path */
	if (!img.mem)
		return bft_resolve_fail(err, errlen, -ENOMEM, "out of memory");
	memcpy((void *)img.mem, buf, len);
	if (!bft_resolve_elf_ready()) {
		rc = bft_resolve_fail(err, errlen, -EINVAL, "libelf: %s", elf_errmsg(-1));
		goto out;
	}
	e = elf_memory((char *)img.mem, len);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
		rc = bft_resolve_fail(err, errlen, -ENOEXEC, "%s: not an ELF file", name);
		goto out;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		rc = bft_resolve_fail(err, errlen, -ENOEXEC,
			  "%s: ELF file is neither an executable nor a shared object",
			  name);
		goto out;
	}
	rc = object_names(o, name, name);
	if (!rc)
		rc = object_read(o, e, &img, name, &mine, err, errlen);
	else
		bft_resolve_fail(err, errlen, rc, "out of memory");
out:
	if (e)
		elf_end(e);
	free((void *)img.mem);
	if (rc)
		bft_object_free(o);
	return rc;
}
