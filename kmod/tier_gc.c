// SPDX-License-Identifier: GPL-2.0
/*
 * tier_gc.c - the garbage collector of a tier.
 *
 * It runs on its own workqueue when fewer than gc_low segments are free (or a writer
 * waits for one) and collects until gc_high are. A collection takes the sealed segment
 * with the fewest live blocks (pt_gc_pick(); only those at most half full unless a
 * writer waits), reads its live blocks into a preallocated buffer, writes them at the
 * end of the owner cgroup's open segment (so a cgroup's pages stay together), and then
 * remaps each slot whose block is still the one it read (pt_gc_move()): a slot written
 * or discarded meanwhile keeps its new state and the copy is dropped. Until the remap
 * the slot is read from the victim, which cannot be reused before the collector and
 * every reader are done with it. Its I/O is background I/O (the gate).
 *
 * A block the collector cannot read stays where it is (a demand read of it will fail
 * too), and the victim is not chosen again; a failed write retires the destination
 * segment, like any failed write, and leaves the blocks in the victim.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/bitmap.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/sched.h>

#include "tier.h"

/**
 * pt_gc_kick() - make sure the collector runs
 * @t: the tier; may be called with t->lock held, from any context
 */
void pt_gc_kick(struct pt_tier *t)
{
	if (!READ_ONCE(t->dying))
		queue_work(t->gc_wq, &t->gc_work);
}

/**
 * pt_gc_seg_freed() - a segment was freed: writers waiting for one try again
 * @t: the tier, locked
 */
void pt_gc_seg_freed(struct pt_tier *t)
{
	lockdep_assert_held(&t->lock);
	if (t->space_waiters)
		wake_up_all(&t->space_wq);
}

struct pt_gc_batch {
	struct completion done;
	atomic_t pending;
	u32 nr_runs;			/* used entries of t->gc_runs */
};

/* Records the status in gc_runs and frees the bio at once: nothing waits for the pool. */
static void pt_gc_endio(struct bio *bio)
{
	struct pt_bgio *io = container_of(bio, struct pt_bgio, bio);
	struct pt_tier *t = io->t;
	struct completion *done = io->done;
	atomic_t *pending = io->pending;
	unsigned long flags;

	t->gc_runs[io->seg].status = bio->bi_status;
	spin_lock_irqsave(&t->lock, flags);
	pt_gate_put_locked(t, io->nr);
	spin_unlock_irqrestore(&t->lock, flags);
	bio_put(bio);
	pt_gate_wake(t);
	if (atomic_dec_and_test(pending))
		complete(done);
	pt_inflight_put(t);
}

static void pt_gc_batch_init(struct pt_gc_batch *b)
{
	init_completion(&b->done);
	atomic_set(&b->pending, 1);
	b->nr_runs = 0;
}

/* Sends @nr blocks at @pblk, through the buffer pages from victim index @first on. */
static void pt_gc_submit(struct pt_tier *t, struct pt_gc_batch *b, blk_opf_t opf, u32 pblk,
			 u32 nr, u32 first)
{
	struct pt_gc_run *run = &t->gc_runs[b->nr_runs];
	struct pt_bgio *io;
	struct bio *bio;
	u32 i, k;

	run->pblk = pblk;
	run->nr = nr;
	run->first = first;
	run->status = BLK_STS_OK;
	bio = bio_alloc_bioset(t->backing.bdev, nr, opf, GFP_NOIO, &t->bg_bs);
	io = pt_bgio_init(bio, t, op_is_write(opf) ? PT_BG_GC_WRITE : PT_BG_GC_READ);
	io->pblk = pblk;
	io->nr = nr;
	io->seg = b->nr_runs++;
	io->done = &b->done;
	io->pending = &b->pending;
	bio->bi_iter.bi_sector = (sector_t)pblk << PT_SECTORS_PER_SLOT_SHIFT;
	bio->bi_end_io = pt_gc_endio;
	for (i = 0, k = first; i < nr; i++, k = find_next_bit(t->gc_valid, t->seg_blocks, k + 1))
		__bio_add_page(bio, t->gc_pages[k], PT_SLOT_SIZE, 0);
	atomic_inc(&b->pending);
	atomic_inc(&t->inflight);
	pt_gate_wait(t, nr);
	submit_bio(bio);
}

static void pt_gc_wait(struct pt_gc_batch *b)
{
	if (!atomic_dec_and_test(&b->pending))
		wait_for_completion(&b->done);
}

