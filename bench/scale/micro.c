// SPDX-License-Identifier: GPL-2.0
/*
 * pagetierd's policy code at scale, at native speed (issue 15): the daemon's own library
 * (build/obj/libptd.a) driven over N synthetic memory contexts, N = 300, 1,000, 3,000 by
 * default, and what each operation costs per call, per context and per tick.
 *
 * Part 1, the hotness models (hotness.h, mq.h) and the global victim order (victims.h):
 * each context tracks 64 MiB to 1 GiB (log-uniform, the same sizes for context i whatever
 * N) in 64 KiB chunks, split over 1 to 3 processes; every epoch 80% of a 10% hot set and 1%
 * of the rest are accessed (--hot-pct, --cold-pct). After a bulk load and --warm epochs:
 *   apply     pt_hot_apply_scans() of one epoch's scan (every present chunk listed, as the
 *             scanners report them; building the scan is not timed)
 *   cold      pt_hot_cold_chunks(), as a cold offload asks it (at most 2,048 chunks: 128M
 *             offload_rate x 1 s scan_interval)
 *   wake set  pt_hot_record_wake_set() and pt_hot_ranges() of it (the prefetch's ranges),
 *             what going idle and waking cost; keep set: pt_hot_keep_set()
 *   victims   pt_victims_pick() over all N contexts (half of them idle, 128 MiB evictable
 *             each), 1 GiB needed, 4,096 victims at most: one watermark pass
 *   memory    malloc'd bytes (mallinfo2: arena + mmapped) of the N models, per tracked GiB
 * Every context is fully resident (nothing evicted yet): the largest candidate sets. Each
 * figure is the best of several timed passes (--epochs for apply, REPS for the rest): the
 * host may be busy, and what is measured is the code's cost.
 *
 * Part 2, the manager's tick over a fake cgroup tree (tmpfs: /dev/shm, else $TMPDIR) of N
 * opted-in cgroups, every context idle and settled, nothing to do: pt_manager_tick() as the
 * daemon calls it every poll_interval (500 ms; memory.stat every other tick, scan_interval
 * 1 s) and pt_manager_rescan() (the cgroup walk, once a second): what N idle containers
 * cost the daemon. Native file reads on tmpfs, not cgroupfs (whose cpu.stat and memory.stat
 * flush the kernel's per-CPU statistics): a lower bound of the real reads. Also one BPF
 * event's dispatch (pt_manager_bpf_event), which finds its context by cgroup id.
 *
 * Each total is fitted to cost ~ size^b (size: tracked chunks for the models, N for the
 * manager) from the smallest N to the largest and over the last step: b above
 * SUPERLINEAR_EXP either way is flagged SUPER-LINEAR; a cost per operation (a BPF event's
 * dispatch) whose b is over SUPERLINEAR_EXP - 1 is flagged GROWS WITH N.
 *
 *   micro [--sizes 300,1000,3000] [--warm 8] [--epochs 3] [--hot-pct 10] [--cold-pct 1]
 *         [--no-models] [--no-manager] [--no-kept-files] [--json FILE]
 *   --no-kept-files: each sample opens and closes its cgroup files (pagetierd before it
 *                    kept them open, daemon/cgroup.h)
 *   micro --calibrate    a fixed small workload (about 0.2 s natively) printed as one JSON
 *                        line: run on the host and in the guest, the ratio of the two is
 *                        the emulation's slowdown (bench/scale/guest.py)
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "context.h"
#include "hotness.h"
#include "log.h"
#include "manager.h"
#include "victims.h"

#define CHUNK_SHIFT		16
#define MIN_CHUNKS		1024U	/* 64 MiB */
#define MAX_CHUNKS		16384U	/* 1 GiB */
#define MAX_PROCS		3
#define COLD_EPOCHS		4
#define COLD_MAX		2048	/* offload_rate 128M x scan_interval 1 s / 64 KiB */
#define WAKE_RECENT		5	/* PT_WAKE_RECENT_EPOCHS */
#define VICTIM_NEED		(1ULL << 30)
#define VICTIM_MAX		4096	/* PT_WATERMARK_MAX_VICTIMS */
#define VICTIM_EVICTABLE	(128ULL << 20)
#define POLL_MS			500
#define SCAN_MS			1000
#define SUPERLINEAR_EXP		1.15
#define MAX_SIZES		8
#define REPS			3	/* timed passes: the best counts */

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* A uniform double in [0, 1) from a hash. */
static double unit(uint64_t h)
{
	return (double)(h >> 11) / 9007199254740992.0;
}

