// SPDX-License-Identifier: GPL-2.0
/*
 * bft_sdt: reading the USDT notes of an ELF file and parsing their
 * arguments (the format is in bft_sdt.h).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/bft_sdt.h"

#define SDT_NOTE_OWNER	"stapsdt"
#define SDT_NOTE_TYPE	3
#define SDT_BASE_SCN	".stapsdt.base"

static int fail(char *err, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* x86-64 register names: the 64-, 32-, 16- and 8-bit names of each slot */
static const struct {
	const char *names[4];
	uint8_t slot;
} regs_x86[] = {
	{ { "rax", "eax", "ax", "al" }, 10 },
	{ { "rbx", "ebx", "bx", "bl" }, 5 },
	{ { "rcx", "ecx", "cx", "cl" }, 11 },
	{ { "rdx", "edx", "dx", "dl" }, 12 },
	{ { "rsi", "esi", "si", "sil" }, 13 },
	{ { "rdi", "edi", "di", "dil" }, 14 },
	{ { "rbp", "ebp", "bp", "bpl" }, 4 },
	{ { "rsp", "esp", "sp", "spl" }, 19 },
	{ { "r8", "r8d", "r8w", "r8b" }, 9 },
	{ { "r9", "r9d", "r9w", "r9b" }, 8 },
	{ { "r10", "r10d", "r10w", "r10b" }, 7 },
	{ { "r11", "r11d", "r11w", "r11b" }, 6 },
	{ { "r12", "r12d", "r12w", "r12b" }, 3 },
	{ { "r13", "r13d", "r13w", "r13b" }, 2 },
	{ { "r14", "r14d", "r14w", "r14b" }, 1 },
	{ { "r15", "r15d", "r15w", "r15b" }, 0 },
	{ { "rip", "eip", NULL, NULL }, BFT_SDT_REG_IP },
};

static const struct {
	const char *name;
	uint8_t slot;
} high_bytes[] = {
	{ "ah", 10 }, { "bh", 5 }, { "ch", 11 }, { "dh", 12 },
};

int bft_sdt_reg(const char *name, uint8_t *shift)
{
	*shift = 0;
	for (size_t i = 0; i < sizeof(regs_x86) / sizeof(regs_x86[0]); i++)
		for (size_t w = 0; w < 4; w++)
			if (regs_x86[i].names[w] && !strcmp(name, regs_x86[i].names[w]))
				return regs_x86[i].slot;
	for (size_t i = 0; i < sizeof(high_bytes) / sizeof(high_bytes[0]); i++)
		if (!strcmp(name, high_bytes[i].name)) {
			*shift = 8;
			return high_bytes[i].slot;
		}
	return -1;
}

/* "%name" up to end, into a register slot */
static int parse_reg(const char *s, size_t len, uint8_t *slot, uint8_t *shift,
		     char *err, size_t errlen)
{
	char name[8];
	int r;

	if (len < 2 || s[0] != '%' || len - 1 >= sizeof(name))
		return fail(err, errlen, -EINVAL, "'%.*s' is no register", (int)len, s);
	memcpy(name, s + 1, len - 1);
	name[len - 1] = 0;
	r = bft_sdt_reg(name, shift);
	if (r < 0)
		return fail(err, errlen, -EINVAL, "unknown register %%%s", name);
	*slot = (uint8_t)r;
	return 0;
}

/* A whole number, base 0, nothing after it. */
static bool parse_num(const char *s, size_t len, int64_t *v)
{
	char buf[32], *end;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	if (buf[0] == '-')
		*v = strtoll(buf, &end, 0);
	else
		*v = (int64_t)strtoull(buf, &end, 0);
	return !errno && !*end && isxdigit((unsigned char)buf[len - 1]);
}

