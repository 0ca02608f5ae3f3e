// SPDX-License-Identifier: GPL-2.0
/*
 * bft_symclass: what a function symbol's name says about how its code is
 * entered and left.  See bft_symclass.h.
 */
#include <ctype.h>
#include <string.h>

#include <linux/bftrace.h>

#include "symbols/bft_symclass.h"

bool bft_sym_is_cold_fragment(const char *raw)
{
	const char *p = raw, *hit = NULL;

	/* The last ".cold" that ends the name or is followed by ".N". */
	while ((p = strstr(p, ".cold"))) {
		hit = p;
		p += 5;
	}
	if (!hit || hit == raw)
		return false;
	hit += 5;
	if (!*hit)
		return true;
	if (*hit++ != '.' || !*hit)
		return false;
	while (isdigit((unsigned char)*hit))
		hit++;
	return !*hit;
}

bool bft_sym_returns_twice(const char *raw)
{
	static const char *const names[] = {
		"setjmp", "sigsetjmp", "qsetjmp", "savectx", "vfork",
		"getcontext", "swapcontext", "libc_vfork",
	};

	/* gcc strips up to two leading underscores before it compares */
	for (int i = 0; i < 2 && *raw == '_'; i++)
		raw++;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(raw, names[i]))
			return true;
	return false;
}

static const struct {
	const char *name;
	uint32_t hook;
} hooks[] = {
	{ "_Unwind_RaiseException", BFT_PF_HOOK_UNWIND },
	{ "_Unwind_Resume", BFT_PF_HOOK_UNWIND },
	{ "_Unwind_Resume_or_Rethrow", BFT_PF_HOOK_UNWIND },
	{ "_Unwind_ForcedUnwind", BFT_PF_HOOK_FORCED },
	{ "__cxa_begin_catch", BFT_PF_HOOK_CATCH },
	{ "__cxa_throw", BFT_PF_HOOK_THROW },
	{ "__cxa_rethrow", BFT_PF_HOOK_RETHROW },
	{ "longjmp", BFT_PF_HOOK_LONGJMP },
	{ "_longjmp", BFT_PF_HOOK_LONGJMP },
	{ "siglongjmp", BFT_PF_HOOK_LONGJMP },
	{ "__longjmp_chk", BFT_PF_HOOK_LONGJMP },
	{ "__libc_siglongjmp", BFT_PF_HOOK_LONGJMP },
	{ "__libc_longjmp", BFT_PF_HOOK_LONGJMP },
	{ "__call_tls_dtors", BFT_PF_HOOK_EXIT },
};

#define NHOOKS (sizeof(hooks) / sizeof(hooks[0]))

uint32_t bft_sym_hook(const char *raw)
{
	for (size_t i = 0; i < NHOOKS; i++)
		if (!strcmp(raw, hooks[i].name))
			return hooks[i].hook;
	return 0;
}

const char *const *bft_sym_hook_names(void)
{
	static const char *names[NHOOKS + 1];

	if (!names[0])
		for (size_t i = 0; i < NHOOKS; i++)
			names[i] = hooks[i].name;
	return names;
}

const char *bft_hook_name(uint32_t flags)
{
	switch (flags & BFT_PF_HOOKS) {
	case BFT_PF_HOOK_UNWIND:
		return "unwind";
	case BFT_PF_HOOK_CATCH:
		return "catch";
	case BFT_PF_HOOK_THROW:
		return "throw";
	case BFT_PF_HOOK_RETHROW:
		return "rethrow";
	case BFT_PF_HOOK_FORCED:
		return "forced";
	case BFT_PF_HOOK_LONGJMP:
		return "longjmp";
	case BFT_PF_HOOK_EXIT:
		return "exit";
	default:
		return NULL;
	}
}
