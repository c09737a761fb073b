// SPDX-License-Identifier: GPL-2.0
/* The global victim order across contexts. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "victims.h"

#define CHUNK (1ULL << PT_HOT_DEF_CHUNK_SHIFT)
#define BASE 0x7f0000000000ULL

/* @n chunks of pid 1; chunk i is accessed in epochs where @used(i, epoch). */
static void build(struct pt_hot *h, int n, int epochs, bool (*used)(int i, int e))
{
	assert_int_equal(pt_hot_init(h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	for (int e = 0; e < epochs; e++) {
		struct pt_proc_scan ps = { .pid = 1 };

		ps.chunks = calloc((size_t)n, sizeof(*ps.chunks));
		ps.n = (uint32_t)n;
		for (int i = 0; i < n; i++) {
			ps.chunks[i].addr = BASE + (uint64_t)i * CHUNK;
			ps.chunks[i].present = 16;
			ps.chunks[i].accessed = used(i, e) ? 16 : 0;
		}
		pt_hot_apply_scans(h, &ps, 1);
		pt_proc_scan_free(&ps);
	}
}

/* Chunk i is used in every epoch up to i: higher chunks are more recent and hotter. */
static bool ladder(int i, int e)
{
	return e <= i;
}

static bool busy(int i, int e)
{
	(void)e;
	return i < 4;	/* four chunks always used, the rest never */
}

static int slot_addr_index(const struct pt_hot *h, uint64_t id)
{
	int slot;
	uint64_t addr;

	pt_hot_chunk_addr(h, id, &slot, &addr);
	return (int)((addr - BASE) / CHUNK);
}

static void test_idle_first_then_coldest(void **state)
{
	struct pt_hot active, idle;
	struct pt_victim_source src[2];
	struct pt_victim v[64];
	int n;

	(void)state;
	build(&active, 8, 10, ladder);
	build(&idle, 8, 10, busy);
	src[0] = (struct pt_victim_source){ .hot = &active, .idle = 0, .evictable_bytes = 64 * CHUNK };
	src[1] = (struct pt_victim_source){ .hot = &idle, .idle = 1, .evictable_bytes = 64 * CHUNK };
	n = pt_victims_pick(src, 2, 6 * CHUNK, 1, v, 64);
	assert_int_equal(n, 6);
	/* The idle context's four never-used chunks go first, then the active one's coldest. */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(v[i].source, 1);
		assert_true(slot_addr_index(&idle, v[i].chunk) >= 4);
	}
	assert_int_equal(v[4].source, 0);
	assert_int_equal(v[5].source, 0);
	/* The active context's coldest: used only in epoch 0, then only up to epoch 1. */
	assert_int_equal(slot_addr_index(&active, v[4].chunk), 0);
	assert_int_equal(slot_addr_index(&active, v[5].chunk), 1);
	pt_hot_free(&active);
	pt_hot_free(&idle);
}

static void test_recent_and_floor_respected(void **state)
{
	struct pt_hot h;
	struct pt_victim_source src;
	struct pt_victim v[64];
	int n;

	(void)state;
	build(&h, 8, 10, ladder);
	/* Chunk 7 was used in epoch 7, one of the last three of ten: never a victim. */
	src = (struct pt_victim_source){ .hot = &h, .evictable_bytes = 64 * CHUNK };
	n = pt_victims_pick(&src, 1, 64 * CHUNK, 3, v, 64);
	assert_int_equal(n, 7);
	for (int i = 0; i < n; i++)
		assert_int_equal(slot_addr_index(&h, v[i].chunk), i);	/* coldest first */
	/* The floor: at most evictable_bytes leave, whatever is needed. */
	src.evictable_bytes = 2 * CHUNK;
	n = pt_victims_pick(&src, 1, 64 * CHUNK, 1, v, 64);
	assert_int_equal(n, 2);
	/* Nothing needed, nothing picked. */
	src.evictable_bytes = 64 * CHUNK;
	assert_int_equal(pt_victims_pick(&src, 1, 0, 1, v, 64), 0);
	pt_hot_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_first_then_coldest),
		cmocka_unit_test(test_recent_and_floor_respected),
	};

	return cmocka_run_group_tests_name("victims", tests, NULL, NULL);
}
