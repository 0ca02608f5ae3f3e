// SPDX-License-Identifier: GPL-2.0
/*
 * RuntimeAgentConfigurationV1 in its two encodings.  The Java side is
 * written field for field as ObjectOutputStream writes this class (notes
 * §3.1 shows the bytes): seven fields, primitives sorted by name first, then
 * the two lists; the lists as java.util.ArrayList (writeObject: size field,
 * block with the capacity, the elements) or java.util.Arrays$ArrayList (an
 * object array field "a", which holds a String[]).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "wire/bfp_config.h"
#include "wire/bfp_joss.h"

#define CLASS_BYTEFROG	"com.secdec.bytefrog.common.config.RuntimeAgentConfigurationV1"
#define CLASS_CODEPULSE	"com.codedx.codepulse.agent.common.config.RuntimeAgentConfigurationV1"
#define LIST_TYPE	"Ljava/util/List;"

#define ARRAYLIST		"java.util.ArrayList"
#define ARRAYLIST_SUID		0x7881d21d99c7619dULL
#define ASLIST			"java.util.Arrays$ArrayList"
#define ASLIST_SUID		0xd9a43cbecd8806d2ULL
#define OBJECT_ARRAY_TYPE	"[Ljava/lang/Object;"
#define STRING_ARRAY		"[Ljava.lang.String;"
#define STRING_ARRAY_SUID	0xadd256e7e91d7b47ULL

void bfp_config_init(struct bfp_config *c)
{
	memset(c, 0, sizeof(*c));
	c->heartbeat_ms = BFP_DEFAULT_HEARTBEAT_MS;
	c->buffer_budget = BFP_DEFAULT_BUFFER_BUDGET;
	c->queue_retry = BFP_DEFAULT_QUEUE_RETRY;
	c->data_senders = BFP_DEFAULT_DATA_SENDERS;
}

static void strlist_free(struct bfp_strlist *l)
{
	uint32_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void bfp_config_free(struct bfp_config *c)
{
	strlist_free(&c->exclusions);
	strlist_free(&c->inclusions);
}

static int strlist_addn(struct bfp_strlist *l, const char *s, size_t n)
{
	char **v, *copy;

	if (l->n >= 1u << 24)
		return -E2BIG;
	copy = malloc(n + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, n);
	copy[n] = 0;
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v) {
		free(copy);
		return -ENOMEM;
	}
	v[l->n++] = copy;
	l->v = v;
	return 0;
}

int bfp_strlist_add(struct bfp_strlist *l, const char *s)
{
	return strlist_addn(l, s, strlen(s));
}

static int strlist_copy(struct bfp_strlist *d, const struct bfp_strlist *s)
{
	uint32_t i;

	d->list_class = s->list_class;
	for (i = 0; i < s->n; i++)
		if (bfp_strlist_add(d, s->v[i]))
			return -ENOMEM;
	return 0;
}

int bfp_config_copy(struct bfp_config *dst, const struct bfp_config *src)
{
	*dst = *src;
	memset(&dst->exclusions, 0, sizeof(dst->exclusions));
	memset(&dst->inclusions, 0, sizeof(dst->inclusions));
	if (strlist_copy(&dst->exclusions, &src->exclusions) ||
	    strlist_copy(&dst->inclusions, &src->inclusions)) {
		bfp_config_free(dst);
		return -ENOMEM;
	}
	return 0;
}

uint32_t bfp_config_buffer_len(int32_t budget)
{
	uint32_t len = 8192;

	while (len > 64 && (budget < 0 || (uint32_t)budget / len < 10))
		len /= 2;
	return len;
}

/* ---- version 1: Java serialization ---- */

static void w_field(struct joss_writer *w, char code, const char *name,
		    const char *type)
{
	joss_w_u8(w, (uint8_t)code);
	joss_w_utf(w, name);
	if (type)
		joss_w_type(w, type);
}

