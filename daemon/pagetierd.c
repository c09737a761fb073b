// SPDX-License-Identifier: GPL-2.0
/*
 * pagetierd: one memory context per opted-in cgroup; offloads idle containers' cold memory
 * to swap (a pagetier.ko tier where there is one) and prefetches it back when they wake.
 *
 * A single-threaded event loop: a timerfd drives sampling, a signalfd handles
 * SIGTERM/SIGINT (stop) and SIGHUP (reload), and a unix socket serves pagetierctl.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "activity.h"
#include "bpf_loader.h"
#include "config.h"
#include "context.h"
#include "kmod_client.h"
#include "log.h"
#include "preload_server.h"
#include "status.h"
#include "victims.h"
#include "worker.h"

/* Threads for blocking actions: enough to wake two containers at once on a small host. */
#define PT_WORKER_THREADS 2

struct pt_daemon {
	struct pt_config cfg;
	const char *config_dir;
	struct pt_context *ctxs;
	size_t n_ctxs;
	size_t cap_ctxs;
	int kmod_fd;
	int prefetch_fd;			/* kmod_fd if it has PAGETIER_FEAT_PREFETCH, else -1 */
	int events_fd;				/* the tier event ring, -1 if none */
	uint64_t tier_events_lost;
	int epfd, tfd, sfd, lfd;
	struct pt_workers workers;
	struct pt_bpf *bpf;			/* NULL: BPF unavailable */
	struct pt_preload_server *preload;	/* NULL: no preload socket */
	char preload_path[PATH_MAX];
	bool use_bpf;
	bool bpf_swapins;		/* BPF counts swap-ins: the tier's demand reads are the same */
	enum pt_scanner_kind scanner;
	uint64_t bpf_unmatched;		/* events of cgroups with no context: must stay 0 */
	struct pt_kmod_usage *usage;	/* this tick's snapshot of the tiers' counters */
	int n_usage;
	uint64_t last_watermark_ms;
	uint64_t watermark_offloads;	/* chunks chosen by the global victim order */
	char sock_path[PATH_MAX];
	bool running;
};

static const char *backend_name(const struct pt_daemon *d)
{
	return d->kmod_fd >= 0 ? "pagetier.ko" : "swap";
}

static struct pt_context *find_ctx(struct pt_daemon *d, const char *relpath)
{
	for (size_t i = 0; i < d->n_ctxs; i++)
		if (strcmp(d->ctxs[i].relpath, relpath) == 0)
			return &d->ctxs[i];
	return NULL;
}

static bool under_existing_ctx(struct pt_daemon *d, const char *relpath)
{
	for (size_t i = 0; i < d->n_ctxs; i++) {
		size_t n = strlen(d->ctxs[i].relpath);

		if (strncmp(d->ctxs[i].relpath, relpath, n) == 0 && relpath[n] == '/')
			return true;
	}
	return false;
}

static void visit_cgroup(const char *relpath, uint64_t id, void *arg)
{
	struct pt_daemon *d = arg;
	const struct pt_policy *p = pt_config_match(&d->cfg, relpath);
	struct pt_context *ctx = find_ctx(d, relpath);

	if (!p)
		return;
	if (ctx && ctx->cgroup_id == id) {
		ctx->seen = true;
		ctx->policy = *p;	/* picks up a reloaded policy */
		return;
	}
	if (ctx)
		return;	/* same path, new cgroup: the old context goes first, then this one */
	/* A context covers its whole subtree: never track a child of a tracked cgroup. */
	if (under_existing_ctx(d, relpath))
		return;
	if (d->n_ctxs == d->cap_ctxs) {
		size_t cap = d->cap_ctxs ? d->cap_ctxs * 2 : 16;
		struct pt_context *n = realloc(d->ctxs, cap * sizeof(*n));

		if (!n) {
			pt_err("out of memory tracking %s", relpath);
			return;
		}
		d->ctxs = n;
		d->cap_ctxs = cap;
	}
	ctx = &d->ctxs[d->n_ctxs++];
	pt_context_init(ctx, p, d->cfg.cgroup_root, relpath, id, pt_now_ms(), d->cfg.chunk_shift);
	ctx->scan_interval_ms = d->cfg.scan_interval_ms;
	/* The fallback scanner cannot place reads within a mapping: no memory verdicts. */
	ctx->memory_signal = d->scanner == PT_SCANNER_KMOD;
	if (d->bpf && pt_bpf_add_cgroup(d->bpf, id))
		pt_warn("%s: cannot add cgroup %llu to the BPF filter: wake detection by CPU sampling only",
			p->name, (unsigned long long)id);
	pt_info("%s: tracking cgroup %s (id %llu, %s, idle after %llu ms quiet: CPU below %u.%u%%, %u packets, %llu KiB fresh per epoch; cold after %llu ms)",
		p->name, relpath, (unsigned long long)id, pt_class_name(p->class),
		(unsigned long long)p->idle.threshold_ms, p->idle.cpu_permille / 10,
		p->idle.cpu_permille % 10, p->idle.max_packets,
		(unsigned long long)(p->idle.fresh_bytes >> 10),
		(unsigned long long)p->cold_after_ms);
	pt_context_protect(ctx);
}

