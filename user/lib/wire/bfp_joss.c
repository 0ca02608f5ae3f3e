// SPDX-License-Identifier: GPL-2.0
/*
 * The reader follows the grammar of the serialization specification rule
 * by rule; every function is named after the rule it reads.  Handles are
 * assigned in exactly the order ObjectInputStream assigns them (a class
 * descriptor before its fields, an object before its data), or back
 * references would point at the wrong thing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/bfp_joss.h"
#include "wire/bfp_wire.h"

#define JOSS_MAX_DEPTH		32
#define JOSS_MAX_HANDLES	(1u << 20)
/*
 * What the tree may cost, whatever the input: one byte of stream can make
 * sixteen of tree (an array slot), so 16 MiB of nulls took 1.3 GiB.
 */
#define JOSS_MAX_ARENA		(64u << 20)

struct chunk {
	struct chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct handle {
	struct joss_value *val;		/* or */
	struct joss_classdesc *desc;
};

struct joss {
	struct chunk *chunks;
	size_t arena;			/* bytes of chunks */
	struct joss_value null;		/* every null is this one */
	struct handle *handles;
	uint32_t nhandles, cap;
	struct bfp_rd r;
	unsigned int depth;
	char *err;
	size_t errlen;
	int code;
};

static int bad(struct joss *j, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (j->code)
		return j->code;
	j->code = -EPROTO;
	if (j->errlen) {
		n = snprintf(j->err, j->errlen, "offset %zu: ", j->r.pos);
		if (n < 0 || (size_t)n >= j->errlen)
			n = 0;
		va_start(ap, fmt);
		vsnprintf(j->err + n, j->errlen - n, fmt, ap);
		va_end(ap);
	}
	return j->code;
}

static void *alloc(struct joss *j, size_t n)
{
	struct chunk *c = j->chunks;
	size_t a = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);

	if (!c || c->cap - c->used < a) {
		size_t cap = a > 16384 ? a : 16384;

		if (cap > JOSS_MAX_ARENA - j->arena) {
			bad(j, "decoding it would take more than %u MiB",
			    JOSS_MAX_ARENA >> 20);
			return NULL;
		}
		c = malloc(sizeof(*c) + cap);
		if (!c) {
			if (!j->code) {
				j->code = -ENOMEM;
				snprintf(j->err, j->errlen, "out of memory");
			}
			return NULL;
		}
		c->cap = cap;
		c->used = 0;
		c->next = j->chunks;
		j->chunks = c;
		j->arena += cap;
	}
	c->used += a;
	return memset((char *)c->data + c->used - a, 0, a);
}

void joss_free(struct joss *j)
{
	if (!j)
		return;
	while (j->chunks) {
		struct chunk *c = j->chunks;

		j->chunks = c->next;
		free(c);
	}
	free(j->handles);
	free(j);
}

static int new_handle(struct joss *j, struct joss_value *v,
		      struct joss_classdesc *d)
{
	if (j->nhandles == j->cap) {
		uint32_t cap = j->cap ? 2 * j->cap : 64;
		struct handle *h;

		if (cap > JOSS_MAX_HANDLES)
			return bad(j, "too many objects");
		h = realloc(j->handles, cap * sizeof(*h));
		if (!h) {
			if (!j->code) {
				j->code = -ENOMEM;
				snprintf(j->err, j->errlen, "out of memory");
			}
			return j->code;
		}
		j->handles = h;
		j->cap = cap;
	}
	j->handles[j->nhandles].val = v;
	j->handles[j->nhandles].desc = d;
	j->nhandles++;
	return 0;
}

static bool get8(struct joss *j, uint8_t *v)
{
	if (bfp_get_u8(&j->r, v))
		return true;
	bad(j, "truncated");
	return false;
}

static bool get16(struct joss *j, uint16_t *v)
{
	if (bfp_get_u16(&j->r, v))
		return true;
	bad(j, "truncated");
	return false;
}

