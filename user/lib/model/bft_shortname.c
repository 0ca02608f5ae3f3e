// SPDX-License-Identifier: GPL-2.0
/*
 * Owns the display form of demangled C++ names (see bft_shortname.h for
 * the rules).  Names come from agents that may be hostile, so the parser
 * is bounded: every index is checked against the length, recursion is
 * capped, and anything it does not understand is returned as it came.
 */
#include "model/bft_shortname.h"

#include <stdbool.h>
#include <string.h>

#define MAX_DEPTH 64

struct sbuf {
	char *p;
	size_t len, cap;
	bool full;
};

static void put(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n >= b->cap) {
		b->full = true;
		n = b->cap - 1 - b->len;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '$';
}

static bool starts(const char *s, size_t n, const char *lit)
{
	size_t l = strlen(lit);

	return n >= l && !memcmp(s, lit, l);
}

/*
 * If s[0..n) starts with "operator" followed by a symbol, returns the
 * length of "operator<sym>" so that its <, >, ( and ) are not brackets.
 */
static size_t operator_len(const char *s, size_t n)
{
	static const char *const ops[] = {
		"<=>", "<<=", ">>=", "<<", ">>", "<=", ">=", "->*", "->",
		"()", "[]", "<", ">", NULL,
	};
	size_t k = 8;

	if (!starts(s, n, "operator") || (n > k && is_ident(s[k])))
		return 0;
	for (int i = 0; ops[i]; i++)
		if (starts(s + k, n - k, ops[i]))
			return k + strlen(ops[i]);
	return k;
}

/* operator_len() at s[i], where an identifier may start. */
static size_t operator_at(const char *s, size_t n, size_t i)
{
	return i == 0 || !is_ident(s[i - 1]) ? operator_len(s + i, n - i) : 0;
}

static char closer(char c)
{
	return c == '<' ? '>' : c == '(' ? ')' : c == '[' ? ']' :
	       c == '{' ? '}' : 0;
}

/*
 * Length of the bracketed group opening at s[0], or 0 if unbalanced.
 * Operators inside (operator< in a lambda's name) are skipped whole.
 */
static size_t group_len(const char *s, size_t n, int depth)
{
	char want = closer(s[0]);
	size_t i = 1;

	if (depth > MAX_DEPTH)
		return 0;
	while (i < n) {
		size_t op = operator_at(s, n, i);
		size_t g;

		if (op) {
			i += op;
			continue;
		}
		if (s[i] == want)
			return i + 1;
		if (closer(s[i])) {
			g = group_len(s + i, n - i, depth + 1);
			if (!g)
				return 0;
			i += g;
			continue;
		}
		if (s[i] == ')' || s[i] == '>' || s[i] == ']' || s[i] == '}')
			return 0;
		i++;
	}
	return 0;
}

static bool simplify(struct sbuf *b, const char *s, size_t n, int depth);

static bool is_default_arg(const char *s, size_t n)
{
	static const char *const dflt[] = {
		"allocator<", "char_traits<", "less<", "hash<", "equal_to<",
		NULL,
	};

	if (!starts(s, n, "std::") || s[n - 1] != '>')
		return false;
	s += 5, n -= 5;
	if (starts(s, n, "__1::"))
		s += 5, n -= 5;
	else if (starts(s, n, "__cxx11::"))
		s += 9, n -= 9;
	for (int i = 0; dflt[i]; i++)
		if (starts(s, n, dflt[i]))
			return true;
	return false;
}

