// SPDX-License-Identifier: GPL-2.0
/*
 * tier.c - the pagetier tier block device (/dev/pagetierN): creation and destruction,
 * the I/O path, sysfs, and the tier's ioctls. The top of the tier's layers: it uses the
 * map (tier_map.c), the gate (tier_gate.c), staging and prefetch, the write buffer and
 * the collector, and registers the ops through which they call back up (pt_map_ops,
 * pt_io_ops); nothing below calls into this file.
 *
 * A tier is a bio-based block device stacked on an exclusively opened backing device
 * (an NVMe namespace in production). The kernel swaps to it. Its slots are placed
 * log-structured (tier_map.c): every write goes to the end of the open segment of the
 * memory cgroup of its page, so a cgroup's pages lie together on the backing device.
 *
 *  - Write: the slots get new blocks at the end of the cgroup's open segment (the old
 *    blocks die at once), and a clone of the bio goes there. Consecutive writes of one
 *    cgroup land on consecutive blocks, so the backing device's plug merging turns a
 *    reclaim batch into large writes. A bio that crosses a segment end is split: its
 *    rest is resubmitted and placed after. If no segment is free the writer waits for
 *    the collector (tier_gc.c); the bio completes with the backing device's status, so
 *    a failed swap write keeps the page in memory.
 *  - Read: a clone of the bio (struct pt_top, the context of the read) is resolved
 *    piece by piece: slots with no block read as zeros, staged slots are copied from
 *    the staging cache (tier_prefetch.c), slots whose block is being written or being
 *    prefetched wait for that, the rest is read from the backing device with one clone
 *    per contiguous run. Each piece holds a reader reference on its segment until it
 *    completes, so a block is never reused under a read.
 *  - Discard: the slots' blocks die; nothing goes to the backing device.
 *  - Priority: demand reads go to the backing device at once. Write-back, GC and
 *    prefetch read-ahead ("background") are admitted only while the background blocks
 *    in flight stay under bg_inflight_kib, and under bg_demand_kib while demand reads
 *    are in flight or were lately (bg_demand_hold_ms), so a demand read queues behind
 *    little background I/O (tier_gate.c).
 *
 * The I/O path allocates only from the tier's bio_sets (mempools, GFP_NOIO), at most
 * one bio per bio_set per call in the submitting context, so it always progresses in
 * reclaim. Each set's bios are held only by I/O sent to the backing device, never by
 * something that waits for a work item: a write passes the gate before it takes its
 * clone, a read that waits (for a write or a prefetch) waits as its own clone, reads
 * continued by workers (rd_work, pf_work) take their pieces from a set of their own
 * (rd_bs), and failed pieces are read again by rt_work, on a workqueue of its own, from
 * rt_bs. So swap-out never waits for a prefetch read to be landed by pf_work.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/cgroup.h>
#include <linux/highmem.h>
#include <linux/idr.h>
#include <linux/ioprio.h>
#include <linux/ktime.h>
#include <linux/memcontrol.h>
#include <linux/mempool.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/wait_bit.h>

#include "events.h"
#include "tier.h"

static unsigned int max_cgroups = CONFIG_PAGETIER_MAX_CGROUPS;
module_param(max_cgroups, uint, 0444);
MODULE_PARM_DESC(max_cgroups, "cgroups tracked per tier, 1-65534 (default "
		 __stringify(CONFIG_PAGETIER_MAX_CGROUPS)
		 "); a full table evicts the cgroup with the fewest pages");

static unsigned long max_capacity_mib;
module_param(max_capacity_mib, ulong, 0644);
MODULE_PARM_DESC(max_capacity_mib,
		 "cap on a new tier's capacity in MiB, 0 = what the backing device allows; the map costs about 8 bytes per 4 KiB");

static unsigned int segment_kib = 1024;
module_param(segment_kib, uint, 0644);
MODULE_PARM_DESC(segment_kib, "segment size of new tiers in KiB, a power of two, 64-16384 (default 1024)");

static unsigned int gc_headroom_pct = 10;
module_param(gc_headroom_pct, uint, 0644);
MODULE_PARM_DESC(gc_headroom_pct, "share of a new tier's space kept free for the garbage collector, 1-50 (default 10)");

static unsigned int max_open_segments = 16;
module_param(max_open_segments, uint, 0644);
MODULE_PARM_DESC(max_open_segments, "segments of a new tier being filled at once, one per recently writing cgroup (default 16)");

static unsigned int staging_mib = 64;
module_param(staging_mib, uint, 0644);
MODULE_PARM_DESC(staging_mib, "staging cache of a new tier in MiB, the bound of prefetched pages (default 64)");

/*
 * Writes whose data fits complete at once into this buffer, so reclaim frees their
 * pages in the pass that wrote them (tier_wbuf.c). 32 MiB is eight times the background
 * write-back window (bg_inflight_kib), so that the flusher always has full 1 MiB runs to
 * send while reclaim refills the buffer, and holds an offload burst of 32 MiB beyond
 * what the device drains meanwhile: see kmod/README.md for the measurement.
 */
static unsigned int write_buffer_mib = 32;
module_param(write_buffer_mib, uint, 0644);
MODULE_PARM_DESC(write_buffer_mib, "write buffer of a new tier in MiB, 0-1024, 0 = none: writes complete when on the backing device (default 32)");

static unsigned int space_wait_ms = 10000;
module_param(space_wait_ms, uint, 0644);
MODULE_PARM_DESC(space_wait_ms, "how long a write waits for the collector to free a segment before it fails (default 10000)");

/*
 * Fault injection for the tests (tier_harden_test): the bio_sets of a tier created
 * while it is set get every bio from their reserves, as when each slab allocation fails
 * under memory pressure, for as long as it stays set. Proves that the I/O path makes
 * progress on the reserves alone.
 */
static bool fault_bio_reserve;
module_param(fault_bio_reserve, bool, 0644);
MODULE_PARM_DESC(fault_bio_reserve, "testing: new tiers' bios come only from their bio_sets' reserves while set, as if every slab allocation failed (default off)");

/* Tiers by id; the mutex also serializes create and destroy. */
static DEFINE_IDR(pt_tiers);
static DEFINE_MUTEX(pt_tiers_lock);

/* ---- attribution ---- */

/*
 * The cgroup id of the memcg @page is charged to, 0 if none. Slab pages carry an
 * object-cgroup vector instead of a memcg, which page_memcg_check() recognizes. The
 * caller holds rcu_read_lock(), which keeps a kmem page's memcg alive; a user page under
 * writeback or pinned for direct I/O keeps its charge, and with it its memcg.
 */
static u64 pt_page_cgroup_id(struct page *page)
{
#ifdef CONFIG_MEMCG
	struct mem_cgroup *memcg = page_memcg_check(compound_head(page));

	if (memcg)
		return cgroup_id(memcg->css.cgroup);
#endif
	return 0;
}

/* A write bio is attributed to the memcg of its first page: swap writes one folio. */
static u64 pt_bio_cgroup_id(struct bio *bio)
{
	u64 id;

	rcu_read_lock();
	id = pt_page_cgroup_id(bio_page(bio));
	rcu_read_unlock();
	return id;
}

/* ---- completion of clones and pieces ---- */

/* Writes completed (pt_map_write_done()): reads waiting for a write look again. */
static void pt_writes_done(struct pt_tier *t)
{
	lockdep_assert_held(&t->lock);
	if (!bio_list_empty(&t->wait_write))
		queue_work(t->wq, &t->rd_work);
}

static void pt_io_endio(struct bio *clone)
{
	struct pt_io *io = container_of(clone, struct pt_io, bio);
	struct bio *parent = clone->bi_private;
	blk_status_t status = clone->bi_status;
	struct pt_tier *t = io->t;
	unsigned long flags;
	bool wake = false;
	u16 owner;

	switch (io->kind) {
	case PT_IO_WRITE:
		spin_lock_irqsave(&t->lock, flags);
		pt_map_write_done(t, io->pblk, io->nr, status != BLK_STS_OK);
		if (status)
			t->st.write_errors++;
		pt_gate_put_locked(t, io->nr);
		pt_writes_done(t);
		spin_unlock_irqrestore(&t->lock, flags);
		if (status)
			pr_err_ratelimited("%s: write of %u blocks at block %u of %s failed (%d); segment retired\n",
					   t->disk->disk_name, io->nr, io->pblk, t->backing_path,
					   blk_status_to_errno(status));
		pt_gate_wake(t);
		break;
	case PT_IO_FLUSH:
		if (status) {
			spin_lock_irqsave(&t->lock, flags);
			t->st.write_errors++;
			spin_unlock_irqrestore(&t->lock, flags);
		}
		break;
	case PT_IO_READ:
		spin_lock_irqsave(&t->lock, flags);
		if (status && !io->retried) {
			/*
			 * The backing device may have failed it for a neighbour it merged it
			 * with: read each block again, alone (pt_read_retry()).
			 */
			io->retried = true;
			bio_list_add(&t->rd_failed, clone);
			queue_work(t->rt_wq, &t->rt_work);
			spin_unlock_irqrestore(&t->lock, flags);
			return;
		}
		pt_seg_release(t, io->seg);
		t->demand_last = jiffies;
		wake = !--t->demand_inflight;
		spin_unlock_irqrestore(&t->lock, flags);
		if (wake)
			pt_gate_wake(t);
		break;
	case PT_IO_RETRY:
		if (status) {
			spin_lock_irqsave(&t->lock, flags);
			t->st.read_errors++;
			owner = t->segs[io->seg].owner;
			if (owner)
				t->cg[owner].st.read_errors++;
			spin_unlock_irqrestore(&t->lock, flags);
			pr_err_ratelimited("%s: read of block %u of %s failed (%d)\n",
					   t->disk->disk_name, io->pblk, t->backing_path,
					   blk_status_to_errno(status));
		}
		break;
	default:
		break;
	}
	if (status && !parent->bi_status)
		parent->bi_status = status;
	bio_put(clone);
	bio_endio(parent);
	pt_inflight_put(t);
}

