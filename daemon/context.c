// SPDX-License-Identifier: GPL-2.0
#include "context.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "log.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

#define PT_MAX_PIDS 4096

uint64_t pt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void pt_context_init(struct pt_context *ctx, const struct pt_policy *policy,
		     const char *cgroup_root, const char *relpath, uint64_t id, uint64_t now_ms)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->policy = *policy;
	snprintf(ctx->relpath, sizeof(ctx->relpath), "%s", relpath);
	snprintf(ctx->dir, sizeof(ctx->dir), "%s%s", cgroup_root, relpath);
	ctx->cgroup_id = id;
	ctx->seen = true;
	pt_idle_init(&ctx->idle, now_ms);
}

static void drop_wake_set(struct pt_context *ctx)
{
	for (int i = 0; i < ctx->n_wake_set; i++)
		pt_proc_ranges_free(&ctx->wake_set[i]);
	free(ctx->wake_set);
	ctx->wake_set = NULL;
	ctx->n_wake_set = 0;
}

void pt_context_release(struct pt_context *ctx)
{
	if (ctx->memory_low_set) {
		/* Best effort: the cgroup may be gone, which is fine. */
		pt_cgroup_write(ctx->dir, "memory.low", ctx->saved_memory_low);
		ctx->memory_low_set = false;
	}
	drop_wake_set(ctx);
}

void pt_context_protect(struct pt_context *ctx)
{
	char path[PATH_MAX];
	ssize_t n;
	int rc;

	if (ctx->policy.class != PT_CLASS_CRITICAL || ctx->memory_low_set)
		return;
	snprintf(path, sizeof(path), "%s/memory.low", ctx->dir);
	n = pt_read_file(path, ctx->saved_memory_low, sizeof(ctx->saved_memory_low));
	if (n <= 0) {
		pt_warn("%s: cannot read memory.low (%s): critical container left unprotected",
			ctx->policy.name, strerror(n < 0 ? (int)-n : EIO));
		return;
	}
	ctx->saved_memory_low[strcspn(ctx->saved_memory_low, "\n")] = '\0';
	rc = pt_cgroup_write(ctx->dir, "memory.low", "max");
	if (rc) {
		pt_warn("%s: cannot set memory.low=max (%s): critical container left unprotected",
			ctx->policy.name, strerror(-rc));
		return;
	}
	ctx->memory_low_set = true;
	pt_info("%s: critical: memory.low=max (was %s); never offloaded", ctx->policy.name,
		ctx->saved_memory_low);
}

int pt_context_offload(struct pt_context *ctx)
{
	uint64_t budget, t0 = pt_now_ms(), done = 0;
	pid_t *pids;
	int n, rc = 0;

	if (ctx->policy.class == PT_CLASS_CRITICAL)
		return 0;
	if (pt_cgroup_sample(ctx->dir, &ctx->sample))
		return -ENOENT;
	ctx->anon_at_idle = ctx->sample.anon;
	budget = ctx->sample.anon > ctx->policy.resident_floor_bytes ?
		 ctx->sample.anon - ctx->policy.resident_floor_bytes : 0;
	if (ctx->policy.offload_cap_bytes && budget > ctx->policy.offload_cap_bytes)
		budget = ctx->policy.offload_cap_bytes;
	if (!budget)
		return 0;

	pids = calloc(PT_MAX_PIDS, sizeof(*pids));
	if (!pids)
		return -ENOMEM;
	n = pt_cgroup_pids(ctx->dir, pids, PT_MAX_PIDS);
	if (n < 0) {
		free(pids);
		return n;
	}
	drop_wake_set(ctx);
	ctx->wake_set = calloc(n ? n : 1, sizeof(*ctx->wake_set));
	if (!ctx->wake_set) {
		free(pids);
		return -ENOMEM;
	}
	for (int i = 0; i < n && done < budget; i++) {
		struct pt_proc_ranges *pr = &ctx->wake_set[ctx->n_wake_set];
		int64_t got;

		/*
		 * Ranges are virtual: they bound the advice, the kernel pages out only what is
		 * resident, so the budget is an upper bound on what leaves.
		 */
		if (pt_proc_anon_ranges(pids[i], budget - done, pr))
			continue;	/* exited meanwhile */
		got = pt_proc_advise(pr, MADV_PAGEOUT);
		if (got < 0) {
			pt_proc_ranges_free(pr);
			continue;
		}
		done += (uint64_t)got;
		if (ctx->policy.prefetch)
			ctx->n_wake_set++;
		else
			pt_proc_ranges_free(pr);
	}
	free(pids);
	ctx->n_offloads++;
	ctx->offload_requested = done;
	ctx->last_offload_ms = pt_now_ms() - t0;
	pt_info("%s: idle: paged out %llu MiB of anonymous memory (%d processes, %llu ms)",
		ctx->policy.name, (unsigned long long)(done >> 20), n,
		(unsigned long long)ctx->last_offload_ms);
	return rc;
}

int pt_context_prefetch(struct pt_context *ctx)
{
	uint64_t done = 0;

	ctx->n_wakes++;
	if (!ctx->policy.prefetch || !ctx->n_wake_set) {
		ctx->last_wake_ms = pt_now_ms() - ctx->idle.woke_at_ms;
		return 0;
	}
	for (int i = 0; i < ctx->n_wake_set; i++) {
		int64_t got = pt_proc_advise(&ctx->wake_set[i], MADV_WILLNEED);

		if (got > 0)
			done += (uint64_t)got;
	}
	ctx->prefetch_requested = done;
	ctx->last_wake_ms = pt_now_ms() - ctx->idle.woke_at_ms;
	pt_info("%s: wake: prefetch of %llu MiB issued %llu ms after wake was seen",
		ctx->policy.name, (unsigned long long)(done >> 20),
		(unsigned long long)ctx->last_wake_ms);
	drop_wake_set(ctx);
	return 0;
}
