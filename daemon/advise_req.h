/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A readahead request as bytes: what pagetierd hands its spawner (advise_spawner.h) so that
 * a small process, not a fork of the daemon, reads a container's mapped files back in its
 * cgroup. Pure (no I/O): the daemon encodes into a buffer, the spawner decodes in place.
 *
 * Layout, native byte order (both ends are the same binary), every part 8-byte aligned:
 *   header: magic, version, advice, number of range lists, the lengths of two strings
 *           (each with its NUL, padded to 8), whether the backing queue is waited for
 *   the container's cgroup directory, the backing queue's waking cgroup directory
 *   per range list: pid, ranges, start time, length of its cgroup string, whether a pidfd
 *           comes with it (the next of the request's descriptors, in list order); its
 *           cgroup ("/a/b"); its ranges (struct pt_range)
 */
#ifndef PAGETIER_ADVISE_REQ_H
#define PAGETIER_ADVISE_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actuator.h"

#define PT_ADVISE_REQ_MAGIC 0x50544152u	/* "PTAR" */
#define PT_ADVISE_REQ_VERSION 1
/* A request larger than this is refused on both ends (a wake's file set is far smaller). */
#define PT_ADVISE_REQ_MAX (64u << 20)

struct pt_advise_req {
	int advice;
	bool use_queue;		/* wait for the tiers' backing queue (backing_queue.h) */
	const char *cgdir;	/* the container's cgroup directory: where the reader runs */
	const char *queue_cgdir;	/* the waking cgroup, for its major faults ("" none) */
	int n;
	struct pt_proc_ranges *set;	/* decoded: malloc'd, pointing into the buffer */
	int n_pidfds;		/* range lists with a pidfd, in order */
};

/* Bytes the encoding of this request takes. */
size_t pt_advise_req_size(const char *cgdir, const struct pt_proc_ranges *set, int n,
			  const char *queue_cgdir);
/*
 * Encodes into @buf (@cap bytes, 8-byte aligned). A list has a pidfd if its pidfd > 0.
 * Returns the bytes written, or -ENOSPC, -EINVAL (n < 0, a list with n < 0).
 */
int64_t pt_advise_req_encode(void *buf, size_t cap, const char *cgdir,
			     const struct pt_proc_ranges *set, int n, int advice, bool use_queue,
			     const char *queue_cgdir);
/*
 * Decodes @len bytes of @buf (8-byte aligned; it must outlive *@out, whose strings and
 * ranges point into it). A list that comes with a pidfd has pidfd -1 until the caller
 * gives it its descriptor; the others 0 (none: the advice pins the pid by its start time
 * and cgroup, actuator.h). An empty cgroup string decodes as NULL (not checked). 0, or
 * -EPROTO for anything malformed (bad magic or version, a count or a length past the end,
 * a string not terminated), -ENOMEM.
 */
int pt_advise_req_decode(const void *buf, size_t len, struct pt_advise_req *out);
void pt_advise_req_free(struct pt_advise_req *r);

#endif
