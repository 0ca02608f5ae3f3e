// SPDX-License-Identifier: GPL-2.0
/*
 * The counters the agent knows (counters.h): their headers, their names
 * ("<sig> calls", "cpu3 lost", "RSS") both ways, and the sample set an
 * inspector asked for.
 */
#include <stdlib.h>
#include <string.h>

#include "counters.h"

const struct cdef counter_defs[K__COUNT] = {
	[K_CALLS] = { BFC_CAT_METHOD, "calls", BFC_TYPE_LONG,
		      BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_EXITS] = { BFC_CAT_METHOD, "exits", BFC_TYPE_LONG,
		      BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_CALL_RATE] = { BFC_CAT_METHOD, "calls/s", BFC_TYPE_DOUBLE,
			  BFC_UNIT_EVENTS, BFC_VAR_VARIABLE },
	[K_RING_USED] = { BFC_CAT_RING, "bytes used", BFC_TYPE_LONG,
			  BFC_UNIT_BYTES, BFC_VAR_VARIABLE },
	[K_RING_RECORDS] = { BFC_CAT_RING, "records", BFC_TYPE_LONG,
			     BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_RING_LOST] = { BFC_CAT_RING, "lost", BFC_TYPE_LONG,
			  BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_RING_READS] = { BFC_CAT_RING, "reads", BFC_TYPE_LONG,
			   BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_EV_IN_RATE] = { BFC_CAT_COLLECTOR, "events in/s", BFC_TYPE_DOUBLE,
			   BFC_UNIT_EVENTS, BFC_VAR_VARIABLE },
	[K_EV_OUT_RATE] = { BFC_CAT_COLLECTOR, "events out/s",
			    BFC_TYPE_DOUBLE, BFC_UNIT_EVENTS,
			    BFC_VAR_VARIABLE },
	[K_HQ_BYTE_RATE] = { BFC_CAT_COLLECTOR, "bytes to HQ/s",
			     BFC_TYPE_DOUBLE, BFC_UNIT_BYTES,
			     BFC_VAR_VARIABLE },
	[K_HQ_QUEUE] = { BFC_CAT_COLLECTOR, "HQ queue", BFC_TYPE_LONG,
			 BFC_UNIT_BYTES, BFC_VAR_VARIABLE },
	[K_HQ_CONNS] = { BFC_CAT_COLLECTOR, "data connections",
			 BFC_TYPE_INT, BFC_UNIT_NONE, BFC_VAR_VARIABLE },
	[K_HEARTBEATS] = { BFC_CAT_COLLECTOR, "heartbeats", BFC_TYPE_LONG,
			   BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_CPU] = { BFC_CAT_COLLECTOR, "CPU %", BFC_TYPE_DOUBLE,
		    BFC_UNIT_PERCENTAGE, BFC_VAR_VARIABLE },
	[K_RSS] = { BFC_CAT_COLLECTOR, "RSS", BFC_TYPE_LONG, BFC_UNIT_BYTES,
		    BFC_VAR_VARIABLE },
	[K_INPUT_OPEN] = { BFC_CAT_COLLECTOR, "input open", BFC_TYPE_INT,
			   BFC_UNIT_NONE, BFC_VAR_VARIABLE },
	[K_DROPPED] = { BFC_CAT_COLLECTOR, "samples dropped", BFC_TYPE_LONG,
			BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_MODE] = { BFC_CAT_KERNEL, "mode", BFC_TYPE_INT, BFC_UNIT_CONFIG,
		     BFC_VAR_VARIABLE },
	[K_PROBES] = { BFC_CAT_KERNEL, "probes", BFC_TYPE_INT, BFC_UNIT_NONE,
		       BFC_VAR_VARIABLE },
	[K_TARGETS] = { BFC_CAT_KERNEL, "targets", BFC_TYPE_INT,
			BFC_UNIT_NONE, BFC_VAR_VARIABLE },
	[K_HITS] = { BFC_CAT_KERNEL, "total hits", BFC_TYPE_LONG,
		     BFC_UNIT_EVENTS, BFC_VAR_MONOTONIC },
	[K_LOST] = { BFC_CAT_KERNEL, "lost", BFC_TYPE_LONG, BFC_UNIT_EVENTS,
		     BFC_VAR_MONOTONIC },
};

