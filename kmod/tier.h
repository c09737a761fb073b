/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tier.h - the pagetier tier block device, shared by core.c and the tier*.c files.
 *
 * A tier is a bio-based block device over an exclusively opened backing device. Its
 * 4 KiB slots (what swap sees) are placed log-structured on the backing device's 4 KiB
 * blocks: every memory cgroup appends to its own open segment, an in-memory map takes
 * slots to blocks (l2p) and blocks back to slots (p2l), and a garbage collector compacts
 * sparse segments. See kmod/README.md for the design; the locking rules are here.
 *
 * Layers, each using only those below it (tests/kmod/check_layers.py checks it):
 *   tier.c                               block device, sysfs, the tier ioctls
 *   tier_prefetch.c tier_wbuf.c tier_gc.c   staging and prefetch, write buffer,
 *                                        collector (never each other)
 *   tier_gate.c                          admission of background I/O
 *   tier_map.c                           the map: pure bookkeeping
 *   compat.h                             the kernels' API differences
 * Lower layers call back up only through the ops tier.c registers: struct pt_map_ops
 * (the map's) and struct pt_io_ops (the middle layers'). This header holds every
 * layer's types and declarations, one section per file, bottom up.
 *
 * Locking; each lock names its fields where they are declared, and functions that rely
 * on one assert it (lockdep_assert_held()):
 *  - pt_tier.lock, a spinlock taken with interrupts off because bio completions take it
 *    too: everything in struct pt_tier below it (maps, segments, cgroups, staging cache,
 *    prefetch queues, wait lists, counters, and the structs they hold) but what is
 *    marked otherwise there. Nothing sleeps under it and nothing under it allocates
 *    memory. A few of those fields are also read without it, with READ_ONCE(), as hints
 *    that are checked again under it or that only decide when to look again ("lockless
 *    reads" at the field).
 *  - pt_tiers_lock (tier.c), a mutex: the table of tiers (pt_tiers); it also serializes
 *    their creation and destruction.
 *  - the disk's open_mutex: pt_tier.claimed.
 *  - events.c's pt_ev_lock and ring locks: see there.
 * The fields above pt_tier.lock are fixed once the tier is created, have locking of
 * their own (atomics, bio_sets, wait queues, work items), or belong to one work item,
 * as marked.
 */
#ifndef _PAGETIER_TIER_H
#define _PAGETIER_TIER_H

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/hashtable.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "uapi/pagetier.h"

/*
 * Build-time limits. The top-level Kconfig provides them in-tree; kmod/Kbuild sets the
 * same defaults for the out-of-tree build.
 */
#ifndef CONFIG_PAGETIER_MAX_TIERS
#define CONFIG_PAGETIER_MAX_TIERS	16
#endif
#ifndef CONFIG_PAGETIER_MAX_CGROUPS
#define CONFIG_PAGETIER_MAX_CGROUPS	1024
#endif

#define PT_MAX_TIERS		CONFIG_PAGETIER_MAX_TIERS

/* The slot is the unit of attribution: one 4 KiB block, the size of a swapped page. */
#define PT_SLOT_SHIFT		12
#define PT_SLOT_SIZE		SZ_4K	/* == 1 << PT_SLOT_SHIFT */
#define PT_SECTORS_PER_SLOT_SHIFT	(PT_SLOT_SHIFT - SECTOR_SHIFT)

/* mkswap wants at least ten pages; refuse anything that could not hold a swap area. */
#define PT_MIN_CAPACITY		(64ULL << 10)

/* Features the tier adds to PAGETIER_IOC_VERSION. */
#define PT_TIER_FEATURES	(PAGETIER_FEAT_LOG | PAGETIER_FEAT_PREFETCH | \
				 PAGETIER_FEAT_EVENTS | PAGETIER_FEAT_TIER_STATS | \
				 PAGETIER_FEAT_WRITE_BUFFER)

/* ---- the map ---- */