static struct pt_context *find_ctx_by_id(struct pt_daemon *d, uint64_t id)
{
	for (size_t i = 0; i < d->n_ctxs; i++)
		if (d->ctxs[i].cgroup_id == id)
			return &d->ctxs[i];
	return NULL;
}

static void action_done(struct pt_job *job, void *arg);

static void submit(struct pt_daemon *d, struct pt_action *a)
{
	if (!a)
		return;
	a->job.done = action_done;
	pt_workers_submit(&d->workers, &a->job);
}

/* Loop thread: a finished action goes back to its context, if that still exists. */
static void action_done(struct pt_job *job, void *arg)
{
	struct pt_daemon *d = arg;
	struct pt_action *a = (struct pt_action *)job;
	struct pt_context *ctx = d ? find_ctx_by_id(d, a->cgroup_id) : NULL;

	enum pt_job_kind kind = a->kind;

	pt_context_apply(ctx, a);
	if (ctx && kind == PT_JOB_SCAN && !ctx->wake_pending) {
		/* Unused prefetch first: it is the cheapest memory to give back. */
		struct pt_action *trim = pt_context_trim_prefetch(ctx);

		if (trim)
			submit(d, trim);
		else
			/* Offload is rate-limited: one scan interval's worth of offload_rate. */
			submit(d, pt_context_cold(ctx, d->cfg.scan_interval_ms,
						  d->cfg.offload_rate * d->cfg.scan_interval_ms / 1000));
	}
	if (ctx && ctx->wake_pending) {
		/* It woke while the action ran: prefetch now. */
		ctx->wake_pending = false;
		submit(d, pt_context_prefetch(ctx, d->cfg.prefetch_rate, d->prefetch_fd));
	}
}

static void drop_ctx(struct pt_daemon *d, size_t i, const char *why)
{
	pt_info("%s: no longer tracking %s (%s)", d->ctxs[i].policy.name, d->ctxs[i].relpath, why);
	if (d->bpf)
		pt_bpf_del_cgroup(d->bpf, d->ctxs[i].cgroup_id);
	pt_context_release(&d->ctxs[i]);
	d->ctxs[i] = d->ctxs[d->n_ctxs - 1];
	d->n_ctxs--;
}

/* @ctx woke (the idle machine said so): prefetch at once. */
static void woke(struct pt_daemon *d, struct pt_context *ctx, const char *source)
{
	ctx->offload_pending = false;
	pt_info("%s: wake detected by %s", ctx->policy.name, source);
	snprintf(ctx->wake_source, sizeof(ctx->wake_source), "%s", source);
	submit(d, pt_context_prefetch(ctx, d->cfg.prefetch_rate, d->prefetch_fd));
}

/* A signal for @ctx (activity.h); a wake when the idle machine says so. */
static void on_signal(struct pt_daemon *d, struct pt_context *ctx, struct pt_signal s,
		      const char *source)
{
	if (pt_idle_signal(&ctx->idle, &ctx->policy.idle, s, pt_now_ms()) == PT_EV_WOKE)
		woke(d, ctx, source);
}

static const char *const bpf_source[PT_BPF_EV_MAX] = {
	[PT_BPF_EV_FAULT] = "page faults (bpf)",
	[PT_BPF_EV_SWAPIN] = "swap-ins (bpf)",
	[PT_BPF_EV_WAKEUP] = "task wakeups (bpf)",
	[PT_BPF_EV_NET] = "ingress packet (bpf)",
};

