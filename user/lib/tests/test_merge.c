// SPDX-License-Identifier: GPL-2.0
/* K-way merge by stream time, with watermarks, idle CPUs and draining. */
#include <errno.h>

#include "kselftest_harness.h"

#include "model/bft_merge.h"
#include "bft_test.h"
#include "wire/bft_writer.h"

static struct bft_record rec(uint32_t cpu, uint64_t t, unsigned int kind,
			     uint64_t value)
{
	struct bft_record r;

	memset(&r, 0, sizeof(r));
	r.cpu = cpu;
	r.time_ns = t;
	r.kind = (uint16_t)kind;
	r.value = value;
	return r;
}

/* The merged output as "cpu@time" words. */
struct out {
	char s[4096];
	size_t len;
	int stop_after;		/* make on_record return 5 after this many */
	int n;
};

static int out_add(void *ctx, const struct bft_record *r)
{
	struct out *o = ctx;

	o->len += (size_t)snprintf(o->s + o->len, sizeof(o->s) - o->len,
				   "%s%u@%" PRIu64, o->len ? " " : "", r->cpu,
				   r->time_ns);
	return ++o->n == o->stop_after ? 5 : 0;
}

FIXTURE(mg) {
	struct bft_merge m;
	struct out out;
};

FIXTURE_SETUP(mg)
{
	struct bft_merge_opts o = {
		.ncpus = 3,
		.on_record = out_add,
		.ctx = &self->out,
	};

	memset(&self->out, 0, sizeof(self->out));
	ASSERT_EQ(0, bft_merge_init(&self->m, &o));
}

FIXTURE_TEARDOWN(mg)
{
	bft_merge_free(&self->m);
}

#define PUSH(cpu, t) do {						\
		struct bft_record _r = rec(cpu, t, BFT_REC_ENTER, 0);	\
		ASSERT_EQ(0, bft_merge_push(&self->m, &_r));		\
	} while (0)

TEST_F(mg, drain_orders_by_time_then_cpu)
{
	PUSH(0, 10);
	PUSH(0, 30);
	PUSH(1, 20);
	PUSH(1, 30);
	PUSH(2, 5);
	PUSH(2, 30);
	PUSH(2, 40);
	ASSERT_EQ(0, bft_merge_drain(&self->m));
	EXPECT_STREQ("2@5 0@10 1@20 0@30 1@30 2@30 2@40", self->out.s);
	EXPECT_EQ(0u, bft_merge_queued(&self->m));
	EXPECT_EQ(7u, bft_merge_stats(&self->m)->emitted);
}

TEST_F(mg, cpu_without_input_blocks_the_merge)
{
	PUSH(0, 10);
	PUSH(0, 20);
	PUSH(1, 15);
	ASSERT_EQ(0, bft_merge_run(&self->m));
	EXPECT_STREQ("", self->out.s);	/* cpu 2 may still send t=0 */
	EXPECT_EQ(3u, bft_merge_queued(&self->m));
}

TEST_F(mg, a_cpu_is_released_only_up_to_every_watermark)
{
	PUSH(0, 10);
	PUSH(0, 20);
	PUSH(1, 15);
	PUSH(2, 12);
	ASSERT_EQ(0, bft_merge_run(&self->m));
	/* after 2@12, cpu 2 may still send >= 12: 0@20 and 1@15 wait */
	EXPECT_STREQ("0@10 2@12", self->out.s);
	PUSH(2, 17);
	ASSERT_EQ(0, bft_merge_run(&self->m));
	/* and now cpu 1, empty again, may still send >= 15 */
	EXPECT_STREQ("0@10 2@12 1@15", self->out.s);
	EXPECT_EQ(1u, bft_merge_cpu_queued(&self->m, 0));
}

TEST_F(mg, sync_heartbeat_of_idle_cpu_releases_older_records)
{
	struct bft_record hb = rec(2, 100, BFT_REC_SYNC, 0);

	PUSH(0, 10);
	PUSH(1, 50);
	PUSH(0, 120);
	PUSH(1, 130);
	ASSERT_EQ(0, bft_merge_run(&self->m));
	EXPECT_STREQ("", self->out.s);
	ASSERT_EQ(0, bft_merge_push(&self->m, &hb));
	ASSERT_EQ(0, bft_merge_run(&self->m));
	EXPECT_STREQ("0@10 1@50 2@100", self->out.s);
}