/* "No block" in l2p[], "no slot" in p2l[], "no segment". */
#define PT_NONE			U32_MAX
/* p2l[] entries: the slot, and two flags. */
#define PT_P2L_PENDING		BIT(31)	/* the block's write is in flight */
#define PT_P2L_STAGED		BIT(30)	/* a copy is in the staging cache */
#define PT_P2L_SLOT		(BIT(30) - 1)
#define PT_MAX_SLOTS		PT_P2L_SLOT	/* 4 TiB of swap */
#define PT_MAX_BLOCKS		(U32_MAX - 1)

/* Segments hold 16 to 4096 blocks (64 KiB to 16 MiB); a device has at least 16. */
#define PT_SEG_MIN_SHIFT	4
#define PT_SEG_MAX_SHIFT	12
#define PT_MIN_SEGMENTS		16
/* Free segments only the garbage collector may take. */
#define PT_GC_RESERVE		2

/* Blocks per GC or prefetch bio: one page per bio_vec. */
#define PT_BG_MAX_BLOCKS	BIO_MAX_VECS
/* Staged pages one read piece takes at once. */
#define PT_HIT_MAX		16

enum pt_seg_state {
	PT_SEG_FREE,		/* on the free list */
	PT_SEG_OPEN,		/* a cgroup appends to it */
	PT_SEG_SEALED,		/* full or closed; in a GC bucket unless bad */
	PT_SEG_GC,		/* being collected */
	PT_SEG_RETIRED,		/* bad and empty: never used again */
};

enum pt_seg_pf {
	PT_PF_NONE,
	PT_PF_PLANNED,		/* on pf_planned: prefetch reads it when there is room */
	PT_PF_INFLIGHT,		/* prefetch reads in flight */
};

#define PT_SEG_F_BAD		BIT(0)	/* a write failed in it: retired once empty */
#define PT_SEG_F_GCERR		BIT(1)	/* the collector could not move all of it */

/* A segment of the backing device. Every field is under pt_tier.lock. */
struct pt_seg {
	struct list_head node;		/* free list, or a GC bucket while sealed */
	struct list_head cg_node;	/* owner's segment list, allocation order */
	struct list_head pf_node;	/* in pf_planned while planned */
	struct bio_list waiters;	/* read pieces waiting for its prefetch */
	unsigned long pf_time;		/* jiffies when planned */
	u32 valid;			/* live blocks: written, or being written */
	u32 wp;				/* blocks handed out (the write pointer) */
	u32 inflight;			/* blocks being written (writes, GC copies) */
	u32 readers;			/* reads of its blocks in flight */
	u16 owner;			/* cgroup index, 0 = none */
	u16 pf_reads;			/* prefetch reads in flight */
	u8 state;			/* enum pt_seg_state */
	u8 pf;				/* enum pt_seg_pf */
	u8 flags;			/* PT_SEG_F_* */
};

/* cg[0] is never used, so that a segment owner of 0 means "none". */
#define PT_CG_UNATTRIBUTED	1
#define PT_CG_FIRST		2
#define PT_CG_ENTRIES_MAX	(U16_MAX + 1)	/* owners are u16 */
#define PT_CG_HASH_BITS		8

#define PT_LAT_BUCKETS		PAGETIER_LAT_BUCKETS

/*
 * A cgroup's entry in a tier's table; every field is under pt_tier.lock. Its counters
 * are defined once, in the ABI: @st is the struct PAGETIER_IOC_CGROUP_STATS reports
 * (uapi/pagetier.h), kept as it is copied out, so a new counter is a field there and
 * the code that counts it. st.cgroup_id and st.segments stay 0: the entry's identity
 * and segment count are @id and @nr_segs, which the map keeps (pt_cg_fill() puts them
 * in the copy).
 */
struct pt_cgroup {
	struct hlist_node node;		/* in pt_tier.cg_hash while it has an id */
	struct list_head segs;		/* its segments, oldest first */
	struct list_head open_node;	/* in pt_tier.open_lru while it has an open segment */
	u64 id;
	u32 open_seg;			/* PT_NONE if none */
	u32 nr_segs;
	bool in_use;			/* has or had pages here: reported */
	struct pagetier_cgroup_stat st;
};

/* A page in the staging cache: the prefetched copy of block @pblk. Under pt_tier.lock. */
struct pt_stage {
	struct hlist_node hnode;	/* stage_hash, by pblk */
	struct list_head lru;		/* stage_lru (oldest first) or stage_free */
	struct page *page;
	unsigned long time;		/* jiffies when staged */
	u32 pblk;
};

