/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_demangle: C++ symbol names as people write them.
 *
 * Patterns are matched against the demangled form ("ns::Class::method(int)")
 * so that users never have to spell an Itanium-ABI name.  The demangler is
 * libiberty's, the one binutils and gdb use (Debian: libiberty-dev).
 *
 * Link with -liberty.
 */
#ifndef BFT_DEMANGLE_H
#define BFT_DEMANGLE_H

/*
 * The demangled form of an Itanium C++ ABI name ("_Z..."), with parameter
 * types and without a template function's return type, malloc'ed; NULL if name is not such a name, cannot be demangled,
 * or memory ran out.  Plain C names are never touched.
 */
char *bft_demangle(const char *name);

/*
 * A C++ type's name as std::type_info::name() gives it (mangled without
 * "_Z": "St13runtime_error"), as people write it ("std::runtime_error"),
 * malloc'ed.  GCC's '*' mark of a type with internal linkage is dropped.
 * A name that is no mangled type is returned as it is.  NULL only if name
 * is NULL or memory ran out.
 */
char *bft_demangle_type(const char *name);

#endif /* BFT_DEMANGLE_H */
