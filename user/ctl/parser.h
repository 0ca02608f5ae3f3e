/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Table-driven command-line parsing: each command describes its options as
 * rows { name, short, kind, destination, ... }, the parser does the rest.
 *
 * Accepted forms: --name VALUE, --name=VALUE, -x VALUE, -xVALUE, grouped
 * short flags (-vv), "--" ending the options.  Every error names the option.
 */
#ifndef BFCTL_PARSER_H
#define BFCTL_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum arg_kind {
	ARG_FLAG,	/* bool *: set to true */
	ARG_COUNT,	/* unsigned int *: +1 per occurrence */
	ARG_UINT,	/* uint64_t *: decimal or 0x hex, within [min, max] */
	ARG_STR,	/* const char **: the last one given wins */
	ARG_LIST,	/* struct strlist *: every one given, in order */
};

struct strlist {
	const char **v;
	size_t n;
};

struct arg_def {
	const char *name;	/* long name, without "--" */
	char short_name;	/* 0: none */
	enum arg_kind kind;
	void *dest;
	const char *meta;	/* how --help shows the value: "PID" */
	const char *help;
	uint64_t min, max;	/* ARG_UINT; max 0 means UINT64_MAX */
};

#define ARG_END { 0 }

/* How positional arguments end the options. */
enum arg_stop {
	ARGS_INTERLEAVED,	/* options and positionals mix freely */
	ARGS_STOP_AT_POSITIONAL,/* the first positional and all after it are
				 * positionals (a command line to run) */
};

/*
 * Parse argv[0..argc-1] (argv[0] is the first argument, not a program name)
 * against tables (NULL-terminated array of ARG_END-terminated tables).
 * Positionals go to pos (whose v is malloc'ed: strlist_free()).
 * *dashdash is set if a "--" was seen (may be NULL).
 * Returns 0, or -EINVAL with the reason in err.
 */
int args_parse(const struct arg_def *const *tables, int argc, char **argv,
	       enum arg_stop stop, struct strlist *pos, bool *dashdash,
	       char *err, size_t errlen);

/* One line per option, aligned, for --help. */
void args_usage(FILE *f, const struct arg_def *defs);

int strlist_push(struct strlist *l, const char *s);
void strlist_free(struct strlist *l);

/* Parse an unsigned number (decimal, 0x hex; K/M/G suffixes as powers of
 * 1024 if suffixes is set).  Returns 0 or -EINVAL / -ERANGE. */
int parse_u64(const char *s, bool suffixes, uint64_t *out);

#endif /* BFCTL_PARSER_H */
