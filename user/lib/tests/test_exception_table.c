// SPDX-License-Identifier: GPL-2.0
/*
 * The exception type table: BFT_CMD_GET_EXCEPTIONS dump messages as the
 * module sends them (built here with libmnl), parsed without a socket; an
 * old module's refusal is a table without types; type names demangled for
 * display.
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "kselftest_harness.h"

#include "symbols/bft_demangle.h"
#include "capture/bft_nl.h"

struct dump {
	uint8_t buf[8192];
	size_t len;
};

static struct nlmsghdr *msg_begin(struct dump *d, uint8_t cmd)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(d->buf + d->len);
	struct genlmsghdr *g;

	nlh->nlmsg_type = 0x20;		/* a family id */
	nlh->nlmsg_flags = NLM_F_MULTI;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = BFT_GENL_VERSION;
	return nlh;
}

static void msg_end(struct dump *d, struct nlmsghdr *nlh)
{
	d->len += nlh->nlmsg_len;
}

/* One entry as the contract says; name NULL or id 0 leave them out. */
static void put_type(struct dump *d, uint32_t tgid, uint32_t id,
		     const char *name)
{
	struct nlmsghdr *nlh = msg_begin(d, BFT_CMD_GET_EXCEPTIONS);
	struct nlattr *nest;

	mnl_attr_put_u32(nlh, BFT_A_TGID, tgid);
	nest = mnl_attr_nest_start(nlh, BFT_A_EXC);
	if (id)
		mnl_attr_put_u32(nlh, BFT_X_ID, id);
	if (name)
		mnl_attr_put_strz(nlh, BFT_X_NAME, name);
	mnl_attr_nest_end(nlh, nest);
	msg_end(d, nlh);
}

static void put_done(struct dump *d)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(d->buf + d->len);

	nlh->nlmsg_type = NLMSG_DONE;
	mnl_nlmsg_put_extra_header(nlh, sizeof(int));
	d->len += nlh->nlmsg_len;
}

static void put_error(struct dump *d, int err)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(d->buf + d->len);
	struct nlmsgerr *e;

	nlh->nlmsg_type = NLMSG_ERROR;
	e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));
	e->error = err;
	d->len += nlh->nlmsg_len;
}

struct seen {
	uint32_t tgid[8], id[8];
	char name[8][BFT_EXC_NAME_MAX];
	int n;
	int stop_at;
};

static int on_type(const struct bft_nl_exception *e, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		s->tgid[s->n] = e->tgid;
		s->id[s->n] = e->id;
		snprintf(s->name[s->n], sizeof(s->name[0]), "%s", e->name);
	}
	s->n++;
	return s->n == s->stop_at ? -ECANCELED : 0;
}

TEST(types_of_a_dump_are_handed_over_in_order)
{
	struct dump d = { .len = 0 };
	struct seen s = { .n = 0 };
	char err[160];

	put_type(&d, 4242, 1, "St13runtime_error");
	put_type(&d, 4242, 2, "i");
	put_done(&d);
	EXPECT_EQ(2, bft_nl_parse_exceptions(d.buf, d.len, on_type, &s, err,
					     sizeof(err)));
	ASSERT_EQ(2, s.n);
	EXPECT_EQ(4242u, s.tgid[0]);
	EXPECT_EQ(1u, s.id[0]);
	EXPECT_STREQ("St13runtime_error", s.name[0]);
	EXPECT_EQ(2u, s.id[1]);
	EXPECT_STREQ("i", s.name[1]);
}

TEST(an_empty_dump_and_an_old_module_have_no_types)
{
	struct dump d = { .len = 0 };
	struct seen s = { .n = 0 };
	char err[160];

	put_done(&d);
	EXPECT_EQ(0, bft_nl_parse_exceptions(d.buf, d.len, on_type, &s, err,
					     sizeof(err)));
	d.len = 0;
	put_error(&d, -EOPNOTSUPP);
	EXPECT_EQ(0, bft_nl_parse_exceptions(d.buf, d.len, on_type, &s, err,
					     sizeof(err)));
	d.len = 0;
	put_error(&d, -EINVAL);
	EXPECT_EQ(0, bft_nl_parse_exceptions(d.buf, d.len, on_type, &s, err,
					     sizeof(err)));
	EXPECT_EQ(0, s.n);
	/* any other error is one */
	d.len = 0;
	put_error(&d, -EPERM);
	EXPECT_EQ(-EPERM, bft_nl_parse_exceptions(d.buf, d.len, on_type, &s,
						  err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "exceptions dump"));
}

TEST(attributes_of_a_newer_module_are_ignored)
{
	struct dump d = { .len = 0 };
	struct seen s = { .n = 0 };
	struct nlmsghdr *nlh = msg_begin(&d, BFT_CMD_GET_EXCEPTIONS);
	struct nlattr *nest;
	char err[160];

	mnl_attr_put_u64(nlh, __BFT_A_MAX + 3, 7);
	nest = mnl_attr_nest_start(nlh, BFT_A_EXC);
	mnl_attr_put_strz(nlh, BFT_X_NAME, "N2ns3ErrE");
	mnl_attr_put_u16(nlh, __BFT_X_MAX + 1, 1);
	mnl_attr_put_u32(nlh, BFT_X_ID, 9);
	mnl_attr_nest_end(nlh, nest);
	msg_end(&d, nlh);
	EXPECT_EQ(1, bft_nl_parse_exceptions(d.buf, d.len, on_type, &s, err,
					     sizeof(err)));
	EXPECT_EQ(0u, s.tgid[0]);
	EXPECT_EQ(9u, s.id[0]);
	EXPECT_STREQ("N2ns3ErrE", s.name[0]);
}

