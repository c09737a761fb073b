// SPDX-License-Identifier: GPL-2.0
/*
 * tier.c - the pagetier tier block device (/dev/pagetierN).
 *
 * A tier is a bio-based block device stacked on an exclusively opened backing device
 * (an NVMe namespace in production). The kernel swaps to it. This first version maps
 * every 4 KiB slot to the same offset on the backing device; what it adds over a plain
 * passthrough is attribution: every slot remembers the memory cgroup of the page last
 * written to it, so the daemon can see how much of each container lives on the tier.
 *
 * Attribution state, per tier, all under tier->lock:
 *  - owner[slot]: a u16 index into cg[] (0 = the slot holds nothing);
 *  - cg[]: a table of max_cgroups cgroups allocated when the tier is created, indexed
 *    by owner[] and hashed by cgroup id. cg[1] is the unattributed "cgroup" (id 0):
 *    pages without a memcg, reads of empty slots, and pages of cgroups that found the
 *    table full. A cgroup whose pages have all left the tier keeps its entry (and its
 *    counters) until the table is full and a new cgroup needs the entry.
 * The I/O path never allocates: it runs in reclaim, where an allocation could recurse
 * into the swap device it is serving.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/cgroup.h>
#include <linux/hashtable.h>
#include <linux/idr.h>
#include <linux/memcontrol.h>
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

#include "compat.h"
#include "tier.h"

static unsigned int max_cgroups = CONFIG_PAGETIER_MAX_CGROUPS;
module_param(max_cgroups, uint, 0444);
MODULE_PARM_DESC(max_cgroups, "cgroups tracked per tier, 1-65534 (default "
		 __stringify(CONFIG_PAGETIER_MAX_CGROUPS) "); more count as unattributed");

static unsigned long max_capacity_mib;
module_param(max_capacity_mib, ulong, 0644);
MODULE_PARM_DESC(max_capacity_mib,
		 "cap on a new tier's capacity in MiB, 0 = the whole backing device; the slot map costs 2 bytes per 4 KiB");

/* cg[0] is never used, so that owner[slot] == 0 means "empty". */
#define PT_CG_UNATTRIBUTED	1
#define PT_CG_FIRST		2
#define PT_CG_ENTRIES_MAX	(U16_MAX + 1)	/* owner[] is a u16 */
#define PT_CG_HASH_BITS		8

/* Slots a discard clears per lock hold, to bound the time interrupts are off. */
#define PT_DISCARD_BATCH	1024

struct pt_cgroup {
	struct hlist_node node;		/* in pt_tier.cg_hash while it has an id */
	u64 id;
	u64 pages_stored;
	u64 bytes_written;
	u64 bytes_read;
	u64 write_ios;
	u64 read_ios;
	bool in_use;			/* has or had pages here: reported */
};

struct pt_tier {
	u32 id;
	struct gendisk *disk;
	struct pt_backing backing;
	char backing_path[PAGETIER_PATH_MAX];
	u64 nr_slots;
	struct bio_set bs;		/* clones to the backing device */
	atomic_t inflight;		/* clones not completed yet */
	bool claimed;			/* being destroyed; under disk->open_mutex */

	spinlock_t lock;		/* everything below; taken from bio completion */
	u16 *owner;			/* [nr_slots] index into cg[], 0 = empty */
	struct pt_cgroup *cg;		/* [nr_cg] */
	u32 nr_cg;
	u32 cg_used;			/* cg[PT_CG_FIRST..cg_used) have been handed out */
	u32 cg_empty;			/* handed-out entries with no pages: reusable */
	DECLARE_HASHTABLE(cg_hash, PT_CG_HASH_BITS);
	u64 pages_stored;
	u64 bytes_written;
	u64 bytes_read;
	u64 write_ios;
	u64 read_ios;
	u64 discard_pages;
	u64 cgroup_overflows;		/* pages attributed to id 0 because cg[] was full */
	u64 read_errors;
	u64 write_errors;
};

/* Tiers by id; the mutex also serializes create and destroy. */
static DEFINE_IDR(pt_tiers);
static DEFINE_MUTEX(pt_tiers_lock);

/* ---- cgroup table: pure bookkeeping, called with tier->lock held ---- */