/*
 * A page of the write buffer (tier_wbuf.c): the data of block @pblk, whose write has
 * completed to its writer but not yet reached the backing device. The block is
 * PT_P2L_PENDING in the map for as long as it is buffered. Every field is under
 * pt_tier.lock; the page's contents are stable from PT_WB_QUEUED until the entry is
 * freed, and a reader that pinned it (@pins) copies it without the lock.
 */
enum pt_wb_state {
	PT_WB_FREE,		/* on wb_free */
	PT_WB_QUEUED,		/* on wb_queued: to be written */
	PT_WB_FLUSHING,		/* in a write-back bio */
	PT_WB_STUCK,		/* its write-back failed and no segment was free to move it */
	PT_WB_GONE,		/* released while a reader copies it: freed by the last */
};

struct pt_wbuf {
	struct hlist_node hnode;	/* wb_hash by pblk, while it holds a block */
	struct list_head all;		/* wb_all (buffer order) while it holds a block */
	struct list_head node;		/* wb_queued while QUEUED, wb_free while FREE */
	struct page *page;
	u64 seq;			/* buffer order: wb_seq when buffered */
	u32 pblk;
	u16 pins;			/* readers copying its page outside the lock */
	u8 state;			/* enum pt_wb_state */
};

/*
 * One bio of the collector: blocks [pblk, pblk + nr), victim blocks from @first on.
 * gc_work's alone; the bio's completion sets @status before gc_work's wait ends.
 */
struct pt_gc_run {
	u32 pblk;
	u32 nr;
	u32 first;
	blk_status_t status;
};

/*
 * A prefetch read being prepared: blocks [start, start + nr), those in @valid staged.
 * pf_work's alone (pt_tier.pf_chunks).
 */
struct pt_pfchunk {
	u32 start;
	u32 nr;
	DECLARE_BITMAP(valid, PT_BG_MAX_BLOCKS);
};

/* A tier's counters: under pt_tier.lock. The sysfs columns are tables in tier.c. */
struct pt_stats {
	/* tier_stat */
	u64 bytes_written;
	u64 bytes_read;
	u64 write_ios;
	u64 read_ios;
	u64 discard_pages;
	u64 cgroup_overflows;
	u64 cgroup_evictions;		/* entries taken from a cgroup with pages left */
	u64 cgroup_evicted_pages;	/* ... its pages, unattributed since */
	u64 read_errors;
	u64 write_errors;
	/* read_stat */
	u64 demand_reads;
	u64 demand_read_pages;
	u64 demand_read_ns;
	u64 staging_hits;
	u64 staging_misses;
	u64 zero_pages;
	u64 prefetch_bytes;
	u64 prefetch_ios;
	u64 prefetch_errors;
	u64 prefetch_preempted;
	u64 staging_evicted;
	u64 staging_expired;
	u64 staging_dropped;
	u64 lat_hist[PT_LAT_BUCKETS];
	/* seg_stat */
	u64 gc_victims;
	u64 gc_moves;
	u64 gc_errors;
	u64 nospace_errors;
	/* io_stat: what the tier sent to the backing device */
	u64 wb_bytes;
	u64 wb_bios;
	u64 demand_bytes;
	u64 demand_bios;
	u64 gc_read_bytes;
	u64 gc_write_bytes;
	u64 gc_bios;
	/* wb_stat: the write buffer */
	u64 wb_buffered;		/* pages whose write completed into the buffer */
	u64 wb_direct;			/* pages written through (buffer full, off, FUA, flush) */
	u64 wb_full;			/* write pieces that found the buffer full */
	u64 wb_flush_bios;		/* write-back bios from the buffer */
	u64 wb_flush_bytes;
	u64 wb_dropped;			/* buffered pages that died before their write-back */
	u64 wb_errors;			/* write-back bios that failed */
	u64 wb_moved;			/* pages moved elsewhere after a failed write-back */
	u64 wb_flush_waits;		/* flushes (REQ_PREFLUSH) that waited for the buffer */
	u64 wb_hits;			/* pages demand reads found in the buffer */
};

struct pt_map_ops;
struct pt_io_ops;

