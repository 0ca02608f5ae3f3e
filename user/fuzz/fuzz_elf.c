// SPDX-License-Identifier: GPL-2.0
/*
 * The ELF resolver (bft_resolve) on malformed files, from memory.
 * Property: every function it reports lies in the file, inside an
 * executable segment's file image, with at least one name.
 */
#include <errno.h>

#include "symbols/bft_resolve.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bft_object o;
	char err[256];
	size_t i;
	int r = bft_object_load_mem(&o, "fuzz.elf", data, size, NULL, err,
				    sizeof(err));

	if (r) {
		if (r != -ENOEXEC && r != -ENOMEM && r != -EINVAL)
			fuzz_fail("elf: error %d: %s", r, err);
		return 0;
	}
	for (i = 0; i < o.nfuncs; i++) {
		const struct bft_func *f = &o.funcs[i];

		if (!f->nnames || !f->names[0].raw)
			fuzz_fail("elf: a function without a name");
		if (f->offset > size || f->size > size - f->offset)
			fuzz_fail("elf: %s at offset %llu size %llu is not "
				  "in the %zu-byte file", f->names[0].raw,
				  (unsigned long long)f->offset,
				  (unsigned long long)f->size, size);
	}
	bft_object_free(&o);
	return 0;
}
