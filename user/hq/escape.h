/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names and marker text as bfhq's text files hold them (escape.c): a
 * backslash doubled, NUL as \0, other control bytes as \xNN; and back.
 * Names in the JSON files written by hand (speedscope.c) as JSON strings.
 */
#ifndef BFHQ_ESCAPE_H
#define BFHQ_ESCAPE_H

#include <stddef.h>

#include "wire/bft_varint.h"

/* s (n bytes) for a text file: NUL as \0, other controls as \xNN. */
void hq_escape(struct bft_buf *b, const char *s, size_t n);
/* The bytes of s (n bytes) once hq_escape()d. */
size_t hq_escape_len(const char *s, size_t n);
/* Undo the escaping of names and markers into out (NUL-ended). */
void live_unescape(const char *s, size_t n, char *out);

/* s as a quoted JSON string (bft_json_string()), appended to b. */
void hq_json_string(struct bft_buf *b, const char *s);

#endif /* BFHQ_ESCAPE_H */
