/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_pattern: which functions of which objects a user asked for.
 *
 * A pattern is   [!][OBJECT:]SYMBOL
 *
 *   SYMBOL   a glob (fnmatch(3), '*' also crosses "::"), or with regex set a
 *            POSIX extended regex that may match anywhere in the name (anchor
 *            it with ^ and $).  It is tried on every name of a function:
 *            each alias, mangled and demangled.
 *   OBJECT   a glob on the object's file name ("libsqlite3.so*"), or on its
 *            full path when it holds a '/'.  Always a glob, even with regex.
 *            The scope ends at the first single ':' ("::" belongs to C++
 *            names, so "ns::f" has no scope and "libx*:ns::f" has one).
 *   !        an exclusion: a function matching any exclusion is dropped,
 *            whatever included it.
 *
 * A function is selected when at least one inclusion matches it and no
 * exclusion does.  At least one inclusion is required.
 */
#ifndef BFT_PATTERN_H
#define BFT_PATTERN_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

struct bft_pattern {
	const char *text;	/* as given */
	bool exclude;
	char *object;		/* glob, NULL: every object */
	bool object_path;	/* object glob holds '/': match the full path */
	char *symbol;
	bool is_regex;
	regex_t re;
};

struct bft_patterns {
	struct bft_pattern *p;
	size_t n;
	size_t n_include;
};

/*
 * Parse n patterns.  -EINVAL for an empty pattern, an empty object scope
 * or symbol, a malformed regex, or no inclusion at all; err then says
 * which pattern and why.  -ENOMEM.  On failure *ps holds nothing.
 */
int bft_patterns_init(struct bft_patterns *ps, const char *const *texts,
		      size_t n, bool regex, char *err, size_t errlen);
void bft_patterns_free(struct bft_patterns *ps);

/* Does p's object scope take the object at path (no scope: every one)? */
bool bft_pattern_in_scope(const struct bft_pattern *p, const char *path);

/* Can an inclusion select anything in the object at path? */
bool bft_patterns_scope(const struct bft_patterns *ps, const char *path);

/* Is a function with these names (n of them) in the object at path selected? */
bool bft_patterns_match(const struct bft_patterns *ps, const char *path,
			const char *const *names, size_t n);

#endif /* BFT_PATTERN_H */
