/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Display form of a demangled C++ name: what a person reads in a call
 * tree or a flame graph.  The full name stays the key everywhere else.
 */
#ifndef BFT_SHORTNAME_H
#define BFT_SHORTNAME_H

#include <stddef.h>

/*
 * Rules, in order:
 *  - the function's own parameter list and what follows it (const, &,
 *    noexcept) is dropped: overloads and const/non-const twins share one
 *    display name, which is what a flame graph should merge;
 *  - parentheses that are part of the name stay: operator(), lambdas'
 *    {lambda(int)#1}, (anonymous namespace);
 *  - the inline namespaces std::__cxx11:: and std::__1:: are dropped;
 *  - inside the template arguments of a std:: template, arguments that are
 *    std::allocator<>, std::char_traits<>, std::less<>, std::hash<> or
 *    std::equal_to<> are dropped (the defaults of vector, list, deque,
 *    set, map, unordered_*, basic_string); std::basic_string<char> becomes
 *    std::string and std::basic_string<wchar_t> std::wstring;
 *  - template arguments three levels deep become <...> (F<G<H<...>>>),
 *    and so does
 *    an argument list longer than BFT_SHORTNAME_FOLD characters;
 *  - closing angle brackets are written >> (no space).
 * A name that does not parse (unbalanced brackets, stray operators) comes
 * back unchanged.
 */
#define BFT_SHORTNAME_FOLD 40

/*
 * Writes the display form of name into out (at most cap bytes with the
 * NUL; cap >= 1).  Returns the length written, truncated if it did not fit.
 */
size_t bft_shortname(const char *name, char *out, size_t cap);

#endif
