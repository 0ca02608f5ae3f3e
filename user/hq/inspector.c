// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq --counters: the inspector side of the counters protocol (seed 003,
 * notes/counters-wire.md).  See inspector.h and bfhq.1.  This file owns
 * the part without sockets: requests queued, the agent's messages taken
 * in, the counters kept and shown as a table or JSON lines; the program
 * around it (options, sockets, the loop) is inspector_main.c.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inspector.h"

#define IN_MAX	(2 * BFC_MAX_MSG)

void insp_init(struct insp *s, FILE *out, bool json, bool redraw)
{
	memset(s, 0, sizeof(*s));
	s->out = out;
	s->json = json;
	s->redraw = redraw;
}

void insp_reset(struct insp *s)
{
	for (uint32_t i = 0; i < s->nc; i++)
		free(s->c[i].h.name);
	free(s->c);
	s->c = NULL;
	s->nc = 0;
	s->nremove_pending = 0;
	s->in.len = 0;
	s->out_buf.len = 0;
	s->hello = s->bye = false;
	s->err[0] = 0;
}

void insp_free(struct insp *s)
{
	insp_reset(s);
	bft_buf_free(&s->in);
	bft_buf_free(&s->out_buf);
}

static int request(struct insp *s, const struct bfc_msg *m)
{
	return bfc_encode(&s->out_buf, BFC_TO_AGENT, m);
}

int insp_list(struct insp *s)
{
	return request(s, &(struct bfc_msg){ .cmd = BFC_LIST });
}

int insp_add(struct insp *s, const char *spec)
{
	const char *colon = strchr(spec, ':');
	char cat[64];

	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(cat))
		return -EINVAL;
	memcpy(cat, spec, (size_t)(colon - spec));
	cat[colon - spec] = 0;
	return request(s, &(struct bfc_msg){ .cmd = BFC_ADD,
					     .name = (char *)colon + 1,
					     .category = cat });
}

int insp_remove(struct insp *s, int16_t index)
{
	if (s->nremove_pending == sizeof(s->pending_remove) /
				  sizeof(s->pending_remove[0]))
		return -ENOBUFS;
	s->pending_remove[s->nremove_pending++] = index;
	return request(s, &(struct bfc_msg){ .cmd = BFC_REMOVE,
					     .index = index });
}

int insp_changes(struct insp *s, bool on)
{
	return request(s, &(struct bfc_msg){ .cmd = BFC_CHANGES,
					     .changes = on });
}

int insp_bye(struct insp *s)
{
	s->bye = true;
	return request(s, &(struct bfc_msg){ .cmd = BFC_BYE });
}

int insp_command(struct insp *s, const char *line)
{
	char *end;
	long v;

	line += strspn(line, " \t");
	if (!strncmp(line, "list", 4))
		return insp_list(s);
	if (!strncmp(line, "bye", 3))
		return insp_bye(s);
	if (!strncmp(line, "add ", 4))
		return insp_add(s, line + 4 + strspn(line + 4, " \t"));
	if (!strcmp(line, "changes on") || !strcmp(line, "changes off"))
		return insp_changes(s, line[9] == 'n');
	if (!strncmp(line, "remove ", 7)) {
		v = strtol(line + 7, &end, 10);
		if (end == line + 7 || v < -1 || v > INT16_MAX)
			return -EINVAL;
		return insp_remove(s, (int16_t)v);
	}
	return -EINVAL;
}

static json_t *header_json(const struct bfc_header *h)
{
	const char *cat = bfc_category_name(h->category);

	return json_pack("{s:i,s:s,s:i,s:s,s:s,s:s,s:s}", "index", h->index,
			 "category", cat ? cat : "?", "category_id",
			 h->category, "name", h->name, "type",
			 bfc_type_name(h->type), "unit", bfc_unit_name(h->unit),
			 "variance", bfc_variance_name(h->variance));
}

/* The JSON lines go to stdout (--json) and to the record (--output). */
static bool wants_json(const struct insp *s)
{
	return s->json || s->record;
}

static void emit(struct insp *s, json_t *j)
{
	FILE *to[2] = { s->json ? s->out : NULL, s->record };

	for (unsigned int i = 0; j && i < 2; i++) {
		if (!to[i])
			continue;
		json_dumpf(j, to[i], JSON_COMPACT);
		fputc('\n', to[i]);
		fflush(to[i]);
	}
	json_decref(j);
}

