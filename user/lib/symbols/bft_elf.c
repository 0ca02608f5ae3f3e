// SPDX-License-Identifier: GPL-2.0
/*
 * bft_elf: function symbols and their file offsets.  See bft_elf.h.
 *
 * The file is opened once and kept: the program headers are read at open,
 * the symbol tables walked on demand.  Later resolvers (debug info, build
 * ids, demangling) hang off the same struct.
 */
#define _GNU_SOURCE
#include "symbols/bft_elf.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char endbr64[BFT_ENDBR64_LEN] = { 0xf3, 0x0f, 0x1e, 0xfa };

struct bft_elf {
	int fd;
	Elf *elf;
	char *path;
	size_t phnum;
	GElf_Phdr *phdrs;
	Elf_Scn *symtab;
	Elf_Scn *dynsym;
	char errmsg[512];
};

__attribute__((format(printf, 3, 4)))
static int set_err(struct bft_elf *e, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->errmsg, sizeof(e->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

const char *bft_elf_errmsg(const struct bft_elf *e)
{
	return e ? e->errmsg : "no handle";
}

const char *bft_elf_path(const struct bft_elf *e)
{
	return e->path;
}

static int load_headers(struct bft_elf *e)
{
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;

	if (elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh))
		return set_err(e, -ENOEXEC, "%s: not an ELF file", e->path);
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return set_err(e, -ENOEXEC,
			       "%s: ELF type %u is neither an executable nor a shared object",
			       e->path, eh.e_type);
	if (elf_getphdrnum(e->elf, &e->phnum) < 0)
		return set_err(e, -ENOEXEC, "%s: bad program headers: %s", e->path,
			       elf_errmsg(-1));
	e->phdrs = calloc(e->phnum ? e->phnum : 1, sizeof(*e->phdrs));
	if (!e->phdrs)
		return set_err(e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < e->phnum; i++)
		if (!gelf_getphdr(e->elf, (int)i, &e->phdrs[i]))
			return set_err(e, -ENOEXEC, "%s: bad program header %zu: %s",
				       e->path, i, elf_errmsg(-1));
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !e->symtab)
			e->symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && !e->dynsym)
			e->dynsym = scn;
	}
	return 0;
}

