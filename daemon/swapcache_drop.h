/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Dropping a cgroup's swap cache with memory.reclaim, without writing. Pure: the steps and
 * when to stop; the reads and writes of the cgroup's files are context.c's.
 *
 * Pages in the swap cache that nobody maps (what a timer's fault read ahead, a prefetch the
 * application did not use, what MADV_PAGEOUT wrote and left behind) are on swap already:
 * they go at no write cost. But memory.reclaim takes what the LRU offers, not the swap cache
 * alone, and in an active container the LRU also offers mapped memory that has not been
 * touched for a while, or shared memory whose pages gave up their swap slots when they came
 * back: reclaiming those writes them again, and what the application then touches comes back
 * from the drive (real_servers: PostgreSQL under a light load had 12 MiB written in 50 s by
 * a reclaim sized from memory.stat alone). So the drop goes in steps, and each step is
 * judged by memory.swap.current: reclaim of a page already on swap allocates nothing, a
 * write allocates a slot. A step after which the cgroup holds more swap than before wrote:
 * what remains in the swap cache is not stray, and the drop stops there; so do steps that
 * each wrote a little, once they add up to a share of what the drop can gain. A step costs
 * at most its size in writes.
 */
#ifndef PAGETIER_SWAPCACHE_DROP_H
#define PAGETIER_SWAPCACHE_DROP_H

#include <stdbool.h>
#include <stdint.h>

/* Swap allocated during one step beyond this counts as written (one cluster's readahead). */
#define PT_DROP_WRITE_SLACK	(128ULL << 10)
/*
 * ... and over all the steps of a drop, beyond this much at least. Each step under the
 * slack, 34 steps of a trim of PostgreSQL under light load wrote 2 MiB (6.1, where a swap
 * fence lets each step write 64 KiB): real_servers' "no churn under load" saw 5 MiB in
 * 35 s.
 */
#define PT_DROP_WRITE_TOTAL	(4 * PT_DROP_WRITE_SLACK)
/*
 * An active container's drop (pt_drop_writes_follow_gain()) may write more: up to
 * 1/PT_DROP_WRITE_SHARE of the swap cache it sets out to drop, PT_DROP_WRITE_TOTAL_MAX at
 * most. Why: on 6.1 (classic LRU, swap fence) the stray swap cache of a wake's prefetch
 * lies behind the pages the application mapped at its wake and has not touched since
 * (reclaim writes a fence's worth of them a step: 64 KiB freed, swap cache unchanged), and
 * how many such steps come before the stray part varies: redis in real_servers needed 25
 * over three trims in one run (the third got through) and more in another, where 61 MiB of
 * its wake's unused prefetch stayed while it served a tenth of its data (resident 64 of 73
 * MiB). Writing 2 MiB of pages its application left unreferenced to drop 60 MiB is the
 * trade the kernel's own reclaim would make. Not an idle container's: what stands before
 * the stray swap cache there is the idle working set the offload kept on purpose (redis:
 * 25 steps wrote 1.6 MiB of it and freed no swap cache).
 */
#define PT_DROP_WRITE_SHARE	32
#define PT_DROP_WRITE_TOTAL_MAX	(4ULL << 20)
/* Swap cache this close to the target is dropped. */
#define PT_DROP_CLOSE		(1ULL << 20)
/* memory.reclaim is asked for this many times a drop's budget at most. */
#define PT_DROP_ASK_FACTOR	2
/* Steps at most, and steps in a row that free nothing (under write-back) before giving up. */
#define PT_DROP_MAX_STEPS	64
#define PT_DROP_MAX_STUCK	10

enum pt_drop_stop {
	PT_DROP_GOING,		/* ask pt_drop_next() again */
	PT_DROP_DONE,		/* the swap cache is down to the target */
	PT_DROP_WROTE,		/* a step wrote: the rest of the swap cache is in use */
	PT_DROP_BUDGET,		/* as much freed as allowed (or PT_DROP_ASK_FACTOR times asked) */
	PT_DROP_STUCK,		/* steps free nothing (write-back not done, or unreclaimable) */
	PT_DROP_STEPS,		/* PT_DROP_MAX_STEPS */
};

struct pt_drop {
	uint64_t target;	/* swapcached at or below this (+ PT_DROP_CLOSE): done */
	uint64_t max_reclaim;	/* bytes freed in all, at most */
	uint64_t step;		/* bytes asked per step, at most */
	uint64_t asked;		/* bytes asked so far */
	uint64_t freed;		/* memory.current's drop over the steps */
	uint64_t last_swap;	/* memory.swap.current before the step in flight */
	uint64_t swap_grown;	/* its growth over the steps so far (shrinking not counted) */
	uint64_t write_total;	/* swap_grown beyond this: the drop wrote (set at its first step) */
	bool swap_known;	/* memory.swap.current exists (swap accounting) */
	bool gain_writes;	/* write_total follows the gain (pt_drop_writes_follow_gain()) */
	int steps, stuck;
	enum pt_drop_stop why;
};

/*
 * Starts a drop of the swap cache down to @target bytes, freeing at most @max_reclaim bytes
 * in all, asking memory.reclaim for @step at a time. @swap_current: memory.swap.current now,
 * UINT64_MAX when the cgroup has none (the write check is then off).
 */
void pt_drop_init(struct pt_drop *d, uint64_t target, uint64_t max_reclaim, uint64_t step,
		  uint64_t swap_current);
/*
 * With the cgroup's swapcached and memory.swap.current now (after the previous step, if
 * any), the bytes to ask memory.reclaim for next; 0 when the drop is over (d->why says why).
 */
uint64_t pt_drop_next(struct pt_drop *d, uint64_t swapcached, uint64_t swap_current);
/* Before its first step: the drop may write a share of what it can gain. */
void pt_drop_writes_follow_gain(struct pt_drop *d);
/* What the steps of such a drop may write in all when it sets out to drop @gain bytes. */
uint64_t pt_drop_write_total(uint64_t gain);
/* The step asked @asked bytes and memory.current went from @before to @after. */
void pt_drop_stepped(struct pt_drop *d, uint64_t asked, uint64_t before, uint64_t after);
/*
 * Whether a drop that stopped for @why, having freed @freed bytes, ended short of its target
 * with nothing gained (its budget or steps spent on pages in use): one a second later would
 * do the same.
 */
bool pt_drop_gained_nothing(enum pt_drop_stop why, uint64_t freed);
const char *pt_drop_stop_name(enum pt_drop_stop why);

#endif
