// SPDX-License-Identifier: GPL-2.0
/*
 * The mode commands: suspend, pause, stop.  The spinner counts its returned
 * calls in a shared page, so the test knows how many calls happened in each
 * window between two commands and can hold the recorded entries to those
 * windows: nothing recorded while suspended, nothing lost across a pause,
 * nothing recorded after stop, and the target running on afterwards.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "kselftest_harness.h"
#include "model/bft_calltree.h"
#include "bft_selftest.h"

#define SPIN_ID 42

struct snap {
	uint64_t c[SPIN_MAX_THREADS];
	uint64_t t_ns;
};

static void take(const struct bst_proc *p, struct snap *s)
{
	s->t_ns = bst_now_ns();
	for (int i = 0; i < SPIN_MAX_THREADS; i++)
		s->c[i] = __atomic_load_n(&p->shm->calls[i], __ATOMIC_ACQUIRE);
}

/* Index of tid in the spinner's page, or -1. */
static int spin_index(const struct bst_proc *p, uint32_t tid)
{
	for (uint32_t i = 0; i < p->shm->nr_threads && i < SPIN_MAX_THREADS; i++) {
		if ((uint32_t)p->shm->tids[i] == tid)
			return (int)i;
	}
	return -1;
}

static uint64_t sum_cpus(const struct bft_nl_status *st, size_t field)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < st->nr_cpus; i++)
		sum += *(const uint64_t *)((const char *)&st->cpus[i] + field);
	return sum;
}

#define SUM(st, field) sum_cpus(st, offsetof(struct bft_nl_cpu_stats, field))

FIXTURE(control) {
	struct bst_session s;
	struct bst_proc target;
	struct bst_trace t;
	struct bft_nl_status st0;	/* before start: counters are cumulative */
	struct bft_nl_status st;
	struct bft_nl *ev;
};

FIXTURE_SETUP(control)
{
	ASSERT_EQ(0, bst_session_open(&self->s));
}

FIXTURE_TEARDOWN(control)
{
	bst_session_close(&self->s);
	bst_proc_kill(&self->target);
	bst_trace_free(&self->t);
	bft_nl_status_free(&self->st0);
	bft_nl_status_free(&self->st);
	if (self->ev)
		bft_nl_close(self->ev);
}

/*
 * Entries recorded for one thread in [from, to) of stream time.  The tests
 * hold them to the calls the spinner counted in the window: at least those
 * that completed between snapshots taken inside it, less one that may have
 * been entered before it; at most those counted between snapshots taken
 * outside it, plus one still in flight.
 */
static size_t enters_between(const struct bst_thread *th, uint64_t from,
			     uint64_t to)
{
	size_t n = 0;

	for (size_t i = 0; i < th->n; i++) {
		if (th->ev[i].kind == BST_ENTER && th->ev[i].time_ns >= from &&
		    th->ev[i].time_ns < to)
			n++;
	}
	return n;
}

