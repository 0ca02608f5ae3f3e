// SPDX-License-Identifier: GPL-2.0
/* What every command needs: messages, argument handling, the handshake. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bfctl.h"
#include "output.h"

const struct cmd *current_cmd;

void err_msg(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("bfctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void vlog(const struct ctl *c, unsigned int level, const char *fmt, ...)
{
	va_list ap;

	if (c->verbose < level)
		return;
	fputs("bfctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const struct arg_def global_args[] = {
	{ .name = "verbose", .short_name = 'v', .kind = ARG_COUNT,
	  .help = "more messages on stderr; -vv, -vvv for more still" },
	{ .name = "json", .short_name = 'j', .kind = ARG_FLAG,
	  .help = "print JSON instead of text" },
	{ .name = "help", .short_name = 'h', .kind = ARG_FLAG,
	  .help = "show this help" },
	ARG_END
};

void cmd_usage(const struct cmd *cmd, const struct arg_def *defs)
{
	printf("usage: bfctl %s %s\n\n%s\n\n", cmd->name, cmd->args, cmd->summary);
	if (defs && defs->name) {
		printf("options:\n");
		args_usage(stdout, defs);
	}
	printf("global options:\n");
	args_usage(stdout, global_args);
	printf("\nexit codes: see 'bfctl --help' or bfctl(8)\n");
}

int cmd_args(struct ctl *c, const struct cmd *cmd, const struct arg_def *defs,
	     int argc, char **argv, enum arg_stop stop, struct strlist *pos,
	     bool *dashdash)
{
	struct arg_def g[sizeof(global_args) / sizeof(global_args[0])];
	const struct arg_def *tables[] = { defs, g, NULL };
	struct strlist none = { 0 };
	char err[256];
	int rc;

	memcpy(g, global_args, sizeof(g));
	g[0].dest = &c->verbose;
	g[1].dest = &c->json;
	g[2].dest = &c->help;
	if (!defs)
		tables[0] = g, tables[1] = NULL;
	rc = args_parse(tables, argc, argv, stop, pos ? pos : &none, dashdash,
			err, sizeof(err));
	if (!rc && !pos && none.n) {
		snprintf(err, sizeof(err), "unexpected argument '%s'", none.v[0]);
		rc = -EINVAL;
	}
	strlist_free(&none);
	out_init(stdout, c->json);
	if (c->help) {
		cmd_usage(cmd, defs);
		return EXIT_OK;
	}
	if (rc) {
		err_msg("%s: %s (see 'bfctl %s --help')", cmd->name, err, cmd->name);
		return EXIT_USAGE;
	}
	return -1;
}

int exit_for_errno(int rc)
{
	switch (-rc) {
	case 0:
		return EXIT_OK;
	case EPERM:
	case EACCES:
		return EXIT_PERM;
	case ESRCH:
		return EXIT_TARGET;
	case E2BIG:
		return EXIT_LIMIT;
	default:
		return EXIT_FAIL;
	}
}

int ctl_nl_fail(struct ctl *c, const char *what, int rc)
{
	const char *msg = ctl_errmsg(c);

	if (rc == -EPERM &&
	    !(c->beh && (!c->be->explains || c->be->explains(c->beh))))
		/* a module older than the capability checks with extack text */
		err_msg("%s: %s (needs CAP_PERFMON or CAP_SYS_ADMIN: run as root)", what,
			strerror(-rc));
	else if (msg && *msg && !strstr(msg, strerror(-rc)))
		err_msg("%s: %s (%s)", what, msg, strerror(-rc));
	else if (msg && *msg)
		err_msg("%s: %s", what, msg);
	else
		err_msg("%s: %s", what, strerror(-rc));
	return exit_for_errno(rc);
}

/*
 * The chosen backend's session.  The BPF backend's is made by the first
 * command that changes something: asking (status, caps, get) leaves bpffs
 * untouched.
 */
static int ctl_open(struct ctl *c)
{
	const char *subject;
	char err[512], desc[256];
	int rc;

	rc = c->be->open(&c->beh, BFT_BACKEND_LAZY, err, sizeof(err));
	if (rc) {
		c->beh = NULL;
		subject = c->be->open_subject(rc);
		if (*subject)
			err_msg("%s: %s", subject, err);
		else
			err_msg("%s", err);
		return c->be->absent(rc) ? EXIT_NOMODULE : exit_for_errno(rc);
	}
	c->be->describe(c->beh, desc, sizeof(desc));
	vlog(c, 2, "connected: %s", desc);
	return EXIT_OK;
}

int ctl_connect(struct ctl *c, uint64_t need)
{
	char feats[256];
	int rc;

	if (ctl_backend_choose(c))
		return EXIT_USAGE;
	rc = ctl_open(c);
	if (rc)
		return rc;
	rc = c->be->get_caps(c->beh, &c->caps);
	if (rc) {
		rc = ctl_nl_fail(c, "capability query", rc);
		ctl_close(c);
		return rc;
	}
	if (c->caps.proto_version != BFT_PROTO_VERSION) {
		err_msg("%s speaks protocol %u, this bfctl speaks %u",
			c->be->what, c->caps.proto_version, BFT_PROTO_VERSION);
		ctl_close(c);
		return EXIT_NOMODULE;
	}
	vlog(c, 1, "%s: protocol %u, features %s, %u CPUs, max %u probes",
	     c->be->label, c->caps.proto_version,
	     bft_features_str(c->caps.features, feats, sizeof(feats)),
	     c->caps.nr_cpus, c->caps.limits.max_probes);
	if ((c->caps.features & need) != need) {
		err_msg("%s lacks feature(s) %s that this command needs",
			c->be->what,
			bft_features_str(need & ~c->caps.features, feats, sizeof(feats)));
		ctl_close(c);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

void ctl_close(struct ctl *c)
{
	if (!c->beh)
		return;
	if (*c->be->notice(c->beh))
		err_msg("%s", c->be->notice(c->beh));
	vlog(c, 2, "%s", c->be->closed);
	c->be->close(c->beh);
	c->beh = NULL;
}
