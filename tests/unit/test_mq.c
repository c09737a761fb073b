// SPDX-License-Identifier: GPL-2.0
/* The multi-queue hotness model, driven by synthetic per-epoch access traces. */
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mq.h"

/* Small models: fixed lifeTime unless a test says otherwise. */
static struct pt_mq *mk(unsigned int m, uint32_t lifetime, uint32_t max_res, uint32_t max_hist)
{
	struct pt_mq_params p;
	struct pt_mq *mq;

	pt_mq_params_default(&p);
	p.nr_queues = m;
	p.lifetime = p.lifetime_min = p.lifetime_max = lifetime;
	p.max_resident = max_res;
	p.max_history = max_hist;
	assert_int_equal(pt_mq_new(&p, &mq), 0);
	assert_non_null(mq);
	return mq;
}

static struct pt_mq_chunk look(const struct pt_mq *mq, uint64_t id)
{
	struct pt_mq_chunk c;

	pt_mq_lookup(mq, id, &c);
	return c;
}

static struct pt_mq_stats stats(const struct pt_mq *mq)
{
	struct pt_mq_stats st;

	pt_mq_get_stats(mq, &st);
	return st;
}

/* Touches @id in @n consecutive epochs, closing each. */
static void touch_epochs(struct pt_mq *mq, uint64_t id, unsigned int n)
{
	for (unsigned int e = 0; e < n; e++) {
		assert_true(pt_mq_touch(mq, id) >= 0);
		pt_mq_epoch(mq);
	}
}

static void epochs(struct pt_mq *mq, unsigned int n)
{
	while (n--)
		pt_mq_epoch(mq);
}

static void test_params(void **state)
{
	struct pt_mq_params def, p;
	struct pt_mq *mq = (struct pt_mq *)&p;	/* must be reset to NULL on failure */

	(void)state;
	pt_mq_params_default(&def);
	assert_int_equal(pt_mq_params_check(&def), 0);
	assert_int_equal(pt_mq_params_check(NULL), -EINVAL);
	assert_int_equal(pt_mq_new(&def, NULL), -EINVAL);

#define BAD(field, value)                                                    \
	do {                                                                 \
		p = def;                                                     \
		p.field = (value);                                           \
		assert_int_equal(pt_mq_params_check(&p), -EINVAL);           \
		assert_int_equal(pt_mq_new(&p, &mq), -EINVAL);               \
		assert_null(mq);                                             \
	} while (0)
	BAD(nr_queues, 0);
	BAD(nr_queues, PT_MQ_MAX_QUEUES + 1);
	BAD(lifetime_min, 0);
	BAD(lifetime, def.lifetime_min - 1);
	BAD(lifetime, def.lifetime_max + 1);
	BAD(lifetime_min, def.lifetime_max + 1);
	BAD(lifetime_max, PT_MQ_MAX_LIFETIME + 1);
	BAD(max_resident, 0);
	BAD(max_history, PT_MQ_MAX_NODES);
	BAD(grow_pct, 0);
	BAD(grow_pct, 101);
	BAD(recent_epochs, PT_MQ_MAX_LIFETIME + 1);
#undef BAD
	/* Edges that are fine. */
	p = def;
	p.nr_queues = PT_MQ_MAX_QUEUES;
	p.max_history = 0;
	p.max_resident = 1;
	p.lifetime = p.lifetime_min = p.lifetime_max = 1;
	assert_int_equal(pt_mq_new(&p, &mq), 0);
	pt_mq_free(mq);
	/* NULL params: defaults. */
	assert_int_equal(pt_mq_new(NULL, &mq), 0);
	assert_int_equal(pt_mq_get_params(mq)->nr_queues, PT_MQ_DEF_QUEUES);
	assert_int_equal(stats(mq).lifetime, PT_MQ_DEF_LIFETIME);
	pt_mq_free(mq);
	pt_mq_free(NULL);
}

