/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bytefrog messages (seeds/000; exact layouts in notes/bytefrog-wire.md §2):
 * one encoder and one decoder per message, side by side in bfp_msg.c.
 *
 * Versions.  bftrace speaks two dialects, chosen by the hello byte:
 *   1  the 2014 Bytefrog layouts: the configuration is a Java serialization
 *      stream (i32 length), MethodExit carries a u16 line number (17 bytes);
 *   2  the Code Pulse dialect: the configuration is JSON (writeUTF), and
 *      MethodExit carries a boolean "exception thrown" (16 bytes).
 * Every other layout is the same in both.
 *
 * Framing: [u8 id][body], no length, no delimiter.  An unknown id cannot be
 * skipped, so it is fatal to the connection.  Which ids may arrive depends
 * on where one reads (enum bfp_ctx): a message valid on the wire but out of
 * place (say a MethodEntry on the control connection) is an error too.
 *
 * Strings are UTF-8 in struct bfp_msg and modified UTF-8 on the wire
 * (bfp_wire.h).  A decoded message keeps its strings (and configuration) in
 * storage it owns: bfp_msg_free() releases it; a message may be decoded
 * into again without freeing in between.
 */
#ifndef BFP_MSG_H
#define BFP_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire/bft_varint.h"
#include "wire/bfp_config.h"

#define BFP_VERSION_MIN	1
#define BFP_VERSION_MAX	2

enum bfp_id {
	BFP_HELLO = 0,
	BFP_CONFIG = 1,
	BFP_START = 2,
	BFP_STOP = 3,
	BFP_PAUSE = 4,
	BFP_UNPAUSE = 5,
	BFP_SUSPEND = 6,
	BFP_UNSUSPEND = 7,
	BFP_HEARTBEAT = 8,
	BFP_DATA_BREAK = 9,
	BFP_MAP_THREAD = 10,
	BFP_MAP_METHOD = 11,
	BFP_MAP_EXCEPTION = 12,
	BFP_METHOD_ENTRY = 20,
	BFP_METHOD_EXIT = 21,
	BFP_EXCEPTION = 22,
	BFP_EXCEPTION_BUBBLE = 23,
	BFP_DATA_HELLO = 30,
	BFP_DATA_HELLO_REPLY = 31,
	BFP_CLASS_TRANSFORMED = 40,
	BFP_CLASS_IGNORED = 41,
	BFP_CLASS_FAILED = 42,
	BFP_MARKER = 50,
	/* bftrace's: the end of a UDP data stream (docs/udp-data.md) */
	BFP_DATA_END = 51,
	BFP_ERROR = 99,
};

/* Heartbeat modes of operation. */
enum bfp_mode {
	BFP_MODE_INITIALIZING = 'I',
	BFP_MODE_TRACING = 'T',
	BFP_MODE_PAUSED = 'P',
	BFP_MODE_SUSPENDED = 'S',
	BFP_MODE_SHUTDOWN = 'X',
};

/* Where a message is read: the decoder refuses what cannot arrive there. */
enum bfp_ctx {
	BFP_CTX_ANY,		/* every known id (tests, dumps) */
	BFP_CTX_AGENT_CONTROL,	/* agent reads HQ's control messages */
	BFP_CTX_AGENT_DATA,	/* agent reads a data connection's reply */
	BFP_CTX_HQ_GREETING,	/* HQ reads a new socket's first message */
	BFP_CTX_HQ_CONTROL,	/* HQ reads an agent's control connection */
	BFP_CTX_HQ_DATA,	/* HQ reads a data connection */
};

