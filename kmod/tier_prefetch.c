// SPDX-License-Identifier: GPL-2.0
/*
 * tier_prefetch.c - the staging cache and wake prefetch of a tier.
 *
 * PAGETIER_IOC_PREFETCH plans the segments of a cgroup (oldest first, up to a page
 * budget): they go on pf_planned. pf_work reads planned segments whole, in reads of up
 * to 256 blocks (1 MiB) that span from the first to the last block to stage in each
 * 1 MiB window, into freshly allocated pages; when a read lands, its blocks that are
 * still live are inserted into the staging cache (a hash of pages by block, bounded by
 * staging_mib). A demand read of a staged block takes the page out (exclusive: the
 * copy now lives in the swap cache) and copies it.
 *
 * Demand wins. A demand read of a block whose segment is being read by prefetch waits
 * for that read and takes the page from the cache. A demand read of a block whose
 * segment is only planned reads from the device, and the segment leaves the plan
 * (pt_pf_preempt()): whatever the process asks for itself (MADV_WILLNEED after
 * PREFETCH, swap readahead) is read at once, in large requests since the cgroup's
 * blocks are contiguous in the log, and prefetch streams the rest ahead of it. So no
 * demand read ever waits for I/O that has not been issued. Prefetch reads are
 * background I/O: admitted by the gate, only while the cache has room, at most
 * prefetch_inflight_kib in flight.
 *
 * Staged pages not read within staging_ttl_sec are dropped, and so are planned
 * segments not read by then (tick_work). A block that dies (rewritten, discarded)
 * loses its staged copy; one the collector moves keeps it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/bitmap.h>
#include <linux/hash.h>
#include <linux/jiffies.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "tier.h"

static unsigned int staging_ttl_sec = 60;
module_param(staging_ttl_sec, uint, 0644);
MODULE_PARM_DESC(staging_ttl_sec, "staged pages and planned prefetch not used within this many seconds are dropped (default 60)");

static unsigned int prefetch_inflight_kib = 8192;
module_param(prefetch_inflight_kib, uint, 0644);
MODULE_PARM_DESC(prefetch_inflight_kib, "prefetch reads in flight per tier at most, KiB (default 8192)");

/* ---- the staging cache: called with t->lock held ---- */

/**
 * pt_stage_alloc() - allocate the staging cache's entries (not its pages)
 * @t: the tier
 * @pages: its bound, at least 256 pages
 *
 * Context: process context, may sleep.
 * Return: 0 or -ENOMEM.
 */
int pt_stage_alloc(struct pt_tier *t, u32 pages)
{
	u32 i;

	t->stage_max = max_t(u32, pages, 256);
	t->stage_hash_bits = ilog2(roundup_pow_of_two(t->stage_max));
	t->stage_pool = kvcalloc(t->stage_max, sizeof(*t->stage_pool), GFP_KERNEL);
	t->stage_hash = kvmalloc_array(1U << t->stage_hash_bits, sizeof(*t->stage_hash),
				       GFP_KERNEL);
	t->pf_chunks = kvcalloc(DIV_ROUND_UP(t->seg_blocks, PT_BG_MAX_BLOCKS),
				sizeof(*t->pf_chunks), GFP_KERNEL);
	if (!t->stage_pool || !t->stage_hash || !t->pf_chunks)
		return -ENOMEM;
	for (i = 0; i < 1U << t->stage_hash_bits; i++)
		INIT_HLIST_HEAD(&t->stage_hash[i]);
	for (i = 0; i < t->stage_max; i++)
		list_add_tail(&t->stage_pool[i].lru, &t->stage_free);
	return 0;
}

/*
 * Staging pages are kept in a pool for the next prefetch rather than freed: a fresh
 * page costs the allocator and (init_on_alloc) zeroing, and a prefetch read overwrites
 * it whole anyway. The pool holds at most stage_max pages and is emptied when the
 * tier has been idle for staging_ttl_sec.
 */

/**
 * pt_page_put_locked() - give back a staging page
 * @t: the tier, locked
 * @page: the page
 */
void pt_page_put_locked(struct pt_tier *t, struct page *page)
{
	lockdep_assert_held(&t->lock);
	if (t->pool_pages >= t->stage_max) {
		__free_page(page);
		return;
	}
	list_add(&page->lru, &t->page_pool);
	t->pool_pages++;
}

