// SPDX-License-Identifier: GPL-2.0
/*
 * bfi_object: what the inline backend needs of one ELF file a target maps:
 * the function around a probe's file offset and its bytes as the file has
 * them, every direct branch target of its code (a jump into a function's
 * first bytes rules it out), where its text is in the target, and, for the
 * C library, where it keeps a thread's id.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "inline/bfi_object.h"
#include "symbols/bft_elf.h"

struct func_find {
	uint64_t off;
	struct bft_elf_func f;
	bool found;
};

static int object_func_match(const struct bft_elf_func *f, void *arg)
{
	struct func_find *ff = arg;

	if (ff->off >= f->offset && ff->off < f->offset + f->size &&
	    (!ff->found || f->size > ff->f.size)) {
		ff->f = *f;
		ff->found = true;
	}
	return 0;
}

int bfi_object_open(struct bfi_object *o, const char *path, char *err,
		    size_t errlen)
{
	struct stat st;
	int rc;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->path = strdup(path);
	if (!o->path)
		return -ENOMEM;
	o->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (o->fd < 0 || fstat(o->fd, &st)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		bfi_object_close(o);
		return rc;
	}
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	rc = bft_elf_open(path, &o->elf, err, errlen);
	if (rc) {
		bfi_object_close(o);
		return rc;
	}
	return 0;
}

void bfi_object_close(struct bfi_object *o)
{
	if (o->elf)
		bft_elf_close(o->elf);
	if (o->fd >= 0)
		close(o->fd);
	bft_entry_targets_free(&o->targets);
	free(o->path);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}

int bfi_object_func(struct bfi_object *o, uint64_t off,
		    struct bft_elf_func *f, char *err, size_t errlen)
{
	struct func_find ff = { .off = off };
	int rc = bft_elf_for_each_func(o->elf, NULL, object_func_match, &ff,
					   NULL);

	if (rc)
		return rc;
	if (!ff.found) {
		snprintf(err, errlen, "%s: no function symbol covers offset "
			 "0x%" PRIx64 ", so its size is unknown", o->path, off);
		return -ENOENT;
	}
	*f = ff.f;
	return 0;
}

int bfi_object_read(const struct bfi_object *o, uint64_t off, void *buf,
		    size_t len)
{
	ssize_t r = pread(o->fd, buf, len, (off_t)off);

	if (r < 0)
		return -errno;
	return (size_t)r == len ? 0 : -EIO;
}

int bfi_object_targets(struct bfi_object *o, struct bft_entry *dec)
{
	if (o->swept)
		return 0;
	o->swept = true;
	return bft_entry_targets_sweep(dec, o->fd, &o->targets);
}

int bfi_object_tid_off(const struct bfi_object *o, int64_t *off)
{
	uint64_t vaddr = 0, foff = 0;
	uint32_t desc[3];
	Elf *e;
	size_t n;
	int rc = -ENOENT;

	*off = 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	e = elf_begin(o->fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -ENOEXEC;
	/* glibc's libthread_db descriptor: { bits, count, offset } */
	for (Elf_Scn *scn = NULL; rc && (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB &&
						 sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		n = d && sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (name && !strcmp(name, "_thread_db_pthread_tid") &&
			    s.st_size >= sizeof(desc)) {
				vaddr = s.st_value;
				rc = 0;
				break;
			}
		}
	}
	if (!rc) {
		size_t np;

		rc = -ENOENT;
		if (!elf_getphdrnum(e, &np)) {
			for (size_t i = 0; i < np; i++) {
				GElf_Phdr ph;

				if (gelf_getphdr(e, (int)i, &ph) &&
				    ph.p_type == PT_LOAD &&
				    vaddr >= ph.p_vaddr &&
				    vaddr + sizeof(desc) <= ph.p_vaddr +
							    ph.p_filesz) {
					foff = ph.p_offset + vaddr - ph.p_vaddr;
					rc = 0;
					break;
				}
			}
		}
	}
	elf_end(e);
	if (rc)
		return rc;
	rc = bfi_object_read(o, foff, desc, sizeof(desc));
	if (rc)
		return rc;
	/* a 32-bit field, one of it, at a plausible place in struct pthread */
	if (desc[0] != 32 || desc[1] != 1 || !desc[2] || desc[2] > 4096)
		return -ENOENT;
	*off = desc[2];
	return 0;
}

int bfi_object_addr(const struct bfi_object *o, pid_t pid, uint64_t off,
		    uint64_t *addr, uint64_t *text_lo, uint64_t *text_hi)
{
	char path[64], line[4096 + 128];
	FILE *f;
	int rc = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	*text_lo = UINT64_MAX;
	*text_hi = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, moff, ino;
		unsigned int maj, mnr;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &lo, &hi,
			   perms, &moff, &maj, &mnr, &ino) != 7)
			continue;
		if (ino != o->ino || maj != major(o->dev) ||
		    mnr != minor(o->dev) || perms[2] != 'x')
			continue;
		if (lo < *text_lo)
			*text_lo = lo;
		if (hi > *text_hi)
			*text_hi = hi;
		if (off >= moff && off < moff + (hi - lo)) {
			*addr = lo + (off - moff);
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}

bool bfi_object_imports(const struct bfi_object *o, const char *name)
{
	bool found = false;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return false;
	e = elf_begin(o->fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return false;
	for (Elf_Scn *scn = NULL; !found && (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		n = d && sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n && !found; i++) {
			GElf_Sym sym;
			const char *nm;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    sym.st_shndx != SHN_UNDEF)
				continue;
			nm = elf_strptr(e, sh.sh_link, sym.st_name);
			found = nm && !strcmp(nm, name);
		}
	}
	elf_end(e);
	return found;
}