struct pt_tier {
	/* fixed once created */
	u32 id;
	const struct pt_map_ops *map_ops;	/* the map's upcalls, set by tier.c */
	const struct pt_io_ops *io_ops;		/* the middle layers' upcalls, set by tier.c */
	struct gendisk *disk;
	struct pt_backing backing;
	char backing_path[PAGETIER_PATH_MAX];
	u64 nr_slots;			/* capacity offered to swap */

	/* geometry, fixed at creation */
	u32 seg_shift;			/* blocks per segment = 1 << seg_shift */
	u32 seg_blocks;
	u32 nr_segs;
	u32 nr_blocks;			/* nr_segs << seg_shift */
	u32 open_max;			/* open segments at most */
	u32 gc_low;			/* collect below this many free segments ... */
	u32 gc_high;			/* ... until this many */
	u32 stage_max;			/* staging cache bound, pages */

	/* their own locking */
	struct bio_set top_bs;		/* one clone per read: its context */
	struct bio_set io_bs;		/* clones and read pieces sent from ->submit_bio */
	struct bio_set rd_bs;		/* read pieces sent from rd_work and pf_work */
	struct bio_set rt_bs;		/* one-block reads of rt_work (retries) */
	struct bio_set bg_bs;		/* GC and prefetch bios, with their own pages */
	struct bio_set wb_bs;		/* write-back bios of the write buffer */
	atomic_t inflight;		/* bios of ours not completed yet */
	atomic_t users;			/* ioctls working on the tier outside pt_tiers_lock */
	bool claimed;			/* being destroyed; under disk->open_mutex */
	/* background work must stop; written under @lock, lockless reads */
	bool dying;

	struct workqueue_struct *wq;	/* read continuations, prefetch */
	struct workqueue_struct *gc_wq;
	struct workqueue_struct *rt_wq;	/* retries: never queued behind what waits for them */
	struct work_struct rd_work;
	struct work_struct rt_work;	/* reads again the pieces on rd_failed */
	struct work_struct pf_work;
	struct work_struct gc_work;
	struct delayed_work tick_work;	/* staging and plan expiry */
	struct delayed_work wb_work;	/* write-back of the write buffer */
	wait_queue_head_t wb_flush_wq;	/* flushes waiting for the buffer's write-back */
	wait_queue_head_t space_wq;	/* writers waiting for a free segment */
	wait_queue_head_t gate_wq;	/* background I/O waiting for its turn */
	wait_queue_head_t pf_wq;	/* PREFETCH callers with the WAIT flag */

	/*
	 * gc_work's alone, not under @lock: one work item never runs twice at once (and
	 * gc_wq runs one at a time). gc_valid and gc_slot are filled under @lock because
	 * what they are read from is.
	 */
	struct page **gc_pages;		/* [seg_blocks], the collector's buffer */
	unsigned long *gc_valid;	/* [seg_blocks] bits */
	u32 *gc_slot;			/* [seg_blocks] */
	struct pt_gc_run *gc_runs;	/* [seg_blocks] */
	/*
	 * pf_work's alone, not under @lock, likewise: pt_pf_chunks() fills it (under @lock,
	 * for the map it reads) and pt_pf_submit() reads it, both in pf_work.
	 */
	struct pt_pfchunk *pf_chunks;	/* one per 1 MiB of segment */

	/*
	 * Everything below, and what it points to, but what is marked otherwise; the
	 * pointers to arrays and their sizes are set at creation.
	 */
	spinlock_t lock;

	u32 *l2p;			/* [nr_slots] slot -> block, PT_NONE */
	u32 *p2l;			/* [nr_blocks] block -> slot | PT_P2L_*, PT_NONE */
	struct pt_seg *segs;		/* [nr_segs] */
	struct list_head *buckets;	/* [seg_blocks + 1] sealed segments by valid count */
	struct list_head free_list;	/* free segments, FIFO */
	struct list_head open_lru;	/* cgroups with an open segment, by last write */
	u32 nr_free;			/* lockless reads */
	u32 nr_open;
	u32 nr_bad;
	u32 space_waiters;		/* writers waiting for a segment; lockless reads */
	bool nospace;			/* the collector found nothing to free; lockless reads */
	bool tick_armed;

