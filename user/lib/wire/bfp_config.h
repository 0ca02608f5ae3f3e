/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent configuration HQ sends in its Configuration message
 * (notes/bytefrog-wire.md §3): RuntimeAgentConfigurationV1.
 *
 * Version 1 carries it as a Java Object Serialization stream of that class,
 * under the 2014 package (com.secdec.bytefrog.common.config) or the Code
 * Pulse one (com.codedx.codepulse.agent.common.config); the decoder accepts
 * both and remembers which, and which java.util.List class held each list,
 * so that encoding a decoded configuration gives back the same bytes.
 * Version 2 carries it as JSON, keys sorted, no whitespace, as JSON-B
 * writes it (jansson does the JSON).
 *
 * A list string is a C string: one holding NUL (C0 80 in version 1,
 * \u0000 in version 2) is refused, not cut.  Version 1 writes a string
 * whose modified UTF-8 exceeds 65535 bytes as TC_LONGSTRING, as Java does,
 * so whatever decodes also encodes.
 *
 * A decoded configuration holds at most BFP_CONFIG_MAX_PATTERNS strings in
 * its two lists together, of BFP_CONFIG_MAX_PATTERN_BYTES in all; more is
 * refused (-EPROTO) before anything is copied, so what a configuration
 * costs is bounded by these, not by what back references make of its bytes.
 *
 * Decoders fill a struct bfp_config the caller later releases with
 * bfp_config_free(); they return 0, -EPROTO with a message in err (size
 * errlen), or -ENOMEM.
 */
#ifndef BFP_CONFIG_H
#define BFP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "wire/bft_varint.h"

/* The java.util.List implementation a list was serialized as. */
enum bfp_list_class {
	BFP_LIST_ARRAYLIST,	/* java.util.ArrayList (what Code Pulse sends) */
	BFP_LIST_ASLIST,	/* java.util.Arrays$ArrayList (Arrays.asList) */
	BFP_LIST_OTHER,		/* decoded from another class; encoded as ArrayList */
};

struct bfp_strlist {
	char **v;		/* UTF-8, NUL-terminated, malloc'ed */
	uint32_t n;
	uint8_t list_class;	/* enum bfp_list_class (version 1) */
};

enum bfp_config_class {
	BFP_CLASS_BYTEFROG,	/* com.secdec.bytefrog.common.config... */
	BFP_CLASS_CODEPULSE,	/* com.codedx.codepulse.agent.common.config... */
};

struct bfp_config {
	int8_t run_id;			/* Java byte: DataHello sends (uint8_t) */
	int32_t heartbeat_ms;		/* heartbeatInterval */
	int32_t buffer_budget;		/* bufferMemoryBudget, bytes */
	int32_t queue_retry;		/* queueRetryCount */
	int32_t data_senders;		/* numDataSenders */
	struct bfp_strlist exclusions;	/* regexes */
	struct bfp_strlist inclusions;	/* regexes; a match overrides exclusion */
	uint8_t java_class;		/* enum bfp_config_class (version 1) */
};

#define BFP_CONFIG_MAX_PATTERNS		4096
#define BFP_CONFIG_MAX_PATTERN_BYTES	(256u << 10)

#define BFP_CONFIG_SUID		(-4660117618158655806LL)
/* HQ's defaults (notes §3). */
#define BFP_DEFAULT_HEARTBEAT_MS	1000
#define BFP_DEFAULT_BUFFER_BUDGET	25600
#define BFP_DEFAULT_QUEUE_RETRY		5
#define BFP_DEFAULT_DATA_SENDERS	1

/* Defaults, no lists. */
void bfp_config_init(struct bfp_config *c);
void bfp_config_free(struct bfp_config *c);
/* Append a copy of s to l; 0 or -ENOMEM. */
int bfp_strlist_add(struct bfp_strlist *l, const char *s);
/* Deep copy; 0 or -ENOMEM (dst is then empty). */
int bfp_config_copy(struct bfp_config *dst, const struct bfp_config *src);

/* Version 1: the serialization stream alone (no id, no length). */
int bfp_config_encode_java(const struct bfp_config *c, struct bft_buf *out);
int bfp_config_decode_java(const uint8_t *p, size_t n, struct bfp_config *c,
			   char *err, size_t errlen);

/* Version 2: the JSON text (UTF-8), NUL-terminated in out (len excludes it). */
int bfp_config_encode_json(const struct bfp_config *c, struct bft_buf *out);
int bfp_config_decode_json(const char *json, size_t n, struct bfp_config *c,
			   char *err, size_t errlen);

/*
 * The agent's buffer length for a budget (Code Pulse's rule: from 8192,
 * halved while budget / len < 10, never below 64) and the number of such
 * buffers; used to report the send queue in buffers, as the agent does.
 */
uint32_t bfp_config_buffer_len(int32_t budget);

#endif /* BFP_CONFIG_H */
