// SPDX-License-Identifier: GPL-2.0
/* The idle/wake state machine: "not serving" from CPU, packets, memory and refaults. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "idle.h"

#define IDLE_MS 2000

static const struct pt_idle_params P = {
	.threshold_ms = IDLE_MS,
	.cpu_permille = 50,		/* 5% of a CPU: 50 us per ms */
	.max_packets = 0,
	.working_set_bytes = 16 << 20,
	.fresh_bytes = 1 << 20,
	.wake_pages = 64,
};

/* Feeds CPU samples every @step ms from @from to @to, @permille of a CPU in between. */
static enum pt_idle_event run_cpu(struct pt_idle *t, const struct pt_idle_params *p,
				  uint64_t *usage, uint64_t from, uint64_t to, uint64_t step,
				  uint64_t permille, uint64_t *went_idle_at)
{
	enum pt_idle_event last = PT_EV_NONE;

	for (uint64_t ms = from; ms <= to; ms += step) {
		enum pt_idle_event ev;

		*usage += permille * step;
		ev = pt_idle_cpu(t, p, *usage, ms);
		if (ev == PT_EV_WENT_IDLE && went_idle_at)
			*went_idle_at = ms;
		if (ev != PT_EV_NONE)
			last = ev;
	}
	return last;
}

/* A new context, its CPU usage from @usage, quiet from the start: idle at 3000 ms. */
static void quiet_until_idle(struct pt_idle *t, uint64_t *usage)
{
	pt_idle_init(t, 0);
	pt_idle_cpu(t, &P, *usage, 0);
	assert_int_equal(run_cpu(t, &P, usage, 100, 3000, 100, 0, NULL), PT_EV_WENT_IDLE);
}

static void test_goes_idle_after_threshold(void **state)
{
	struct pt_idle t;
	uint64_t usage = 5000000, at = 0;

	(void)state;
	pt_idle_init(&t, 0);
	assert_int_equal(pt_idle_cpu(&t, &P, usage, 0), PT_EV_NONE);	/* primes */
	/* Busy at half a CPU for a second: never idle. */
	assert_int_equal(run_cpu(&t, &P, &usage, 100, 1000, 100, 500, NULL), PT_EV_NONE);
	assert_int_equal(t.state, PT_STATE_ACTIVE);
	assert_int_equal(t.cause, PT_CAUSE_CPU);
	/*
	 * Quiet from then on: idle exactly once, when the work has left the window (its
	 * average over the last IDLE_MS is down to the share): 450 ms of CPU from 100 to
	 * 1000 ms, at most 100 ms of which may remain in the window.
	 */
	assert_int_equal(run_cpu(&t, &P, &usage, 1100, 9000, 100, 0, &at), PT_EV_WENT_IDLE);
	assert_int_equal(t.state, PT_STATE_IDLE);
	assert_true(at >= 2700 && at <= 2900);
	assert_int_equal(t.idle_since_ms, at);
}

static void test_timers_are_not_serving(void **state)
{
	struct pt_idle t;
	uint64_t usage = 0, at = 0;

	(void)state;
	pt_idle_init(&t, 0);
	pt_idle_cpu(&t, &P, usage, 0);
	/* A server's timers: 2% of a CPU all the time (redis's serverCron under TCG). */
	assert_int_equal(run_cpu(&t, &P, &usage, 100, 10000, 100, 20, &at), PT_EV_WENT_IDLE);
	assert_int_equal(at, IDLE_MS);
	/* ... and staying idle under them. */
	assert_int_equal(run_cpu(&t, &P, &usage, 10100, 20000, 100, 20, NULL), PT_EV_NONE);
	assert_int_equal(t.state, PT_STATE_IDLE);
}

static void test_continuous_work_is_never_idle(void **state)
{
	struct pt_idle t;
	uint64_t usage = 0;

	(void)state;
	pt_idle_init(&t, 0);
	pt_idle_cpu(&t, &P, usage, 0);
	/* Just above the share, for a minute. */
	assert_int_equal(run_cpu(&t, &P, &usage, 100, 60000, 100, 60, NULL), PT_EV_NONE);
	assert_int_equal(t.state, PT_STATE_ACTIVE);
}

