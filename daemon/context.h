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

#include "sample_pace.h"
#include "actuator.h"
#include "cgroup.h"
#include "config.h"
#include "hotness.h"
#include "idle.h"
#include "swapcache_drop.h"
#include "worker.h"

enum pt_job_kind { PT_JOB_OFFLOAD, PT_JOB_PREFETCH, PT_JOB_SETTLE, PT_JOB_SCAN, PT_JOB_COLD,
		   PT_JOB_TRIM };
#define PT_JOB_KINDS (PT_JOB_TRIM + 1)

/* A kind of job as metrics and status name it: offload, prefetch, settle, scan, cold, trim. */
const char *pt_job_kind_label(enum pt_job_kind kind);

/*
 * One blocking action on a context, run by the worker pool. It carries copies of what it
 * needs (the context may vanish meanwhile) and its results, which the loop applies to the
 * context, found again by cgroup id, with pt_context_apply().
 */
struct pt_action {
	struct pt_job job;
	enum pt_job_kind kind;
	uint64_t cgroup_id;
	char name[PT_NAME_MAX];
	char dir[PATH_MAX];		/* the cgroup's directory */
	char relpath[PATH_MAX];		/* ... as /proc/PID/cgroup names it: which processes */
	uint64_t budget;		/* offload: bytes at most; settle: resident floor */
	uint64_t rate;			/* offload, prefetch: bytes/s at most, 0: no limit */
	bool keep_wake_set;
	struct pt_proc_ranges *set;	/* offload: out; prefetch: in */
	int n_set;
	/* offload: out, prefetch: in: the pages of mapped files that were in memory */
	struct pt_proc_ranges *files;
	int n_files;
	uint64_t file_bytes;		/* prefetch: file pages advised (in the container) */
	/* offload: the idle working set, per process, normalized: never advised */
	struct pt_proc_ranges *keep;
	int n_keep;
	/* results */
	int64_t bytes;			/* advised (offload, prefetch) or reclaimed (settle) */
	uint64_t freed;			/* cold offload, trim: swap cache it dropped */
	enum pt_drop_stop drop_stop;	/* cold offload, trim: why the drop stopped */
	bool trim_active;		/* trim: of an active context (smaller steps) */
	uint64_t queue_wait_ms;		/* prefetch: waits for the backing devices' queue */
	int n_procs;
	int rc;
	uint64_t ms;
	uint64_t resident_after;	/* settle */
	uint64_t tier_planned;		/* prefetch: bytes the tiers stage ahead of WILLNEED */
	bool rest;			/* prefetch: the rest of a wake (pt_context_rest()) */
	bool rest_waited;		/* ... while the container waited for memory: runs first */
	uint64_t unsettled;		/* prefetch: the interrupted offload's bytes to drop */
	uint64_t drop_ms;		/* prefetch: how long that drop took */
	/* scan: in */
	enum pt_scanner_kind scanner;
	int kmod_fd;			/* scan, prefetch (tier prefetch), -1: none */
	unsigned int chunk_shift;
	/* scan: out */
	struct pt_proc_scan *scans;
	int n_scans;
	uint32_t epochs;		/* scan: the epochs it stands for (its stretch) */
	/* cold offload: the chunks advised, for the model once done */
	uint64_t *ids;
	size_t n_ids;
};

struct pt_context;

/* What a kind of action does: its run (a worker thread) and its apply (the loop thread). */
struct pt_action_ops {
	const char *name;	/* in log lines and waiting_for: "cold offload" */
	const char *label;	/* as metrics and job_cpu_ms name the kind: "cold" */
	void (*run)(struct pt_job *job);
	void (*apply)(struct pt_context *ctx, struct pt_action *a);
};

