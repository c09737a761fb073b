// SPDX-License-Identifier: GPL-2.0
/*
 * tier_map.c - the log-structured map of a tier: geometry, the slot -> block map (l2p)
 * and its inverse (p2l), segments and their life cycle, the choice of garbage
 * collection victims, and the cgroup table.
 *
 * Pure bookkeeping: no I/O, no sleeping, and no allocation after pt_map_alloc(). Every
 * function but pt_geometry(), pt_map_alloc() and pt_map_free() is called with t->lock
 * held. The bottom layer of the tier: it calls nothing of the module's. What the layers
 * above must hear of (the collector should run, a segment is free, a staged block died
 * or moved) goes through the ops tier.c registered (t->map_ops, struct pt_map_ops).
 *
 * Invariants (under t->lock):
 *  - l2p[slot] == p  <=>  p2l[p] & PT_P2L_SLOT == slot and p2l[p] != PT_NONE: a slot has
 *    at most one live block and a live block belongs to exactly one slot;
 *  - a segment's valid count is the number of its live blocks (written or being
 *    written); the sum over a cgroup's segments is its pages_stored;
 *  - a block is only ever written while its segment is FREE -> OPEN, so the content of
 *    a live, non-pending block never changes until it dies and its segment is freed;
 *  - a segment is freed only when it is sealed, holds no live block, and no write,
 *    read or prefetch of it is in flight (inflight, readers, pf): a read that resolved
 *    a slot to a block can never see the block reused under it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "tier.h"

/**
 * pt_geometry() - the layout of a tier over a backing device
 * @backing_bytes: size of the backing device
 * @cap_bytes: cap on the capacity offered to swap, 0 = none
 * @seg_kib: wanted segment size in KiB (rounded down to a power of two)
 * @headroom_pct: share of the usable space kept free for the garbage collector
 * @max_open: open segments at most (one per recently writing cgroup)
 * @g: the result
 *
 * Segments shrink (down to 16 blocks) until the device has at least 64 of them. Of the
 * segments, @g->open_max may be partly written at any time and PT_GC_RESERVE are kept
 * for the collector; the capacity is the rest minus @headroom_pct percent.
 *
 * Return: 0, or -EINVAL if the device is too small for a tier.
 */
int pt_geometry(u64 backing_bytes, u64 cap_bytes, u32 seg_kib, u32 headroom_pct,
		u32 max_open, struct pt_geometry *g)
{
	u64 blocks = min_t(u64, backing_bytes >> PT_SLOT_SHIFT, PT_MAX_BLOCKS);
	u32 shift = ilog2(max_t(u32, seg_kib >> 2, 1));
	u64 segs, usable, slots, cap_slots = cap_bytes >> PT_SLOT_SHIFT;
	u32 head = clamp_t(u32, headroom_pct, 1, 50);

	shift = clamp_t(u32, shift, PT_SEG_MIN_SHIFT, PT_SEG_MAX_SHIFT);
	while (shift > PT_SEG_MIN_SHIFT && (blocks >> shift) < 4 * PT_MIN_SEGMENTS)
		shift--;
	segs = blocks >> shift;
	if (segs < PT_MIN_SEGMENTS)
		return -EINVAL;
	g->open_max = clamp_t(u32, max_open, 1, segs / 8);
	usable = segs - g->open_max - PT_GC_RESERVE;
	slots = div_u64((usable << shift) * (100 - head), 100);
	if (cap_slots && slots > cap_slots) {
		u64 need = DIV_ROUND_UP_ULL(div_u64(cap_slots * 100 + 99 - head, 100 - head),
					    1ULL << shift);

		slots = cap_slots;
		segs = min(segs, need + g->open_max + PT_GC_RESERVE);
	}
	slots = min_t(u64, slots, PT_MAX_SLOTS);
	if ((slots << PT_SLOT_SHIFT) < PT_MIN_CAPACITY)
		return -EINVAL;
	g->seg_shift = shift;
	g->nr_segs = segs;
	g->nr_slots = slots;
	return 0;
}

/**
 * pt_map_alloc() - allocate and initialize the map of a tier whose geometry is set
 * @t: the tier; nr_slots, seg_shift, nr_segs set
 * @max_cgroups: entries of the cgroup table
 *
 * Context: process context, may sleep.
 * Return: 0 or -ENOMEM.
 */
