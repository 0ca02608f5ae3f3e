// SPDX-License-Identifier: GPL-2.0
/*
 * The configuration's regexes in bfcollector (patterns.c, through
 * methods.c): compiled within the limits, then matched against names.
 * Input: a selector byte (bit 0: the pattern is an inclusion too), the
 * pattern up to the first newline, then one name a line.  Properties: a
 * pattern compiles or is refused with a reason; a refused configuration
 * excludes nothing; an exclusion that is also an inclusion excludes
 * nothing; deciding again decides the same.
 */
#include <string.h>

#include "fuzz.h"
#include "fuzz_coll.h"

static void add_names(struct methods *m, const char *s, size_t n)
{
	uint32_t id = 1;

	while (n && id < 64) {
		const char *nl = memchr(s, '\n', n);
		size_t len = nl ? (size_t)(nl - s) : n;
		char name[512];

		if (len >= sizeof(name))
			len = sizeof(name) - 1;
		memcpy(name, s, len);
		name[len] = 0;
		if (!strchr(name, '!') && methods_add(m, id++, "/bin/prog",
						      name, 0))
			fuzz_fail("regex: out of memory adding a name");
		if (!nl)
			break;
		n -= (size_t)(nl - s) + 1;
		s = nl + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool both = fuzz_take(&data, &size) & 1;
	const char *in = (const char *)data, *nl = memchr(in, '\n', size);
	size_t plen = nl ? (size_t)(nl - in) : size;
	struct methods m = { 0 };
	struct bfp_config c;
	char *pattern, err[256] = "";
	bool was[256] = { 0 };
	uint32_t i;
	int r;

	pattern = strndup(in, plen);
	if (!pattern || strlen(pattern) != plen) {
		free(pattern);
		return 0;	/* a NUL: the decoders refuse those */
	}
	bfp_config_init(&c);
	if (bfp_strlist_add(&c.exclusions, pattern) ||
	    (both && bfp_strlist_add(&c.inclusions, pattern)))
		fuzz_fail("regex: out of memory");
	if (nl)
		add_names(&m, nl + 1, size - plen - 1);
	r = methods_set_filter(&m, &c, err, sizeof(err));
	if (r && !err[0])
		fuzz_fail("regex: refused without a reason");
	for (i = 0; i < m.cap; i++) {
		struct method *me = &m.v[i];

		if (me->used && me->excluded && (r || both))
			fuzz_fail("regex: \"%s\" excluded by %s", me->sig,
				  r ? "a refused configuration" :
				      "a pattern that is also an inclusion");
		was[i] = me->excluded;
	}
	/* matching is deterministic, limits included */
	if (!r && methods_set_filter(&m, &c, err, sizeof(err)))
		fuzz_fail("regex: compiles once, not twice: %s", err);
	for (i = 0; i < m.cap; i++)
		if (m.v[i].used && m.v[i].excluded != was[i])
			fuzz_fail("regex: \"%s\" decided otherwise the second "
				  "time", m.v[i].sig);
	methods_free(&m);
	bfp_config_free(&c);
	free(pattern);
	return 0;
}