/* Reads the victim's live blocks, runs of set bits of gc_valid, into the buffer. */
static bool pt_gc_read(struct pt_tier *t, u32 base)
{
	u32 i = 0, end, S = t->seg_blocks;
	struct pt_gc_batch b;
	struct pt_gc_run *run;
	bool ok = true;

	pt_gc_batch_init(&b);
	for (;;) {
		i = find_next_bit(t->gc_valid, S, i);
		if (i >= S)
			break;
		end = min(find_next_zero_bit(t->gc_valid, S, i), i + PT_BG_MAX_BLOCKS);
		pt_gc_submit(t, &b, REQ_OP_READ, base + i, end - i, i);
		i = end;
	}
	pt_gc_wait(&b);
	spin_lock_irq(&t->lock);
	for (run = t->gc_runs; run < t->gc_runs + b.nr_runs; run++) {
		t->st.gc_read_bytes += (u64)run->nr << PT_SLOT_SHIFT;
		t->st.gc_bios++;
		if (run->status) {
			/* Those blocks stay where they are. */
			bitmap_clear(t->gc_valid, run->first, run->nr);
			t->st.gc_errors++;
			ok = false;
		}
	}
	spin_unlock_irq(&t->lock);
	for (run = t->gc_runs; run < t->gc_runs + b.nr_runs; run++)
		if (run->status)
			pr_err_ratelimited("%s: GC read of %u blocks at block %u failed (%d)\n",
					   t->disk->disk_name, run->nr, run->pblk,
					   blk_status_to_errno(run->status));
	return ok;
}

/*
 * Collects one victim. Return: 1 if it did, 0 if there is none, -EAGAIN if there may be
 * one once writes or prefetch of it are done.
 */
static int pt_gc_one(struct pt_tier *t)
{
	u32 S = t->seg_blocks, seg, base, wp, i, k, left, pblk, got, moved = 0;
	bool urgent, transient, ioerr = false;
	struct pt_gc_batch b;
	struct pt_gc_run *run;
	u16 owner;

	spin_lock_irq(&t->lock);
	urgent = t->space_waiters || t->nr_free <= PT_GC_RESERVE + 1;
	seg = pt_gc_pick(t, urgent ? S - 1 : S / 2, &transient);
	if (seg == PT_NONE) {
		/* Writers waiting for space fail at once, until a block dies. */
		if (urgent && !transient)
			t->nospace = true;
		spin_unlock_irq(&t->lock);
		wake_up_all(&t->space_wq);
		return transient ? -EAGAIN : 0;
	}
	base = seg << t->seg_shift;
	wp = t->segs[seg].wp;
	owner = t->segs[seg].owner;
	bitmap_zero(t->gc_valid, S);
	for (i = 0; i < wp; i++) {
		u32 v = t->p2l[base + i];

		if (pt_p2l_live(v)) {
			__set_bit(i, t->gc_valid);
			t->gc_slot[i] = v & PT_P2L_SLOT;
		}
	}
	t->st.gc_victims++;
	spin_unlock_irq(&t->lock);

	ioerr = !pt_gc_read(t, base);

	/* Write the copies at the end of the owner's stream. */
	pt_gc_batch_init(&b);
	left = bitmap_weight(t->gc_valid, S);
	i = find_first_bit(t->gc_valid, S);
	while (left) {
		spin_lock_irq(&t->lock);
		k = pt_map_reserve(t, owner, min_t(u32, left, PT_BG_MAX_BLOCKS), true, &pblk, &got);
		spin_unlock_irq(&t->lock);
		if (k)
			break;	/* no segment free: what is left stays */
		pt_gc_submit(t, &b, REQ_OP_WRITE, pblk, got, i);
		for (k = 0; k < got; k++)
			i = find_next_bit(t->gc_valid, S, i + 1);
		left -= got;
	}
	pt_gc_wait(&b);

	/* Remap what is still current. */
	spin_lock_irq(&t->lock);
	for (run = t->gc_runs; run < t->gc_runs + b.nr_runs; run++) {
		for (k = 0, i = run->first; k < run->nr; k++) {
			if (!run->status && pt_gc_move(t, base + i, t->gc_slot[i], run->pblk + k))
				moved++;
			i = find_next_bit(t->gc_valid, S, i + 1);
		}
		pt_map_write_done(t, run->pblk, run->nr, run->status != BLK_STS_OK);
		t->st.gc_write_bytes += (u64)run->nr << PT_SLOT_SHIFT;
		t->st.gc_bios++;
		if (run->status) {
			t->st.gc_errors++;
			ioerr = true;
		}
	}
	t->st.gc_moves += moved;
	t->cg[owner].st.gc_moves += moved;
	pt_gc_done(t, seg, !ioerr);
	spin_unlock_irq(&t->lock);

	for (run = t->gc_runs; run < t->gc_runs + b.nr_runs; run++)
		if (run->status)
			pr_err_ratelimited("%s: GC write of %u blocks at block %u failed (%d)\n",
					   t->disk->disk_name, run->nr, run->pblk,
					   blk_status_to_errno(run->status));
	return 1;
}

/**
 * pt_gc_work() - collect until enough segments are free
 * @work: pt_tier.gc_work
 */
void pt_gc_work(struct work_struct *work)
{
	struct pt_tier *t = container_of(work, struct pt_tier, gc_work);
	int ret;

	while (!READ_ONCE(t->dying) &&
	       (READ_ONCE(t->nr_free) < t->gc_high || READ_ONCE(t->space_waiters))) {
		ret = pt_gc_one(t);
		if (!ret)
			break;
		if (ret < 0) {
			/* Writers wait: the candidates are only busy, look again soon. */
			if (!READ_ONCE(t->space_waiters))
				break;
			usleep_range(5000, 10000);
		}
		cond_resched();
	}
}
