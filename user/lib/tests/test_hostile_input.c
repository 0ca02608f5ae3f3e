// SPDX-License-Identifier: GPL-2.0
/*
 * Input a hostile peer or a broken file can send, each one a case that once
 * crashed, hung or silently changed a decoder's result: a deep chain of
 * Java class descriptors, deep JSON, stream time that wrapped, an ELF file
 * without functions, configuration strings too long or holding NUL.
 */
#include <elf.h>
#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "bft_test.h"
#include "wire/bfp_config.h"
#include "wire/bfp_joss.h"
#include "capture/bft_nl.h"
#include "symbols/bft_resolve.h"

/* TC_CLASSDESC "" suid 0 flags SC_SERIALIZABLE, no fields, no annotation */
static const uint8_t empty_desc[] = {
	TC_CLASSDESC, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	SC_SERIALIZABLE, 0, 0, TC_ENDBLOCKDATA,
};

/* An object whose class has n superclasses, each a new descriptor. */
static uint8_t *superclass_chain(size_t n, size_t *len)
{
	size_t per = sizeof(empty_desc), i;
	uint8_t *b = malloc(5 + n * per + 1), *p = b;

	if (!b)
		return NULL;
	*p++ = 0xac;
	*p++ = 0xed;
	*p++ = 0;
	*p++ = JOSS_VERSION;
	*p++ = TC_OBJECT;
	for (i = 0; i < n; i++, p += per)
		memcpy(p, empty_desc, per);
	*p++ = TC_NULL;
	*len = (size_t)(p - b);
	return b;
}

TEST(a_deep_superclass_chain_is_refused_not_followed)
{
	size_t n = 100000, len;
	uint8_t *b = superclass_chain(n, &len);
	struct joss_value *root;
	struct joss *j;
	char err[160] = "";

	ASSERT_NE(NULL, b);
	ASSERT_LT(len, 16u << 20);	/* fits in one message */
	EXPECT_EQ(-EPROTO, joss_parse(b, len, &j, &root, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "nested too deeply")) TH_LOG("%s", err);
	EXPECT_EQ(NULL, j);
	free(b);
}

