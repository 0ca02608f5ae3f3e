// SPDX-License-Identifier: GPL-2.0
/*
 * BFT_CMD_DETACH of chosen probes (BFT_A_PROBES, BFT_FEAT_DETACH_SOME):
 * what a tool does when its target dlclose()s a library.  Only the probes
 * named stop recording, and their ids attach again; a bad list (an id that
 * is no probe of the target, an id given twice) detaches nothing; and a
 * target left with no probe stays until a whole detach.
 *
 * The counts of a run come from a first session with everything attached,
 * so the test does not depend on the target's shape beyond the functions
 * it names.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"
#include "calltree_shape.h"

/* ids well away from the indexes the extack texts also carry */
#define ID_A	41
#define ID_B	42
#define ID_C	43
#define ID_EVEN	44
#define ID_ODD	45
#define ID_HOOK	49
#define NR_FNS	5

FIXTURE(dsome) {
	struct bst_session s;
	struct bst_proc target;
	char *exe;
	struct bft_nl_probe probes[NR_FNS];
	struct bst_trace t;
};

static const struct bst_fn fn_ids[NR_FNS] = {
	{ NULL, CT_FN_A, ID_A },	{ NULL, CT_FN_B, ID_B },
	{ NULL, CT_FN_C, ID_C },	{ NULL, CT_FN_EVEN, ID_EVEN },
	{ NULL, CT_FN_ODD, ID_ODD },
};

FIXTURE_SETUP(dsome)
{
	struct bst_fn fns[NR_FNS];

	ASSERT_EQ(0, bst_session_open(&self->s));
	self->exe = bst_target_path("calltree");
	ASSERT_NE(NULL, self->exe);
	memcpy(fns, fn_ids, sizeof(fns));
	for (int i = 0; i < NR_FNS; i++)
		fns[i].file = self->exe;
	ASSERT_EQ(0, bst_resolve(fns, NR_FNS, self->probes));
	ASSERT_EQ(0, bst_proc_start(&self->target, "calltree", NULL, false,
				    10000));
}

FIXTURE_TEARDOWN(dsome)
{
	bst_trace_free(&self->t);
	bst_session_close(&self->s);
	bst_proc_kill(&self->target);
	free(self->exe);
}

static int attach_all(struct bst_session *s, pid_t tgid,
		      const struct bft_nl_probe *probes, size_t n)
{
	int results[NR_FNS + 1] = { 0 };
	int err = bft_nl_attach(s->nl, (uint32_t)tgid, probes, n, results);

	if (err)
		fprintf(stderr, "attach: %s\n", bft_nl_errmsg(s->nl));
	for (size_t i = 0; !err && i < n; i++)
		err = results[i];
	return err;
}

/* The probes among self->probes whose ids are in ids. */
static size_t pick(const struct bft_nl_probe *all, const uint32_t *ids,
		   size_t n, struct bft_nl_probe *out)
{
	size_t k = 0;

	for (size_t i = 0; i < NR_FNS; i++)
		for (size_t j = 0; j < n; j++)
			if (all[i].method_id == ids[j])
				out[k++] = all[i];
	return k;
}

static int run_once(struct bst_proc *p)
{
	int err = bst_proc_send(p, 'r');

	return err ?: bst_proc_wait_line(p, CT_LINE_DONE, 60000);
}

/* ENTER (and NORET) records of id over every thread of tgid. */
static uint64_t entries(const struct bst_trace *t, uint32_t tgid, uint32_t id)
{
	uint64_t n = 0;

	for (size_t i = 0; i < t->nth; i++) {
		if (t->th[i].tgid != tgid)
			continue;
		for (size_t j = 0; j < t->th[i].n; j++)
			if ((t->th[i].ev[j].kind == BST_ENTER ||
			     t->th[i].ev[j].kind == BST_NORET) &&
			    t->th[i].ev[j].id == id)
				n++;
	}
	return n;
}