static void test_bad_calls(void **state)
{
	struct pt_mq *mq = mk(4, 4, 8, 8);
	struct pt_mq_chunk c;

	(void)state;
	assert_int_equal(pt_mq_touch(NULL, 1), -EINVAL);
	pt_mq_epoch(NULL);
	assert_int_equal(pt_mq_coldest(mq, NULL, 1), -EINVAL);
	assert_int_equal(pt_mq_hottest(mq, NULL, 1), -EINVAL);
	assert_int_equal(pt_mq_coldest(mq, NULL, 0), 0);
	assert_int_equal(pt_mq_evicted(mq, 7), -ENOENT);
	assert_int_equal(pt_mq_remove(mq, 7), -ENOENT);
	assert_int_equal(pt_mq_remove_range(mq, 9, 8), -EINVAL);
	assert_int_equal(pt_mq_lookup(mq, 7, &c), -ENOENT);
	assert_int_equal(c.where, PT_MQ_ABSENT);
	assert_int_equal(pt_mq_lookup(mq, 7, NULL), -EINVAL);
	assert_null(pt_mq_get_params(NULL));
	{
		struct pt_mq_stats st;

		memset(&st, 0xa5, sizeof(st));
		pt_mq_get_stats(NULL, &st);
		assert_int_equal(st.resident, 0);
		pt_mq_get_stats(mq, NULL);
	}
	/* Extreme ids are ordinary ids. */
	assert_int_equal(pt_mq_touch(mq, 0), PT_MQ_NEW);
	assert_int_equal(pt_mq_touch(mq, UINT64_MAX), PT_MQ_NEW);
	assert_int_equal(pt_mq_remove_range(mq, 0, UINT64_MAX), 2);
	assert_int_equal(pt_mq_check(mq), 0);
	pt_mq_free(mq);
}

/* Queue = min(log2 f, m - 1), f counting epochs with an access. */
static void test_promotion(void **state)
{
	struct pt_mq *mq = mk(4, 1000, 16, 16);

	(void)state;
	assert_int_equal(pt_mq_touch(mq, 42), PT_MQ_NEW);
	for (uint32_t f = 1; f <= 40; f++) {
		struct pt_mq_chunk c = look(mq, 42);
		unsigned int want = f < 2 ? 0 : f < 4 ? 1 : f < 8 ? 2 : 3;

		assert_int_equal(c.where, PT_MQ_RESIDENT);
		assert_int_equal(c.freq, f);
		assert_int_equal(c.queue, want);
		pt_mq_epoch(mq);
		assert_int_equal(pt_mq_touch(mq, 42), PT_MQ_HIT);
	}
	assert_int_equal(stats(mq).promotions, 3);
	assert_int_equal(stats(mq).queue_len[3], 1);
	assert_int_equal(pt_mq_check(mq), 0);
	pt_mq_free(mq);
}

/* Accessed bits are per epoch: more reports in one epoch are one access. */
static void test_touch_once_per_epoch(void **state)
{
	struct pt_mq *mq = mk(8, 8, 16, 16);

	(void)state;
	assert_int_equal(pt_mq_touch(mq, 1), PT_MQ_NEW);
	for (int i = 0; i < 5; i++)
		assert_int_equal(pt_mq_touch(mq, 1), PT_MQ_HIT);
	assert_int_equal(look(mq, 1).freq, 1);
	pt_mq_epoch(mq);
	assert_int_equal(pt_mq_touch(mq, 1), PT_MQ_HIT);
	assert_int_equal(pt_mq_touch(mq, 1), PT_MQ_HIT);
	assert_int_equal(look(mq, 1).freq, 2);
	assert_int_equal(stats(mq).touches, 2);
	pt_mq_free(mq);
}

/* A chunk idle for lifeTime epochs drops one queue, then one per lifeTime more. */
static void test_demotion(void **state)
{
	const uint32_t L = 5;
	struct pt_mq *mq = mk(8, L, 16, 16);
	uint64_t last;

	(void)state;
	touch_epochs(mq, 7, 8);		/* f = 8: Q3, last touched in epoch 7 */
	last = stats(mq).now - 1;
	assert_int_equal(look(mq, 7).queue, 3);
	for (unsigned int q = 3; q > 0; q--) {
		/* Idle epochs last+1 .. last+L: still in q. */
		while (stats(mq).now < last + L + 1) {
			assert_int_equal(look(mq, 7).queue, q);
			pt_mq_epoch(mq);
		}
		assert_int_equal(look(mq, 7).queue, q - 1);
		last += L;
	}
	epochs(mq, 10 * L);
	assert_int_equal(look(mq, 7).queue, 0);
	assert_int_equal(look(mq, 7).freq, 8);	/* aging moves the chunk, not its count */
	assert_int_equal(stats(mq).demotions, 3);
	/* One access brings it back to log2 f. */
	assert_int_equal(pt_mq_touch(mq, 7), PT_MQ_HIT);
	assert_int_equal(look(mq, 7).queue, 3);
	assert_int_equal(look(mq, 7).freq, 9);
	assert_int_equal(pt_mq_check(mq), 0);
	pt_mq_free(mq);
}

