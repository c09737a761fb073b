// SPDX-License-Identifier: GPL-2.0
#include "swapcache_drop.h"

void pt_drop_init(struct pt_drop *d, uint64_t target, uint64_t max_reclaim, uint64_t step,
		  uint64_t swap_current)
{
	*d = (struct pt_drop){
		.target = target,
		.max_reclaim = max_reclaim,
		.step = step ? step : PT_DROP_CLOSE,
		.last_swap = swap_current,
		.swap_known = swap_current != UINT64_MAX,
		.why = PT_DROP_GOING,
	};
}

void pt_drop_writes_follow_gain(struct pt_drop *d)
{
	d->gain_writes = true;
}

uint64_t pt_drop_write_total(uint64_t gain)
{
	uint64_t w = gain / PT_DROP_WRITE_SHARE;

	return w < PT_DROP_WRITE_TOTAL ? PT_DROP_WRITE_TOTAL :
	       w > PT_DROP_WRITE_TOTAL_MAX ? PT_DROP_WRITE_TOTAL_MAX : w;
}

uint64_t pt_drop_next(struct pt_drop *d, uint64_t swapcached, uint64_t swap_current)
{
	uint64_t want;

	if (d->why != PT_DROP_GOING)
		return 0;
	if (!d->steps)
		d->write_total = !d->gain_writes ? PT_DROP_WRITE_TOTAL :
				 pt_drop_write_total(swapcached > d->target ?
						     swapcached - d->target : 0);
	/*
	 * The step before allocated swap: it wrote memory that was not on swap yet. Swap that
	 * shrinks (pages swapped in that gave up their slots) says nothing: only growth counts.
	 */
	if (d->steps && d->swap_known && swap_current != UINT64_MAX &&
	    swap_current > d->last_swap) {
		d->swap_grown += swap_current - d->last_swap;
		if (swap_current > d->last_swap + PT_DROP_WRITE_SLACK ||
		    d->swap_grown > d->write_total) {
			d->why = PT_DROP_WROTE;
			return 0;
		}
	}
	if (swap_current != UINT64_MAX)
		d->last_swap = swap_current;
	if (swapcached <= d->target + PT_DROP_CLOSE) {
		d->why = PT_DROP_DONE;
		return 0;
	}
	/*
	 * The budget bounds what the cgroup loses (memory.current's drop), not what is asked: a
	 * step that meets pages in use frees far less than it asks (a fence's worth, 6.1).
	 * What is asked is bounded too, should the cgroup's own growth hide what steps free.
	 */
	if (d->freed >= d->max_reclaim ||
	    d->asked >= PT_DROP_ASK_FACTOR * d->max_reclaim) {
		d->why = PT_DROP_BUDGET;
		return 0;
	}
	if (d->stuck >= PT_DROP_MAX_STUCK) {
		d->why = PT_DROP_STUCK;
		return 0;
	}
	if (d->steps >= PT_DROP_MAX_STEPS) {
		d->why = PT_DROP_STEPS;
		return 0;
	}
	want = swapcached - d->target;
	if (want > d->step)
		want = d->step;
	if (want > d->max_reclaim - d->freed)
		want = d->max_reclaim - d->freed;
	return want;
}

void pt_drop_stepped(struct pt_drop *d, uint64_t asked, uint64_t before, uint64_t after)
{
	d->steps++;
	d->asked += asked;
	if (after < before) {
		d->freed += before - after;
		d->stuck = 0;
	} else {
		d->stuck++;
	}
}

bool pt_drop_gained_nothing(enum pt_drop_stop why, uint64_t freed)
{
	return (why == PT_DROP_BUDGET || why == PT_DROP_STUCK || why == PT_DROP_STEPS) &&
	       freed < PT_DROP_CLOSE;
}

const char *pt_drop_stop_name(enum pt_drop_stop why)
{
	static const char *const names[] = {
		[PT_DROP_GOING] = "going",
		[PT_DROP_DONE] = "down to its target",
		[PT_DROP_WROTE] = "stopped: reclaim began to write, the rest is in use",
		[PT_DROP_BUDGET] = "its reclaim budget spent",
		[PT_DROP_STUCK] = "stopped: nothing more freed (write-back, or in use)",
		[PT_DROP_STEPS] = "its steps spent",
	};

	return (unsigned int)why < sizeof(names) / sizeof(names[0]) ? names[why] : "?";
}
