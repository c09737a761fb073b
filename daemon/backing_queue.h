/* SPDX-License-Identifier: GPL-2.0 */
/*
 * backing_queue.h - how many reads wait at the tiers' backing devices.
 *
 * To a tier, the wake's MADV_WILLNEED swap-ins are demand reads: it sends them to its
 * backing device at once. Advised faster than the drive reads, they would queue hundreds
 * of MiB there (a cloud disk reads 125 MB/s), and the waking application's own faults,
 * its first requests, would wait behind all of it: on the throttled profile of
 * bench/wake, a p99 of 1.4 s over the first 5 s after a redis wake. The prefetch keeps
 * that queue short instead: it advises its next piece only while the backing devices
 * hold few reads (/sys/class/block/NAME/inflight: requests, after the block layer merged
 * the tier's contiguous reads, so each may be up to a MiB: 2 of them are 16 ms of a
 * 125 MB/s cloud disk, and still enough to keep it streaming). The whole disk's queue,
 * not the partition's: the drive is what the reads share, the containers' files too.
 */
#ifndef PAGETIER_BACKING_QUEUE_H
#define PAGETIER_BACKING_QUEUE_H

#include <stdint.h>

#include "kmod_client.h"

/*
 * Reads queued at the backing drives beyond which the prefetch waits before a piece:
 * while the application is faulting (its cgroup's pgmajfault grew within the last
 * PT_FAULTING_HOLD_MS), 2, so that its own reads are next; otherwise 16, so that the drive
 * streams (at 2, a 125 MB/s cloud disk gave the prefetch 58% of its bandwidth; at 16, 91%).
 */
#define PT_PREFETCH_QUEUED_FAULTING 2
#define PT_PREFETCH_QUEUED_STREAMING 16
#define PT_FAULTING_HOLD_MS 100
/* memory.stat is read at most this often by one watcher. */
#define PT_FAULT_CHECK_MS 10
/* ... for at most this long per piece: other containers' I/O must not stall it. */
#define PT_PREFETCH_QUEUE_WAIT_MS 100

struct pt_backing_queue {
	int n;
	const char *cgdir;		/* the waking cgroup, for its major faults (or NULL) */
	int fd[PT_KMOD_MAX_TIERS];	/* each backing disk's inflight file */
	uint64_t disk_ino[PT_KMOD_MAX_TIERS];	/* its sysfs directory, to count it once */
};

/*
 * Opens the inflight file of every tier's backing disk: @sysblock/pagetierN/backing_dev
 * names its device (/dev/NAME); @sysclass/NAME is its sysfs directory, whose parent holds
 * the whole disk's inflight if it is a partition (it has a "partition" file). Each disk
 * once; a tier whose files are missing is left out. Returns how many it opened.
 */
int pt_backing_queue_open(struct pt_backing_queue *q, const char *sysblock,
			  const char *sysclass);
/* Reads in flight at all of them now (0 with none open); a failed read counts 0. */
uint64_t pt_backing_queue_reads(const struct pt_backing_queue *q);
/*
 * One thread's (or process's) view of the waking cgroup's major faults: memory.stat's
 * pgmajfault, read at most every PT_FAULT_CHECK_MS. fd -1: none (the limit stays low).
 */
struct pt_fault_watch {
	int fd;
	uint64_t last, checked_ms, until_ms;
};
void pt_fault_watch_open(struct pt_fault_watch *w, const char *cgdir);
void pt_fault_watch_close(struct pt_fault_watch *w);
/*
 * The queue limit for @majflt major faults so far at @now_ms: PT_PREFETCH_QUEUED_FAULTING
 * from a growth until PT_FAULTING_HOLD_MS after it, PT_PREFETCH_QUEUED_STREAMING otherwise
 * (the first sample only sets the base). Pure: @last and @until_ms are its state.
 */
unsigned int pt_prefetch_queue_limit(uint64_t majflt, uint64_t now_ms, uint64_t *last,
				     uint64_t *until_ms);

/*
 * Waits while more reads than the limit are in flight (the low one without @w),
 * PT_PREFETCH_QUEUE_WAIT_MS at most; returns how long it waited, in ms. @q NULL or with
 * nothing open: at once.
 */
uint64_t pt_backing_queue_wait(const struct pt_backing_queue *q, struct pt_fault_watch *w);
void pt_backing_queue_close(struct pt_backing_queue *q);

/* Parses an inflight file ("reads writes"): its reads, or -EINVAL. */
int pt_parse_inflight(const char *text, uint64_t *reads);

#endif