void sample_set_remove(struct counters *t, uint32_t i)
{
	free(t->set[i].sig);
	t->set[i] = t->set[--t->nset];
}

void sample_set_clear(struct counters *t)
{
	while (t->nset)
		sample_set_remove(t, t->nset - 1);
}

struct entry *sample_set_add(struct counters *t, enum kind k, uint32_t arg)
{
	struct entry *v;

	if (t->next_index == INT16_MAX)
		return NULL;
	v = realloc(t->set, (t->nset + 1) * sizeof(*v));
	if (!v)
		return NULL;
	t->set = v;
	v += t->nset++;
	memset(v, 0, sizeof(*v));
	v->kind = k;
	v->arg = arg;
	v->index = t->next_index++;
	return v;
}

/* "<sig> calls", "cpu3 lost", "RSS" */
int counter_name(struct coll *c, enum kind k, uint32_t arg, char *buf,
		 size_t len)
{
	if (kind_is_method(k)) {
		struct method *me = methods_get(&c->methods, arg);

		if (!me || !me->sig)
			return -1;
		return snprintf(buf, len, "%s %s", me->sig,
				counter_defs[k].name) < (int)len ? 0 : -1;
	}
	if (kind_is_ring(k))
		return snprintf(buf, len, "cpu%u %s", arg,
				counter_defs[k].name) < (int)len ? 0 : -1;
	snprintf(buf, len, "%s", counter_defs[k].name);
	return 0;
}

bool counter_method_live(const struct coll *c, const struct method *me)
{
	return me->used && me->known && me->sig &&
	       me->live_gen == c->methods.gen;
}

/* Name and category to a counter; false if there is none such now. */
bool counter_lookup(struct coll *c, const char *name, const char *cat,
		    enum kind *k, uint32_t *arg)
{
	int32_t ci = bfc_category_id(cat);
	size_t nl = name ? strlen(name) : 0;
	int i;

	if (ci < 0 || !name)
		return false;
	for (i = 0; i < K__COUNT; i++) {
		size_t sl = strlen(counter_defs[i].name);

		if (counter_defs[i].cat != ci)
			continue;
		if (ci == BFC_CAT_COLLECTOR || ci == BFC_CAT_KERNEL) {
			if (!strcmp(name, counter_defs[i].name)) {
				*k = (enum kind)i;
				*arg = 0;
				return true;
			}
			continue;
		}
		if (nl <= sl + 1 || name[nl - sl - 1] != ' ' ||
		    strcmp(name + nl - sl, counter_defs[i].name))
			continue;
		if (ci == BFC_CAT_RING) {
			unsigned int cpu;
			int used = 0;

			if (sscanf(name, "cpu%u%n", &cpu, &used) == 1 &&
			    (size_t)used == nl - sl - 1 &&
			    cpu < source_ncpus(c->src)) {
				*k = (enum kind)i;
				*arg = cpu;
				return true;
			}
			continue;
		}
		for (uint32_t s = 0; s < c->methods.cap; s++) {
			struct method *me = &c->methods.v[s];

			if (counter_method_live(c, me) &&
			    strlen(me->sig) == nl - sl - 1 &&
			    !strncmp(me->sig, name, nl - sl - 1)) {
				*k = (enum kind)i;
				*arg = me->id;
				return true;
			}
		}
	}
	return false;
}

void counter_header(struct coll *c, const struct entry *e,
		    struct bfc_header *h, char *name, size_t len)
{
	if (counter_name(c, e->kind, e->arg, name, len))
		snprintf(name, len, "method%u %s", e->arg,
			 counter_defs[e->kind].name);
	h->category = counter_defs[e->kind].cat;
	h->name = name;
	h->type = counter_defs[e->kind].type;
	h->unit = counter_defs[e->kind].unit;
	h->variance = counter_defs[e->kind].variance;
	h->index = e->index;
}
