/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The actuator: moves a process's anonymous memory to swap (MADV_PAGEOUT) and back into
 * the page/swap cache (MADV_WILLNEED) with process_madvise(2) through a pidfd. Pages leave
 * and return through the kernel's own swap path, so nothing is lost if we crash.
 */
#ifndef PAGETIER_ACTUATOR_H
#define PAGETIER_ACTUATOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backing_queue.h"
#include "maps.h"

/*
 * Ranges of one process. A pid is only a number, and numbers are reused, even within the
 * clock tick a start time counts: @pidfd is the process itself, opened when the ranges were
 * read (after which the reads were confirmed to be of it: pt_proc_pin()), and advice goes
 * through it, so that it reaches that process or none. @start (its start time,
 * pt_proc_start_time()) and @cgroup (its cgroup, "/a/b" as in /proc/PID/cgroup) say which
 * process that was; advice checks again that it still lives in @cgroup (a process can move
 * to another container's cgroup) and refuses (-ESRCH) one that does not or has exited.
 * @pidfd 0: none (zeroed structs, ranges from elsewhere): the advice opens one then and
 * checks @start; @start 0 and @cgroup NULL: not checked. pt_proc_ranges_free() closes it;
 * a copy of the struct borrows it.
 */
struct pt_proc_ranges {
	pid_t pid;
	uint64_t start;
	const char *cgroup;	/* owned by the caller, valid while it advises */
	int pidfd;		/* > 0: owned (0: none) */
	int n;
	int cap;
	struct pt_range *r;
};

/* @pid's start time (/proc/PID/stat field 22, clock ticks since boot): 0 or -ESRCH. */
int pt_proc_start_time(pid_t pid, uint64_t *start);
/* Whether @pid's cgroup (/proc/PID/cgroup, cgroup v2) is @cgroup or below it. */
bool pt_proc_in_cgroup(pid_t pid, const char *cgroup);
/* Whether the process of @pidfd is still there (not yet reaped): pidfd_send_signal(0). */
bool pt_pidfd_alive(int pidfd);
/*
 * Opens a pidfd for @pid (never fd 0) if it lives in @cgroup (NULL: anywhere) and, if
 * *@start is not 0, started then; sets *@start. A pidfd does not keep the number from
 * going to another process once this one is reaped, but a live process keeps its number:
 * what was read of /proc/PID after the open is of the pidfd's process if it is still
 * alive after the reads, which the callers check (pt_pidfd_alive()) after theirs too.
 * Returns the fd, -ESRCH (gone, elsewhere, another process) or another negative errno.
 */
int pt_proc_pin(pid_t pid, const char *cgroup, uint64_t *start);

/*
 * Reads @pid's mappings of @kinds, up to @max_bytes in total (0: no limit), if it lives in
 * @cgroup (NULL: anywhere), with its pidfd (pt_proc_pin()). 0, -ESRCH or -errno.
 */
int pt_proc_ranges_of(pid_t pid, const char *cgroup, unsigned int kinds, uint64_t max_bytes,
		      struct pt_proc_ranges *out);
/* Reads @pid's anonymous ranges, up to @max_bytes in total (0: no limit). */
int pt_proc_anon_ranges(pid_t pid, uint64_t max_bytes, struct pt_proc_ranges *out);
/*
 * The pages of @pid's file mappings that are in memory now, as ranges (from
 * /proc/PID/pagemap): what a wake should read back of its executables, libraries and
 * mapped files once reclaim has dropped them. At most @max_bytes (0: no limit).
 */
int pt_proc_file_resident(pid_t pid, const char *cgroup, uint64_t max_bytes,
			  struct pt_proc_ranges *out);
void pt_proc_ranges_free(struct pt_proc_ranges *pr);

/*
 * Applies @advice (MADV_PAGEOUT, MADV_WILLNEED) to @pr through its pidfd. A range the
 * kernel refuses (mlocked, hugetlb) is skipped, not fatal. Returns the bytes advised, or a
 * negative errno (-ESRCH: the process is gone).
 */
int64_t pt_proc_advise(const struct pt_proc_ranges *pr, int advice);

/*
 * As pt_proc_advise(), in pieces of at most PT_PACE_PIECE bytes, sleeping between them so
 * that no more than @rate bytes per second are advised (0: no limit): the I/O an offload
 * or a prefetch causes must not starve the other containers' I/O.
 */
#define PT_PACE_PIECE (16ULL << 20)
int64_t pt_proc_advise_paced(const struct pt_proc_ranges *pr, int advice, uint64_t rate);

/*
 * As pt_proc_advise() for each of @n range lists, by @threads threads at once: each takes
 * every threads-th piece of PT_SHARE_PIECE bytes, so all of them go through the set in its
 * order. A swap-in by MADV_WILLNEED is CPU work (a page, the swap cache, a bio, the tier's
 * copy from its staging cache) as much as I/O: one thread cannot keep a fast drive busy.
 * @rate (bytes per second, 0: no limit) is shared by the threads; with @queue, each piece
 * waits for the backing devices' queue to be short first (pt_backing_queue_wait()), and
 * *@waited_ms (if not NULL) adds up those waits. Bytes advised in all, or -ESRCH when every
 * process is gone.
 */
#define PT_SHARE_PIECE (1ULL << 20)
int64_t pt_proc_advise_shared(const struct pt_proc_ranges *set, int n, int advice,
			      unsigned int threads, uint64_t rate,
			      const struct pt_backing_queue *queue, uint64_t *waited_ms);

/*
 * As pt_proc_advise() for each of @n range lists, in pieces of at most 128 KiB (what one
 * MADV_WILLNEED of a file mapping reads ahead at most), from a child process that first joins
 * the cgroup @cgdir (or, if processes cannot live there, its first leaf below): the page
 * cache that MADV_WILLNEED reads in for file mappings is charged to the reader's cgroup,
 * and it belongs to the container, not to the daemon. Returns the bytes advised, or a
 * negative errno (-EBUSY: no cgroup below @cgdir could take the child).
 */
int64_t pt_proc_advise_in_cgroup(const char *cgdir, const struct pt_proc_ranges *set, int n,
				 int advice);

/*
 * The same in two steps, so that the caller works meanwhile: the reader runs between them.
 * The reader is a child of the readahead spawner when one runs (advise_spawner.h), else a
 * child of the caller.
 */
struct pt_advise_child {
	pid_t pid;		/* 0: none started; -1: the spawner's reader; else our child */
	int fd;			/* the result comes through this pipe */
};
/* With @queue (its descriptors shared with the child), each 1 MiB batch waits for it. */
int pt_advise_child_start(struct pt_advise_child *c, const char *cgdir,
			  const struct pt_proc_ranges *set, int n, int advice,
			  const struct pt_backing_queue *queue);
int64_t pt_advise_child_finish(struct pt_advise_child *c);
/*
 * What a reader does, in the reader process: joins @cgdir (or its first leaf below; NULL:
 * it was created in the container's cgroup), then advises each list in pieces of at most 128 KiB, behind @queue if it has tiers.
 * Bytes advised, or -errno from the join.
 */
int64_t pt_advise_as_reader(const char *cgdir, const struct pt_proc_ranges *set, int n,
			    int advice, const struct pt_backing_queue *queue);

#endif