/* Housekeeping bursts now and then are tolerated, active or idle; sustained work is not. */
static void test_bursts_tolerated_sustained_work_wakes(void **state)
{
	const struct pt_idle_params slow = { .threshold_ms = 30000, .cpu_permille = 50,
					     .working_set_bytes = 16 << 20,
					     .fresh_bytes = 1 << 20, .wake_pages = 64 };
	struct pt_idle t;
	uint64_t usage = 0, at = 0, ms;

	(void)state;
	pt_idle_init(&t, 0);
	pt_idle_cpu(&t, &slow, usage, 0);
	/* An autovacuum-like burst: 300 ms of CPU every 20 s, 1.5% on average. */
	for (ms = 100; ms <= 120000; ms += 100) {
		usage += (ms % 20000 < 300) ? 100000 : 0;
		if (pt_idle_cpu(&t, &slow, usage, ms) == PT_EV_WENT_IDLE)
			at = ms;
	}
	assert_int_equal(at, 30000);
	assert_int_equal(t.state, PT_STATE_IDLE);
	/* Sustained work at 20% of a CPU: a wake once the last 10 s show it. */
	for (ms = 120100; ms <= 140000 && t.state == PT_STATE_IDLE; ms += 100) {
		usage += 20000;
		if (pt_idle_cpu(&t, &slow, usage, ms) == PT_EV_WOKE)
			at = ms;
	}
	assert_int_equal(t.state, PT_STATE_WAKING);
	assert_true(at > 121000 && at <= 130100);
	assert_int_equal(t.woke_at_ms, at);
	assert_int_equal(t.cause, PT_CAUSE_CPU);
	pt_idle_wake_done(&t, at + 100);
	assert_int_equal(t.state, PT_STATE_ACTIVE);
}

/*
 * A prefetch that takes longer than idle_threshold: quiet counts from its end, so the
 * container is not found idle (and offloaded again) the moment its memory is back.
 */
static void test_quiet_counts_from_the_wake_done(void **state)
{
	const struct pt_idle_params fast = { .threshold_ms = 2000, .cpu_permille = 50,
					     .wake_pages = 64 };
	struct pt_idle t;
	uint64_t usage = 0, ms;

	(void)state;
	pt_idle_init(&t, 0);
	for (ms = 0; ms <= 3000 && t.state != PT_STATE_IDLE; ms += 100)
		pt_idle_cpu(&t, &fast, usage, ms);
	assert_int_equal(t.state, PT_STATE_IDLE);
	assert_int_equal(pt_idle_poke(&t, 5000), PT_EV_WOKE);	/* pagetierctl prefetch */
	/* The prefetch runs 2.9 s; the application has not run yet. */
	for (ms = 5100; ms < 7900; ms += 100)
		assert_int_equal(pt_idle_cpu(&t, &fast, usage, ms), PT_EV_NONE);
	pt_idle_wake_done(&t, 7900);
	assert_int_equal(t.state, PT_STATE_ACTIVE);
	for (ms = 8000; ms < 9900; ms += 100)
		assert_int_equal(pt_idle_cpu(&t, &fast, usage, ms), PT_EV_NONE);
	assert_int_equal(t.state, PT_STATE_ACTIVE);
	/* Quiet for the whole threshold after it: idle. */
	for (; ms <= 10500 && t.state == PT_STATE_ACTIVE; ms += 100)
		pt_idle_cpu(&t, &fast, usage, ms);
	assert_int_equal(t.state, PT_STATE_IDLE);
	assert_true(ms - 100 >= 9900);
}

static void test_recreated_cgroup_is_activity(void **state)
{
	struct pt_idle t;
	uint64_t usage = 1000000;

	(void)state;
	quiet_until_idle(&t, &usage);
	assert_int_equal(pt_idle_cpu(&t, &P, 10, 3100), PT_EV_WOKE);
}

