// SPDX-License-Identifier: GPL-2.0
/* The worker pool: jobs run off the loop thread, completions run on it, stop drains. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"

struct test_job {
	struct pt_job job;
	int value;
	pthread_t ran_on;
	int *completed;
};

static void run_square(struct pt_job *job)
{
	struct test_job *t = (struct test_job *)job;

	t->ran_on = pthread_self();
	usleep(1000);
	t->value *= t->value;
}

static void done_check(struct pt_job *job, void *arg)
{
	struct test_job *t = (struct test_job *)job;
	int *sum = arg;

	/* Completions run in the thread that reaps, never in a worker. */
	assert_false(pthread_equal(t->ran_on, pthread_self()));
	*sum += t->value;
	(*t->completed)++;
	free(t);
}

static struct test_job *new_job(int v, int *completed)
{
	struct test_job *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->job.run = run_square;
	t->job.done = done_check;
	t->value = v;
	t->completed = completed;
	return t;
}

static void test_jobs_complete_on_reaper(void **state)
{
	struct pt_workers w;
	int sum = 0, completed = 0;

	(void)state;
	assert_int_equal(pt_workers_start(&w, 2), 0);
	for (int i = 1; i <= 20; i++)
		pt_workers_submit(&w, &new_job(i, &completed)->job);
	while (completed < 20) {
		struct pollfd p = { .fd = w.efd, .events = POLLIN };

		assert_true(poll(&p, 1, 5000) == 1);	/* the eventfd signals completions */
		pt_workers_reap(&w, &sum);
	}
	assert_int_equal(sum, 20 * 21 * 41 / 6);	/* sum of squares */
	assert_int_equal(w.in_flight, 0);
	pt_workers_stop(&w, &sum);
}

static void test_stop_drains_queue(void **state)
{
	struct pt_workers w;
	int sum = 0, completed = 0;

	(void)state;
	assert_int_equal(pt_workers_start(&w, 1), 0);
	for (int i = 0; i < 10; i++)
		pt_workers_submit(&w, &new_job(2, &completed)->job);
	pt_workers_stop(&w, &sum);	/* runs what was queued, then reaps it */
	assert_int_equal(completed, 10);
	assert_int_equal(sum, 40);
}

/* Spins until its thread has had @value ms of CPU (whatever else the host runs). */
static void run_spin(struct pt_job *job)
{
	struct test_job *t = (struct test_job *)job;
	volatile uint64_t x = 0;
	struct timespec ts;

	do {
		for (int i = 0; i < 10000; i++)
			x += (uint64_t)i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	} while (ts.tv_sec * 1000 + ts.tv_nsec / 1000000 < t->value);
}

static void run_sleep(struct pt_job *job)
{
	usleep((useconds_t)((struct test_job *)job)->value * 1000);
}

static void done_cpu(struct pt_job *job, void *arg)
{
	*(uint64_t *)arg = job->cpu_ns;
	free(job);
}

/* The cpu_ns of one job that runs @run with @value in a pool of its own. */
static uint64_t job_cpu_ns(void (*run)(struct pt_job *), int value)
{
	struct test_job *t = calloc(1, sizeof(*t));
	struct pt_workers w;
	uint64_t cpu = UINT64_MAX;

	assert_non_null(t);
	t->job.run = run;
	t->job.done = done_cpu;
	t->value = value;
	assert_int_equal(pt_workers_start(&w, 1), 0);
	pt_workers_submit(&w, &t->job);
	pt_workers_stop(&w, &cpu);
	return cpu;
}

/*
 * A job's cpu_ns is the CPU time its run() took in the worker thread (a new thread: it
 * starts near 0): a job that spins until its thread has had 30 ms of CPU has nearly all of
 * it, one sleeping for 60 ms next to nothing.
 */
static void test_job_cpu_time(void **state)
{
	(void)state;
	assert_in_range(job_cpu_ns(run_spin, 30), 25 * 1000000ULL, 5000 * 1000000ULL);
	assert_in_range(job_cpu_ns(run_sleep, 60), 0, 10 * 1000000ULL);
}

/* Reports the nice value of the worker thread that runs it (per thread on Linux). */
static void run_nice(struct pt_job *job)
{
	struct test_job *t = (struct test_job *)job;

	t->ran_on = pthread_self();
	t->value = getpriority(PRIO_PROCESS, 0);
}

static void done_free(struct pt_job *job, void *arg)
{
	int *seen = arg;

	*seen = ((struct test_job *)job)->value;
	free(job);
}

