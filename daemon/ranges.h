/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Address-range arithmetic over sorted lists of struct pt_range (maps.h): what the idle
 * offload advises is a process's anonymous ranges minus the chunks it still uses while idle
 * (its timers' working set), cut to the offload budget. Pure, unit tested.
 */
#ifndef PAGETIER_RANGES_H
#define PAGETIER_RANGES_H

#include <stddef.h>
#include <stdint.h>

#include "maps.h"

/* Sorts @r by start and merges overlapping or adjacent ranges; returns the new count. */
size_t pt_ranges_normalize(struct pt_range *r, size_t n);

/*
 * @a minus @b, both normalized (sorted, disjoint), into *@out (malloc'd, NULL when the
 * result is empty). Returns the number of ranges or -ENOMEM.
 */
int pt_ranges_subtract(const struct pt_range *a, size_t na, const struct pt_range *b, size_t nb,
		       struct pt_range **out);

/* Cuts @r (in order) to at most @max_bytes in total; returns the new count. */
size_t pt_ranges_truncate(struct pt_range *r, size_t n, uint64_t max_bytes);

/* Bytes the ranges span. */
uint64_t pt_ranges_bytes(const struct pt_range *r, size_t n);

#endif