/* --- part 1: synthetic contexts ------------------------------------------------------ */

struct synth {
	struct pt_hot hot;
	uint32_t chunks;		/* tracked */
	int nproc;
	uint32_t per_proc[MAX_PROCS];
};

struct params {
	int warm, epochs;
	double hot_pct, cold_pct;
};

static uint32_t synth_chunks(int i)
{
	/* log-uniform over [64 MiB, 1 GiB] */
	double u = unit(mix(0x5ca1eULL + (uint64_t)i));

	return (uint32_t)((double)MIN_CHUNKS * pow((double)MAX_CHUNKS / MIN_CHUNKS, u));
}

static void synth_init(struct synth *s, int i, uint32_t chunks)
{
	uint32_t left;

	s->chunks = chunks;
	s->nproc = 1 + (int)(mix((uint64_t)i * 7 + 3) % MAX_PROCS);
	left = s->chunks;
	for (int p = 0; p < s->nproc; p++) {
		s->per_proc[p] = p == s->nproc - 1 ? left : s->chunks / (uint32_t)s->nproc;
		left -= s->per_proc[p];
	}
	if (pt_hot_init(&s->hot, CHUNK_SHIFT, 1U << 22)) {
		fprintf(stderr, "micro: pt_hot_init failed\n");
		exit(1);
	}
}

/* Reusable scan buffers: one per process slot. */
static struct pt_proc_scan scanbuf[MAX_PROCS];

static void scanbuf_init(void)
{
	for (int p = 0; p < MAX_PROCS; p++) {
		scanbuf[p].chunks = calloc(MAX_CHUNKS, sizeof(*scanbuf[p].chunks));
		scanbuf[p].cap = MAX_CHUNKS;
		if (!scanbuf[p].chunks) {
			fprintf(stderr, "micro: out of memory\n");
			exit(1);
		}
	}
}

/*
 * Context @i's scan of epoch @epoch: every chunk present (16 pages); accessed: all of them
 * in epoch 1 (the load), then the hot set at 80% and the rest at @cold_pct.
 */
static void build_scan(const struct synth *s, int i, uint64_t epoch, const struct params *pp)
{
	for (int p = 0; p < s->nproc; p++) {
		struct pt_proc_scan *ps = &scanbuf[p];
		uint64_t base = 0x7f0000000000ULL + ((uint64_t)p << 36);

		ps->pid = 100000 + i * MAX_PROCS + p;
		ps->start = 1;
		ps->pidfd = 0;
		ps->n = s->per_proc[p];
		for (uint32_t c = 0; c < ps->n; c++) {
			struct pt_chunk_scan *cs = &ps->chunks[c];
			uint64_t key = ((uint64_t)i << 32) ^ ((uint64_t)p << 28) ^ c;
			bool hot = unit(mix(key)) * 100 < pp->hot_pct;
			double r = unit(mix(key * 0x9e3779b97f4a7c15ULL + epoch));
			bool acc = epoch <= 1 || (hot ? r < 0.8 : r * 100 < pp->cold_pct);

			cs->addr = base + ((uint64_t)c << CHUNK_SHIFT);
			cs->present = 16;
			cs->swapped = 0;
			cs->accessed = acc ? 16 : 0;
		}
	}
}

struct model_result {
	int n;
	uint64_t chunks;
	double tracked_gib;
	double apply_ns;		/* one epoch of all N (the fastest measured) */
	double cold_ns, cold_found;
	double wake_ns, wake_chunks, ranges_ns;
	double keep_ns;
	double victims_ns;		/* one pass */
	int victims_n;
	size_t heap;			/* bytes malloc'd for the N models */
};