/* ---- write ---- */

static bool pt_space_ok(struct pt_tier *t)
{
	return READ_ONCE(t->nr_free) > PT_GC_RESERVE || READ_ONCE(t->nospace) ||
	       READ_ONCE(t->dying);
}

/* Counts a write of @got slots of cgroup @id (table index @idx). */
static void pt_account_write_locked(struct pt_tier *t, u64 id, u16 idx, u32 got, bool buffered)
{
	struct pt_cgroup *c = &t->cg[idx];

	lockdep_assert_held(&t->lock);
	c->in_use = true;
	c->st.bytes_written += (u64)got << PT_SLOT_SHIFT;
	c->st.write_ios++;
	if (id && idx == PT_CG_UNATTRIBUTED)
		t->st.cgroup_overflows += got;
	t->st.bytes_written += (u64)got << PT_SLOT_SHIFT;
	t->st.write_ios++;
	if (buffered) {
		c->st.buffered_writes += got;
		t->st.wb_buffered += got;
	} else {
		c->st.direct_writes += got;
		t->st.wb_direct += got;
	}
}

/*
 * Buffers the write @bio (tier_wbuf.c): its data is copied into the write buffer and
 * its slots get their blocks, so it can complete at once. Never sleeps, never
 * allocates. Return: true if it is all done (and completed); false if the buffer had no
 * room, or some slots found no free segment: then the rest of @bio (advanced past what
 * was buffered) goes through to the device.
 */
static bool pt_write_buffered(struct pt_tier *t, struct bio *bio, u64 id)
{
	u64 slot = bio->bi_iter.bi_sector >> PT_SECTORS_PER_SLOT_SHIFT;
	u32 want = bio->bi_iter.bi_size >> PT_SLOT_SHIFT, done = 0, pblk, got;
	unsigned long flags;
	LIST_HEAD(ents);
	u16 idx;

	spin_lock_irqsave(&t->lock, flags);
	if (!pt_wb_take_locked(t, want, &ents)) {
		spin_unlock_irqrestore(&t->lock, flags);
		return false;
	}
	spin_unlock_irqrestore(&t->lock, flags);

	pt_wb_fill(bio, &ents);

	spin_lock_irqsave(&t->lock, flags);
	while (done < want) {
		idx = pt_cg_get(t, id);
		if (pt_map_reserve(t, idx, want - done, false, &pblk, &got))
			break;
		pt_map_assign(t, slot + done, pblk, got);
		pt_wb_insert_locked(t, &ents, pblk, got);
		pt_account_write_locked(t, id, idx, got, true);
		done += got;
	}
	pt_wb_put_locked(t, &ents);
	spin_unlock_irqrestore(&t->lock, flags);
	if (done)
		pt_wb_kick(t);
	if (done == want) {
		bio_endio(bio);
		return true;
	}
	/* No free segment now: the rest waits for the collector on the direct path. */
	bio_advance(bio, done << PT_SLOT_SHIFT);
	return false;
}

static void pt_write(struct pt_tier *t, struct bio *bio)
{
	u64 id = pt_bio_cgroup_id(bio);
	unsigned long flags;
	struct bio *clone;
	struct pt_io *io;
	u32 pblk, got, want;
	long left = 1;
	u64 slot;
	u16 idx;
	int ret;

	/* FUA and preflush writes keep their meaning: through to the device. */
	if (t->wb_max && !(bio->bi_opf & (REQ_FUA | REQ_PREFLUSH)) &&
	    pt_write_buffered(t, bio, id))
		return;

	slot = bio->bi_iter.bi_sector >> PT_SECTORS_PER_SLOT_SHIFT;
	want = bio->bi_iter.bi_size >> PT_SLOT_SHIFT;
	spin_lock_irqsave(&t->lock, flags);
	for (;;) {
		/* Again after sleeping: the entry may have been given to another cgroup. */
		idx = pt_cg_get(t, id);
		ret = pt_map_reserve(t, idx, want, false, &pblk, &got);
		if (!ret || !left || t->nospace || t->dying)
			break;
		t->space_waiters++;
		spin_unlock_irqrestore(&t->lock, flags);
		pt_gc_kick(t);
		left = wait_event_timeout(t->space_wq, pt_space_ok(t),
					  msecs_to_jiffies(READ_ONCE(space_wait_ms)));
		spin_lock_irqsave(&t->lock, flags);
		t->space_waiters--;
	}
	if (ret) {
		t->st.nospace_errors++;
		t->st.write_errors++;
		spin_unlock_irqrestore(&t->lock, flags);
		pr_err_ratelimited("%s: no free segment, a write of %u pages fails\n",
				   t->disk->disk_name, want);
		bio->bi_status = BLK_STS_NOSPC;
		bio_endio(bio);
		return;
	}
	pt_map_assign(t, slot, pblk, got);
	pt_account_write_locked(t, id, idx, got, false);
	t->st.wb_bytes += (u64)got << PT_SLOT_SHIFT;
	t->st.wb_bios++;
	spin_unlock_irqrestore(&t->lock, flags);

	/*
	 * Admission first, the clone after: a writer waiting at the gate holds no bio of
	 * io_bs, whose bios are all in flight on the backing device.
	 */
	pt_gate_wait(t, got);
	clone = bio_alloc_clone(t->backing.bdev, bio, GFP_NOIO, &t->io_bs);
	io = pt_io_init(clone, t, PT_IO_WRITE);
	io->pblk = pblk;
	io->nr = got;
	clone->bi_iter.bi_size = got << PT_SLOT_SHIFT;
	clone->bi_iter.bi_sector = (sector_t)pblk << PT_SECTORS_PER_SLOT_SHIFT;
	clone->bi_end_io = pt_io_endio;
	clone->bi_private = bio;
	atomic_inc(&t->inflight);
	if (got < want) {
		/* The rest goes to the next segment: resubmitted, it comes back here. */
		bio_inc_remaining(bio);
		bio_advance(bio, got << PT_SLOT_SHIFT);
		submit_bio_noacct(bio);
	}
	submit_bio_noacct(clone);
}

/*
 * Before a flush (an empty one, or a write's preflush): what the write buffer holds goes
 * to the backing device first. Return: 0, or -EIO (the bio has been failed then).
 */
static int pt_flush_buffer(struct pt_tier *t, struct bio *bio)
{
	unsigned long flags;

	if (!t->wb_max || !pt_wb_drain(t))
		return 0;
	spin_lock_irqsave(&t->lock, flags);
	t->st.write_errors++;
	spin_unlock_irqrestore(&t->lock, flags);
	pr_err_ratelimited("%s: a flush fails: buffered pages could not be written\n",
			   t->disk->disk_name);
	bio->bi_status = BLK_STS_IOERR;
	bio_endio(bio);
	return -EIO;
}

/* An empty flush: completed writes are on the backing device, so flush that. */
static void pt_flush(struct pt_tier *t, struct bio *bio)
{
	struct bio *clone;

	if (pt_flush_buffer(t, bio))
		return;
	clone = bio_alloc_clone(t->backing.bdev, bio, GFP_NOIO, &t->io_bs);
	pt_io_init(clone, t, PT_IO_FLUSH);
	clone->bi_end_io = pt_io_endio;
	clone->bi_private = bio;
	atomic_inc(&t->inflight);
	submit_bio_noacct(clone);
}

/* ---- discard ---- */

/* Slots a discard clears per lock hold, to bound the time interrupts are off. */
#define PT_DISCARD_BATCH	1024

/*
 * A discard frees swap slots: their blocks die (a segment left empty is free again)
 * and the discard completes here; the backing device gets nothing. Only whole slots are
 * cleared; the block layer aligns discards to the 4 KiB logical block.
 */