static u16 pt_cg_get(struct pt_tier *t, u64 id)
{
	struct pt_cgroup *c;
	u32 i;

	lockdep_assert_held(&t->lock);
	if (!id)
		return PT_CG_UNATTRIBUTED;
	hash_for_each_possible(t->cg_hash, c, node, id)
		if (c->id == id)
			return c - t->cg;

	if (t->cg_used < t->nr_cg) {
		i = t->cg_used++;
		t->cg_empty++;
	} else if (t->cg_empty) {
		/* Full: reuse the entry of a cgroup that has nothing left here. */
		for (i = PT_CG_FIRST; i < t->nr_cg; i++)
			if (!t->cg[i].pages_stored)
				break;
		if (WARN_ON_ONCE(i == t->nr_cg))
			return PT_CG_UNATTRIBUTED;
		hash_del(&t->cg[i].node);
	} else {
		return PT_CG_UNATTRIBUTED;
	}
	c = &t->cg[i];
	memset(c, 0, sizeof(*c));
	c->id = id;
	c->in_use = true;
	hash_add(t->cg_hash, &c->node, id);
	return i;
}

static void pt_cg_add_page(struct pt_tier *t, u16 idx)
{
	if (!t->cg[idx].pages_stored++ && idx >= PT_CG_FIRST)
		t->cg_empty--;
}

static void pt_cg_sub_page(struct pt_tier *t, u16 idx)
{
	if (!--t->cg[idx].pages_stored && idx >= PT_CG_FIRST)
		t->cg_empty++;
}

/* Moves @slot to cgroup index @idx (0 = empty), keeping every pages_stored exact. */
static void pt_slot_set(struct pt_tier *t, u64 slot, u16 idx)
{
	u16 old = t->owner[slot];

	if (old == idx)
		return;
	if (old)
		pt_cg_sub_page(t, old);
	else
		t->pages_stored++;
	if (idx)
		pt_cg_add_page(t, idx);
	else
		t->pages_stored--;
	t->owner[slot] = idx;
}

/* Empties the slots in [first, end), dropping the lock every batch. */
static void pt_slots_clear(struct pt_tier *t, u64 first, u64 end)
{
	unsigned long flags;
	u64 batch_end;

	while (first < end) {
		batch_end = min(end, first + PT_DISCARD_BATCH);
		spin_lock_irqsave(&t->lock, flags);
		for (; first < batch_end; first++)
			pt_slot_set(t, first, 0);
		spin_unlock_irqrestore(&t->lock, flags);
	}
}

/* ---- I/O path ---- */

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

/*
 * Attributes every slot @bio writes to the memcg of the page that carries the slot's
 * first byte. Done at submission, while the pages are known to be charged; a write that
 * then fails empties its slots again (pt_clone_endio()).
 */
static void pt_account_write(struct pt_tier *t, struct bio *bio)
{
	u64 pos = (u64)bio->bi_iter.bi_sector << SECTOR_SHIFT;
	u64 next = pos;			/* first byte of the next slot to attribute */
	struct page *cached_page = NULL;
	u16 idx = PT_CG_UNATTRIBUTED;
	bool overflow = false;
	struct bvec_iter iter;
	unsigned long flags;
	struct bio_vec bv;
	u16 run = 0;
	u64 slot, id;

	spin_lock_irqsave(&t->lock, flags);
	rcu_read_lock();
	/* bio_for_each_segment() yields single-page segments. */
	bio_for_each_segment(bv, bio, iter) {
		while (next < pos + bv.bv_len) {
			slot = next >> PT_SLOT_SHIFT;
			if (unlikely(slot >= t->nr_slots))
				break;
			/* A swapped folio is many slots of one memcg: look it up once. */
			if (bv.bv_page != cached_page) {
				cached_page = bv.bv_page;
				id = pt_page_cgroup_id(bv.bv_page);
				idx = pt_cg_get(t, id);
				overflow = id && idx == PT_CG_UNATTRIBUTED;
				t->cg[idx].in_use = true;
			}
			if (unlikely(overflow))
				t->cgroup_overflows++;
			pt_slot_set(t, slot, idx);
			t->cg[idx].bytes_written += PT_SLOT_SIZE;
			if (idx != run) {
				t->cg[idx].write_ios++;
				run = idx;
			}
			next = (slot + 1) << PT_SLOT_SHIFT;
		}
		pos += bv.bv_len;
	}
	rcu_read_unlock();
	t->bytes_written += bio->bi_iter.bi_size;
	t->write_ios++;
	spin_unlock_irqrestore(&t->lock, flags);
}

