// SPDX-License-Identifier: GPL-2.0
#include "manager.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "activity.h"
#include "cgroup.h"
#include "grow.h"
#include "log.h"
#include "pagetier/bpf_events.h"
#include "victims.h"

/* The sources' names in the log, by enum pt_bpf_event_type. */
static const char *const bpf_source[PT_BPF_EV_MAX] = {
	[PT_BPF_EV_FAULT] = "page faults (bpf)",
	[PT_BPF_EV_SWAPIN] = "swap-ins (bpf)",
	[PT_BPF_EV_WAKEUP] = "task wakeups (bpf)",
	[PT_BPF_EV_NET] = "ingress packet (bpf)",
};

/* How long the offload at idle waits for the preloaded processes' malloc_trim. */
#define PT_TRIM_WAIT_MS 500
/*
 * How often the cgroup tree is walked for opted-in cgroups appearing and going: a walk
 * opens every directory of the hierarchy. A preloaded process of a cgroup not yet seen
 * asks for a walk at once (pt_manager_preload_optin).
 */
#define PT_RESCAN_MS 1000
/* Victims the watermark picks per pass at most. */
#define PT_WATERMARK_MAX_VICTIMS 4096

void pt_manager_init(struct pt_manager *m, struct pt_config *cfg)
{
	memset(m, 0, sizeof(*m));
	m->cfg = *cfg;
	m->kmod_fd = -1;
	m->prefetch_fd = -1;
	m->scanner = PT_SCANNER_FALLBACK;
	m->meminfo_path = "/proc/meminfo";
	m->rescan_interval_ms = PT_RESCAN_MS;
	m->watch.fd = -1;
	m->sysblock_path = "/sys/block";
}

void pt_manager_free(struct pt_manager *m)
{
	for (size_t i = 0; i < m->n_ctxs; i++)
		pt_context_release(&m->ctxs[i]);
	/* After the containers' own memory.low: the protection along their paths last. */
	pt_protect_path_release(&m->protect_path, m->cfg.cgroup_root);
	free(m->ctxs);
	free(m->due_ms);
	pt_ctx_index_free(&m->index);
	free(m->usage);
	pt_sample_batch_free(m->batch);
	free(m->batch_ctx);
	pt_cgroup_watch_close(&m->watch);
	pt_config_free(&m->cfg);
	memset(m, 0, sizeof(*m));
}

const char *pt_manager_backend(const struct pt_manager *m)
{
	return m->kmod_fd >= 0 ? "pagetier.ko" : "swap";
}

static void submit(struct pt_manager *m, struct pt_action *a)
{
	if (a)
		m->submit(m->submit_arg, a);
}

struct pt_context *pt_manager_find(struct pt_manager *m, uint64_t cgroup_id)
{
	long i = pt_ctx_index_find_id(&m->index, m->ctxs, m->n_ctxs, cgroup_id);

	return i < 0 ? NULL : &m->ctxs[i];
}

static struct pt_context *find_path(struct pt_manager *m, const char *relpath)
{
	long i = pt_ctx_index_find_path(&m->index, m->ctxs, m->n_ctxs, relpath, strlen(relpath));

	return i < 0 ? NULL : &m->ctxs[i];
}

/*
 * The context a cgroup path ("/a/b") belongs to: its own, or its nearest tracked ancestor
 * (contexts never nest: at most one is). One lookup per path component.
 */
static struct pt_context *owner_of(struct pt_manager *m, const char *cgroup)
{
	for (size_t len = strlen(cgroup); len > 0; len--) {
		long i;

		if (cgroup[len] != '\0' && cgroup[len] != '/')
			continue;
		i = pt_ctx_index_find_path(&m->index, m->ctxs, m->n_ctxs, cgroup, len);
		if (i >= 0)
			return &m->ctxs[i];
	}
	return NULL;
}

static void track(struct pt_manager *m, uint64_t id, bool on)
{
	if (m->track)
		m->track(m->track_arg, id, on);
}

/*
 * Whether the BPF programs follow a context's faults, swap-ins, wakeups and packets. Not a
 * critical one's: it is never offloaded, so it has no wake to see, yet its service's every
 * request wakes tasks and carries packets, each of which went past the lookup into the
 * per-cgroup limits and stats on the critical service's own path, one per 100 ms into the
 * ring for the daemon to read (bench/density, 2026-12-01: 15,984 events of the two critical
 * contexts in an 11-minute run). Outside the map a program returns after one failed lookup.
 */
static bool traced(const struct pt_policy *p)
{
	return p->class != PT_CLASS_CRITICAL;
}

static void visit_cgroup(const char *relpath, uint64_t id, void *arg)
{
	struct pt_manager *m = arg;
	const struct pt_policy *p = pt_config_match(&m->cfg, relpath);
	struct pt_context *ctx = find_path(m, relpath);

	/* Before the walk lists it: what is created in it from now on is an event. */
	if (m->watch.fd >= 0) {
		char path[PATH_MAX];

		if (snprintf(path, sizeof(path), "%s%s", m->cfg.cgroup_root, relpath) <
		    (int)sizeof(path))
			pt_cgroup_watch_add(&m->watch, path);
	}
	if (!p)
		return;
	if (ctx && ctx->cgroup_id == id) {
		ctx->seen = true;
		if (traced(&ctx->policy) != traced(p)) {
			/* Its class changed: in or out of the BPF map, its wake flag set anew. */
			track(m, id, traced(p));
			ctx->events_wake_known = false;
		}
		ctx->policy = *p;	/* picks up a reloaded policy */
		return;
	}
	if (ctx)
		return;	/* same path, new cgroup: the old context goes first, then this one */
	/* A context covers its whole subtree: never track a child of a tracked cgroup. */
	if (owner_of(m, relpath))
		return;
	if (pt_grow((void **)&m->ctxs, &m->cap_ctxs, m->n_ctxs + 1, sizeof(*m->ctxs)) ||
	    pt_grow((void **)&m->due_ms, &m->cap_due, m->n_ctxs + 1, sizeof(*m->due_ms))) {
		pt_err("out of memory tracking %s", relpath);
		return;
	}
	m->due_ms[m->n_ctxs] = 0;
	ctx = &m->ctxs[m->n_ctxs++];
	pt_context_init(ctx, p, m->cfg.cgroup_root, relpath, id, pt_now_ms(), m->cfg.chunk_shift);
	pt_sample_spread(&ctx->pace, id);
	pt_ctx_index_added(&m->index, m->ctxs, m->n_ctxs);
	ctx->scan_interval_ms = m->cfg.scan_interval_ms;
	/* The fallback scanner cannot place reads within a mapping: no memory verdicts. */
	ctx->memory_signal = m->scanner == PT_SCANNER_KMOD;
	if (traced(p))
		track(m, id, true);
	pt_info("%s: tracking cgroup %s (id %llu, %s, idle after %llu ms quiet: CPU below %u.%u%%, %u packets, %llu KiB touched and %llu KiB fresh per epoch; cold after %llu ms)",
		p->name, relpath, (unsigned long long)id, pt_class_name(p->class),
		(unsigned long long)p->idle.threshold_ms, p->idle.cpu_permille / 10,
		p->idle.cpu_permille % 10, p->idle.max_packets,
		(unsigned long long)(p->idle.working_set_bytes >> 10),
		(unsigned long long)(p->idle.fresh_bytes >> 10),
		(unsigned long long)p->cold_after_ms);
}

