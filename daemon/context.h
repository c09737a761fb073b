/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A memory context: everything pagetierd knows and does about one opted-in cgroup. It
 * appears when a cgroup matching a policy appears and vanishes with it.
 */
#ifndef PAGETIER_CONTEXT_H
#define PAGETIER_CONTEXT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "actuator.h"
#include "cgroup.h"
#include "config.h"
#include "idle.h"

struct pt_context {
	struct pt_policy policy;	/* a copy: config reloads replace the original */
	char relpath[PATH_MAX];		/* "/a/b" below cgroup_root */
	char dir[PATH_MAX];		/* absolute cgroup directory */
	uint64_t cgroup_id;
	struct pt_idle idle;
	struct pt_cgroup_sample sample;
	uint64_t tier_pages;		/* pages on pagetier.ko tiers, if loaded */
	bool seen;			/* found in the latest cgroup walk */

	/* Wake set: what was offloaded at idle, prefetched back on wake. */
	struct pt_proc_ranges *wake_set;
	int n_wake_set;

	/* memory.low as found, restored when the daemon lets go of a critical container. */
	char saved_memory_low[32];
	bool memory_low_set;

	/* Counters. */
	uint64_t n_offloads;
	uint64_t n_wakes;
	uint64_t anon_at_idle;		/* memory.stat anon when it went idle */
	uint64_t offload_requested;	/* bytes advised MADV_PAGEOUT, last idle */
	uint64_t prefetch_requested;	/* bytes advised MADV_WILLNEED, last wake */
	uint64_t last_offload_ms;	/* how long the last offload call took */
	uint64_t last_wake_ms;		/* wake detected -> prefetch issued */
};

void pt_context_init(struct pt_context *ctx, const struct pt_policy *policy,
		     const char *cgroup_root, const char *relpath, uint64_t id, uint64_t now_ms);
void pt_context_release(struct pt_context *ctx);
/* Pages out the context's anonymous memory down to its floor; records the wake set. */
int pt_context_offload(struct pt_context *ctx);
/* Brings the wake set back into memory (MADV_WILLNEED), hottest first. */
int pt_context_prefetch(struct pt_context *ctx);
/* Applies class-specific protection (memory.low for critical containers). */
void pt_context_protect(struct pt_context *ctx);

uint64_t pt_now_ms(void);

#endif
