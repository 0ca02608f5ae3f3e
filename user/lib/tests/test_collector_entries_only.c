// SPDX-License-Identifier: GPL-2.0
/*
 * Entries-only methods, from bfcollector to bfhq's files, without a
 * kernel.  A probe without BFT_PF_RETURN (bfctl's choice where an
 * exception could unwind through a return-probed frame) records ENTER_NORET
 * only; the call tree closes such a frame at the next exit of its thread,
 * a guess that would make each entry a frame nesting the calls after it.
 * bfcollector sends those entries under a twin id declared with a
 * "bftrace.noret" marker, and bfhq counts them and shows them as instants.
 *
 * The replay: thread A mixes methods with exits (main, mid) and the
 * entries-only leaf, and has a NORET entry of mid past the return-probe
 * depth, which stays a frame with an inferred exit; thread B, like a
 * python3 loop traced entries only, has nothing but leaf's entries.
 * The .flow files stay balanced: there an entries-only call is a call
 * without callees.
 */
#include <jansson.h>

#include "kselftest_harness.h"

#include "wire/bft_flow.h"
#include "wire/bft_writer.h"
#include "collector_fixture.h"

#define A	4001	/* tids */
#define B	4002
#define B_CALLS	3000

FIXTURE(eo) {
	struct replay_run r;
};

FIXTURE_SETUP(eo)
{
	ASSERT_EQ(0, replay_run_init(&self->r));
}

FIXTURE_TEARDOWN(eo)
{
	replay_run_fini(&self->r);
}

static int write_replay(const char *dir, size_t *bytes)
{
	/* id, path, function, offset, flags: 3 is BFT_PF_ALL, 1 entries */
	static const char methods[] =
		"1\t/usr/bin/prog\tmain\t0x10\t3\n"
		"2\t/usr/bin/prog\tmid\t0x20\t3\n"
		"3\t/usr/lib/libx.so.1\tleaf\t0x30\t1\n";
	static const char threads[] = "4000\t4001\tmain\n4000\t4002\tloop\n";
	struct bft_writer w;
	uint64_t t = 1000000000ull;
	const uint8_t *p;
	int i, r = 0;

#define T	(t += 1000)
	r |= bft_writer_init(&w, 1000, 0);
	r |= bft_writer_enter(&w, T, 4000, A, 1);
	r |= bft_writer_enter_noret(&w, T, 4000, A, 3);
	r |= bft_writer_enter(&w, T, 4000, A, 2);
	r |= bft_writer_enter_noret(&w, T, 4000, A, 3);
	r |= bft_writer_exit(&w, T, 4000, A);		/* leaf?, mid */
	/* past the return-probe depth: mid has exits, its frame stays */
	r |= bft_writer_enter_noret(&w, T, 4000, A, 2);
	r |= bft_writer_enter_noret(&w, T, 4000, A, 3);
	r |= bft_writer_exit(&w, T, 4000, A);		/* leaf?, mid?, main */
	for (i = 0; i < B_CALLS; i++)
		r |= bft_writer_enter_noret(&w, T, 4000, B, 3);
	r |= bft_writer_sync(&w, T);
#undef T
	if (r)
		return -ENOMEM;
	p = bft_writer_data(&w, bytes);
	r = syn_write_file(dir, "cpu0.bft", p, *bytes) ?:
	    syn_write_file(dir, "methods", methods, sizeof(methods) - 1) ?:
	    syn_write_file(dir, "threads", threads, sizeof(threads) - 1);
	bft_writer_free(&w);
	return r;
}