/* TC_CLASSDESC name suid handle flags fields... ; false if a reference. */
static bool w_class_start(struct joss_writer *w, const char *name,
			  uint64_t suid, uint8_t flags, uint16_t nfields)
{
	if (joss_w_shared(w, name))
		return false;
	joss_w_u8(w, TC_CLASSDESC);
	joss_w_utf(w, name);
	joss_w_u64(w, suid);
	joss_w_handle(w);
	joss_w_u8(w, flags);
	joss_w_u16(w, nfields);
	return true;
}

static void w_class_end(struct joss_writer *w)
{
	joss_w_u8(w, TC_ENDBLOCKDATA);	/* no class annotation */
	joss_w_u8(w, TC_NULL);		/* no serializable superclass */
}

static void w_list(struct joss_writer *w, const struct bfp_strlist *l)
{
	uint32_t i;

	joss_w_u8(w, TC_OBJECT);
	if (l->list_class == BFP_LIST_ASLIST) {
		if (w_class_start(w, ASLIST, ASLIST_SUID, SC_SERIALIZABLE, 1)) {
			w_field(w, '[', "a", OBJECT_ARRAY_TYPE);
			w_class_end(w);
		}
		joss_w_handle(w);
		joss_w_u8(w, TC_ARRAY);
		if (w_class_start(w, STRING_ARRAY, STRING_ARRAY_SUID,
				  SC_SERIALIZABLE, 0))
			w_class_end(w);
		joss_w_handle(w);
		joss_w_u32(w, l->n);
		for (i = 0; i < l->n; i++)
			joss_w_string(w, l->v[i]);
		return;
	}
	if (w_class_start(w, ARRAYLIST, ARRAYLIST_SUID,
			  SC_SERIALIZABLE | SC_WRITE_METHOD, 1)) {
		w_field(w, 'I', "size", NULL);
		w_class_end(w);
	}
	joss_w_handle(w);
	joss_w_u32(w, l->n);		/* the size field */
	{
		uint8_t cap[4] = { l->n >> 24, l->n >> 16, l->n >> 8, l->n };

		joss_w_block(w, cap, 4);	/* writeInt(size) in block mode */
	}
	for (i = 0; i < l->n; i++)
		joss_w_string(w, l->v[i]);
	joss_w_u8(w, TC_ENDBLOCKDATA);
}

int bfp_config_encode_java(const struct bfp_config *c, struct bft_buf *out)
{
	const char *cls = c->java_class == BFP_CLASS_CODEPULSE ?
			  CLASS_CODEPULSE : CLASS_BYTEFROG;
	size_t start = out->len;
	struct joss_writer w;

	joss_w_init(&w, out);
	joss_w_u8(&w, TC_OBJECT);
	w_class_start(&w, cls, (uint64_t)BFP_CONFIG_SUID, SC_SERIALIZABLE, 7);
	w_field(&w, 'I', "bufferMemoryBudget", NULL);
	w_field(&w, 'I', "heartbeatInterval", NULL);
	w_field(&w, 'I', "numDataSenders", NULL);
	w_field(&w, 'I', "queueRetryCount", NULL);
	w_field(&w, 'B', "runId", NULL);
	w_field(&w, 'L', "exclusions", LIST_TYPE);
	w_field(&w, 'L', "inclusions", LIST_TYPE);
	w_class_end(&w);
	joss_w_handle(&w);
	joss_w_u32(&w, (uint32_t)c->buffer_budget);
	joss_w_u32(&w, (uint32_t)c->heartbeat_ms);
	joss_w_u32(&w, (uint32_t)c->data_senders);
	joss_w_u32(&w, (uint32_t)c->queue_retry);
	joss_w_u8(&w, (uint8_t)c->run_id);
	w_list(&w, &c->exclusions);
	w_list(&w, &c->inclusions);
	if (w.err)
		out->len = start;
	return w.err;
}

/* Where a decoder's error goes, and what its lists hold so far. */
struct cerr {
	char *buf;
	size_t len;
	uint32_t patterns;
	size_t pattern_bytes;
};

