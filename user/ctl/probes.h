/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Selecting and attaching probes by pattern: shared by attach and run.
 */
#ifndef BFCTL_PROBES_H
#define BFCTL_PROBES_H

#include "bfctl.h"
#include "symbols/bft_hooks.h"
#include "symbols/bft_resolve.h"
#include "usdt.h"

/* Without --max-probes, a selection larger than this is refused. */
#define BFCTL_DEFAULT_MAX_PROBES 1000

struct probe_opts {
	struct strlist patterns;
	struct strlist usdt;	/* "PROVIDER:NAME" globs */
	bool regex;
	bool list;
	bool no_endbr;
	bool entry_only;
	bool no_debug;
	bool force;
	uint64_t max_probes;
	const char *debug_dir;
	bool quiet_nomatch;	/* no match is no error: said at -v only */
	bool follow;		/* attach: later loads are followed */
	/* Filled by probes_select() when set: the patterns whose object is
	 * not mapped, as given (pointers into patterns). */
	struct strlist *pending;
};

/* The option rows of the probe selection, for a command's table. */
#define PROBE_ARG_DEFS(o)						\
	{ .name = "pattern", .short_name = 'p', .kind = ARG_LIST,	\
	  .dest = &(o)->patterns, .meta = "PATTERN",			\
	  .help = "[!][OBJECT:]SYMBOL glob, repeatable; '!' excludes" }, \
	{ .name = "usdt", .short_name = 'u', .kind = ARG_LIST,		\
	  .dest = &(o)->usdt, .meta = "PROVIDER:NAME",			\
	  .help = "USDT probes (glob, repeatable): each hit a marker" }, \
	{ .name = "regex", .short_name = 'r', .kind = ARG_FLAG,		\
	  .dest = &(o)->regex,						\
	  .help = "SYMBOL is a POSIX extended regex, not a glob" },	\
	{ .name = "list", .short_name = 'l', .kind = ARG_FLAG,		\
	  .dest = &(o)->list,						\
	  .help = "dry run: print object, offset, symbol; attach nothing" }, \
	{ .name = "max-probes", .short_name = 'm', .kind = ARG_UINT,	\
	  .dest = &(o)->max_probes, .meta = "N", .min = 1,		\
	  .help = "refuse selections of more than N functions (1000)" }, \
	{ .name = "at-entry", .kind = ARG_FLAG, .dest = &(o)->no_endbr,	\
	  .help = "probe each function at its first byte, even where "	\
		  "a later one is not single-stepped" },		\
	{ .name = "no-endbr", .kind = ARG_FLAG, .dest = &(o)->no_endbr,	\
	  .help = "the same as --at-entry (its older name)" },		\
	{ .name = "entry-only", .kind = ARG_FLAG,			\
	  .dest = &(o)->entry_only,					\
	  .help = "no return probes: record entries only" },		\
	{ .name = "debug-dir", .kind = ARG_STR, .dest = &(o)->debug_dir, \
	  .meta = "DIR",						\
	  .help = "separate debug files under DIR (/usr/lib/debug)" },	\
	{ .name = "no-debug-files", .kind = ARG_FLAG,			\
	  .dest = &(o)->no_debug,					\
	  .help = "never read separate debug files" },			\
	{ .name = "force", .kind = ARG_FLAG, .dest = &(o)->force,	\
	  .help = "keep return probes where exceptions could not be "	\
		  "handled (see bfctl(8), EXCEPTIONS)" }

/*
 * Resolve the patterns over process pid into *pl.  Prints the reason and
 * returns an exit code on failure: EXIT_USAGE (pattern), EXIT_TARGET,
 * EXIT_PERM, EXIT_NOMATCH (nothing selected), EXIT_LIMIT (over the cap);
 * EXIT_OK otherwise.
 */
int probes_select(struct ctl *c, pid_t pid, struct probe_opts *o,
		  struct bft_plan *pl);

/* One probe to attach: a selected function, a hook, or both. */
struct probe_row {
	struct bft_nl_probe p;	/* method_id is set when attaching */
	char sig[BFT_NAME_MAX];	/* "object!symbol" */
	const char *path;	/* as the target sees it */
	const char *symbol;	/* display name */
	const char *mangled;
	const struct bft_func *f;	/* NULL for a hook alone */
	const struct bft_object *ob;	/* NULL for a hook alone */
	const struct bft_hook *hook;	/* NULL unless hooked */
	const struct usdt_pick *usdt;	/* a USDT site: no f, no hook */
	struct bft_usdt_arg args[BFT_USDT_MAX_ARGS];	/* p.args */
	const char *why;	/* why it has no return probe, or NULL */
	uint64_t dev, ino;
};

/*
 * What gets attached: the selected functions with the flags they get, and
 * the exception hooks (bft_hooks.h) when any of them has a return probe
 * and the module has BFT_FEAT_UNWIND.  A process at risk whose hooks
 * cannot all be placed (the module lacks the feature, or its unwinder is
 * unknown) gets entry probes only, unless --force; that is said on stderr
 * either way.
 */
struct probe_set {
	struct probe_row *v;
	size_t n;
	size_t nhooks;		/* rows that are hooks alone */
	size_t nusdt;		/* rows that are USDT sites */
	struct usdt_set usdt;
	struct bft_hooks hooks;
	bool fallback;		/* return probes dropped for safety */
	bool quiet_known;	/* all attached already: said at -v only */
};

/*
 * Build the set for pid from the plan, for a module with these features
 * (--list without a module: every feature).  Prints the reason and
 * returns an exit code on failure.
 */
int probes_build(struct ctl *c, pid_t pid, const struct bft_plan *pl,
		 const struct probe_opts *o, uint64_t features,
		 struct probe_set *s);
void probes_set_free(struct probe_set *s);

/* The module's features, or, when it cannot be asked (--list without the
 * module), every feature this bfctl knows (said under -v). */
uint64_t probes_features(struct ctl *c);

/* The --list output. */
void probes_print_list(const struct bft_plan *pl, const struct probe_set *s,
		       pid_t pid);

/*
 * Attach the set to pid, with method ids bfctl assigns.  On any failure,
 * whatever was attached to pid is detached again, and an exit code is
 * returned.
 */
int probes_attach(struct ctl *c, pid_t pid, struct probe_set *s);

#endif /* BFCTL_PROBES_H */
