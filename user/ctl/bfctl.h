/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfctl: what the commands share.  One file per command (attach.c, run.c,
 * mode.c, ...); main.c holds the command table.
 */
#ifndef BFCTL_H
#define BFCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/bft_backend.h"
#include "capture/bft_nl.h"
#include "parser.h"

/* Exit codes: documented in --help (main.c) and bfctl.8; keep all three equal. */
enum bfctl_exit {
	EXIT_OK = 0,
	EXIT_FAIL = 1,		/* the kernel or the system refused; message says why */
	EXIT_USAGE = 2,		/* bad option, argument, pattern or regex */
	EXIT_NOMODULE = 3,	/* bftrace.ko not loaded, or speaks another protocol */
	EXIT_TARGET = 4,	/* no such process, it exited, or it cannot be read */
	EXIT_NOMATCH = 5,	/* the patterns select no function */
	EXIT_LIMIT = 6,		/* more probes than the cap allows */
	EXIT_PERM = 7,		/* permission denied */
};

struct ctl {
	unsigned int verbose;	/* -v count: seeds/004 client levels */
	bool json;
	bool help;
	const char *backend;	/* --backend: kmod, bpf, auto (NULL: $BFT_BACKEND) */
	/* The table ctl_backend_choose() chose (NULL before a choice). */
	const struct bft_backend_ops *be;
	void *beh;		/* its session once connected, else NULL */
	struct bft_nl_caps caps;
};

struct cmd {
	const char *name;
	int (*run)(struct ctl *c, int argc, char **argv);
	const char *args;	/* synopsis after the name */
	const char *summary;
};

/* Messages to stderr, "bfctl: " first.  vlog only at -v level or more. */
void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vlog(const struct ctl *c, unsigned int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Parse a command's arguments: its table plus the global options (-v,
 * --json, --help).  On --help prints the usage and returns EXIT_OK with
 * c->help set; on error prints it and returns EXIT_USAGE; else -1.
 */
int cmd_args(struct ctl *c, const struct cmd *cmd, const struct arg_def *defs,
	     int argc, char **argv, enum arg_stop stop, struct strlist *pos,
	     bool *dashdash);
void cmd_usage(const struct cmd *cmd, const struct arg_def *defs);
const struct cmd *cmd_find(const char *name);

/*
 * The seeds/004 handshake: open the control socket, GET_CAPS, check the
 * protocol version and that every feature bit in need is there.  Returns
 * EXIT_OK or an exit code (message printed).
 */
int ctl_connect(struct ctl *c, uint64_t need);
void ctl_close(struct ctl *c);
/* Print a failed request: the kernel's extack text when it sent one, then
 * the errno text.  Returns the exit code for rc (-errno). */
int ctl_nl_fail(struct ctl *c, const char *what, int rc);
/* The exit code for -errno. */
int exit_for_errno(int rc);

/*
 * The backend (backend.c): --backend, else $BFT_BACKEND, else auto (the
 * module if loaded, else BPF: bft_backend_choose()).  ctl_connect() calls
 * ctl_backend_choose().  The ctl_* calls are those of the chosen backend's
 * table (bft_backend.h) on its session.
 */
int ctl_backend_choose(struct ctl *c);
/* The chosen table; before a choice, or after a failed one, the module's. */
const struct bft_backend_ops *ctl_backend(const struct ctl *c);
const char *ctl_backend_name(const struct ctl *c);
const char *ctl_errmsg(const struct ctl *c);
int ctl_attach(struct ctl *c, uint32_t tgid, const struct bft_nl_probe *p,
	       size_t n, int *results);
/* Probes attached from here on outlive this bfctl, where the backend can. */
void ctl_attach_persist(struct ctl *c);
int ctl_detach(struct ctl *c, uint32_t tgid);
/* The n probes of tgid with these ids; -EOPNOTSUPP if the backend cannot. */
int ctl_detach_some(struct ctl *c, uint32_t tgid, const uint32_t *ids, size_t n);
int ctl_mode_cmd(struct ctl *c, int cmd, uint8_t *mode);
/* BFT_CMD_START; the session belongs to this bfctl unless persist. */
int ctl_start(struct ctl *c, bool persist, uint8_t *mode);
int ctl_get_status(struct ctl *c, struct bft_nl_status *st);
int ctl_readers(const struct bft_nl_status *st);
void ctl_warn_no_reader(struct ctl *c);
int ctl_get_opt(struct ctl *c, uint32_t id, struct bft_nl_opt *out);
int ctl_get_opts(struct ctl *c, struct bft_nl_opt *out, size_t cap, size_t *n);
int ctl_set_opt(struct ctl *c, uint32_t id, uint64_t value,
		struct bft_nl_opt *out);
int ctl_get_methods(struct ctl *c, bft_nl_method_cb cb, void *arg);

/* Commands. */
int cmd_attach(struct ctl *c, int argc, char **argv);
int cmd_detach(struct ctl *c, int argc, char **argv);
int cmd_run(struct ctl *c, int argc, char **argv);
int cmd_mode(struct ctl *c, int argc, char **argv);
int cmd_status(struct ctl *c, int argc, char **argv);
int cmd_caps(struct ctl *c, int argc, char **argv);
int cmd_get(struct ctl *c, int argc, char **argv);
int cmd_set(struct ctl *c, int argc, char **argv);
int cmd_methods(struct ctl *c, int argc, char **argv);
int cmd_record(struct ctl *c, int argc, char **argv);

/* The command being run (for usage messages). */
extern const struct cmd *current_cmd;

#endif /* BFCTL_H */