static void pt_discard(struct pt_tier *t, struct bio *bio)
{
	u64 first = DIV_ROUND_UP_ULL(bio->bi_iter.bi_sector, 1U << PT_SECTORS_PER_SLOT_SHIFT);
	u64 end = bio_end_sector(bio) >> PT_SECTORS_PER_SLOT_SHIFT;
	unsigned long flags;
	u64 batch_end;

	end = min(end, t->nr_slots);
	if (first >= end)
		return;
	spin_lock_irqsave(&t->lock, flags);
	t->st.discard_pages += end - first;
	while (first < end) {
		batch_end = min(end, first + PT_DISCARD_BATCH);
		for (; first < batch_end; first++)
			pt_map_clear(t, first);
		spin_unlock_irqrestore(&t->lock, flags);
		cond_resched();
		spin_lock_irqsave(&t->lock, flags);
	}
	spin_unlock_irqrestore(&t->lock, flags);
}

/* ---- read ---- */

enum pt_class_kind { PT_CL_ZERO, PT_CL_HIT, PT_CL_BUF, PT_CL_READ, PT_CL_WAIT_W, PT_CL_WAIT_PF };

/* The first piece of a read: slots of one kind. */
struct pt_class {
	u8 kind;			/* enum pt_class_kind */
	u32 len;			/* slots */
	u32 pblk;			/* READ: first block */
	u32 seg;			/* READ, WAIT_PF */
	u32 wseq;			/* WAIT_W: t->wr_seq when seen */
	struct page *pages[PT_HIT_MAX];	/* HIT: taken from the cache; BUF: buffered */
	struct pt_wbuf *bufs[PT_HIT_MAX];	/* BUF: pinned write buffer entries */
};

/* Charges a read to the cgroups owning its slots (empty slots: unattributed). */
static void pt_account_read_locked(struct pt_tier *t, struct pt_top *top)
{
	u64 slot = top->slot, end = top->slot + top->pages;
	u16 idx, run = 0;

	lockdep_assert_held(&t->lock);
	idx = pt_slot_owner(t, slot);
	top->empty = !idx;
	top->cg = idx ?: PT_CG_UNATTRIBUTED;
	top->cgroup_id = t->cg[top->cg].id;
	for (; slot < end; slot++) {
		idx = pt_slot_owner(t, slot) ?: PT_CG_UNATTRIBUTED;
		t->cg[idx].in_use = true;
		t->cg[idx].st.bytes_read += PT_SLOT_SIZE;
		if (idx != run) {
			t->cg[idx].st.read_ios++;
			run = idx;
		}
	}
	t->st.bytes_read += (u64)top->pages << PT_SLOT_SHIFT;
	t->st.read_ios++;
}

/* Sorts the first slots of @c into a piece of one kind (see struct pt_class). */
static void pt_classify(struct pt_tier *t, struct bio *c, struct pt_top *top,
			struct pt_class *cl)
{
	u64 slot = c->bi_iter.bi_sector >> PT_SECTORS_PER_SLOT_SHIFT;
	u32 n = c->bi_iter.bi_size >> PT_SLOT_SHIFT;
	u32 i, p, v, seg = PT_NONE;
	struct pt_wbuf *e = NULL;
	unsigned long flags;
	struct pt_cgroup *o;
	u8 kind;

	spin_lock_irqsave(&t->lock, flags);
	for (i = 0; i < n; i++) {
		p = t->l2p[slot + i];
		if (p == PT_NONE) {
			kind = PT_CL_ZERO;
		} else {
			v = t->p2l[p];
			seg = pt_seg_of(t, p);
			e = (v & PT_P2L_PENDING) ? pt_wb_find(t, p) : NULL;
			if (e)
				kind = PT_CL_BUF;
			else if (v & PT_P2L_PENDING)
				kind = PT_CL_WAIT_W;
			else if ((v & PT_P2L_STAGED) && pt_stage_find(t, p))
				kind = PT_CL_HIT;
			else if (t->segs[seg].pf == PT_PF_INFLIGHT)
				kind = PT_CL_WAIT_PF;
			else
				kind = PT_CL_READ;
			/* Demand wins: prefetch does not read what is read now. */
			if (kind == PT_CL_READ && t->segs[seg].pf == PT_PF_PLANNED)
				pt_pf_preempt(t, seg);
		}
		if (!i) {
			cl->kind = kind;
			cl->pblk = p;
			cl->seg = seg;
		} else if (kind != cl->kind ||
			   (kind == PT_CL_READ && (p != cl->pblk + i || seg != cl->seg)) ||
			   (kind == PT_CL_WAIT_PF && seg != cl->seg)) {
			break;
		}
		if (kind == PT_CL_HIT) {
			o = &t->cg[t->segs[seg].owner];
			o->st.staging_hits++;
			cl->pages[i] = pt_stage_take(t, p);
		} else if (kind == PT_CL_BUF) {
			/* Pinned: its page is copied outside the lock. */
			t->cg[t->segs[seg].owner].st.buffer_hits++;
			e->pins++;
			cl->bufs[i] = e;
			cl->pages[i] = e->page;
		}
		if ((kind == PT_CL_HIT || kind == PT_CL_BUF) && i + 1 == PT_HIT_MAX) {
			i++;
			break;
		}
	}
	cl->len = i;
	switch (cl->kind) {
	case PT_CL_ZERO:
		t->st.zero_pages += i;
		break;
	case PT_CL_HIT:
		t->st.staging_hits += i;
		top->hits += i;
		break;
	case PT_CL_BUF:
		t->st.wb_hits += i;
		break;
	case PT_CL_READ:
		t->segs[cl->seg].readers++;
		t->demand_inflight++;
		t->demand_last = jiffies;
		t->st.staging_misses += i;
		t->cg[t->segs[cl->seg].owner].st.staging_misses += i;
		t->st.demand_bytes += (u64)i << PT_SLOT_SHIFT;
		t->st.demand_bios++;
		break;
	case PT_CL_WAIT_W:
		cl->wseq = t->wr_seq;
		break;
	default:
		break;
	}
	spin_unlock_irqrestore(&t->lock, flags);
}

/* Copies @src (NULL: zeros) into the 4 KiB of @bio at @it, and advances @it. */
static void pt_copy_slot(struct bio *bio, struct bvec_iter *it, struct page *src)
{
	unsigned int done = 0, len;
	struct bio_vec bv;
	char *dst, *from;

	bv = bio_iter_iovec(bio, *it);
	if (src && PAGE_SIZE == PT_SLOT_SIZE && !bv.bv_offset && bv.bv_len == PAGE_SIZE) {
		/* A whole page, as swap reads are: the cheapest copy there is. */
		dst = kmap_local_page(bv.bv_page);
		from = kmap_local_page(src);
		copy_page(dst, from);
		kunmap_local(from);
		kunmap_local(dst);
		flush_dcache_page(bv.bv_page);
		bio_advance_iter_single(bio, it, PAGE_SIZE);
		return;
	}
	while (done < PT_SLOT_SIZE) {
		bv = bio_iter_iovec(bio, *it);
		len = min_t(unsigned int, bv.bv_len, PT_SLOT_SIZE - done);
		bv.bv_len = len;
		dst = bvec_kmap_local(&bv);
		if (src) {
			from = kmap_local_page(src);
			memcpy(dst, from + done, len);
			kunmap_local(from);
		} else {
			memset(dst, 0, len);
		}
		kunmap_local(dst);
		flush_dcache_page(bv.bv_page);
		bio_advance_iter_single(bio, it, len);
		done += len;
	}
}

/* Serves a ZERO, HIT or BUF piece at the front of @c from memory. */
static void pt_fill(struct pt_tier *t, struct bio *c, struct pt_class *cl)
{
	struct bvec_iter it = c->bi_iter;
	unsigned long flags;
	u32 i;

	for (i = 0; i < cl->len; i++)
		pt_copy_slot(c, &it, cl->kind == PT_CL_ZERO ? NULL : cl->pages[i]);
	if (cl->kind != PT_CL_ZERO) {
		spin_lock_irqsave(&t->lock, flags);
		for (i = 0; i < cl->len; i++) {
			if (cl->kind == PT_CL_HIT)
				pt_page_put_locked(t, cl->pages[i]);
			else
				pt_wb_unpin_locked(t, cl->bufs[i]);
		}
		spin_unlock_irqrestore(&t->lock, flags);
	}
	bio_advance(c, cl->len << PT_SLOT_SHIFT);
}

/*
 * Cuts the first @n slots of container @c into a READ piece that completes into @c, a
 * bio of @bs: the caller sends it to the backing device at once.
 */
static struct bio *pt_carve(struct pt_tier *t, struct bio *c, struct pt_top *top, u32 n,
			    struct bio_set *bs)
{
	struct bio *p = bio_alloc_clone(c->bi_bdev, c, GFP_NOIO, bs);
	struct pt_io *io = pt_io_init(p, t, PT_IO_READ);

	io->top = top;
	io->nr = n;
	p->bi_iter.bi_size = n << PT_SLOT_SHIFT;
	p->bi_end_io = pt_io_endio;
	p->bi_private = c;
	bio_inc_remaining(c);
	bio_advance(c, n << PT_SLOT_SHIFT);
	atomic_inc(&t->inflight);
	return p;
}

