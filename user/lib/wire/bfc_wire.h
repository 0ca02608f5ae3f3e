/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The counters protocol (seed 003) as bftrace speaks it: an agent
 * (bfcollector) connects to an inspector (bfhq --counters), says Hello
 * with the headers of the counters it samples, answers List, Add and
 * Remove, and streams Samples until Good Bye.  Little-endian; strings are
 * an int length (-1: null) and that many bytes.  The choices where the
 * seed is silent or Mono's agent differs are those of
 * notes/counters-wire.md: request ids are the seed's (1, 2, 3, 127).
 *
 * bfc_decode() takes bytes as they came: it never reads past len, never
 * allocates more than the input could describe, and says "need more"
 * (0) or "malformed" (-EPROTO, with a reason) for anything else.
 */
#ifndef BFC_WIRE_H
#define BFC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/bft_varint.h"

#define BFC_VERSION		1	/* "0.1" */

/* Command ids, the first byte of every message. */
enum bfc_cmd {
	BFC_HELLO = 0,		/* agent -> inspector */
	BFC_LIST = 1,		/* request and response */
	BFC_ADD = 2,		/* request and response */
	BFC_REMOVE = 3,		/* request and response */
	BFC_SAMPLE = 4,		/* agent -> inspector */
	/*
	 * Request and response, a bftrace extension (the seed has no way to
	 * ask for it): "05 01" asks that from the next Sample on, a Sample
	 * carry only the values that differ, byte for byte, from those the
	 * agent last sent (the first one after it carries them all, and so
	 * does a counter's first after its Add); "05 00" asks for every value
	 * again.  The agent answers "05" and a status (OK).  An inspector
	 * keeps each counter's last value.  A Sample with no value still
	 * says when the agent sampled.
	 */
	BFC_CHANGES = 5,
	BFC_BYE = 127,		/* inspector -> agent */
};

/* Who reads: requests and responses share ids 1..3. */
enum bfc_dir {
	BFC_TO_AGENT,		/* List, Add, Remove, Changes; Good Bye */
	BFC_TO_INSPECTOR,	/* Hello, responses, Samples */
};

enum bfc_status {
	BFC_OK = 0,
	BFC_NOK = 1,
	BFC_NOTFOUND = 2,
	BFC_EXISTING = 3,
};

/* Header fields, numbered as Mono's mono-counters (2014). */
enum bfc_type {
	BFC_TYPE_INT = 0,	/* 4 bytes */
	BFC_TYPE_LONG = 1,	/* 8 bytes */
	BFC_TYPE_WORD = 2,	/* machine word: 8 bytes here */
	BFC_TYPE_DOUBLE = 3,	/* 8 bytes, IEEE 754 */
};

enum bfc_unit {
	BFC_UNIT_NONE = 0,	/* raw value */
	BFC_UNIT_BYTES = 1,
	BFC_UNIT_TIME = 2,	/* 100 ns units */
	BFC_UNIT_EVENTS = 3,	/* how many times something happened */
	BFC_UNIT_CONFIG = 4,	/* a setting */
	BFC_UNIT_PERCENTAGE = 5,
};

enum bfc_variance {
	BFC_VAR_CONSTANT = 1,
	BFC_VAR_MONOTONIC = 2,
	BFC_VAR_VARIABLE = 3,
};

/*
 * Categories: Mono numbers its own (JIT 0 ... custom 8); bftrace's are
 * past them so that an inspector that knows Mono's does not mistake ours.
 * Each has a name, which List and Add carry as a string.
 */
enum bfc_category {
	BFC_CAT_METHOD = 16,	/* "Method": one per traced method */
	BFC_CAT_RING = 17,	/* "Ring": one per CPU ring */
	BFC_CAT_COLLECTOR = 18,	/* "Collector" */
	BFC_CAT_KERNEL = 19,	/* "Kernel": bftrace.ko */
};

const char *bfc_category_name(int32_t cat);	/* NULL if not ours */
int32_t bfc_category_id(const char *name);	/* -1 if not ours */
const char *bfc_type_name(int32_t type);
const char *bfc_unit_name(int32_t unit);
const char *bfc_variance_name(int32_t var);
const char *bfc_status_name(uint8_t status);
/* Bytes a value of this type takes in a sample, 0 if unknown. */
unsigned int bfc_type_size(int32_t type);

/* Bounds on what a peer may make us hold. */
#define BFC_MAX_STRING		4096	/* bytes of one string */
#define BFC_MAX_MSG		(1u << 20)

struct bfc_header {
	int32_t category;
	char *name;
	int32_t type, unit, variance;
	int16_t index;
};

struct bfc_counter {		/* an entry of a List response */
	char *name;
	char *category;
};

struct bfc_value {
	int16_t index;
	uint16_t size;
	uint8_t *data;		/* size bytes */
};

struct bfc_msg {
	uint8_t cmd;		/* enum bfc_cmd */
	int16_t version;	/* Hello */
	struct bfc_header *headers;	/* Hello; Add response (one, if OK) */
	uint32_t nheaders;
	struct bfc_counter *counters;	/* List response */
	uint32_t ncounters;
	char *name, *category;	/* Add request (either may be NULL) */
	uint8_t status;		/* Add, Remove, Changes responses */
	uint8_t changes;	/* Changes request: 1 changed only, 0 all */
	int16_t index;		/* Remove request; -1: every counter */
	int64_t timestamp;	/* Sample: 100 ns ticks since 0001-01-01 */
	struct bfc_value *values;
	uint32_t nvalues;
};

/*
 * One message from buf: > 0 the bytes it took (*m filled, release with
 * bfc_msg_free), 0 incomplete, -EPROTO malformed (err says why; the
 * stream cannot be resynchronised), -ENOMEM.
 */
int bfc_decode(const uint8_t *buf, size_t len, enum bfc_dir dir,
	       struct bfc_msg *m, char *err, size_t errlen);
/* Append m as dir's reader expects it: 0, -EINVAL (unencodable), -ENOMEM. */
int bfc_encode(struct bft_buf *b, enum bfc_dir dir, const struct bfc_msg *m);
void bfc_msg_free(struct bfc_msg *m);

/* Unix time (ns) to the Sample's ticks, and back. */
int64_t bfc_ticks_from_unix_ns(int64_t ns);
int64_t bfc_ticks_to_unix_ns(int64_t ticks);

/* A value's bytes as a number; false if size does not fit type. */
bool bfc_value_get(int32_t type, const uint8_t *p, uint16_t size,
		   double *out, int64_t *iout);
/* Write v as type into out (8 bytes at least); returns its size. */
unsigned int bfc_value_put(int32_t type, int64_t iv, double dv, uint8_t *out);

#endif /* BFC_WIRE_H */