static int cfail(struct cerr *e, const char *fmt, ...)
{
	va_list ap;

	if (e->len) {
		va_start(ap, fmt);
		vsnprintf(e->buf, e->len, fmt, ap);
		va_end(ap);
	}
	return -EPROTO;
}

/*
 * Checked before the copy: back references make one string any number of
 * elements, and each element is a copy.
 */
static int add_pattern(struct bfp_strlist *l, const char *s, size_t n,
		       const char *field, struct cerr *e)
{
	if (e->patterns >= BFP_CONFIG_MAX_PATTERNS)
		return cfail(e, "%s: more than %u patterns in the configuration",
			     field, BFP_CONFIG_MAX_PATTERNS);
	if (n > BFP_CONFIG_MAX_PATTERN_BYTES - e->pattern_bytes)
		return cfail(e, "%s: the patterns take more than %u bytes",
			     field, BFP_CONFIG_MAX_PATTERN_BYTES);
	e->patterns++;
	e->pattern_bytes += n;
	return strlist_addn(l, s, n) ? -ENOMEM : 0;
}

static int add_string_value(struct bfp_strlist *l, const struct joss_value *v,
			    const char *field, struct cerr *e)
{
	if (!v || v->kind != JOSS_STRING)
		return cfail(e, "%s: an element is not a string", field);
	/* A pattern is a C string: a NUL would cut it without a word. */
	if (memchr(v->str, 0, v->len))
		return cfail(e, "%s: an element holds a NUL character (C0 80)",
			     field);
	return add_pattern(l, v->str, v->len, field, e);
}

/* The strings a serialized java.util.List holds, for the lists Java makes. */
static int decode_list(const struct joss_value *v, struct bfp_strlist *l,
		       const char *field, unsigned int depth, struct cerr *e)
{
	const char *cls;
	const struct joss_slot *s;
	char code;
	uint32_t i, k;
	int err;

	if (!v || v->kind == JOSS_NULL)
		return 0;	/* a null list reads as empty */
	if (v->kind != JOSS_OBJECT || depth > 2)
		return cfail(e, "%s: not a java.util.List", field);
	cls = v->desc->name;
	if (!strcmp(cls, ARRAYLIST) || !strcmp(cls, "java.util.LinkedList")) {
		/* writeObject: the size (field or block), then the elements. */
		const struct joss_level *lv = &v->levels[v->nlevels - 1];
		int64_t size = -1;

		s = joss_field(v, "size", &code);
		if (s && code == 'I')
			size = s->prim;
		for (i = 0, k = 0; i < lv->nannot; i++) {
			if (lv->annot[i]->kind == JOSS_BLOCK)
				continue;
			err = add_string_value(l, lv->annot[i], field, e);
			if (err)
				return err;
			k++;
		}
		if (size >= 0 && size != k)
			return cfail(e, "%s: size %lld but %u elements", field,
				     (long long)size, k);
		if (!strcmp(cls, ARRAYLIST) && depth == 0)
			l->list_class = BFP_LIST_ARRAYLIST;
		return 0;
	}
	if (!strcmp(cls, ASLIST)) {
		s = joss_field(v, "a", &code);
		if (!s || code != '[' || !s->obj || s->obj->kind != JOSS_ARRAY)
			return cfail(e, "%s: Arrays$ArrayList without its array",
				     field);
		for (i = 0; i < s->obj->count; i++) {
			err = add_string_value(l, s->obj->elems[i].obj, field,
					       e);
			if (err)
				return err;
		}
		if (depth == 0)
			l->list_class = BFP_LIST_ASLIST;
		return 0;
	}
	if (!strcmp(cls, "java.util.Collections$EmptyList"))
		return 0;
	if (!strcmp(cls, "java.util.Collections$SingletonList")) {
		s = joss_field(v, "element", &code);
		return add_string_value(l, s ? s->obj : NULL, field, e);
	}
	if (!strcmp(cls, "java.util.Collections$UnmodifiableRandomAccessList") ||
	    !strcmp(cls, "java.util.Collections$UnmodifiableList")) {
		s = joss_field(v, "list", &code);
		return decode_list(s ? s->obj : NULL, l, field, depth + 1, e);
	}
	return cfail(e, "%s: unsupported list class %s", field, cls);
}

