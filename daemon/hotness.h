/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hotness state of one memory context: its processes' chunks in a multi-queue model
 * (mq.h), fed by access scans (scanner.h) once per epoch. It answers the planner's
 * questions: which chunks of an active container are cold, which chunks make up the wake
 * set when it goes idle, and how good the last prefetch was (precision: prefetched chunks
 * used within the measuring window; recall: chunks used after the wake that were
 * prefetched). Pure (no I/O but closing and duplicating the pidfds it keeps); unit tested
 * with synthetic scans.
 *
 * Chunk ids: the process's slot in the context in the high bits, the address >> chunk
 * shift below PT_HOT_ADDR_BITS.
 */
#ifndef PAGETIER_HOTNESS_H
#define PAGETIER_HOTNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "actuator.h"
#include "mq.h"
#include "scanner.h"

#define PT_HOT_ADDR_BITS	40
#define PT_HOT_MAX_PROCS	1024
#define PT_HOT_DEF_CHUNK_SHIFT	16	/* 64 KiB */
#define PT_HOT_REGION_SHIFT	21	/* 2 MiB: a PMD, a transparent huge page */
/*
 * An access is fresh when its chunk was not accessed in this many epochs before: the
 * measure of a context's spread that tells serving from timers (idle.h). Periodic
 * housekeeping of up to this period counts as the same small set.
 */
#define PT_HOT_FRESH_EPOCHS	8
/* khugepaged's default max_ptes_swap: see pt_hot_cold_chunks(). */
#define PT_HOT_REGION_SWAP_MAX	64
/*
 * A chunk that came back sooner after its offload than the cold threshold it had passed
 * (unused for T, offloaded, used again within T: a period the threshold cut through, as
 * of a cache's LRU crawler or a periodic sweep) leaves again only after this many times
 * the threshold without an access; otherwise it would be faulted back after every
 * offload: writes and refaults for no saving. Only the second time, though: one return
 * within T is no period yet. A one-off read of everything (redis' SAVE after a load, a
 * backup, a dump) brings back every chunk offloaded before it at once; held 8 T on that
 * alone, the whole cold set stayed in (real_servers: a redis serving a tenth of its data
 * kept 37 of 71 MiB, 19 of them read back at once after its load, which its SAVE reads
 * whole; at the default cold_after of 2 minutes, one backup pins a container's cold set
 * for 16). A periodic sweep pays one more write and read a chunk before it is held. A
 * chunk that comes back later than T (a random read of a big cache) was a good offload
 * and is not held back: holding every chunk read once would fill memory with them.
 */
#define PT_HOT_REFAULT_COLD_MULT 8
/* Refault rates (per epoch, x1000) below which the cold backoff does not grow. */
#define PT_HOT_BACKOFF_MIN_MILLI 1000

/* A set of chunk ids (open addressing). */
struct pt_idset {
	uint64_t *slots;	/* 0 = empty; ids are stored + 1 */
	size_t cap;
	size_t n;
};

int pt_idset_add(struct pt_idset *s, uint64_t id);	/* 1 added, 0 present, -ENOMEM */
bool pt_idset_has(const struct pt_idset *s, uint64_t id);
void pt_idset_clear(struct pt_idset *s);
void pt_idset_free(struct pt_idset *s);

struct pt_hot {
	struct pt_mq *mq;
	unsigned int chunk_shift;
	pid_t pids[PT_HOT_MAX_PROCS];	/* slot -> pid, 0 = free */
	uint64_t starts[PT_HOT_MAX_PROCS]; /* slot -> its start time: which process that was */
	/*
	 * slot -> that process's pidfd, from its latest scan (0: none): the ranges made of its
	 * chunks carry a duplicate, so that advice on them reaches that process or none, however
	 * long they were kept. Closed when the process no longer shows up in a scan (it exited
	 * or left the cgroup). At most PT_PIDFD_HOLDER_MAX of them, within the daemon's limit
	 * (pidfd.h): the other slots go by pid and start time.
	 */
	int pidfds[PT_HOT_MAX_PROCS];
	int n_pidfds;
	uint64_t epochs;

	/* Chunks refaulted since the last wake: part of the next wake set. */
	struct pt_idset refaulted;
	/*
	 * ... of which those that came back within the cold threshold of their offload once
	 * (suspected), and twice or more (mispredicted): cold only after
	 * PT_HOT_REFAULT_COLD_MULT times the threshold (pt_hot_cold_chunks).
	 */
	struct pt_idset suspected;
	struct pt_idset mispredicted;
	uint64_t cold_epochs;		/* the cold threshold last used (pt_hot_cold_backoff) */

	/* Wake set recorded at idle, hottest first. */
	uint64_t *wake_set;
	size_t n_wake_set;

	/* Prefetch quality, measured for a window of epochs after a wake. */
	struct pt_idset prefetched;	/* what the last prefetch brought back */
	struct pt_idset used;		/* chunks accessed in the window */
	uint32_t window_left;		/* epochs left in the measuring window */
	/*
	 * Chunks the last prefetch brought back that were not used in the window, set when a
	 * window ends (the daemon drops them: swap cache is no saving) and taken by it.
	 */
	uint64_t unused_prefetched;
	uint64_t used_prefetched;	/* |used ∩ prefetched| */
	double precision, recall;	/* of the last completed window; -1: none yet */

