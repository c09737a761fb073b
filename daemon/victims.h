/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The global victim order: when the host's free memory falls below the watermark, the
 * chunks to offload are chosen in one order across all contexts, not per context, so the
 * coldest memory on the host leaves first and the kernel never has to reclaim directly:
 *   1. chunks of idle contexts (above their floor) before any chunk of an active one;
 *   2. then by the model's rank: lower queue first (less frequently used), then older
 *      last access;
 *   3. never a chunk used in the last @min_cold_epochs epochs, never below a floor,
 *      never a critical context (the caller leaves those out).
 * Pure: works on the contexts' models; unit tested.
 */
#ifndef PAGETIER_VICTIMS_H
#define PAGETIER_VICTIMS_H

#include <stddef.h>
#include <stdint.h>

#include "hotness.h"

struct pt_victim_source {
	const struct pt_hot *hot;
	int idle;			/* the context is idle */
	uint64_t evictable_bytes;	/* resident above its floor */
};

struct pt_victim {
	int source;			/* index into the sources */
	uint64_t chunk;
};

/*
 * Fills @out (at most @max) with victims worth @need bytes in the global order; returns how
 * many, or a negative errno.
 */
int pt_victims_pick(const struct pt_victim_source *src, int n_src, uint64_t need,
		    uint32_t min_cold_epochs, struct pt_victim *out, size_t max);

#endif
