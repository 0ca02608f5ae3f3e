// SPDX-License-Identifier: GPL-2.0
/*
 * bft_hooks: where a process's exceptions and non-local jumps need the
 * backends' hooks, and whether they can all be found.  See bft_hooks.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/bftrace.h>

#include "symbols/bft_elf.h"
#include "symbols/bft_hooks.h"
#include "symbols/bft_maps.h"
#include "symbols/bft_symclass.h"

#define LIBGCC_S	"libgcc_s.so.1"

/* What an object's sections and symbols say about unwinding. */
struct obj_traits {
	bool except_table;	/* .gcc_except_table */
	bool c_library;		/* defines pthread_cancel */
	bool cxx;		/* imports or defines __cxa_throw, __cxa_begin_catch */
	bool unwinder;		/* imports or defines _Unwind_* entry points */
	bool cancel;		/* imports pthread_cancel or pthread_exit */
};

static bool name_in(const char *name, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(name, *set))
			return true;
	return false;
}

static void sym_traits(const char *name, bool defined, struct obj_traits *t)
{
	static const char *const cxx[] = {
		"__cxa_throw", "__cxa_rethrow", "__cxa_begin_catch", NULL
	};
	static const char *const unw[] = {
		"_Unwind_RaiseException", "_Unwind_Resume",
		"_Unwind_Resume_or_Rethrow", "_Unwind_ForcedUnwind", NULL
	};
	static const char *const cancel[] = {
		"pthread_cancel", "pthread_exit", NULL
	};

	if (name_in(name, cxx))
		t->cxx = true;
	else if (name_in(name, unw))
		t->unwinder = true;
	else if (name_in(name, cancel) && !defined)
		t->cancel = true;
	if (defined && !strcmp(name, "pthread_cancel"))
		t->c_library = true;
}

static int read_traits(const char *path, struct obj_traits *t)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *e;
	int fd;

	memset(t, 0, sizeof(*t));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx)) {
		if (e)
			elf_end(e);
		close(fd);
		return -ENOEXEC;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".gcc_except_table"))
			t->except_table = true;
		if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *sn;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			sn = elf_strptr(e, sh.sh_link, s.st_name);
			if (sn && *sn)
				sym_traits(sn, s.st_shndx != SHN_UNDEF, t);
		}
	}
	elf_end(e);
	close(fd);
	return 0;
}

struct obj {
	const char *path, *open_path;
	bool mapped;
};

static int add_hook(struct bft_hooks *h, const struct obj *o,
		    const struct stat *st, const struct bft_elf_func *f,
		    const char *symbol, uint32_t flag, bool no_endbr)
{
	uint64_t probe = no_endbr ? f->offset : f->probe_offset;
	const char *base = strrchr(o->path, '/');
	struct bft_hook *k;
	void *p;

	if (bft_hooks_at(h, st->st_dev, st->st_ino, probe))
		return 0;	/* an alias, or the file mapped twice */
	p = realloc(h->v, (h->n + 1) * sizeof(*h->v));
	if (!p)
		return -ENOMEM;
	h->v = p;
	k = &h->v[h->n];
	memset(k, 0, sizeof(*k));
	k->path = strdup(o->path);
	k->open_path = strdup(o->open_path);
	k->object = strdup(base ? base + 1 : o->path);
	if (!k->path || !k->open_path || !k->object) {
		free(k->path);
		free(k->open_path);
		free(k->object);
		return -ENOMEM;
	}
	k->symbol = symbol;
	k->offset = f->offset;
	k->probe_offset = probe;
	k->endbr64 = f->endbr64;
	k->flag = flag;
	k->dev = st->st_dev;
	k->ino = st->st_ino;
	k->mapped = o->mapped;
	h->n++;
	return 0;
}

/* The hooks of one object; *found gets the BFT_PF_HOOK_* bits found. */
static int object_hooks(struct bft_hooks *h, const struct obj *o,
			bool no_endbr, uint32_t *found)
{
	struct bft_elf *e;
	struct stat st;
	int rc = 0;

	if (stat(o->open_path, &st) || bft_elf_open(o->open_path, &e, NULL, 0))
		return 0;
	for (const char *const *n = bft_sym_hook_names(); *n && !rc; n++) {
		struct bft_elf_func f;

		if (bft_elf_find_func(e, *n, &f))
			continue;
		rc = add_hook(h, o, &st, &f, *n, bft_sym_hook(*n), no_endbr);
		*found |= bft_sym_hook(*n);
	}
	bft_elf_close(e);
	return rc;
}