/* Charges a read to the cgroups owning its slots (empty slots: unattributed). */
static void pt_account_read(struct pt_tier *t, struct bio *bio)
{
	u64 slot = bio->bi_iter.bi_sector >> PT_SECTORS_PER_SLOT_SHIFT;
	u64 end = DIV_ROUND_UP_ULL(bio_end_sector(bio), 1U << PT_SECTORS_PER_SLOT_SHIFT);
	unsigned long flags;
	u16 idx, run = 0;

	end = min(end, t->nr_slots);
	spin_lock_irqsave(&t->lock, flags);
	for (; slot < end; slot++) {
		idx = t->owner[slot] ?: PT_CG_UNATTRIBUTED;
		t->cg[idx].in_use = true;
		t->cg[idx].bytes_read += PT_SLOT_SIZE;
		if (idx != run) {
			t->cg[idx].read_ios++;
			run = idx;
		}
	}
	t->bytes_read += bio->bi_iter.bi_size;
	t->read_ios++;
	spin_unlock_irqrestore(&t->lock, flags);
}

/*
 * A discard frees swap slots: the data is dead, so forget the owners and complete it
 * here. Passing it down would only cost the backing device work that the next write of
 * the slot makes moot (and a later log-structured layout remaps it anyway). Only whole
 * slots are cleared; the block layer aligns discards to the 4 KiB logical block.
 */
static void pt_discard(struct pt_tier *t, struct bio *bio)
{
	u64 first = DIV_ROUND_UP_ULL(bio->bi_iter.bi_sector, 1U << PT_SECTORS_PER_SLOT_SHIFT);
	u64 end = bio_end_sector(bio) >> PT_SECTORS_PER_SLOT_SHIFT;
	unsigned long flags;

	end = min(end, t->nr_slots);
	if (first >= end)
		return;
	pt_slots_clear(t, first, end);
	spin_lock_irqsave(&t->lock, flags);
	t->discard_pages += end - first;
	spin_unlock_irqrestore(&t->lock, flags);
}

static void pt_clone_endio(struct bio *clone)
{
	struct bio *orig = clone->bi_private;
	struct pt_tier *t = orig->bi_bdev->bd_disk->private_data;
	blk_status_t status = clone->bi_status;
	unsigned long flags;

	if (unlikely(status)) {
		bool write = op_is_write(bio_op(orig));

		spin_lock_irqsave(&t->lock, flags);
		if (write)
			t->write_errors++;
		else
			t->read_errors++;
		spin_unlock_irqrestore(&t->lock, flags);
		/*
		 * The slots of a failed write hold nothing valid. Swap keeps the page in
		 * memory (it sees the error below) and frees the swap slot.
		 */
		if (bio_op(orig) == REQ_OP_WRITE)
			pt_slots_clear(t, orig->bi_iter.bi_sector >> PT_SECTORS_PER_SLOT_SHIFT,
				       min(t->nr_slots,
					   DIV_ROUND_UP_ULL(bio_end_sector(orig),
							    1U << PT_SECTORS_PER_SLOT_SHIFT)));
		orig->bi_status = status;
	}
	bio_put(clone);
	bio_endio(orig);
	/* Last: pt_tier_teardown() frees the tier once this reaches zero. */
	if (atomic_dec_and_test(&t->inflight))
		wake_up_var(&t->inflight);
}

/* The backing sector of tier sector @sector: the identity, in this version. */
static sector_t pt_map_sector(struct pt_tier *t, sector_t sector)
{
	return sector;
}