	struct pt_cgroup *cg;		/* [nr_cg] */
	u32 nr_cg;
	u32 cg_used;			/* cg[PT_CG_FIRST..cg_used) have been handed out */
	u32 cg_empty;			/* handed-out entries with no pages: reusable */
	u32 cg_cursor;			/* where the next eviction looks from */
	u16 gc_owner;			/* owner of the collector's victim: not evicted */
	DECLARE_HASHTABLE(cg_hash, PT_CG_HASH_BITS);
	u64 pages_stored;

	/* staging cache */
	struct pt_stage *stage_pool;	/* [stage_max] */
	struct hlist_head *stage_hash;
	u32 stage_hash_bits;
	struct list_head stage_lru;
	struct list_head stage_free;
	u32 nr_staged;
	struct list_head page_pool;	/* staging pages kept for reuse, at most stage_max */
	u32 pool_pages;

	/* prefetch */
	struct list_head pf_planned;
	struct list_head pf_done;	/* landed prefetch bios, for pf_work */
	u32 pf_inflight;		/* blocks being read by prefetch */
	unsigned long pf_last;		/* jiffies of the last prefetch read */
	bool pf_stalled;		/* planned work waits for the gate; lockless reads */
	bool pf_full;			/* planned work waits for room in the cache */

	/* reads that wait or continue in rd_work (rd_failed: rt_work) */
	struct bio_list rd_retry;	/* re-resolve */
	struct bio_list wait_write;	/* reads waiting for a write of their slot */
	struct bio_list rd_failed;	/* READ pieces to read again block by block */
	u32 wr_seq;			/* write completions, for wait_write */

	/* the write buffer (tier_wbuf.c); wb_max = 0: none */
	struct pt_wbuf *wb_pool;	/* [wb_max] */
	struct hlist_head *wb_hash;	/* by pblk */
	u32 wb_hash_bits;
	u32 wb_max;			/* fixed once created */
	u32 wb_held;			/* entries holding a block; lockless reads */
	u32 wb_queued_nr;		/* ... of which QUEUED; lockless reads */
	u32 wb_stuck;			/* ... of which STUCK; lockless reads */
	u64 wb_seq;
	struct list_head wb_free;
	struct list_head wb_all;	/* entries holding a block, oldest first */
	struct list_head wb_queued;	/* QUEUED entries, oldest first (moved ones last) */
	bool wb_stalled;		/* write-back waits for the gate; lockless reads */

	/* background I/O admission */
	u32 bg_inflight;		/* blocks of write-back, GC, read-ahead in flight */
	u32 demand_inflight;		/* demand read pieces in flight */
	unsigned long demand_last;	/* jiffies of the last demand read sent or done */

	struct pt_stats st;
};

/* Per-bio contexts (bio_set front_pad). */

/*
 * The clone of every read bio: when it completes, the read is over. It is also what
 * waits (for a write or a prefetch of its next slots): waiting never takes a bio.
 */
struct pt_top {
	struct pt_tier *t;
	struct bio *orig;
	u64 start_ns;
	u64 cgroup_id;			/* owner of the first slot */
	u64 slot;
	u32 pages;
	u32 hits;			/* pages served from staging */
	u16 cg;
	bool empty;			/* the first slot held nothing */
	struct bio bio;
};

enum pt_io_kind {
	PT_IO_WRITE,			/* clone of a write, to the backing device */
	PT_IO_FLUSH,			/* empty flush, passed through */
	PT_IO_READ,			/* read piece, to the backing device */
	PT_IO_RETRY,			/* one block of a failed READ piece, read again */
};

struct pt_io {
	struct pt_tier *t;
	struct pt_top *top;		/* read pieces */
	u32 pblk;
	u32 nr;				/* blocks */
	u32 seg;
	u8 kind;			/* enum pt_io_kind */
	bool retried;			/* READ: failed once, read again block by block */
	struct bvec_iter iter;		/* READ: as submitted, for the retry */
	struct bio bio;
};

enum pt_bg_kind { PT_BG_PREFETCH, PT_BG_GC_READ, PT_BG_GC_WRITE, PT_BG_WB };

