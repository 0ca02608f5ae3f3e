// SPDX-License-Identifier: GPL-2.0
/*
 * The inline backend's registry (bfi_session.h): its directory, its lock,
 * the session file and the target files, and the reaping of targets whose
 * process is gone.  bfctl attach exits once its jumps are written, so this
 * directory is the only place that knows what was patched where.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inline/bfi_session.h"
#include "../../../kmod/bft_rules.h"

#define SESSION_MAGIC	"bfi-session"
#define SESSION_VERSION	1

const char *bfi_session_dir(void)
{
	const char *d = getenv("BFT_INLINE_DIR");

	return d && *d ? d : "/run/bftrace/inline";
}

int bfi_session_err(struct bfi_session *s, int e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	return e;
}

const char *bfi_session_errmsg(const struct bfi_session *s)
{
	return s->err;
}

void bfi_state_default(struct bfi_state *st)
{
	memset(st, 0, sizeof(*st));
	st->mode = BFT_MODE_INITIALIZING;
	for (unsigned int id = 1; id <= BFT_OPT_MAX; id++)
		st->opts[id] = bft_opt_rule(id)->def;
}

/* mkdir -p of the registry, the last part mode 0700. */
static int session_mkdir(const char *dir)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", dir);
	for (char *q = p + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		*q = '/';
	}
	if (mkdir(p, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/* The dir is bounded at open, the names are ours: a cut never happens. */
static void session_path(const struct bfi_session *s, char *p, size_t len,
			 const char *name)
{
	if ((size_t)snprintf(p, len, "%s/%s", s->dir, name) >= len)
		p[0] = 0;
}

static int session_open(struct bfi_session **sp, bool create, bool nowait,
			char *err, size_t errlen)
{
	struct bfi_session *s = calloc(1, sizeof(*s));
	char p[PATH_MAX];
	struct stat st;
	int e;

	*sp = NULL;
	if (!s)
		return -ENOMEM;
	if (strlen(bfi_session_dir()) > PATH_MAX - 300) {
		snprintf(err, errlen, "the registry's path is too long");
		free(s);
		return -ENAMETOOLONG;
	}
	snprintf(s->dir, sizeof(s->dir), "%s", bfi_session_dir());
	s->lock_fd = -1;
	s->nowait = nowait;
	if (create && (e = session_mkdir(s->dir))) {
		snprintf(err, errlen, "cannot make %s: %s", s->dir,
			 strerror(-e));
		free(s);
		return e;
	}
	if (stat(s->dir, &st)) {
		e = -errno;
		snprintf(err, errlen, "%s: %s%s", s->dir, strerror(errno),
			 e == -ENOENT ? " (no inline session)" : "");
		free(s);
		return e;
	}
	/* it holds what can undo patches: only its owner may write it */
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		snprintf(err, errlen, "%s is not a directory of this user "
			 "with mode 0700: refusing to use it", s->dir);
		free(s);
		return -EPERM;
	}
	session_path(s, p, sizeof(p), "lock");
	s->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->lock_fd < 0) {
		e = -errno;
		snprintf(err, errlen, "%s: %s", p, strerror(errno));
		free(s);
		return e;
	}
	e = bfi_session_lock(s);
	if (!e)
		bfi_session_unlock(s);
	if (e) {
		snprintf(err, errlen, "%s", s->err);
		bfi_session_close(s);
		return e;
	}
	s->nowait = false;
	*sp = s;
	return 0;
}

int bfi_session_open(struct bfi_session **sp, bool create, char *err,
		     size_t errlen)
{
	return session_open(sp, create, false, err, errlen);
}

int bfi_session_open_nowait(struct bfi_session **sp, char *err,
			    size_t errlen)
{
	return session_open(sp, false, true, err, errlen);
}

static void session_targets_free(struct bfi_session *s)
{
	for (size_t i = 0; i < s->ntargets; i++)
		bfi_target_free(&s->targets[i]);
	free(s->targets);
	s->targets = NULL;
	s->ntargets = 0;
}

void bfi_session_close(struct bfi_session *s)
{
	if (!s)
		return;
	if (s->own)
		bfi_session_owner_release(s);
	session_targets_free(s);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	free(s);
}

int bfi_session_lock(struct bfi_session *s)
{
	int e;

	if (s->locked++)
		return 0;
	while (flock(s->lock_fd, LOCK_EX | (s->nowait ? LOCK_NB : 0))) {
		if (errno == EWOULDBLOCK && s->nowait) {
			s->locked--;
			return -EWOULDBLOCK;	/* no error: a later turn */
		}
		if (errno != EINTR) {
			s->locked--;
			return bfi_session_err(s, -errno, "locking %s: %s",
					       s->dir, strerror(errno));
		}
	}
	e = bfi_session_load(s);
	if (e)
		bfi_session_unlock(s);
	return e;
}

