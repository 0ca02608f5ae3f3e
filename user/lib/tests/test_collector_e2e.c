// SPDX-License-Identifier: GPL-2.0
/*
 * bfcollector <-> bfhq over loopback, no kernel: bfcollector replays a
 * synthetic multi-threaded trace (per-CPU streams written by bft_writer,
 * threads migrating between CPUs, NORET frames past a depth), bfhq
 * receives it, and bfhq's reconstructed per-thread call trees must equal
 * exactly what an independent model of the trace says, for protocol
 * versions 1 and 2 and for 1 and 4 data connections.  The .flow files
 * bfcollector writes must decode to the same trees, and bfhq's Chrome JSON
 * must parse, with balanced B/E events per thread.
 */
#include <jansson.h>

#include "kselftest_harness.h"

#include "wire/bft_flow.h"
#include "collector_fixture.h"

FIXTURE(e2e) {
	char dir[PATH_MAX];
	char replay[PATH_MAX + 16];
	char hqout[PATH_MAX + 16];
	char flowout[PATH_MAX + 16];
	char log[PATH_MAX + 16];
	struct syn syn;
	int port;
};

FIXTURE_SETUP(e2e)
{
	ASSERT_EQ(0, make_tmpdir(self->dir, sizeof(self->dir)));
	snprintf(self->replay, sizeof(self->replay), "%s/replay", self->dir);
	snprintf(self->hqout, sizeof(self->hqout), "%s/hq", self->dir);
	snprintf(self->flowout, sizeof(self->flowout), "%s/flow", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/log", self->dir);
	ASSERT_EQ(0, mkdir(self->replay, 0755));
	memset(&self->syn, 0, sizeof(self->syn));
	self->port = free_port();
	ASSERT_GT(self->port, 0);
}

FIXTURE_TEARDOWN(e2e)
{
	syn_free(&self->syn);
	remove_tmpdir(self->dir);
}

struct flow_ctx {
	struct bft_buf tokens;
	uint64_t stack[4096];
	unsigned int depth;
	bool bad;
};

static int flow_event(void *ctx, const struct bft_flow_event *ev)
{
	struct flow_ctx *f = ctx;
	uint64_t i;

	if (ev->kind == BFT_FLOW_ENTER) {
		if (f->depth == 4096)
			return -1;
		f->stack[f->depth++] = ev->value;
		syn_tok(&f->tokens, " e%u", (uint32_t)ev->value);
		return 0;
	}
	for (i = 0; i < ev->value; i++) {
		if (!f->depth) {
			f->bad = true;
			return 0;
		}
		syn_tok(&f->tokens, " x%u", (uint32_t)f->stack[--f->depth]);
	}
	return 0;
}

/* The .flow files, decoded with the flow format's rules, give the model. */
static int check_flow(struct __test_metadata *_metadata, const char *dir,
		      struct syn *s)
{
	unsigned int i, checked = 0;

	for (i = 0; i < s->o.threads; i++) {
		struct syn_thread *th = &s->th[i];
		struct flow_ctx f = { 0 };
		struct bft_flow_error err;
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/thread-%u.flow", dir, th->tid);
		EXPECT_EQ(0, bft_flow_read_file(path, BFT_FLOW_STRICT |
						BFT_FLOW_BALANCED, flow_event,
						&f, &err))
			TH_LOG("%s: %s", path, err.msg);
		EXPECT_FALSE(f.bad);
		bft_buf_append(&f.tokens, "", 1);
		bft_buf_append(&th->tokens, "", 1);
		th->tokens.len--;
		EXPECT_STREQ((char *)th->tokens.data, (char *)f.tokens.data)
			TH_LOG("thread %u", th->tid);
		checked++;
		bft_buf_free(&f.tokens);
	}
	return (int)checked;
}

/* trace.json parses, and B/E balance and nest per (pid, tid). */
static void check_chrome(struct __test_metadata *_metadata, const char *path)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, 0, &jerr), *evs, *ev;
	struct { json_int_t pid, tid; int depth; } tr[64];
	int ntr = 0, b = 0, e = 0, k;
	size_t i;

	ASSERT_NE(NULL, root) TH_LOG("%s: %s line %d", path, jerr.text,
				     jerr.line);
	evs = json_object_get(root, "traceEvents");
	ASSERT_TRUE(json_is_array(evs));
	json_array_foreach(evs, i, ev) {
		const char *ph = json_string_value(json_object_get(ev, "ph"));
		json_int_t pid = json_integer_value(json_object_get(ev, "pid"));
		json_int_t tid = json_integer_value(json_object_get(ev, "tid"));

		ASSERT_NE(NULL, ph);
		if (strcmp(ph, "B") && strcmp(ph, "E"))
			continue;
		for (k = 0; k < ntr; k++)
			if (tr[k].pid == pid && tr[k].tid == tid)
				break;
		if (k == ntr) {
			ASSERT_LT(ntr, 64);
			tr[ntr].pid = pid;
			tr[ntr].tid = tid;
			tr[ntr++].depth = 0;
		}
		if (*ph == 'B') {
			tr[k].depth++;
			b++;
		} else {
			EXPECT_GT(tr[k].depth, 0);
			tr[k].depth--;
			e++;
		}
	}
	EXPECT_EQ(b, e);
	for (k = 0; k < ntr; k++)
		EXPECT_EQ(0, tr[k].depth);
	EXPECT_GT(b, 0);
	json_decref(root);
}

