// SPDX-License-Identifier: GPL-2.0
/* The idle/wake state machine, driven by synthetic CPU-usage samples. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "idle.h"

#define IDLE_MS 2000

static void test_goes_idle_after_threshold(void **state)
{
	struct pt_idle t;
	uint64_t usage = 5000000;

	(void)state;
	pt_idle_init(&t, 0);
	assert_int_equal(pt_idle_update(&t, usage, 0, IDLE_MS), PT_EV_NONE);	/* primes */
	/* Busy: usage grows every sample. */
	for (uint64_t ms = 100; ms <= 1000; ms += 100) {
		usage += 50000;
		assert_int_equal(pt_idle_update(&t, usage, ms, IDLE_MS), PT_EV_NONE);
	}
	/* Quiet from 1000 ms on: idle exactly once, at 1000 + IDLE_MS. */
	for (uint64_t ms = 1100; ms < 1000 + IDLE_MS; ms += 100)
		assert_int_equal(pt_idle_update(&t, usage, ms, IDLE_MS), PT_EV_NONE);
	assert_int_equal(t.state, PT_STATE_ACTIVE);
	assert_int_equal(pt_idle_update(&t, usage, 1000 + IDLE_MS, IDLE_MS), PT_EV_WENT_IDLE);
	assert_int_equal(t.state, PT_STATE_IDLE);
	assert_int_equal(pt_idle_update(&t, usage, 9000, IDLE_MS), PT_EV_NONE);
}

static void test_noise_is_not_activity(void **state)
{
	struct pt_idle t;
	uint64_t usage = 100;

	(void)state;
	pt_idle_init(&t, 0);
	pt_idle_update(&t, usage, 0, IDLE_MS);
	for (uint64_t ms = 100; ms <= IDLE_MS; ms += 100) {
		usage += PT_IDLE_CPU_NOISE_USEC - 1;	/* kernel work charged to the cgroup */
		pt_idle_update(&t, usage, ms, IDLE_MS);
	}
	assert_int_equal(t.state, PT_STATE_IDLE);
}

static void test_wakes_on_activity_then_done(void **state)
{
	struct pt_idle t;

	(void)state;
	pt_idle_init(&t, 0);
	pt_idle_update(&t, 0, 0, IDLE_MS);
	assert_int_equal(pt_idle_update(&t, 0, IDLE_MS, IDLE_MS), PT_EV_WENT_IDLE);
	assert_int_equal(pt_idle_update(&t, PT_IDLE_CPU_NOISE_USEC, 5000, IDLE_MS), PT_EV_WOKE);
	assert_int_equal(t.state, PT_STATE_WAKING);
	assert_int_equal(t.woke_at_ms, 5000);
	/* Still busy while waking: no second wake. */
	assert_int_equal(pt_idle_update(&t, 90000, 5100, IDLE_MS), PT_EV_NONE);
	pt_idle_wake_done(&t);
	assert_int_equal(t.state, PT_STATE_ACTIVE);
	/* And it can go idle again. */
	assert_int_equal(pt_idle_update(&t, 90000, 5100 + IDLE_MS, IDLE_MS), PT_EV_WENT_IDLE);
}

static void test_poke_wakes_only_idle(void **state)
{
	struct pt_idle t;

	(void)state;
	pt_idle_init(&t, 0);
	pt_idle_update(&t, 0, 0, IDLE_MS);
	assert_int_equal(pt_idle_poke(&t, 10), PT_EV_NONE);	/* active: nothing to do */
	pt_idle_update(&t, 0, 10 + IDLE_MS, IDLE_MS);
	assert_int_equal(t.state, PT_STATE_IDLE);
	assert_int_equal(pt_idle_poke(&t, 7000), PT_EV_WOKE);
	assert_int_equal(t.woke_at_ms, 7000);
}

/* CPU the daemon caused (a trim at idle), rebased away, does not wake; later use does. */
static void test_rebase_absorbs_caused_cpu(void **state)
{
	struct pt_idle t;
	uint64_t usage = 1000000;

	(void)state;
	pt_idle_init(&t, 0);
	pt_idle_update(&t, usage, 0, IDLE_MS);
	assert_int_equal(pt_idle_update(&t, usage, IDLE_MS, IDLE_MS), PT_EV_WENT_IDLE);
	usage += 40000;				/* 40 ms of malloc_trim */
	pt_idle_rebase(&t, usage);
	assert_int_equal(t.state, PT_STATE_IDLE);
	assert_int_equal(pt_idle_update(&t, usage, IDLE_MS + 100, IDLE_MS), PT_EV_NONE);
	assert_int_equal(t.state, PT_STATE_IDLE);
	usage += 5000;				/* the application runs */
	assert_int_equal(pt_idle_update(&t, usage, IDLE_MS + 200, IDLE_MS), PT_EV_WOKE);
}

static void test_usage_going_back_is_activity(void **state)
{
	struct pt_idle t;

	(void)state;
	pt_idle_init(&t, 0);
	pt_idle_update(&t, 1000000, 0, IDLE_MS);
	pt_idle_update(&t, 1000000, IDLE_MS, IDLE_MS);
	assert_int_equal(t.state, PT_STATE_IDLE);
	/* The cgroup was removed and recreated under the same path. */
	assert_int_equal(pt_idle_update(&t, 10, IDLE_MS + 100, IDLE_MS), PT_EV_WOKE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goes_idle_after_threshold),
		cmocka_unit_test(test_noise_is_not_activity),
		cmocka_unit_test(test_wakes_on_activity_then_done),
		cmocka_unit_test(test_poke_wakes_only_idle),
		cmocka_unit_test(test_usage_going_back_is_activity),
		cmocka_unit_test(test_rebase_absorbs_caused_cpu),
	};

	return cmocka_run_group_tests_name("idle", tests, NULL, NULL);
}