/*
 * Events of an idle context may be its wake: each one wakes the daemon. Those of an active
 * one only count, and wait for the next tick (the ring is drained before each).
 */
static void sync_wake_events(struct pt_manager *m, struct pt_context *ctx)
{
	bool want = ctx->idle.state != PT_STATE_ACTIVE && ctx->policy.class != PT_CLASS_CRITICAL;

	if (ctx->events_wake_known && ctx->events_wake == want)
		return;
	if (!traced(&ctx->policy)) {
		ctx->events_wake = false;	/* not in the BPF map: nothing to set */
		ctx->events_wake_known = true;
		return;
	}
	ctx->events_wake = want;
	ctx->events_wake_known = true;
	if (m->wake_events)
		m->wake_events(m->track_arg, ctx->cgroup_id, want);
}

static void drop_ctx(struct pt_manager *m, size_t i, const char *why)
{
	pt_info("%s: no longer tracking %s (%s)", m->ctxs[i].policy.name, m->ctxs[i].relpath, why);
	if (traced(&m->ctxs[i].policy))
		track(m, m->ctxs[i].cgroup_id, false);
	pt_context_release(&m->ctxs[i]);
	m->ctxs[i] = m->ctxs[m->n_ctxs - 1];
	m->due_ms[i] = m->due_ms[m->n_ctxs - 1];
	m->n_ctxs--;
	pt_ctx_index_invalidate(&m->index);
}

void pt_manager_rescan(struct pt_manager *m)
{
	int rc;

	for (size_t i = 0; i < m->n_ctxs; i++)
		m->ctxs[i].seen = false;
	m->walks++;
	pt_cgroup_watch_walk_started(&m->watch);
	pt_cgroup_watch_add(&m->watch, m->cfg.cgroup_root);
	rc = (m->walk ? m->walk : pt_cgroup_walk)(m->cfg.cgroup_root, visit_cgroup, m);
	if (rc) {
		/*
		 * An incomplete walk (out of descriptors, say) says nothing about the cgroups it
		 * did not see: keep every context until one that works, next interval.
		 */
		m->watch.changed = true;
		if (!m->walk_errors++ || !(m->walk_errors & 1023))
			pt_warn("walking %s failed (%s, %llu times so far): tracking as before",
				m->cfg.cgroup_root, strerror(-rc),
				(unsigned long long)m->walk_errors);
		return;
	}
	for (size_t i = m->n_ctxs; i-- > 0;)
		if (!m->ctxs[i].seen)
			drop_ctx(m, i, "cgroup gone or no longer opted in");
}

void pt_manager_reload(struct pt_manager *m, struct pt_config *ncfg)
{
	/* runtime_dir and cgroup_root take effect on restart only: keep the sockets valid. */
	snprintf(ncfg->cgroup_root, sizeof(ncfg->cgroup_root), "%s", m->cfg.cgroup_root);
	snprintf(ncfg->runtime_dir, sizeof(ncfg->runtime_dir), "%s", m->cfg.runtime_dir);
	pt_config_free(&m->cfg);
	m->cfg = *ncfg;
	m->batch_failed = false;	/* sample_reader = io_uring is asked for again */
	pt_manager_rescan(m);
}

/*
 * The pages of @ctx's demand reads so far (a running count): those the tiers' staging did
 * not serve, or where no tier reports them, the swap-ins BPF sees; the larger goes.
 */
static uint64_t demand_misses(const struct pt_context *ctx)
{
	uint64_t misses = ctx->tier_miss_pages;

	return ctx->bpf_events[PT_BPF_EV_SWAPIN] > misses ? ctx->bpf_events[PT_BPF_EV_SWAPIN] :
							    misses;
}

/*
 * @ctx woke (the idle machine said so): prefetch at once. @how: what the signal showed,
 * for the log ("" or ": ...").
 */
static void woke(struct pt_manager *m, struct pt_context *ctx, const char *source,
		 const char *how)
{
	ctx->offload_pending = false;
	ctx->peak_since_wake = ctx->sample.memory_current;
	/*
	 * A job of its that still waits in the background pool (its offload, a settle pass, a
	 * scan: behind a thousand others on a host short of CPU) is taken back, so that the
	 * prefetch goes when it comes back, at the next reap, not after the queue (bench/scale:
	 * a probe's prefetch went 19 s after its wake was seen); one that runs there goes on
	 * at the daemon's priority, not nice 19 (there, 3 to 33 s).
	 */
	if (ctx->busy_action && !pt_context_action_running(ctx) && m->cancel &&
	    m->cancel(m->submit_arg, ctx->busy_action))
		pt_debug("%s: its queued %s taken back for its wake", ctx->policy.name,
			 pt_action_name(ctx->busy_action));
	else if (ctx->busy_action && pt_context_action_running(ctx) && m->boost &&
		 m->boost(m->submit_arg, ctx->busy_action))
		pt_debug("%s: its running %s raised to the daemon's priority for its wake",
			 ctx->policy.name, pt_action_name(ctx->busy_action));
	ctx->rest_misses_wake = demand_misses(ctx);
	pt_info("%s: wake detected by %s%s", ctx->policy.name, source, how);
	snprintf(ctx->wake_source, sizeof(ctx->wake_source), "%s", source);
	submit(m, pt_context_prefetch(ctx, m->cfg.prefetch_rate, m->prefetch_fd));
}

/*
 * A wake by refaults says how many came over how long, and how late the daemon read the
 * one that decided it: what a wake's detection time went to (bench/scale).
 */
static void on_signal(struct pt_manager *m, struct pt_context *ctx, struct pt_signal s,
		      const char *source)
{
	uint64_t now = pt_now_ms();
	char how[96] = "";

	if (pt_idle_signal(&ctx->idle, &ctx->policy.idle, s, now) != PT_EV_WOKE)
		return;
	if (ctx->idle.cause == PT_CAUSE_REFAULTS)
		snprintf(how, sizeof(how), ": %llu pages in %llu ms, read %llu ms after the last",
			 (unsigned long long)ctx->idle.woke_refault_pages,
			 (unsigned long long)ctx->idle.woke_refault_span_ms,
			 (unsigned long long)(s.at_ms && s.at_ms < now ? now - s.at_ms : 0));
	woke(m, ctx, source, how);
}

