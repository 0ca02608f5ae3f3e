// SPDX-License-Identifier: GPL-2.0
/*
 * The rules both backends obey (kmod/bft_rules.h, built into the module
 * and into the BPF backend): the option table is consistent, every mode
 * command goes where the protocol says from every mode, an option is
 * refused for the documented reasons, and the watermark is a quarter of
 * the ring by default and never above half; every mode has one name.
 */
#include "kselftest_harness.h"

#include "capture/bft_nl.h"
/* as the module builds it (DKMS ships kmod/ alone) */
#include "../../../kmod/bft_rules.h"

#define NR_MODES	(BFT_MODE_SHUTTING_DOWN + 1)

TEST(every_default_is_a_value_the_option_takes)
{
	for (unsigned int id = 1; id <= BFT_OPT_MAX; id++) {
		const struct bft_opt_rule *r = bft_opt_rule(id);

		EXPECT_LE(r->min, r->max) {
			TH_LOG("option %s", bft_opt_name(id));
		}
		EXPECT_EQ(BFT_OPT_OK, bft_opt_refusal(id, r->def,
						      BFT_MODE_INITIALIZING, 0)) {
			TH_LOG("option %s", bft_opt_name(id));
		}
	}
}

TEST(mode_commands_go_where_the_protocol_says)
{
	static const int to[BFT_CMD_UNSUSPEND + 1][NR_MODES] = {
		[BFT_CMD_START] = { BFT_MODE_TRACING, -1, -1, -1,
				    BFT_MODE_TRACING },
		[BFT_CMD_STOP] = { BFT_MODE_SHUTTING_DOWN, BFT_MODE_SHUTTING_DOWN,
				   BFT_MODE_SHUTTING_DOWN, BFT_MODE_SHUTTING_DOWN,
				   BFT_MODE_SHUTTING_DOWN },
		[BFT_CMD_PAUSE] = { -1, BFT_MODE_PAUSED, -1, -1, -1 },
		[BFT_CMD_UNPAUSE] = { -1, -1, BFT_MODE_TRACING, -1, -1 },
		[BFT_CMD_SUSPEND] = { -1, BFT_MODE_SUSPENDED, -1, -1, -1 },
		[BFT_CMD_UNSUSPEND] = { -1, -1, -1, BFT_MODE_TRACING, -1 },
	};

	for (unsigned int cmd = BFT_CMD_START; cmd <= BFT_CMD_UNSUSPEND; cmd++) {
		for (int mode = 0; mode < NR_MODES; mode++) {
			int want = to[cmd][mode] < 0 ? BFT_MODE_REFUSED :
						       to[cmd][mode];

			EXPECT_EQ(want, bft_mode_next(cmd, mode)) {
				TH_LOG("%s while %s", bft_cmd_name(cmd),
				       bft_mode_name(mode));
			}
		}
	}
	EXPECT_EQ(BFT_MODE_NOT_A_CMD,
		  bft_mode_next(BFT_CMD_GET_STATUS, BFT_MODE_TRACING));
}

TEST(options_are_refused_for_their_reasons)
{
	EXPECT_EQ(BFT_OPT_OUT_OF_RANGE,
		  bft_opt_refusal(BFT_OPT_FLUSH_MS, 0, BFT_MODE_INITIALIZING, 0));
	EXPECT_EQ(BFT_OPT_OUT_OF_RANGE,
		  bft_opt_refusal(BFT_OPT_BUF_SIZE, (1U << 20) + 4096,
				  BFT_MODE_INITIALIZING, 0));
	EXPECT_EQ(BFT_OPT_BUSY, bft_opt_refusal(BFT_OPT_BUF_SIZE, 1U << 16,
						BFT_MODE_SUSPENDED, 0));
	EXPECT_EQ(BFT_OPT_BUSY, bft_opt_refusal(BFT_OPT_TIME_RES_NS, 10,
						BFT_MODE_SHUTTING_DOWN, 3));
	EXPECT_EQ(BFT_OPT_OK, bft_opt_refusal(BFT_OPT_TIME_RES_NS, 10,
					      BFT_MODE_SHUTTING_DOWN, 0));
	EXPECT_EQ(BFT_OPT_OK, bft_opt_refusal(BFT_OPT_FLUSH_MS, 5,
					      BFT_MODE_TRACING, 7));
	EXPECT_EQ(BFT_OPT_BELOW_PROBES,
		  bft_opt_refusal(BFT_OPT_MAX_PROBES, 6, BFT_MODE_TRACING, 7));
	EXPECT_EQ(BFT_OPT_OK,
		  bft_opt_refusal(BFT_OPT_MAX_PROBES, 7, BFT_MODE_TRACING, 7));
}

TEST(watermark_is_a_quarter_by_default_and_at_most_half)
{
	EXPECT_EQ(1U << 18, bft_watermark(0, 1U << 20));
	EXPECT_EQ(1000, bft_watermark(1000, 1U << 20));
	EXPECT_EQ(1U << 19, bft_watermark(1U << 28, 1U << 20));
}

TEST(one_name_per_mode_for_every_backend)
{
	static const char *const want[NR_MODES] = {
		"initializing", "tracing", "paused", "suspended",
		"shutting_down",
	};

	for (int m = 0; m < NR_MODES; m++) {
		EXPECT_STREQ(want[m], bft_mode_str(m));
		/* what bfctl prints is what the refusals say */
		EXPECT_STREQ(want[m], bft_mode_name((unsigned int)m));
	}
	EXPECT_STREQ("?", bft_mode_str(NR_MODES));
	EXPECT_STREQ("?", bft_mode_str(-1));
	EXPECT_STREQ("?", bft_mode_name(0x80000000u));
}

TEST_HARNESS_MAIN
