// SPDX-License-Identifier: GPL-2.0
/*
 * Dropping swap cache without writing (swapcache_drop.h): the steps, and each way a drop
 * stops, on simulated cgroup counters.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "swapcache_drop.h"

#define MIB (1ULL << 20)

/* Steps of at most @step, never past the target, never beyond the budget: then done. */
static void test_steps_to_target(void **state)
{
	struct pt_drop d;
	uint64_t sc = 20 * MIB, cur = 100 * MIB, want;
	int steps = 0;

	(void)state;
	pt_drop_init(&d, 9 * MIB, 64 * MIB, 4 * MIB, 50 * MIB);
	while ((want = pt_drop_next(&d, sc, 50 * MIB))) {
		assert_true(want <= 4 * MIB);
		assert_true(sc - want >= 9 * MIB);
		sc -= want;	/* the reclaim took swap cache only */
		pt_drop_stepped(&d, want, cur, cur - want);
		cur -= want;
		steps++;
	}
	assert_int_equal(d.why, PT_DROP_DONE);
	assert_true(sc <= 9 * MIB + PT_DROP_CLOSE);
	assert_int_equal(d.freed, 100 * MIB - cur);
	assert_int_equal(steps, 3);	/* 20 -> 16 -> 12 -> 9... within a MiB of 9 after 3 */
	/* Over: asked again, nothing. */
	assert_int_equal(pt_drop_next(&d, sc, 50 * MIB), 0);
}

/*
 * A step after which the cgroup holds more swap wrote memory that was not on swap: the
 * drop stops there, having written one step's worth at most. Swap that shrinks (pages
 * swapped back in gave up their slots) or grows by less than the slack does not stop it.
 */
static void test_stops_when_a_step_writes(void **state)
{
	struct pt_drop d;
	uint64_t swap = 50 * MIB;

	(void)state;
	pt_drop_init(&d, 0, 64 * MIB, 2 * MIB, swap);
	assert_int_equal(pt_drop_next(&d, 30 * MIB, swap), 2 * MIB);
	pt_drop_stepped(&d, 2 * MIB, 80 * MIB, 78 * MIB);
	swap -= 3 * MIB;	/* its timers swapped pages in meanwhile */
	assert_int_equal(pt_drop_next(&d, 28 * MIB, swap), 2 * MIB);
	pt_drop_stepped(&d, 2 * MIB, 78 * MIB, 76 * MIB);
	swap += PT_DROP_WRITE_SLACK;	/* a cluster's worth: not a write */
	assert_int_equal(pt_drop_next(&d, 26 * MIB, swap), 2 * MIB);
	pt_drop_stepped(&d, 2 * MIB, 76 * MIB, 74 * MIB);
	swap += 2 * MIB;	/* the reclaim wrote mapped memory */
	assert_int_equal(pt_drop_next(&d, 26 * MIB, swap), 0);
	assert_int_equal(d.why, PT_DROP_WROTE);
	assert_int_equal(d.freed, 6 * MIB);
}

/*
 * Steps that each write a little (a swap fence's 64 KiB, under the slack) stop the drop
 * once they add up past PT_DROP_WRITE_TOTAL (a drop with little to gain); swap given back
 * meanwhile does not offset it.
 */
static void test_stops_when_small_writes_add_up(void **state)
{
	struct pt_drop d;
	uint64_t swap = 170 * MIB, cur = 80 * MIB;
	int steps = 0;

	(void)state;
	pt_drop_init(&d, 0, 64 * MIB, 2 * MIB, swap);
	/* 8 MiB to gain: its 32nd is below the floor, PT_DROP_WRITE_TOTAL. */
	while (pt_drop_next(&d, 8 * MIB, swap)) {
		pt_drop_stepped(&d, 2 * MIB, cur, cur - 128 * 1024);
		cur -= 128 * 1024;
		swap += 64 * 1024;
		if (++steps == 2)
			swap -= 1 * MIB;	/* its faults gave slots back */
	}
	assert_int_equal(d.why, PT_DROP_WROTE);
	/* 512 KiB is 8 steps' writes; one more passes it; the second step's counts nothing. */
	assert_int_equal(steps, PT_DROP_WRITE_TOTAL / (64 * 1024) + 2);
	assert_int_equal(d.swap_grown, PT_DROP_WRITE_TOTAL + 64 * 1024);
}