/* Progress on a terminal only (@fmt NULL: clears the line). */
__attribute__((format(printf, 2, 3)))
static void progress(bool quiet, const char *fmt, ...)
{
	static int tty = -1;
	va_list ap;

	if (tty < 0)
		tty = isatty(2);
	if (quiet || !tty)
		return;
	fprintf(stderr, "\r%-70s\r", "");
	if (!fmt)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static void run_models(int n, const struct params *pp, struct model_result *r, bool quiet)
{
	size_t h0 = heap_bytes();
	struct synth *s = calloc((size_t)n, sizeof(*s));
	uint64_t *ids = malloc(COLD_MAX * sizeof(*ids));
	struct pt_victim_source *src = calloc((size_t)n, sizeof(*src));
	struct pt_victim *v = calloc(VICTIM_MAX, sizeof(*v));
	double t;
	uint64_t epoch;

	if (!s || !ids || !src || !v) {
		fprintf(stderr, "micro: out of memory for %d contexts\n", n);
		exit(1);
	}
	memset(r, 0, sizeof(*r));
	r->n = n;
	for (int i = 0; i < n; i++) {
		synth_init(&s[i], i, synth_chunks(i));
		r->chunks += s[i].chunks;
	}
	r->tracked_gib = (double)(r->chunks << CHUNK_SHIFT) / (double)(1ULL << 30);
	/* The load (epoch 1), then the warm-up: untimed. */
	for (epoch = 1; epoch <= (uint64_t)pp->warm; epoch++) {
		for (int i = 0; i < n; i++) {
			build_scan(&s[i], i, epoch, pp);
			pt_hot_apply_scans(&s[i].hot, scanbuf, s[i].nproc);
		}
		progress(quiet, "  N=%d: warm-up epoch %d/%d", n, (int)epoch, pp->warm);
	}
	r->heap = heap_bytes() - h0;
	/*
	 * Timed: the best of REPS passes over all N (the host may be busy; what is measured is
	 * the code's cost). apply_scans: REPS epochs, the fastest epoch's total.
	 */
	for (int e = 0; e < pp->epochs; e++, epoch++) {
		double sum = 0;

		for (int i = 0; i < n; i++) {
			build_scan(&s[i], i, epoch, pp);
			t = now_ns();
			pt_hot_apply_scans(&s[i].hot, scanbuf, s[i].nproc);
			sum += now_ns() - t;
		}
		if (!e || sum < r->apply_ns)
			r->apply_ns = sum;
		progress(quiet, "  N=%d: measured epoch %d/%d", n, e + 1, pp->epochs);
	}
	progress(quiet, "  N=%d: cold chunks, wake sets, keep sets, victims", n);
	for (int rep = 0; rep < REPS; rep++) {
		double cold = 0, wake = 0, ranges = 0, keep_t = 0;

		r->cold_found = r->wake_chunks = 0;
		for (int i = 0; i < n; i++) {
			struct pt_proc_ranges *pr = NULL;
			uint64_t *keep = NULL;
			uint64_t now = pt_hot_now(&s[i].hot);
			int k;

			t = now_ns();
			k = pt_hot_cold_chunks(&s[i].hot, COLD_EPOCHS, ids, COLD_MAX);
			cold += now_ns() - t;
			r->cold_found += k > 0 ? k : 0;

			t = now_ns();
			k = pt_hot_record_wake_set(&s[i].hot, now - 1, WAKE_RECENT, false);
			wake += now_ns() - t;
			r->wake_chunks += k > 0 ? k : 0;
			t = now_ns();
			k = pt_hot_ranges(&s[i].hot, s[i].hot.wake_set, s[i].hot.n_wake_set, &pr);
			ranges += now_ns() - t;
			for (int j = 0; j < k; j++)
				pt_proc_ranges_free(&pr[j]);
			free(pr);

			t = now_ns();
			k = pt_hot_keep_set(&s[i].hot, now - 2, &keep);
			keep_t += now_ns() - t;
			free(keep);
		}
		if (!rep || cold < r->cold_ns)
			r->cold_ns = cold;
		if (!rep || wake < r->wake_ns)
			r->wake_ns = wake;
		if (!rep || ranges < r->ranges_ns)
			r->ranges_ns = ranges;
		if (!rep || keep_t < r->keep_ns)
			r->keep_ns = keep_t;
	}
	for (int i = 0; i < n; i++) {
		src[i].hot = &s[i].hot;
		src[i].idle = i & 1;
		src[i].evictable_bytes = VICTIM_EVICTABLE;
	}
	for (int rep = 0; rep < REPS; rep++) {
		t = now_ns();
		r->victims_n = pt_victims_pick(src, n, VICTIM_NEED, 1, v, VICTIM_MAX);
		t = now_ns() - t;
		if (!rep || t < r->victims_ns)
			r->victims_ns = t;
	}
	progress(quiet, NULL);
	for (int i = 0; i < n; i++)
		pt_hot_free(&s[i].hot);
	free(s);
	free(ids);
	free(src);
	free(v);
}

/* --- part 2: the manager over a fake cgroup tree ------------------------------------- */

struct actions {
	struct pt_action **a;
	size_t n, cap;
};

static void collect(void *arg, struct pt_action *a)
{
	struct actions *q = arg;

	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 256;
		q->a = realloc(q->a, q->cap * sizeof(*q->a));
		if (!q->a)
			abort();
	}
	q->a[q->n++] = a;
}

