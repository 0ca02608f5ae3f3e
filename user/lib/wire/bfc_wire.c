// SPDX-License-Identifier: GPL-2.0
/*
 * The counters protocol of seed 003, encoder and bounded decoder; see
 * bfc_wire.h and notes/counters-wire.md for the byte layout.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/bfc_wire.h"

/* 0001-01-01 to 1970-01-01 in 100 ns ticks, as .NET counts them. */
#define TICKS_AT_UNIX_EPOCH	621355968000000000ll

static const char *const cat_names[] = {
	[BFC_CAT_METHOD - BFC_CAT_METHOD] = "Method",
	[BFC_CAT_RING - BFC_CAT_METHOD] = "Ring",
	[BFC_CAT_COLLECTOR - BFC_CAT_METHOD] = "Collector",
	[BFC_CAT_KERNEL - BFC_CAT_METHOD] = "Kernel",
};

const char *bfc_category_name(int32_t cat)
{
	if (cat < BFC_CAT_METHOD || cat > BFC_CAT_KERNEL)
		return NULL;
	return cat_names[cat - BFC_CAT_METHOD];
}

int32_t bfc_category_id(const char *name)
{
	int32_t i;

	for (i = 0; name && i <= BFC_CAT_KERNEL - BFC_CAT_METHOD; i++)
		if (!strcmp(name, cat_names[i]))
			return BFC_CAT_METHOD + i;
	return -1;
}

const char *bfc_type_name(int32_t type)
{
	static const char *const n[] = { "int", "long", "word", "double" };

	return type >= 0 && type <= BFC_TYPE_DOUBLE ? n[type] : "?";
}

const char *bfc_unit_name(int32_t unit)
{
	static const char *const n[] = { "raw", "bytes", "time", "events",
					 "config", "percent" };

	return unit >= 0 && unit <= BFC_UNIT_PERCENTAGE ? n[unit] : "?";
}

const char *bfc_variance_name(int32_t var)
{
	static const char *const n[] = { "constant", "monotonic", "variable" };

	return var >= BFC_VAR_CONSTANT && var <= BFC_VAR_VARIABLE ?
	       n[var - 1] : "?";
}

const char *bfc_status_name(uint8_t status)
{
	static const char *const n[] = { "OK", "NOK", "NOTFOUND", "EXISTING" };

	return status <= BFC_EXISTING ? n[status] : "?";
}

unsigned int bfc_type_size(int32_t type)
{
	switch (type) {
	case BFC_TYPE_INT:
		return 4;
	case BFC_TYPE_LONG:
	case BFC_TYPE_WORD:
	case BFC_TYPE_DOUBLE:
		return 8;
	}
	return 0;
}

int64_t bfc_ticks_from_unix_ns(int64_t ns)
{
	return ns / 100 + TICKS_AT_UNIX_EPOCH;
}

int64_t bfc_ticks_to_unix_ns(int64_t ticks)
{
	return (ticks - TICKS_AT_UNIX_EPOCH) * 100;
}

static uint64_t get_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static void put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

bool bfc_value_get(int32_t type, const uint8_t *p, uint16_t size,
		   double *out, int64_t *iout)
{
	uint64_t u;

	if (!size || size != bfc_type_size(type))
		return false;
	u = get_le(p, size);
	if (type == BFC_TYPE_DOUBLE) {
		double d;

		memcpy(&d, &u, sizeof(d));
		*out = d;
		*iout = (int64_t)d;
		return true;
	}
	*iout = size == 4 ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u;
	*out = (double)*iout;
	return true;
}

unsigned int bfc_value_put(int32_t type, int64_t iv, double dv, uint8_t *out)
{
	uint64_t u = (uint64_t)iv;
	unsigned int n = bfc_type_size(type);

	if (type == BFC_TYPE_DOUBLE)
		memcpy(&u, &dv, sizeof(u));
	put_le(out, u, n);
	return n;
}

/* ---- decoding ---- */

struct rd {
	const uint8_t *p;
	size_t len, off;
	bool short_;		/* ran out: need more bytes */
	char *err;
	size_t errlen;
	bool bad;
};