/*
 * An active container's drop with much to gain may write a share of it: redis's unused
 * prefetch (60 MiB) behind a band of pages its wake mapped, which each fenced step gets
 * through a few dozen of, writing 64 KiB. The share is bounded both ways.
 */
static void test_write_total_follows_the_gain(void **state)
{
	struct pt_drop d;
	uint64_t swap = 100 * MIB, cur = 80 * MIB, sc = 64 * MIB;
	int steps = 0, band = 0;

	(void)state;
	assert_int_equal(pt_drop_write_total(0), PT_DROP_WRITE_TOTAL);
	assert_int_equal(pt_drop_write_total(64 * MIB), 2 * MIB);
	assert_int_equal(pt_drop_write_total(1ULL << 40), PT_DROP_WRITE_TOTAL_MAX);
	/* Not asked for (an idle container's drop, the cold path's): the floor. */
	pt_drop_init(&d, 2 * MIB, 64 * MIB, 2 * MIB, swap);
	assert_int_equal(pt_drop_next(&d, sc, swap), 2 * MIB);
	assert_int_equal(d.write_total, PT_DROP_WRITE_TOTAL);
	pt_drop_init(&d, 2 * MIB, 64 * MIB, 2 * MIB, swap);
	pt_drop_writes_follow_gain(&d);
	while (pt_drop_next(&d, sc, swap)) {
		if (++band <= 20) {	/* the band: 64 KiB written, 64 KiB freed */
			pt_drop_stepped(&d, 2 * MIB, cur, cur - 64 * 1024);
			cur -= 64 * 1024;
			swap += 64 * 1024;
		} else {		/* past it: the stray swap cache, nothing written */
			pt_drop_stepped(&d, 2 * MIB, cur, cur - 2 * MIB);
			cur -= 2 * MIB;
			sc -= 2 * MIB;
		}
		steps++;
	}
	/* 20 steps of band (1.25 MiB written) were allowed; then down to the target. */
	assert_int_equal(d.why, PT_DROP_DONE);
	assert_int_equal(d.swap_grown, 20 * 64 * 1024);
	assert_true(sc <= 2 * MIB + PT_DROP_CLOSE);
	assert_int_equal(steps, 20 + 31);
}

/*
 * The budget counts what was freed, not asked: steps that meet pages in use free little and
 * do not spend it; asking goes on up to PT_DROP_ASK_FACTOR times the budget.
 */
static void test_budget_counts_freed(void **state)
{
	struct pt_drop d;
	uint64_t cur = 90 * MIB;
	int steps = 0;

	(void)state;
	pt_drop_init(&d, 0, 5 * MIB, 2 * MIB, 0);
	while (pt_drop_next(&d, 40 * MIB, 0)) {
		pt_drop_stepped(&d, 2 * MIB, cur, cur - 64 * 1024);
		cur -= 64 * 1024;
		steps++;
	}
	assert_int_equal(d.why, PT_DROP_BUDGET);
	assert_int_equal(steps, PT_DROP_ASK_FACTOR * 5 / 2);
	assert_int_equal(d.asked, 10 * MIB);
}

/* Without swap accounting (no memory.swap.current) nothing can be judged a write. */
static void test_no_swap_accounting(void **state)
{
	struct pt_drop d;

	(void)state;
	pt_drop_init(&d, 0, 64 * MIB, 8 * MIB, UINT64_MAX);
	assert_int_equal(pt_drop_next(&d, 16 * MIB, UINT64_MAX), 8 * MIB);
	pt_drop_stepped(&d, 8 * MIB, 40 * MIB, 32 * MIB);
	assert_int_equal(pt_drop_next(&d, 8 * MIB, UINT64_MAX), 8 * MIB);
	assert_int_equal(d.why, PT_DROP_GOING);
}

