// SPDX-License-Identifier: GPL-2.0
/*
 * The tiers' fill (tier_fill.h): seg_stat parsing, the levels and their hysteresis, the
 * sysfs reader over a temporary /sys/block, and what the manager holds back at each level.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "fixture.h"
#include "kmod_client.h"
#include "tier_fill.h"

/* A seg_stat line: 1 MiB segments, @segs of them, @free free, @live live pages. */
static void seg_stat(char *buf, size_t size, uint64_t segs, uint64_t free, uint64_t nospace,
		     uint64_t live)
{
	snprintf(buf, size, "%8llu %8llu %8llu %8llu %8llu %8llu %10llu %8llu %8llu %10llu %12llu\n",
		 1ULL << 20, (unsigned long long)segs, (unsigned long long)free, 1ULL, 0ULL, 5ULL,
		 100ULL, 0ULL, (unsigned long long)nospace, (unsigned long long)live,
		 (unsigned long long)(segs << 20));
}

static void test_parse(void **state)
{
	struct pt_tier_fill f = { 0 };
	char line[256];

	(void)state;
	seg_stat(line, sizeof(line), 100, 40, 3, 12800);
	assert_int_equal(pt_tier_fill_add(&f, line), 0);
	assert_int_equal(f.segments, 100);
	assert_int_equal(f.free_segments, 40);
	assert_int_equal(f.nospace_errors, 3);
	assert_int_equal(f.live_pages, 12800);
	assert_int_equal(f.capacity_pages, 25600);	/* 100 MiB */
	/* Two tiers add up. */
	assert_int_equal(pt_tier_fill_add(&f, line), 0);
	assert_int_equal(f.capacity_pages, 51200);
	/* Lines it cannot read change nothing. */
	assert_int_equal(pt_tier_fill_add(&f, "1 2 3\n"), -EINVAL);
	assert_int_equal(pt_tier_fill_add(&f, ""), -EINVAL);
	assert_int_equal(pt_tier_fill_add(&f, "0 1 1 0 0 0 0 0 0 0 0\n"), -EINVAL);
	assert_int_equal(pt_tier_fill_add(&f, "4096 1 2 0 0 0 0 0 0 0 4096\n"), -EINVAL);
	assert_int_equal(f.capacity_pages, 51200);
}

static enum pt_fill_level level_at(enum pt_fill_level prev, uint64_t live_pm, uint64_t free_pm,
				   uint64_t nospace, uint64_t prev_nospace)
{
	struct pt_tier_fill f = { .capacity_pages = 100000, .segments = 1000 };

	f.live_pages = live_pm * 100;
	f.free_segments = free_pm;
	f.nospace_errors = nospace;
	return pt_tier_fill_level(prev, &f, prev_nospace);
}

static void test_levels(void **state)
{
	struct pt_tier_fill none = { 0 };

	(void)state;
	assert_int_equal(pt_tier_fill_level(PT_FILL_FULL, &none, 0), PT_FILL_OK);
	/* Rising: ok, then no cold offload, then nothing. */
	assert_int_equal(level_at(PT_FILL_OK, 700, 300, 0, 0), PT_FILL_OK);
	assert_int_equal(level_at(PT_FILL_OK, 799, 300, 0, 0), PT_FILL_OK);
	assert_int_equal(level_at(PT_FILL_OK, 800, 300, 0, 0), PT_FILL_NO_COLD);
	assert_int_equal(level_at(PT_FILL_NO_COLD, 899, 300, 0, 0), PT_FILL_NO_COLD);
	assert_int_equal(level_at(PT_FILL_NO_COLD, 900, 300, 0, 0), PT_FILL_FULL);
	/* Falling, with hysteresis. */
	assert_int_equal(level_at(PT_FILL_FULL, 860, 300, 0, 0), PT_FILL_FULL);
	assert_int_equal(level_at(PT_FILL_FULL, 849, 300, 0, 0), PT_FILL_NO_COLD);
	assert_int_equal(level_at(PT_FILL_NO_COLD, 760, 300, 0, 0), PT_FILL_NO_COLD);
	assert_int_equal(level_at(PT_FILL_NO_COLD, 749, 300, 0, 0), PT_FILL_OK);
	/* Few free segments, or a write that failed since the last look: full at once. */
	assert_int_equal(level_at(PT_FILL_OK, 500, 19, 0, 0), PT_FILL_FULL);
	assert_int_equal(level_at(PT_FILL_OK, 500, 300, 4, 3), PT_FILL_FULL);
	/* Old failures alone do not hold it. */
	assert_int_equal(level_at(PT_FILL_FULL, 500, 300, 4, 4), PT_FILL_OK);
	assert_string_equal(pt_fill_level_name(PT_FILL_NO_COLD), "no-cold");
}

static void test_sysfs_reader(void **state)
{
	char *root = fx_tmpdir(), line[256];
	struct pt_tier_fill f;

	(void)state;
	assert_int_equal(pt_kmod_tier_fill(root, &f), 0);	/* no tier */
	seg_stat(line, sizeof(line), 64, 10, 0, 8192);
	fx_write(root, "pagetier0/seg_stat", line);
	fx_write(root, "pagetier1/seg_stat", line);
	fx_write(root, "pagetier2/seg_stat", "garbage\n");	/* skipped */
	fx_write(root, "nvme0n1/seg_stat", line);		/* not a tier */
	fx_write(root, "pagetier3x/seg_stat", line);		/* not a tier either */
	assert_int_equal(pt_kmod_tier_fill(root, &f), 2);
	assert_int_equal(f.segments, 128);
	assert_int_equal(f.live_pages, 16384);
	assert_int_equal(f.capacity_pages, 32768);
	fx_rmtree(root);
	assert_true(pt_kmod_tier_fill("/nonexistent-pagetier", &f) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_sysfs_reader),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