struct bfp_msg {
	uint8_t id;		/* enum bfp_id */
	uint8_t version;	/* HELLO: protocol version */
	uint8_t run_id;		/* DATA_HELLO */
	uint8_t mode;		/* HEARTBEAT: enum bfp_mode */
	uint16_t queue;		/* HEARTBEAT: send queue size */
	uint16_t thread;	/* MAP_THREAD and events: thread id */
	uint16_t line;		/* v1 METHOD_EXIT, EXCEPTION: line number */
	bool exception_thrown;	/* v2 METHOD_EXIT */
	uint32_t time;		/* MAP_THREAD and events: ms since hello */
	uint32_t seq;		/* events, MARKER, DATA_BREAK */
	uint32_t method;	/* MAP_METHOD, events: method (signature) id */
	uint32_t exception;	/* MAP_EXCEPTION, EXCEPTION, BUBBLE */
	uint8_t stream;		/* DATA_END: the UDP stream */
	uint32_t packets;	/* DATA_END: datagrams sent on it */
	/* MAP_*: name/signature; CLASS_*: class; ERROR: text; MARKER: key */
	const char *str;
	size_t str_len;
	const char *str2;	/* MARKER: value */
	size_t str2_len;
	/* CONFIG: to encode, the caller's; decoded, owned by the message */
	struct bfp_config *config;
	/* private: storage of decoded strings and configuration */
	struct bft_buf store;
	struct bfp_config own_config;
};

/* Decoding errors beyond "need more bytes". */
struct bfp_error {
	int code;		/* -EPROTO, -EMSGSIZE, -EILSEQ, -ENOMEM */
	char msg[160];
};

#define BFP_CONFIG_V1_MAX	(1u << 24)	/* sanity limit of the i32 length */

/*
 * Encode m for protocol version (1 or 2), appended to out.  Returns 0,
 * -EINVAL (unknown id, or a field this version cannot carry), -EMSGSIZE (a
 * configuration too large for its version) or -ENOMEM.  Names longer than
 * a UTF can hold are truncated, as the protocol says.
 */
int bfp_encode(struct bft_buf *out, unsigned int version,
	       const struct bfp_msg *m);

/*
 * MethodEntry and MethodExit, nearly all of a data connection's bytes, have
 * fixed layouts (notes/bytefrog-wire.md §2): bfp_put_call writes one whole
 * (id byte included) at p, which must have room for BFP_CALL_MAX bytes, and
 * returns its length.  bfp_encode uses it too, so the layout is written in
 * one place.  line is v1's exit line number, thrown v2's exception flag.
 */
#define BFP_ENTRY_LEN		15
#define BFP_EXIT_LEN(version)	((version) == 1 ? 17 : 16)
#define BFP_CALL_MAX		17

/* Spelled so that gcc makes each one a byte swap and one store. */
static inline uint8_t *bfp_be32(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, 4);
	return p + 4;
}

static inline uint8_t *bfp_be16(uint8_t *p, uint16_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap16(v);
#endif
	memcpy(p, &v, 2);
	return p + 2;
}

/* id: BFP_METHOD_ENTRY or BFP_METHOD_EXIT; version: 1 or 2. */
static inline size_t bfp_put_call(uint8_t *p, unsigned int version,
				  uint8_t id, uint32_t time, uint32_t seq,
				  uint32_t method, uint16_t thread,
				  uint16_t line, bool thrown)
{
	uint8_t *q = p;

	*q++ = id;
	q = bfp_be32(q, time);
	q = bfp_be32(q, seq);
	q = bfp_be32(q, method);
	if (id == BFP_METHOD_EXIT) {
		if (version == 1)
			q = bfp_be16(q, line);
		else
			*q++ = thrown;
	}
	q = bfp_be16(q, thread);
	return (size_t)(q - p);
}

/*
 * Decode one message from the n bytes at p.  Returns its length (> 0), 0 if
 * the n bytes end inside it (feed more), or a negative errno with *err
 * filled: -EPROTO (unknown id, out-of-place id, bad length or field,
 * malformed configuration), -EILSEQ (a string readUTF would reject),
 * -ENOMEM.  version matters for METHOD_EXIT and CONFIG; ctx for which ids
 * are allowed.
 */
int bfp_decode(const uint8_t *p, size_t n, unsigned int version,
	       enum bfp_ctx ctx, struct bfp_msg *m, struct bfp_error *err);

void bfp_msg_free(struct bfp_msg *m);

/* "method_entry", ..., or NULL for an id that is not a message. */
const char *bfp_id_name(unsigned int id);
/* True for the ids that carry a sequence number (entry, exit, ...). */
bool bfp_id_sequenced(unsigned int id);
/* True for a known mode byte. */
bool bfp_mode_valid(unsigned int mode);

#endif /* BFP_MSG_H */
