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
/* Passes of memory.reclaim after an offload: write-back of the offload must finish first. */
#define PT_SETTLE_PASSES 10
/* Residency this close to the floor is settled (kernel stacks, page tables, slab). */
#define PT_SETTLE_SLACK (2ULL << 20)

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

static void free_set(struct pt_proc_ranges *set, int n)
{
	for (int i = 0; i < n; i++)
		pt_proc_ranges_free(&set[i]);
	free(set);
}

static struct pt_action *new_action(struct pt_context *ctx, enum pt_job_kind kind,
				    void (*run)(struct pt_job *))
{
	struct pt_action *a = calloc(1, sizeof(*a));

	if (!a) {
		pt_err("%s: out of memory for an action", ctx->policy.name);
		return NULL;
	}
	a->job.run = run;
	a->kind = kind;
	a->cgroup_id = ctx->cgroup_id;
	snprintf(a->name, sizeof(a->name), "%s", ctx->policy.name);
	snprintf(a->dir, sizeof(a->dir), "%s", ctx->dir);
	ctx->busy = true;
	return a;
}

/* Worker thread: page out each process's anonymous ranges, up to the budget. */
static void run_offload(struct pt_job *job)
{
	struct pt_action *a = (struct pt_action *)job;
	uint64_t t0 = pt_now_ms(), done = 0;
	pid_t *pids = calloc(PT_MAX_PIDS, sizeof(*pids));
	int n;

	if (!pids) {
		a->rc = -ENOMEM;
		return;
	}
	n = pt_cgroup_pids(a->dir, pids, PT_MAX_PIDS);
	if (n < 0) {
		a->rc = n;
		free(pids);
		return;
	}
	a->set = calloc(n ? (size_t)n : 1, sizeof(*a->set));
	if (!a->set) {
		a->rc = -ENOMEM;
		free(pids);
		return;
	}
	for (int i = 0; i < n && done < a->budget; i++) {
		struct pt_proc_ranges *pr = &a->set[a->n_set];
		int64_t got;

		/*
		 * Ranges are virtual: they bound the advice, the kernel pages out only what is
		 * resident, so the budget is an upper bound on what leaves.
		 */
		if (pt_proc_anon_ranges(pids[i], a->budget - done, pr))
			continue;	/* exited meanwhile */
		got = pt_proc_advise(pr, MADV_PAGEOUT);
		if (got < 0) {
			pt_proc_ranges_free(pr);
			continue;
		}
		done += (uint64_t)got;
		if (a->keep_wake_set)
			a->n_set++;
		else
			pt_proc_ranges_free(pr);
	}
	free(pids);
	a->n_procs = n;
	a->bytes = (int64_t)done;
	a->ms = pt_now_ms() - t0;
}

/* Worker thread: bring the wake set back into the swap cache. */
static void run_prefetch(struct pt_job *job)
{
	struct pt_action *a = (struct pt_action *)job;
	uint64_t t0 = pt_now_ms();

	for (int i = 0; i < a->n_set; i++) {
		int64_t got = pt_proc_advise(&a->set[i], MADV_WILLNEED);

		if (got > 0)
			a->bytes += got;
	}
	a->ms = pt_now_ms() - t0;
}

/* Worker thread: memory.reclaim down to the floor (a->budget). */
static void run_settle(struct pt_job *job)
{
	struct pt_action *a = (struct pt_action *)job;
	uint64_t before, t0 = pt_now_ms();
	char amount[32];

	a->rc = pt_cgroup_read_u64(a->dir, "memory.current", &before);
	if (a->rc)
		return;
	a->resident_after = before;
	if (before <= a->budget + PT_SETTLE_SLACK)
		return;
	snprintf(amount, sizeof(amount), "%llu", (unsigned long long)(before - a->budget));
	/*
	 * -EAGAIN means the kernel reclaimed less than asked (pages still under write-back,
	 * or unreclaimable): the next pass retries.
	 */
	a->rc = pt_cgroup_write(a->dir, "memory.reclaim", amount);
	if (a->rc == -EAGAIN)
		a->rc = 0;
	if (!pt_cgroup_read_u64(a->dir, "memory.current", &a->resident_after) &&
	    a->resident_after < before)
		a->bytes = (int64_t)(before - a->resident_after);
	a->ms = pt_now_ms() - t0;
}

struct pt_action *pt_context_offload(struct pt_context *ctx)
{
	uint64_t budget;
	struct pt_action *a;