static void pt_submit_bio(struct bio *bio)
{
	struct pt_tier *t = bio->bi_bdev->bd_disk->private_data;
	struct bio *clone;

	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
	case REQ_OP_FLUSH:
		break;
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

	/*
	 * One clone per bio, from a per-tier mempool: with GFP_NOIO this waits for a clone
	 * in flight instead of failing, and since each call allocates only one, that clone
	 * is never one queued behind us on current->bio_list.
	 */
	clone = bio_alloc_clone(t->backing.bdev, bio, GFP_NOIO, &t->bs);
	if (unlikely(!clone)) {
		bio->bi_status = BLK_STS_RESOURCE;
		bio_endio(bio);
		return;
	}
	if (bio_sectors(bio)) {
		/* Empty bios are flushes: nothing to attribute. */
		if (bio_op(bio) == REQ_OP_WRITE)
			pt_account_write(t, bio);
		else if (bio_op(bio) == REQ_OP_READ)
			pt_account_read(t, bio);
	}
	clone->bi_iter.bi_sector = pt_map_sector(t, bio->bi_iter.bi_sector);
	clone->bi_end_io = pt_clone_endio;
	clone->bi_private = bio;
	atomic_inc(&t->inflight);
	submit_bio_noacct(clone);
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
int pt_disk_open(struct gendisk *disk)
{
	struct pt_tier *t = disk->private_data;

	return t->claimed ? -ENXIO : 0;
}

static const struct block_device_operations pt_fops = {
	/* An open tier pins the module: rmmod is refused while swap uses it. */
	.owner		= THIS_MODULE,
	.submit_bio	= pt_submit_bio,
	.open		= pt_bdops_open,
};

/* ---- sysfs: /sys/block/pagetierN/{tier_stat,backing_dev} ---- */

static struct pt_tier *pt_dev_tier(struct device *dev)
{
	return dev_to_disk(dev)->private_data;
}

/*
 * tier_stat: one line of fixed columns, the zram mm_stat/io_stat convention; new
 * columns are only ever appended.
 *  1 pages_stored      4 KiB slots holding a page
 *  2 bytes_written     bytes written to the tier
 *  3 bytes_read        bytes read from the tier
 *  4 write_ios         write bios
 *  5 read_ios          read bios
 *  6 discard_pages     4 KiB slots discarded (freed by swap)
 *  7 read_errors       reads the backing device failed
 *  8 write_errors      writes the backing device failed
 *  9 cgroups           cgroups with counters (ioctl CGROUP_STATS entries)
 * 10 cgroup_overflows  pages counted as unattributed because the cgroup table was full
 */
static ssize_t tier_stat_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct pt_tier *t = pt_dev_tier(dev);
	u64 v[10];
	u32 i, cgroups = 0;

	spin_lock_irq(&t->lock);
	for (i = PT_CG_UNATTRIBUTED; i < t->cg_used; i++)
		cgroups += t->cg[i].in_use;
	v[0] = t->pages_stored;
	v[1] = t->bytes_written;
	v[2] = t->bytes_read;
	v[3] = t->write_ios;
	v[4] = t->read_ios;
	v[5] = t->discard_pages;
	v[6] = t->read_errors;
	v[7] = t->write_errors;
	v[8] = cgroups;
	v[9] = t->cgroup_overflows;
	spin_unlock_irq(&t->lock);

	return sysfs_emit(buf,
			  "%8llu %12llu %12llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu\n",
			  v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
}
static DEVICE_ATTR_RO(tier_stat);

static ssize_t backing_dev_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", pt_dev_tier(dev)->backing_path);
}
static DEVICE_ATTR_RO(backing_dev);

static struct attribute *pt_disk_attrs[] = {
	&dev_attr_tier_stat.attr,
	&dev_attr_backing_dev.attr,
	NULL,
};
ATTRIBUTE_GROUPS(pt_disk);

/* ---- create and destroy ---- */

static void pt_tier_free(struct pt_tier *t)
{
	kvfree(t->owner);
	kvfree(t->cg);
	kfree(t);
}

static int pt_tier_alloc_maps(struct pt_tier *t)
{
	/* Indexed by u16; entry 0 is unused and entry 1 is the unattributed one. */
	t->nr_cg = PT_CG_FIRST + clamp_t(u32, max_cgroups, 1, PT_CG_ENTRIES_MAX - PT_CG_FIRST);
	t->cg_used = PT_CG_FIRST;
	t->cg = kvcalloc(t->nr_cg, sizeof(*t->cg), GFP_KERNEL);
	if (!t->cg)
		return -ENOMEM;
	hash_init(t->cg_hash);

	/* __GFP_NOWARN: a huge device fails here with a message, not a splat. */
	t->owner = kvcalloc(t->nr_slots, sizeof(*t->owner), GFP_KERNEL | __GFP_NOWARN);
	if (!t->owner) {
		pr_err("%s: no memory for the map of %llu slots; set max_capacity_mib\n",
		       t->backing_path, t->nr_slots);
		return -ENOMEM;
	}
	return 0;
}

