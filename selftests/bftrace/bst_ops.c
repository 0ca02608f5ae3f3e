// SPDX-License-Identifier: GPL-2.0
/*
 * bst_ops: a backend driven through its table of operations
 * (capture/bft_backend.h), as bfctl and bfcollector drive it: what the
 * inline backend's variants need, since it has no library of its own that
 * the tests could call the way they call bft_nl and bft_bpf.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "capture/bft_backend.h"
#include "bft_selftest.h"
#include "bst_internal.h"

int bst_ops_collect(const struct bft_backend_ops *ops, void *h, int quiet_ms,
		    int max_ms, struct bst_trace *t)
{
	struct bft_backend_rings *r = NULL;
	struct bft_nl_caps caps;
	struct bst_bufs bb;
	char err[256] = "";
	ssize_t got;
	int rc;

	memset(t, 0, sizeof(*t));
	rc = ops->get_caps(h, &caps);
	if (rc) {
		snprintf(t->err, sizeof(t->err), "caps: %s", ops->errmsg(h));
		return rc;
	}
	rc = bst_bufs_init(&bb, caps.nr_cpus);
	if (rc)
		return rc;
	rc = ops->rings_open(h, &r, NULL, caps.nr_cpus, bst_bufs_append, &bb,
			     err, sizeof(err));
	if (rc) {
		snprintf(t->err, sizeof(t->err), "%s: %s", ops->rings_name,
			 err);
	} else {
		got = ops->rings_drain(r, quiet_ms, max_ms);
		if (got < 0) {
			rc = (int)got;
			snprintf(t->err, sizeof(t->err), "draining the %s: %s",
				 ops->rings_name, ops->rings_errmsg(r));
		}
		ops->rings_close(r);
	}
	if (!rc)
		rc = bst_decode(t, caps.nr_cpus,
				(const uint8_t *const *)bb.data, bb.len);
	bst_bufs_free(&bb);
	return rc;
}

int bst_inline_open(void **hp, char **dirp, char *why, size_t len)
{
	const char *only = getenv("BFT_BACKEND");
	char tmpl[] = "/tmp/bst-inline-XXXXXX";
	int rc;

	*hp = NULL;
	*dirp = NULL;
	if (only && *only && strcmp(only, "inline") && strcmp(only, "bpf") &&
	    strcmp(only, "auto")) {
		snprintf(why, len, "BFT_BACKEND=%s: the inline variants do not "
			 "run", only);
		return 1;
	}
	/* a registry of this test's own: tests may run side by side */
	if (!mkdtemp(tmpl))
		return -errno;
	*dirp = strdup(tmpl);
	if (!*dirp)
		return -ENOMEM;
	setenv("BFT_INLINE_DIR", *dirp, 1);
	rc = bft_backend_inline.open(hp, BFT_BACKEND_CREATE, why, len);
	return rc;
}

void bst_inline_close(void *h, char *dir)
{
	char cmd[64 + 4096];

	if (h)
		bft_backend_inline.close(h);
	if (dir) {
		/* the registry's files: a target record each, a session, a lock */
		snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
		if (system(cmd))
			LOG("could not remove %s\n", dir);
		free(dir);
	}
	unsetenv("BFT_INLINE_DIR");
}

/* Whether [lo, hi) of pid equals the file it maps, at its offset. */
static int text_cmp(int mem, const char *path, unsigned long long lo,
		    unsigned long long hi, unsigned long long off)
{
	size_t n = hi - lo;
	uint8_t *a = malloc(n), *b = malloc(n);
	FILE *f = fopen(path, "re");
	size_t got = 0;
	int rc = -ENOMEM;

	if (a && b && f) {
		ssize_t r = pread(mem, a, n, (off_t)lo);

		if (!fseek(f, (long)off, SEEK_SET))
			got = fread(b, 1, n, f);
		/* a mapping past the file's end holds zeros there */
		memset(b + got, 0, n - got);
		rc = r == (ssize_t)n && !memcmp(a, b, n) ? 0 : 1;
		if (rc && r == (ssize_t)n) {
			for (size_t i = 0; i < n; i++) {
				if (a[i] != b[i]) {
					LOG("%s+0x%llx: %02x in memory, %02x in "
					    "the file\n", path, off + i, a[i],
					    b[i]);
					break;
				}
			}
		}
	}
	if (f)
		fclose(f);
	free(a);
	free(b);
	return rc;
}

int bst_text_matches_files(pid_t pid)
{
	char path[64], line[4096 + 256];
	int mem, rc = 0;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	if (!maps || mem < 0) {
		if (maps)
			fclose(maps);
		if (mem >= 0)
			close(mem);
		return -errno;
	}
	while (!rc && fgets(line, sizeof(line), maps)) {
		unsigned long long lo, hi, off;
		char perms[8], file[4096];

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &lo, &hi,
			   perms, &off, file) != 5 || perms[2] != 'x' ||
		    file[0] != '/')
			continue;
		rc = text_cmp(mem, file, lo, hi, off);
	}
	fclose(maps);
	close(mem);
	return rc;
}
