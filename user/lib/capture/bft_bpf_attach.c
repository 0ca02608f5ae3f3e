// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF backend's targets: the module's checks of a batch of probes
 * (kmod/bft_attach.c), attaching it to a process, and, in reverse,
 * detaching a target or all of them, and reaping the targets that exited.
 * A target is a links directory under the session's pins.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <fcntl.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "capture/bft_bpf_internal.h"

/* include/linux/proc_ns.h: the first pid namespace's inode, fixed */
#define PROC_PID_INIT_INO		0xEFFFFFFCU

static void links_dir_format(char *buf, size_t len, uint32_t tgid)
{
	if (tgid)
		snprintf(buf, len, "%s/links/%u", bft_bpf_pin_dir(), tgid);
	else
		snprintf(buf, len, "%s/links", bft_bpf_pin_dir());
}

/* A zombie has released its memory: no probe of it can fire. */
static bool tgid_alive(uint32_t tgid)
{
	return !bft_proc_exited(tgid);
}

/*
 * The process of thread id tid (the Tgid line of its status), 0 if that
 * cannot be read.  /proc/<tid> exists for every thread, not only for a
 * process's first one.
 */
static uint32_t tgid_of(uint32_t tid)
{
	char p[64], line[128];
	unsigned int v = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%u/status", tid);
	f = fopen(p, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %u", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* tgids with a links directory, into out (up to cap); count. */
size_t bft_bpf_targets_list(uint32_t *out, size_t cap)
{
	char p[PATH_MAX];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	links_dir_format(p, sizeof(p), 0);
	d = opendir(p);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char *end;
		unsigned long v = strtoul(de->d_name, &end, 10);

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end)
			continue;
		if (n < cap)
			out[n] = (uint32_t)v;
		n++;
	}
	closedir(d);
	return n;
}

/*
 * The module's checks of one probe (kmod/bft_attach.c), without the
 * offset's segment.
 */
static int probe_check(struct bft_bpf *b, size_t i,
		       const struct bft_nl_probe *p)
{
	unsigned char magic[4];
	struct stat st;
	int fd, err;

	if (!p->path || stat(p->path, &st))
		return bft_bpf_err_set(b, -ENOENT, "probe %zu: %s: no such "
				       "file", i, p->path ? p->path : "(null)");
	if (S_ISDIR(st.st_mode))
		return bft_bpf_err_set(b, -EISDIR, "probe %zu: %s is a "
				       "directory", i, p->path);
	if (!S_ISREG(st.st_mode))
		return bft_bpf_err_set(b, -EINVAL, "probe %zu: %s is not a "
				       "regular file", i, p->path);
	/* BFT_PF_USDT with other bits: bft_bpf_usdt_check() says so */
	if (!(p->flags & BFT_PF_USDT) &&
	    (!(p->flags & BFT_PF_ENTRY) || (p->flags & ~BFT_PF_ALL)))
		return bft_bpf_err_set(b, -EINVAL, "probe %zu: flags 0x%x: "
				       "the BPF backend takes entry, return "
				       "and USDT probes only", i, p->flags);
	err = bft_bpf_usdt_check(b, i, p, (uint64_t)st.st_size);
	if (err)
		return err;
	fd = open(p->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, magic, 4) != 4 || memcmp(magic, "\177ELF", 4)) {
		if (fd >= 0)
			close(fd);
		return bft_bpf_err_set(b, -ENOEXEC, "probe %zu: %s is not ELF",
				       i, p->path);
	}
	close(fd);
	if (p->offset >= (uint64_t)st.st_size)
		return bft_bpf_err_set(b, -ERANGE, "probe %zu: offset %#llx "
				       "is past the end of %s", i,
				       (unsigned long long)p->offset, p->path);
	if (strlen(p->path) >= BFT_PATH_MAX ||
	    (p->name && strlen(p->name) >= BFT_NAME_MAX))
		return bft_bpf_err_set(b, -EINVAL, "probe %zu: path or name "
				       "too long", i);
	return 0;
}