/* Parks the rest of container @b until what it waits for is done. */
static void pt_wait(struct pt_tier *t, struct bio *b, const struct pt_class *cl)
{
	unsigned long flags;

	spin_lock_irqsave(&t->lock, flags);
	/*
	 * Check again: it may have finished since pt_classify() looked. Only a read in
	 * flight is waited for: a segment planned again meanwhile is read on demand.
	 */
	if (cl->kind == PT_CL_WAIT_PF && t->segs[cl->seg].pf == PT_PF_INFLIGHT) {
		bio_list_add(&t->segs[cl->seg].waiters, b);
	} else if (cl->kind == PT_CL_WAIT_W && t->wr_seq == cl->wseq) {
		bio_list_add(&t->wait_write, b);
	} else {
		bio_list_add(&t->rd_retry, b);
		queue_work(t->wq, &t->rd_work);
	}
	spin_unlock_irqrestore(&t->lock, flags);
}

/**
 * pt_read_resolve() - serve the rest of a read container piece by piece
 * @t: the tier
 * @c: the container: a read's pt_top clone, new or back from waiting
 * @in_submit: called from ->submit_bio: then a piece sent to the backing device is only
 *             submitted after we return, and holds its bio_set entry until then, so the
 *             rest of @c is left to rd_work instead of allocating more. Otherwise (a
 *             worker) pieces come from rd_bs, whose bios are all on the backing device,
 *             so the allocation waits only for the device.
 *
 * When the next slots wait (for a write or a prefetch read), the container itself
 * waits, with the rest: waiting holds no bio of any set.
 *
 * Context: may sleep (bio_set allocations).
 */
static void pt_read_resolve(struct pt_tier *t, struct bio *c, bool in_submit)
{
	struct pt_top *top = container_of(c, struct pt_top, bio);
	struct bio_set *bs = in_submit ? &t->io_bs : &t->rd_bs;
	struct pt_class cl;
	struct pt_io *io;
	struct bio *p;

	while (c->bi_iter.bi_size) {
		pt_classify(t, c, top, &cl);
		switch (cl.kind) {
		case PT_CL_ZERO:
		case PT_CL_HIT:
		case PT_CL_BUF:
			pt_fill(t, c, &cl);
			break;
		case PT_CL_READ:
			p = pt_carve(t, c, top, cl.len, bs);
			io = container_of(p, struct pt_io, bio);
			io->pblk = cl.pblk;
			io->seg = cl.seg;
			bio_set_dev(p, t->backing.bdev);
			p->bi_iter.bi_sector = (sector_t)cl.pblk << PT_SECTORS_PER_SLOT_SHIFT;
			/* Ahead of background I/O in schedulers that look at it. */
			p->bi_ioprio = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 0);
			io->iter = p->bi_iter;
			submit_bio_noacct(p);
			if (in_submit && c->bi_iter.bi_size) {
				pt_wait(t, c, &cl);	/* READ: always to rd_retry */
				return;
			}
			break;
		default:
			pt_wait(t, c, &cl);
			return;
		}
	}
	/* The container's own reference: it completes when its last piece does. */
	bio_endio(c);
}

/* A read is over: its counters, latency and event. */
static void pt_read_finish(struct pt_tier *t, const struct pt_top *top, blk_status_t status)
{
	u64 lat = ktime_get_ns() - top->start_ns;
	unsigned int b = pt_lat_bucket(lat);
	struct pagetier_event ev;
	struct pt_cgroup *cg;
	unsigned long flags;

	spin_lock_irqsave(&t->lock, flags);
	t->st.demand_reads++;
	t->st.demand_read_pages += top->pages;
	t->st.demand_read_ns += lat;
	t->st.lat_hist[b]++;
	cg = &t->cg[top->cg];
	if (cg->id == top->cgroup_id) {
		cg->st.demand_reads++;
		cg->st.demand_read_pages += top->pages;
		cg->st.demand_read_ns += lat;
		cg->st.read_latency[b]++;
	}
	spin_unlock_irqrestore(&t->lock, flags);

	memset(&ev, 0, sizeof(ev));
	ev.type = PAGETIER_EVENT_DEMAND_READ;
	ev.tier_id = t->id;
	ev.time_ns = top->start_ns + lat;
	ev.cgroup_id = top->cgroup_id;
	ev.slot = top->slot;
	ev.latency_ns = lat;
	ev.pages = top->pages;
	if (top->hits == top->pages)
		ev.flags |= PAGETIER_EVENT_F_STAGED;
	else if (top->hits)
		ev.flags |= PAGETIER_EVENT_F_PART_STAGED;
	if (status)
		ev.flags |= PAGETIER_EVENT_F_ERROR;
	if (top->empty)
		ev.flags |= PAGETIER_EVENT_F_EMPTY;
	pt_events_emit(&ev);
}

static void pt_top_endio(struct bio *c)
{
	struct pt_top *top = container_of(c, struct pt_top, bio);
	struct pt_tier *t = top->t;
	struct bio *orig = top->orig;

	pt_read_finish(t, top, c->bi_status);
	orig->bi_status = c->bi_status;
	bio_put(c);
	bio_endio(orig);
	pt_inflight_put(t);
}

/*
 * A read served from memory alone (staged pages, buffered writes, empty slots), the
 * common read after a prefetch or of a page swapped out a moment ago: no clone, and the
 * copy outside the lock. Return: false, with nothing done, if a slot needs the device
 * or has to wait.
 */
static bool pt_read_inline(struct pt_tier *t, struct bio *bio, struct pt_top *top)
{
	struct pt_wbuf *bufs[PT_HIT_MAX];
	struct page *pages[PT_HIT_MAX];
	unsigned long flags;
	struct bvec_iter it;
	u32 i, p, v;

	if (top->pages > PT_HIT_MAX)
		return false;
	spin_lock_irqsave(&t->lock, flags);
	for (i = 0; i < top->pages; i++) {
		p = t->l2p[top->slot + i];
		if (p == PT_NONE)
			continue;
		v = t->p2l[p];
		if ((v & PT_P2L_PENDING) ? !pt_wb_find(t, p) :
		    (!(v & PT_P2L_STAGED) || !pt_stage_find(t, p))) {
			spin_unlock_irqrestore(&t->lock, flags);
			return false;
		}
	}
	pt_account_read_locked(t, top);
	for (i = 0; i < top->pages; i++) {
		p = t->l2p[top->slot + i];
		pages[i] = NULL;
		bufs[i] = NULL;
		if (p == PT_NONE) {
			t->st.zero_pages++;
			continue;
		}
		if (t->p2l[p] & PT_P2L_PENDING) {
			bufs[i] = pt_wb_find(t, p);
			bufs[i]->pins++;
			pages[i] = bufs[i]->page;
			t->st.wb_hits++;
			t->cg[t->segs[pt_seg_of(t, p)].owner].st.buffer_hits++;
			continue;
		}
		t->cg[t->segs[pt_seg_of(t, p)].owner].st.staging_hits++;
		pages[i] = pt_stage_take(t, p);
		top->hits++;
	}
	t->st.staging_hits += top->hits;
	spin_unlock_irqrestore(&t->lock, flags);

	it = bio->bi_iter;
	for (i = 0; i < top->pages; i++)
		pt_copy_slot(bio, &it, pages[i]);
	spin_lock_irqsave(&t->lock, flags);
	for (i = 0; i < top->pages; i++) {
		if (bufs[i])
			pt_wb_unpin_locked(t, bufs[i]);
		else if (pages[i])
			pt_page_put_locked(t, pages[i]);
	}
	spin_unlock_irqrestore(&t->lock, flags);
	pt_read_finish(t, top, BLK_STS_OK);
	bio_endio(bio);
	return true;
}

static void pt_read(struct pt_tier *t, struct bio *bio)
{
	struct pt_top *top, fast;
	unsigned long flags;
	struct bio *c;

	memset(&fast, 0, offsetof(struct pt_top, bio));
	fast.t = t;
	fast.orig = bio;
	fast.start_ns = ktime_get_ns();
	fast.slot = bio->bi_iter.bi_sector >> PT_SECTORS_PER_SLOT_SHIFT;
	fast.pages = bio->bi_iter.bi_size >> PT_SLOT_SHIFT;
	if (pt_read_inline(t, bio, &fast))
		return;

	c = bio_alloc_clone(bio->bi_bdev, bio, GFP_NOIO, &t->top_bs);
	top = container_of(c, struct pt_top, bio);
	memcpy(top, &fast, offsetof(struct pt_top, bio));
	c->bi_end_io = pt_top_endio;
	atomic_inc(&t->inflight);
	spin_lock_irqsave(&t->lock, flags);
	pt_account_read_locked(t, top);
	spin_unlock_irqrestore(&t->lock, flags);
	pt_read_resolve(t, c, true);
}

/*
 * Reads a failed READ piece again, one bio per block that the backing device must not
 * merge: a block that fails then fails alone, and the piece (so the read) fails only
 * if one of its own blocks does.
 */
