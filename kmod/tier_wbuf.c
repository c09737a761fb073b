// SPDX-License-Identifier: GPL-2.0
/*
 * tier_wbuf.c - the write buffer of a tier: writes that complete at once.
 *
 * Reclaim frees a page in the pass that wrote it only if its swap write has completed
 * when ->writepage returns ("synchronous write - probably a ramdisk" in
 * shrink_folio_list(), 6.1 and 6.12 alike); a write that completes later leaves the
 * page in the swap cache until a later pass. So a write whose data fits in the buffer is
 * copied into preallocated pages and completed inside ->submit_bio: its slots get their
 * blocks in the log as any write's (tier.c), flagged PT_P2L_PENDING as long as the data
 * is only here, and the flusher (wb_work) writes buffered blocks to those positions in
 * the background, in runs of consecutive blocks of up to 1 MiB, admitted by the gate
 * like every background write. Nothing here allocates in the write path: the entries
 * and their pages exist from the tier's creation; a write that finds too few free
 * entries goes through to the backing device instead (tier.c), as it did before.
 *
 * Reads of a buffered block copy the buffered page (a reader pins the entry while it
 * copies outside the lock). A buffered block that dies (rewritten, discarded) before
 * its write-back is dropped without I/O when it reaches the head of the queue.
 *
 * A write-back that fails does not lose what the writer was told is written: the
 * failed segment is retired as after any failed write, and each of its blocks that is
 * still live moves (pt_map_repoint()) to a new block at the end of its cgroup's open
 * segment and is queued again, its data still here. If no segment is free for it, it
 * stays here (STUCK), readable, and the flusher tries again every 100 ms; a flush
 * (REQ_PREFLUSH) that finds such a page fails with an I/O error, since it cannot promise
 * the device has the data. Stuck pages take room from the buffer; with none left,
 * writes go through to the device and fail there, which swap handles by keeping its
 * pages. Swap contents never outlive the tier, so nothing else is owed.
 *
 * Flushes: with a buffer, the tier advertises a volatile write cache. A flush waits
 * until every page buffered before it has reached the backing device (pt_wb_drain()),
 * then flushes that; a FUA write, or one with a preflush, is not buffered.
 *
 * Locking: every field of struct pt_tier named wb_* but wb_work, wb_flush_wq and wb_bs is
 * under t->lock, as are the entries (their page contents are stable from QUEUED to their
 * release: a released entry is reused only when no reader pins it).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/hash.h>
#include <linux/highmem.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "tier.h"

/* A write-back that had to wait for a free segment tries again after this long. */
#define PT_WB_RETRY		(HZ / 10)

/**
 * pt_wb_alloc() - allocate the write buffer of a new tier
 * @t: the tier
 * @pages: its size in pages; 0 = no buffer
 *
 * Context: process context, may sleep.
 * Return: 0 or -ENOMEM.
 */
int pt_wb_alloc(struct pt_tier *t, u32 pages)
{
	u32 i;

	INIT_LIST_HEAD(&t->wb_free);
	INIT_LIST_HEAD(&t->wb_all);
	INIT_LIST_HEAD(&t->wb_queued);
	if (!pages)
		return 0;
	t->wb_hash_bits = ilog2(roundup_pow_of_two(pages));
	t->wb_hash = kvmalloc_array(1U << t->wb_hash_bits, sizeof(*t->wb_hash), GFP_KERNEL);
	t->wb_pool = kvcalloc(pages, sizeof(*t->wb_pool), GFP_KERNEL);
	if (!t->wb_hash || !t->wb_pool)
		return -ENOMEM;
	for (i = 0; i < 1U << t->wb_hash_bits; i++)
		INIT_HLIST_HEAD(&t->wb_hash[i]);
	for (i = 0; i < pages; i++) {
		struct pt_wbuf *e = &t->wb_pool[i];

		e->page = alloc_page(GFP_KERNEL);
		if (!e->page)
			return -ENOMEM;
		INIT_LIST_HEAD(&e->all);
		list_add_tail(&e->node, &t->wb_free);
		t->wb_max++;
	}
	return 0;
}

/**
 * pt_wb_free_all() - free the write buffer, at tier destruction (also after a failed
 * pt_wb_alloc())
 * @t: the tier, idle: no write-back in flight
 */