TEST_F_TIMEOUT(control, suspend_marks_data_break_and_records_nothing, 60)
{
	static const char *const args[] = { "-d", "1000", NULL };
	struct snap start0, start1, susp0, susp1, uns0, uns1, stop0, stop1;
	const struct bst_thread *th;
	uint64_t res, break_time = 0;
	size_t breaks = 0, pre, post, voids = 0;
	uint8_t mode;

	res = self->s.opts[BFT_OPT_TIME_RES_NS].value;
	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, args, SPIN_ID,
					false));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->st0));
	take(&self->target, &start0);
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
	take(&self->target, &start1);
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 50, 20000));

	take(&self->target, &susp0);
	ASSERT_EQ(0, bft_nl_mode_cmd(self->s.nl, BFT_CMD_SUSPEND, &mode));
	take(&self->target, &susp1);
	EXPECT_EQ(BFT_MODE_SUSPENDED, mode);
	/* The target keeps running while suspended; none of it is recorded. */
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 100, 20000));
	take(&self->target, &uns0);
	ASSERT_EQ(0, bft_nl_mode_cmd(self->s.nl, BFT_CMD_UNSUSPEND, &mode));
	take(&self->target, &uns1);
	EXPECT_EQ(BFT_MODE_TRACING, mode);
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 50, 20000));

	take(&self->target, &stop0);
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	take(&self->target, &stop1);
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->st));
	ASSERT_EQ(0, bst_collect(&self->s, 300, 10000, &self->t))
		TH_LOG("%s", self->t.err);

	/* Hits while suspended are counted as such, not as lost. */
	EXPECT_LE(uns0.c[0] - susp1.c[0],
		  SUM(&self->st, suspended) - SUM(&self->st0, suspended))
		TH_LOG("calls while suspended %llu",
		       (unsigned long long)(uns0.c[0] - susp1.c[0]));
	EXPECT_EQ(SUM(&self->st0, lost), SUM(&self->st, lost));

	/* One BREAK(SUSPEND) per CPU, stamped within the suspend command. */
	for (size_t i = 0; i < self->t.nmarks; i++) {
		const struct bst_mark *mk = &self->t.marks[i];

		EXPECT_EQ(BFT_REC_BREAK, mk->kind);
		if (mk->kind != BFT_REC_BREAK || mk->value != BFT_BREAK_SUSPEND)
			continue;
		breaks++;
		EXPECT_LE(susp0.t_ns - res, mk->time_ns) TH_LOG("cpu %u", mk->cpu);
		EXPECT_GE(susp1.t_ns, mk->time_ns) TH_LOG("cpu %u", mk->cpu);
		if (mk->time_ns > break_time)
			break_time = mk->time_ns;
	}
	EXPECT_EQ(self->s.caps.nr_cpus, breaks);
	for (uint32_t c = 0; c < self->t.nr_cpus; c++) {
		EXPECT_LE(1, self->t.cpu[c].breaks) TH_LOG("cpu %u", c);
	}

	th = bst_trace_thread(&self->t, (uint32_t)self->target.pid,
			      (uint32_t)self->target.pid);
	ASSERT_NE(NULL, th);
	/* Nothing recorded between the suspend and the unsuspend commands
	 * (stream times are rounded down by less than one unit). */
	for (size_t i = 0; i < th->n; i++) {
		bool inside = th->ev[i].time_ns >= susp1.t_ns &&
			      th->ev[i].time_ns + res < uns0.t_ns;

		EXPECT_FALSE(inside)
			TH_LOG("event %zu at %llu, suspended %llu..%llu", i,
			       (unsigned long long)th->ev[i].time_ns,
			       (unsigned long long)susp1.t_ns,
			       (unsigned long long)uns0.t_ns);
		if (inside)
			break;
	}
	/* Before: every call between start and suspend, and only those. */
	pre = enters_between(th, 0, susp1.t_ns);
	EXPECT_LE(susp0.c[0] - start1.c[0] - 1, pre);
	EXPECT_GE(susp1.c[0] - start0.c[0] + 1, pre);
	/* After: every call between unsuspend and stop, and only those. */
	post = enters_between(th, uns0.t_ns - res, UINT64_MAX);
	EXPECT_LE(stop0.c[0] - uns1.c[0] - 1, post);
	EXPECT_GE(stop1.c[0] - uns0.c[0] + 1, post);

	/* The rebuilt tree knows its stack is void at the break. */
	for (size_t i = 0; i < th->ncalls; i++)
		voids += th->calls[i].kind == BFT_CALL_VOID &&
			 th->calls[i].time_ns <= break_time + res;
	EXPECT_LE(1, voids);
}