/* Every chunk that expired in an epoch is demoted in that epoch, not one per queue. */
static void test_demotion_bulk(void **state)
{
	struct pt_mq *mq = mk(4, 3, 1000, 0);

	(void)state;
	for (int e = 0; e < 2; e++) {
		for (uint64_t id = 0; id < 500; id++)
			pt_mq_touch(mq, id);
		pt_mq_epoch(mq);
	}
	assert_int_equal(stats(mq).queue_len[1], 500);
	epochs(mq, 2);			/* idle epochs 2, 3 */
	assert_int_equal(stats(mq).queue_len[1], 500);
	pt_mq_epoch(mq);		/* idle epoch 4: lifeTime reached */
	assert_int_equal(stats(mq).queue_len[1], 0);
	assert_int_equal(stats(mq).queue_len[0], 500);
	assert_int_equal(pt_mq_check(mq), 0);
	pt_mq_free(mq);
}

static void test_coldest_hottest(void **state)
{
	/* epoch 0: A B C D E; 1: C B E; 2: A E; 3: E => Q0: D; Q1: C B A; Q2: E */
	static const char *const trace[] = { "ABCDE", "CBE", "AE", "E" };
	struct pt_mq *mq = mk(4, 1000, 16, 16);
	uint64_t out[16];

	(void)state;

	for (unsigned int e = 0; e < 4; e++) {
		for (const char *p = trace[e]; *p; p++)
			pt_mq_touch(mq, (uint64_t)*p);
		pt_mq_epoch(mq);
	}
	assert_int_equal(pt_mq_coldest(mq, out, 16), 5);
	assert_int_equal(out[0], 'D');
	assert_int_equal(out[1], 'C');
	assert_int_equal(out[2], 'B');
	assert_int_equal(out[3], 'A');
	assert_int_equal(out[4], 'E');
	assert_int_equal(pt_mq_hottest(mq, out, 16), 5);
	assert_int_equal(out[0], 'E');
	assert_int_equal(out[1], 'A');
	assert_int_equal(out[2], 'B');
	assert_int_equal(out[3], 'C');
	assert_int_equal(out[4], 'D');
	/* Bounded output. */
	memset(out, 0, sizeof(out));
	assert_int_equal(pt_mq_coldest(mq, out, 2), 2);
	assert_int_equal(out[0], 'D');
	assert_int_equal(out[1], 'C');
	assert_int_equal(out[2], 0);
	assert_int_equal(pt_mq_hottest(mq, out, 1), 1);
	assert_int_equal(out[0], 'E');
	/* Offloaded chunks are candidates for neither. */
	assert_int_equal(pt_mq_evicted(mq, 'D'), 0);
	assert_int_equal(pt_mq_coldest(mq, out, 16), 4);
	assert_int_equal(out[0], 'C');
	assert_int_equal(pt_mq_hottest(mq, out, 16), 4);
	assert_int_equal(out[3], 'C');
	pt_mq_free(mq);
}

/* An offloaded chunk touched again comes back with its old frequency + 1. */
static void test_history_restore(void **state)
{
	struct pt_mq *mq = mk(8, 3, 16, 16);
	struct pt_mq_stats st;

	(void)state;
	touch_epochs(mq, 5, 5);		/* f = 5: Q2 */
	touch_epochs(mq, 6, 1);		/* f = 1: Q0 */
	assert_int_equal(pt_mq_evicted(mq, 5), 0);
	assert_int_equal(pt_mq_evicted(mq, 6), 0);
	assert_int_equal(pt_mq_evicted(mq, 6), 0);	/* again: no change */
	st = stats(mq);
	assert_int_equal(st.resident, 0);
	assert_int_equal(st.history, 2);
	assert_int_equal(st.evictions, 2);
	assert_int_equal(look(mq, 5).where, PT_MQ_HISTORY);
	assert_int_equal(look(mq, 5).freq, 5);
	assert_false(look(mq, 5).aged);		/* evicted from its own queue */

	assert_int_equal(pt_mq_touch(mq, 5), PT_MQ_REFAULT);
	assert_int_equal(look(mq, 5).where, PT_MQ_RESIDENT);
	assert_int_equal(look(mq, 5).freq, 6);
	assert_int_equal(look(mq, 5).queue, 2);
	assert_int_equal(pt_mq_touch(mq, 6), PT_MQ_REFAULT);
	assert_int_equal(look(mq, 6).freq, 2);
	assert_int_equal(look(mq, 6).queue, 1);
	st = stats(mq);
	assert_int_equal(st.refaults, 2);
	assert_int_equal(st.mispredictions, 0);	/* the budget's fault, not the aging's */
	assert_int_equal(st.history, 0);
	assert_int_equal(st.resident, 2);

	/* Aged from Q2 to Q1, then offloaded: its refault is a misprediction. */
	touch_epochs(mq, 8, 4);
	epochs(mq, 3);
	assert_int_equal(look(mq, 8).queue, 1);
	assert_int_equal(pt_mq_evicted(mq, 8), 0);
	assert_true(look(mq, 8).aged);
	assert_int_equal(pt_mq_touch(mq, 8), PT_MQ_REFAULT);
	assert_int_equal(look(mq, 8).queue, 2);
	assert_int_equal(look(mq, 8).freq, 5);
	st = stats(mq);
	assert_int_equal(st.refaults, 3);
	assert_int_equal(st.mispredictions, 1);

	/* Evicted and touched again in the same epoch: still a refault. */
	assert_int_equal(pt_mq_evicted(mq, 6), 0);
	assert_int_equal(pt_mq_touch(mq, 6), PT_MQ_REFAULT);
	assert_int_equal(look(mq, 6).freq, 3);
	assert_int_equal(pt_mq_check(mq), 0);
	pt_mq_free(mq);
}

