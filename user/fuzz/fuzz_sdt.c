// SPDX-License-Identifier: GPL-2.0
/*
 * USDT notes and their argument text (bft_sdt), as a traced program's
 * file brings them.  Input: a selector byte, then either an argument's
 * text (even selector) or an ELF file (odd).  Properties: a parsed
 * argument has a size of 1, 2, 4 or 8 and registers a handler can read,
 * and evaluates without a fault; every usable probe of a file has its
 * site inside the file, named, with at most 12 such arguments.
 */
#include <errno.h>
#include <string.h>

#include "symbols/bft_sdt.h"
#include "fuzz.h"

static int zero_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	(void)addr;
	memset(buf, 0, len);
	return 0;
}

static bool readable(uint8_t r)
{
	return r < BFT_SDT_NREGS || r == BFT_SDT_NOREG || r == BFT_SDT_BIAS;
}

static void check_arg(const struct bft_sdt_arg *a, const char *what)
{
	uint64_t regs[BFT_SDT_NREGS] = { 0 }, v;

	if (a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
		fuzz_fail("%s: size %u", what, a->size);
	if (!readable(a->base) || !readable(a->index) || a->shift > 8 ||
	    (a->scale != 1 && a->scale != 2 && a->scale != 4 && a->scale != 8))
		fuzz_fail("%s: a register, shift or scale no handler can use", what);
	if (bft_sdt_eval(a, regs, 0, zero_read, NULL, &v))
		fuzz_fail("%s: does not evaluate", what);
}

static int no_symbols(void *ctx, const char *sym, uint64_t *addr)
{
	(void)ctx;
	(void)sym;
	(void)addr;
	return -ENOENT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sel = fuzz_take(&data, &size);
	struct bft_sdt_list l;
	struct bft_sdt_arg a;
	char err[256], text[512];

	if (!(sel & 1)) {
		size = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
		memcpy(text, data, size);
		text[size] = 0;
		if (!bft_sdt_parse_arg(text, &a, no_symbols, NULL, err, sizeof(err)))
			check_arg(&a, text);
		else if (!err[0])
			fuzz_fail("'%s' refused without a reason", text);
		return 0;
	}
	if (bft_sdt_read_mem("fuzz.elf", data, size, &l, err, sizeof(err))) {
		if (!err[0])
			fuzz_fail("a file refused without a reason");
		return 0;
	}
	for (size_t i = 0; i < l.n; i++) {
		const struct bft_sdt_probe *p = &l.v[i];

		if (!p->provider[0] || !p->name[0])
			fuzz_fail("probe %zu without a provider or a name", i);
		if (p->why[0])
			continue;
		if (p->offset >= size)
			fuzz_fail("%s:%s: site offset %llu past the %zu-byte file", p->provider,
				  p->name, (unsigned long long)p->offset, size);
		if (p->nargs > BFT_SDT_MAX_ARGS)
			fuzz_fail("%s:%s: %zu arguments", p->provider, p->name, p->nargs);
		for (size_t j = 0; j < p->nargs; j++)
			check_arg(&p->args[j], p->name);
	}
	bft_sdt_free(&l);
	return 0;
}