static int int_field(const struct joss_value *obj, const char *name,
		     char want, int64_t *v, struct cerr *e)
{
	const struct joss_slot *s;
	char code;

	s = joss_field(obj, name, &code);
	if (!s)
		return cfail(e, "field %s is missing", name);
	if (code != want)
		return cfail(e, "field %s has type %c, not %c", name, code,
			     want);
	*v = s->prim;
	return 0;
}

int bfp_config_decode_java(const uint8_t *p, size_t n, struct bfp_config *c,
			   char *err, size_t errlen)
{
	struct cerr e = { .buf = err, .len = errlen };
	struct joss_value *root;
	const struct joss_slot *s;
	struct joss *j;
	int64_t v[5];
	char code;
	int ret;

	bfp_config_init(c);
	ret = joss_parse(p, n, &j, &root, err, errlen);
	if (ret)
		return ret;
	if (root->kind != JOSS_OBJECT) {
		ret = cfail(&e, "the stream holds no object");
		goto out;
	}
	if (!strcmp(root->desc->name, CLASS_BYTEFROG)) {
		c->java_class = BFP_CLASS_BYTEFROG;
	} else if (!strcmp(root->desc->name, CLASS_CODEPULSE)) {
		c->java_class = BFP_CLASS_CODEPULSE;
	} else {
		ret = cfail(&e, "unexpected class %s", root->desc->name);
		goto out;
	}
	if (root->desc->suid != BFP_CONFIG_SUID) {
		ret = cfail(&e, "serialVersionUID %lld does not match",
			    (long long)root->desc->suid);
		goto out;
	}
	ret = int_field(root, "bufferMemoryBudget", 'I', &v[0], &e) ?:
	      int_field(root, "heartbeatInterval", 'I', &v[1], &e) ?:
	      int_field(root, "numDataSenders", 'I', &v[2], &e) ?:
	      int_field(root, "queueRetryCount", 'I', &v[3], &e) ?:
	      int_field(root, "runId", 'B', &v[4], &e);
	if (ret)
		goto out;
	c->buffer_budget = (int32_t)v[0];
	c->heartbeat_ms = (int32_t)v[1];
	c->data_senders = (int32_t)v[2];
	c->queue_retry = (int32_t)v[3];
	c->run_id = (int8_t)v[4];
	s = joss_field(root, "exclusions", &code);
	if (!s || code != 'L') {
		ret = cfail(&e, "field exclusions is missing");
		goto out;
	}
	ret = decode_list(s->obj, &c->exclusions, "exclusions", 0, &e);
	if (ret)
		goto out;
	s = joss_field(root, "inclusions", &code);
	if (!s || code != 'L') {
		ret = cfail(&e, "field inclusions is missing");
		goto out;
	}
	ret = decode_list(s->obj, &c->inclusions, "inclusions", 0, &e);
out:
	joss_free(j);
	if (ret)
		bfp_config_free(c);
	return ret;
}

/* ---- version 2: JSON ---- */