int bft_elf_open(const char *path, struct bft_elf **ep, char *err,
		 size_t errlen)
{
	struct bft_elf *e;
	struct stat st;
	int ret;

	*ep = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (elf_version(EV_CURRENT) == EV_NONE) {
		if (err && errlen)
			snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		return -ELIBBAD;
	}
	e = calloc(1, sizeof(*e));
	if (e)
		e->path = strdup(path);
	if (!e || !e->path) {
		free(e);
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	e->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0) {
		ret = set_err(e, -errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(e->fd, &st) == 0 && !S_ISREG(st.st_mode)) {
		ret = set_err(e, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
			      "%s: not a regular file", path);
		goto fail;
	}
	e->elf = elf_begin(e->fd, ELF_C_READ_MMAP, NULL);
	if (!e->elf) {
		ret = set_err(e, -ENOEXEC, "%s: not an ELF file (%s)", path,
			      elf_errmsg(-1));
		goto fail;
	}
	ret = load_headers(e);
	if (ret)
		goto fail;
	*ep = e;
	return 0;
fail:
	if (err && errlen)
		snprintf(err, errlen, "%s", e->errmsg);
	bft_elf_close(e);
	return ret;
}

void bft_elf_close(struct bft_elf *e)
{
	if (!e)
		return;
	if (e->elf)
		elf_end(e->elf);
	if (e->fd >= 0)
		close(e->fd);
	free(e->phdrs);
	free(e->path);
	free(e);
}

/*
 * The file offset of [addr, addr + size): inside one executable PT_LOAD
 * segment, and inside the part of it the file holds (not its bss tail).
 */
static int addr_to_offset(struct bft_elf *e, const char *name, uint64_t addr,
			  uint64_t size, uint64_t *off)
{
	for (size_t i = 0; i < e->phnum; i++) {
		const GElf_Phdr *ph = &e->phdrs[i];

		if (ph->p_type != PT_LOAD || addr < ph->p_vaddr ||
		    addr - ph->p_vaddr >= ph->p_memsz)
			continue;
		if (!(ph->p_flags & PF_X))
			return set_err(e, -EINVAL,
				       "%s: '%s' at 0x%llx is not in an executable segment",
				       e->path, name, (unsigned long long)addr);
		if (addr - ph->p_vaddr > ph->p_filesz ||
		    size > ph->p_filesz - (addr - ph->p_vaddr))
			return set_err(e, -EINVAL,
				       "%s: '%s' at 0x%llx lies past the file image of its segment",
				       e->path, name, (unsigned long long)addr);
		*off = addr - ph->p_vaddr + ph->p_offset;
		return 0;
	}
	return set_err(e, -EINVAL, "%s: '%s' at 0x%llx is in no loadable segment",
		       e->path, name, (unsigned long long)addr);
}

static bool is_func(const GElf_Sym *s)
{
	return GELF_ST_TYPE(s->st_info) == STT_FUNC && s->st_size > 0 &&
	       s->st_shndx != SHN_UNDEF;
}

static int fill_func(struct bft_elf *e, const char *name, const GElf_Sym *s,
		     bool dynamic, struct bft_elf_func *f)
{
	unsigned char head[BFT_ENDBR64_LEN];
	int err;

	memset(f, 0, sizeof(*f));
	f->name = name;
	f->addr = s->st_value;
	f->size = s->st_size;
	f->dynamic = dynamic;
	f->bind = GELF_ST_BIND(s->st_info);
	err = addr_to_offset(e, name, s->st_value, s->st_size, &f->offset);
	if (err)
		return err;
	f->probe_offset = f->offset;
	if (f->size >= sizeof(head) &&
	    pread(e->fd, head, sizeof(head), (off_t)f->offset) == (ssize_t)sizeof(head) &&
	    !memcmp(head, endbr64, sizeof(head))) {
		f->endbr64 = true;
		f->probe_offset += BFT_ENDBR64_LEN;
	}
	return 0;
}

/* Walks one symbol table; cb returns non-zero to stop, which is returned. */
static int walk_syms(struct bft_elf *e, Elf_Scn *scn,
		     int (*cb)(struct bft_elf *e, const char *name,
			       const GElf_Sym *s, void *arg),
		     void *arg)
{
	Elf_Data *data;
	GElf_Shdr sh;
	size_t n;

	if (!scn || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return 0;
	data = elf_getdata(scn, NULL);
	if (!data)
		return 0;
	n = sh.sh_size / sh.sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;
		int ret;

		if (!gelf_getsym(data, (int)i, &s) || !is_func(&s))
			continue;
		name = elf_strptr(e->elf, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		ret = cb(e, name, &s, arg);
		if (ret)
			return ret;
	}
	return 0;
}

struct find_ctx {
	const char *want;
	GElf_Sym global, local;
	const char *global_name, *local_name;
	bool global_dyn, local_dyn;
	bool ambiguous;
	bool dynamic;		/* the table being walked */
};

static int find_cb(struct bft_elf *e, const char *name, const GElf_Sym *s,
		   void *arg)
{
	struct find_ctx *c = arg;

	(void)e;
	if (strcmp(name, c->want))
		return 0;
	if (GELF_ST_BIND(s->st_info) != STB_LOCAL) {
		c->global = *s;
		c->global_name = name;
		c->global_dyn = c->dynamic;
		return 1;
	}
	if (!c->local_name) {
		c->local = *s;
		c->local_name = name;
		c->local_dyn = c->dynamic;
	} else if (c->local.st_value != s->st_value) {
		c->ambiguous = true;
	}
	return 0;
}

int bft_elf_find_func(struct bft_elf *e, const char *name,
		      struct bft_elf_func *out)
{
	struct find_ctx c = { .want = name };

	e->errmsg[0] = '\0';
	if (!walk_syms(e, e->symtab, find_cb, &c)) {
		c.dynamic = true;
		walk_syms(e, e->dynsym, find_cb, &c);
	}
	if (c.global_name)
		return fill_func(e, c.global_name, &c.global, c.global_dyn, out);
	if (c.ambiguous)
		return set_err(e, -ENOTUNIQ,
			       "%s: several local functions are called '%s'",
			       e->path, name);
	if (c.local_name)
		return fill_func(e, c.local_name, &c.local, c.local_dyn, out);
	if (!e->symtab && !e->dynsym)
		return set_err(e, -ENOENT, "%s: no function '%s': the file has no symbol table",
			       e->path, name);
	return set_err(e, -ENOENT, "%s: no function '%s'%s", e->path, name,
		       e->symtab ? "" : " (no .symtab, only .dynsym: stripped?)");
}

struct each_ctx {
	const char *glob;
	bft_elf_func_cb cb;
	void *arg;
	size_t count;
	bool dynamic;
	/* .symtab addresses, sorted, to skip their .dynsym copies. */
	uint64_t *seen;
	size_t nseen, capseen;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int each_cb(struct bft_elf *e, const char *name, const GElf_Sym *s,
		   void *arg)
{
	struct each_ctx *c = arg;
	struct bft_elf_func f;
	uint64_t v = s->st_value;

	if (c->dynamic) {
		if (c->nseen && bsearch(&v, c->seen, c->nseen, sizeof(v), cmp_u64))
			return 0;
	} else {
		if (c->nseen == c->capseen) {
			size_t cap = c->capseen ? 2 * c->capseen : 256;
			uint64_t *n = realloc(c->seen, cap * sizeof(*n));

			if (!n)
				return set_err(e, -ENOMEM, "out of memory");
			c->seen = n;
			c->capseen = cap;
		}
		c->seen[c->nseen++] = v;
	}
	if (c->glob && fnmatch(c->glob, name, 0))
		return 0;
	if (fill_func(e, name, s, c->dynamic, &f))
		return 0;
	c->count++;
	return c->cb ? c->cb(&f, c->arg) : 0;
}

int bft_elf_for_each_func(struct bft_elf *e, const char *glob,
			  bft_elf_func_cb cb, void *arg, size_t *count)
{
	struct each_ctx c = { .glob = glob, .cb = cb, .arg = arg };
	int ret;

	e->errmsg[0] = '\0';
	ret = walk_syms(e, e->symtab, each_cb, &c);
	if (!ret && e->dynsym) {
		if (c.nseen)
			qsort(c.seen, c.nseen, sizeof(*c.seen), cmp_u64);
		c.dynamic = true;
		ret = walk_syms(e, e->dynsym, each_cb, &c);
	}
	free(c.seen);
	/* Functions skipped for their segment left a message: not a failure. */
	if (ret >= 0)
		e->errmsg[0] = '\0';
	if (count)
		*count = c.count;
	return ret;
}
