/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small pool of threads for the daemon's blocking calls (process_madvise, which waits for
 * swap-in reads, and memory.reclaim, which waits for reclaim). The event loop stays
 * single-threaded and responsive: it submits jobs and, when the pool's eventfd is readable,
 * runs each finished job's completion in its own thread. A job's run() touches only the
 * job's own data, never the daemon's state.
 */
#ifndef PAGETIER_WORKER_H
#define PAGETIER_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct pt_job {
	void (*run)(struct pt_job *job);		/* in a worker thread */
	void (*done)(struct pt_job *job, void *arg);	/* in the loop thread; frees job */
	struct pt_job *next;
	/*
	 * run() has begun: set by the worker thread (__atomic, release), read by the loop
	 * (pt_job_started()). A job may wait in the queue a long time behind others (a
	 * thousand containers gone idle at once, the background pool starved of CPU), and
	 * the loop judges a container differently while its job only waits.
	 */
	bool started;
	/* Taken back from the queue before any worker took it (pt_workers_cancel()). */
	bool cancelled;
	pid_t tid;	/* the worker thread running it, under the pool's lock; 0: none */
	/*
	 * The worker thread's CPU time (user and system) in run(), set before done() runs:
	 * what each kind of job costs the host (the system time of process_madvise and
	 * memory.reclaim is most of it). A process run() forks is not in it.
	 */
	uint64_t cpu_ns;
};

struct pt_workers {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pt_job *todo_head, *todo_tail;
	struct pt_job *done_head, *done_tail;
	pthread_t *threads;
	int n_threads;
	int efd;			/* readable when jobs have finished */
	unsigned int in_flight;		/* submitted and not yet reaped */
	bool stopping;
	int nice;			/* the threads' nice value */
	int nice_errors;		/* threads that could not take it */
};

static inline bool pt_job_started(const struct pt_job *job)
{
	return __atomic_load_n(&job->started, __ATOMIC_ACQUIRE);
}

int pt_workers_start(struct pt_workers *w, int n_threads);
/*
 * A pool whose threads run at nice @nice: background work (offload, scans) that must
 * yield the CPU to the containers' own threads at once, while the wake prefetch, which a
 * container waits for, runs in a pool of its own at the daemon's priority.
 */
int pt_workers_start_nice(struct pt_workers *w, int n_threads, int nice);
void pt_workers_submit(struct pt_workers *w, struct pt_job *job);
/*
 * Takes @job back if it still waits in the queue: run() is never called, and done() runs
 * at the next reap with cancelled set. Whether it was taken back (false: a worker has it,
 * or it is not in this pool).
 */
bool pt_workers_cancel(struct pt_workers *w, struct pt_job *job);
/*
 * A niced pool's @job that runs now goes on at the calling thread's nice until it ends (its
 * worker takes the pool's nice again then): a container woke and its prefetch waits for
 * this job. Whether it was raised (false: not running, a pool at the daemon's priority, or
 * no CAP_SYS_NICE).
 */
bool pt_workers_boost(struct pt_workers *w, struct pt_job *job);
/* Runs done() of every finished job, in submission order per thread. */
void pt_workers_reap(struct pt_workers *w, void *arg);
/* Lets queued and running jobs finish, reaps them, and joins the threads. */
void pt_workers_stop(struct pt_workers *w, void *arg);

#endif