TEST_F_TIMEOUT(eo, entries_only_calls_are_counted_instants, 180)
{
	static const char *const files[] = { "tree.txt", "calls.txt",
					     "folded.txt", "trace.json",
					     "methods.txt" };
	char *sum, *tree, *folded, *json, path[PATH_MAX + 64];
	struct bft_flow_error ferr;
	size_t bytes, i, n;

	ASSERT_EQ(0, write_replay(self->r.replay, &bytes));
	EXPECT_EQ(NULL, replay_run_go(&self->r)) show_log(self->r.log);

	sum = replay_run_file(&self->r, "summary.txt", NULL);
	ASSERT_NE(NULL, sum);
	/* main, mid twice (once past the depth), and every leaf */
	EXPECT_NE(NULL, strstr(sum, "calls:         3006 (exits 3)\n"))
		TH_LOG("%s", sum);
	EXPECT_NE(NULL, strstr(sum, "entries only:  3003 of the calls, of 1 "
			       "methods traced without their exits"))
		TH_LOG("%s", sum);
	EXPECT_NE(NULL, strstr(sum, "open at end:   0 frames\n"))
		TH_LOG("%s", sum);
	EXPECT_NE(NULL, strstr(sum, "exits:         0 without a frame, 0 "
			       "not matching the stack\n")) TH_LOG("%s", sum);
	free(sum);

	/* A's frames whole around the instants; B's leaf counted, flat */
	tree = replay_run_file(&self->r, "tree.txt", NULL);
	ASSERT_NE(NULL, tree);
	EXPECT_NE(NULL, strstr(tree, "libx.so.1!leaf")) TH_LOG("%s", tree);
	EXPECT_NE(NULL, strstr(tree, "3000")) TH_LOG("%s", tree);
	EXPECT_EQ(NULL, strstr(tree, "leaf {")) TH_LOG("%s", tree);
	free(tree);
	folded = replay_run_file(&self->r, "folded.txt", NULL);
	ASSERT_NE(NULL, folded);
	EXPECT_EQ(NULL, strstr(folded, "leaf;")) TH_LOG("%s", folded);
	EXPECT_NE(NULL, strstr(folded, "prog!main;prog!mid "))
		TH_LOG("%s", folded);
	free(folded);

	/* leaf's calls are instants on the timeline, never slices */
	json = replay_run_file(&self->r, "trace.json", NULL);
	ASSERT_NE(NULL, json);
	{
		json_error_t jerr;
		json_t *root = json_loads(json, 0, &jerr), *ev, *e;
		size_t k, instants = 0, slices = 0;
		json_int_t calls = 0;

		ASSERT_NE(NULL, root) TH_LOG("%s", jerr.text);
		ev = json_is_array(root) ? root :
		     json_object_get(root, "traceEvents");
		ASSERT_TRUE(json_is_array(ev));
		json_array_foreach(ev, k, e) {
			const char *name = json_string_value(
				json_object_get(e, "name"));
			const char *ph = json_string_value(
				json_object_get(e, "ph"));

			if (!name || !ph || strcmp(name, "leaf"))
				continue;
			instants += !strcmp(ph, "i");
			slices += strcmp(ph, "i") != 0;
			calls += json_integer_value(json_object_get(
				json_object_get(e, "args"), "calls"));
		}
		/* every call in an instant, close ones grouped */
		EXPECT_EQ(3003, calls);
		EXPECT_LE(1u, instants);
		EXPECT_GE(3003u, instants);
		EXPECT_EQ(0u, slices);
		json_decref(root);
	}
	free(json);

	/* .flow has calls only: an entries-only call is one without
	 * callees, so B's stays flat and balanced */
	snprintf(path, sizeof(path), "%s/thread-%u.flow", self->r.flow, B);
	EXPECT_EQ(0, bft_flow_read_file(path, BFT_FLOW_STRICT |
					BFT_FLOW_BALANCED, NULL, NULL, &ferr));
	snprintf(path, sizeof(path), "%s/thread-%u.flow", self->r.flow, A);
	EXPECT_EQ(0, bft_flow_read_file(path, BFT_FLOW_STRICT |
					BFT_FLOW_BALANCED, NULL, NULL, &ferr));

	/* no output bigger than the trace: each stays under the stream's
	 * 2 bytes an entry times a small factor, none grows with depth */
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *f = replay_run_file(&self->r, files[i], &n);

		ASSERT_NE(NULL, f) TH_LOG("%s", files[i]);
		EXPECT_LT(n, 100 * bytes) TH_LOG("%s: %zu bytes", files[i], n);
		free(f);
	}
}

TEST_HARNESS_MAIN
