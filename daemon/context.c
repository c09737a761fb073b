// SPDX-License-Identifier: GPL-2.0
#include "context.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kmod_client.h"
#include "log.h"
#include "pidfd.h"
#include "ranges.h"
#include "swap_fence.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

#define PT_MAX_PIDS 4096
/* Passes of memory.reclaim after an offload: write-back of the offload must finish first. */
#define PT_SETTLE_PASSES 10

uint64_t pt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Model size: enough chunks for 256 GiB of 64 KiB chunks, allocated as it grows. */
#define PT_HOT_MAX_CHUNKS (1U << 22)
/*
 * Dropping swap cache (swapcache_drop.h): the wait after a step that freed nothing (write-back
 * in flight), and the steps of the cold offload's drop, an idle trim's and an active one's:
 * an active container's step is smallest, as a step that writes costs its size.
 */
#define PT_DROP_WAIT_MS 100
#define PT_COLD_DROP_STEP (8ULL << 20)
#define PT_TRIM_IDLE_STEP (4ULL << 20)
#define PT_TRIM_ACTIVE_STEP (2ULL << 20)
/*
 * An idle trim that wrote, or freed nothing: the next one waits this long, doubled for each
 * one in a row that did so too, up to 2^PT_TRIM_HOLD_MAX_SHIFT times (16 minutes). Once a
 * second, as it was after a trim that freed nothing, an idle PostgreSQL's trims each wrote
 * 384 KiB of its memory for six seconds in a row (real_servers, 6.1, a long idle phase); a
 * fixed hold would go on writing some every 30 s for as long as it stays idle.
 */
#define PT_TRIM_IDLE_HOLD_MS 30000
/*
 * An active trim that wrote, or freed nothing: the next waits this long, doubled for each
 * one in a row that did so too, up to 2^PT_TRIM_HOLD_MAX_SHIFT times. Until the next wake,
 * as it was, is too long: on the multi-gen LRU a step that reaches the few pages its idle
 * offload kept (aged into the oldest generation with the prefetch) writes them, and the
 * 57 MiB of redis's wake that it never mapped stayed in memory while it served
 * (real_servers, 6.12: resident 66 of 74 MiB). A drop writes at most a share of what it can gain, 4 MiB at most
 * (pt_drop_write_total(), swapcache_drop.h), so in-use memory that keeps being reached
 * costs that much per hold, fewer and fewer.
 */
#define PT_TRIM_ACTIVE_HOLD_MS 10000
#define PT_TRIM_HOLD_MAX_SHIFT 5
/*
 * An active container's swap cache nobody maps, trimmed at most this often: what a light
 * load's faults read ahead around them keeps coming (2-3 MiB a second of redis serving a
 * tenth of its data, real_servers on 6.1), and a reclaim pass per scan for it is not worth
 * its CPU; nor is readahead that might still be used dropped as soon as it lands.
 */
#define PT_TRIM_STRAY_PACE_MS 10000
/*
 * Mapped files are read ahead at a wake by a child forked into the container's cgroup
 * (the page cache is charged to the task that reads it), and a fork copies pagetierd's
 * page tables, which grow with the containers it tracks. Below this much (a small
 * binary's pages), the kernel's own read-around on the first faults reads them as well:
 * bench/scale, 3,000 containers, each wake of a 1 MiB container forked a 180 MiB daemon
 * to read ahead 0 MiB.
 */
#define PT_FILE_READAHEAD_MIN (1ULL << 20)

void pt_context_init(struct pt_context *ctx, const struct pt_policy *policy,
		     const char *cgroup_root, const char *relpath, uint64_t id, uint64_t now_ms,
		     unsigned int chunk_shift)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->policy = *policy;
	snprintf(ctx->relpath, sizeof(ctx->relpath), "%s", relpath);
	snprintf(ctx->dir, sizeof(ctx->dir), "%s%s", cgroup_root, relpath);
	ctx->cgroup_id = id;
	ctx->seen = true;
	pt_idle_init(&ctx->idle, now_ms);
	ctx->last_scan_ms = now_ms;
	ctx->scan_stretch = 1;
	ctx->hot_ok = pt_hot_init(&ctx->hot, chunk_shift, PT_HOT_MAX_CHUNKS) == 0;
	if (!ctx->hot_ok)
		pt_warn("%s: no memory for the hotness model: offload at idle only", policy->name);
}

uint64_t pt_context_saved(const struct pt_context *ctx)
{
	const struct pt_cgroup_sample *s = &ctx->sample;

	return s->swap_current > s->swapcached ? s->swap_current - s->swapcached : 0;
}

double pt_context_write_amp(const struct pt_context *ctx)
{
	uint64_t saved = pt_context_saved(ctx);

	if (!ctx->tier_written_known || !saved)
		return -1;
	return (double)ctx->tier_written / (double)saved;
}

void pt_context_tier_written(struct pt_context *ctx, uint64_t total)
{
	if (!ctx->tier_written_known) {
		ctx->tier_written_known = true;
		ctx->tier_written_base = total;
	}
	ctx->tier_written = total >= ctx->tier_written_base ? total - ctx->tier_written_base : 0;
}

static void free_set(struct pt_proc_ranges *set, int n);

static void drop_wake_set(struct pt_context *ctx)
{
	free_set(ctx->wake_set, ctx->n_wake_set);
	ctx->wake_set = NULL;
	ctx->n_wake_set = 0;
}

static void drop_file_set(struct pt_context *ctx)
{
	free_set(ctx->file_set, ctx->n_file_set);
	ctx->file_set = NULL;
	ctx->n_file_set = 0;
}

static void drop_rest_set(struct pt_context *ctx)
{
	free_set(ctx->rest_set, ctx->n_rest_set);
	ctx->rest_set = NULL;
	ctx->n_rest_set = 0;
	ctx->rest_until_ms = 0;
}

void pt_context_release(struct pt_context *ctx)
{
	drop_wake_set(ctx);
	drop_file_set(ctx);
	drop_rest_set(ctx);
	pt_cgroup_files_close(&ctx->files);
	if (ctx->hot_ok)
		pt_hot_free(&ctx->hot);
	ctx->hot_ok = false;
}

static void free_set(struct pt_proc_ranges *set, int n)
{
	for (int i = 0; i < n; i++)
		pt_proc_ranges_free(&set[i]);
	free(set);
}

static uint64_t drop_swapcache(const char *dir, uint64_t target, uint64_t max_reclaim,
			       uint64_t step, bool active, enum pt_drop_stop *why);
static void run_offload(struct pt_job *job);
static void run_prefetch(struct pt_job *job);
static void run_settle(struct pt_job *job);
static void run_scan(struct pt_job *job);
static void run_cold(struct pt_job *job);
static void run_trim(struct pt_job *job);
static void apply_offload(struct pt_context *ctx, struct pt_action *a);
static void apply_prefetch(struct pt_context *ctx, struct pt_action *a);
static void apply_settle(struct pt_context *ctx, struct pt_action *a);
static void apply_scan(struct pt_context *ctx, struct pt_action *a);
static void apply_cold(struct pt_context *ctx, struct pt_action *a);
static void apply_trim(struct pt_context *ctx, struct pt_action *a);

/* Each kind of action: what runs in a worker, what its result does to the context. */
static const struct pt_action_ops action_ops[] = {
	[PT_JOB_OFFLOAD] = { "offload", "offload", run_offload, apply_offload },
	[PT_JOB_PREFETCH] = { "prefetch", "prefetch", run_prefetch, apply_prefetch },
	[PT_JOB_SETTLE] = { "settle", "settle", run_settle, apply_settle },
	[PT_JOB_SCAN] = { "scan", "scan", run_scan, apply_scan },
	[PT_JOB_COLD] = { "cold offload", "cold", run_cold, apply_cold },
	[PT_JOB_TRIM] = { "trim", "trim", run_trim, apply_trim },
};

const char *pt_job_kind_label(enum pt_job_kind kind)
{
	return (unsigned int)kind < PT_JOB_KINDS ? action_ops[kind].label : "unknown";
}

static struct pt_action *new_action(struct pt_context *ctx, enum pt_job_kind kind)
{
	struct pt_action *a = calloc(1, sizeof(*a));

	if (!a) {
		pt_err("%s: out of memory for an action", ctx->policy.name);
		return NULL;
	}
	a->job.run = action_ops[kind].run;
	a->kind = kind;
	a->cgroup_id = ctx->cgroup_id;
	snprintf(a->name, sizeof(a->name), "%s", ctx->policy.name);
	snprintf(a->dir, sizeof(a->dir), "%s", ctx->dir);
	snprintf(a->relpath, sizeof(a->relpath), "%s", ctx->relpath);
	ctx->busy = true;
	ctx->busy_action = a;
	return a;
}

/*
 * Worker thread: the processes of the action's cgroup, into *@pids (malloc'd); their count,
 * or a negative errno also left in a->rc.
 */
static int action_pids(struct pt_action *a, pid_t **pids)
{
	int n;

	*pids = calloc(PT_MAX_PIDS, sizeof(**pids));
	if (!*pids)
		return a->rc = -ENOMEM;
	n = pt_cgroup_pids(a->dir, *pids, PT_MAX_PIDS);
	if (n < 0) {
		free(*pids);
		*pids = NULL;
		a->rc = n;
	}
	return n;
}