/*
 * A packet for the container is demand: beyond the policy's tolerance it makes an active
 * context busy and wakes an idle one at once, before the application has read it.
 * Swap-ins and page faults wake an idle context when they come faster than a timer's
 * stray touch (wake_refaults). Task wakeups are counted only: timers wake tasks all the
 * time.
 */
static int on_bpf_event(const struct pt_bpf_event *e, void *arg)
{
	struct pt_daemon *d = arg;
	struct pt_context *ctx = find_ctx_by_id(d, e->cgroup_id);

	if (!ctx || e->type >= PT_BPF_EV_MAX) {
		/* The kernel-side filter lets through opted-in cgroups only. */
		d->bpf_unmatched++;
		return 0;
	}
	ctx->bpf_events[e->type]++;
	on_signal(d, ctx, pt_signal_bpf(e->type, e->flags), bpf_source[e->type]);
	return 0;
}

/* A demand read on a tier: swap-ins of the container's pages. */
static void on_tier_event(const struct pagetier_event *e, void *arg)
{
	struct pt_daemon *d = arg;
	struct pt_context *ctx;

	if (e->type != PAGETIER_EVENT_DEMAND_READ || !(ctx = find_ctx_by_id(d, e->cgroup_id)))
		return;
	ctx->tier_reads++;
	/* The swap-ins BPF sees are these reads: count them once. */
	if (!d->bpf_swapins)
		on_signal(d, ctx, pt_signal_tier(e), "demand reads (tier)");
}

/* The context a cgroup path ("/a/b") belongs to: its own, or its nearest tracked ancestor. */
static struct pt_context *ctx_of_path(struct pt_daemon *d, const char *cgroup)
{
	for (size_t i = 0; i < d->n_ctxs; i++) {
		size_t n = strlen(d->ctxs[i].relpath);

		if (strncmp(d->ctxs[i].relpath, cgroup, n) == 0 &&
		    (cgroup[n] == '\0' || cgroup[n] == '/'))
			return &d->ctxs[i];
	}
	return NULL;
}

/*
 * Preloaded processes of opted-in containers register, except those of critical ones: a
 * critical container is never offloaded, so nothing the library reports or serves (records,
 * wake signals, malloc_trim at idle) is of use, while its request thread would cost a
 * single-threaded program glibc's single-thread malloc (about 6% of CPU time on an
 * allocation-heavy one). Refused, the library is a pass-through.
 */
static bool preload_optin(pid_t pid, const char *cgroup, void *arg)
{
	struct pt_context *ctx = ctx_of_path(arg, cgroup);

	if (ctx && ctx->policy.class == PT_CLASS_CRITICAL) {
		pt_debug("%s: preloaded pid %d left as a pass-through (critical)", ctx->policy.name,
			 (int)pid);
		return false;
	}
	return ctx != NULL;
}

static void on_preload_record(pid_t pid, const char *cgroup, const struct pt_preload_event *ev,
			      void *arg)
{
	struct pt_daemon *d = arg;
	struct pt_context *ctx = ctx_of_path(d, cgroup);

	(void)pid;
	if (!ctx)
		return;
	ctx->preload_records++;
	on_signal(d, ctx, pt_signal_preload(ev), "allocator activity (preload)");
}

static void rescan(struct pt_daemon *d)
{
	for (size_t i = 0; i < d->n_ctxs; i++)
		d->ctxs[i].seen = false;
	pt_cgroup_walk(d->cfg.cgroup_root, visit_cgroup, d);
	for (size_t i = d->n_ctxs; i-- > 0;)
		if (!d->ctxs[i].seen)
			drop_ctx(d, i, "cgroup gone or no longer opted in");
}

/* How long the offload at idle waits for the preloaded processes' malloc_trim. */
#define PT_TRIM_WAIT_MS 500

/*
 * Idle: preloaded processes drop their freed heap (malloc_trim, served at once by the
 * library's request thread) rather than have it written to the tier; the offload waits for
 * that, PT_TRIM_WAIT_MS at most. They also ring the doorbell at their next allocator
 * call, a wake signal.
 */
static void preload_idle(struct pt_daemon *d, struct pt_context *ctx, uint64_t now)
{
	pid_t pids[256];
	int n = pt_cgroup_pids(ctx->dir, pids, 256);

	for (int i = 0; i < n; i++) {
		if (pt_preload_server_request_trim(d->preload, pids[i]) == 0)
			ctx->trim_until_ms = now + PT_TRIM_WAIT_MS;
		pt_preload_server_arm_wake(d->preload, pids[i]);
	}
}

