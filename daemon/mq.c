// SPDX-License-Identifier: GPL-2.0
/*
 * Multi-queue hotness model; see mq.h for the model and the lifeTime rule.
 *
 * Layout: one pool of nodes (an array grown by doubling, so a node is named by a 32-bit
 * index and links stay valid across realloc), intrusive doubly-linked lists for Q0..Qm-1
 * and Qout, and a chained hash table id -> node whose chains run through the nodes too.
 * Free nodes are kept on a singly-linked free list through 'next'.
 */
#include "mq.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NIL		UINT32_MAX
#define L_OUT		PT_MQ_MAX_QUEUES	/* lists[] index of Qout */
#define L_FREE		0xff			/* node->list of a free node */
#define MIN_NODES	256U
#define MIN_HASH_BITS	8U
#define EWMA_SHIFT	3			/* rates: 1/8 weight for the newest epoch */

struct mq_node {
	uint64_t id;
	/* Resident: last touch, or the epoch before its last demotion. Qout: evicted. */
	uint64_t stamp;
	uint64_t touched;	/* epoch of the last counted touch */
	uint32_t freq;
	uint32_t prev, next;	/* list links; 'next' also links the free list */
	uint32_t hnext;		/* hash chain */
	uint8_t list;		/* 0..m-1 queue, L_OUT, L_FREE */
	uint8_t aged;		/* Qout: evicted after demotion, below the queue of its freq */
	uint8_t seen;		/* an access was counted (not only pt_mq_insert_cold) */
};

struct mq_list {
	uint32_t head, tail;	/* head: least recently used (queues), oldest (Qout) */
	uint32_t len;
};

struct pt_mq {
	struct pt_mq_params p;
	uint64_t now;
	uint32_t lifetime;

	struct mq_node *nodes;
	uint32_t nr_slots;	/* allocated */
	uint32_t nr_used;	/* slots ever handed out (high-water mark) */
	uint32_t nr_live;	/* nodes in some list */
	uint32_t free_head;
	uint32_t limit;		/* max_resident + max_history */

	uint32_t *buckets;
	unsigned int hash_bits;

	struct mq_list lists[PT_MQ_MAX_QUEUES + 1];
	uint32_t resident;

	/* This epoch, for the lifeTime rule and the rates. */
	uint64_t ep_refaults, ep_mispredictions, ep_evictions;
	uint32_t quiet_epochs;

	struct pt_mq_stats st;	/* cumulative counters; the gauges are filled on demand */
};

void pt_mq_params_default(struct pt_mq_params *p)
{
	p->nr_queues = PT_MQ_DEF_QUEUES;
	p->lifetime = PT_MQ_DEF_LIFETIME;
	p->lifetime_min = PT_MQ_DEF_LIFETIME_MIN;
	p->lifetime_max = PT_MQ_DEF_LIFETIME_MAX;
	p->max_resident = PT_MQ_DEF_MAX_RESIDENT;
	p->max_history = PT_MQ_DEF_MAX_HISTORY;
	p->grow_pct = PT_MQ_DEF_GROW_PCT;
	p->recent_epochs = PT_MQ_DEF_RECENT_EPOCHS;
	p->relax_epochs = PT_MQ_DEF_RELAX_EPOCHS;
}

int pt_mq_params_check(const struct pt_mq_params *p)
{
	if (!p)
		return -EINVAL;
	if (p->nr_queues < 1 || p->nr_queues > PT_MQ_MAX_QUEUES)
		return -EINVAL;
	if (p->lifetime_min < 1 || p->lifetime_min > p->lifetime_max ||
	    p->lifetime_max > PT_MQ_MAX_LIFETIME || p->lifetime < p->lifetime_min ||
	    p->lifetime > p->lifetime_max)
		return -EINVAL;
	if (p->max_resident < 1 ||
	    (uint64_t)p->max_resident + p->max_history > PT_MQ_MAX_NODES)
		return -EINVAL;
	if (p->grow_pct < 1 || p->grow_pct > 100 || p->recent_epochs > PT_MQ_MAX_LIFETIME)
		return -EINVAL;
	return 0;
}