static struct page *pt_page_get_locked(struct pt_tier *t)
{
	struct page *page = list_first_entry_or_null(&t->page_pool, struct page, lru);

	lockdep_assert_held(&t->lock);
	if (page) {
		list_del(&page->lru);
		t->pool_pages--;
	}
	return page;
}

static void pt_page_pool_free(struct list_head *pool)
{
	struct page *page, *tmp;

	list_for_each_entry_safe(page, tmp, pool, lru)
		__free_page(page);
}

/**
 * pt_stage_free_all() - free the staging cache, at tier destruction
 * @t: the tier, idle
 */
void pt_stage_free_all(struct pt_tier *t)
{
	struct pt_stage *e;

	if (t->stage_pool)
		list_for_each_entry(e, &t->stage_lru, lru)
			__free_page(e->page);
	pt_page_pool_free(&t->page_pool);
	kvfree(t->pf_chunks);
	kvfree(t->stage_hash);
	kvfree(t->stage_pool);
}

static struct hlist_head *pt_stage_bucket(struct pt_tier *t, u32 pblk)
{
	return &t->stage_hash[hash_32(pblk, t->stage_hash_bits)];
}

/**
 * pt_stage_find() - the staged copy of @pblk
 * @t: the tier
 * @pblk: the block
 *
 * Return: its entry, or NULL.
 */
struct pt_stage *pt_stage_find(struct pt_tier *t, u32 pblk)
{
	struct pt_stage *e;

	lockdep_assert_held(&t->lock);
	hlist_for_each_entry(e, pt_stage_bucket(t, pblk), hnode)
		if (e->pblk == pblk)
			return e;
	return NULL;
}

/* Takes @e out of the cache; the caller has its page. */
static void pt_stage_unlink(struct pt_tier *t, struct pt_stage *e)
{
	u16 owner = t->segs[pt_seg_of(t, e->pblk)].owner;

	lockdep_assert_held(&t->lock);
	hlist_del(&e->hnode);
	list_move(&e->lru, &t->stage_free);
	t->p2l[e->pblk] &= ~PT_P2L_STAGED;
	t->nr_staged--;
	if (owner)
		t->cg[owner].st.staged_pages--;
	/* Room for a segment of read-ahead that waited for it. */
	if (t->pf_full && t->nr_staged + t->pf_inflight + t->seg_blocks <= t->stage_max) {
		t->pf_full = false;
		queue_work(t->wq, &t->pf_work);
	}
}

/**
 * pt_stage_take() - take the staged copy of @pblk out of the cache
 * @t: the tier
 * @pblk: a block with PT_P2L_STAGED, whose entry pt_stage_find() found
 *
 * Return: its page, now the caller's.
 */
struct page *pt_stage_take(struct pt_tier *t, u32 pblk)
{
	struct pt_stage *e = pt_stage_find(t, pblk);

	lockdep_assert_held(&t->lock);
	pt_stage_unlink(t, e);
	return e->page;
}

/**
 * pt_stage_drop() - forget the staged copy of @pblk (the block dies)
 * @t: the tier
 * @pblk: the block
 */
void pt_stage_drop(struct pt_tier *t, u32 pblk)
{
	struct pt_stage *e = pt_stage_find(t, pblk);

	lockdep_assert_held(&t->lock);
	if (WARN_ON_ONCE(!e)) {
		t->p2l[pblk] &= ~PT_P2L_STAGED;
		return;
	}
	pt_page_put_locked(t, e->page);
	pt_stage_unlink(t, e);
}

/**
 * pt_stage_move() - the collector moved a staged block: its copy follows
 * @t: the tier
 * @from: the old block
 * @to: the new block (its p2l entry already carries PT_P2L_STAGED)
 */
void pt_stage_move(struct pt_tier *t, u32 from, u32 to)
{
	struct pt_stage *e = pt_stage_find(t, from);

	lockdep_assert_held(&t->lock);
	if (WARN_ON_ONCE(!e)) {
		t->p2l[to] &= ~PT_P2L_STAGED;
		return;
	}
	hlist_del(&e->hnode);
	e->pblk = to;
	hlist_add_head(&e->hnode, pt_stage_bucket(t, to));
}

