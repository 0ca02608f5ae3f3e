// SPDX-License-Identifier: GPL-2.0
/*
 * The writers' choice of tbits at a SYNC (kmod/bft_tbits.h, used by the
 * module and the BPF programs alike): the events since the last SYNC,
 * written again at the chosen tbits, take no more bytes than at any other.
 * Checked against the user-space writer's real encoding at every tbits,
 * not against the rule's own arithmetic.
 */
#include "kselftest_harness.h"

#include "bft_test.h"
#include "wire/bft_writer.h"
/* the writers' rule, as the module builds it (DKMS ships kmod/ alone) */
#include "../../../kmod/bft_tbits.h"

#define RES	1000	/* ns: the default 1 us unit */

struct ev {
	uint32_t id;		/* 0: an exit */
	uint32_t units;		/* since the event before */
};

/* Bytes of the events alone at @tbits: the stream less its SYNC and THREAD. */
static size_t stream_bytes(const struct ev *e, size_t n, unsigned int tbits)
{
	struct bft_writer w;
	uint64_t t = 1000000;
	size_t head, len;

	if (bft_writer_init(&w, RES, 0) || bft_writer_set_time_bits(&w, tbits))
		abort();
	if (bft_writer_enter(&w, t, 1, 1, 1))
		abort();
	bft_writer_data(&w, &head);
	for (size_t i = 0; i < n; i++) {
		t += (uint64_t)e[i].units * RES;
		if (e[i].id ? bft_writer_enter(&w, t, 1, 1, e[i].id) :
			      bft_writer_exit(&w, t, 1, 1))
			abort();
	}
	if (bft_writer_seal(&w))
		abort();
	bft_writer_data(&w, &len);
	bft_writer_free(&w);
	return len - head;
}

static unsigned int rnd(unsigned int *s, unsigned int n)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 16) % n;
}

/*
 * Random calls: ids below @max_id, gaps of 1 to @max_gap units (none of 0:
 * two exits in one unit would share a record, which the rule leaves out).
 */
static size_t make_events(struct ev *e, size_t n, unsigned int *seed,
			  unsigned int max_id, unsigned int max_gap)
{
	for (size_t i = 0; i < n; i++) {
		e[i].id = i % 2 ? 0 : 1 + rnd(seed, max_id - 1);
		e[i].units = 1 + rnd(seed, max_gap);
	}
	return n;
}

static unsigned char pick_for(const struct ev *e, size_t n, unsigned char cur)
{
	struct bft_tb_hist h;

	memset(&h, 0, sizeof(h));
	for (size_t i = 0; i < n; i++)
		bft_tb_note(&h, e[i].id != 0, e[i].id, e[i].units);
	return bft_tb_pick(&h, cur);
}

TEST(the_pick_writes_the_fewest_bytes)
{
	/* (ids below, gaps up to) in units: a slow trap, a fast one, mixed */
	static const unsigned int shapes[][2] = {
		{ 2, 3 }, { 2, 12 }, { 4, 6 }, { 16, 2 }, { 40, 20 },
		{ 300, 5 }, { 5000, 30 }, { 8, 40 }, { 64, 1 }, { 2, 60 },
	};
	static struct ev e[4000];
	unsigned int seed = 7;

	for (size_t s = 0; s < ARRAY_SIZE(shapes); s++) {
		for (int round = 0; round < 20; round++) {
			size_t n = make_events(e, 200 + rnd(&seed, 3800), &seed,
					       shapes[s][0], shapes[s][1]);
			size_t best = SIZE_MAX, got;
			unsigned char t = pick_for(e, n, BFT_TIME_BITS);

			for (unsigned int b = 0; b <= BFT_TIME_BITS_MAX; b++) {
				size_t k = stream_bytes(e, n, b);

				if (k < best)
					best = k;
			}
			got = stream_bytes(e, n, t);
			ASSERT_EQ(best, got)
				TH_LOG("ids < %u, gaps <= %u units, %zu events: "
				       "tbits %u takes %zu bytes, the best %zu",
				       shapes[s][0], shapes[s][1], n, t, got,
				       best);
		}
	}
}

TEST(a_slow_trap_gets_the_bits_its_gaps_need)
{
	/* one method, 4-7 us between events (a trap under TCG) */
	static struct ev e[1000];

	for (size_t i = 0; i < ARRAY_SIZE(e); i++) {
		e[i].id = i % 2 ? 0 : 1;
		e[i].units = 4 + i % 4;
	}
	EXPECT_EQ(3, pick_for(e, ARRAY_SIZE(e), 2));
	/* and the stream is a byte an event: 2 bytes a call */
	EXPECT_EQ(ARRAY_SIZE(e), stream_bytes(e, ARRAY_SIZE(e), 3));
	EXPECT_LT(ARRAY_SIZE(e) * 2, stream_bytes(e, ARRAY_SIZE(e), 2));
}

TEST(what_changes_nothing_keeps_the_current_bits)
{
	struct bft_tb_hist h;
	static struct ev e[100];

	/* nothing since the last SYNC: an idle CPU */
	memset(&h, 0, sizeof(h));
	for (unsigned char cur = 0; cur <= BFT_TIME_BITS_MAX; cur++)
		EXPECT_EQ(cur, bft_tb_pick(&h, cur));
	/* gaps of 1 unit and small ids cost the same at 1..5 bits */
	for (size_t i = 0; i < ARRAY_SIZE(e); i++) {
		e[i].id = i % 2 ? 0 : 1;
		e[i].units = 1;
	}
	for (unsigned char cur = 1; cur <= BFT_TIME_BITS_MAX; cur++)
		EXPECT_EQ(cur, pick_for(e, ARRAY_SIZE(e), cur));
	/* from 0 bits, where every gap costs a TIME_SHORT, it moves, to 1 */
	EXPECT_EQ(1, pick_for(e, ARRAY_SIZE(e), 0));
}

TEST(bit_lengths)
{
	static const struct { unsigned long long v; unsigned int len; } v[] = {
		{ 0, 0 }, { 1, 1 }, { 2, 2 }, { 3, 2 }, { 4, 3 }, { 31, 5 },
		{ 32, 6 }, { 255, 8 }, { 256, 9 }, { 8191, 13 }, { 8192, 14 },
		{ 16383, 14 }, { 16384, 14 }, { ~0ULL, 14 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		EXPECT_EQ(v[i].len, bft_tb_len(v[i].v)) {
			TH_LOG("%llu", v[i].v);
		}
	}
}

TEST_HARNESS_MAIN
