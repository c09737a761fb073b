/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one way arrays grow in the daemon: by doubling, so that appending is O(1) amortized.
 * Header-only (the preload library's and the daemon's code both use it).
 */
#ifndef PAGETIER_GROW_H
#define PAGETIER_GROW_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Makes room for at least @want elements of @elem bytes in *@arr, whose capacity is *@cap
 * (elements): 0, or -ENOMEM and nothing changed. The new room is not zeroed.
 */
static inline int pt_grow(void **arr, size_t *cap, size_t want, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *n;

	if (want <= *cap)
		return 0;
	while (ncap < want) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	n = realloc(*arr, ncap * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

#endif