struct pt_context {
	struct pt_policy policy;	/* a copy: config reloads replace the original */
	char relpath[PATH_MAX];		/* "/a/b" below cgroup_root */
	char dir[PATH_MAX];		/* absolute cgroup directory */
	uint64_t cgroup_id;
	struct pt_idle idle;
	struct pt_cgroup_sample sample;
	struct pt_cgroup_files files;	/* its per-sample files, kept open (cgroup.h) */
	uint64_t tier_pages;		/* pages on pagetier.ko tiers, if loaded */
	/*
	 * Bytes written to the tiers for it since tracking began (its writes and the
	 * collector's moves of its pages): against what is saved, the write amplification.
	 */
	uint64_t tier_written;
	uint64_t tier_written_base;	/* the tiers' count when tracking began */
	bool tier_written_known;
	bool seen;			/* found in the latest cgroup walk */
	bool events_wake;		/* its BPF events wake the daemon at once (it is idle) */
	bool events_wake_known;		/* ... as set; false: not set since tracking began */
	uint64_t last_full_sample_ms;	/* when memory.stat was last read */
	/*
	 * cpu.stat's usage_usec and memory.current as the tick numbered batched_tick read them
	 * in its batch (sample_reader = io_uring; sample_batch.h), for that tick's sample.
	 */
	uint64_t batched_tick;
	uint64_t batched_cpu_usage_usec;
	uint64_t batched_memory_current;
	bool busy;			/* an action is in flight */
	struct pt_action *busy_action;	/* ... this one (until pt_context_apply()) */
	bool wake_pending;		/* woke while busy: prefetch when the action ends */
	bool offload_pending;		/* went idle while busy: offload when it is free */
	unsigned int quiet_scans;	/* scans issued since it went idle (pt_context_quiet_scan()) */
	uint64_t trim_until_ms;		/* idle: offload waits for malloc_trim until then */

	/* Wake set: what was offloaded at idle, prefetched back on wake. */
	struct pt_proc_ranges *wake_set;
	int n_wake_set;
	/* ... and the mapped-file pages it had in memory then, read back at wake too. */
	struct pt_proc_ranges *file_set;
	int n_file_set;
	/*
	 * The rest of a wake: what the idle offload paged out beyond the model's wake set,
	 * restored once the application's demand reads after the wake's prefetch say it needs
	 * more than that set (pt_context_rest()); otherwise part of the next wake set.
	 */
	struct pt_proc_ranges *rest_set;
	int n_rest_set;
	uint64_t rest_misses0;		/* the demand-read count when the period began */
	uint64_t rest_misses_wake;	/* ... at the wake (set by the caller) */
	uint64_t rest_period_ms;	/* ... when it began; 0: not yet */
	unsigned int rest_streak;	/* periods in a row with PT_REST_MISSES or more */
	uint64_t rest_stall0;		/* its memory stall (PSI some, us) when the period began */
	unsigned int rest_hurt;		/* periods in a row it waited PT_REST_STALL_PCT or more */
	uint64_t rest_until_ms;		/* the window's end; 0: not open (prefetch running, over) */

	/* Reclaim passes left to drop the written-back swap cache after an offload. */
	int settle_passes;
	/* The idle working set kept resident at the last idle (upper bound), bytes. */
	uint64_t keep_bytes;
	/* Accounting of the last idle period: memory.current when it went idle, and freed. */
	uint64_t current_at_idle;
	uint64_t idle_saved;
	uint64_t resident_after_idle;	/* memory.current once its last offload settled */
	/* The offload backoff (pt_context_offload_backoff()). */
	unsigned int offload_backoff;	/* idle offloads in a row its background undid */
	uint64_t offloads_judged;	/* n_offloads when the last one was judged */
	uint64_t offload_after_ms;	/* idle: no offload before then */
	uint64_t offloaded_at_ms;	/* its last idle offload was applied then */
	uint64_t peak_since_wake;	/* memory.current's highest since its last wake */
	uint64_t bg_woke_ms;		/* the wake of its last background busy period */
	uint64_t bg_period_ms;		/* from the one before to that one */
	uint64_t offloads_undone;	/* counted since the context was made */

