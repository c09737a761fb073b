// SPDX-License-Identifier: GPL-2.0
#include "worker.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The calling thread's CPU time, user and system, in ns (0 where it cannot be read). */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Appends @job to the queue @head..@tail (the jobs to run, or the ones done); under w->lock. */
static void job_append(struct pt_job **head, struct pt_job **tail, struct pt_job *job)
{
	job->next = NULL;
	if (*tail)
		(*tail)->next = job;
	else
		*head = job;
	*tail = job;
}

static void *worker_main(void *arg)
{
	struct pt_workers *w = arg;
	uint64_t one = 1;
	pid_t tid = (pid_t)syscall(SYS_gettid);

	/* Per thread on Linux: PRIO_PROCESS with a thread id. */
	if (w->nice && setpriority(PRIO_PROCESS, (id_t)tid, w->nice))
		__atomic_add_fetch(&w->nice_errors, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct pt_job *job;

		while (!w->todo_head && !w->stopping)
			pthread_cond_wait(&w->cond, &w->lock);
		job = w->todo_head;
		if (!job)
			break;	/* stopping and nothing left to do */
		w->todo_head = job->next;
		if (!w->todo_head)
			w->todo_tail = NULL;
		job->tid = tid;
		pthread_mutex_unlock(&w->lock);

		__atomic_store_n(&job->started, true, __ATOMIC_RELEASE);
		{
			uint64_t t0 = thread_cpu_ns(), t1;

			job->run(job);
			t1 = thread_cpu_ns();
			job->cpu_ns = t1 > t0 ? t1 - t0 : 0;
		}

		pthread_mutex_lock(&w->lock);
		/* No boost reaches this thread through the job any more; one that did ends here. */
		job->tid = 0;
		if (w->nice)
			setpriority(PRIO_PROCESS, (id_t)tid, w->nice);
		job_append(&w->done_head, &w->done_tail, job);
		if (write(w->efd, &one, sizeof(one)) < 0) {
			/* eventfd counter saturated: a wake-up is pending anyway */
		}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int pt_workers_start(struct pt_workers *w, int n_threads)
{
	return pt_workers_start_nice(w, n_threads, 0);
}

int pt_workers_start_nice(struct pt_workers *w, int n_threads, int nice)
{
	memset(w, 0, sizeof(*w));
	w->nice = nice;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd < 0)
		return -errno;
	w->threads = calloc((size_t)n_threads, sizeof(*w->threads));
	if (!w->threads) {
		close(w->efd);
		return -ENOMEM;
	}
	for (int i = 0; i < n_threads; i++) {
		int rc = pthread_create(&w->threads[i], NULL, worker_main, w);

		/* top -H, ps -L and /proc/PID/task/TID/comm tell the pools apart. */
		if (!rc)
			pthread_setname_np(w->threads[i], nice ? "pt-background" : "pt-worker");

		if (rc) {
			pt_workers_stop(w, NULL);
			return -rc;
		}
		w->n_threads++;
	}
	return 0;
}

void pt_workers_submit(struct pt_workers *w, struct pt_job *job)
{
	pthread_mutex_lock(&w->lock);
	job_append(&w->todo_head, &w->todo_tail, job);
	w->in_flight++;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

bool pt_workers_cancel(struct pt_workers *w, struct pt_job *job)
{
	static const uint64_t one = 1;
	struct pt_job **pp, *prev = NULL;
	bool found = false;

	/* A worker unlinks a job under the lock before it sets started: unlinked here, none can. */
	pthread_mutex_lock(&w->lock);
	for (pp = &w->todo_head; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp != job)
			continue;
		*pp = job->next;
		if (w->todo_tail == job)
			w->todo_tail = prev;
		job->cancelled = true;
		job_append(&w->done_head, &w->done_tail, job);
		if (write(w->efd, &one, sizeof(one)) < 0) {
			/* eventfd counter saturated: a wake-up is pending anyway */
		}
		found = true;
		break;
	}
	pthread_mutex_unlock(&w->lock);
	return found;
}

bool pt_workers_boost(struct pt_workers *w, struct pt_job *job)
{
	bool done = false;

	pthread_mutex_lock(&w->lock);
	if (w->nice && job->tid) {
		errno = 0;
		int mine = getpriority(PRIO_PROCESS, 0);

		done = !errno && !setpriority(PRIO_PROCESS, (id_t)job->tid, mine);
	}
	pthread_mutex_unlock(&w->lock);
	return done;
}

void pt_workers_reap(struct pt_workers *w, void *arg)
{
	struct pt_job *list, *next;
	uint64_t count;

	if (read(w->efd, &count, sizeof(count)) < 0) {
		/* EAGAIN: nothing signalled, but a list may still be non-empty */
	}
	pthread_mutex_lock(&w->lock);
	list = w->done_head;
	w->done_head = w->done_tail = NULL;
	pthread_mutex_unlock(&w->lock);
	for (; list; list = next) {
		next = list->next;
		w->in_flight--;
		list->done(list, arg);
	}
}

void pt_workers_stop(struct pt_workers *w, void *arg)
{
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	for (int i = 0; i < w->n_threads; i++)
		pthread_join(w->threads[i], NULL);
	pt_workers_reap(w, arg);
	free(w->threads);
	w->threads = NULL;
	if (w->efd >= 0)
		close(w->efd);
	w->efd = -1;
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
}