static void pt_read_retry(struct pt_tier *t, struct bio *p)
{
	struct pt_io *io = container_of(p, struct pt_io, bio), *cio;
	struct bio *c;
	u32 k;

	p->bi_status = BLK_STS_OK;
	p->bi_iter = io->iter;
	for (k = 0; k < io->nr; k++) {
		/* Sent at once: each one waits only for the device's earlier ones. */
		c = bio_alloc_clone(t->backing.bdev, p, GFP_NOIO, &t->rt_bs);
		cio = pt_io_init(c, t, PT_IO_RETRY);
		cio->pblk = io->pblk + k;
		cio->nr = 1;
		cio->seg = io->seg;
		bio_advance(c, k << PT_SLOT_SHIFT);
		c->bi_iter.bi_size = PT_SLOT_SIZE;
		c->bi_opf |= REQ_NOMERGE;
		c->bi_end_io = pt_io_endio;
		c->bi_private = p;
		bio_inc_remaining(p);
		atomic_inc(&t->inflight);
		submit_bio_noacct(c);
	}
	/* Its second completion, when the last block is read, is the real one. */
	bio_endio(p);
}

/*
 * Failed READ pieces, read again. On a workqueue of its own: rd_work and pf_work may
 * wait for rd_bs bios that only these retries give back.
 */
static void pt_rt_work(struct work_struct *work)
{
	struct pt_tier *t = container_of(work, struct pt_tier, rt_work);
	struct bio_list f;
	struct bio *b;

	spin_lock_irq(&t->lock);
	f = t->rd_failed;
	bio_list_init(&t->rd_failed);
	spin_unlock_irq(&t->lock);
	while ((b = bio_list_pop(&f)))
		pt_read_retry(t, b);
}

/* Reads that continue outside ->submit_bio, and waiters to look at again. */
static void pt_rd_work(struct work_struct *work)
{
	struct pt_tier *t = container_of(work, struct pt_tier, rd_work);
	struct bio_list l;
	struct bio *b;

	spin_lock_irq(&t->lock);
	l = t->rd_retry;
	bio_list_init(&t->rd_retry);
	bio_list_merge(&l, &t->wait_write);
	bio_list_init(&t->wait_write);
	spin_unlock_irq(&t->lock);
	while ((b = bio_list_pop(&l)))
		pt_read_resolve(t, b, false);
}

static void pt_submit_bio(struct bio *bio)
{
	struct pt_tier *t = bio->bi_bdev->bd_disk->private_data;

	switch (bio_op(bio)) {
	case REQ_OP_READ:
		if (bio_sectors(bio))
			pt_read(t, bio);
		else
			bio_endio(bio);
		return;
	case REQ_OP_WRITE:
		if (!bio_sectors(bio))
			pt_flush(t, bio);
		else if (!(bio->bi_opf & REQ_PREFLUSH) || !pt_flush_buffer(t, bio))
			pt_write(t, bio);
		return;
	case REQ_OP_FLUSH:
		pt_flush(t, bio);
		return;
	case REQ_OP_DISCARD:
		pt_discard(t, bio);
		bio_endio(bio);
		return;
	default:
		/* Write zeroes, secure erase and zone ops are not advertised. */
		bio->bi_status = BLK_STS_NOTSUPP;
		bio_endio(bio);
		return;
	}
}

/**
 * pt_disk_open() - refuse opens of a tier that is being destroyed
 * @disk: the tier's disk; the block layer holds @disk->open_mutex
 *
 * pt_tier_destroy() sets the claim under the same mutex after it has seen no openers,
 * so a tier is either open or being destroyed, never both.
 *
 * Return: 0, or -ENXIO if the tier is going away.
 */
static int pt_disk_open(struct gendisk *disk)
{
	struct pt_tier *t = disk->private_data;

	return t->claimed ? -ENXIO : 0;
}

/* ->open() with the prototype of the kernel at hand (compat.h). */
#if PT_NEW_BLOCK_API
static int pt_bdops_open(struct gendisk *disk, blk_mode_t mode)
{
	return pt_disk_open(disk);
}
#else
static int pt_bdops_open(struct block_device *bdev, fmode_t mode)
{
	return pt_disk_open(bdev->bd_disk);
}
#endif

static const struct block_device_operations pt_fops = {
	/* An open tier pins the module: rmmod is refused while swap uses it. */
	.owner		= THIS_MODULE,
	.submit_bio	= pt_submit_bio,
	.open		= pt_bdops_open,
};

/* ---- sysfs: /sys/block/pagetierN/ ---- */

static struct pt_tier *pt_dev_tier(struct device *dev)
{
	return dev_to_disk(dev)->private_data;
}

/*
 * The *_stat files: one line of fixed columns each, the zram mm_stat/io_stat convention;
 * new columns are only ever appended. Each file is one table of its columns, in order:
 * the column's name as kmod/README.md documents it (tests/kmod/check_stat_columns.py
 * holds the two together), its printf width, and its value: a u32 or u64 field of
 * struct pt_tier (shifted left by @shift), or what @get computes. Values are read
 * under t->lock and printed after.
 */
struct pt_stat_col {
	const char *name;
	u64 (*get)(struct pt_tier *t);	/* NULL: the field at @off */
	u32 off;
	u8 size;
	u8 shift;
	u8 width;
};

/* @_field: a u32 or u64 member of struct pt_tier, e.g. nr_free or st.gc_moves. */
#define PT_COL_SHL(_name, _width, _shift, _field...) {				\
	.name	= _name,							\
	.off	= offsetof(struct pt_tier, _field),				\
	.size	= sizeof_field(struct pt_tier, _field) +			\
		  BUILD_BUG_ON_ZERO(sizeof_field(struct pt_tier, _field) != sizeof(u32) && \
				    sizeof_field(struct pt_tier, _field) != sizeof(u64)), \
	.shift	= _shift,							\
	.width	= _width,							\
}

#define PT_COL(_name, _width, _field)	PT_COL_SHL(_name, _width, 0, _field)
#define PT_COL_FN(_name, _width, _get)	{ .name = _name, .get = _get, .width = _width }

/* tier_stat's cgroups: the entries CGROUP_STATS reports. */
static u64 pt_stat_cgroups(struct pt_tier *t)
{
	u32 i, cgroups = 0;

	lockdep_assert_held(&t->lock);
	for (i = PT_CG_UNATTRIBUTED; i < t->cg_used; i++)
		cgroups += t->cg[i].in_use;
	return cgroups;
}

/* tier_stat: the tier as a whole. */
static const struct pt_stat_col pt_tier_stat_cols[] = {
	PT_COL("pages_stored",		8,	pages_stored),
	PT_COL("bytes_written",		12,	st.bytes_written),
	PT_COL("bytes_read",		12,	st.bytes_read),
	PT_COL("write_ios",		8,	st.write_ios),
	PT_COL("read_ios",		8,	st.read_ios),
	PT_COL("discard_pages",		8,	st.discard_pages),
	PT_COL("read_errors",		8,	st.read_errors),
	PT_COL("write_errors",		8,	st.write_errors),
	PT_COL_FN("cgroups",		8,	pt_stat_cgroups),
	PT_COL("cgroup_overflows",	8,	st.cgroup_overflows),
	PT_COL("cgroup_evictions",	8,	st.cgroup_evictions),
	PT_COL("cgroup_evicted_pages",	8,	st.cgroup_evicted_pages),
};

/* seg_stat: the log-structured layout and the garbage collector. */
static const struct pt_stat_col pt_seg_stat_cols[] = {
	PT_COL_SHL("segment_bytes",	8,	PT_SLOT_SHIFT, seg_blocks),
	PT_COL("segments",		8,	nr_segs),
	PT_COL("free",			8,	nr_free),
	PT_COL("open",			8,	nr_open),
	PT_COL("bad",			8,	nr_bad),
	PT_COL("gc_victims",		8,	st.gc_victims),
	PT_COL("gc_moves",		10,	st.gc_moves),
	PT_COL("gc_errors",		8,	st.gc_errors),
	PT_COL("nospace_errors",	8,	st.nospace_errors),
	PT_COL("live_pages",		10,	pages_stored),
	PT_COL_SHL("backing_bytes_used", 12,	PT_SLOT_SHIFT, nr_blocks),
};

/* read_stat: demand reads, the staging cache and prefetch. */
static const struct pt_stat_col pt_read_stat_cols[] = {
	PT_COL("demand_reads",		8,	st.demand_reads),
	PT_COL("demand_read_pages",	8,	st.demand_read_pages),
	PT_COL("demand_read_ns",	12,	st.demand_read_ns),
	PT_COL("staging_hits",		8,	st.staging_hits),
	PT_COL("staging_misses",	8,	st.staging_misses),
	PT_COL("staged_pages",		8,	nr_staged),
	PT_COL("prefetch_bytes",	12,	st.prefetch_bytes),
	PT_COL("prefetch_ios",		8,	st.prefetch_ios),
	PT_COL("prefetch_errors",	8,	st.prefetch_errors),
	PT_COL("staging_evicted",	8,	st.staging_evicted),
	PT_COL("staging_expired",	8,	st.staging_expired),
	PT_COL("staging_dropped",	8,	st.staging_dropped),
	PT_COL("zero_pages",		8,	st.zero_pages),
	PT_COL("staging_max",		8,	stage_max),
	PT_COL("prefetch_preempted",	8,	st.prefetch_preempted),
};