struct method_seen {
	uint32_t tgid;
	uint32_t id;
	const char *name;
	const char *path;
	size_t live, gone;
	bool name_ok, path_ok;
};

static int see_method(const struct bft_nl_method *m, void *arg)
{
	struct method_seen *w = arg;

	if (m->tgid != w->tgid || m->method_id != w->id)
		return 0;
	if (m->flags & BFT_PF_GONE) {
		w->gone++;
		w->name_ok = !strcmp(m->name, w->name);
		w->path_ok = !strcmp(m->path, w->path);
	} else {
		w->live++;
	}
	return 0;
}

/* How GET_METHODS lists probe p of tgid: live and gone entries. */
static int methods_of(struct bst_session *s, pid_t tgid,
		      const struct bft_nl_probe *p, struct method_seen *w)
{
	*w = (struct method_seen){ .tgid = (uint32_t)tgid, .id = p->method_id,
				   .name = p->name, .path = p->path };
	return bft_nl_get_methods(s->nl, see_method, w);
}

static void expect_counts(struct __test_metadata *_metadata,
			  struct bst_session *s, uint32_t probes,
			  uint32_t targets)
{
	struct bft_nl_status st;

	ASSERT_EQ(0, bft_nl_get_status(s->nl, &st));
	EXPECT_EQ(probes, st.nr_probes);
	EXPECT_EQ(targets, st.nr_targets);
	bft_nl_status_free(&st);
}

/* Whether text holds the decimal number n as a word of its own. */
static bool mentions_number(const char *text, unsigned int n)
{
	char want[16];
	size_t len = (size_t)snprintf(want, sizeof(want), "%u", n);

	for (const char *p = text; (p = strstr(p, want)); p++) {
		bool before = p == text || !isdigit((unsigned char)p[-1]);
		bool after = !isdigit((unsigned char)p[len]);

		if (before && after)
			return true;
	}
	return false;
}

TEST_F(dsome, detach_some_is_advertised)
{
	EXPECT_TRUE(self->s.caps.features & BFT_FEAT_DETACH_SOME)
		TH_LOG("features %#llx",
		       (unsigned long long)self->s.caps.features);
}

TEST_F(dsome, detach_some_stops_only_those_and_they_attach_again)
{
	static const uint32_t gone_ids[] = { ID_B, ID_EVEN };
	uint32_t tgid = (uint32_t)self->target.pid;
	struct bft_nl_probe again[NR_FNS];
	uint64_t base[NR_FNS];
	struct method_seen w;
	size_t nagain;

	/* one run with everything attached: what each probe records */
	ASSERT_EQ(0, attach_all(&self->s, self->target.pid, self->probes,
				NR_FNS));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
	ASSERT_EQ(0, run_once(&self->target));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	ASSERT_EQ(0, bst_collect(&self->s, 300, 20000, &self->t))
		TH_LOG("%s", self->t.err);
	for (int i = 0; i < NR_FNS; i++) {
		base[i] = entries(&self->t, tgid, self->probes[i].method_id);
		ASSERT_LT(0, base[i]) TH_LOG("%s", self->probes[i].name);
	}
	bst_trace_free(&self->t);
	memset(&self->t, 0, sizeof(self->t));
	expect_counts(_metadata, &self->s, 0, 0);

	/* run 1 with all five; detach two; run 2 with three */
	ASSERT_EQ(0, attach_all(&self->s, self->target.pid, self->probes,
				NR_FNS));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
	ASSERT_EQ(0, run_once(&self->target));
	ASSERT_EQ(0, bft_nl_detach_some(self->s.nl, tgid, gone_ids, 2))
		TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	expect_counts(_metadata, &self->s, NR_FNS - 2, 1);
	for (int i = 0; i < NR_FNS; i++) {
		bool gone = self->probes[i].method_id == ID_B ||
			    self->probes[i].method_id == ID_EVEN;

		ASSERT_EQ(0, methods_of(&self->s, self->target.pid,
					&self->probes[i], &w));
		EXPECT_EQ(gone ? 0 : 1, w.live) TH_LOG("%s", w.name);
		EXPECT_EQ(gone ? 1 : 0, w.gone) TH_LOG("%s", w.name);
		if (gone) {
			EXPECT_TRUE(w.name_ok) TH_LOG("%s", w.name);
			EXPECT_TRUE(w.path_ok) TH_LOG("%s", w.name);
		}
	}
	ASSERT_EQ(0, run_once(&self->target));

	/* the same ids again, beside the three; run 3 with all five */
	nagain = pick(self->probes, gone_ids, 2, again);
	ASSERT_EQ(2, nagain);
	ASSERT_EQ(0, attach_all(&self->s, self->target.pid, again, nagain));
	expect_counts(_metadata, &self->s, NR_FNS, 1);
	ASSERT_EQ(0, methods_of(&self->s, self->target.pid, &again[0], &w));
	EXPECT_EQ(1, w.live);
	ASSERT_EQ(0, run_once(&self->target));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	ASSERT_EQ(0, bst_collect(&self->s, 300, 20000, &self->t))
		TH_LOG("%s", self->t.err);
	for (int i = 0; i < NR_FNS; i++) {
		bool gone = self->probes[i].method_id == ID_B ||
			    self->probes[i].method_id == ID_EVEN;
		uint64_t got = entries(&self->t, tgid,
				       self->probes[i].method_id);

		EXPECT_EQ((gone ? 2 : 3) * base[i], got)
			TH_LOG("%s: %llu entries, %llu a run", self->probes[i].name,
			       (unsigned long long)got,
			       (unsigned long long)base[i]);
	}
	expect_counts(_metadata, &self->s, 0, 0);
	EXPECT_TRUE(bst_proc_alive(&self->target));
}