static void test_packets(void **state)
{
	struct pt_idle_params tolerant = P;
	struct pt_idle t;
	uint64_t usage = 0;

	(void)state;
	/* No tolerance: one packet is activity, and wakes an idle context at once. */
	pt_idle_init(&t, 0);
	pt_idle_cpu(&t, &P, usage, 0);
	run_cpu(&t, &P, &usage, 100, 1500, 100, 0, NULL);
	assert_int_equal(pt_idle_packet(&t, &P, 1550), PT_EV_NONE);
	assert_int_equal(t.last_active_ms, 1550);
	assert_int_equal(t.cause, PT_CAUSE_PACKETS);
	assert_int_equal(run_cpu(&t, &P, &usage, 1600, 4000, 100, 0, NULL), PT_EV_WENT_IDLE);
	assert_int_equal(pt_idle_packet(&t, &P, 4050), PT_EV_WOKE);

	/* Two packets per window tolerated (health checks); the third within it is not. */
	tolerant.max_packets = 2;
	pt_idle_init(&t, 0);
	usage = 0;
	pt_idle_cpu(&t, &tolerant, usage, 0);
	assert_int_equal(run_cpu(&t, &tolerant, &usage, 100, 3000, 100, 0, NULL),
			 PT_EV_WENT_IDLE);
	assert_int_equal(pt_idle_packet(&t, &tolerant, 3100), PT_EV_NONE);
	assert_int_equal(pt_idle_packet(&t, &tolerant, 4000), PT_EV_NONE);
	assert_int_equal(t.state, PT_STATE_IDLE);
	assert_int_equal(pt_idle_packet(&t, &tolerant, 4500), PT_EV_WOKE);
	/* Packets older than the window are forgotten. */
	pt_idle_wake_done(&t, 4500);
	assert_int_equal(run_cpu(&t, &tolerant, &usage, 4600, 7000, 100, 0, NULL),
			 PT_EV_WENT_IDLE);
	assert_int_equal(pt_idle_packet(&t, &tolerant, 9000), PT_EV_NONE);
	assert_int_equal(pt_idle_packet(&t, &tolerant, 9100), PT_EV_NONE);
	assert_int_equal(t.state, PT_STATE_IDLE);
}

static void test_memory_spread(void **state)
{
	struct pt_idle t;
	uint64_t usage = 0, at = 0;

	(void)state;
	pt_idle_init(&t, 0);
	pt_idle_cpu(&t, &P, usage, 0);
	/* Timers touch the same small set: a little fresh memory per epoch is quiet. */
	for (uint64_t ms = 1000; ms <= 5000; ms += 1000) {
		run_cpu(&t, &P, &usage, ms - 900, ms, 100, 0, &at);
		if (t.state == PT_STATE_ACTIVE)
			assert_int_equal(pt_idle_memory(&t, &P, 4 << 20, 64 << 10, ms),
					 PT_EV_NONE);
	}
	assert_int_equal(t.state, PT_STATE_IDLE);
	assert_int_equal(at, IDLE_MS);

	/* Requests served from memory touch memory it did not touch a moment ago. */
	pt_idle_init(&t, 0);
	usage = 0;
	pt_idle_cpu(&t, &P, usage, 0);
	for (uint64_t ms = 1000; ms <= 10000; ms += 1000) {
		run_cpu(&t, &P, &usage, ms - 900, ms, 100, 10, NULL);
		assert_int_equal(pt_idle_memory(&t, &P, 4 << 20, 4 << 20, ms), PT_EV_NONE);
	}
	assert_int_equal(t.state, PT_STATE_ACTIVE);
	assert_int_equal(t.cause, PT_CAUSE_MEMORY);

	/* Reading the same 64 MiB over and over at little CPU: continuous work, never idle. */
	pt_idle_init(&t, 0);
	usage = 0;
	pt_idle_cpu(&t, &P, usage, 0);
	for (uint64_t ms = 1000; ms <= 10000; ms += 1000) {
		run_cpu(&t, &P, &usage, ms - 900, ms, 100, 10, NULL);
		assert_int_equal(pt_idle_memory(&t, &P, 64 << 20, 0, ms), PT_EV_NONE);
	}
	assert_int_equal(t.state, PT_STATE_ACTIVE);
}

