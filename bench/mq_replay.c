// SPDX-License-Identifier: GPL-2.0
/*
 * mq_replay: replays per-epoch chunk access traces against the multi-queue hotness model
 * (daemon/mq.c) and against exact LRU at the same resident budget, and counts refaults.
 *
 *   cc -std=gnu11 -O2 -D_GNU_SOURCE -Idaemon -o mq_replay bench/mq_replay.c daemon/mq.c
 *   ./mq_replay                       the built-in synthetic traces (see README-mq.md)
 *   ./mq_replay -b 4000 FILE...       recorded traces
 *
 * Each epoch, every chunk touched in it must be resident; a touched chunk that is not is a
 * miss: compulsory the first time the trace touches it (the same for every policy), a
 * refault (the cost: an NVMe read the container waits for) afterwards. After each epoch each
 * policy evicts down to the budget: MQ the ids pt_mq_coldest() gives, after pt_mq_epoch();
 * LRU the least recently touched. OPT (Belady: evict the chunk touched again furthest in the
 * future) is the lower bound that no policy without lookahead reaches.
 *
 * A trace file is text, one line per epoch, with the chunk ids touched in that epoch
 * separated by spaces (decimal or 0x hex; repeats within a line count once); an empty line
 * is an epoch without access. '#' starts a comment line; "@budget N" sets the budget from
 * the next epoch on (idle containers shrink to their floor, for instance).
 *
 * Order within an epoch carries no recency (a scan reports accessed bits in address order),
 * so the ids of each synthetic epoch are shuffled, identically for every policy.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mq.h"

#define NONE		UINT32_MAX
#define MAX_BUDGET	(1U << 27)	/* MQ tracks 5x the budget: within PT_MQ_MAX_NODES */

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "mq_replay: out of memory (%zu bytes)\n", n);
		exit(1);
	}
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "mq_replay: out of memory (%zu bytes)\n", n);
		exit(1);
	}
	return p;
}

/* --- deterministic randomness ------------------------------------------------------ */

static uint64_t rng = 1;
static uint32_t fixed_lifetime = PT_MQ_DEF_LIFETIME;	/* the MQ-fixed column */

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t rnd_below(uint32_t n)
{
	return (uint32_t)(((rnd() >> 32) * n) >> 32);
}

/* True with probability @p. */
static bool chance(double p)
{
	return (double)(rnd() >> 11) * 0x1.0p-53 < p;
}

/* --- traces ------------------------------------------------------------------------ */

/* id -> dense index, open addressing. */
struct idmap {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap, n;
};

static size_t idmap_slot(const struct idmap *m, uint64_t id)
{
	uint64_t h = id * 0x9e3779b97f4a7c15ULL;
	size_t i = (size_t)(h ^ (h >> 29)) & (m->cap - 1);

	while (m->vals[i] != NONE && m->keys[i] != id)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static uint32_t idmap_get(struct idmap *m, uint64_t id)
{
	size_t i;

	if (2 * (m->n + 1) > m->cap) {
		struct idmap old = *m;

		m->cap = old.cap ? old.cap * 2 : 1024;
		m->keys = xmalloc(m->cap * sizeof(*m->keys));
		m->vals = xmalloc(m->cap * sizeof(*m->vals));
		memset(m->vals, 0xff, m->cap * sizeof(*m->vals));
		for (size_t j = 0; j < old.cap; j++)
			if (old.vals[j] != NONE) {
				size_t k = idmap_slot(m, old.keys[j]);

				m->keys[k] = old.keys[j];
				m->vals[k] = old.vals[j];
			}
		free(old.keys);
		free(old.vals);
	}
	i = idmap_slot(m, id);
	if (m->vals[i] == NONE) {
		m->keys[i] = id;
		m->vals[i] = (uint32_t)m->n++;
	}
	return m->vals[i];
}

struct trace {
	char name[64];
	size_t nr_epochs, cap_epochs;
	size_t *off;		/* epoch e touches ref[off[e] .. off[e + 1]) */
	uint32_t *budget;	/* per epoch */
	uint32_t *ref;		/* dense chunk index */
	size_t nr_refs, cap_refs;
	uint64_t *ids;		/* dense index -> chunk id */
	uint32_t nr_chunks;
	struct idmap map;
	uint32_t *last_epoch;	/* dense index -> last epoch it was added in + 1 */
	size_t cap_chunks;
	uint32_t cur_budget;
	bool shuffle;
};

static void trace_init(struct trace *t, const char *name, uint32_t budget, bool shuffle)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->cur_budget = budget;
	t->shuffle = shuffle;
	t->cap_epochs = 1024;
	t->off = xmalloc((t->cap_epochs + 1) * sizeof(*t->off));
	t->budget = xmalloc(t->cap_epochs * sizeof(*t->budget));
	t->off[0] = 0;
}

