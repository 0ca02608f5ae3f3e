// SPDX-License-Identifier: GPL-2.0
/*
 * Options: every option reads back what was set, and each kind of bad
 * SET_OPT gets its own errno (seeds/004 wants distinct status codes) with an
 * extack text that says what is wrong.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* A valid value other than the current one; false if there is none. */
static bool other_value(const struct bft_nl_opt *o, uint64_t *v)
{
	if (o->flags & BFT_OPTF_POW2) {
		if (o->value <= o->max / 2 && o->value * 2 <= o->max)
			*v = o->value * 2;
		else if (o->value / 2 >= o->min && is_pow2(o->value / 2))
			*v = o->value / 2;
		else
			return false;
		return true;
	}
	if (o->value < o->max)
		*v = o->value + 1;
	else if (o->value > o->min)
		*v = o->value - 1;
	else
		return false;
	return true;
}

FIXTURE(options) {
	struct bst_session s;
	struct bst_proc target;
};

FIXTURE_SETUP(options)
{
	ASSERT_EQ(0, bst_session_open(&self->s));
}

FIXTURE_TEARDOWN(options)
{
	bst_session_close(&self->s);
	bst_proc_kill(&self->target);
}

TEST_F(options, get_reports_every_option_within_its_bounds)
{
	struct bft_nl_opt all[BFT_OPT_MAX + 8];
	bool seen[BFT_OPT_MAX + 1] = { false };
	size_t n = 0;

	ASSERT_EQ(0, bft_nl_get_opts(self->s.nl, all, BFT_OPT_MAX + 8, &n));
	ASSERT_GE(BFT_OPT_MAX + 8, n);
	for (size_t i = 0; i < n; i++) {
		const struct bft_nl_opt *o = &all[i];

		ASSERT_TRUE(o->id >= 1 && o->id <= BFT_OPT_MAX)
			TH_LOG("unknown option id %u in the dump", o->id);
		EXPECT_FALSE(seen[o->id]) TH_LOG("option %u twice", o->id);
		seen[o->id] = true;
		EXPECT_LE(o->min, o->value) TH_LOG("%s", bft_opt_name(o->id));
		EXPECT_LE(o->value, o->max) TH_LOG("%s", bft_opt_name(o->id));
		if (o->flags & BFT_OPTF_POW2) {
			EXPECT_TRUE(is_pow2(o->value))
				TH_LOG("%s = %llu", bft_opt_name(o->id),
				       (unsigned long long)o->value);
		}
	}
	/* Every option the contract defines and this build supports. */
	for (uint32_t id = 1; id <= BFT_OPT_MAX; id++) {
		if (id != BFT_OPT_OVERWRITE) {
			EXPECT_TRUE(seen[id]) TH_LOG("%s missing", bft_opt_name(id));
		}
	}
}

TEST_F(options, set_then_get_round_trips_every_option)
{
	for (uint32_t id = 1; id <= BFT_OPT_MAX; id++) {
		struct bft_nl_opt o, reply, back;
		uint64_t v;

		if (id == BFT_OPT_OVERWRITE)
			continue;
		ASSERT_EQ(0, bft_nl_get_opt(self->s.nl, id, &o))
			TH_LOG("%s: %s", bft_opt_name(id), bft_nl_errmsg(self->s.nl));
		EXPECT_EQ(id, o.id);
		if (!other_value(&o, &v)) {
			TH_LOG("%s: min == max, nothing to change", bft_opt_name(id));
			continue;
		}
		ASSERT_EQ(0, bft_nl_set_opt(self->s.nl, id, v, &reply))
			TH_LOG("%s = %llu: %s", bft_opt_name(id),
			       (unsigned long long)v, bft_nl_errmsg(self->s.nl));
		EXPECT_EQ(id, reply.id);
		EXPECT_EQ(v, reply.value) TH_LOG("%s reply", bft_opt_name(id));
		ASSERT_EQ(0, bft_nl_get_opt(self->s.nl, id, &back));
		EXPECT_EQ(v, back.value) TH_LOG("%s read back", bft_opt_name(id));
		EXPECT_EQ(o.min, back.min);
		EXPECT_EQ(o.max, back.max);
		EXPECT_EQ(o.flags, back.flags);

		ASSERT_EQ(0, bft_nl_set_opt(self->s.nl, id, o.value, NULL));
		ASSERT_EQ(0, bft_nl_get_opt(self->s.nl, id, &back));
		EXPECT_EQ(o.value, back.value) TH_LOG("%s restored", bft_opt_name(id));
	}
}

TEST_F(options, buf_size_change_resizes_every_ring)
{
	struct bft_nl_opt o;
	struct bft_nl_status st;
	uint64_t v;

	ASSERT_EQ(0, bft_nl_get_opt(self->s.nl, BFT_OPT_BUF_SIZE, &o));
	ASSERT_TRUE(other_value(&o, &v));
	ASSERT_EQ(0, bst_set_opt(&self->s, BFT_OPT_BUF_SIZE, v));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	for (uint32_t i = 0; i < st.nr_cpus; i++) {
		EXPECT_EQ(v, st.cpus[i].size) TH_LOG("cpu %u", st.cpus[i].cpu);
	}
	bft_nl_status_free(&st);
}

