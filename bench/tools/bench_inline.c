// SPDX-License-Identifier: GPL-2.0
/*
 * The inline backend's attach for bench/inline-native.sh: rewrites FUNC of
 * FILE in process PID through the backend's ops table (bft_backend_inline),
 * as the selftests do, with entry and return probes (or entries only, -e)
 * and no exception hooks: the benchmark's targets throw nothing, and bfctl
 * attach would add the hooks of libgcc_s, whose unwinder entries have
 * indirect jumps the inline backend refuses.  The session is the one in
 * $BFT_INLINE_DIR: bfcollector's, recording, or, with none there, a new one
 * that stays INITIALIZING (patched, recording nothing: -i says that is
 * expected).
 *
 *   bench-inline [-e] [-i] PID FILE FUNC [FUNC...]
 *
 * Prints "attached=N of=M" and a line per refused function; exits 0 when
 * at least one function was rewritten.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/bft_backend.h"
#include "symbols/bft_elf.h"

/* Entry probes of FUNC... of FILE: the offsets bfctl would probe. */
static int probes_resolve(const char *file, char **funcs, size_t n,
			  uint32_t flags, struct bft_nl_probe *p)
{
	struct bft_elf *e;
	char err[256] = "";
	int rc = bft_elf_open(file, &e, err, sizeof(err));

	if (rc) {
		fprintf(stderr, "bench-inline: %s: %s\n", file, err);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		struct bft_elf_func f;

		rc = bft_elf_find_func(e, funcs[i], &f);
		if (rc) {
			fprintf(stderr, "bench-inline: %s: %s: %s\n", file,
				funcs[i], bft_elf_errmsg(e));
			break;
		}
		p[i] = (struct bft_nl_probe){
			.path = file, .offset = f.probe_offset,
			.method_id = (uint32_t)i + 1, .flags = flags,
			.name = funcs[i],
		};
	}
	bft_elf_close(e);
	return rc;
}

int main(int argc, char **argv)
{
	const struct bft_backend_ops *ops = &bft_backend_inline;
	uint32_t flags = BFT_PF_ALL;
	bool initializing = false;
	struct bft_nl_probe *p;
	char err[512] = "";
	void *h = NULL;
	int *res, opt, rc, pid;
	size_t n, ok = 0;

	while ((opt = getopt(argc, argv, "ei")) != -1) {
		if (opt == 'e')
			flags = BFT_PF_ENTRY;
		else if (opt == 'i')
			initializing = true;
		else
			goto usage;
	}
	if (argc - optind < 3)
		goto usage;
	pid = atoi(argv[optind]);
	n = (size_t)(argc - optind - 2);
	p = calloc(n, sizeof(*p));
	res = calloc(n, sizeof(*res));
	if (pid <= 0 || !p || !res)
		goto usage;
	rc = probes_resolve(argv[optind + 1], argv + optind + 2, n, flags, p);
	if (rc)
		return 1;
	rc = ops->open(&h, initializing ? BFT_BACKEND_CREATE : BFT_BACKEND_EXISTING,
		       err, sizeof(err));
	if (rc) {
		fprintf(stderr, "bench-inline: no inline session%s: %s\n",
			initializing ? "" : " (bfcollector --backend inline first)",
			err[0] ? err : strerror(-rc));
		return 1;
	}
	rc = ops->attach(h, (uint32_t)pid, p, n, res);
	if (rc)
		fprintf(stderr, "bench-inline: attach to %d: %s\n", pid, ops->errmsg(h));
	for (size_t i = 0; i < n; i++) {
		if (!res[i])
			ok++;
		else
			printf("refused %s: %s\n", p[i].name, strerror(-res[i]));
	}
	if (ops->notice && ops->notice(h))
		printf("notice %s\n", ops->notice(h));
	printf("attached=%zu of=%zu\n", rc ? 0 : ok, n);
	ops->close(h);
	free(p);
	free(res);
	return rc || !ok;
usage:
	fprintf(stderr, "usage: bench-inline [-e] [-i] PID FILE FUNC [FUNC...]\n");
	return 2;
}