static int batch_check(struct bft_bpf *b, uint32_t tgid,
		       const struct bft_nl_probe *probes, size_t n)
{
	struct bft_bpf_ctl ctl;
	struct bft_bpf_method m;
	uint32_t targets[BFT_MAX_TARGETS], owner;
	size_t nt;
	int err;

	if (!tgid || !tgid_alive(tgid))
		return bft_bpf_err_set(b, -ESRCH, "no process with tgid %u",
				       tgid);
	/* as the module: the programs filter on the process (BFT_BPF_COOKIE) */
	owner = tgid_of(tgid);
	if (owner && owner != tgid)
		return bft_bpf_err_set(b, -ESRCH, "%u is a thread of process "
				       "%u, not a process", tgid, owner);
	nt = bft_bpf_targets_list(targets, BFT_MAX_TARGETS);
	if (nt >= BFT_MAX_TARGETS) {
		char p[PATH_MAX];

		links_dir_format(p, sizeof(p), tgid);
		if (access(p, F_OK))
			return bft_bpf_err_set(b, -E2BIG, "too many targets");
	}
	err = bft_bpf_ctl_read(b, &ctl);
	if (err)
		return err;
	if (bft_bpf_probes_count(b) + n > ctl.opts[BFT_OPT_MAX_PROBES])
		return bft_bpf_err_set(b, -E2BIG, "%zu probes exceed the "
				       "limit (option max_probes %llu)", n,
				       (unsigned long long)
				       ctl.opts[BFT_OPT_MAX_PROBES]);
	for (size_t i = 0; i < n; i++) {
		struct bft_bpf_method_key k = { tgid, probes[i].method_id };

		err = probe_check(b, i, &probes[i]);
		if (err)
			return err;
		for (size_t j = 0; j < i; j++) {
			if (probes[j].method_id == probes[i].method_id ||
			    (probes[j].offset == probes[i].offset &&
			     !strcmp(probes[j].path, probes[i].path)))
				return bft_bpf_err_set(b, -EEXIST, "probe "
						       "%zu: twice in the "
						       "batch", i);
		}
		if (!bpf_map_lookup_elem(b->methods_fd, &k, &m) &&
		    !(m.flags & BFT_PF_GONE))
			return bft_bpf_err_set(b, -EEXIST, "probe %zu: method "
					       "id %u is in use", i,
					       probes[i].method_id);
	}
	return 0;
}

/*
 * The target as the programs name it (BFT_BPF_COOKIE): the tgid given,
 * from the first pid namespace, whose pids are the kernel's own; else 0,
 * and the programs leave the process filter to the kernel.
 */
static uint32_t tgid_cookie(uint32_t tgid)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) || st.st_ino != PROC_PID_INIT_INO)
		return 0;
	return tgid;
}

/* A USDT probe's cookie names its spec's slot, not its method. */
static uint64_t probe_cookie(const struct bft_nl_probe *p, uint32_t slot,
			     uint32_t ctgid)
{
	return BFT_BPF_COOKIE(p->flags & BFT_PF_USDT ? slot : p->method_id,
			      p->flags, ctgid);
}

/*
 * Probes of one file, all USDT or none, attached with one uprobe_multi
 * link, and one more for the returns; links[] gets the entry link's pin
 * + 1 for each.
 */