/*
 * Ranges recorded earlier (at idle, by the model) are for the processes of this cgroup: the
 * advice checks that each pid still is the process it was and still lives there.
 */
static void owned_by(const struct pt_action *a, struct pt_proc_ranges *set, int n)
{
	for (int i = 0; i < n; i++)
		set[i].cgroup = a->relpath;
}

/* The keep ranges of @pid in @a, or NULL. */
static const struct pt_proc_ranges *keep_of(const struct pt_action *a, pid_t pid)
{
	for (int i = 0; i < a->n_keep; i++)
		if (a->keep[i].pid == pid)
			return &a->keep[i];
	return NULL;
}

/*
 * @pr (a process's anonymous ranges) minus its keep ranges, cut to @budget bytes. 0 or
 * -ENOMEM (then @pr is freed).
 */
static int advisable(const struct pt_action *a, struct pt_proc_ranges *pr, uint64_t budget)
{
	const struct pt_proc_ranges *keep = keep_of(a, pr->pid);
	struct pt_range *rest;
	int n;

	if (keep && keep->n) {
		n = pt_ranges_subtract(pr->r, (size_t)pr->n, keep->r, (size_t)keep->n, &rest);
		if (n < 0) {
			pt_proc_ranges_free(pr);
			return n;
		}
		free(pr->r);
		pr->r = rest;
		pr->n = pr->cap = n;
	}
	pr->n = (int)pt_ranges_truncate(pr->r, (size_t)pr->n, budget);
	return 0;
}

/*
 * Worker thread: page out each process's anonymous ranges, up to the budget, but its
 * idle working set.
 */
static void run_offload(struct pt_job *job)
{
	struct pt_action *a = (struct pt_action *)job;
	uint64_t t0 = pt_now_ms(), done = 0;
	int n_pinned = 0, n_files_pinned = 0;
	pid_t *pids;
	int n = action_pids(a, &pids);

	if (n < 0)
		return;
	a->set = calloc(n ? (size_t)n : 1, sizeof(*a->set));
	a->files = calloc(n ? (size_t)n : 1, sizeof(*a->files));
	if (!a->set || !a->files) {
		a->rc = -ENOMEM;
		free(pids);
		return;
	}
	/*
	 * The mapped-file pages in memory now, before the reclaim that follows drops them: the
	 * wake reads them back (executables, libraries, data files) in large readahead rather
	 * than fault by fault.
	 */
	for (int i = 0; i < n && a->keep_wake_set; i++)
		if (pt_proc_file_resident(pids[i], a->relpath, 0, &a->files[a->n_files]) == 0 &&
		    a->files[a->n_files].n) {
			/* Kept until the wake: within the limits, or by pid and start time. */
			pt_pidfd_keep(&a->files[a->n_files].pidfd, &n_files_pinned,
				      PT_PIDFD_HOLDER_MAX);
			a->n_files++;
		} else
			pt_proc_ranges_free(&a->files[a->n_files]);
	for (int i = 0; i < n && done < a->budget; i++) {
		struct pt_proc_ranges *pr = &a->set[a->n_set];
		int64_t got;

		/*
		 * Ranges are virtual: they bound the advice, the kernel pages out only what is
		 * resident, so the budget is an upper bound on what leaves. Shared memory
		 * (shared anonymous, memfd, SysV) too: the pages this process alone maps leave
		 * now, the others with the reclaim that follows.
		 */
		if (pt_proc_ranges_of(pids[i], a->relpath, PT_KIND_ANON | PT_KIND_SHMEM, 0, pr))
			continue;	/* exited or left meanwhile */
		if (advisable(a, pr, a->budget - done))
			continue;
		got = pt_proc_advise_paced(pr, MADV_PAGEOUT, a->rate);
		if (got < 0) {
			pt_proc_ranges_free(pr);
			continue;
		}
		done += (uint64_t)got;
		if (a->keep_wake_set) {
			pt_pidfd_keep(&pr->pidfd, &n_pinned, PT_PIDFD_HOLDER_MAX);
			a->n_set++;
		} else {
			pt_proc_ranges_free(pr);
		}
	}
	free(pids);
	a->n_procs = n;
	a->bytes = (int64_t)done;
	a->ms = pt_now_ms() - t0;
}

/*
 * Swap cache nobody maps: pages its timers' faults read ahead while it is idle, a prefetch
 * it never touched. They are on the tier already, so they go at no write cost.
 * memory.stat's anon counts mapped anonymous pages only, so swapcached - anon is a lower
 * bound on the unmapped part: trimming no more than that never takes a mapped page's worth.
 */
static uint64_t unmapped_swapcache(uint64_t swapcached, uint64_t anon)
{
	return swapcached > anon ? swapcached - anon : 0;
}

/* ... as the context's last sample of memory.stat saw it. */
static uint64_t stray_swapcache(const struct pt_context *ctx)
{
	return unmapped_swapcache(ctx->sample.swapcached, ctx->sample.anon);
}

/*
 * After the prefetch of a wake that interrupted an offload (interrupted_offload()): what
 * the offload wrote beyond the wake set goes, and no more than the swap cache nobody maps,
 * read now (unmapped_swapcache()): a wake set that is the whole offload set
 * (the model had not seen the container work) leaves nothing to drop, and the pages the
 * application has mapped since the wake are not the drop's to take.
 */
static void drop_unsettled(struct pt_action *a, uint64_t t0)
{
	uint64_t sc, anon, drop = a->unsettled > a->budget ? a->unsettled - a->budget : 0;

	a->unsettled = drop;
	if (drop < PT_DROP_CLOSE ||
	    pt_cgroup_read_key(a->dir, "memory.stat", "swapcached", &sc) ||
	    pt_cgroup_read_key(a->dir, "memory.stat", "anon", &anon))
		return;
	if (drop > unmapped_swapcache(sc, anon))
		drop = unmapped_swapcache(sc, anon);
	if (drop < PT_DROP_CLOSE)
		return;
	/*
	 * The container is active again: the small steps of an active trim, as a step that
	 * writes costs its size (an 8 MiB step wrote 4.4 MiB of redis under load in make test).
	 */
	a->freed = drop_swapcache(a->dir, sc - drop, drop + PT_DROP_CLOSE, PT_TRIM_ACTIVE_STEP,
				  false, &a->drop_stop);
	a->drop_ms = pt_now_ms() - t0 - a->ms;
}

/*
 * Swap-in threads of a prefetch: a CPU left to the application that is waking (its own
 * faults and its first requests come first), at most 4 (the drive, not the CPUs, is the
 * limit beyond that on real hardware).
 */
static unsigned int prefetch_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN) - 1;

	return n < 1 ? 1 : n > 4 ? 4 : (unsigned int)n;
}

/*
 * Worker thread: bring the wake set back. In the order the application is likely to touch
 * it: its mapped files (code first of all) and the hottest chunks of its memory at once,
 * from two devices: the files' (readahead from a child in the container's cgroup, which the
 * page cache it reads is charged to) and the tier's.
 */
static void run_prefetch(struct pt_job *job)
{
	struct pt_action *a = (struct pt_action *)job;
	struct pt_backing_queue queue = { 0 };
	struct pt_advise_child files;
	uint64_t t0 = pt_now_ms();
	int64_t got;
	int rc;

	owned_by(a, a->files, a->n_files);
	owned_by(a, a->set, a->n_set);
	/*
	 * With tiers, the reads it causes queue no further than a few requests ahead of the
	 * application's own (backing_queue.h).
	 */
	if (a->kmod_fd >= 0) {
		pt_backing_queue_open(&queue, "/sys/block", "/sys/class/block");
		queue.cgdir = a->dir;	/* its major faults set how deep the queue may be */
	}
	rc = pt_advise_child_start(&files, a->dir, a->files, a->n_files, MADV_WILLNEED, &queue);
	if (rc)
		pt_warn("%s: readahead of its mapped files: %s", a->name, strerror(-rc));
	/*
	 * The tier reads the cgroup's newest segments (the idle offload wrote the wake set
	 * there, after the cold pages) in large background reads, behind demand reads; the
	 * swap-ins of MADV_WILLNEED below then find most pages staged instead of each
	 * waiting for its own small read.
	 */
	/*
	 * Not for the rest of a wake: the bulk read stages the cgroup's newest pages, which
	 * the wake's prefetch just read; the rest, written by the same offload in address
	 * order, lies in runs that swap readahead reads whole.
	 */
	if (a->kmod_fd >= 0 && a->budget && !a->rest) {
		rc = pt_kmod_prefetch(a->kmod_fd, a->cgroup_id, a->budget, &a->tier_planned);
		if (rc)
			pt_warn("%s: tier prefetch: %s (MADV_WILLNEED alone)", a->name,
				strerror(-rc));
	}
	got = pt_proc_advise_shared(a->set, a->n_set, MADV_WILLNEED, prefetch_threads(), a->rate,
				    &queue, &a->queue_wait_ms);
	pt_backing_queue_close(&queue);
	if (got > 0)
		a->bytes += got;
	got = pt_advise_child_finish(&files);
	if (got > 0)
		a->file_bytes = (uint64_t)got;
	else if (got < 0)
		pt_warn("%s: readahead of its mapped files failed: %s", a->name,
			strerror((int)-got));
	a->ms = pt_now_ms() - t0;
	/*
	 * The offload this wake interrupted (interrupted_offload()): its pages were written
	 * back first and sit at the LRU's tail, behind what the prefetch just read and what the
	 * application touched since the wake, so the drop takes them first; a step that writes
	 * has reached memory in use and stops it.
	 */
	if (a->unsettled)
		drop_unsettled(a, t0);
}