/* splitmix64's finalizer: chunk ids are dense and structured, buckets must not be. */
static inline uint32_t mq_hash(uint64_t id, unsigned int bits)
{
	id ^= id >> 30;
	id *= 0xbf58476d1ce4e5b9ULL;
	id ^= id >> 27;
	id *= 0x94d049bb133111ebULL;
	id ^= id >> 31;
	return (uint32_t)(id >> (64 - bits));
}

static inline unsigned int mq_queue_of(const struct pt_mq *mq, uint32_t freq)
{
	unsigned int q = 31 - (unsigned int)__builtin_clz(freq | 1);

	return q < mq->p.nr_queues ? q : mq->p.nr_queues - 1;
}

static inline uint32_t sat_inc(uint32_t f)
{
	return f == UINT32_MAX ? f : f + 1;
}

/* --- lists ------------------------------------------------------------------------- */

/* Links node @i into list @l between @prev and @next, NIL standing for that end of it. */
static void list_link(struct pt_mq *mq, unsigned int l, uint32_t i, uint32_t prev,
		      uint32_t next)
{
	struct mq_list *list = &mq->lists[l];
	struct mq_node *n = &mq->nodes[i];

	n->list = (uint8_t)l;
	n->prev = prev;
	n->next = next;
	if (prev != NIL)
		mq->nodes[prev].next = i;
	else
		list->head = i;
	if (next != NIL)
		mq->nodes[next].prev = i;
	else
		list->tail = i;
	list->len++;
}

static void list_add_tail(struct pt_mq *mq, unsigned int l, uint32_t i)
{
	list_link(mq, l, i, mq->lists[l].tail, NIL);
}

static void list_add_head(struct pt_mq *mq, unsigned int l, uint32_t i)
{
	list_link(mq, l, i, NIL, mq->lists[l].head);
}

static void list_del(struct pt_mq *mq, uint32_t i)
{
	struct mq_node *n = &mq->nodes[i];
	struct mq_list *list = &mq->lists[n->list];

	if (n->prev != NIL)
		mq->nodes[n->prev].next = n->next;
	else
		list->head = n->next;
	if (n->next != NIL)
		mq->nodes[n->next].prev = n->prev;
	else
		list->tail = n->prev;
	list->len--;
	n->prev = n->next = NIL;
}

/* --- hash table -------------------------------------------------------------------- */

static uint32_t hash_find(const struct pt_mq *mq, uint64_t id)
{
	uint32_t i = mq->buckets[mq_hash(id, mq->hash_bits)];

	while (i != NIL && mq->nodes[i].id != id)
		i = mq->nodes[i].hnext;
	return i;
}

static void hash_insert(struct pt_mq *mq, uint32_t i)
{
	uint32_t *b = &mq->buckets[mq_hash(mq->nodes[i].id, mq->hash_bits)];

	mq->nodes[i].hnext = *b;
	*b = i;
}

static void hash_delete(struct pt_mq *mq, uint32_t i)
{
	uint32_t *pp = &mq->buckets[mq_hash(mq->nodes[i].id, mq->hash_bits)];

	while (*pp != i)
		pp = &mq->nodes[*pp].hnext;
	*pp = mq->nodes[i].hnext;
}

/*
 * Keeps chains short (load <= 1) by doubling the table. Failing to allocate is not an
 * error: chains just get longer until the next attempt.
 */
static void hash_maybe_grow(struct pt_mq *mq)
{
	unsigned int bits = mq->hash_bits + 1;
	uint32_t *nb;

	if (mq->nr_live < (1U << mq->hash_bits) || bits > 31)
		return;
	nb = malloc(sizeof(*nb) << bits);
	if (!nb)
		return;
	memset(nb, 0xff, sizeof(*nb) << bits);	/* NIL */
	free(mq->buckets);
	mq->buckets = nb;
	mq->hash_bits = bits;
	for (uint32_t i = 0; i < mq->nr_used; i++)
		if (mq->nodes[i].list != L_FREE)
			hash_insert(mq, i);
}

/* --- nodes ------------------------------------------------------------------------- */

