// SPDX-License-Identifier: GPL-2.0
/*
 * Which name each of bfhq's outputs prints for a C++ method: the display
 * form (bft_shortname) in the text outputs people read, the whole
 * signature in the data that viewers search and in flame.svg's tooltips,
 * and the whole signature everywhere with --full-names.
 */
#include <stdlib.h>

#include "kselftest_harness.h"

#include "bft_test.h"
#include "hq.h"
#include "hq_feed.h"

#define READ_TOKEN "libqpdf.so.29!QPDFTokenizer::readToken(std::shared_ptr" \
	"<InputSource>, std::__cxx11::basic_string<char, std::char_traits" \
	"<char>, std::allocator<char> > const&, bool, unsigned long)"
#define GET_INT "libqpdf.so.29!Foo::get(int)"
#define GET_DOUBLE "libqpdf.so.29!Foo::get(double) const"

FIXTURE(names)
{
	char dir[64];
	struct hq hq;
	struct conn *ctl, *data;
};

FIXTURE_SETUP(names)
{
	ASSERT_EQ(0, hq_test_init(&self->hq, self->dir));
}

FIXTURE_TEARDOWN(names)
{
	route_full_names = false;
	hq_test_fini(&self->hq, self->dir);
}

/*
 * readToken calls get(int) and get(double), one millisecond each, and
 * the trace ends.
 */
static void trace_three(FIXTURE_DATA(names) *self_)
{
	struct hq *hq = &self_->hq;
	struct conn *d;

	if (!hq_test_connect(hq, &self_->ctl, &self_->data))
		return;
	d = self_->data;
	hq_test_map(hq, d, BFP_MAP_METHOD, 1, READ_TOKEN);
	hq_test_map(hq, d, BFP_MAP_METHOD, 2, GET_INT);
	hq_test_map(hq, d, BFP_MAP_METHOD, 3, GET_DOUBLE);
	hq_test_event(hq, d, BFP_METHOD_ENTRY, 0, 1, 1);
	hq_test_event(hq, d, BFP_METHOD_ENTRY, 1, 2, 1);
	hq_test_event(hq, d, BFP_METHOD_EXIT, 2, 2, 1);
	hq_test_event(hq, d, BFP_METHOD_ENTRY, 3, 3, 1);
	hq_test_event(hq, d, BFP_METHOD_EXIT, 4, 3, 1);
	hq_test_event(hq, d, BFP_METHOD_EXIT, 5, 1, 1);
	hq_free(hq);
}

static char *out(FIXTURE_DATA(names) *self_, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/trace-1/%s", self_->dir, name);
	return bft_test_slurp(path, NULL);
}

TEST_F(names, text_outputs_print_the_display_form_data_the_whole_name)
{
	char *s;

	trace_three(self);
	s = out(self, "tree.txt");
	ASSERT_NE(NULL, s);
	EXPECT_NE(NULL, strstr(s, "           | libqpdf.so.29!QPDFTokenizer::"
			       "readToken() {\n")) TH_LOG("%s", s);
	EXPECT_NE(NULL, strstr(s, "|   libqpdf.so.29!Foo::get();\n"))
		TH_LOG("%s", s);
	EXPECT_NE(NULL, strstr(s, "      5 ms | } /* libqpdf.so.29!"
			       "QPDFTokenizer::readToken */\n")) TH_LOG("%s", s);
	EXPECT_EQ(NULL, strstr(s, "std::")) TH_LOG("%s", s);
	free(s);
	s = out(self, "summary.txt");
	ASSERT_NE(NULL, s);
	/* whole ms: the agent sent no bftrace.us markers */
	EXPECT_NE(NULL, strstr(s, "top methods by self time:\n      self      "
			       "total      calls  method\n      3 ms       5 ms"
			       "          1  libqpdf.so.29!QPDFTokenizer::"
			       "readToken\n")) TH_LOG("%s", s);
	EXPECT_EQ(NULL, strstr(s, "(int)")) TH_LOG("%s", s);
	free(s);
	/* overloads share a path, summed by whoever draws it */
	s = out(self, "folded.txt");
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("thread_1;libqpdf.so.29!QPDFTokenizer::readToken 3000\n"
		     "thread_1;libqpdf.so.29!QPDFTokenizer::readToken;"
		     "libqpdf.so.29!Foo::get 1000\n"
		     "thread_1;libqpdf.so.29!QPDFTokenizer::readToken;"
		     "libqpdf.so.29!Foo::get 1000\n", s);
	free(s);
	s = out(self, "methods.txt");
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("1 1 " READ_TOKEN "\n2 1 " GET_INT "\n3 1 " GET_DOUBLE
		     "\n", s);
	free(s);
	s = out(self, "trace.json");
	ASSERT_NE(NULL, s);
	EXPECT_NE(NULL, strstr(s, "\"name\":\"" GET_DOUBLE "\",\"ph\":\"B\""))
		TH_LOG("%s", s);
	free(s);
	/* one box says Foo::get, its tooltip both signatures */
	s = out(self, "flame.svg");
	ASSERT_NE(NULL, s);
	EXPECT_NE(NULL, strstr(s, "<title>" GET_INT "\n" GET_DOUBLE
			       " (2.000 ms, ")) TH_LOG("%s", s);
	EXPECT_NE(NULL, strstr(s, ">Foo::get</text>")) TH_LOG("%s", s);
	EXPECT_NE(NULL, strstr(s, "<title>libqpdf.so.29!QPDFTokenizer::"
			       "readToken(std::shared_ptr&lt;InputSource&gt;, "))
		TH_LOG("%s", s);
	free(s);
}

TEST_F(names, full_names_keeps_every_signature_whole)
{
	char *s;

	route_full_names = true;
	trace_three(self);
	s = out(self, "tree.txt");
	ASSERT_NE(NULL, s);
	EXPECT_NE(NULL, strstr(s, "| " READ_TOKEN " {\n")) TH_LOG("%s", s);
	EXPECT_NE(NULL, strstr(s, "|   " GET_DOUBLE ";\n")) TH_LOG("%s", s);
	free(s);
	s = out(self, "summary.txt");
	ASSERT_NE(NULL, s);
	EXPECT_NE(NULL, strstr(s, "  " GET_INT "\n")) TH_LOG("%s", s);
	free(s);
	s = out(self, "folded.txt");
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("thread_1;" READ_TOKEN " 3000\n"
		     "thread_1;" READ_TOKEN ";" GET_INT " 1000\n"
		     "thread_1;" READ_TOKEN ";" GET_DOUBLE " 1000\n", s);
	free(s);
}

TEST_HARNESS_MAIN
