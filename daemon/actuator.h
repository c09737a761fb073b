/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The actuator: moves a process's anonymous memory to swap (MADV_PAGEOUT) and back into
 * the page/swap cache (MADV_WILLNEED) with process_madvise(2) through a pidfd. Pages leave
 * and return through the kernel's own swap path, so nothing is lost if we crash.
 */
#ifndef PAGETIER_ACTUATOR_H
#define PAGETIER_ACTUATOR_H

#include <stdint.h>
#include <sys/types.h>

#include "maps.h"

struct pt_proc_ranges {
	pid_t pid;
	int n;
	int cap;
	struct pt_range *r;
};

/* Reads @pid's anonymous ranges, up to @max_bytes in total (0: no limit). */
int pt_proc_anon_ranges(pid_t pid, uint64_t max_bytes, struct pt_proc_ranges *out);
void pt_proc_ranges_free(struct pt_proc_ranges *pr);

/*
 * Applies @advice (MADV_PAGEOUT, MADV_WILLNEED) to @pr in @pid through a pidfd. A range the
 * kernel refuses (mlocked, hugetlb) is skipped, not fatal. Returns the bytes advised, or a
 * negative errno (-ESRCH: the process is gone).
 */
int64_t pt_proc_advise(const struct pt_proc_ranges *pr, int advice);

/*
 * As pt_proc_advise(), in pieces of at most PT_PACE_PIECE bytes, sleeping between them so
 * that no more than @rate bytes per second are advised (0: no limit): the I/O an offload
 * or a prefetch causes must not starve the other containers' I/O.
 */
#define PT_PACE_PIECE (16ULL << 20)
int64_t pt_proc_advise_paced(const struct pt_proc_ranges *pr, int advice, uint64_t rate);

#endif