/* A background pool's threads run niced; the loop thread and a plain pool's do not. */
static void test_niced_pool(void **state)
{
	struct pt_workers plain, bg;
	struct test_job *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	int seen_plain = -100, seen_bg = -100, me = getpriority(PRIO_PROCESS, 0);

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	a->job.run = b->job.run = run_nice;
	a->job.done = b->job.done = done_free;
	assert_int_equal(pt_workers_start(&plain, 1), 0);
	assert_int_equal(pt_workers_start_nice(&bg, 1, 19), 0);
	pt_workers_submit(&plain, &a->job);
	pt_workers_submit(&bg, &b->job);
	pt_workers_stop(&plain, &seen_plain);
	pt_workers_stop(&bg, &seen_bg);
	assert_int_equal(seen_plain, me);
	assert_int_equal(seen_bg, 19);
	assert_int_equal(bg.nice_errors, 0);
	assert_int_equal(getpriority(PRIO_PROCESS, 0), me);
}

/* A job that holds its worker until the test lets it go. */
static volatile int gate_open;

static void run_gate(struct pt_job *job)
{
	struct test_job *t = (struct test_job *)job;

	t->ran_on = pthread_self();
	while (!__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE))
		usleep(1000);
	t->value = 1;
}

static void run_never(struct pt_job *job)
{
	(void)job;
	fail_msg("a cancelled job ran");
}

struct seen {
	int done, cancelled;
};

static void done_count(struct pt_job *job, void *arg)
{
	struct seen *s = arg;

	s->done++;
	s->cancelled += job->cancelled;
	free(job);
}

/*
 * A job still queued is taken back: never run, its completion at the next reap with
 * cancelled set; one a worker has taken is not.
 */
static void test_cancel_a_queued_job(void **state)
{
	struct pt_workers w;
	struct test_job *busy = calloc(1, sizeof(*busy)), *queued = calloc(1, sizeof(*queued)),
			*after = calloc(1, sizeof(*after));
	struct seen seen = { 0 };

	(void)state;
	assert_non_null(busy);
	assert_non_null(queued);
	assert_non_null(after);
	gate_open = 0;
	busy->job.run = run_gate;
	queued->job.run = run_never;
	after->job.run = run_square;
	after->value = 3;
	busy->job.done = queued->job.done = after->job.done = done_count;
	assert_int_equal(pt_workers_start(&w, 1), 0);
	pt_workers_submit(&w, &busy->job);
	while (!pt_job_started(&busy->job))
		usleep(1000);
	pt_workers_submit(&w, &queued->job);
	pt_workers_submit(&w, &after->job);
	assert_false(pt_workers_cancel(&w, &busy->job));	/* running */
	assert_true(pt_workers_cancel(&w, &queued->job));
	assert_false(pt_workers_cancel(&w, &queued->job));	/* not queued any more */
	{
		struct pollfd p = { .fd = w.efd, .events = POLLIN };

		assert_true(poll(&p, 1, 5000) == 1);	/* its completion is signalled */
	}
	pt_workers_reap(&w, &seen);
	assert_int_equal(seen.done, 1);
	assert_int_equal(seen.cancelled, 1);
	__atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
	pt_workers_stop(&w, &seen);	/* the other two run, the queue's tail kept */
	assert_int_equal(seen.done, 3);
	assert_int_equal(seen.cancelled, 1);
	assert_int_equal(w.in_flight, 0);
}

/*
 * A niced pool's running job is raised to the caller's nice until it ends; the worker's
 * next job runs niced again. Raising a priority needs CAP_SYS_NICE (make test runs as root).
 */
static void test_boost_a_running_job(void **state)
{
	struct pt_workers w;
	struct test_job *slow = calloc(1, sizeof(*slow)), *next = calloc(1, sizeof(*next));
	int seen = -100, me = getpriority(PRIO_PROCESS, 0);

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_non_null(slow);
	assert_non_null(next);
	gate_open = 0;
	slow->job.run = run_gate;
	next->job.run = run_nice;
	slow->job.done = next->job.done = done_free;
	assert_int_equal(pt_workers_start_nice(&w, 1, 19), 0);
	assert_false(pt_workers_boost(&w, &slow->job));	/* not submitted: not running */
	pt_workers_submit(&w, &slow->job);
	while (!pt_job_started(&slow->job))
		usleep(1000);
	assert_int_equal(getpriority(PRIO_PROCESS, (id_t)slow->job.tid), 19);
	assert_true(pt_workers_boost(&w, &slow->job));
	assert_int_equal(getpriority(PRIO_PROCESS, (id_t)slow->job.tid), me);
	pt_workers_submit(&w, &next->job);
	__atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
	pt_workers_stop(&w, &seen);
	assert_int_equal(seen, 19);	/* the next job's nice: the pool's again */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobs_complete_on_reaper),
		cmocka_unit_test(test_stop_drains_queue),
		cmocka_unit_test(test_job_cpu_time),
		cmocka_unit_test(test_niced_pool),
		cmocka_unit_test(test_cancel_a_queued_job),
		cmocka_unit_test(test_boost_a_running_job),
	};

	return cmocka_run_group_tests_name("worker", tests, NULL, NULL);
}