int pt_map_alloc(struct pt_tier *t, u32 max_cgroups)
{
	u32 i;

	t->seg_blocks = 1U << t->seg_shift;
	t->nr_blocks = t->nr_segs << t->seg_shift;
	INIT_LIST_HEAD(&t->free_list);
	INIT_LIST_HEAD(&t->open_lru);

	/* Indexed by u16; entry 0 is unused and entry 1 is the unattributed one. */
	t->nr_cg = PT_CG_FIRST + clamp_t(u32, max_cgroups, 1, PT_CG_ENTRIES_MAX - PT_CG_FIRST);
	t->cg_used = PT_CG_FIRST;
	t->cg = kvcalloc(t->nr_cg, sizeof(*t->cg), GFP_KERNEL);
	if (!t->cg)
		return -ENOMEM;
	hash_init(t->cg_hash);
	for (i = 0; i < t->nr_cg; i++) {
		INIT_LIST_HEAD(&t->cg[i].segs);
		INIT_LIST_HEAD(&t->cg[i].open_node);
		t->cg[i].open_seg = PT_NONE;
	}

	/* __GFP_NOWARN: a huge device fails here with a message, not a splat. */
	t->l2p = kvmalloc_array(t->nr_slots, sizeof(*t->l2p), GFP_KERNEL | __GFP_NOWARN);
	t->p2l = kvmalloc_array(t->nr_blocks, sizeof(*t->p2l), GFP_KERNEL | __GFP_NOWARN);
	t->segs = kvcalloc(t->nr_segs, sizeof(*t->segs), GFP_KERNEL | __GFP_NOWARN);
	t->buckets = kvmalloc_array(t->seg_blocks + 1, sizeof(*t->buckets), GFP_KERNEL);
	if (!t->l2p || !t->p2l || !t->segs || !t->buckets) {
		pr_err("%s: no memory for the map of %llu slots; set max_capacity_mib\n",
		       t->backing_path, t->nr_slots);
		return -ENOMEM;
	}
	memset(t->l2p, 0xff, t->nr_slots * sizeof(*t->l2p));
	memset(t->p2l, 0xff, (size_t)t->nr_blocks * sizeof(*t->p2l));
	for (i = 0; i <= t->seg_blocks; i++)
		INIT_LIST_HEAD(&t->buckets[i]);
	for (i = 0; i < t->nr_segs; i++) {
		struct pt_seg *s = &t->segs[i];

		INIT_LIST_HEAD(&s->cg_node);
		INIT_LIST_HEAD(&s->pf_node);
		bio_list_init(&s->waiters);
		s->state = PT_SEG_FREE;
		list_add_tail(&s->node, &t->free_list);
	}
	t->nr_free = t->nr_segs;
	return 0;
}

/**
 * pt_map_free() - free what pt_map_alloc() allocated (also after it failed)
 * @t: the tier
 */
void pt_map_free(struct pt_tier *t)
{
	kvfree(t->buckets);
	kvfree(t->segs);
	kvfree(t->p2l);
	kvfree(t->l2p);
	kvfree(t->cg);
}

/* ---- the cgroup table ---- */

static void pt_seg_seal(struct pt_tier *t, u32 seg);

/* Empties cg[@i] for a new cgroup: its segments hold no live block any more. */
static void pt_cg_reset(struct pt_tier *t, u32 i)
{
	struct pt_cgroup *c = &t->cg[i];
	struct pt_seg *s, *tmp;

	lockdep_assert_held(&t->lock);
	if (c->open_seg != PT_NONE)
		pt_seg_seal(t, c->open_seg);
	/* Segments still read (or waiting to be freed) forget their owner. */
	list_for_each_entry_safe(s, tmp, &c->segs, cg_node) {
		list_del_init(&s->cg_node);
		s->owner = 0;
	}
	hash_del(&c->node);
	memset(c, 0, sizeof(*c));
	INIT_LIST_HEAD(&c->segs);
	INIT_LIST_HEAD(&c->open_node);
	c->open_seg = PT_NONE;
}

/* Entries a full table looks at for the one with the fewest pages. */
#define PT_CG_EVICT_SCAN	64

/*
 * The entry a new cgroup takes when the table is full: one whose cgroup has no pages
 * left on the tier, else the one with the fewest pages of the next PT_CG_EVICT_SCAN
 * from a rotating cursor (bounded work with interrupts off). Never the owner of the
 * collector's victim: the collector writes its copies to that entry's open segment.
 * Return: the index, or 0 if there is none.
 */
