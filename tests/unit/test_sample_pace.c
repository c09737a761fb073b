// SPDX-License-Identifier: GPL-2.0
/* When a context's cgroup is sampled: every poll, or, quiet and covered by events, less. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "sample_pace.h"

/* One context as the manager keeps it: its pace, its events, when it is next due. */
struct sim {
	struct pt_sample_pace p;
	uint64_t signals;
	uint64_t due;
	bool cover;		/* every task wake is an event */
	bool quiet;		/* idle, nothing in flight */
	uint64_t period;	/* active: its steady pace (0: every poll) */
};

/* A poll at @t, as pt_manager_tick does it: whether it sampled the context. */
static bool poll_at(struct sim *s, uint64_t t)
{
	if (s->due > t && (s->cover || s->p.steady))
		return false;
	s->due = pt_sample_taken(&s->p, s->quiet, s->cover, s->signals,
				 s->period ? t + s->period : 0, t);
	return true;
}

/* An event of the context, as the manager counts it: due at the next poll unless steady. */
static void event_at(struct sim *s, uint64_t t)
{
	pt_sample_event(&s->p, s->signals++, t);
	if (!s->p.steady)
		s->due = 0;
}

static void test_without_events_every_poll(void **state)
{
	struct sim s = { .cover = false, .quiet = true };

	(void)state;
	for (uint64_t t = 1000; t < 60000 + PT_PACE_QUIET_GRACE_MS; t += 500)
		assert_true(poll_at(&s, t));
}

static void test_not_quiet_every_poll(void **state)
{
	struct sim s = { .cover = true, .quiet = false };

	(void)state;
	for (uint64_t t = 0; t < 60000; t += 500)
		assert_true(poll_at(&s, t));
}

static void test_quiet_after_its_grace_slows_down(void **state)
{
	struct sim s = { .cover = true, .quiet = true };
	uint64_t t = 100000, taken = 0, start = t;

	(void)state;
	/* Within the grace, every poll. */
	for (; t < start + PT_PACE_QUIET_GRACE_MS; t += 500)
		assert_true(poll_at(&s, t));
	/* Then one sample per PT_PACE_QUIET_MAX_MS, no more. */
	for (uint64_t end = t + 4 * PT_PACE_QUIET_MAX_MS; t < end; t += 500)
		taken += poll_at(&s, t);
	assert_true(taken >= 4 && taken <= 5);
	/* The quiet period's start is kept across samples. */
	assert_int_equal(s.p.quiet_since_ms, start);
}

/*
 * A thousand contexts of consecutive cgroup ids that went quiet in the same poll: their
 * safety samples come at most PT_PACE_QUIET_MAX_MS apart each, but spread over the polls,
 * not a thousand in one (without the spread, every one of them came due together).
 */
static void test_safety_samples_of_contexts_quiet_together_spread(void **state)
{
	enum { N = 1000, POLL = 500 };
	static struct sim s[N];
	unsigned int most = 0, polls = 0;
	uint64_t start = 100000, t;

	(void)state;
	for (int i = 0; i < N; i++) {
		s[i] = (struct sim){ .cover = true, .quiet = true };
		pt_sample_spread(&s[i].p, 4000 + i);
		assert_true(s[i].p.spread_ms < PT_PACE_QUIET_MAX_MS / 2);
	}
	for (t = start; t < start + PT_PACE_QUIET_GRACE_MS; t += POLL)
		for (int i = 0; i < N; i++)
			poll_at(&s[i], t);
	for (uint64_t end = t + 3 * PT_PACE_QUIET_MAX_MS; t < end; t += POLL) {
		unsigned int n = 0;

		for (int i = 0; i < N; i++) {
			uint64_t last = s[i].p.last_ms;

			if (!poll_at(&s[i], t))
				continue;
			/* The grace's last poll is the first that passes it by. */
			if (last >= start + PT_PACE_QUIET_GRACE_MS) {
				n++;
				assert_true(t - last <= PT_PACE_QUIET_MAX_MS);
				assert_true(t - last >= PT_PACE_QUIET_MAX_MS / 2);
			}
		}
		most = n > most ? n : most;
		polls++;
	}
	/* On average N / (0.75 MAX / POLL) = 2.2 a poll; a handful at most in any one. */
	assert_true(most <= 12);
	/* The same id, the same period. */
	{
		struct pt_sample_pace a = { 0 }, b = { 0 };

		pt_sample_spread(&a, 4242);
		pt_sample_spread(&b, 4242);
		assert_int_equal(a.spread_ms, b.spread_ms);
	}
}

/* The tiers' usage table: this poll's for a sample asked for, a recent one for safety. */
static void test_usage_table_age(void **state)
{
	(void)state;
	assert_false(pt_sample_usage_ok(0, 5000, true));	/* never read */
	assert_false(pt_sample_usage_ok(0, 5000, false));
	assert_true(pt_sample_usage_ok(5000, 5000, false));	/* this poll's */
	assert_false(pt_sample_usage_ok(4500, 5000, false));	/* the last poll's */
	assert_true(pt_sample_usage_ok(4500, 5000, true));
	assert_true(pt_sample_usage_ok(5000, 5000 + PT_PACE_USAGE_MAX_AGE_MS - 1, true));
	assert_false(pt_sample_usage_ok(5000, 5000 + PT_PACE_USAGE_MAX_AGE_MS, true));
}