/* "sym", "sym+N" or "sym-N" */
static int parse_sym(const char *s, size_t len, int64_t *v,
		     int (*lookup)(void *, const char *, uint64_t *), void *ctx,
		     char *err, size_t errlen)
{
	char name[256];
	size_t n = 0;
	int64_t off = 0;
	uint64_t addr;

	while (n < len && s[n] != '+' && s[n] != '-')
		n++;
	if (!n || n >= sizeof(name))
		return fail(err, errlen, -EINVAL, "'%.*s' is no symbol", (int)len, s);
	if (n < len && !parse_num(s + n + (s[n] == '+'), len - n - (s[n] == '+'), &off))
		return fail(err, errlen, -EINVAL, "bad offset in '%.*s'", (int)len, s);
	memcpy(name, s, n);
	name[n] = 0;
	if (!lookup)
		return fail(err, errlen, -EINVAL, "symbol '%s' with nothing to look it up", name);
	switch (lookup(ctx, name, &addr)) {
	case 0:
		break;
	case -ENOTUNIQ:
		return fail(err, errlen, -EINVAL, "symbol '%s' is defined more than once", name);
	default:
		return fail(err, errlen, -EINVAL, "symbol '%s' is not defined in the file", name);
	}
	*v = (int64_t)(addr + (uint64_t)off);
	return 0;
}

/* "(%base)", "(%base,%index,scale)", "(,%index,scale)" */
static int parse_paren(const char *s, size_t len, struct bft_sdt_arg *a,
		       char *err, size_t errlen)
{
	const char *c1, *c2, *end = s + len;
	uint8_t shift;
	int64_t scale = 1;
	int rc;

	a->base = a->index = BFT_SDT_NOREG;
	a->scale = 1;
	s++, end--;	/* inside the parentheses */
	c1 = memchr(s, ',', (size_t)(end - s));
	if (c1 != s) {
		rc = parse_reg(s, (size_t)((c1 ? c1 : end) - s), &a->base, &shift, err, errlen);
		if (rc)
			return rc;
	}
	if (!c1)
		return 0;
	c2 = memchr(c1 + 1, ',', (size_t)(end - c1 - 1));
	rc = parse_reg(c1 + 1, (size_t)((c2 ? c2 : end) - c1 - 1), &a->index, &shift,
		       err, errlen);
	if (rc)
		return rc;
	if (c2 && (!parse_num(c2 + 1, (size_t)(end - c2 - 1), &scale) ||
		   (scale != 1 && scale != 2 && scale != 4 && scale != 8)))
		return fail(err, errlen, -EINVAL, "bad scale '%.*s'", (int)(end - c2 - 1), c2 + 1);
	a->scale = (uint8_t)scale;
	if (a->index == BFT_SDT_REG_IP)
		return fail(err, errlen, -EINVAL, "%%rip as an index");
	return 0;
}

int bft_sdt_parse_arg(const char *text, struct bft_sdt_arg *a,
		      int (*lookup)(void *ctx, const char *sym, uint64_t *addr),
		      void *ctx, char *err, size_t errlen)
{
	const char *at = strchr(text, '@'), *op = text, *paren;
	size_t len;
	int64_t size = -8;
	int rc;

	memset(a, 0, sizeof(*a));
	a->base = a->index = BFT_SDT_NOREG;
	a->scale = 1;
	/* no size: the first version of the notes, 8 signed bytes */
	if (at) {
		if (!parse_num(text, (size_t)(at - text), &size))
			return fail(err, errlen, -EINVAL, "'%s': bad size", text);
		op = at + 1;
	}
	if (size != 1 && size != 2 && size != 4 && size != 8 &&
	    size != -1 && size != -2 && size != -4 && size != -8)
		return fail(err, errlen, -EINVAL, "'%s': size %.*s is not 1, 2, 4 or 8",
			    text, (int)(at ? at - text - (text[0] == '-') : 0),
			    text + (text[0] == '-'));
	a->is_signed = size < 0;
	a->size = (uint8_t)(size < 0 ? -size : size);
	len = strlen(op);
	if (!len)
		return fail(err, errlen, -EINVAL, "'%s': no operand", text);
	if (op[0] == '%') {
		a->loc = BFT_SDT_REG;
		rc = parse_reg(op, len, &a->base, &a->shift, err, errlen);
		if (!rc && a->base == BFT_SDT_REG_IP)
			rc = fail(err, errlen, -EINVAL, "'%s': %%rip is no value", text);
		return rc;
	}
	if (op[0] == '$') {
		a->loc = BFT_SDT_CONST;
		if (!parse_num(op + 1, len - 1, &a->value))
			return fail(err, errlen, -EINVAL, "'%s': bad constant", text);
		return 0;
	}
	a->loc = BFT_SDT_MEM;
	paren = strchr(op, '(');
	if (paren) {
		if (op[len - 1] != ')')
			return fail(err, errlen, -EINVAL, "'%s': bad memory operand", text);
		rc = parse_paren(paren, len - (size_t)(paren - op), a, err, errlen);
		if (rc)
			return rc;
	}
	len = paren ? (size_t)(paren - op) : len;
	if (!len || parse_num(op, len, &a->value)) {
		/* the address of the next instruction: a probe site has none */
		if (a->base == BFT_SDT_REG_IP)
			return fail(err, errlen, -EINVAL,
				    "'%s': a number relative to %%rip has no meaning at a probe", text);
		return 0;
	}
	rc = parse_sym(op, len, &a->value, lookup, ctx, err, errlen);
	if (rc)
		return rc;
	/* a symbol's address moves with the file: the load bias replaces %rip */
	if (a->base == BFT_SDT_REG_IP || a->base == BFT_SDT_NOREG) {
		if (a->index != BFT_SDT_NOREG && a->base == BFT_SDT_REG_IP)
			return fail(err, errlen, -EINVAL, "'%s': bad memory operand", text);
		a->base = BFT_SDT_BIAS;
		return 0;
	}
	return fail(err, errlen, -EINVAL, "'%s': a symbol with a base register other than %%rip",
		    text);
}

