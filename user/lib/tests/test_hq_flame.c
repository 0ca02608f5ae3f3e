// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq's flame.svg (user/hq/flame.c), drawn from a folded.txt: one box per
 * call path as wide as its time, callees on their caller; short labels,
 * whole signatures in the tooltips, XML-escaped; paths without time and
 * lines that are not "stack N" left out; a file that parses as XML.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "collector_fixture.h"
#include "hq.h"

FIXTURE(flame)
{
	char dir[PATH_MAX];
	char in[PATH_MAX + 16];
	char svg[PATH_MAX + 16];
};

FIXTURE_SETUP(flame)
{
	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	snprintf(self->in, sizeof(self->in), "%s/folded.txt", self->dir);
	snprintf(self->svg, sizeof(self->svg), "%s/flame.svg", self->dir);
}

FIXTURE_TEARDOWN(flame)
{
	remove_tmpdir(self->dir);
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (; (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

/* The width attribute of the box whose tooltip starts with title. */
static double box_width(const char *svg, const char *title)
{
	char key[256];
	const char *p;

	snprintf(key, sizeof(key), "<title>%s (", title);
	p = strstr(svg, key);
	if (!p)
		return -1;
	p = strstr(p, "width=\"");
	return p ? strtod(p + 7, NULL) : -1;
}

/* widths are printed to a tenth of a pixel */
#define EXPECT_PX(want, got) \
	EXPECT_EQ((long)((want) * 10 + 0.5), (long)((got) * 10 + 0.5))

TEST_F(flame, boxes_are_as_wide_as_their_time)
{
	static const char folded[] =
		"main_(1/1);prog!main 100\n"
		"main_(1/1);prog!main;prog!parse(char const*) 300\n"
		"main_(1/1);prog!main;libx.so.1!Box<int>::get() const 600\n"
		"idle_(1/2);prog!wait 0\n"
		"not a folded line\n"
		"main_(1/1);prog!neg -5\n";
	char cmd[PATH_MAX + 128];
	char *svg;

	ASSERT_EQ(0, syn_write_file(self->dir, "folded.txt", folded,
				    sizeof(folded) - 1));
	ASSERT_EQ(0, hq_write_flame(self->in, self->svg, "trace <1>", NULL, NULL));
	svg = bft_test_slurp(self->svg, NULL);
	ASSERT_NE(NULL, svg);
	/* the background, all, the thread, main, parse, get: idle has no
	 * time, so no box */
	EXPECT_EQ(6u, count(svg, "<rect")) TH_LOG("%s", svg);
	EXPECT_EQ(NULL, strstr(svg, "idle")) TH_LOG("%s", svg);
	EXPECT_EQ(NULL, strstr(svg, "neg")) TH_LOG("%s", svg);
	EXPECT_NE(NULL, strstr(svg, "trace &lt;1&gt; (1.000 ms in all"));
	/* 1180 px for 1000 us */
	EXPECT_PX(1180.0, box_width(svg, "all"));
	EXPECT_PX(1180.0, box_width(svg, "prog!main"));
	EXPECT_PX(354.0, box_width(svg, "prog!parse(char const*)"));
	EXPECT_PX(708.0, box_width(svg,
				   "libx.so.1!Box&lt;int&gt;::get() const"));
	/* short labels: no object, no parameters */
	EXPECT_NE(NULL, strstr(svg, ">Box&lt;int&gt;::get</text>"))
		TH_LOG("%s", svg);
	EXPECT_NE(NULL, strstr(svg, ">parse</text>")) TH_LOG("%s", svg);
	free(svg);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import sys, xml.etree.ElementTree as E; "
		 "E.parse(sys.argv[1])' '%s'", self->svg);
	EXPECT_EQ(0, system(cmd));
}

TEST_F(flame, an_empty_trace_draws_an_empty_graph)
{
	char *svg;

	ASSERT_EQ(0, syn_write_file(self->dir, "folded.txt", "", 0));
	ASSERT_EQ(0, hq_write_flame(self->in, self->svg, "empty", NULL, NULL));
	svg = bft_test_slurp(self->svg, NULL);
	ASSERT_NE(NULL, svg);
	EXPECT_EQ(1u, count(svg, "<rect"));
	EXPECT_NE(NULL, strstr(svg, "no call with a duration"));
	EXPECT_NE(NULL, strstr(svg, "</svg>"));
	free(svg);
}

/* Any file may be drawn (bfhq --flame): a stack of 100000 frames is cut,
 * not recursed into. */
TEST_F(flame, a_stack_of_any_depth_is_cut_not_followed)
{
	size_t i, n = 100000 * 2 + 16;
	char *line = malloc(n), *svg;

	ASSERT_NE(NULL, line);
	for (i = 0; i < 100000; i++)
		memcpy(line + 2 * i, "f;", 2);
	memcpy(line + 2 * i - 1, " 1000\n", 7);
	ASSERT_EQ(0, syn_write_file(self->dir, "folded.txt", line,
				    strlen(line)));
	free(line);
	ASSERT_EQ(0, hq_write_flame(self->in, self->svg, "deep", NULL, NULL));
	svg = bft_test_slurp(self->svg, NULL);
	ASSERT_NE(NULL, svg);
	/* the background, then all and 1099 frames under it */
	EXPECT_EQ(1101u, count(svg, "<rect"));
	free(svg);
}

TEST_F(flame, a_missing_folded_file_is_an_error)
{
	EXPECT_EQ(-ENOENT, hq_write_flame(self->in, self->svg, "x", NULL, NULL));
	EXPECT_NE(0, access(self->svg, F_OK));
}

TEST_HARNESS_MAIN