void pt_wb_free_all(struct pt_tier *t)
{
	u32 i;

	if (t->wb_pool)
		for (i = 0; i < t->wb_max; i++)
			__free_page(t->wb_pool[i].page);
	kvfree(t->wb_pool);
	kvfree(t->wb_hash);
}

static struct hlist_head *pt_wb_bucket(struct pt_tier *t, u32 pblk)
{
	return &t->wb_hash[hash_32(pblk, t->wb_hash_bits)];
}

/**
 * pt_wb_find() - the buffered copy of block @pblk
 * @t: the tier, locked
 * @pblk: a block
 *
 * Return: its entry, or NULL if the block's data is not in the buffer.
 */
struct pt_wbuf *pt_wb_find(struct pt_tier *t, u32 pblk)
{
	struct pt_wbuf *e;

	lockdep_assert_held(&t->lock);
	if (!t->wb_held)
		return NULL;
	hlist_for_each_entry(e, pt_wb_bucket(t, pblk), hnode)
		if (e->pblk == pblk)
			return e;
	return NULL;
}

/**
 * pt_wb_take_locked() - take @n free entries for a write, all or none
 * @t: the tier, locked
 * @n: pages the write has
 * @ents: gets the entries
 *
 * Return: whether there were @n free entries.
 */
bool pt_wb_take_locked(struct pt_tier *t, u32 n, struct list_head *ents)
{
	struct pt_wbuf *e;
	u32 i;

	lockdep_assert_held(&t->lock);
	if (t->wb_max - t->wb_held < n) {
		t->st.wb_full++;
		return false;
	}
	/* Entries are free only when not held, but a GONE one may still be pinned. */
	for (i = 0; i < n; i++) {
		e = list_first_entry_or_null(&t->wb_free, struct pt_wbuf, node);
		if (!e)
			break;
		list_move_tail(&e->node, ents);
		t->wb_held++;
	}
	if (i < n) {
		pt_wb_put_locked(t, ents);
		t->st.wb_full++;
		return false;
	}
	return true;
}

/**
 * pt_wb_put_locked() - give back entries pt_wb_take_locked() handed out and that were not
 * inserted
 * @t: the tier, locked
 * @ents: the entries
 */
void pt_wb_put_locked(struct pt_tier *t, struct list_head *ents)
{
	struct pt_wbuf *e, *tmp;

	lockdep_assert_held(&t->lock);
	list_for_each_entry_safe(e, tmp, ents, node) {
		list_move(&e->node, &t->wb_free);
		t->wb_held--;
	}
}

/**
 * pt_wb_fill() - copy a write bio's data into the pages of taken entries
 * @bio: the write, as many 4 KiB slots as @ents has entries (or more: the rest is not
 *       copied)
 * @ents: the entries, in order
 *
 * Context: any; the entries are the caller's until inserted.
 */
void pt_wb_fill(struct bio *bio, struct list_head *ents)
{
	struct pt_wbuf *e = list_first_entry(ents, struct pt_wbuf, node);
	unsigned int off = 0, len;
	struct bio_vec bv, part;
	struct bvec_iter it;
	char *dst, *src;

	/* bio_for_each_segment() advances by bv.bv_len: consume a copy of it. */
	bio_for_each_segment(bv, bio, it) {
		part = bv;
		while (part.bv_len) {
			if (list_entry_is_head(e, ents, node))
				return;
			len = min_t(unsigned int, part.bv_len, PT_SLOT_SIZE - off);
			src = bvec_kmap_local(&part);
			dst = kmap_local_page(e->page);
			memcpy(dst + off, src, len);
			kunmap_local(dst);
			kunmap_local(src);
			part.bv_offset += len;
			part.bv_len -= len;
			off += len;
			if (off == PT_SLOT_SIZE) {
				off = 0;
				e = list_next_entry(e, node);
			}
		}
	}
}

/**
 * pt_wb_insert_locked() - buffer blocks [@pblk, @pblk + @n), just mapped (pending)
 * @t: the tier, locked
 * @ents: filled entries; the first @n are used, in order
 * @pblk: first block
 * @n: count
 */