TEST_F(mg, equal_times_wait_for_lower_cpus)
{
	/* cpu 0 may still send t=50, which sorts before 1@50 */
	struct bft_record a = rec(0, 50, BFT_REC_SYNC, 0);

	PUSH(1, 50);
	PUSH(2, 60);
	ASSERT_EQ(0, bft_merge_advance(&self->m, 0, 49));
	ASSERT_EQ(0, bft_merge_run(&self->m));
	EXPECT_STREQ("", self->out.s);
	ASSERT_EQ(0, bft_merge_push(&self->m, &a));
	ASSERT_EQ(0, bft_merge_run(&self->m));
	/* 1@50 still waits: cpu 0 may send another t=50 */
	EXPECT_STREQ("0@50", self->out.s);
	ASSERT_EQ(0, bft_merge_advance(&self->m, 0, 51));
	ASSERT_EQ(0, bft_merge_run(&self->m));
	EXPECT_STREQ("0@50 1@50", self->out.s);
}

TEST_F(mg, advance_and_close_stop_a_cpu_from_blocking)
{
	PUSH(0, 10);
	PUSH(1, 20);
	ASSERT_EQ(0, bft_merge_advance(&self->m, 2, 15));
	ASSERT_EQ(0, bft_merge_run(&self->m));
	EXPECT_STREQ("0@10", self->out.s);
	ASSERT_EQ(0, bft_merge_close(&self->m, 2));
	ASSERT_EQ(0, bft_merge_close(&self->m, 0));
	ASSERT_EQ(0, bft_merge_run(&self->m));
	EXPECT_STREQ("0@10 1@20", self->out.s);
	/* a closed CPU takes no more input */
	{
		struct bft_record r = rec(2, 30, BFT_REC_ENTER, 0);

		EXPECT_EQ(-EINVAL, bft_merge_push(&self->m, &r));
		EXPECT_EQ(-EINVAL, bft_merge_feed(&self->m, 2, "\x81", 1));
	}
}

TEST_F(mg, push_rejects_bad_cpu_and_time_going_back)
{
	struct bft_record r = rec(3, 10, BFT_REC_ENTER, 0);

	EXPECT_EQ(-EINVAL, bft_merge_push(&self->m, &r));
	r = rec(0, 10, BFT_REC_ENTER, 0);
	EXPECT_EQ(0, bft_merge_push(&self->m, &r));
	r.time_ns = 9;
	EXPECT_EQ(-EINVAL, bft_merge_push(&self->m, &r));
	EXPECT_EQ(-EINVAL, bft_merge_advance(&self->m, 7, 1));
	EXPECT_EQ(NULL, bft_merge_stream(&self->m, 3));
}

TEST_F(mg, callback_stop_resumes_on_next_run)
{
	PUSH(0, 1);
	PUSH(0, 2);
	PUSH(0, 3);
	self->out.stop_after = 2;
	EXPECT_EQ(5, bft_merge_drain(&self->m));
	EXPECT_STREQ("0@1 0@2", self->out.s);
	EXPECT_EQ(0, bft_merge_run(&self->m));
	EXPECT_STREQ("0@1 0@2 0@3", self->out.s);
}

/*
 * CPU 1 fed while CPU 0 is known up to 50: its records up to 50 go out
 * from the feed, and from the first later one on it queues, in order.
 */
