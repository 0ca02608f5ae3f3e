// SPDX-License-Identifier: GPL-2.0
/* bfctl caps: the module's protocol version, features and limits. */
#include "bfctl.h"
#include "output.h"

static const struct {
	uint64_t bit;
	const char *name;
	const char *what;
} features[] = {
	{ BFT_FEAT_ENTRY, "entry", "entry probes" },
	{ BFT_FEAT_RETURN, "return", "return probes" },
	{ BFT_FEAT_NORET, "noret", "ENTER_NORET records past the return-probe depth" },
	{ BFT_FEAT_PAUSE, "pause", "pause/unpause (SIGSTOP the targets)" },
	{ BFT_FEAT_SUSPEND, "suspend", "suspend/unsuspend recording" },
	{ BFT_FEAT_EVENTS, "events", "multicast events" },
	{ BFT_FEAT_READ, "read", "read() on /dev/bftrace" },
	{ BFT_FEAT_UNWIND, "unwind", "exception and longjmp hooks: return probes survive unwinding" },
};

int cmd_caps(struct ctl *c, int argc, char **argv)
{
	const struct bft_nl_limits *l = &c->caps.limits;
	int rc;

	rc = cmd_args(c, current_cmd, NULL, argc, argv, ARGS_INTERLEAVED, NULL, NULL);
	if (rc >= 0)
		return rc;
	rc = ctl_connect(c, 0);
	if (rc)
		return rc;
	out_begin();
	out_str("backend", "backend           %s\n", ctl_backend_name(c));
	out_u64("proto_version", "protocol version  %llu\n", c->caps.proto_version);
	out_u64("nr_cpus", "CPUs (rings)      %llu\n", c->caps.nr_cpus);
	out_u64("features_mask", NULL, c->caps.features);
	out_text("features:\n");
	out_arr_open("features");
	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		bool has = c->caps.features & features[i].bit;

		if (out_is_json()) {
			if (has)
				out_str(NULL, NULL, features[i].name);
			continue;
		}
		out_text("  %-8s %-3s  %s\n", features[i].name, has ? "yes" : "no",
			 features[i].what);
	}
	out_arr_close();
	out_text("limits:\n");
	out_obj_open("limits");
	out_u64("max_targets", "  max targets      %llu\n", l->max_targets);
	out_u64("max_probes", "  max probes       %llu (ceiling of option max_probes)\n",
		l->max_probes);
	out_u64("name_max", "  name max         %llu bytes\n", l->name_max);
	out_u64("path_max", "  path max         %llu bytes\n", l->path_max);
	out_u64("uretprobe_depth", "  return depth     %llu frames per thread\n",
		l->uretprobe_depth);
	out_obj_close();
	out_end();
	ctl_close(c);
	return EXIT_OK;
}
