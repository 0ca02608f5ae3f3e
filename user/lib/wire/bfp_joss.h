/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Java Object Serialization Stream protocol (the grammar of the Java
 * Object Serialization Specification, chapter 6), as much of it as a
 * configuration object needs: objects of Serializable classes (with or
 * without writeObject methods), Externalizable ones written in block-data
 * mode, arrays, strings, enums, class objects, back references, block data
 * and resets.  Proxy class descriptors and exceptions in the stream are
 * refused.
 *
 * The reader builds a tree in an arena; every length and count is checked
 * against the bytes that remain, nesting is bounded (objects inside
 * objects and superclass descriptors inside class descriptors share one
 * limit of 32 levels, so no input can exhaust the stack), the tree may
 * take at most 64 MiB (a stream that would need more is refused: nulls are
 * free, but an array slot costs 16 bytes for one byte of stream), and a
 * malformed or truncated stream is an error with the offset where it went
 * wrong.
 *
 * The writer side is a handful of helpers that keep the handle table the
 * way ObjectOutputStream does (class descriptors and type strings shared by
 * back reference), enough to write what Java would write for simple objects.
 */
#ifndef BFP_JOSS_H
#define BFP_JOSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/bft_varint.h"

#define JOSS_MAGIC		0xaced
#define JOSS_VERSION		5
#define JOSS_BASE_HANDLE	0x7e0000u

#define TC_NULL			0x70
#define TC_REFERENCE		0x71
#define TC_CLASSDESC		0x72
#define TC_OBJECT		0x73
#define TC_STRING		0x74
#define TC_ARRAY		0x75
#define TC_CLASS		0x76
#define TC_BLOCKDATA		0x77
#define TC_ENDBLOCKDATA		0x78
#define TC_RESET		0x79
#define TC_BLOCKDATALONG	0x7a
#define TC_EXCEPTION		0x7b
#define TC_LONGSTRING		0x7c
#define TC_PROXYCLASSDESC	0x7d
#define TC_ENUM			0x7e

#define SC_WRITE_METHOD		0x01
#define SC_SERIALIZABLE		0x02
#define SC_EXTERNALIZABLE	0x04
#define SC_BLOCK_DATA		0x08
#define SC_ENUM			0x10

enum joss_kind {
	JOSS_NULL,
	JOSS_STRING,	/* str/len: UTF-8 */
	JOSS_OBJECT,	/* desc, levels */
	JOSS_ARRAY,	/* desc, count, elems */
	JOSS_ENUM,	/* desc, str/len: constant name */
	JOSS_CLASS,	/* desc */
	JOSS_BLOCK,	/* str/len: raw block data bytes */
};

struct joss_field {
	char code;		/* B C D F I J S Z L [ */
	const char *name;
	const char *type;	/* L and [: the field's type string */
};

struct joss_classdesc {
	const char *name;
	int64_t suid;
	uint8_t flags;		/* SC_* */
	uint16_t nfields;
	struct joss_field *fields;
	struct joss_classdesc *super;
};

struct joss_value;

/* A field value or array element: prim for primitives, obj otherwise. */
struct joss_slot {
	int64_t prim;		/* D and F: the raw IEEE bits */
	struct joss_value *obj;
};

/* The data one class of an object's hierarchy wrote. */
struct joss_level {
	struct joss_classdesc *desc;
	struct joss_slot *vals;		/* one per desc->fields */
	struct joss_value **annot;	/* writeObject/writeExternal contents */
	uint32_t nannot;
};

struct joss_value {
	enum joss_kind kind;
	const char *str;
	size_t len;
	struct joss_classdesc *desc;
	struct joss_level *levels;	/* OBJECT: topmost superclass first */
	uint32_t nlevels;
	uint32_t count;			/* ARRAY */
	struct joss_slot *elems;
};

struct joss;

/*
 * Parse a whole stream holding one object (the magic, the version, one
 * content, nothing after it).  *root is the object; it and everything it
 * reaches live until joss_free(*jp).  Returns 0, -EPROTO (err says why and
 * where) or -ENOMEM.
 */
int joss_parse(const uint8_t *p, size_t n, struct joss **jp,
	       struct joss_value **root, char *err, size_t errlen);
void joss_free(struct joss *j);

/*
 * The slot of the field named name in obj's data, searching from the most
 * derived class up; its type code in *code.  NULL if absent.
 */
const struct joss_slot *joss_field(const struct joss_value *obj,
				   const char *name, char *code);

/* ---- writing ---- */

struct joss_writer {
	struct bft_buf *out;
	uint32_t next;		/* the next handle, from JOSS_BASE_HANDLE */
	/* handles of what may be referenced again: descriptors, type strings */
	struct { const char *key; uint32_t handle; } shared[32];
	unsigned int nshared;
	int err;		/* first error, sticky */
};

void joss_w_init(struct joss_writer *w, struct bft_buf *out);
void joss_w_u8(struct joss_writer *w, uint8_t v);
void joss_w_u16(struct joss_writer *w, uint16_t v);
void joss_w_u32(struct joss_writer *w, uint32_t v);
void joss_w_u64(struct joss_writer *w, uint64_t v);
void joss_w_utf(struct joss_writer *w, const char *s);
/*
 * A new string object: TC_STRING, a handle, the text; TC_LONGSTRING if its
 * modified UTF-8 exceeds 65535 bytes.
 */
void joss_w_string(struct joss_writer *w, const char *s);
/*
 * A shared string or class descriptor: if key was written before, write
 * TC_REFERENCE to it and return true; else assign the next handle to key
 * and return false (the caller then writes the new thing).  key must
 * outlive the writer.
 */
bool joss_w_shared(struct joss_writer *w, const char *key);
/* A field's type string (shared, as ObjectOutputStream interns them). */
void joss_w_type(struct joss_writer *w, const char *type);
/* A new handle for an object or array being written. */
void joss_w_handle(struct joss_writer *w);
/* Block data: the bytes in one TC_BLOCKDATA record. */
void joss_w_block(struct joss_writer *w, const void *p, uint8_t n);

#endif /* BFP_JOSS_H */
