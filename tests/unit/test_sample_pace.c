// SPDX-License-Identifier: GPL-2.0
/* When a context's cgroup is sampled: every poll, or, quiet and covered by events, less. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "sample_pace.h"

static void test_without_events_every_poll(void **state)
{
	struct pt_sample_pace p = { 0 };

	(void)state;
	pt_sample_taken(&p, true, 0, 1000);
	for (uint64_t t = 1500; t < 60000; t += 500)
		assert_true(pt_sample_due(&p, false, 0, t));
}

static void test_not_quiet_every_poll(void **state)
{
	struct pt_sample_pace p = { 0 };

	(void)state;
	assert_true(pt_sample_due(&p, true, 0, 0));	/* never sampled */
	for (uint64_t t = 500; t < 60000; t += 500) {
		assert_true(pt_sample_due(&p, true, 0, t));
		pt_sample_taken(&p, false, 0, t);
	}
}

static void test_quiet_after_its_grace_slows_down(void **state)
{
	struct pt_sample_pace p = { 0 };
	uint64_t t = 100000, taken = 0, start;

	(void)state;
	pt_sample_taken(&p, true, 7, t);
	start = t;
	/* Within the grace, every poll. */
	for (t += 500; t < start + PT_PACE_QUIET_GRACE_MS; t += 500) {
		assert_true(pt_sample_due(&p, true, 7, t));
		pt_sample_taken(&p, true, 7, t);
	}
	/* Then one sample per PT_PACE_QUIET_MAX_MS, no more. */
	for (uint64_t end = t + 4 * PT_PACE_QUIET_MAX_MS; t < end; t += 500)
		if (pt_sample_due(&p, true, 7, t)) {
			pt_sample_taken(&p, true, 7, t);
			taken++;
		}
	assert_int_equal(taken, 4);
	/* The quiet period's start is kept across samples. */
	assert_int_equal(p.quiet_since_ms, start);
}

/*
 * The first event after skipped polls dates the end of the quiet: the tasks slept until
 * then. Not when no poll skipped the context (it was looked at each poll), nor after a
 * sample, nor from a later event.
 */
static void test_quiet_until_the_first_event(void **state)
{
	struct pt_sample_pace p = { 0 };

	(void)state;
	pt_sample_taken(&p, true, 7, 1000);
	pt_sample_event(&p, 7, 1400);
	assert_int_equal(pt_sample_quiet_until(&p), 0);	/* no poll skipped it */
	pt_sample_skipped(&p);
	assert_int_equal(pt_sample_quiet_until(&p), 1400);
	pt_sample_event(&p, 8, 1900);				/* a second one */
	assert_int_equal(pt_sample_quiet_until(&p), 1400);
	pt_sample_taken(&p, true, 9, 2000);
	assert_int_equal(pt_sample_quiet_until(&p), 0);
	pt_sample_skipped(&p);
	assert_int_equal(pt_sample_quiet_until(&p), 0);	/* no event since */
}

static void test_an_event_samples_at_once(void **state)
{
	struct pt_sample_pace p = { 0 };
	uint64_t t = 1;

	(void)state;
	pt_sample_taken(&p, true, 7, t);
	t += PT_PACE_QUIET_GRACE_MS + 1000;
	pt_sample_taken(&p, true, 7, t);
	assert_false(pt_sample_due(&p, true, 7, t + 500));
	assert_true(pt_sample_due(&p, true, 8, t + 500));	/* a wakeup, a packet, ... */
	pt_sample_taken(&p, true, 8, t + 500);
	/* What it woke for may go on running: every poll for a while, then no more. */
	for (uint64_t u = t + 1000; u < t + 500 + PT_PACE_FOLLOW_MS; u += 500) {
		assert_true(pt_sample_due(&p, true, 8, u));
		pt_sample_taken(&p, true, 8, u);
	}
	t += 500 + PT_PACE_FOLLOW_MS;
	assert_false(pt_sample_due(&p, true, 8, t));
	/* Not quiet any more (it woke, or work is in flight): every poll, grace anew. */
	pt_sample_taken(&p, false, 8, t);
	assert_true(pt_sample_due(&p, true, 8, t + 500));
	pt_sample_taken(&p, true, 8, t + 500);
	assert_true(pt_sample_due(&p, true, 8, t + 1000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_without_events_every_poll),
		cmocka_unit_test(test_not_quiet_every_poll),
		cmocka_unit_test(test_quiet_after_its_grace_slows_down),
		cmocka_unit_test(test_an_event_samples_at_once),
		cmocka_unit_test(test_quiet_until_the_first_event),
	};

	return cmocka_run_group_tests_name("sample_pace", tests, NULL, NULL);
}