static u32 pt_cg_victim(struct pt_tier *t)
{
	u32 n = t->nr_cg - PT_CG_FIRST, i, k, best = 0;

	lockdep_assert_held(&t->lock);
	if (t->cg_empty)
		for (i = PT_CG_FIRST; i < t->nr_cg; i++)
			if (!t->cg[i].st.pages_stored && i != t->gc_owner)
				return i;
	for (k = 0; k < min_t(u32, n, PT_CG_EVICT_SCAN); k++) {
		i = PT_CG_FIRST + t->cg_cursor;
		t->cg_cursor = (t->cg_cursor + 1) % n;
		if (i == t->gc_owner)
			continue;
		if (!best || t->cg[i].st.pages_stored < t->cg[best].st.pages_stored)
			best = i;
	}
	return best;
}

/*
 * Gives the pages of cg[@i] to the unattributed entry, so that the entry can take a new
 * cgroup: its segments, live pages and staged pages are unattributed from now on.
 */
static void pt_cg_evict(struct pt_tier *t, u32 i)
{
	struct pt_cgroup *c = &t->cg[i], *u = &t->cg[PT_CG_UNATTRIBUTED];
	struct pt_seg *s;

	lockdep_assert_held(&t->lock);
	if (c->open_seg != PT_NONE)
		pt_seg_seal(t, c->open_seg);
	list_for_each_entry(s, &c->segs, cg_node)
		s->owner = PT_CG_UNATTRIBUTED;
	list_splice_tail_init(&c->segs, &u->segs);
	u->nr_segs += c->nr_segs;
	u->st.pages_stored += c->st.pages_stored;
	u->st.staged_pages += c->st.staged_pages;
	u->in_use = true;
	t->st.cgroup_evictions++;
	t->st.cgroup_evicted_pages += c->st.pages_stored;
	c->nr_segs = 0;
	c->st.pages_stored = 0;
	c->st.staged_pages = 0;
	t->cg_empty++;
}

/**
 * pt_cg_get() - the table index of cgroup @id, adding it if needed
 * @t: the tier
 * @id: cgroup id, 0 = unattributed
 *
 * When the table is full, the entry of a cgroup with no pages left on the tier is
 * reused; if there is none, the cgroup with the fewest pages of those looked at is
 * evicted: its pages count as unattributed from then on (tier_stat's
 * cgroup_evictions). So a new cgroup always gets an entry, however many cgroups hold
 * pages, and only the smallest lose theirs.
 *
 * Return: the index, PT_CG_UNATTRIBUTED for id 0 (or for a table of one entry that the
 * collector uses).
 */
u16 pt_cg_get(struct pt_tier *t, u64 id)
{
	struct pt_cgroup *c;
	u32 i;

	lockdep_assert_held(&t->lock);
	i = pt_cg_find(t, id);
	if (i)
		return i;

	if (t->cg_used < t->nr_cg) {
		i = t->cg_used++;
		t->cg_empty++;
	} else {
		i = pt_cg_victim(t);
		if (!i)
			return PT_CG_UNATTRIBUTED;
		if (t->cg[i].st.pages_stored)
			pt_cg_evict(t, i);
		pt_cg_reset(t, i);
	}
	c = &t->cg[i];
	c->id = id;
	c->in_use = true;
	hash_add(t->cg_hash, &c->node, id);
	return i;
}

/**
 * pt_cg_find() - the table index of cgroup @id, without adding it
 * @t: the tier
 * @id: cgroup id, 0 = unattributed
 *
 * Return: the index, or 0 if the cgroup has no entry.
 */
u16 pt_cg_find(struct pt_tier *t, u64 id)
{
	struct pt_cgroup *c;

	lockdep_assert_held(&t->lock);
	if (!id)
		return PT_CG_UNATTRIBUTED;
	hash_for_each_possible(t->cg_hash, c, node, id)
		if (c->id == id)
			return c - t->cg;
	return 0;
}

static void pt_cg_add_pages(struct pt_tier *t, u16 idx, u32 n)
{
	lockdep_assert_held(&t->lock);
	if (!t->cg[idx].st.pages_stored && idx >= PT_CG_FIRST)
		t->cg_empty--;
	t->cg[idx].st.pages_stored += n;
	t->pages_stored += n;
}

static void pt_cg_sub_page(struct pt_tier *t, u16 idx)
{
	lockdep_assert_held(&t->lock);
	t->pages_stored--;
	if (!idx)
		return;
	if (!--t->cg[idx].st.pages_stored && idx >= PT_CG_FIRST)
		t->cg_empty++;
}

/* ---- segments ---- */