static void trace_free(struct trace *t)
{
	free(t->off);
	free(t->budget);
	free(t->ref);
	free(t->ids);
	free(t->map.keys);
	free(t->map.vals);
	free(t->last_epoch);
}

/* Adds @id to the epoch being built (epoch t->nr_epochs); repeats count once. */
static void trace_add(struct trace *t, uint64_t id)
{
	uint32_t c = idmap_get(&t->map, id);

	if (c == t->nr_chunks) {
		if (t->nr_chunks == t->cap_chunks) {
			t->cap_chunks = t->cap_chunks ? t->cap_chunks * 2 : 4096;
			t->ids = xrealloc(t->ids, t->cap_chunks * sizeof(*t->ids));
			t->last_epoch = xrealloc(t->last_epoch,
						 t->cap_chunks * sizeof(*t->last_epoch));
		}
		t->ids[c] = id;
		t->last_epoch[c] = 0;
		t->nr_chunks++;
	}
	if (t->last_epoch[c] == t->nr_epochs + 1)
		return;
	t->last_epoch[c] = (uint32_t)t->nr_epochs + 1;
	if (t->nr_refs == t->cap_refs) {
		t->cap_refs = t->cap_refs ? t->cap_refs * 2 : 65536;
		t->ref = xrealloc(t->ref, t->cap_refs * sizeof(*t->ref));
	}
	t->ref[t->nr_refs++] = c;
}

static void trace_end_epoch(struct trace *t)
{
	size_t e = t->nr_epochs, lo = t->off[e], n = t->nr_refs - lo;

	if (t->shuffle)
		for (size_t i = n; i > 1; i--) {
			size_t j = rnd_below((uint32_t)i);
			uint32_t tmp = t->ref[lo + i - 1];

			t->ref[lo + i - 1] = t->ref[lo + j];
			t->ref[lo + j] = tmp;
		}
	if (e + 1 == t->cap_epochs) {
		t->cap_epochs *= 2;
		t->off = xrealloc(t->off, (t->cap_epochs + 1) * sizeof(*t->off));
		t->budget = xrealloc(t->budget, t->cap_epochs * sizeof(*t->budget));
	}
	t->budget[e] = t->cur_budget;
	t->nr_epochs++;
	t->off[t->nr_epochs] = t->nr_refs;
}

/*
 * (1) scan: a hot set of 2000 chunks, each touched with probability 0.5 per epoch, and a
 * cold region of 40000 chunks swept every 100 epochs, 2500 chunks per epoch over 16 epochs
 * (a backup, a GC, an analytics pass). Budget 4000, twice the hot set. LRU's weakness:
 * the sweep pushes the hot chunks that were not touched in the last epoch or two out.
 */
