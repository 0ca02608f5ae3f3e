/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one output layer of bfctl: every command prints through these calls,
 * which write text for people or, with --json, one JSON document per call of
 * out_begin()/out_end() (a single line, so --watch gives JSON lines).
 *
 * Each value call takes the JSON key and the text format; a NULL format
 * prints nothing in text mode, a NULL key nothing in a JSON object.  Inside
 * a JSON array keys are ignored: every value is an element.  So a
 * command has one code path, and --json is never a second one.
 */
#ifndef BFCTL_OUTPUT_H
#define BFCTL_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

void out_init(FILE *f, bool json);
bool out_is_json(void);

void out_begin(void);
void out_end(void);

void out_obj_open(const char *key);	/* key NULL inside an array */
void out_obj_close(void);
void out_arr_open(const char *key);
void out_arr_close(void);

void out_str(const char *key, const char *fmt, const char *v);
void out_u64(const char *key, const char *fmt, uint64_t v);
void out_i64(const char *key, const char *fmt, int64_t v);
void out_bool(const char *key, const char *fmt, bool v);
/* JSON null when v is NULL, else a string. */
void out_str_or_null(const char *key, const char *fmt, const char *v);

/* Text mode only. */
void out_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* BFCTL_OUTPUT_H */
