// SPDX-License-Identifier: GPL-2.0
#include "sample_batch.h"

#include "cgroup.h"

#include <errno.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* cpu.stat is a few hundred bytes (pt_cgroup_sample_files reads it into 2 KiB as well). */
#define CPU_STAT_BUF 2048
#define MEMORY_CURRENT_BUF 64

enum { READ_CPU_STAT, READ_MEMORY_CURRENT };

struct slot {
	int res[2];			/* bytes read, or -errno; -EINPROGRESS: not completed */
	char cpu_stat[CPU_STAT_BUF];
	char memory_current[MEMORY_CURRENT_BUF];
};

struct pt_sample_batch {
	struct io_uring ring;
	struct slot *slots;
	unsigned int cap, n;
	bool ran;
	uint64_t submissions;
};

struct pt_sample_batch *pt_sample_batch_new(unsigned int slots, int *err)
{
	struct pt_sample_batch *b;
	int rc;

	*err = -EINVAL;
	if (!slots || slots > 2048)
		return NULL;
	*err = -ENOMEM;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->slots = calloc(slots, sizeof(*b->slots));
	if (!b->slots) {
		free(b);
		return NULL;
	}
	b->cap = slots;
	/* Two reads a cgroup, all in the submission queue at once. */
	rc = io_uring_queue_init(2 * slots, &b->ring, 0);
	if (rc < 0) {
		*err = rc;
		free(b->slots);
		free(b);
		return NULL;
	}
	*err = 0;
	return b;
}

void pt_sample_batch_free(struct pt_sample_batch *b)
{
	if (!b)
		return;
	io_uring_queue_exit(&b->ring);
	free(b->slots);
	free(b);
}

unsigned int pt_sample_batch_room(const struct pt_sample_batch *b)
{
	return b->ran ? 0 : b->cap - b->n;
}

/* user_data: the slot and which of its two files. */
static void prep(struct pt_sample_batch *b, int fd, unsigned int k, int which)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
	struct slot *s = &b->slots[k];

	/* Never NULL: the queue holds two entries per slot, and one run empties it. */
	if (which == READ_CPU_STAT)
		io_uring_prep_read(sqe, fd, s->cpu_stat, sizeof(s->cpu_stat) - 1, 0);
	else
		io_uring_prep_read(sqe, fd, s->memory_current, sizeof(s->memory_current) - 1, 0);
	io_uring_sqe_set_data64(sqe, (uint64_t)k << 1 | (uint64_t)which);
}

int pt_sample_batch_add(struct pt_sample_batch *b, int cpu_stat_fd, int memory_current_fd)
{
	unsigned int k;

	if (b->ran || b->n == b->cap)
		return -ENOSPC;
	k = b->n++;
	b->slots[k].res[0] = b->slots[k].res[1] = -EINPROGRESS;
	prep(b, cpu_stat_fd, k, READ_CPU_STAT);
	prep(b, memory_current_fd, k, READ_MEMORY_CURRENT);
	return (int)k;
}

int pt_sample_batch_run(struct pt_sample_batch *b)
{
	unsigned int want = 2 * b->n, got = 0;
	struct io_uring_cqe *cqe;
	int rc = 0;

	b->ran = true;
	if (!b->n)
		return 0;
	b->submissions++;
	/*
	 * Again after a signal: the queue is flushed on each call (nothing submitted twice), and
	 * completions already in the ring count toward @want, since none is consumed yet.
	 */
	do
		rc = io_uring_submit_and_wait(&b->ring, want);
	while (rc == -EINTR);
	if (rc < 0)
		goto out;
	rc = 0;
	while (got < want) {
		int w = io_uring_wait_cqe(&b->ring, &cqe);
		uint64_t d;

		if (w == -EINTR)
			continue;
		if (w < 0) {
			rc = w;
			break;
		}
		d = io_uring_cqe_get_data64(cqe);
		if ((d >> 1) < b->n)
			b->slots[d >> 1].res[d & 1] = cqe->res;
		io_uring_cqe_seen(&b->ring, cqe);
		got++;
	}
out:
	if (rc < 0)
		for (unsigned int k = 0; k < b->n; k++)
			b->slots[k].res[0] = b->slots[k].res[1] = rc;
	return rc;
}

/* One read's text: NUL-terminated, or an error if it failed or may have been cut. */
static int text_of(int res, char *buf, size_t size)
{
	if (res < 0)
		return res;
	if ((size_t)res >= size - 1)
		return -EFBIG;	/* filled the buffer: maybe more to read */
	buf[res] = '\0';
	return 0;
}

int pt_sample_batch_result(const struct pt_sample_batch *b, int k, uint64_t *cpu_usage_usec,
			   uint64_t *memory_current)
{
	struct slot *s;
	int rc;

	if (k < 0 || (unsigned int)k >= b->n || !b->ran)
		return -EINVAL;
	/* The buffers are the batch's own; terminating them changes no result. */
	s = (struct slot *)&b->slots[k];
	rc = text_of(s->res[READ_CPU_STAT], s->cpu_stat, sizeof(s->cpu_stat));
	if (!rc)
		rc = pt_flat_keyed_get(s->cpu_stat, "usage_usec", cpu_usage_usec);
	if (!rc)
		rc = text_of(s->res[READ_MEMORY_CURRENT], s->memory_current,
			     sizeof(s->memory_current));
	if (!rc)
		rc = pt_cgroup_parse_u64(s->memory_current, memory_current);
	return rc;
}

void pt_sample_batch_reset(struct pt_sample_batch *b)
{
	b->n = 0;
	b->ran = false;
}

uint64_t pt_sample_batch_submissions(const struct pt_sample_batch *b)
{
	return b->submissions;
}
