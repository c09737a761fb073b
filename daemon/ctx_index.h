/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Lookups of the manager's contexts by cgroup id (every BPF event, tier event and finished
 * action) and by cgroup path (every cgroup a walk visits, every preloaded process): hash
 * tables over the context array, rebuilt after it changes (contexts come and go far less
 * often than they are looked up). A linear search at 3,000 contexts made each BPF event
 * cost 2 us and a cgroup walk grow with the square of their number (bench/scale).
 */
#ifndef PAGETIER_CTX_INDEX_H
#define PAGETIER_CTX_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pt_context;

struct pt_ctx_index {
	uint32_t *by_id;		/* slot -> context index + 1, 0: empty */
	uint32_t *by_path;
	size_t cap;			/* a power of two, at least twice the contexts */
	const struct pt_context *base;	/* the array it was built over ... */
	size_t n;			/* ... and its length */
	bool dirty;
};

/* The array changed (a context added, dropped or moved): rebuilt at the next lookup. */
static inline void pt_ctx_index_invalidate(struct pt_ctx_index *x)
{
	x->dirty = true;
}

/* @ctxs[@n - 1] was appended: indexed at once when the index is otherwise current. */
void pt_ctx_index_added(struct pt_ctx_index *x, const struct pt_context *ctxs, size_t n);
void pt_ctx_index_free(struct pt_ctx_index *x);

/* The index in @ctxs of the context of cgroup @id, or -1. */
long pt_ctx_index_find_id(struct pt_ctx_index *x, const struct pt_context *ctxs, size_t n,
			  uint64_t id);
/* The index of the context whose relpath is the first @len bytes of @path, or -1. */
long pt_ctx_index_find_path(struct pt_ctx_index *x, const struct pt_context *ctxs, size_t n,
			    const char *path, size_t len);

#endif