/* Gives every action back as if it had run and done nothing; returns how many. */
static size_t finish(struct pt_manager *m, struct actions *q)
{
	size_t n = q->n;

	q->n = 0;
	for (size_t i = 0; i < n; i++)
		pt_manager_action_done(m, q->a[i]);
	return n;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "micro: cannot write %s: %s\n", path, strerror(errno));
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

static char *make_tree(int n)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" :
			   getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char *root = malloc(PATH_MAX), dir[PATH_MAX + 32], etc[PATH_MAX + 32], conf[PATH_MAX + 128];

	snprintf(root, PATH_MAX, "%s/pt-scale-micro-XXXXXX", base);
	if (!mkdtemp(root)) {
		fprintf(stderr, "micro: mkdtemp in %s: %s\n", base, strerror(errno));
		exit(1);
	}
	snprintf(dir, sizeof(dir), "%s/cg", root);
	mkdir(dir, 0755);
	snprintf(dir, sizeof(dir), "%s/cg/pt-scale", root);
	mkdir(dir, 0755);
	/* A few cgroups that are not opted in, as on a real host. */
	for (int i = 0; i < 8; i++) {
		snprintf(dir, sizeof(dir), "%s/cg/system.slice-%d", root, i);
		mkdir(dir, 0755);
	}
	for (int i = 0; i < n; i++) {
		snprintf(dir, sizeof(dir), "%s/cg/pt-scale/c-%05d", root, i);
		if (mkdir(dir, 0755)) {
			fprintf(stderr, "micro: mkdir %s: %s\n", dir, strerror(errno));
			exit(1);
		}
		write_file(dir, "cgroup.procs", "");
		write_file(dir, "cpu.stat",
			   "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n"
			   "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n");
		write_file(dir, "memory.current", "1048576\n");
		/* The head of a 6.12 memory.stat; the real one has about 50 keys. */
		write_file(dir, "memory.stat",
			   "anon 786432\nfile 262144\nkernel 131072\nkernel_stack 16384\n"
			   "pagetables 32768\nsec_pagetables 0\npercpu 0\nsock 0\nvmalloc 0\n"
			   "shmem 0\nzswap 0\nzswapped 0\nfile_mapped 262144\nfile_dirty 0\n"
			   "file_writeback 0\nswapcached 0\nanon_thp 0\nfile_thp 0\nshmem_thp 0\n"
			   "inactive_anon 786432\nactive_anon 0\ninactive_file 262144\n"
			   "active_file 0\nunevictable 0\nslab_reclaimable 0\nslab_unreclaimable 0\n"
			   "slab 0\npgfault 1000\npgmajfault 0\n");
		write_file(dir, "memory.swap.current", "4194304\n");
		write_file(dir, "memory.low", "0\n");
	}
	snprintf(etc, sizeof(etc), "%s/etc", root);
	mkdir(etc, 0755);
	snprintf(dir, sizeof(dir), "%s/containers.d", etc);
	mkdir(dir, 0755);
	snprintf(conf, sizeof(conf), "[daemon]\ncgroup_root = %s/cg\nruntime_dir = %s/run\n"
		 "log_level = error\n", root, root);
	write_file(etc, "pagetierd.conf", conf);
	write_file(dir, "scale.conf",
		   "[scale]\nmatch_cgroup = /pt-scale/c-*\nidle_threshold = 2s\n");
	chmod(etc, 0755);
	return root;
}

static void rm_tree(char *root)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		fprintf(stderr, "micro: could not remove %s\n", root);
	free(root);
}

struct manager_result {
	int n, tracked, idle;
	double tick_ns;			/* a tick without a walk (best of REPS blocks) */
	double tick_events_ns;		/* ... with BPF wakeups attached (sample_pace.h) */
	double rescan_ns;		/* a walk (the fastest) */
	double event_ns;		/* a BPF event's dispatch (best of REPS blocks) */
	size_t heap;			/* the manager with its N idle contexts */
	size_t slack;			/* ... of which contexts array capacity not in use */
};

/* A tick's time: the best of REPS blocks of @ticks ticks, the clock *@t moving on. */
static double best_tick_ns(struct pt_manager *m, struct actions *q, uint64_t *t, int ticks)
{
	double best = 0;

	for (int rep = 0; rep < REPS; rep++) {
		double t0 = now_ns(), dt;

		for (int i = 0; i < ticks; i++, *t += POLL_MS) {
			pt_manager_tick(m, *t);
			finish(m, q);
		}
		dt = (now_ns() - t0) / ticks;
		if (!rep || dt < best)
			best = dt;
	}
	return best;
}

