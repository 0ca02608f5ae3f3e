// SPDX-License-Identifier: GPL-2.0
/*
 * Reading a target's /proc/PID/status and stat before it is stopped
 * (bfi_proc.h).  Each thread's status is read too: a CET shadow stack is
 * a per-thread feature.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inline/bfi_proc.h"

/* The status fields of one task; thread_only: just the CET line. */
static int proc_status(const char *path, struct bfi_proc_info *pi,
		       bool thread_only)
{
	char line[512];
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "x86_Thread_features:", 20)) {
			pi->shstk_known = true;
			if (strstr(line + 20, "shstk"))
				pi->shstk = true;
		}
		if (thread_only)
			continue;
		if (!strncmp(line, "Seccomp:", 8))
			pi->seccomp = atoi(line + 8);
		else if (!strncmp(line, "TracerPid:", 10))
			pi->tracer = atoi(line + 10);
		else if (!strncmp(line, "State:", 6))
			pi->group_stop = strchr(line + 6, 'T') != NULL;
	}
	fclose(f);
	return 0;
}

static int proc_start(pid_t tgid, uint64_t *start)
{
	char path[64], buf[1024], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", tgid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the name may hold ')' */
	if (!p)
		return -EINVAL;
	p += 2;			/* at field 3, the state */
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	*start = strtoull(p, NULL, 10);
	return 0;
}

int bfi_proc_probe(pid_t tgid, struct bfi_proc_info *pi, char *err,
		   size_t errlen)
{
	char path[300];
	struct dirent *d;
	DIR *dir;
	int r;

	memset(pi, 0, sizeof(*pi));
	pi->seccomp = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", tgid);
	r = tgid > 0 ? proc_status(path, pi, false) : -ENOENT;
	if (!r)
		r = proc_start(tgid, &pi->start);
	if (r) {
		if (r == -ENOENT)
			r = -ESRCH;
		snprintf(err, errlen, r == -ESRCH ? "no process with pid %d" :
			 "cannot read /proc of process %d", (int)tgid);
		return r;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", tgid);
	dir = opendir(path);
	while (dir && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", tgid,
			 d->d_name);
		proc_status(path, pi, true);	/* a thread may be gone */
	}
	if (dir)
		closedir(dir);
	return 0;
}