/* Whether the offload of @ctx still waits for a trim it asked for. */
static bool trim_pending(struct pt_daemon *d, struct pt_context *ctx, uint64_t now)
{
	pid_t pids[256];
	int n;

	if (!ctx->trim_until_ms)
		return false;
	n = d->preload && now < ctx->trim_until_ms ? pt_cgroup_pids(ctx->dir, pids, 256) : 0;
	for (int i = 0; i < n; i++)
		if (pt_preload_server_trim_pending(d->preload, pids[i]))
			return true;
	ctx->trim_until_ms = 0;
	return false;
}

static uint64_t mem_available(void)
{
	char buf[4096];
	uint64_t kb = 0;

	if (pt_read_file("/proc/meminfo", buf, sizeof(buf)) > 0 &&
	    pt_flat_keyed_get(strstr(buf, "MemAvailable:") ? strstr(buf, "MemAvailable:") : "",
			      "MemAvailable:", &kb) == 0)
		return kb << 10;
	return UINT64_MAX;	/* unknown: never act on it */
}

/*
 * Below the free-memory watermark, the coldest chunks on the host leave first, whichever
 * container they belong to (victims.h), before the kernel has to reclaim directly.
 */
static void keep_watermark(struct pt_daemon *d, uint64_t now)
{
	struct pt_victim_source *src;
	struct pt_victim *v;
	uint64_t avail, need, per_ctx_max;
	int *map, n_src = 0, n;

	if (!d->cfg.free_watermark || now - d->last_watermark_ms < d->cfg.scan_interval_ms)
		return;
	d->last_watermark_ms = now;
	avail = mem_available();
	if (avail >= d->cfg.free_watermark)
		return;
	need = d->cfg.free_watermark - avail;
	per_ctx_max = d->cfg.offload_rate * d->cfg.scan_interval_ms / 1000;
	src = calloc(d->n_ctxs + 1, sizeof(*src));
	map = calloc(d->n_ctxs + 1, sizeof(*map));
	v = calloc(4096, sizeof(*v));
	if (!src || !map || !v)
		goto out;
	for (size_t i = 0; i < d->n_ctxs; i++) {
		struct pt_context *c = &d->ctxs[i];
		uint64_t cur = c->sample.memory_current, floor = c->policy.resident_floor_bytes;

		if (!c->hot_ok || c->busy || c->policy.class == PT_CLASS_CRITICAL || cur <= floor)
			continue;
		src[n_src].hot = &c->hot;
		src[n_src].idle = c->idle.state == PT_STATE_IDLE;
		src[n_src].evictable_bytes = cur - floor < per_ctx_max ? cur - floor : per_ctx_max;
		map[n_src++] = (int)i;
	}
	n = pt_victims_pick(src, n_src, need, 1, v, 4096);
	if (n > 0)
		pt_info("MemAvailable %llu MiB < watermark %llu MiB: offloading %d coldest chunks host-wide",
			(unsigned long long)(avail >> 20),
			(unsigned long long)(d->cfg.free_watermark >> 20), n);
	for (int s = 0; s < n_src && n > 0; s++) {
		uint64_t *ids = malloc((size_t)n * sizeof(*ids));
		size_t k = 0;

		if (!ids)
			break;
		for (int i = 0; i < n; i++)
			if (v[i].source == s)
				ids[k++] = v[i].chunk;
		if (!k) {
			free(ids);
			continue;
		}
		d->watermark_offloads += k;
		submit(d, pt_context_cold_ids(&d->ctxs[map[s]], ids, k));
	}
out:
	free(src);
	free(map);
	free(v);
}

