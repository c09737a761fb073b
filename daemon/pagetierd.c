// SPDX-License-Identifier: GPL-2.0
/*
 * pagetierd: start-up and the event loop. The decisions are the manager's (manager.c):
 * one memory context per opted-in cgroup, offloaded to swap (a pagetier.ko tier where
 * there is one) while idle or cold, and prefetched back when it wakes.
 *
 * A single-threaded event loop: a timerfd drives sampling, a signalfd handles
 * SIGTERM/SIGINT (stop) and SIGHUP (reload), a unix socket serves pagetierctl (ctl.c), and
 * the BPF ring, the tier event ring and the preload socket bring signals; blocking actions
 * run in a small worker pool whose completions come back through an eventfd. With
 * metrics_listen, libmicrohttpd serves Prometheus metrics from the same loop (its epoll
 * descriptor is watched like the others: metrics_http.h).
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "advise_spawner.h"
#include "bpf_loader.h"
#include "config.h"
#include "ctl.h"
#include "kmod_client.h"
#include "log.h"
#include "manager.h"
#include "metrics.h"
#include "metrics_http.h"
#include "nvme.h"
#include "pidfd.h"
#include "preload_server.h"
#include "swap_fence.h"
#include "worker.h"

/*
 * Threads for blocking actions. The wake prefetch (a container waits for it) has a pool of
 * its own, enough to wake two containers at once on a small host, so that it never queues
 * behind background work; offload, scans, reclaim and the rest of a wake run in a pool at
 * PT_BACKGROUND_NICE, so that their CPU time (MADV_PAGEOUT unmaps and writes, and
 * MADV_WILLNEED swaps in, in the caller's context) yields to the containers' own threads,
 * a critical service's first.
 */
#define PT_WORKER_THREADS 2
#define PT_BACKGROUND_THREADS 2
#define PT_BACKGROUND_NICE 19
/* A step of the stop this long is named in the log (systemd's default stop timeout: 90 s). */
#define PT_STOP_STEP_SLOW_MS 1000

struct pt_daemon {
	struct pt_manager m;
	const char *config_dir;
	int events_fd;				/* the tier event ring, -1 if none */
	int epfd, tfd, sfd, lfd;
	struct pt_workers workers;		/* wake prefetch */
	struct pt_workers background;		/* everything else, niced */
	struct pt_bpf *bpf;			/* NULL: BPF unavailable */
	uint64_t bpf_drops_seen;		/* its ring's drops at the last tick */
	struct pt_metrics_http *http;		/* NULL: no metrics_listen, or it failed */
	struct pt_nvme nvme;			/* the drives under the tiers (libnvme) */
	char preload_path[PATH_MAX];
	char sock_path[PATH_MAX];
	bool use_bpf;
	bool running;
};

/* --- the manager's hooks ---------------------------------------------------------- */

static void action_done(struct pt_job *job, void *arg)
{
	struct pt_daemon *d = arg;

	pt_manager_action_done(&d->m, (struct pt_action *)job);
}

static void submit_action(void *arg, struct pt_action *a)
{
	struct pt_daemon *d = arg;

	a->job.done = action_done;
	/*
	 * The rest of a wake asked for by the share of its demand reads is speculative: the
	 * container already runs, and it is a long pass (hundreds of MiB) whose swap-ins cost
	 * CPU its own requests (and its neighbours') need more. It runs in the background
	 * pool, behind them. One asked for by the container's wait for memory is what its
	 * requests wait on: at nice 19 behind five loaded servers, PostgreSQL's 176 MiB took
	 * 23 s (real_servers, 6.1), its requests reading it a page at a time meanwhile. That
	 * one runs as the wake's prefetch does.
	 */
	pt_workers_submit(a->kind == PT_JOB_PREFETCH && (!a->rest || a->rest_waited) ?
			  &d->workers : &d->background, &a->job);
}

static bool cancel_action(void *arg, struct pt_action *a)
{
	struct pt_daemon *d = arg;

	return pt_workers_cancel(&d->background, &a->job) ||
	       pt_workers_cancel(&d->workers, &a->job);
}

