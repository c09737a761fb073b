// SPDX-License-Identifier: GPL-2.0
#include "ctx_index.h"

#include <stdlib.h>
#include <string.h>

#include "context.h"

static uint64_t hash_id(uint64_t id)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdULL;
	id ^= id >> 33;
	return id;
}

/* FNV-1a */
static uint64_t hash_path(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

void pt_ctx_index_free(struct pt_ctx_index *x)
{
	free(x->by_id);
	free(x->by_path);
	memset(x, 0, sizeof(*x));
}

static void put(uint32_t *slots, size_t cap, uint64_t h, uint32_t v)
{
	size_t i = h & (cap - 1);

	while (slots[i])
		i = (i + 1) & (cap - 1);
	slots[i] = v;
}

void pt_ctx_index_added(struct pt_ctx_index *x, const struct pt_context *ctxs, size_t n)
{
	const struct pt_context *c = &ctxs[n - 1];

	if (x->dirty || !x->by_id || x->base != ctxs || x->n != n - 1 || 2 * n + 16 > x->cap) {
		x->dirty = true;
		return;
	}
	put(x->by_id, x->cap, hash_id(c->cgroup_id), (uint32_t)n);
	put(x->by_path, x->cap, hash_path(c->relpath, strlen(c->relpath)), (uint32_t)n);
	x->n = n;
}

/* Whether the index is usable for @ctxs[0..@n), rebuilt if need be. */
static bool ready(struct pt_ctx_index *x, const struct pt_context *ctxs, size_t n)
{
	size_t cap = 16;

	if (!x->dirty && x->base == ctxs && x->n == n && x->by_id)
		return true;
	while (cap < 2 * n + 16)
		cap *= 2;
	if (cap != x->cap || !x->by_id) {
		free(x->by_id);
		free(x->by_path);
		x->by_id = calloc(cap, sizeof(*x->by_id));
		x->by_path = calloc(cap, sizeof(*x->by_path));
		if (!x->by_id || !x->by_path) {
			pt_ctx_index_free(x);
			return false;	/* the callers search linearly */
		}
		x->cap = cap;
	} else {
		memset(x->by_id, 0, cap * sizeof(*x->by_id));
		memset(x->by_path, 0, cap * sizeof(*x->by_path));
	}
	for (size_t i = 0; i < n; i++) {
		put(x->by_id, cap, hash_id(ctxs[i].cgroup_id), (uint32_t)i + 1);
		put(x->by_path, cap, hash_path(ctxs[i].relpath, strlen(ctxs[i].relpath)),
		    (uint32_t)i + 1);
	}
	x->base = ctxs;
	x->n = n;
	x->dirty = false;
	return true;
}

long pt_ctx_index_find_id(struct pt_ctx_index *x, const struct pt_context *ctxs, size_t n,
			  uint64_t id)
{
	if (!ready(x, ctxs, n)) {
		for (size_t i = 0; i < n; i++)
			if (ctxs[i].cgroup_id == id)
				return (long)i;
		return -1;
	}
	for (size_t s = hash_id(id) & (x->cap - 1); x->by_id[s]; s = (s + 1) & (x->cap - 1))
		if (ctxs[x->by_id[s] - 1].cgroup_id == id)
			return (long)x->by_id[s] - 1;
	return -1;
}

static bool same_path(const struct pt_context *c, const char *path, size_t len)
{
	return strncmp(c->relpath, path, len) == 0 && c->relpath[len] == '\0';
}

long pt_ctx_index_find_path(struct pt_ctx_index *x, const struct pt_context *ctxs, size_t n,
			    const char *path, size_t len)
{
	if (!ready(x, ctxs, n)) {
		for (size_t i = 0; i < n; i++)
			if (same_path(&ctxs[i], path, len))
				return (long)i;
		return -1;
	}
	for (size_t s = hash_path(path, len) & (x->cap - 1); x->by_path[s];
	     s = (s + 1) & (x->cap - 1))
		if (same_path(&ctxs[x->by_path[s] - 1], path, len))
			return (long)x->by_path[s] - 1;
	return -1;
}
