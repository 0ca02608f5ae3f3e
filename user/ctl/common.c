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

	if (rc == -EPERM && !c->bpf && !(c->nl && bft_nl_err_is_extack(c->nl)))
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

/* The BPF backend: its session, made by the first command that changes
 * something; asking (status, caps, get) leaves bpffs untouched. */
static int bpf_connect(struct ctl *c)
{
	char err[512];
	int rc;

	rc = bft_bpf_open_lazy(&c->bpf, err, sizeof(err));
	if (!rc) {
		c->beh = c->bpf;
		bft_bpf_get_caps(c->bpf, &c->caps);
		vlog(c, 2, "connected: BPF backend, session %s %s (%s)",
		     bft_bpf_loaded() ? "pinned at" : "to be made at",
		     bft_bpf_pin_dir(), bft_bpf_multi(c->bpf) ?
		     "uprobe_multi links" : "one link per function");
		return EXIT_OK;
	}
	err_msg("BPF backend: %s", err);
	switch (-rc) {
	case EPERM:
	case EACCES:
		return EXIT_PERM;
	case ENOSYS:
	case ENOTSUP:
	case ENODEV:
		return EXIT_NOMODULE;
	default:
		return rc == -EOPNOTSUPP ? EXIT_NOMODULE : EXIT_FAIL;
	}
}

int ctl_connect(struct ctl *c, uint64_t need)
{
	char err[512], feats[256];
	int rc;

	if (ctl_backend_choose(c))
		return EXIT_USAGE;
	if (c->use_bpf) {
		rc = bpf_connect(c);
		if (rc)
			return rc;
		goto check;
	}
	rc = bft_nl_open(&c->nl, err, sizeof(err));
	if (rc == -ENOENT) {
		err_msg("%s", err);
		return EXIT_NOMODULE;
	}
	if (rc) {
		err_msg("cannot open the bftrace netlink socket: %s", err);
		return exit_for_errno(rc);
	}
	c->beh = c->nl;
	vlog(c, 2, "connected: netlink family \"%s\" id %u version %u, events group %u",
	     BFT_GENL_NAME, bft_nl_family_id(c->nl), bft_nl_family_version(c->nl),
	     bft_nl_events_group_id(c->nl));
	rc = bft_nl_get_caps(c->nl, &c->caps);
	if (rc) {
		rc = ctl_nl_fail(c, "capability query", rc);
		ctl_close(c);
		return rc;
	}
	if (c->caps.proto_version != BFT_PROTO_VERSION) {
		err_msg("bftrace.ko speaks protocol %u, this bfctl speaks %u",
			c->caps.proto_version, BFT_PROTO_VERSION);
		ctl_close(c);
		return EXIT_NOMODULE;
	}
check:
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
	if (c->bpf) {
		if (*bft_bpf_notice(c->bpf))
			err_msg("%s", bft_bpf_notice(c->bpf));
		vlog(c, 2, "BPF session closed (it stays pinned unless this "
		     "bfctl started it without --persist)");
		bft_bpf_close(c->bpf);
		c->bpf = NULL;
	}
	if (c->nl) {
		vlog(c, 2, "connection closed");
		bft_nl_close(c->nl);
	}
	c->nl = NULL;
	c->beh = NULL;
}