	/* Hotness: the model of this context's chunks, fed by a scan every epoch. */
	struct pt_hot hot;
	bool hot_ok;			/* the model could be allocated */
	uint64_t last_scan_ms;
	uint64_t scan_interval_ms;	/* the daemon's, for the quality window */
	/*
	 * Scans of a steady context (active, touching no fresh memory, no refaults) come every
	 * scan_stretch scan intervals: 1, doubled after each steady scan up to
	 * pt_context_max_stretch(), back to 1 on anything new. Each scan stands for that many
	 * epochs of the model.
	 */
	uint32_t scan_stretch;
	/*
	 * The last cold offload took its whole budget (more cold chunks are likely left): the
	 * next goes one scan interval later, scan or not, so that a stretched scan interval
	 * never turns the offload rate into bursts.
	 */
	bool cold_more;
	uint64_t last_cold_ms;
	uint64_t last_trim_ms;		/* idle: the last look for stray swap cache */
	uint64_t trim_held_until_ms;	/* no trim before then: the last one wrote, or freed nothing */
	uint64_t trims_wrote;		/* trims stopped because their reclaim wrote */
	unsigned int trim_holds_in_row;	/* trims held for, in a row since the wake */
	/*
	 * Active: when its last wake's prefetch was done, and the swap cache nobody mapped at
	 * the last trim look (what the application still maps as it reads its memory back).
	 */
	uint64_t prefetch_done_ms;
	uint64_t stray_looked;
	uint64_t stray_trimmed_ms;	/* active: when such swap cache was last trimmed */
	uint64_t idle_low_current;	/* idle: lowest memory.current since the last trim look */
	bool memory_signal;		/* scans tell pages apart: idle.h's memory rule applies */
	uint64_t last_epoch_ms;		/* when the latest scan was applied */
	uint64_t busy_epoch;		/* the last epoch in which it was seen busy */
	/*
	 * Scans that saw it busy. The model's wake set stands for what a wake needs once it
	 * saw the container work PT_WAKE_RECENT_EPOCHS of them; before (a daemon started
	 * beside an idle container), a wake brings back all the idle offload advised. Counted
	 * from the last wake instead, every short active period made the next wake restore
	 * the whole offload set, and what the container then did not use stayed as swap
	 * cache (real_servers: redis serving a tenth kept 49-55 of 71 MiB, twice in CI).
	 */
	uint64_t busy_scans;
	uint64_t scans;
	uint64_t job_cpu_ns[PT_JOB_KINDS];	/* its jobs' worker CPU time, by kind */
	uint64_t cold_offloaded_bytes;

	/* Wake sources. */
	uint64_t signals;		/* events of any kind: BPF, tier reads, preload records */
	struct pt_sample_pace pace;	/* when its cgroup is sampled (sample_pace.h) */
	char wake_source[48];		/* what detected the last wake */
	uint64_t bpf_events[8];		/* by enum pt_bpf_event_type */
	uint64_t tier_reads;		/* demand reads of its pages on the tiers (event ring) */
	uint64_t tier_misses;		/* ... of them, those the staging cache did not serve */
	uint64_t tier_miss_pages;	/* ... the 4 KiB pages those read */
	uint64_t preload_records;

	/* Counters. */
	uint64_t n_idle;		/* times it went idle */
	uint64_t n_offloads;
	uint64_t n_wakes;
	uint64_t anon_at_idle;		/* memory.stat anon when it went idle */
	uint64_t shmem_at_idle;		/* shmem then: shared anonymous, memfd, tmpfs, SysV */
	uint64_t file_at_idle;		/* file - shmem then: files' page cache */
	uint64_t offload_requested;	/* bytes advised MADV_PAGEOUT, last idle */
	uint64_t prefetch_requested;	/* bytes advised MADV_WILLNEED, last wake */
	uint64_t prefetch_file_requested; /* ... of mapped files, last wake */
	uint64_t rest_requested;	/* ... the rest of the wake (pt_context_rest()), last wake */
	uint64_t n_rests;		/* wakes whose rest was restored */
	uint64_t prefetch_dropped;	/* bytes of unused prefetch dropped again, total */
	uint64_t tier_prefetch_planned;	/* bytes the tiers staged for it, last wake */
	uint64_t last_offload_ms;	/* how long the last offload call took */
	uint64_t last_wake_ms;		/* wake detected -> prefetch done */
	uint64_t reclaimed;		/* bytes dropped by memory.reclaim, last idle */
};

void pt_context_init(struct pt_context *ctx, const struct pt_policy *policy,
		     const char *cgroup_root, const char *relpath, uint64_t id, uint64_t now_ms,
		     unsigned int chunk_shift);
/* Bytes of its memory that live only in swap now: offloaded and freed. */
uint64_t pt_context_saved(const struct pt_context *ctx);
/*
 * Bytes written to the tiers per byte saved (pt_context_saved()), or -1 when unknown (no
 * tier counters, or nothing saved).
 */
double pt_context_write_amp(const struct pt_context *ctx);
/* The tiers' bytes-written count for it: the first call sets the baseline. */
void pt_context_tier_written(struct pt_context *ctx, uint64_t total);
void pt_context_release(struct pt_context *ctx);