void pt_wb_insert_locked(struct pt_tier *t, struct list_head *ents, u32 pblk, u32 n)
{
	struct pt_wbuf *e;
	u32 i;

	lockdep_assert_held(&t->lock);
	for (i = 0; i < n; i++) {
		e = list_first_entry(ents, struct pt_wbuf, node);
		e->pblk = pblk + i;
		e->seq = ++t->wb_seq;
		e->state = PT_WB_QUEUED;
		e->pins = 0;
		hlist_add_head(&e->hnode, pt_wb_bucket(t, e->pblk));
		list_add_tail(&e->all, &t->wb_all);
		list_move_tail(&e->node, &t->wb_queued);
		t->wb_queued_nr++;
	}
}

/* Lets go of @e's block: it is written, or dead. */
static void pt_wb_release_locked(struct pt_tier *t, struct pt_wbuf *e)
{
	lockdep_assert_held(&t->lock);
	if (e->state == PT_WB_QUEUED)
		t->wb_queued_nr--;
	else if (e->state == PT_WB_STUCK)
		t->wb_stuck--;
	hlist_del(&e->hnode);
	list_del_init(&e->all);
	t->wb_held--;
	if (e->pins) {
		list_del_init(&e->node);
		e->state = PT_WB_GONE;
		return;
	}
	e->state = PT_WB_FREE;
	list_move(&e->node, &t->wb_free);
}

/**
 * pt_wb_unpin_locked() - a reader has copied the page of @e
 * @t: the tier, locked
 * @e: an entry the reader pinned (pins++) under the lock
 */
void pt_wb_unpin_locked(struct pt_tier *t, struct pt_wbuf *e)
{
	lockdep_assert_held(&t->lock);
	if (--e->pins || e->state != PT_WB_GONE)
		return;
	e->state = PT_WB_FREE;
	list_add(&e->node, &t->wb_free);
}

/* Whether @e's block is still the live block of a slot (not rewritten or discarded). */
static bool pt_wb_live(struct pt_tier *t, struct pt_wbuf *e)
{
	u32 v = t->p2l[e->pblk];

	lockdep_assert_held(&t->lock);
	return v != PT_NONE && (v & PT_P2L_PENDING);
}

/**
 * pt_wb_kick() - make the flusher run: at once if a full run is waiting or the buffer
 * is half full, else after a tick, so that a reclaim batch goes out as one write
 * @t: the tier
 */
void pt_wb_kick(struct pt_tier *t)
{
	u32 queued = READ_ONCE(t->wb_queued_nr);

	if (READ_ONCE(t->dying))
		return;
	if (queued >= PT_BG_MAX_BLOCKS || READ_ONCE(t->wb_held) > t->wb_max / 2)
		mod_delayed_work(t->wq, &t->wb_work, 0);
	else if (queued)
		queue_delayed_work(t->wq, &t->wb_work, 1);
}

/*
 * Moves a live buffered block whose write-back failed to a new block of its cgroup, or
 * marks it STUCK if no segment is free. Return: whether it moved.
 */
static bool pt_wb_move_locked(struct pt_tier *t, struct pt_wbuf *e)
{
	u32 from = e->pblk, to, got;
	u16 owner = t->segs[pt_seg_of(t, from)].owner;

	lockdep_assert_held(&t->lock);
	if (pt_map_reserve(t, owner, 1, false, &to, &got)) {
		if (e->state != PT_WB_STUCK) {
			e->state = PT_WB_STUCK;
			t->wb_stuck++;
		}
		return false;
	}
	pt_map_repoint(t, from, to);
	hlist_del(&e->hnode);
	e->pblk = to;
	hlist_add_head(&e->hnode, pt_wb_bucket(t, to));
	if (e->state == PT_WB_STUCK)
		t->wb_stuck--;
	e->state = PT_WB_QUEUED;
	list_add_tail(&e->node, &t->wb_queued);
	t->wb_queued_nr++;
	t->st.wb_moved++;
	/* The old block: dead now, its write over (failed). */
	pt_map_write_done(t, from, 1, true);
	return true;
}

