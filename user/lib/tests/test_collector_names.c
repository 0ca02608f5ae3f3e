// SPDX-License-Identifier: GPL-2.0
/*
 * Thread names as the threads had them (NAME records, uapi 2.2), from
 * bfcollector to bfhq's files, without a kernel.  The replay's threads
 * are long gone, as a short-lived thread is by the time the collector
 * looks: what names them is what their records say.
 *
 * The replay: thread A names itself "worker-1" and makes three calls;
 * thread B calls as "boot", the replay's table's name for it, then its
 * records call it "é<\"x" (UTF-8, and characters JSON escapes), then,
 * after a SYNC, "late"; thread C has no NAME record and keeps the
 * table's name; thread D's NAME is all there is of it (its event was
 * lost), so it is no thread; thread E's NAME is empty, which tells
 * nothing, and the table names it.
 */
#include <jansson.h>

#include "kselftest_harness.h"

#include "wire/bft_writer.h"
#include "collector_fixture.h"

#define PID	4000
#define A	4001	/* tids */
#define B	4002
#define C	4003
#define D	4004
#define E	4005

FIXTURE(names) {
	struct replay_run r;
};

FIXTURE_SETUP(names)
{
	ASSERT_EQ(0, replay_run_init(&self->r));
}

FIXTURE_TEARDOWN(names)
{
	replay_run_fini(&self->r);
}

static int call(struct bft_writer *w, uint64_t *t, uint32_t tid, uint32_t id)
{
	*t += 1000;
	if (bft_writer_enter(w, *t, PID, tid, id))
		return -1;
	*t += 1000;
	return bft_writer_exit(w, *t, PID, tid);
}

static int write_replay(const char *dir)
{
	static const char methods[] =
		"1\t/usr/bin/prog\tmain\t0x10\t3\n"
		"2\t/usr/bin/prog\twork\t0x20\t3\n";
	static const char threads[] = "4000\t4002\tboot\n4000\t4003\tkeeper\n"
				      "4000\t4005\tfromtable\n";
	struct bft_writer w;
	uint64_t t = 1000000000ull;
	const uint8_t *p;
	size_t bytes;
	int i, r = 0;

	r |= bft_writer_init(&w, 1000, 0);
	r |= bft_writer_name(&w, t, PID, A, "worker-1");
	for (i = 0; i < 3; i++)
		r |= call(&w, &t, A, 2);
	r |= call(&w, &t, B, 1);
	r |= bft_writer_name(&w, t, PID, B, "\xc3\xa9<\"x");
	r |= call(&w, &t, B, 1);
	r |= call(&w, &t, C, 1);
	r |= bft_writer_name(&w, t, PID, D, "ghost");
	r |= bft_writer_name(&w, t, PID, E, "");
	r |= call(&w, &t, E, 2);
	r |= bft_writer_sync(&w, t += 1000);
	r |= bft_writer_name(&w, t, PID, B, "late");
	r |= call(&w, &t, B, 2);
	r |= bft_writer_sync(&w, t += 1000);
	if (r) {
		bft_writer_free(&w);
		return -ENOMEM;
	}
	p = bft_writer_data(&w, &bytes);
	r = syn_write_file(dir, "cpu0.bft", p, bytes) ?:
	    syn_write_file(dir, "methods", methods, sizeof(methods) - 1) ?:
	    syn_write_file(dir, "threads", threads, sizeof(threads) - 1);
	bft_writer_free(&w);
	return r;
}

/* The n-th (from 0) thread_name metadata of trace.json for tid. */
static const char *json_thread_name(json_t *root, json_int_t tid, int n)
{
	json_t *ev = json_is_array(root) ? root :
		     json_object_get(root, "traceEvents"), *e;
	size_t k;

	json_array_foreach(ev, k, e) {
		const char *name = json_string_value(json_object_get(e, "name"));

		if (name && !strcmp(name, "thread_name") &&
		    json_integer_value(json_object_get(e, "tid")) == tid &&
		    !n--)
			return json_string_value(json_object_get(
				json_object_get(e, "args"), "name"));
	}
	return NULL;
}

TEST_F_TIMEOUT(names, threads_keep_the_names_their_records_give, 180)
{
	char path[PATH_MAX + 64];
	json_error_t jerr;
	json_t *root;
	char *threads, *json;

	ASSERT_EQ(0, write_replay(self->r.replay));
	EXPECT_EQ(NULL, replay_run_go(&self->r)) show_log(self->r.log);

	/* the collector's own table: the last name of each, no D */
	snprintf(path, sizeof(path), "%s/threads", self->r.flow);
	threads = bft_test_slurp(path, NULL);
	ASSERT_NE(NULL, threads);
	EXPECT_NE(NULL, strstr(threads, "4001\t4000\tworker-1 (4000/4001)\n"))
		TH_LOG("%s", threads);
	EXPECT_NE(NULL, strstr(threads, "4002\t4000\tlate (4000/4002)\n"))
		TH_LOG("%s", threads);
	EXPECT_NE(NULL, strstr(threads, "4003\t4000\tkeeper (4000/4003)\n"))
		TH_LOG("%s", threads);
	EXPECT_NE(NULL, strstr(threads, "4005\t4000\tfromtable (4000/4005)\n"))
		TH_LOG("%s", threads);
	EXPECT_EQ(NULL, strstr(threads, "4004")) TH_LOG("%s", threads);
	free(threads);
	snprintf(path, sizeof(path), "%s/thread-%u.flow", self->r.flow, D);
	EXPECT_NE(0, access(path, F_OK)) TH_LOG("%s: a thread of no event", path);

	/* bfhq heard of each name, both renames included */
	json = replay_run_file(&self->r, "trace.json", NULL);
	ASSERT_NE(NULL, json);
	root = json_loads(json, 0, &jerr);
	ASSERT_NE(NULL, root) TH_LOG("%s", jerr.text);
	EXPECT_STREQ("worker-1 (4000/4001)", json_thread_name(root, A, 0));
	EXPECT_EQ(NULL, json_thread_name(root, A, 1));
	EXPECT_STREQ("boot (4000/4002)", json_thread_name(root, B, 0));
	EXPECT_STREQ("\xc3\xa9<\"x (4000/4002)", json_thread_name(root, B, 1));
	EXPECT_STREQ("late (4000/4002)", json_thread_name(root, B, 2));
	EXPECT_EQ(NULL, json_thread_name(root, B, 3));
	EXPECT_STREQ("keeper (4000/4003)", json_thread_name(root, C, 0));
	EXPECT_EQ(NULL, json_thread_name(root, D, 0));
	EXPECT_STREQ("fromtable (4000/4005)", json_thread_name(root, E, 0));
	EXPECT_EQ(NULL, strstr(json, "ghost")) TH_LOG("a thread of no event");
	json_decref(root);
	free(json);
}

TEST_HARNESS_MAIN