/* Waits until demotion has taken chunk @id below the queue of its frequency. */
static void age(struct pt_mq *mq, uint64_t id)
{
	while (look(mq, id).queue >= (unsigned int)(31 - __builtin_clz(look(mq, id).freq)))
		pt_mq_epoch(mq);
}

/* Touches [first, first + n) in each of @e epochs. */
static void touch_range_epochs(struct pt_mq *mq, uint64_t first, unsigned int n, unsigned int e)
{
	while (e--) {
		for (uint64_t id = first; id < first + n; id++)
			assert_true(pt_mq_touch(mq, id) >= 0);
		pt_mq_epoch(mq);
	}
}

/* Offloads @id and touches it again at once: a refault, a misprediction if it was aged. */
static void bounce(struct pt_mq *mq, uint64_t id)
{
	assert_int_equal(pt_mq_evicted(mq, id), 0);
	assert_int_equal(pt_mq_touch(mq, id), PT_MQ_REFAULT);
}

/* The lifeTime rule of mq.h: a quarter more per bad epoch, a sixteenth less per quiet run. */
static void test_lifetime_adaptation(void **state)
{
	struct pt_mq_params p;
	struct pt_mq *mq;
	uint32_t lt;

	(void)state;
	pt_mq_params_default(&p);
	p.lifetime = 16;
	p.lifetime_min = 2;
	p.lifetime_max = 64;
	p.relax_epochs = 4;
	assert_int_equal(pt_mq_new(&p, &mq), 0);
	/* Ten reused chunks (f = 3, Q1), aged to Q0. */
	touch_range_epochs(mq, 1, 10, 3);
	age(mq, 1);
	lt = stats(mq).lifetime;
	assert_true(lt < 16);		/* the quiet epochs meanwhile relaxed it */
	/* One aged chunk offloaded and back per epoch: all of the refaults, over the bar. */
	for (uint64_t id = 1; id <= 10; id++) {
		assert_int_equal(look(mq, id).queue, 0);
		bounce(mq, id);
		pt_mq_epoch(mq);
		lt += lt / 4 ? lt / 4 : 1;
		if (lt > 64)
			lt = 64;
		assert_int_equal(stats(mq).lifetime, lt);
	}
	assert_int_equal(lt, 64);
	assert_int_equal(stats(mq).mispredictions, 10);
	assert_true(stats(mq).refault_rate_milli > 500);

	/* Quiet: a step down every 4 epochs, lifeTime / 16 at a time. */
	epochs(mq, 3);
	assert_int_equal(stats(mq).lifetime, 64);
	pt_mq_epoch(mq);
	assert_int_equal(stats(mq).lifetime, 60);
	epochs(mq, 4);
	assert_int_equal(stats(mq).lifetime, 57);
	/* A refault of a chunk used once is the budget's fault: it does not stop relaxing. */
	touch_epochs(mq, 100, 1);
	pt_mq_evicted(mq, 100);
	assert_false(look(mq, 100).aged);
	epochs(mq, 2);
	assert_int_equal(pt_mq_touch(mq, 100), PT_MQ_REFAULT);
	pt_mq_epoch(mq);
	assert_int_equal(stats(mq).lifetime, 54);
	assert_int_equal(stats(mq).mispredictions, 10);
	assert_true(stats(mq).evict_rate_milli > 0);
	/* Long quiet: down to the floor, never below. */
	epochs(mq, 4000);
	assert_int_equal(stats(mq).lifetime, p.lifetime_min);
	assert_true(stats(mq).refault_rate_milli < 10);
	assert_int_equal(pt_mq_check(mq), 0);
	pt_mq_free(mq);
}