/* Size of the tier over @bdev in bytes, or 0 if the device cannot back one. */
static u64 pt_tier_capacity(struct pt_tier *t, struct block_device *bdev)
{
	u64 size = round_down(bdev_nr_bytes(bdev), PT_SLOT_SIZE);
	u64 cap = (u64)READ_ONCE(max_capacity_mib) << 20;

	if (bdev_logical_block_size(bdev) > PT_SLOT_SIZE) {
		pr_err("%s: logical block size %u is larger than a page slot (%u)\n",
		       t->backing_path, bdev_logical_block_size(bdev), PT_SLOT_SIZE);
		return 0;
	}
	if (cap && size > cap)
		size = round_down(cap, PT_SLOT_SIZE);
	if (size < PT_MIN_CAPACITY) {
		pr_err("%s: %llu bytes is too small for a tier (at least %llu)\n",
		       t->backing_path, size, PT_MIN_CAPACITY);
		return 0;
	}
	return size;
}

static struct gendisk *pt_tier_alloc_disk(struct pt_tier *t)
{
	struct block_device *bdev = t->backing.bdev;
	struct pt_queue_props props = {
		.block_size	= PT_SLOT_SIZE,
		/* Clones carry the caller's buffers down: inherit the stricter alignment. */
		.dma_alignment	= max_t(unsigned int, SECTOR_SIZE - 1, bdev_dma_alignment(bdev)),
		/* Flushes and FUA pass through, so advertise what the backing device has. */
		.write_cache	= bdev_write_cache(bdev),
		.fua		= bdev_fua(bdev),
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
	u64 capacity;
	int id, ret;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	spin_lock_init(&t->lock);
	atomic_set(&t->inflight, 0);
	strscpy(t->backing_path, req->backing_path, sizeof(t->backing_path));

	/* The tier is the holder, so a second tier over the same device is refused. */
	ret = pt_backing_open(&t->backing, t->backing_path, t);
	if (ret)
		goto err_free;
	capacity = pt_tier_capacity(t, t->backing.bdev);
	if (!capacity) {
		ret = -EINVAL;
		goto err_close;
	}
	t->nr_slots = capacity >> PT_SLOT_SHIFT;
	ret = pt_tier_alloc_maps(t);
	if (ret)
		goto err_close;
	ret = bioset_init(&t->bs, BIO_POOL_SIZE, 0, 0);
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
	req->capacity_bytes = capacity;
	req->backing_bytes = bdev_nr_bytes(t->backing.bdev);
	pr_info("%s: tier over %s, %llu MiB\n", t->disk->disk_name, t->backing_path,
		capacity >> 20);
	return 0;

err_del_disk:
	del_gendisk(t->disk);
err_put_disk:
	put_disk(t->disk);
err_idr:
	idr_remove(&pt_tiers, id);
err_unlock:
	mutex_unlock(&pt_tiers_lock);
	bioset_exit(&t->bs);
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
	lockdep_assert_held(&pt_tiers_lock);
	idr_remove(&pt_tiers, t->id);
	bd_unlink_disk_holder(t->backing.bdev, t->disk);
	del_gendisk(t->disk);
	/*
	 * del_gendisk() waits for submitters only; clones may still be in flight on the
	 * backing device, and their completion uses the tier.
	 */
	wait_var_event(&t->inflight, !atomic_read(&t->inflight));
	put_disk(t->disk);
	bioset_exit(&t->bs);
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
	struct pt_cgroup *c;
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
		c = &t->cg[i];
		if (!c->in_use)
			continue;
		total++;
		if (n == max)
			continue;
		out[n].cgroup_id = c->id;
		out[n].pages_stored = c->pages_stored;
		out[n].bytes_written = c->bytes_written;
		out[n].bytes_read = c->bytes_read;
		out[n].write_ios = c->write_ios;
		out[n].read_ios = c->read_ios;
		n++;
	}
	spin_unlock_irq(&t->lock);
	*stats = out;
	*count = total;
	ret = n;
out:
	mutex_unlock(&pt_tiers_lock);
	return ret;
}
