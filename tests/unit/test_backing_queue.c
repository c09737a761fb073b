// SPDX-License-Identifier: GPL-2.0
/* The backing devices' read queue the wake prefetch waits on: found from sysfs, summed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <time.h>

#include "backing_queue.h"
#include "fixture.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void test_parse_inflight(void **state)
{
	uint64_t r = 7;

	(void)state;
	assert_int_equal(pt_parse_inflight("       3        1\n", &r), 0);
	assert_int_equal(r, 3);
	assert_int_equal(pt_parse_inflight("0 0", &r), 0);
	assert_int_equal(r, 0);
	assert_int_equal(pt_parse_inflight("12\n", &r), -EINVAL);
	assert_int_equal(pt_parse_inflight("1 2 3\n", &r), -EINVAL);
	assert_int_equal(pt_parse_inflight("", &r), -EINVAL);
}

/*
 * Two tiers, on a namespace and a partition: their backing devices' reads add up. A third
 * whose backing device has no inflight file, and a fourth without backing_dev (an older
 * module), are left out.
 */
static void test_queue_of_the_tiers(void **state)
{
	char *d = fx_tmpdir(), blk[PATH_MAX], cls[PATH_MAX];
	struct pt_backing_queue q;
	double t0;

	(void)state;
	snprintf(blk, sizeof(blk), "%s/block", d);
	snprintf(cls, sizeof(cls), "%s/class", d);
	fx_write(d, "block/pagetier0/backing_dev", "/dev/nvme0n1p2\n");
	fx_write(d, "block/pagetier1/backing_dev", "/dev/nvme1n1\n");
	fx_write(d, "block/pagetier2/backing_dev", "/dev/sdz\n");
	fx_write(d, "block/pagetier3/size", "0\n");
	fx_write(d, "block/nvme0n1/size", "0\n");
	fx_write(d, "class/nvme0n1p2/inflight", "      12        4\n");
	fx_write(d, "class/nvme1n1/inflight", "       9        0\n");
	assert_int_equal(pt_backing_queue_open(&q, blk, cls), 2);
	assert_int_equal(pt_backing_queue_reads(&q), 21);
	/* 21 > PT_PREFETCH_QUEUED_READS: the wait is bounded. */
	t0 = now_ms();
	assert_true(pt_backing_queue_wait(&q) >= PT_PREFETCH_QUEUE_WAIT_MS);
	assert_true(now_ms() - t0 < PT_PREFETCH_QUEUE_WAIT_MS + 500);
	/* Short again: no wait. The file is read afresh each time. */
	fx_write(d, "class/nvme0n1p2/inflight", "       2       40\n");
	fx_write(d, "class/nvme1n1/inflight", "       1        0\n");
	assert_int_equal(pt_backing_queue_reads(&q), 3);
	assert_int_equal(pt_backing_queue_wait(&q), 0);
	pt_backing_queue_close(&q);
	assert_int_equal(q.n, 0);
	/* No tiers, or nothing open: no queue, no wait. */
	assert_int_equal(pt_backing_queue_wait(NULL), 0);
	assert_int_equal(pt_backing_queue_open(&q, cls, cls), 0);
	assert_int_equal(pt_backing_queue_reads(&q), 0);
	assert_int_equal(pt_backing_queue_wait(&q), 0);
	fx_rmtree(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_inflight),
		cmocka_unit_test(test_queue_of_the_tiers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
