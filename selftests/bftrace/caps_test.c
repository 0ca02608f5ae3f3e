// SPDX-License-Identifier: GPL-2.0
/*
 * The handshake and the status: what GET_CAPS and GET_STATUS report before
 * anything is attached must match the contract (include/uapi/linux/bftrace.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

FIXTURE(caps) {
	struct bst_session s;
};

FIXTURE_SETUP(caps)
{
	ASSERT_EQ(0, bst_session_open(&self->s));
}

FIXTURE_TEARDOWN(caps)
{
	bst_session_close(&self->s);
}

TEST_F(caps, caps_report_protocol_version)
{
	EXPECT_TRUE(self->s.caps.have & (1u << BFT_A_PROTO_VERSION));
	EXPECT_EQ(BFT_PROTO_VERSION, self->s.caps.proto_version);
	EXPECT_EQ(BFT_GENL_VERSION, bft_nl_family_version(self->s.nl));
}

TEST_F(caps, caps_report_every_feature)
{
	static const struct { uint64_t bit; const char *name; } feats[] = {
		{ BFT_FEAT_ENTRY, "entry" },	{ BFT_FEAT_RETURN, "return" },
		{ BFT_FEAT_NORET, "noret" },	{ BFT_FEAT_PAUSE, "pause" },
		{ BFT_FEAT_SUSPEND, "suspend" }, { BFT_FEAT_EVENTS, "events" },
		{ BFT_FEAT_READ, "read" },
	};

	ASSERT_TRUE(self->s.caps.have & (1u << BFT_A_FEATURES));
	for (size_t i = 0; i < ARRAY_SIZE(feats); i++) {
		EXPECT_TRUE(self->s.caps.features & feats[i].bit)
			TH_LOG("feature %s missing (features %#llx)", feats[i].name,
			       (unsigned long long)self->s.caps.features);
	}
}

TEST_F(caps, caps_limits_match_contract)
{
	const struct bft_nl_limits *l = &self->s.caps.limits;

	ASSERT_TRUE(self->s.caps.have & (1u << BFT_A_LIMITS));
	EXPECT_EQ(BFT_MAX_TARGETS, l->max_targets);
	EXPECT_EQ(BFT_NAME_MAX, l->name_max);
	EXPECT_EQ(BFT_PATH_MAX, l->path_max);
	EXPECT_EQ(BFT_URETPROBE_DEPTH, l->uretprobe_depth);
	EXPECT_LT(0, l->max_probes);
}

TEST_F(caps, caps_count_one_ring_per_possible_cpu)
{
	unsigned int possible = bst_possible_cpus();

	ASSERT_LT(0, possible);
	EXPECT_EQ(possible, self->s.caps.nr_cpus);
}

TEST_F(caps, status_idle_has_no_probes_and_balanced_counters)
{
	struct bft_nl_status st;

	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_TRUE(st.mode == BFT_MODE_INITIALIZING ||
		    st.mode == BFT_MODE_SHUTTING_DOWN)
		TH_LOG("mode %s after reset", bft_mode_name(st.mode));
	EXPECT_EQ(0, st.nr_probes);
	EXPECT_EQ(0, st.nr_targets);
	EXPECT_EQ(self->s.caps.nr_cpus, st.nr_cpus);
	for (uint32_t i = 0; i < st.nr_cpus; i++) {
		const struct bft_nl_cpu_stats *c = &st.cpus[i];

		EXPECT_EQ(c->produced, c->written + c->lost)
			TH_LOG("cpu %u: produced %llu written %llu lost %llu", c->cpu,
			       (unsigned long long)c->produced,
			       (unsigned long long)c->written,
			       (unsigned long long)c->lost);
		EXPECT_LE(c->used, c->size);
		EXPECT_EQ(self->s.opts[BFT_OPT_BUF_SIZE].value, c->size);
	}
	bft_nl_status_free(&st);
}

TEST_F(caps, caps_and_options_are_open_to_any_user)
{
	/* The handshake reveals nothing about targets: ask as user nobody.
	 * Everything else is refused (perm_test). */
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct bft_nl *nl;
		struct bft_nl_caps caps;
		struct bft_nl_opt opt;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		if (bft_nl_open(&nl, NULL, 0))
			_exit(11);
		if (bft_nl_get_caps(nl, &caps))
			_exit(12);
		if (bft_nl_get_opt(nl, BFT_OPT_BUF_SIZE, &opt))
			_exit(14);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("step %d failed as user nobody (10 setuid, 11 open, 12 caps, 14 get_opt)",
		       WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
