// SPDX-License-Identifier: GPL-2.0
/*
 * Round trip: a simulated machine runs threads over CPUs and records what
 * the kernel would (writer), the streams are decoded and merged in random
 * pieces, and per-thread reconstruction (calltree) must print exactly the
 * trace the simulation predicts from the documented semantics:
 *
 *   - an ordinary frame (a return probe pending) records ENTER and EXIT;
 *     a frame entered with BFT_URETPROBE_DEPTH return probes pending, or of
 *     an entry-only probe, records ENTER_NORET and no exit;
 *   - a recorded EXIT of frame F reports every NORET frame entered after F
 *     (they have all returned by then), then F itself, or an orphan if F's
 *     enter was not seen since the last data break;
 *   - BREAK (suspend) and LOST (ring full) void every known thread.
 *
 * Around every break and loss the simulation leaves a quiet gap of a few
 * time units, so the merged order of those records against other CPUs'
 * events is the true order despite stream times being rounded down.
 */
#include <errno.h>

#include "kselftest_harness.h"

#include <linux/bftrace.h>

#include "model/bft_calltree.h"
#include "model/bft_merge.h"
#include "bft_test.h"
#include "wire/bft_writer.h"

#define RES_NS		100
#define MAX_CPUS	4
#define MAX_THREADS	8
#define MAX_DEPTH	4096

struct sim_frame {
	uint64_t push_seq;
	uint32_t id;
	uint8_t noret;
	uint8_t seen;		/* its enter reached the trace, since a void */
};

struct sim_thread {
	uint32_t tgid, tid;
	int cpu;
	struct sim_frame stack[MAX_DEPTH];
	int depth;
	int retprobes;		/* ordinary frames on the stack */
	/* NORET frames that returned and wait for the next recorded EXIT */
	struct sim_frame pending[MAX_DEPTH];
	int npending;
	int known;		/* the trace has shown this thread */
	struct bft_buf text;	/* expected calltree text */
	char last;		/* last token kind: 'e', 'x', '?', '|' */
	uint64_t orphans;	/* length of the trailing x? run */
	size_t run_at;
};

struct sim {
	struct bft_writer w[MAX_CPUS];
	int ncpu;
	struct sim_thread th[MAX_THREADS];
	int nth;
	uint64_t t;
	uint64_t push_seq;
	int suspended;
	int dropping[MAX_CPUS];
	uint64_t dropped[MAX_CPUS];
	int err;
	/* what the trace must contain */
	uint64_t enters, norets, exits, lost, voids;
};

static void sim_init(struct sim *s, int ncpu, int nth)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->ncpu = ncpu;
	s->nth = nth;
	s->t = 1000000;
	for (i = 0; i < ncpu; i++)
		s->err |= bft_writer_init(&s->w[i], RES_NS, 0);
	for (i = 0; i < nth; i++) {
		s->th[i].tgid = i < nth / 2 ? 100 : 200;
		s->th[i].tid = s->th[i].tgid + (uint32_t)i;
		s->th[i].cpu = i % ncpu;
	}
}

static void sim_free(struct sim *s)
{
	int i;

	for (i = 0; i < s->ncpu; i++)
		bft_writer_free(&s->w[i]);
	for (i = 0; i < s->nth; i++)
		bft_buf_free(&s->th[i].text);
}

static void tok(struct sim *s, struct sim_thread *th, char kind, uint64_t id)
{
	char buf[48];
	int n;

	if (kind == '|' && th->last == '|')
		return;
	if (kind == '?') {
		if (th->last == '?')
			th->text.len = th->run_at;
		else
			th->orphans = 0, th->run_at = th->text.len;
		th->orphans++;
		n = th->orphans == 1 ?
			    snprintf(buf, sizeof(buf), " x?") :
			    snprintf(buf, sizeof(buf), " x?*%" PRIu64,
				     th->orphans);
	} else if (kind == '|') {
		n = snprintf(buf, sizeof(buf), " |");
	} else {
		n = snprintf(buf, sizeof(buf), " %c%" PRIu64, kind, id);
	}
	s->err |= bft_buf_append(&th->text, buf, (size_t)n);
	th->last = kind == 'n' ? 'e' : kind;
}

/* Is an event of th recorded right now? */
static int recording(const struct sim *s, const struct sim_thread *th)
{
	return !s->suspended && !s->dropping[th->cpu];
}