static bool boost_action(void *arg, struct pt_action *a)
{
	struct pt_daemon *d = arg;

	return pt_workers_boost(&d->background, &a->job);
}

static void track_cgroup(void *arg, uint64_t id, bool on)
{
	struct pt_daemon *d = arg;

	if (!d->bpf)
		return;
	if (on && pt_bpf_add_cgroup(d->bpf, id))
		pt_warn("cannot add cgroup %llu to the BPF filter: no wake by packet or refaults for it",
			(unsigned long long)id);
	else if (!on)
		pt_bpf_del_cgroup(d->bpf, id);
}

static void wake_events(void *arg, uint64_t id, bool on)
{
	struct pt_daemon *d = arg;

	if (d->bpf && pt_bpf_set_wake(d->bpf, id, on) && on)
		pt_warn("cgroup %llu: its BPF events cannot be made to wake the daemon: its wake waits for the next tick",
			(unsigned long long)id);
}

static int on_bpf_event(const struct pt_bpf_event *e, void *arg)
{
	struct pt_daemon *d = arg;

	pt_manager_bpf_event(&d->m, e->cgroup_id, e->type, e->flags, e->time_ns);
	return 0;
}

static void on_tier_event(const struct pagetier_event *e, void *arg)
{
	pt_manager_tier_event(arg, e);
}

/* The tier's event ring (swap-ins of offloaded pages), without blocking. */
static void read_tier_events(struct pt_daemon *d)
{
	uint64_t lost = d->m.tier_events_lost;

	pt_kmod_events_read(d->events_fd, on_tier_event, &d->m, &d->m.tier_events_lost);
	if (d->m.tier_events_lost != lost)
		pt_debug("tier event ring: %llu records lost so far",
			 (unsigned long long)d->m.tier_events_lost);
}

/* The wake sources' rings, read between the samples of a long tick (manager.h). */
static void poll_wake_sources(void *arg)
{
	struct pt_daemon *d = arg;

	if (d->bpf)
		pt_bpf_poll(d->bpf, on_bpf_event, d);
	if (d->events_fd >= 0)
		read_tier_events(d);
}

static bool preload_optin(pid_t pid, const char *cgroup, void *arg)
{
	return pt_manager_preload_optin(arg, pid, cgroup);
}

static void on_preload_record(pid_t pid, const char *cgroup, const struct pt_preload_event *ev,
			      void *arg)
{
	(void)pid;
	pt_manager_preload_record(arg, cgroup, ev);
}

/* --- control socket --------------------------------------------------------------- */

static void ctl_accept(struct pt_daemon *d)
{
	struct timeval tv = { .tv_sec = 1 };
	struct ucred cred = { .uid = (uid_t)-1 };
	socklen_t cl = sizeof(cred);
	char req[256], *buf = NULL;
	size_t len = 0;
	FILE *out;
	ssize_t n;
	int cfd;

	cfd = accept4(d->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		return;
	/* A stuck client must not stall the loop: bounded blocking I/O. */
	setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &cl);
	n = read(cfd, req, sizeof(req) - 1);
	out = n > 0 ? open_memstream(&buf, &len) : NULL;
	if (out) {
		req[n] = '\0';
		pt_ctl_answer(&d->m, req, cred.uid, out);
		fclose(out);
		for (size_t off = 0; off < len;) {
			ssize_t w = write(cfd, buf + off, len - off);

			if (w <= 0)
				break;
			off += (size_t)w;
		}
		free(buf);
	}
	close(cfd);
}