TEST(a_short_superclass_chain_still_decodes)
{
	size_t len;
	uint8_t *b = superclass_chain(3, &len);
	struct joss_value *root;
	struct joss *j;
	char err[160] = "";

	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, joss_parse(b, len, &j, &root, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(JOSS_OBJECT, root->kind);
	EXPECT_EQ(3u, root->nlevels);
	joss_free(j);
	free(b);
}

TEST(deeply_nested_json_configuration_is_refused)
{
	size_t n = 200000, i;
	char *s = malloc(2 * n + 1);
	struct bfp_config c;
	char err[200] = "";

	ASSERT_NE(NULL, s);
	for (i = 0; i < n; i++) {
		s[i] = '[';
		s[2 * n - 1 - i] = ']';
	}
	s[2 * n] = 0;
	EXPECT_EQ(-EPROTO, bfp_config_decode_json(s, 2 * n, &c, err,
						  sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "JSON")) TH_LOG("%s", err);
	free(s);
}

/* SYNC at time 0 with a unit of 2^63, then two TIME_SHORT of one unit. */
#define HUGE_UNIT "41 00 00 00 80 80 80 80 80 80 80 80 80 01 00 60 00 60 00"

TEST(short_time_past_2_64_is_an_error_however_the_bytes_arrive)
{
	uint8_t b[32];
	int n = hex_parse(HUGE_UNIT, b, sizeof(b));
	size_t chunk;

	ASSERT_EQ(19, n);
	for (chunk = 0; chunk <= (size_t)n; chunk++) {
		struct bft_stream s;
		struct rec_log l = { 0 };

		stream_open(&s, &l, 0, BFT_STREAM_STOP);
		EXPECT_EQ(-EPROTO, stream_decode(&s, b, (size_t)n, chunk))
			TH_LOG("chunk %zu", chunk);
		ASSERT_EQ(1u, l.nerr) TH_LOG("chunk %zu", chunk);
		EXPECT_EQ(BFT_SERR_FIELD_RANGE, l.err[0].code);
		EXPECT_EQ(17u, l.err[0].offset) TH_LOG("chunk %zu", chunk);
		EXPECT_NE(NULL, strstr(l.err[0].msg, "overflows"));
		/* the first one is applied; time never went back */
		ASSERT_EQ(2u, l.n) TH_LOG("chunk %zu", chunk);
		EXPECT_EQ(1ull << 63, l.r[1].time_ns) TH_LOG("chunk %zu", chunk);
		EXPECT_EQ(1ull << 63, bft_stream_time(&s));
		rec_log_free(&l);
	}
}

TEST(short_time_up_to_the_last_nanosecond_is_exact)
{
	/* SYNC at 2^64 - 1 - 32, unit 1; 32 units fit exactly, then 1 more */
	uint8_t b[32];
	int n = hex_parse("41 00 00 df ff ff ff ff ff ff ff ff 01 01 00 7f 00 "
			  "60 00", b, sizeof(b));
	struct bft_stream s;
	struct rec_log l = { 0 };

	ASSERT_EQ(19, n);
	stream_open(&s, &l, 0, BFT_STREAM_STOP);
	EXPECT_EQ(-EPROTO, stream_decode(&s, b, (size_t)n, 0));
	ASSERT_EQ(2u, l.n);
	EXPECT_EQ(UINT64_MAX, l.r[1].time_ns);
	ASSERT_EQ(1u, l.nerr);
	EXPECT_EQ(17u, l.err[0].offset);
	rec_log_free(&l);
}

/* An ELF header and nothing else: no segments, no sections, no symbols. */
TEST(an_elf_file_without_functions_loads_empty)
{
	char path[] = "/tmp/bft-nofuncs-XXXXXX";
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
			     ELFDATA2LSB, EV_CURRENT },
		.e_type = ET_DYN,
		.e_machine = EM_X86_64,
		.e_version = EV_CURRENT,
		.e_ehsize = sizeof(Elf64_Ehdr),
	};
	struct bft_object o;
	char err[200] = "";
	int fd = mkstemp(path);

	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)sizeof(eh), write(fd, &eh, sizeof(eh)));
	close(fd);
	EXPECT_EQ(0, bft_object_load(&o, NULL, path, NULL, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(0u, o.nfuncs);
	EXPECT_EQ(0u, o.nsyms);
	bft_object_free(&o);
	unlink(path);
}

static int encode_one(struct bft_buf *out, const char *pattern)
{
	struct bfp_config c;
	int err;

	bfp_config_init(&c);
	err = bfp_strlist_add(&c.inclusions, pattern);
	if (!err)
		err = bfp_config_encode_java(&c, out);
	bfp_config_free(&c);
	return err;
}

TEST(a_list_string_over_64k_round_trips_as_a_long_string)
{
	size_t n = 70000;
	char *s = malloc(n + 1);
	struct bft_buf b = { 0 }, again = { 0 };
	struct bfp_config c;
	char err[200] = "";

	ASSERT_NE(NULL, s);
	memset(s, 'x', n);
	s[0] = '^';
	s[n] = 0;
	ASSERT_EQ(0, encode_one(&b, s));
	ASSERT_EQ(0, bfp_config_decode_java(b.data, b.len, &c, err,
					    sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(1u, c.inclusions.n);
	EXPECT_EQ(n, strlen(c.inclusions.v[0]));
	EXPECT_EQ(0, strcmp(s, c.inclusions.v[0]));
	/* and what was decoded encodes to the same bytes */
	ASSERT_EQ(0, bfp_config_encode_java(&c, &again));
	ASSERT_EQ(b.len, again.len);
	EXPECT_EQ(0, memcmp(b.data, again.data, b.len));
	bfp_config_free(&c);
	bft_buf_free(&b);
	bft_buf_free(&again);
	free(s);
}

TEST(a_nul_inside_a_list_string_is_refused_not_cut)
{
	static const uint8_t marker[] = { 0, 6, 'a', '#', '#', 'b', 'c', 'd' };
	struct bft_buf b = { 0 };
	struct bfp_config c;
	char err[200] = "";
	uint8_t *at = NULL;
	size_t i;

	ASSERT_EQ(0, encode_one(&b, "a##bcd"));
	for (i = 0; i + sizeof(marker) <= b.len; i++)
		if (!memcmp(b.data + i, marker, sizeof(marker)))
			at = b.data + i;
	ASSERT_NE(NULL, at);
	at[3] = 0xc0;	/* modified UTF-8 for U+0000 */
	at[4] = 0x80;
	EXPECT_EQ(-EPROTO, bfp_config_decode_java(b.data, b.len, &c, err,
						  sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "NUL")) TH_LOG("%s", err);
	EXPECT_EQ(0u, c.inclusions.n);
	bft_buf_free(&b);
}

TEST(a_nul_inside_a_json_list_string_is_refused_too)
{
	static const char json[] =
		"{\"inclusions\":[\"a\\u0000b\"],\"runId\":1}";
	struct bfp_config c;
	char err[200] = "";

	EXPECT_EQ(-EPROTO, bfp_config_decode_json(json, sizeof(json) - 1, &c,
						  err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "JSON")) TH_LOG("%s", err);
}

/* This test program's own image, with every executable segment moved
 * (p_offset) past the end of the file when move is set. */
static uint8_t *own_image(size_t *len, bool move)
{
	uint8_t *b = (uint8_t *)bft_test_slurp("/proc/self/exe", len);
	Elf64_Ehdr *eh;
	unsigned int i;

	if (!b)
		return NULL;
	eh = (Elf64_Ehdr *)b;
	for (i = 0; move && i < eh->e_phnum; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(b + eh->e_phoff) + i;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			ph->p_offset += 1ull << 30;
	}
	return b;
}

TEST(no_function_is_reported_past_the_end_of_its_file)
{
	struct bft_object o;
	char err[200] = "";
	size_t len, i;
	uint8_t *b = own_image(&len, false);

	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, bft_object_load_mem(&o, "self", b, len, NULL, err,
					 sizeof(err))) TH_LOG("%s", err);
	EXPECT_LT(10u, o.nfuncs);
	for (i = 0; i < o.nfuncs; i++)
		EXPECT_GE(len, o.funcs[i].offset + o.funcs[i].size);
	bft_object_free(&o);
	free(b);
	/* a segment that claims file bytes the file does not have */
	b = own_image(&len, true);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, bft_object_load_mem(&o, "self", b, len, NULL, err,
					 sizeof(err))) TH_LOG("%s", err);
	EXPECT_EQ(0u, o.nfuncs);
	bft_object_free(&o);
	free(b);
}

/* One netlink message of type, with payload p (n bytes), into b. */
static size_t nl_msg(uint8_t *b, uint16_t type, const void *p, size_t n)
{
	struct nlmsghdr h = { .nlmsg_len = (uint32_t)(sizeof(h) + n),
			      .nlmsg_type = type };

	memcpy(b, &h, sizeof(h));
	memcpy(b + sizeof(h), p, n);
	return NLMSG_ALIGN(sizeof(h) + n);
}

TEST(a_netlink_length_past_2g_is_refused_not_followed)
{
	uint32_t b32[16] = { 0 };
	uint8_t *b = (uint8_t *)b32;
	struct nlmsghdr *h = (struct nlmsghdr *)b;
	char err[200] = "";

	/* libmnl's check takes this length for -16, and its next message
	 * for one 4 GiB further on */
	h->nlmsg_len = 0xfffffff0u;
	h->nlmsg_type = 0x1d;
	EXPECT_GT(0, bft_nl_parse_reply(BFT_CMD_GET_CAPS, 0x1d, b, sizeof(b32),
					err, sizeof(err)));
	EXPECT_NE(0, err[0]);
}

TEST(a_netlink_error_that_is_no_errno_is_refused)
{
	uint32_t b32[16] = { 0 };
	uint8_t *b = (uint8_t *)b32;
	struct nlmsgerr e = { .error = INT32_MIN };
	char err[200] = "";
	size_t n = nl_msg(b, NLMSG_ERROR, &e, sizeof(e));

	EXPECT_EQ(-EPROTO, bft_nl_parse_reply(BFT_CMD_GET_CAPS, 0x1d, b, n,
					      err, sizeof(err)));
	/* a positive one is an error too, not a count of types */
	e.error = 5;
	n = nl_msg(b, NLMSG_ERROR, &e, sizeof(e));
	EXPECT_EQ(-5, bft_nl_parse_exceptions(b, n, NULL, NULL, err,
					      sizeof(err)));
	e.error = INT32_MIN;
	n = nl_msg(b, NLMSG_ERROR, &e, sizeof(e));
	EXPECT_EQ(-EPROTO, bft_nl_parse_exceptions(b, n, NULL, NULL, err,
						   sizeof(err)));
}

TEST_HARNESS_MAIN