static void tick(struct sim *s, uint64_t *seed)
{
	uint64_t r = rng_below(seed, 100);

	/* mostly within a unit, sometimes a few units, rarely far */
	s->t += 1 + (r < 60 ? rng_below(seed, 40) :
		     r < 97 ? rng_below(seed, 40 * RES_NS) :
			      rng_below(seed, 100000 * RES_NS));
}

static void sim_enter(struct sim *s, int i, uint32_t id, int entry_only)
{
	struct sim_thread *th = &s->th[i];
	struct sim_frame *f;

	/* time is strictly increasing: no two events share an instant */
	s->t++;
	if (th->depth == MAX_DEPTH) {
		s->err |= 1;
		return;
	}
	f = &th->stack[th->depth++];
	f->push_seq = ++s->push_seq;
	f->id = id;
	f->noret = entry_only || th->retprobes >= BFT_URETPROBE_DEPTH;
	f->seen = 0;
	if (!f->noret)
		th->retprobes++;
	if (!recording(s, th)) {
		if (s->dropping[th->cpu])
			s->dropped[th->cpu]++;
		return;
	}
	f->seen = 1;
	th->known = 1;
	if (f->noret) {
		s->err |= bft_writer_enter_noret(&s->w[th->cpu], s->t, th->tgid,
						 th->tid, id);
		s->norets++;
		tok(s, th, 'n', id);
	} else {
		s->err |= bft_writer_enter(&s->w[th->cpu], s->t, th->tgid,
					   th->tid, id);
		s->enters++;
		tok(s, th, 'e', id);
	}
}

static int by_push_desc(const void *a, const void *b)
{
	const struct sim_frame *x = a, *y = b;

	return x->push_seq < y->push_seq ? 1 : x->push_seq > y->push_seq ? -1 : 0;
}

/*
 * The NORET frames entered after push_seq have returned: the trace closes
 * them now, the latest entered first (their order on the shadow stack).
 * Those entered earlier stay.  pending is in return order, so the ones
 * entered after push_seq are its tail.
 */
static void report_pending(struct sim *s, struct sim_thread *th,
			   uint64_t push_seq)
{
	int k = th->npending, i;

	while (k && th->pending[k - 1].push_seq > push_seq)
		k--;
	qsort(th->pending + k, (size_t)(th->npending - k),
	      sizeof(th->pending[0]), by_push_desc);
	for (i = k; i < th->npending; i++) {
		tok(s, th, 'x', th->pending[i].id);
		s->exits++;
	}
	th->npending = k;
}

static void sim_exit(struct sim *s, int i)
{
	struct sim_thread *th = &s->th[i];
	struct sim_frame f;

	s->t++;
	if (!th->depth)
		return;
	f = th->stack[--th->depth];
	if (f.noret) {
		/* returns unrecorded; reported at the next recorded EXIT */
		if (f.seen)
			th->pending[th->npending++] = f;
		return;
	}
	th->retprobes--;
	if (!recording(s, th)) {
		if (s->dropping[th->cpu])
			s->dropped[th->cpu]++;
		return;
	}
	th->known = 1;
	s->err |= bft_writer_exit(&s->w[th->cpu], s->t, th->tgid, th->tid);
	report_pending(s, th, f.push_seq);
	if (f.seen) {
		tok(s, th, 'x', f.id);
		s->exits++;
	} else {
		/* everything the trace still holds was entered after f */
		if (th->npending)
			s->err |= 2;
		tok(s, th, '?', 0);
	}
}

static void sim_void(struct sim *s)
{
	int i, d;

	s->voids++;
	for (i = 0; i < s->nth; i++) {
		struct sim_thread *th = &s->th[i];

		th->npending = 0;
		for (d = 0; d < th->depth; d++)
			th->stack[d].seen = 0;
		if (th->known)
			tok(s, th, '|', 0);
	}
}

/* A few units of silence, so rounding cannot reorder across a void. */
static void quiet(struct sim *s)
{
	s->t += 3 * RES_NS;
}

static void sim_migrate(struct sim *s, int i, int cpu)
{
	struct sim_thread *th = &s->th[i];

	if (s->dropping[th->cpu] || s->dropping[cpu])
		return;
	bft_writer_sched_out(&s->w[th->cpu]);
	th->cpu = cpu;
}

static void sim_suspend(struct sim *s)
{
	int c;

	quiet(s);
	for (c = 0; c < s->ncpu; c++)
		s->err |= bft_writer_break(&s->w[c], s->t, BFT_BREAK_SUSPEND);
	sim_void(s);
	quiet(s);
	s->suspended = 1;
}