/*
 * The first event while the polls pass a context by dates the end of its quiet: the tasks
 * slept until then. Not while it is sampled each poll, nor after a sample, nor from a
 * later event.
 */
static void test_quiet_until_the_first_event(void **state)
{
	struct sim s = { .cover = true, .quiet = true };
	uint64_t t = 1000;

	(void)state;
	poll_at(&s, t);
	event_at(&s, t + 400);
	assert_int_equal(pt_sample_quiet_until(&s.p), 0);	/* in its grace: each poll */
	for (t += 500; t <= 1000 + PT_PACE_QUIET_GRACE_MS + 500; t += 500)
		poll_at(&s, t);
	assert_false(poll_at(&s, t));				/* passed by now */
	event_at(&s, t + 100);
	assert_int_equal(pt_sample_quiet_until(&s.p), t + 100);
	event_at(&s, t + 300);					/* a second one */
	assert_int_equal(pt_sample_quiet_until(&s.p), t + 100);
	assert_true(poll_at(&s, t + 500));
	assert_int_equal(pt_sample_quiet_until(&s.p), 0);	/* sampled; followed each poll */
}

static void test_an_event_samples_at_once(void **state)
{
	struct sim s = { .cover = true, .quiet = true };
	uint64_t t = 1;

	(void)state;
	for (; t < 1 + PT_PACE_QUIET_GRACE_MS + 1000; t += 500)
		poll_at(&s, t);
	assert_false(poll_at(&s, t));
	event_at(&s, t + 100);					/* a wakeup, a packet, ... */
	assert_true(poll_at(&s, t + 500));
	/* What it woke for may go on running: every poll for a while, then no more. */
	for (uint64_t u = t + 1000; u < t + 500 + PT_PACE_FOLLOW_MS; u += 500)
		assert_true(poll_at(&s, u));
	t += 1000 + PT_PACE_FOLLOW_MS;
	poll_at(&s, t);						/* the follow's last */
	assert_false(poll_at(&s, t + 500));
	/* Not quiet any more (it woke, or work is in flight): every poll, grace anew. */
	event_at(&s, t + 600);
	s.quiet = false;
	assert_true(poll_at(&s, t + 1000));
	s.quiet = true;
	assert_true(poll_at(&s, t + 1500));
	assert_true(poll_at(&s, t + 2000));
	assert_int_equal(s.p.quiet_since_ms, t + 1500);
}

static void test_active_period(void **state)
{
	(void)state;
	/* The idle rule's own resolution: an eighth of its threshold, at most 2 s. */
	assert_int_equal(pt_sample_active_period(8000, 500), 1000);
	assert_int_equal(pt_sample_active_period(30000, 500), PT_PACE_ACTIVE_MAX_MS);
	/* Less than two polls apart is every poll: the tests' 2 s thresholds keep their pace. */
	assert_int_equal(pt_sample_active_period(2000, 200), 0);
	assert_int_equal(pt_sample_active_period(7999, 500), 0);
	assert_int_equal(pt_sample_active_period(0, 500), 0);
}

static void test_active_steady_paced_whatever_its_events(void **state)
{
	struct sim s = { .cover = true, .quiet = false, .period = 2000 };
	unsigned int taken = 0;

	(void)state;
	for (uint64_t t = 0; t < 60000; t += 500) {
		event_at(&s, t + 100);		/* its packets, faults, wakeups */
		taken += poll_at(&s, t + 500);
	}
	assert_int_equal(taken, 30);		/* every 2 s, not every 500 ms */
	/* Without events covering its wakes, the same: its pace is its own. */
	s.cover = false;
	assert_true(poll_at(&s, 62000));
	assert_false(poll_at(&s, 62500));
	assert_true(poll_at(&s, 64000));
	/* Gone idle (or anything in flight the caller reads each poll): the quiet rules. */
	s.cover = true;
	s.quiet = true;
	assert_true(poll_at(&s, 66000));
	assert_false(s.p.steady);
	assert_true(poll_at(&s, 66500));
	event_at(&s, 66600);
	assert_true(poll_at(&s, 67000));	/* an event samples a quiet one at once */
	/* Active again, its caller asking for each poll (a wake being restored): each poll. */
	s.quiet = false;
	s.period = 0;
	assert_true(poll_at(&s, 67500));
	assert_true(poll_at(&s, 68000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_without_events_every_poll),
		cmocka_unit_test(test_not_quiet_every_poll),
		cmocka_unit_test(test_quiet_after_its_grace_slows_down),
		cmocka_unit_test(test_an_event_samples_at_once),
		cmocka_unit_test(test_safety_samples_of_contexts_quiet_together_spread),
		cmocka_unit_test(test_usage_table_age),
		cmocka_unit_test(test_quiet_until_the_first_event),
		cmocka_unit_test(test_active_period),
		cmocka_unit_test(test_active_steady_paced_whatever_its_events),
	};

	return cmocka_run_group_tests_name("sample_pace", tests, NULL, NULL);
}