/* io_stat: what the tier sent to the backing device, by class. */
static const struct pt_stat_col pt_io_stat_cols[] = {
	PT_COL("writeback_bytes",	12,	st.wb_bytes),
	PT_COL("writeback_bios",	8,	st.wb_bios),
	PT_COL("demand_bytes",		12,	st.demand_bytes),
	PT_COL("demand_bios",		8,	st.demand_bios),
	PT_COL("prefetch_bytes",	12,	st.prefetch_bytes),
	PT_COL("prefetch_bios",		8,	st.prefetch_ios),
	PT_COL("gc_read_bytes",		12,	st.gc_read_bytes),
	PT_COL("gc_write_bytes",	12,	st.gc_write_bytes),
	PT_COL("gc_bios",		8,	st.gc_bios),
};

/* wb_stat: the write buffer. */
static const struct pt_stat_col pt_wb_stat_cols[] = {
	PT_COL("buffered",		10,	st.wb_buffered),
	PT_COL("direct",		10,	st.wb_direct),
	PT_COL("full",			8,	st.wb_full),
	PT_COL("held",			8,	wb_held),
	PT_COL("size",			8,	wb_max),
	PT_COL("flush_bios",		8,	st.wb_flush_bios),
	PT_COL("flush_bytes",		12,	st.wb_flush_bytes),
	PT_COL("dropped",		8,	st.wb_dropped),
	PT_COL("errors",		8,	st.wb_errors),
	PT_COL("moved",			8,	st.wb_moved),
	PT_COL("stuck",			8,	wb_stuck),
	PT_COL("flush_waits",		8,	st.wb_flush_waits),
	PT_COL("hits",			8,	st.wb_hits),
};

/* Columns a *_stat file has at most. */
#define PT_STAT_COLS_MAX	16

/* A *_stat file: its attribute and its table. */
struct pt_stat_attr {
	struct device_attribute attr;
	const struct pt_stat_col *cols;
	unsigned int nr;
};

static u64 pt_stat_value(struct pt_tier *t, const struct pt_stat_col *c)
{
	const void *p = (const char *)t + c->off;

	lockdep_assert_held(&t->lock);
	if (c->get)
		return c->get(t);
	if (c->size == sizeof(u32))
		return (u64)*(const u32 *)p << c->shift;
	return *(const u64 *)p << c->shift;
}

/* Any *_stat file: its table's values, each right-aligned in its width. */
static ssize_t pt_stat_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	const struct pt_stat_attr *sa = container_of(attr, struct pt_stat_attr, attr);
	struct pt_tier *t = pt_dev_tier(dev);
	u64 v[PT_STAT_COLS_MAX];
	unsigned int i;
	int n = 0;

	spin_lock_irq(&t->lock);
	for (i = 0; i < sa->nr; i++)
		v[i] = pt_stat_value(t, &sa->cols[i]);
	spin_unlock_irq(&t->lock);

	for (i = 0; i < sa->nr; i++)
		n += sysfs_emit_at(buf, n, "%s%*llu", i ? " " : "", sa->cols[i].width, v[i]);
	n += sysfs_emit_at(buf, n, "\n");
	return n;
}