/* The budget bounds what is asked in all: an active container loses no more than that. */
static void test_budget(void **state)
{
	struct pt_drop d;

	(void)state;
	pt_drop_init(&d, 0, 5 * MIB, 2 * MIB, 0);
	assert_int_equal(pt_drop_next(&d, 40 * MIB, 0), 2 * MIB);
	pt_drop_stepped(&d, 2 * MIB, 90 * MIB, 88 * MIB);
	assert_int_equal(pt_drop_next(&d, 40 * MIB, 0), 2 * MIB);	/* file cache went */
	pt_drop_stepped(&d, 2 * MIB, 88 * MIB, 86 * MIB);
	assert_int_equal(pt_drop_next(&d, 40 * MIB, 0), 1 * MIB);	/* what is left of it */
	pt_drop_stepped(&d, 1 * MIB, 86 * MIB, 85 * MIB);
	assert_int_equal(pt_drop_next(&d, 40 * MIB, 0), 0);
	assert_int_equal(d.why, PT_DROP_BUDGET);
}

/* Steps that free nothing (write-back in flight, or pages in use) end it after a few. */
static void test_stuck(void **state)
{
	struct pt_drop d;
	int steps = 0;

	(void)state;
	pt_drop_init(&d, 0, 1ULL << 40, 4 * MIB, 0);
	while (pt_drop_next(&d, 40 * MIB, 0)) {
		pt_drop_stepped(&d, 4 * MIB, 90 * MIB, 90 * MIB);
		steps++;
	}
	assert_int_equal(d.why, PT_DROP_STUCK);
	assert_int_equal(steps, PT_DROP_MAX_STUCK);
	/* One that frees resets the count. */
	pt_drop_init(&d, 0, 1ULL << 40, 4 * MIB, 0);
	for (int i = 0; i < PT_DROP_MAX_STUCK - 1; i++) {
		assert_true(pt_drop_next(&d, 40 * MIB, 0) > 0);
		pt_drop_stepped(&d, 4 * MIB, 90 * MIB, 90 * MIB);
	}
	assert_true(pt_drop_next(&d, 40 * MIB, 0) > 0);
	pt_drop_stepped(&d, 4 * MIB, 90 * MIB, 89 * MIB);
	assert_true(pt_drop_next(&d, 40 * MIB, 0) > 0);
	assert_int_equal(d.why, PT_DROP_GOING);
	assert_non_null(pt_drop_stop_name(PT_DROP_WROTE));
}

/* Short of the target with less than a MiB freed: nothing gained. Done, or freed: gained. */
static void test_gained_nothing(void **state)
{
	(void)state;
	assert_true(pt_drop_gained_nothing(PT_DROP_BUDGET, 64 * 1024));
	assert_true(pt_drop_gained_nothing(PT_DROP_STUCK, 0));
	assert_true(pt_drop_gained_nothing(PT_DROP_STEPS, 512 * 1024));
	assert_false(pt_drop_gained_nothing(PT_DROP_BUDGET, 4 * MIB));
	assert_false(pt_drop_gained_nothing(PT_DROP_DONE, 0));
	assert_false(pt_drop_gained_nothing(PT_DROP_WROTE, 0));	/* held for its write */
	assert_false(pt_drop_gained_nothing(PT_DROP_GOING, 0));	/* never ran */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steps_to_target),
		cmocka_unit_test(test_stops_when_a_step_writes),
		cmocka_unit_test(test_stops_when_small_writes_add_up),
		cmocka_unit_test(test_write_total_follows_the_gain),
		cmocka_unit_test(test_budget_counts_freed),
		cmocka_unit_test(test_no_swap_accounting),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_stuck),
		cmocka_unit_test(test_gained_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