/* Template argument list s[0..n), brackets included; tmpl is its owner. */
static bool template_args(struct sbuf *b, const char *s, size_t n,
			  bool std_owner, int depth)
{
	char tmp[1024];
	struct sbuf args = { .p = tmp, .cap = sizeof(tmp) };
	size_t i = 1, start = 1;
	bool first = true;

	tmp[0] = 0;
	if (depth >= 2) {
		put(b, "<...>", 5);
		return true;
	}
	while (i < n) {
		if (s[i] == ',' || i == n - 1) {
			const char *a = s + start;
			size_t al = i - start;

			while (al && *a == ' ')
				a++, al--;
			while (al && a[al - 1] == ' ')
				al--;
			if (al && !(std_owner && is_default_arg(a, al))) {
				if (!first)
					put(&args, ", ", 2);
				if (!simplify(&args, a, al, depth + 1))
					return false;
				first = false;
			}
			start = ++i;
			continue;
		}
		if (closer(s[i])) {
			size_t g = group_len(s + i, n - 1 - i, depth);

			if (!g)
				return false;
			i += g;
			continue;
		}
		i++;
	}
	if (args.full || args.len > BFT_SHORTNAME_FOLD)
		put(b, "<...>", 5);
	else {
		put(b, "<", 1);
		put(b, tmp, args.len);
		put(b, ">", 1);
	}
	return true;
}

/* Copies s[0..n) simplified; false if it does not parse. */
static bool simplify(struct sbuf *b, const char *s, size_t n, int depth)
{
	size_t i = 0, word = 0;

	if (depth > MAX_DEPTH)
		return false;
	while (i < n) {
		size_t op = operator_at(s, n, i);
		size_t g;

		if (op) {
			put(b, s + i, op);
			i += op;
			word = i;
			continue;
		}
		if (starts(s + i, n - i, "std::__cxx11::") ||
		    starts(s + i, n - i, "std::__1::")) {
			put(b, "std::", 5);
			i += s[i + 5] == '_' && s[i + 6] == '_' &&
			     s[i + 7] == 'c' ? 14 : 10;
			continue;
		}
		if (s[i] == ')' || s[i] == '>' || s[i] == ']' || s[i] == '}')
			return false;
		if (!closer(s[i])) {
			if (!is_ident(s[i]) && s[i] != ':')
				word = i + 1;
			put(b, s + i, 1);
			i++;
			continue;
		}
		g = group_len(s + i, n - i, depth);
		if (!g)
			return false;
		if (s[i] == '<') {
			size_t mark = b->len;
			bool std_owner = starts(s + word, n - word, "std::");

			if (!template_args(b, s + i, g, std_owner, depth))
				return false;
			/* the aliases, once the defaults are gone */
			if (std_owner && mark >= 17 &&
			    !memcmp(b->p + mark - 17, "std::basic_string", 17)) {
				{
					if (!strcmp(b->p + mark, "<char>")) {
						b->len = mark - 17;
						put(b, "std::string", 11);
					} else if (!strcmp(b->p + mark, "<wchar_t>")) {
						b->len = mark - 17;
						put(b, "std::wstring", 12);
					}
				}
			}
		} else {
			put(b, s + i, g);
		}
		i += g;
	}
	return true;
}

/* Where the function's own parameter list starts, or n if it has none. */
static size_t params_at(const char *s, size_t n)
{
	size_t i = 0, last = n;

	while (i < n) {
		size_t op = operator_at(s, n, i);
		size_t g;

		if (op) {
			i += op;
			continue;
		}
		if (!closer(s[i])) {
			i++;
			continue;
		}
		g = group_len(s + i, n - i, 0);
		if (!g)
			return n;
		if (s[i] == '(') {
			size_t j = i + g;

			/* only qualifiers may follow the parameter list */
			while (j < n && (s[j] == ' ' || s[j] == '&' ||
					 is_ident(s[j])))
				j++;
			if (j == n && i > 0 && s[i - 1] != ' ') {
				last = i;
				break;
			}
		}
		i += g;
	}
	return last;
}

size_t bft_shortname(const char *name, char *out, size_t cap)
{
	struct sbuf b = { .p = out, .cap = cap };
	size_t n = strlen(name);

	out[0] = 0;
	if (simplify(&b, name, params_at(name, n), 0) && b.len)
		return b.len;
	b.len = 0;
	b.full = false;
	out[0] = 0;
	put(&b, name, n);
	return b.len;
}
