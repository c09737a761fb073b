// SPDX-License-Identifier: GPL-2.0
/* What each raw signal means for the idle machine (activity.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "activity.h"
#include "pagetier.h"
#include "pagetier/preload_proto.h"

static void test_bpf(void **state)
{
	struct pt_signal s;

	(void)state;
	s = pt_signal_bpf(4, 0x0800, 0);			/* ingress packet, IPv4 */
	assert_int_equal(s.kind, PT_SIG_PACKET);
	s = pt_signal_bpf(2, 0, 0);			/* swap-in */
	assert_int_equal(s.kind, PT_SIG_REFAULT);
	assert_int_equal(s.pages, 1);
	s = pt_signal_bpf(1, 6, 0);			/* fault, sampled 1 in 64: weak */
	assert_int_equal(s.kind, PT_SIG_REFAULT);
	assert_int_equal(s.pages, 1);
	s = pt_signal_bpf(3, 0, 0);			/* task wakeup: timers */
	assert_int_equal(s.kind, PT_SIG_NONE);
	assert_int_equal(pt_signal_bpf(99, 0, 0).kind, PT_SIG_NONE);
	/* Dated by the event's CLOCK_MONOTONIC nanoseconds. */
	assert_int_equal(pt_signal_bpf(2, 0, 1234567890).at_ms, 1234);
}

static void test_tier(void **state)
{
	struct pagetier_event e = { .type = PAGETIER_EVENT_DEMAND_READ, .pages = 8 };
	struct pt_signal s;

	(void)state;
	s = pt_signal_tier(&e);
	assert_int_equal(s.kind, PT_SIG_REFAULT);
	assert_int_equal(s.pages, 8);
	e.type = PAGETIER_EVENT_LOST;
	assert_int_equal(pt_signal_tier(&e).kind, PT_SIG_NONE);
}

static void test_preload(void **state)
{
	struct pt_preload_event ev = { .type = PT_PRELOAD_REC_ALLOC, .flags = PT_PRELOAD_F_SAMPLED,
				       .len = 48 };
	struct pt_signal s;

	(void)state;
	s = pt_signal_preload(&ev);		/* one sample stands for 256 KiB allocated */
	assert_int_equal(s.kind, PT_SIG_REFAULT);
	assert_int_equal(s.pages, 64);
	ev.flags = PT_PRELOAD_F_BIG;
	ev.len = 8 << 20;
	assert_int_equal(pt_signal_preload(&ev).pages, 2048);
	ev = (struct pt_preload_event){ .type = PT_PRELOAD_REC_HEARTBEAT, .len = 600 };
	assert_int_equal(pt_signal_preload(&ev).pages, 1);	/* a timer's few allocations */
	ev = (struct pt_preload_event){ .type = PT_PRELOAD_REC_FREE, .len = 1 << 20 };
	assert_int_equal(pt_signal_preload(&ev).kind, PT_SIG_NONE);
	ev = (struct pt_preload_event){ .type = PT_PRELOAD_REC_MREMAP, .len = 4096,
					.len2 = 3 * 4096 };
	assert_int_equal(pt_signal_preload(&ev).pages, 2);	/* what it grew by */
}

static const struct pt_idle_params p = { .threshold_ms = 1000, .cpu_permille = 50,
					 .fresh_bytes = 1 << 20, .wake_pages = 64 };

/* A new context, quiet from the start: idle at 1500 ms. */
static void idle_at_1500(struct pt_idle *t)
{
	pt_idle_init(t, 0);
	pt_idle_cpu(t, &p, 0, 0);
	assert_int_equal(pt_idle_cpu(t, &p, 0, 1500), PT_EV_WENT_IDLE);
}

static void test_feeds_idle_machine(void **state)
{
	struct pt_idle t;

	(void)state;
	idle_at_1500(&t);
	/* Sixty-three pages of refaults in 400 ms: a trickle; the sixty-fourth wakes it. */
	assert_int_equal(pt_idle_signal(&t, &p, pt_signal_bpf(1, 5, 0), 1600), PT_EV_NONE);
	assert_int_equal(pt_idle_signal(&t, &p, (struct pt_signal){ PT_SIG_REFAULT, 62, 0 }, 1900),
			 PT_EV_NONE);
	assert_int_equal(pt_idle_signal(&t, &p, pt_signal_bpf(2, 0, 0), 2000), PT_EV_WOKE);
	pt_idle_wake_done(&t, 2000);
	assert_int_equal(pt_idle_signal(&t, &p, pt_signal_bpf(3, 0, 0), 2100), PT_EV_NONE);
}

/*
 * A signal with its own time is judged at it (a ring read late does not squeeze a trickle
 * of refaults into a burst); one dated after the read (no such thing) at the read.
 */
static void test_signal_time(void **state)
{
	struct pt_idle t;

	(void)state;
	idle_at_1500(&t);
	/*
	 * 10 pages at 2.0 s and 10 at 3.2 s, both read at 3.3 s: two windows, no wake (dated
	 * by the read, they would be 20 pages at once: more than the rate).
	 */
	assert_int_equal(pt_idle_signal(&t, &p, (struct pt_signal){ PT_SIG_REFAULT, 10, 2000 },
					3300), PT_EV_NONE);
	assert_int_equal(pt_idle_signal(&t, &p, (struct pt_signal){ PT_SIG_REFAULT, 10, 3200 },
					3300), PT_EV_NONE);
	/* Dated in the future: taken at the read, 3.4 s, in the window of 3.2 s: 16 pages. */
	assert_int_equal(pt_idle_signal(&t, &p, (struct pt_signal){ PT_SIG_REFAULT, 6, 9000 },
					3400), PT_EV_WOKE);
	assert_int_equal(t.woke_refault_span_ms, 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bpf),
		cmocka_unit_test(test_tier),
		cmocka_unit_test(test_preload),
		cmocka_unit_test(test_feeds_idle_machine),
		cmocka_unit_test(test_signal_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
