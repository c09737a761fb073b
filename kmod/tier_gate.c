// SPDX-License-Identifier: GPL-2.0
/*
 * tier_gate.c - admission of a tier's background I/O (the gate), and the count of its
 * bios in flight.
 *
 * Demand reads go to the backing device at once. Write-back, GC and prefetch
 * read-ahead ("background") are admitted only while the background blocks in flight
 * stay under bg_inflight_kib, and under bg_demand_kib while demand reads are in flight
 * or were lately (bg_demand_hold_ms), so a demand read queues behind little background
 * I/O. Used by the collector, prefetch, the write buffer and tier.c's direct writes;
 * it uses nothing of theirs but their work items, which it kicks when room frees up.
 *
 * Locking: bg_inflight, demand_inflight and demand_last are under t->lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/wait.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>

#include "tier.h"

static unsigned int bg_inflight_kib = 4096;
module_param(bg_inflight_kib, uint, 0644);
MODULE_PARM_DESC(bg_inflight_kib, "write-back, GC and read-ahead in flight at most, KiB (default 4096)");

static unsigned int bg_demand_kib = 512;
module_param(bg_demand_kib, uint, 0644);
MODULE_PARM_DESC(bg_demand_kib, "the same while demand reads are in flight, KiB (default 512)");

/*
 * Swap-ins come in bursts with think time between them: a gate that opened wide as soon
 * as no demand read was in flight would queue bg_inflight_kib ahead of the next one.
 */
static unsigned int bg_demand_hold_ms = 100;
module_param(bg_demand_hold_ms, uint, 0644);
MODULE_PARM_DESC(bg_demand_hold_ms, "keep the bg_demand_kib limit this long after a demand read, ms, at most 5000 (default 100)");

/**
 * pt_inflight_put() - a bio of the tier has completed
 * @t: the tier
 *
 * The last one lets pt_tier_teardown() free the tier: call it last.
 */
void pt_inflight_put(struct pt_tier *t)
{
	if (atomic_dec_and_test(&t->inflight))
		wake_up_var(&t->inflight);
}

/**
 * pt_gate_try_locked() - admit @blocks of background I/O if there is room
 * @t: the tier, locked
 * @blocks: size of the I/O
 *
 * One I/O is always admitted when none is in flight, whatever its size.
 *
 * Return: whether it was admitted; then pt_gate_put_locked() must follow.
 */
bool pt_gate_try_locked(struct pt_tier *t, u32 blocks)
{
	unsigned long hold = msecs_to_jiffies(min(READ_ONCE(bg_demand_hold_ms), 5000U));
	bool demand = t->demand_inflight || time_before(jiffies, t->demand_last + hold);
	u32 kib = demand ? READ_ONCE(bg_demand_kib) : READ_ONCE(bg_inflight_kib);

	lockdep_assert_held(&t->lock);
	if (t->bg_inflight && t->bg_inflight + blocks > (kib >> 2))
		return false;
	t->bg_inflight += blocks;
	return true;
}

static bool pt_gate_try(struct pt_tier *t, u32 blocks)
{
	unsigned long flags;
	bool ok;

	spin_lock_irqsave(&t->lock, flags);
	ok = pt_gate_try_locked(t, blocks);
	spin_unlock_irqrestore(&t->lock, flags);
	return ok;
}

/**
 * pt_gate_wait() - wait until @blocks of background I/O are admitted
 * @t: the tier
 * @blocks: size of the I/O
 *
 * Context: may sleep; nothing of the caller's may be waiting to be submitted.
 */
void pt_gate_wait(struct pt_tier *t, u32 blocks)
{
	wait_event(t->gate_wq, pt_gate_try(t, blocks));
}

/**
 * pt_gate_put_locked() - background I/O admitted by the gate has completed
 * @t: the tier, locked
 * @blocks: its size; pt_gate_wake() must follow, outside the lock
 */
void pt_gate_put_locked(struct pt_tier *t, u32 blocks)
{
	lockdep_assert_held(&t->lock);
	t->bg_inflight -= blocks;
}

/**
 * pt_gate_wake() - let waiting background I/O retry
 * @t: the tier
 */
void pt_gate_wake(struct pt_tier *t)
{
	if (wq_has_sleeper(&t->gate_wq))
		wake_up_all(&t->gate_wq);
	if (READ_ONCE(t->pf_stalled))
		queue_work(t->wq, &t->pf_work);
	if (READ_ONCE(t->wb_stalled))
		mod_delayed_work(t->wq, &t->wb_work, 0);
}