/* The share of mispredictions among an epoch's refaults decides; and only recent ones count. */
static void test_lifetime_share(void **state)
{
	struct pt_mq_params p;
	struct pt_mq *mq;
	uint64_t plain = 1000;

	(void)state;
	pt_mq_params_default(&p);
	p.lifetime = 32;
	p.relax_epochs = 1;		/* every quiet epoch shrinks */
	assert_int_equal(pt_mq_new(&p, &mq), 0);
	assert_int_equal(p.grow_pct, 10);
	/* Aged chunks 1..20 (f = 3 in Q0), plain chunks (f = 1) touched as needed. */
	touch_range_epochs(mq, 1, 20, 3);
	age(mq, 1);
	touch_range_epochs(mq, plain, 200, 1);
	p.lifetime = stats(mq).lifetime;
	assert_true(p.lifetime < 32);	/* the quiet epochs meanwhile relaxed it */

	/* 1 misprediction in 10 refaults: 10%, grow. */
	bounce(mq, 1);
	for (int k = 0; k < 9; k++)
		bounce(mq, plain++);
	pt_mq_epoch(mq);
	assert_int_equal(stats(mq).lifetime, p.lifetime + (p.lifetime / 4 ? p.lifetime / 4 : 1));
	p.lifetime = stats(mq).lifetime;
	/* 1 in 11: 9%, hold. */
	bounce(mq, 2);
	for (int k = 0; k < 10; k++)
		bounce(mq, plain++);
	pt_mq_epoch(mq);
	assert_int_equal(stats(mq).lifetime, p.lifetime);
	/* 1 in 41: under a quarter of the bar, a quiet epoch: shrink. */
	bounce(mq, 3);
	for (int k = 0; k < 40; k++)
		bounce(mq, plain++);
	pt_mq_epoch(mq);
	assert_int_equal(stats(mq).lifetime, p.lifetime - (p.lifetime / 16 ? p.lifetime / 16 : 1));
	p.lifetime = stats(mq).lifetime;
	assert_int_equal(stats(mq).mispredictions, 3);
	assert_int_equal(stats(mq).refaults, 3 + 9 + 10 + 40);

	/* An aged chunk back only after recent_epochs is no misprediction. */
	assert_int_equal(pt_mq_evicted(mq, 4), 0);
	assert_int_equal(pt_mq_evicted(mq, 5), 0);
	assert_true(look(mq, 4).aged);
	epochs(mq, PT_MQ_DEF_RECENT_EPOCHS);
	assert_int_equal(pt_mq_touch(mq, 4), PT_MQ_REFAULT);
	assert_int_equal(stats(mq).mispredictions, 4);
	pt_mq_epoch(mq);
	assert_int_equal(pt_mq_touch(mq, 5), PT_MQ_REFAULT);
	assert_int_equal(stats(mq).mispredictions, 4);
	assert_int_equal(pt_mq_check(mq), 0);
	pt_mq_free(mq);

	/* min == max: no adaptation whatever happens. */
	mq = mk(4, 9, 64, 64);
	touch_range_epochs(mq, 1, 20, 3);
	age(mq, 1);
	for (uint64_t id = 1; id <= 20; id++) {
		bounce(mq, id);
		pt_mq_epoch(mq);
	}
	assert_int_equal(stats(mq).lifetime, 9);
	assert_int_equal(stats(mq).mispredictions, 20);
	pt_mq_free(mq);
}

static void test_history_bound(void **state)
{
	struct pt_mq *mq = mk(8, 100, 100, 4);

	(void)state;
	for (uint64_t id = 0; id < 10; id++)
		touch_epochs(mq, id, 1);
	for (uint64_t id = 0; id < 10; id++)
		assert_int_equal(pt_mq_evicted(mq, id), 0);
	assert_int_equal(stats(mq).history, 4);
	assert_int_equal(stats(mq).history_drops, 6);
	/* The oldest were forgotten, the newest remembered. */
	for (uint64_t id = 0; id < 6; id++)
		assert_int_equal(look(mq, id).where, PT_MQ_ABSENT);
	for (uint64_t id = 6; id < 10; id++)
		assert_int_equal(look(mq, id).where, PT_MQ_HISTORY);
	assert_int_equal(pt_mq_touch(mq, 0), PT_MQ_NEW);
	assert_int_equal(pt_mq_touch(mq, 9), PT_MQ_REFAULT);
	assert_int_equal(pt_mq_check(mq), 0);
	pt_mq_free(mq);

	/* No history at all: offloaded chunks are forgotten. */
	mq = mk(8, 100, 100, 0);
	touch_epochs(mq, 1, 4);
	assert_int_equal(pt_mq_evicted(mq, 1), 0);
	assert_int_equal(stats(mq).history, 0);
	assert_int_equal(stats(mq).resident, 0);
	assert_int_equal(pt_mq_touch(mq, 1), PT_MQ_NEW);
	assert_int_equal(look(mq, 1).freq, 1);
	assert_int_equal(pt_mq_check(mq), 0);
	pt_mq_free(mq);
}

