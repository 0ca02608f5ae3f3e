// SPDX-License-Identifier: GPL-2.0
/*
 * The method table: id -> signature "<object basename>!<function>", which
 * is what MapMethodSignature carries and what the configuration's regexes
 * are matched against (Java's lookingAt(): a match that starts at the
 * first character; patterns.c).  An inclusion match overrides an
 * exclusion (notes §3).
 *
 * File format (--methods), one line each, tab-separated, '#' comments:
 *     <id> <path> <function> [<offset> [<flags>]]
 *                                         a probe; flags BFT_PF_* (default
 *                                         BFT_PF_ALL) for every process
 *     ignored <path>                      an object that matched nothing
 *     failed <path>                       an object whose probes failed
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"

static int grow(struct methods *m)
{
	uint32_t cap = m->cap ? 2 * m->cap : 256, i, s;
	struct method *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++) {
		if (!m->v[i].used)
			continue;
		for (s = methods_slot(m->v[i].id, cap); v[s].used;
		     s = (s + 1) & (cap - 1))
			;
		v[s] = m->v[i];
	}
	free(m->v);
	m->v = v;
	m->cap = cap;
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static void decide(struct methods *m, struct method *me)
{
	me->excluded = patterns_match(&m->excl, me->sig) &&
		       !patterns_match(&m->incl, me->sig);
}

int methods_add(struct methods *m, uint32_t id, const char *path,
		const char *name, uint64_t offset)
{
	struct method *me = methods_get(m, id);
	char buf[4096 + 512 + 32];
	uint32_t s;

	/* bfctl names methods "object!symbol" already; bare names get one */
	if (name && strchr(name, '!'))
		snprintf(buf, sizeof(buf), "%s", name);
	else if (name && *name)
		snprintf(buf, sizeof(buf), "%s!%s", base_name(path), name);
	else
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base_name(path),
			 offset);
	if (me && me->sig && !strcmp(me->sig, buf))
		return 0;
	if (me && me->sig)
		m->renames++;
	if (!me) {
		if ((m->count + 1) * 2 > m->cap && grow(m))
			return -ENOMEM;
		for (s = methods_slot(id, m->cap); m->v[s].used;
		     s = (s + 1) & (m->cap - 1))
			;
		me = &m->v[s];
		me->used = true;
		me->id = id;
		m->count++;
	}
	free(me->sig);
	free(me->path);
	me->sig = strdup(buf);
	me->path = strdup(path);
	me->known = true;
	/* HQ must hear the new signature */
	me->mapped.conns = 0;
	me->twin_mapped.conns = 0;
	if (!me->sig || !me->path)
		return -ENOMEM;
	decide(m, me);
	return 0;
}