/* Tries again to place the STUCK entries (a segment may be free now). */
static void pt_wb_retry_stuck_locked(struct pt_tier *t)
{
	struct pt_wbuf *e, *tmp;
	bool room = true;

	lockdep_assert_held(&t->lock);
	list_for_each_entry_safe(e, tmp, &t->wb_all, all) {
		if (!t->wb_stuck)
			break;
		if (e->state != PT_WB_STUCK)
			continue;
		if (!pt_wb_live(t, e)) {
			/* Rewritten or discarded meanwhile: nothing left to place. */
			pt_map_write_done(t, e->pblk, 1, true);
			pt_wb_release_locked(t, e);
			t->st.wb_dropped++;
			continue;
		}
		/* Once a move found no segment, the others only let dead pages go. */
		if (room)
			room = pt_wb_move_locked(t, e);
	}
}

static void pt_wb_endio(struct bio *bio)
{
	struct pt_bgio *io = container_of(bio, struct pt_bgio, bio);
	blk_status_t status = bio->bi_status;
	struct pt_tier *t = io->t;
	struct pt_wbuf *e;
	unsigned long flags;
	bool again = false;
	u32 k, p;

	spin_lock_irqsave(&t->lock, flags);
	pt_gate_put_locked(t, io->nr);
	if (!status) {
		/* The blocks become readable from the device in the same step. */
		for (k = 0; k < io->nr; k++) {
			e = pt_wb_find(t, io->pblk + k);
			if (!WARN_ON_ONCE(!e))
				pt_wb_release_locked(t, e);
		}
		pt_map_write_done(t, io->pblk, io->nr, false);
	} else {
		t->st.wb_errors++;
		t->st.write_errors++;
		pt_seg_mark_bad(t, pt_seg_of(t, io->pblk));
		for (k = 0; k < io->nr; k++) {
			p = io->pblk + k;
			e = pt_wb_find(t, p);
			if (WARN_ON_ONCE(!e))
				continue;
			if (!pt_wb_live(t, e)) {
				pt_map_write_done(t, p, 1, true);
				pt_wb_release_locked(t, e);
				continue;
			}
			/* Stays in flight (and its segment in use) until it is placed. */
			if (pt_wb_move_locked(t, e))
				again = true;
		}
	}
	t->io_ops->writes_done(t);
	spin_unlock_irqrestore(&t->lock, flags);
	if (status)
		pr_err_ratelimited("%s: write-back of %u buffered blocks at block %u of %s failed (%d); segment retired, the pages are written elsewhere\n",
				   t->disk->disk_name, io->nr, io->pblk, t->backing_path,
				   blk_status_to_errno(status));
	pt_gate_wake(t);
	wake_up_all(&t->wb_flush_wq);
	/* Moved pages go out at once; stuck ones are tried again later (no postponing). */
	if (again)
		mod_delayed_work(t->wq, &t->wb_work, 0);
	else if (READ_ONCE(t->wb_stuck))
		queue_delayed_work(t->wq, &t->wb_work, PT_WB_RETRY);
	bio_put(bio);
	pt_inflight_put(t);
}

/*
 * Takes the next run of QUEUED entries into @bio (empty, PT_BG_MAX_BLOCKS vecs): the
 * oldest one and the buffered blocks that follow it in its segment. Return: the blocks
 * in @bio; 0 if nothing is queued, or the gate did not admit the run (wb_stalled).
 */
static u32 pt_wb_next_run_locked(struct pt_tier *t, struct bio *bio, struct pt_bgio *io)
{
	struct pt_wbuf *e, *n;
	u32 p, end, nr;

	lockdep_assert_held(&t->lock);
	for (;;) {
		e = list_first_entry_or_null(&t->wb_queued, struct pt_wbuf, node);
		if (!e)
			return 0;
		if (pt_wb_live(t, e))
			break;
		/* Died before its write-back: never written. */
		pt_map_write_done(t, e->pblk, 1, false);
		pt_wb_release_locked(t, e);
		t->st.wb_dropped++;
	}
	p = e->pblk;
	end = min_t(u32, (pt_seg_of(t, p) + 1) << t->seg_shift, p + PT_BG_MAX_BLOCKS);
	for (nr = 1; p + nr < end; nr++) {
		n = pt_wb_find(t, p + nr);
		if (!n || n->state != PT_WB_QUEUED)
			break;
	}
	if (!pt_gate_try_locked(t, nr)) {
		/* pt_gate_wake() kicks us when background I/O completes. */
		t->wb_stalled = true;
		return 0;
	}
	t->wb_stalled = false;
	for (; e && e->pblk < p + nr; e = n) {
		n = e->pblk + 1 < p + nr ? pt_wb_find(t, e->pblk + 1) : NULL;
		list_del_init(&e->node);
		e->state = PT_WB_FLUSHING;
		t->wb_queued_nr--;
		__bio_add_page(bio, e->page, PT_SLOT_SIZE, 0);
	}
	io->pblk = p;
	io->nr = nr;
	t->st.wb_flush_bios++;
	t->st.wb_flush_bytes += (u64)nr << PT_SLOT_SHIFT;
	t->st.wb_bytes += (u64)nr << PT_SLOT_SHIFT;
	t->st.wb_bios++;
	return nr;
}