static void test_resident_bound(void **state)
{
	struct pt_mq *mq = mk(8, 100, 3, 8);

	(void)state;
	for (uint64_t id = 0; id < 3; id++)
		assert_int_equal(pt_mq_touch(mq, id), PT_MQ_NEW);
	assert_int_equal(pt_mq_touch(mq, 3), -ENOSPC);
	assert_int_equal(look(mq, 3).where, PT_MQ_ABSENT);
	assert_int_equal(pt_mq_evicted(mq, 0), 0);
	assert_int_equal(pt_mq_touch(mq, 3), PT_MQ_NEW);
	/* Full again: the refault is refused and the chunk stays in Qout. */
	assert_int_equal(pt_mq_touch(mq, 0), -ENOSPC);
	assert_int_equal(look(mq, 0).where, PT_MQ_HISTORY);
	assert_int_equal(stats(mq).refaults, 0);
	/* Resident chunks are still hits. */
	assert_int_equal(pt_mq_touch(mq, 1), PT_MQ_HIT);
	assert_int_equal(pt_mq_check(mq), 0);
	pt_mq_free(mq);
}

static void test_remove(void **state)
{
	struct pt_mq *mq = mk(8, 100, 1000, 1000);

	(void)state;
	for (uint64_t id = 100; id < 200; id++)
		touch_epochs(mq, id, 1);
	for (uint64_t id = 100; id < 110; id++)
		pt_mq_evicted(mq, id);
	assert_int_equal(pt_mq_remove(mq, 100), 0);	/* from Qout */
	assert_int_equal(pt_mq_remove(mq, 150), 0);	/* resident */
	assert_int_equal(pt_mq_remove(mq, 150), -ENOENT);
	assert_int_equal(stats(mq).resident, 89);
	assert_int_equal(stats(mq).history, 9);
	/* A small range (id lookups) and a huge one (pool sweep). */
	assert_int_equal(pt_mq_remove_range(mq, 105, 120), 16);
	assert_int_equal(pt_mq_check(mq), 0);
	assert_int_equal(pt_mq_remove_range(mq, 190, UINT64_MAX), 10);
	assert_int_equal(pt_mq_check(mq), 0);
	assert_int_equal(stats(mq).resident, 68);
	assert_int_equal(stats(mq).history, 4);
	assert_int_equal(stats(mq).removals, 28);
	assert_int_equal(look(mq, 189).where, PT_MQ_RESIDENT);
	assert_int_equal(look(mq, 190).where, PT_MQ_ABSENT);
	/* Removed means unknown: a later touch is new. */
	assert_int_equal(pt_mq_touch(mq, 100), PT_MQ_NEW);
	assert_int_equal(pt_mq_remove_range(mq, 0, UINT64_MAX), 73);
	assert_int_equal(stats(mq).resident, 0);
	assert_int_equal(stats(mq).history, 0);
	assert_int_equal(pt_mq_check(mq), 0);
	/* Freed nodes are reused. */
	for (uint64_t id = 0; id < 300; id++)
		pt_mq_touch(mq, id);
	assert_int_equal(pt_mq_check(mq), 0);
	pt_mq_free(mq);
}

/* --- randomized run against a shadow model ----------------------------------------- */

#define R_CHUNKS	100000
#define R_OPS		1000000
#define R_RESIDENT	40000
#define R_HISTORY	30000

enum { S_ABSENT, S_RESIDENT, S_HISTORY };