static void tick(struct pt_daemon *d)
{
	uint64_t now;

	rescan(d);
	keep_watermark(d, pt_now_ms());
	/* Rings have no per-record doorbell: drain them every tick as well. */
	if (d->preload)
		pt_preload_server_drain(d->preload, on_preload_record, d);
	now = pt_now_ms();
	free(d->usage);
	d->usage = NULL;
	d->n_usage = d->kmod_fd >= 0 ? pt_kmod_usage_snapshot(d->kmod_fd, &d->usage) : 0;
	for (size_t i = d->n_ctxs; i-- > 0;) {
		struct pt_context *ctx = &d->ctxs[i];
		const struct pt_kmod_usage *u;
		enum pt_idle_event ev;

		if (pt_cgroup_sample(ctx->dir, &ctx->sample)) {
			drop_ctx(d, i, "cgroup vanished");
			continue;
		}
		if (d->kmod_fd >= 0) {
			u = pt_kmod_usage_find(d->usage, d->n_usage, ctx->cgroup_id);
			ctx->tier_pages = u ? u->pages : 0;
			pt_context_tier_written(ctx, u ? u->written : 0);
		}
		if (ctx->trim_until_ms && ctx->idle.state == PT_STATE_IDLE) {
			/* The trim it asked for uses the container's CPU: not a wake. */
			pt_idle_rebase(&ctx->idle, ctx->sample.cpu_usage_usec, now);
			if (trim_pending(d, ctx, now))
				continue;
			ev = PT_EV_NONE;
		} else {
			ctx->trim_until_ms = 0;
			ev = pt_idle_cpu(&ctx->idle, &ctx->policy.idle, ctx->sample.cpu_usage_usec,
					 now);
		}
		if (ev == PT_EV_WENT_IDLE) {
			ctx->n_idle++;
			ctx->current_at_idle = ctx->sample.memory_current;
			pt_info("%s: idle: quiet for %llu ms (last busy: %s)", ctx->policy.name,
				(unsigned long long)ctx->policy.idle.threshold_ms,
				pt_idle_cause_name(ctx->idle.cause));
			if (d->preload)
				preload_idle(d, ctx, now);
			/* Issued below, or as soon as an action in flight (a scan) is done. */
			ctx->offload_pending = true;
		}
		if (ctx->idle.state == PT_STATE_IDLE && ctx->offload_pending) {
			if (!ctx->busy && !trim_pending(d, ctx, now)) {
				ctx->offload_pending = false;
				submit(d, pt_context_offload(ctx, d->cfg.offload_rate));
			}
		} else if (ev == PT_EV_WOKE) {
			woke(d, ctx, "cpu usage");
		} else if (ctx->idle.state == PT_STATE_IDLE) {
			submit(d, pt_context_settle(ctx));
		} else if (ctx->idle.state == PT_STATE_ACTIVE &&
			   now - ctx->last_scan_ms >= d->cfg.scan_interval_ms) {
			struct pt_action *a = pt_context_scan(ctx, d->scanner, d->kmod_fd,
							      d->cfg.chunk_shift);

			if (a) {
				ctx->last_scan_ms = now;
				submit(d, a);
			}
		}
	}
}

/* --- control socket --------------------------------------------------------------- */

static void ctl_reply(struct pt_daemon *d, int cfd, char *req)
{
	char *buf = NULL, *name;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	struct ucred cred;
	socklen_t cl = sizeof(cred);

	if (!out)
		return;
	req[strcspn(req, "\r\n")] = '\0';
	if (strcmp(req, "status") == 0) {
		fprintf(out, "backend: %s\n", backend_name(d));
		pt_status_table(out, d->ctxs, d->n_ctxs);
	} else if (strcmp(req, "status json") == 0) {
		pt_status_json(out, d->ctxs, d->n_ctxs, backend_name(d), d->bpf_unmatched);
	} else if (strcmp(req, "containers") == 0) {
		for (size_t i = 0; i < d->cfg.n_policies; i++) {
			const struct pt_policy *p = &d->cfg.policies[i];
			int running = 0;

			for (size_t j = 0; j < d->n_ctxs; j++)
				running += strcmp(d->ctxs[j].policy.name, p->name) == 0;
			fprintf(out, "%-16s %-10s running=%d match=%s%s%s  (%s)\n", p->name,
				pt_class_name(p->class), running, p->match_cgroup,
				p->match_cgroup[0] && p->match_id[0] ? "," : "", p->match_id,
				p->source);
		}
	} else if (strncmp(req, "prefetch ", 9) == 0) {
		name = req + 9;
		if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) || cred.uid != 0) {
			fprintf(out, "error: prefetch needs root\n");
		} else {
			int hits = 0;

			for (size_t i = 0; i < d->n_ctxs; i++) {
				struct pt_context *ctx = &d->ctxs[i];

				if (strcmp(ctx->policy.name, name))
					continue;
				hits++;
				if (pt_idle_poke(&ctx->idle, pt_now_ms()) != PT_EV_WOKE) {
					fprintf(out, "%s: not idle (%s): nothing to prefetch\n",
						ctx->relpath, pt_state_name(ctx->idle.state));
					continue;
				}
				fprintf(out, "%s: prefetch of %llu ranges started\n", ctx->relpath,
					(unsigned long long)ctx->n_wake_set);
				submit(d, pt_context_prefetch(ctx, d->cfg.prefetch_rate, d->prefetch_fd));
			}
			if (!hits)
				fprintf(out, "error: no running container named '%s' (see: pagetierctl containers)\n",
					name);
		}
	} else {
		fprintf(out, "error: unknown request '%s'\n", req);
	}
	fclose(out);
	for (size_t off = 0; off < len;) {
		ssize_t n = write(cfd, buf + off, len - off);

		if (n <= 0)
			break;
		off += (size_t)n;
	}
	free(buf);
}

