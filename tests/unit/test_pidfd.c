// SPDX-License-Identifier: GPL-2.0
/*
 * The pidfds pagetierd holds: counted exactly, kept within the daemon's limit and each
 * holder's (pidfd.h), and a model fed a thousand processes pins no more than its share.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotness.h"
#include "pidfd.h"
#include "scanner.h"

static int teardown(void **state)
{
	(void)state;
	pt_pidfd_set_limit(0);
	return 0;
}

static void test_count_and_keep(void **state)
{
	int base = pt_pidfd_count(), fd[4], held = 0, dup;

	(void)state;
	for (int i = 0; i < 4; i++) {
		fd[i] = pt_pidfd_open(getpid());
		assert_true(fd[i] > 0);
	}
	assert_int_equal(pt_pidfd_count(), base + 4);
	/* No limit: kept; a holder's own maximum still applies. */
	assert_true(pt_pidfd_keep(&fd[0], &held, 2));
	assert_true(pt_pidfd_keep(&fd[1], &held, 2));
	assert_false(pt_pidfd_keep(&fd[2], &held, 2));
	assert_int_equal(fd[2], 0);
	assert_int_equal(held, 2);
	assert_int_equal(pt_pidfd_count(), base + 3);
	/* Over the daemon's limit: let go, whoever holds it. */
	pt_pidfd_set_limit(base + 2);
	assert_false(pt_pidfd_keep(&fd[3], NULL, 0));
	assert_int_equal(fd[3], 0);
	assert_int_equal(pt_pidfd_count(), base + 2);
	/* At the limit: no duplicate; below it, a counted one. */
	assert_int_equal(pt_pidfd_dup(fd[0]), 0);
	pt_pidfd_close(fd[1]);
	dup = pt_pidfd_dup(fd[0]);
	assert_true(dup > 0);
	assert_int_equal(pt_pidfd_count(), base + 2);
	pt_pidfd_close(dup);
	pt_pidfd_close(fd[0]);
	pt_pidfd_close(0);	/* "none": nothing */
	assert_int_equal(pt_pidfd_count(), base);
}

/*
 * A container of a thousand processes: the model pins PT_PIDFD_HOLDER_MAX of them and names
 * the others by pid and start time; their chunks are modelled all the same, and the ranges
 * it hands a job carry a pidfd where it has one and the pid and start time everywhere.
 */
static void test_model_pins_its_share(void **state)
{
	struct pt_proc_scan *scans = calloc(1000, sizeof(*scans));
	struct pt_proc_ranges *set = NULL;
	int base = pt_pidfd_count(), pinned = 0, np;
	uint64_t ids[1000];
	struct pt_hot h;

	(void)state;
	assert_int_equal(pt_hot_init(&h, 16, 1 << 20), 0);
	for (int i = 0; i < 1000; i++) {
		scans[i].pid = 100000 + i;
		scans[i].start = 1 + i;
		scans[i].pidfd = pt_pidfd_open(getpid());
		assert_true(scans[i].pidfd > 0);
		scans[i].chunks = calloc(1, sizeof(*scans[i].chunks));
		scans[i].chunks[0].addr = 0x10000;
		scans[i].chunks[0].accessed = 1;
		scans[i].chunks[0].present = 1;
		scans[i].n = scans[i].cap = 1;
	}
	pt_hot_apply_scans(&h, scans, 1000);
	for (int i = 0; i < 1000; i++)
		pt_proc_scan_free(&scans[i]);
	assert_int_equal(h.n_pidfds, PT_PIDFD_HOLDER_MAX);
	assert_int_equal(pt_pidfd_count(), base + PT_PIDFD_HOLDER_MAX);
	for (int i = 0; i < 1000; i++)
		ids[i] = pt_hot_chunk_id(&h, i, 0x10000);
	np = pt_hot_ranges(&h, ids, 1000, &set);
	assert_int_equal(np, 1000);
	for (int i = 0; i < np; i++) {
		assert_true(set[i].start > 0);
		pinned += set[i].pidfd > 0;
		pt_proc_ranges_free(&set[i]);
	}
	free(set);
	assert_int_equal(pinned, PT_PIDFD_HOLDER_MAX);
	pt_hot_free(&h);
	assert_int_equal(pt_pidfd_count(), base);
	free(scans);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_count_and_keep, teardown),
		cmocka_unit_test_teardown(test_model_pins_its_share, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