static int group_attach_multi(struct bft_bpf *b, uint32_t tgid,
			      uint32_t ctgid, const struct bft_nl_probe *probes,
			      const uint32_t *slots, const size_t *idx,
			      size_t n, int *results, uint32_t *links,
			      unsigned int *seq)
{
	bool usdt = probes[idx[0]].flags & BFT_PF_USDT;
	uint64_t *offs = calloc(n, sizeof(*offs));
	uint64_t *refs = calloc(n, sizeof(*refs));
	uint64_t *cookies = calloc(n, sizeof(*cookies));
	size_t nret = 0;
	unsigned int entries = 0;
	int fd, err = 0;

	if (!offs || !refs || !cookies) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct bft_nl_probe *p = &probes[idx[i]];

		offs[i] = p->offset;
		refs[i] = p->ref_ctr_offset;
		cookies[i] = probe_cookie(p, slots[idx[i]], ctgid);
	}
	fd = bft_bpf_link_multi_ref(usdt ? b->usdt_prog_fd : b->enter_fd, tgid,
				    probes[idx[0]].path, offs,
				    usdt ? refs : NULL, cookies, n, false);
	if (fd < 0) {
		err = bft_bpf_err_set(b, fd, "uprobe_multi on %s: %s",
				      probes[idx[0]].path, strerror(-fd));
		goto out;
	}
	err = bft_bpf_link_pin(b, fd, tgid, seq);
	if (err)
		goto out;
	entries = *seq - 1;
	for (size_t i = 0; i < n; i++) {
		const struct bft_nl_probe *p = &probes[idx[i]];

		if (p->flags & BFT_PF_RETURN) {
			offs[nret] = p->offset;
			cookies[nret++] = BFT_BPF_COOKIE(p->method_id, p->flags,
							 ctgid);
		}
	}
	if (nret) {
		fd = bft_bpf_link_multi(b->exit_fd, tgid, probes[idx[0]].path, offs,
				cookies, nret, true);
		if (fd < 0)
			err = bft_bpf_err_set(b, fd, "uretprobe_multi on %s: "
					      "%s", probes[idx[0]].path,
					      strerror(-fd));
		else
			err = bft_bpf_link_pin_ret(b, fd, tgid, entries);
		if (err)	/* entries without their returns: none */
			bft_bpf_link_release(tgid, entries);
	}
out:
	for (size_t i = 0; i < n; i++) {
		results[idx[i]] = err;
		links[idx[i]] = err ? 0 : entries + 1;
	}
	free(offs);
	free(refs);
	free(cookies);
	return err;
}

static int probe_attach(struct bft_bpf *b, uint32_t tgid, uint32_t ctgid,
			const struct bft_nl_probe *p, uint32_t slot,
			uint32_t *link, unsigned int *seq)
{
	uint64_t cookie = probe_cookie(p, slot, ctgid);
	int prog = p->flags & BFT_PF_USDT ? b->usdt_prog_fd : b->enter_fd;
	int fd, err;

	fd = bft_bpf_link_uprobe(prog, tgid, p->path, p->offset,
				 p->ref_ctr_offset, false, cookie);
	if (fd < 0)
		return bft_bpf_err_set(b, fd, "uprobe on %s+%#llx: %s", p->path,
				       (unsigned long long)p->offset,
				       strerror(-fd));
	err = bft_bpf_link_pin(b, fd, tgid, seq);
	if (err)
		return err;
	*link = *seq;	/* the pin + 1 */
	if (!(p->flags & BFT_PF_RETURN))
		return 0;
	fd = bft_bpf_link_uprobe(b->exit_fd, tgid, p->path, p->offset, 0, true,
				 cookie);
	if (fd < 0)
		err = bft_bpf_err_set(b, fd, "uretprobe on %s+%#llx: %s",
				      p->path, (unsigned long long)p->offset,
				      strerror(-fd));
	else
		err = bft_bpf_link_pin_ret(b, fd, tgid, *link - 1);
	if (err) {	/* an entry without its return: none */
		bft_bpf_link_release(tgid, *link - 1);
		*link = 0;
	}
	return err;
}

