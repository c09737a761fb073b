// SPDX-License-Identifier: GPL-2.0
#include "victims.h"

#include "grow.h"

#include <errno.h>
#include <stdlib.h>

struct cand {
	int source;
	int idle;
	unsigned int queue;
	uint64_t stamp;
	uint64_t chunk;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->idle != y->idle)
		return y->idle - x->idle;	/* idle contexts first */
	if (x->queue != y->queue)
		return x->queue < y->queue ? -1 : 1;
	if (x->stamp != y->stamp)
		return x->stamp < y->stamp ? -1 : 1;
	return x->source - y->source;	/* deterministic */
}

int pt_victims_pick(const struct pt_victim_source *src, int n_src, uint64_t need,
		    uint32_t min_cold_epochs, struct pt_victim *out, size_t max)
{
	struct cand *c = NULL;
	size_t n = 0, cap = 0, picked = 0;
	uint64_t *taken;

	taken = calloc(n_src ? (size_t)n_src : 1, sizeof(*taken));
	if (!taken)
		return -ENOMEM;
	for (int s = 0; s < n_src; s++) {
		const struct pt_hot *h = src[s].hot;
		uint64_t chunk = 1ULL << h->chunk_shift, budget = src[s].evictable_bytes;
		struct pt_mq_stats st;
		uint64_t *ids;
		int k;

		pt_mq_get_stats(h->mq, &st);
		if (!st.resident || budget < chunk)
			continue;
		ids = malloc(st.resident * sizeof(*ids));
		if (!ids)
			goto nomem;
		k = pt_mq_coldest(h->mq, ids, st.resident);
		/* Each context offers at most what lies above its floor, coldest first. */
		for (int i = 0; i < k && budget >= chunk; i++) {
			struct pt_mq_chunk info;

			/* Its last access, not the model's demotions: "unused for N epochs". */
			if (pt_mq_lookup(h->mq, ids[i], &info) ||
			    info.last_access + min_cold_epochs >= st.now)
				continue;	/* used too recently */
			if (pt_grow((void **)&c, &cap, n + 1, sizeof(*c))) {
				free(ids);
				goto nomem;
			}
			c[n++] = (struct cand){ .source = s, .idle = src[s].idle, .queue = info.queue,
						.stamp = info.stamp, .chunk = ids[i] };
			budget -= chunk;
		}
		free(ids);
	}
	if (n)
		qsort(c, n, sizeof(*c), cmp_cand);
	for (size_t i = 0; i < n && picked < max && need; i++) {
		uint64_t chunk = 1ULL << src[c[i].source].hot->chunk_shift;

		out[picked].source = c[i].source;
		out[picked].chunk = c[i].chunk;
		picked++;
		taken[c[i].source] += chunk;
		need = need > chunk ? need - chunk : 0;
	}
	free(c);
	free(taken);
	return (int)picked;
nomem:
	free(c);
	free(taken);
	return -ENOMEM;
}
