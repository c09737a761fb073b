/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tier.h - the pagetier tier block device, shared by core.c and tier.c.
 */
#ifndef _PAGETIER_TIER_H
#define _PAGETIER_TIER_H

#include <linux/sizes.h>
#include <linux/types.h>

#include "uapi/pagetier.h"

/*
 * Build-time limits. The top-level Kconfig provides them in-tree; kmod/Kbuild sets the
 * same defaults for the out-of-tree build.
 */
#ifndef CONFIG_PAGETIER_MAX_TIERS
#define CONFIG_PAGETIER_MAX_TIERS	16
#endif
#ifndef CONFIG_PAGETIER_MAX_CGROUPS
#define CONFIG_PAGETIER_MAX_CGROUPS	1024
#endif

#define PT_MAX_TIERS		CONFIG_PAGETIER_MAX_TIERS

/* The slot is the unit of attribution: one 4 KiB block, the size of a swapped page. */
#define PT_SLOT_SHIFT		12
#define PT_SLOT_SIZE		SZ_4K	/* == 1 << PT_SLOT_SHIFT */
#define PT_SECTORS_PER_SLOT_SHIFT	(PT_SLOT_SHIFT - SECTOR_SHIFT)

/* mkswap wants at least ten pages; refuse anything that could not hold a swap area. */
#define PT_MIN_CAPACITY		(64ULL << 10)

int pt_tier_create(struct pagetier_tier_create *req);
int pt_tier_destroy(u32 tier_id);
int pt_tier_cgroup_stats(u32 tier_id, struct pagetier_cgroup_stat **stats,
			 u32 max, u32 *count);
void pt_tier_destroy_all(void);

#endif /* _PAGETIER_TIER_H */