void bfi_session_unlock(struct bfi_session *s)
{
	if (s->locked && !--s->locked)
		flock(s->lock_fd, LOCK_UN);
}

/* Write name's new content with fill() into a temporary file, rename. */
static int session_replace(struct bfi_session *s, const char *name,
			   int (*fill)(const void *obj, FILE *f),
			   const void *obj)
{
	char p[PATH_MAX], tmp[PATH_MAX];
	FILE *f;
	int fd, e;

	session_path(s, p, sizeof(p), name);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", p,
			     (int)getpid()) >= sizeof(tmp))
		return bfi_session_err(s, -ENAMETOOLONG, "%s: name too long",
				       s->dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return bfi_session_err(s, -errno, "%s: %s", tmp,
				       strerror(errno));
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return -ENOMEM;
	}
	e = fill(obj, f);
	if (fflush(f) || fsync(fileno(f)))
		e = e ? e : -errno;
	if (fclose(f) && !e)
		e = -errno;
	if (!e && rename(tmp, p))
		e = -errno;
	if (e) {
		unlink(tmp);
		return bfi_session_err(s, e, "writing %s: %s", p,
				       strerror(-e));
	}
	return 0;
}

static int state_write(const void *obj, FILE *f)
{
	const struct bfi_state *st = obj;

	fprintf(f, "%s %d\n", SESSION_MAGIC, SESSION_VERSION);
	fprintf(f, "mode %u %u %u %u\n", st->mode, st->break_reason, st->gen,
		st->next_index);
	fprintf(f, "owner %u %" PRIu64 " %" PRIu64 " %u\n", st->owner.tgid,
		st->owner.start, st->owner.pidns, st->guard);
	for (unsigned int id = 1; id <= BFT_OPT_MAX; id++)
		fprintf(f, "opt %u %" PRIu64 "\n", id, st->opts[id]);
	fprintf(f, "end\n");
	return ferror(f) ? -EIO : 0;
}

int bfi_session_save(struct bfi_session *s)
{
	return session_replace(s, "session", state_write, &s->st);
}

static int state_read(struct bfi_session *s, FILE *f)
{
	struct bfi_state *st = &s->st;
	unsigned int a, b, id, ver = 0;
	char line[256];
	uint64_t v;
	bool end = false;

	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, SESSION_MAGIC " %u", &ver) != 1 ||
	    ver != SESSION_VERSION)
		return -EINVAL;
	while (!end && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "mode %u %u %u %u", &a, &b, &st->gen,
			   &st->next_index) == 4) {
			if (a > BFT_MODE_SHUTTING_DOWN || b > 0xff)
				return -EINVAL;
			st->mode = (uint8_t)a;
			st->break_reason = (uint8_t)b;
		} else if (sscanf(line, "owner %u %" SCNu64 " %" SCNu64 " %u",
				  &st->owner.tgid, &st->owner.start,
				  &st->owner.pidns, &st->guard) == 4) {
			continue;
		} else if (sscanf(line, "opt %u %" SCNu64, &id, &v) == 2) {
			const struct bft_opt_rule *r;

			if (!id || id > BFT_OPT_MAX)
				continue;	/* a newer tool's option */
			r = bft_opt_rule(id);
			st->opts[id] = v < r->min || v > r->max ? r->def : v;
		} else if (!strncmp(line, "end", 3)) {
			end = true;
		} else {
			return -EINVAL;
		}
	}
	return end ? 0 : -EINVAL;
}

/* Whether t's process is gone, or its pid names another process now. */
static bool target_gone(const struct bfi_target *t)
{
	struct bft_owner o = { t->tgid, t->start, t->pidns };

	return bft_proc_exited(t->tgid) || bft_owner_dead(&o) == 1;
}

