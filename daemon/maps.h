/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /proc/PID/maps parsing: which ranges of a process hold its own anonymous memory (what
 * offload targets). Pure, unit tested.
 */
#ifndef PAGETIER_MAPS_H
#define PAGETIER_MAPS_H

#include <stdbool.h>
#include <stdint.h>

struct pt_range {
	uint64_t start;
	uint64_t len;
};

/* What a mapping holds, as far as pagetier is concerned. */
enum pt_map_kind {
	PT_MAP_INVALID = -1,	/* a malformed line */
	PT_MAP_OTHER,		/* file mappings, special ones, inaccessible ones */
	PT_MAP_ANON,		/* private anonymous memory: heap, stacks, anonymous mmap */
	PT_MAP_SHMEM,		/* shared memory: shared anonymous, SysV shm, memfd, /dev/shm */
	PT_MAP_FILE,		/* a mapped file: executables, libraries, data files */
};

/* Parses one maps line: its range into @r, and what it holds. Pure. */
enum pt_map_kind pt_maps_classify(const char *line, struct pt_range *r);

/*
 * Parses one maps line. Returns 1 and fills @r if the mapping is private anonymous memory
 * (heap, stack, anonymous mmap), 0 if it is something else (file, shared, special, or
 * inaccessible), -EINVAL if the line is malformed.
 */
int pt_maps_anon_range(const char *line, struct pt_range *r);

#endif
