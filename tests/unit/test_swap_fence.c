// SPDX-License-Identifier: GPL-2.0
/*
 * The swap fence of a swap cache drop (swap_fence.h): when it is wanted (the multi-gen LRU
 * off), the value it holds, and over a fake cgroup: held and raised with the cgroup's swap,
 * put back at the end, kept in its state file while held, put back by the next pagetierd
 * after a crash unless the operator changed it since, and never written without swap
 * accounting or with the multi-gen LRU on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <unistd.h>

#include "cgroup.h"
#include "fixture.h"
#include "swap_fence.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)

static void test_wanted(void **state)
{
	(void)state;
	assert_true(pt_swap_fence_wanted(NULL));		/* no multi-gen LRU in the kernel */
	assert_true(pt_swap_fence_wanted("0x0000\n"));		/* built, off (Debian 12's 6.1) */
	assert_false(pt_swap_fence_wanted("0x0007\n"));		/* on (Debian 12's 6.12) */
	assert_false(pt_swap_fence_wanted("0x0001\n"));
	assert_false(pt_swap_fence_wanted(""));			/* unreadable: assume it is on */
	assert_false(pt_swap_fence_wanted("y"));
}

static void test_value(void **state)
{
	(void)state;
	assert_true(pt_swap_fence_value(0, UINT64_MAX) == PT_SWAP_FENCE_SLACK);
	assert_true(pt_swap_fence_value(100 * KiB, UINT64_MAX) == 100 * KiB + PT_SWAP_FENCE_SLACK);
	/* Rounded up to a page. */
	assert_true(pt_swap_fence_value(100 * KiB + 1, UINT64_MAX) == 168 * KiB);
	/* The operator's limit is as low already: no fence. */
	assert_true(pt_swap_fence_value(1 * MiB, 1 * MiB) == 0);
	assert_true(pt_swap_fence_value(1 * MiB, 1 * MiB + PT_SWAP_FENCE_SLACK) == 0);
	assert_true(pt_swap_fence_value(1 * MiB, 2 * MiB) == 1 * MiB + PT_SWAP_FENCE_SLACK);
	assert_true(pt_swap_fence_value(UINT64_MAX - 1, UINT64_MAX) == 0);
}

static uint64_t swap_max(const char *dir)
{
	uint64_t v = 0;

	if (pt_cgroup_read_u64(dir, "memory.swap.max", &v))
		fail_msg("%s/memory.swap.max unreadable", dir);
	return v;
}

/* A cgroup at @root/ct with @swap_max and 1 MiB on swap; fences on or off, kept in @root. */
static void setup(const char *root, const char *max, const char *lru_gen, char *cg)
{
	char lru[PATH_MAX];

	fx_write(root, "ct/memory.swap.max", max);
	fx_write(root, "ct/memory.swap.current", "1048576\n");
	fx_write(root, "lru_gen_enabled", lru_gen);
	snprintf(lru, sizeof(lru), "%s/lru_gen_enabled", root);
	snprintf(cg, PATH_MAX, "%s/ct", root);
	pt_swap_fence_setup(lru, root);
}

