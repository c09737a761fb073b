// SPDX-License-Identifier: GPL-2.0
/* The global victim order across contexts. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * The order pt_victims_pick() must give, the obvious way: every context's eligible chunks
 * (coldest first, within its budget) listed, then one sort over all of them.
 */
struct ref_cand {
	int source, idle;
	unsigned int queue;
	uint64_t stamp, chunk;
	size_t rank;		/* its place in its context's coldest order */
};

static int cmp_ref(const void *a, const void *b)
{
	const struct ref_cand *x = a, *y = b;

	if (x->idle != y->idle)
		return y->idle - x->idle;
	if (x->queue != y->queue)
		return x->queue < y->queue ? -1 : 1;
	if (x->stamp != y->stamp)
		return x->stamp < y->stamp ? -1 : 1;
	if (x->source != y->source)
		return x->source - y->source;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int ref_pick(const struct pt_victim_source *src, int n_src, uint64_t need,
		    uint32_t min_cold, struct pt_victim *out, size_t max)
{
	struct ref_cand *c = NULL;
	size_t n = 0, picked = 0;

	for (int s = 0; s < n_src; s++) {
		const struct pt_hot *h = src[s].hot;
		uint64_t chunk = 1ULL << h->chunk_shift, budget = src[s].evictable_bytes;
		struct pt_mq_stats st;
		uint64_t *ids;
		int k;

		pt_mq_get_stats(h->mq, &st);
		ids = calloc(st.resident + 1, sizeof(*ids));
		k = pt_mq_coldest(h->mq, ids, st.resident);
		for (int i = 0; i < k && budget >= chunk; i++) {
			struct pt_mq_chunk info;

			assert_int_equal(pt_mq_lookup(h->mq, ids[i], &info), 0);
			if (info.last_access + min_cold >= st.now)
				continue;
			c = realloc(c, (n + 1) * sizeof(*c));
			c[n++] = (struct ref_cand){ .source = s, .idle = src[s].idle,
						    .queue = info.queue, .stamp = info.stamp,
						    .chunk = ids[i], .rank = (size_t)i };
			budget -= chunk;
		}
		free(ids);
	}
	qsort(c, n, sizeof(*c), cmp_ref);
	for (size_t i = 0; i < n && picked < max && need; i++) {
		uint64_t chunk = 1ULL << src[c[i].source].hot->chunk_shift;

		out[picked].source = c[i].source;
		out[picked++].chunk = c[i].chunk;
		need = need > chunk ? need - chunk : 0;
	}
	free(c);
	return (int)picked;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

/* A chunk's access pattern in the random models: a per-chunk rate, drawn from a seed. */
static int rnd_rate[256];

static bool random_use(int i, int e)
{
	(void)e;
	return (int)rnd(100) < rnd_rate[i % 256];
}

/*
 * The merge of per-context walks gives exactly the one-sort order, on random models of
 * random sizes with idle and active contexts, floors, recency limits and caps.
 */
static void test_same_order_as_one_sort(void **state)
{
	enum { CTXS = 12, ROUNDS = 6 };
	struct pt_hot hot[CTXS];
	struct pt_victim_source src[CTXS];
	struct pt_victim got[512], want[512];

	(void)state;
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < 256; i++)
			rnd_rate[i] = (int)rnd(4) == 0 ? 0 : (int)rnd(60);
		for (int s = 0; s < CTXS; s++) {
			int chunks = 1 + (int)rnd(96), epochs = 2 + (int)rnd(24);

			build(&hot[s], chunks, epochs, random_use);
			src[s] = (struct pt_victim_source){
				.hot = &hot[s], .idle = (int)rnd(2),
				.evictable_bytes = (uint64_t)rnd(chunks + 8) * CHUNK + rnd(CHUNK),
			};
		}
		for (int q = 0; q < 8; q++) {
			uint64_t need = (uint64_t)rnd(400) * CHUNK + rnd(CHUNK);
			uint32_t min_cold = rnd(6);
			size_t max = 1 + rnd(512);
			int n = pt_victims_pick(src, CTXS, need, min_cold, got, max);
			int m = ref_pick(src, CTXS, need, min_cold, want, max);

			assert_int_equal(n, m);
			for (int i = 0; i < n; i++) {
				assert_int_equal(got[i].source, want[i].source);
				assert_int_equal(got[i].chunk, want[i].chunk);
			}
		}
		for (int s = 0; s < CTXS; s++)
			pt_hot_free(&hot[s]);
	}
}

/* The model's own walk: every resident chunk once, in pt_mq_coldest()'s order. */
static void test_cursor_walks_coldest_order(void **state)
{
	struct pt_hot h;
	struct pt_mq_cursor cur;
	struct pt_mq_chunk info;
	struct pt_mq_stats st;
	uint64_t ids[64], id;
	int n, k = 0;

	(void)state;
	build(&h, 40, 12, ladder);
	pt_mq_get_stats(h.mq, &st);
	n = pt_mq_coldest(h.mq, ids, 64);
	assert_int_equal(n, (int)st.resident);
	pt_mq_cursor_init(&cur);
	while (!pt_mq_coldest_next(h.mq, &cur, &id, &info)) {
		struct pt_mq_chunk want;

		assert_true(k < n);
		assert_int_equal(id, ids[k]);
		assert_int_equal(pt_mq_lookup(h.mq, id, &want), 0);
		assert_memory_equal(&info, &want, sizeof(info));
		k++;
	}
	assert_int_equal(k, n);
	/* Past the end it stays there. */
	assert_int_equal(pt_mq_coldest_next(h.mq, &cur, &id, &info), -ENOENT);
	assert_int_equal(pt_mq_coldest_next(NULL, &cur, &id, &info), -EINVAL);
	pt_hot_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_first_then_coldest),
		cmocka_unit_test(test_recent_and_floor_respected),
		cmocka_unit_test(test_same_order_as_one_sort),
		cmocka_unit_test(test_cursor_walks_coldest_order),
	};

	return cmocka_run_group_tests_name("victims", tests, NULL, NULL);
}