TEST_F_TIMEOUT(control, pause_stops_every_thread_and_loses_nothing, 60)
{
	static const char *const args[] = { "-t", "4", "-d", "2000", NULL };
	struct snap start0, start1, paused_a, paused_b, stop0, stop1;
	char states[64];
	size_t nst;
	uint8_t mode;

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, args, SPIN_ID,
					false));
	ASSERT_EQ(4, self->target.shm->nr_threads);
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->st0));
	take(&self->target, &start0);
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
	take(&self->target, &start1);
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 100, 20000));

	ASSERT_EQ(0, bft_nl_mode_cmd(self->s.nl, BFT_CMD_PAUSE, &mode));
	EXPECT_EQ(BFT_MODE_PAUSED, mode);
	EXPECT_EQ(0, bst_wait_all_threads(self->target.pid, 'T', 5000));
	ASSERT_EQ(0, bst_thread_states(self->target.pid, states, sizeof(states),
				       &nst));
	EXPECT_EQ(4, nst);
	for (size_t i = 0; i < nst && i < sizeof(states); i++) {
		EXPECT_EQ('T', states[i]) TH_LOG("thread %zu state %c", i, states[i]);
	}
	/* Stopped means no progress. */
	take(&self->target, &paused_a);
	bst_sleep_ms(300);
	take(&self->target, &paused_b);
	EXPECT_EQ(0, memcmp(paused_a.c, paused_b.c, sizeof(paused_a.c)))
		TH_LOG("the target ran while paused");

	ASSERT_EQ(0, bft_nl_mode_cmd(self->s.nl, BFT_CMD_UNPAUSE, &mode));
	EXPECT_EQ(BFT_MODE_TRACING, mode);
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 100, 20000))
		TH_LOG("no progress after unpause");
	ASSERT_EQ(0, bst_thread_states(self->target.pid, states, sizeof(states),
				       &nst));
	for (size_t i = 0; i < nst && i < sizeof(states); i++) {
		EXPECT_NE('T', states[i]) TH_LOG("thread %zu still stopped", i);
	}

	take(&self->target, &stop0);
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	take(&self->target, &stop1);
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->st));
	ASSERT_EQ(0, bst_collect(&self->s, 300, 10000, &self->t))
		TH_LOG("%s", self->t.err);

	/* Nothing lost anywhere: produced == written, and all of it read. */
	ASSERT_EQ(self->st0.nr_cpus, self->st.nr_cpus);
	for (uint32_t i = 0; i < self->st.nr_cpus; i++) {
		const struct bft_nl_cpu_stats *c = &self->st.cpus[i];
		const struct bft_nl_cpu_stats *c0 = &self->st0.cpus[i];

		EXPECT_EQ(c0->lost, c->lost) TH_LOG("cpu %u", c->cpu);
		EXPECT_EQ(c->produced - c0->produced, c->written - c0->written)
			TH_LOG("cpu %u", c->cpu);
		EXPECT_EQ(c->written - c0->written, self->t.cpu[c->cpu].events)
			TH_LOG("cpu %u", c->cpu);
	}
	/* A call entered before start returns after it: one orphan exit per
	 * thread at most; an exit that closes no frame otherwise is a bug. */
	EXPECT_GE(self->target.shm->nr_threads, self->t.orphans);
	EXPECT_EQ(0, self->t.unbalanced);
	for (size_t i = 0; i < self->t.nmarks; i++) {
		EXPECT_TRUE(self->t.marks[i].kind == BFT_REC_BREAK &&
			    self->t.marks[i].value == BFT_BREAK_STOP)
			TH_LOG("a %s on cpu %u",
			       bft_rec_kind_name(self->t.marks[i].kind),
			       self->t.marks[i].cpu);
	}

	/* Each thread: every call in its window, entries and exits paired. */
	EXPECT_EQ(4, self->t.nth);
	for (size_t i = 0; i < self->t.nth; i++) {
		const struct bst_thread *th = &self->t.th[i];
		int k = spin_index(&self->target, th->tid);
		size_t enters = 0, exits = 0;

		ASSERT_LE(0, k) TH_LOG("tid %u is no spinner thread", th->tid);
		for (size_t j = 0; j < th->n; j++) {
			enters += th->ev[j].kind == BST_ENTER;
			exits += th->ev[j].kind == BST_EXIT;
			EXPECT_NE(BST_NORET, th->ev[j].kind);
		}
		EXPECT_LE(stop0.c[k] - start1.c[k] - 1, enters) TH_LOG("thread %d", k);
		EXPECT_GE(stop1.c[k] - start0.c[k] + 1, enters) TH_LOG("thread %d", k);
		/* A call in flight at start or at stop may miss one side. */
		EXPECT_GE(1, enters > exits ? enters - exits : exits - enters)
			TH_LOG("thread %d: %zu entries, %zu exits", k, enters, exits);
	}
}

