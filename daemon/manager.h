/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The manager: pagetierd's decisions, apart from its start-up and event loop (pagetierd.c).
 * It holds one memory context per opted-in cgroup, finds them in the cgroup tree, turns
 * every tick's samples and every signal (BPF events, tier demand reads, preload records)
 * into idle/wake verdicts, and those into actions: offload, settle, prefetch, scan, cold
 * offload, the host watermark. Actions go to whoever the caller says (the worker pool in
 * the daemon; the unit tests run or inspect them). Every path it reads comes from its
 * configuration (cgroup_root) or its fields (meminfo_path), so that the tests run it on
 * temporary trees.
 *
 * A context disappears only when its cgroup does (or stops matching a policy): a cgroup
 * walk or a sample that fails for another reason (out of descriptors, memory) changes
 * nothing, and is counted.
 */
#ifndef PAGETIER_MANAGER_H
#define PAGETIER_MANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cgroup.h"
#include "cgroup_watch.h"
#include "config.h"
#include "context.h"
#include "ctx_index.h"
#include "tier_fill.h"
#include "protect_path.h"
#include "sample_batch.h"
#include "kmod_client.h"
#include "preload_server.h"
#include "scanner.h"
#include "wear.h"

#define PT_RESCAN_SAFETY_MS 300000

struct pt_manager {
	struct pt_config cfg;
	struct pt_context *ctxs;
	size_t n_ctxs, cap_ctxs;
	/* Per context (same index): when a tick samples it next (sample_pace.h; 0: next tick). */
	uint64_t *due_ms;
	size_t cap_due;
	struct pt_ctx_index index;	/* by cgroup id and path; invalidate when ctxs change */

	/* Backends, opened and closed by the caller. */
	int kmod_fd;			/* -1: no module */
	int prefetch_fd;		/* kmod_fd if it has PAGETIER_FEAT_PREFETCH, else -1 */
	enum pt_scanner_kind scanner;
	bool bpf_swapins;		/* BPF counts swap-ins: tier demand reads are the same */
	/*
	 * BPF reports every task wake, first run and move into a tracked cgroup: quiet contexts
	 * need no polling. events_lost, set by the caller for a tick: the ring dropped events
	 * since the last one, so this tick samples every context.
	 */
	bool bpf_wakeups, events_lost;
	struct pt_preload_server *preload;	/* NULL: no preload socket */
	const char *meminfo_path;	/* /proc/meminfo */
	/* The cgroup walk: NULL is pt_cgroup_walk (tests inject its failures). */
	int (*walk)(const char *root, pt_cgroup_visit_fn fn, void *arg);

	/* Where actions go; the manager gets them back with pt_manager_action_done(). */
	void (*submit)(void *arg, struct pt_action *a);
	/*
	 * Takes a submitted action back if no worker has started it (it comes back through
	 * pt_manager_action_done(), its job cancelled); whether it was. May be NULL.
	 */
	bool (*cancel)(void *arg, struct pt_action *a);
	/* Runs a started one at the daemon's priority until it ends; whether it did. May be NULL. */
	bool (*boost)(void *arg, struct pt_action *a);
	void *submit_arg;
	/* A cgroup starts or stops being tracked (the BPF filter); may be NULL. */
	void (*track)(void *arg, uint64_t cgroup_id, bool on);
	/*
	 * Whether the BPF events of a tracked cgroup wake the daemon at once (@on: it is idle, an
	 * event may be its wake) or wait for the next tick (active: they only count); may be NULL.
	 */
	void (*wake_events)(void *arg, uint64_t cgroup_id, bool on);
	void *track_arg;
	/*
	 * Reads the wake sources' rings (BPF, the tiers' events); called between the samples
	 * of a tick, every PT_TICK_POLL_SAMPLES samples, so that a wake waits for that many
	 * samples at most rather than for the rest of a long tick. May be NULL.
	 */
	void (*poll_events)(void *arg);
	void *poll_arg;

	/* The tiers' per-cgroup counters as last read (pt_manager_tick, pt_sample_usage_ok). */
	struct pt_kmod_usage *usage;	/* read at usage_ms */
	int n_usage;
	uint64_t usage_ms;		/* 0: not read yet */

