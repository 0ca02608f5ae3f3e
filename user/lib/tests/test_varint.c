// SPDX-License-Identifier: GPL-2.0
/* Varint encoders and decoders: byte vectors, limits, malformed input. */
#include "kselftest_harness.h"

#include "bft_test.h"
#include "wire/bft_varint.h"

struct vec {
	uint64_t v;
	const char *hex;
};

/* ENTER values: bftrace.h 2.1 and the flow agent's own vectors. */
static const struct vec enter_vecs[] = {
	{ 0, "80" },
	{ 1, "81" },
	{ 63, "bf" },
	{ 64, "c001" },
	{ 300, "ec04" },
	{ 8191, "ff7f" },
	{ 8192, "c08001" },
	{ 1u << 20, "c0808001" },
	{ 0x7fffffff, "ffffffff0f" },
	{ INT64_MAX, "ffffffffffffffffff01" },
	{ UINT64_MAX, "ffffffffffffffffff03" },
};

/* EXIT values are (exits - 1). */
static const struct vec exit_vecs[] = {
	{ 0, "00" },	/* 1 exit */
	{ 1, "01" },
	{ 2, "02" },	/* 3 exits */
	{ 63, "3f" },	/* 64 exits */
	{ 64, "4001" },	/* 65 exits */
	{ 99999, "5f9a0c" },
};

static const struct vec leb_vecs[] = {
	{ 0, "00" },
	{ 7, "07" },
	{ 127, "7f" },
	{ 128, "8001" },
	{ 200, "c801" },
	{ 500, "f403" },
	{ 1000, "e807" },
	{ 1234, "d209" },
	{ 1000000, "c0843d" },
	{ UINT64_MAX, "ffffffffffffffffff01" },
};

static void check_packed(struct __test_metadata *_metadata, unsigned int flag,
			 const struct vec *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint8_t want[16], got[16];
		char hex[40];
		uint64_t val = 0;
		int len = hex_parse(v[i].hex, want, sizeof(want));

		ASSERT_GT(len, 0);
		ASSERT_EQ((unsigned int)len, bft_packed_put(got, flag, v[i].v));
		EXPECT_STREQ(v[i].hex, hex_format(got, (size_t)len, hex));
		EXPECT_EQ((unsigned int)len, bft_packed_len(v[i].v));
		EXPECT_EQ(len, bft_packed_get(want, (size_t)len, &val));
		EXPECT_EQ(v[i].v, val);
		EXPECT_EQ(flag, want[0] & BFT_FLAG_ENTER);
		EXPECT_FALSE(bft_varint_overlong(want, (size_t)len));
	}
}

TEST(packed_enter_vectors_encode_and_decode)
{
	check_packed(_metadata, BFT_FLAG_ENTER, enter_vecs,
		     sizeof(enter_vecs) / sizeof(enter_vecs[0]));
}

TEST(packed_exit_vectors_encode_and_decode)
{
	check_packed(_metadata, BFT_FLAG_EXIT, exit_vecs,
		     sizeof(exit_vecs) / sizeof(exit_vecs[0]));
}

TEST(leb128_vectors_encode_and_decode)
{
	size_t i;

	for (i = 0; i < sizeof(leb_vecs) / sizeof(leb_vecs[0]); i++) {
		uint8_t want[16], got[16];
		char hex[40];
		uint64_t val = 0;
		int len = hex_parse(leb_vecs[i].hex, want, sizeof(want));

		ASSERT_GT(len, 0);
		ASSERT_EQ((unsigned int)len, bft_leb128_put(got, leb_vecs[i].v));
		EXPECT_STREQ(leb_vecs[i].hex, hex_format(got, (size_t)len, hex));
		EXPECT_EQ((unsigned int)len, bft_leb128_len(leb_vecs[i].v));
		EXPECT_EQ(len, bft_leb128_get(want, (size_t)len, &val));
		EXPECT_EQ(leb_vecs[i].v, val);
	}
}