/* The attribute of the file @_file, whose table is pt_<@_file>_cols. */
#define PT_STAT_ATTR(_file) {							\
	.attr	= __ATTR(_file, 0444, pt_stat_show, NULL),			\
	.cols	= pt_##_file##_cols,						\
	.nr	= ARRAY_SIZE(pt_##_file##_cols) +				\
		  BUILD_BUG_ON_ZERO(ARRAY_SIZE(pt_##_file##_cols) > PT_STAT_COLS_MAX), \
}

static struct pt_stat_attr pt_attr_tier_stat = PT_STAT_ATTR(tier_stat);
static struct pt_stat_attr pt_attr_seg_stat = PT_STAT_ATTR(seg_stat);
static struct pt_stat_attr pt_attr_read_stat = PT_STAT_ATTR(read_stat);
static struct pt_stat_attr pt_attr_io_stat = PT_STAT_ATTR(io_stat);
static struct pt_stat_attr pt_attr_wb_stat = PT_STAT_ATTR(wb_stat);

/* read_latency: the demand read latency histogram, PT_LAT_BUCKETS columns. */
static ssize_t read_latency_show(struct device *dev, struct device_attribute *attr,
				 char *buf)
{
	struct pt_tier *t = pt_dev_tier(dev);
	u64 v[PT_LAT_BUCKETS];
	int i, n = 0;

	spin_lock_irq(&t->lock);
	memcpy(v, t->st.lat_hist, sizeof(v));
	spin_unlock_irq(&t->lock);
	for (i = 0; i < PT_LAT_BUCKETS; i++)
		n += sysfs_emit_at(buf, n, "%s%llu", i ? " " : "", v[i]);
	n += sysfs_emit_at(buf, n, "\n");
	return n;
}
static DEVICE_ATTR_RO(read_latency);

static ssize_t backing_dev_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", pt_dev_tier(dev)->backing_path);
}
static DEVICE_ATTR_RO(backing_dev);

static struct attribute *pt_disk_attrs[] = {
	&pt_attr_tier_stat.attr.attr,
	&pt_attr_seg_stat.attr.attr,
	&pt_attr_read_stat.attr.attr,
	&dev_attr_read_latency.attr,
	&pt_attr_io_stat.attr.attr,
	&pt_attr_wb_stat.attr.attr,
	&dev_attr_backing_dev.attr,
	NULL,
};
ATTRIBUTE_GROUPS(pt_disk);

/* ---- what the layers below call up for: registered at creation ---- */

/* A read that waited for a prefetch read goes on (from pf_work: pieces from rd_bs). */
static void pt_read_resume(struct pt_tier *t, struct bio *c)
{
	pt_read_resolve(t, c, false);
}

/* For the staging, prefetch and write-buffer layers. */
static const struct pt_io_ops pt_tier_io_ops = {
	.read_resume	= pt_read_resume,
	.writes_done	= pt_writes_done,
};

/* For the map: the collector's and the staging cache's parts. */
static const struct pt_map_ops pt_tier_map_ops = {
	.gc_kick	= pt_gc_kick,
	.seg_freed	= pt_gc_seg_freed,
	.stage_drop	= pt_stage_drop,
	.stage_move	= pt_stage_move,
};

/* ---- create and destroy ---- */

static void pt_tier_free(struct pt_tier *t)
{
	u32 i;

	if (t->wq)
		destroy_workqueue(t->wq);
	if (t->gc_wq)
		destroy_workqueue(t->gc_wq);
	if (t->rt_wq)
		destroy_workqueue(t->rt_wq);
	bioset_exit(&t->wb_bs);
	bioset_exit(&t->bg_bs);
	bioset_exit(&t->rt_bs);
	bioset_exit(&t->rd_bs);
	bioset_exit(&t->io_bs);
	bioset_exit(&t->top_bs);
	pt_stage_free_all(t);
	pt_wb_free_all(t);
	if (t->gc_pages) {
		for (i = 0; i < t->seg_blocks; i++)
			if (t->gc_pages[i])
				__free_page(t->gc_pages[i]);
		kvfree(t->gc_pages);
	}
	bitmap_free(t->gc_valid);
	kvfree(t->gc_slot);
	kvfree(t->gc_runs);
	pt_map_free(t);
	kfree(t);
}

/* Size and layout of the tier over @bdev; 0 or -EINVAL. */
static int pt_tier_layout(struct pt_tier *t, struct block_device *bdev)
{
	struct pt_geometry g;
	u64 size = bdev_nr_bytes(bdev);
	int ret;

	if (bdev_logical_block_size(bdev) > PT_SLOT_SIZE) {
		pr_err("%s: logical block size %u is larger than a page slot (%u)\n",
		       t->backing_path, bdev_logical_block_size(bdev), PT_SLOT_SIZE);
		return -EINVAL;
	}
	ret = pt_geometry(size, (u64)READ_ONCE(max_capacity_mib) << 20, READ_ONCE(segment_kib),
			  READ_ONCE(gc_headroom_pct), READ_ONCE(max_open_segments), &g);
	if (ret) {
		pr_err("%s: %llu bytes is too small for a tier\n", t->backing_path, size);
		return ret;
	}
	t->nr_slots = g.nr_slots;
	t->seg_shift = g.seg_shift;
	t->nr_segs = g.nr_segs;
	t->open_max = g.open_max;
	/* The collector starts below gc_low free segments and stops at gc_high. */
	t->gc_low = PT_GC_RESERVE + max_t(u32, 2, g.nr_segs / 64);
	t->gc_high = t->gc_low + max_t(u32, 2, g.nr_segs / 64);
	return 0;
}

static int pt_tier_alloc_gc(struct pt_tier *t)
{
	u32 i;

	t->gc_pages = kvcalloc(t->seg_blocks, sizeof(*t->gc_pages), GFP_KERNEL);
	t->gc_valid = bitmap_zalloc(t->seg_blocks, GFP_KERNEL);
	t->gc_slot = kvmalloc_array(t->seg_blocks, sizeof(*t->gc_slot), GFP_KERNEL);
	t->gc_runs = kvmalloc_array(t->seg_blocks, sizeof(*t->gc_runs), GFP_KERNEL);
	if (!t->gc_pages || !t->gc_valid || !t->gc_slot || !t->gc_runs)
		return -ENOMEM;
	for (i = 0; i < t->seg_blocks; i++) {
		t->gc_pages[i] = alloc_page(GFP_KERNEL);
		if (!t->gc_pages[i])
			return -ENOMEM;
	}
	return 0;
}

/*
 * The bio allocator of a bio_set under fault_bio_reserve: while it is set, every
 * allocation made from the I/O paths fails, so that mempool_alloc() serves them from the
 * reserve alone, as if every slab allocation failed. Those paths allocate with GFP_NOIO
 * (mempool_alloc() retries with the caller's mask, still without __GFP_FS); the pool's
 * own filling at mempool_init() is GFP_KERNEL, and succeeds.
 */
static void *pt_fault_bio_alloc(gfp_t gfp, void *pool_data)
{
	if (READ_ONCE(fault_bio_reserve) && !(gfp & __GFP_FS))
		return NULL;
	return mempool_alloc_slab(gfp, pool_data);
}

/*
 * Rebuilds @bs's bio pool around pt_fault_bio_alloc. The pool is made anew rather than
 * its ->alloc swapped: mempool poisons the elements it keeps (KASAN) only when its
 * allocator is mempool_alloc_slab, and unpoisons what it hands out on the same test, so
 * a swapped allocator would hand out elements still poisoned (the debug kernel reported
 * a use-after-free in bio_init, and the slab cache kept objects at bioset_exit). A pool
 * built with the fault allocator from the start never poisons: consistent both ways.
 */
static int pt_fault_bio_install(struct bio_set *bs)
{
	int nr;

	if (!mempool_initialized(&bs->bio_pool))
		return 0;
	nr = bs->bio_pool.min_nr;
	mempool_exit(&bs->bio_pool);
	return mempool_init(&bs->bio_pool, nr, pt_fault_bio_alloc, mempool_free_slab,
			    bs->bio_slab);
}

static int pt_tier_alloc_io(struct pt_tier *t)
{
	int ret;

	ret = bioset_init(&t->top_bs, 16, offsetof(struct pt_top, bio), 0);
	if (!ret)
		ret = bioset_init(&t->io_bs, 64, offsetof(struct pt_io, bio), 0);
	if (!ret)
		ret = bioset_init(&t->rd_bs, 64, offsetof(struct pt_io, bio), 0);
	if (!ret)
		ret = bioset_init(&t->rt_bs, 16, offsetof(struct pt_io, bio), 0);
	if (!ret)
		ret = bioset_init(&t->bg_bs, 4, offsetof(struct pt_bgio, bio), BIOSET_NEED_BVECS);
	if (!ret && t->wb_max)
		ret = bioset_init(&t->wb_bs, 4, offsetof(struct pt_bgio, bio), BIOSET_NEED_BVECS);
	if (ret)
		return ret;
	if (READ_ONCE(fault_bio_reserve)) {
		pr_warn("pagetier%u: fault_bio_reserve: bios come from the reserves only\n", t->id);
		ret = pt_fault_bio_install(&t->top_bs) ?: pt_fault_bio_install(&t->io_bs) ?:
		      pt_fault_bio_install(&t->rd_bs) ?: pt_fault_bio_install(&t->rt_bs) ?:
		      pt_fault_bio_install(&t->bg_bs) ?: pt_fault_bio_install(&t->wb_bs);
		if (ret)
			return ret;
	}
	/* In the reclaim path (reads wait for prefetch, writes for the collector). */
	t->wq = alloc_workqueue("pagetier%u", WQ_MEM_RECLAIM | WQ_HIGHPRI, 0, t->id);
	t->gc_wq = alloc_workqueue("pagetier%u_gc", WQ_MEM_RECLAIM | WQ_UNBOUND, 1, t->id);
	t->rt_wq = alloc_workqueue("pagetier%u_rt", WQ_MEM_RECLAIM, 1, t->id);
	if (!t->wq || !t->gc_wq || !t->rt_wq)
		return -ENOMEM;
	return 0;
}

static struct gendisk *pt_tier_alloc_disk(struct pt_tier *t)
{
	struct block_device *bdev = t->backing.bdev;
	struct pt_queue_props props = {
		.block_size	= PT_SLOT_SIZE,
		/* Clones carry the caller's buffers down: inherit the stricter alignment. */
		.dma_alignment	= max_t(unsigned int, SECTOR_SIZE - 1, bdev_dma_alignment(bdev)),
		/*
		 * Flushes and FUA pass through, so advertise what the backing device has;
		 * a write buffer is a volatile cache of our own, emptied by a flush.
		 */
		.write_cache	= t->wb_max || bdev_write_cache(bdev),
		.fua		= t->wb_max || bdev_fua(bdev),
	};
	struct gendisk *disk;

	disk = pt_alloc_disk(&props);
	if (IS_ERR(disk))
		return disk;
	/* major 0, minors 0: the dev_t comes from the extended (259) range. */
	disk->fops = &pt_fops;
	disk->private_data = t;
	disk->flags |= GENHD_FL_NO_PART;
	snprintf(disk->disk_name, DISK_NAME_LEN, PAGETIER_DISK_NAME "%u", t->id);
	set_capacity(disk, t->nr_slots << PT_SECTORS_PER_SLOT_SHIFT);
	return disk;
}

static struct pt_tier *pt_tier_new(const char *path)
{
	struct pt_tier *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return NULL;
	t->map_ops = &pt_tier_map_ops;
	t->io_ops = &pt_tier_io_ops;
	spin_lock_init(&t->lock);
	t->demand_last = jiffies - 10 * HZ;	/* no demand read yet */
	atomic_set(&t->inflight, 0);
	atomic_set(&t->users, 0);
	init_waitqueue_head(&t->space_wq);
	init_waitqueue_head(&t->gate_wq);
	init_waitqueue_head(&t->pf_wq);
	init_waitqueue_head(&t->wb_flush_wq);
	INIT_DELAYED_WORK(&t->wb_work, pt_wb_work);
	INIT_WORK(&t->rd_work, pt_rd_work);
	INIT_WORK(&t->rt_work, pt_rt_work);
	INIT_WORK(&t->pf_work, pt_pf_work);
	INIT_WORK(&t->gc_work, pt_gc_work);
	INIT_DELAYED_WORK(&t->tick_work, pt_tick_work);
	INIT_LIST_HEAD(&t->free_list);
	INIT_LIST_HEAD(&t->open_lru);
	INIT_LIST_HEAD(&t->stage_lru);
	INIT_LIST_HEAD(&t->stage_free);
	INIT_LIST_HEAD(&t->page_pool);
	INIT_LIST_HEAD(&t->pf_planned);
	INIT_LIST_HEAD(&t->pf_done);
	bio_list_init(&t->rd_retry);
	bio_list_init(&t->wait_write);
	bio_list_init(&t->rd_failed);
	strscpy(t->backing_path, path, sizeof(t->backing_path));
	return t;
}

/**
 * pt_tier_create() - create /dev/pagetierN over a backing block device
 * @req: the validated request; on success tier_id, capacity_bytes and backing_bytes
 *       are filled in
 *
 * Context: process context, may sleep.
 * Return: 0, or a negative errno: the open error of the backing path (-ENOENT, -EBUSY
 * when it is mounted, swapped on or under another tier, -ENOTBLK), -EINVAL for a device
 * that cannot back a tier, -ENOSPC when all tier ids are used, -ENOMEM.
 */
int pt_tier_create(struct pagetier_tier_create *req)
{
	struct pt_tier *t;
	int id, ret;

	t = pt_tier_new(req->backing_path);
	if (!t)
		return -ENOMEM;

	/* The tier is the holder, so a second tier over the same device is refused. */
	ret = pt_backing_open(&t->backing, t->backing_path, t);
	if (ret)
		goto err_free;
	ret = pt_tier_layout(t, t->backing.bdev);
	if (ret)
		goto err_close;
	ret = pt_map_alloc(t, max_cgroups);
	if (!ret)
		ret = pt_stage_alloc(t, READ_ONCE(staging_mib) << (20 - PAGE_SHIFT));
	if (!ret)
		ret = pt_wb_alloc(t, min(READ_ONCE(write_buffer_mib), 1024U) << (20 - PAGE_SHIFT));
	if (!ret)
		ret = pt_tier_alloc_gc(t);
	if (ret)
		goto err_close;

	mutex_lock(&pt_tiers_lock);
	/* Reserve the id, but publish the tier only once it works. */
	id = idr_alloc(&pt_tiers, NULL, 0, PT_MAX_TIERS, GFP_KERNEL);
	if (id < 0) {
		ret = id;
		goto err_unlock;
	}
	t->id = id;
	ret = pt_tier_alloc_io(t);
	if (ret)
		goto err_idr;
	t->disk = pt_tier_alloc_disk(t);
	if (IS_ERR(t->disk)) {
		ret = PTR_ERR(t->disk);
		goto err_idr;
	}
	ret = device_add_disk(NULL, t->disk, pt_disk_groups);
	if (ret)
		goto err_put_disk;
	/* Shows the stacking in lsblk and /sys/block/<backing>/holders. */
	ret = bd_link_disk_holder(t->backing.bdev, t->disk);
	if (ret)
		goto err_del_disk;
	idr_replace(&pt_tiers, t, id);
	mutex_unlock(&pt_tiers_lock);

	req->tier_id = id;
	req->capacity_bytes = t->nr_slots << PT_SLOT_SHIFT;
	req->backing_bytes = bdev_nr_bytes(t->backing.bdev);
	pr_info("%s: tier over %s, %llu MiB in %u segments of %u KiB\n", t->disk->disk_name,
		t->backing_path, t->nr_slots >> (20 - PT_SLOT_SHIFT), t->nr_segs,
		t->seg_blocks << (PT_SLOT_SHIFT - 10));
	return 0;

err_del_disk:
	del_gendisk(t->disk);
err_put_disk:
	put_disk(t->disk);
err_idr:
	idr_remove(&pt_tiers, id);
err_unlock:
	mutex_unlock(&pt_tiers_lock);
err_close:
	pt_backing_close(&t->backing);
err_free:
	pt_tier_free(t);
	return ret;
}

/* Marks @t as going away unless its block device is open. */
static int pt_tier_claim(struct pt_tier *t)
{
	int ret = 0;

	mutex_lock(&t->disk->open_mutex);
	if (disk_openers(t->disk))
		ret = -EBUSY;
	else
		t->claimed = true;
	mutex_unlock(&t->disk->open_mutex);
	return ret;
}

/* Removes a claimed tier; pt_tiers_lock is held, so its name is not reused meanwhile. */
static void pt_tier_teardown(struct pt_tier *t)
{
	struct bio_list w;

	lockdep_assert_held(&pt_tiers_lock);
	idr_remove(&pt_tiers, t->id);
	bd_unlink_disk_holder(t->backing.bdev, t->disk);
	del_gendisk(t->disk);

	/* No more I/O from above; stop the background work. */
	bio_list_init(&w);
	spin_lock_irq(&t->lock);
	t->dying = true;
	pt_pf_cancel_all(t, &w);
	/* Nothing reads a tier being destroyed; should a waiter exist, it reads directly. */
	bio_list_merge(&t->rd_retry, &w);
	if (!bio_list_empty(&t->rd_retry))
		queue_work(t->wq, &t->rd_work);
	spin_unlock_irq(&t->lock);
	wake_up_all(&t->space_wq);
	wake_up_all(&t->pf_wq);
	wake_up_all(&t->wb_flush_wq);
	cancel_work_sync(&t->gc_work);
	cancel_delayed_work_sync(&t->wb_work);
	wait_var_event(&t->users, !atomic_read(&t->users));
	/*
	 * del_gendisk() waits for submitters only: clones, prefetch and GC bios may still
	 * be in flight, and their completion uses the tier.
	 */
	wait_var_event(&t->inflight, !atomic_read(&t->inflight));
	flush_workqueue(t->rt_wq);
	flush_workqueue(t->wq);
	cancel_delayed_work_sync(&t->tick_work);
	/* A write-back completion may have queued it again: what is buffered is dropped. */
	cancel_delayed_work_sync(&t->wb_work);
	put_disk(t->disk);
	pt_backing_close(&t->backing);
	pr_info("%s%u: removed\n", PAGETIER_DISK_NAME, t->id);
	pt_tier_free(t);
}

/**
 * pt_tier_destroy() - remove a tier that nobody has open
 * @tier_id: the id TIER_CREATE returned
 *
 * Context: process context, may sleep.
 * Return: 0, -ENOENT for an unknown id, -EBUSY while the tier's block device is open
 * (swapon, a mount, any open file descriptor).
 */
int pt_tier_destroy(u32 tier_id)
{
	struct pt_tier *t;
	int ret;

	mutex_lock(&pt_tiers_lock);
	t = idr_find(&pt_tiers, tier_id);
	if (!t) {
		ret = -ENOENT;
		goto out;
	}
	ret = pt_tier_claim(t);
	if (!ret)
		pt_tier_teardown(t);
out:
	mutex_unlock(&pt_tiers_lock);
	return ret;
}

/**
 * pt_tier_destroy_all() - remove every tier, at module exit
 *
 * The module cannot be unloaded while a tier is open (pt_fops.owner), so every tier is
 * idle here.
 */
void pt_tier_destroy_all(void)
{
	struct pt_tier *t;
	int id;

	mutex_lock(&pt_tiers_lock);
	idr_for_each_entry(&pt_tiers, t, id) {
		if (WARN_ON(pt_tier_claim(t)))
			continue;
		pt_tier_teardown(t);
	}
	mutex_unlock(&pt_tiers_lock);
	idr_destroy(&pt_tiers);
}

/*
 * A cgroup's entry of PAGETIER_IOC_CGROUP_STATS: its counters, as kept, and its id and
 * segment count, which the map keeps apart.
 */
static void pt_cg_fill(const struct pt_cgroup *c, struct pagetier_cgroup_stat *o)
{
	*o = c->st;
	o->cgroup_id = c->id;
	o->segments = c->nr_segs;
}

/**
 * pt_tier_cgroup_stats() - snapshot the per-cgroup counters of a tier
 * @tier_id: the tier
 * @stats: set to a kvmalloc'ed array of up to @max entries (the caller kvfree()s it),
 *         or NULL when @max is 0
 * @max: entries the caller wants at most
 * @count: set to the number of cgroups the tier has, which may exceed @max
 *
 * Context: process context, may sleep.
 * Return: the number of entries in *@stats, or -ENOENT, -ENOMEM.
 */
int pt_tier_cgroup_stats(u32 tier_id, struct pagetier_cgroup_stat **stats, u32 max,
			 u32 *count)
{
	struct pagetier_cgroup_stat *out = NULL;
	struct pt_tier *t;
	u32 i, n = 0, total = 0;
	int ret;

	mutex_lock(&pt_tiers_lock);
	t = idr_find(&pt_tiers, tier_id);
	if (!t) {
		ret = -ENOENT;
		goto out;
	}
	max = min(max, t->nr_cg);
	if (max) {
		out = kvcalloc(max, sizeof(*out), GFP_KERNEL);
		if (!out) {
			ret = -ENOMEM;
			goto out;
		}
	}
	spin_lock_irq(&t->lock);
	for (i = PT_CG_UNATTRIBUTED; i < t->cg_used; i++) {
		if (!t->cg[i].in_use)
			continue;
		total++;
		if (n == max)
			continue;
		pt_cg_fill(&t->cg[i], &out[n++]);
	}
	spin_unlock_irq(&t->lock);
	*stats = out;
	*count = total;
	ret = n;
out:
	mutex_unlock(&pt_tiers_lock);
	return ret;
}

/**
 * pt_tier_prefetch() - start reading a cgroup's pages into the staging cache
 * @req: the validated PAGETIER_IOC_PREFETCH request; planned_bytes and staged_bytes
 *       are filled in
 *
 * Context: process context, may sleep (with PAGETIER_PREFETCH_WAIT, up to 60 s).
 * Return: 0, -ENOENT for an unknown tier or a cgroup that never had pages on it,
 * -EINTR if a signal ended the wait.
 */
int pt_tier_prefetch(struct pagetier_prefetch *req)
{
	u64 budget = req->budget_bytes ? DIV_ROUND_UP_ULL(req->budget_bytes, PT_SLOT_SIZE) :
				       U64_MAX;
	u64 planned = 0, staged = 0;
	struct pt_tier *t;
	int ret = 0;
	u16 idx;

	mutex_lock(&pt_tiers_lock);
	t = idr_find(&pt_tiers, req->tier_id);
	if (t)
		atomic_inc(&t->users);
	mutex_unlock(&pt_tiers_lock);
	if (!t)
		return -ENOENT;

	spin_lock_irq(&t->lock);
	idx = pt_cg_find(t, req->cgroup_id);
	if (idx && t->cg[idx].in_use)
		planned = pt_pf_plan(t, idx, budget,
				     req->flags & PAGETIER_PREFETCH_NEWEST);
	else
		ret = -ENOENT;
	spin_unlock_irq(&t->lock);
	if (ret)
		goto out;
	queue_work(t->wq, &t->pf_work);
	if ((req->flags & PAGETIER_PREFETCH_WAIT) &&
	    wait_event_interruptible_timeout(t->pf_wq,
					     pt_pf_settled(t) || READ_ONCE(t->dying),
					     60 * HZ) < 0)
		ret = -EINTR;
	spin_lock_irq(&t->lock);
	if (t->cg[idx].id == req->cgroup_id)
		staged = t->cg[idx].st.staged_pages;
	spin_unlock_irq(&t->lock);
	req->planned_bytes = planned << PT_SLOT_SHIFT;
	req->staged_bytes = staged << PT_SLOT_SHIFT;
out:
	if (atomic_dec_and_test(&t->users))
		wake_up_var(&t->users);
	return ret;
}
