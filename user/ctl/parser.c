// SPDX-License-Identifier: GPL-2.0
/*
 * bfctl's table-driven command-line parser: each command's option rows
 * in, values in their destinations or an error naming the option out.
 * See parser.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"

int strlist_push(struct strlist *l, const char *s)
{
	const char **v = realloc(l->v, (l->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	l->v = v;
	l->v[l->n++] = s;
	return 0;
}

void strlist_free(struct strlist *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

int parse_u64(const char *s, bool suffixes, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno)
		return -ERANGE;
	if (suffixes && *end && !end[1]) {
		const char *units = "kmg", *u = strchr(units, *end | 0x20);

		if (u && *u) {
			shift = 10 * (unsigned int)(u - units + 1);
			end++;
		}
	}
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

static const struct arg_def *find_long(const struct arg_def *const *tables,
				       const char *name, size_t len)
{
	for (size_t t = 0; tables[t]; t++)
		for (const struct arg_def *d = tables[t]; d->name; d++)
			if (strlen(d->name) == len && !strncmp(d->name, name, len))
				return d;
	return NULL;
}

static const struct arg_def *find_short(const struct arg_def *const *tables,
					char c)
{
	for (size_t t = 0; tables[t]; t++)
		for (const struct arg_def *d = tables[t]; d->name; d++)
			if (d->short_name == c)
				return d;
	return NULL;
}

static bool takes_value(const struct arg_def *d)
{
	return d->kind == ARG_UINT || d->kind == ARG_STR || d->kind == ARG_LIST;
}

static int apply(const struct arg_def *d, const char *val, char *err,
		 size_t errlen)
{
	uint64_t v, max = d->max ? d->max : UINT64_MAX;
	int rc;

	switch (d->kind) {
	case ARG_FLAG:
		*(bool *)d->dest = true;
		return 0;
	case ARG_COUNT:
		(*(unsigned int *)d->dest)++;
		return 0;
	case ARG_UINT:
		rc = parse_u64(val, false, &v);
		if (rc || v < d->min || v > max) {
			snprintf(err, errlen,
				 "--%s wants a number from %" PRIu64 " to %" PRIu64 ", not '%s'",
				 d->name, d->min, max, val);
			return -EINVAL;
		}
		*(uint64_t *)d->dest = v;
		return 0;
	case ARG_STR:
		*(const char **)d->dest = val;
		return 0;
	case ARG_LIST:
		if (strlist_push(d->dest, val)) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		return 0;
	}
	return -EINVAL;
}

int args_parse(const struct arg_def *const *tables, int argc, char **argv,
	       enum arg_stop stop, struct strlist *pos, bool *dashdash,
	       char *err, size_t errlen)
{
	int i, rc;

	if (dashdash)
		*dashdash = false;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];
		const struct arg_def *d;

		if (!strcmp(a, "--")) {
			if (dashdash)
				*dashdash = true;
			i++;
			break;
		}
		if (a[0] != '-' || !a[1]) {
			if (stop == ARGS_STOP_AT_POSITIONAL)
				break;
			if (strlist_push(pos, a))
				return -ENOMEM;
			continue;
		}
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			const char *val = eq ? eq + 1 : NULL;

			d = find_long(tables, name, len);
			if (!d) {
				snprintf(err, errlen, "unknown option '--%.*s'", (int)len, name);
				return -EINVAL;
			}
			if (!takes_value(d) && val) {
				snprintf(err, errlen, "--%s takes no value", d->name);
				return -EINVAL;
			}
			if (takes_value(d) && !val) {
				if (i + 1 >= argc) {
					snprintf(err, errlen, "--%s needs a value (%s)",
						 d->name, d->meta ? d->meta : "VALUE");
					return -EINVAL;
				}
				val = argv[++i];
			}
			rc = apply(d, val, err, errlen);
			if (rc)
				return rc;
			continue;
		}
		/* one or more short options */
		for (const char *c = a + 1; *c; c++) {
			const char *val = NULL;

			d = find_short(tables, *c);
			if (!d) {
				snprintf(err, errlen, "unknown option '-%c'", *c);
				return -EINVAL;
			}
			if (takes_value(d)) {
				if (c[1])
					val = c + 1;
				else if (i + 1 < argc)
					val = argv[++i];
				else {
					snprintf(err, errlen, "-%c needs a value (%s)", *c,
						 d->meta ? d->meta : "VALUE");
					return -EINVAL;
				}
			}
			rc = apply(d, val, err, errlen);
			if (rc)
				return rc;
			if (val)
				break;
		}
	}
	for (; i < argc; i++)
		if (strlist_push(pos, argv[i]))
			return -ENOMEM;
	return 0;
}

void args_usage(FILE *f, const struct arg_def *defs)
{
	for (const struct arg_def *d = defs; d->name; d++) {
		char left[64];
		int n;

		n = snprintf(left, sizeof(left), "  %c%c%s--%s%s%s",
			     d->short_name ? '-' : ' ',
			     d->short_name ? d->short_name : ' ',
			     d->short_name ? ", " : "  ", d->name,
			     takes_value(d) ? " " : "",
			     takes_value(d) ? (d->meta ? d->meta : "VALUE") : "");
		fprintf(f, "%s%*s%s\n", left, n < 30 ? 30 - n : 1, "", d->help);
	}
}