static uint64_t extend(uint64_t v, unsigned int size, bool is_signed)
{
	unsigned int bits = size * 8;

	if (bits >= 64)
		return v;
	v &= (UINT64_C(1) << bits) - 1;
	if (is_signed && (v >> (bits - 1)))
		v |= ~((UINT64_C(1) << bits) - 1);
	return v;
}

static uint64_t slot_value(uint8_t r, const uint64_t *regs, uint64_t bias)
{
	if (r == BFT_SDT_NOREG)
		return 0;
	if (r == BFT_SDT_BIAS)
		return bias;
	return r < BFT_SDT_NREGS ? regs[r] : 0;
}

int bft_sdt_eval(const struct bft_sdt_arg *a, const uint64_t *regs,
		 uint64_t bias,
		 int (*read)(void *ctx, uint64_t addr, void *buf, size_t len),
		 void *ctx, uint64_t *v)
{
	uint64_t addr, raw = 0;
	unsigned char b[8];
	int rc;

	switch (a->loc) {
	case BFT_SDT_CONST:
		raw = (uint64_t)a->value;
		break;
	case BFT_SDT_REG:
		raw = slot_value(a->base, regs, bias) >> a->shift;
		break;
	case BFT_SDT_MEM:
		addr = (uint64_t)a->value + slot_value(a->base, regs, bias) +
		       slot_value(a->index, regs, bias) * a->scale;
		rc = read(ctx, addr, b, a->size);
		if (rc)
			return rc;
		for (unsigned int i = a->size; i-- > 0;)
			raw = raw << 8 | b[i];
		break;
	default:
		return -EINVAL;
	}
	*v = extend(raw, a->size, a->is_signed);
	return 0;
}

/* ---- the notes ---- */

struct sdt_file {
	const char *path;
	Elf *elf;
	size_t phnum;
	GElf_Phdr *ph;
	uint64_t base_scn;	/* .stapsdt.base's address, 0: none */
	uint64_t size;		/* of the file */
};

/*
 * A symbol's address.  Two definitions at different addresses (a static of
 * that name in two files) make it ambiguous: -ENOTUNIQ, never a guess.
 */
static int lookup_sym(void *ctx, const char *name, uint64_t *addr)
{
	struct sdt_file *f = ctx;
	Elf_Scn *scn = NULL;
	bool found = false;

	while ((scn = elf_nextscn(f->elf, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);
		GElf_Shdr sh;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || !d || !sh.sh_entsize ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 1; i < n; i++) {
			GElf_Sym s;
			const char *sn;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF)
				continue;
			sn = elf_strptr(f->elf, sh.sh_link, s.st_name);
			if (!sn || strcmp(sn, name))
				continue;
			if (found && *addr != s.st_value)
				return -ENOTUNIQ;
			*addr = s.st_value;
			found = true;
		}
	}
	return found ? 0 : -ENOENT;
}

/* The file offset of addr, in a PT_LOAD segment with flag (PF_X, PF_W). */
static bool to_offset(const struct sdt_file *f, uint64_t addr, uint32_t flag,
		      uint64_t size, uint64_t *off)
{
	for (size_t i = 0; i < f->phnum; i++) {
		const GElf_Phdr *p = &f->ph[i];

		if (p->p_type != PT_LOAD || !(p->p_flags & flag) || addr < p->p_vaddr ||
		    addr - p->p_vaddr >= p->p_filesz || size > p->p_filesz - (addr - p->p_vaddr))
			continue;
		*off = addr - p->p_vaddr + p->p_offset;
		/* a segment may claim more than the file holds */
		return *off >= p->p_offset && *off < f->size && size <= f->size - *off;
	}
	return false;
}

