// SPDX-License-Identifier: GPL-2.0
/* Range arithmetic: the idle offload's anonymous ranges minus the idle working set. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "ranges.h"

#define R(s, l) { .start = (s), .len = (l) }

static void test_normalize(void **state)
{
	struct pt_range r[] = { R(300, 50), R(100, 100), R(150, 100), R(250, 50), R(500, 0),
				R(600, 10) };
	size_t n;

	(void)state;
	n = pt_ranges_normalize(r, 6);
	assert_int_equal(n, 2);		/* overlapping and adjacent merged, empty dropped */
	assert_int_equal(r[0].start, 100);
	assert_int_equal(r[0].len, 250);
	assert_int_equal(r[1].start, 600);
	assert_int_equal(r[1].len, 10);
	assert_int_equal(pt_ranges_normalize(r, 0), 0);
}

static void test_subtract(void **state)
{
	const struct pt_range a[] = { R(0, 100), R(200, 100), R(400, 100) };
	const struct pt_range b[] = { R(50, 10), R(90, 150), R(300, 50), R(420, 10), R(450, 100) };
	struct pt_range *out;
	int n;

	(void)state;
	n = pt_ranges_subtract(a, 3, b, 5, &out);
	assert_int_equal(n, 5);
	assert_int_equal(out[0].start, 0);	/* [0,50) */
	assert_int_equal(out[0].len, 50);
	assert_int_equal(out[1].start, 60);	/* [60,90) */
	assert_int_equal(out[1].len, 30);
	assert_int_equal(out[2].start, 240);	/* [240,300) */
	assert_int_equal(out[2].len, 60);
	assert_int_equal(out[3].start, 400);	/* [400,420) */
	assert_int_equal(out[3].len, 20);
	assert_int_equal(out[4].start, 430);	/* [430,450) */
	assert_int_equal(out[4].len, 20);
	assert_int_equal(pt_ranges_bytes(out, (size_t)n), 180);
	free(out);

	/* Nothing to take away; everything taken away. */
	n = pt_ranges_subtract(a, 3, NULL, 0, &out);
	assert_int_equal(n, 3);
	free(out);
	{
		const struct pt_range all[] = { R(0, 1000) };

		assert_int_equal(pt_ranges_subtract(a, 3, all, 1, &out), 0);
		assert_null(out);
	}
	assert_int_equal(pt_ranges_subtract(NULL, 0, b, 5, &out), 0);
}

static void test_truncate(void **state)
{
	struct pt_range r[] = { R(0, 100), R(200, 100), R(400, 100) };

	(void)state;
	assert_int_equal(pt_ranges_truncate(r, 3, 1000), 3);
	assert_int_equal(pt_ranges_truncate(r, 3, 150), 2);
	assert_int_equal(r[1].len, 50);
	assert_int_equal(pt_ranges_truncate(r, 2, 100), 1);
	assert_int_equal(pt_ranges_truncate(r, 1, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_subtract),
		cmocka_unit_test(test_truncate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