/* MemAvailable from meminfo, in bytes; UINT64_MAX when unknown (never acted on). */
static uint64_t mem_available(const char *meminfo)
{
	char buf[4096];
	const char *at;
	uint64_t kb = 0;

	if (pt_read_file(meminfo, buf, sizeof(buf)) <= 0 ||
	    !(at = strstr(buf, "MemAvailable:")) || pt_flat_keyed_get(at, "MemAvailable:", &kb))
		return UINT64_MAX;
	return kb << 10;
}

/* MemAvailable, read at most once per scan interval (the watermarks' pace). */
static uint64_t available(struct pt_manager *m, uint64_t now)
{
	if (!m->mem_available_ms || now - m->mem_available_ms >= m->cfg.scan_interval_ms) {
		m->mem_available = mem_available(m->meminfo_path);
		m->mem_available_ms = now ? now : 1;
		m->mem_available_reads++;
	}
	return m->mem_available;
}

/*
 * The two back-offs, the tiers' fill (tier_fill.h) and the drives' write budget (wear.h),
 * as one: cold offload of active containers is held first, all new offload next. With
 * @count, what is held is counted against the back-off that held it. Cold offload also
 * waits for the host to need the memory (cold_watermark, config.h).
 */
static bool cold_held(struct pt_manager *m, bool count)
{
	uint64_t wm = pt_config_cold_watermark(&m->cfg);

	if (wm) {
		uint64_t avail = available(m, pt_now_ms());

		if (avail != UINT64_MAX && avail >= wm) {
			m->cold_deferred_plenty += count;
			return true;
		}
	}
	if (m->fill_level >= PT_FILL_NO_COLD) {
		m->fill_deferred += count;
		return true;
	}
	if (m->wear.level >= PT_WEAR_NO_COLD) {
		m->wear.deferred += count;
		return true;
	}
	return false;
}

static bool offload_held(struct pt_manager *m, bool count)
{
	if (m->fill_level >= PT_FILL_FULL) {
		m->fill_deferred += count;
		return true;
	}
	if (m->wear.level >= PT_WEAR_STOP) {
		m->wear.deferred += count;
		return true;
	}
	return false;
}

/*
 * Whether the host has plenty of memory: MemAvailable at least twice the cold watermark
 * (and the free watermark), so that neither cold offload nor the free watermark's can
 * follow a scan soon. Active contexts' scans are relaxed meanwhile (pt_context_stretch());
 * the margin lets them come back to every interval before the cold watermark is reached.
 * Never without a cold watermark: cold offload then follows every scan.
 */
static bool memory_plenty(struct pt_manager *m, uint64_t now)
{
	uint64_t wm = pt_config_cold_watermark(&m->cfg), avail;

	if (!wm || wm == UINT64_MAX)
		return false;
	if (m->cfg.free_watermark > wm)
		wm = m->cfg.free_watermark;
	avail = available(m, now);
	return avail != UINT64_MAX && avail / 2 >= wm;
}

/*
 * What cold offload may still ask for now: the host's shortfall below cold_watermark, less
 * the cold offloads asked and not done, once per MemAvailable reading; UINT64_MAX without
 * a cold_watermark. The watermark alone is a gate, and every context scanned while it was
 * open offloaded up to offload_rate's worth on the same reading: in the density benchmark
 * 16 noise containers under a cold_watermark of 60 MiB wrote 100 MiB in a 40 s window and
 * kept 150 MiB available, which their next requests read back from the drive.
 */