TEST_F_TIMEOUT(control, stop_continues_a_paused_target, 60)
{
	static const char *const args[] = { "-t", "2", "-d", "2000", NULL };

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, args, SPIN_ID,
					true));
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 20, 20000));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_PAUSE));
	ASSERT_EQ(0, bst_wait_all_threads(self->target.pid, 'T', 5000));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	EXPECT_EQ(0, bst_spin_wait_calls(&self->target, 50, 20000))
		TH_LOG("the target stays stopped after stop");
}

TEST_F_TIMEOUT(control, stop_detaches_everything_and_target_keeps_running, 60)
{
	static const char *const args[] = { "-d", "1000", NULL };
	struct bft_nl_status later;
	size_t live, gone;
	uint8_t mode;

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, args, SPIN_ID,
					true));
	ASSERT_EQ(0, bst_spin_wait_calls(&self->target, 50, 20000));
	ASSERT_EQ(0, bst_count_methods(&self->s, 0, &live, &gone));
	ASSERT_EQ(1, live);
	ASSERT_EQ(0, gone);

	ASSERT_EQ(0, bft_nl_mode_cmd(self->s.nl, BFT_CMD_STOP, &mode));
	EXPECT_EQ(BFT_MODE_SHUTTING_DOWN, mode);
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &self->st));
	EXPECT_EQ(BFT_MODE_SHUTTING_DOWN, self->st.mode);
	EXPECT_EQ(0, self->st.nr_probes);
	EXPECT_EQ(0, self->st.nr_targets);
	/* the collector may still need the name while it drains */
	ASSERT_EQ(0, bst_count_methods(&self->s, 0, &live, &gone));
	EXPECT_EQ(0, live);
	EXPECT_EQ(1, gone);
	/* Nothing pending after stop. */
	for (uint32_t i = 0; i < self->st.nr_cpus; i++) {
		EXPECT_EQ(self->st.cpus[i].produced,
			  self->st.cpus[i].written + self->st.cpus[i].lost)
			TH_LOG("cpu %u", self->st.cpus[i].cpu);
	}

	/* The target runs on, and its calls are no longer counted. */
	EXPECT_TRUE(bst_proc_alive(&self->target));
	EXPECT_EQ(0, bst_spin_wait_calls(&self->target, 200, 20000));
	EXPECT_TRUE(bst_proc_alive(&self->target));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &later));
	EXPECT_EQ(SUM(&self->st, produced), SUM(&later, produced));
	EXPECT_EQ(SUM(&self->st, suspended), SUM(&later, suspended));
	bft_nl_status_free(&later);
}

TEST_F_TIMEOUT(control, next_start_forgets_detached_methods, 60)
{
	static const char *const args[] = { "-d", "1000", NULL };
	size_t live, gone;

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, args, SPIN_ID,
					true));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
	ASSERT_EQ(0, bst_count_methods(&self->s, 0, &live, &gone));
	ASSERT_EQ(1, gone);
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_START));
	ASSERT_EQ(0, bst_count_methods(&self->s, 0, &live, &gone));
	EXPECT_EQ(0, live);
	EXPECT_EQ(0, gone);
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_STOP));
}

TEST_F(control, mode_rejects_senseless_transition)
{
	static const char *const args[] = { "-d", "2000", NULL };

	/* Not tracing yet: nothing to pause, suspend or resume. */
	EXPECT_EQ(-EINVAL, bft_nl_mode_cmd(self->s.nl, BFT_CMD_UNPAUSE, NULL));
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "initializing",
				 "shutting", "mode"));
	EXPECT_EQ(-EINVAL, bft_nl_mode_cmd(self->s.nl, BFT_CMD_SUSPEND, NULL));
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "initializing",
				 "shutting", "mode"));

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, args, SPIN_ID,
					true));
	EXPECT_EQ(-EINVAL, bft_nl_mode_cmd(self->s.nl, BFT_CMD_UNPAUSE, NULL));
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "tracing"));
	EXPECT_EQ(-EINVAL, bft_nl_mode_cmd(self->s.nl, BFT_CMD_UNSUSPEND, NULL));
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "tracing"));

	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_SUSPEND));
	EXPECT_EQ(-EINVAL, bft_nl_mode_cmd(self->s.nl, BFT_CMD_PAUSE, NULL));
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "suspended"));
	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_UNSUSPEND));

	ASSERT_EQ(0, bst_mode(&self->s, BFT_CMD_PAUSE));
	EXPECT_EQ(-EINVAL, bft_nl_mode_cmd(self->s.nl, BFT_CMD_SUSPEND, NULL));
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "paused"));
	EXPECT_EQ(-EINVAL, bft_nl_mode_cmd(self->s.nl, BFT_CMD_START, NULL));
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "paused"));
}