static bool get32(struct joss *j, uint32_t *v)
{
	if (bfp_get_u32(&j->r, v))
		return true;
	bad(j, "truncated");
	return false;
}

static bool get64(struct joss *j, uint64_t *v)
{
	if (bfp_get_u64(&j->r, v))
		return true;
	bad(j, "truncated");
	return false;
}

/* Modified UTF-8 of len bytes into the arena, as UTF-8. */
static const char *utf_body(struct joss *j, uint64_t len, size_t *outlen)
{
	const uint8_t *p;
	char *s;
	int n;

	if (len > bfp_rd_left(&j->r)) {
		bad(j, "truncated string (%llu bytes announced)",
		    (unsigned long long)len);
		return NULL;
	}
	bfp_get_bytes(&j->r, (size_t)len, &p);
	s = alloc(j, (size_t)len + 1);
	if (!s)
		return NULL;
	n = bfp_mutf8_decode(p, (size_t)len, s);
	if (n < 0) {
		bad(j, "malformed modified UTF-8");
		return NULL;
	}
	if (outlen)
		*outlen = (size_t)n;
	return s;
}

static const char *utf(struct joss *j)
{
	uint16_t len;

	if (!get16(j, &len))
		return NULL;
	return utf_body(j, len, NULL);
}

static struct joss_value *content(struct joss *j, bool allow_block);
static struct joss_classdesc *class_desc(struct joss *j);

static struct joss_value *prev_object(struct joss *j)
{
	uint32_t h;

	if (!get32(j, &h))
		return NULL;
	if (h < JOSS_BASE_HANDLE || h - JOSS_BASE_HANDLE >= j->nhandles) {
		bad(j, "reference to unknown handle 0x%x", h);
		return NULL;
	}
	h -= JOSS_BASE_HANDLE;
	if (!j->handles[h].val) {
		bad(j, "reference to a class descriptor where an object belongs");
		return NULL;
	}
	return j->handles[h].val;
}

/* newString: TC_STRING newHandle utf | TC_LONGSTRING newHandle long-utf */
static struct joss_value *new_string(struct joss *j, uint8_t tc)
{
	struct joss_value *v = alloc(j, sizeof(*v));
	uint64_t len;

	if (!v || new_handle(j, v, NULL))
		return NULL;
	v->kind = JOSS_STRING;
	if (tc == TC_STRING) {
		uint16_t l16;

		if (!get16(j, &l16))
			return NULL;
		len = l16;
	} else if (!get64(j, &len)) {
		return NULL;
	}
	v->str = utf_body(j, len, &v->len);
	return v->str ? v : NULL;
}

/* A string object where the grammar wants one (type names, enum names). */
static const char *string_object(struct joss *j)
{
	struct joss_value *v = content(j, false);

	if (!v)
		return NULL;
	if (v->kind != JOSS_STRING) {
		bad(j, "a string was expected");
		return NULL;
	}
	return v->str;
}

/* classAnnotation: contents endBlockData; the contents are not needed. */
static bool skip_annotation(struct joss *j)
{
	for (;;) {
		uint8_t tc;

		if (bfp_rd_left(&j->r) && j->r.p[j->r.pos] == TC_ENDBLOCKDATA) {
			j->r.pos++;
			return true;
		}
		if (!bfp_rd_left(&j->r)) {
			get8(j, &tc);
			return false;
		}
		if (!content(j, true))
			return false;
	}
}

static bool prim_code(char c)
{
	return c && strchr("BCDFIJSZ", c);
}

/* newClassDesc: TC_CLASSDESC className suid newHandle classDescInfo */
static struct joss_classdesc *new_class_desc(struct joss *j)
{
	struct joss_classdesc *d = alloc(j, sizeof(*d));
	uint64_t suid;
	unsigned int i;

