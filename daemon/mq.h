/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The multi-queue (MQ) hotness model of one memory context (Zhou, Philbin, Li, "The
 * Multi-Queue Replacement Algorithm for Second Level Buffer Caches", USENIX ATC 2001),
 * adapted to page tiering over chunks of a context's memory. Pure: no I/O, no globals, no
 * clock; deterministic. Unit tested on synthetic traces (tests/unit/test_mq.c) and compared
 * against LRU by bench/mq_replay.c.
 *
 * Time is in epochs: the daemon scans accessed bits once per epoch, calls pt_mq_touch() for
 * every chunk seen accessed (or demand-read from the tier), then pt_mq_epoch() to close it.
 *
 *  - A resident chunk with access frequency f (epochs in which it was seen accessed) lives in
 *    queue Q[min(log2 f, m - 1)], each queue an LRU list (head = least recently used).
 *  - A chunk not accessed for lifeTime epochs drops one queue (the paper's Adjust step); its
 *    frequency is kept, so one access brings it back to queue log2 f.
 *  - The daemon offloads the coldest chunks (pt_mq_coldest(): lowest queue, LRU end first)
 *    and reports them with pt_mq_evicted(); they move to the bounded history queue Qout,
 *    which remembers their frequency. A touch of a chunk in Qout is a refault: it comes back
 *    with f + 1.
 *  - Every refault is an offload that turned out wrong; the refault rate (against the
 *    eviction rate) is what the planner uses to grow the budget. A refault is also a
 *    misprediction of the model itself, the kind lifeTime can fix, when the chunk
 *      (a) had been aged: evicted from a queue below log2 f, so demotion, not its
 *          frequency, made it a victim, and
 *      (b) comes back within recent_epochs of its eviction.
 *    lifeTime, within [lifetime_min, lifetime_max], follows the share of an epoch's
 *    refaults that are mispredictions:
 *
 *      share >= grow_pct:            lifeTime += max(1, lifeTime / 4)   (fast)
 *      share < grow_pct / 4 (or no refault) for relax_epochs epochs in a row:
 *                                    lifeTime -= max(1, lifeTime / 16)  (slow)
 *      otherwise:                    unchanged
 *
 *    Why: a refault costs an NVMe read the application waits for, so aging that throws
 *    out chunks still in use is corrected quickly. Too long a lifeTime costs refaults too,
 *    only less visibly: chunks hot in a past phase linger in the high queues while the
 *    new working set is evicted from Q0 (bench/README-mq.md, trace "shift"); hence the
 *    slow decay back towards lifetime_min when aging is not to blame. Refaults of chunks
 *    evicted from their own queue (used once, or the budget ran out below them) are the
 *    budget's business, not lifeTime's. A share rather than a count is the same for a
 *    1 GiB and a 1 TiB context. The window in (b) is a fixed number of epochs, not a
 *    multiple of lifeTime: with a window that grows with lifeTime, chunks touched at
 *    random (with no reuse a cache could exploit) refault "in the window" more often the
 *    longer lifeTime is, and lifeTime runs away to its maximum.
 *
 * Chunk ids are opaque 64-bit values (address >> chunk_shift, process index in the high bits:
 * the caller's business). Memory is bounded by max_resident + max_history nodes of 48 bytes
 * plus the hash table, allocated as the model grows. Every operation is O(1) amortized
 * except the bulk outputs, pt_mq_remove_range() and pt_mq_check().
 *
 * Functions return 0 (or a count, or a PT_MQ_* result) or a negative errno.
 */
#ifndef PAGETIER_MQ_H
#define PAGETIER_MQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PT_MQ_MAX_QUEUES	32	/* frequencies are 32-bit: log2 f <= 31 */
#define PT_MQ_MAX_NODES		0x7ffffffeU	/* max_resident + max_history */
#define PT_MQ_MAX_LIFETIME	(1U << 30)

struct pt_mq_params {
	unsigned int nr_queues;		/* m: 1..PT_MQ_MAX_QUEUES */
	uint32_t lifetime;		/* initial lifeTime, epochs */
	uint32_t lifetime_min;		/* >= 1; min == max disables adaptation */
	uint32_t lifetime_max;		/* <= PT_MQ_MAX_LIFETIME */
	uint32_t max_resident;		/* tracked resident chunks; past it touch says -ENOSPC */
	uint32_t max_history;		/* Qout capacity, oldest forgotten first; 0: no history */
	/*
	 * Share of an epoch's refaults, in percent, that are mispredictions for lifeTime to
	 * grow: 1..100.
	 */
	uint32_t grow_pct;
	/* A refault this soon (epochs) after eviction can count as a misprediction. */
	uint32_t recent_epochs;
	uint32_t relax_epochs;		/* quiet epochs (see above) per shrink step; 0: never */
};

/* Defaults (bench/README-mq.md shows how the lifeTime rules behave on traces). */
#define PT_MQ_DEF_QUEUES	8
#define PT_MQ_DEF_LIFETIME	16
#define PT_MQ_DEF_LIFETIME_MIN	2
#define PT_MQ_DEF_LIFETIME_MAX	1024
#define PT_MQ_DEF_MAX_RESIDENT	(1U << 22)
#define PT_MQ_DEF_MAX_HISTORY	(1U << 22)
#define PT_MQ_DEF_GROW_PCT	10
#define PT_MQ_DEF_RECENT_EPOCHS	4
#define PT_MQ_DEF_RELAX_EPOCHS	8

struct pt_mq_stats {
	uint64_t now;			/* epochs closed so far */
	uint32_t lifetime;		/* current lifeTime, epochs */
	uint32_t resident;		/* chunks in Q0..Qm-1 */
	uint32_t history;		/* chunks in Qout */
	uint32_t queue_len[PT_MQ_MAX_QUEUES];
	uint64_t touches;		/* counted accesses (one per chunk per epoch) */
	uint64_t inserts;		/* chunks not known to the model when touched */
	uint64_t refaults;		/* touches of chunks in Qout */
	uint64_t mispredictions;	/* refaults lifeTime is to blame for (see above) */
	uint64_t promotions;		/* touches that moved a chunk to a higher queue */
	uint64_t demotions;		/* lifeTime expiries (one per queue step) */
	uint64_t evictions;		/* pt_mq_evicted() of resident chunks */
	uint64_t history_drops;		/* Qout entries forgotten to stay within max_history */
	uint64_t removals;		/* pt_mq_remove*() */
	uint64_t lifetime_grows;
	uint64_t lifetime_shrinks;
	uint64_t refault_rate_milli;	/* EWMA (1/8) of refaults per epoch, x1000 */
	uint64_t evict_rate_milli;	/* EWMA (1/8) of evictions per epoch, x1000 */
};

/* What pt_mq_touch() found. */
enum pt_mq_touch_result {
	PT_MQ_HIT = 0,		/* resident (or already touched this epoch) */
	PT_MQ_NEW = 1,		/* unknown (never seen, removed, or forgotten by Qout) */
	PT_MQ_REFAULT = 2,	/* in Qout: restored with its frequency + 1 */
};

enum pt_mq_where { PT_MQ_ABSENT, PT_MQ_RESIDENT, PT_MQ_HISTORY };

struct pt_mq_chunk {
	enum pt_mq_where where;
	unsigned int queue;		/* resident: its queue */
	uint32_t freq;			/* epochs with an access (saturates) */
	/* Resident: last access, or the epoch before its last demotion. History: evicted. */
	uint64_t stamp;
	bool aged;			/* history: evicted from a queue below log2 f */
	/*
	 * Whether an access was ever counted (a chunk only pt_mq_insert_cold() knows has
	 * none), and the epoch of the last one (for such a chunk: the epoch before it was
	 * inserted, from when it has been unused). Unlike @stamp, demotion never moves it:
	 * it is what "unused for N epochs" means.
	 */
	bool accessed;
	uint64_t last_access;
};

struct pt_mq;

void pt_mq_params_default(struct pt_mq_params *p);
/* 0, or -EINVAL if @p is out of range (see struct pt_mq_params). */
int pt_mq_params_check(const struct pt_mq_params *p);

/* A new empty model (@p NULL: defaults) in *@out. -EINVAL, -ENOMEM. */
int pt_mq_new(const struct pt_mq_params *p, struct pt_mq **out);
void pt_mq_free(struct pt_mq *mq);

/*
 * Chunk @id was accessed in the current epoch. Returns a PT_MQ_* result, -ENOSPC if it is
 * not resident and max_resident chunks already are (nothing changes), -ENOMEM.
 * A second touch in the same epoch is a PT_MQ_HIT that changes nothing.
 */
int pt_mq_touch(struct pt_mq *mq, uint64_t id);
/*
 * Chunk @id is resident but no access to it has been seen (tracking just began): it joins
 * Q0 at its cold end with stamp 0, without counting an access (callers that want to tell
 * it from a chunk used in epoch 0 start using the model at epoch 1). 0 if the model knows
 * it already, PT_MQ_NEW, -ENOSPC, -ENOMEM.
 */
int pt_mq_insert_cold(struct pt_mq *mq, uint64_t id);
/* Closes the current epoch: adapts lifeTime, advances time, demotes expired chunks. */
void pt_mq_epoch(struct pt_mq *mq);

/*
 * Up to @max resident chunk ids into @out: pt_mq_coldest() coldest first (Q0 LRU end
 * first, then Q1, ...), pt_mq_hottest() hottest first (Qm-1 MRU end first). Returns the
 * count, or -EINVAL if @out is NULL and @max is not 0.
 */
int pt_mq_coldest(const struct pt_mq *mq, uint64_t *out, size_t max);
int pt_mq_hottest(const struct pt_mq *mq, uint64_t *out, size_t max);

/*
 * A walk of the resident chunks in pt_mq_coldest() order, one at a time, for a caller that
 * needs only the first few of many (the global victim order over thousands of contexts).
 * Any change to the model ends the walk's validity: start a new one.
 */
struct pt_mq_cursor {
	unsigned int queue;		/* the queue of @node */
	uint32_t node;			/* the next chunk's node; past the end: none */
	bool started;
};

static inline void pt_mq_cursor_init(struct pt_mq_cursor *c)
{
	*c = (struct pt_mq_cursor){ 0 };
}

/*
 * The next chunk of the walk: its id and what pt_mq_lookup() would say of it. 0, -ENOENT
 * past the last resident chunk, -EINVAL.
 */
int pt_mq_coldest_next(const struct pt_mq *mq, struct pt_mq_cursor *c, uint64_t *id,
		       struct pt_mq_chunk *info);

/*
 * The daemon offloaded resident chunk @id: it moves to Qout (the oldest entry of a full Qout
 * is forgotten). 0 (also if it is already in Qout), -ENOENT if the model does not know it.
 */
int pt_mq_evicted(struct pt_mq *mq, uint64_t id);
/* The range backing @id was unmapped: forget it (resident or Qout). 0, -ENOENT. */
int pt_mq_remove(struct pt_mq *mq, uint64_t id);
/* Forgets every chunk with first <= id <= last. Returns how many, or -EINVAL. */
int pt_mq_remove_range(struct pt_mq *mq, uint64_t first, uint64_t last);

/* Where chunk @id is. 0, or -ENOENT (and out->where = PT_MQ_ABSENT). */
int pt_mq_lookup(const struct pt_mq *mq, uint64_t id, struct pt_mq_chunk *out);
void pt_mq_get_stats(const struct pt_mq *mq, struct pt_mq_stats *st);
const struct pt_mq_params *pt_mq_get_params(const struct pt_mq *mq);

/*
 * Checks every internal invariant (each chunk in exactly one list, list links, counts,
 * queue order, hash table). 0, or -EUCLEAN. For tests; O(n).
 */
int pt_mq_check(const struct pt_mq *mq);

#endif