/* A busy period without packets, of a context that takes them, is its own background. */
static void test_busy_was_background(void **state)
{
	struct pt_idle t;
	uint64_t usage = 0;

	(void)state;
	/* Never a packet: a batch job, whose every busy period is its work. */
	quiet_until_idle(&t, &usage);
	assert_int_equal(pt_idle_refault(&t, &P, 64, 3100), PT_EV_WOKE);
	pt_idle_wake_done(&t, 3100);
	assert_false(pt_idle_busy_was_background(&t));
	/* A server: woken by its client's packet. */
	assert_int_equal(run_cpu(&t, &P, &usage, 3200, 6000, 100, 0, NULL), PT_EV_WENT_IDLE);
	assert_int_equal(pt_idle_packet(&t, &P, 6050), PT_EV_WOKE);
	pt_idle_wake_done(&t, 6050);
	assert_false(pt_idle_busy_was_background(&t));
	/* Its timers after the idle offload: swap-ins, no packet. */
	assert_int_equal(run_cpu(&t, &P, &usage, 6100, 9000, 100, 0, NULL), PT_EV_WENT_IDLE);
	assert_int_equal(pt_idle_refault(&t, &P, 64, 9050), PT_EV_WOKE);
	pt_idle_wake_done(&t, 9050);
	assert_true(pt_idle_busy_was_background(&t));
	/* A request in that busy period makes it work. */
	assert_int_equal(pt_idle_packet(&t, &P, 9500), PT_EV_NONE);
	assert_false(pt_idle_busy_was_background(&t));
}

static void test_refaults_wake_only_beyond_a_trickle(void **state)
{
	struct pt_idle t;
	uint64_t usage = 0;

	(void)state;
	pt_idle_init(&t, 0);
	/* While active, refaults are its work: no verdict. */
	assert_int_equal(pt_idle_refault(&t, &P, 1000, 50), PT_EV_NONE);
	assert_int_equal(t.last_active_ms, 0);
	pt_idle_cpu(&t, &P, usage, 0);
	assert_int_equal(run_cpu(&t, &P, &usage, 100, 3000, 100, 0, NULL), PT_EV_WENT_IDLE);
	/* A timer touching an offloaded page now and then: no wake. */
	for (uint64_t ms = 3100; ms < 10000; ms += 500)
		assert_int_equal(pt_idle_refault(&t, &P, 8, ms), PT_EV_NONE);
	assert_int_equal(t.state, PT_STATE_IDLE);
	/* Sixteen pages over 300 ms: under the rate; the rest of the window's 64 wake. */
	assert_int_equal(pt_idle_refault(&t, &P, 8, 20000), PT_EV_NONE);
	assert_int_equal(pt_idle_refault(&t, &P, 8, 20300), PT_EV_NONE);
	assert_int_equal(pt_idle_refault(&t, &P, 47, 20900), PT_EV_NONE);
	assert_int_equal(pt_idle_refault(&t, &P, 1, 20950), PT_EV_WOKE);
	assert_int_equal(t.cause, PT_CAUSE_REFAULTS);
	/* What decided it, for the log: 64 pages over 950 ms. */
	assert_int_equal(t.woke_refault_pages, 64);
	assert_int_equal(t.woke_refault_span_ms, 950);
}

/*
 * The application reading its memory back wakes it as soon as the rate shows: a quarter of
 * wake_pages within the window's first quarter, without waiting for the rest.
 */
static void test_refaults_wake_at_the_rate_early(void **state)
{
	struct pt_idle t;
	uint64_t usage = 0;

	(void)state;
	quiet_until_idle(&t, &usage);
	assert_int_equal(pt_idle_refault(&t, &P, 10, 20000), PT_EV_NONE);
	assert_int_equal(pt_idle_refault(&t, &P, 5, 20030), PT_EV_NONE);
	assert_int_equal(pt_idle_refault(&t, &P, 1, 20040), PT_EV_WOKE);
	assert_int_equal(t.woke_refault_pages, 16);
	assert_int_equal(t.woke_refault_span_ms, 40);
	/* A quarter of them just after the quarter: the full count is needed. */
	quiet_until_idle(&t, &usage);
	assert_int_equal(pt_idle_refault(&t, &P, 15, 30000), PT_EV_NONE);
	assert_int_equal(pt_idle_refault(&t, &P, 1, 30251), PT_EV_NONE);
	assert_int_equal(t.state, PT_STATE_IDLE);
}

