// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bft_demangle.h"
#include "bft_entry.h"
#include "bft_resolve.h"
#include "bft_symclass.h"

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

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static bool elf_ready(void)
{
	static int ok = -1;

	if (ok < 0)
		ok = elf_version(EV_CURRENT) != EV_NONE;
	return ok;
}

static int elf_open_fd(const char *path, int *fdp, Elf **ep, char *err,
		       size_t errlen)
{
	GElf_Ehdr eh;
	Elf *e;
	int fd, rc;

	if (!elf_ready())
		return fail(err, errlen, -EINVAL, "libelf: %s", elf_errmsg(-1));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		return fail(err, errlen, rc, "%s: %s", path, strerror(-rc));
	}
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
		if (e)
			elf_end(e);
		close(fd);
		return fail(err, errlen, -ENOEXEC, "%s: not an ELF file", path);
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		elf_end(e);
		close(fd);
		return fail(err, errlen, -ENOEXEC,
			    "%s: ELF file is neither an executable nor a shared object",
			    path);
	}
	*fdp = fd;
	*ep = e;
	return 0;
}

static void elf_info_free(struct elf_info *in)
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

static int elf_info_read(Elf *e, struct elf_info *in, char *err, size_t errlen)
{
	size_t phnum, shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;

	memset(in, 0, sizeof(*in));
	if (gelf_getehdr(e, &eh))
		in->entry = eh.e_entry;
	if (elf_getphdrnum(e, &phnum))
		return fail(err, errlen, -ENOEXEC, "no program headers: %s",
			    elf_errmsg(-1));
	in->load = calloc(phnum ? phnum : 1, sizeof(*in->load));
	if (!in->load)
		return fail(err, errlen, -ENOMEM, "out of memory");
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

static void syms_free(struct raw_syms *s)
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
static int read_funcs(Elf *e, Elf64_Word type, unsigned int src,
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
	if (elf_open_fd(path, &fd, &e, NULL, 0))
		return false;
	ok = !elf_info_read(e, &in, NULL, 0) && in.has_symtab;
	if (ok && main->build_id_len)
		ok = in.build_id_len == main->build_id_len &&
		     !memcmp(in.build_id, main->build_id, in.build_id_len);
	else if (ok)
		ok = main->has_debuglink && file_crc_is(path, main->debuglink_crc);
	elf_info_free(&in);
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

static char *find_debug_file(const char *path, const struct elf_info *main,
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

static int read_debug_syms(const char *dpath, struct raw_syms *out,
			   struct elf_info *din)
{
	Elf *e;
	int fd, rc;

	rc = elf_open_fd(dpath, &fd, &e, NULL, 0);
	if (rc)
		return rc;
	rc = elf_info_read(e, din, NULL, 0);
	if (!rc)
		rc = read_funcs(e, SHT_SYMTAB, BFT_SRC_DEBUG, out);
	elf_end(e);
	close(fd);
	return rc;
}

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

	rc = elf_info_read(e, &main, err, errlen);
	if (rc)
		goto out;
	o->has_symtab = main.has_symtab;
	rc = read_funcs(e, SHT_SYMTAB, BFT_SRC_SYMTAB, &syms);
	if (!rc)
		rc = read_funcs(e, SHT_DYNSYM, BFT_SRC_DYNSYM, &syms);
	if (!rc && !main.has_symtab && !opts->no_debug) {
		o->debug_path = find_debug_file(path, &main, opts);
		if (o->debug_path)
			rc = read_debug_syms(o->debug_path, &syms, &dbg);
		if (rc == -ENOEXEC)
			rc = 0;	/* checked in find_debug_file; raced away */
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
		fail(err, errlen, rc, "out of memory");
	syms_free(&syms);
	elf_info_free(&main);
	elf_info_free(&dbg);
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
	rc = elf_open_fd(open_path, &img.fd, &e, err, errlen);
	if (!rc) {
		struct stat st;

		if (fstat(img.fd, &st)) {
			rc = fail(err, errlen, -errno, "%s: %s", path,
				  strerror(errno));
			elf_end(e);
			close(img.fd);
		}
		img.len = (uint64_t)st.st_size;
	}
	if (rc) {
		/* name the file as the user knows it */
		if (rc == -ENOEXEC && strcmp(path, open_path))
			fail(err, errlen, rc, "%s: not an ELF executable or shared object",
			     path);
		return rc;
	}
	rc = object_names(o, path, open_path);
	if (!rc)
		rc = object_read(o, e, &img, path, opts, err, errlen);
	else
		fail(err, errlen, rc, "out of memory");
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
		return fail(err, errlen, -ENOMEM, "out of memory");
	memcpy((void *)img.mem, buf, len);
	if (!elf_ready()) {
		rc = fail(err, errlen, -EINVAL, "libelf: %s", elf_errmsg(-1));
		goto out;
	}
	e = elf_memory((char *)img.mem, len);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
		rc = fail(err, errlen, -ENOEXEC, "%s: not an ELF file", name);
		goto out;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		rc = fail(err, errlen, -ENOEXEC,
			  "%s: ELF file is neither an executable nor a shared object",
			  name);
		goto out;
	}
	rc = object_names(o, name, name);
	if (!rc)
		rc = object_read(o, e, &img, name, &mine, err, errlen);
	else
		fail(err, errlen, rc, "out of memory");
out:
	if (e)
		elf_end(e);
	free((void *)img.mem);
	if (rc)
		bft_object_free(o);
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

	rc = elf_open_fd(open_path, &fd, &e, err, errlen);
	if (rc)
		return rc;
	rc = elf_info_read(e, &in, err, errlen);
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
		rc = fail(err, errlen, -ENOENT, "%s: no symbol %s", open_path,
			  name);
out:
	elf_info_free(&in);
	elf_end(e);
	close(fd);
	return rc;
}

/* ---- plans ---------------------------------------------------------------- */

void bft_plan_free(struct bft_plan *pl)
{
	for (size_t i = 0; i < pl->nobjs; i++)
		bft_object_free(&pl->objs[i]);
	free(pl->objs);
	free(pl->picks);
	free(pl->left);
	memset(pl, 0, sizeof(*pl));
}

/* Does a pattern select f: any alias, mangled or demangled? */
static int func_selected(const struct bft_patterns *ps, const char *path,
			 const struct bft_func *f, const char ***names,
			 size_t *cap)
{
	size_t nn = 0;

	if (2 * f->nnames > *cap) {
		void *p = realloc(*names, 2 * f->nnames * sizeof(**names));

		if (!p)
			return -ENOMEM;
		*names = p;
		*cap = 2 * f->nnames;
	}
	for (uint32_t n = 0; n < f->nnames; n++) {
		(*names)[nn++] = f->names[n].raw;
		if (f->names[n].demangled)
			(*names)[nn++] = f->names[n].demangled;
	}
	return bft_patterns_match(ps, path, *names, nn);
}

static int plan_select(struct bft_plan *pl, const struct bft_patterns *ps)
{
	size_t total = 0, nleft = 0, cap = 0;
	const char **names = NULL;
	int rc = 0;

	for (size_t i = 0; i < pl->nobjs; i++) {
		total += pl->objs[i].nfuncs;
		nleft += pl->objs[i].nleft_out;
	}
	pl->picks = calloc(total ? total : 1, sizeof(*pl->picks));
	pl->left = calloc(nleft ? nleft : 1, sizeof(*pl->left));
	if (!pl->picks || !pl->left)
		return -ENOMEM;
	for (size_t i = 0; i < pl->nobjs && rc >= 0; i++) {
		const struct bft_object *o = &pl->objs[i];

		for (size_t k = 0; k < o->nfuncs && rc >= 0; k++) {
			rc = func_selected(ps, o->path, &o->funcs[k], &names, &cap);
			if (rc > 0)
				pl->picks[pl->npicks++] = (struct bft_pick){ i, k };
		}
		for (size_t k = 0; k < o->nleft_out && rc >= 0; k++) {
			rc = func_selected(ps, o->path, &o->left_out[k], &names, &cap);
			if (rc > 0)
				pl->left[pl->nleft++] = (struct bft_pick){ i, k };
		}
	}
	free(names);
	return rc < 0 ? rc : 0;
}

static int plan_grow(struct bft_plan *pl, size_t n)
{
	pl->objs = calloc(n ? n : 1, sizeof(*pl->objs));
	return pl->objs ? 0 : -ENOMEM;
}

int bft_plan_pid(struct bft_plan *pl, pid_t pid,
		 const struct bft_patterns *ps,
		 const struct bft_resolve_opts *opts, char *err, size_t errlen)
{
	struct bft_resolve_opts o = opts ? *opts : (struct bft_resolve_opts){ 0 };
	struct bft_maps maps;
	char root[64];
	int rc;

	memset(pl, 0, sizeof(*pl));
	rc = bft_maps_read(pid, &maps, err, errlen);
	if (rc)
		return rc;
	if (!maps.same_root && !o.root) {
		snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
		o.root = root;
	}
	rc = plan_grow(pl, maps.n);
	if (rc)
		goto nomem;
	for (size_t i = 0; i < maps.n; i++) {
		const struct bft_map_obj *m = &maps.obj[i];
		bool dup = false;

		if (!bft_patterns_scope(ps, m->path)) {
			pl->out_of_scope++;
			continue;
		}
		/* One file mapped under two names is one object. */
		for (size_t k = 0; k < i; k++)
			dup |= maps.obj[k].dev == m->dev && maps.obj[k].ino == m->ino;
		if (dup)
			continue;
		rc = bft_object_load(&pl->objs[pl->nobjs], m->path, m->open_path,
				     &o, err, errlen);
		if (rc == -ENOEXEC) {
			fail(err, errlen, rc,
			     "%s, mapped executable by process %d: not an ELF executable or shared object (scope the patterns to other objects, e.g. 'libfoo.so*:pattern')",
			     m->path, (int)pid);
			goto out;
		}
		if (rc == -ENOENT && kill(pid, 0) && errno == ESRCH) {
			rc = fail(err, errlen, -ESRCH,
				  "process %d exited while its objects were read", (int)pid);
			goto out;
		}
		if (rc)
			goto out;
		pl->nobjs++;
	}
	rc = plan_select(pl, ps);
	if (!rc)
		rc = bft_plan_place(pl, &o);
	if (rc)
		goto nomem;
	bft_maps_free(&maps);
	return 0;
nomem:
	fail(err, errlen, rc, "out of memory");
out:
	bft_maps_free(&maps);
	bft_plan_free(pl);
	return rc;
}

int bft_plan_files(struct bft_plan *pl, const char *const *paths, size_t n,
		   const struct bft_patterns *ps,
		   const struct bft_resolve_opts *opts, char *err, size_t errlen)
{
	int rc;

	memset(pl, 0, sizeof(*pl));
	rc = plan_grow(pl, n);
	if (rc)
		return fail(err, errlen, rc, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (!bft_patterns_scope(ps, paths[i])) {
			pl->out_of_scope++;
			continue;
		}
		rc = bft_object_load(&pl->objs[pl->nobjs], paths[i], paths[i],
				     opts, err, errlen);
		if (rc)
			goto out;
		pl->nobjs++;
	}
	rc = plan_select(pl, ps);
	if (!rc)
		rc = bft_plan_place(pl, opts);
	if (rc)
		fail(err, errlen, rc, "out of memory");
out:
	if (rc)
		bft_plan_free(pl);
	return rc;
}
