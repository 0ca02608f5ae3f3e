/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests that compile their fixtures at run time share: a scratch
 * directory, paths in it, the compiler, and shell commands.
 *
 * The directory goes next to the test binary (under build/), or under
 * $BFT_TEST_TMPDIR; the compiler is $BFT_FIXTURE_CC, default "cc".
 */
#ifndef BFT_FIXTURE_BUILD_H
#define BFT_FIXTURE_BUILD_H

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* dir/name into buf; paths here are short, so a cut one is a setup bug. */
static inline void fx_path_of(char *buf, size_t len, const char *dir, const char *name)
{
	int w = snprintf(buf, len, "%s/%s", dir, name);

	if (w < 0 || (size_t)w >= len)
		abort();
}

/* A new directory NAME-XXXXXX for the fixtures: 0, or -errno. */
static inline int fx_tmpdir(char *dir, size_t len, const char *name)
{
	const char *base = getenv("BFT_TEST_TMPDIR");
	char exe[PATH_MAX], tmpl[NAME_MAX];
	ssize_t n;

	if (!base) {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return -errno;
		exe[n] = '\0';
		base = dirname(exe);
	}
	snprintf(tmpl, sizeof(tmpl), "%s-XXXXXX", name);
	fx_path_of(dir, len, base, tmpl);
	return mkdtemp(dir) ? 0 : -errno;
}

/* Run a shell command; its exit status, -1 if it did not exit. */
__attribute__((format(printf, 1, 2)))
static inline int fx_run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st)) {
		fprintf(stderr, "# failed: %s\n", cmd);
		return -1;
	}
	if (WEXITSTATUS(st))
		fprintf(stderr, "# exit %d: %s\n", WEXITSTATUS(st), cmd);
	return WEXITSTATUS(st);
}

static inline const char *fx_cc(void)
{
	const char *c = getenv("BFT_FIXTURE_CC");

	return c && *c ? c : "cc";
}

#endif /* BFT_FIXTURE_BUILD_H */
