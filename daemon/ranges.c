// SPDX-License-Identifier: GPL-2.0
#include "ranges.h"

#include <errno.h>
#include <stdlib.h>

static int cmp_start(const void *a, const void *b)
{
	const struct pt_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

size_t pt_ranges_normalize(struct pt_range *r, size_t n)
{
	size_t k = 0;

	if (!n)
		return 0;
	qsort(r, n, sizeof(*r), cmp_start);
	for (size_t i = 0; i < n; i++) {
		if (!r[i].len)
			continue;
		if (k && r[k - 1].start + r[k - 1].len >= r[i].start) {
			uint64_t end = r[i].start + r[i].len;

			if (end > r[k - 1].start + r[k - 1].len)
				r[k - 1].len = end - r[k - 1].start;
			continue;
		}
		r[k++] = r[i];
	}
	return k;
}

int pt_ranges_subtract(const struct pt_range *a, size_t na, const struct pt_range *b, size_t nb,
		       struct pt_range **out)
{
	/* Each range of @b splits at most one range of @a in two: na + nb bounds the result. */
	struct pt_range *res = NULL;
	size_t n = 0, j = 0;

	*out = NULL;
	if (!na)
		return 0;
	res = malloc((na + nb) * sizeof(*res));
	if (!res)
		return -ENOMEM;
	for (size_t i = 0; i < na; i++) {
		uint64_t cur = a[i].start, end = a[i].start + a[i].len;

		/* Ranges of @b wholly before this one cannot cut it or any later one. */
		while (j < nb && b[j].start + b[j].len <= cur)
			j++;
		for (size_t k = j; k < nb && b[k].start < end && cur < end; k++) {
			uint64_t bs = b[k].start, be = b[k].start + b[k].len;

			if (be <= cur)
				continue;
			if (bs > cur)
				res[n++] = (struct pt_range){ .start = cur, .len = bs - cur };
			cur = be < end ? be : end;
		}
		if (cur < end)
			res[n++] = (struct pt_range){ .start = cur, .len = end - cur };
	}
	if (!n) {
		free(res);
		return 0;
	}
	*out = res;
	return (int)n;
}

size_t pt_ranges_truncate(struct pt_range *r, size_t n, uint64_t max_bytes)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++) {
		if (total + r[i].len >= max_bytes) {
			r[i].len = max_bytes - total;
			return r[i].len ? i + 1 : i;
		}
		total += r[i].len;
	}
	return n;
}

uint64_t pt_ranges_bytes(const struct pt_range *r, size_t n)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++)
		total += r[i].len;
	return total;
}
