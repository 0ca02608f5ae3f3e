// SPDX-License-Identifier: GPL-2.0
/* bfctl get [OPTION] / set OPTION VALUE: the module's options. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "bfctl.h"
#include "output.h"

/* An option by name ("buf_size") or number. */
static int option_id(const char *s)
{
	uint64_t v;
	int id = bft_opt_by_name(s);

	if (id >= 0)
		return id;
	if (!parse_u64(s, false, &v) && v && v <= BFT_OPT_MAX)
		return (int)v;
	return -ENOENT;
}

static void print_opt(const struct bft_nl_opt *o)
{
	out_obj_open(NULL);
	out_str("name", "%-14s", bft_opt_name(o->id));
	out_u64("id", NULL, o->id);
	out_u64("value", " %12llu", o->value);
	out_u64("min", "   [%llu", o->min);
	out_u64("max", ", %llu]", o->max);
	out_bool("pow2", NULL, o->flags & BFT_OPTF_POW2);
	out_bool("idle_only", NULL, o->flags & BFT_OPTF_IDLE_ONLY);
	out_text("%s%s\n", o->flags & BFT_OPTF_POW2 ? " power of 2" : "",
		 o->flags & BFT_OPTF_IDLE_ONLY ? " idle only" : "");
	out_obj_close();
}

/* seeds/004 asks for distinct status codes; say what each one means. */
static int opt_fail(struct ctl *c, const char *what, const char *name, int rc)
{
	int ex = ctl_nl_fail(c, what, rc);

	switch (-rc) {
	case ENOENT:
		err_msg("option '%s' is unknown to the module", name);
		return EXIT_USAGE;
	case EOPNOTSUPP:
		err_msg("option '%s' is defined by the protocol, but this module does not support it",
			name);
		return EXIT_FAIL;
	case ERANGE:
		err_msg("value out of the option's range, or not a power of two where one is needed (see 'bfctl get %s')",
			name);
		return EXIT_USAGE;
	case EBUSY:
		err_msg("option '%s' cannot change while probes are attached or while tracing, paused or suspended",
			name);
		return EXIT_FAIL;
	}
	return ex;
}

int cmd_get(struct ctl *c, int argc, char **argv)
{
	struct strlist pos = { 0 };
	struct bft_nl_opt opts[BFT_OPT_MAX + 8];
	size_t n = 0;
	int rc, id = 0;

	rc = cmd_args(c, current_cmd, NULL, argc, argv, ARGS_INTERLEAVED, &pos, NULL);
	if (rc >= 0)
		goto out;
	if (pos.n > 1) {
		err_msg("get: at most one option name");
		rc = EXIT_USAGE;
		goto out;
	}
	if (pos.n) {
		id = option_id(pos.v[0]);
		if (id < 0) {
			err_msg("get: unknown option '%s'", pos.v[0]);
			rc = EXIT_USAGE;
			goto out;
		}
	}
	rc = ctl_connect(c, 0);
	if (rc)
		goto out;
	vlog(c, 3, "get option %s", id ? bft_opt_name((unsigned int)id) : "(all)");
	if (id)
		rc = ctl_get_opt(c, (uint32_t)id, &opts[0]), n = 1;
	else
		rc = ctl_get_opts(c, opts, sizeof(opts) / sizeof(opts[0]), &n);
	if (rc) {
		rc = opt_fail(c, "get", id ? pos.v[0] : "(all)", rc);
	} else {
		out_begin();
		out_arr_open("options");
		for (size_t i = 0; i < n && i < sizeof(opts) / sizeof(opts[0]); i++)
			print_opt(&opts[i]);
		out_arr_close();
		out_end();
	}
	ctl_close(c);
out:
	strlist_free(&pos);
	return rc;
}

int cmd_set(struct ctl *c, int argc, char **argv)
{
	struct strlist pos = { 0 };
	struct bft_nl_opt now;
	uint64_t value;
	int rc, id;

	rc = cmd_args(c, current_cmd, NULL, argc, argv, ARGS_INTERLEAVED, &pos, NULL);
	if (rc >= 0)
		goto out;
	rc = EXIT_USAGE;
	if (pos.n != 2) {
		err_msg("set: give an option and a value: bfctl set OPTION VALUE");
		goto out;
	}
	id = option_id(pos.v[0]);
	if (id < 0) {
		err_msg("set: unknown option '%s' (see 'bfctl get')", pos.v[0]);
		goto out;
	}
	if (parse_u64(pos.v[1], true, &value)) {
		err_msg("set: '%s' is not a number (suffixes K, M, G allowed)", pos.v[1]);
		goto out;
	}
	rc = ctl_connect(c, 0);
	if (rc)
		goto out;
	vlog(c, 3, "set option %s (%d) = %" PRIu64, bft_opt_name((unsigned int)id),
	     id, value);
	rc = ctl_set_opt(c, (uint32_t)id, value, &now);
	if (rc) {
		rc = opt_fail(c, "set", pos.v[0], rc);
	} else {
		vlog(c, 2, "option %s set to %" PRIu64, bft_opt_name(now.id), now.value);
		out_begin();
		out_arr_open("options");
		print_opt(&now);
		out_arr_close();
		out_end();
	}
	ctl_close(c);
out:
	strlist_free(&pos);
	return rc;
}
