/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h - the block layer API differences between the kernels pagetier supports:
 * Debian 12's 6.1 and 6.12 lines.
 *
 *  - 6.1 opens a backing device with blkdev_get_by_path() and FMODE_EXCL and releases it
 *    with blkdev_put(); since 6.9 it is bdev_file_open_by_path(), which returns a struct
 *    file that is released with fput() (exclusive whenever a holder is passed).
 *  - 6.1 configures a queue after blk_alloc_disk(node) with the blk_queue_*() setters and
 *    queue flags; since 6.9 blk_alloc_disk() takes a struct queue_limits and since 6.11
 *    the non-rotational, write-cache and FUA properties are feature bits in it (a queue is
 *    non-rotational unless BLK_FEAT_ROTATIONAL is set). blk_alloc_disk() returned NULL on
 *    failure before 6.9 and an ERR_PTR since.
 *  - block_device_operations.open took (struct block_device *, fmode_t) before 6.5 and
 *    takes (struct gendisk *, blk_mode_t) since. The open is the driver's own function,
 *    so tier.c defines it for either prototype, on PT_NEW_BLOCK_API below: this file
 *    declares nothing of the module's.
 *
 * Kernels between 6.5 and 6.10 mix these and are not supported.
 */
#ifndef _PAGETIER_COMPAT_H
#define _PAGETIER_COMPAT_H

#include <linux/blkdev.h>
#include <linux/err.h>
#include <linux/file.h>

/*
 * Detected by feature rather than version, so that distribution backports are handled:
 * BLK_FEAT_ROTATIONAL appeared in 6.11 and BLK_OPEN_READ (blk_mode_t) in 6.5.
 */
#if defined(BLK_FEAT_ROTATIONAL)
#define PT_NEW_BLOCK_API	1
#elif !defined(BLK_OPEN_READ)
#define PT_NEW_BLOCK_API	0
#else
#error "pagetier supports kernels 6.1 to 6.4 and 6.11 or later"
#endif

/* What the tier's queue inherits from its backing device. */
struct pt_queue_props {
	unsigned int block_size;	/* logical = physical = minimum I/O */
	unsigned int dma_alignment;	/* a mask, as in queue_limits */
	bool write_cache;
	bool fua;
};

#if PT_NEW_BLOCK_API

/* An exclusively opened backing device. */
struct pt_backing {
	struct file *file;
	struct block_device *bdev;
};

static inline int pt_backing_open(struct pt_backing *b, const char *path, void *holder)
{
	struct file *file;

	/* A non-NULL holder makes the open exclusive: mounts, swap and other tiers get -EBUSY. */
	file = bdev_file_open_by_path(path, BLK_OPEN_READ | BLK_OPEN_WRITE, holder, NULL);
	if (IS_ERR(file))
		return PTR_ERR(file);
	b->file = file;
	b->bdev = file_bdev(file);
	return 0;
}

static inline void pt_backing_close(struct pt_backing *b)
{
	fput(b->file);
}

static inline struct gendisk *pt_alloc_disk(const struct pt_queue_props *p)
{
	struct queue_limits lim = {
		.logical_block_size	= p->block_size,
		.physical_block_size	= p->block_size,
		.io_min			= p->block_size,
		.io_opt			= p->block_size,
		.dma_alignment		= p->dma_alignment,
		/* Discards are completed in memory, so any size is fine. */
		.max_hw_discard_sectors	= UINT_MAX,
		.discard_granularity	= p->block_size,
	};

	if (p->write_cache)
		lim.features |= BLK_FEAT_WRITE_CACHE;
	if (p->fua)
		lim.features |= BLK_FEAT_FUA;
	return blk_alloc_disk(&lim, NUMA_NO_NODE);
}

#else /* !PT_NEW_BLOCK_API */

#define PT_BACKING_MODE		(FMODE_READ | FMODE_WRITE | FMODE_EXCL)

struct pt_backing {
	struct block_device *bdev;
};

static inline int pt_backing_open(struct pt_backing *b, const char *path, void *holder)
{
	struct block_device *bdev;

	/* FMODE_EXCL with a holder: mounts, swap and other tiers get -EBUSY. */
	bdev = blkdev_get_by_path(path, PT_BACKING_MODE, holder);
	if (IS_ERR(bdev))
		return PTR_ERR(bdev);
	b->bdev = bdev;
	return 0;
}

static inline void pt_backing_close(struct pt_backing *b)
{
	blkdev_put(b->bdev, PT_BACKING_MODE);
}

static inline struct gendisk *pt_alloc_disk(const struct pt_queue_props *p)
{
	struct request_queue *q;
	struct gendisk *disk;

	disk = blk_alloc_disk(NUMA_NO_NODE);
	if (!disk)
		return ERR_PTR(-ENOMEM);
	q = disk->queue;
	blk_queue_logical_block_size(q, p->block_size);
	blk_queue_physical_block_size(q, p->block_size);
	blk_queue_io_min(q, p->block_size);
	blk_queue_io_opt(q, p->block_size);
	blk_queue_dma_alignment(q, p->dma_alignment);
	blk_queue_max_discard_sectors(q, UINT_MAX);
	q->limits.discard_granularity = p->block_size;
	blk_queue_flag_set(QUEUE_FLAG_NONROT, q);
	/* Swap I/O timing is not a useful entropy source. */
	blk_queue_flag_clear(QUEUE_FLAG_ADD_RANDOM, q);
	blk_queue_write_cache(q, p->write_cache, p->fua);
	return disk;
}

#endif /* PT_NEW_BLOCK_API */

#endif /* _PAGETIER_COMPAT_H */
