// SPDX-License-Identifier: GPL-2.0
/* The actuator on this very process: process_madvise through a pidfd, and its pacing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * Shared among threads: every byte of two processes' entries advised once, in pieces, and
 * the rate shared (64 MiB at 256 MiB/s takes a quarter of a second whatever the threads).
 */
static void test_shared_advice(void **state)
{
	struct pt_range r[3];
	struct pt_proc_ranges set[2] = {
		{ .pid = getpid(), .n = 2, .cap = 2, .r = r },
		{ .pid = getpid(), .n = 1, .cap = 1, .r = r + 2 },
	};
	char *mem = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double t0;

	(void)state;
	assert_true(mem != MAP_FAILED);
	memset(mem, 1, SIZE);
	/* Odd lengths: pieces of 2 MiB and the remainders. */
	r[0] = (struct pt_range){ (uintptr_t)mem, 5ULL << 20 };
	r[1] = (struct pt_range){ (uintptr_t)mem + (8ULL << 20), (7ULL << 20) + 4096 };
	r[2] = (struct pt_range){ (uintptr_t)mem + (32ULL << 20), 32ULL << 20 };
	for (unsigned int threads = 1; threads <= 3; threads++)
		assert_int_equal(pt_proc_advise_shared(set, 2, MADV_WILLNEED, threads, 0, NULL, NULL),
				 (44ULL << 20) + 4096);
	r[0].len = 32ULL << 20;
	r[1].len = 0;
	t0 = now_s();
	assert_int_equal(pt_proc_advise_shared(set, 2, MADV_WILLNEED, 2, 256ULL << 20, NULL, NULL), SIZE);
	assert_true(now_s() - t0 >= 0.24);
	/* Every process gone: -ESRCH, as for one. */
	set[0].pid = set[1].pid = 0x3fffffff;
	assert_int_equal(pt_proc_advise_shared(set, 2, MADV_WILLNEED, 2, 0, NULL, NULL), -ESRCH);
	assert_int_equal(pt_proc_advise_shared(set, 0, MADV_WILLNEED, 2, 0, NULL, NULL), 0);
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

/* Which mappings a range list covers: private anonymous, shared memory, files. */
static void test_ranges_by_kind(void **state)
{
	char *anon = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			  0);
	char *shm = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct pt_proc_ranges pr;
	bool a = false, s_ = false;

	(void)state;
	assert_true(anon != MAP_FAILED && shm != MAP_FAILED);
	assert_int_equal(pt_proc_ranges_of(getpid(), NULL, PT_KIND_ANON, 0, &pr), 0);
	for (int i = 0; i < pr.n; i++) {
		a |= pr.r[i].start <= (uintptr_t)anon && (uintptr_t)anon < pr.r[i].start + pr.r[i].len;
		assert_false(pr.r[i].start <= (uintptr_t)shm &&
			     (uintptr_t)shm < pr.r[i].start + pr.r[i].len);
	}
	pt_proc_ranges_free(&pr);
	assert_int_equal(pt_proc_ranges_of(getpid(), NULL, PT_KIND_SHMEM, 0, &pr), 0);
	for (int i = 0; i < pr.n; i++)
		s_ |= pr.r[i].start == (uintptr_t)shm && pr.r[i].len == 1 << 20;
	pt_proc_ranges_free(&pr);
	assert_true(a && s_);
	munmap(anon, 1 << 20);
	munmap(shm, 1 << 20);
}

/*
 * The pages of a mapped file in memory: those touched at least (the kernel maps their
 * neighbours in the page cache too: fault-around), never pages outside the mapping.
 */
static void test_file_resident(void **state)
{
	char path[] = "/tmp/pt-file-XXXXXX";
	int fd = mkstemp(path);
	struct pt_proc_ranges pr;
	volatile char sum = 0;
	uint64_t in_file = 0;
	char *m;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 64 * 4096), 0);
	m = mmap(NULL, 64 * 4096, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	for (int p = 0; p < 64; p += 2)
		sum += m[p * 4096];	/* every other page */
	assert_int_equal(pt_proc_file_resident(getpid(), NULL, 0, &pr), 0);
	for (int i = 0; i < pr.n; i++) {
		uint64_t s0 = pr.r[i].start, e0 = s0 + pr.r[i].len;
		uint64_t lo = (uintptr_t)m, hi = lo + 64 * 4096;

		if (e0 > lo && s0 < hi)
			in_file += (e0 < hi ? e0 : hi) - (s0 > lo ? s0 : lo);
	}
	assert_true(in_file >= 32 * 4096 && in_file <= 64 * 4096);
	pt_proc_ranges_free(&pr);
	munmap(m, 64 * 4096);
	close(fd);
	unlink(path);
	(void)sum;
}

/*
 * The advice from a child that joins a cgroup first: the child writes "0" to the
 * directory's cgroup.procs (here a plain file standing in for one), then advises.
 */
static void test_advise_in_cgroup(void **state)
{
	char dir[] = "/tmp/pt-cg-XXXXXX", procs[64], got[8] = { 0 };
	char *mem = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0);
	struct pt_range r = { .start = (uintptr_t)mem, .len = 1 << 20 };
	struct pt_proc_ranges pr = { .pid = getpid(), .n = 1, .cap = 1, .r = &r };
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* Not a cgroup: the child cannot join it, and says why. */
	assert_int_equal(pt_proc_advise_in_cgroup(dir, &pr, 1, MADV_WILLNEED), -ENOENT);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	fd = open(procs, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(pt_proc_advise_in_cgroup(dir, &pr, 1, MADV_WILLNEED), 1 << 20);
	fd = open(procs, O_RDONLY);
	assert_int_equal(read(fd, got, sizeof(got) - 1), 1);
	assert_string_equal(got, "0");
	close(fd);
	assert_int_equal(pt_proc_advise_in_cgroup(dir, &pr, 0, MADV_WILLNEED), 0);
	unlink(procs);
	rmdir(dir);
	munmap(mem, 1 << 20);
}