struct pt_bgio {
	struct pt_tier *t;
	struct list_head node;
	struct completion *done;	/* GC */
	atomic_t *pending;		/* GC */
	u32 pblk;
	u32 nr;
	u32 seg;			/* prefetch: the segment; GC: the index in gc_runs */
	u8 kind;			/* enum pt_bg_kind */
	bool gated;
	blk_status_t status;
	DECLARE_BITMAP(valid, PT_BG_MAX_BLOCKS);	/* prefetch: blocks to stage */
	struct bio bio;
};

/* bio_set front pads come from mempools uninitialized: every context starts here. */
static inline struct pt_io *pt_io_init(struct bio *bio, struct pt_tier *t, u8 kind)
{
	struct pt_io *io = container_of(bio, struct pt_io, bio);

	memset(io, 0, offsetof(struct pt_io, bio));
	io->t = t;
	io->kind = kind;
	return io;
}

static inline struct pt_bgio *pt_bgio_init(struct bio *bio, struct pt_tier *t, u8 kind)
{
	struct pt_bgio *io = container_of(bio, struct pt_bgio, bio);

	memset(io, 0, offsetof(struct pt_bgio, bio));
	io->t = t;
	io->kind = kind;
	return io;
}

/* ---- tier_map.c: all called with t->lock held unless noted ---- */
struct pt_geometry {
	u32 seg_shift;
	u32 nr_segs;
	u32 open_max;
	u64 nr_slots;
};

int pt_geometry(u64 backing_bytes, u64 cap_bytes, u32 seg_kib, u32 headroom_pct,
		u32 max_open, struct pt_geometry *g);
int pt_map_alloc(struct pt_tier *t, u32 max_cgroups);
void pt_map_free(struct pt_tier *t);

u16 pt_cg_get(struct pt_tier *t, u64 id);
u16 pt_cg_find(struct pt_tier *t, u64 id);

static inline u32 pt_seg_of(const struct pt_tier *t, u32 pblk)
{
	return pblk >> t->seg_shift;
}

static inline bool pt_p2l_live(u32 v)
{
	return v != PT_NONE && !(v & PT_P2L_PENDING);
}

/* The cgroup index that owns @slot's page, 0 if the slot is empty. */
static inline u16 pt_slot_owner(const struct pt_tier *t, u64 slot)
{
	u32 p = t->l2p[slot];

	lockdep_assert_held(&t->lock);
	return p == PT_NONE ? 0 : t->segs[pt_seg_of(t, p)].owner;
}

int pt_map_reserve(struct pt_tier *t, u16 idx, u32 want, bool gc, u32 *pblk, u32 *got);
void pt_map_assign(struct pt_tier *t, u64 slot, u32 pblk, u32 n);
void pt_map_write_done(struct pt_tier *t, u32 pblk, u32 n, bool error);
void pt_map_clear(struct pt_tier *t, u64 slot);
void pt_seg_release(struct pt_tier *t, u32 seg);
void pt_seg_mark_bad(struct pt_tier *t, u32 seg);
void pt_seg_maybe_free(struct pt_tier *t, u32 seg);
void pt_seg_set_valid(struct pt_tier *t, struct pt_seg *s, u32 valid);
void pt_map_repoint(struct pt_tier *t, u32 from, u32 to);
u32 pt_gc_pick(struct pt_tier *t, u32 max_valid, bool *transient);
bool pt_gc_move(struct pt_tier *t, u32 from, u32 slot, u32 to);
void pt_gc_done(struct pt_tier *t, u32 seg, bool complete);

/*
 * What the map tells the layers above it. The map calls nothing of theirs: tier.c
 * registers these at creation (pt_tier.map_ops), as a DAMON context gets its
 * damon_operations. Each is called with t->lock held and must not sleep.
 */
struct pt_map_ops {
	/* Free segments fell below gc_low: the collector should run (pt_gc_kick()). */
	void (*gc_kick)(struct pt_tier *t);
	/* A segment became free: writers waiting for space may try again. */
	void (*seg_freed)(struct pt_tier *t);
	/* Live block @pblk, flagged PT_P2L_STAGED, dies: its staged copy goes. */
	void (*stage_drop)(struct pt_tier *t, u32 pblk);
	/* The collector moved staged block @from to @to: the staged copy follows. */
	void (*stage_move)(struct pt_tier *t, u32 from, u32 to);
};