static bool pt_seg_in_bucket(const struct pt_seg *s)
{
	return s->state == PT_SEG_SEALED && !(s->flags & PT_SEG_F_BAD);
}

/**
 * pt_seg_set_valid() - change a segment's live block count, keeping its GC bucket
 * @t: the tier
 * @s: the segment
 * @valid: the new count
 */
void pt_seg_set_valid(struct pt_tier *t, struct pt_seg *s, u32 valid)
{
	lockdep_assert_held(&t->lock);
	s->valid = valid;
	if (pt_seg_in_bucket(s))
		list_move_tail(&s->node, &t->buckets[valid]);
}

/**
 * pt_seg_maybe_free() - return a segment to the free list if nothing uses it
 * @t: the tier
 * @seg: the segment
 *
 * A bad segment is retired instead, for good.
 */
void pt_seg_maybe_free(struct pt_tier *t, u32 seg)
{
	struct pt_seg *s = &t->segs[seg];

	lockdep_assert_held(&t->lock);
	if (s->state != PT_SEG_SEALED || s->valid || s->inflight || s->readers ||
	    s->pf != PT_PF_NONE)
		return;
	list_del_init(&s->node);
	if (s->owner) {
		list_del_init(&s->cg_node);
		t->cg[s->owner].nr_segs--;
		s->owner = 0;
	}
	if (s->flags & PT_SEG_F_BAD) {
		s->state = PT_SEG_RETIRED;
		return;
	}
	s->state = PT_SEG_FREE;
	s->wp = 0;
	s->flags = 0;
	list_add_tail(&s->node, &t->free_list);
	t->nr_free++;
	t->nospace = false;
	t->map_ops->seg_freed(t);
}

static void pt_seg_seal(struct pt_tier *t, u32 seg)
{
	struct pt_seg *s = &t->segs[seg];
	struct pt_cgroup *c = &t->cg[s->owner];

	lockdep_assert_held(&t->lock);
	c->open_seg = PT_NONE;
	list_del_init(&c->open_node);
	t->nr_open--;
	s->state = PT_SEG_SEALED;
	if (pt_seg_in_bucket(s))
		list_add_tail(&s->node, &t->buckets[s->valid]);
	pt_seg_maybe_free(t, seg);
}

static u32 pt_seg_open(struct pt_tier *t, u16 idx)
{
	struct pt_cgroup *c = &t->cg[idx];
	struct pt_seg *s = list_first_entry(&t->free_list, struct pt_seg, node);
	u32 seg = s - t->segs;

	lockdep_assert_held(&t->lock);
	list_del_init(&s->node);
	t->nr_free--;
	s->state = PT_SEG_OPEN;
	s->valid = 0;
	s->wp = 0;
	s->flags = 0;
	s->owner = idx;
	list_add_tail(&s->cg_node, &c->segs);
	c->nr_segs++;
	c->open_seg = seg;
	list_add_tail(&c->open_node, &t->open_lru);
	t->nr_open++;
	if (t->nr_free < t->gc_low)
		t->map_ops->gc_kick(t);
	return seg;
}

/**
 * pt_seg_mark_bad() - retire a segment a write failed in, once it is empty
 * @t: the tier
 * @seg: the segment
 *
 * An open segment is sealed (its cgroup gets another); a bad segment is never chosen
 * by the collector and never written again. Its live blocks stay readable.
 */
void pt_seg_mark_bad(struct pt_tier *t, u32 seg)
{
	struct pt_seg *s = &t->segs[seg];

	lockdep_assert_held(&t->lock);
	if (s->flags & PT_SEG_F_BAD)
		return;
	if (s->state == PT_SEG_SEALED)
		list_del_init(&s->node);
	s->flags |= PT_SEG_F_BAD;
	t->nr_bad++;
	if (s->state == PT_SEG_OPEN)
		pt_seg_seal(t, seg);
}

/**
 * pt_seg_release() - a read of a segment's blocks has completed
 * @t: the tier
 * @seg: the segment
 */
void pt_seg_release(struct pt_tier *t, u32 seg)
{
	lockdep_assert_held(&t->lock);
	t->segs[seg].readers--;
	pt_seg_maybe_free(t, seg);
}

/* ---- slots and blocks ---- */

