// SPDX-License-Identifier: GPL-2.0
/*
 * The state file of a follower: who follows which process for which
 * patterns, and which of them still wait for their object.  Written by
 * the follower at each change (a new file renamed over the old), read
 * by status, and by detach and stop to end the follower.
 *
 * One "key value" line each: follower PID START PIDNS (struct bft_owner),
 * target TGID, kind
 * attach|run, backend NAME, regex 0|1, loads N, then pattern, usdt and
 * pending lines in order.  bfctl run writes one for each of its processes
 * that has pending patterns, for status to show; stop does not end it.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "follow.h"
#include "output.h"

const char *follow_dir(void)
{
	const char *d = getenv("BFT_FOLLOW_DIR");

	return d && *d ? d : "/run/bftrace/follow";
}

static int mkdirs(const char *dir)
{
	char d[4096];

	if (snprintf(d, sizeof(d), "%s", dir) >= (int)sizeof(d))
		return -ENAMETOOLONG;
	for (char *p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(d, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(d, 0700) && errno != EEXIST ? -errno : 0;
}

static void put_list(FILE *f, const char *key, const struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		fprintf(f, "%s %s\n", key, l->v[i]);
}

int follow_state_write(const struct follow_state *s)
{
	char fn[4200], tmp[4300];
	FILE *f;
	int rc = mkdirs(follow_dir());

	if (rc)
		return rc;
	snprintf(fn, sizeof(fn), "%s/%d", follow_dir(), (int)s->tgid);
	snprintf(tmp, sizeof(tmp), "%s.new", fn);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "follower %" PRIu32 " %" PRIu64 " %" PRIu64 "\ntarget %d\nkind %s\nbackend %s\nregex %d\nloads %u\n",
		s->follower.tgid, s->follower.start, s->follower.pidns, (int)s->tgid,
		s->run ? "run" : "attach", s->backend, s->regex, s->loads);
	put_list(f, "pattern", &s->patterns);
	put_list(f, "usdt", &s->usdt);
	put_list(f, "pending", &s->pending);
	rc = ferror(f) ? -EIO : 0;
	if (fclose(f) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, fn))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

void follow_state_free(struct follow_state *s)
{
	strlist_free(&s->patterns);
	strlist_free(&s->usdt);
	strlist_free(&s->pending);
	free(s->buf);
	s->buf = NULL;
}

int follow_state_read(pid_t tgid, struct follow_state *s)
{
	char fn[4200], *line, *next, *val;
	size_t len = 0;
	FILE *f;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	snprintf(fn, sizeof(fn), "%s/%d", follow_dir(), (int)tgid);
	f = fopen(fn, "re");
	if (!f)
		return -errno;
	if (getdelim(&s->buf, &len, 0, f) < 0)
		rc = feof(f) ? -EINVAL : -errno;
	fclose(f);
	for (line = rc ? NULL : s->buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		val = strchr(line, ' ');
		if (!val)
			continue;
		*val++ = 0;
		if (!strcmp(line, "follower"))
			sscanf(val, "%" SCNu32 " %" SCNu64 " %" SCNu64, &s->follower.tgid,
			       &s->follower.start, &s->follower.pidns);
		else if (!strcmp(line, "target"))
			s->tgid = atoi(val);
		else if (!strcmp(line, "kind"))
			s->run = !strcmp(val, "run");
		else if (!strcmp(line, "backend"))
			snprintf(s->backend, sizeof(s->backend), "%s", val);
		else if (!strcmp(line, "regex"))
			s->regex = atoi(val);
		else if (!strcmp(line, "loads"))
			s->loads = (unsigned int)strtoul(val, NULL, 10);
		else if (!strcmp(line, "pattern"))
			rc = strlist_push(&s->patterns, val);
		else if (!strcmp(line, "usdt"))
			rc = strlist_push(&s->usdt, val);
		else if (!strcmp(line, "pending"))
			rc = strlist_push(&s->pending, val);
		if (rc)
			break;
	}
	if (!rc && (s->tgid != tgid || !s->follower.tgid))
		rc = -EINVAL;
	if (rc)
		follow_state_free(s);
	return rc;
}

void follow_state_remove(pid_t tgid)
{
	char fn[4200];

	snprintf(fn, sizeof(fn), "%s/%d", follow_dir(), (int)tgid);
	unlink(fn);
}

bool follow_state_live(const struct follow_state *s)
{
	return !bft_owner_dead(&s->follower);
}

/* Each file's process, in the order of the directory. */
static size_t list(pid_t *v, size_t cap)
{
	DIR *d = opendir(follow_dir());
	struct dirent *e;
	size_t n = 0;
	char *end;
	long pid;

	while (d && (e = readdir(d)) && n < cap) {
		pid = strtol(e->d_name, &end, 10);
		if (pid > 0 && !*end)
			v[n++] = (pid_t)pid;
	}
	if (d)
		closedir(d);
	return n;
}