static void note(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 3 >= len)
		return;
	if (used) {
		strcpy(buf + used, "; ");
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

/* The target's LD_LIBRARY_PATH, malloc'ed, or NULL. */
static char *target_ld_path(pid_t pid)
{
	char fn[64], *buf = NULL, *val = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd;

	snprintf(fn, sizeof(fn), "/proc/%d/environ", (int)pid);
	fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		if (len + 4096 > cap) {
			char *p = realloc(buf, cap + 65536);

			if (!p)
				break;
			buf = p;
			cap += 65536;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[len] = '\0';
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
		if (!strncmp(buf + i, "LD_LIBRARY_PATH=", 16)) {
			val = strdup(buf + i + 16);
			break;
		}
	free(buf);
	return val;
}

/*
 * The libgcc_s.so.1 glibc would dlopen for pid: *path as the target
 * sees it, *open_path as we open it (both malloc'ed).  -ENOENT if none.
 */
static int find_libgcc(pid_t pid, const struct bft_maps *m, const char *libc,
		       char **path, char **open_path)
{
	static const char *const sysdirs[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
		"/lib64", "/usr/lib64", "/lib", "/usr/lib", NULL
	};
	char root[64] = "", cand[PATH_MAX], real[PATH_MAX];
	char *ld = target_ld_path(pid), *dirs[64];
	size_t nd = 0;
	int rc = -ENOENT;

	if (!m->same_root)
		snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	for (char *tok = ld ? strtok(ld, ":;") : NULL; tok && nd < 32;
	     tok = strtok(NULL, ":;"))
		if (*tok == '/')
			dirs[nd++] = tok;
	if (libc && strrchr(libc, '/')) {
		static char libc_dir[PATH_MAX];

		snprintf(libc_dir, sizeof(libc_dir), "%.*s",
			 (int)(strrchr(libc, '/') - libc), libc);
		dirs[nd++] = libc_dir;
	}
	for (const char *const *d = sysdirs; *d; d++)
		dirs[nd++] = (char *)*d;
	for (size_t i = 0; i < nd && rc; i++) {
		struct stat st;

		snprintf(cand, sizeof(cand), "%s%s/%s", root, dirs[i], LIBGCC_S);
		if (stat(cand, &st) || !S_ISREG(st.st_mode))
			continue;
		if (!root[0] && realpath(cand, real)) {
			*path = strdup(real);
			*open_path = strdup(real);
		} else {
			*path = strdup(cand + strlen(root));
			*open_path = strdup(cand);
		}
		rc = *path && *open_path ? 0 : -ENOMEM;
	}
	free(ld);
	return rc;
}

int bft_hooks_find(pid_t pid, bool no_endbr, struct bft_hooks *h,
		   char *err, size_t errlen)
{
	bool need_unwind = false, need_catch = false, need_forced = false;
	bool have_libgcc = false;
	const char *libc = NULL;
	char *lg_path = NULL, *lg_open = NULL;
	uint32_t found = 0;
	struct bft_maps m;
	int rc;

	memset(h, 0, sizeof(*h));
	rc = bft_maps_read(pid, &m, err, errlen);
	if (rc)
		return rc;
	for (size_t i = 0; i < m.n && !rc; i++) {
		const struct bft_map_obj *mo = &m.obj[i];
		const char *base = strrchr(mo->path, '/');
		struct obj o = { mo->path, mo->open_path, true };
		struct obj_traits t;

		base = base ? base + 1 : mo->path;
		if (!strcmp(base, LIBGCC_S))
			have_libgcc = true;
		if (!strncmp(base, "libc.so.", 8))
			libc = mo->path;
		if (read_traits(mo->open_path, &t))
			continue;
		if (t.cxx) {
			need_unwind = need_catch = true;
			note(h->risk, sizeof(h->risk), "%s has C++ exceptions", base);
		} else if (t.unwinder) {
			need_unwind = true;
			note(h->risk, sizeof(h->risk), "%s unwinds", base);
		} else if (t.except_table && !t.c_library) {
			need_unwind = need_catch = true;
			note(h->risk, sizeof(h->risk),
			     "%s has exception tables of an unnamed runtime", base);
		}
		if (t.cancel) {
			need_unwind = need_forced = true;
			note(h->risk, sizeof(h->risk),
			     "%s calls pthread_cancel or pthread_exit", base);
		}
		rc = object_hooks(h, &o, no_endbr, &found);
	}
	if (!rc && libc && !have_libgcc &&
	    !find_libgcc(pid, &m, libc, &lg_path, &lg_open)) {
		struct obj o = { lg_path, lg_open, false };
		size_t before = h->n;

		rc = object_hooks(h, &o, no_endbr, &found);
		if (h->n > before)
			h->libgcc = h->v[before].path;
	}
	free(lg_path);
	free(lg_open);
	bft_maps_free(&m);
	if (rc) {
		bft_hooks_free(h);
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	h->at_risk = need_unwind;
	if (need_unwind && !(found & BFT_PF_HOOK_UNWIND))
		note(h->missing, sizeof(h->missing),
		     "no _Unwind_RaiseException or _Unwind_Resume");
	if (need_catch && !(found & BFT_PF_HOOK_CATCH))
		note(h->missing, sizeof(h->missing), "no __cxa_begin_catch");
	if (need_forced && !(found & BFT_PF_HOOK_FORCED))
		note(h->missing, sizeof(h->missing), "no _Unwind_ForcedUnwind");
	h->complete = !h->missing[0];
	return 0;
}

void bft_hooks_free(struct bft_hooks *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->v[i].path);
		free(h->v[i].open_path);
		free(h->v[i].object);
	}
	free(h->v);
	memset(h, 0, sizeof(*h));
}

const struct bft_hook *bft_hooks_at(const struct bft_hooks *h, uint64_t dev,
				    uint64_t ino, uint64_t probe_offset)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->v[i].dev == dev && h->v[i].ino == ino &&
		    h->v[i].probe_offset == probe_offset)
			return &h->v[i];
	return NULL;
}
