// SPDX-License-Identifier: GPL-2.0
/*
 * bft_pattern: the [!][OBJECT:]SYMBOL patterns users give, parsed and
 * matched against objects and function names.  See bft_pattern.h.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/bft_pattern.h"

/* The first ':' that is not half of a "::", or NULL. */
static const char *scope_colon(const char *s)
{
	for (const char *c = strchr(s, ':'); c; c = strchr(c + 1, ':')) {
		if (c[1] == ':') {
			c++;
			continue;
		}
		if (c > s && c[-1] == ':')
			continue;
		return c;
	}
	return NULL;
}

static int pattern_parse(struct bft_pattern *p, const char *text, bool regex,
			 char *err, size_t errlen)
{
	const char *s = text, *colon;
	int rc;

	p->text = text;
	if (*s == '!') {
		p->exclude = true;
		s++;
	}
	colon = scope_colon(s);
	if (colon) {
		if (colon == s) {
			snprintf(err, errlen, "pattern '%s': empty object before ':'", text);
			return -EINVAL;
		}
		p->object = strndup(s, (size_t)(colon - s));
		if (!p->object)
			return -ENOMEM;
		p->object_path = strchr(p->object, '/') != NULL;
		s = colon + 1;
	}
	if (!*s) {
		snprintf(err, errlen, "pattern '%s': empty symbol pattern", text);
		return -EINVAL;
	}
	p->symbol = strdup(s);
	if (!p->symbol)
		return -ENOMEM;
	if (regex) {
		rc = regcomp(&p->re, p->symbol, REG_EXTENDED | REG_NOSUB);
		if (rc) {
			char why[128];

			regerror(rc, &p->re, why, sizeof(why));
			regfree(&p->re);
			snprintf(err, errlen, "pattern '%s': bad regex '%s': %s",
				 text, p->symbol, why);
			return -EINVAL;
		}
		p->is_regex = true;
	}
	return 0;
}

static void pattern_free(struct bft_pattern *p)
{
	if (p->is_regex)
		regfree(&p->re);
	free(p->object);
	free(p->symbol);
}

void bft_patterns_free(struct bft_patterns *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		pattern_free(&ps->p[i]);
	free(ps->p);
	memset(ps, 0, sizeof(*ps));
}

int bft_patterns_init(struct bft_patterns *ps, const char *const *texts,
		      size_t n, bool regex, char *err, size_t errlen)
{
	int rc;

	memset(ps, 0, sizeof(*ps));
	if (!n) {
		snprintf(err, errlen, "no pattern given");
		return -EINVAL;
	}
	ps->p = calloc(n, sizeof(*ps->p));
	if (!ps->p) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (!texts[i] || !texts[i][0] ||
		    (texts[i][0] == '!' && !texts[i][1])) {
			snprintf(err, errlen, "empty pattern");
			rc = -EINVAL;
			goto fail;
		}
		rc = pattern_parse(&ps->p[i], texts[i], regex, err, errlen);
		ps->n = i + 1;
		if (rc) {
			if (rc == -ENOMEM)
				snprintf(err, errlen, "out of memory");
			goto fail;
		}
		if (!ps->p[i].exclude)
			ps->n_include++;
	}
	if (!ps->n_include) {
		snprintf(err, errlen,
			 "only exclusions given: add a pattern that includes functions");
		rc = -EINVAL;
		goto fail;
	}
	return 0;
fail:
	bft_patterns_free(ps);
	return rc;
}

bool bft_pattern_in_scope(const struct bft_pattern *p, const char *path)
{
	const char *base;

	if (!p->object)
		return true;
	if (p->object_path)
		return fnmatch(p->object, path, 0) == 0;
	base = strrchr(path, '/');
	return fnmatch(p->object, base ? base + 1 : path, 0) == 0;
}

static bool symbol_match(const struct bft_pattern *p, const char *name)
{
	if (p->is_regex)
		return regexec(&p->re, name, 0, NULL, 0) == 0;
	return fnmatch(p->symbol, name, 0) == 0;
}

bool bft_patterns_scope(const struct bft_patterns *ps, const char *path)
{
	for (size_t i = 0; i < ps->n; i++)
		if (!ps->p[i].exclude && bft_pattern_in_scope(&ps->p[i], path))
			return true;
	return false;
}

static bool any_name(const struct bft_pattern *p, const char *const *names,
		     size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && symbol_match(p, names[i]))
			return true;
	return false;
}

bool bft_patterns_match(const struct bft_patterns *ps, const char *path,
			const char *const *names, size_t n)
{
	bool in = false;

	for (size_t i = 0; i < ps->n && !in; i++) {
		const struct bft_pattern *p = &ps->p[i];

		in = !p->exclude && bft_pattern_in_scope(p, path) && any_name(p, names, n);
	}
	if (!in)
		return false;
	for (size_t i = 0; i < ps->n; i++) {
		const struct bft_pattern *p = &ps->p[i];

		if (p->exclude && bft_pattern_in_scope(p, path) && any_name(p, names, n))
			return false;
	}
	return true;
}