	if (!d)
		return NULL;
	d->name = utf(j);
	if (!d->name || !get64(j, &suid) || new_handle(j, NULL, d) ||
	    !get8(j, &d->flags) || !get16(j, &d->nfields))
		return NULL;
	d->suid = (int64_t)suid;
	/* Each field takes at least 3 bytes: refuse absurd counts early. */
	if (d->nfields > bfp_rd_left(&j->r) / 3) {
		bad(j, "class %s: %u fields cannot fit", d->name, d->nfields);
		return NULL;
	}
	d->fields = alloc(j, (d->nfields + 1) * sizeof(*d->fields));
	if (!d->fields)
		return NULL;
	for (i = 0; i < d->nfields; i++) {
		struct joss_field *f = &d->fields[i];
		uint8_t code;

		if (!get8(j, &code))
			return NULL;
		f->code = (char)code;
		f->name = utf(j);
		if (!f->name)
			return NULL;
		if (code == 'L' || code == '[') {
			f->type = string_object(j);
			if (!f->type)
				return NULL;
		} else if (!prim_code(f->code)) {
			bad(j, "class %s: bad field type code 0x%02x",
			    d->name, code);
			return NULL;
		}
	}
	if (!skip_annotation(j))
		return NULL;
	/*
	 * A superclass is read inside its subclass: count it like nested
	 * content, or a chain of descriptors exhausts the stack.
	 */
	if (++j->depth > JOSS_MAX_DEPTH) {
		bad(j, "class descriptors nested too deeply");
		return NULL;
	}
	d->super = class_desc(j);
	j->depth--;
	if (j->code)
		return NULL;
	return d;
}

/* classDesc: newClassDesc | nullReference | (ClassDesc)prevObject */
static struct joss_classdesc *class_desc(struct joss *j)
{
	uint8_t tc;
	uint32_t h;

	if (!get8(j, &tc))
		return NULL;
	switch (tc) {
	case TC_NULL:
		return NULL;
	case TC_CLASSDESC:
		return new_class_desc(j);
	case TC_REFERENCE:
		if (!get32(j, &h))
			return NULL;
		if (h < JOSS_BASE_HANDLE || h - JOSS_BASE_HANDLE >= j->nhandles ||
		    !j->handles[h - JOSS_BASE_HANDLE].desc) {
			bad(j, "class descriptor reference 0x%x is invalid", h);
			return NULL;
		}
		return j->handles[h - JOSS_BASE_HANDLE].desc;
	case TC_PROXYCLASSDESC:
		bad(j, "proxy class descriptors are not supported");
		return NULL;
	default:
		bad(j, "class descriptor expected, got 0x%02x", tc);
		return NULL;
	}
}

static bool read_prim(struct joss *j, char code, int64_t *v)
{
	uint8_t b;
	uint16_t s;
	uint32_t i;
	uint64_t l;

	switch (code) {
	case 'B':
		if (!get8(j, &b))
			return false;
		*v = (int8_t)b;
		return true;
	case 'Z':
		if (!get8(j, &b))
			return false;
		*v = b;
		return true;
	case 'C':
		if (!get16(j, &s))
			return false;
		*v = s;
		return true;
	case 'S':
		if (!get16(j, &s))
			return false;
		*v = (int16_t)s;
		return true;
	case 'I':
		if (!get32(j, &i))
			return false;
		*v = (int32_t)i;
		return true;
	case 'F':
		if (!get32(j, &i))
			return false;
		*v = i;
		return true;
	default:	/* J, D */
		if (!get64(j, &l))
			return false;
		*v = (int64_t)l;
		return true;
	}
}

/* objectAnnotation: contents endBlockData, kept. */
static bool annotation(struct joss *j, struct joss_level *lv)
{
	uint32_t cap = 0;

	for (;;) {
		struct joss_value *v, **a;

		if (!bfp_rd_left(&j->r)) {
			bad(j, "truncated (end of block data expected)");
			return false;
		}
		if (j->r.p[j->r.pos] == TC_ENDBLOCKDATA) {
			j->r.pos++;
			return true;
		}
		v = content(j, true);
		if (!v)
			return false;
		if (lv->nannot == cap) {
			cap = cap ? 2 * cap : 4;
			a = alloc(j, cap * sizeof(*a));
			if (!a)
				return false;
			if (lv->nannot)
				memcpy(a, lv->annot, lv->nannot * sizeof(*a));
			lv->annot = a;
		}
		lv->annot[lv->nannot++] = v;
	}
}