static void ctl_accept(struct pt_daemon *d)
{
	struct timeval tv = { .tv_sec = 1 };
	char req[256];
	ssize_t n;
	int cfd;

	cfd = accept4(d->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		return;
	/* A stuck client must not stall the loop: bounded blocking I/O. */
	setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	n = read(cfd, req, sizeof(req) - 1);
	if (n > 0) {
		req[n] = '\0';
		ctl_reply(d, cfd, req);
	}
	close(cfd);
}

static int ctl_listen(struct pt_daemon *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (mkdir(d->cfg.runtime_dir, 0755) && errno != EEXIST) {
		pt_err("cannot create runtime directory %s: %s", d->cfg.runtime_dir,
		       strerror(errno));
		return -errno;
	}
	if (snprintf(d->sock_path, sizeof(d->sock_path), "%s/ctl.sock", d->cfg.runtime_dir) >=
	    (int)sizeof(sa.sun_path)) {
		pt_err("runtime_dir %s is too long for a socket path", d->cfg.runtime_dir);
		return -ENAMETOOLONG;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(d->sock_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(d->sock_path, 0600) ||
	    listen(fd, 16)) {
		int rc = -errno;

		pt_err("cannot listen on %s: %s", d->sock_path, strerror(-rc));
		close(fd);
		return rc;
	}
	d->lfd = fd;

	snprintf(d->preload_path, sizeof(d->preload_path), "%s/preload.sock", d->cfg.runtime_dir);
	if (pt_preload_server_open(&d->preload, d->preload_path, NULL, preload_optin, d)) {
		pt_warn("cannot listen on %s: preloaded processes run as pass-through",
			d->preload_path);
		d->preload = NULL;
	} else {
		pt_info("preload socket %s (LD_PRELOAD=libpagetier.so with PAGETIER_PRELOAD_SOCK)",
			d->preload_path);
	}
	return 0;
}

/* --- set-up ----------------------------------------------------------------------- */

static void report_backend(struct pt_daemon *d)
{
	char swaps[4096];
	ssize_t n = pt_read_file("/proc/swaps", swaps, sizeof(swaps));
	int lines = 0;

	for (ssize_t i = 0; i < n; i++)
		lines += swaps[i] == '\n';
	d->kmod_fd = pt_kmod_open();
	if (d->kmod_fd >= 0) {
		uint32_t ids[16];
		int nt = pt_kmod_list_tiers(ids, 16);

		if (pt_kmod_features(d->kmod_fd) & PAGETIER_FEAT_PREFETCH)
			d->prefetch_fd = d->kmod_fd;
		if (pt_kmod_features(d->kmod_fd) & PAGETIER_FEAT_EVENTS) {
			d->events_fd = pt_kmod_events_open();
			if (d->events_fd < 0)
				pt_warn("tier event ring unavailable (%s): no wake by tier demand read",
					strerror(-d->events_fd));
		}
		pt_info("backend: pagetier.ko (ABI %d), %d tier device(s), wake prefetch %s",
			PAGETIER_ABI_VERSION, nt < 0 ? 0 : nt,
			d->prefetch_fd >= 0 ? "staged by the tier, then MADV_WILLNEED" :
					      "MADV_WILLNEED");
	} else {
		pt_info("backend: plain swap (%s: %s); per-container tier counters unavailable",
			PT_CTL_DEV, strerror(-d->kmod_fd));
	}
	if (d->use_bpf) {
		char report[512];
		int rc = pt_bpf_open(&d->bpf, report, sizeof(report));

		if (rc) {
			pt_warn("BPF unavailable (%s): wake detection by CPU sampling only", report);
		} else {
			const char *names[8];
			size_t na = pt_bpf_attached(d->bpf, names, 8);

			for (size_t i = 0; i < na; i++)
				d->bpf_swapins |= strncmp(names[i], "swapin=", 7) == 0;
			pt_info("BPF wake sources attached: %s", report);
		}
	}
	d->scanner = d->kmod_fd >= 0 && (pt_kmod_features(d->kmod_fd) & PAGETIER_FEAT_SCAN) ?
		     PT_SCANNER_KMOD : PT_SCANNER_FALLBACK;
	pt_info("access scanner: %s, %llu KiB chunks, every %llu ms", pt_scanner_name(d->scanner),
		(unsigned long long)(1ULL << d->cfg.chunk_shift) >> 10,
		(unsigned long long)d->cfg.scan_interval_ms);
	if (lines <= 1)
		pt_warn("no swap device is active (/proc/swaps is empty): offload cannot move anything; swapon a pagetier tier or another swap device");
}

static void daemon_signals(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGHUP);
}

static int setup_loop(struct pt_daemon *d)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct itimerspec its = { 0 };
	sigset_t mask;

	daemon_signals(&mask);
	d->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	d->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->sfd < 0 || d->tfd < 0 || d->epfd < 0)
		return -errno;
	its.it_value.tv_nsec = 1;
	its.it_interval.tv_sec = (time_t)(d->cfg.poll_interval_ms / 1000);
	its.it_interval.tv_nsec = (long)(d->cfg.poll_interval_ms % 1000) * 1000000L;
	if (timerfd_settime(d->tfd, 0, &its, NULL))
		return -errno;
	ev.data.fd = d->sfd;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->sfd, &ev);
	ev.data.fd = d->tfd;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->tfd, &ev);
	ev.data.fd = d->lfd;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->lfd, &ev);
	ev.data.fd = d->workers.efd;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->workers.efd, &ev);
	if (d->bpf) {
		ev.data.fd = pt_bpf_fd(d->bpf);
		epoll_ctl(d->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	}
	if (d->preload) {
		ev.data.fd = pt_preload_server_fd(d->preload);
		epoll_ctl(d->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	}
	if (d->events_fd >= 0) {
		ev.data.fd = d->events_fd;
		epoll_ctl(d->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	}
	return 0;
}

static void reload(struct pt_daemon *d)
{
	char err[PT_ERRBUF_MAX];
	struct pt_config ncfg;

	if (pt_config_load(&ncfg, d->config_dir, true, err)) {
		pt_err("reload of %s failed; keeping the running configuration:\n%s",
		       d->config_dir, err);
		return;
	}
	/* runtime_dir and cgroup_root take effect on restart only: keep the socket valid. */
	snprintf(ncfg.cgroup_root, sizeof(ncfg.cgroup_root), "%s", d->cfg.cgroup_root);
	snprintf(ncfg.runtime_dir, sizeof(ncfg.runtime_dir), "%s", d->cfg.runtime_dir);
	pt_config_free(&d->cfg);
	d->cfg = ncfg;
	pt_log_set_level(d->cfg.log_level);
	pt_info("reloaded %s: %zu container policies", d->config_dir, d->cfg.n_policies);
	rescan(d);
}

static void handle_signal(struct pt_daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP)
			reload(d);
		else
			d->running = false;
	}
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: pagetierd [--config-dir DIR] [--check-config] [--log-level LEVEL] [--no-mlock]\n"
		"  --config-dir DIR   configuration directory (default /etc/pagetier)\n"
		"  --check-config     validate the configuration and exit (0: valid)\n"
		"  --log-level LEVEL  error, warn, info or debug (overrides the config)\n"
		"  --no-mlock         do not lock the daemon in memory (for sanitizer builds)\n"
		"  --no-bpf           do not load the BPF wake sources (CPU sampling only)\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config-dir", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "no-mlock", no_argument, NULL, 'M' },
		{ "no-bpf", no_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct pt_daemon d = { .config_dir = "/etc/pagetier", .kmod_fd = -1, .prefetch_fd = -1,
			      .events_fd = -1, .lfd = -1 };
	const char *level_arg = NULL;
	bool check_only = false, lock = true;
	char err[PT_ERRBUF_MAX];
	enum pt_log_level lvl;
	sigset_t sigs;
	int c, rc;

	d.use_bpf = true;
	while ((c = getopt_long(argc, argv, "c:Cl:MBh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			d.config_dir = optarg;
			break;
		case 'C':
			check_only = true;
			break;
		case 'l':
			level_arg = optarg;
			break;
		case 'M':
			lock = false;
			break;
		case 'B':
			d.use_bpf = false;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (level_arg && pt_log_parse_level(level_arg, &lvl)) {
		fprintf(stderr, "pagetierd: --log-level must be error, warn, info or debug\n");
		return 2;
	}
	rc = pt_config_load(&d.cfg, d.config_dir, true, err);
	if (rc) {
		fprintf(stderr, "pagetierd: invalid configuration in %s:\n%s", d.config_dir, err);
		return 1;
	}
	if (check_only) {
		printf("%s: ok, %zu container policies\n", d.config_dir, d.cfg.n_policies);
		for (size_t i = 0; i < d.cfg.n_policies; i++)
			printf("  %s: %s, match %s%s, idle after %llu ms (%s)\n",
			       d.cfg.policies[i].name, pt_class_name(d.cfg.policies[i].class),
			       d.cfg.policies[i].match_cgroup, d.cfg.policies[i].match_id,
			       (unsigned long long)d.cfg.policies[i].idle.threshold_ms,
			       d.cfg.policies[i].source);
		pt_config_free(&d.cfg);
		return 0;
	}
	pt_log_set_level(level_arg ? lvl : d.cfg.log_level);
	/* Never let the daemon that manages swap be swapped itself. */
	if (lock && mlockall(MCL_CURRENT | MCL_FUTURE))
		pt_warn("mlockall failed (%s): the daemon may be paged out under pressure",
			strerror(errno));
	/*
	 * Signals are read from a signalfd by the loop: block them before any worker thread
	 * exists, so that threads inherit the mask and no signal is delivered to a worker.
	 */
	daemon_signals(&sigs);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	report_backend(&d);
	rc = ctl_listen(&d);
	if (!rc)
		rc = pt_workers_start(&d.workers, PT_WORKER_THREADS);
	if (!rc)
		rc = setup_loop(&d);
	if (rc) {
		pt_err("start-up failed: %s", strerror(-rc));
		return 1;
	}
	pt_info("pagetierd started: %zu container policies from %s, polling every %llu ms, control socket %s",
		d.cfg.n_policies, d.config_dir, (unsigned long long)d.cfg.poll_interval_ms,
		d.sock_path);
	d.running = true;
	while (d.running) {
		struct epoll_event evs[8];
		int n = epoll_wait(d.epfd, evs, 8, -1);

		if (n < 0 && errno != EINTR) {
			pt_err("epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == d.sfd) {
				handle_signal(&d);
			} else if (fd == d.tfd) {
				uint64_t expirations;

				if (read(d.tfd, &expirations, sizeof(expirations)) > 0)
					tick(&d);
			} else if (fd == d.lfd) {
				ctl_accept(&d);
			} else if (fd == d.workers.efd) {
				pt_workers_reap(&d.workers, &d);
			} else if (fd == d.events_fd) {
				uint64_t lost = d.tier_events_lost;

				pt_kmod_events_read(d.events_fd, on_tier_event, &d,
						    &d.tier_events_lost);
				if (d.tier_events_lost != lost)
					pt_debug("tier event ring: %llu records lost so far",
						 (unsigned long long)d.tier_events_lost);
			} else if (d.bpf && fd == pt_bpf_fd(d.bpf)) {
				pt_bpf_poll(d.bpf, on_bpf_event, &d);
			} else if (d.preload && fd == pt_preload_server_fd(d.preload)) {
				pt_preload_server_accept(d.preload);
				pt_preload_server_drain(d.preload, on_preload_record, &d);
			}
		}
	}
	pt_info("pagetierd stopping: %zu contexts released; offloaded memory stays in swap and returns on demand",
		d.n_ctxs);
	/* Actions in flight finish (an interrupted MADV_PAGEOUT is harmless, but wait). */
	pt_workers_stop(&d.workers, &d);
	if (d.bpf)
		pt_bpf_close(d.bpf);
	if (d.preload)
		pt_preload_server_close(d.preload);
	for (size_t i = 0; i < d.n_ctxs; i++)
		pt_context_release(&d.ctxs[i]);
	free(d.ctxs);
	free(d.usage);
	unlink(d.sock_path);
	pt_config_free(&d.cfg);
	if (d.events_fd >= 0)
		close(d.events_fd);
	if (d.kmod_fd >= 0)
		close(d.kmod_fd);
	return 0;
}