static void gen_scan(struct trace *t, double scale)
{
	const uint32_t hot = 2000, cold = 40000, period = 100, sweep = 16;
	const uint32_t per = cold / sweep;

	trace_init(t, "scan", (uint32_t)(4000 * scale), true);
	for (uint32_t e = 0; e < 1000; e++) {
		for (uint32_t c = 0; c < hot; c++)
			if (chance(0.5))
				trace_add(t, c);
		if (e % period < sweep)
			for (uint32_t c = 0; c < per; c++)
				trace_add(t, 100000 + (e % period) * per + c);
		trace_end_epoch(t);
	}
}

/*
 * (2) idlewake: a container of 20000 chunks whose hot set is 10% (2000 random chunks).
 * Cycles of 40 active epochs (each hot chunk touched with probability 0.3, plus 1000
 * random other chunks: requests walking large in-memory data) and 100 idle epochs (50
 * background chunks, timers and heartbeats, touched with probability 0.5). Budget 6000
 * while active; 5 epochs into idle the container is shrunk to its floor of 2500 (the
 * daemon's idle offload), and back to 6000 on wake. The floor would hold the hot set: the
 * refaults after a wake say which chunks the policy kept through the idle phase.
 */
static void gen_idlewake(struct trace *t, double scale)
{
	const uint32_t size = 20000, nhot = 2000, nbg = 50, active = 40, idle = 100;
	uint32_t *perm = xmalloc(size * sizeof(*perm));

	trace_init(t, "idlewake", (uint32_t)(6000 * scale), true);
	for (uint32_t i = 0; i < size; i++)
		perm[i] = i;
	for (uint32_t i = size; i > 1; i--) {
		uint32_t j = rnd_below(i), tmp = perm[i - 1];

		perm[i - 1] = perm[j];
		perm[j] = tmp;
	}
	/* perm[0, nhot): hot; perm[nhot, nhot + nbg): background; the rest: cold. */
	for (uint32_t cycle = 0; cycle < 10; cycle++) {
		t->cur_budget = (uint32_t)(6000 * scale);
		for (uint32_t e = 0; e < active; e++) {
			for (uint32_t i = 0; i < nhot; i++)
				if (chance(0.3))
					trace_add(t, perm[i]);
			for (uint32_t i = 0; i < 1000; i++)
				trace_add(t, perm[nhot + nbg + rnd_below(size - nhot - nbg)]);
			trace_end_epoch(t);
		}
		for (uint32_t e = 0; e < idle; e++) {
			if (e == 5)
				t->cur_budget = (uint32_t)(2500 * scale);
			for (uint32_t i = nhot; i < nhot + nbg; i++)
				if (chance(0.5))
					trace_add(t, perm[i]);
			trace_end_epoch(t);
		}
	}
	free(perm);
}

/*
 * (3) zipf: 50000 chunks, 4000 accesses per epoch drawn from a Zipf(1.0) popularity over a
 * random permutation of the chunks (hot chunks are scattered, not adjacent). Budget 5000.
 * The independent-reference model where frequency beats recency.
 */
static void gen_zipf(struct trace *t, double scale)
{
	const uint32_t n = 50000, draws = 4000;
	double *cdf = xmalloc(n * sizeof(*cdf)), sum = 0;
	uint32_t *perm = xmalloc(n * sizeof(*perm));

	trace_init(t, "zipf", (uint32_t)(5000 * scale), true);
	for (uint32_t i = 0; i < n; i++) {
		sum += 1.0 / (i + 1);
		cdf[i] = sum;
		perm[i] = i;
	}
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = rnd_below(i), tmp = perm[i - 1];

		perm[i - 1] = perm[j];
		perm[j] = tmp;
	}
	for (uint32_t e = 0; e < 1000; e++) {
		for (uint32_t d = 0; d < draws; d++) {
			double u = (double)(rnd() >> 11) * 0x1.0p-53 * sum;
			uint32_t lo = 0, hi = n - 1;

			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;

				if (cdf[mid] < u)
					lo = mid + 1;
				else
					hi = mid;
			}
			trace_add(t, perm[lo]);
		}
		trace_end_epoch(t);
	}
	free(cdf);
	free(perm);
}