TEST_F(options, set_rejects_value_out_of_range)
{
	int checked = 0;

	for (uint32_t id = 1; id <= BFT_OPT_MAX; id++) {
		struct bft_nl_opt o, back;
		int err;

		if (id == BFT_OPT_OVERWRITE ||
		    bft_nl_get_opt(self->s.nl, id, &o))
			continue;
		if (o.max < UINT64_MAX) {
			err = bft_nl_set_opt(self->s.nl, id, o.max + 1, NULL);
			EXPECT_EQ(-ERANGE, err) TH_LOG("%s = max + 1", bft_opt_name(id));
			EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl),
						 "range", "outside", "between", "max", "large"));
			checked++;
		}
		if (o.min > 0) {
			err = bft_nl_set_opt(self->s.nl, id, o.min - 1, NULL);
			EXPECT_EQ(-ERANGE, err) TH_LOG("%s = min - 1", bft_opt_name(id));
			EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl),
						 "range", "outside", "between", "min", "small"));
			checked++;
		}
		ASSERT_EQ(0, bft_nl_get_opt(self->s.nl, id, &back));
		EXPECT_EQ(o.value, back.value)
			TH_LOG("%s changed by a rejected set", bft_opt_name(id));
	}
	ASSERT_LT(0, checked) TH_LOG("no option has a bound to cross");
}

TEST_F(options, set_rejects_non_power_of_two)
{
	int checked = 0;

	for (uint32_t id = 1; id <= BFT_OPT_MAX; id++) {
		struct bft_nl_opt o;
		uint64_t v;

		if (bft_nl_get_opt(self->s.nl, id, &o) ||
		    !(o.flags & BFT_OPTF_POW2))
			continue;
		/* value + 1 (value a power of two >= 2) is in range and odd. */
		v = o.value + 1;
		if (o.value < 2 || v > o.max)
			continue;
		EXPECT_EQ(-ERANGE, bft_nl_set_opt(self->s.nl, id, v, NULL))
			TH_LOG("%s = %llu", bft_opt_name(id), (unsigned long long)v);
		EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "power", "pow"));
		checked++;
	}
	if (!checked)
		SKIP(return, "no option requires a power of two");
}

TEST_F(options, set_and_get_reject_unknown_option)
{
	/* (0 is no option either, but bft_nl takes it as "all options".) */
	static const uint32_t bad[] = { BFT_OPT_MAX + 1, 1000 };
	struct bft_nl_opt o;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-ENOENT, bft_nl_set_opt(self->s.nl, bad[i], 1, NULL))
			TH_LOG("set option %u", bad[i]);
		EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl),
					 "unknown", "option", "no such"));
		EXPECT_EQ(-ENOENT, bft_nl_get_opt(self->s.nl, bad[i], &o))
			TH_LOG("get option %u", bad[i]);
		EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl),
					 "unknown", "option", "no such"));
	}
}

TEST_F(options, set_overwrite_is_not_supported)
{
	EXPECT_EQ(-EOPNOTSUPP,
		  bft_nl_set_opt(self->s.nl, BFT_OPT_OVERWRITE, 1, NULL));
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl),
				 "support", "overwrite"));
}

/* The spinner, slowly: these tests only need it traced. */
static const char *const slow_spin[] = { "-d", "500", NULL };

static void expect_idle_only_busy(struct __test_metadata *_metadata,
				  struct bst_session *s)
{
	int checked = 0;

	for (uint32_t id = 1; id <= BFT_OPT_MAX; id++) {
		struct bft_nl_opt o = s->opts[id], back;
		uint64_t v;

		if (!s->have_opt[id] || !(o.flags & BFT_OPTF_IDLE_ONLY) ||
		    !other_value(&o, &v))
			continue;
		EXPECT_EQ(-EBUSY, bft_nl_set_opt(s->nl, id, v, NULL))
			TH_LOG("%s = %llu", bft_opt_name(id), (unsigned long long)v);
		EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(s->nl), "busy", "while",
					 "attached", "tracing", "idle"));
		ASSERT_EQ(0, bft_nl_get_opt(s->nl, id, &back));
		EXPECT_EQ(o.value, back.value);
		checked++;
	}
	ASSERT_LT(0, checked) TH_LOG("no option is flagged BFT_OPTF_IDLE_ONLY");
}

TEST_F(options, set_idle_only_option_busy_while_tracing)
{
	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, slow_spin, 7, true));
	expect_idle_only_busy(_metadata, &self->s);
}

TEST_F(options, set_idle_only_option_busy_while_probes_attached)
{
	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, slow_spin, 7, false));
	expect_idle_only_busy(_metadata, &self->s);
}

TEST_F(options, set_live_option_allowed_while_tracing)
{
	int checked = 0;

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, slow_spin, 7, true));
	for (uint32_t id = 1; id <= BFT_OPT_MAX; id++) {
		struct bft_nl_opt o = self->s.opts[id], back;
		uint64_t v;

		if (!self->s.have_opt[id] || id == BFT_OPT_OVERWRITE ||
		    (o.flags & BFT_OPTF_IDLE_ONLY) || !other_value(&o, &v))
			continue;
		EXPECT_EQ(0, bft_nl_set_opt(self->s.nl, id, v, NULL))
			TH_LOG("%s: %s", bft_opt_name(id), bft_nl_errmsg(self->s.nl));
		ASSERT_EQ(0, bft_nl_get_opt(self->s.nl, id, &back));
		EXPECT_EQ(v, back.value) TH_LOG("%s", bft_opt_name(id));
		checked++;
	}
	if (!checked)
		SKIP(return, "every option is idle-only");
}

TEST_F(options, set_needs_admin)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct bft_nl *nl;
		struct bft_nl_opt o;
		uint64_t v;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		if (bft_nl_open(&nl, NULL, 0))
			_exit(11);
		if (bft_nl_get_opt(nl, BFT_OPT_FLUSH_MS, &o) || !other_value(&o, &v))
			_exit(12);
		_exit(bft_nl_set_opt(nl, BFT_OPT_FLUSH_MS, v, NULL) == -EPERM ? 0 : 13);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child step %d (13: set_opt as nobody was not -EPERM)",
		       WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