/* As pagetierd does (raise_fd_limit): the cgroup files each sample reads kept open. */
static bool kept_files = true;

static void keep_files_as_pagetierd(void)
{
	struct rlimit rl;

	if (!kept_files || getrlimit(RLIMIT_NOFILE, &rl))
		return;
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	pt_cgroup_files_set_limit(rl.rlim_cur / 4 > INT_MAX ? INT_MAX : (int)(rl.rlim_cur / 4));
}

static void run_manager(int n, struct manager_result *r, int ticks, int rescans)
{
	char *root = make_tree(n), etc[PATH_MAX + 8], sysblock[PATH_MAX + 16];
	char err[PT_ERRBUF_MAX];
	struct actions q = { 0 };
	struct pt_manager m;
	struct pt_config cfg;
	uint64_t t = pt_now_ms();
	size_t h0;
	double t0;
	int quiet_ticks = 0;

	memset(r, 0, sizeof(*r));
	r->n = n;
	snprintf(etc, sizeof(etc), "%s/etc", root);
	snprintf(sysblock, sizeof(sysblock), "%s/no-sysblock", root);
	if (pt_config_load(&cfg, etc, false, err)) {
		fprintf(stderr, "micro: config: %s", err);
		exit(1);
	}
	pt_log_set_level(PT_LOG_ERR);
	keep_files_as_pagetierd();
	h0 = heap_bytes();
	pt_manager_init(&m, &cfg);
	m.submit = collect;
	m.submit_arg = &q;
	m.sysblock_path = sysblock;
	/* Ticks until every context is idle and settled: nothing submitted for a while. */
	for (int i = 0; i < 400 && quiet_ticks < 8; i++, t += POLL_MS) {
		pt_manager_tick(&m, t);
		quiet_ticks = finish(&m, &q) ? 0 : quiet_ticks + 1;
	}
	r->tracked = (int)m.n_ctxs;
	for (size_t i = 0; i < m.n_ctxs; i++)
		r->idle += m.ctxs[i].idle.state == PT_STATE_IDLE;
	r->heap = heap_bytes() - h0;
	r->slack = (m.cap_ctxs - m.n_ctxs) * sizeof(struct pt_context);
	/* Ticks alone (the walk is timed apart); the best of REPS blocks of them. */
	m.rescan_interval_ms = UINT64_MAX / 4;
	r->tick_ns = best_tick_ns(&m, &q, &t, ticks);
	/*
	 * The same with BPF's task wakeups attached, past the quiet contexts' grace: no event
	 * comes, so each is sampled once per PT_PACE_QUIET_MAX_MS. Timed over whole such
	 * periods, so that the average includes the sampling ticks.
	 */
	m.bpf_wakeups = true;
	for (uint64_t end = t + PT_PACE_QUIET_GRACE_MS + POLL_MS; t < end; t += POLL_MS) {
		pt_manager_tick(&m, t);
		finish(&m, &q);
	}
	r->tick_events_ns = best_tick_ns(&m, &q, &t, 2 * PT_PACE_QUIET_MAX_MS / POLL_MS);
	m.bpf_wakeups = false;
	for (int i = 0; i < rescans; i++) {
		double dt;

		t0 = now_ns();
		pt_manager_rescan(&m);
		dt = now_ns() - t0;
		if (!i || dt < r->rescan_ns)
			r->rescan_ns = dt;
	}
	/* BPF events (task wakeups: counted, never a wake), each context's in turn. */
	for (int rep = 0; rep < REPS; rep++) {
		double dt;

		t0 = now_ns();
		for (int i = 0; i < 20000; i++)
			pt_manager_bpf_event(&m, m.ctxs[(size_t)i % m.n_ctxs].cgroup_id, 3, 0, 0);
		dt = (now_ns() - t0) / 20000;
		if (!rep || dt < r->event_ns)
			r->event_ns = dt;
	}
	finish(&m, &q);
	pt_manager_free(&m);
	free(q.a);
	rm_tree(root);
}

/* --- output -------------------------------------------------------------------------- */

/* b in cost ~ size^b between two points. */
static double exponent(double v0, double u0, double v1, double u1)
{
	if (v0 <= 0 || v1 <= 0 || u0 <= 0 || u1 <= u0)
		return 0;
	return log(v1 / v0) / log(u1 / u0);
}