/*
 * (4) shift: 40000 chunks; a working set of 3000 chunks, each touched with probability 0.6
 * per epoch, plus 200 random chunks per epoch. Every 80 epochs the working set moves: a
 * quarter of it stays, the rest is replaced by random chunks (a new phase of the program,
 * a new tenant's data). Budget 4000. Recency's home ground: frequency learnt in the last
 * phase is stale in the next.
 */
static void gen_shift(struct trace *t, double scale)
{
	const uint32_t n = 40000, ws = 3000, phase = 80;
	uint32_t *set = xmalloc(ws * sizeof(*set));

	trace_init(t, "shift", (uint32_t)(4000 * scale), true);
	for (uint32_t i = 0; i < ws; i++)
		set[i] = rnd_below(n);
	for (uint32_t e = 0; e < 1200; e++) {
		if (e && e % phase == 0)
			for (uint32_t i = ws / 4; i < ws; i++)
				set[i] = rnd_below(n);
		for (uint32_t i = 0; i < ws; i++)
			if (chance(0.6))
				trace_add(t, set[i]);
		for (uint32_t i = 0; i < 200; i++)
			trace_add(t, rnd_below(n));
		trace_end_epoch(t);
	}
	free(set);
}

static int load_file(struct trace *t, const char *path, uint32_t budget)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	unsigned long lineno = 0;
	const char *base = strrchr(path, '/');

	if (!f) {
		fprintf(stderr, "mq_replay: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	trace_init(t, base ? base + 1 : path, budget, false);
	while (getline(&line, &cap, f) > 0) {
		char *p = line, *end;

		lineno++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#')
			continue;
		if (*p == '@') {
			unsigned long long b;

			if (sscanf(p, "@budget %llu", &b) != 1 || b == 0 || b > MAX_BUDGET) {
				fprintf(stderr, "mq_replay: %s:%lu: expected \"@budget N\", 0 < N <= %u\n",
					path, lineno, MAX_BUDGET);
				goto bad;
			}
			t->cur_budget = (uint32_t)b;
			continue;
		}
		for (;;) {
			unsigned long long id;

			while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
				p++;
			if (!*p)
				break;
			errno = 0;
			id = strtoull(p, &end, 0);
			if (end == p || errno ||
			    (*end && *end != ' ' && *end != '\t' && *end != '\r' && *end != '\n')) {
				fprintf(stderr, "mq_replay: %s:%lu: not a chunk id: \"%.*s\"\n",
					path, lineno, (int)strcspn(p, " \t\r\n"), p);
				goto bad;
			}
			trace_add(t, id);
			p = end;
		}
		trace_end_epoch(t);
	}
	free(line);
	fclose(f);
	return 0;
bad:
	free(line);
	fclose(f);
	trace_free(t);
	return -EINVAL;
}

/* --- policies ---------------------------------------------------------------------- */

struct result {
	uint64_t refaults;
	uint64_t compulsory;
	uint32_t lifetime;		/* MQ: at the end */
	uint64_t mispredictions;	/* MQ */
};

static uint32_t max_budget(const struct trace *t)
{
	uint32_t b = 1;

	for (size_t e = 0; e < t->nr_epochs; e++)
		if (t->budget[e] > b)
			b = t->budget[e];
	return b;
}

static uint32_t max_epoch(const struct trace *t)
{
	size_t m = 0;

	for (size_t e = 0; e < t->nr_epochs; e++)
		if (t->off[e + 1] - t->off[e] > m)
			m = t->off[e + 1] - t->off[e];
	return (uint32_t)m;
}

static void run_mq(const struct trace *t, bool adaptive, struct result *r)
{
	uint32_t budget = max_budget(t);
	struct pt_mq_params p;
	struct pt_mq_stats st;
	struct pt_mq *mq;
	uint64_t *victims;
	uint8_t *seen = calloc(t->nr_chunks ? t->nr_chunks : 1, 1);
	int ret;

	if (!seen) {
		fprintf(stderr, "mq_replay: out of memory\n");
		exit(1);
	}
	pt_mq_params_default(&p);
	if (!adaptive)
		p.lifetime = p.lifetime_min = p.lifetime_max = fixed_lifetime;
	p.max_resident = budget + max_epoch(t);
	p.max_history = 4 * budget;	/* the paper's Qout: 4x the cache */
	ret = pt_mq_new(&p, &mq);
	if (ret) {
		fprintf(stderr, "mq_replay: pt_mq_new: %s\n", strerror(-ret));
		exit(1);
	}
	victims = xmalloc((size_t)p.max_resident * sizeof(*victims));
	memset(r, 0, sizeof(*r));
	for (size_t e = 0; e < t->nr_epochs; e++) {
		for (size_t i = t->off[e]; i < t->off[e + 1]; i++) {
			uint32_t c = t->ref[i];

			ret = pt_mq_touch(mq, t->ids[c]);
			if (ret < 0) {
				fprintf(stderr, "mq_replay: pt_mq_touch: %s\n", strerror(-ret));
				exit(1);
			}
			if (ret == PT_MQ_HIT)
				continue;
			if (seen[c])
				r->refaults++;
			else
				r->compulsory++;
			seen[c] = 1;
		}
		pt_mq_epoch(mq);
		pt_mq_get_stats(mq, &st);
		if (st.resident > t->budget[e]) {
			int n = pt_mq_coldest(mq, victims, st.resident - t->budget[e]);

			for (int k = 0; k < n; k++)
				pt_mq_evicted(mq, victims[k]);
		}
	}
	if (pt_mq_check(mq)) {
		fprintf(stderr, "mq_replay: MQ invariants broken\n");
		exit(1);
	}
	pt_mq_get_stats(mq, &st);
	r->lifetime = st.lifetime;
	r->mispredictions = st.mispredictions;
	pt_mq_free(mq);
	free(victims);
	free(seen);
}

/* Exact LRU: a list over dense indices, MRU at the tail. */
static void run_lru(const struct trace *t, struct result *r)
{
	uint32_t n = t->nr_chunks ? t->nr_chunks : 1, head = NONE, tail = NONE, resident = 0;
	uint32_t *prev = xmalloc(n * sizeof(*prev)), *next = xmalloc(n * sizeof(*next));
	uint8_t *in = calloc(n, 1), *seen = calloc(n, 1);

	if (!in || !seen)
		exit(1);
	memset(r, 0, sizeof(*r));
	for (size_t e = 0; e < t->nr_epochs; e++) {
		for (size_t i = t->off[e]; i < t->off[e + 1]; i++) {
			uint32_t c = t->ref[i];

			if (in[c]) {
				if (prev[c] != NONE)
					next[prev[c]] = next[c];
				else
					head = next[c];
				if (next[c] != NONE)
					prev[next[c]] = prev[c];
				else
					tail = prev[c];
			} else {
				if (seen[c])
					r->refaults++;
				else
					r->compulsory++;
				seen[c] = in[c] = 1;
				resident++;
			}
			prev[c] = tail;
			next[c] = NONE;
			if (tail != NONE)
				next[tail] = c;
			else
				head = c;
			tail = c;
		}
		while (resident > t->budget[e]) {
			uint32_t c = head;

			head = next[c];
			if (head != NONE)
				prev[head] = NONE;
			else
				tail = NONE;
			in[c] = 0;
			resident--;
		}
	}
	free(prev);
	free(next);
	free(in);
	free(seen);
}

/* Belady's OPT: evict the resident chunk whose next touch is furthest away. */
struct hent {
	uint32_t key;	/* epoch of the next touch, NONE: never */
	uint32_t c;
};

static void heap_push(struct hent **h, size_t *n, size_t *cap, struct hent v)
{
	size_t i;

	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 4096;
		*h = xrealloc(*h, *cap * sizeof(**h));
	}
	i = (*n)++;
	while (i && (*h)[(i - 1) / 2].key < v.key) {
		(*h)[i] = (*h)[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	(*h)[i] = v;
}

static struct hent heap_pop(struct hent *h, size_t *n)
{
	struct hent top = h[0], v = h[--(*n)];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, m = l;

		if (l >= *n)
			break;
		if (l + 1 < *n && h[l + 1].key > h[l].key)
			m = l + 1;
		if (h[m].key <= v.key)
			break;
		h[i] = h[m];
		i = m;
	}
	if (*n)
		h[i] = v;
	return top;
}

static void run_opt(const struct trace *t, struct result *r)
{
	uint32_t n = t->nr_chunks ? t->nr_chunks : 1, resident = 0;
	uint32_t *nextuse = xmalloc((t->nr_refs ? t->nr_refs : 1) * sizeof(*nextuse));
	uint32_t *upcoming = xmalloc(n * sizeof(*upcoming)), *cur = xmalloc(n * sizeof(*cur));
	uint8_t *in = calloc(n, 1), *seen = calloc(n, 1);
	struct hent *heap = NULL;
	size_t hn = 0, hcap = 0;

	if (!in || !seen)
		exit(1);
	memset(r, 0, sizeof(*r));
	memset(upcoming, 0xff, n * sizeof(*upcoming));
	for (size_t e = t->nr_epochs; e-- > 0;)
		for (size_t i = t->off[e]; i < t->off[e + 1]; i++) {
			nextuse[i] = upcoming[t->ref[i]];
			upcoming[t->ref[i]] = (uint32_t)e;
		}
	for (size_t e = 0; e < t->nr_epochs; e++) {
		for (size_t i = t->off[e]; i < t->off[e + 1]; i++) {
			uint32_t c = t->ref[i];

			if (!in[c]) {
				if (seen[c])
					r->refaults++;
				else
					r->compulsory++;
				seen[c] = in[c] = 1;
				resident++;
			}
			cur[c] = nextuse[i];
			heap_push(&heap, &hn, &hcap, (struct hent){ .key = nextuse[i], .c = c });
		}
		while (resident > t->budget[e]) {
			struct hent v = heap_pop(heap, &hn);

			if (!in[v.c] || cur[v.c] != v.key)
				continue;	/* stale entry */
			in[v.c] = 0;
			resident--;
		}
	}
	free(nextuse);
	free(upcoming);
	free(cur);
	free(in);
	free(seen);
	free(heap);
}

/* --- main -------------------------------------------------------------------------- */

static void report_header(void)
{
	printf("%-14s %11s %6s %9s %8s %9s %9s %9s %9s %7s %5s\n", "trace", "budget", "epochs",
	       "accesses", "chunks", "LRU", "MQ", "MQ-fixed", "OPT", "MQ/LRU", "lt");
}

static void report(const struct trace *t)
{
	struct result lru, mq, mqf, opt;
	uint64_t accesses = t->nr_refs;
	char budget[32], ratio[16];
	uint32_t bmin = UINT32_MAX, bmax = max_budget(t);

	for (size_t e = 0; e < t->nr_epochs; e++)
		if (t->budget[e] < bmin)
			bmin = t->budget[e];
	if (bmin == bmax || !t->nr_epochs)
		snprintf(budget, sizeof(budget), "%u", bmax);
	else
		snprintf(budget, sizeof(budget), "%u/%u", bmax, bmin);
	run_lru(t, &lru);
	run_mq(t, true, &mq);
	run_mq(t, false, &mqf);
	run_opt(t, &opt);
	if (lru.compulsory != mq.compulsory || mq.compulsory != opt.compulsory)
		fprintf(stderr, "mq_replay: compulsory misses differ (bug)\n");
	if (lru.refaults)
		snprintf(ratio, sizeof(ratio), "%.0f%%",
			 100.0 * (double)mq.refaults / (double)lru.refaults);
	else
		snprintf(ratio, sizeof(ratio), "-");
	printf("%-14s %11s %6zu %9" PRIu64 " %8u %9" PRIu64 " %9" PRIu64 " %9" PRIu64
	       " %9" PRIu64 " %7s %5u\n",
	       t->name, budget, t->nr_epochs, accesses, t->nr_chunks, lru.refaults, mq.refaults,
	       mqf.refaults, opt.refaults, ratio, mq.lifetime);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mq_replay [-s SEED] [-x SCALE[,SCALE...]] [-l LIFETIME] [-b BUDGET] [FILE...]\n"
		"  no FILE: the built-in traces scan, idlewake, zipf, shift\n"
		"  -s SEED   random seed of the synthetic traces (default 1)\n"
		"  -x LIST   budget multipliers for the built-in traces (default 0.5,1,2)\n"
		"  -l N      lifeTime of the MQ-fixed column (default %u epochs)\n"
		"  -b N      resident budget in chunks for trace files (default: a quarter of\n"
		"            the chunks the file touches); \"@budget N\" lines override it\n"
		"Columns: refaults (misses after the first touch) per policy; MQ/LRU; lt: MQ's\n"
		"final lifeTime in epochs. Compulsory misses are the same for all and left out.\n",
		PT_MQ_DEF_LIFETIME);
}