static void test_held_raised_and_released(void **state)
{
	char *root = fx_tmpdir(), cg[PATH_MAX], text[PATH_MAX + 64], expect[PATH_MAX + 64];
	struct pt_swap_fence f;

	(void)state;
	setup(root, "max\n", "0x0000\n", cg);
	pt_swap_fence_start(&f, cg);
	assert_true(swap_max(cg) == UINT64_MAX);	/* nothing before the first step */
	pt_swap_fence_hold(&f);
	assert_true(swap_max(cg) == 1 * MiB + PT_SWAP_FENCE_SLACK);
	/* Kept while it is held: what was there before, what it holds, the operator's, where. */
	assert_true(pt_read_file(f.state, text, sizeof(text)) > 0);
	snprintf(expect, sizeof(expect), "0 %llu max %s\n",
		 (unsigned long long)(1 * MiB + PT_SWAP_FENCE_SLACK), cg);
	assert_string_equal(text, expect);
	/* A step wrote a little: the next one gets the slack again, above it. */
	fx_write(root, "ct/memory.swap.current", "1114112\n");
	pt_swap_fence_hold(&f);
	assert_true(swap_max(cg) == 1114112 + PT_SWAP_FENCE_SLACK);
	assert_true(pt_read_file(f.state, text, sizeof(text)) > 0);
	snprintf(expect, sizeof(expect), "%llu %llu max %s\n",
		 (unsigned long long)(1 * MiB + PT_SWAP_FENCE_SLACK),
		 (unsigned long long)(1114112 + PT_SWAP_FENCE_SLACK), cg);
	assert_string_equal(text, expect);
	pt_swap_fence_release(&f);
	assert_true(swap_max(cg) == UINT64_MAX);
	assert_int_equal(access(f.state, F_OK), -1);
	/* The operator's own limit, lower than a fence would be: never touched. */
	fx_write(root, "ct/memory.swap.max", "1048576\n");
	pt_swap_fence_start(&f, cg);
	pt_swap_fence_hold(&f);
	pt_swap_fence_release(&f);
	assert_true(swap_max(cg) == 1 * MiB);
	fx_rmtree(root);
}

static void test_recovered_after_a_crash(void **state)
{
	char *root = fx_tmpdir(), cg[PATH_MAX], cg2[PATH_MAX];
	struct pt_swap_fence f, g;

	(void)state;
	setup(root, "8589934592\n", "0x0000\n", cg);
	fx_write(root, "ct2/memory.swap.max", "max\n");
	fx_write(root, "ct2/memory.swap.current", "0\n");
	snprintf(cg2, sizeof(cg2), "%s/ct2", root);
	pt_swap_fence_start(&f, cg);
	pt_swap_fence_hold(&f);
	/* Killed here, with the fence in place. The next pagetierd puts it back. */
	assert_int_equal(pt_swap_fence_recover(root), 1);
	assert_true(swap_max(cg) == 8ULL << 30);
	assert_int_equal(access(f.state, F_OK), -1);
	assert_int_equal(pt_swap_fence_recover(root), 0);

	/* Killed between keeping the next value and writing it: the previous one is found. */
	pt_swap_fence_start(&f, cg);
	pt_swap_fence_hold(&f);
	fx_write(root, "ct/memory.swap.current", "2097152\n");
	pt_swap_fence_hold(&f);
	fx_write(root, "ct/memory.swap.max", "1114112\n");	/* the first value, still there */
	assert_int_equal(pt_swap_fence_recover(root), 1);
	assert_true(swap_max(cg) == 8ULL << 30);

	/* Changed by the operator since: theirs, left alone. */
	pt_swap_fence_start(&g, cg2);
	pt_swap_fence_hold(&g);
	assert_true(swap_max(cg2) == PT_SWAP_FENCE_SLACK);
	fx_write(root, "ct2/memory.swap.max", "0\n");
	assert_int_equal(pt_swap_fence_recover(root), 0);
	assert_true(swap_max(cg2) == 0);
	assert_int_equal(access(g.state, F_OK), -1);
	fx_rmtree(root);
}

static void test_off(void **state)
{
	char *root = fx_tmpdir(), cg[PATH_MAX];
	struct pt_swap_fence f;

	(void)state;
	/* The multi-gen LRU on: a fence would stop the drop; none. */
	setup(root, "max\n", "0x0007\n", cg);
	pt_swap_fence_start(&f, cg);
	pt_swap_fence_hold(&f);
	assert_true(swap_max(cg) == UINT64_MAX);
	pt_swap_fence_release(&f);
	/* No swap accounting (no memory.swap.max): drops as before. */
	setup(root, "max\n", "0x0000\n", cg);
	fx_write(root, "ct/memory.swap.max", "");
	pt_swap_fence_start(&f, cg);
	pt_swap_fence_hold(&f);
	assert_true(f.off);
	assert_true(f.written == 0);
	pt_swap_fence_release(&f);
	fx_rmtree(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_value),
		cmocka_unit_test(test_held_raised_and_released),
		cmocka_unit_test(test_recovered_after_a_crash),
		cmocka_unit_test(test_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