static int target_attach(struct bft_bpf *b, uint32_t tgid,
			 const struct bft_nl_probe *probes, size_t n, int *results)
{
	bool multi = bft_bpf_multi(b);
	int *res = results ? results : calloc(n ? n : 1, sizeof(int));
	size_t *idx = calloc(n ? n : 1, sizeof(*idx));
	bool *done = calloc(n ? n : 1, sizeof(*done));
	uint32_t *slots = calloc(n ? n : 1, sizeof(*slots));
	uint32_t *links = calloc(n ? n : 1, sizeof(*links));
	uint32_t ctgid = tgid_cookie(tgid);	/* once, not per probe */
	unsigned int seq = 0;
	int err, first = 0, ok = 0;
	bool made = false;
	char p[PATH_MAX];

	if (!res || !idx || !done || !slots || !links) {
		err = -ENOMEM;
		goto out;
	}
	err = batch_check(b, tgid, probes, n);
	/* before the links: a probe can fire as soon as its link exists */
	if (!err)
		err = bft_bpf_usdt_store(b, tgid, probes, n, slots);
	if (err) {
		for (size_t i = 0; i < n; i++)
			res[i] = err;
		goto out;
	}
	links_dir_format(p, sizeof(p), tgid);
	if (!mkdir(p, 0700)) {
		made = true;
	} else if (errno != EEXIST) {
		err = bft_bpf_err_set(b, -errno, "mkdir %s: %s", p,
				      strerror(errno));
		bft_bpf_usdt_drop(b, slots, n);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		if (done[i])
			continue;
		if (!multi) {
			done[i] = true;
			res[i] = probe_attach(b, tgid, ctgid, &probes[i],
					      slots[i], &links[i], &seq);
			continue;
		}
		/* a USDT site has a program of its own, so a link of its own */
		for (size_t j = i; j < n; j++) {
			if (!done[j] && !strcmp(probes[j].path, probes[i].path) &&
			    !(probes[j].flags & BFT_PF_USDT) ==
			    !(probes[i].flags & BFT_PF_USDT)) {
				done[j] = true;
				idx[k++] = j;
			}
		}
		group_attach_multi(b, tgid, ctgid, probes, slots, idx, k, res,
				   links, &seq);
	}
	for (size_t i = 0; i < n; i++) {
		if (!res[i]) {
			ok++;
			res[i] = bft_bpf_method_record(b, tgid, &probes[i],
						       links[i], slots[i]);
		} else {
			/* no link reads this spec */
			bft_bpf_usdt_drop(b, &slots[i], 1);
			if (!first)
				first = res[i];
		}
	}
	err = ok ? 0 : first;
	/*
	 * A target of nothing is no target; one that was there before stays,
	 * even emptied by a detach of its probes
	 */
	if (!ok && made)
		rmdir(p);
out:
	if (res != results)
		free(res);
	free(idx);
	free(done);
	free(slots);
	free(links);
	return err;
}

int bft_bpf_attach(struct bft_bpf *b, uint32_t tgid,
		   const struct bft_nl_probe *probes, size_t n, int *results)
{
	int fd = bft_bpf_session_open_locked(b, true), err;

	if (fd < 0)
		return fd;
	err = target_attach(b, tgid, probes, n, results);
	bft_bpf_probes_recount(b);
	bft_bpf_session_unlock(fd);
	return err;
}

static int target_unpin(struct bft_bpf *b, uint32_t tgid)
{
	char p[PATH_MAX], f[PATH_MAX + 256];
	struct dirent *de;
	DIR *d;

	links_dir_format(p, sizeof(p), tgid);
	d = opendir(p);
	if (!d)
		return errno == ENOENT ? -ENOENT :
		       bft_bpf_err_set(b, -errno, "%s: %s", p, strerror(errno));
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), "%s/%s", p, de->d_name);
		unlink(f);	/* the last reference: the link goes */
	}
	closedir(d);
	if (rmdir(p))
		return bft_bpf_err_set(b, -errno, "rmdir %s: %s", p,
				       strerror(errno));
	bft_bpf_methods_retire(b, tgid);
	bft_bpf_usdt_release(b, tgid);
	return 0;
}

int bft_bpf_targets_detach(struct bft_bpf *b, uint32_t tgid)
{
	uint32_t t[BFT_MAX_TARGETS];
	size_t n;
	int err;

	if (tgid) {
		err = target_unpin(b, tgid);
		bft_bpf_probes_recount(b);
		if (err == -ENOENT)
			return bft_bpf_err_set(b, err, "no target with tgid %u",
					       tgid);
		return err;
	}
	n = bft_bpf_targets_list(t, BFT_MAX_TARGETS);
	for (size_t i = 0; i < n && i < BFT_MAX_TARGETS; i++) {
		err = target_unpin(b, t[i]);
		if (err && err != -ENOENT)
			break;
		err = 0;
	}
	bft_bpf_probes_recount(b);
	return err;
}