/* The control socket, runtime_dir/ctl.sock (0600). */
static int ctl_listen(struct pt_daemon *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *dir = d->m.cfg.runtime_dir;
	int fd;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		pt_err("cannot create runtime directory %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (snprintf(d->sock_path, sizeof(d->sock_path), "%s/ctl.sock", dir) >=
	    (int)sizeof(sa.sun_path)) {
		pt_err("runtime_dir %s is too long for a socket path", dir);
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
	return 0;
}

/* The preload socket, runtime_dir/preload.sock; without it the library is a pass-through. */
static void preload_listen(struct pt_daemon *d)
{
	snprintf(d->preload_path, sizeof(d->preload_path), "%s/preload.sock",
		 d->m.cfg.runtime_dir);
	if (pt_preload_server_open(&d->m.preload, d->preload_path, NULL, preload_optin, &d->m)) {
		pt_warn("cannot listen on %s: preloaded processes run as pass-through",
			d->preload_path);
		d->m.preload = NULL;
	} else {
		pt_info("preload socket %s (LD_PRELOAD=libpagetier.so with PAGETIER_PRELOAD_SOCK)",
			d->preload_path);
	}
}

/* --- Prometheus metrics ----------------------------------------------------------- */

/* GET /metrics, on the loop thread: what the manager holds, and what only the daemon has. */
static void metrics_body(FILE *out, void *arg)
{
	struct pt_daemon *d = arg;
	struct pt_metrics_daemon md = { 0 };
	struct pt_tier_stats *tiers = NULL;
	char stat[2048];
	int nt;

	if (pt_read_file("/proc/self/stat", stat, sizeof(stat)) > 0)
		pt_proc_stat_parse(stat, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE), &md);
	pt_meminfo_read("/proc/meminfo", &md.host);	/* unreadable: no host memory */
	if (d->bpf) {
		md.have_bpf = true;
		md.bpf_drops = pt_bpf_drops(d->bpf);
		for (unsigned int t = 1; t < PT_BPF_EV_MAX; t++)
			for (unsigned int s = 0; s < PT_BPF_STAT_NR; s++)
				md.bpf_stat[t][s] = pt_bpf_stat(d->bpf, t, s);
	}
	if (d->m.preload) {
		md.have_preload = true;
		pt_preload_server_stats(d->m.preload, &md.preload);
	}
	nt = pt_tier_stats_read(d->m.sysblock_path, &tiers);
	pt_metrics_render(out, &d->m, tiers, nt > 0 ? (size_t)nt : 0, &md);
	free(tiers);
}

/* metrics_listen: a daemon that cannot serve metrics still manages memory, and says so. */
static void metrics_listen(struct pt_daemon *d)
{
	const char *addr = d->m.cfg.metrics_listen;

	if (!addr[0] || pt_metrics_http_start(&d->http, addr, metrics_body, d))
		return;
	pt_info("Prometheus metrics on http://%s/metrics", addr);
}

/* --- set-up ----------------------------------------------------------------------- */

/* pagetier.ko: its control device, event ring and scanner, when it is loaded. */
static void open_module(struct pt_daemon *d)
{
	struct pt_manager *m = &d->m;

	m->kmod_fd = pt_kmod_open();
	if (m->kmod_fd < 0) {
		pt_info("backend: plain swap (%s: %s); per-container tier counters unavailable",
			PT_CTL_DEV, strerror(-m->kmod_fd));
		return;
	}
	uint64_t feat = pt_kmod_features(m->kmod_fd);
	uint32_t ids[16];
	int nt = pt_kmod_list_tiers(ids, 16);

	if (feat & PAGETIER_FEAT_PREFETCH)
		m->prefetch_fd = m->kmod_fd;
	if (feat & PAGETIER_FEAT_EVENTS) {
		d->events_fd = pt_kmod_events_open();
		if (d->events_fd < 0)
			pt_warn("tier event ring unavailable (%s): no wake by tier demand read",
				strerror(-d->events_fd));
	}
	if (feat & PAGETIER_FEAT_SCAN)
		m->scanner = PT_SCANNER_KMOD;
	pt_info("backend: pagetier.ko (ABI %d), %d tier device(s), wake prefetch %s",
		PAGETIER_ABI_VERSION, nt < 0 ? 0 : nt,
		m->prefetch_fd >= 0 ? "staged by the tier, then MADV_WILLNEED" : "MADV_WILLNEED");
}