/* Stages @page as the copy of live block @pblk; evicts the oldest page if allowed. */
static bool pt_stage_insert(struct pt_tier *t, u32 pblk, struct page *page, bool evict)
{
	u16 owner = t->segs[pt_seg_of(t, pblk)].owner;
	struct pt_stage *e;

	lockdep_assert_held(&t->lock);
	if (list_empty(&t->stage_free)) {
		if (!evict)
			return false;
		e = list_first_entry(&t->stage_lru, struct pt_stage, lru);
		pt_page_put_locked(t, e->page);
		pt_stage_unlink(t, e);
		t->st.staging_evicted++;
	}
	e = list_first_entry(&t->stage_free, struct pt_stage, lru);
	list_move_tail(&e->lru, &t->stage_lru);
	e->pblk = pblk;
	e->page = page;
	e->time = jiffies;
	hlist_add_head(&e->hnode, pt_stage_bucket(t, pblk));
	t->p2l[pblk] |= PT_P2L_STAGED;
	t->nr_staged++;
	if (owner)
		t->cg[owner].st.staged_pages++;
	return true;
}

/* ---- planning: called with t->lock held ---- */

/**
 * pt_tick_arm() - make sure tick_work will expire staged pages and plans
 * @t: the tier
 */
void pt_tick_arm(struct pt_tier *t)
{
	lockdep_assert_held(&t->lock);
	if (t->tick_armed || t->dying)
		return;
	t->tick_armed = true;
	queue_delayed_work(t->wq, &t->tick_work, HZ);
}

/**
 * pt_pf_plan() - plan the prefetch of cgroup @idx's segments, oldest or newest first
 * @t: the tier
 * @idx: the cgroup
 * @budget: pages at most (whole segments: the last one may exceed it)
 * @newest: newest segments first (the cgroup's list is in allocation order)
 *
 * Return: the live pages of the segments now planned or being read.
 */
u64 pt_pf_plan(struct pt_tier *t, u16 idx, u64 budget, bool newest)
{
	struct list_head *segs = &t->cg[idx].segs, *pos;
	u64 planned = 0;

	lockdep_assert_held(&t->lock);
	for (pos = newest ? segs->prev : segs->next; pos != segs;
	     pos = newest ? pos->prev : pos->next) {
		struct pt_seg *s = list_entry(pos, struct pt_seg, cg_node);

		if (planned >= budget)
			break;
		if (!s->valid || s->state == PT_SEG_GC)
			continue;
		planned += s->valid;
		if (s->pf != PT_PF_NONE)
			continue;
		s->pf = PT_PF_PLANNED;
		s->pf_time = jiffies;
		list_add_tail(&s->pf_node, &t->pf_planned);
	}
	pt_tick_arm(t);
	return planned;
}

/**
 * pt_pf_preempt() - a demand read reads planned segment @seg: prefetch skips it
 * @t: the tier
 * @seg: a planned segment
 */
void pt_pf_preempt(struct pt_tier *t, u32 seg)
{
	struct pt_seg *s = &t->segs[seg];

	lockdep_assert_held(&t->lock);
	list_del_init(&s->pf_node);
	s->pf = PT_PF_NONE;
	t->st.prefetch_preempted++;
}

/* Drops a planned segment from the queue; its waiters (none) go to @w. */
static void pt_pf_unplan(struct pt_tier *t, u32 seg, struct bio_list *w)
{
	struct pt_seg *s = &t->segs[seg];

	lockdep_assert_held(&t->lock);
	list_del_init(&s->pf_node);
	s->pf = PT_PF_NONE;
	bio_list_merge(w, &s->waiters);
	bio_list_init(&s->waiters);
	pt_seg_maybe_free(t, seg);
}

/**
 * pt_pf_cancel_all() - forget every planned prefetch, at tier destruction
 * @t: the tier
 * @w: initialized; gets the reads that waited for the planned segments (none should)
 *
 * Reads in flight land as usual.
 */
void pt_pf_cancel_all(struct pt_tier *t, struct bio_list *w)
{
	struct pt_seg *s, *tmp;

	lockdep_assert_held(&t->lock);
	list_for_each_entry_safe(s, tmp, &t->pf_planned, pf_node)
		pt_pf_unplan(t, s - t->segs, w);
}

/**
 * pt_pf_settled() - whether prefetch has nothing in flight and nothing it can start
 * @t: the tier
 *
 * Return: true when idle, or when the planned rest waits for room in the cache.
 */