TEST(direct_feed_emits_what_no_cpu_can_precede)
{
	struct bft_merge_opts o = {
		.ncpus = 2, .on_record = out_add, .direct = 1,
		.kinds = BFT_REC_BIT(BFT_REC_ENTER) | BFT_REC_BIT(BFT_REC_EXIT),
	};
	struct out out = { .len = 0 };
	struct bft_writer w;
	struct bft_merge m;
	const uint8_t *p;
	size_t n;

	o.ctx = &out;
	ASSERT_EQ(0, bft_writer_init(&w, 10, 0));
	ASSERT_EQ(0, bft_writer_enter(&w, 10, 1, 1, 7));
	ASSERT_EQ(0, bft_writer_exit(&w, 50, 1, 1));
	ASSERT_EQ(0, bft_writer_enter(&w, 60, 1, 1, 7));
	ASSERT_EQ(0, bft_writer_exit(&w, 70, 1, 1));
	ASSERT_EQ(0, bft_writer_seal(&w));
	p = bft_writer_data(&w, &n);
	ASSERT_EQ(0, bft_merge_init(&m, &o));
	ASSERT_EQ(0, bft_merge_advance(&m, 0, 50));
	ASSERT_EQ(0, bft_merge_feed(&m, 1, p, n));
	/* 50 on CPU 1 sorts after 50 on CPU 0, which may still come */
	EXPECT_STREQ("1@10", out.s);
	EXPECT_EQ(1u, bft_merge_stats(&m)->direct);
	EXPECT_EQ(3u, bft_merge_queued(&m));
	ASSERT_EQ(0, bft_merge_advance(&m, 0, 65));
	ASSERT_EQ(0, bft_merge_run(&m));
	EXPECT_STREQ("1@10 1@50 1@60", out.s);
	ASSERT_EQ(0, bft_merge_close(&m, 0));
	ASSERT_EQ(0, bft_merge_run(&m));
	EXPECT_STREQ("1@10 1@50 1@60 1@70", out.s);
	EXPECT_EQ(1u, bft_merge_stats(&m)->direct);
	bft_merge_free(&m);
	bft_writer_free(&w);
}

TEST(kind_filter_drops_records_but_keeps_watermarks)
{
	struct out out = { .len = 0 };
	struct bft_merge_opts o = {
		.ncpus = 2,
		.kinds = BFT_REC_BIT(BFT_REC_ENTER),
		.on_record = out_add,
		.ctx = &out,
	};
	struct bft_merge m;
	struct bft_record r;

	ASSERT_EQ(0, bft_merge_init(&m, &o));
	r = rec(0, 10, BFT_REC_ENTER, 0);
	ASSERT_EQ(0, bft_merge_push(&m, &r));
	r = rec(1, 20, BFT_REC_SYNC, 0);
	ASSERT_EQ(0, bft_merge_push(&m, &r));
	ASSERT_EQ(0, bft_merge_run(&m));
	EXPECT_STREQ("0@10", out.s);
	EXPECT_EQ(1u, bft_merge_stats(&m)->pushed);
	bft_merge_free(&m);
}

TEST(init_rejects_no_cpus)
{
	struct bft_merge m;
	struct bft_merge_opts o = { .ncpus = 0, .on_record = out_add };

	EXPECT_EQ(-EINVAL, bft_merge_init(&m, &o));
	bft_merge_free(&m);
}

struct collect {
	struct rec_log l;
};

static int collect_rec(void *ctx, const struct bft_record *r)
{
	return rec_log_add(ctx, r);
}

/* Four CPU streams from writers, heartbeats included. */
static int make_streams(struct bft_writer *w, int ncpu, uint64_t seed)
{
	uint64_t t = 1000;
	int i, c, r = 0;

	for (c = 0; c < ncpu; c++)
		r |= bft_writer_init(&w[c], 100, 0);
	for (i = 0; i < 20000; i++) {
		c = (int)rng_below(&seed, (uint64_t)ncpu);
		t += rng_below(&seed, 300);
		if (rng_below(&seed, 2))
			r |= bft_writer_enter(&w[c], t, 1, 1 + (uint32_t)c,
					      (uint32_t)rng_below(&seed, 100));
		else
			r |= bft_writer_exit(&w[c], t, 1, 1 + (uint32_t)c);
		if (i % 500 == 0)
			for (c = 0; c < ncpu; c++)
				r |= bft_writer_sync(&w[c], t);
	}
	for (c = 0; c < ncpu; c++)
		r |= bft_writer_sync(&w[c], t + 1);
	return r;
}

static int same_records(const struct rec_log *a, const struct rec_log *b)
{
	size_t i;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++)
		if (memcmp(&a->r[i], &b->r[i], sizeof(a->r[i])))
			return 0;
	return 1;
}

/* The same streams merged whole, and in pieces with and without opts.direct. */
FIXTURE(pieces) {
};

FIXTURE_VARIANT(pieces) {
	int direct;
};

FIXTURE_VARIANT_ADD(pieces, queued) {
	.direct = 0,
};

FIXTURE_VARIANT_ADD(pieces, direct) {
	.direct = 1,
};

FIXTURE_SETUP(pieces)
{
}

FIXTURE_TEARDOWN(pieces)
{
}

