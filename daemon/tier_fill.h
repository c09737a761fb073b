/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How full the tiers are, and what pagetierd still offloads to them. The tier is
 * log-structured: its collector needs free segments to move live pages into, and a write
 * that finds none fails (swap keeps the page in memory: nothing is lost, but the write
 * and the reclaim that wanted it were for nothing). pagetierd sees it coming from the
 * tiers' seg_stat and backs off before that, in two steps with hysteresis:
 *   ok       everything;
 *   no-cold  live pages above PT_FILL_COLD_STOP of the capacity: no cold offload of active
 *            containers (the least urgent writes) until below PT_FILL_COLD_RESUME;
 *   full     live pages above PT_FILL_FULL_STOP, free segments below PT_FILL_FREE_MIN, or
 *            writes failed for want of a segment since the last look: no offload at all
 *            (idle containers wait, the watermark too) until below PT_FILL_FULL_RESUME with
 *            no new failure. Prefetch never stops.
 * Pure: parsing and the verdict; reading sysfs is kmod_client's.
 */
#ifndef PAGETIER_TIER_FILL_H
#define PAGETIER_TIER_FILL_H

#include <stdint.h>

/* Thresholds, per mille of the tiers' capacity (live pages) or of their segments (free). */
#define PT_FILL_COLD_STOP	800
#define PT_FILL_COLD_RESUME	750
#define PT_FILL_FULL_STOP	900
#define PT_FILL_FULL_RESUME	850
#define PT_FILL_FREE_MIN	20

/* The tiers' layout, summed over all of them. */
struct pt_tier_fill {
	uint64_t capacity_pages;	/* blocks the segments hold */
	uint64_t live_pages;
	uint64_t segments;
	uint64_t free_segments;
	uint64_t nospace_errors;	/* writes failed for want of a free segment, ever */
};

enum pt_fill_level { PT_FILL_OK, PT_FILL_NO_COLD, PT_FILL_FULL };

/* Adds one tier's seg_stat line to @sum; 0 or -EINVAL (a line it cannot read). */
int pt_tier_fill_add(struct pt_tier_fill *sum, const char *seg_stat);

/*
 * The level now, from the level before (@prev, for the hysteresis), the tiers as they are
 * (@f) and the failed writes counted at the last look (@prev_nospace). No capacity (no
 * tier): ok.
 */
enum pt_fill_level pt_tier_fill_level(enum pt_fill_level prev, const struct pt_tier_fill *f,
				      uint64_t prev_nospace);

const char *pt_fill_level_name(enum pt_fill_level l);

#endif