/*
 * Its timers' burst of refaults woke it, its prefetch ended at @done, and nothing else came:
 * idle again one threshold later. Returns when it went idle.
 */
static uint64_t woke_for_nothing(struct pt_idle *t, uint64_t *usage, uint64_t at,
				 uint64_t pages, uint64_t done)
{
	uint64_t idle_at = 0;

	assert_int_equal(pt_idle_refault(t, &P, pages, at), PT_EV_WOKE);
	pt_idle_wake_done(t, done);
	assert_int_equal(run_cpu(t, &P, usage, done + 100, done + IDLE_MS, 100, 0, &idle_at),
			 PT_EV_WENT_IDLE);
	return idle_at;
}

/*
 * PostgreSQL's background processes read 16 pages back in a few ms right after its idle
 * offload, as fast as a real wake. Each wake by refaults that goes idle again as soon as it
 * may, with nothing after its prefetch, doubles the refaults the next one needs (up to 8
 * times); one followed by work sets them back.
 */
static void test_false_wakes_raise_the_refaults_needed(void **state)
{
	struct pt_idle t;
	uint64_t usage = 0, at;

	(void)state;
	quiet_until_idle(&t, &usage);
	assert_int_equal(pt_idle_wake_pages(&t, &P), 64);
	at = woke_for_nothing(&t, &usage, 3100, 16, 3200);
	assert_true(t.last_wake_false);
	assert_int_equal(t.false_wakes, 1);
	assert_int_equal(pt_idle_wake_pages(&t, &P), 128);
	/* The same burst no longer wakes; twice as fast does. */
	assert_int_equal(pt_idle_refault(&t, &P, 16, at + 500), PT_EV_NONE);
	at = woke_for_nothing(&t, &usage, at + 510, 16, at + 600);
	assert_int_equal(pt_idle_wake_pages(&t, &P), 256);
	at = woke_for_nothing(&t, &usage, at + 100, 64, at + 200);
	assert_int_equal(pt_idle_wake_pages(&t, &P), 512);
	/* At most 8 times. */
	at = woke_for_nothing(&t, &usage, at + 100, 128, at + 200);
	assert_int_equal(t.false_wakes, 4);
	assert_int_equal(pt_idle_wake_pages(&t, &P), 512);
	/* A wake by another signal says nothing about its refaults: unchanged. */
	assert_int_equal(pt_idle_packet(&t, &P, at + 100), PT_EV_WOKE);
	pt_idle_wake_done(&t, at + 200);
	assert_int_equal(run_cpu(&t, &P, &usage, at + 300, at + 2200, 100, 0, &at),
			 PT_EV_WENT_IDLE);
	assert_false(t.last_wake_false);
	assert_int_equal(pt_idle_wake_pages(&t, &P), 512);
	/* A wake by refaults that led to work (its scan saw fresh memory): back to 64. */
	assert_int_equal(pt_idle_refault(&t, &P, 512, at + 100), PT_EV_WOKE);
	pt_idle_wake_done(&t, at + 200);
	assert_int_equal(pt_idle_memory(&t, &P, 4 << 20, 2 << 20, at + 1000), PT_EV_NONE);
	assert_int_equal(run_cpu(&t, &P, &usage, at + 300, at + 3100, 100, 0, &at),
			 PT_EV_WENT_IDLE);
	assert_false(t.last_wake_false);
	assert_int_equal(t.false_wakes, 4);
	assert_int_equal(pt_idle_wake_pages(&t, &P), 64);
}