/* The BPF wake sources (packets, refaults); without them, CPU sampling only. */
static void open_bpf(struct pt_daemon *d)
{
	char report[512];
	const char *names[8];
	bool wakeup = false, wakeup_new = false, attach = false;
	size_t na;

	if (!d->use_bpf)
		return;
	if (pt_bpf_open(&d->bpf, report, sizeof(report))) {
		pt_warn("BPF unavailable (%s): wake detection by CPU sampling only", report);
		d->bpf = NULL;
		return;
	}
	na = pt_bpf_attached(d->bpf, names, 8);
	for (size_t i = 0; i < na; i++) {
		d->m.bpf_swapins |= strncmp(names[i], "swapin=", 7) == 0;
		wakeup |= strncmp(names[i], "wakeup=", 7) == 0;
		wakeup_new |= strncmp(names[i], "wakeup_new=", 11) == 0;
		attach |= strncmp(names[i], "attach=", 7) == 0;
	}
	/* A task starts using a cgroup's CPU by a wake, a first run, or a move into it. */
	d->m.bpf_wakeups = wakeup && wakeup_new && attach;
	pt_info("BPF wake sources attached: %s", report);
}

static void check_swap(void)
{
	char swaps[4096];
	ssize_t n = pt_read_file("/proc/swaps", swaps, sizeof(swaps));
	int lines = 0;

	for (ssize_t i = 0; i < n; i++)
		lines += swaps[i] == '\n';
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

static void watch(struct pt_daemon *d, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (fd >= 0)
		epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int setup_loop(struct pt_daemon *d)
{
	struct itimerspec its = { 0 };
	sigset_t mask;

	daemon_signals(&mask);
	d->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	d->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->sfd < 0 || d->tfd < 0 || d->epfd < 0)
		return -errno;
	its.it_value.tv_nsec = 1;
	its.it_interval.tv_sec = (time_t)(d->m.cfg.poll_interval_ms / 1000);
	its.it_interval.tv_nsec = (long)(d->m.cfg.poll_interval_ms % 1000) * 1000000L;
	if (timerfd_settime(d->tfd, 0, &its, NULL))
		return -errno;
	watch(d, d->sfd);
	watch(d, d->tfd);
	watch(d, d->lfd);
	watch(d, d->workers.efd);
	watch(d, d->background.efd);
	watch(d, d->bpf ? pt_bpf_fd(d->bpf) : -1);
	watch(d, d->m.preload ? pt_preload_server_fd(d->m.preload) : -1);
	watch(d, d->events_fd);
	watch(d, d->m.watch.fd);
	watch(d, d->http ? pt_metrics_http_fd(d->http) : -1);
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
	/* Like cgroup_root and runtime_dir, metrics_listen takes effect on restart. */
	if (strcmp(ncfg.metrics_listen, d->m.cfg.metrics_listen))
		pt_warn("metrics_listen changed from '%s' to '%s': takes effect on restart; still '%s'",
			d->m.cfg.metrics_listen, ncfg.metrics_listen, d->m.cfg.metrics_listen);
	snprintf(ncfg.metrics_listen, sizeof(ncfg.metrics_listen), "%s", d->m.cfg.metrics_listen);
	pt_manager_reload(&d->m, &ncfg);
	pt_log_set_level(d->m.cfg.log_level);
	pt_info("reloaded %s: %zu container policies", d->config_dir, d->m.cfg.n_policies);
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

static void dispatch(struct pt_daemon *d, int fd)
{
	if (fd == d->sfd) {
		handle_signal(d);
	} else if (fd == d->tfd) {
		uint64_t expirations;

		if (read(d->tfd, &expirations, sizeof(expirations)) > 0) {
			/* The events of active contexts wait in the ring (they do not wake us). */
			if (d->bpf) {
				uint64_t drops;

				pt_bpf_poll(d->bpf, on_bpf_event, d);
				drops = pt_bpf_drops(d->bpf);

				d->m.events_lost = drops != d->bpf_drops_seen;
				d->bpf_drops_seen = drops;
			}
			/* The drives' wear level first: this tick's offload obeys it. */
			pt_nvme_poll(&d->nvme, &d->m.wear, &d->m.cfg.write_budget, pt_now_ms());
			pt_manager_tick(&d->m, pt_now_ms());
			/* Rings have no per-record doorbell: drain them every tick as well. */
			if (d->m.preload)
				pt_preload_server_drain(d->m.preload, on_preload_record, &d->m);
		}
	} else if (fd == d->lfd) {
		ctl_accept(d);
	} else if (fd == d->workers.efd) {
		pt_workers_reap(&d->workers, d);
	} else if (fd == d->background.efd) {
		pt_workers_reap(&d->background, d);
	} else if (fd == d->events_fd) {
		read_tier_events(d);
	} else if (fd == d->m.watch.fd) {
		/* Only marks the walk due: the next tick walks, once for a burst of mkdirs. */
		pt_cgroup_watch_read(&d->m.watch);
	} else if (d->bpf && fd == pt_bpf_fd(d->bpf)) {
		pt_bpf_poll(d->bpf, on_bpf_event, d);
	} else if (d->m.preload && fd == pt_preload_server_fd(d->m.preload)) {
		pt_preload_server_accept(d->m.preload);
		pt_preload_server_drain(d->m.preload, on_preload_record, &d->m);
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

static int check_config(const char *dir, struct pt_config *cfg)
{
	printf("%s: ok, %zu container policies\n", dir, cfg->n_policies);
	for (size_t i = 0; i < cfg->n_policies; i++)
		printf("  %s: %s, match %s%s, idle after %llu ms (%s)\n", cfg->policies[i].name,
		       pt_class_name(cfg->policies[i].class), cfg->policies[i].match_cgroup,
		       cfg->policies[i].match_id,
		       (unsigned long long)cfg->policies[i].idle.threshold_ms,
		       cfg->policies[i].source);
	pt_config_free(cfg);
	return 0;
}

/*
 * Locked memory is RAM taken from the containers, so the daemon locks what it uses and no
 * more. mlockall(MCL_FUTURE) alone populates and locks every mapping it makes whole: glibc's
 * default thread stacks are RLIMIT_STACK (8 MiB each, for four workers and the metrics
 * thread), its dynamic mmap threshold, raised by the first large buffer freed (libbpf's
 * parse of the 5 MiB vmlinux BTF, once per probe candidate), put the later parses on the
 * heap, which then stayed grown, and every library mapped (libmicrohttpd brings gnutls and
 * libcrypto) was locked whole. At start-up with no container that was 81 MiB resident
 * (host, 6.18). Now MCL_ONFAULT locks a page when it is first touched, stacks are 1 MiB
 * (the deepest frame is 16 KiB by -fstack-usage; the recursive cgroup walk runs in the main
 * thread), and buffers of PT_MMAP_THRESHOLD or more are mapped and unmapped when freed:
 * 7.8 MiB resident.
 */
#define PT_THREAD_STACK		(1U << 20)
#define PT_MMAP_THRESHOLD	(4U << 20)
#define PT_TRIM_THRESHOLD	(8U << 20)

static void bound_locked_memory(void)
{
	pthread_attr_t attr;

	if (!pthread_attr_init(&attr)) {
		if (pthread_attr_setstacksize(&attr, PT_THREAD_STACK) ||
		    pthread_setattr_default_np(&attr))
			pt_warn("cannot bound thread stacks to %u KiB: each thread locks what it touches of RLIMIT_STACK",
				PT_THREAD_STACK >> 10);
		pthread_attr_destroy(&attr);
	}
	/* Fixed values also turn off glibc's dynamic threshold. */
	if (!mallopt(M_MMAP_THRESHOLD, PT_MMAP_THRESHOLD) ||
	    !mallopt(M_TRIM_THRESHOLD, PT_TRIM_THRESHOLD))
		pt_warn("mallopt failed: freed buffers may stay locked on the heap");
}

/*
 * The processes of opted-in containers are held by pidfds (their hotness slots, wake sets,
 * mapped-file sets), so that advice never reaches another process that got the number;
 * clients hold a socket each, and every cgroup file read is a descriptor for a moment. The
 * soft limit goes up to the hard one, and a quarter of it is what the pidfds may take:
 * past that, processes are named by pid and start time (pidfd.h), so that a container
 * forking thousands of processes never takes the descriptors the rest of the daemon needs.
 */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	int quarter;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl)) {
			pt_warn("cannot raise the descriptor limit (%s): with many containers, some processes go unmanaged",
				strerror(errno));
			getrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	quarter = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur / 4 > INT_MAX ?
		  INT_MAX : (int)(rl.rlim_cur / 4);
	pt_pidfd_set_limit(quarter);
	/*
	 * Two per container (cpu.stat, memory.current) kept open, and two more (memory.stat,
	 * memory.swap.current) within half of that: a quarter as well.
	 */
	pt_cgroup_files_set_limit(quarter);
	pt_info("descriptors: at most %llu, of which %d pidfds pinning processes and %d cgroup files kept open",
		(unsigned long long)rl.rlim_cur, quarter, quarter);
}

/*
 * One step of the stop is done: a slow one is named, so that an operator whose service
 * manager waited (or gave up and killed) sees where the time went. Returns now.
 */
static uint64_t stop_step(const char *what, uint64_t since)
{
	uint64_t now = pt_now_ms();

	if (now - since >= PT_STOP_STEP_SLOW_MS)
		pt_warn("stopping: %s took %llu ms", what, (unsigned long long)(now - since));
	return now;
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
	struct pt_daemon d = { .config_dir = "/etc/pagetier", .events_fd = -1, .lfd = -1,
			       .use_bpf = true };
	const char *level_arg = NULL;
	bool check_only = false, lock = true;
	char err[PT_ERRBUF_MAX];
	struct pt_config cfg;
	uint64_t t_stop, t;
	enum pt_log_level lvl;
	sigset_t sigs;
	int c, rc;

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
	rc = pt_config_load(&cfg, d.config_dir, true, err);
	if (rc) {
		fprintf(stderr, "pagetierd: invalid configuration in %s:\n%s", d.config_dir, err);
		return 1;
	}
	if (check_only)
		return check_config(d.config_dir, &cfg);
	pt_manager_init(&d.m, &cfg);
	d.m.submit = submit_action;
	d.m.cancel = cancel_action;
	d.m.boost = boost_action;
	d.m.submit_arg = &d;
	d.m.track = track_cgroup;
	d.m.wake_events = wake_events;
	d.m.track_arg = &d;
	d.m.poll_events = poll_wake_sources;
	d.m.poll_arg = &d;
	pt_nvme_init(&d.nvme);
	pt_log_set_level(level_arg ? lvl : d.m.cfg.log_level);
	/*
	 * The readers of a wake's mapped files are forked from a process forked now, while
	 * pagetierd is small and has one thread, not from pagetierd itself (advise_spawner.h).
	 */
	rc = pt_spawner_start(lock);
	if (rc)
		pt_warn("readahead spawner: %s; wakes fork their file readers from pagetierd",
			strerror(-rc));
	/* Never let the daemon that manages swap be swapped itself; lock only what it touches. */
	bound_locked_memory();
	if (lock && mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT))
		pt_warn("mlockall failed (%s): the daemon may be paged out under pressure",
			strerror(errno));
	raise_fd_limit();
	/*
	 * Signals are read from a signalfd by the loop: block them before any worker thread
	 * exists, so that threads inherit the mask and no signal is delivered to a worker.
	 */
	daemon_signals(&sigs);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	open_module(&d);
	open_bpf(&d);
	/*
	 * Loading the probes freed what libbpf allocated to parse the object and the kernel's
	 * BTF; the heap keeps it locked unless given back (0.5 MiB of RSS on a 6.18 host).
	 */
	malloc_trim(0);
	pt_info("access scanner: %s, %llu KiB chunks, every %llu ms",
		pt_scanner_name(d.m.scanner), (unsigned long long)(1ULL << d.m.cfg.chunk_shift) >> 10,
		(unsigned long long)d.m.cfg.scan_interval_ms);
	check_swap();
	/* The cgroup tree is walked when it changes, not every second (cgroup_watch.h). */
	if (!pt_cgroup_watch_open(&d.m.watch))
		pt_info("cgroup tree: walked when inotify reports a cgroup created, removed or renamed");
	rc = ctl_listen(&d);
	if (!rc) {
		preload_listen(&d);
		metrics_listen(&d);
		rc = pt_workers_start(&d.workers, PT_WORKER_THREADS);
		if (!rc)
			rc = pt_workers_start_nice(&d.background, PT_BACKGROUND_THREADS,
						   PT_BACKGROUND_NICE);
	}
	if (!rc)
		rc = setup_loop(&d);
	if (rc) {
		pt_err("start-up failed: %s", strerror(-rc));
		return 1;
	}
	/*
	 * Protection a pagetierd that did not stop cleanly left on the critical containers'
	 * cgroups goes back to the operator's values before anything is tracked.
	 */
	snprintf(d.m.protect_path.state, sizeof(d.m.protect_path.state), "%s/protection",
		 d.m.cfg.runtime_dir);
	pt_protect_path_recover(&d.m.protect_path, d.m.cfg.cgroup_root);
	/* The same for a swap cache drop's fence on memory.swap.max (swap_fence.h). */
	pt_swap_fence_recover(d.m.cfg.runtime_dir);
	pt_swap_fence_setup("/sys/kernel/mm/lru_gen/enabled", d.m.cfg.runtime_dir);
	/*
	 * The containers before the first question: a status asked right after start (the
	 * control socket already listens; its connections wait for the loop) lists them.
	 */
	d.m.last_rescan_ms = pt_now_ms();
	pt_manager_rescan(&d.m);
	pt_info("pagetierd started: %zu container policies from %s, polling every %llu ms, control socket %s",
		d.m.cfg.n_policies, d.config_dir, (unsigned long long)d.m.cfg.poll_interval_ms,
		d.sock_path);
	d.running = true;
	while (d.running) {
		struct epoll_event evs[8];
		/* libmicrohttpd may have work due without an event (timeouts, buffered data). */
		int timeout = d.http ? pt_metrics_http_timeout(d.http) : -1;
		bool http_due = timeout >= 0;
		int n = epoll_wait(d.epfd, evs, 8, timeout);

		if (n < 0 && errno != EINTR) {
			pt_err("epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			if (d.http && evs[i].data.fd == pt_metrics_http_fd(d.http))
				http_due = true;
			else
				dispatch(&d, evs[i].data.fd);
		}
		if (http_due)
			pt_metrics_http_run(d.http);
	}
	pt_info("pagetierd stopping: %zu contexts released; offloaded memory stays in swap and returns on demand",
		d.m.n_ctxs);
	t_stop = t = pt_now_ms();
	/*
	 * The operator's memory.low and memory.min first: they are the one thing pagetierd
	 * changed that outlives it, and nothing below needs them. A stop that a service
	 * manager's timeout cuts short later leaves nothing for the next start to put back.
	 */
	pt_protect_path_release(&d.m.protect_path, d.m.cfg.cgroup_root);
	t = stop_step("protection put back", t);
	/* Actions in flight finish (an interrupted MADV_PAGEOUT is harmless, but wait). */
	pt_workers_stop(&d.workers, &d);
	pt_workers_stop(&d.background, &d);
	pt_spawner_stop();
	t = stop_step("the jobs in flight", t);
	pt_metrics_http_stop(d.http);
	pt_nvme_close(&d.nvme, &d.m.wear);
	t = stop_step("the metrics server and the wear record", t);
	if (d.bpf)
		pt_bpf_close(d.bpf);
	t = stop_step("detaching the BPF programs", t);
	if (d.m.preload)
		pt_preload_server_close(d.m.preload);
	unlink(d.sock_path);
	if (d.events_fd >= 0)
		close(d.events_fd);
	if (d.m.kmod_fd >= 0)
		close(d.m.kmod_fd);
	t = stop_step("the preload server and pagetier.ko", t);
	pt_manager_free(&d.m);
	stop_step("the contexts", t);
	pt_info("pagetierd stopped in %llu ms", (unsigned long long)(pt_now_ms() - t_stop));
	return 0;
}