int bft_bpf_detach(struct bft_bpf *b, uint32_t tgid)
{
	int fd, err = bft_bpf_session_open(b, false);

	if (err == -ENOENT)	/* no session: nothing attached */
		return tgid ? bft_bpf_err_set(b, err, "no target with tgid %u",
					      tgid) : 0;
	if (err)
		return err;
	fd = bft_bpf_session_lock(b);
	if (fd < 0)
		return fd;
	err = bft_bpf_targets_detach(b, tgid);
	bft_bpf_session_unlock(fd);
	return err;
}

int bft_bpf_targets_signal(int sig)
{
	uint32_t t[BFT_MAX_TARGETS];
	size_t n = bft_bpf_targets_list(t, BFT_MAX_TARGETS);
	int ret = 0;

	for (size_t i = 0; i < n && i < BFT_MAX_TARGETS; i++)
		if (kill((pid_t)t[i], sig) && !ret)
			ret = -errno;
	return ret;
}

/*
 * Targets that exited: their links would hold the files forever.  The
 * module reaps them from its timer; here every flush and every tool that
 * opens the session does.
 */
void bft_bpf_targets_reap(struct bft_bpf *b)
{
	uint32_t t[BFT_MAX_TARGETS];
	size_t n = bft_bpf_targets_list(t, BFT_MAX_TARGETS), i;
	int fd;

	/*
	 * Unpinning a dead target's links takes long (each one unregisters
	 * its uprobe: seconds for hundreds under TCG) and needs no lock: no
	 * one can attach to a dead tgid.  Only the count takes the lock,
	 * and only if it is free: a reader's flush must not wait behind an
	 * attach or a stop, which count at their end anyway; if it is
	 * taken, the next flush counts, or closing this handle.
	 */
	for (i = 0; i < n && i < BFT_MAX_TARGETS; i++)
		if (!tgid_alive(t[i]) && target_unpin(b, t[i]) != -ENOENT)
			b->count_owed = true;
	if (!b->count_owed)
		return;
	fd = open(bft_bpf_pin_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (!flock(fd, LOCK_EX | LOCK_NB)) {
		bft_bpf_probes_recount(b);
		b->count_owed = false;
	}
	close(fd);
}

/* A live probe of the target, as a detach of some probes weighs it. */
struct live {
	uint32_t id;
	uint32_t link;		/* bft_bpf_method.link */
	bool chosen, done;
};

static int live_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct live *)a)->id;
	uint32_t y = ((const struct live *)b)->id;

	return x < y ? -1 : x > y;
}

/* The live probes of tgid, sorted by id, into *out: their count or -errno. */
static ssize_t live_list(struct bft_bpf *b, uint32_t tgid, struct live **out)
{
	struct bft_bpf_method_key k, next, *prev = NULL;
	struct bft_bpf_method *m = malloc(sizeof(*m));
	struct live *v = NULL;
	size_t n = 0, cap = 0;

	if (!m)
		return -ENOMEM;
	while (!bpf_map_get_next_key(b->methods_fd, prev, &next)) {
		k = next;
		prev = &k;
		if (k.tgid != tgid || bpf_map_lookup_elem(b->methods_fd, &k, m) ||
		    (m->flags & BFT_PF_GONE))
			continue;
		if (n == cap) {
			void *p = realloc(v, (cap = cap * 2 + 64) * sizeof(*v));

			if (!p) {
				free(v);
				free(m);
				return -ENOMEM;
			}
			v = p;
		}
		v[n++] = (struct live){ .id = k.method_id, .link = m->link };
	}
	free(m);
	if (n)
		qsort(v, n, sizeof(*v), live_cmp);
	*out = v;
	return (ssize_t)n;
}

/* The module's checks (kmod/bft_probe.c: bft_detach_choose()). */
static int detach_choose(struct bft_bpf *b, uint32_t tgid, struct live *v,
			 size_t nv, const uint32_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct live key = { .id = ids[i] };
		struct live *l = nv ? bsearch(&key, v, nv, sizeof(*v),
					      live_cmp) : NULL;

		if (!l)
			return bft_bpf_err_set(b, -ENOENT, "probe %zu: method "
					       "id %u is no probe of tgid %u",
					       i, ids[i], tgid);
		if (l->chosen)
			return bft_bpf_err_set(b, -EINVAL, "probe %zu: method "
					       "id %u is given twice", i,
					       ids[i]);
		/* recorded by this version always: a link holds it */
		if (!l->link)
			return bft_bpf_err_set(b, -EIO, "probe %zu: method id "
					       "%u has no link on record", i,
					       ids[i]);
		l->chosen = true;
	}
	if (!n)
		return bft_bpf_err_set(b, -EINVAL, "no probes");
	return 0;
}