static void run_pair(struct __test_metadata *_metadata,
		     FIXTURE_DATA(e2e) *self, const char *protocol,
		     const char *senders, const char *exclude)
{
	char port[16], hq[64], *calls, *expected, path[PATH_MAX + 64];
	char *hq_argv[16] = { "bfhq", "-p", port, "-o", self->hqout,
			      "--start", "--count", "1", "--timeout", "120",
			      "--data-senders", (char *)senders };
	char *coll_argv[] = { "bfcollector", "--hq", hq, "--protocol",
			      (char *)protocol, "--replay", self->replay,
			      "--output", self->flowout,
			      "--connect-timeout", "30", NULL };
	int n = 12, hq_rc, coll_rc;
	pid_t hq_pid, coll_pid;

	snprintf(port, sizeof(port), "%d", self->port);
	snprintf(hq, sizeof(hq), "127.0.0.1:%d", self->port);
	if (exclude) {
		hq_argv[n++] = "--exclude";
		hq_argv[n++] = (char *)exclude;
	}
	hq_argv[n] = NULL;
	hq_pid = spawn(hq_argv, self->log);
	ASSERT_GT(hq_pid, 0);
	ASSERT_TRUE(wait_listening(self->port, slow_env() ? 30000 : 5000));
	coll_pid = spawn(coll_argv, self->log);
	ASSERT_GT(coll_pid, 0);
	coll_rc = wait_exit(coll_pid, slow_env() ? 300000 : 60000);
	hq_rc = wait_exit(hq_pid, slow_env() ? 120000 : 20000);
	if (coll_rc || hq_rc)
		show_log(self->log);
	ASSERT_EQ(0, coll_rc);
	ASSERT_EQ(0, hq_rc);
	snprintf(path, sizeof(path), "%s/trace-1/calls.txt", self->hqout);
	calls = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, calls);
	expected = syn_expected_calls(&self->syn);
	ASSERT_NE(NULL, expected);
	EXPECT_STREQ(expected, calls);
	if (strcmp(expected, calls))
		show_log(self->log);
	free(calls);
	free(expected);
	/* Every method and thread was mapped before its first event. */
	snprintf(path, sizeof(path), "%s/trace-1/summary.txt", self->hqout);
	calls = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, calls);
	EXPECT_NE(NULL, strstr(calls, "before map:    0 events of an "
			       "unmapped method, 0 of an unnamed thread\n"));
	free(calls);
	snprintf(path, sizeof(path), "%s/trace-1/trace.json", self->hqout);
	check_chrome(_metadata, path);
}

static void generate(struct __test_metadata *_metadata,
		     FIXTURE_DATA(e2e) *self, uint64_t seed)
{
	const char *excluded = self->syn.o.excluded_prefix;

	self->syn.o = (struct syn_opts){
		.threads = 6, .cpus = 4, .methods = 40, .noret_depth = 7,
		.steps = slow_env() ? 3000 : 30000, .seed = seed,
		.excluded_prefix = excluded,
	};
	ASSERT_EQ(0, syn_generate(&self->syn, self->replay));
}

TEST_F_TIMEOUT(e2e, v1_one_data_connection_trees_are_exact, 600)
{
	generate(_metadata, self, 1);
	run_pair(_metadata, self, "1", "1", NULL);
	EXPECT_EQ(6, check_flow(_metadata, self->flowout, &self->syn));
}

TEST_F_TIMEOUT(e2e, v1_four_data_connections_trees_are_exact, 600)
{
	generate(_metadata, self, 2);
	run_pair(_metadata, self, "1", "4", NULL);
}

TEST_F_TIMEOUT(e2e, v2_one_data_connection_trees_are_exact, 600)
{
	generate(_metadata, self, 3);
	run_pair(_metadata, self, "2", "1", NULL);
}

TEST_F_TIMEOUT(e2e, v2_four_data_connections_trees_are_exact, 600)
{
	generate(_metadata, self, 4);
	run_pair(_metadata, self, "2", "4", NULL);
	EXPECT_EQ(6, check_flow(_metadata, self->flowout, &self->syn));
}

TEST_F_TIMEOUT(e2e, excluded_methods_never_reach_hq, 600)
{
	self->syn.o.excluded_prefix = "prog!skip";
	generate(_metadata, self, 5);
	run_pair(_metadata, self, "1", "2", "prog!skip");
}

TEST_F_TIMEOUT(e2e, a_loss_is_a_data_break_and_stacks_restart, 600)
{
	self->syn.o = (struct syn_opts){
		.threads = 4, .cpus = 2, .methods = 20,
		.steps = slow_env() ? 2000 : 8000, .seed = 6,
		.lost_at = slow_env() ? 1000 : 4000,
	};
	ASSERT_EQ(0, syn_generate(&self->syn, self->replay));
	run_pair(_metadata, self, "1", "2", NULL);
	{
		char path[PATH_MAX + 64], *sum;

		snprintf(path, sizeof(path), "%s/trace-1/summary.txt",
			 self->hqout);
		sum = bft_test_slurp(path, NULL);
		ASSERT_NE(NULL, sum);
		/* the 3 lost events reach HQ, as a count, and one break */
		EXPECT_NE(NULL, strstr(sum, "losses:        3 events lost"))
			TH_LOG("%s", sum);
		EXPECT_NE(NULL, strstr(sum, "data breaks:   1 "))
			TH_LOG("%s", sum);
		free(sum);
	}
}

TEST_HARNESS_MAIN