static int node_alloc(struct pt_mq *mq, uint64_t id, uint32_t *out)
{
	struct mq_node *n;
	uint32_t i;

	if (mq->free_head != NIL) {
		i = mq->free_head;
		mq->free_head = mq->nodes[i].next;
	} else {
		if (mq->nr_used == mq->nr_slots) {
			uint32_t want;
			struct mq_node *nn;

			if (mq->nr_slots >= mq->limit)
				return -ENOSPC;	/* not reached: callers check the limits */
			if (mq->nr_slots < MIN_NODES)
				want = MIN_NODES;
			else if (mq->nr_slots > mq->limit / 2)
				want = mq->limit;
			else
				want = mq->nr_slots * 2;
			if (want > mq->limit)
				want = mq->limit;
			nn = realloc(mq->nodes, (size_t)want * sizeof(*nn));
			if (!nn)
				return -ENOMEM;
			mq->nodes = nn;
			mq->nr_slots = want;
		}
		i = mq->nr_used++;
	}
	n = &mq->nodes[i];
	memset(n, 0, sizeof(*n));
	n->id = id;
	n->prev = n->next = NIL;
	n->list = L_FREE;	/* until the caller lists it: a rehash below skips it */
	mq->nr_live++;
	hash_maybe_grow(mq);
	hash_insert(mq, i);
	*out = i;
	return 0;
}

/* Unlinks node @i from its list and the hash table and frees it. */
static void node_free(struct pt_mq *mq, uint32_t i)
{
	struct mq_node *n = &mq->nodes[i];

	if (n->list < mq->p.nr_queues)
		mq->resident--;
	list_del(mq, i);
	hash_delete(mq, i);
	n->list = L_FREE;
	n->next = mq->free_head;
	mq->free_head = i;
	mq->nr_live--;
}

/* --- model ------------------------------------------------------------------------- */

int pt_mq_new(const struct pt_mq_params *p, struct pt_mq **out)
{
	struct pt_mq_params def;
	struct pt_mq *mq;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!p) {
		pt_mq_params_default(&def);
		p = &def;
	}
	ret = pt_mq_params_check(p);
	if (ret)
		return ret;
	mq = calloc(1, sizeof(*mq));
	if (!mq)
		return -ENOMEM;
	mq->p = *p;
	mq->lifetime = p->lifetime;
	mq->limit = p->max_resident + p->max_history;
	mq->free_head = NIL;
	mq->hash_bits = MIN_HASH_BITS;
	mq->buckets = malloc(sizeof(*mq->buckets) << mq->hash_bits);
	if (!mq->buckets) {
		free(mq);
		return -ENOMEM;
	}
	memset(mq->buckets, 0xff, sizeof(*mq->buckets) << mq->hash_bits);
	for (unsigned int l = 0; l <= L_OUT; l++)
		mq->lists[l] = (struct mq_list){ .head = NIL, .tail = NIL, .len = 0 };
	*out = mq;
	return 0;
}

void pt_mq_free(struct pt_mq *mq)
{
	if (!mq)
		return;
	free(mq->nodes);
	free(mq->buckets);
	free(mq);
}

/* Puts node @i, whose frequency just grew, at the MRU end of the queue it now belongs to. */
static void enqueue_touched(struct pt_mq *mq, uint32_t i, unsigned int from)
{
	struct mq_node *n = &mq->nodes[i];
	unsigned int q = mq_queue_of(mq, n->freq);

	if (q < from)	/* cannot happen (queue <= log2 f), but never demote on an access */
		q = from;
	if (q > from)
		mq->st.promotions++;
	n->stamp = mq->now;
	n->touched = mq->now;
	n->seen = 1;
	list_add_tail(mq, q, i);
}

int pt_mq_touch(struct pt_mq *mq, uint64_t id)
{
	struct mq_node *n;
	uint32_t i;
	int ret;

	if (!mq)
		return -EINVAL;
	i = hash_find(mq, id);
	if (i != NIL && mq->nodes[i].list != L_OUT) {
		unsigned int from;

		n = &mq->nodes[i];
		/* Accessed bits are per epoch: a second report in the same epoch is no news. */
		if (n->touched == mq->now)
			return PT_MQ_HIT;
		from = n->list;
		list_del(mq, i);
		n->freq = sat_inc(n->freq);
		mq->st.touches++;
		enqueue_touched(mq, i, from);
		return PT_MQ_HIT;
	}
	if (mq->resident >= mq->p.max_resident)
		return -ENOSPC;
	if (i != NIL) {
		/* Refault: Qout remembered its frequency. */
		n = &mq->nodes[i];
		list_del(mq, i);
		mq->resident++;
		mq->st.refaults++;
		mq->ep_refaults++;
		if (n->aged && mq->now - n->stamp <= mq->p.recent_epochs) {
			mq->st.mispredictions++;
			mq->ep_mispredictions++;
		}
		n->freq = sat_inc(n->freq);
		mq->st.touches++;
		enqueue_touched(mq, i, 0);
		return PT_MQ_REFAULT;
	}
	ret = node_alloc(mq, id, &i);
	if (ret)
		return ret;
	n = &mq->nodes[i];
	n->freq = 1;
	n->stamp = mq->now;
	n->touched = mq->now;
	n->seen = 1;
	list_add_tail(mq, 0, i);
	mq->resident++;
	mq->st.inserts++;
	mq->st.touches++;
	return PT_MQ_NEW;
}

