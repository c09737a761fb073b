// SPDX-License-Identifier: GPL-2.0
/*
 * The batched reader (sample_batch.h) on real files through a real io_uring: the values
 * of many cgroups' cpu.stat and memory.current in one submission, and each way one read
 * can fail without the others: a file that fills its buffer, a bad descriptor, text that
 * does not parse. Where the kernel refuses io_uring (kernel.io_uring_disabled, a seccomp
 * filter) the tests say so and fail: the reader it tests cannot run there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../daemon/cgroup.h"
#include "../../daemon/sample_batch.h"
#include "fixture.h"

struct fx {
	char *dir;
	struct pt_sample_batch *b;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int err;

	f->dir = fx_tmpdir();
	f->b = pt_sample_batch_new(4, &err);
	if (!f->b)
		fail_msg("io_uring unavailable here (%s): the batched reader cannot be tested",
			 strerror(-err));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	pt_sample_batch_free(f->b);
	fx_rmtree(f->dir);
	free(f);
	return 0;
}

/* @dir/@name's files, opened read-only: the descriptors the batch reads. */
static void open_cgroup(struct fx *f, const char *name, const char *cpu_stat,
			const char *memory_current, int *cpu_fd, int *mem_fd)
{
	char rel[PATH_MAX], path[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s/cpu.stat", name);
	fx_write(f->dir, rel, cpu_stat);
	snprintf(rel, sizeof(rel), "%s/memory.current", name);
	fx_write(f->dir, rel, memory_current);
	snprintf(path, sizeof(path), "%s/%s/cpu.stat", f->dir, name);
	*cpu_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/%s/memory.current", f->dir, name);
	*mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(*cpu_fd >= 0 && *mem_fd >= 0);
}

static void test_values_of_many_cgroups(void **state)
{
	struct fx *f = *state;
	int fds[4][2];
	uint64_t cpu, mem;
	char name[16], stat[128], cur[32];

	for (int k = 0; k < 4; k++) {
		snprintf(name, sizeof(name), "c%d", k);
		snprintf(stat, sizeof(stat), "usage_usec %d\nuser_usec 1\nsystem_usec 2\n",
			 1000 * (k + 1));
		snprintf(cur, sizeof(cur), "%d\n", 4096 * (k + 1));
		open_cgroup(f, name, stat, cur, &fds[k][0], &fds[k][1]);
		assert_int_equal(pt_sample_batch_add(f->b, fds[k][0], fds[k][1]), k);
	}
	assert_int_equal(pt_sample_batch_room(f->b), 0);
	assert_int_equal(pt_sample_batch_add(f->b, fds[0][0], fds[0][1]), -ENOSPC);
	assert_int_equal(pt_sample_batch_run(f->b), 0);
	assert_int_equal(pt_sample_batch_submissions(f->b), 1);
	for (int k = 0; k < 4; k++) {
		assert_int_equal(pt_sample_batch_result(f->b, k, &cpu, &mem), 0);
		assert_int_equal(cpu, 1000 * (k + 1));
		assert_int_equal(mem, 4096 * (k + 1));
	}
	/* Out of range, and nothing queued after a run until the reset. */
	assert_int_equal(pt_sample_batch_result(f->b, 4, &cpu, &mem), -EINVAL);
	assert_int_equal(pt_sample_batch_add(f->b, fds[0][0], fds[0][1]), -ENOSPC);

	/* Reset: the same descriptors read again, at offset 0, with what the files say now. */
	pt_sample_batch_reset(f->b);
	assert_int_equal(pt_sample_batch_room(f->b), 4);
	fx_write(f->dir, "c2/memory.current", "123456789\n");
	assert_int_equal(pt_sample_batch_add(f->b, fds[2][0], fds[2][1]), 0);
	assert_int_equal(pt_sample_batch_run(f->b), 0);
	assert_int_equal(pt_sample_batch_result(f->b, 0, &cpu, &mem), 0);
	assert_int_equal(cpu, 3000);
	assert_int_equal(mem, 123456789);
	assert_int_equal(pt_sample_batch_submissions(f->b), 2);
	for (int k = 0; k < 4; k++) {
		close(fds[k][0]);
		close(fds[k][1]);
	}
}

/* One slot's failure is its own: the others' values stand. */
static void test_failures_stay_in_their_slot(void **state)
{
	struct fx *f = *state;
	char big[4096];
	int ok[2], filled[2], garbled[2], bad_fd;
	uint64_t cpu, mem;

	/* cpu.stat longer than the buffer: maybe cut, so not trusted (-EFBIG). */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "usage_usec 5\n", 13);
	open_cgroup(f, "filled", big, "1\n", &filled[0], &filled[1]);
	open_cgroup(f, "garbled", "usage_usec 7\n", "lots\n", &garbled[0], &garbled[1]);
	open_cgroup(f, "ok", "user_usec 3\nusage_usec 9\n", "8192\n", &ok[0], &ok[1]);
	bad_fd = open("/dev/null", O_RDONLY);
	close(bad_fd);	/* a descriptor that is no longer open */

	assert_int_equal(pt_sample_batch_add(f->b, filled[0], filled[1]), 0);
	assert_int_equal(pt_sample_batch_add(f->b, garbled[0], garbled[1]), 1);
	assert_int_equal(pt_sample_batch_add(f->b, bad_fd, ok[1]), 2);
	assert_int_equal(pt_sample_batch_add(f->b, ok[0], ok[1]), 3);
	assert_int_equal(pt_sample_batch_run(f->b), 0);
	assert_int_equal(pt_sample_batch_result(f->b, 0, &cpu, &mem), -EFBIG);
	assert_int_not_equal(pt_sample_batch_result(f->b, 1, &cpu, &mem), 0);
	assert_int_equal(pt_sample_batch_result(f->b, 2, &cpu, &mem), -EBADF);
	assert_int_equal(pt_sample_batch_result(f->b, 3, &cpu, &mem), 0);
	assert_int_equal(cpu, 9);
	assert_int_equal(mem, 8192);
	for (int k = 0; k < 2; k++) {
		close(ok[k]);
		close(filled[k]);
		close(garbled[k]);
	}
}