/* Probe id of tgid as its method record has it, for attaching it again. */
static int probe_of(struct bft_bpf *b, uint32_t tgid, uint32_t id,
		    struct bft_bpf_method *m, struct bft_nl_probe *p,
		    uint32_t *slot)
{
	int err = bft_bpf_method_get(b, tgid, id, m);

	if (err)
		return bft_bpf_err_set(b, err, "method %u of %u: %s", id, tgid,
				       strerror(-err));
	*p = (struct bft_nl_probe){
		.path = strdup(m->path), .offset = m->offset,
		.method_id = id, .flags = m->flags, .ref_ctr_offset = m->ref_ctr,
	};
	*slot = m->slot;
	return p->path ? 0 : -ENOMEM;
}

/*
 * Whether tgid maps path's file as one since unlinked: replaced (a package
 * upgrade renames the new one over it).  A link made by path now would
 * take the new file, at offsets that are the old one's.
 */
static int path_replaced(struct bft_bpf *b, uint32_t tgid, const char *path)
{
	char maps[64], line[PATH_MAX + 128], real[PATH_MAX];
	size_t len;
	bool gone = false;
	FILE *f;

	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	len = strlen(real);
	snprintf(maps, sizeof(maps), "/proc/%u/maps", tgid);
	f = fopen(maps, "re");
	if (!f)
		return 0;	/* the target is gone: the attach says so */
	while (!gone && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		gone = p && !strncmp(p, real, len) &&
		       !strcmp(p + len, " (deleted)\n");
	}
	fclose(f);
	if (gone)
		return bft_bpf_err_set(b, -ESTALE, "%s was replaced since "
				       "the attach: its old file is still "
				       "mapped", path);
	return 0;
}

static void probe_retire(struct bft_bpf *b, uint32_t tgid, uint32_t id,
			 struct bft_bpf_method *m)
{
	uint32_t slot;

	if (bft_bpf_method_get(b, tgid, id, m))
		return;
	/* its links are gone: no hit reads the spec any more */
	slot = m->slot;
	bft_bpf_usdt_drop(b, &slot, 1);
	m->flags |= BFT_PF_GONE;
	m->slot = 0;
	m->link = 0;
	bft_bpf_method_put(b, tgid, id, m);
}

/*
 * The chosen probes of one link (link: its pin + 1) go, and the others
 * it held are attached again by a link of their own: a uprobe_multi link
 * cannot drop some of its offsets.  The old link goes first, so no hit is
 * recorded twice; a hit of another probe in between is not recorded.  If
 * they cannot be attached again (their file replaced, the target gone),
 * they are detached too, and said so.
 */
static int group_detach(struct bft_bpf *b, uint32_t tgid, uint32_t link,
			struct live *v, size_t nv, struct bft_bpf_method *m)
{
	struct bft_nl_probe *probes = NULL;
	uint32_t *slots = NULL, *links = NULL;
	size_t *idx = NULL, ns = 0, k;
	int *res = NULL, err = 0;
	unsigned int seq = 0;
	char why[sizeof(b->err)];