static void sim_unsuspend(struct sim *s)
{
	s->suspended = 0;
}

static void sim_drop_begin(struct sim *s, int cpu)
{
	if (s->dropping[cpu])
		return;
	s->dropping[cpu] = 1;
	s->dropped[cpu] = 0;
}

static void sim_drop_end(struct sim *s, int cpu)
{
	quiet(s);
	s->dropping[cpu] = 0;
	if (s->dropped[cpu]) {
		s->err |= bft_writer_lost(&s->w[cpu], s->t, s->dropped[cpu]);
		s->lost += s->dropped[cpu];
		sim_void(s);
	}
	quiet(s);
}

static void sim_heartbeat(struct sim *s)
{
	int c;

	for (c = 0; c < s->ncpu; c++)
		s->err |= bft_writer_sync(&s->w[c], s->t);
}

static void sim_finish(struct sim *s)
{
	int c;

	for (c = 0; c < s->ncpu; c++)
		if (s->dropping[c])
			sim_drop_end(s, c);
	s->t += RES_NS;
	sim_heartbeat(s);
}

static int text_is(const struct sim_thread *th, const char *want)
{
	return th->text.len == strlen(want) &&
	       !memcmp(th->text.data, want, th->text.len);
}

static int by_tid(const void *a, const void *b)
{
	const struct sim_thread *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The calltree text the simulation predicts; caller frees. */
static char *sim_text(struct sim *s)
{
	struct sim_thread *v = s->th;
	struct bft_buf out = { 0 };
	int i;

	qsort(v, (size_t)s->nth, sizeof(*v), by_tid);
	for (i = 0; i < s->nth; i++) {
		char head[32];
		int n;

		if (!v[i].known)
			continue;
		n = snprintf(head, sizeof(head), "tid %u:", v[i].tid);
		s->err |= bft_buf_append(&out, head, (size_t)n);
		s->err |= bft_buf_append(&out, v[i].text.data, v[i].text.len);
		s->err |= bft_buf_append(&out, "\n", 1);
	}
	s->err |= bft_buf_append(&out, "", 1);
	return (char *)out.data;
}

struct replay {
	struct bft_calltree ct;
	uint64_t records;
	uint64_t last_time;
	int disorder;
};

static int replay_rec(void *ctx, const struct bft_record *r)
{
	struct replay *rp = ctx;

	rp->records++;
	if (r->time_ns < rp->last_time)
		rp->disorder++;
	rp->last_time = r->time_ns;
	return bft_calltree_feed(&rp->ct, r);
}

/*
 * Decode and merge the simulation's streams, fed in random pieces with
 * runs in between, into a calltree; check it against the prediction.
 */
static void check_replay(struct __test_metadata *_metadata, struct sim *s,
			 uint64_t seed)
{
	struct bft_calltree_opts co = { .text = true };
	struct replay rp = { .records = 0 };
	struct bft_merge_opts mo = {
		.ncpus = (uint32_t)s->ncpu,
		.kinds = BFT_REC_CALLTREE_KINDS,
		.on_record = replay_rec,
		.ctx = &rp,
	};
	struct bft_merge m;
	const uint8_t *p[MAX_CPUS];
	size_t len[MAX_CPUS], pos[MAX_CPUS] = { 0 };
	uint64_t lost = 0, gaps = 0, errors = 0;
	const struct bft_calltree_stats *cs;
	char *want, *got;
	int c, left;

	ASSERT_EQ(0, s->err);
	ASSERT_EQ(0, bft_calltree_init(&rp.ct, &co));
	ASSERT_EQ(0, bft_merge_init(&m, &mo));
	for (c = 0; c < s->ncpu; c++)
		p[c] = bft_writer_data(&s->w[c], &len[c]);
	do {
		left = 0;
		c = (int)rng_below(&seed, (uint64_t)s->ncpu);
		if (pos[c] < len[c]) {
			size_t n = 1 + rng_below(&seed, 4096);

			if (n > len[c] - pos[c])
				n = len[c] - pos[c];
			ASSERT_EQ(0, bft_merge_feed(&m, (uint32_t)c,
						    p[c] + pos[c], n));
			pos[c] += n;
			ASSERT_EQ(0, bft_merge_run(&m));
		}
		for (c = 0; c < s->ncpu; c++)
			left |= pos[c] < len[c];
	} while (left);
	ASSERT_EQ(0, bft_merge_drain(&m));
	for (c = 0; c < s->ncpu; c++) {
		const struct bft_stream_stats *st =
			bft_stream_stats(bft_merge_stream(&m, (uint32_t)c));

		lost += st->lost;
		gaps += st->gaps;
		errors += st->errors;
	}
	EXPECT_EQ(0u, errors);
	EXPECT_EQ(0u, gaps);
	EXPECT_EQ(s->lost, lost);
	EXPECT_EQ(0, rp.disorder);

	want = sim_text(s);
	got = bft_calltree_text(&rp.ct);
	ASSERT_NE(NULL, want);
	ASSERT_NE(NULL, got);
	EXPECT_EQ(0, strcmp(want, got)) {
		/* print where they part, not megabytes */
		size_t i = 0;

		while (want[i] && want[i] == got[i])
			i++;
		i = i > 60 ? i - 60 : 0;
		TH_LOG("differ near byte %zu:\n want ...%.160s\n got  ...%.160s",
		       i, want + i, got + i);
	}
	cs = bft_calltree_stats(&rp.ct);
	EXPECT_EQ(s->enters, cs->enters);
	EXPECT_EQ(s->norets, cs->noret_enters);
	EXPECT_EQ(s->exits, cs->exits);
	EXPECT_EQ(0u, cs->unbalanced);
	free(want);
	free(got);
	bft_merge_free(&m);
	bft_calltree_free(&rp.ct);
}

/* One thread recursing far beyond the return-probe limit, and back. */
TEST(deep_recursion_beyond_uretprobe_depth_closes_noret_frames)
{
	struct sim *s = calloc(1, sizeof(*s));
	uint64_t seed = 1;
	int i;

	ASSERT_NE(NULL, s);
	sim_init(s, 2, 2);
	for (i = 0; i < 300; i++) {
		sim_enter(s, 0, (uint32_t)i, 0);
		tick(s, &seed);
		if (i == 150)
			sim_migrate(s, 0, 1);
		if (i % 7 == 0) {
			sim_enter(s, 1, 1000 + (uint32_t)i, 0);
			sim_exit(s, 1);
		}
	}
	EXPECT_EQ(BFT_URETPROBE_DEPTH, s->th[0].retprobes);
	for (i = 0; i < 300; i++) {
		sim_exit(s, 0);
		if (i % 50 == 0)
			sim_heartbeat(s);
	}
	sim_finish(s);
	EXPECT_EQ(300u - BFT_URETPROBE_DEPTH, s->norets);
	/* every frame of thread 0 is closed; thread 1 made 43 calls */
	EXPECT_EQ(300u + 43, s->exits);
	check_replay(_metadata, s, 5);
	sim_free(s);
	free(s);
}

TEST(entry_only_probes_record_noret_frames_at_any_depth)
{
	struct sim *s = calloc(1, sizeof(*s));

	ASSERT_NE(NULL, s);
	sim_init(s, 1, 1);
	sim_enter(s, 0, 1, 0);
	sim_enter(s, 0, 2, 1);	/* entry-only: NORET */
	sim_exit(s, 0);		/* unrecorded */
	sim_enter(s, 0, 3, 0);
	sim_enter(s, 0, 4, 1);
	sim_exit(s, 0);
	sim_exit(s, 0);		/* EXIT: closes 4, then 3 */
	sim_exit(s, 0);		/* EXIT: closes 2, then 1 */
	sim_finish(s);
	EXPECT_TRUE(text_is(&s->th[0], " e1 n2 e3 n4 x4 x3 x2 x1"));
	check_replay(_metadata, s, 9);
	sim_free(s);
	free(s);
}

TEST(thread_migrating_between_cpus_keeps_its_order)
{
	struct sim *s = calloc(1, sizeof(*s));
	uint64_t seed = 3;
	int i;

	ASSERT_NE(NULL, s);
	sim_init(s, 4, 3);
	for (i = 0; i < 20000; i++) {
		int th = (int)rng_below(&seed, 3);

		/* migrate often, every time unit boundary or within one */
		if (rng_below(&seed, 4) == 0)
			sim_migrate(s, th, (int)rng_below(&seed, 4));
		if (s->th[th].depth && rng_below(&seed, 2))
			sim_exit(s, th);
		else
			sim_enter(s, th, (uint32_t)rng_below(&seed, 50), 0);
		s->t += 1 + rng_below(&seed, 3 * RES_NS);
		if (i % 1000 == 0)
			sim_heartbeat(s);
	}
	sim_finish(s);
	check_replay(_metadata, s, 11);
	sim_free(s);
	free(s);
}

TEST(suspend_break_voids_stacks_and_resumed_exits_are_orphans)
{
	struct sim *s = calloc(1, sizeof(*s));

	ASSERT_NE(NULL, s);
	sim_init(s, 2, 2);
	sim_enter(s, 0, 1, 0);
	sim_enter(s, 0, 2, 0);
	sim_enter(s, 1, 7, 0);
	s->t += 5;
	sim_suspend(s);
	sim_enter(s, 0, 3, 0);	/* not recorded */
	sim_exit(s, 1);		/* not recorded */
	sim_unsuspend(s);
	sim_exit(s, 0);		/* 3: recorded exit, enter unseen */
	sim_exit(s, 0);		/* 2 */
	sim_enter(s, 0, 4, 0);
	sim_exit(s, 0);
	sim_exit(s, 0);		/* 1 */
	sim_finish(s);
	check_replay(_metadata, s, 13);
	sim_free(s);
	free(s);
}

TEST(lost_events_void_stacks_of_every_thread)
{
	struct sim *s = calloc(1, sizeof(*s));

	ASSERT_NE(NULL, s);
	sim_init(s, 2, 2);	/* thread 0 on cpu 0, thread 1 on cpu 1 */
	sim_enter(s, 0, 1, 0);
	sim_enter(s, 1, 5, 0);
	s->t += 5;
	sim_drop_begin(s, 0);
	sim_enter(s, 0, 2, 0);	/* dropped */
	sim_exit(s, 0);		/* dropped */
	sim_enter(s, 0, 3, 0);	/* dropped */
	s->t += 5;
	sim_enter(s, 1, 6, 0);	/* recorded on cpu 1 */
	sim_drop_end(s, 0);
	sim_exit(s, 0);		/* 3 */
	sim_exit(s, 0);		/* 1 */
	sim_exit(s, 1);		/* 6 */
	sim_exit(s, 1);		/* 5 */
	sim_finish(s);
	EXPECT_EQ(3u, s->lost);
	check_replay(_metadata, s, 17);
	sim_free(s);
	free(s);
}

/*
 * Everything at once, randomized with fixed seeds: several threads of two
 * processes on four CPUs, migrations, deep stacks, entry-only probes,
 * suspends and ring overflows, heartbeats, and big time jumps.
 */
TEST(randomized_round_trip_with_fixed_seeds)
{
	static const uint64_t seeds[] = { 0x1234, 0xbf7ace, 42, 7, 99991 };
	int steps = test_scale(300000);
	size_t k;

	for (k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
		struct sim *s = calloc(1, sizeof(*s));
		uint64_t seed = seeds[k];
		int i, nth = 2 + (int)(k % 6);

		ASSERT_NE(NULL, s);
		sim_init(s, MAX_CPUS, nth);
		for (i = 0; i < steps; i++) {
			uint64_t r = rng_below(&seed, 1000);
			int th = (int)rng_below(&seed, (uint64_t)nth);
			/* a bias towards deep stacks, now and then */
			int deep = (i / 3000) % 3 == 1;

			if (r < 5) {
				sim_migrate(s, th, (int)rng_below(&seed,
								 MAX_CPUS));
			} else if (r < 6 && !s->suspended) {
				sim_suspend(s);
			} else if (r < 30 && s->suspended) {
				sim_unsuspend(s);
			} else if (r < 32) {
				sim_drop_begin(s, (int)rng_below(&seed,
								 MAX_CPUS));
			} else if (r < 52) {
				int c = (int)rng_below(&seed, MAX_CPUS);

				if (s->dropping[c])
					sim_drop_end(s, c);
			} else if (r < 60) {
				sim_heartbeat(s);
			} else if (s->th[th].depth &&
				   rng_below(&seed, 100) < (deep ? 35u : 60u)) {
				sim_exit(s, th);
			} else {
				sim_enter(s, th,
					  (uint32_t)rng_below(&seed, 5000),
					  rng_below(&seed, 20) == 0);
			}
			tick(s, &seed);
		}
		sim_finish(s);
		/* the workload exercised what it is meant to */
		EXPECT_GT(s->enters + s->norets, (uint64_t)steps / 8);
		EXPECT_GT(s->norets, 0u);
		EXPECT_GT(s->lost, 0u);
		EXPECT_GT(s->voids, 2u);
		check_replay(_metadata, s, seed);
		sim_free(s);
		free(s);
	}
}

TEST_HARNESS_MAIN
