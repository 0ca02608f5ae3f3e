// SPDX-License-Identifier: GPL-2.0
/*
 * The configuration's inclusion and exclusion regexes, with PCRE2: HQ
 * writes them for Java's java.util.regex, which PCRE2's dialect covers for
 * what HQs send, and PCRE2 can bound what compiling and matching cost.  HQ
 * is an unauthenticated peer, so every pattern is hostile until compiled
 * within the limits, and every match runs within them.
 *
 * Compiling refuses a pattern that is invalid or past a limit (length,
 * nesting, compiled size of all of them): the caller refuses the whole
 * configuration.  A match that reaches a limit (backtracking steps, depth,
 * heap) counts as no match, and the pattern is disabled for the rest of the
 * configuration: its cost is paid once, not once per name.  No JIT: the
 * interpreter is the one that enforces every limit.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"

/* Shown in messages: a pattern or name is cut to this many bytes. */
#define SHOWN	40

static void refuse(char *err, size_t errlen, const char *what, uint32_t i,
		   const char *text, const char *fmt, ...)
{
	size_t n;
	va_list ap;
	int k;

	k = snprintf(err, errlen, "%s pattern %u \"%.*s%s\": refused: ", what,
		     i + 1, SHOWN, text, strlen(text) > SHOWN ? "..." : "");
	n = k < 0 ? 0 : (size_t)k;
	if (n >= errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - n, fmt, ap);
	va_end(ap);
}

static pcre2_compile_context *compile_context(void)
{
	pcre2_compile_context *cc = pcre2_compile_context_create(NULL);

	if (!cc)
		return NULL;
	pcre2_set_max_pattern_length(cc, COLL_PATTERN_MAX_LEN);
	pcre2_set_parens_nest_limit(cc, COLL_PATTERN_MAX_NEST);
	return cc;
}

int patterns_compile(struct patterns *p, const struct bfp_strlist *l,
		     const char *what, size_t *compiled, char *err,
		     size_t errlen)
{
	pcre2_compile_context *cc = compile_context();
	uint32_t i;
	int ret = 0;

	memset(p, 0, sizeof(*p));
	p->what = what;
	p->v = calloc(l->n + 1, sizeof(*p->v));
	p->mc = pcre2_match_context_create(NULL);
	p->md = pcre2_match_data_create(1, NULL);
	if (!cc || !p->v || !p->mc || !p->md) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	pcre2_set_match_limit(p->mc, COLL_MATCH_LIMIT);
	pcre2_set_depth_limit(p->mc, COLL_MATCH_DEPTH);
	pcre2_set_heap_limit(p->mc, COLL_MATCH_HEAP_KIB);
	for (i = 0; i < l->n; i++) {
		struct pattern *pt = &p->v[i];
		PCRE2_UCHAR msg[120];
		PCRE2_SIZE off;
		size_t size;
		int code;

		/* lookingAt(): a match starts at the name's first byte */
		pt->code = pcre2_compile((PCRE2_SPTR)l->v[i],
					 PCRE2_ZERO_TERMINATED,
					 PCRE2_ANCHORED | PCRE2_UTF |
					 PCRE2_MATCH_INVALID_UTF |
					 PCRE2_NEVER_BACKSLASH_C,
					 &code, &off, cc);
		if (!pt->code) {
			pcre2_get_error_message(code, msg, sizeof(msg));
			refuse(err, errlen, what, i, l->v[i],
			       "%s at offset %zu", (char *)msg, (size_t)off);
			ret = -EPROTO;
			goto out;
		}
		p->n++;
		pcre2_pattern_info(pt->code, PCRE2_INFO_SIZE, &size);
		*compiled += size;
		if (*compiled > COLL_PATTERNS_MAX_COMPILED) {
			refuse(err, errlen, what, i, l->v[i],
			       "the patterns compile to more than %u KiB",
			       COLL_PATTERNS_MAX_COMPILED >> 10);
			ret = -EPROTO;
			goto out;
		}
		pt->text = strdup(l->v[i]);
		if (!pt->text) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out;
		}
	}
out:
	pcre2_compile_context_free(cc);
	if (ret)
		patterns_free(p);
	return ret;
}

static bool match_one(struct patterns *p, struct pattern *pt, const char *s)
{
	int r;

	if (pt->disabled)
		return false;
	r = pcre2_match(pt->code, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0, 0,
			p->md, p->mc);
	if (r >= 0)
		return true;
	if (r == PCRE2_ERROR_NOMATCH)
		return false;
	{
		PCRE2_UCHAR msg[120];

		pcre2_get_error_message(r, msg, sizeof(msg));
		coll_log("%s pattern %u \"%.*s%s\" on \"%.*s%s\": %s: it matches "
			 "nothing from now on", p->what,
			 (unsigned int)(pt - p->v) + 1, SHOWN, pt->text,
			 strlen(pt->text) > SHOWN ? "..." : "", SHOWN, s,
			 strlen(s) > SHOWN ? "..." : "", (char *)msg);
	}
	pt->disabled = true;
	p->disabled++;
	return false;
}

bool patterns_match(struct patterns *p, const char *s)
{
	uint32_t i;

	for (i = 0; i < p->n; i++)
		if (match_one(p, &p->v[i], s))
			return true;
	return false;
}

void patterns_free(struct patterns *p)
{
	uint32_t i;

	for (i = 0; i < p->n; i++) {
		pcre2_code_free(p->v[i].code);
		free(p->v[i].text);
	}
	free(p->v);
	pcre2_match_data_free(p->md);
	pcre2_match_context_free(p->mc);
	memset(p, 0, sizeof(*p));
}