/**
 * pt_wb_work() - write buffered blocks back, as long as the gate admits them
 * @work: pt_tier.wb_work
 */
void pt_wb_work(struct work_struct *work)
{
	struct pt_tier *t = container_of(to_delayed_work(work), struct pt_tier, wb_work);
	struct blk_plug plug;
	struct pt_bgio *io;
	struct bio *bio = NULL;
	bool stuck;
	u32 nr;

	blk_start_plug(&plug);
	while (!READ_ONCE(t->dying)) {
		/* Outside the lock: it may wait for the bio_set's reserve. */
		if (!bio)
			bio = bio_alloc_bioset(t->backing.bdev, PT_BG_MAX_BLOCKS, REQ_OP_WRITE,
					       GFP_NOIO, &t->wb_bs);
		io = pt_bgio_init(bio, t, PT_BG_WB);
		spin_lock_irq(&t->lock);
		if (t->wb_stuck)
			pt_wb_retry_stuck_locked(t);
		nr = pt_wb_next_run_locked(t, bio, io);
		stuck = t->wb_stuck;
		spin_unlock_irq(&t->lock);
		if (!nr)
			break;
		bio->bi_iter.bi_sector = (sector_t)io->pblk << PT_SECTORS_PER_SLOT_SHIFT;
		bio->bi_end_io = pt_wb_endio;
		atomic_inc(&t->inflight);
		submit_bio(bio);
		bio = NULL;
	}
	blk_finish_plug(&plug);
	if (bio)
		bio_put(bio);
	/* Dropped entries may have ended a flush's wait. */
	wake_up_all(&t->wb_flush_wq);
	if (stuck && !READ_ONCE(t->dying))
		queue_delayed_work(t->wq, &t->wb_work, PT_WB_RETRY);
}

/* Whether the pages buffered up to @seq are on the device; -EIO if one cannot be. */
static bool pt_wb_drained(struct pt_tier *t, u64 seq, int *ret)
{
	struct pt_wbuf *e;
	bool done = true;

	spin_lock_irq(&t->lock);
	e = list_first_entry_or_null(&t->wb_all, struct pt_wbuf, all);
	*ret = 0;
	if (t->dying)
		*ret = -EIO;
	else if (e && e->seq <= seq && e->state == PT_WB_STUCK)
		*ret = -EIO;
	else if (e && e->seq <= seq)
		done = false;
	spin_unlock_irq(&t->lock);
	return done;
}

/**
 * pt_wb_drain() - wait until every page buffered so far is on the backing device
 * @t: the tier
 *
 * For a flush: a write completed before it must be on the device when it completes.
 *
 * Context: process context (->submit_bio of a flush), may sleep.
 * Return: 0, or -EIO if a buffered page cannot be written (its write-back failed and no
 * segment is free to write it elsewhere), or the tier is going away.
 */
int pt_wb_drain(struct pt_tier *t)
{
	u64 seq;
	int ret;

	spin_lock_irq(&t->lock);
	seq = t->wb_seq;
	if (t->wb_held)
		t->st.wb_flush_waits++;
	spin_unlock_irq(&t->lock);
	if (!READ_ONCE(t->wb_held))
		return 0;
	mod_delayed_work(t->wq, &t->wb_work, 0);
	wait_event(t->wb_flush_wq, pt_wb_drained(t, seq, &ret));
	return ret;
}