/* classdata of one level: values, then objectAnnotation if written so */
static bool class_data(struct joss *j, struct joss_level *lv)
{
	struct joss_classdesc *d = lv->desc;
	unsigned int i, pass;

	if (d->flags & SC_EXTERNALIZABLE) {
		if (!(d->flags & SC_BLOCK_DATA)) {
			bad(j, "class %s: externalizable without block data "
			    "cannot be read", d->name);
			return false;
		}
		return annotation(j, lv);
	}
	if (!(d->flags & SC_SERIALIZABLE))
		return true;
	lv->vals = alloc(j, (d->nfields + 1) * sizeof(*lv->vals));
	if (!lv->vals)
		return false;
	/* Primitive data comes first, then the object fields. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < d->nfields; i++) {
			const struct joss_field *f = &d->fields[i];
			bool prim = prim_code(f->code);

			if (pass == 0 && prim) {
				if (!read_prim(j, f->code, &lv->vals[i].prim))
					return false;
			} else if (pass == 1 && !prim) {
				lv->vals[i].obj = content(j, false);
				if (!lv->vals[i].obj)
					return false;
			}
		}
	}
	if (d->flags & SC_WRITE_METHOD)
		return annotation(j, lv);
	return true;
}

/* newObject: TC_OBJECT classDesc newHandle classdata[] */
static struct joss_value *new_object(struct joss *j)
{
	struct joss_value *v = alloc(j, sizeof(*v));
	struct joss_classdesc *d;
	uint32_t n = 0, i;

	if (!v)
		return NULL;
	v->kind = JOSS_OBJECT;
	v->desc = class_desc(j);
	if (!v->desc) {
		if (!j->code)
			bad(j, "object of null class");
		return NULL;
	}
	if (new_handle(j, v, NULL))
		return NULL;
	for (d = v->desc; d; d = d->super)
		if (++n > JOSS_MAX_DEPTH) {
			bad(j, "class hierarchy too deep");
			return NULL;
		}
	v->levels = alloc(j, n * sizeof(*v->levels));
	if (!v->levels)
		return NULL;
	v->nlevels = n;
	for (d = v->desc, i = n; d; d = d->super)
		v->levels[--i].desc = d;
	for (i = 0; i < n; i++)
		if (!class_data(j, &v->levels[i]))
			return NULL;
	return v;
}

/* newArray: TC_ARRAY classDesc newHandle (int)size values[size] */
static struct joss_value *new_array(struct joss *j)
{
	struct joss_value *v = alloc(j, sizeof(*v));
	uint32_t size, i;
	char code;

	if (!v)
		return NULL;
	v->kind = JOSS_ARRAY;
	v->desc = class_desc(j);
	if (!v->desc) {
		if (!j->code)
			bad(j, "array of null class");
		return NULL;
	}
	if (v->desc->name[0] != '[' || !v->desc->name[1]) {
		bad(j, "array class %s is not an array type", v->desc->name);
		return NULL;
	}
	code = v->desc->name[1];
	if (new_handle(j, v, NULL) || !get32(j, &size))
		return NULL;
	/* Every element takes at least one byte. */
	if (size > bfp_rd_left(&j->r)) {
		bad(j, "array of %d elements cannot fit", (int32_t)size);
		return NULL;
	}
	v->count = size;
	v->elems = alloc(j, ((size_t)size + 1) * sizeof(*v->elems));
	if (!v->elems)
		return NULL;
	for (i = 0; i < size; i++) {
		if (prim_code(code)) {
			if (!read_prim(j, code, &v->elems[i].prim))
				return NULL;
		} else if (code == 'L' || code == '[') {
			v->elems[i].obj = content(j, false);
			if (!v->elems[i].obj)
				return NULL;
		} else {
			bad(j, "array class %s: bad element type",
			    v->desc->name);
			return NULL;
		}
	}
	return v;
}

/* Shared: nulls cost nothing however many the stream holds. */
static struct joss_value *null_value(struct joss *j)
{
	j->null.kind = JOSS_NULL;
	return &j->null;
}

static struct joss_value *block(struct joss *j, uint8_t tc)
{
	struct joss_value *v = alloc(j, sizeof(*v));
	const uint8_t *p;
	uint32_t len;
	uint8_t l8;

	if (!v)
		return NULL;
	if (tc == TC_BLOCKDATA) {
		if (!get8(j, &l8))
			return NULL;
		len = l8;
	} else if (!get32(j, &len)) {
		return NULL;
	}
	if (!bfp_get_bytes(&j->r, len, &p)) {
		bad(j, "truncated block data (%u bytes announced)", len);
		return NULL;
	}
	v->kind = JOSS_BLOCK;
	v->str = (const char *)p;
	v->len = len;
	return v;
}

/* content: object | blockdata (where allowed) */
static struct joss_value *content(struct joss *j, bool allow_block)
{
	struct joss_value *v = NULL;
	uint8_t tc;

	if (++j->depth > JOSS_MAX_DEPTH) {
		bad(j, "objects nested too deeply");
		goto out;
	}
	if (!get8(j, &tc))
		goto out;
	switch (tc) {
	case TC_NULL:
		v = null_value(j);
		break;
	case TC_REFERENCE:
		v = prev_object(j);
		break;
	case TC_STRING:
	case TC_LONGSTRING:
		v = new_string(j, tc);
		break;
	case TC_OBJECT:
		v = new_object(j);
		break;
	case TC_ARRAY:
		v = new_array(j);
		break;
	case TC_CLASS:
		v = alloc(j, sizeof(*v));
		if (!v)
			break;
		v->kind = JOSS_CLASS;
		v->desc = class_desc(j);
		if (j->code || new_handle(j, v, NULL))
			v = NULL;
		break;
	case TC_ENUM:
		v = alloc(j, sizeof(*v));
		if (!v)
			break;
		v->kind = JOSS_ENUM;
		v->desc = class_desc(j);
		if (j->code || new_handle(j, v, NULL)) {
			v = NULL;
			break;
		}
		v->str = string_object(j);
		if (!v->str)
			v = NULL;
		break;
	case TC_CLASSDESC:
		/* A bare class descriptor as content: read it, return null. */
		j->r.pos--;
		class_desc(j);
		v = j->code ? NULL : null_value(j);
		break;
	case TC_RESET:
		j->nhandles = 0;
		v = content(j, allow_block);
		break;
	case TC_BLOCKDATA:
	case TC_BLOCKDATALONG:
		if (allow_block) {
			v = block(j, tc);
			break;
		}
		bad(j, "block data where an object belongs");
		break;
	case TC_EXCEPTION:
		bad(j, "the stream reports an exception of its writer");
		break;
	default:
		bad(j, "unknown type code 0x%02x", tc);
		break;
	}
out:
	j->depth--;
	if (!v && !j->code)
		bad(j, "malformed");
	return v;
}

int joss_parse(const uint8_t *p, size_t n, struct joss **jp,
	       struct joss_value **root, char *err, size_t errlen)
{
	struct joss *j = calloc(1, sizeof(*j));
	uint16_t magic, version;
	static char dummy[1];

	*jp = NULL;
	*root = NULL;
	if (!j) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	j->err = errlen ? err : dummy;
	j->errlen = errlen;
	bfp_rd_init(&j->r, p, n);
	if (!get16(j, &magic) || !get16(j, &version))
		goto fail;
	if (magic != JOSS_MAGIC || version != JOSS_VERSION) {
		bad(j, "not a Java serialization stream (magic %04x, "
		    "version %u)", magic, version);
		goto fail;
	}
	*root = content(j, false);
	if (!*root)
		goto fail;
	if (bfp_rd_left(&j->r)) {
		bad(j, "%zu bytes after the object", bfp_rd_left(&j->r));
		goto fail;
	}
	*jp = j;
	return 0;
fail:
	{
		int code = j->code ? j->code : -EPROTO;

		*root = NULL;
		joss_free(j);
		return code;
	}
}

const struct joss_slot *joss_field(const struct joss_value *obj,
				   const char *name, char *code)
{
	uint32_t l, i;

	if (!obj || obj->kind != JOSS_OBJECT)
		return NULL;
	for (l = obj->nlevels; l-- > 0;) {
		const struct joss_level *lv = &obj->levels[l];

		if (!lv->vals)
			continue;
		for (i = 0; i < lv->desc->nfields; i++)
			if (!strcmp(lv->desc->fields[i].name, name)) {
				if (code)
					*code = lv->desc->fields[i].code;
				return &lv->vals[i];
			}
	}
	return NULL;
}

/* ---- writer ---- */

void joss_w_init(struct joss_writer *w, struct bft_buf *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->next = JOSS_BASE_HANDLE;
	joss_w_u16(w, JOSS_MAGIC);
	joss_w_u16(w, JOSS_VERSION);
}

void joss_w_u8(struct joss_writer *w, uint8_t v)
{
	if (!w->err)
		w->err = bfp_put_u8(w->out, v);
}

void joss_w_u16(struct joss_writer *w, uint16_t v)
{
	if (!w->err)
		w->err = bfp_put_u16(w->out, v);
}

void joss_w_u32(struct joss_writer *w, uint32_t v)
{
	if (!w->err)
		w->err = bfp_put_u32(w->out, v);
}

void joss_w_u64(struct joss_writer *w, uint64_t v)
{
	if (!w->err)
		w->err = bfp_put_u64(w->out, v);
}

void joss_w_utf(struct joss_writer *w, const char *s)
{
	if (!w->err)
		w->err = bfp_put_utf(w->out, s, strlen(s), false);
}

void joss_w_handle(struct joss_writer *w)
{
	w->next++;
}

void joss_w_string(struct joss_writer *w, const char *s)
{
	size_t n = strlen(s), len = bfp_mutf8_encode(s, n, NULL, 0);

	if (len <= BFP_UTF_MAX) {
		joss_w_u8(w, TC_STRING);
		joss_w_handle(w);
		joss_w_utf(w, s);
		return;
	}
	/* As writeObject does for a string whose encoding needs more. */
	joss_w_u8(w, TC_LONGSTRING);
	joss_w_handle(w);
	joss_w_u64(w, len);
	if (!w->err)
		w->err = bft_buf_reserve(w->out, len);
	if (!w->err)
		w->out->len += bfp_mutf8_encode(s, n, w->out->data + w->out->len,
						len);
}

bool joss_w_shared(struct joss_writer *w, const char *key)
{
	unsigned int i;

	for (i = 0; i < w->nshared; i++)
		if (!strcmp(w->shared[i].key, key)) {
			joss_w_u8(w, TC_REFERENCE);
			joss_w_u32(w, w->shared[i].handle);
			return true;
		}
	if (w->nshared < sizeof(w->shared) / sizeof(w->shared[0])) {
		w->shared[w->nshared].key = key;
		w->shared[w->nshared].handle = w->next;
		w->nshared++;
	}
	return false;
}

void joss_w_type(struct joss_writer *w, const char *type)
{
	if (joss_w_shared(w, type))
		return;
	joss_w_string(w, type);
}

void joss_w_block(struct joss_writer *w, const void *p, uint8_t n)
{
	joss_w_u8(w, TC_BLOCKDATA);
	joss_w_u8(w, n);
	if (!w->err)
		w->err = bft_buf_append(w->out, p, n);
}
