// SPDX-License-Identifier: GPL-2.0
/*
 * bfctl's one output layer: text for people or, with --json, one JSON
 * document per out_begin()/out_end().  See output.h.
 */
#include <stdarg.h>
#include <string.h>

#include "bft_util.h"
#include "output.h"

#define MAX_DEPTH 16

static struct {
	FILE *f;
	bool json;
	int depth;
	bool first[MAX_DEPTH];	/* no member written yet at this level */
	bool array[MAX_DEPTH];	/* this level is an array: values, no keys */
} out = { NULL, false, 0, { true }, { false } };

void out_init(FILE *f, bool json)
{
	out.f = f;
	out.json = json;
	out.depth = 0;
}

bool out_is_json(void)
{
	return out.json;
}

static void put_out(const char *p, size_t n, void *arg)
{
	fwrite(p, 1, n, arg);
}

static void json_string(const char *s)
{
	bft_json_string(s, put_out, out.f);
}

/* Comma and key before a value at the current level. */
static void json_member(const char *key)
{
	if (!out.first[out.depth])
		fputc(',', out.f);
	out.first[out.depth] = false;
	if (key && !out.array[out.depth]) {
		json_string(key);
		fputc(':', out.f);
	}
}

static void json_push(char c)
{
	fputc(c, out.f);
	if (out.depth + 1 < MAX_DEPTH)
		out.depth++;
	out.first[out.depth] = true;
	out.array[out.depth] = c == '[';
}

/* Does a value with this key belong in the JSON document? */
static bool json_wants(const char *key)
{
	return out.json && (key || out.array[out.depth]);
}

static void json_pop(char c)
{
	fputc(c, out.f);
	if (out.depth > 0)
		out.depth--;
}

void out_begin(void)
{
	if (!out.f)
		out.f = stdout;
	out.depth = 0;
	out.first[0] = true;
	out.array[0] = false;
	if (out.json)
		json_push('{');
}

void out_end(void)
{
	if (out.json) {
		while (out.depth > 0)
			json_pop(out.depth == 1 ? '}' : ']');
		fputc('\n', out.f);
	}
	fflush(out.f);
}

void out_obj_open(const char *key)
{
	if (!out.json)
		return;
	json_member(key);
	json_push('{');
}

void out_obj_close(void)
{
	if (out.json)
		json_pop('}');
}

void out_arr_open(const char *key)
{
	if (!out.json)
		return;
	json_member(key);
	json_push('[');
}

void out_arr_close(void)
{
	if (out.json)
		json_pop(']');
}

/* The text format is the caller's, with exactly one conversion of the
 * value's type; the printf family checks nothing here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

void out_str(const char *key, const char *fmt, const char *v)
{
	if (out.json) {
		if (json_wants(key)) {
			json_member(key);
			json_string(v ? v : "");
		}
	} else if (fmt) {
		fprintf(out.f, fmt, v ? v : "");
	}
}

void out_str_or_null(const char *key, const char *fmt, const char *v)
{
	if (json_wants(key) && !v) {
		json_member(key);
		fputs("null", out.f);
		return;
	}
	out_str(key, fmt, v ? v : "-");
}

void out_u64(const char *key, const char *fmt, uint64_t v)
{
	if (out.json) {
		if (json_wants(key)) {
			json_member(key);
			fprintf(out.f, "%llu", (unsigned long long)v);
		}
	} else if (fmt) {
		fprintf(out.f, fmt, (unsigned long long)v);
	}
}

void out_i64(const char *key, const char *fmt, int64_t v)
{
	if (out.json) {
		if (json_wants(key)) {
			json_member(key);
			fprintf(out.f, "%lld", (long long)v);
		}
	} else if (fmt) {
		fprintf(out.f, fmt, (long long)v);
	}
}

void out_bool(const char *key, const char *fmt, bool v)
{
	if (out.json) {
		if (json_wants(key)) {
			json_member(key);
			fputs(v ? "true" : "false", out.f);
		}
	} else if (fmt) {
		fprintf(out.f, fmt, v ? "yes" : "no");
	}
}

void out_text(const char *fmt, ...)
{
	va_list ap;

	if (out.json)
		return;
	va_start(ap, fmt);
	vfprintf(out.f, fmt, ap);
	va_end(ap);
}

#pragma GCC diagnostic pop
