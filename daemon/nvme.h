/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The NVMe drives under the tiers, read through libnvme: identity (model, serial,
 * capacity) and the SMART/health log, sampled every PT_WEAR_SAMPLE_MS into the wear
 * budget (wear.h), which decides what offload may still write.
 *
 * Two halves. Finding the drives is sysfs only (nvme_find.c, in the daemon's library and
 * unit tested over fixture trees): each tier's /sys/block/pagetierN/backing_dev names its
 * device; a partition's drive is its parent, and a device-mapper or md device's drives are
 * behind its slaves/ links. Reading them (nvme.c) is libnvme's admin commands, linked into
 * pagetierd alone, so that nothing else needs libnvme or a drive.
 */
#ifndef PAGETIER_NVME_H
#define PAGETIER_NVME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wear.h"

/* One namespace under a tier. */
struct pt_nvme_ns {
	char ctrl[32];		/* "nvme0": its drive, the key (two namespaces share a log) */
	char ns[40];		/* "nvme0n1": what nvme_open() opens */
	uint32_t tier;		/* the first tier found over it */
	char backing[64];	/* that tier's backing device, as created ("/dev/nvme0n1p1") */
};

/*
 * The NVMe namespaces under the tiers of @sysblock ("/sys/block"), devices resolved in
 * @sysclass ("/sys/class/block"), each drive once, into @out (at most @max). Backing
 * devices with no NVMe namespace under them are listed in @other ("pagetier0 over
 * /dev/loop0", comma-separated; "" if none). Returns how many drives, or a negative errno
 * (@sysblock unreadable).
 */
int pt_nvme_find(const char *sysblock, const char *sysclass, struct pt_nvme_ns *out, int max,
		 char *other, size_t other_len);
/* Whether @name is an NVMe namespace block device ("nvme0n1"); its drive into @ctrl. */
bool pt_nvme_ns_name(const char *name, char *ctrl, size_t ctrl_len);

/* nvme.c (pagetierd only). */
struct pt_nvme {
	int fd[PT_WEAR_MAX_DRIVES];	/* parallel to pt_wear.drives; -1: not open */
	struct pt_wear_budget budget[PT_WEAR_MAX_DRIVES];	/* each drive started with */
	const char *sysblock, *sysclass;
	uint64_t last_ms;
	bool said_off;			/* "no budget" logged since the last drive went */
};

void pt_nvme_init(struct pt_nvme *n);
/*
 * At most every PT_WEAR_SAMPLE_MS: finds the drives under the tiers (new ones opened and
 * identified, gone ones closed), samples each one's SMART log under @budget (a changed
 * budget restarts the drive's bucket), logs changes, and sets w->level.
 */
void pt_nvme_poll(struct pt_nvme *n, struct pt_wear *w, const struct pt_wear_budget *budget,
		  uint64_t now_ms);
void pt_nvme_close(struct pt_nvme *n, struct pt_wear *w);

#endif