/* Forgets live block @p: its segment loses it, its staged copy goes. */
static void pt_block_kill(struct pt_tier *t, u32 p)
{
	u32 seg = pt_seg_of(t, p);
	struct pt_seg *s = &t->segs[seg];

	lockdep_assert_held(&t->lock);
	if (t->p2l[p] & PT_P2L_STAGED)
		t->map_ops->stage_drop(t, p);
	t->p2l[p] = PT_NONE;
	/* Garbage appeared: the collector may find a victim again. */
	t->nospace = false;
	pt_cg_sub_page(t, s->owner);
	pt_seg_set_valid(t, s, s->valid - 1);
	pt_seg_maybe_free(t, seg);
}

/**
 * pt_map_clear() - empty a slot (discard, or before it is written again)
 * @t: the tier
 * @slot: the slot
 */
void pt_map_clear(struct pt_tier *t, u64 slot)
{
	u32 p = t->l2p[slot];

	lockdep_assert_held(&t->lock);
	if (p == PT_NONE)
		return;
	t->l2p[slot] = PT_NONE;
	pt_block_kill(t, p);
}

/**
 * pt_map_reserve() - hand out blocks at the end of a cgroup's open segment
 * @t: the tier
 * @idx: the cgroup
 * @want: blocks wanted
 * @gc: the collector asks, and may use the last free segments
 * @pblk: first block handed out
 * @got: blocks handed out, 1 to @want, contiguous
 *
 * Opens a segment for the cgroup if it has none (sealing the least recently written
 * open segment if there are open_max already). The blocks count as in flight
 * (pt_map_write_done() or the collector ends that).
 *
 * Return: 0, or -ENOSPC if no segment is free.
 */
int pt_map_reserve(struct pt_tier *t, u16 idx, u32 want, bool gc, u32 *pblk, u32 *got)
{
	struct pt_cgroup *c = &t->cg[idx];
	u32 seg = c->open_seg, n;
	struct pt_seg *s;

	lockdep_assert_held(&t->lock);
	if (seg == PT_NONE) {
		if (t->nr_free <= (gc ? 0 : PT_GC_RESERVE))
			return -ENOSPC;
		if (t->nr_open >= t->open_max)
			pt_seg_seal(t, list_first_entry(&t->open_lru, struct pt_cgroup,
							open_node)->open_seg);
		seg = pt_seg_open(t, idx);
	} else {
		list_move_tail(&c->open_node, &t->open_lru);
	}
	s = &t->segs[seg];
	n = min(want, t->seg_blocks - s->wp);
	*pblk = (seg << t->seg_shift) + s->wp;
	*got = n;
	s->wp += n;
	s->inflight += n;
	if (s->wp == t->seg_blocks)
		pt_seg_seal(t, seg);
	return 0;
}

/**
 * pt_map_assign() - map @n slots from @slot to the blocks from @pblk, being written
 * @t: the tier
 * @slot: first slot
 * @pblk: first block, from pt_map_reserve()
 * @n: count
 *
 * The slots' previous blocks die now: a slot reads as its newest write.
 */
void pt_map_assign(struct pt_tier *t, u64 slot, u32 pblk, u32 n)
{
	struct pt_seg *s = &t->segs[pt_seg_of(t, pblk)];
	u32 i;

	lockdep_assert_held(&t->lock);
	for (i = 0; i < n; i++) {
		pt_map_clear(t, slot + i);
		t->l2p[slot + i] = pblk + i;
		t->p2l[pblk + i] = (u32)(slot + i) | PT_P2L_PENDING;
	}
	pt_cg_add_pages(t, s->owner, n);
	pt_seg_set_valid(t, s, s->valid + n);
}

/**
 * pt_map_write_done() - the write of blocks [@pblk, @pblk + @n) has completed
 * @t: the tier
 * @pblk: first block
 * @n: count, within one segment
 * @error: it failed: the slots still mapped to these blocks become empty, and the
 *         segment is retired
 */
void pt_map_write_done(struct pt_tier *t, u32 pblk, u32 n, bool error)
{
	u32 seg = pt_seg_of(t, pblk), i, v;

	lockdep_assert_held(&t->lock);
	for (i = 0; i < n; i++) {
		v = t->p2l[pblk + i];
		/* Rewritten or discarded while in flight: already dead. */
		if (v == PT_NONE || !(v & PT_P2L_PENDING))
			continue;
		if (error) {
			t->l2p[v & PT_P2L_SLOT] = PT_NONE;
			pt_block_kill(t, pblk + i);
		} else {
			t->p2l[pblk + i] = v & ~PT_P2L_PENDING;
		}
	}
	t->segs[seg].inflight -= n;
	if (error)
		pt_seg_mark_bad(t, seg);
	t->wr_seq++;
	pt_seg_maybe_free(t, seg);
}