int main(int argc, char **argv)
{
	double scales[8] = { 0.5, 1, 2 };
	int nscales = 3, opt;
	uint64_t budget = 0;
	unsigned long lt_arg;
	void (*gens[])(struct trace *, double) = { gen_scan, gen_idlewake, gen_zipf, gen_shift };

	while ((opt = getopt(argc, argv, "s:x:b:l:h")) != -1) {
		char *end;

		switch (opt) {
		case 's':
			rng = strtoull(optarg, &end, 0);
			if (*end) {
				usage(stderr);
				return 2;
			}
			break;
		case 'x':
			nscales = 0;
			for (char *p = optarg; *p && nscales < 8; p = *end ? end + 1 : end) {
				scales[nscales] = strtod(p, &end);
				if (end == p || scales[nscales] <= 0 || (*end && *end != ',')) {
					usage(stderr);
					return 2;
				}
				nscales++;
			}
			break;
		case 'b':
			budget = strtoull(optarg, &end, 0);
			if (*end || !budget || budget > MAX_BUDGET) {
				usage(stderr);
				return 2;
			}
			break;
		case 'l':
			lt_arg = strtoul(optarg, &end, 0);
			if (*end || !lt_arg || lt_arg > PT_MQ_MAX_LIFETIME) {
				usage(stderr);
				return 2;
			}
			fixed_lifetime = (uint32_t)lt_arg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	report_header();
	if (optind < argc) {
		for (int i = optind; i < argc; i++) {
			struct trace t;

			if (load_file(&t, argv[i], (uint32_t)budget) < 0)
				return 1;
			if (!budget) {
				/* Default budget: a quarter of the footprint. */
				uint32_t b = t.nr_chunks / 4 ? t.nr_chunks / 4 : 1;

				for (size_t e = 0; e < t.nr_epochs; e++)
					if (!t.budget[e])
						t.budget[e] = b;
			}
			report(&t);
			trace_free(&t);
		}
		return 0;
	}
	for (size_t g = 0; g < sizeof(gens) / sizeof(gens[0]); g++)
		for (int s = 0; s < nscales; s++) {
			uint64_t seed = rng;
			struct trace t;

			gens[g](&t, scales[s]);
			rng = seed;	/* the same trace at every budget */
			report(&t);
			trace_free(&t);
		}
	return 0;
}
