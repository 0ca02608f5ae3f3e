// SPDX-License-Identifier: GPL-2.0
/*
 * A main() for a harness without libFuzzer: every file named, or found in
 * a directory named, is one input.  `make -C user check` replays the
 * committed corpora this way, so CI exercises them without clang.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	do {
		if (len == cap) {
			uint8_t *b = realloc(buf, cap = cap ? 2 * cap : 65536);

			if (!b) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = b;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n);
	fclose(f);
	/* a copy of exactly len bytes, so ASan sees reads past the end */
	{
		uint8_t *exact = malloc(len ? len : 1);

		if (!exact) {
			free(buf);
			return -1;
		}
		memcpy(exact, buf, len);
		free(buf);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	unsigned long runs = 0;
	int i, fail = 0;

	for (i = 1; i < argc; i++) {
		struct stat st;
		struct dirent *de;
		char **names = NULL;
		size_t n = 0, k;
		DIR *d;

		if (stat(argv[i], &st)) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			fail = 1;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			fail |= run_file(argv[i]) != 0;
			runs++;
			continue;
		}
		d = opendir(argv[i]);
		if (!d) {
			fail = 1;
			continue;
		}
		while ((de = readdir(d))) {
			char **v;

			if (de->d_name[0] == '.')
				continue;
			v = realloc(names, (n + 1) * sizeof(*v));
			if (!v)
				break;
			names = v;
			if (asprintf(&names[n], "%s/%s", argv[i], de->d_name) < 0)
				break;
			n++;
		}
		closedir(d);
		if (n)
			qsort(names, n, sizeof(*names), cmp_str);
		for (k = 0; k < n; k++) {
			fail |= run_file(names[k]) != 0;
			runs++;
			free(names[k]);
		}
		free(names);
	}
	printf("%s: %lu inputs replayed\n", argv[0], runs);
	/* an empty corpus would test nothing and say nothing */
	return fail || !runs;
}