/**
 * pt_map_repoint() - move a slot's block that is being written to another block
 * @t: the tier
 * @from: a live block with PT_P2L_PENDING (its write-back failed)
 * @to: a block pt_map_reserve() handed out for the same cgroup
 *
 * The slot now maps to @to, still pending; @from is dead, and its write still counts as
 * in flight until pt_map_write_done() on it.
 */
void pt_map_repoint(struct pt_tier *t, u32 from, u32 to)
{
	u32 v = t->p2l[from];
	struct pt_seg *src = &t->segs[pt_seg_of(t, from)];
	struct pt_seg *dst = &t->segs[pt_seg_of(t, to)];

	lockdep_assert_held(&t->lock);
	WARN_ON_ONCE(src->owner != dst->owner);
	t->l2p[v & PT_P2L_SLOT] = to;
	t->p2l[to] = v;
	t->p2l[from] = PT_NONE;
	pt_seg_set_valid(t, dst, dst->valid + 1);
	pt_seg_set_valid(t, src, src->valid - 1);
}

/* ---- garbage collection ---- */

/**
 * pt_gc_pick() - choose the sealed segment with the fewest live blocks
 * @t: the tier
 * @max_valid: ignore segments with more live blocks than this
 *
 * Greedy choice from the buckets of sealed segments by live block count. Segments
 * being written, prefetched or that failed collection before are skipped. The victim
 * goes to PT_SEG_GC with a reader reference, so it is neither reused nor chosen again
 * until pt_gc_done(), and its owner's table entry is not given to another cgroup.
 *
 * Return: the segment, or PT_NONE; then @transient says whether a segment was skipped
 * only for the moment (being written or prefetched).
 */
u32 pt_gc_pick(struct pt_tier *t, u32 max_valid, bool *transient)
{
	struct pt_seg *s;
	u32 v;

	lockdep_assert_held(&t->lock);
	*transient = false;
	max_valid = min(max_valid, t->seg_blocks - 1);
	for (v = 1; v <= max_valid; v++) {
		list_for_each_entry(s, &t->buckets[v], node) {
			if (s->flags & PT_SEG_F_GCERR)
				continue;
			if (s->inflight || s->pf != PT_PF_NONE) {
				*transient = true;
				continue;
			}
			list_del_init(&s->node);
			s->state = PT_SEG_GC;
			s->readers++;
			t->gc_owner = s->owner;
			return s - t->segs;
		}
	}
	return PT_NONE;
}

/**
 * pt_gc_move() - remap @slot from block @from to its copy at @to, if still current
 * @t: the tier
 * @from: the victim's block
 * @slot: the slot @from held when the collector read it
 * @to: the copy, written
 *
 * The slot may have been rewritten or discarded since the copy was read: then the copy
 * is dropped (it stays dead). A staged copy follows the block.
 *
 * Return: whether the slot now maps to @to.
 */
bool pt_gc_move(struct pt_tier *t, u32 from, u32 slot, u32 to)
{
	u32 v = t->p2l[from];
	struct pt_seg *src = &t->segs[pt_seg_of(t, from)];
	struct pt_seg *dst = &t->segs[pt_seg_of(t, to)];

	lockdep_assert_held(&t->lock);
	if (!pt_p2l_live(v) || (v & PT_P2L_SLOT) != slot || t->l2p[slot] != from)
		return false;
	t->l2p[slot] = to;
	t->p2l[to] = v;
	t->p2l[from] = PT_NONE;
	if (v & PT_P2L_STAGED)
		t->map_ops->stage_move(t, from, to);
	pt_seg_set_valid(t, dst, dst->valid + 1);
	pt_seg_set_valid(t, src, src->valid - 1);
	return true;
}

/**
 * pt_gc_done() - the collector is finished with victim @seg
 * @t: the tier
 * @seg: the segment pt_gc_pick() returned
 * @complete: every live block was moved; if not, the segment is not chosen again
 *
 * The victim is freed if it is empty, else sealed again.
 */
void pt_gc_done(struct pt_tier *t, u32 seg, bool complete)
{
	struct pt_seg *s = &t->segs[seg];

	lockdep_assert_held(&t->lock);
	t->gc_owner = 0;
	s->state = PT_SEG_SEALED;
	if (!complete)
		s->flags |= PT_SEG_F_GCERR;
	if (pt_seg_in_bucket(s))
		list_add_tail(&s->node, &t->buckets[s->valid]);
	pt_seg_release(t, seg);
}
