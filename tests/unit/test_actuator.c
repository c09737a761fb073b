// SPDX-License-Identifier: GPL-2.0
/* The actuator on this very process: process_madvise through a pidfd, and its pacing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "actuator.h"

#define SIZE (64ULL << 20)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_paced_advice(void **state)
{
	struct pt_range r;
	struct pt_proc_ranges pr = { .pid = getpid(), .n = 1, .cap = 1, .r = &r };
	char *mem = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double t0;
	int64_t got;

	(void)state;
	assert_true(mem != MAP_FAILED);
	for (uint64_t i = 0; i < SIZE; i += 4096)
		mem[i] = 1;
	r.start = (uintptr_t)mem;
	r.len = SIZE;
	/* Unpaced: the whole range at once. */
	got = pt_proc_advise_paced(&pr, MADV_WILLNEED, 0);
	assert_true(got == (int64_t)SIZE);
	/* 64 MiB at 256 MiB/s: four pieces of 16 MiB, the last due 250 ms after the start. */
	t0 = now_s();
	got = pt_proc_advise_paced(&pr, MADV_WILLNEED, 256ULL << 20);
	assert_true(got == (int64_t)SIZE);
	assert_true(now_s() - t0 >= 0.24);
	munmap(mem, SIZE);
}

static void test_gone_process(void **state)
{
	struct pt_range r = { .start = 0x10000, .len = 4096 };
	struct pt_proc_ranges pr = { .pid = 0x3fffffff, .n = 1, .cap = 1, .r = &r };

	(void)state;
	assert_int_equal(pt_proc_advise(&pr, MADV_WILLNEED), -ESRCH);
	assert_int_equal(pt_proc_advise_paced(&pr, MADV_WILLNEED, 1 << 20), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paced_advice),
		cmocka_unit_test(test_gone_process),
	};

	return cmocka_run_group_tests_name("actuator", tests, NULL, NULL);
}
