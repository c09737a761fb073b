/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /proc/PID/maps parsing: which ranges of a process hold its own anonymous memory (what
 * offload targets). Pure, unit tested.
 */
#ifndef PAGETIER_MAPS_H
#define PAGETIER_MAPS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

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

/* Bits of 1 << enum pt_map_kind: which mappings a reader hands out. */
#define PT_KIND_ANON	(1U << PT_MAP_ANON)
#define PT_KIND_SHMEM	(1U << PT_MAP_SHMEM)
#define PT_KIND_FILE	(1U << PT_MAP_FILE)

/*
 * The longest maps line parsed: the fixed fields and a path of up to PATH_MAX. A longer
 * line (a file's name is the container's to choose, and the kernel shows paths longer than
 * PATH_MAX) is skipped whole: parsed from where a buffer cut it, its tail could read as any
 * mapping at all. (The kernel escapes a newline in a name as "\012", so a name cannot
 * start a line of its own; the defence holds without that.)
 */
#define PT_MAPS_LINE_MAX (PATH_MAX + 128)
/*
 * No reader hands out more than this of a process's address space, whatever it maps: a
 * scan costs one ioctl per GiB (the fallback reads 2 MiB of pagemap per GiB), and the
 * hotness model holds 256 GiB of chunks per context.
 */
#define PT_MAPS_SPAN_MAX (1ULL << 40)

/*
 * A reader of one process's /proc/PID/maps, the one every daemon module uses (the
 * actuator, the scanners).
 */
struct pt_maps_reader {
	FILE *fp;
	unsigned int kinds;	/* PT_KIND_* wanted */
	uint64_t left;		/* bytes the ranges handed out may still span (cut to it) */
	uint64_t span_left;	/* ... of what the process maps, at most PT_MAPS_SPAN_MAX */
	char line[PT_MAPS_LINE_MAX];
};

/*
 * Reads one whole line of at most @size - 1 bytes (newline included) into @buf; a longer
 * one, or one holding a NUL, is consumed to its end and skipped. 1: a line, 0: the end.
 */
int pt_maps_read_line(FILE *fp, char *buf, size_t size);
/* Pure: the "VmSize:" of /proc/PID/status text, in bytes (0 if it has none). */
uint64_t pt_status_vmsize(const char *text);

/*
 * Opens @proc_root/@pid/maps ("/proc" but in tests) for the mappings of @kinds, at most
 * @max_bytes of them in total (0: no limit; the last one is cut to it). Whole mappings that
 * would take the total beyond what the process maps (its VmSize in @proc_root/@pid/status)
 * or beyond PT_MAPS_SPAN_MAX are skipped. 0, -ESRCH (no such process) or -errno.
 */
int pt_maps_open(struct pt_maps_reader *m, const char *proc_root, pid_t pid,
		 unsigned int kinds, uint64_t max_bytes);
/* The next mapping of the kinds asked for: 1 with @r and @kind filled, 0 at the end. */
int pt_maps_next(struct pt_maps_reader *m, struct pt_range *r, enum pt_map_kind *kind);
void pt_maps_close(struct pt_maps_reader *m);

#endif
