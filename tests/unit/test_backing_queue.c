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

/* class/NAME -> ../devices/PATH, as /sys/class/block's links. */
static void link_dev(const char *d, const char *name, const char *path)
{
	char from[PATH_MAX], to[PATH_MAX];

	snprintf(from, sizeof(from), "%s/class/%s", d, name);
	snprintf(to, sizeof(to), "../devices/%s", path);
	assert_int_equal(symlink(to, from), 0);
}

/* A fake sysfs under @d: its block/ and class/ directories, into @blk and @cls. */
static void fake_sysfs(const char *d, char *blk, char *cls)
{
	snprintf(blk, PATH_MAX, "%s/block", d);
	snprintf(cls, PATH_MAX, "%s/class", d);
	fx_write(d, "class/.keep", "");
}

/* Tier @id backed by /dev/@name, whose sysfs directory is devices/@path. */
static void fake_tier(const char *d, unsigned int id, const char *name, const char *path)
{
	char rel[PATH_MAX], dev[PATH_MAX];

	snprintf(rel, sizeof(rel), "block/pagetier%u/backing_dev", id);
	snprintf(dev, sizeof(dev), "/dev/%s\n", name);
	fx_write(d, rel, dev);
	link_dev(d, name, path);
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
 * Tiers on two drives: the drives' reads add up, a partition's drive's whole queue. A
 * tier whose backing device sysfs lacks, and one without backing_dev (an older module),
 * are left out.
 */
static void test_queue_of_the_tiers(void **state)
{
	char *d = fx_tmpdir(), blk[PATH_MAX], cls[PATH_MAX];
	struct pt_backing_queue q;
	double t0;

	(void)state;
	fake_sysfs(d, blk, cls);
	/*
	 * As sysfs has them: class/NAME links to the device's directory, a partition's below
	 * its disk's. Tiers 0 and 4 share the drive nvme0n1 (two partitions): counted once.
	 */
	fake_tier(d, 0, "nvme0n1p2", "nvme0n1/nvme0n1p2");
	fake_tier(d, 4, "nvme0n1p3", "nvme0n1/nvme0n1p3");
	fake_tier(d, 1, "nvme1n1", "nvme1n1");
	fx_write(d, "block/pagetier2/backing_dev", "/dev/sdz\n");
	fx_write(d, "block/pagetier3/size", "0\n");
	fx_write(d, "block/nvme0n1/size", "0\n");
	fx_write(d, "devices/nvme0n1/inflight", "      12        4\n");
	fx_write(d, "devices/nvme0n1/nvme0n1p2/partition", "2\n");
	fx_write(d, "devices/nvme0n1/nvme0n1p2/inflight", "       1        0\n");
	fx_write(d, "devices/nvme0n1/nvme0n1p3/partition", "3\n");
	fx_write(d, "devices/nvme1n1/inflight", "       9        0\n");
	assert_int_equal(pt_backing_queue_open(&q, blk, cls), 2);
	assert_int_equal(pt_backing_queue_reads(&q), 21);
	/* 21 > PT_PREFETCH_QUEUED_FAULTING (no watch: the low limit): the wait is bounded. */
	t0 = now_ms();
	assert_true(pt_backing_queue_wait(&q, NULL) >= PT_PREFETCH_QUEUE_WAIT_MS);
	assert_true(now_ms() - t0 < PT_PREFETCH_QUEUE_WAIT_MS + 500);
	/* Short again: no wait. The file is read afresh each time. */
	fx_write(d, "devices/nvme0n1/inflight", "       1       40\n");
	fx_write(d, "devices/nvme1n1/inflight", "       1        0\n");
	assert_int_equal(pt_backing_queue_reads(&q), 2);
	assert_int_equal(pt_backing_queue_wait(&q, NULL), 0);
	pt_backing_queue_close(&q);
	assert_int_equal(q.n, 0);
	/* No tiers, or nothing open: no queue, no wait. */
	assert_int_equal(pt_backing_queue_wait(NULL, NULL), 0);
	assert_int_equal(pt_backing_queue_open(&q, cls, cls), 0);
	assert_int_equal(pt_backing_queue_reads(&q), 0);
	assert_int_equal(pt_backing_queue_wait(&q, NULL), 0);
	fx_rmtree(d);
}

/* Deep while the application does not fault, shallow from a fault until 100 ms after. */
static void test_queue_limit(void **state)
{
	uint64_t last = 0, until = 0;

	(void)state;
	assert_int_equal(pt_prefetch_queue_limit(5, 1000, &last, &until), PT_PREFETCH_QUEUED_STREAMING);
	assert_int_equal(pt_prefetch_queue_limit(5, 1005, &last, &until), PT_PREFETCH_QUEUED_STREAMING);
	assert_int_equal(pt_prefetch_queue_limit(7, 1010, &last, &until), PT_PREFETCH_QUEUED_FAULTING);
	assert_int_equal(pt_prefetch_queue_limit(7, 1109, &last, &until), PT_PREFETCH_QUEUED_FAULTING);
	assert_int_equal(pt_prefetch_queue_limit(7, 1110, &last, &until), PT_PREFETCH_QUEUED_STREAMING);
}

/* The watch reads the cgroup's memory.stat: 3 reads queued pass while it does not fault. */
static void test_fault_watch(void **state)
{
	char *d = fx_tmpdir(), blk[PATH_MAX], cls[PATH_MAX], cg[PATH_MAX];
	struct pt_backing_queue q;
	struct pt_fault_watch w;
	struct timespec ts = { .tv_nsec = 20 * 1000000L };

	(void)state;
	fake_sysfs(d, blk, cls);
	snprintf(cg, sizeof(cg), "%s/cg", d);
	fx_write(d, "devices/vdb/inflight", "       3        0\n");
	fake_tier(d, 0, "vdb", "vdb");
	fx_write(d, "cg/memory.stat", "anon 4096\npgfault 10\npgmajfault 5\nthp_fault_alloc 0\n");
	assert_int_equal(pt_backing_queue_open(&q, blk, cls), 1);
	pt_fault_watch_open(&w, cg);
	assert_true(w.fd >= 0);
	assert_int_equal(pt_backing_queue_wait(&q, &w), 0);
	/* It faults: the queue must drain to 2 first, and does not within the bound. */
	fx_write(d, "cg/memory.stat", "anon 4096\npgfault 10\npgmajfault 9\nthp_fault_alloc 0\n");
	nanosleep(&ts, NULL);
	assert_true(pt_backing_queue_wait(&q, &w) >= PT_PREFETCH_QUEUE_WAIT_MS);
	pt_fault_watch_close(&w);
	/* No memory.stat: the low limit. */
	pt_fault_watch_open(&w, blk);
	assert_true(w.fd < 0);
	assert_true(pt_backing_queue_wait(&q, &w) >= PT_PREFETCH_QUEUE_WAIT_MS);
	pt_backing_queue_close(&q);
	fx_rmtree(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_inflight),
		cmocka_unit_test(test_queue_of_the_tiers),
		cmocka_unit_test(test_queue_limit),
		cmocka_unit_test(test_fault_watch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