/* A bad list detaches nothing: the status and the methods as before. */
static void expect_untouched(struct __test_metadata *_metadata,
			     FIXTURE_DATA(dsome) *self)
{
	size_t live, gone;

	expect_counts(_metadata, &self->s, NR_FNS, 1);
	ASSERT_EQ(0, bst_count_methods(&self->s, (uint32_t)self->target.pid,
				       &live, &gone));
	EXPECT_EQ(NR_FNS, live);
	EXPECT_EQ(0, gone);
}

TEST_F(dsome, detach_some_rejects_unknown_id)
{
	static const uint32_t ids[] = { ID_A, 77, ID_C };
	static const uint32_t other[] = { ID_HOOK };
	const char *msg;
	int err;

	ASSERT_EQ(0, attach_all(&self->s, self->target.pid, self->probes,
				NR_FNS));
	err = bft_nl_detach_some(self->s.nl, (uint32_t)self->target.pid, ids, 3);
	msg = bft_nl_errmsg(self->s.nl);
	EXPECT_EQ(-ENOENT, err);
	EXPECT_TRUE(mentions_number(msg, 77)) TH_LOG("text: %s", msg);
	expect_untouched(_metadata, self);
	/* alone, too */
	err = bft_nl_detach_some(self->s.nl, (uint32_t)self->target.pid,
				 other, 1);
	EXPECT_EQ(-ENOENT, err);
	EXPECT_TRUE(mentions_number(bft_nl_errmsg(self->s.nl), ID_HOOK));
	expect_untouched(_metadata, self);
}

TEST_F(dsome, detach_some_rejects_duplicate_id)
{
	static const uint32_t ids[] = { ID_A, ID_ODD, ID_C, ID_ODD };
	const char *msg;
	int err;

	ASSERT_EQ(0, attach_all(&self->s, self->target.pid, self->probes,
				NR_FNS));
	err = bft_nl_detach_some(self->s.nl, (uint32_t)self->target.pid, ids, 4);
	msg = bft_nl_errmsg(self->s.nl);
	EXPECT_EQ(-EINVAL, err);
	EXPECT_TRUE(mentions_number(msg, ID_ODD)) TH_LOG("text: %s", msg);
	expect_untouched(_metadata, self);
}