/* Keep h under its index: Hello's and Add's headers. */
static int keep(struct insp *s, const struct bfc_header *h)
{
	uint32_t i = (uint16_t)h->index;
	struct insp_counter *c;

	if (i >= s->nc) {
		c = realloc(s->c, (i + 1) * sizeof(*c));
		if (!c)
			return -ENOMEM;
		memset(c + s->nc, 0, (i + 1 - s->nc) * sizeof(*c));
		s->c = c;
		s->nc = i + 1;
	}
	c = &s->c[i];
	free(c->h.name);
	memset(c, 0, sizeof(*c));
	c->h = *h;
	c->h.name = strdup(h->name);
	c->used = true;
	return c->h.name ? 0 : -ENOMEM;
}

static void forget(struct insp *s, int16_t index)
{
	for (uint32_t i = 0; i < s->nc; i++)
		if (s->c[i].used && (index == -1 || s->c[i].h.index == index)) {
			free(s->c[i].h.name);
			memset(&s->c[i], 0, sizeof(s->c[i]));
		}
}

static void print_value(FILE *f, const struct insp_counter *c)
{
	if (!c->have)
		fprintf(f, "%16s", "-");
	else if (c->h.type == BFC_TYPE_DOUBLE)
		fprintf(f, "%16.2f", c->value);
	else
		fprintf(f, "%16lld", (long long)c->ivalue);
}

