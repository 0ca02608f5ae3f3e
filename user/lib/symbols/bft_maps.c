// SPDX-License-Identifier: GPL-2.0
/*
 * bft_maps: the ELF objects a running process executes, read from
 * /proc/N/maps, and the path this process reaches each by.  See bft_maps.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "symbols/bft_maps.h"

#define DELETED_SUFFIX " (deleted)"

void bft_maps_free(struct bft_maps *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->obj[i].path);
		free(m->obj[i].open_path);
	}
	free(m->obj);
	m->obj = NULL;
	m->n = 0;
}

static bool same_file(const char *path, uint64_t dev, uint64_t ino)
{
	struct stat st;

	return stat(path, &st) == 0 && (uint64_t)st.st_dev == dev &&
	       (uint64_t)st.st_ino == ino;
}

/*
 * Why reading another process's maps was refused.  Without privilege the
 * answer is root; with it, the kernel's ptrace check said no for another
 * reason, and root's advice would only mislead.
 */
static void refused(char *err, size_t errlen, const char *fn, int e)
{
	int scope = -1;
	FILE *f;

	if (geteuid()) {
		snprintf(err, errlen,
			 "cannot read %s: %s (tracing another user's process needs root or CAP_SYS_PTRACE)",
			 fn, strerror(e));
		return;
	}
	f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = -1;
		fclose(f);
	}
	if (scope >= 3)
		snprintf(err, errlen,
			 "cannot read %s: %s, even as root: Yama's ptrace_scope is %d, which forbids attaching to any process until reboot",
			 fn, strerror(e), scope);
	else
		snprintf(err, errlen,
			 "cannot read %s: %s, even as root: the kernel refused ptrace access (a security module's policy, or a process of a user namespace this one does not own)",
			 fn, strerror(e));
}

static bool same_root(pid_t pid)
{
	char root[64];
	struct stat a, b;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	return stat(root, &a) == 0 && stat("/", &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Pick the first candidate that is the mapped file, else the first that
 * exists, else the plain path. */
static int choose_open_path(const struct bft_maps *m, struct bft_map_obj *o)
{
	char cand[3][PATH_MAX + 64];
	int nc = 0, i;

	if (!o->deleted && m->same_root)
		snprintf(cand[nc++], sizeof(cand[0]), "%s", o->path);
	if (!o->deleted)
		snprintf(cand[nc++], sizeof(cand[0]), "/proc/%d/root%s",
			 (int)m->pid, o->path);
	snprintf(cand[nc++], sizeof(cand[0]), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
		 (int)m->pid, o->exec_start, o->exec_end);

	for (i = 0; i < nc; i++)
		if (same_file(cand[i], o->dev, o->ino)) {
			o->verified = true;
			break;
		}
	if (i == nc) {
		for (i = 0; i < nc; i++)
			if (access(cand[i], R_OK) == 0)
				break;
		if (i == nc)
			i = 0;
	}
	o->open_path = strdup(cand[i]);
	return o->open_path ? 0 : -ENOMEM;
}

static struct bft_map_obj *find_obj(struct bft_maps *m, uint64_t dev,
				    uint64_t ino, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->obj[i].dev == dev && m->obj[i].ino == ino &&
		    !strcmp(m->obj[i].path, path))
			return &m->obj[i];
	return NULL;
}

/*
 * A line: start-end perms offset major:minor inode [path]
 * The path is the rest of the line and may contain spaces.
 */
static int parse_line(struct bft_maps *m, char *line, size_t *cap)
{
	uint64_t start, end, off, ino;
	unsigned int maj, min;
	char perms[8];
	int pos = 0;
	char *path;
	size_t len;
	bool deleted = false;
	struct bft_map_obj *o;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
		   &start, &end, perms, &off, &maj, &min, &ino, &pos) < 7 || !pos)
		return 0;
	path = line + pos;
	len = strcspn(path, "\n");
	path[len] = '\0';
	if (path[0] != '/' || ino == 0)
		return 0;	/* anonymous, [vdso], [heap], ... */
	if (len > strlen(DELETED_SUFFIX) &&
	    !strcmp(path + len - strlen(DELETED_SUFFIX), DELETED_SUFFIX)) {
		path[len - strlen(DELETED_SUFFIX)] = '\0';
		deleted = true;
	}
	uint64_t dev = makedev(maj, min);

	o = find_obj(m, dev, ino, path);
	if (!o) {
		if (m->n == *cap) {
			size_t ncap = *cap ? *cap * 2 : 16;
			void *p = realloc(m->obj, ncap * sizeof(*m->obj));

			if (!p)
				return -ENOMEM;
			m->obj = p;
			*cap = ncap;
		}
		o = &m->obj[m->n];
		memset(o, 0, sizeof(*o));
		o->path = strdup(path);
		if (!o->path)
			return -ENOMEM;
		m->n++;
		o->start = start;
		o->dev = dev;
		o->ino = ino;
		o->deleted = deleted;
	}
	if (start < o->start)
		o->start = start;
	if (perms[2] == 'x' && !o->exec_end) {
		o->exec_start = start;
		o->exec_end = end;
	}
	return 0;
}