/* A pid is only a number: the advice checks it is still the process it was recorded for. */
static void test_recycled_pid_refused(void **state)
{
	char *mem = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0);
	struct pt_range r = { .start = (uintptr_t)mem, .len = 1 << 20 };
	struct pt_proc_ranges pr = { .pid = getpid(), .n = 1, .cap = 1, .r = &r };
	uint64_t start;

	(void)state;
	assert_int_equal(pt_proc_start_time(getpid(), &start), 0);
	assert_true(start > 0);
	/* Recorded for another process that had this pid (another start time): refused. */
	pr.start = start + 1;
	assert_int_equal(pt_proc_advise(&pr, MADV_WILLNEED), -ESRCH);
	assert_int_equal(pt_proc_advise_paced(&pr, MADV_WILLNEED, 1 << 30), -ESRCH);
	pr.start = start;
	assert_int_equal(pt_proc_advise(&pr, MADV_WILLNEED), 1 << 20);
	/* A process that moved out of the container's cgroup: refused too. */
	pr.cgroup = "/no/such/container";
	assert_false(pt_proc_in_cgroup(getpid(), pr.cgroup));
	assert_int_equal(pt_proc_advise(&pr, MADV_WILLNEED), -ESRCH);
	pr.cgroup = "/";
	assert_true(pt_proc_in_cgroup(getpid(), "/"));
	assert_int_equal(pt_proc_advise(&pr, MADV_WILLNEED), 1 << 20);
	assert_int_equal(pt_proc_start_time(0x3fffffff, &start), -ESRCH);
	munmap(mem, 1 << 20);
}

#ifndef __NR_clone3
#define __NR_clone3 435
#endif

/* clone3(2)'s arguments up to set_tid_size (CLONE_ARGS_SIZE_VER1). */
struct clone_args_v1 {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size;
};

/* A child that waits to be killed, with the number @pid (0: any); its pid or -errno. */
static pid_t child_with_pid(pid_t pid)
{
	struct clone_args_v1 args = { .exit_signal = SIGCHLD };
	pid_t tid = pid, got;

	if (pid) {
		args.set_tid = (uintptr_t)&tid;
		args.set_tid_size = 1;
	}
	got = (pid_t)syscall(__NR_clone3, &args, sizeof(args));
	if (got == 0) {
		for (;;)
			pause();
	}
	return got < 0 ? -errno : got;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/*
 * A pid is only a number, and a start time only counts clock ticks: the number of a
 * process that exited can go to another within the same tick (here made so with clone3's
 * set_tid; a container cycling through pids does it too). Ranges read for the first
 * process must never reach the second, which holds the same memory at the same addresses.
 */
static void test_pid_reused_within_a_tick(void **state)
{
	char *mem = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0);
	int64_t got = 0, got_paced = 0;
	int tries;

	(void)state;
	assert_true(mem != MAP_FAILED);
	memset(mem, 1, 1 << 20);	/* both children have it, copied at fork */
	for (tries = 0; tries < 200; tries++) {
		struct pt_proc_ranges pr;
		pid_t a = child_with_pid(0), b;
		uint64_t start_b;

		assert_true(a > 0);
		assert_int_equal(pt_proc_ranges_of(a, NULL, PT_KIND_ANON, 0, &pr), 0);
		free(pr.r);
		pr.r = malloc(sizeof(*pr.r));
		assert_non_null(pr.r);
		pr.r[0].start = (uintptr_t)mem;
		pr.r[0].len = 1 << 20;
		pr.n = pr.cap = 1;
		reap(a);
		b = child_with_pid(a);
		if (b == -EPERM || b == -ENOSYS) {
			pt_proc_ranges_free(&pr);
			munmap(mem, 1 << 20);
			skip();	/* set_tid needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE) */
		}
		if (b < 0) {	/* the number went to another process meanwhile */
			pt_proc_ranges_free(&pr);
			continue;
		}
		assert_int_equal(b, a);
		if (pt_proc_start_time(b, &start_b) || start_b != pr.start) {
			/* Another tick: the start time tells them apart; not the case here. */
			reap(b);
			pt_proc_ranges_free(&pr);
			continue;
		}
		/* Same number, same start time, same cgroup: only the process differs. */
		got = pt_proc_advise(&pr, MADV_WILLNEED);
		got_paced = pt_proc_advise_paced(&pr, MADV_WILLNEED, 1 << 30);
		reap(b);
		pt_proc_ranges_free(&pr);
		break;
	}
	munmap(mem, 1 << 20);
	if (tries == 200)
		skip();	/* never within one tick: nothing shown */
	assert_int_equal(got, -ESRCH);
	assert_int_equal(got_paced, -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paced_advice),
		cmocka_unit_test(test_shared_advice),
		cmocka_unit_test(test_gone_process),
		cmocka_unit_test(test_ranges_by_kind),
		cmocka_unit_test(test_file_resident),
		cmocka_unit_test(test_advise_in_cgroup),
		cmocka_unit_test(test_recycled_pid_refused),
		cmocka_unit_test(test_pid_reused_within_a_tick),
	};

	return cmocka_run_group_tests_name("actuator", tests, NULL, NULL);
}