static json_t *json_list(const struct bfp_strlist *l)
{
	json_t *a = json_array();
	uint32_t i;

	for (i = 0; a && i < l->n; i++) {
		json_t *s = json_string(l->v[i]);

		if (!s || json_array_append_new(a, s)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

int bfp_config_encode_json(const struct bfp_config *c, struct bft_buf *out)
{
	json_t *o = json_object();
	json_t *ex = json_list(&c->exclusions);
	json_t *in = json_list(&c->inclusions);
	char *text = NULL;
	int err = -EINVAL;	/* json_string refuses invalid UTF-8 */

	if (!o || !ex || !in)
		goto out;
	if (json_object_set_new(o, "bufferMemoryBudget",
				json_integer(c->buffer_budget)) ||
	    json_object_set(o, "exclusions", ex) ||
	    json_object_set_new(o, "heartbeatInterval",
				json_integer(c->heartbeat_ms)) ||
	    json_object_set(o, "inclusions", in) ||
	    json_object_set_new(o, "numDataSenders",
				json_integer(c->data_senders)) ||
	    json_object_set_new(o, "queueRetryCount",
				json_integer(c->queue_retry)) ||
	    json_object_set_new(o, "runId", json_integer(c->run_id)))
		goto out;
	/* JSON-B's output: keys in lexicographic order, no whitespace. */
	text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text) {
		err = -ENOMEM;
		goto out;
	}
	err = bft_buf_append(out, text, strlen(text) + 1);
	if (!err)
		out->len--;
out:
	free(text);
	json_decref(ex);
	json_decref(in);
	json_decref(o);
	return err;
}

static int json_int(json_t *o, const char *key, int64_t lo, int64_t hi,
		    bool required, int64_t *v, struct cerr *e)
{
	json_t *x = json_object_get(o, key);

	if (!x) {
		if (required)
			return cfail(e, "\"%s\" is missing", key);
		return 0;
	}
	if (!json_is_integer(x))
		return cfail(e, "\"%s\" is not an integer", key);
	if (json_integer_value(x) < lo || json_integer_value(x) > hi)
		return cfail(e, "\"%s\" = %lld is out of range", key,
			     (long long)json_integer_value(x));
	*v = json_integer_value(x);
	return 0;
}

static int json_strlist(json_t *o, const char *key, struct bfp_strlist *l,
			struct cerr *e)
{
	json_t *a = json_object_get(o, key), *x;
	size_t i;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return cfail(e, "\"%s\" is not an array", key);
	json_array_foreach(a, i, x) {
		if (!json_is_string(x))
			return cfail(e, "\"%s\"[%zu] is not a string", key, i);
		int err = add_pattern(l, json_string_value(x),
				      json_string_length(x), key, e);

		if (err)
			return err;
	}
	return 0;
}

int bfp_config_decode_json(const char *json, size_t n, struct bfp_config *c,
			   char *err, size_t errlen)
{
	struct cerr e = { .buf = err, .len = errlen };
	int64_t v[5] = { 0, BFP_DEFAULT_HEARTBEAT_MS, BFP_DEFAULT_BUFFER_BUDGET,
			 BFP_DEFAULT_QUEUE_RETRY, BFP_DEFAULT_DATA_SENDERS };
	json_error_t jerr;
	json_t *o;
	int ret;

	bfp_config_init(c);
	o = json_loadb(json, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!o)
		return cfail(&e, "JSON: %s at line %d column %d", jerr.text,
			     jerr.line, jerr.column);
	if (!json_is_object(o)) {
		ret = cfail(&e, "JSON: not an object");
		goto out;
	}
	/* runId is a Java byte; 128..255 are taken as the same wire byte. */
	ret = json_int(o, "runId", -128, 255, true, &v[0], &e) ?:
	      json_int(o, "heartbeatInterval", INT32_MIN, INT32_MAX, false,
		       &v[1], &e) ?:
	      json_int(o, "bufferMemoryBudget", INT32_MIN, INT32_MAX, false,
		       &v[2], &e) ?:
	      json_int(o, "queueRetryCount", INT32_MIN, INT32_MAX, false,
		       &v[3], &e) ?:
	      json_int(o, "numDataSenders", INT32_MIN, INT32_MAX, false,
		       &v[4], &e) ?:
	      json_strlist(o, "exclusions", &c->exclusions, &e) ?:
	      json_strlist(o, "inclusions", &c->inclusions, &e);
	if (ret)
		goto out;
	c->run_id = (int8_t)(uint8_t)v[0];
	c->heartbeat_ms = (int32_t)v[1];
	c->buffer_budget = (int32_t)v[2];
	c->queue_retry = (int32_t)v[3];
	c->data_senders = (int32_t)v[4];
out:
	json_decref(o);
	if (ret)
		bfp_config_free(c);
	return ret;
}
