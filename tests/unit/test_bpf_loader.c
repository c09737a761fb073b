// SPDX-License-Identifier: GPL-2.0
/* The BPF programs' rate limits in jiffies (bpf_loader.h): the loader's part, pure. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <time.h>
#include <cmocka.h>

#include "bpf_loader.h"

/* At least the interval asked for, and less than one tick more, for every usual HZ. */
static void test_interval_covers_the_interval(void **state)
{
	/* TICK_NSEC for HZ = 100, 250, 300, 1000: (NSEC_PER_SEC + HZ / 2) / HZ. */
	const uint64_t ticks[] = { 10000000, 4000000, 3333333, 1000000 };
	const uint64_t intervals[] = { 1, 999999, 1000000, 10000000, 100000000, 1000000000 };

	(void)state;
	for (size_t t = 0; t < sizeof(ticks) / sizeof(ticks[0]); t++)
		for (size_t i = 0; i < sizeof(intervals) / sizeof(intervals[0]); i++) {
			uint64_t j = pt_bpf_interval_jiffies(intervals[i], ticks[t]);

			assert_true(j * ticks[t] >= intervals[i]);
			assert_true((j - 1) * ticks[t] < intervals[i]);
		}
	assert_int_equal(pt_bpf_interval_jiffies(100000000, 4000000), 25);
	assert_int_equal(pt_bpf_interval_jiffies(100000000, 3333333), 31);
	assert_int_equal(pt_bpf_interval_jiffies(0, 4000000), 0);
}

/* A tick the loader could not learn is taken as HZ = 250's, as the programs' default. */
static void test_unknown_tick_is_hz_250(void **state)
{
	(void)state;
	assert_int_equal(pt_bpf_interval_jiffies(100000000, 0), 25);
}

/* Where the loader learns the tick: the coarse clock's resolution, a jiffy (1-10 ms). */
static void test_coarse_clock_resolution_is_a_tick(void **state)
{
	struct timespec res;

	(void)state;
	assert_int_equal(clock_getres(CLOCK_MONOTONIC_COARSE, &res), 0);
	assert_int_equal(res.tv_sec, 0);
	assert_true(res.tv_nsec >= 1000000 && res.tv_nsec <= 10000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval_covers_the_interval),
		cmocka_unit_test(test_unknown_tick_is_hz_250),
		cmocka_unit_test(test_coarse_clock_resolution_is_a_tick),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