int pt_mq_insert_cold(struct pt_mq *mq, uint64_t id)
{
	struct mq_node *n;
	uint32_t i;
	int ret;

	if (!mq)
		return -EINVAL;
	if (hash_find(mq, id) != NIL)
		return 0;	/* known, resident or in Qout: nothing to learn */
	if (mq->resident >= mq->p.max_resident)
		return -ENOSPC;
	ret = node_alloc(mq, id, &i);
	if (ret)
		return ret;
	n = &mq->nodes[i];
	/* No access seen: the coldest chunk there is, stamped at the beginning of time. */
	n->freq = 1;
	n->stamp = 0;
	/* Not "touched this epoch": a real access later in this epoch must still count. */
	n->touched = mq->now ? mq->now - 1 : 0;
	list_add_head(mq, 0, i);
	mq->resident++;
	mq->st.inserts++;
	return PT_MQ_NEW;
}

/* The lifeTime rule of mq.h, applied to the epoch being closed. */
static void adapt_lifetime(struct pt_mq *mq)
{
	uint64_t bad = mq->ep_mispredictions * 100, bar = mq->ep_refaults * mq->p.grow_pct;
	uint32_t lt = mq->lifetime, step;

	if (mq->ep_mispredictions && bad >= bar) {
		mq->quiet_epochs = 0;
		step = lt / 4 ? lt / 4 : 1;
		lt = lt + step > mq->p.lifetime_max ? mq->p.lifetime_max : lt + step;
	} else if (mq->ep_mispredictions && 4 * bad >= bar) {
		mq->quiet_epochs = 0;	/* aging explains some of the refaults: hold */
	} else if (mq->p.relax_epochs && ++mq->quiet_epochs >= mq->p.relax_epochs) {
		mq->quiet_epochs = 0;
		step = lt / 16 ? lt / 16 : 1;
		lt = lt - step < mq->p.lifetime_min ? mq->p.lifetime_min : lt - step;
	}
	if (lt > mq->lifetime)
		mq->st.lifetime_grows++;
	else if (lt < mq->lifetime)
		mq->st.lifetime_shrinks++;
	mq->lifetime = lt;
}

static uint64_t ewma(uint64_t avg, uint64_t sample)
{
	return avg - (avg >> EWMA_SHIFT) + ((sample * 1000) >> EWMA_SHIFT);
}

void pt_mq_epoch(struct pt_mq *mq)
{
	if (!mq)
		return;
	adapt_lifetime(mq);
	mq->st.refault_rate_milli = ewma(mq->st.refault_rate_milli, mq->ep_refaults);
	mq->st.evict_rate_milli = ewma(mq->st.evict_rate_milli, mq->ep_evictions);
	mq->ep_refaults = mq->ep_mispredictions = mq->ep_evictions = 0;
	mq->now++;

	/*
	 * Adjust: a chunk not accessed for lifeTime epochs drops one queue, and one more per
	 * further lifeTime idle epochs: a demoted chunk is stamped as if last touched in the
	 * epoch just closed. Unlike the paper (one head per queue per access), every expired
	 * chunk goes, since an epoch stands for many accesses. Within a queue stamps never
	 * decrease from head to tail (appends carry the current or the just-closed epoch, and
	 * touches after this point carry now), so the expired chunks are a prefix; a demoted
	 * chunk is not expired (lifeTime >= 1), so it does not fall twice in one epoch.
	 */
	for (unsigned int k = 1; k < mq->p.nr_queues; k++) {
		struct mq_list *q = &mq->lists[k];

		while (q->head != NIL && mq->nodes[q->head].stamp + mq->lifetime < mq->now) {
			uint32_t i = q->head;

			list_del(mq, i);
			mq->nodes[i].stamp = mq->now - 1;
			list_add_tail(mq, k - 1, i);
			mq->st.demotions++;
		}
	}
}