/*
 * What the staging, prefetch and write-buffer layers tell the block device above them,
 * registered by tier.c at creation (pt_tier.io_ops).
 */
struct pt_io_ops {
	/*
	 * Read container @c, which waited for a prefetch read of its next slots, goes on.
	 * Called from pf_work without t->lock; may sleep (bio_set allocations).
	 */
	void (*read_resume)(struct pt_tier *t, struct bio *c);
	/* Writes completed (pt_map_write_done()). Called with t->lock held. */
	void (*writes_done)(struct pt_tier *t);
};

/* ---- tier_gate.c: admission of background I/O, bios in flight ---- */
bool pt_gate_try_locked(struct pt_tier *t, u32 blocks);
void pt_gate_wait(struct pt_tier *t, u32 blocks);
void pt_gate_put_locked(struct pt_tier *t, u32 blocks);
void pt_gate_wake(struct pt_tier *t);
void pt_inflight_put(struct pt_tier *t);

/* ---- tier_prefetch.c: the staging cache and prefetch ---- */
int pt_stage_alloc(struct pt_tier *t, u32 pages);
void pt_stage_free_all(struct pt_tier *t);
struct pt_stage *pt_stage_find(struct pt_tier *t, u32 pblk);
struct page *pt_stage_take(struct pt_tier *t, u32 pblk);
void pt_stage_drop(struct pt_tier *t, u32 pblk);
void pt_stage_move(struct pt_tier *t, u32 from, u32 to);
void pt_page_put_locked(struct pt_tier *t, struct page *page);
void pt_pf_work(struct work_struct *work);
void pt_tick_work(struct work_struct *work);
void pt_pf_endio(struct bio *bio);
void pt_pf_preempt(struct pt_tier *t, u32 seg);
void pt_pf_cancel_all(struct pt_tier *t, struct bio_list *w);
u64 pt_pf_plan(struct pt_tier *t, u16 idx, u64 budget, bool newest);
bool pt_pf_settled(struct pt_tier *t);
void pt_tick_arm(struct pt_tier *t);

/* ---- tier_wbuf.c: the write buffer ---- */
int pt_wb_alloc(struct pt_tier *t, u32 pages);
void pt_wb_free_all(struct pt_tier *t);
bool pt_wb_take_locked(struct pt_tier *t, u32 n, struct list_head *ents);
void pt_wb_fill(struct bio *bio, struct list_head *ents);
void pt_wb_insert_locked(struct pt_tier *t, struct list_head *ents, u32 pblk, u32 n);
void pt_wb_put_locked(struct pt_tier *t, struct list_head *ents);
struct pt_wbuf *pt_wb_find(struct pt_tier *t, u32 pblk);
void pt_wb_unpin_locked(struct pt_tier *t, struct pt_wbuf *e);
void pt_wb_kick(struct pt_tier *t);
int pt_wb_drain(struct pt_tier *t);
void pt_wb_work(struct work_struct *work);

/* ---- tier_gc.c: the garbage collector ---- */
void pt_gc_kick(struct pt_tier *t);
void pt_gc_seg_freed(struct pt_tier *t);
void pt_gc_work(struct work_struct *work);

/* ---- tier.c: the block device, sysfs, the tier ioctls (core.c calls them) ---- */
int pt_tier_create(struct pagetier_tier_create *req);
int pt_tier_destroy(u32 tier_id);
int pt_tier_cgroup_stats(u32 tier_id, struct pagetier_cgroup_stat **stats,
			 u32 max, u32 *count);
void pt_tier_destroy_all(void);
int pt_tier_prefetch(struct pagetier_prefetch *req);

/* Latency histogram bucket of @ns: [0] < 1 us, [i] < 2^i us, the last one the rest. */
static inline unsigned int pt_lat_bucket(u64 ns)
{
	u64 us = div_u64(ns, NSEC_PER_USEC);

	return us ? min_t(unsigned int, fls64(us), PT_LAT_BUCKETS - 1) : 0;
}

#endif /* _PAGETIER_TIER_H */
