// SPDX-License-Identifier: GPL-2.0
/*
 * A target's vDSO (bfi_vdso.h): its base from the auxiliary vector, its
 * image read through /proc/PID/mem and parsed in memory with libelf, never
 * from a file (it has none).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inline/bfi_vdso.h"

/* A vDSO is two pages today; anything past this is not one. */
#define VDSO_MAX	(1u << 20)

/* The vDSO's image, malloc'ed, and its base; *img NULL: no vDSO. */
static int vdso_read(pid_t pid, char **img, size_t *len, uint64_t *base,
		     char *err, size_t errlen)
{
	char path[64], line[512];
	uint64_t av[2], size = 0;
	ssize_t n;
	FILE *f;
	int fd;

	*img = NULL;
	*base = 0;
	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot read the auxiliary vector of process "
			 "%d: %s", pid, strerror(errno));
		return -errno;
	}
	while ((n = read(fd, av, sizeof(av))) == sizeof(av) && av[0] != AT_NULL)
		if (av[0] == AT_SYSINFO_EHDR)
			*base = av[1];
	close(fd);
	if (!*base)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && lo == *base) {
			size = hi - lo;
			break;
		}
	}
	fclose(f);
	if (!size || size > VDSO_MAX) {
		snprintf(err, errlen, "process %d: no mapping at its vDSO's address",
			 pid);
		return -ENOENT;
	}
	*img = malloc(size);
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!*img || fd < 0 ||
	    pread(fd, *img, size, (off_t)*base) != (ssize_t)size) {
		snprintf(err, errlen, "cannot read the vDSO of process %d: %s", pid,
			 strerror(errno ? errno : EIO));
		if (fd >= 0)
			close(fd);
		free(*img);
		*img = NULL;
		return -EIO;
	}
	close(fd);
	*len = size;
	return 0;
}

/* Address in the target of link-time address v: the image starts at base. */
static uint64_t vdso_addr(Elf *e, uint64_t base, uint64_t v)
{
	size_t nph;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &nph))
		return 0;
	for (size_t i = 0; i < nph; i++)
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
			return base + v - (ph.p_vaddr - ph.p_offset);
	return 0;
}

int bfi_vdso_clock(pid_t tgid, uint64_t *addr, char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;
	uint64_t base;
	size_t len;
	char *img;
	Elf *e;
	int r;

	*addr = 0;
	r = vdso_read(tgid, &img, &len, &base, err, errlen);
	if (r || !img)
		return r;
	elf_version(EV_CURRENT);
	e = elf_memory(img, len);
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) || !s.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (name && !strcmp(name, "__vdso_clock_gettime")) {
				*addr = vdso_addr(e, base, s.st_value);
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	free(img);
	return 0;
}

int bfi_vdso_syscall(pid_t tgid, uint64_t *addr, char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;
	uint64_t base;
	size_t len;
	char *img;
	Elf *e;
	int r;

	*addr = 0;
	r = vdso_read(tgid, &img, &len, &base, err, errlen);
	if (r || !img)
		return r ? r : -ENOENT;
	elf_version(EV_CURRENT);
	e = elf_memory(img, len);
	while (e && !*addr && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		void *p;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR) ||
		    sh.sh_offset >= len || sh.sh_size > len - sh.sh_offset)
			continue;
		p = memmem(img + sh.sh_offset, sh.sh_size, "\x0f\x05", 2);
		if (p)
			*addr = base + (uint64_t)((char *)p - img);
	}
	if (e)
		elf_end(e);
	free(img);
	if (!*addr) {
		snprintf(err, errlen, "the vDSO of process %d holds no syscall "
			 "instruction", tgid);
		return -ENOENT;
	}
	return 0;
}