__attribute__((format(printf, 2, 3)))
static void bad(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	if (r->bad)
		return;
	r->bad = true;
	if (!r->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
}

static bool failed(const struct rd *r)
{
	return r->short_ || r->bad;
}

static uint64_t rd_le(struct rd *r, unsigned int n)
{
	uint64_t v;

	if (failed(r))
		return 0;
	if (r->len - r->off < n) {
		r->short_ = true;
		return 0;
	}
	v = get_le(r->p + r->off, n);
	r->off += n;
	return v;
}

static uint8_t rd_u8(struct rd *r)
{
	return (uint8_t)rd_le(r, 1);
}

static int16_t rd_i16(struct rd *r)
{
	return (int16_t)(uint16_t)rd_le(r, 2);
}

static int32_t rd_i32(struct rd *r)
{
	return (int32_t)(uint32_t)rd_le(r, 4);
}

/* A string: *null set for length -1, else a NUL-terminated copy. */
static char *rd_str(struct rd *r, const char *what, bool *null)
{
	int32_t n = rd_i32(r);
	char *s;

	*null = false;
	if (failed(r))
		return NULL;
	if (n == -1) {
		*null = true;
		return NULL;
	}
	if (n < 0 || n > BFC_MAX_STRING) {
		bad(r, "%s: string length %d (0..%d or -1)", what, (int)n,
		    BFC_MAX_STRING);
		return NULL;
	}
	if (r->len - r->off < (size_t)n) {
		r->short_ = true;
		return NULL;
	}
	if (memchr(r->p + r->off, 0, (size_t)n)) {
		bad(r, "%s: a NUL inside the string", what);
		return NULL;
	}
	s = malloc((size_t)n + 1);
	if (!s) {
		bad(r, "out of memory");
		return NULL;
	}
	memcpy(s, r->p + r->off, (size_t)n);
	s[n] = 0;
	r->off += (size_t)n;
	return s;
}

/* A string that may not be null. */
static char *rd_str_nn(struct rd *r, const char *what)
{
	bool null;
	char *s = rd_str(r, what, &null);

	if (null)
		bad(r, "%s: null string", what);
	return s;
}

static int rd_header(struct rd *r, struct bfc_header *h)
{
	h->category = rd_i32(r);
	h->name = rd_str_nn(r, "header name");
	h->type = rd_i32(r);
	/* refused as soon as seen: garbage need not wait for more bytes */
	if (!failed(r) && !bfc_type_size(h->type)) {
		bad(r, "header %s: unknown type %d", h->name, (int)h->type);
		return -1;
	}
	h->unit = rd_i32(r);
	h->variance = rd_i32(r);
	h->index = rd_i16(r);
	if (failed(r))
		return -1;
	if (h->index < 0) {
		bad(r, "header %s: negative index %d", h->name, h->index);
		return -1;
	}
	return 0;
}

/* Grow *v (of *n elements of size sz) by one, zeroed. */
static void *grow(struct rd *r, void **v, uint32_t *n, size_t sz)
{
	uint8_t *nv;

	if (failed(r))
		return NULL;
	/* each element takes at least 4 input bytes: len bounds *n */
	nv = realloc(*v, (*n + 1) * sz);
	if (!nv) {
		bad(r, "out of memory");
		return NULL;
	}
	*v = nv;
	memset(nv + *n * sz, 0, sz);
	return nv + (*n)++ * sz;
}

static void rd_headers(struct rd *r, struct bfc_msg *m, uint32_t count)
{
	while (count-- && !failed(r)) {
		struct bfc_header *h = grow(r, (void **)&m->headers,
					    &m->nheaders, sizeof(*h));

		if (h)
			rd_header(r, h);
	}
}

static void rd_list(struct rd *r, struct bfc_msg *m)
{
	for (;;) {
		bool null;
		char *name = rd_str(r, "counter name", &null);
		struct bfc_counter *c;

		if (failed(r) || null)
			return;
		c = grow(r, (void **)&m->counters, &m->ncounters, sizeof(*c));
		if (!c) {
			free(name);
			return;
		}
		c->name = name;
		c->category = rd_str_nn(r, "counter category");
	}
}

static void rd_values(struct rd *r, struct bfc_msg *m)
{
	for (;;) {
		int16_t index = rd_i16(r);
		uint16_t size;
		struct bfc_value *v;

		if (failed(r) || index == -1)
			return;
		if (index < 0) {
			bad(r, "sample: value index %d", index);
			return;
		}
		size = (uint16_t)rd_i16(r);
		if (failed(r))
			return;
		if (size > 0x7fff) {
			bad(r, "sample: value size %u", size);
			return;
		}
		if (r->len - r->off < size) {
			r->short_ = true;
			return;
		}
		v = grow(r, (void **)&m->values, &m->nvalues, sizeof(*v));
		if (!v)
			return;
		v->index = index;
		v->size = size;
		v->data = malloc(size ? size : 1);
		if (!v->data) {
			bad(r, "out of memory");
			return;
		}
		memcpy(v->data, r->p + r->off, size);
		r->off += size;
	}
}

int bfc_decode(const uint8_t *buf, size_t len, enum bfc_dir dir,
	       struct bfc_msg *m, char *err, size_t errlen)
{
	struct rd r = { .p = buf, .len = len, .err = err, .errlen = errlen };
	int16_t count;

	memset(m, 0, sizeof(*m));
	if (errlen)
		err[0] = 0;
	m->cmd = rd_u8(&r);
	if (failed(&r))
		return 0;
	if (dir == BFC_TO_AGENT) {
		switch (m->cmd) {
		case BFC_LIST:
		case BFC_BYE:
			break;
		case BFC_ADD:
			/* null name or category: the agent answers NOTFOUND */
			{
				bool null;

				m->name = rd_str(&r, "add: name", &null);
				m->category = rd_str(&r, "add: category",
						     &null);
			}
			break;
		case BFC_REMOVE:
			m->index = rd_i16(&r);
			if (!failed(&r) && m->index < -1)
				bad(&r, "remove: index %d", m->index);
			break;
		case BFC_CHANGES:
			m->changes = rd_u8(&r);
			if (!failed(&r) && m->changes > 1)
				bad(&r, "changes: %u is neither 0 nor 1",
				    m->changes);
			break;
		default:
			bad(&r, "unknown request %u", m->cmd);
		}
	} else {
		switch (m->cmd) {
		case BFC_HELLO:
			m->version = rd_i16(&r);
			count = rd_i16(&r);
			if (!failed(&r) && count < 0)
				bad(&r, "hello: %d headers", count);
			else
				rd_headers(&r, m, (uint16_t)count);
			break;
		case BFC_LIST:
			rd_list(&r, m);
			break;
		case BFC_ADD:
			m->status = rd_u8(&r);
			if (!failed(&r) && m->status > BFC_EXISTING)
				bad(&r, "add: status %u", m->status);
			if (m->status == BFC_OK)
				rd_headers(&r, m, 1);
			break;
		case BFC_REMOVE:
			m->status = rd_u8(&r);
			if (!failed(&r) && m->status > BFC_EXISTING)
				bad(&r, "remove: status %u", m->status);
			break;
		case BFC_CHANGES:
			m->status = rd_u8(&r);
			if (!failed(&r) && m->status > BFC_EXISTING)
				bad(&r, "changes: status %u", m->status);
			break;
		case BFC_SAMPLE:
			m->timestamp = (int64_t)rd_le(&r, 8);
			rd_values(&r, m);
			break;
		default:
			bad(&r, "unknown message %u", m->cmd);
		}
	}
	if (!r.bad && r.short_ && len >= BFC_MAX_MSG)
		bad(&r, "message longer than %u bytes", BFC_MAX_MSG);
	if (r.bad || r.short_) {
		bfc_msg_free(m);
		return r.bad ? -EPROTO : 0;
	}
	return (int)r.off;
}

void bfc_msg_free(struct bfc_msg *m)
{
	uint32_t i;

	for (i = 0; i < m->nheaders; i++)
		free(m->headers[i].name);
	for (i = 0; i < m->ncounters; i++) {
		free(m->counters[i].name);
		free(m->counters[i].category);
	}
	for (i = 0; i < m->nvalues; i++)
		free(m->values[i].data);
	free(m->headers);
	free(m->counters);
	free(m->values);
	free(m->name);
	free(m->category);
	memset(m, 0, sizeof(*m));
}

/* ---- encoding ---- */

static int put(struct bft_buf *b, uint64_t v, unsigned int n)
{
	uint8_t t[8];

	put_le(t, v, n);
	return bft_buf_append(b, t, n);
}

static int put_str(struct bft_buf *b, const char *s)
{
	size_t n;
	int e;

	if (!s)
		return put(b, (uint32_t)-1, 4);
	n = strlen(s);
	if (n > BFC_MAX_STRING)
		return -EINVAL;
	e = put(b, n, 4);
	return e || !n ? e : bft_buf_append(b, s, n);
}

static int put_header(struct bft_buf *b, const struct bfc_header *h)
{
	if (!h->name || h->index < 0)
		return -EINVAL;
	return put(b, (uint32_t)h->category, 4) ?: put_str(b, h->name) ?:
	       put(b, (uint32_t)h->type, 4) ?: put(b, (uint32_t)h->unit, 4) ?:
	       put(b, (uint32_t)h->variance, 4) ?:
	       put(b, (uint16_t)h->index, 2);
}

/* Sampled ten times a second with a thousand values: one reservation. */
static int encode_sample(struct bft_buf *b, const struct bfc_msg *m)
{
	size_t need = 8 + 2;
	uint8_t *p;
	uint32_t i;

	for (i = 0; i < m->nvalues; i++) {
		if (m->values[i].index < 0 || m->values[i].size > 0x7fff)
			return -EINVAL;
		need += 4 + m->values[i].size;
	}
	if (bft_buf_reserve(b, need))
		return -ENOMEM;
	p = b->data + b->len;
	put_le(p, (uint64_t)m->timestamp, 8);
	p += 8;
	for (i = 0; i < m->nvalues; i++) {
		const struct bfc_value *v = &m->values[i];

		put_le(p, (uint16_t)v->index, 2);
		put_le(p + 2, v->size, 2);
		if (v->size)
			memcpy(p + 4, v->data, v->size);
		p += 4 + v->size;
	}
	put_le(p, 0xffff, 2);
	b->len += need;
	return 0;
}

static int encode(struct bft_buf *b, enum bfc_dir dir, const struct bfc_msg *m)
{
	uint32_t i;
	int e = put(b, m->cmd, 1);

	if (e)
		return e;
	if (dir == BFC_TO_AGENT) {
		switch (m->cmd) {
		case BFC_LIST:
		case BFC_BYE:
			return 0;
		case BFC_ADD:
			return put_str(b, m->name) ?: put_str(b, m->category);
		case BFC_REMOVE:
			return put(b, (uint16_t)m->index, 2);
		case BFC_CHANGES:
			return m->changes > 1 ? -EINVAL : put(b, m->changes, 1);
		}
		return -EINVAL;
	}
	switch (m->cmd) {
	case BFC_HELLO:
		if (m->nheaders > 0x7fff)
			return -EINVAL;
		e = put(b, (uint16_t)m->version, 2) ?: put(b, m->nheaders, 2);
		for (i = 0; !e && i < m->nheaders; i++)
			e = put_header(b, &m->headers[i]);
		return e;
	case BFC_LIST:
		for (i = 0; !e && i < m->ncounters; i++) {
			if (!m->counters[i].name)
				return -EINVAL;
			e = put_str(b, m->counters[i].name) ?:
			    put_str(b, m->counters[i].category);
		}
		return e ?: put_str(b, NULL);
	case BFC_ADD:
		if (m->status > BFC_EXISTING ||
		    (m->status == BFC_OK && m->nheaders != 1))
			return -EINVAL;
		e = put(b, m->status, 1);
		if (!e && m->status == BFC_OK)
			e = put_header(b, &m->headers[0]);
		return e;
	case BFC_REMOVE:
	case BFC_CHANGES:
		return m->status > BFC_EXISTING ? -EINVAL : put(b, m->status, 1);
	case BFC_SAMPLE:
		return encode_sample(b, m);
	}
	return -EINVAL;
}

int bfc_encode(struct bft_buf *b, enum bfc_dir dir, const struct bfc_msg *m)
{
	size_t was = b->len;
	int e = encode(b, dir, m);

	if (e)
		b->len = was;	/* nothing half-written */
	return e;
}