static int target_load(struct bfi_session *s, const char *name)
{
	struct bfi_target t, *n;
	char p[PATH_MAX], why[256];
	FILE *f;
	int e;

	session_path(s, p, sizeof(p), name);
	f = fopen(p, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;	/* dropped meanwhile */
	e = bfi_target_parse(&t, f, why, sizeof(why));
	fclose(f);
	if (e)
		return bfi_session_err(s, e, "%s: %s", p, why);
	if (target_gone(&t)) {
		/*
		 * Nothing of it is left to undo, but a collector names its
		 * methods while it drains, often after the process ended:
		 * the record stays, its patches gone, until the next start
		 * (mode_forget_detached), as the module keeps a reaped
		 * target's methods.  With nothing patched it goes now.
		 */
		if (!t.npatches) {
			if (s->locked)
				unlink(p);
			bfi_target_free(&t);
			return 0;
		}
		t.gone = true;
		for (size_t i = 0; i < t.npatches; i++)
			t.patches[i].live = 0;
		for (size_t i = 0; i < t.nmethods; i++)
			t.methods[i].flags |= BFT_PF_GONE;
	}
	n = realloc(s->targets, (s->ntargets + 1) * sizeof(*n));
	if (!n) {
		bfi_target_free(&t);
		return -ENOMEM;
	}
	s->targets = n;
	s->targets[s->ntargets++] = t;
	return 0;
}

static int target_cmp(const void *a, const void *b)
{
	const struct bfi_target *x = a, *y = b;

	return x->tgid < y->tgid ? -1 : x->tgid > y->tgid;
}

int bfi_session_load(struct bfi_session *s)
{
	char p[PATH_MAX];
	struct dirent *d;
	DIR *dir;
	FILE *f;
	int e = 0;

	session_targets_free(s);
	bfi_state_default(&s->st);
	session_path(s, p, sizeof(p), "session");
	f = fopen(p, "re");
	if (f) {
		e = state_read(s, f);
		fclose(f);
		if (e)
			return bfi_session_err(s, e, "%s is malformed", p);
	}
	dir = opendir(s->dir);
	if (!dir)
		return bfi_session_err(s, -errno, "%s: %s", s->dir,
				       strerror(errno));
	while (!e && (d = readdir(dir))) {
		char *end;

		strtoul(d->d_name, &end, 10);
		if (d->d_name[0] < '1' || d->d_name[0] > '9' || *end)
			continue;	/* "session", "lock", temporaries */
		e = target_load(s, d->d_name);
	}
	closedir(dir);
	if (s->ntargets > 1)
		qsort(s->targets, s->ntargets, sizeof(*s->targets),
		      target_cmp);
	return e;
}

struct bfi_target *bfi_session_target(struct bfi_session *s, uint32_t tgid)
{
	for (size_t i = 0; i < s->ntargets; i++)
		if (s->targets[i].tgid == tgid)
			return &s->targets[i];
	return NULL;
}

static int target_fill(const void *obj, FILE *f)
{
	return bfi_target_write(obj, f);
}

int bfi_session_target_save(struct bfi_session *s, struct bfi_target *t)
{
	const struct bfi_target *old = bfi_session_target(s, t->tgid);
	char name[16];
	int e;

	if (old && old->index != BFI_NO_INDEX) {
		t->index = old->index;
	} else {
		/* a stream block is never reused in one session: a reader
		 * may have closed its streams */
		if (s->st.next_index >= BFI_MAX_TARGETS)
			return bfi_session_err(s, -ENOSPC, "the inline backend "
					       "traces at most %u targets per "
					       "session", BFI_MAX_TARGETS);
		t->index = s->st.next_index++;
		e = bfi_session_save(s);
		if (e)
			return e;
	}
	snprintf(name, sizeof(name), "%u", t->tgid);
	return session_replace(s, name, target_fill, t);
}

struct bfi_target *bfi_session_target_add(struct bfi_session *s,
					  const struct bfi_target *t)
{
	struct bfi_target *n = realloc(s->targets,
				       (s->ntargets + 1) * sizeof(*n));

	if (!n)
		return NULL;
	s->targets = n;
	n[s->ntargets] = *t;
	return &n[s->ntargets++];
}

int bfi_session_target_drop(struct bfi_session *s, uint32_t tgid)
{
	char p[PATH_MAX], name[16];

	snprintf(name, sizeof(name), "%u", tgid);
	session_path(s, p, sizeof(p), name);
	if (unlink(p) && errno != ENOENT)
		return bfi_session_err(s, -errno, "%s: %s", p, strerror(errno));
	for (size_t i = 0; i < s->ntargets; i++) {
		if (s->targets[i].tgid != tgid)
			continue;
		bfi_target_free(&s->targets[i]);
		memmove(&s->targets[i], &s->targets[i + 1],
			(s->ntargets - i - 1) * sizeof(*s->targets));
		s->ntargets--;
		break;
	}
	return 0;
}

unsigned int bfi_session_probes(const struct bfi_session *s)
{
	unsigned int n = 0;

	for (size_t i = 0; i < s->ntargets; i++)
		for (size_t j = 0; j < s->targets[i].npatches; j++)
			n += s->targets[i].patches[j].live;
	return n;
}