/*
 * Actions. Each returns a job to submit to the worker pool, or NULL when there is nothing
 * to do; the context is busy until pt_context_apply() gets the job back.
 *  - offload: page out the anonymous memory down to the floor, but its idle working set
 *    (what it touched while quiet: timers keep running without a fault), and record the
 *    wake set (what it used when it last worked);
 *  - prefetch: bring the wake set back: with @kmod_fd (a module that has
 *    PAGETIER_FEAT_PREFETCH; -1 if not) the tiers first stage the context's newest pages,
 *    as many bytes as the wake set spans, in large background reads, then MADV_WILLNEED
 *    swaps the wake set in, from the staging cache where it can;
 *  - settle: after an offload, drop what MADV_PAGEOUT left behind (pages in the swap
 *    cache once written back, shared pages it skips) with memory.reclaim, down to the
 *    floor plus the idle working set plus the kernel's memory charged to the cgroup.
 */
struct pt_action *pt_context_offload(struct pt_context *ctx, uint64_t rate);
/*
 * The offload backoff, judged as @ctx goes idle at @now, @background: the busy period since
 * its last wake was its own background (pt_idle_busy_was_background(): it takes requests,
 * and none came). An idle offload that such a period undid (half or more of what it freed
 * came back, PT_BACKOFF_MIN_SAVED at least) was wear for nothing: memcached's LRU crawler
 * reads every item about once a minute, each time swapping back in what the offload had
 * written and dirtying it, so each idle period wrote its 40-odd MiB again. Each undone
 * offload in a row doubles how long the next idle period waits before its offload
 * (idle_threshold times 2^k - 1, k up to PT_BACKOFF_MAX), and the wait is at least twice
 * its background's period (from one background wake to the next: memcached's crawler came
 * every 3 to 4 minutes), up to the same maximum, so that the background wakes it before
 * the offload: the memory it keeps touching stays, after one such offload. Came back: its
 * highest memory.current while busy (the cold path may take the crawler's read out again
 * before it goes idle). A busy period with requests sets it all back. Returns the wait, ms.
 */
#define PT_BACKOFF_MIN_SAVED	(4ULL << 20)
#define PT_BACKOFF_MAX		6
uint64_t pt_context_offload_backoff(struct pt_context *ctx, bool background, uint64_t now);
/* What came back since its last wake, over what its last idle offload left resident. */
uint64_t pt_context_came_back(const struct pt_context *ctx);
struct pt_action *pt_context_prefetch(struct pt_context *ctx, uint64_t rate, int kmod_fd);
/* Chunks used in this many epochs up to the last busy one are in the model's wake set. */
#define PT_WAKE_RECENT_EPOCHS 5
/*
 * Whether a wake of @ctx brings back the model's wake set (it has one, and saw the
 * container busy in PT_WAKE_RECENT_EPOCHS scans) rather than all the idle offload advised.
 */
bool pt_context_wake_from_model(const struct pt_context *ctx);
/*
 * The rest of a wake. The model's wake set is what it saw the container use before it went
 * idle, which a short or light busy period undersamples (a Python web service at 7
 * requests/s over a 100 MiB heap: 28 MiB hot in 8 s, and its next requests over the
 * whole heap were demand faults). When the wake's prefetch took the model's set, what else
 * the idle offload paged out is kept as the rest. @misses is the pages of the context's
 * demand reads the staging cache did not serve (a running count): PT_REST_MISSES or more in
 * each of PT_REST_PERIODS periods of PT_REST_PERIOD_MS in a row, within PT_REST_WINDOW_MS
 * of the prefetch's end, and in all since the wake (ctx->rest_misses_wake, the prefetch's
 * time included) a PT_REST_SHARE-th of the pages the rest spans, restore the rest in
 * address order, as much as @room bytes (what the host can give before its cold
 * watermark): an application that read that much of it back one demand read at a time is
 * reading all its memory. A burst right after the wake alone does not: at 8 reads in any
 * 30 s, every server of real_servers restored its rest and dropped it again unused, while
 * redis served a tenth of its data. A server that serves only what the model saw, or a
 * small part of its data, leaves the rest out, whatever those reads cost it: @stall_us is
 * the cgroup's memory stall (memory.pressure's "some" total, a running count; 0 where the
 * kernel has none), and PT_REST_PERIODS periods in a row in which its tasks waited for
 * memory PT_REST_STALL_PCT of the time or more make a rest that the share asks for run as
 * the wake's prefetch, at the daemon's priority, not in the background pool. The stall alone
 * does not restore it: a wait while a host wakes many containers at once is the host's
 * (context.c, pt_context_rest()). Returns a prefetch job, or NULL. What is not
 * restored (not asked for in the window, or past the room) stays in the next wake set
 * (joined to the next idle offload's, or at the next wake). @rate and @kmod_fd as for
 * pt_context_prefetch(), but the tiers' bulk read: the rest is MADV_WILLNEED's, behind the
 * drive's queue as the wake's prefetch, in the daemon's background pool.
 */