	if (ctx->policy.class == PT_CLASS_CRITICAL || ctx->busy)
		return NULL;
	ctx->anon_at_idle = ctx->sample.anon;
	budget = ctx->sample.anon > ctx->policy.resident_floor_bytes ?
		 ctx->sample.anon - ctx->policy.resident_floor_bytes : 0;
	if (ctx->policy.offload_cap_bytes && budget > ctx->policy.offload_cap_bytes)
		budget = ctx->policy.offload_cap_bytes;
	if (!budget)
		return NULL;
	a = new_action(ctx, PT_JOB_OFFLOAD, run_offload);
	if (a) {
		a->budget = budget;
		a->keep_wake_set = ctx->policy.prefetch;
	}
	return a;
}

struct pt_action *pt_context_prefetch(struct pt_context *ctx)
{
	struct pt_action *a;

	if (ctx->busy) {
		ctx->wake_pending = true;
		return NULL;
	}
	ctx->n_wakes++;
	ctx->settle_passes = 0;
	if (!ctx->policy.prefetch || !ctx->n_wake_set) {
		ctx->last_wake_ms = pt_now_ms() - ctx->idle.woke_at_ms;
		pt_idle_wake_done(&ctx->idle);
		return NULL;
	}
	a = new_action(ctx, PT_JOB_PREFETCH, run_prefetch);
	if (!a)
		return NULL;
	/* The wake set moves to the job: one prefetch per idle period. */
	a->set = ctx->wake_set;
	a->n_set = ctx->n_wake_set;
	ctx->wake_set = NULL;
	ctx->n_wake_set = 0;
	return a;
}

struct pt_action *pt_context_settle(struct pt_context *ctx)
{
	struct pt_action *a;

	if (ctx->settle_passes <= 0 || ctx->busy || ctx->policy.class == PT_CLASS_CRITICAL)
		return NULL;
	ctx->settle_passes--;
	a = new_action(ctx, PT_JOB_SETTLE, run_settle);
	if (a)
		a->budget = ctx->policy.resident_floor_bytes;
	return a;
}

static void apply_offload(struct pt_context *ctx, struct pt_action *a)
{
	drop_wake_set(ctx);
	ctx->wake_set = a->set;
	ctx->n_wake_set = a->n_set;
	a->set = NULL;
	a->n_set = 0;
	ctx->n_offloads++;
	ctx->offload_requested = (uint64_t)a->bytes;
	ctx->last_offload_ms = a->ms;
	ctx->reclaimed = 0;
	ctx->settle_passes = PT_SETTLE_PASSES;
	pt_info("%s: idle: paged out %llu MiB of anonymous memory (%d processes, %llu ms)",
		ctx->policy.name, (unsigned long long)(a->bytes >> 20), a->n_procs,
		(unsigned long long)a->ms);
}

static void apply_prefetch(struct pt_context *ctx, struct pt_action *a)
{
	ctx->prefetch_requested = (uint64_t)a->bytes;
	ctx->last_wake_ms = pt_now_ms() - ctx->idle.woke_at_ms;
	pt_idle_wake_done(&ctx->idle);
	pt_info("%s: wake: prefetched %llu MiB (MADV_WILLNEED, %llu ms), %llu ms after the wake was seen",
		ctx->policy.name, (unsigned long long)(a->bytes >> 20), (unsigned long long)a->ms,
		(unsigned long long)ctx->last_wake_ms);
}

static void apply_settle(struct pt_context *ctx, struct pt_action *a)
{
	if (a->rc) {
		pt_warn("%s: memory.reclaim failed: %s", ctx->policy.name, strerror(-a->rc));
		ctx->settle_passes = 0;
		return;
	}
	ctx->reclaimed += (uint64_t)a->bytes;
	ctx->sample.memory_current = a->resident_after;
	if (a->resident_after <= ctx->policy.resident_floor_bytes + PT_SETTLE_SLACK)
		ctx->settle_passes = 0;
	if (!ctx->settle_passes)
		pt_info("%s: idle: resident %llu MiB after dropping %llu MiB of written-back memory",
			ctx->policy.name, (unsigned long long)(a->resident_after >> 20),
			(unsigned long long)(ctx->reclaimed >> 20));
}

void pt_context_apply(struct pt_context *ctx, struct pt_action *a)
{
	if (ctx) {
		ctx->busy = false;
		if (a->kind == PT_JOB_OFFLOAD && a->rc)
			pt_warn("%s: offload failed: %s", ctx->policy.name, strerror(-a->rc));
		else if (a->kind == PT_JOB_OFFLOAD)
			apply_offload(ctx, a);
		else if (a->kind == PT_JOB_PREFETCH)
			apply_prefetch(ctx, a);
		else
			apply_settle(ctx, a);
	}
	free_set(a->set, a->n_set);
	free(a);
}
