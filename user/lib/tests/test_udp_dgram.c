// SPDX-License-Identifier: GPL-2.0
/*
 * The UDP datagram layout and DataEnd (docs/udp-data.md): the documents'
 * byte examples, written and checked, and the datagrams bfu_check() must
 * refuse, each for its own reason.
 */
#include "kselftest_harness.h"

#include "bft_test.h"
#include "wire/bfu_dgram.h"

/* docs/udp-data.md: run 0, stream 0, packet 42, an entry and its exit (v1) */
static const char doc_dgram[] =
	"42 55 01 00 00 02 00 00 00 00 00 2a"
	" 14 00 00 00 05 00 00 00 07 00 00 00 03 00 01"
	" 15 00 00 00 09 00 00 00 08 00 00 00 03 00 00 00 01";

TEST(the_documents_datagram_is_written_and_taken)
{
	struct bfu_hdr h = { .run_id = 0, .stream = 0, .nmsgs = 2,
			     .packet = 42 };
	uint8_t want[64], got[64];
	struct bft_buf b = { 0 };
	struct bfp_msg in = { .id = BFP_METHOD_ENTRY, .time = 5, .seq = 7,
			      .method = 3, .thread = 1 };
	struct bfp_msg out = { .id = BFP_METHOD_EXIT, .time = 9, .seq = 8,
			       .method = 3, .thread = 1 };
	char why[192] = "";
	int n = hex_parse(doc_dgram, want, sizeof(want));

	ASSERT_EQ(44, n);
	bfu_put_hdr(got, &h);
	ASSERT_EQ(0, bfp_encode(&b, 1, &in));
	ASSERT_EQ(0, bfp_encode(&b, 1, &out));
	ASSERT_EQ(32, b.len);
	memcpy(got + BFU_HDR_LEN, b.data, b.len);
	EXPECT_EQ(0, memcmp(want, got, 44));
	memset(&h, 0xff, sizeof(h));
	EXPECT_EQ(0, bfu_check(want, 44, 1, &h, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_EQ(0, h.run_id);
	EXPECT_EQ(0, h.stream);
	EXPECT_EQ(2, h.nmsgs);
	EXPECT_EQ(42, h.packet);
	/* version 2's exit is 16 bytes: the same bytes do not fit */
	EXPECT_EQ(-EPROTO, bfu_check(want, 44, 2, &h, why, sizeof(why)));
	bft_buf_free(&b);
}

TEST(the_documents_data_end)
{
	struct bfp_msg m = { .id = BFP_DATA_END, .stream = 0, .packets = 43,
			     .seq = 4096 };
	struct bfp_msg back = { 0 };
	struct bfp_error err;
	struct bft_buf b = { 0 };
	uint8_t want[16];
	int n = hex_parse("33 00 00 00 00 2b 00 00 10 00", want, sizeof(want));

	ASSERT_EQ(10, n);
	ASSERT_EQ(0, bfp_encode(&b, 2, &m));
	ASSERT_EQ(10, b.len);
	EXPECT_EQ(0, memcmp(want, b.data, 10));
	EXPECT_EQ(10, bfp_decode(want, 10, 1, BFP_CTX_HQ_CONTROL, &back, &err));
	EXPECT_EQ(43, back.packets);
	EXPECT_EQ(4096, back.seq);
	/* HQ's, on the control connection only */
	EXPECT_EQ(-EPROTO, bfp_decode(want, 10, 1, BFP_CTX_HQ_DATA, &back,
				      &err));
	bfp_msg_free(&back);
	bft_buf_free(&b);
}

/* A change of the document's datagram that must be refused: the reason. */
static void refused(struct __test_metadata *_metadata, size_t at, int delta,
		    size_t len, const char *reason)
{
	uint8_t p[64];
	struct bfu_hdr h;
	char why[192] = "";

	ASSERT_EQ(44, hex_parse(doc_dgram, p, sizeof(p)));
	if (at < len)
		p[at] = (uint8_t)(p[at] + delta);
	EXPECT_EQ(-EPROTO, bfu_check(p, len, 1, &h, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, reason)) TH_LOG("why: %s", why);
}

TEST(what_is_refused_and_why)
{
	refused(_metadata, 0, 1, 44, "not a bftrace data datagram");
	refused(_metadata, 2, 1, 44, "not a bftrace data datagram");
	refused(_metadata, 6, 1, 44, "not a bftrace data datagram");
	refused(_metadata, 99, 0, 11, "a datagram of 11 bytes");
	refused(_metadata, 5, -2, 44, "without messages");
	refused(_metadata, 5, 1, 44, "says 3 messages");
	refused(_metadata, 5, -1, 44, "says 1 messages");
	refused(_metadata, 99, 0, 43, "cut off");
	refused(_metadata, 12, 80, 44, "unknown message id");
	/* a configuration (id 1) is no data message */
	refused(_metadata, 12, -19, 44, "unexpected message");
}

TEST(an_error_message_is_no_datagrams_business)
{
	struct bfp_msg e = { .id = BFP_ERROR, .str = "x", .str_len = 1 };
	struct bfu_hdr h = { .nmsgs = 1 };
	struct bft_buf b = { 0 };
	uint8_t p[64];
	char why[192] = "";

	ASSERT_EQ(0, bfp_encode(&b, 1, &e));
	bfu_put_hdr(p, &h);
	memcpy(p + BFU_HDR_LEN, b.data, b.len);
	EXPECT_EQ(-EPROTO, bfu_check(p, BFU_HDR_LEN + b.len, 1, &h, why,
				     sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "message error in a datagram")) TH_LOG("%s", why);
	bft_buf_free(&b);
}

TEST_HARNESS_MAIN