static int parse_one_bad(struct dump *d, char *err, size_t n)
{
	struct seen s = { .n = 0 };
	int r = bft_nl_parse_exceptions(d->buf, d->len, on_type, &s, err, n);

	return s.n ? -1000 : r;
}

TEST(malformed_entries_are_errors_with_a_message)
{
	char err[160], name[BFT_EXC_NAME_MAX + 8];
	struct dump d = { .len = 0 };
	struct nlmsghdr *nlh;
	struct nlattr *nest;

	put_type(&d, 1, 0, "St9exception");		/* id 0 is "unknown" */
	EXPECT_EQ(-EPROTO, parse_one_bad(&d, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "type id")) TH_LOG("%s", err);

	d.len = 0;
	put_type(&d, 1, 3, NULL);
	EXPECT_EQ(-EPROTO, parse_one_bad(&d, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "name")) TH_LOG("%s", err);

	d.len = 0;
	nlh = msg_begin(&d, BFT_CMD_GET_EXCEPTIONS);
	mnl_attr_put_u32(nlh, BFT_A_TGID, 1);
	msg_end(&d, nlh);
	EXPECT_EQ(-EPROTO, parse_one_bad(&d, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "BFT_A_EXC")) TH_LOG("%s", err);

	d.len = 0;
	put_type(&d, 1, 3, "St9exception");
	((struct genlmsghdr *)mnl_nlmsg_get_payload(
		(struct nlmsghdr *)d.buf))->cmd = BFT_CMD_GET_METHODS;
	EXPECT_EQ(-EPROTO, parse_one_bad(&d, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "unexpected command")) TH_LOG("%s", err);

	/* an id of 16 bits */
	d.len = 0;
	nlh = msg_begin(&d, BFT_CMD_GET_EXCEPTIONS);
	nest = mnl_attr_nest_start(nlh, BFT_A_EXC);
	mnl_attr_put_u16(nlh, BFT_X_ID, 3);
	mnl_attr_put_strz(nlh, BFT_X_NAME, "i");
	mnl_attr_nest_end(nlh, nest);
	msg_end(&d, nlh);
	EXPECT_EQ(-EPROTO, parse_one_bad(&d, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "malformed attribute")) TH_LOG("%s", err);

	/* a name without its NUL */
	d.len = 0;
	nlh = msg_begin(&d, BFT_CMD_GET_EXCEPTIONS);
	nest = mnl_attr_nest_start(nlh, BFT_A_EXC);
	mnl_attr_put_u32(nlh, BFT_X_ID, 3);
	mnl_attr_put(nlh, BFT_X_NAME, 4, "abcd");
	mnl_attr_nest_end(nlh, nest);
	msg_end(&d, nlh);
	EXPECT_EQ(-EPROTO, parse_one_bad(&d, err, sizeof(err)));

	/* a name longer than the contract allows */
	d.len = 0;
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	put_type(&d, 1, 3, name);
	EXPECT_EQ(-EPROTO, parse_one_bad(&d, err, sizeof(err)));

	/* a nest that is no nest */
	d.len = 0;
	nlh = msg_begin(&d, BFT_CMD_GET_EXCEPTIONS);
	mnl_attr_put_u32(nlh, BFT_A_EXC, 3);
	msg_end(&d, nlh);
	EXPECT_EQ(-EPROTO, parse_one_bad(&d, err, sizeof(err)));

	/* a message cut short */
	d.len = 0;
	put_type(&d, 1, 3, "St9exception");
	d.len -= 6;
	EXPECT_EQ(-EPROTO, parse_one_bad(&d, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "truncated")) TH_LOG("%s", err);
}

TEST(callback_can_stop_the_dump)
{
	struct dump d = { .len = 0 };
	struct seen s = { .n = 0, .stop_at = 1 };
	char err[160];

	put_type(&d, 1, 1, "i");
	put_type(&d, 1, 2, "c");
	EXPECT_EQ(-ECANCELED, bft_nl_parse_exceptions(d.buf, d.len, on_type,
						      &s, err, sizeof(err)));
	EXPECT_EQ(1, s.n);
	EXPECT_NE(NULL, strstr(err, "callback"));
}

TEST(type_names_are_demangled_for_display)
{
	static const char *const cases[][2] = {
		{ "St13runtime_error", "std::runtime_error" },
		{ "St9exception", "std::exception" },
		{ "i", "int" },
		{ "PKc", "char const*" },
		{ "N2ns3ErrIiEE", "ns::Err<int>" },
		/* GCC marks a type of internal linkage with '*' */
		{ "*N12_GLOBAL__N_13ErrE", "(anonymous namespace)::Err" },
		/* not a mangled type: as it is */
		{ "not a type!", "not a type!" },
		{ "", "" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = bft_demangle_type(cases[i][0]);

		ASSERT_NE(NULL, s);
		EXPECT_STREQ(cases[i][1], s);
		free(s);
	}
	EXPECT_EQ(NULL, bft_demangle_type(NULL));
}

TEST_HARNESS_MAIN