/* Every mode change is multicast as BFT_EV_MODE, in order. */
TEST_F_TIMEOUT(control, mode_changes_are_announced, 60)
{
	static const char *const args[] = { "-d", "2000", NULL };
	static const struct { int cmd; uint8_t mode; } steps[] = {
		{ BFT_CMD_START, BFT_MODE_TRACING },
		{ BFT_CMD_SUSPEND, BFT_MODE_SUSPENDED },
		{ BFT_CMD_UNSUSPEND, BFT_MODE_TRACING },
		{ BFT_CMD_PAUSE, BFT_MODE_PAUSED },
		{ BFT_CMD_UNPAUSE, BFT_MODE_TRACING },
		{ BFT_CMD_STOP, BFT_MODE_SHUTTING_DOWN },
	};
	size_t got = 0;
	uint64_t deadline;

	ASSERT_EQ(0, bft_nl_open_events(&self->ev, NULL, 0));
	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, args, SPIN_ID,
					false));
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		ASSERT_EQ(0, bst_mode(&self->s, steps[i].cmd));
	}

	deadline = bst_now_ns() + 10000000000ull;
	while (got < ARRAY_SIZE(steps) && bst_now_ns() < deadline) {
		struct bft_nl_event e;
		int err = bft_nl_event_recv(self->ev, &e, 1000);

		if (err == -ETIMEDOUT)
			continue;
		ASSERT_EQ(0, err);
		if (e.type == BFT_EV_MODE) {
			EXPECT_EQ(steps[got].mode, e.mode)
				TH_LOG("mode event %zu: %s", got, bft_mode_name(e.mode));
			got++;
		}
		bft_nl_event_free(&e);
	}
	EXPECT_EQ(ARRAY_SIZE(steps), got);
}

/* Heartbeats come every interval, with the stats of every CPU. */
TEST_F_TIMEOUT(control, heartbeats_arrive_every_interval, 60)
{
	static const char *const args[] = { "-d", "2000", NULL };
	const struct bft_nl_opt *hb = &self->s.opts[BFT_OPT_HEARTBEAT_MS];
	uint64_t period = 200, t0, window_ms = 3000;
	unsigned int beats = 0;

	ASSERT_TRUE(self->s.have_opt[BFT_OPT_HEARTBEAT_MS]);
	if (period < hb->min)
		period = hb->min;
	ASSERT_GE(window_ms / 4, period) TH_LOG("heartbeat min %llu ms",
					       (unsigned long long)hb->min);
	ASSERT_EQ(0, bst_set_opt(&self->s, BFT_OPT_HEARTBEAT_MS, period));
	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, args, SPIN_ID,
					true));
	/* joined after the start: no heartbeat of the idle module queued */
	ASSERT_EQ(0, bft_nl_open_events(&self->ev, NULL, 0));
	t0 = bst_now_ns();
	while (bst_now_ns() - t0 < window_ms * 1000000ull) {
		struct bft_nl_event e;
		int err = bft_nl_event_recv(self->ev, &e, 100);

		if (err == -ETIMEDOUT)
			continue;
		ASSERT_EQ(0, err);
		if (e.type == BFT_EV_HEARTBEAT) {
			beats++;
			EXPECT_EQ(BFT_MODE_TRACING, e.mode);
			EXPECT_GE(1000, e.fill_permille);
			EXPECT_EQ(self->s.caps.nr_cpus, e.nr_cpus);
		}
		bft_nl_event_free(&e);
	}
	/* A third off either way: timers are late under an emulated CPU,
	 * never early by a whole period. */
	EXPECT_LE(window_ms / period * 2 / 3, beats)
		TH_LOG("%u heartbeats in %llu ms at %llu ms", beats,
		       (unsigned long long)window_ms, (unsigned long long)period);
	EXPECT_GE(window_ms / period + 1, beats);
}

TEST_HARNESS_MAIN
