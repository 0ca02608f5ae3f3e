// SPDX-License-Identifier: GPL-2.0
/* Durations in tree.txt's and summary.txt's units, and their columns. */
#include "kselftest_harness.h"

#include "hq.h"

static const struct {
	uint64_t us;
	bool micro;
	const char *want;
	size_t cols;
} cases[] = {
	{ 0, true, "0 \u00b5s", 4 },
	{ 999, true, "999 \u00b5s", 6 },
	{ 1000, true, "1.000 ms", 8 },
	{ 1042, true, "1.042 ms", 8 },
	{ 999999, true, "999.999 ms", 10 },
	{ 1000000, true, "1.000 s", 7 },
	/* seconds to the ms, rounded as the page's toFixed(3) */
	{ 1234567, true, "1.235 s", 7 },
	{ 61999600, true, "62.000 s", 8 },
	/* whole milliseconds: no digit the trace did not measure */
	{ 0, false, "0 ms", 4 },
	{ 3000, false, "3 ms", 4 },
	{ 999000, false, "999 ms", 6 },
	{ 1234000, false, "1.234 s", 7 },
};

TEST(units_read_well_and_invent_nothing)
{
	char b[48];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t cols = hq_duration(b, sizeof(b), cases[i].us,
					  cases[i].micro);

		EXPECT_STREQ(cases[i].want, b) TH_LOG("case %zu", i);
		EXPECT_EQ(cases[i].cols, cols) TH_LOG("case %zu", i);
	}
}

TEST(right_aligned_by_columns_not_bytes)
{
	struct bft_buf b = { 0 };

	hq_bduration(&b, 42, true, 10);
	hq_bduration(&b, 42000, false, 10);
	/* a value wider than its column is written whole */
	hq_bduration(&b, 123456789012, true, 6);
	ASSERT_NE(NULL, b.data);
	EXPECT_EQ(0, memcmp("     42 \u00b5s     42 ms123456.789 s",
			    b.data, b.len));
	EXPECT_EQ(strlen("     42 \u00b5s     42 ms123456.789 s"), b.len);
	bft_buf_free(&b);
}

TEST_HARNESS_MAIN
