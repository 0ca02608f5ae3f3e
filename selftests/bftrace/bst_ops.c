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

static void reader_close(struct bst_reader *rd);

int bst_reader_open(struct bst_reader *rd, const struct bft_backend_ops *ops,
		    void *h)
{
	struct bft_nl_caps caps;
	int rc;

	memset(rd, 0, sizeof(*rd));
	rd->ops = ops;
	rd->h = h;
	rc = ops->get_caps(h, &caps);
	if (rc) {
		snprintf(rd->err, sizeof(rd->err), "caps: %s", ops->errmsg(h));
		return rc;
	}
	rd->nr_cpus = caps.nr_cpus;
	rd->bb = calloc(1, sizeof(struct bst_bufs));
	if (!rd->bb) {
		snprintf(rd->err, sizeof(rd->err), "out of memory");
		return -ENOMEM;
	}
	rc = bst_bufs_init(rd->bb, caps.nr_cpus);
	if (!rc)
		rc = ops->rings_open(h, &rd->r, NULL, caps.nr_cpus,
				     bst_bufs_append, rd->bb, rd->err,
				     sizeof(rd->err));
	if (rc) {
		char why[sizeof(rd->err)];

		snprintf(why, sizeof(why), "%s", rd->err);
		snprintf(rd->err, sizeof(rd->err), "%.40s: %.200s",
			 ops->rings_name, why);
		bst_reader_free(rd);
	}
	return rc;
}

ssize_t bst_reader_poll(struct bst_reader *rd, int timeout_ms)
{
	struct bft_nl_status st = { 0 };
	ssize_t got;

	if (rd->failed || !rd->r)
		return rd->failed ? rd->failed : -EINVAL;
	/*
	 * The status first: a target that waits at exit for its rings to
	 * be read is still there, and the read below may let it go.  Busy
	 * (an attach holds the registry) or no rings: keep the last one.
	 */
	if (!rd->ops->rings_status(rd->h, rd->r, &st) && st.nr_cpus) {
		bft_nl_status_free(&rd->st);
		rd->st = st;
		rd->polls++;
	} else {
		bft_nl_status_free(&st);
	}
	got = rd->ops->rings_poll(rd->r, timeout_ms);
	if (got < 0) {
		rd->failed = (int)got;
		snprintf(rd->err, sizeof(rd->err), "reading the %s: %s",
			 rd->ops->rings_name, rd->ops->rings_errmsg(rd->r));
	}
	return got;
}

int bst_reader_finish(struct bst_reader *rd, int quiet_ms, int max_ms,
		      struct bst_trace *t)
{
	ssize_t got = rd->failed;
	int rc;

	memset(t, 0, sizeof(*t));
	if (!rd->r) {
		snprintf(t->err, sizeof(t->err), "no reader: %.200s", rd->err);
		return -EINVAL;
	}
	if (!got)
		got = rd->ops->rings_drain(rd->r, quiet_ms, max_ms);
	if (got < 0 && !rd->failed)
		snprintf(rd->err, sizeof(rd->err), "draining the %s: %s",
			 rd->ops->rings_name, rd->ops->rings_errmsg(rd->r));
	rc = got < 0 ? (int)got :
	     bst_decode(t, rd->nr_cpus, (const uint8_t *const *)rd->bb->data,
			rd->bb->len);
	if (got < 0)
		snprintf(t->err, sizeof(t->err), "%s", rd->err);
	reader_close(rd);
	return rc;
}

/* The rings and their bytes; the status stays for the caller. */
static void reader_close(struct bst_reader *rd)
{
	if (rd->r)
		rd->ops->rings_close(rd->r);
	rd->r = NULL;
	if (rd->bb) {
		bst_bufs_free(rd->bb);
		free(rd->bb);
	}
	rd->bb = NULL;
}

void bst_reader_free(struct bst_reader *rd)
{
	reader_close(rd);
	bft_nl_status_free(&rd->st);
}

int bst_ops_collect(const struct bft_backend_ops *ops, void *h, int quiet_ms,
		    int max_ms, struct bst_trace *t)
{
	struct bst_reader rd;
	int rc = bst_reader_open(&rd, ops, h);

	if (rc) {
		memset(t, 0, sizeof(*t));
		snprintf(t->err, sizeof(t->err), "%s", rd.err);
		return rc;
	}
	return bst_reader_finish(&rd, quiet_ms, max_ms, t);
}

bool bst_inline_wanted(char *why, size_t len)
{
	const char *v = getenv("BFT_INLINE_VARIANTS");

	if (!v || strcmp(v, "0"))
		return true;
	/* guest time goes to what depends on the kernel */
	snprintf(why, len, "BFT_INLINE_VARIANTS=0: the inline backend needs no "
		 "kernel feature; its variants run natively");
	return false;
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
	if (!bst_inline_wanted(why, len))
		return 1;
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