TEST_F(dsome, detach_some_of_every_probe_keeps_the_target)
{
	static const uint32_t ids[] = { ID_ODD, ID_A, ID_EVEN, ID_C, ID_B };
	uint32_t tgid = (uint32_t)self->target.pid;
	size_t live, gone;

	ASSERT_EQ(0, attach_all(&self->s, self->target.pid, self->probes,
				NR_FNS));
	ASSERT_EQ(0, bft_nl_detach_some(self->s.nl, tgid, ids, NR_FNS))
		TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	expect_counts(_metadata, &self->s, 0, 1);
	ASSERT_EQ(0, bst_count_methods(&self->s, tgid, &live, &gone));
	EXPECT_EQ(0, live);
	EXPECT_EQ(NR_FNS, gone);
	/* nothing left to name */
	EXPECT_EQ(-ENOENT, bft_nl_detach_some(self->s.nl, tgid, ids, 1));
	ASSERT_EQ(0, run_once(&self->target));

	/* still a target: a whole detach finds it, and then it is gone */
	ASSERT_EQ(0, bft_nl_detach(self->s.nl, tgid))
		TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	expect_counts(_metadata, &self->s, 0, 0);
	EXPECT_EQ(-ENOENT, bft_nl_detach(self->s.nl, tgid));

	/* and once more, this time in a session that a stop ends */
	ASSERT_EQ(0, attach_all(&self->s, self->target.pid, self->probes,
				NR_FNS));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
	ASSERT_EQ(0, bft_nl_detach_some(self->s.nl, tgid, ids, NR_FNS))
		TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	expect_counts(_metadata, &self->s, 0, 1);
	ASSERT_EQ(0, run_once(&self->target));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	expect_counts(_metadata, &self->s, 0, 0);
	EXPECT_TRUE(bst_proc_alive(&self->target));
}

/*
 * An unwinder hook among the chosen, on a target with a return probe: it
 * lingers (restoring only) in the kernel, which user space cannot see;
 * what it can see is that the hook is gone from the counts and the live
 * methods, that its id attaches again, that the target runs on through
 * every step, and that the teardown leaves nothing behind (dmesg).
 */
TEST_F(dsome, detach_some_of_a_hook)
{
	static const uint32_t hook_id[] = { ID_HOOK };
	uint32_t tgid = (uint32_t)self->target.pid;
	struct bft_nl_probe two[2];
	struct method_seen w;

	two[0] = self->probes[0];			/* ct_a, with return */
	two[1] = self->probes[NR_FNS - 1];		/* ct_odd, as a hook */
	two[1].method_id = ID_HOOK;
	two[1].flags = BFT_PF_HOOK_UNWIND;
	ASSERT_EQ(0, attach_all(&self->s, self->target.pid, two, 2));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
	ASSERT_EQ(0, run_once(&self->target));
	for (int round = 0; round < 2; round++) {
		ASSERT_EQ(0, bft_nl_detach_some(self->s.nl, tgid, hook_id, 1))
			TH_LOG("%s", bft_nl_errmsg(self->s.nl));
		expect_counts(_metadata, &self->s, 1, 1);
		ASSERT_EQ(0, methods_of(&self->s, self->target.pid, &two[1],
					&w));
		EXPECT_EQ(0, w.live);
		EXPECT_EQ(round + 1, w.gone);
		ASSERT_EQ(0, run_once(&self->target));
		/* beside the lingering one (round 0), then none (round 1) */
		ASSERT_EQ(0, attach_all(&self->s, self->target.pid, &two[1],
					1));
		expect_counts(_metadata, &self->s, 2, 1);
		ASSERT_EQ(0, run_once(&self->target));
	}
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	expect_counts(_metadata, &self->s, 0, 0);
	ASSERT_EQ(0, run_once(&self->target));
	EXPECT_TRUE(bst_proc_alive(&self->target));
}

TEST_HARNESS_MAIN