	/* The last closed epoch's accesses (pt_hot_apply_scans). */
	uint32_t ep_accessed;		/* chunks accessed */
	uint32_t ep_fresh;		/* ... of which not accessed in the PT_HOT_FRESH_EPOCHS before */

	uint64_t refaults;		/* touches of offloaded chunks, total */
	uint32_t backoff;		/* cold threshold multiplier, 1..8 */
	uint64_t backoff_epoch;		/* when it last changed */
	uint64_t cold_offloaded;	/* chunks offloaded while the context was active */
};

int pt_hot_init(struct pt_hot *h, unsigned int chunk_shift, uint32_t max_chunks);
void pt_hot_free(struct pt_hot *h);

uint64_t pt_hot_chunk_id(const struct pt_hot *h, int slot, uint64_t addr);
/* The process slot and the chunk's address for an id. */
void pt_hot_chunk_addr(const struct pt_hot *h, uint64_t id, int *slot, uint64_t *addr);

/*
 * Applies one epoch's scans of the context's processes (@n of them; a process missing from
 * the list has exited and its chunks are forgotten) and closes the epoch. Takes the scans'
 * pidfds (sets them to 0). Accessed chunks
 * are touched; present chunks the model does not know yet are added as seen this epoch.
 * Returns the number of refaults in this epoch, or a negative errno.
 */
int pt_hot_apply_scans(struct pt_hot *h, struct pt_proc_scan *scans, int n);

/*
 * Closes @n epochs in which nothing was scanned: the time a context's stretched scan
 * interval (pagetierd scans a steady context less often) stands for, closed before that
 * scan is applied, so that what it saw accessed is stamped in its last epoch (the
 * conservative end for coldness) and "cold for N epochs" keeps meaning N scan intervals.
 */
void pt_hot_skip_epochs(struct pt_hot *h, uint32_t n);

/*
 * Up to @max resident chunks not accessed for @cold_epochs epochs (PT_HOT_REFAULT_COLD_MULT
 * times that for a mispredicted one, see above; demotions in the model do not count as
 * accesses), coldest first, into
 * @ids; only from 2 MiB regions whose resident chunks are all cold (so a transparent huge
 * page leaves whole). Returns the count or a negative errno.
 */
int pt_hot_cold_chunks(const struct pt_hot *h, uint32_t cold_epochs, uint64_t *ids, size_t max);

/*
 * Refault feedback on the budget: while more than 1 in 8 recent offloads come back
 * (the model's smoothed refault and eviction rates) and more than one chunk per epoch
 * does, the cold threshold doubles, at most once per @cold_epochs, up to 8x @cold_epochs;
 * it returns to @cold_epochs when refaults stop.
 */
uint32_t pt_hot_cold_backoff(struct pt_hot *h, uint64_t cold_epochs);

/*
 * At idle: the wake set is what the context used while it last worked: the chunks last
 * accessed in the @recent_epochs epochs up to and including @busy_epoch (its last busy
 * epoch) that were used in more than one epoch (a bulk load touches everything once),
 * hottest first, plus those refaulted since the previous wake. Chunks accessed
 * after @busy_epoch, while it was quiet, are its idle working set: they stay resident
 * (pt_hot_keep_set) and are not in it. Ends the quality window of the previous wake, if it
 * is still open. With @keep_previous (the busy period was the container's own background,
 * no request), the set recorded before stays in it too, after these, where the model still
 * knows its chunks. Returns its size or -ENOMEM (the set recorded before stays).
 */
int pt_hot_record_wake_set(struct pt_hot *h, uint64_t busy_epoch, uint32_t recent_epochs,
			   bool keep_previous);

/*
 * The idle working set: resident chunks accessed in epoch @since or later (while it was
 * quiet: timers, housekeeping), into *@ids (malloc'd, NULL if none). Returns the count or
 * -ENOMEM.
 */
int pt_hot_keep_set(const struct pt_hot *h, uint64_t since, uint64_t **ids);

/* The daemon offloaded these chunks (they move to the model's history). */
void pt_hot_evicted(struct pt_hot *h, const uint64_t *ids, size_t n);
/*
 * Everything resident was offloaded (idle) but the chunks accessed in epoch @since or
 * later (the keep set): all of it goes to history. @since 0: everything.
 */
void pt_hot_evict_all(struct pt_hot *h, uint64_t since);
/* The current epoch (epochs closed so far). */
uint64_t pt_hot_now(const struct pt_hot *h);

/* The wake set was prefetched: start measuring precision and recall for @window epochs. */
void pt_hot_prefetched(struct pt_hot *h, uint32_t window);

/*
 * Groups chunk ids into per-process ranges (adjacent chunks merged, order of first
 * appearance kept, so hottest-first stays hottest-first), each with a duplicate of its
 * process's pidfd when the model has one. Returns how many processes, or a negative errno;
 * *out is malloc'd (free each with pt_proc_ranges_free, then the array).
 */
int pt_hot_ranges(const struct pt_hot *h, const uint64_t *ids, size_t n,
		  struct pt_proc_ranges **out);

#endif