uint64_t pt_settle_step(uint64_t current, uint64_t target)
{
	if (current <= target + PT_SETTLE_SLACK)
		return 0;
	return (current - (target + PT_SETTLE_SLACK / 2)) / 2;
}

/* Worker thread: memory.reclaim down to the settle's target (a->budget), in steps. */
static void run_settle(struct pt_job *job)
{
	struct pt_action *a = (struct pt_action *)job;
	uint64_t before, cur, t0 = pt_now_ms();

	a->rc = pt_cgroup_read_u64(a->dir, "memory.current", &before);
	if (a->rc)
		return;
	cur = before;
	for (int i = 0; i < PT_SETTLE_STEPS; i++) {
		uint64_t want = pt_settle_step(cur, a->budget), next;
		char amount[32];
		int rc;

		if (!want)
			break;
		snprintf(amount, sizeof(amount), "%llu", (unsigned long long)want);
		/*
		 * -EAGAIN means the kernel reclaimed less than asked (pages still under
		 * write-back, or unreclaimable): the next pass retries.
		 */
		rc = pt_cgroup_write(a->dir, "memory.reclaim", amount);
		if (rc && rc != -EAGAIN) {
			a->rc = rc;
			break;
		}
		if (pt_cgroup_read_u64(a->dir, "memory.current", &next))
			break;
		if (next >= cur) {
			cur = next;
			break;	/* nothing freed: write-back in flight; the next pass retries */
		}
		cur = next;
	}
	a->resident_after = cur;
	if (cur < before)
		a->bytes = (int64_t)(before - cur);
	a->ms = pt_now_ms() - t0;
}

/* Worker thread: scan each process's accessed bits (and clear them for the next epoch). */
static void run_scan(struct pt_job *job)
{
	struct pt_action *a = (struct pt_action *)job;
	uint64_t t0 = pt_now_ms();
	int n_pinned = 0;
	pid_t *pids;
	int n = action_pids(a, &pids);

	if (n < 0)
		return;
	a->scans = calloc(n ? (size_t)n : 1, sizeof(*a->scans));
	if (!a->scans) {
		a->rc = -ENOMEM;
		free(pids);
		return;
	}
	for (int i = 0; i < n; i++) {
		struct pt_proc_scan *ps = &a->scans[a->n_scans];
		uint64_t start = 0;
		/*
		 * Which process this pid is, pinned before its pages are read (the model keys
		 * on pid and start time and keeps the pidfd): one of this container's, and,
		 * alive after the scan, the one scanned (the scanners go by number).
		 */
		int fd = pt_proc_pin(pids[i], a->relpath, &start);

		if (fd < 0)
			continue;	/* exited or left meanwhile */
		if (pt_scan_process(a->scanner, a->kmod_fd, pids[i], a->chunk_shift, ps) == 0 &&
		    pt_pidfd_alive(fd)) {
			ps->start = start;
			/*
			 * What the model may keep (pidfd.h); past that it names the process by
			 * pid and start time, and the scan lets the pidfd go now.
			 */
			pt_pidfd_keep(&fd, &n_pinned, PT_PIDFD_HOLDER_MAX);
			ps->pidfd = fd;
			a->n_scans++;
		} else {
			pt_proc_scan_free(ps);
			pt_pidfd_close(fd);
		}
	}
	free(pids);
	a->ms = pt_now_ms() - t0;
}

struct pt_action *pt_context_scan(struct pt_context *ctx, enum pt_scanner_kind scanner,
				  int kmod_fd, unsigned int chunk_shift)
{
	struct pt_action *a;

	if (!ctx->hot_ok || ctx->busy || ctx->policy.class == PT_CLASS_CRITICAL)
		return NULL;
	a = new_action(ctx, PT_JOB_SCAN);
	if (a) {
		a->epochs = ctx->scan_stretch ? ctx->scan_stretch : 1;
		a->scanner = scanner;
		a->kmod_fd = kmod_fd;
		a->chunk_shift = chunk_shift;
	}
	return a;
}

struct pt_action *pt_context_quiet_scan(struct pt_context *ctx, uint64_t now,
					uint64_t interval_ms, enum pt_scanner_kind scanner,
					int kmod_fd, unsigned int chunk_shift, bool *hold)
{
	struct pt_action *a;

	*hold = false;
	if (!ctx->hot_ok || !ctx->scans || ctx->quiet_scans >= PT_QUIET_SCANS ||
	    ctx->busy_epoch + 1 < pt_hot_now(&ctx->hot))
		return NULL;	/* no model, or a quiet epoch is there, or it had its chances */
	*hold = true;
	if (ctx->quiet_scans && now < ctx->last_epoch_ms + interval_ms)
		return NULL;	/* the quiet epoch is still gathering its accessed bits */
	a = pt_context_scan(ctx, scanner, kmod_fd, chunk_shift);
	if (!a)
		return NULL;
	a->epochs = 1;		/* it stands for the time since the last scan, not a stretch */
	ctx->quiet_scans++;
	ctx->last_scan_ms = now;
	return a;
}

/* memory.swap.current, or UINT64_MAX without swap accounting (no write check then). */
static uint64_t swap_current(const char *dir)
{
	uint64_t v;

	return pt_cgroup_read_u64(dir, "memory.swap.current", &v) ? UINT64_MAX : v;
}

/*
 * Drops the cgroup's swap cache down to @target bytes with memory.reclaim, @step at a time
 * and @max_reclaim in all at most, and stops at the first step that wrote
 * (swapcache_drop.h). What MADV_PAGEOUT wrote but left in the swap cache (the write
 * completed after the advice returned: plain swap on a block device) is at the tail of the
 * LRU, written back and unmapped, and goes first. @active: an active container's trim, whose
 * steps may write a share of what it can gain (swapcache_drop.h). Returns the bytes freed;
 * @why: why it stopped.
 */
