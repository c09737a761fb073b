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

/* Reads queued at the backing devices beyond which the prefetch waits before a piece. */
#define PT_PREFETCH_QUEUED_READS 2
/* ... for at most this long per piece: other containers' I/O must not stall it. */
#define PT_PREFETCH_QUEUE_WAIT_MS 100

struct pt_backing_queue {
	int n;
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
 * Waits while more than PT_PREFETCH_QUEUED_READS are in flight, PT_PREFETCH_QUEUE_WAIT_MS
 * at most; returns how long it waited, in ms. @q NULL or with nothing open: at once.
 */
uint64_t pt_backing_queue_wait(const struct pt_backing_queue *q);
void pt_backing_queue_close(struct pt_backing_queue *q);

/* Parses an inflight file ("reads writes"): its reads, or -EINVAL. */
int pt_parse_inflight(const char *text, uint64_t *reads);

#endif