struct shadow {
	uint8_t where;
	uint32_t freq;
	uint32_t seq;		/* eviction sequence number while in Qout */
	uint32_t touched;	/* epoch of the last counted touch */
	bool aged;		/* evicted from below its frequency's queue */
	uint32_t evicted_at;	/* epoch */
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Chunk ids look like the daemon's: process index in the high bits, address >> 16 below. */
#define R_BASE		(0x7f0000000000ULL >> 16)

static uint64_t id_of(uint32_t c)
{
	return ((uint64_t)(c % 7) << 48) | R_BASE | c;
}

static uint32_t chunk_of(uint64_t id)
{
	return (uint32_t)(id & 0xffffff);
}

/* A full Qout forgot its oldest live entry: find it in the lazily pruned FIFO. */
static void shadow_forget_oldest(const struct pt_mq *mq, struct shadow *sh, const uint32_t *fifo,
				 const uint32_t *fifo_seq, size_t *head)
{
	for (;;) {
		uint32_t old = fifo[*head], seq = fifo_seq[*head];

		(*head)++;
		if (sh[old].where == S_HISTORY && sh[old].seq == seq) {
			sh[old].where = S_ABSENT;
			assert_int_equal(look(mq, id_of(old)).where, PT_MQ_ABSENT);
			return;
		}
	}
}

static void test_randomized(void **state)
{
	struct pt_mq_params p;
	struct shadow *sh = calloc(R_CHUNKS, sizeof(*sh));
	/* Qout order, lazily pruned; evictions <= successful touches <= R_OPS. */
	uint32_t *fifo = calloc(R_OPS, sizeof(*fifo));
	uint32_t *fifo_seq = calloc(R_OPS, sizeof(*fifo_seq));
	uint64_t *cand = calloc(64, sizeof(*cand));
	size_t fifo_head = 0, fifo_tail = 0;
	uint32_t resident = 0, history = 0, seq = 0;
	uint64_t refaults = 0, mispred = 0, enospc = 0;
	uint32_t now = 0;
	struct pt_mq_stats st;
	struct pt_mq *mq;

	(void)state;
	assert_non_null(sh);
	assert_non_null(fifo);
	assert_non_null(fifo_seq);
	assert_non_null(cand);
	pt_mq_params_default(&p);
	p.max_resident = R_RESIDENT;
	p.max_history = R_HISTORY;
	p.lifetime = 8;
	p.lifetime_min = 2;
	p.lifetime_max = 64;
	p.relax_epochs = 4;
	assert_int_equal(pt_mq_new(&p, &mq), 0);

	for (uint32_t op = 0; op < R_OPS; op++) {
		uint32_t r = (uint32_t)(rnd() % 1000);
		/* Skewed: half the touches go to the first 5% of chunks. */
		uint32_t c = (rnd() & 1) ? (uint32_t)(rnd() % (R_CHUNKS / 20))
					 : (uint32_t)(rnd() % R_CHUNKS);
		struct shadow *s = &sh[c];
		int ret;

		if (r < 2) {
			pt_mq_epoch(mq);
			now++;
		} else if (r < 700) {
			ret = pt_mq_touch(mq, id_of(c));
			if (s->where == S_RESIDENT) {
				assert_int_equal(ret, PT_MQ_HIT);
			} else if (resident == R_RESIDENT) {
				assert_int_equal(ret, -ENOSPC);
				enospc++;
			} else if (s->where == S_HISTORY) {
				assert_int_equal(ret, PT_MQ_REFAULT);
				refaults++;
				mispred += s->aged && now - s->evicted_at <= PT_MQ_DEF_RECENT_EPOCHS;
				history--;
				resident++;
				s->where = S_RESIDENT;
			} else {
				assert_int_equal(ret, PT_MQ_NEW);
				resident++;
				s->where = S_RESIDENT;
				s->freq = 0;	/* counted below */
			}
			if (ret >= 0) {
				/* A hit counts once per epoch; a refault or a new chunk always. */
				if (ret != PT_MQ_HIT || s->touched != now)
					s->freq++;
				s->touched = now;
				assert_int_equal(look(mq, id_of(c)).freq, s->freq);
			}
		} else if (r < 940) {
			/* Offload some of the coldest, as the daemon would: more under pressure. */
			int n = pt_mq_coldest(mq, cand, resident == R_RESIDENT ? 64 :
							rnd() % 16 ? 0 : 1 + rnd() % 8);

			assert_true(n >= 0);
			assert_true((uint32_t)n <= resident);
			for (int k = 0; k < n; k++) {
				uint32_t cc = chunk_of(cand[k]);
				struct shadow *t;

				assert_true(cc < R_CHUNKS);
				assert_int_equal(id_of(cc), cand[k]);
				t = &sh[cc];
				assert_int_equal(t->where, S_RESIDENT);
				{
					struct pt_mq_chunk ch = look(mq, cand[k]);
					unsigned int q = 31 - (unsigned int)__builtin_clz(ch.freq);

					t->aged = ch.queue < (q < 8 ? q : 7);
				}
				assert_int_equal(pt_mq_evicted(mq, cand[k]), 0);
				if (history == R_HISTORY) {
					shadow_forget_oldest(mq, sh, fifo, fifo_seq, &fifo_head);
					history--;
				}
				t->where = S_HISTORY;
				t->evicted_at = now;
				t->seq = ++seq;
				fifo[fifo_tail] = cc;
				fifo_seq[fifo_tail++] = seq;
				resident--;
				history++;
			}
		} else if (r < 990) {
			ret = pt_mq_remove(mq, id_of(c));
			assert_int_equal(ret, s->where == S_ABSENT ? -ENOENT : 0);
			if (s->where == S_RESIDENT)
				resident--;
			else if (s->where == S_HISTORY)
				history--;
			s->where = S_ABSENT;
		} else {
			/* Unmap a small range of one "process": ids are contiguous there. */
			uint32_t len = 1 + (uint32_t)(rnd() % 8), removed = 0;

			if (c + len > R_CHUNKS)
				len = R_CHUNKS - c;
			for (uint32_t k = c; k < c + len; k++) {
				if (sh[k].where == S_ABSENT || k % 7 != c % 7)
					continue;
				if (sh[k].where == S_RESIDENT)
					resident--;
				else
					history--;
				sh[k].where = S_ABSENT;
				removed++;
			}
			/* Only ids in the same process are in [id_of(c), id_of(c) + len). */
			ret = pt_mq_remove_range(mq, id_of(c), id_of(c) + len - 1);
			assert_int_equal(ret, (int)removed);
		}
		if (op % 100000 == 99999) {
			assert_int_equal(pt_mq_check(mq), 0);
			st = stats(mq);
			assert_int_equal(st.resident, resident);
			assert_int_equal(st.history, history);
		}
	}
	assert_int_equal(pt_mq_check(mq), 0);
	st = stats(mq);
	assert_int_equal(st.resident, resident);
	assert_int_equal(st.history, history);
	assert_int_equal(st.refaults, refaults);
	assert_int_equal(st.mispredictions, mispred);
	{
		uint64_t qsum = 0;

		for (unsigned int k = 0; k < PT_MQ_MAX_QUEUES; k++)
			qsum += st.queue_len[k];
		assert_int_equal(qsum, resident);
	}
	/* Every chunk is exactly where the shadow says, with a consistent queue. */
	for (uint32_t c = 0; c < R_CHUNKS; c++) {
		struct pt_mq_chunk ch = look(mq, id_of(c));

		assert_int_equal(ch.where, sh[c].where == S_RESIDENT ? PT_MQ_RESIDENT :
					   sh[c].where == S_HISTORY ? PT_MQ_HISTORY : PT_MQ_ABSENT);
		if (ch.where != PT_MQ_ABSENT)
			assert_int_equal(ch.freq, sh[c].freq);
		if (ch.where == PT_MQ_RESIDENT)
			assert_true(ch.queue <= (unsigned int)(31 - __builtin_clz(ch.freq)));
	}
	assert_true(st.demotions > 0);
	assert_true(st.promotions > 0);
	assert_true(st.history_drops > 0);
	assert_true(st.refaults > 0);
	assert_true(st.mispredictions > 0);
	assert_true(enospc > 0);
	pt_mq_free(mq);
	free(sh);
	free(fifo);
	free(fifo_seq);
	free(cand);
}

/* A chunk seen resident but never accessed is the coldest, and does not count as used. */
static void test_insert_cold(void **state)
{
	struct pt_mq *mq;
	struct pt_mq_chunk c;
	uint64_t out[4];

	(void)state;
	assert_int_equal(pt_mq_new(NULL, &mq), 0);
	assert_int_equal(pt_mq_touch(mq, 1), PT_MQ_NEW);
	pt_mq_epoch(mq);
	assert_int_equal(pt_mq_insert_cold(mq, 2), PT_MQ_NEW);
	assert_int_equal(pt_mq_insert_cold(mq, 2), 0);		/* already known */
	assert_int_equal(pt_mq_insert_cold(mq, 1), 0);		/* known and used: unchanged */
	assert_int_equal(pt_mq_lookup(mq, 2, &c), 0);
	assert_int_equal(c.stamp, 0);
	assert_int_equal(pt_mq_coldest(mq, out, 4), 2);
	assert_int_equal(out[0], 2);				/* colder than chunk 1 */
	assert_int_equal(pt_mq_touch(mq, 2), PT_MQ_HIT);	/* now really used */
	assert_int_equal(pt_mq_lookup(mq, 2, &c), 0);
	assert_int_equal(c.freq, 2);
	assert_int_equal(pt_mq_check(mq), 0);
	pt_mq_free(mq);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_cold),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_bad_calls),
		cmocka_unit_test(test_promotion),
		cmocka_unit_test(test_touch_once_per_epoch),
		cmocka_unit_test(test_demotion),
		cmocka_unit_test(test_demotion_bulk),
		cmocka_unit_test(test_coldest_hottest),
		cmocka_unit_test(test_history_restore),
		cmocka_unit_test(test_lifetime_adaptation),
		cmocka_unit_test(test_lifetime_share),
		cmocka_unit_test(test_history_bound),
		cmocka_unit_test(test_resident_bound),
		cmocka_unit_test(test_remove),
		cmocka_unit_test(test_randomized),
	};

	return cmocka_run_group_tests_name("mq", tests, NULL, NULL);
}
