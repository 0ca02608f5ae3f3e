// SPDX-License-Identifier: GPL-2.0
/*
 * bft_shortname(), which bfhq will apply to method names agents send.
 * Input: a selector byte (the output capacity, 1..256), then the name.
 * Properties: the returned length is the output's and fits the capacity;
 * a second call gives the same bytes; a name with no bracket and no
 * std:: inline namespace comes back unchanged (up to the capacity).
 */
#include <string.h>

#include "model/bft_shortname.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cap = (size_t)fuzz_take(&data, &size) + 1, n;
	char name[4096], a[257], b[257];

	if (size >= sizeof(name))
		size = sizeof(name) - 1;
	memcpy(name, data, size);
	name[size] = 0;
	n = bft_shortname(name, a, cap);
	if (n != strlen(a) || n >= cap)
		fuzz_fail("length %zu, output %zu, capacity %zu", n, strlen(a),
			  cap);
	if (bft_shortname(name, b, cap) != n || strcmp(a, b))
		fuzz_fail("two calls differ: '%s' '%s'", a, b);
	if (!strpbrk(name, "<>()[]{}") && !strstr(name, "std::__") &&
	    strncmp(a, name, n))
		fuzz_fail("plain name changed: '%s' -> '%s'", name, a);
	return 0;
}
