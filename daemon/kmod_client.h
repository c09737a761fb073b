/* SPDX-License-Identifier: GPL-2.0 */
/* Client of pagetier.ko's control device /dev/pagetier (ABI: kmod/uapi/pagetier.h). */
#ifndef PAGETIER_KMOD_CLIENT_H
#define PAGETIER_KMOD_CLIENT_H

#include <stdint.h>

#include "pagetier.h"
#include "tier_fill.h"

#define PT_CTL_DEV "/dev/" PAGETIER_CTL_NAME

/* Opens the control device and checks the ABI version; fd or negative errno. */
int pt_kmod_open(void);
/* The module's PAGETIER_FEAT_* bits; 0 on error. */
uint64_t pt_kmod_features(int fd);
int pt_kmod_tier_create(int fd, const char *backing, struct pagetier_tier_create *out);
int pt_kmod_tier_destroy(int fd, uint32_t tier_id);
/*
 * Fills @stats (malloc'd, caller frees) with the per-cgroup counters of @tier_id; returns
 * the count or a negative errno.
 */
int pt_kmod_cgroup_stats(int fd, uint32_t tier_id, struct pagetier_cgroup_stat **stats);
/* Sums the pages of @cgroup_id over every tier found in /sys/block. */
int pt_kmod_cgroup_pages(int fd, uint64_t cgroup_id, uint64_t *pages);

/* What every cgroup has on the tiers, summed over the tiers. */
struct pt_kmod_usage {
	uint64_t cgroup_id;
	uint64_t pages;		/* stored now */
	uint64_t written;	/* bytes written for it: its writes and the collector's moves */
};

/*
 * One snapshot of every tier's per-cgroup counters (one ioctl per tier, whatever the
 * number of containers), sorted by cgroup id into *@out (malloc'd). Returns the count or a
 * negative errno.
 */
int pt_kmod_usage_snapshot(int fd, struct pt_kmod_usage **out);
/* The entry of @cgroup_id in a snapshot, or NULL. */
const struct pt_kmod_usage *pt_kmod_usage_find(const struct pt_kmod_usage *u, int n,
					       uint64_t cgroup_id);
/*
 * Wake prefetch: asks every tier to stage @cgroup_id's newest pages, up to @budget bytes
 * each (0: all), in the background (PAGETIER_IOC_PREFETCH, PAGETIER_PREFETCH_NEWEST). A
 * tier that holds nothing of the cgroup is skipped. @planned gets the bytes the tiers will
 * read. Returns 0, or the first error other than -ENOENT.
 */
int pt_kmod_prefetch(int fd, uint64_t cgroup_id, uint64_t budget, uint64_t *planned);
/*
 * The tier event ring: a descriptor of its own on the control device (non-blocking),
 * subscribed with PAGETIER_IOC_EVENTS; fd or negative errno.
 */
int pt_kmod_events_open(void);
/*
 * Reads what the ring holds and calls @fn for each record; returns the records read or a
 * negative errno. @lost adds the records the kernel dropped (PAGETIER_EVENT_LOST).
 */
int pt_kmod_events_read(int fd, void (*fn)(const struct pagetier_event *e, void *arg),
			void *arg, uint64_t *lost);
/*
 * The layout of every tier under @sysblock ("/sys/block"; tests pass a directory of
 * their own), summed into *@out from each pagetierN/seg_stat. Returns how many tiers were
 * read, or a negative errno.
 */
int pt_kmod_tier_fill(const char *sysblock, struct pt_tier_fill *out);
/* Tiers a host has at most, for callers' arrays of tier ids. */
#define PT_KMOD_MAX_TIERS 16
/* Tier ids present in /sys/block (pagetierN); returns the count (at most @max). */
int pt_kmod_list_tiers(uint32_t *ids, int max);
/* ... in @sysblock (tests pass a directory of their own). */
int pt_kmod_list_tiers_in(const char *sysblock, uint32_t *ids, int max);

#endif