static void fmt_time(char *buf, size_t len, double ns)
{
	if (ns >= 1e9)
		snprintf(buf, len, "%.2f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else
		snprintf(buf, len, "%.0f ns", ns);
}

/*
 * A row: @vals (one per N) printed with @kind ('t': ns, 'b': bytes, 'p': percent, 'n':
 * plain), and with @units (the size at each N) the exponent b of vals ~ units^b.
 */
static void row_exp(const char *name, char kind, const double *vals, const double *units, int n,
		    double expect)
{
	char buf[32];

	printf("%-38s", name);
	for (int i = 0; i < n; i++) {
		if (kind == 't')
			fmt_time(buf, sizeof(buf), vals[i]);
		else if (kind == 'b')
			snprintf(buf, sizeof(buf), "%.1f MiB", vals[i] / (1 << 20));
		else if (kind == 'p')
			snprintf(buf, sizeof(buf), "%.2f%%", vals[i]);
		else
			snprintf(buf, sizeof(buf), "%.0f", vals[i]);
		printf(" %13s", buf);
	}
	if (units && n > 1) {
		double all = exponent(vals[0], units[0], vals[n - 1], units[n - 1]);
		double last = exponent(vals[n - 2], units[n - 2], vals[n - 1], units[n - 1]);

		printf("   ^%.2f (last step ^%.2f)%s", all, last,
		       all > expect + SUPERLINEAR_EXP - 1 || last > expect + SUPERLINEAR_EXP - 1 ?
		       (expect ? "  SUPER-LINEAR" : "  GROWS WITH N") : "");
	}
	printf("\n");
}

/* A total: linear in its size is what is expected. */
static void row(const char *name, char kind, const double *vals, const double *units, int n)
{
	row_exp(name, kind, vals, units, n, 1);
}

static int parse_sizes(const char *s, int *out)
{
	int n = 0;
	char *end;

	while (*s && n < MAX_SIZES) {
		long v = strtol(s, &end, 10);

		if (end == s || v < 1 || v > 100000)
			return -1;
		out[n++] = (int)v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return n;
}

static void calibrate(void)
{
	struct params pp = { .warm = 4, .epochs = 2, .hot_pct = 10, .cold_pct = 1 };
	struct model_result mr;
	struct manager_result gr;
	double t = now_ns();
	double t_models, t_mgr;

	scanbuf_init();
	run_models(40, &pp, &mr, true);
	t_models = now_ns() - t;
	t = now_ns();
	run_manager(100, &gr, 20, 5);
	t_mgr = now_ns() - t;
	printf("{\"apply_ns_per_chunk\":%.2f,\"cold_ns_per_chunk\":%.2f,"
	       "\"victims_ns\":%.0f,\"models_wall_s\":%.3f,"
	       "\"tick_ns_per_ctx\":%.1f,\"rescan_ns_per_ctx\":%.1f,\"manager_wall_s\":%.3f}\n",
	       mr.apply_ns / (double)mr.chunks, mr.cold_ns / (double)mr.chunks, mr.victims_ns,
	       t_models / 1e9, gr.tick_ns / 100, gr.rescan_ns / 100, t_mgr / 1e9);
}

int main(int argc, char **argv)
{
	struct params pp = { .warm = 8, .epochs = 3, .hot_pct = 10, .cold_pct = 1 };
	int sizes[MAX_SIZES] = { 300, 1000, 3000 }, ns = 3;
	bool models = true, manager = true;
	const char *json = NULL;
	struct model_result mr[MAX_SIZES];
	struct manager_result gr[MAX_SIZES];
	double v[MAX_SIZES] = { 0 }, u[MAX_SIZES] = { 0 };
	FILE *jf;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--calibrate")) {
			calibrate();
			return 0;
		} else if (!strcmp(a, "--no-kept-files")) {
			kept_files = false;
		} else if (!strcmp(a, "--no-models")) {
			models = false;
		} else if (!strcmp(a, "--no-manager")) {
			manager = false;
		} else if (val && !strcmp(a, "--sizes")) {
			ns = parse_sizes(val, sizes);
			i++;
			if (ns < 1) {
				fprintf(stderr, "micro: --sizes N,N,... (1..100000)\n");
				return 2;
			}
		} else if (val && !strcmp(a, "--warm")) {
			pp.warm = atoi(val), i++;
		} else if (val && !strcmp(a, "--epochs")) {
			pp.epochs = atoi(val), i++;
		} else if (val && !strcmp(a, "--hot-pct")) {
			pp.hot_pct = atof(val), i++;
		} else if (val && !strcmp(a, "--cold-pct")) {
			pp.cold_pct = atof(val), i++;
		} else if (val && !strcmp(a, "--json")) {
			json = val, i++;
		} else {
			fprintf(stderr, "usage: micro [--sizes 300,1000,3000] [--warm 8] [--epochs 3] "
				"[--hot-pct 10] [--cold-pct 1] [--no-models] [--no-manager] "
				"[--no-kept-files] [--json FILE] | --calibrate\n");
			return 2;
		}
	}
	if (pp.warm < 2 || pp.epochs < 1) {
		fprintf(stderr, "micro: --warm 2 or more, --epochs 1 or more\n");
		return 2;
	}
	scanbuf_init();
	printf("pagetierd policy code over N synthetic contexts, native (bench/scale/micro.c)\n");
	printf("contexts: 64 MiB..1 GiB log-uniform in 64 KiB chunks, 1-3 processes; per epoch "
	       "80%% of a %.0f%% hot set and %.0f%% of the rest accessed; %d warm-up epochs, then "
	       "the best of %d epochs (apply) and of %d passes (the rest)\n", pp.hot_pct,
	       pp.cold_pct, pp.warm, pp.epochs, REPS);
	printf("scaling: b in cost ~ size^b (size: tracked chunks for the models, N for the "
	       "manager) from N=%d to N=%d, and over the last step; b over %.2f is flagged\n\n",
	       sizes[0], sizes[ns - 1], SUPERLINEAR_EXP);
	printf("%-38s", "N contexts");
	for (int i = 0; i < ns; i++)
		printf(" %13d", sizes[i]);
	printf("   scaling: cost ~ size^b\n");
	if (models) {
		for (int i = 0; i < ns; i++)
			run_models(sizes[i], &pp, &mr[i], false);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].tracked_gib, u[i] = (double)mr[i].chunks;
		row("tracked GiB", 'n', v, NULL, ns);
		for (int i = 0; i < ns; i++)
			v[i] = (double)mr[i].chunks;
		row("tracked chunks", 'n', v, NULL, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].apply_ns / mr[i].n;
		row("apply_scans: per context (mean)", 't', v, NULL, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].apply_ns / (double)mr[i].chunks;
		row("apply_scans: per chunk", 't', v, NULL, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].apply_ns;
		row("apply_scans: all N, one epoch", 't', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].cold_ns / mr[i].n;
		row("cold_chunks: per context", 't', v, NULL, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].cold_ns;
		row("cold_chunks: all N", 't', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].cold_found / mr[i].n;
		row("  chunks found per context", 'n', v, NULL, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].wake_ns / mr[i].n;
		row("record_wake_set: per context", 't', v, NULL, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].wake_ns;
		row("record_wake_set: all N", 't', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].wake_chunks / mr[i].n;
		row("  wake-set chunks per context", 'n', v, NULL, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].ranges_ns;
		row("wake-set ranges (prefetch): all N", 't', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].keep_ns;
		row("keep_set: all N", 't', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].victims_ns;
		row("victims_pick over all N: one pass", 't', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = mr[i].victims_n;
		row("  victims picked", 'n', v, NULL, ns);
		for (int i = 0; i < ns; i++)
			v[i] = (double)mr[i].heap;
		row("model memory: all N", 'b', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = (double)mr[i].heap / mr[i].tracked_gib / (1 << 20);
		printf("%-38s", "model memory: MiB per tracked GiB");
		for (int i = 0; i < ns; i++)
			printf(" %13.2f", v[i]);
		printf("\n");
		for (int i = 0; i < ns; i++)
			v[i] = (double)mr[i].heap / (double)mr[i].chunks;
		printf("%-38s", "model memory: bytes per chunk");
		for (int i = 0; i < ns; i++)
			printf(" %13.1f", v[i]);
		printf("\n");
		for (int i = 0; i < ns; i++)
			v[i] = (mr[i].apply_ns + mr[i].cold_ns + mr[i].victims_ns) / 1e9 * 100;
		row("worst case, % of one CPU (*)", 'p', v, u, ns);
	}
	if (manager) {
		for (int i = 0; i < ns; i++) {
			progress(false, "  manager: N=%d", sizes[i]);
			run_manager(sizes[i], &gr[i], 20, 5);
		}
		progress(false, NULL);
		for (int i = 0; i < ns; i++)
			u[i] = sizes[i];
		printf("\nmanager over a fake cgroup tree (tmpfs), every context idle:\n");
		for (int i = 0; i < ns; i++)
			v[i] = gr[i].idle;
		row("contexts idle", 'n', v, NULL, ns);
		for (int i = 0; i < ns; i++)
			v[i] = gr[i].tick_ns;
		row("pt_manager_tick (no walk)", 't', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = gr[i].tick_events_ns;
		row("  with BPF wakeups attached (***)", 't', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = gr[i].rescan_ns;
		row("pt_manager_rescan (cgroup walk)", 't', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = gr[i].event_ns;
		/* One event: should not depend on N at all. */
		row_exp("pt_manager_bpf_event: one event", 't', v, u, ns, 0);
		for (int i = 0; i < ns; i++)
			v[i] = (gr[i].tick_ns * (1000 / POLL_MS) + gr[i].rescan_ns) / 1e9 * 100;
		row("idle host, % of one CPU (**)", 'p', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = (gr[i].tick_events_ns * (1000 / POLL_MS) + gr[i].rescan_ns) / 1e9 * 100;
		row("  with BPF wakeups attached (***)", 'p', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = (gr[i].tick_events_ns * (1000 / POLL_MS) +
				gr[i].rescan_ns / (PT_RESCAN_SAFETY_MS / 1000)) / 1e9 * 100;
		row("  and the cgroup tree watched (****)", 'p', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = (double)gr[i].heap;
		row("daemon memory with N idle contexts", 'b', v, NULL, ns);
		for (int i = 0; i < ns; i++)
			v[i] = (double)gr[i].slack;
		row("  of which unused array capacity", 'b', v, NULL, ns);
		for (int i = 0; i < ns; i++)
			v[i] = (double)(gr[i].heap - gr[i].slack);
		row("  the rest", 'b', v, u, ns);
		for (int i = 0; i < ns; i++)
			v[i] = (double)(gr[i].heap - gr[i].slack) / sizes[i] / 1024;
		printf("%-38s", "  KiB per idle context (the rest / N)");
		for (int i = 0; i < ns; i++)
			printf(" %13.1f", v[i]);
		printf("   (sizeof struct pt_context: %zu)\n", sizeof(struct pt_context));
	}
	printf("\n");
	if (models)
		printf("(*)  every context active and scanned every scan_interval (1 s): one epoch's "
		       "apply_scans and cold_chunks of all N, and one victims pass, per second\n");
	if (manager)
		printf("(**) %d ticks (poll_interval %d ms) and one cgroup walk per second, native "
		       "reads of tmpfs files\n", 1000 / POLL_MS, POLL_MS);
	if (manager)
		printf("(***) BPF's sched_wakeup attached and no event: a quiet idle context is "
		       "sampled once per %d ms, not every tick (daemon/sample_pace.h)\n",
		       PT_PACE_QUIET_MAX_MS);
	if (manager)
		printf("(****) and inotify watching the cgroup tree: with no container created or "
		       "removed, one walk per %d s (daemon/cgroup_watch.h)\n", PT_RESCAN_SAFETY_MS / 1000);
	if (json) {
		jf = fopen(json, "w");
		if (!jf) {
			fprintf(stderr, "micro: %s: %s\n", json, strerror(errno));
			return 1;
		}
		fprintf(jf, "{\"models\":[");
		for (int i = 0; models && i < ns; i++)
			fprintf(jf, "%s{\"n\":%d,\"chunks\":%" PRIu64 ",\"tracked_gib\":%.2f,"
				"\"apply_ns\":%.0f,\"cold_ns\":%.0f,"
				"\"wake_ns\":%.0f,\"ranges_ns\":%.0f,\"keep_ns\":%.0f,"
				"\"victims_ns\":%.0f,\"heap_bytes\":%zu}",
				i ? "," : "", mr[i].n, mr[i].chunks, mr[i].tracked_gib, mr[i].apply_ns,
				mr[i].cold_ns, mr[i].wake_ns, mr[i].ranges_ns,
				mr[i].keep_ns, mr[i].victims_ns, mr[i].heap);
		fprintf(jf, "],\"manager\":[");
		for (int i = 0; manager && i < ns; i++)
			fprintf(jf, "%s{\"n\":%d,\"idle\":%d,\"tick_ns\":%.0f,\"tick_events_ns\":%.0f,\"rescan_ns\":%.0f,\"event_ns\":%.1f,"
				"\"heap_bytes\":%zu,\"slack_bytes\":%zu}", i ? "," : "", gr[i].n, gr[i].idle,
				gr[i].tick_ns, gr[i].tick_events_ns, gr[i].rescan_ns, gr[i].event_ns, gr[i].heap, gr[i].slack);
		fprintf(jf, "]}\n");
		fclose(jf);
	}
	return 0;
}