int pt_mq_coldest(const struct pt_mq *mq, uint64_t *out, size_t max)
{
	size_t n = 0;

	if (!mq || (!out && max))
		return -EINVAL;
	for (unsigned int k = 0; k < mq->p.nr_queues && n < max; k++)
		for (uint32_t i = mq->lists[k].head; i != NIL && n < max; i = mq->nodes[i].next)
			out[n++] = mq->nodes[i].id;
	return (int)n;
}

int pt_mq_hottest(const struct pt_mq *mq, uint64_t *out, size_t max)
{
	size_t n = 0;

	if (!mq || (!out && max))
		return -EINVAL;
	for (unsigned int k = mq->p.nr_queues; k-- > 0 && n < max;)
		for (uint32_t i = mq->lists[k].tail; i != NIL && n < max; i = mq->nodes[i].prev)
			out[n++] = mq->nodes[i].id;
	return (int)n;
}

int pt_mq_evicted(struct pt_mq *mq, uint64_t id)
{
	uint32_t i;

	if (!mq)
		return -EINVAL;
	i = hash_find(mq, id);
	if (i == NIL)
		return -ENOENT;
	if (mq->nodes[i].list == L_OUT)
		return 0;
	mq->st.evictions++;
	mq->ep_evictions++;
	if (!mq->p.max_history) {
		node_free(mq, i);
		return 0;
	}
	if (mq->lists[L_OUT].len >= mq->p.max_history) {
		node_free(mq, mq->lists[L_OUT].head);
		mq->st.history_drops++;
	}
	/* Demotion, not its frequency, made it a victim: lifeTime is to blame if it refaults. */
	mq->nodes[i].aged = mq->nodes[i].list < mq_queue_of(mq, mq->nodes[i].freq);
	list_del(mq, i);
	mq->resident--;
	mq->nodes[i].stamp = mq->now;
	list_add_tail(mq, L_OUT, i);
	return 0;
}

int pt_mq_remove(struct pt_mq *mq, uint64_t id)
{
	uint32_t i;

	if (!mq)
		return -EINVAL;
	i = hash_find(mq, id);
	if (i == NIL)
		return -ENOENT;
	node_free(mq, i);
	mq->st.removals++;
	return 0;
}

int pt_mq_remove_range(struct pt_mq *mq, uint64_t first, uint64_t last)
{
	int removed = 0;

	if (!mq || first > last)
		return -EINVAL;
	/* Look each id up if the range is small, else sweep the pool once. */
	if (last - first < mq->nr_live) {
		for (uint64_t id = first;; id++) {
			if (pt_mq_remove(mq, id) == 0)
				removed++;
			if (id == last)
				break;
		}
		return removed;
	}
	for (uint32_t i = 0; i < mq->nr_used; i++) {
		struct mq_node *n = &mq->nodes[i];

		if (n->list != L_FREE && n->id >= first && n->id <= last) {
			node_free(mq, i);
			mq->st.removals++;
			removed++;
		}
	}
	return removed;
}

static void node_info(const struct mq_node *n, struct pt_mq_chunk *out)
{
	memset(out, 0, sizeof(*out));
	out->where = n->list == L_OUT ? PT_MQ_HISTORY : PT_MQ_RESIDENT;
	out->queue = n->list == L_OUT ? 0 : n->list;
	out->freq = n->freq;
	out->stamp = n->stamp;
	out->aged = n->list == L_OUT && n->aged;
	out->accessed = n->seen;
	out->last_access = n->touched;
}