#define FOLLOW_MAX 256

/* The file of tgid, or every file (tgid 0): their processes into v. */
static size_t pick(pid_t tgid, pid_t v[FOLLOW_MAX])
{
	if (!tgid)
		return list(v, FOLLOW_MAX);
	v[0] = tgid;
	return 1;
}

void follow_state_forget(pid_t tgid)
{
	pid_t v[FOLLOW_MAX];
	size_t n = pick(tgid, v);
	struct follow_state s;

	for (size_t i = 0; i < n; i++) {
		if (follow_state_read(v[i], &s))
			continue;
		if (s.follower.tgid == (uint32_t)getpid())
			follow_state_remove(v[i]);
		follow_state_free(&s);
	}
}

void follow_sweep(void)
{
	DIR *d = opendir(follow_dir());
	struct dirent *e;
	char fn[4200];
	long pid;
	char *end;

	while (d && (e = readdir(d))) {
		pid = strtol(e->d_name, &end, 10);
		if (pid <= 0 || strcmp(end, ".log") || !bft_proc_exited((uint32_t)pid))
			continue;
		snprintf(fn, sizeof(fn), "%s/%ld", follow_dir(), pid);
		if (access(fn, F_OK)) {
			snprintf(fn, sizeof(fn), "%s/%s", follow_dir(), e->d_name);
			unlink(fn);
		}
	}
	if (d)
		closedir(d);
}

int follow_end(const struct ctl *c, pid_t tgid)
{
	struct bft_owner waiting[FOLLOW_MAX];
	pid_t v[FOLLOW_MAX];
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	size_t n = pick(tgid, v), nw = 0;
	struct follow_state s;
	int dead;

	for (size_t i = 0; i < n; i++) {
		if (follow_state_read(v[i], &s))
			continue;
		dead = bft_owner_dead(&s.follower);
		if (!s.run && !strcmp(s.backend, ctl_backend(c)->name) && !dead &&
		    !kill((pid_t)s.follower.tgid, SIGTERM))
			waiting[nw++] = s.follower;
		else if (dead == 1)
			follow_state_remove(v[i]);	/* a follower killed */
		follow_state_free(&s);
	}
	/*
	 * It lets go of every thread first: a few ms, or one hold.  One that
	 * has not ended in 10 s is killed, which leaves nothing in the process
	 * (follow.c), and must not attach after the detach or stop.
	 */
	for (int tries = 0; tries < 600; tries++) {
		size_t left = 0;

		for (size_t i = 0; i < nw; i++) {
			if (bft_owner_dead(&waiting[i]))
				continue;
			left++;
			if (tries == 500) {
				err_msg("the follower %" PRIu32 " of later loads did not end within 10 s: killed",
					waiting[i].tgid);
				kill((pid_t)waiting[i].tgid, SIGKILL);
			}
		}
		if (!left)
			return (int)nw;
		nanosleep(&nap, NULL);
	}
	return (int)nw;
}

void follow_print(const struct ctl *c)
{
	pid_t v[FOLLOW_MAX];
	size_t n = list(v, FOLLOW_MAX);
	struct follow_state s;

	out_arr_open("followed");
	for (size_t i = 0; i < n; i++) {
		if (follow_state_read(v[i], &s))
			continue;
		if (strcmp(s.backend, ctl_backend(c)->name) || !follow_state_live(&s)) {
			follow_state_free(&s);
			continue;
		}
		out_obj_open(NULL);
		out_u64("pid", "followed process %llu", (uint64_t)s.tgid);
		out_str("by", " (by bfctl %s", s.run ? "run" : "attach");
		out_u64("follower", " %llu", s.follower.tgid);
		if (s.run)
			out_text(")");
		else
			out_u64("loads", ", %llu loads seen)", s.loads);
		out_text(s.pending.n ? "; pending:" : "; nothing pending\n");
		out_arr_open("pending");
		for (size_t j = 0; j < s.pending.n; j++)
			out_str(NULL, j + 1 < s.pending.n ? " '%s'" : " '%s'\n", s.pending.v[j]);
		out_arr_close();
		out_obj_close();
		follow_state_free(&s);
	}
	out_arr_close();
}
