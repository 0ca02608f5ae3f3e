// SPDX-License-Identifier: GPL-2.0
/*
 * The table of interned strings (intern.h): FNV-1a, open addressing at
 * most half full, so a lookup per event stays a probe or two.
 */
#include <stdlib.h>
#include <string.h>

#include "intern.h"

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static int grow(struct intern *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256, i;
	struct intern_slot *v = calloc(cap, sizeof(*v));

	if (!v)
		return -1;
	for (i = 0; i < t->cap; i++) {
		size_t k;

		if (!t->v[i].s)
			continue;
		for (k = hash(t->v[i].s) & (cap - 1); v[k].s;
		     k = (k + 1) & (cap - 1))
			;
		v[k] = t->v[i];
	}
	free(t->v);
	t->v = v;
	t->cap = cap;
	return 0;
}

uint64_t intern_id(struct intern *t, const char *s, bool *fresh)
{
	size_t k;

	*fresh = false;
	if (t->count * 2 >= t->cap && grow(t))
		return 0;
	for (k = hash(s) & (t->cap - 1); t->v[k].s; k = (k + 1) & (t->cap - 1))
		if (!strcmp(t->v[k].s, s))
			return t->v[k].id;
	t->v[k].s = strdup(s);
	if (!t->v[k].s)
		return 0;
	*fresh = true;
	t->v[k].id = ++t->count;
	return t->v[k].id;
}

const char **intern_by_id(const struct intern *t)
{
	const char **v = calloc(t->count ? t->count : 1, sizeof(*v));
	size_t i;

	if (!v)
		return NULL;
	for (i = 0; i < t->cap; i++)
		if (t->v[i].s)
			v[t->v[i].id - 1] = t->v[i].s;
	return v;
}

void intern_free(struct intern *t)
{
	size_t i;

	for (i = 0; i < t->cap; i++)
		free(t->v[i].s);
	free(t->v);
	t->v = NULL;
	t->cap = t->count = 0;
}
