// SPDX-License-Identifier: GPL-2.0
#include "hotness.h"

#include <errno.h>

#include "grow.h"
#include "pidfd.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --- id set ------------------------------------------------------------------------- */

static size_t id_hash(uint64_t id, size_t cap)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdULL;
	id ^= id >> 33;
	return (size_t)(id & (cap - 1));
}

static int idset_grow(struct pt_idset *s)
{
	size_t cap = s->cap ? s->cap * 2 : 1024;
	uint64_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		size_t j;

		if (!s->slots[i])
			continue;
		for (j = id_hash(s->slots[i] - 1, cap); slots[j]; j = (j + 1) & (cap - 1))
			;
		slots[j] = s->slots[i];
	}
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

int pt_idset_add(struct pt_idset *s, uint64_t id)
{
	size_t j;

	if ((s->n + 1) * 2 > s->cap && idset_grow(s))
		return -ENOMEM;
	for (j = id_hash(id, s->cap); s->slots[j]; j = (j + 1) & (s->cap - 1))
		if (s->slots[j] == id + 1)
			return 0;
	s->slots[j] = id + 1;
	s->n++;
	return 1;
}

bool pt_idset_has(const struct pt_idset *s, uint64_t id)
{
	if (!s->cap)
		return false;
	for (size_t j = id_hash(id, s->cap); s->slots[j]; j = (j + 1) & (s->cap - 1))
		if (s->slots[j] == id + 1)
			return true;
	return false;
}

void pt_idset_clear(struct pt_idset *s)
{
	if (s->slots)
		memset(s->slots, 0, s->cap * sizeof(*s->slots));
	s->n = 0;
}