static uint64_t drop_swapcache(const char *dir, uint64_t target, uint64_t max_reclaim,
			       uint64_t step, bool active, enum pt_drop_stop *why)
{
	struct pt_swap_fence fence;
	struct pt_drop d;

	pt_drop_init(&d, target, max_reclaim, step, swap_current(dir));
	if (active)
		pt_drop_writes_follow_gain(&d);
	/* On the classic LRU, no step can write more than a few pages (swap_fence.h). */
	pt_swap_fence_start(&fence, dir);
	for (;;) {
		uint64_t sc, want, cur0, cur1;
		char amount[32];
		int rc;

		if (pt_cgroup_read_key(dir, "memory.stat", "swapcached", &sc) ||
		    !(want = pt_drop_next(&d, sc, swap_current(dir))) ||
		    pt_cgroup_read_u64(dir, "memory.current", &cur0))
			break;
		snprintf(amount, sizeof(amount), "%llu", (unsigned long long)want);
		pt_swap_fence_hold(&fence);
		/* -EAGAIN: less than asked, pages still under write-back. */
		rc = pt_cgroup_write(dir, "memory.reclaim", amount);
		if (pt_cgroup_read_u64(dir, "memory.current", &cur1))
			cur1 = cur0;
		pt_drop_stepped(&d, want, cur0, cur1);
		pt_debug("%s: swap cache drop step %d: swapcached %llu KiB, reclaim %llu KiB: %s, memory.current %llu -> %llu KiB, swap fence %llu KiB (0: none)",
			 dir, d.steps, (unsigned long long)(sc >> 10), (unsigned long long)(want >> 10),
			 rc ? strerror(-rc) : "done", (unsigned long long)(cur0 >> 10),
			 (unsigned long long)(cur1 >> 10), (unsigned long long)(fence.written >> 10));
		if (cur1 >= cur0) {
			/* Nothing freed: write-back still in flight. Give it a moment. */
			struct timespec ts = { .tv_nsec = PT_DROP_WAIT_MS * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
	pt_swap_fence_release(&fence);
	if (d.why == PT_DROP_GOING)
		d.why = PT_DROP_STUCK;	/* a file it could not read */
	*why = d.why;
	return d.freed;
}

/* Worker thread: page out the cold chunks' ranges, and free what that left behind. */
static void run_cold(struct pt_job *job)
{
	struct pt_action *a = (struct pt_action *)job;
	uint64_t t0 = pt_now_ms(), sc_before = 0;

	if (pt_cgroup_read_key(a->dir, "memory.stat", "swapcached", &sc_before))
		sc_before = UINT64_MAX;	/* a kernel without it: nothing to measure */
	owned_by(a, a->set, a->n_set);
	for (int i = 0; i < a->n_set; i++) {
		int64_t got = pt_proc_advise(&a->set[i], MADV_PAGEOUT);

		if (got > 0)
			a->bytes += got;
	}
	if (sc_before != UINT64_MAX && a->bytes > 0)
		a->freed = drop_swapcache(a->dir, sc_before, (uint64_t)a->bytes,
					  PT_COLD_DROP_STEP, false, &a->drop_stop);
	a->ms = pt_now_ms() - t0;
}

struct pt_action *pt_context_cold(struct pt_context *ctx, uint64_t scan_interval_ms,
				  uint64_t max_bytes)
{
	uint64_t chunk = 1ULL << ctx->hot.chunk_shift, epochs, *ids;
	size_t max;
	int n;

	if (!ctx->hot_ok || ctx->busy || !ctx->policy.cold_after_ms ||
	    ctx->policy.class == PT_CLASS_CRITICAL || ctx->idle.state != PT_STATE_ACTIVE)
		return NULL;
	/* Never below the floor: what may leave is what is resident above it. */
	if (ctx->sample.memory_current <= ctx->policy.resident_floor_bytes)
		return NULL;
	if (max_bytes > ctx->sample.memory_current - ctx->policy.resident_floor_bytes)
		max_bytes = ctx->sample.memory_current - ctx->policy.resident_floor_bytes;
	max = (size_t)(max_bytes / chunk);
	if (!max)
		return NULL;
	epochs = (ctx->policy.cold_after_ms + scan_interval_ms - 1) / scan_interval_ms;
	epochs = pt_hot_cold_backoff(&ctx->hot, epochs);
	ids = malloc(max * sizeof(*ids));
	if (!ids)
		return NULL;
	n = pt_hot_cold_chunks(&ctx->hot, (uint32_t)epochs, ids, max);
	ctx->cold_more = n > 0 && (size_t)n >= max;
	if (n <= 0) {
		free(ids);
		return NULL;
	}
	return pt_context_cold_ids(ctx, ids, (size_t)n);
}

/*
 * Worker thread: drop a->budget bytes of the swap cache, stopping at the first step that
 * writes. Idle, it may take other clean memory along (a container's files' page cache goes
 * at idle anyway); active, no more than the budget.
 */
static void run_trim(struct pt_job *job)
{
	struct pt_action *a = (struct pt_action *)job;
	uint64_t t0 = pt_now_ms(), sc;

	a->rc = pt_cgroup_read_key(a->dir, "memory.stat", "swapcached", &sc);
	if (a->rc)
		return;
	a->freed = drop_swapcache(a->dir, sc > a->budget ? sc - a->budget : 0,
				  a->trim_active ? a->budget + PT_DROP_CLOSE : 2 * a->budget,
				  a->trim_active ? PT_TRIM_ACTIVE_STEP : PT_TRIM_IDLE_STEP,
				  a->trim_active, &a->drop_stop);
	a->ms = pt_now_ms() - t0;
}

const char *pt_action_name(const struct pt_action *a)
{
	return action_ops[a->kind].name;
}

bool pt_context_action_running(const struct pt_context *ctx)
{
	return ctx->busy && ctx->busy_action && pt_job_started(&ctx->busy_action->job);
}

bool pt_context_paging_out(const struct pt_context *ctx)
{
	if (!pt_context_action_running(ctx))
		return false;
	switch (ctx->busy_action->kind) {
	case PT_JOB_OFFLOAD:
	case PT_JOB_SETTLE:
	case PT_JOB_TRIM:
	case PT_JOB_COLD:
		return true;
	default:
		return false;
	}
}

bool pt_context_waits_for(const struct pt_context *ctx, char *buf, size_t len)
{
	const char *what[5];
	char inflight[32];
	int n = 0;
	size_t at = 0;

	if (ctx->busy) {
		if (ctx->busy_action)
			snprintf(inflight, sizeof(inflight), "%s %s",
				 pt_action_name(ctx->busy_action),
				 ctx->busy_action->job.cancelled ? "taken back" :
				 pt_context_action_running(ctx) ? "running" : "queued");
		else
			snprintf(inflight, sizeof(inflight), "an action");
		what[n++] = inflight;
	}
	if (ctx->offload_pending)
		what[n++] = ctx->offload_backoff ? "offload deferred (backoff)" : "offload pending";
	if (ctx->wake_pending)
		what[n++] = "prefetch pending";
	if (ctx->trim_until_ms)
		what[n++] = "trim wait";
	if (ctx->settle_passes)
		what[n++] = "settle passes";
	if (len)
		buf[0] = '\0';
	for (int i = 0; i < n && at < len; i++) {
		int w = snprintf(buf + at, len - at, "%s%s", i ? "," : "", what[i]);

		at += w > 0 ? (size_t)w : 0;
	}
	return n > 0;
}

bool pt_context_trim_due(struct pt_context *ctx, uint64_t now, uint64_t interval_ms)
{
	uint64_t cur = ctx->sample.memory_current;

	if (!ctx->idle_low_current || cur < ctx->idle_low_current)
		ctx->idle_low_current = cur;
	return now - ctx->last_trim_ms >= interval_ms ||
	       cur >= ctx->idle_low_current + PT_IDLE_STRAY_SWAPCACHE;
}

void pt_context_trim_looked(struct pt_context *ctx, uint64_t now, bool trimmed)
{
	/*
	 * Not trimmed: whatever grew is not stray swap cache (the application's own memory),
	 * so the next burst is measured from here. Trimmed: the trim brings it down again.
	 */
	if (!trimmed)
		ctx->idle_low_current = ctx->sample.memory_current;
	ctx->last_trim_ms = now;
}

struct pt_action *pt_context_trim(struct pt_context *ctx, uint64_t now)
{
	uint64_t bytes, stray = stray_swapcache(ctx);
	bool active = false;
	struct pt_action *a;

	if (!ctx->hot_ok || ctx->busy || now < ctx->trim_held_until_ms)
		return NULL;
	if (ctx->idle.state == PT_STATE_IDLE && ctx->n_offloads) {
		bytes = stray;
		if (bytes < PT_IDLE_STRAY_SWAPCACHE)
			return NULL;
	} else if (ctx->idle.state == PT_STATE_ACTIVE) {
		uint64_t before = ctx->stray_looked;

		bytes = ctx->hot.unused_prefetched << ctx->hot.chunk_shift;
		ctx->hot.unused_prefetched = 0;
		ctx->stray_looked = stray;
		/*
		 * Its last wake's window over and still holding swap cache nobody maps: a
		 * prefetch of the whole offload set (the model had not seen it work yet) that it
		 * did not use, which the model does not count as its own. On the tier already:
		 * it goes. A drop that writes (the reclaim reached memory in use) holds this
		 * back for a while (apply_trim()). The window counts from the prefetch's end,
		 * not the wake, and a container still mapping it (less unmapped than at the
		 * last look) is still reading its memory back: a wake of 256 MiB that took 11 s under
		 * emulation had 153 MiB it was about to read dropped 6 s after its prefetch, and
		 * read them again from the drive (idle_wake, make test on 6.1).
		 */
		if (ctx->n_wakes && now >= ctx->prefetch_done_ms + PT_QUALITY_WINDOW_MS &&
		    stray >= PT_IDLE_STRAY_SWAPCACHE && stray > bytes &&
		    !(before && stray + PT_DROP_CLOSE < before) &&
		    (!ctx->stray_trimmed_ms || now >= ctx->stray_trimmed_ms + PT_TRIM_STRAY_PACE_MS)) {
			bytes = stray;
			ctx->stray_trimmed_ms = now;
		}
		if (!bytes || ctx->sample.swapcached < (1ULL << 20))
			return NULL;
		active = true;
	} else {
		return NULL;
	}
	a = new_action(ctx, PT_JOB_TRIM);
	if (a) {
		a->budget = bytes < ctx->sample.swapcached ? bytes : ctx->sample.swapcached;
		a->trim_active = active;
	}
	return a;
}

struct pt_action *pt_context_cold_ids(struct pt_context *ctx, uint64_t *ids, size_t n)
{
	struct pt_action *a;

	if (!ctx->hot_ok || ctx->busy || ctx->policy.class == PT_CLASS_CRITICAL) {
		free(ids);
		return NULL;
	}
	a = new_action(ctx, PT_JOB_COLD);
	if (!a) {
		free(ids);
		return NULL;
	}
	a->ids = ids;
	a->n_set = pt_hot_ranges(&ctx->hot, ids, n, &a->set);
	if (a->n_set <= 0) {
		ctx->busy = false;
		ctx->busy_action = NULL;
		free(a->ids);
		free(a);
		return NULL;
	}
	a->n_ids = n;
	return a;
}

/* Chunk ids -> per-process ranges, each sorted and merged. Returns the count, or < 0. */
static int ids_to_ranges(const struct pt_hot *h, const uint64_t *ids, size_t n,
			 struct pt_proc_ranges **out)
{
	int np = pt_hot_ranges(h, ids, n, out);

	for (int i = 0; i < np; i++)
		(*out)[i].n = (int)pt_ranges_normalize((*out)[i].r, (size_t)(*out)[i].n);
	return np;
}

struct pt_action *pt_context_offload(struct pt_context *ctx, uint64_t rate)
{
	uint64_t budget, *keep = NULL, keep_since = ctx->busy_epoch + 1;
	struct pt_action *a;
	int n_keep = 0;

	if (ctx->policy.class == PT_CLASS_CRITICAL || ctx->busy)
		return NULL;
	ctx->anon_at_idle = ctx->sample.anon;
	ctx->shmem_at_idle = ctx->sample.shmem;
	ctx->file_at_idle = ctx->sample.file_cache;
	ctx->keep_bytes = 0;
	ctx->trim_held_until_ms = 0;
	/*
	 * What it touched while quiet (timers, housekeeping) stays: paging it out would only
	 * fault it back in at the next tick, and a trickle of such faults is all it would
	 * take to wake it.
	 */
	if (ctx->hot_ok && ctx->scans) {
		n_keep = pt_hot_keep_set(&ctx->hot, keep_since, &keep);
		if (n_keep < 0)
			n_keep = 0;
		ctx->keep_bytes = (uint64_t)n_keep << ctx->hot.chunk_shift;
	}
	/*
	 * Shared memory counts: a PostgreSQL's shared buffers are most of it. Its ranges go
	 * in the wake set whether MADV_PAGEOUT takes their pages (mapped once) or the reclaim
	 * that follows does (mapped by several processes). So does the swap cache: a wake
	 * that was only its timers' faults prefetched it all back unmapped, and the ranges
	 * of this offload, cut at anon alone, would leave all of it out of the next wake.
	 */
	budget = ctx->sample.anon + ctx->sample.shmem + ctx->sample.swapcached;
	budget = budget > ctx->policy.resident_floor_bytes ?
		 budget - ctx->policy.resident_floor_bytes : 0;
	if (ctx->policy.offload_cap_bytes && budget > ctx->policy.offload_cap_bytes)
		budget = ctx->policy.offload_cap_bytes;
	if (!budget) {
		free(keep);
		return NULL;
	}
	a = new_action(ctx, PT_JOB_OFFLOAD);
	if (!a) {
		free(keep);
		return NULL;
	}
	a->budget = budget;
	a->rate = rate;
	a->keep_wake_set = ctx->policy.prefetch;
	if (n_keep) {
		a->n_keep = ids_to_ranges(&ctx->hot, keep, (size_t)n_keep, &a->keep);
		if (a->n_keep < 0)
			a->n_keep = 0;
	}
	free(keep);
	/*
	 * The model's wake set: what it used when it last worked, plus what refaulted; after
	 * a busy period of its own background (PostgreSQL's processes, redis's timers right
	 * after an idle offload), plus the set before it (bench/wake: PostgreSQL's client
	 * wake found 4 MiB there, its timers' work, where the set before held 27).
	 */
	if (ctx->hot_ok)
		pt_hot_record_wake_set(&ctx->hot, ctx->busy_epoch, PT_WAKE_RECENT_EPOCHS,
				       pt_idle_busy_was_background(&ctx->idle));
	return a;
}

/*
 * The ranges of process @pid (started at @start) in @set, sorted and merged, into *@out
 * (malloc'd, NULL when none). The count or -ENOMEM.
 */
static int ranges_of(const struct pt_proc_ranges *set, int n, pid_t pid, uint64_t start,
		     struct pt_range **out)
{
	size_t total = 0, k = 0;

	*out = NULL;
	for (int i = 0; i < n; i++)
		if (set[i].pid == pid && set[i].start == start)
			total += (size_t)set[i].n;
	if (!total)
		return 0;
	*out = malloc(total * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		if (set[i].pid == pid && set[i].start == start) {
			memcpy(*out + k, set[i].r, (size_t)set[i].n * sizeof(**out));
			k += (size_t)set[i].n;
		}
	return (int)pt_ranges_normalize(*out, total);
}

/*
 * The idle offload's set (ctx->wake_set) minus @hot (the model's set the wake restores
 * first), per process, into ctx->rest_set, which takes the entries over. 0 or -ENOMEM
 * (then no rest).
 */
static int keep_rest(struct pt_context *ctx, const struct pt_proc_ranges *hot, int n_hot)
{
	struct pt_proc_ranges *rest;
	int n = 0;

	if (!ctx->n_wake_set)
		return 0;
	rest = calloc((size_t)ctx->n_wake_set, sizeof(*rest));
	if (!rest)
		return -ENOMEM;
	for (int i = 0; i < ctx->n_wake_set; i++) {
		struct pt_proc_ranges *pr = &ctx->wake_set[i];
		struct pt_range *h, *left;
		int nh, nl;

		nh = ranges_of(hot, n_hot, pr->pid, pr->start, &h);
		if (nh < 0)
			goto nomem;
		nl = (int)pt_ranges_normalize(pr->r, (size_t)pr->n);
		nl = pt_ranges_subtract(pr->r, (size_t)nl, h, (size_t)nh, &left);
		free(h);
		if (nl < 0)
			goto nomem;
		if (!nl)
			continue;
		free(pr->r);
		rest[n] = *pr;	/* its pidfd moves with it */
		rest[n].r = left;
		rest[n].n = rest[n].cap = nl;
		memset(pr, 0, sizeof(*pr));
		n++;
	}
	ctx->rest_set = rest;
	ctx->n_rest_set = n;
	return 0;
nomem:
	free_set(rest, n);
	return -ENOMEM;
}

/*
 * @more's entries into *@set (*@n entries): a process's ranges joined to its entry there
 * (sorted, merged), a process not there appended; @more is consumed either way. 0, or
 * -ENOMEM with what could not be joined freed.
 */
static int join_sets(struct pt_proc_ranges **set, int *n, struct pt_proc_ranges *more,
		     int n_more)
{
	struct pt_proc_ranges *grown;
	int rc = 0;

	grown = realloc(*set, ((size_t)*n + (size_t)n_more + 1) * sizeof(**set));
	if (!grown) {
		free_set(more, n_more);
		return -ENOMEM;
	}
	*set = grown;
	for (int i = 0; i < n_more; i++) {
		struct pt_proc_ranges *to = NULL, *pr = &more[i];
		struct pt_range *r;

		for (int j = 0; j < *n; j++)
			if (grown[j].pid == pr->pid && grown[j].start == pr->start)
				to = &grown[j];
		if (!to) {
			grown[(*n)++] = *pr;	/* its pidfd moves with it */
			memset(pr, 0, sizeof(*pr));
			continue;
		}
		r = realloc(to->r, ((size_t)to->n + (size_t)pr->n) * sizeof(*r));
		if (!r) {
			rc = -ENOMEM;
			pt_proc_ranges_free(pr);
			continue;
		}
		memcpy(r + to->n, pr->r, (size_t)pr->n * sizeof(*r));
		to->r = r;
		to->n = (int)pt_ranges_normalize(r, (size_t)to->n + (size_t)pr->n);
		to->cap = to->n;
		pt_proc_ranges_free(pr);
	}
	free(more);
	return rc;
}

/*
 * The rest of the last wake that did not come back is still out, and was the container's
 * before it first went idle: it goes back into the wake set, for the next wake. Dropped
 * instead, a wake that was only its timers (redis: serverCron's faults right after the
 * offload) left the next idle offload nothing to page out, and the wake after that, the
 * real one, nothing to bring back (bench/wake: 0.6 of 200 MiB).
 */
static void rest_to_wake_set(struct pt_context *ctx)
{
	if (ctx->n_rest_set &&
	    join_sets(&ctx->wake_set, &ctx->n_wake_set, ctx->rest_set, ctx->n_rest_set))
		pt_warn("%s: out of memory: part of the rest of its last wake left its wake set",
			ctx->policy.name);
	ctx->rest_set = NULL;
	ctx->n_rest_set = 0;
	ctx->rest_until_ms = 0;
}

/* Bytes the ranges span: an upper bound of what the wake set holds. */
static uint64_t set_bytes(const struct pt_proc_ranges *set, int n)
{
	uint64_t bytes = 0;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < set[i].n; j++)
			bytes += set[i].r[j].len;
	return bytes;
}

bool pt_context_wake_from_model(const struct pt_context *ctx)
{
	return ctx->hot_ok && ctx->hot.n_wake_set &&
	       ctx->busy_scans >= PT_WAKE_RECENT_EPOCHS;
}

/*
 * A wake that came between an idle offload and the end of its settle (the container's
 * first request within a second of going idle): what MADV_PAGEOUT wrote is on the tier,
 * unmapped, still in the swap cache, and nothing but the settle would free it. Cancelled
 * with the settle, it stays resident for as long as the container is active (real_servers,
 * CI: redis held 66 of 71 MiB while serving a tenth of it). The bytes the offload advised
 * that the settle has not reclaimed: what the wake still drops, after its prefetch.
 */
static uint64_t interrupted_offload(const struct pt_context *ctx)
{
	if (ctx->settle_passes <= 0 || ctx->offload_requested <= ctx->reclaimed)
		return 0;
	return ctx->offload_requested - ctx->reclaimed;
}

struct pt_action *pt_context_prefetch(struct pt_context *ctx, uint64_t rate, int kmod_fd)
{
	uint64_t unsettled;
	struct pt_action *a;

	if (ctx->busy) {
		ctx->wake_pending = true;
		return NULL;
	}
	ctx->n_wakes++;
	unsettled = interrupted_offload(ctx);
	ctx->settle_passes = 0;
	ctx->trim_held_until_ms = 0;
	ctx->trim_holds_in_row = 0;
	if (!ctx->policy.prefetch || (!ctx->n_wake_set && !ctx->n_file_set)) {
		ctx->last_wake_ms = pt_now_ms() - ctx->idle.woke_at_ms;
		ctx->prefetch_done_ms = pt_now_ms();
		ctx->stray_looked = 0;
		pt_idle_wake_done(&ctx->idle, ctx->prefetch_done_ms);
		/*
		 * Nothing to bring back, but what the offload wrote still goes: no more than
		 * the swap cache nobody mapped when it was last sampled.
		 */
		if (unsettled > stray_swapcache(ctx))
			unsettled = stray_swapcache(ctx);
		if (unsettled < PT_DROP_CLOSE)
			return NULL;
		a = new_action(ctx, PT_JOB_TRIM);
		if (a) {
			a->budget = unsettled;
			a->trim_active = true;
		}
		return a;
	}
	a = new_action(ctx, PT_JOB_PREFETCH);
	if (!a)
		return NULL;
	a->rate = rate;
	a->unsettled = unsettled;
	/*
	 * The model's wake set, hottest first, when it has one and has seen the container
	 * work; otherwise everything the idle offload advised. Either moves to the job: one
	 * prefetch per idle period.
	 */
	rest_to_wake_set(ctx);	/* a wake without an offload since the last one */
	if (pt_context_wake_from_model(ctx)) {
		a->n_set = pt_hot_ranges(&ctx->hot, ctx->hot.wake_set, ctx->hot.n_wake_set,
					 &a->set);
		if (a->n_set < 0)
			a->n_set = 0;
		/* What else the offload paged out waits for the application to ask for it. */
		if (a->n_set && keep_rest(ctx, a->set, a->n_set))
			pt_warn("%s: out of memory for the rest of its wake set: the model's part only",
				ctx->policy.name);
		drop_wake_set(ctx);
	}
	if (!a->n_set) {
		a->set = ctx->wake_set;
		a->n_set = ctx->n_wake_set;
		ctx->wake_set = NULL;
		ctx->n_wake_set = 0;
	}
	a->files = ctx->file_set;
	a->n_files = ctx->n_file_set;
	ctx->file_set = NULL;
	ctx->n_file_set = 0;
	a->kmod_fd = kmod_fd;
	a->budget = set_bytes(a->set, a->n_set);
	/* Never more than the container has on the tiers (when known). */
	if (ctx->tier_pages && a->budget > ctx->tier_pages * 4096)
		a->budget = ctx->tier_pages * 4096;
	return a;
}

/*
 * The first @bytes of @pr (in address order) into *@head, a copy that shares its process
 * (its own pidfd); @pr keeps the rest. 0 or -ENOMEM (then both as they were).
 */
static int split_ranges(struct pt_proc_ranges *pr, uint64_t bytes, struct pt_proc_ranges *head)
{
	struct pt_range *r = malloc((size_t)pr->n * sizeof(*r)), *tail;
	int nh, nt;

	if (!r)
		return -ENOMEM;
	memcpy(r, pr->r, (size_t)pr->n * sizeof(*r));
	nh = (int)pt_ranges_truncate(r, (size_t)pr->n, bytes);
	nt = pt_ranges_subtract(pr->r, (size_t)pr->n, r, (size_t)nh, &tail);
	if (nt < 0) {
		free(r);
		return nt;
	}
	*head = *pr;
	head->r = r;
	head->n = head->cap = nh;
	head->pidfd = pr->pidfd > 0 ? pt_pidfd_dup(pr->pidfd) : 0;
	if (head->pidfd < 0)
		head->pidfd = 0;	/* named by pid and start time alone (pidfd.h) */
	free(pr->r);
	pr->r = tail;
	pr->n = pr->cap = nt;
	return 0;
}

/* The 4 KiB pages the rest of a wake spans. */
static uint64_t rest_pages(const struct pt_context *ctx)
{
	uint64_t bytes = 0;

	for (int i = 0; i < ctx->n_rest_set; i++)
		bytes += pt_ranges_bytes(ctx->rest_set[i].r, (size_t)ctx->rest_set[i].n);
	return bytes >> 12;
}

struct pt_action *pt_context_rest(struct pt_context *ctx, uint64_t now, uint64_t misses,
				  uint64_t stall_us, uint64_t room, uint64_t rate, int kmod_fd)
{
	struct pt_action *a;
	uint64_t left = room;
	int n = 0, kept = 0;

	if (!ctx->n_rest_set || ctx->busy || !ctx->rest_until_ms)
		return NULL;	/* none, or its wake's prefetch still runs */
	if (ctx->idle.state != PT_STATE_ACTIVE || now > ctx->rest_until_ms) {
		/* Not asked for in time: it stays out, in the next wake set (rest_to_wake_set()). */
		ctx->rest_until_ms = 0;
		return NULL;
	}
	if (!ctx->rest_period_ms) {
		/* The first look after the prefetch: the first period begins. */
		ctx->rest_misses0 = misses;
		ctx->rest_stall0 = stall_us;
		ctx->rest_period_ms = now ? now : 1;
		ctx->rest_streak = 0;
		ctx->rest_hurt = 0;
		return NULL;
	}
	/*
	 * A burst of them right after the wake is what the model missed of the first
	 * requests' path; reads that go on period after period are an application reading
	 * all over the memory the model did not see.
	 */
	if (now >= ctx->rest_period_ms + PT_REST_PERIOD_MS) {
		/* The share of the period's wall time in which some task of it waited. */
		uint64_t waited = stall_us > ctx->rest_stall0 ? stall_us - ctx->rest_stall0 : 0;
		bool hurt = waited * 100 >= (now - ctx->rest_period_ms) * 1000 * PT_REST_STALL_PCT;

		ctx->rest_streak = misses >= ctx->rest_misses0 + PT_REST_MISSES ?
				   ctx->rest_streak + 1 : 0;
		ctx->rest_hurt = hurt && ctx->rest_streak ? ctx->rest_hurt + 1 : 0;
		pt_debug("%s: wake: %llu demand reads in %llu ms past its prefetch, waited %llu ms for memory (%u in a row, %u waiting); %llu since the wake, of the rest's %llu pages",
			 ctx->policy.name,
			 (unsigned long long)(misses > ctx->rest_misses0 ? misses - ctx->rest_misses0 : 0),
			 (unsigned long long)(now - ctx->rest_period_ms),
			 (unsigned long long)(waited / 1000), ctx->rest_streak, ctx->rest_hurt,
			 (unsigned long long)(misses >= ctx->rest_misses_wake ?
					      misses - ctx->rest_misses_wake : 0),
			 (unsigned long long)rest_pages(ctx));
		ctx->rest_misses0 = misses;
		ctx->rest_stall0 = stall_us;
		ctx->rest_period_ms = now;
	}
	if (ctx->rest_streak < PT_REST_PERIODS || !room)
		return NULL;
	/*
	 * Not for its own background (a server that takes requests, none since the wake): its
	 * processes fault back what they read. The rest of an idle PostgreSQL restored for a
	 * periodic task of its was 175 MiB read, and 54 MiB of it written again at its next
	 * idle offload (real_servers with 4 more minutes of idle). A request, then, opens it.
	 */
	if (pt_idle_busy_was_background(&ctx->idle))
		return NULL;
	/*
	 * And they add up to a share of the rest: a server that serves a tenth of its data
	 * reads steadily too, one item a request, and a long while (redis in real_servers,
	 * 20 requests/s over a tenth of 66 MiB, ran its rest of 64 MiB back and kept it).
	 * Counted from the wake: an application whose requests fault all over its memory
	 * while the prefetch runs (pyweb: 26 MiB of demand reads in its first 5 s) shows it
	 * then, one that serves a small part of it does not. Waiting for memory does not
	 * stand in for the share (it did until 2026-12-02): PostgreSQL serving a tenth of its
	 * data, 1,085 pages read back of a rest of 44,054, waited 27% of a period while
	 * every server of real_servers woke at once; its rest of 172 MiB came back, and it
	 * waited as much after (1.8 s of its last 15 s; 1.4 s on CI, where 96 of its 186 MiB
	 * stayed in). The wait was the host's, not the rest's pages.
	 */
	if (misses < ctx->rest_misses_wake ||
	    (misses - ctx->rest_misses_wake) * PT_REST_SHARE < rest_pages(ctx))
		return NULL;
	a = new_action(ctx, PT_JOB_PREFETCH);
	if (a)
		a->set = calloc((size_t)ctx->n_rest_set, sizeof(*a->set));
	if (!a || !a->set) {
		if (a) {
			a->rc = -ENOMEM;
			pt_context_apply(ctx, a);	/* says so, and frees it */
		}
		return NULL;
	}
	/*
	 * As much as the host has room for, in address order (swap readahead's order); what
	 * does not fit stays in the rest, for the next wake.
	 */
	for (int i = 0; i < ctx->n_rest_set; i++) {
		struct pt_proc_ranges *pr = &ctx->rest_set[i];
		uint64_t bytes = pt_ranges_bytes(pr->r, (size_t)pr->n);

		if (bytes <= left) {
			a->set[n++] = *pr;
			left -= bytes;
			continue;
		}
		if (left && split_ranges(pr, left, &a->set[n]) == 0) {
			left -= pt_ranges_bytes(a->set[n].r, (size_t)a->set[n].n);
			n++;
		}
		ctx->rest_set[kept++] = *pr;
	}
	ctx->n_rest_set = kept;
	if (!kept) {
		free(ctx->rest_set);
		ctx->rest_set = NULL;
	}
	a->n_set = n;
	a->rest = true;
	a->rest_waited = ctx->rest_hurt >= PT_REST_PERIODS;
	a->rate = rate;
	/* Its reads queue behind the application's as the wake's did (run_prefetch()). */
	a->kmod_fd = kmod_fd;
	a->budget = room - left;
	ctx->rest_until_ms = 0;
	pt_info("%s: wake: %u s of demand reads past its prefetch%s: restoring the rest the idle offload paged out (%llu MiB%s)",
		ctx->policy.name, ctx->rest_streak * PT_REST_PERIOD_MS / 1000,
		a->rest_waited ? ", waiting for memory" : "",
		(unsigned long long)(a->budget >> 20),
		kept ? ", as much as the host has room for" : "");
	return a;
}

/*
 * What stays resident while idle: the floor, and the idle working set on top of it, and
 * the kernel's memory charged to the cgroup (page tables, slab, socket buffers), which
 * memory.current counts and memory.reclaim cannot take. A target without it asks the
 * kernel for more than the pages the idle working set leaves, and memory.reclaim, which
 * takes any page, takes the rest from that set: redis kept 0-2 of its 2-3 MiB, and its
 * timers and its first request after the wake read them back from the drive.
 */
static uint64_t settle_target(const struct pt_context *ctx)
{
	return ctx->policy.resident_floor_bytes + ctx->keep_bytes + ctx->sample.kernel;
}

struct pt_action *pt_context_settle(struct pt_context *ctx)
{
	struct pt_action *a;

	if (ctx->settle_passes <= 0 || ctx->busy || ctx->policy.class == PT_CLASS_CRITICAL)
		return NULL;
	ctx->settle_passes--;
	a = new_action(ctx, PT_JOB_SETTLE);
	if (a)
		a->budget = settle_target(ctx);
	return a;
}

static void apply_offload(struct pt_context *ctx, struct pt_action *a)
{
	drop_wake_set(ctx);
	drop_file_set(ctx);
	ctx->wake_set = a->set;
	ctx->n_wake_set = a->n_set;
	a->set = NULL;
	a->n_set = 0;
	rest_to_wake_set(ctx);
	ctx->file_set = a->files;
	ctx->n_file_set = a->n_files;
	a->files = NULL;
	a->n_files = 0;
	if (set_bytes(ctx->file_set, ctx->n_file_set) < PT_FILE_READAHEAD_MIN)
		drop_file_set(ctx);
	ctx->n_offloads++;
	ctx->offloaded_at_ms = pt_now_ms();
	ctx->offload_requested = (uint64_t)a->bytes;
	ctx->last_offload_ms = a->ms;
	ctx->reclaimed = 0;
	ctx->settle_passes = PT_SETTLE_PASSES;
	if (ctx->hot_ok)
		pt_hot_evict_all(&ctx->hot, ctx->scans ? ctx->busy_epoch + 1 : 0);
	pt_info("%s: idle: paged out %llu MiB of anonymous memory (%d processes, %llu ms), kept its idle working set of %llu KiB",
		ctx->policy.name, (unsigned long long)(a->bytes >> 20), a->n_procs,
		(unsigned long long)a->ms, (unsigned long long)(ctx->keep_bytes >> 10));
}

/* The rest of a wake is done: counted; the trim's window for unused prefetch restarts. */
static void apply_rest(struct pt_context *ctx, struct pt_action *a)
{
	ctx->rest_requested = (uint64_t)a->bytes;
	ctx->n_rests++;
	ctx->prefetch_done_ms = pt_now_ms();
	ctx->stray_looked = 0;
	pt_info("%s: wake: restored the rest, %llu MiB (MADV_WILLNEED, %llu ms, %llu ms of it behind the drive's queue)",
		ctx->policy.name, (unsigned long long)(a->bytes >> 20),
		(unsigned long long)a->ms, (unsigned long long)a->queue_wait_ms);
}

static void apply_prefetch(struct pt_context *ctx, struct pt_action *a)
{
	if (a->rest) {
		apply_rest(ctx, a);
		return;
	}
	ctx->rest_requested = 0;
	if (ctx->n_rest_set) {
		ctx->rest_until_ms = pt_now_ms() + PT_REST_WINDOW_MS;
		ctx->rest_period_ms = 0;	/* its first period begins at the next look */
	}
	ctx->prefetch_requested = (uint64_t)a->bytes;
	ctx->prefetch_file_requested = a->file_bytes;
	ctx->tier_prefetch_planned = a->tier_planned;
	/* The wake is over when its prefetch is: the drop after it is not part of it. */
	ctx->last_wake_ms = pt_now_ms() - a->drop_ms - ctx->idle.woke_at_ms;
	ctx->prefetch_done_ms = pt_now_ms();
	ctx->stray_looked = 0;
	pt_idle_wake_done(&ctx->idle, ctx->prefetch_done_ms);
	ctx->scan_stretch = 1;	/* the prefetch's quality is measured scan by scan */
	if (ctx->hot_ok)
		pt_hot_prefetched(&ctx->hot, (uint32_t)(PT_QUALITY_WINDOW_MS /
				  (ctx->scan_interval_ms ? ctx->scan_interval_ms : 1000)));
	pt_info("%s: wake: prefetched %llu MiB (tier staged %llu MiB, MADV_WILLNEED, %llu ms, %llu ms of it behind the drive's queue) and read ahead %llu MiB of mapped files, %llu ms after the wake was seen",
		ctx->policy.name, (unsigned long long)(a->bytes >> 20),
		(unsigned long long)(a->tier_planned >> 20), (unsigned long long)a->ms,
		(unsigned long long)a->queue_wait_ms,
		(unsigned long long)(a->file_bytes >> 20), (unsigned long long)ctx->last_wake_ms);
	if (a->unsettled && a->drop_stop != PT_DROP_GOING) {
		ctx->reclaimed += a->freed;
		pt_info("%s: wake: dropped %llu MiB its interrupted offload had written, of %llu MiB left unsettled (%s, %llu ms)",
			ctx->policy.name, (unsigned long long)(a->freed >> 20),
			(unsigned long long)(a->unsettled >> 20), pt_drop_stop_name(a->drop_stop),
			(unsigned long long)a->drop_ms);
	}
}

static void apply_settle(struct pt_context *ctx, struct pt_action *a)
{
	ctx->reclaimed += (uint64_t)a->bytes;
	ctx->sample.memory_current = a->resident_after;
	if (a->resident_after <= settle_target(ctx) + PT_SETTLE_SLACK)
		ctx->settle_passes = 0;
	ctx->idle_saved = ctx->current_at_idle > a->resident_after ?
			  ctx->current_at_idle - a->resident_after : 0;
	ctx->resident_after_idle = a->resident_after;
	if (!ctx->settle_passes)
		pt_info("%s: idle: resident %llu MiB after dropping %llu MiB of written-back memory; %llu MiB freed since it went idle",
			ctx->policy.name, (unsigned long long)(a->resident_after >> 20),
			(unsigned long long)(ctx->reclaimed >> 20),
			(unsigned long long)(ctx->idle_saved >> 20));
}

uint64_t pt_context_came_back(const struct pt_context *ctx)
{
	/*
	 * Its highest memory.current since the wake, not the last: the cold path may have
	 * lowered that meanwhile.
	 */
	return ctx->peak_since_wake > ctx->resident_after_idle ?
	       ctx->peak_since_wake - ctx->resident_after_idle : 0;
}

uint64_t pt_context_offload_backoff(struct pt_context *ctx, bool background, uint64_t now)
{
	uint64_t back, wait, max, woke = ctx->idle.woke_at_ms;

	if (!background) {
		ctx->offload_backoff = 0;
		ctx->bg_woke_ms = 0;
		ctx->bg_period_ms = 0;
	} else {
		back = pt_context_came_back(ctx);
		if (ctx->n_offloads > ctx->offloads_judged &&
		    ctx->idle_saved >= PT_BACKOFF_MIN_SAVED && back * 2 >= ctx->idle_saved) {
			ctx->offloads_undone++;
			if (ctx->offload_backoff < PT_BACKOFF_MAX)
				ctx->offload_backoff++;
		}
		/*
		 * Its background's period: from its last background wake to this one, or, the
		 * first time, from the offload to this wake (a lower bound).
		 */
		if (ctx->bg_woke_ms && woke > ctx->bg_woke_ms)
			ctx->bg_period_ms = woke - ctx->bg_woke_ms;
		else if (woke > ctx->offloaded_at_ms && ctx->offloaded_at_ms)
			ctx->bg_period_ms = woke - ctx->offloaded_at_ms;
		ctx->bg_woke_ms = woke;
	}
	/* No offload since the last look (deferred, then woken): nothing new to judge. */
	ctx->offloads_judged = ctx->n_offloads;
	max = ctx->policy.idle.threshold_ms * ((1ULL << PT_BACKOFF_MAX) - 1);
	wait = ctx->policy.idle.threshold_ms * ((1ULL << ctx->offload_backoff) - 1);
	if (ctx->offload_backoff && wait < 2 * ctx->bg_period_ms)
		wait = 2 * ctx->bg_period_ms < max ? 2 * ctx->bg_period_ms : max;
	ctx->offload_after_ms = now + wait;
	return wait;
}

/*
 * The entries of processes that exited since they were recorded: nothing to advise there,
 * and their pidfds are closed now rather than at the next wake.
 */
static void prune_gone(struct pt_proc_ranges *set, int *n)
{
	int k = 0;

	for (int i = 0; i < *n; i++) {
		if (set[i].pidfd > 0 && !pt_pidfd_alive(set[i].pidfd)) {
			pt_proc_ranges_free(&set[i]);
			continue;
		}
		set[k++] = set[i];
	}
	*n = k;
}

static void apply_scan(struct pt_context *ctx, struct pt_action *a)
{
	uint64_t now = pt_now_ms(), fresh;
	int refaults;

	prune_gone(ctx->wake_set, &ctx->n_wake_set);
	prune_gone(ctx->file_set, &ctx->n_file_set);
	if (!ctx->hot_ok)
		return;
	pt_hot_skip_epochs(&ctx->hot, a->epochs > 1 ? a->epochs - 1 : 0);
	refaults = pt_hot_apply_scans(&ctx->hot, a->scans, a->n_scans);
	ctx->scans++;
	fresh = (uint64_t)ctx->hot.ep_fresh << ctx->hot.chunk_shift;
	/* A scan that ends after the context went idle saw it before: no verdict. */
	if (ctx->memory_signal && ctx->idle.state == PT_STATE_ACTIVE)
		pt_idle_memory(&ctx->idle, &ctx->policy.idle,
			       (uint64_t)ctx->hot.ep_accessed << ctx->hot.chunk_shift, fresh, now);
	/* Seen busy since the previous scan: this epoch counts as one it worked in. */
	if (ctx->idle.last_active_ms >= ctx->last_epoch_ms ||
	    ctx->idle.last_cpu_busy_ms >= ctx->last_epoch_ms) {
		ctx->busy_epoch = pt_hot_now(&ctx->hot) - 1;
		ctx->busy_scans++;
	}
	ctx->last_epoch_ms = now;
	/*
	 * Steady (less than half of fresh_bytes new per epoch the scan stands for: a scan
	 * after a stretch of 7 sees 7 epochs' new memory, and compared whole with one epoch's
	 * allowance the noise containers' trickle below put every stretch past 3 back to 1):
	 * the next scan can wait longer, its accessed bits gathering meanwhile. Anything more:
	 * every interval again.
	 * What came back from the tier is new to the working set and is in fresh already
	 * (fresh_access()), so a burst of refaults is watched closely; a trickle of them is
	 * the steady state of a container whose requests touch its objects at random (the
	 * noise containers of bench/density, a few chunks a scan each), which needs no scan
	 * every interval. A refault the wait delays is not lost: its accessed bit stays set
	 * until the next scan reads it. Within a wake's quality window (its prefetch measured
	 * epoch by epoch) any refault is a prefetch's miss: every interval.
	 */
	if (ctx->idle.state == PT_STATE_ACTIVE && (!refaults || !ctx->hot.window_left) &&
	    fresh * 2 <= ctx->policy.idle.fresh_bytes * (a->epochs ? a->epochs : 1)) {
		uint32_t max = pt_context_max_stretch(ctx);

		ctx->scan_stretch = ctx->scan_stretch * 2 <= max ? ctx->scan_stretch * 2 : max;
	} else {
		ctx->scan_stretch = 1;
	}
	pt_debug("%s: epoch %llu: %u chunks accessed, %llu KiB fresh, %d refaulted%s; next scan in %u intervals",
		 ctx->policy.name, (unsigned long long)(pt_hot_now(&ctx->hot) - 1),
		 ctx->hot.ep_accessed, (unsigned long long)(fresh >> 10), refaults,
		 ctx->busy_epoch == pt_hot_now(&ctx->hot) - 1 ? " (busy)" : "", ctx->scan_stretch);
}

uint32_t pt_context_max_stretch(const struct pt_context *ctx)
{
	uint64_t base = ctx->scan_interval_ms ? ctx->scan_interval_ms : 1000, max = PT_HOT_FRESH_EPOCHS;

	if (ctx->policy.idle.threshold_ms / 2 / base < max)
		max = ctx->policy.idle.threshold_ms / 2 / base;
	if (ctx->policy.cold_after_ms && ctx->policy.cold_after_ms / 4 / base < max)
		max = ctx->policy.cold_after_ms / 4 / base;
	return max ? (uint32_t)max : 1;
}

bool pt_context_in_quality_window(const struct pt_context *ctx, uint64_t now)
{
	return ctx->prefetch_done_ms && now - ctx->prefetch_done_ms < PT_QUALITY_WINDOW_MS;
}

uint32_t pt_context_stretch(const struct pt_context *ctx, bool plenty, uint64_t now)
{
	uint64_t base = ctx->scan_interval_ms ? ctx->scan_interval_ms : 1000, relaxed;
	uint32_t own = ctx->scan_stretch ? ctx->scan_stretch : 1;

	if (!plenty || pt_context_in_quality_window(ctx, now))
		return own;
	relaxed = ctx->policy.idle.threshold_ms / 2 / base;
	if (relaxed > PT_HOT_FRESH_EPOCHS)
		relaxed = PT_HOT_FRESH_EPOCHS;
	return relaxed > own ? (uint32_t)relaxed : own;
}

uint64_t pt_context_next_scan_ms(const struct pt_context *ctx, uint32_t stretch)
{
	uint64_t base = ctx->scan_interval_ms ? ctx->scan_interval_ms : 1000;

	return ctx->last_scan_ms + base * (stretch ? stretch : 1);
}

uint32_t pt_context_scan_epochs(const struct pt_context *ctx, uint64_t now, uint32_t stretch)
{
	uint64_t base = ctx->scan_interval_ms ? ctx->scan_interval_ms : 1000, n;

	if (!stretch)
		stretch = 1;
	if (!ctx->last_scan_ms || now <= ctx->last_scan_ms)
		return stretch;
	n = (now - ctx->last_scan_ms + base / 2) / base;
	return n < 1 ? 1 : n > stretch ? stretch : (uint32_t)n;
}

static void apply_cold(struct pt_context *ctx, struct pt_action *a)
{
	if (!ctx->hot_ok)
		return;
	pt_hot_evicted(&ctx->hot, a->ids, a->n_ids);
	ctx->hot.cold_offloaded += a->n_ids;
	ctx->cold_offloaded_bytes += (uint64_t)a->bytes;
	pt_info("%s: active: paged out %llu MiB of cold chunks (%zu chunks, %llu ms), %llu MiB of swap cache dropped after",
		ctx->policy.name, (unsigned long long)(a->bytes >> 20), a->n_ids,
		(unsigned long long)a->ms, (unsigned long long)(a->freed >> 20));
}

static void apply_trim(struct pt_context *ctx, struct pt_action *a)
{
	ctx->prefetch_dropped += a->freed;
	/*
	 * It wrote: what is left in the swap cache is in use (or the reclaim reached memory
	 * that is). It freed nothing and is not done (its budget spent on pages in use, steps
	 * that free nothing): the same a second later. None for a while, a hold that doubles
	 * with each such trim in a row (PT_TRIM_IDLE_HOLD_MS, PT_TRIM_ACTIVE_HOLD_MS).
	 */
	if (a->drop_stop == PT_DROP_WROTE || pt_drop_gained_nothing(a->drop_stop, a->freed)) {
		unsigned int shift = ctx->trim_holds_in_row < PT_TRIM_HOLD_MAX_SHIFT ?
				     ctx->trim_holds_in_row : PT_TRIM_HOLD_MAX_SHIFT;

		if (a->drop_stop == PT_DROP_WROTE)
			ctx->trims_wrote++;
		ctx->trim_holds_in_row++;
		ctx->trim_held_until_ms = pt_now_ms() + ((a->trim_active ? PT_TRIM_ACTIVE_HOLD_MS :
							  PT_TRIM_IDLE_HOLD_MS) << shift);
	} else {
		ctx->trim_holds_in_row = 0;
	}
	pt_info("%s: %s: dropped %llu MiB of swap cache nobody mapped, of %llu MiB asked (%s, %llu ms)",
		ctx->policy.name, a->trim_active ? "active" : "idle",
		(unsigned long long)(a->freed >> 20), (unsigned long long)(a->budget >> 20),
		pt_drop_stop_name(a->drop_stop), (unsigned long long)a->ms);
}

void pt_context_apply(struct pt_context *ctx, struct pt_action *a)
{
	if (ctx) {
		ctx->busy = false;
		if (ctx->busy_action == a)
			ctx->busy_action = NULL;
		ctx->job_cpu_ns[a->kind] += a->job.cpu_ns;
		if (a->job.cancelled)
			;	/* taken back before it ran: nothing to apply */
		else if (a->rc && a->rc != -ESRCH)
			pt_warn("%s: %s failed: %s", ctx->policy.name, action_ops[a->kind].name,
				strerror(-a->rc));
		else
			action_ops[a->kind].apply(ctx, a);
	}
	free_set(a->set, a->n_set);
	free_set(a->keep, a->n_keep);
	free_set(a->files, a->n_files);
	for (int i = 0; i < a->n_scans; i++)
		pt_proc_scan_free(&a->scans[i]);
	free(a->scans);
	free(a->ids);
	free(a);
}