TEST_F(pieces, streaming_merge_in_pieces_equals_merge_of_whole_streams)
{
	enum { NCPU = 4 };
	struct bft_writer w[NCPU];
	struct collect whole = { .l = { 0 } }, piece = { .l = { 0 } };
	struct bft_merge_opts o = { .ncpus = NCPU, .on_record = collect_rec };
	struct bft_merge m;
	size_t pos[NCPU] = { 0 }, len[NCPU];
	const uint8_t *p[NCPU];
	uint64_t seed = 77, prev = 0, direct;
	int c, left;
	size_t i;

	ASSERT_EQ(0, make_streams(w, NCPU, 1234));
	for (c = 0; c < NCPU; c++)
		p[c] = bft_writer_data(&w[c], &len[c]);

	o.ctx = &whole.l;
	ASSERT_EQ(0, bft_merge_init(&m, &o));
	for (c = 0; c < NCPU; c++)
		ASSERT_EQ(0, bft_merge_feed(&m, (uint32_t)c, p[c], len[c]));
	ASSERT_EQ(0, bft_merge_drain(&m));
	bft_merge_free(&m);

	o.ctx = &piece.l;
	o.direct = variant->direct;
	ASSERT_EQ(0, bft_merge_init(&m, &o));
	do {
		left = 0;
		c = (int)rng_below(&seed, NCPU);
		if (pos[c] < len[c]) {
			size_t n = 1 + rng_below(&seed, 200);

			if (n > len[c] - pos[c])
				n = len[c] - pos[c];
			ASSERT_EQ(0, bft_merge_feed(&m, (uint32_t)c,
						    p[c] + pos[c], n));
			pos[c] += n;
			if (pos[c] == len[c])
				ASSERT_EQ(0, bft_merge_close(&m, (uint32_t)c));
		}
		if (rng_below(&seed, 3) == 0)
			ASSERT_EQ(0, bft_merge_run(&m));
		for (c = 0; c < NCPU; c++)
			left |= pos[c] < len[c];
	} while (left);
	ASSERT_EQ(0, bft_merge_run(&m));
	EXPECT_EQ(0u, bft_merge_queued(&m));
	direct = bft_merge_stats(&m)->direct;
	bft_merge_free(&m);

	/* four busy CPUs fed in turns: now and then one goes straight through */
	if (variant->direct) {
		EXPECT_GT(direct, 0u);
	} else {
		EXPECT_EQ(0u, direct);
	}
	EXPECT_GT(whole.l.n, 20000u);
	EXPECT_TRUE(same_records(&whole.l, &piece.l));
	for (i = 0; i < whole.l.n; i++) {
		ASSERT_GE(whole.l.r[i].time_ns, prev);
		prev = whole.l.r[i].time_ns;
	}
	for (c = 0; c < NCPU; c++)
		bft_writer_free(&w[c]);
	rec_log_free(&whole.l);
	rec_log_free(&piece.l);
}

TEST(decoder_errors_surface_through_feed)
{
	struct collect got = { .l = { 0 } };
	struct bft_merge_opts o = {
		.ncpus = 2,
		.on_record = collect_rec,
		.ctx = &got.l,
		.on_error = rec_log_err,
		.err_ctx = &got.l,
	};
	struct bft_merge m;
	uint8_t b[32];
	int n = hex_parse("41 00 00 c0 84 3d e8 07 02 4c 00", b, sizeof(b));

	got.l.action = BFT_STREAM_STOP;
	ASSERT_EQ(0, bft_merge_init(&m, &o));
	EXPECT_EQ(-EPROTO, bft_merge_feed(&m, 1, b, (size_t)n));
	EXPECT_EQ(1u, got.l.nerr);
	EXPECT_EQ(BFT_SERR_KIND_UNKNOWN, got.l.err[0].code);
	EXPECT_EQ(1u, got.l.err[0].cpu);
	EXPECT_EQ(BFT_SERR_KIND_UNKNOWN,
		  bft_stream_last_error(bft_merge_stream(&m, 1))->code);
	/* what decoded before the error is still merged */
	EXPECT_EQ(-EPROTO, bft_merge_drain(&m));
	EXPECT_EQ(1u, got.l.n);
	bft_merge_free(&m);
	rec_log_free(&got.l);
}

TEST_HARNESS_MAIN
