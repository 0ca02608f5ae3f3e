/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A scratch directory for the harnesses that need files (a replay source,
 * bfhq's outputs): made once per process, removed at exit.  Under
 * $TMPDIR if its name is short, else /dev/shm (what bfhq's live copy
 * syncs costs nothing there), else /tmp.
 */
#ifndef BFT_FUZZ_SCRATCH_H
#define BFT_FUZZ_SCRATCH_H

#include <ftw.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

static char fuzz_dir[64];

static int fuzz_rm_one(const char *path, const struct stat *st, int flag,
		       struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int fuzz_rm_below(const char *path, const struct stat *st, int flag,
			 struct FTW *ftw)
{
	return ftw->level ? fuzz_rm_one(path, st, flag, ftw) : 0;
}

static void fuzz_rm_dir(void)
{
	if (fuzz_dir[0])
		nftw(fuzz_dir, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Empty the directory, keeping it: bfhq numbers its traces after those
 * already there, so what one input left would make every later input
 * slower and its outputs depend on the inputs before it.
 */
static inline void fuzz_scratch_clear(void)
{
	if (fuzz_dir[0])
		nftw(fuzz_dir, fuzz_rm_below, 16, FTW_DEPTH | FTW_PHYS);
}

/* The directory, made on the first call; tag names the harness. */
static inline const char *fuzz_scratch(const char *tag)
{
	const char *tmp = getenv("TMPDIR");

	if (fuzz_dir[0])
		return fuzz_dir;
	if (!tmp || strlen(tmp) >= 32)
		tmp = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
	snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/bft-fuzz-%s-XXXXXX", tmp,
		 tag);
	if (!mkdtemp(fuzz_dir))
		fuzz_fail("%s: cannot create %s", tag, fuzz_dir);
	atexit(fuzz_rm_dir);
	return fuzz_dir;
}

/* Write a file of the scratch directory whole, or fail. */
static inline void fuzz_write_file(const char *name, const void *p, size_t n)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fuzz_dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n)
		fuzz_fail("cannot write %s", path);
	fclose(f);
}

#endif /* BFT_FUZZ_SCRATCH_H */