#define PT_REST_MISSES 8
#define PT_REST_PERIOD_MS 1000
#define PT_REST_PERIODS 2
#define PT_REST_WINDOW_MS 30000
#define PT_REST_SHARE 8
#define PT_REST_STALL_PCT 10
struct pt_action *pt_context_rest(struct pt_context *ctx, uint64_t now, uint64_t misses,
				  uint64_t stall_us, uint64_t room, uint64_t rate, int kmod_fd);
struct pt_action *pt_context_settle(struct pt_context *ctx);
/*
 * The next memory.reclaim request of a settle at @current bytes charged, toward @target:
 * half the way to the middle of the PT_SETTLE_SLACK band above it (so a quarter of the
 * band at least); 0 once within the band (settled). memory.reclaim takes more than it is
 * asked for (whole batches, the multi-gen LRU's aging): asked for the whole way at once,
 * it took 1-2 MiB of redis's idle working set besides. A pass makes PT_SETTLE_STEPS at most and
 * stops at a step that frees nothing (write-back in flight: the next pass goes on). Pure.
 */
#define PT_SETTLE_SLACK (2ULL << 20)
#define PT_SETTLE_STEPS 16
uint64_t pt_settle_step(uint64_t current, uint64_t target);
/*
 * Before the idle offload: its idle working set is what the scans saw it touch in epochs
 * after its last busy one. A container whose scans all fell while it worked (a quiet
 * period shorter than its scan stretch) has none, and its timers' pages went out with the
 * rest: redis's serverCron faulted them back a few hundred ms after the offload, a wake
 * by swap-ins that prefetched everything for nobody. Up to PT_QUIET_SCANS scans close that
 * gap: the first ends the busy epoch, the next, @interval_ms after it, sees the quiet one.
 * *@hold: true while the offload should wait for them (a scan is returned, or it is not due
 * yet). Returns a scan job or NULL.
 */
#define PT_QUIET_SCANS 2
struct pt_action *pt_context_quiet_scan(struct pt_context *ctx, uint64_t now,
					uint64_t interval_ms, enum pt_scanner_kind scanner,
					int kmod_fd, unsigned int chunk_shift, bool *hold);
/*
 * Hotness epoch: scan the processes' accessed bits with @scanner; on apply the model is
 * updated and, if the policy has cold_after, cold chunks follow (pt_context_cold()).
 */
struct pt_action *pt_context_scan(struct pt_context *ctx, enum pt_scanner_kind scanner,
				  int kmod_fd, unsigned int chunk_shift);
/*
 * An active context's chunks unused for cold_after: page out at most @max_bytes of them,
 * coldest first (MADV_PAGEOUT; the model moves them to its history when done), then drop
 * what the advice left in the swap cache (memory.reclaim of that much, whose written-back
 * pages the kernel put at the tail of the LRU): an offload frees what it writes.
 */
/*
 * The longest scan stretch for @ctx: at most PT_HOT_FRESH_EPOCHS (what is fresh is measured
 * across one scan), half its idle threshold (the memory rule still marks it busy within
 * it) and a quarter of cold_after (a chunk's coldness is seen at most a quarter late), in
 * scan intervals. It was an eighth (8acaee5) while memory a noise container had just
 * loaded, left late, was taken from the critical containers by the kernel's reclaim;
 * they are protected since (memory.low and memory.min), and the scans of steady noise
 * containers, with their models' updates, were half of pagetierd's CPU (bench/density).
 */
