// SPDX-License-Identifier: GPL-2.0
/*
 * bft_demangle: C++ symbol names as people write them, through
 * libiberty's demangler.  See bft_demangle.h.
 */
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "symbols/bft_demangle.h"

char *bft_demangle(const char *name)
{
	/*
	 * Only "_Z" names: with the automatic style, libiberty would also try
	 * other schemes (e.g. Rust legacy, D) on names that merely look
	 * mangled, and a C symbol must keep its own name.
	 */
	if (!name || strncmp(name, "_Z", 2) != 0)
		return NULL;
	/* "ns::twice<int>(int)", not "int ns::twice<int>(int)": a template's
	 * return type would make every 'ns::*' pattern miss it. */
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_RET_DROP);
}

char *bft_demangle_type(const char *name)
{
	char *s;

	if (!name)
		return NULL;
	if (*name == '*')
		name++;
	s = *name ? cplus_demangle_v3(name, DMGL_PARAMS | DMGL_ANSI |
					    DMGL_TYPES) : NULL;
	return s ? s : strdup(name);
}