/* The arguments into p, or the reason they do not parse into p->why. */
static void parse_args(struct sdt_file *f, struct bft_sdt_probe *p, const char *args)
{
	char one[256], why[128];
	const char *s = args, *e;

	for (;;) {
		while (*s == ' ')
			s++;
		if (!*s)
			return;
		e = strchr(s, ' ');
		e = e ? e : s + strlen(s);
		if (p->nargs == BFT_SDT_MAX_ARGS) {
			fail(p->why, sizeof(p->why), 0, "more than %d arguments",
			     BFT_SDT_MAX_ARGS);
			return;
		}
		if ((size_t)(e - s) >= sizeof(one)) {
			fail(p->why, sizeof(p->why), 0, "argument %zu is too long", p->nargs + 1);
			return;
		}
		memcpy(one, s, (size_t)(e - s));
		one[e - s] = 0;
		if (bft_sdt_parse_arg(one, &p->args[p->nargs], lookup_sym, f, why, sizeof(why))) {
			fail(p->why, sizeof(p->why), 0, "argument %zu: %s", p->nargs + 1, why);
			return;
		}
		p->nargs++;
		s = e;
	}
}

/*
 * One note's description into *p: false when it names no probe (counted
 * as malformed), else true, with p->why set if the probe is unusable.
 */
static bool parse_note(struct sdt_file *f, const unsigned char *desc, size_t len,
		       struct bft_sdt_probe *p)
{
	const char *prov, *name, *args, *end = (const char *)desc + len;
	uint64_t a[3];

	memset(p, 0, sizeof(*p));
	if (len < sizeof(a) + 2 || desc[len - 1])
		return false;
	memcpy(a, desc, sizeof(a));
	prov = (const char *)desc + sizeof(a);
	name = prov + strlen(prov) + 1;
	if (!*prov || name >= end || !*name)
		return false;
	/* the strings end inside desc: its last byte is 0 */
	args = name + strlen(name) + 1;
	snprintf(p->provider, sizeof(p->provider), "%s", prov);
	snprintf(p->name, sizeof(p->name), "%s", name);
	if (strlen(prov) >= sizeof(p->provider) || strlen(name) >= sizeof(p->name)) {
		fail(p->why, sizeof(p->why), 0, "provider or name longer than %d bytes",
		     BFT_SDT_NAME_MAX - 1);
		return true;
	}
	p->pc = a[0];
	p->semaphore = a[2];
	/* prelink moved the file: everything moved with .stapsdt.base */
	if (a[1] && f->base_scn) {
		p->pc += f->base_scn - a[1];
		if (p->semaphore)
			p->semaphore += f->base_scn - a[1];
	}
	if (!to_offset(f, p->pc, PF_X, 1, &p->offset))
		fail(p->why, sizeof(p->why), 0, "its site %#" PRIx64 " is in no executable segment",
		     p->pc);
	else if (p->semaphore && !to_offset(f, p->semaphore, PF_W, 2, &p->sema_offset))
		fail(p->why, sizeof(p->why), 0,
		     "its semaphore %#" PRIx64 " is in no writable segment", p->semaphore);
	else
		parse_args(f, p, args < end ? args : "");
	return true;
}