	/* Counters. */
	uint64_t bpf_unmatched;		/* events of cgroups with no context: must stay 0 */
	uint64_t tier_events_lost;
	uint64_t watermark_offloads;	/* chunks chosen by the global victim order */
	uint64_t last_watermark_ms;
	uint64_t last_rescan_ms;	/* the last walk of the cgroup tree */
	/* How full the tiers are (tier_fill.h), looked at once per scan interval. */
	const char *sysblock_path;	/* /sys/block */
	struct pt_tier_fill fill;
	enum pt_fill_level fill_level;
	uint64_t last_fill_ms;
	uint64_t fill_deferred;		/* offloads held back because the tiers were full */
	/* memory protection along the critical containers' paths (protect_path.h) */
	struct pt_protect_path protect_path;
	uint64_t last_protect_ms;
	/* MemAvailable (meminfo_path) at mem_available_ms; UINT64_MAX: unknown. */
	uint64_t mem_available;
	uint64_t mem_available_ms;
	uint64_t mem_available_reads;	/* which reading it is */
	/*
	 * Cold offloads not made: MemAvailable was above cold_watermark (config.h), or the
	 * shortfall below it was already asked for (cold_budget).
	 */
	uint64_t cold_deferred_plenty;
	/* Scans of active contexts issued later than their own stretch: memory was plenty. */
	uint64_t scans_relaxed;
	uint64_t job_cpu_ns[PT_JOB_KINDS];	/* worker CPU time of every job done, by kind */
	uint64_t jobs_done[PT_JOB_KINDS];
	/*
	 * What cold offload may still ask for until MemAvailable is read again: the shortfall
	 * below cold_watermark less cold_inflight, the bytes of cold offloads (free_watermark's
	 * too, which counts them likewise) submitted and not done yet. cold_budget_read: the
	 * MemAvailable reading (mem_available_reads) it was computed from.
	 */
	uint64_t cold_budget;
	uint64_t cold_budget_read;
	uint64_t cold_inflight;
	/*
	 * The NVMe drives under the tiers and their write budget (wear.h): pagetierd samples
	 * them (nvme.c) and the manager obeys wear.level, as it does fill_level.
	 */
	struct pt_wear wear;
	uint64_t rescan_interval_ms;	/* walks at most this often from ticks (0: each tick) */
	/*
	 * What tells a walk is due (cgroup_watch.h): fd -1 (the default, and where inotify
	 * fails) walks each rescan_interval_ms; the caller opens it to walk on change, and
	 * every PT_RESCAN_SAFETY_MS in any case: what a watch cannot see (a directory created
	 * between its listing and its watch the walk sees itself; this covers what nobody
	 * foresaw) is late by that much at most.
	 */
	struct pt_cgroup_watch watch;
	uint64_t walks;			/* walks of the cgroup tree */
	uint64_t walk_errors;		/* cgroup walks that failed: contexts kept */
	uint64_t sample_errors;		/* samples that failed for another reason than ENOENT */
	uint64_t ticks;			/* pt_manager_tick() calls */
	uint64_t samples_taken;		/* contexts sampled in a tick */
	uint64_t samples_skipped;	/* quiet contexts not sampled in a tick (sample_pace.h) */
	uint64_t samples_light;		/* safety samples that found nothing moved */
	/*
	 * sample_reader = io_uring: the batch a tick reads its due contexts' cpu.stat and
	 * memory.current with, made at the first tick that wants it; NULL with batch_failed
	 * set once io_uring could not be had (pread from then on, until a reload asks again).
	 */
	struct pt_sample_batch *batch;
	size_t *batch_ctx;		/* per slot: the context's index */
	bool batch_failed;
	uint64_t sample_batches;	/* batched reads submitted */
	uint64_t samples_batched;	/* contexts whose tick sample came from one */
	uint64_t usage_reads;		/* reads of the tiers' per-cgroup usage table */
	uint64_t tick_polls;		/* poll_events calls between the samples of a tick */
	/*
	 * The last tick: an event between ticks is dated by it (a quiet context's tasks slept
	 * until then at least; pt_sample_event).
	 */
	uint64_t last_tick_ms;
};

/* Takes @cfg (the manager frees it). The caller sets the backends and hooks after. */
void pt_manager_init(struct pt_manager *m, struct pt_config *cfg);
void pt_manager_free(struct pt_manager *m);
/* The backend's name for status: "pagetier.ko" or "swap". */
const char *pt_manager_backend(const struct pt_manager *m);

/* Finds opted-in cgroups: new ones get a context, gone ones lose theirs. */
void pt_manager_rescan(struct pt_manager *m);
/* One poll: rescan, samples, idle verdicts, actions, the watermark. */
void pt_manager_tick(struct pt_manager *m, uint64_t now_ms);
/* Replaces the configuration with @ncfg (taken); contexts pick up their new policies. */
void pt_manager_reload(struct pt_manager *m, struct pt_config *ncfg);
/*
 * Samples between two reads of the wake sources in a tick. A tick samples every active
 * container (each poll_interval) and a quiet one that an event or its safety period
 * brings: at 600 active containers in the 2-CPU test guest a tick took 750 ms, and a wake
 * that arrived during one waited for its end (wake detection p99 588 ms, bench/scale).
 */
#define PT_TICK_POLL_SAMPLES 16

/* A finished action (from the caller's submit hook) goes back to its context, then frees. */
void pt_manager_action_done(struct pt_manager *m, struct pt_action *a);

/* Signals. @time_ns: when the BPF event happened (CLOCK_MONOTONIC), 0: now. */
void pt_manager_bpf_event(struct pt_manager *m, uint64_t cgroup_id, uint32_t type,
			  uint32_t flags, uint64_t time_ns);
void pt_manager_tier_event(struct pt_manager *m, const struct pagetier_event *e);
void pt_manager_preload_record(struct pt_manager *m, const char *cgroup,
			       const struct pt_preload_event *ev);
/* Whether a preloaded process of @cgroup registers (opted in, and not critical). */
bool pt_manager_preload_optin(struct pt_manager *m, pid_t pid, const char *cgroup);

struct pt_context *pt_manager_find(struct pt_manager *m, uint64_t cgroup_id);
/*
 * pagetierctl prefetch NAME: wakes every idle context of that policy and prefetches its
 * wake set; a line per context to @out. Returns how many contexts have that name.
 */
int pt_manager_prefetch(struct pt_manager *m, const char *name, FILE *out);

#endif