bool pt_pf_settled(struct pt_tier *t)
{
	bool ret;

	spin_lock_irq(&t->lock);
	ret = !t->pf_inflight && (list_empty(&t->pf_planned) || t->pf_full);
	spin_unlock_irq(&t->lock);
	return ret;
}

/* ---- I/O ---- */

/**
 * pt_pf_endio() - a prefetch read completed: hand it to pf_work
 * @bio: the read
 */
void pt_pf_endio(struct bio *bio)
{
	struct pt_bgio *io = container_of(bio, struct pt_bgio, bio);
	struct pt_tier *t = io->t;
	unsigned long flags;

	if (bio->bi_status)
		io->status = bio->bi_status;
	/*
	 * The device is done with it: its share of the gate goes back now, not when pf_work
	 * lands it, so that what waits at the gate (writes among them) never waits for
	 * pf_work. Before it is queued: @t is ours until then.
	 */
	if (io->gated) {
		io->gated = false;
		spin_lock_irqsave(&t->lock, flags);
		pt_gate_put_locked(t, io->nr);
		spin_unlock_irqrestore(&t->lock, flags);
		pt_gate_wake(t);
	}
	/*
	 * Queued under the lock, as pt_io_endio() does: once the lock is dropped, a running
	 * pf_work may land this read, drop the tier's last in-flight reference and let
	 * teardown free @t before a queue_work() here would touch it.
	 */
	spin_lock_irqsave(&t->lock, flags);
	list_add_tail(&io->node, &t->pf_done);
	queue_work(t->wq, &t->pf_work);
	spin_unlock_irqrestore(&t->lock, flags);
}

/*
 * One prefetch read of segment @seg is over (@nr blocks, landed or not): the segment
 * is done when its last read is, and its waiters look again. @gated: its share of the
 * gate is still held (a read never sent); a read that completed gave it back in
 * pt_pf_endio(). Either way, before the waiters, which may wait for rd_bs.
 */
static void pt_pf_read_done(struct pt_tier *t, u32 seg, u32 nr, bool gated)
{
	struct pt_seg *s = &t->segs[seg];
	struct bio_list w;
	struct bio *b;

	bio_list_init(&w);
	spin_lock_irq(&t->lock);
	t->pf_inflight -= nr;
	if (gated)
		pt_gate_put_locked(t, nr);
	if (!--s->pf_reads) {
		s->pf = PT_PF_NONE;
		w = s->waiters;
		bio_list_init(&s->waiters);
	}
	pt_seg_release(t, seg);
	spin_unlock_irq(&t->lock);
	if (gated)
		pt_gate_wake(t);
	while ((b = bio_list_pop(&w)))
		t->io_ops->read_resume(t, b);
}

/* Stages what a landed read brought, then completes it. */
static void pt_pf_land(struct pt_tier *t, struct pt_bgio *io)
{
	struct bio *bio = &io->bio;
	struct pt_seg *s = &t->segs[io->seg];
	u32 i, p, v, staged = 0;
	struct page *page;
	bool evict;

	spin_lock_irq(&t->lock);
	/* A segment demand reads wait for may push older pages out. */
	evict = !bio_list_empty(&s->waiters);
	for (i = 0; i < bio->bi_vcnt; i++) {
		page = bio->bi_io_vec[i].bv_page;
		p = io->pblk + i;
		v = t->p2l[p];
		if (!io->status && test_bit(i, io->valid) && pt_p2l_live(v) &&
		    !(v & PT_P2L_STAGED) && pt_stage_insert(t, p, page, evict)) {
			staged++;
			continue;
		}
		if (test_bit(i, io->valid))
			t->st.staging_dropped++;
		pt_page_put_locked(t, page);
	}
	if (io->status) {
		t->st.prefetch_errors++;
	} else {
		t->st.prefetch_bytes += (u64)io->nr << PT_SLOT_SHIFT;
		if (s->owner)
			t->cg[s->owner].st.prefetch_bytes += (u64)staged << PT_SLOT_SHIFT;
	}
	if (staged)
		pt_tick_arm(t);
	spin_unlock_irq(&t->lock);
	if (io->status && io->status != BLK_STS_RESOURCE)
		pr_err_ratelimited("%s: prefetch read of %u blocks at block %u failed (%d)\n",
				   t->disk->disk_name, io->nr, io->pblk,
				   blk_status_to_errno(io->status));
	pt_pf_read_done(t, io->seg, io->nr, io->gated);
	bio_put(bio);
	pt_inflight_put(t);
}