/* An empty run submits nothing; a batch of no slots, or too many, is refused. */
static void test_empty_and_bounds(void **state)
{
	struct fx *f = *state;
	int err;

	assert_int_equal(pt_sample_batch_run(f->b), 0);
	assert_int_equal(pt_sample_batch_submissions(f->b), 0);
	assert_null(pt_sample_batch_new(0, &err));
	assert_int_equal(err, -EINVAL);
	assert_null(pt_sample_batch_new(1u << 20, &err));
	assert_int_equal(err, -EINVAL);
}

/* The descriptors a batch reads are those the cgroup's ordinary sample keeps open. */
static void test_keep_gives_the_sample_descriptors(void **state)
{
	struct fx *f = *state;
	struct pt_cgroup_files files = { 0 };
	struct pt_cgroup_sample s = { 0 };
	char path[PATH_MAX];
	uint64_t cpu, mem;
	int cpu_fd, mem_fd, open_before = pt_cgroup_files_open_count();

	pt_cgroup_files_set_limit(4096);	/* pagetierd sets it from RLIMIT_NOFILE */
	fx_write(f->dir, "k/cpu.stat", "usage_usec 41\n");
	fx_write(f->dir, "k/memory.current", "65536\n");
	fx_write(f->dir, "k/memory.stat", "anon 4096\nfile 0\nshmem 0\nswapcached 0\nkernel 0\nsock 0\n");
	snprintf(path, sizeof(path), "%s/k", f->dir);
	assert_int_equal(pt_cgroup_files_keep(path, &files, &cpu_fd, &mem_fd), 0);
	assert_int_equal(pt_cgroup_files_open_count(), open_before + 2);
	assert_int_equal(pt_sample_batch_add(f->b, cpu_fd, mem_fd), 0);
	assert_int_equal(pt_sample_batch_run(f->b), 0);
	assert_int_equal(pt_sample_batch_result(f->b, 0, &cpu, &mem), 0);
	assert_int_equal(cpu, 41);
	assert_int_equal(mem, 65536);
	/* The ordinary sample reads through the same two, and opens no more of them. */
	assert_int_equal(pt_cgroup_sample_files(path, &files, &s, false), 0);
	assert_int_equal(s.memory_current, 65536);
	assert_int_equal(pt_cgroup_files_open_count(), open_before + 2);
	assert_int_equal(pt_cgroup_sample_breakdown(path, &files, &s), 0);
	assert_int_equal(s.anon, 4096);
	pt_cgroup_files_close(&files);
	assert_int_equal(pt_cgroup_files_open_count(), open_before);

	/* Past the limit: -ENOSPC, nothing opened (the ordinary sample opens and closes). */
	pt_cgroup_files_set_limit(open_before + 1);
	assert_int_equal(pt_cgroup_files_keep(path, &files, &cpu_fd, &mem_fd), -ENOSPC);
	pt_cgroup_files_close(&files);
	assert_int_equal(pt_cgroup_files_open_count(), open_before);
	pt_cgroup_files_set_limit(4096);

	snprintf(path, sizeof(path), "%s/gone", f->dir);
	assert_int_equal(pt_cgroup_files_keep(path, &files, &cpu_fd, &mem_fd), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_values_of_many_cgroups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failures_stay_in_their_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_and_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_gives_the_sample_descriptors, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