/* a - b, or 0 where b is larger. */
static uint64_t sub_floor(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t cold_allowance(struct pt_manager *m, uint64_t now)
{
	uint64_t wm = pt_config_cold_watermark(&m->cfg), avail;

	if (!wm)
		return UINT64_MAX;
	avail = available(m, now);
	if (avail == UINT64_MAX)
		return UINT64_MAX;
	if (m->cold_budget_read != m->mem_available_reads) {
		m->cold_budget_read = m->mem_available_reads;
		m->cold_budget = sub_floor(sub_floor(wm, avail), m->cold_inflight);
	}
	return m->cold_budget;
}

static uint64_t cold_bytes(const struct pt_manager *m, const struct pt_action *a)
{
	return (uint64_t)a->n_ids << m->cfg.chunk_shift;
}

/*
 * Cold offload of an active context: one scan interval's worth of offload_rate at most,
 * whether it follows a scan or the previous offload (tick_ctx), so that it stays paced,
 * and no more than cold_allowance().
 */
static void submit_cold(struct pt_manager *m, struct pt_context *ctx, uint64_t now)
{
	uint64_t max = m->cfg.offload_rate * m->cfg.scan_interval_ms / 1000;
	uint64_t allow = cold_allowance(m, now);
	struct pt_action *a;

	if (allow < max)
		max = allow;
	if (max < (1ULL << m->cfg.chunk_shift)) {
		m->cold_deferred_plenty++;
		return;
	}
	a = pt_context_cold(ctx, m->cfg.scan_interval_ms, max);
	if (a) {
		uint64_t bytes = cold_bytes(m, a);

		ctx->last_cold_ms = now;
		m->cold_inflight += bytes;
		if (allow != UINT64_MAX)
			m->cold_budget = sub_floor(m->cold_budget, bytes);
		submit(m, a);
	}
}

void pt_manager_action_done(struct pt_manager *m, struct pt_action *a)
{
	struct pt_context *ctx = pt_manager_find(m, a->cgroup_id);
	enum pt_job_kind kind = a->kind;

	if (kind == PT_JOB_COLD)
		m->cold_inflight = sub_floor(m->cold_inflight, cold_bytes(m, a));
	m->job_cpu_ns[kind] += a->job.cpu_ns;
	m->jobs_done[kind]++;
	pt_context_apply(ctx, a);
	if (ctx)
		m->due_ms[ctx - m->ctxs] = 0;	/* what its end allows goes at the next poll */
	if (ctx && kind == PT_JOB_SCAN && !ctx->wake_pending) {
		/* Unused prefetch first: it is the cheapest memory to give back. */
		struct pt_action *trim = pt_context_trim(ctx, pt_now_ms());

		if (trim)
			submit(m, trim);
		else if (!cold_held(m, true))
			submit_cold(m, ctx, pt_now_ms());
	}
	if (ctx && ctx->wake_pending) {
		/* It woke while the action ran: prefetch now. */
		ctx->wake_pending = false;
		submit(m, pt_context_prefetch(ctx, m->cfg.prefetch_rate, m->prefetch_fd));
	}
}

/*
 * An event of @ctx: counted, dated (pt_sample_event), and its next tick samples it, unless
 * it is active and sampled at its steady pace.
 */
static void count_event(struct pt_manager *m, struct pt_context *ctx)
{
	pt_sample_event(&ctx->pace, ctx->signals++, m->last_tick_ms);
	/* An active one at its steady pace keeps it: the event did what it does (idle.h). */
	if (!ctx->pace.steady)
		m->due_ms[ctx - m->ctxs] = 0;
}

/*
 * A packet for the container is demand: beyond the policy's tolerance it makes an active
 * context busy and wakes an idle one at once, before the application has read it.
 * Swap-ins and page faults wake an idle context when they come faster than a timer's
 * stray touch (wake_refaults). Task wakeups are counted only: timers wake tasks all the
 * time.
 */
void pt_manager_bpf_event(struct pt_manager *m, uint64_t cgroup_id, uint32_t type,
			  uint32_t flags, uint64_t time_ns)
{
	struct pt_context *ctx = pt_manager_find(m, cgroup_id);

	if (!ctx || type >= PT_BPF_EV_MAX || !bpf_source[type]) {
		/* The kernel-side filter lets through opted-in cgroups only. */
		m->bpf_unmatched++;
		return;
	}
	ctx->bpf_events[type]++;
	count_event(m, ctx);
	on_signal(m, ctx, pt_signal_bpf(type, flags, time_ns), bpf_source[type]);
}

/* A demand read on a tier: swap-ins of the container's pages. */
void pt_manager_tier_event(struct pt_manager *m, const struct pagetier_event *e)
{
	struct pt_context *ctx;

	if (e->type != PAGETIER_EVENT_DEMAND_READ || !(ctx = pt_manager_find(m, e->cgroup_id)))
		return;
	ctx->tier_reads++;
	if (!(e->flags & PAGETIER_EVENT_F_STAGED)) {
		ctx->tier_misses++;
		ctx->tier_miss_pages += e->pages;
	}
	count_event(m, ctx);
	/* The swap-ins BPF sees are these reads: count them once. */
	if (!m->bpf_swapins)
		on_signal(m, ctx, pt_signal_tier(e), "demand reads (tier)");
}

/*
 * Preloaded processes of opted-in containers register, except those of critical ones: a
 * critical container is never offloaded, so nothing the library reports or serves (records,
 * wake signals, malloc_trim at idle) is of use, while its request thread would cost a
 * single-threaded program glibc's single-thread malloc (about 6% of CPU time on an
 * allocation-heavy one). Refused, the library is a pass-through.
 */
bool pt_manager_preload_optin(struct pt_manager *m, pid_t pid, const char *cgroup)
{
	struct pt_context *ctx = owner_of(m, cgroup);
	uint64_t now = pt_now_ms();

	/* A container that started since the last walk: walk now (at most once per 100 ms). */
	if (!ctx && now - m->last_rescan_ms >= 100) {
		m->last_rescan_ms = now;
		pt_manager_rescan(m);
		ctx = owner_of(m, cgroup);
	}
	if (ctx && ctx->policy.class == PT_CLASS_CRITICAL) {
		pt_debug("%s: preloaded pid %d left as a pass-through (critical)", ctx->policy.name,
			 (int)pid);
		return false;
	}
	return ctx != NULL;
}

void pt_manager_preload_record(struct pt_manager *m, const char *cgroup,
			       const struct pt_preload_event *ev)
{
	struct pt_context *ctx = owner_of(m, cgroup);

	if (!ctx)
		return;
	ctx->preload_records++;
	count_event(m, ctx);
	on_signal(m, ctx, pt_signal_preload(ev), "allocator activity (preload)");
}

/*
 * Idle: preloaded processes drop their freed heap (malloc_trim, served at once by the
 * library's request thread) rather than have it written to the tier; the offload waits for
 * that, PT_TRIM_WAIT_MS at most. They also ring the doorbell at their next allocator
 * call, a wake signal.
 */
static void preload_idle(struct pt_manager *m, struct pt_context *ctx, uint64_t now)
{
	pid_t pids[256];
	int n = pt_cgroup_pids(ctx->dir, pids, 256);

	for (int i = 0; i < n; i++) {
		if (pt_preload_server_request_trim(m->preload, pids[i]) == 0)
			ctx->trim_until_ms = now + PT_TRIM_WAIT_MS;
		pt_preload_server_arm_wake(m->preload, pids[i]);
	}
}

/* Whether the offload of @ctx still waits for a trim it asked for. */
static bool trim_pending(struct pt_manager *m, struct pt_context *ctx, uint64_t now)
{
	pid_t pids[256];
	int n;

	if (!ctx->trim_until_ms)
		return false;
	n = m->preload && now < ctx->trim_until_ms ? pt_cgroup_pids(ctx->dir, pids, 256) : 0;
	for (int i = 0; i < n; i++)
		if (pt_preload_server_trim_pending(m->preload, pids[i]))
			return true;
	ctx->trim_until_ms = 0;
	return false;
}

/* Submits the victims of source @s (chunk ids) to its context. */
static void submit_victims(struct pt_manager *m, struct pt_context *ctx,
			   const struct pt_victim *v, int n, int s)
{
	uint64_t *ids = malloc((size_t)n * sizeof(*ids));
	struct pt_action *a;
	size_t k = 0;

	if (!ids)
		return;
	for (int i = 0; i < n; i++)
		if (v[i].source == s)
			ids[k++] = v[i].chunk;
	if (!k) {
		free(ids);
		return;
	}
	m->watermark_offloads += k;
	a = pt_context_cold_ids(ctx, ids, k);
	if (a)
		m->cold_inflight += cold_bytes(m, a);
	submit(m, a);
}

/*
 * Below the free-memory watermark, the coldest chunks on the host leave first, whichever
 * container they belong to (victims.h), before the kernel has to reclaim directly.
 */
static void keep_watermark(struct pt_manager *m, uint64_t now)
{
	struct pt_victim_source *src;
	uint64_t avail, need, per_ctx_max;
	struct pt_victim *v;
	int *map, n_src = 0, n;

	if (!m->cfg.free_watermark || now - m->last_watermark_ms < m->cfg.scan_interval_ms ||
	    offload_held(m, false))
		return;
	m->last_watermark_ms = now;
	m->mem_available_ms = 0;	/* this pass acts on a fresh figure */
	avail = available(m, now);
	if (avail >= m->cfg.free_watermark)
		return;
	/* Offloads asked for and not done yet count: they will free what they write. */
	need = sub_floor(m->cfg.free_watermark - avail, m->cold_inflight);
	if (!need)
		return;
	per_ctx_max = m->cfg.offload_rate * m->cfg.scan_interval_ms / 1000;
	src = calloc(m->n_ctxs + 1, sizeof(*src));
	map = calloc(m->n_ctxs + 1, sizeof(*map));
	v = calloc(PT_WATERMARK_MAX_VICTIMS, sizeof(*v));
	if (!src || !map || !v)
		goto out;
	for (size_t i = 0; i < m->n_ctxs; i++) {
		struct pt_context *c = &m->ctxs[i];
		uint64_t cur = c->sample.memory_current, floor = c->policy.resident_floor_bytes;

		if (!c->hot_ok || c->busy || c->policy.class == PT_CLASS_CRITICAL || cur <= floor)
			continue;
		src[n_src].hot = &c->hot;
		src[n_src].idle = c->idle.state == PT_STATE_IDLE;
		src[n_src].evictable_bytes = cur - floor < per_ctx_max ? cur - floor : per_ctx_max;
		map[n_src++] = (int)i;
	}
	n = pt_victims_pick(src, n_src, need, 1, v, PT_WATERMARK_MAX_VICTIMS);
	if (n > 0)
		pt_info("MemAvailable %llu MiB < watermark %llu MiB: offloading %d coldest chunks host-wide",
			(unsigned long long)(avail >> 20),
			(unsigned long long)(m->cfg.free_watermark >> 20), n);
	for (int s = 0; s < n_src && n > 0; s++)
		submit_victims(m, &m->ctxs[map[s]], v, n, s);
out:
	free(src);
	free(map);
	free(v);
}

/*
 * CPU and memory.current: this tick's batched read of them if it had them, else read now
 * (which also says what a failed batched read meant: a cgroup gone, say).
 */
static int sample_light(struct pt_manager *m, struct pt_context *ctx, struct pt_cgroup_sample *s)
{
	if (ctx->batched_tick && ctx->batched_tick == m->ticks) {
		ctx->batched_tick = 0;
		s->cpu_usage_usec = ctx->batched_cpu_usage_usec;
		s->memory_current = ctx->batched_memory_current;
		m->samples_batched++;
		return 0;
	}
	return pt_cgroup_sample_files(ctx->dir, &ctx->files, s, false);
}

/*
 * Samples @ctx: CPU and memory.current every tick (the idle verdict), the memory breakdown
 * (memory.stat: what the kernel computes for a whole subtree at each read) once per scan
 * interval, or when @full asks (an offload about to be sized).
 */
static int sample_ctx(struct pt_manager *m, struct pt_context *ctx, uint64_t now, bool full)
{
	struct pt_cgroup_sample smp = ctx->sample;
	int rc;

	full = full || !ctx->last_full_sample_ms ||
	       now - ctx->last_full_sample_ms >= m->cfg.scan_interval_ms;
	rc = sample_light(m, ctx, &smp);
	if (!rc && full)
		rc = pt_cgroup_sample_breakdown(ctx->dir, &ctx->files, &smp);
	if (rc)
		return rc;
	ctx->sample = smp;
	if (full)
		ctx->last_full_sample_ms = now ? now : 1;
	return 0;
}

/*
 * A quiet context's safety sample: cpu.stat and memory.current only (kept open), and
 * memory.stat (opened, and on 6.12 a flush of the memcg's statistics) only when one of them
 * moved. A quiet container's composition changes only with its size; a thousand of them
 * each read it every few minutes to learn nothing.
 */
static int sample_quiet(struct pt_manager *m, struct pt_context *ctx, uint64_t now)
{
	struct pt_cgroup_sample smp = ctx->sample;
	int rc;

	if (!ctx->last_full_sample_ms)
		return sample_ctx(m, ctx, now, true);
	rc = sample_light(m, ctx, &smp);
	if (rc)
		return rc;
	if (smp.cpu_usage_usec == ctx->sample.cpu_usage_usec &&
	    smp.memory_current == ctx->sample.memory_current) {
		/*
		 * Nor is an idle one's trim due (tick_ctx would read memory.stat for it): swap
		 * cache its faults read ahead is charged to it, and its size did not move.
		 */
		if (ctx->idle.state == PT_STATE_IDLE)
			pt_context_trim_looked(ctx, now, false);
		m->samples_light++;
		return 0;
	}
	/* Moved: its breakdown, with the CPU and size just read. */
	rc = pt_cgroup_sample_breakdown(ctx->dir, &ctx->files, &smp);
	if (rc)
		return rc;
	ctx->sample = smp;
	ctx->last_full_sample_ms = now ? now : 1;
	return 0;
}

/*
 * The idle machine's verdict on this tick's CPU sample, the CPU of what the daemon does to
 * an idle container (trims it asked for, its offload and settle) aside.
 */
static enum pt_idle_event judge(struct pt_manager *m, struct pt_context *ctx, uint64_t now,
				bool *waiting)
{
	*waiting = false;
	if (ctx->trim_until_ms && ctx->idle.state == PT_STATE_IDLE) {
		/* The trim it asked for uses the container's CPU: not a wake. */
		pt_idle_rebase(&ctx->idle, ctx->sample.cpu_usage_usec, now);
		*waiting = trim_pending(m, ctx, now);
		return PT_EV_NONE;
	}
	ctx->trim_until_ms = 0;
	if (ctx->idle.state == PT_STATE_IDLE && pt_context_paging_out(ctx)) {
		/*
		 * Its offload and settle: while pagetierd pages it out, the faults its timers
		 * take on pages just written are CPU of the daemon's making (redis in the wake
		 * bench went over 5% of a CPU over the 2 s wake span then, and was woken 0.4 s
		 * after its settle). The wake rule judges what it uses after them. Only while
		 * such a job runs: one still queued behind others (an offload or a settle pass
		 * in a starved background pool) pages nothing out, and CPU then is the
		 * container's (bench/scale: probes woken between two settle passes were seen
		 * 5 s late, by their swap-ins).
		 */
		pt_idle_rebase(&ctx->idle, ctx->sample.cpu_usage_usec, now);
		return PT_EV_NONE;
	}
	return pt_idle_cpu(&ctx->idle, &ctx->policy.idle, ctx->sample.cpu_usage_usec, now);
}

/*
 * The rest of @ctx's last wake (pt_context_rest()), if its demand reads ask for it. As much
 * as the host has above its cold watermark. Whether a job was submitted.
 */
static bool submit_rest(struct pt_manager *m, struct pt_context *ctx, uint64_t now)
{
	uint64_t misses = demand_misses(ctx), stall = 0, avail, wm, room;
	struct pt_action *a;

	if (!ctx->n_rest_set || !ctx->rest_until_ms)
		return false;	/* none, or its window is not open */
	/* Read in the window only: a few containers at a time, in the 30 s after a wake. */
	if (pt_cgroup_memory_stall_us(ctx->dir, &stall))
		stall = 0;	/* no PSI (psi=0): the demand reads alone say */
	avail = available(m, now);
	wm = pt_config_cold_watermark(&m->cfg);
	room = avail == UINT64_MAX ? UINT64_MAX : avail > wm ? avail - wm : 0;
	a = pt_context_rest(ctx, now, misses, stall, room, m->cfg.prefetch_rate,
			    m->prefetch_fd);
	submit(m, a);
	return a != NULL;
}

/*
 * Idle, its offload deferred by the backoff (pt_context_offload_backoff()): that wait, up to
 * an hour, is no reason to sample it at every poll; it is due when the wait ends.
 */
static bool offload_deferred(const struct pt_context *ctx, uint64_t now)
{
	return ctx->offload_pending && !ctx->busy && now < ctx->offload_after_ms;
}

/* What one context does this tick, once sampled. */
static void tick_ctx(struct pt_manager *m, struct pt_context *ctx, uint64_t now)
{
	bool waiting;
	enum pt_idle_event ev = judge(m, ctx, now, &waiting);

	if (waiting)
		return;
	if (ctx->idle.state != PT_STATE_IDLE && ctx->sample.memory_current > ctx->peak_since_wake)
		ctx->peak_since_wake = ctx->sample.memory_current;
	if (ev == PT_EV_WENT_IDLE) {
		/* The offload is sized by memory.stat's anon: read it now. */
		sample_ctx(m, ctx, now, true);
		ctx->n_idle++;
		ctx->quiet_scans = 0;
		ctx->current_at_idle = ctx->sample.memory_current;
		ctx->idle_low_current = 0;
		pt_info("%s: idle: quiet for %llu ms (last busy: %s); holds %llu MiB: %llu MiB anonymous, %llu MiB shared memory, %llu MiB of files' page cache",
			ctx->policy.name, (unsigned long long)ctx->policy.idle.threshold_ms,
			pt_idle_cause_name(ctx->idle.cause),
			(unsigned long long)(ctx->sample.memory_current >> 20),
			(unsigned long long)(ctx->sample.anon >> 20),
			(unsigned long long)(ctx->sample.shmem >> 20),
			(unsigned long long)(ctx->sample.file_cache >> 20));
		if (pt_context_offload_backoff(ctx, pt_idle_busy_was_background(&ctx->idle), now))
			pt_info("%s: idle: %llu idle offloads in a row undone by its own background (no request came since its wake; %llu MiB back of the %llu MiB the last one freed): its offload waits %llu s more",
				ctx->policy.name, (unsigned long long)ctx->offload_backoff,
				(unsigned long long)(pt_context_came_back(ctx) >> 20),
				(unsigned long long)(ctx->idle_saved >> 20),
				(unsigned long long)((ctx->offload_after_ms - now) / 1000));
		if (ctx->idle.last_wake_false)
			pt_info("%s: idle: its last wake, by refaults, was false: nothing else came after its prefetch (%llu false so far); refaults wake it from %llu KiB/s now",
				ctx->policy.name, (unsigned long long)ctx->idle.false_wakes,
				(unsigned long long)(pt_idle_wake_pages(&ctx->idle, &ctx->policy.idle) * 4));
		if (m->preload)
			preload_idle(m, ctx, now);
		/*
		 * Issued below, or as soon as an action in flight (a scan) is done, or the
		 * backoff's wait (offload_deferred()) ends.
		 */
		ctx->offload_pending = true;
	}
	if (ctx->idle.state == PT_STATE_IDLE && ctx->offload_pending &&
	    !offload_deferred(ctx, now)) {
		/* Held, it goes once the tiers have room and the drives' budget refills. */
		if (!offload_held(m, true) && !ctx->busy && !trim_pending(m, ctx, now)) {
			bool hold;
			struct pt_action *scan = pt_context_quiet_scan(ctx, now,
								       m->cfg.scan_interval_ms,
								       m->scanner, m->kmod_fd,
								       m->cfg.chunk_shift, &hold);

			if (scan) {
				pt_debug("%s: idle: no scan saw it quiet yet: scanning before the offload (%u of %d)",
					 ctx->policy.name, ctx->quiet_scans, PT_QUIET_SCANS);
				submit(m, scan);
			} else if (!hold) {
				ctx->offload_pending = false;
				submit(m, pt_context_offload(ctx,
							     pt_wear_idle_rate(m->wear.level,
									       m->cfg.offload_rate)));
			}
		}
	} else if (ev == PT_EV_WOKE) {
		woke(m, ctx, "cpu usage", "");
	} else if (ctx->idle.state == PT_STATE_IDLE) {
		struct pt_action *a = pt_context_settle(ctx);

		/*
		 * Settled: once per scan interval (memory.stat's pace), swap cache its timers'
		 * faults read ahead, which nobody maps, goes (idle contexts are not scanned, so
		 * this is not left to the end of a scan).
		 */
		if (!a && !ctx->busy && pt_context_trim_due(ctx, now, m->cfg.scan_interval_ms)) {
			/* A burst between two full samples: read swapcached now. */
			if (ctx->last_full_sample_ms != now)
				sample_ctx(m, ctx, now, true);
			a = pt_context_trim(ctx, now);
			if (ctx->sample.swapcached)
				pt_debug("%s: idle: %llu KiB in the swap cache, %llu KiB of mapped anonymous memory: %s",
					 ctx->policy.name,
					 (unsigned long long)(ctx->sample.swapcached >> 10),
					 (unsigned long long)(ctx->sample.anon >> 10),
					 a ? "trimmed" : "left");
			pt_context_trim_looked(ctx, now, a != NULL);
		}
		submit(m, a);
	} else if (ctx->idle.state == PT_STATE_ACTIVE && submit_rest(m, ctx, now)) {
		/* The rest of its wake goes before more scans and cold offload. */
	} else if (ctx->idle.state == PT_STATE_ACTIVE) {
		uint32_t stretch = pt_context_stretch(ctx, memory_plenty(m, now), now);
		struct pt_action *a;

		if (now < pt_context_next_scan_ms(ctx, stretch)) {
			/* Between two scans of a steady context: more cold chunks, same pace. */
			if (ctx->cold_more && !ctx->busy && !cold_held(m, false) &&
			    now - ctx->last_cold_ms >= m->cfg.scan_interval_ms)
				submit_cold(m, ctx, now);
			return;
		}
		a = pt_context_scan(ctx, m->scanner, m->kmod_fd, m->cfg.chunk_shift);
		if (a) {
			a->epochs = pt_context_scan_epochs(ctx, now, stretch);
			if (stretch > (ctx->scan_stretch ? ctx->scan_stretch : 1))
				m->scans_relaxed++;
			ctx->last_scan_ms = now;
			submit(m, a);
		}
	}
}

/*
 * When an active @ctx is next due at its steady pace (sample_pace.h), 0 at the next poll:
 * each poll while a wake is restored (woken with a job in flight, the prefetch's quality
 * window or its rest's window open: those read it poll by poll), and otherwise no later
 * than its next scan and, while it has more cold chunks to give, its next cold offload.
 */
static uint64_t active_due(struct pt_manager *m, struct pt_context *ctx, uint64_t now)
{
	uint64_t period = pt_sample_active_period(ctx->policy.idle.threshold_ms,
						  m->cfg.poll_interval_ms), due, scan;

	if (!period || ctx->idle.state != PT_STATE_ACTIVE || ctx->wake_pending ||
	    ctx->rest_until_ms || pt_context_in_quality_window(ctx, now))
		return 0;
	due = now + period;
	scan = pt_context_next_scan_ms(ctx, pt_context_stretch(ctx, memory_plenty(m, now), now));
	if (scan < due)
		due = scan;
	if (ctx->cold_more && ctx->last_cold_ms + m->cfg.scan_interval_ms < due)
		due = ctx->last_cold_ms + m->cfg.scan_interval_ms;
	return due > now ? due : 0;
}

/*
 * Whether the cgroup of @ctx is really gone: its directory no longer there, or another
 * cgroup's (same path, new id). A sample's -ENOENT alone is no proof: a file that lacks the
 * key read (a short read, a kernel without the field) says the same.
 */
static bool cgroup_gone(const struct pt_context *ctx)
{
	uint64_t id;
	int rc = pt_cgroup_id(ctx->dir, &id);

	return rc == -ENOENT || rc == -ENOTDIR || (!rc && id != ctx->cgroup_id);
}

/*
 * How full the tiers are, once per scan interval: cold offload stops first, then all
 * offload, before writes would fail for want of a free segment (tier_fill.h).
 */
static void check_fill(struct pt_manager *m, uint64_t now)
{
	struct pt_tier_fill f;
	enum pt_fill_level level;
	uint64_t prev_nospace = m->fill.nospace_errors;

	/* Without the module there is no tier in /sys/block: nothing to hold back. */
	if (m->last_fill_ms && now - m->last_fill_ms < m->cfg.scan_interval_ms)
		return;
	m->last_fill_ms = now ? now : 1;
	if (pt_kmod_tier_fill(m->sysblock_path, &f) <= 0)
		return;
	level = pt_tier_fill_level(m->fill_level, &f, prev_nospace);
	if (level != m->fill_level) {
		const char *what = level == PT_FILL_OK ? "offloading everything again" :
				   level == PT_FILL_NO_COLD ? "cold offload of active containers stops" :
				   "all offload stops until there is room";

		if (level > m->fill_level)
			pt_warn("tiers %s: %llu of %llu MiB live, %llu of %llu segments free, %llu writes failed for want of one: %s",
				pt_fill_level_name(level), (unsigned long long)(f.live_pages >> 8),
				(unsigned long long)(f.capacity_pages >> 8),
				(unsigned long long)f.free_segments, (unsigned long long)f.segments,
				(unsigned long long)f.nospace_errors, what);
		else
			pt_info("tiers %s: %llu of %llu MiB live: %s", pt_fill_level_name(level),
				(unsigned long long)(f.live_pages >> 8),
				(unsigned long long)(f.capacity_pages >> 8), what);
	}
	m->fill = f;
	m->fill_level = level;
}

/*
 * The critical containers and their ancestors hold memory.min and memory.low that cover
 * them (protect_path.h), once per scan interval, from each one's last memory.current.
 */
static void keep_protection(struct pt_manager *m, uint64_t now)
{
	if (m->last_protect_ms && now - m->last_protect_ms < m->cfg.scan_interval_ms)
		return;
	m->last_protect_ms = now ? now : 1;
	pt_protect_path_begin(&m->protect_path);
	for (size_t i = 0; i < m->n_ctxs; i++) {
		const struct pt_context *ctx = &m->ctxs[i];

		if (ctx->policy.class == PT_CLASS_CRITICAL &&
		    pt_protect_path_add(&m->protect_path, ctx->relpath, ctx->sample.memory_current))
			pt_warn("out of memory: %s's protection is not kept", ctx->policy.name);
	}
	pt_protect_path_apply(&m->protect_path, m->cfg.cgroup_root);
}

/*
 * Idle, and waiting for nothing but its action in flight, if any: only its own tasks, or
 * that action's end, can change that, and both make it due (an event;
 * pt_manager_action_done). An action in flight does not keep the polls sampling it: at
 * 3,000 containers gone idle together, their scans and offloads queued in the background
 * pool for minutes, and every poll sampled all 3,000 (bench/scale: 90% of a CPU, the pool
 * starved further by it). An offload or a settle pass pending behind that action goes at
 * the sample its end brings; one pending while nothing runs (held: the tiers' room, the
 * drives' budget, a quiet scan's interval) waits for a poll to find it free, and so does
 * a trim.
 */
static bool quiet(const struct pt_context *ctx, uint64_t now)
{
	return ctx->idle.state == PT_STATE_IDLE && !ctx->wake_pending && !ctx->trim_until_ms &&
	       (ctx->busy || ((!ctx->offload_pending || offload_deferred(ctx, now)) &&
			      !ctx->settle_passes));
}

/*
 * Whether a tick samples context @i. Read without touching the context: 1,000 quiet ones
 * are one array's walk. Events not covering every wake, only the steady active ones are
 * passed by (sample_pace.h).
 */
static bool sample_due(const struct pt_manager *m, size_t i, uint64_t now, bool covered)
{
	return m->due_ms[i] <= now || (!covered && !m->ctxs[i].pace.steady);
}

/* Slots of one batched read: a tick of more due contexts submits several. */
#define PT_BATCH_SLOTS 256

/* The batch sample_reader = io_uring asks for, made once; NULL: read with pread. */
static struct pt_sample_batch *sample_batch(struct pt_manager *m)
{
	int err;

	if (m->cfg.sample_reader != PT_READER_IO_URING) {
		pt_sample_batch_free(m->batch);
		m->batch = NULL;
		return NULL;
	}
	if (m->batch || m->batch_failed)
		return m->batch;
	if (!m->batch_ctx && !(m->batch_ctx = calloc(PT_BATCH_SLOTS, sizeof(*m->batch_ctx))))
		err = -ENOMEM;
	else
		m->batch = pt_sample_batch_new(PT_BATCH_SLOTS, &err);
	if (!m->batch) {
		m->batch_failed = true;
		pt_warn("sample_reader = io_uring: no io_uring (%s): reading with pread",
			strerror(-err));
	} else {
		pt_info("sample_reader = io_uring: each poll reads its containers' cpu.stat and memory.current in batches of up to %d",
			PT_BATCH_SLOTS);
	}
	return m->batch;
}

/* Runs the queued reads and hands each context its values; -errno: the ring failed. */
static int batch_flush(struct pt_manager *m, struct pt_sample_batch *b, unsigned int n)
{
	int rc = pt_sample_batch_run(b);

	if (rc < 0) {
		pt_warn("sample_reader = io_uring: a batched read failed (%s): reading with pread",
			strerror(-rc));
		pt_sample_batch_free(b);
		m->batch = NULL;
		m->batch_failed = true;
		return rc;
	}
	m->sample_batches++;
	for (unsigned int k = 0; k < n; k++) {
		struct pt_context *ctx = &m->ctxs[m->batch_ctx[k]];

		/* A failed slot is read again with pread, which says what it means. */
		if (!pt_sample_batch_result(b, (int)k, &ctx->batched_cpu_usage_usec,
					    &ctx->batched_memory_current))
			ctx->batched_tick = m->ticks;
	}
	pt_sample_batch_reset(b);
	return 0;
}

/*
 * sample_reader = io_uring: this tick's due contexts' cpu.stat and memory.current, read
 * in batches before the tick samples them (sample_light takes them). A context whose
 * files cannot be kept open (past the descriptor limit) is read the ordinary way.
 */
static void batch_read(struct pt_manager *m, uint64_t now, bool covered)
{
	struct pt_sample_batch *b = sample_batch(m);
	unsigned int n = 0;

	if (!b)
		return;
	for (size_t i = m->n_ctxs; i-- > 0;) {
		struct pt_context *ctx = &m->ctxs[i];
		int cpu_fd, mem_fd;

		if (!sample_due(m, i, now, covered) ||
		    pt_cgroup_files_keep(ctx->dir, &ctx->files, &cpu_fd, &mem_fd))
			continue;
		m->batch_ctx[n++] = i;
		pt_sample_batch_add(b, cpu_fd, mem_fd);
		if (n == PT_BATCH_SLOTS) {
			if (batch_flush(m, b, n))
				return;
			n = 0;
		}
	}
	if (n)
		batch_flush(m, b, n);
}

void pt_manager_tick(struct pt_manager *m, uint64_t now)
{
	m->last_tick_ms = now;
	m->ticks++;
	check_fill(m, now);
	if (!m->last_rescan_ms ||
	    (now - m->last_rescan_ms >= m->rescan_interval_ms &&
	     (pt_cgroup_watch_walk_due(&m->watch) ||
	      now - m->last_rescan_ms >= PT_RESCAN_SAFETY_MS))) {
		m->last_rescan_ms = now ? now : 1;
		pt_manager_rescan(m);
	}
	keep_watermark(m, now);
	/*
	 * The tiers' per-cgroup table is read at most once per tick, only when a context is
	 * sampled, and a quiet one's safety sample uses the last read if it is recent
	 * (pt_sample_usage_ok): a tick where every context is quiet costs no system call, and
	 * a thousand sleeping containers' safety samples no table of a thousand rows each.
	 */
	bool covered = m->bpf_wakeups && !m->events_lost, usage_tried = false;
	unsigned int sampled = 0;

	batch_read(m, now, covered);
	for (size_t i = m->n_ctxs; i-- > 0;) {
		struct pt_context *ctx;
		const struct pt_kmod_usage *u;
		uint64_t slept_until;
		bool safety;
		int rc;

		if (!sample_due(m, i, now, covered)) {
			m->samples_skipped++;
			continue;
		}
		/*
		 * Before this context, not in the middle of it: an event may wake any context
		 * (a prefetch submitted) or make one due, and the ones before and after this
		 * index are sampled this tick or next as they would be between ticks.
		 */
		if (m->poll_events && sampled && !(sampled % PT_TICK_POLL_SAMPLES)) {
			m->poll_events(m->poll_arg);
			m->tick_polls++;
		}
		sampled++;
		ctx = &m->ctxs[i];
		/* Due by time, not by an event: a quiet one's safety sample. */
		safety = covered && m->due_ms[i] && !ctx->pace.steady;
		/* Woken by an event after skipped polls: its tasks slept until the event. */
		slept_until = covered ? pt_sample_quiet_until(&ctx->pace) : 0;
		if (slept_until)
			pt_idle_quiet_until(&ctx->idle, &ctx->policy.idle, slept_until);
		rc = safety ? sample_quiet(m, ctx, now) : sample_ctx(m, ctx, now, false);
		m->samples_taken++;

		if (rc == -ENOENT && cgroup_gone(ctx)) {
			drop_ctx(m, i, "cgroup vanished");
			continue;
		}
		if (rc) {
			/*
			 * Not its cgroup's doing (out of descriptors, memory, an unreadable file):
			 * the last good sample stays, and the next tick tries again.
			 */
			if (!m->sample_errors++ || !(m->sample_errors & 1023))
				pt_warn("%s: sampling %s failed (%s, %llu times so far): kept as it was",
					ctx->policy.name, ctx->dir,
					rc == -ENOENT ? "a file or a key missing" : strerror(-rc),
					(unsigned long long)m->sample_errors);
			continue;
		}
		if (m->kmod_fd >= 0) {
			if (!usage_tried && !pt_sample_usage_ok(m->usage_ms, now, safety)) {
				int n;

				free(m->usage);
				m->usage = NULL;
				n = pt_kmod_usage_snapshot(m->kmod_fd, &m->usage);
				m->n_usage = n > 0 ? n : 0;
				/* A failed read is tried again next tick, not at each context. */
				m->usage_ms = n >= 0 ? (now ? now : 1) : 0;
				usage_tried = true;
				m->usage_reads++;
			}
			u = pt_kmod_usage_find(m->usage, m->n_usage, ctx->cgroup_id);
			ctx->tier_pages = u ? u->pages : 0;
			pt_context_tier_written(ctx, u ? u->written : 0);
		}
		tick_ctx(m, ctx, now);
		sync_wake_events(m, ctx);
		m->due_ms[i] = pt_sample_taken(&ctx->pace, quiet(ctx, now), m->bpf_wakeups,
					       ctx->signals, active_due(m, ctx, now), now);
		if (offload_deferred(ctx, now) && m->due_ms[i] > ctx->offload_after_ms)
			m->due_ms[i] = ctx->offload_after_ms;
	}
	/* After the samples: a critical container found by this tick's walk is covered now. */
	keep_protection(m, now);
}

int pt_manager_prefetch(struct pt_manager *m, const char *name, FILE *out)
{
	int hits = 0;

	for (size_t i = 0; i < m->n_ctxs; i++) {
		struct pt_context *ctx = &m->ctxs[i];

		if (strcmp(ctx->policy.name, name))
			continue;
		hits++;
		if (pt_idle_poke(&ctx->idle, pt_now_ms()) != PT_EV_WOKE) {
			fprintf(out, "%s: not idle (%s): nothing to prefetch\n", ctx->relpath,
				pt_state_name(ctx->idle.state));
			continue;
		}
		fprintf(out, "%s: prefetch of %llu ranges started\n", ctx->relpath,
			(unsigned long long)ctx->n_wake_set);
		snprintf(ctx->wake_source, sizeof(ctx->wake_source), "pagetierctl prefetch");
		submit(m, pt_context_prefetch(ctx, m->cfg.prefetch_rate, m->prefetch_fd));
	}
	return hits;
}