int method_set_flags(struct method *me, uint32_t tgid, uint32_t flags)
{
	bool noret = (flags & BFT_PF_ENTRY) && !(flags & BFT_PF_RETURN);
	uint32_t i, *v;

	if (!tgid) {
		me->noret_all = noret;
		return 0;
	}
	for (i = 0; i < me->n_noret && me->noret_tgids[i] != tgid; i++)
		;
	if (i < me->n_noret) {
		/* a retired probe's word does not undo a live one's */
		if (!noret && !(flags & BFT_PF_GONE))
			me->noret_tgids[i] = me->noret_tgids[--me->n_noret];
		return 0;
	}
	if (!noret)
		return 0;
	v = realloc(me->noret_tgids, (me->n_noret + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	me->noret_tgids = v;
	v[me->n_noret++] = tgid;
	return 0;
}

bool methods_object(struct methods *m, const char *path, uint8_t kind)
{
	struct object *v;
	uint32_t i;

	for (i = 0; i < m->nobjects; i++)
		if (!strcmp(m->objects[i].path, path)) {
			if (m->objects[i].kind == kind)
				return false;
			m->objects[i].kind = kind;
			return true;
		}
	v = realloc(m->objects, (m->nobjects + 1) * sizeof(*v));
	if (!v)
		return false;
	m->objects = v;
	m->objects[m->nobjects].path = strdup(path);
	m->objects[m->nobjects].kind = kind;
	if (!m->objects[m->nobjects].path)
		return false;
	m->nobjects++;
	return true;
}

/*
 * The new patterns replace the old ones only if all of them compile
 * (patterns.c says what is refused); the caller refuses the configuration
 * otherwise.
 */
int methods_set_filter(struct methods *m, const struct bfp_config *c,
		       char *err, size_t errlen)
{
	struct patterns incl, excl;
	size_t compiled = 0;
	uint32_t i;
	int ret;

	ret = patterns_compile(&incl, &c->inclusions, "inclusion", &compiled,
			       err, errlen);
	if (ret)
		return ret;
	ret = patterns_compile(&excl, &c->exclusions, "exclusion", &compiled,
			       err, errlen);
	if (ret) {
		patterns_free(&incl);
		return ret;
	}
	patterns_free(&m->incl);
	patterns_free(&m->excl);
	m->incl = incl;
	m->excl = excl;
	for (i = 0; i < m->cap; i++)
		if (m->v[i].used && m->v[i].sig)
			decide(m, &m->v[i]);
	return 0;
}

int methods_load_file(struct methods *m, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	unsigned int lineno = 0;
	int err = 0;

	if (!f) {
		coll_log("cannot read the method table %s: %s", path,
			 strerror(errno));
		return -errno;
	}
	while (getline(&line, &cap, f) > 0) {
		char *fields[5] = { 0 }, *save = NULL, *tok;
		unsigned int n = 0;

		lineno++;
		line[strcspn(line, "\r\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		for (tok = strtok_r(line, "\t", &save); tok && n < 5;
		     tok = strtok_r(NULL, "\t", &save))
			fields[n++] = tok;
		if (n == 2 && (!strcmp(fields[0], "ignored") ||
			       !strcmp(fields[0], "failed"))) {
			methods_object(m, fields[1], fields[0][0] == 'i' ?
					  BFP_CLASS_IGNORED : BFP_CLASS_FAILED);
			continue;
		}
		if (n >= 3) {
			char *end;
			unsigned long long id = strtoull(fields[0], &end, 10);
			unsigned long long off = n >= 4 ?
				strtoull(fields[3], NULL, 0) : 0;
			unsigned long flags = n == 5 ?
				strtoul(fields[4], NULL, 0) : BFT_PF_ALL;

			if (!*end && end != fields[0] && id <= UINT32_MAX) {
				err = methods_add(m, (uint32_t)id, fields[1],
						  fields[2], off) ?:
				      method_set_flags(methods_get(m, (uint32_t)id),
						       0, (uint32_t)flags);
				if (err)
					break;
				methods_object(m, fields[1],
					       BFP_CLASS_TRANSFORMED);
				continue;
			}
		}
		coll_log("%s:%u: expected \"<id>\\t<path>\\t<function>"
			 "[\\t<offset>[\\t<flags>]]\", "
			 "\"ignored\\t<path>\" or \"failed\\t<path>\"", path,
			 lineno);
		err = -EINVAL;
		break;
	}
	free(line);
	fclose(f);
	return err;
}

void methods_forget(struct methods *m)
{
	uint32_t i;

	for (i = 0; i < m->cap; i++) {
		free(m->v[i].sig);
		free(m->v[i].path);
		free(m->v[i].noret_tgids);
	}
	if (m->cap)
		memset(m->v, 0, m->cap * sizeof(*m->v));
	m->count = 0;
	m->renames++;
}

void methods_free(struct methods *m)
{
	uint32_t i;

	for (i = 0; i < m->cap; i++) {
		free(m->v[i].sig);
		free(m->v[i].path);
		free(m->v[i].noret_tgids);
	}
	free(m->v);
	for (i = 0; i < m->nobjects; i++)
		free(m->objects[i].path);
	free(m->objects);
	patterns_free(&m->incl);
	patterns_free(&m->excl);
	memset(m, 0, sizeof(*m));
}
