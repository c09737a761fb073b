// SPDX-License-Identifier: GPL-2.0
#include "victims.h"

#include <errno.h>
#include <stdlib.h>

/*
 * Each context's model already keeps its chunks in its own coldest order (queue, then last
 * access: pt_mq_coldest_next()), so the global order is a merge of one walk per context, a
 * binary heap of their heads: a pass costs the contexts' number plus what it picks, times
 * the heap's log, not every resident chunk of every context listed and sorted (0.94 s for
 * 3,000 contexts of 1 TiB in all in bench/scale's micro, every scan interval while the host
 * is below its watermark).
 */
struct walk {
	struct pt_mq_cursor cur;
	const struct pt_mq *mq;
	uint64_t now;			/* the model's epoch */
	uint64_t chunk;			/* bytes */
	uint64_t budget;		/* bytes it may still give */
	/* Its next victim: */
	unsigned int queue;
	uint64_t stamp;
	uint64_t id;
};

struct heap {
	struct walk *w;
	int *at;			/* heap of indices into w */
	int n;
	const struct pt_victim_source *src;	/* their idle flags */
};

/* The global order: idle contexts first, then the model's rank, then the source. */
static bool before(const struct heap *h, int a, int b)
{
	const struct walk *x = &h->w[a], *y = &h->w[b];

	if (h->src[a].idle != h->src[b].idle)
		return h->src[a].idle > h->src[b].idle;
	if (x->queue != y->queue)
		return x->queue < y->queue;
	if (x->stamp != y->stamp)
		return x->stamp < y->stamp;
	return a < b;	/* deterministic */
}

static void sift_down(struct heap *h, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i, t;

		if (l < h->n && before(h, h->at[l], h->at[m]))
			m = l;
		if (r < h->n && before(h, h->at[r], h->at[m]))
			m = r;
		if (m == i)
			return;
		t = h->at[i];
		h->at[i] = h->at[m];
		h->at[m] = t;
		i = m;
	}
}

/*
 * Moves walk @w to its next victim: a chunk not used in the last @min_cold epochs (its last
 * access, not the model's demotions: "unused for N epochs"), while it has budget for one.
 */
static bool advance(struct walk *w, uint32_t min_cold)
{
	struct pt_mq_chunk info;
	uint64_t id;

	if (w->budget < w->chunk)
		return false;
	while (!pt_mq_coldest_next(w->mq, &w->cur, &id, &info)) {
		if (info.last_access + min_cold >= w->now)
			continue;	/* used too recently */
		w->queue = info.queue;
		w->stamp = info.stamp;
		w->id = id;
		return true;
	}
	return false;
}

int pt_victims_pick(const struct pt_victim_source *src, int n_src, uint64_t need,
		    uint32_t min_cold_epochs, struct pt_victim *out, size_t max)
{
	struct heap h = { .src = src };
	size_t picked = 0;

	if (n_src <= 0 || !need || !max)
		return 0;
	h.w = calloc((size_t)n_src, sizeof(*h.w));
	h.at = calloc((size_t)n_src, sizeof(*h.at));
	if (!h.w || !h.at) {
		free(h.w);
		free(h.at);
		return -ENOMEM;
	}
	for (int s = 0; s < n_src; s++) {
		struct walk *w = &h.w[s];
		struct pt_mq_stats st;

		pt_mq_get_stats(src[s].hot->mq, &st);
		w->mq = src[s].hot->mq;
		w->now = st.now;
		w->chunk = 1ULL << src[s].hot->chunk_shift;
		/* Each context offers at most what lies above its floor, coldest first. */
		w->budget = src[s].evictable_bytes;
		pt_mq_cursor_init(&w->cur);
		if (st.resident && advance(w, min_cold_epochs))
			h.at[h.n++] = s;
	}
	for (int i = h.n / 2; i-- > 0;)
		sift_down(&h, i);
	while (h.n && picked < max && need) {
		int s = h.at[0];
		struct walk *w = &h.w[s];

		out[picked].source = s;
		out[picked].chunk = w->id;
		picked++;
		need = need > w->chunk ? need - w->chunk : 0;
		w->budget -= w->chunk;
		if (!advance(w, min_cold_epochs))
			h.at[0] = h.at[--h.n];
		sift_down(&h, 0);
	}
	free(h.w);
	free(h.at);
	return (int)picked;
}