	b->err[0] = '\0';
	for (size_t i = 0; i < nv; i++)
		ns += v[i].link == link && !v[i].chosen && !v[i].done;
	bft_bpf_link_release(tgid, link - 1);
	if (ns) {
		probes = calloc(ns, sizeof(*probes));
		slots = calloc(ns, sizeof(*slots));
		links = calloc(ns, sizeof(*links));
		idx = calloc(ns, sizeof(*idx));
		res = calloc(ns, sizeof(*res));
		if (!probes || !slots || !links || !idx || !res)
			err = -ENOMEM;
	}
	for (size_t i = 0, j = 0; !err && i < nv; i++) {
		if (v[i].link != link || v[i].chosen || v[i].done)
			continue;
		idx[j] = j;
		err = probe_of(b, tgid, v[i].id, m, &probes[j], &slots[j]);
		j++;
	}
	if (!err && ns && bft_bpf_multi(b))
		err = path_replaced(b, tgid, probes[0].path);
	if (!err && ns && bft_bpf_multi(b)) {
		err = group_attach_multi(b, tgid, tgid_cookie(tgid), probes,
					 slots, idx, ns, res, links, &seq);
	} else {
		/* one link per probe: no other probe shares it */
		for (k = 0; !err && k < ns; k++)
			err = probe_attach(b, tgid, tgid_cookie(tgid),
					   &probes[k], slots[k], &links[k],
					   &seq);
		if (err)	/* all again or none */
			for (size_t j = 0; j < k; j++)
				if (links[j])
					bft_bpf_link_release(tgid, links[j] - 1);
	}
	for (size_t i = 0, j = 0; i < nv; i++) {
		if (v[i].link != link || v[i].done)
			continue;
		v[i].done = true;
		if (v[i].chosen || err) {
			probe_retire(b, tgid, v[i].id, m);
			continue;
		}
		v[i].link = links[j];
		if (!bft_bpf_method_get(b, tgid, v[i].id, m)) {
			m->link = links[j];
			bft_bpf_method_put(b, tgid, v[i].id, m);
		}
		j++;
	}
	if (err) {
		snprintf(why, sizeof(why), "%s", b->err[0] ? b->err :
			 strerror(-err));
		err = bft_bpf_err_set(b, err, "%zu probes of tgid %u shared a "
				      "link with those detached and could not "
				      "be attached again, so they are detached "
				      "too: %s", ns, tgid, why);
	}
	for (size_t j = 0; probes && j < ns; j++)
		free((char *)probes[j].path);
	free(probes);
	free(slots);
	free(links);
	free(idx);
	free(res);
	return err;
}

static int target_detach_some(struct bft_bpf *b, uint32_t tgid,
			      const uint32_t *ids, size_t n)
{
	struct bft_bpf_method *m = malloc(sizeof(*m));
	struct live *v = NULL;
	char p[PATH_MAX], first[sizeof(b->err)] = "";
	ssize_t nv;
	int err = 0;

	links_dir_format(p, sizeof(p), tgid);
	if (!tgid || access(p, F_OK)) {
		free(m);
		return bft_bpf_err_set(b, -ENOENT, "tgid %u is not a target",
				       tgid);
	}
	nv = m ? live_list(b, tgid, &v) : -ENOMEM;
	if (nv < 0) {
		free(m);
		return bft_bpf_err_set(b, (int)nv, "the method table: %s",
				       strerror((int)-nv));
	}
	err = detach_choose(b, tgid, v, (size_t)nv, ids, n);
	if (err)
		nv = 0;		/* nothing detached */
	for (ssize_t i = 0; i < nv; i++) {
		int e;

		if (!v[i].chosen || v[i].done)
			continue;
		/* the first failure is the one said; the others go on */
		e = group_detach(b, tgid, v[i].link, v, (size_t)nv, m);
		if (e && !err) {
			err = e;
			snprintf(first, sizeof(first), "%s", b->err);
		}
	}
	if (first[0])
		snprintf(b->err, sizeof(b->err), "%s", first);
	free(v);
	free(m);
	return err;
}

int bft_bpf_detach_some(struct bft_bpf *b, uint32_t tgid, const uint32_t *ids,
			size_t n)
{
	int fd, err = bft_bpf_session_open(b, false);

	if (err == -ENOENT)	/* no session: nothing attached */
		return bft_bpf_err_set(b, err, "tgid %u is not a target", tgid);
	if (err)
		return err;
	fd = bft_bpf_session_lock(b);
	if (fd < 0)
		return fd;
	err = target_detach_some(b, tgid, ids, n);
	bft_bpf_probes_recount(b);
	bft_bpf_session_unlock(fd);
	return err;
}
