// SPDX-License-Identifier: GPL-2.0
/*
 * The exception types HQ is told about (MapException).
 *
 * A Bytefrog exception id is the kernel's type id (BFT_CMD_GET_EXCEPTIONS,
 * from 1), or one of three fixed ids the kernel never gives: the unknown
 * type (0), a forced unwind and a longjmp.  Names are shown as C++ writes
 * them (bft_demangle_type).  The kernel numbers types anew after a start,
 * so an id whose name changes is mapped again before its next use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/bft_demangle.h"
#include "collector.h"

static int exc_put(struct exc_types *x, uint32_t id, char *name)
{
	struct exc_type *e = exc_types_get(x, id);

	if (e) {
		if (!strcmp(e->name, name)) {
			free(name);
			return 0;
		}
		free(e->name);
		e->name = name;
		e->mapped.conns = 0;	/* renamed: HQ must hear the new name */
		return 0;
	}
	if (x->n == x->cap) {
		uint32_t cap = x->cap ? 2 * x->cap : 16;
		struct exc_type *v = realloc(x->v, cap * sizeof(*v));

		if (!v) {
			free(name);
			return -ENOMEM;
		}
		x->v = v;
		x->cap = cap;
	}
	x->v[x->n++] = (struct exc_type){ .id = id, .name = name };
	x->last = x->n;
	return 0;
}

int exc_types_init(struct exc_types *x)
{
	static const struct { uint32_t id; const char *name; } fixed[] = {
		{ COLL_EXC_UNKNOWN, "unknown exception" },
		{ COLL_EXC_FORCED, "abi::__forced_unwind" },
		{ COLL_EXC_LONGJMP, "longjmp" },
	};
	size_t i;

	memset(x, 0, sizeof(*x));
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		char *name = strdup(fixed[i].name);

		if (!name || exc_put(x, fixed[i].id, name))
			return -ENOMEM;
	}
	return 0;
}

int exc_types_add(struct exc_types *x, uint32_t id, const char *mangled)
{
	char *name;

	/* the fixed ids are ours: a kernel id never takes one over */
	if (id == COLL_EXC_UNKNOWN || id >= COLL_EXC_LONGJMP)
		return -EINVAL;
	name = bft_demangle_type(mangled);
	return name ? exc_put(x, id, name) : -ENOMEM;
}

struct exc_type *exc_types_get(struct exc_types *x, uint32_t id)
{
	uint32_t i;

	/* a thread throws the same few types: the last one found first */
	if (x->last && x->v[x->last - 1].id == id)
		return &x->v[x->last - 1];
	for (i = 0; i < x->n; i++)
		if (x->v[i].id == id) {
			x->last = i + 1;
			return &x->v[i];
		}
	return NULL;
}

int exc_types_load_file(struct exc_types *x, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[BFT_EXC_NAME_MAX + 32];
	unsigned int lineno = 0;
	int err = 0;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (!err && fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t'), *end;
		unsigned long id;

		lineno++;
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		errno = 0;
		id = strtoul(line, &end, 10);
		if (!tab || end != tab || errno || id > UINT32_MAX ||
		    !tab[1] || exc_types_add(x, (uint32_t)id, tab + 1)) {
			coll_log("%s:%u: not \"id<TAB>type name\" with an id "
				 "from 1 to %u", path, lineno,
				 COLL_EXC_LONGJMP - 1);
			err = -EINVAL;
		}
	}
	fclose(f);
	return err;
}

void exc_types_forget(struct exc_types *x)
{
	uint32_t i, n = 0;

	for (i = 0; i < x->n; i++) {
		if (x->v[i].id == COLL_EXC_UNKNOWN ||
		    x->v[i].id >= COLL_EXC_LONGJMP)
			x->v[n++] = x->v[i];
		else
			free(x->v[i].name);
	}
	x->n = n;
	x->last = 0;
}

void exc_types_free(struct exc_types *x)
{
	uint32_t i;

	for (i = 0; i < x->n; i++)
		free(x->v[i].name);
	free(x->v);
	memset(x, 0, sizeof(*x));
}
