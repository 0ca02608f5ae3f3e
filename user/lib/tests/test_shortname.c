// SPDX-License-Identifier: GPL-2.0
/* Display forms of demangled C++ names, and names that must pass unchanged. */
#include "kselftest_harness.h"

#include "model/bft_shortname.h"

static const char *const cases[][2] = {
	{ "QPDFTokenizer::readToken(std::shared_ptr<InputSource>, "
	  "std::__cxx11::basic_string<char, std::char_traits<char>, "
	  "std::allocator<char> > const&, bool, unsigned long)",
	  "QPDFTokenizer::readToken" },
	{ "foo()::{lambda(int)#1}::operator()(int) const",
	  "foo()::{lambda(int)#1}::operator()" },
	{ "(anonymous namespace)::bar(int)", "(anonymous namespace)::bar" },
	{ "std::vector<int, std::allocator<int> >::push_back(int const&)",
	  "std::vector<int>::push_back" },
	{ "qsort_r(void*, unsigned long, int (*)(void const*, void const*))",
	  "qsort_r" },
	{ "operator<<(std::ostream&, Foo const&)", "operator<<" },
	{ "Foo::operator<(Foo const&) const", "Foo::operator<" },
	{ "Foo::operator->()", "Foo::operator->" },
	{ "Foo::operator>>=(int)", "Foo::operator>>=" },
	{ "Foo::operator bool() const", "Foo::operator bool" },
	{ "main", "main" },
	{ "Foo::Foo()", "Foo::Foo" },
	{ "Foo::~Foo()", "Foo::~Foo" },
	{ "std::__1::basic_string<wchar_t, std::__1::char_traits<wchar_t>, "
	  "std::__1::allocator<wchar_t> >::size() const",
	  "std::wstring::size" },
	{ "std::map<std::__cxx11::basic_string<char, std::char_traits<char>, "
	  "std::allocator<char> >, int, std::less<std::__cxx11::basic_string"
	  "<char, std::char_traits<char>, std::allocator<char> > >, "
	  "std::allocator<std::pair<std::__cxx11::basic_string<char, "
	  "std::char_traits<char>, std::allocator<char> > const, int> > >"
	  "::find(std::__cxx11::basic_string<char, std::char_traits<char>, "
	  "std::allocator<char> > const&)",
	  "std::map<std::string, int>::find" },
	{ "std::unordered_map<int, long, std::hash<int>, std::equal_to<int>, "
	  "std::allocator<std::pair<int const, long> > >::clear()",
	  "std::unordered_map<int, long>::clear" },
	{ "std::set<int, std::less<int>, std::allocator<int> >::insert(int&&)",
	  "std::set<int>::insert" },
	{ "std::list<A, std::allocator<A> >::size() const", "std::list<A>::size" },
	{ "std::deque<A, std::allocator<A> >::front()", "std::deque<A>::front" },
	{ "std::vector<std::vector<int, std::allocator<int> >, "
	  "std::allocator<std::vector<int, std::allocator<int> > > >::size()",
	  "std::vector<std::vector<int>>::size" },
	{ "a::F<b::G<c::H<int> > >::x()", "a::F<b::G<c::H<...>>>::x" },
	{ "Mine<int, std::allocator<int> >::get()",
	  "Mine<int, std::allocator<int>>::get" },
	{ "Box<aaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbb, c>::get()",
	  "Box<...>::get" },
	{ "f(int) &&", "f" },
	{ "g() noexcept", "g" },
	{ "ns::h[abi:cxx11](int)", "ns::h[abi:cxx11]" },
	/* malformed: unchanged */
	{ "broken<int(", "broken<int(" },
	{ "a>b(int)", "a>b(int)" },
	{ "x)(", "x)(" },
	{ "((((", "((((" },
	{ "operator", "operator" },
	{ "", "" },
};

TEST(simplifies_exactly)
{
	char out[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = bft_shortname(cases[i][0], out, sizeof(out));

		EXPECT_STREQ(cases[i][1], out) {
			TH_LOG("case %zu: %s", i, cases[i][0]);
		}
		EXPECT_EQ(strlen(cases[i][1]), n);
	}
}

TEST(truncates_to_cap)
{
	char out[8];

	EXPECT_EQ(7, bft_shortname("averyveryverylongname", out, sizeof(out)));
	EXPECT_STREQ("averyve", out);
	EXPECT_EQ(3, bft_shortname("Foo::x(int)", out, 4));
	EXPECT_STREQ("Foo", out);
}

TEST(deep_nesting_is_returned_unchanged)
{
	static char in[4096], out[4096];

	for (int i = 0; i < 1000; i++) {
		in[i] = '<';
		in[2000 + i] = '>';
	}
	memset(in + 1000, 'a', 1000);
	EXPECT_EQ(strlen(in), bft_shortname(in, out, sizeof(out)));
	EXPECT_STREQ(in, out);
}

TEST_HARNESS_MAIN
