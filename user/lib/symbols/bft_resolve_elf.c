// SPDX-License-Identifier: GPL-2.0
/*
 * bft_resolve's reading of ELF files: opening one, what it says about
 * itself (segments, PLT sections, build id, debug link), its function
 * symbols, and the separate debug file that holds a stripped object's
 * symbols.  bft_resolve.c merges what is read here into functions.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/bft_resolve_elf.h"

int bft_resolve_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

bool bft_resolve_elf_ready(void)
{
	static int ok = -1;

	if (ok < 0)
		ok = elf_version(EV_CURRENT) != EV_NONE;
	return ok;
}

int bft_resolve_elf_open(const char *path, int *fdp, Elf **ep, char *err,
			 size_t errlen)
{
	GElf_Ehdr eh;
	Elf *e;
	int fd, rc;

	if (!bft_resolve_elf_ready())
		return bft_resolve_fail(err, errlen, -EINVAL, "libelf: %s", elf_errmsg(-1));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		return bft_resolve_fail(err, errlen, rc, "%s: %s", path, strerror(-rc));
	}
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
		if (e)
			elf_end(e);
		close(fd);
		return bft_resolve_fail(err, errlen, -ENOEXEC, "%s: not an ELF file", path);
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		elf_end(e);
		close(fd);
		return bft_resolve_fail(err, errlen, -ENOEXEC,
			    "%s: ELF file is neither an executable nor a shared object",
			    path);
	}
	*fdp = fd;
	*ep = e;
	return 0;
}

void bft_resolve_elf_info_free(struct elf_info *in)
{
	free(in->load);
	memset(in, 0, sizeof(*in));
}

static void read_build_id(Elf_Data *d, struct elf_info *in)
{
	GElf_Nhdr nh;
	size_t off = 0, noff, doff;

	while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((char *)d->d_buf + noff, "GNU", 4) &&
		    nh.n_descsz <= sizeof(in->build_id)) {
			memcpy(in->build_id, (char *)d->d_buf + doff, nh.n_descsz);
			in->build_id_len = nh.n_descsz;
			return;
		}
	}
}

int bft_resolve_elf_info_read(Elf *e, struct elf_info *in, char *err,
			      size_t errlen)
{
	size_t phnum, shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;

	memset(in, 0, sizeof(*in));
	if (gelf_getehdr(e, &eh))
		in->entry = eh.e_entry;
	if (elf_getphdrnum(e, &phnum))
		return bft_resolve_fail(err, errlen, -ENOEXEC, "no program headers: %s",
			    elf_errmsg(-1));
	in->load = calloc(phnum ? phnum : 1, sizeof(*in->load));
	if (!in->load)
		return bft_resolve_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
			in->load[in->nload++] = ph;
	}
	if (elf_getshdrstrndx(e, &shstrndx))
		return 0;	/* no sections: nothing more to learn */
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			in->has_symtab = true;
		if (!strncmp(name, ".plt", 4) && in->nplt < 8) {
			in->plt[in->nplt].start = sh.sh_addr;
			in->plt[in->nplt].end = sh.sh_addr + sh.sh_size;
			in->nplt++;
		}
		d = elf_getdata(scn, NULL);
		if (sh.sh_type == SHT_NOTE && !in->build_id_len && d)
			read_build_id(d, in);
		if (!strcmp(name, ".gnu_debuglink") && sh.sh_type != SHT_NOBITS &&
		    d && d->d_size > 4) {
			size_t len = strnlen(d->d_buf, d->d_size);
			size_t crc_off = (len + 4) & ~(size_t)3;

			if (len && len < sizeof(in->debuglink) &&
			    crc_off + 4 <= d->d_size) {
				memcpy(in->debuglink, d->d_buf, len);
				in->debuglink[len] = '\0';
				memcpy(&in->debuglink_crc, (char *)d->d_buf + crc_off, 4);
				in->has_debuglink = true;
			}
		}
	}
	return 0;
}

static int syms_push(struct raw_syms *s, const GElf_Sym *sym, const char *name,
		     unsigned int src)
{
	struct raw_sym *r;

	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 256;
		void *p = realloc(s->v, ncap * sizeof(*s->v));

		if (!p)
			return -ENOMEM;
		s->v = p;
		s->cap = ncap;
	}
	r = &s->v[s->n];
	r->name = strdup(name);
	if (!r->name)
		return -ENOMEM;
	r->addr = sym->st_value;
	r->size = sym->st_size;
	r->bind = GELF_ST_BIND(sym->st_info);
	r->src = src;
	s->n++;
	return 0;
}

void bft_resolve_syms_free(struct raw_syms *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].name);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

#define SYMTABS_OF(t)	(1u << (t))	/* SHT_SYMTAB, SHT_DYNSYM: a bit each */

/*
 * Call fn for each named symbol (but no undefined one) of the symbol
 * tables whose SYMTABS_OF bits are in tables, until fn returns nonzero;
 * that value is returned, else 0.
 */
static int walk_syms(Elf *e, unsigned int tables,
		     int (*fn)(void *ctx, const GElf_Sym *sym,
			       const char *name), void *ctx)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
		    sh.sh_type >= 32 || !(tables & SYMTABS_OF(sh.sh_type)))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			int rc;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			rc = fn(ctx, &sym, name);
			if (rc)
				return rc;
		}
	}
	return 0;
}

struct funcs_ctx {
	struct raw_syms *out;
	unsigned int src;
};