TEST(length_follows_bit_length_at_every_boundary)
{
	unsigned int bit;

	for (bit = 0; bit < 64; bit++) {
		uint64_t v = 1ull << bit;
		uint8_t buf[16];
		uint64_t back;

		/* packed: 6 bits, then 7 per byte; LEB128: 7 per byte */
		EXPECT_EQ(bit < 6 ? 1u : 1 + (bit - 6) / 7 + 1,
			  bft_packed_put(buf, BFT_FLAG_ENTER, v));
		EXPECT_EQ(bit / 7 + 1, bft_leb128_put(buf, v));
		ASSERT_GT(bft_leb128_get(buf, sizeof(buf), &back), 0);
		EXPECT_EQ(v, back);
		v--;
		ASSERT_GT(bft_packed_put(buf, BFT_FLAG_EXIT, v), 0);
		ASSERT_GT(bft_packed_get(buf, sizeof(buf), &back), 0);
		EXPECT_EQ(v, back);
	}
}

TEST(truncated_varint_asks_for_more_bytes)
{
	uint8_t b[16];
	uint64_t v;
	int len = hex_parse("ffffffffffffffffff03", b, sizeof(b));
	int n;

	for (n = 0; n < len; n++)
		EXPECT_EQ(0, bft_packed_get(b, (size_t)n, &v));
	EXPECT_EQ(len, bft_packed_get(b, (size_t)len, &v));
	len = hex_parse("ffffffffffffffffff01", b, sizeof(b));
	for (n = 0; n < len; n++)
		EXPECT_EQ(0, bft_leb128_get(b, (size_t)n, &v));
}

TEST(eleven_byte_varint_is_too_long)
{
	uint8_t b[16];
	uint64_t v;

	memset(b, 0x80, sizeof(b));
	EXPECT_EQ(BFT_VARINT_TOO_LONG, bft_leb128_get(b, 11, &v));
	/* the eleventh byte is never looked at */
	EXPECT_EQ(BFT_VARINT_TOO_LONG, bft_leb128_get(b, 10, &v));
	/* a tenth byte that still continues, with payload that fits */
	hex_parse("ffffffffffffffffff8100", b, sizeof(b));
	EXPECT_EQ(BFT_VARINT_TOO_LONG, bft_leb128_get(b, 11, &v));
	hex_parse("c0808080808080808081", b, sizeof(b));
	EXPECT_EQ(BFT_VARINT_TOO_LONG, bft_packed_get(b, 10, &v));
}

TEST(value_beyond_64_bits_overflows)
{
	uint8_t b[16];
	uint64_t v;

	hex_parse("ffffffffffffffffff02", b, sizeof(b));
	EXPECT_EQ(BFT_VARINT_OVERFLOW, bft_leb128_get(b, 10, &v));
	hex_parse("ffffffffffffffffff04", b, sizeof(b));
	EXPECT_EQ(BFT_VARINT_OVERFLOW, bft_packed_get(b, 10, &v));
	hex_parse("ffffffffffffffffff7f", b, sizeof(b));
	EXPECT_EQ(BFT_VARINT_OVERFLOW, bft_packed_get(b, 10, &v));
}

TEST(overlong_forms_are_flagged)
{
	uint8_t b[16];
	uint64_t v = 99;
	int len;

	/* the escape shape: packed, two bytes, last 0x00 */
	len = hex_parse("4100", b, sizeof(b));
	EXPECT_EQ(2, bft_packed_get(b, (size_t)len, &v));
	EXPECT_EQ(1u, v);
	EXPECT_TRUE(bft_varint_overlong(b, 2));
	len = hex_parse("8000", b, sizeof(b));
	EXPECT_EQ(2, bft_leb128_get(b, (size_t)len, &v));
	EXPECT_EQ(0u, v);
	EXPECT_TRUE(bft_varint_overlong(b, 2));
	EXPECT_FALSE(bft_varint_overlong(b, 1));
}

TEST(buffer_grows_appends_and_consumes)
{
	struct bft_buf b = { 0 };
	uint8_t chunk[1000];
	int i;

	for (i = 0; i < 1000; i++)
		chunk[i] = (uint8_t)i;
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, bft_buf_append(&b, chunk, sizeof(chunk)));
	EXPECT_EQ(100000u, b.len);
	EXPECT_GE(b.cap, b.len);
	bft_buf_consume(&b, 999);
	EXPECT_EQ(99001u, b.len);
	EXPECT_EQ(chunk[999], b.data[0]);
	EXPECT_EQ(chunk[0], b.data[1]);
	bft_buf_consume(&b, b.len + 5);
	EXPECT_EQ(0u, b.len);
	bft_buf_free(&b);
	EXPECT_EQ(NULL, b.data);
}

TEST_HARNESS_MAIN