int pt_mq_lookup(const struct pt_mq *mq, uint64_t id, struct pt_mq_chunk *out)
{
	uint32_t i;

	if (!mq || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->where = PT_MQ_ABSENT;
	i = hash_find(mq, id);
	if (i == NIL)
		return -ENOENT;
	node_info(&mq->nodes[i], out);
	return 0;
}

int pt_mq_coldest_next(const struct pt_mq *mq, struct pt_mq_cursor *c, uint64_t *id,
		       struct pt_mq_chunk *info)
{
	if (!mq || !c || !id || !info)
		return -EINVAL;
	if (!c->started) {
		c->started = true;
		c->queue = 0;
		c->node = mq->p.nr_queues ? mq->lists[0].head : NIL;
	}
	/* Past a queue's MRU end: the next queue's LRU end. */
	while (c->node == NIL && c->queue + 1 < mq->p.nr_queues)
		c->node = mq->lists[++c->queue].head;
	if (c->node == NIL)
		return -ENOENT;
	*id = mq->nodes[c->node].id;
	node_info(&mq->nodes[c->node], info);
	c->node = mq->nodes[c->node].next;
	return 0;
}

void pt_mq_get_stats(const struct pt_mq *mq, struct pt_mq_stats *st)
{
	if (!st)
		return;
	if (!mq) {
		memset(st, 0, sizeof(*st));
		return;
	}
	*st = mq->st;
	st->now = mq->now;
	st->lifetime = mq->lifetime;
	st->resident = mq->resident;
	st->history = mq->lists[L_OUT].len;
	for (unsigned int k = 0; k < PT_MQ_MAX_QUEUES; k++)
		st->queue_len[k] = k < mq->p.nr_queues ? mq->lists[k].len : 0;
}

const struct pt_mq_params *pt_mq_get_params(const struct pt_mq *mq)
{
	return mq ? &mq->p : NULL;
}

/* --- self-check -------------------------------------------------------------------- */

static bool check_list(const struct pt_mq *mq, unsigned int l, uint64_t *total)
{
	const struct mq_list *list = &mq->lists[l];
	uint32_t prev = NIL, len = 0;
	uint64_t stamp = 0;

	for (uint32_t i = list->head; i != NIL; i = mq->nodes[i].next) {
		const struct mq_node *n;

		if (i >= mq->nr_used || len >= mq->nr_used)	/* out of the pool, or a cycle */
			return false;
		n = &mq->nodes[i];
		if (n->list != l || n->prev != prev || n->stamp < stamp || n->stamp > mq->now)
			return false;
		if (l != L_OUT && (n->freq < 1 || l > mq_queue_of(mq, n->freq) ||
				   n->touched > mq->now))
			return false;
		if (hash_find(mq, n->id) != i)
			return false;
		stamp = n->stamp;
		prev = i;
		len++;
	}
	if (list->tail != prev || list->len != len)
		return false;
	*total += len;
	return true;
}

int pt_mq_check(const struct pt_mq *mq)
{
	uint64_t resident = 0, total = 0, chained = 0, nfree = 0;

	if (!mq)
		return -EINVAL;
	for (unsigned int k = 0; k < mq->p.nr_queues; k++)
		if (!check_list(mq, k, &resident))
			return -EUCLEAN;
	for (unsigned int k = mq->p.nr_queues; k < L_OUT; k++)
		if (mq->lists[k].head != NIL || mq->lists[k].len)
			return -EUCLEAN;
	total = resident;
	if (!check_list(mq, L_OUT, &total))
		return -EUCLEAN;
	if (resident != mq->resident || resident > mq->p.max_resident ||
	    mq->lists[L_OUT].len > mq->p.max_history || total != mq->nr_live)
		return -EUCLEAN;
	/* Every chained node is live and in its own bucket; the free list holds the rest. */
	for (uint32_t b = 0; b < (1U << mq->hash_bits); b++)
		for (uint32_t i = mq->buckets[b]; i != NIL; i = mq->nodes[i].hnext) {
			if (i >= mq->nr_used || chained >= mq->nr_used ||
			    mq->nodes[i].list == L_FREE || mq_hash(mq->nodes[i].id, mq->hash_bits) != b)
				return -EUCLEAN;
			chained++;
		}
	for (uint32_t i = mq->free_head; i != NIL; i = mq->nodes[i].next) {
		if (i >= mq->nr_used || nfree >= mq->nr_used || mq->nodes[i].list != L_FREE)
			return -EUCLEAN;
		nfree++;
	}
	if (chained != mq->nr_live || nfree + mq->nr_live != mq->nr_used ||
	    mq->nr_used > mq->nr_slots || mq->nr_slots > mq->limit)
		return -EUCLEAN;
	if (mq->lifetime < mq->p.lifetime_min || mq->lifetime > mq->p.lifetime_max)
		return -EUCLEAN;
	return 0;
}
