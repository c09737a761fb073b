// SPDX-License-Identifier: GPL-2.0
#include "tier_fill.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

int pt_tier_fill_add(struct pt_tier_fill *sum, const char *seg_stat)
{
	/* kmod/README.md, seg_stat: columns 1-3, 9-11 are what this needs. */
	uint64_t v[11];

	if (sscanf(seg_stat, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10]) != 11 ||
	    !v[0] || v[0] % 4096 || v[2] > v[1])
		return -EINVAL;
	sum->segments += v[1];
	sum->free_segments += v[2];
	sum->nospace_errors += v[8];
	sum->live_pages += v[9];
	sum->capacity_pages += v[10] / 4096;
	return 0;
}

enum pt_fill_level pt_tier_fill_level(enum pt_fill_level prev, const struct pt_tier_fill *f,
				      uint64_t prev_nospace)
{
	uint64_t live, free_pm;

	if (!f->capacity_pages || !f->segments)
		return PT_FILL_OK;
	live = f->live_pages * 1000 / f->capacity_pages;
	free_pm = f->free_segments * 1000 / f->segments;
	if (f->nospace_errors > prev_nospace || live >= PT_FILL_FULL_STOP ||
	    free_pm < PT_FILL_FREE_MIN || (prev == PT_FILL_FULL && live >= PT_FILL_FULL_RESUME))
		return PT_FILL_FULL;
	if (live >= PT_FILL_COLD_STOP || (prev >= PT_FILL_NO_COLD && live >= PT_FILL_COLD_RESUME))
		return PT_FILL_NO_COLD;
	return PT_FILL_OK;
}

const char *pt_fill_level_name(enum pt_fill_level l)
{
	switch (l) {
	case PT_FILL_OK:
		return "ok";
	case PT_FILL_NO_COLD:
		return "no-cold";
	case PT_FILL_FULL:
		return "full";
	}
	return "?";
}