int bft_maps_read(pid_t pid, struct bft_maps *m, char *err, size_t errlen)
{
	char fn[64], line[PATH_MAX + 128];
	size_t cap = 0, keep = 0;
	FILE *f;
	int rc = 0;

	memset(m, 0, sizeof(*m));
	m->pid = pid;
	if (pid <= 0) {
		if (err)
			snprintf(err, errlen, "invalid pid %d", (int)pid);
		return -ESRCH;
	}
	snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)pid);
	f = fopen(fn, "re");
	if (!f) {
		rc = -errno;
		if (err && rc == -ENOENT)
			snprintf(err, errlen, "no process with pid %d", (int)pid);
		else if (err && (rc == -EACCES || rc == -EPERM))
			refused(err, errlen, fn, -rc);
		else if (err)
			snprintf(err, errlen, "cannot open %s: %s", fn, strerror(-rc));
		return rc == -ENOENT ? -ESRCH : rc == -EPERM ? -EACCES : rc;
	}
	m->same_root = same_root(pid);
	errno = 0;
	while (fgets(line, sizeof(line), f)) {
		rc = parse_line(m, line, &cap);
		if (rc)
			break;
	}
	/* A read error here means the process went away, or access was
	 * refused at read time (the check is repeated there). */
	if (!rc && ferror(f))
		rc = errno ? -errno : -EIO;
	fclose(f);
	if (rc == -ENOMEM) {
		if (err)
			snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (rc == -EACCES || rc == -EPERM) {
		if (err)
			refused(err, errlen, fn, -rc);
		rc = -EACCES;
		goto fail;
	}
	if (rc) {
		if (err)
			snprintf(err, errlen, "cannot read %s: %s", fn, strerror(-rc));
		rc = -ESRCH;
		goto fail;
	}
	/* Only objects with executable code are objects to probe. */
	for (size_t i = 0; i < m->n; i++) {
		if (!m->obj[i].exec_end) {
			free(m->obj[i].path);
			continue;
		}
		m->obj[keep++] = m->obj[i];
	}
	m->n = keep;
	if (!m->n) {
		if (err)
			snprintf(err, errlen,
				 "process %d maps no executable file (it exited, or is a kernel thread)",
				 (int)pid);
		rc = -ESRCH;
		goto fail;
	}
	for (size_t i = 0; i < m->n; i++) {
		rc = choose_open_path(m, &m->obj[i]);
		if (rc) {
			if (err)
				snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	return 0;
fail:
	bft_maps_free(m);
	return rc;
}

const struct bft_map_obj *bft_maps_find_addr(const struct bft_maps *m,
					     uint64_t addr)
{
	for (size_t i = 0; i < m->n; i++)
		if (addr >= m->obj[i].exec_start && addr < m->obj[i].exec_end)
			return &m->obj[i];
	return NULL;
}

const struct bft_map_obj *bft_maps_find_base(const struct bft_maps *m,
					     uint64_t addr)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->obj[i].start == addr)
			return &m->obj[i];
	return NULL;
}
