/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Access scanning of a process's memory: which pages were accessed since the last scan,
 * which are present, which are swapped. Two backends:
 *  - pagetier.ko's PAGETIER_IOC_SCAN: per-page accessed bits from the page tables (PTEs
 *    and THP PMDs), cleared as it goes;
 *  - the fallback, for kernels without the module: /proc/PID/clear_refs, pagemap and
 *    smaps. Stock Debian kernels have no idle-page tracking, so it localizes writes per
 *    page (soft-dirty) but reads only per mapping (smaps Referenced): a mapping with reads
 *    it cannot place counts all its present pages as accessed. It errs on the side of
 *    keeping memory resident.
 * Results are aggregated per chunk (1 << chunk_shift bytes), the unit of the hotness model.
 */
#ifndef PAGETIER_SCANNER_H
#define PAGETIER_SCANNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "maps.h"

enum pt_scanner_kind { PT_SCANNER_FALLBACK, PT_SCANNER_KMOD };

/* One chunk's state in a scan. */
struct pt_chunk_scan {
	uint64_t addr;		/* chunk start (aligned) */
	uint32_t accessed;	/* pages accessed since the previous scan */
	uint32_t present;	/* pages resident */
	uint32_t swapped;	/* pages in swap */
};

struct pt_proc_scan {
	pid_t pid;
	uint64_t start;		/* the process's start time: which process @pid was */
	int pidfd;		/* > 0: that process, pinned (pt_proc_pin()); 0: none */
	struct pt_chunk_scan *chunks;
	uint32_t n;
	uint32_t cap;
};

/* pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst) */
#define PT_PM_PRESENT		(1ULL << 63)
#define PT_PM_SWAPPED		(1ULL << 62)
#define PT_PM_SOFT_DIRTY	(1ULL << 55)

/*
 * Pure: folds @n pagemap entries for pages starting at @start into chunk records appended
 * to @out. @read_referenced: the mapping had reads the fallback cannot place; every present
 * page then counts as accessed. 0 or -ENOMEM.
 */
int pt_fold_pagemap(const uint64_t *pm, uint64_t n, uint64_t start, unsigned int chunk_shift,
		    bool read_referenced, struct pt_proc_scan *out);

/*
 * Pure: folds the scanner ioctl's bitmaps (bit i = page start + i * 4096; any may be NULL)
 * for @npages pages into chunk records appended to @out. 0 or -ENOMEM.
 */
int pt_fold_bitmaps(const uint64_t *accessed, const uint64_t *present, const uint64_t *swapped,
		    uint64_t npages, uint64_t start, unsigned int chunk_shift,
		    struct pt_proc_scan *out);

/*
 * Pure: parses smaps text into per-mapping "Referenced" kB; calls @fn for each mapping
 * with (start, end, referenced_kb, arg).
 */
int pt_smaps_referenced(const char *text,
			void (*fn)(uint64_t start, uint64_t end, uint64_t ref_kb, void *arg),
			void *arg);

/*
 * Scans @pid's anonymous memory (at most @max_bytes of it; 0: all) with @kind and clears
 * the accessed state for the next scan. @kmod_fd is the control device for the module
 * backend. 0, -ESRCH (process gone), or another negative errno.
 */
int pt_scan_process(enum pt_scanner_kind kind, int kmod_fd, pid_t pid, unsigned int chunk_shift,
		    struct pt_proc_scan *out);
/* Frees the chunks and closes the pidfd (unless the model took it). */
void pt_proc_scan_free(struct pt_proc_scan *ps);
const char *pt_scanner_name(enum pt_scanner_kind kind);

#endif