static int add_probe(struct bft_sdt_list *l, size_t *cap)
{
	if (l->n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 16;
		void *v = realloc(l->v, ncap * sizeof(*l->v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		*cap = ncap;
	}
	return 0;
}

static int read_notes(struct sdt_file *f, struct bft_sdt_list *l, char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, cap = 0;

	if (elf_getshdrstrndx(f->elf, &shstrndx))
		return fail(err, errlen, -ENOEXEC, "%s: no section names: %s", f->path,
			    elf_errmsg(-1));
	while ((scn = elf_nextscn(f->elf, scn))) {
		GElf_Shdr sh;
		const char *sn;

		if (gelf_getshdr(scn, &sh) && (sn = elf_strptr(f->elf, shstrndx, sh.sh_name)) &&
		    !strcmp(sn, SDT_BASE_SCN))
			f->base_scn = sh.sh_addr;
	}
	while ((scn = elf_nextscn(f->elf, scn))) {
		Elf_Data *d;
		GElf_Shdr sh;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			const char *owner = (const char *)d->d_buf + noff;

			if (nh.n_type != SDT_NOTE_TYPE || nh.n_namesz != sizeof(SDT_NOTE_OWNER) ||
			    memcmp(owner, SDT_NOTE_OWNER, sizeof(SDT_NOTE_OWNER)))
				continue;
			if (add_probe(l, &cap))
				return fail(err, errlen, -ENOMEM, "out of memory");
			if (parse_note(f, (const unsigned char *)d->d_buf + doff, nh.n_descsz,
				       &l->v[l->n]))
				l->n++;
			else
				l->malformed++;
		}
	}
	return 0;
}

static int read_elf(struct sdt_file *f, struct bft_sdt_list *out, char *err, size_t errlen)
{
	GElf_Ehdr eh;
	int rc;

	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &eh) ||
	    gelf_getclass(f->elf) != ELFCLASS64 || eh.e_machine != EM_X86_64)
		return fail(err, errlen, -ENOEXEC, "%s: not an x86-64 ELF file", f->path);
	if (elf_getphdrnum(f->elf, &f->phnum))
		return fail(err, errlen, -ENOEXEC, "%s: bad program headers", f->path);
	f->ph = calloc(f->phnum ? f->phnum : 1, sizeof(*f->ph));
	if (!f->ph)
		return fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < f->phnum; i++)
		if (!gelf_getphdr(f->elf, (int)i, &f->ph[i]))
			return fail(err, errlen, -ENOEXEC, "%s: bad program header %zu", f->path, i);
	rc = read_notes(f, out, err, errlen);
	if (rc)
		bft_sdt_free(out);
	return rc;
}

int bft_sdt_read(const char *path, struct bft_sdt_list *out, char *err, size_t errlen)
{
	struct sdt_file f = { .path = path };
	struct stat st;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return fail(err, errlen, -ELIBBAD, "libelf: %s", elf_errmsg(-1));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		rc = fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	f.size = (uint64_t)st.st_size;
	f.elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	rc = read_elf(&f, out, err, errlen);
	free(f.ph);
	if (f.elf)
		elf_end(f.elf);
	close(fd);
	return rc;
}

int bft_sdt_read_mem(const char *name, const void *data, size_t size,
		     struct bft_sdt_list *out, char *err, size_t errlen)
{
	struct sdt_file f = { .path = name, .size = size };
	int rc;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return fail(err, errlen, -ELIBBAD, "libelf: %s", elf_errmsg(-1));
	/* libelf does not write through it in ELF_C_READ mode */
	f.elf = elf_memory((char *)(uintptr_t)data, size);
	rc = read_elf(&f, out, err, errlen);
	free(f.ph);
	if (f.elf)
		elf_end(f.elf);
	return rc;
}

void bft_sdt_free(struct bft_sdt_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void bft_sdt_uapi_args(const struct bft_sdt_probe *p, struct bft_usdt_arg *out)
{
	static const uint8_t loc[] = {
		[BFT_SDT_CONST] = BFT_USDT_CONST,
		[BFT_SDT_REG] = BFT_USDT_REG,
		[BFT_SDT_MEM] = BFT_USDT_MEM,
	};

	for (size_t i = 0; i < p->nargs; i++) {
		const struct bft_sdt_arg *a = &p->args[i];
		struct bft_usdt_arg *u = &out[i];

		memset(u, 0, sizeof(*u));
		u->loc = loc[a->loc];
		u->size = a->size;
		u->is_signed = a->is_signed;
		u->base = BFT_USDT_NOREG;
		u->index = BFT_USDT_NOREG;
		u->scale = 1;
		switch (a->loc) {
		case BFT_SDT_CONST:
			u->value = a->value;
			break;
		case BFT_SDT_REG:
			u->base = a->base;
			u->shift = a->shift;
			break;
		case BFT_SDT_MEM:
			u->base = a->base;
			u->index = a->index;
			u->scale = a->scale;
			u->value = a->value;
			/* the site's address is known at the hit, the bias not */
			if (a->base == BFT_SDT_BIAS) {
				u->base = BFT_USDT_SITE;
				u->value = (int64_t)((uint64_t)a->value - p->pc);
			}
			break;
		}
	}
}