static void table(struct insp *s)
{
	time_t secs = (time_t)(bfc_ticks_to_unix_ns(s->last_ticks) /
			       1000000000);
	struct tm tm;
	char when[32] = "?";

	if (gmtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	/* home and clear: the table stays where it is, as in top */
	if (s->redraw)
		fputs("\033[H\033[2J", s->out);
	fprintf(s->out, "sample %llu at %s UTC\n%5s  %-10s %-40s %16s  %s\n",
		(unsigned long long)s->samples, when, "INDEX", "CATEGORY",
		"NAME", "VALUE", "UNIT");
	for (uint32_t i = 0; i < s->nc; i++) {
		const struct insp_counter *c = &s->c[i];
		const char *cat = c->used ? bfc_category_name(c->h.category) :
					    NULL;

		if (!c->used)
			continue;
		fprintf(s->out, "%5d  %-10s %-40s ", c->h.index,
			cat ? cat : "?", c->h.name);
		print_value(s->out, c);
		fprintf(s->out, "  %s\n", bfc_unit_name(c->h.unit));
	}
	if (!s->redraw)
		fputc('\n', s->out);
	fflush(s->out);
}

static void on_sample(struct insp *s, const struct bfc_msg *m)
{
	json_t *vals;

	s->samples++;
	s->last_ticks = m->timestamp;
	for (uint32_t i = 0; i < m->nvalues; i++) {
		const struct bfc_value *v = &m->values[i];
		uint32_t k = (uint16_t)v->index;
		struct insp_counter *c = k < s->nc && s->c[k].used ? &s->c[k] :
					 NULL;

		/* a value of a counter never described, or of the wrong size:
		 * counted and left out, the rest is good */
		if (!c || !bfc_value_get(c->h.type, v->data, v->size, &c->value,
					 &c->ivalue)) {
			s->bad_values++;
			continue;
		}
		c->have = true;
	}
	if (!s->json)
		table(s);
	if (!wants_json(s))
		return;
	/* every counter's latest value, whether or not this sample had it
	 * (BFC_CHANGES leaves out what did not change) */
	vals = json_object();
	for (uint32_t k = 0; vals && k < s->nc; k++) {
		const struct insp_counter *c = &s->c[k];
		char key[BFC_MAX_STRING + 80];

		if (!c->used || !c->have)
			continue;
		snprintf(key, sizeof(key), "%s:%s",
			 bfc_category_name(c->h.category) ?: "?", c->h.name);
		json_object_set_new(vals, key, c->h.type == BFC_TYPE_DOUBLE ?
					       json_real(c->value) :
					       json_integer(c->ivalue));
	}
	emit(s, json_pack("{s:s,s:I,s:f,s:I,s:o}", "event", "sample", "n",
			  (json_int_t)s->samples, "time",
			  (double)bfc_ticks_to_unix_ns(m->timestamp) / 1e9,
			  "carried", (json_int_t)m->nvalues, "values", vals));
}

static int on_msg(struct insp *s, const struct bfc_msg *m)
{
	json_t *a;
	uint32_t i;

	if (!s->hello && m->cmd != BFC_HELLO) {
		snprintf(s->err, sizeof(s->err), "message %u before Hello",
			 m->cmd);
		return -EPROTO;
	}
	switch (m->cmd) {
	case BFC_HELLO:
		if (s->hello) {
			snprintf(s->err, sizeof(s->err), "a second Hello");
			return -EPROTO;
		}
		s->hello = true;
		for (i = 0; i < m->nheaders; i++)
			if (keep(s, &m->headers[i]))
				return -ENOMEM;
		if (!s->json) {
			fprintf(s->out, "agent: protocol version %d, %u "
				"counters\n", m->version, m->nheaders);
			fflush(s->out);
		}
		if (!wants_json(s))
			return 0;
		a = json_array();
		for (i = 0; i < m->nheaders; i++)
			json_array_append_new(a, header_json(&m->headers[i]));
		emit(s, json_pack("{s:s,s:i,s:o}", "event", "hello", "version",
				  m->version, "counters", a));
		return 0;
	case BFC_LIST:
		s->lists++;
		if (!s->json) {
			for (i = 0; i < m->ncounters; i++)
				fprintf(s->out, "%-10s %s\n",
					m->counters[i].category,
					m->counters[i].name);
			fflush(s->out);
		}
		if (!wants_json(s))
			return 0;
		a = json_array();
		for (i = 0; i < m->ncounters; i++)
			json_array_append_new(a, json_pack(
				"{s:s,s:s}", "category", m->counters[i].category,
				"name", m->counters[i].name));
		emit(s, json_pack("{s:s,s:o}", "event", "list", "counters", a));
		return 0;
	case BFC_ADD:
		if (m->status == BFC_OK && keep(s, &m->headers[0]))
			return -ENOMEM;
		if (wants_json(s))
			emit(s, json_pack("{s:s,s:s,s:o*}", "event", "add",
					  "status", bfc_status_name(m->status),
					  "counter", m->status == BFC_OK ?
					  header_json(&m->headers[0]) : NULL));
		if (!s->json) {
			fprintf(s->out, "add: %s", bfc_status_name(m->status));
			if (m->status == BFC_OK)
				fprintf(s->out, " %s (index %d)",
					m->headers[0].name,
					m->headers[0].index);
			fputc('\n', s->out);
			fflush(s->out);
		}
		return 0;
	case BFC_REMOVE: {
		int16_t index = -2;

		if (s->nremove_pending) {
			index = s->pending_remove[0];
			memmove(s->pending_remove, s->pending_remove + 1,
				--s->nremove_pending *
				sizeof(s->pending_remove[0]));
		}
		if (m->status == BFC_OK && index >= -1)
			forget(s, index);
		if (wants_json(s))
			emit(s, json_pack("{s:s,s:i,s:s}", "event", "remove",
					  "index", index, "status",
					  bfc_status_name(m->status)));
		if (!s->json) {
			fprintf(s->out, "remove %d: %s\n", index,
				bfc_status_name(m->status));
			fflush(s->out);
		}
		return 0;
	}
	case BFC_SAMPLE:
		on_sample(s, m);
		return 0;
	case BFC_CHANGES:
		if (wants_json(s))
			emit(s, json_pack("{s:s,s:s}", "event", "changes",
					  "status", bfc_status_name(m->status)));
		if (!s->json && m->status != BFC_OK) {
			fprintf(s->out, "changes only: %s\n",
				bfc_status_name(m->status));
			fflush(s->out);
		}
		return 0;
	}
	return 0;
}

int insp_feed(struct insp *s, const void *p, size_t n)
{
	if (bft_buf_append(&s->in, p, n))
		return -ENOMEM;
	while (s->in.len) {
		struct bfc_msg m;
		int r = bfc_decode(s->in.data, s->in.len, BFC_TO_INSPECTOR, &m,
				   s->err, sizeof(s->err));

		if (r == 0 && s->in.len > IN_MAX) {
			snprintf(s->err, sizeof(s->err), "%zu bytes without a "
				 "whole message", s->in.len);
			return -EPROTO;
		}
		if (r <= 0)
			return r;
		r = on_msg(s, &m) ?: r;
		bfc_msg_free(&m);
		if (r < 0)
			return r;
		bft_buf_consume(&s->in, (size_t)r);
	}
	return 0;
}