/*
 * Where to read in a segment: the span of blocks to stage in each 1 MiB window, into
 * t->pf_chunks (pf_work's). Under t->lock, for the map.
 */
static u32 pt_pf_chunks(struct pt_tier *t, u32 seg, u32 *total)
{
	u32 base = seg << t->seg_shift, wp = t->segs[seg].wp;
	struct pt_pfchunk *ch = t->pf_chunks;
	u32 w, end, i, first, last = 0, v, n = 0;

	lockdep_assert_held(&t->lock);
	*total = 0;
	for (w = 0; w < wp; w += PT_BG_MAX_BLOCKS) {
		end = min(wp, w + PT_BG_MAX_BLOCKS);
		first = PT_NONE;
		for (i = w; i < end; i++) {
			v = t->p2l[base + i];
			if (!pt_p2l_live(v) || (v & PT_P2L_STAGED))
				continue;
			if (first == PT_NONE) {
				first = i;
				bitmap_zero(ch[n].valid, PT_BG_MAX_BLOCKS);
			}
			last = i;
			__set_bit(i - first, ch[n].valid);
		}
		if (first == PT_NONE)
			continue;
		ch[n].start = base + first;
		ch[n].nr = last - first + 1;
		*total += ch[n].nr;
		n++;
	}
	return n;
}

/*
 * Allocates and submits the reads pt_pf_chunks() chose; never waits for memory. It reads
 * t->pf_chunks without t->lock, which is safe: pf_chunks is pf_work's alone, and both
 * pt_pf_chunks() and this run only in pf_work (through pt_pf_issue()), which the
 * workqueue never runs twice at once (it is only ever queued on t->wq). The map is
 * not read here: what the chunks hold was copied out of it under the lock.
 */
static void pt_pf_submit(struct pt_tier *t, u32 seg, u32 n, bool gated)
{
	const gfp_t gfp = GFP_NOIO & ~__GFP_DIRECT_RECLAIM;
	struct pt_pfchunk *ch = t->pf_chunks;
	struct pt_bgio *io;
	struct page *page;
	struct bio *bio;
	u32 k, i;

	for (k = 0; k < n; k++) {
		bio = bio_alloc_bioset(t->backing.bdev, ch[k].nr, REQ_OP_READ, gfp | __GFP_NOWARN,
				       &t->bg_bs);
		if (!bio) {
			pt_pf_read_done(t, seg, ch[k].nr, gated);
			continue;
		}
		io = pt_bgio_init(bio, t, PT_BG_PREFETCH);
		io->pblk = ch[k].start;
		io->nr = ch[k].nr;
		io->seg = seg;
		io->gated = gated;
		io->status = BLK_STS_OK;
		bitmap_copy(io->valid, ch[k].valid, PT_BG_MAX_BLOCKS);
		bio->bi_iter.bi_sector = (sector_t)io->pblk << PT_SECTORS_PER_SLOT_SHIFT;
		bio->bi_end_io = pt_pf_endio;
		atomic_inc(&t->inflight);
		spin_lock_irq(&t->lock);
		for (i = 0; i < io->nr && (page = pt_page_get_locked(t)); i++)
			__bio_add_page(bio, page, PT_SLOT_SIZE, 0);
		spin_unlock_irq(&t->lock);
		for (; i < io->nr; i++) {
			page = alloc_page(GFP_NOIO | __GFP_NORETRY | __GFP_NOWARN);
			if (!page)
				break;
			__bio_add_page(bio, page, PT_SLOT_SIZE, 0);
		}
		if (i < io->nr) {
			/* No memory: the waiters read from the device instead. */
			io->status = BLK_STS_RESOURCE;
			pt_pf_endio(bio);
			continue;
		}
		submit_bio(bio);
	}
}