uint32_t pt_context_max_stretch(const struct pt_context *ctx);
/*
 * The scan stretch of @ctx at @now: its own (scan_stretch), or, while the host has
 * @plenty of memory (MemAvailable well above the cold watermark: no cold offload can
 * follow a scan, nor the free watermark's), at least PT_HOT_FRESH_EPOCHS capped by half
 * its idle threshold (the memory rule's bound): nothing uses a finer model until memory
 * gets short, and its scans were most of the daemon's cost beside busy containers
 * (bench/density). Not within PT_QUALITY_WINDOW_MS of a wake's prefetch, whose quality is
 * measured scan by scan.
 */
uint32_t pt_context_stretch(const struct pt_context *ctx, bool plenty, uint64_t now);
/* Prefetch quality is measured over this long after a wake, scan by scan. */
#define PT_QUALITY_WINDOW_MS 10000
/* Whether @now falls in the quality window of the last wake's prefetch of @ctx. */
bool pt_context_in_quality_window(const struct pt_context *ctx, uint64_t now);
/* When the next scan of an active @ctx is due, @stretch intervals after the last. */
uint64_t pt_context_next_scan_ms(const struct pt_context *ctx, uint32_t stretch);
/*
 * How many model epochs a scan of @ctx issued at @now stands for: the intervals since its
 * last scan, 1 to @stretch (memory that got short ends a relaxed stretch early).
 */
uint32_t pt_context_scan_epochs(const struct pt_context *ctx, uint64_t now, uint32_t stretch);

struct pt_action *pt_context_cold(struct pt_context *ctx, uint64_t scan_interval_ms,
				  uint64_t max_bytes);
/*
 * Swap cache that nobody maps, where MADV_PAGEOUT cannot reach it, dropped with
 * memory.reclaim in steps that stop at the first one that writes (swapcache_drop.h):
 * - active: what the last wake's prefetch brought back and was not used within the
 *   measuring window: the model's unused chunks, or, once the window is over, all the
 *   swap cache beyond what is mapped (a wake before the model saw the container work
 *   restores the whole offload set);
 * - idle, after its offload: what its timers' faults read ahead around the pages they
 *   touched, when that exceeds PT_IDLE_STRAY_SWAPCACHE (swapcached - anon, a lower bound).
 * A trim that wrote holds the next back for a while: 30 s idle; active, 10 s doubled for
 * each write in a row since the wake, up to 320 s. NULL when there is nothing to drop.
 */
#define PT_IDLE_STRAY_SWAPCACHE	(2ULL << 20)
struct pt_action *pt_context_trim(struct pt_context *ctx, uint64_t now);
/*
 * Whether an idle @ctx is due a look for stray swap cache (with a fresh memory.stat): once
 * per @interval_ms, or at once when memory.current (read every tick) has grown by
 * PT_IDLE_STRAY_SWAPCACHE over the lowest level seen since the last look: a timer's burst
 * of faults reads swap clusters ahead of it, and those pages should not stay a whole scan
 * interval. Updates that lowest level.
 */
bool pt_context_trim_due(struct pt_context *ctx, uint64_t now, uint64_t interval_ms);

/* "offload", "scan", "settle"...: what @a does, for logs and status. */
const char *pt_action_name(const struct pt_action *a);
/* Its action in flight has started to run in a worker (false: none, or still queued). */
bool pt_context_action_running(const struct pt_context *ctx);
/* ... and is one that pages its memory out (offload, settle, trim, cold offload). */
bool pt_context_paging_out(const struct pt_context *ctx);

/*
 * What the context waits for, besides its own tasks: an action in flight, queued, running or
 * taken back for a wake ("scan queued", "offload running", "settle taken back"), an offload
 * or a prefetch deferred until then ("offload pending", "prefetch pending"), malloc_trim of
 * its processes ("trim wait"), passes of its settle ("settle passes"), comma-separated into
 * @buf; "" for none. Returns whether there is any. Status shows it: why a container is not
 * offloaded yet, and why the daemon samples it at every poll.
 */
bool pt_context_waits_for(const struct pt_context *ctx, char *buf, size_t len);
/* The look is done (trimmed or not): growth is measured from here on. */
void pt_context_trim_looked(struct pt_context *ctx, uint64_t now, bool trimmed);
/* Pages out these chunks (the global victim order chose them); takes @ids (malloc'd). */
struct pt_action *pt_context_cold_ids(struct pt_context *ctx, uint64_t *ids, size_t n);
/* Records a finished action's results in @ctx (NULL: the context is gone); frees @a. */
void pt_context_apply(struct pt_context *ctx, struct pt_action *a);

uint64_t pt_now_ms(void);

#endif