void pt_idset_free(struct pt_idset *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

/* --- the context's model ------------------------------------------------------------ */

int pt_hot_init(struct pt_hot *h, unsigned int chunk_shift, uint32_t max_chunks)
{
	struct pt_mq_params p;
	int rc;

	memset(h, 0, sizeof(*h));
	if (chunk_shift < 12 || chunk_shift > 30)
		return -EINVAL;
	h->chunk_shift = chunk_shift;
	h->precision = h->recall = -1;
	pt_mq_params_default(&p);
	p.max_resident = max_chunks;
	p.max_history = max_chunks;
	rc = pt_mq_new(&p, &h->mq);
	/* Epoch 0 is reserved: stamp 0 means "resident, never seen accessed" (insert_cold). */
	if (!rc)
		pt_mq_epoch(h->mq);
	return rc;
}

void pt_hot_free(struct pt_hot *h)
{
	for (int i = 0; i < PT_HOT_MAX_PROCS; i++)
		pt_pidfd_close(h->pidfds[i]);
	pt_mq_free(h->mq);
	pt_idset_free(&h->refaulted);
	pt_idset_free(&h->suspected);
	pt_idset_free(&h->mispredicted);
	pt_idset_free(&h->prefetched);
	pt_idset_free(&h->used);
	free(h->wake_set);
	memset(h, 0, sizeof(*h));
}

uint64_t pt_hot_chunk_id(const struct pt_hot *h, int slot, uint64_t addr)
{
	return ((uint64_t)slot << PT_HOT_ADDR_BITS) | (addr >> h->chunk_shift);
}

void pt_hot_chunk_addr(const struct pt_hot *h, uint64_t id, int *slot, uint64_t *addr)
{
	*slot = (int)(id >> PT_HOT_ADDR_BITS);
	*addr = (id & ((1ULL << PT_HOT_ADDR_BITS) - 1)) << h->chunk_shift;
}

/* Lets go of slot @i's pidfd, if it keeps one. */
static void release_pidfd(struct pt_hot *h, int i)
{
	if (h->pidfds[i] > 0) {
		pt_pidfd_close(h->pidfds[i]);
		h->n_pidfds--;
	}
	h->pidfds[i] = 0;
}

static void forget_slot(struct pt_hot *h, int i)
{
	pt_mq_remove_range(h->mq, pt_hot_chunk_id(h, i, 0),
			   pt_hot_chunk_id(h, i, ~0ULL >> (64 - PT_HOT_ADDR_BITS - h->chunk_shift)));
	h->pids[i] = 0;
	h->starts[i] = 0;
	release_pidfd(h, i);
}

static int slot_of(struct pt_hot *h, pid_t pid, uint64_t start, bool add)
{
	int free_slot = -1;

	for (int i = 0; i < PT_HOT_MAX_PROCS; i++) {
		if (h->pids[i] == pid) {
			if (h->starts[i] == start || !start || !h->starts[i])
				return i;
			/* The number was reused: the old process's chunks are not this one's. */
			forget_slot(h, i);
			free_slot = i;
			break;
		}
		if (!h->pids[i] && free_slot < 0)
			free_slot = i;
	}
	if (!add || free_slot < 0)
		return -ENOSPC;
	h->pids[free_slot] = pid;
	h->starts[free_slot] = start;
	return free_slot;
}

static void end_window(struct pt_hot *h)
{
	h->unused_prefetched = h->prefetched.n > h->used_prefetched ?
			       h->prefetched.n - h->used_prefetched : 0;
	h->precision = h->prefetched.n ? (double)h->used_prefetched / (double)h->prefetched.n : -1;
	h->recall = h->used.n ? (double)h->used_prefetched / (double)h->used.n : -1;
	h->window_left = 0;
}

/*
 * Whether an access to @id now is fresh: not accessed in the PT_HOT_FRESH_EPOCHS before.
 * *@info gets what the model knew of it (where PT_MQ_ABSENT: nothing).
 */
static bool fresh_access(const struct pt_hot *h, uint64_t id, uint64_t now,
			 struct pt_mq_chunk *info)
{
	if (pt_mq_lookup(h->mq, id, info)) {
		info->where = PT_MQ_ABSENT;
		return true;
	}
	if (!info->accessed)
		return true;
	if (info->last_access == now)
		return false;	/* already counted this epoch */
	return info->where != PT_MQ_RESIDENT || info->last_access + PT_HOT_FRESH_EPOCHS < now;
}

int pt_hot_apply_scans(struct pt_hot *h, struct pt_proc_scan *scans, int n)
{
	bool alive[PT_HOT_MAX_PROCS] = { false };
	uint64_t now = pt_hot_now(h);
	uint32_t accessed = 0, fresh = 0;
	int refaults = 0;

	for (int p = 0; p < n; p++) {
		int slot = slot_of(h, scans[p].pid, scans[p].start, true);

		if (slot < 0)
			continue;	/* more processes than slots: the rest go unmodelled */
		alive[slot] = true;
		/* The process as this scan saw it (in the cgroup, alive): what advice reaches. */
		if (scans[p].pidfd > 0) {
			release_pidfd(h, slot);
			h->pidfds[slot] = scans[p].pidfd;
			scans[p].pidfd = 0;
			/* Within the limits, or named by pid and start time alone (pidfd.h). */
			pt_pidfd_keep(&h->pidfds[slot], &h->n_pidfds, PT_PIDFD_HOLDER_MAX);
		}
		for (uint32_t c = 0; c < scans[p].n; c++) {
			const struct pt_chunk_scan *cs = &scans[p].chunks[c];
			uint64_t id = pt_hot_chunk_id(h, slot, cs->addr);
			struct pt_mq_chunk info;
			int r;

			if (!cs->accessed) {
				/* Resident but unknown (tracking just began): the coldest there is. */
				if (cs->present)
					pt_mq_insert_cold(h->mq, id);
				continue;
			}
			accessed++;
			fresh += fresh_access(h, id, now, &info);
			r = pt_mq_touch(h->mq, id);
			/* A chunk the wake's prefetch brought back is a hit, not a refault. */
			if (r == PT_MQ_REFAULT && !pt_idset_has(&h->prefetched, id)) {
				refaults++;
				h->refaults++;
				pt_idset_add(&h->refaulted, id);
				/*
				 * Back within the threshold it had passed, for the second time: a
				 * period (PT_HOT_REFAULT_COLD_MULT).
				 */
				if (info.where == PT_MQ_HISTORY && h->cold_epochs &&
				    now - info.stamp <= h->cold_epochs &&
				    pt_idset_add(&h->suspected, id) == 0)
					pt_idset_add(&h->mispredicted, id);
			}
			if (h->window_left && pt_idset_add(&h->used, id) == 1 &&
			    pt_idset_has(&h->prefetched, id))
				h->used_prefetched++;
		}
	}
	/* Processes that did not show up have exited: forget their chunks. */
	for (int i = 0; i < PT_HOT_MAX_PROCS; i++)
		if (h->pids[i] && !alive[i])
			forget_slot(h, i);
	h->ep_accessed = accessed;
	h->ep_fresh = fresh;
	pt_mq_epoch(h->mq);
	h->epochs++;
	if (h->window_left && !--h->window_left)
		end_window(h);
	return refaults;
}

void pt_hot_skip_epochs(struct pt_hot *h, uint32_t n)
{
	while (n--) {
		pt_mq_epoch(h->mq);
		h->epochs++;
		if (h->window_left && !--h->window_left)
			end_window(h);
	}
}

uint64_t pt_hot_now(const struct pt_hot *h)
{
	struct pt_mq_stats st;

	pt_mq_get_stats(h->mq, &st);
	return st.now;
}

static uint64_t *resident_ids(const struct pt_hot *h, bool hottest, int *n)
{
	struct pt_mq_stats st;
	uint64_t *ids;

	pt_mq_get_stats(h->mq, &st);
	ids = malloc((st.resident ? st.resident : 1) * sizeof(*ids));
	if (!ids)
		return NULL;
	*n = hottest ? pt_mq_hottest(h->mq, ids, st.resident) :
		       pt_mq_coldest(h->mq, ids, st.resident);
	return ids;
}

struct region_mark {
	uint64_t region;	/* chunk id >> (PT_HOT_REGION_SHIFT - chunk_shift) */
	uint64_t id;
	uint32_t order;		/* rank in the coldest-first list */
	bool cold;
};

static int cmp_region(const void *a, const void *b)
{
	const struct region_mark *x = a, *y = b;

	if (x->region != y->region)
		return x->region < y->region ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int cmp_order(const void *a, const void *b)
{
	const struct region_mark *x = a, *y = b;

	return x->order < y->order ? -1 : x->order > y->order;
}

int pt_hot_cold_chunks(const struct pt_hot *h, uint32_t cold_epochs, uint64_t *out, size_t max)
{
	unsigned int rshift = h->chunk_shift < PT_HOT_REGION_SHIFT ?
			      PT_HOT_REGION_SHIFT - h->chunk_shift : 0;
	uint64_t now = pt_hot_now(h);
	struct region_mark *m;
	size_t found = 0, keep = 0;
	int n = 0;
	uint64_t *ids = resident_ids(h, false, &n);

	if (!ids)
		return -ENOMEM;
	m = malloc((n ? (size_t)n : 1) * sizeof(*m));
	if (!m) {
		free(ids);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		struct pt_mq_chunk info;

		/* epochs closed since its last access without one: now - last_access - 1 */
		m[i].id = ids[i];
		m[i].order = (uint32_t)i;
		m[i].region = ids[i] >> rshift;
		uint64_t need = pt_idset_has(&h->mispredicted, ids[i]) ?
				(uint64_t)cold_epochs * PT_HOT_REFAULT_COLD_MULT : cold_epochs;

		m[i].cold = pt_mq_lookup(h->mq, ids[i], &info) == 0 &&
			    info.last_access + need < now;
	}
	free(ids);
	/*
	 * A 2 MiB region (a transparent huge page, where there is one) gives up its cold
	 * chunks only when more than PT_HOT_REGION_SWAP_MAX pages of it leave, or all its
	 * resident chunks are cold: khugepaged swaps up to that many pages of a region back in
	 * to collapse it into a huge page again (max_ptes_swap), which the model would see as
	 * refaults. A partly cold huge page is split by the kernel; its cold part leaves.
	 */
	qsort(m, (size_t)n, sizeof(*m), cmp_region);
	for (size_t i = 0; i < (size_t)n;) {
		size_t j = i, cold = 0;

		for (; j < (size_t)n && m[j].region == m[i].region; j++)
			cold += m[j].cold;
		bool leaves = cold == j - i ||
			      (cold << h->chunk_shift) / 4096 > PT_HOT_REGION_SWAP_MAX;

		for (; i < j; i++)
			if (leaves && m[i].cold)
				m[keep++] = m[i];
	}
	qsort(m, keep, sizeof(*m), cmp_order);	/* back to coldest first */
	for (size_t i = 0; i < keep && found < max; i++)
		out[found++] = m[i].id;
	free(m);
	return (int)found;
}

/*
 * Resident chunks whose last access lies in [from, to] and that were used in at least
 * @min_freq epochs, hottest first, into *@out.
 */
static int accessed_between(const struct pt_hot *h, uint64_t from, uint64_t to,
			    uint32_t min_freq, size_t extra, uint64_t **out)
{
	uint64_t *ids, *set;
	size_t found = 0;
	int n = 0;

	*out = NULL;
	ids = resident_ids(h, true, &n);
	if (!ids)
		return -ENOMEM;
	set = malloc(((size_t)n + extra + 1) * sizeof(*set));
	if (!set) {
		free(ids);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		struct pt_mq_chunk info;

		/* Never seen accessed (only known as present): part of no working set. */
		if (pt_mq_lookup(h->mq, ids[i], &info) == 0 && info.accessed &&
		    info.last_access >= from && info.last_access <= to && info.freq >= min_freq)
			set[found++] = ids[i];
	}
	free(ids);
	*out = set;
	return (int)found;
}

/*
 * Appends @id to @set (of *@found) unless @seen has it; in use while quiet (resident and
 * accessed after @busy_epoch) it stays resident, nothing to prefetch. With @known, only a
 * chunk the model still has. 0 or -ENOMEM.
 */
static int add_to_wake_set(const struct pt_hot *h, uint64_t *set, size_t *found,
			   struct pt_idset *seen, uint64_t id, uint64_t busy_epoch, bool known)
{
	struct pt_mq_chunk info;
	int rc;

	if (pt_mq_lookup(h->mq, id, &info) == 0) {
		if (info.where == PT_MQ_RESIDENT && info.last_access > busy_epoch)
			return 0;
	} else if (known) {
		return 0;
	}
	rc = pt_idset_add(seen, id);
	if (rc > 0)
		set[(*found)++] = id;
	return rc < 0 ? rc : 0;
}

int pt_hot_record_wake_set(struct pt_hot *h, uint64_t busy_epoch, uint32_t recent_epochs,
			   bool keep_previous)
{
	uint64_t from = busy_epoch > recent_epochs ? busy_epoch - recent_epochs : 0, *set;
	size_t extra = h->refaulted.n + (keep_previous ? h->n_wake_set : 0), found;
	struct pt_idset seen = { 0 };
	int n, rc = 0;

	/* Going idle again ends the measuring window of the previous wake. */
	if (h->window_left)
		end_window(h);
	n = accessed_between(h, from, busy_epoch, 2, extra, &set);
	if (n < 0)
		return n;
	found = (size_t)n;
	for (size_t i = 0; i < found && !rc; i++)
		rc = pt_idset_add(&seen, set[i]) < 0 ? -ENOMEM : 0;
	/* Refaulted since the last wake (the REAP idea): needed, whatever their rank. */
	for (size_t i = 0; i < h->refaulted.cap && !rc; i++)
		if (h->refaulted.slots[i])
			rc = add_to_wake_set(h, set, &found, &seen, h->refaulted.slots[i] - 1,
					     busy_epoch, false);
	/*
	 * A busy period of the container's own background (its timers, no request) says
	 * nothing of what its next request needs: the set it replaces goes on, after it.
	 */
	for (size_t i = 0; keep_previous && i < h->n_wake_set && !rc; i++)
		rc = add_to_wake_set(h, set, &found, &seen, h->wake_set[i], busy_epoch, true);
	pt_idset_free(&seen);
	if (rc) {
		free(set);
		return rc;
	}
	free(h->wake_set);
	h->wake_set = set;
	h->n_wake_set = found;
	return (int)found;
}

int pt_hot_keep_set(const struct pt_hot *h, uint64_t since, uint64_t **ids)
{
	int n = accessed_between(h, since, UINT64_MAX, 0, 0, ids);

	if (n == 0) {
		free(*ids);
		*ids = NULL;
	}
	return n;
}

uint32_t pt_hot_cold_backoff(struct pt_hot *h, uint64_t cold_epochs)
{
	uint64_t now = pt_hot_now(h);
	struct pt_mq_stats st;

	pt_mq_get_stats(h->mq, &st);
	if (!h->backoff)
		h->backoff = 1;
	h->cold_epochs = cold_epochs * h->backoff;
	/*
	 * One step per cold_epochs at most: refaults of a step's offloads show up after it.
	 * Rates below PT_HOT_BACKOFF_MIN_MILLI (a chunk every few epochs) are noise, not a
	 * verdict on the offloads.
	 */
	if (now - h->backoff_epoch < (cold_epochs ? cold_epochs : 1))
		return (uint32_t)(cold_epochs * h->backoff);
	if (st.refault_rate_milli * 8 > st.evict_rate_milli &&
	    st.refault_rate_milli > PT_HOT_BACKOFF_MIN_MILLI) {
		if (h->backoff < 8) {
			h->backoff *= 2;
			h->backoff_epoch = now;
		}
	} else if (st.refault_rate_milli * 32 < st.evict_rate_milli ||
		   st.refault_rate_milli <= PT_HOT_BACKOFF_MIN_MILLI / 4) {
		if (h->backoff > 1)
			h->backoff_epoch = now;
		h->backoff = 1;
	}
	h->cold_epochs = cold_epochs * h->backoff;
	return (uint32_t)(cold_epochs * h->backoff);
}

void pt_hot_evicted(struct pt_hot *h, const uint64_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pt_mq_evicted(h->mq, ids[i]);
}

void pt_hot_evict_all(struct pt_hot *h, uint64_t since)
{
	int n = 0;
	uint64_t *ids = resident_ids(h, false, &n);

	if (!ids)
		return;
	for (int i = 0; i < n; i++) {
		struct pt_mq_chunk info;

		if (since && pt_mq_lookup(h->mq, ids[i], &info) == 0 && info.accessed &&
		    info.last_access >= since)
			continue;	/* the idle working set stays */
		pt_mq_evicted(h->mq, ids[i]);
	}
	free(ids);
}

void pt_hot_prefetched(struct pt_hot *h, uint32_t window)
{
	pt_idset_clear(&h->prefetched);
	pt_idset_clear(&h->used);
	for (size_t i = 0; i < h->n_wake_set; i++)
		pt_idset_add(&h->prefetched, h->wake_set[i]);
	h->used_prefetched = 0;
	h->window_left = window;
	pt_idset_clear(&h->refaulted);
	pt_idset_clear(&h->suspected);
	pt_idset_clear(&h->mispredicted);
}

int pt_hot_ranges(const struct pt_hot *h, const uint64_t *ids, size_t n,
		  struct pt_proc_ranges **out)
{
	struct pt_proc_ranges *pr = NULL;
	uint64_t chunk = 1ULL << h->chunk_shift;
	size_t cap_pr = 0;
	int np = 0;

	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		struct pt_proc_ranges *p = NULL;
		uint64_t addr;
		int slot;

		pt_hot_chunk_addr(h, ids[i], &slot, &addr);
		if (slot < 0 || slot >= PT_HOT_MAX_PROCS || !h->pids[slot])
			continue;
		for (int j = 0; j < np; j++)
			if (pr[j].pid == h->pids[slot])
				p = &pr[j];
		if (!p) {
			if (pt_grow((void **)&pr, &cap_pr, (size_t)np + 1, sizeof(*pr)))
				goto nomem;
			p = &pr[np++];
			memset(p, 0, sizeof(*p));
			p->pid = h->pids[slot];
			p->start = h->starts[slot];
			/*
			 * Its own pidfd: the context may let go of the slot while a job advises.
			 * Over the limit (0): the advice pins it then.
			 */
			if (h->pidfds[slot] > 0)
				p->pidfd = pt_pidfd_dup(h->pidfds[slot]);
		}
		if (p->n && p->r[p->n - 1].start + p->r[p->n - 1].len == addr) {
			p->r[p->n - 1].len += chunk;	/* adjacent: one larger range */
			continue;
		}
		{
			size_t cap = (size_t)p->cap;

			if (pt_grow((void **)&p->r, &cap, (size_t)p->n + 1, sizeof(*p->r)))
				goto nomem;
			p->cap = (int)cap;
		}
		p->r[p->n].start = addr;
		p->r[p->n].len = chunk;
		p->n++;
	}
	*out = pr;
	return np;
nomem:
	for (int j = 0; j < np; j++)
		pt_proc_ranges_free(&pr[j]);
	free(pr);
	return -ENOMEM;
}