static int take_func(void *arg, const GElf_Sym *sym, const char *name)
{
	struct funcs_ctx *c = arg;

	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC || !sym->st_size ||
	    sym->st_shndx == SHN_ABS || sym->st_shndx == SHN_COMMON)
		return 0;
	return syms_push(c->out, sym, name, c->src) ? -ENOMEM : 0;
}

/* Function symbols of the table of type (SHT_SYMTAB or SHT_DYNSYM). */
int bft_resolve_read_funcs(Elf *e, Elf64_Word type, unsigned int src,
			   struct raw_syms *out)
{
	struct funcs_ctx c = { .out = out, .src = src };

	return walk_syms(e, SYMTABS_OF(type), take_func, &c);
}

/* ---- separate debug files ----------------------------------------------- */

/* CRC-32 (IEEE 802.3, reflected), as .gnu_debuglink records it. */
static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}

static bool file_crc_is(const char *path, uint32_t want)
{
	unsigned char buf[65536];
	uint32_t crc = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32_update(crc, buf, (size_t)n);
	close(fd);
	return n == 0 && crc == want;
}

/* Is path a debug file for the object described by main? */
static bool debug_file_fits(const char *path, const struct elf_info *main)
{
	struct elf_info in;
	Elf *e;
	int fd;
	bool ok;

	if (access(path, R_OK))
		return false;
	if (bft_resolve_elf_open(path, &fd, &e, NULL, 0))
		return false;
	ok = !bft_resolve_elf_info_read(e, &in, NULL, 0) && in.has_symtab;
	if (ok && main->build_id_len)
		ok = in.build_id_len == main->build_id_len &&
		     !memcmp(in.build_id, main->build_id, in.build_id_len);
	else if (ok)
		ok = main->has_debuglink && file_crc_is(path, main->debuglink_crc);
	bft_resolve_elf_info_free(&in);
	elf_end(e);
	close(fd);
	return ok;
}

/* The candidate named by fmt, malloc'ed, if it is a fitting debug file. */
static char *try_debug(const struct elf_info *main, const char *fmt, ...)
{
	va_list ap;
	char *cand;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&cand, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	if (debug_file_fits(cand, main))
		return cand;
	free(cand);
	return NULL;
}

char *bft_resolve_find_debug(const char *path, const struct elf_info *main,
			     const struct bft_resolve_opts *o)
{
	const char *ddir = o->debug_dir ? o->debug_dir : BFT_RESOLVE_DEBUG_DIR;
	const char *root = o->root ? o->root : "";
	const char *slash = strrchr(path, '/');
	char hex[2 * sizeof(main->build_id) + 1];
	char *found = NULL;
	int dlen;

	if (main->build_id_len >= 2) {
		for (size_t i = 0; i < main->build_id_len; i++)
			sprintf(hex + 2 * i, "%02x", main->build_id[i]);
		found = try_debug(main, "%s%s/.build-id/%.2s/%s.debug", root,
				  ddir, hex, hex + 2);
	}
	if (found || !main->has_debuglink || !slash)
		return found;
	dlen = (int)(slash - path);
	/* DIR/NAME may be the object itself: that one has no .symtab. */
	found = try_debug(main, "%s%.*s/%s", root, dlen, path, main->debuglink);
	if (!found)
		found = try_debug(main, "%s%.*s/.debug/%s", root, dlen, path,
				  main->debuglink);
	if (!found)
		found = try_debug(main, "%s%s%.*s/%s", root, ddir, dlen, path,
				  main->debuglink);
	return found;
}

int bft_resolve_read_debug_syms(const char *dpath, struct raw_syms *out,
				struct elf_info *din)
{
	Elf *e;
	int fd, rc;

	rc = bft_resolve_elf_open(dpath, &fd, &e, NULL, 0);
	if (rc)
		return rc;
	rc = bft_resolve_elf_info_read(e, din, NULL, 0);
	if (!rc)
		rc = bft_resolve_read_funcs(e, SHT_SYMTAB, BFT_SRC_DEBUG, out);
	elf_end(e);
	close(fd);
	return rc;
}

struct named_ctx {
	const char *name;
	uint64_t vaddr;
};

static int find_named(void *arg, const GElf_Sym *sym, const char *name)
{
	struct named_ctx *c = arg;

	if (strcmp(name, c->name))
		return 0;
	c->vaddr = sym->st_value;
	return 1;
}

int bft_elf_symbol(const char *open_path, const char *name, uint64_t *vaddr,
		   uint64_t *load_min, char *err, size_t errlen)
{
	struct named_ctx want;
	struct elf_info in;
	Elf *e;
	int fd, rc;

	rc = bft_resolve_elf_open(open_path, &fd, &e, err, errlen);
	if (rc)
		return rc;
	rc = bft_resolve_elf_info_read(e, &in, err, errlen);
	if (rc)
		goto out;
	*load_min = UINT64_MAX;
	for (size_t i = 0; i < in.nload; i++)
		if (in.load[i].p_vaddr < *load_min)
			*load_min = in.load[i].p_vaddr & ~(uint64_t)4095;
	want.name = name;
	if (walk_syms(e, SYMTABS_OF(SHT_DYNSYM) | SYMTABS_OF(SHT_SYMTAB),
		      find_named, &want))
		*vaddr = want.vaddr;
	else
		rc = bft_resolve_fail(err, errlen, -ENOENT, "%s: no symbol %s", open_path,
			  name);
out:
	bft_resolve_elf_info_free(&in);
	elf_end(e);
	close(fd);
	return rc;
}