/* Starts prefetch reads of planned segments, oldest first, while there is room. */
static void pt_pf_issue(struct pt_tier *t)
{
	u32 max = max_t(u32, READ_ONCE(prefetch_inflight_kib) >> 2, PT_BG_MAX_BLOCKS);
	struct bio_list w;
	struct pt_seg *s;
	u32 seg, n, total;
	struct bio *b;

	for (;;) {
		bio_list_init(&w);
		spin_lock_irq(&t->lock);
		s = list_first_entry_or_null(&t->pf_planned, struct pt_seg, pf_node);
		if (!s || t->dying || t->pf_inflight >= max) {
			spin_unlock_irq(&t->lock);
			return;
		}
		seg = s - t->segs;
		/* Cheap checks first: the scan below reads the whole segment's map. */
		if (t->nr_staged + t->pf_inflight + s->valid > t->stage_max) {
			t->pf_full = true;
			spin_unlock_irq(&t->lock);
			return;
		}
		n = pt_pf_chunks(t, seg, &total);
		if (!n) {
			/* Nothing left to read (dead or already staged). */
			pt_pf_unplan(t, seg, &w);
			spin_unlock_irq(&t->lock);
			while ((b = bio_list_pop(&w)))
				t->io_ops->read_resume(t, b);
			continue;
		}
		t->pf_full = t->nr_staged + t->pf_inflight + total > t->stage_max;
		if (t->pf_full) {
			spin_unlock_irq(&t->lock);
			return;
		}
		if (!pt_gate_try_locked(t, total)) {
			/* pt_gate_wake() kicks us when background I/O completes. */
			t->pf_stalled = true;
			spin_unlock_irq(&t->lock);
			return;
		}
		t->pf_full = false;
		t->pf_stalled = false;
		list_del_init(&s->pf_node);
		s->pf = PT_PF_INFLIGHT;
		s->pf_reads = n;
		s->readers += n;
		t->pf_inflight += total;
		t->pf_last = jiffies;
		t->st.prefetch_ios += n;
		spin_unlock_irq(&t->lock);
		pt_pf_submit(t, seg, n, true);
	}
}

/**
 * pt_pf_work() - land finished prefetch reads, then start new ones
 * @work: pt_tier.pf_work
 */
void pt_pf_work(struct work_struct *work)
{
	struct pt_tier *t = container_of(work, struct pt_tier, pf_work);
	struct pt_bgio *io, *tmp;
	LIST_HEAD(done);

	spin_lock_irq(&t->lock);
	list_splice_init(&t->pf_done, &done);
	spin_unlock_irq(&t->lock);
	list_for_each_entry_safe(io, tmp, &done, node) {
		list_del(&io->node);
		pt_pf_land(t, io);
	}
	pt_pf_issue(t);
	wake_up_all(&t->pf_wq);
}

/**
 * pt_tick_work() - drop staged pages and planned segments older than staging_ttl_sec
 * @work: pt_tier.tick_work
 */
void pt_tick_work(struct work_struct *work)
{
	struct pt_tier *t = container_of(to_delayed_work(work), struct pt_tier, tick_work);
	unsigned long ttl = READ_ONCE(staging_ttl_sec) * HZ;
	struct pt_stage *e, *etmp;
	struct pt_seg *s, *stmp;
	LIST_HEAD(pool);
	struct bio_list w;
	bool expired = false;

	bio_list_init(&w);
	spin_lock_irq(&t->lock);
	list_for_each_entry_safe(e, etmp, &t->stage_lru, lru) {
		if (time_before(jiffies, e->time + ttl))
			break;
		__free_page(e->page);
		pt_stage_unlink(t, e);
		t->st.staging_expired++;
	}
	/* Idle for a while: give the kept pages back. */
	if (!t->nr_staged && !t->pf_inflight && list_empty(&t->pf_planned) &&
	    time_after(jiffies, t->pf_last + ttl)) {
		list_splice_init(&t->page_pool, &pool);
		t->pool_pages = 0;
	}
	list_for_each_entry_safe(s, stmp, &t->pf_planned, pf_node) {
		if (time_before(jiffies, s->pf_time + ttl))
			continue;
		pt_pf_unplan(t, s - t->segs, &w);
		expired = true;
	}
	t->tick_armed = false;
	if (!list_empty(&t->stage_lru) || !list_empty(&t->pf_planned) || t->pool_pages)
		pt_tick_arm(t);
	spin_unlock_irq(&t->lock);
	pt_page_pool_free(&pool);
	/* Planned segments have no waiters: reads wait only for reads in flight. */
	WARN_ON_ONCE(!bio_list_empty(&w));
	if (expired)
		wake_up_all(&t->pf_wq);
}