/* A wake by refaults that kept its CPU above the share for a while did work: not false. */
static void test_wake_with_sustained_cpu_is_not_false(void **state)
{
	struct pt_idle t;
	uint64_t usage = 0, at;

	(void)state;
	quiet_until_idle(&t, &usage);
	at = woke_for_nothing(&t, &usage, 3100, 16, 3200);
	assert_int_equal(pt_idle_wake_pages(&t, &P), 128);
	assert_int_equal(pt_idle_refault(&t, &P, 128, at + 100), PT_EV_WOKE);
	pt_idle_wake_done(&t, at + 200);
	/* Half a CPU for 4 s, then quiet: idle well past two thresholds after the prefetch. */
	assert_int_equal(run_cpu(&t, &P, &usage, at + 300, at + 4200, 100, 500, NULL), PT_EV_NONE);
	assert_int_equal(run_cpu(&t, &P, &usage, at + 4300, at + 8200, 100, 0, NULL),
			 PT_EV_WENT_IDLE);
	assert_false(t.last_wake_false);
	assert_int_equal(t.false_wakes, 1);
	assert_int_equal(pt_idle_wake_pages(&t, &P), 64);
}

/*
 * Refaults are dated when they happened (the event rings' times): one read after a later
 * one counts in the window it is read in, rather than restarting the count.
 */
static void test_refaults_read_out_of_order(void **state)
{
	struct pt_idle t;
	uint64_t usage = 0;

	(void)state;
	quiet_until_idle(&t, &usage);
	assert_int_equal(pt_idle_refault(&t, &P, 10, t.idle_since_ms - 5), PT_EV_NONE);
	assert_int_equal(t.refault_win_pages, 10);
	assert_int_equal(pt_idle_refault(&t, &P, 8, t.idle_since_ms + 500), PT_EV_NONE);
	assert_int_equal(pt_idle_refault(&t, &P, 46, t.idle_since_ms + 490), PT_EV_WOKE);
	assert_int_equal(t.woke_refault_pages, 64);
}

static void test_poke_and_rebase(void **state)
{
	struct pt_idle t;
	uint64_t usage = 0;

	(void)state;
	quiet_until_idle(&t, &usage);
	/* A malloc_trim the daemon asked for: its CPU is not a wake. */
	usage += 200000;
	pt_idle_rebase(&t, usage, 3100);
	assert_int_equal(pt_idle_cpu(&t, &P, usage, 3200), PT_EV_NONE);
	assert_int_equal(t.state, PT_STATE_IDLE);
	assert_int_equal(pt_idle_poke(&t, 4000), PT_EV_WOKE);
	assert_int_equal(t.cause, PT_CAUSE_SIGNAL);
	assert_int_equal(pt_idle_poke(&t, 4100), PT_EV_NONE);	/* already waking */
	assert_string_equal(pt_state_name(t.state), "waking");
	assert_string_equal(pt_idle_cause_name(PT_CAUSE_MEMORY), "memory");
}

static void test_params_check(void **state)
{
	struct pt_idle_params p = P;

	(void)state;
	assert_int_equal(pt_idle_params_check(&p), 0);
	p.threshold_ms = 50;
	assert_int_not_equal(pt_idle_params_check(&p), 0);
	p = P;
	p.max_packets = PT_IDLE_PACKET_RING;
	assert_int_not_equal(pt_idle_params_check(&p), 0);
	p = P;
	p.wake_pages = 0;
	assert_int_not_equal(pt_idle_params_check(&p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goes_idle_after_threshold),
		cmocka_unit_test(test_timers_are_not_serving),
		cmocka_unit_test(test_continuous_work_is_never_idle),
		cmocka_unit_test(test_bursts_tolerated_sustained_work_wakes),
		cmocka_unit_test(test_recreated_cgroup_is_activity),
		cmocka_unit_test(test_quiet_counts_from_the_wake_done),
		cmocka_unit_test(test_packets),
		cmocka_unit_test(test_busy_was_background),
		cmocka_unit_test(test_memory_spread),
		cmocka_unit_test(test_refaults_wake_only_beyond_a_trickle),
		cmocka_unit_test(test_refaults_read_out_of_order),
		cmocka_unit_test(test_refaults_wake_at_the_rate_early),
		cmocka_unit_test(test_false_wakes_raise_the_refaults_needed),
		cmocka_unit_test(test_wake_with_sustained_cpu_is_not_false),
		cmocka_unit_test(test_poke_and_rebase),
		cmocka_unit_test(test_params_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
