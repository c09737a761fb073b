// SPDX-License-Identifier: GPL-2.0
/*
 * The manager's decisions over a temporary cgroup tree: which cgroups get a context, when
 * one goes idle and what is offloaded, what wakes it, what vanishes (and what must not),
 * the host watermark, and the control protocol.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sys/resource.h>

#include "ctl.h"
#include "fixture.h"
#include "manager.h"
#include "pagetier/bpf_events.h"

/* What the manager handed out: the actions (kept, to be given back) and the BPF filter. */
struct recorder {
	struct pt_action *a[256];
	int n;
	uint64_t tracked[128];
	int n_tracked;
	uint64_t waking[128];	/* cgroups whose BPF events wake the daemon */
	int n_waking;
	int wake_calls;
	int boosted;		/* running actions raised to the daemon's priority */
};

static void record(void *arg, struct pt_action *a)
{
	struct recorder *r = arg;

	assert_true(r->n < 256);
	r->a[r->n++] = a;
}

/* The pool's pt_workers_cancel(): every recorded action is still queued, none started. */
static bool cancel_recorded(void *arg, struct pt_action *a)
{
	struct recorder *r = arg;

	for (int i = 0; i < r->n; i++)
		if (r->a[i] == a && !a->job.started && !a->job.cancelled) {
			a->job.cancelled = true;
			return true;
		}
	return false;
}

/* The pool's pt_workers_boost(): a started action is raised. */
static bool boost_recorded(void *arg, struct pt_action *a)
{
	struct recorder *r = arg;

	if (!a->job.started)
		return false;
	r->boosted++;
	return true;
}

static void track(void *arg, uint64_t id, bool on)
{
	struct recorder *r = arg;

	if (on) {
		assert_true(r->n_tracked < 128);
		r->tracked[r->n_tracked++] = id;
		return;
	}
	for (int i = 0; i < r->n_tracked; i++)
		if (r->tracked[i] == id)
			r->tracked[i] = r->tracked[--r->n_tracked];
}

static void wake_events(void *arg, uint64_t id, bool on)
{
	struct recorder *r = arg;

	r->wake_calls++;
	for (int i = 0; i < r->n_waking; i++)
		if (r->waking[i] == id)
			r->waking[i] = r->waking[--r->n_waking];
	if (on) {
		assert_true(r->n_waking < 128);
		r->waking[r->n_waking++] = id;
	}
}

static bool waking(const struct recorder *r, uint64_t id)
{
	for (int i = 0; i < r->n_waking; i++)
		if (r->waking[i] == id)
			return true;
	return false;
}

static char *answer(struct pt_manager *m, const char *req, uid_t uid);

/* The number of recorded actions of @kind for @ctx. */
static int count(struct recorder *r, struct pt_context *ctx, enum pt_job_kind kind)
{
	int n = 0;

	for (int i = 0; i < r->n; i++)
		n += r->a[i]->kind == kind && r->a[i]->cgroup_id == ctx->cgroup_id;
	return n;
}

/* The recorded action of @kind for @ctx, or NULL. */
static struct pt_action *recorded(struct recorder *r, struct pt_context *ctx,
				  enum pt_job_kind kind)
{
	for (int i = 0; i < r->n; i++)
		if (r->a[i]->kind == kind && r->a[i]->cgroup_id == ctx->cgroup_id)
			return r->a[i];
	return NULL;
}

/* Gives every recorded action back as if it had run (and done nothing). */
static void finish_all(struct pt_manager *m, struct recorder *r)
{
	int n = r->n;

	r->n = 0;
	for (int i = 0; i < n; i++)
		pt_manager_action_done(m, r->a[i]);
}

static void cgroup(const char *root, const char *rel, uint64_t usage)
{
	char path[PATH_MAX], buf[128];

	snprintf(path, sizeof(path), "%s/cgroup.procs", rel);
	fx_write(root, path, "");
	snprintf(path, sizeof(path), "%s/cpu.stat", rel);
	snprintf(buf, sizeof(buf), "usage_usec %llu\n", (unsigned long long)usage);
	fx_write(root, path, buf);
	snprintf(path, sizeof(path), "%s/memory.current", rel);
	fx_write(root, path, "268435456\n");
	snprintf(path, sizeof(path), "%s/memory.stat", rel);
	fx_write(root, path, "anon 268435456\nfile 0\nswapcached 0\n");
	snprintf(path, sizeof(path), "%s/memory.swap.current", rel);
	fx_write(root, path, "0\n");
	snprintf(path, sizeof(path), "%s/memory.low", rel);
	fx_write(root, path, "0\n");
	snprintf(path, sizeof(path), "%s/memory.min", rel);
	fx_write(root, path, "0\n");
}

struct fixture {
	char *root, *etc;
	struct pt_manager m;
	struct recorder r;
	char meminfo[PATH_MAX];		/* the manager's meminfo_path, once set_available ran */
};

/* The host's MemAvailable as the manager reads it: a meminfo of the fixture's. */
static void set_available(struct fixture *f, unsigned long long kb)
{
	char text[128];

	snprintf(f->meminfo, sizeof(f->meminfo), "%s/meminfo", f->root);
	snprintf(text, sizeof(text), "MemTotal: 4194304 kB\nMemAvailable: %llu kB\n", kb);
	fx_write(f->root, "meminfo", text);
	f->m.meminfo_path = f->meminfo;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[PT_ERRBUF_MAX], conf[PATH_MAX + 64];
	struct pt_config cfg;

	f->root = fx_tmpdir();
	f->etc = fx_tmpdir();
	cgroup(f->root, "ct/web", 1000);
	cgroup(f->root, "ct/web/child", 0);
	cgroup(f->root, "ct/db", 1000);
	cgroup(f->root, "other", 1000);
	snprintf(conf, sizeof(conf), "[daemon]\ncgroup_root = %s\nscan_interval = 1s\n", f->root);
	fx_write(f->etc, "pagetierd.conf", conf);
	fx_write(f->etc, "containers.d/ct.conf",
		 "[web]\nmatch_cgroup = /ct/web\nidle_threshold = 1s\ncold_after = 0\n\n"
		 "[db]\nmatch_cgroup = /ct/db\nclass = critical\nidle_threshold = 1s\n");
	assert_int_equal(pt_config_load(&cfg, f->etc, false, err), 0);
	pt_manager_init(&f->m, &cfg);
	f->m.submit = record;
	f->m.cancel = cancel_recorded;
	f->m.boost = boost_recorded;
	f->m.submit_arg = &f->r;
	f->m.track = track;
	f->m.wake_events = wake_events;
	f->m.track_arg = &f->r;
	f->m.rescan_interval_ms = 0;	/* the tests below add and remove cgroups between ticks */
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	finish_all(&f->m, &f->r);
	pt_manager_free(&f->m);
	fx_rmtree(f->root);
	fx_rmtree(f->etc);
	free(f);
	return 0;
}

static struct pt_context *ctx_named(struct pt_manager *m, const char *name)
{
	for (size_t i = 0; i < m->n_ctxs; i++)
		if (strcmp(m->ctxs[i].policy.name, name) == 0)
			return &m->ctxs[i];
	return NULL;
}

/* Replaces the containers' policies (containers.d/ct.conf) with @text and reloads. */
static void reload_policies(struct fixture *f, const char *text)
{
	char err[PT_ERRBUF_MAX];
	struct pt_config cfg;

	fx_write(f->etc, "containers.d/ct.conf", text);
	assert_int_equal(pt_config_load(&cfg, f->etc, false, err), 0);
	pt_manager_reload(&f->m, &cfg);
}

static void test_contexts_follow_the_tree(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX + 32];

	pt_manager_rescan(&f->m);
	assert_int_equal(f->m.n_ctxs, 2);	/* web, db; never web's child, never "other" */
	assert_non_null(ctx_named(&f->m, "web"));
	assert_non_null(ctx_named(&f->m, "db"));
	/* Only web is in the BPF map: the critical db has no wake to see. */
	assert_int_equal(f->r.n_tracked, 1);
	assert_true(f->r.tracked[0] == ctx_named(&f->m, "web")->cgroup_id);
	/* The critical container is protected from the first tick that samples it. */
	pt_manager_tick(&f->m, pt_now_ms());
	snprintf(path, sizeof(path), "%s/ct/db/memory.low", f->root);
	{
		char buf[32] = "";

		assert_true(pt_read_file(path, buf, sizeof(buf)) > 0);
		assert_string_equal(buf, "max");
	}
	/* A cgroup that goes away takes its context with it. */
	snprintf(path, sizeof(path), "rm -rf '%s/ct/db'", f->root);
	assert_int_equal(system(path), 0);
	pt_manager_tick(&f->m, pt_now_ms());
	assert_int_equal(f->m.n_ctxs, 1);
	assert_null(ctx_named(&f->m, "db"));
	assert_int_equal(f->r.n_tracked, 1);	/* web's, untouched */
}

/*
 * A critical container is not in the BPF map; a reload that changes a container's class
 * moves it in or out, and an idle besteffort one's events wake the daemon.
 */
static void test_class_change_moves_the_bpf_filter(void **state)
{
	static const char critical_web[] =
		"[web]\nmatch_cgroup = /ct/web\nclass = critical\nidle_threshold = 1s\n\n"
		"[db]\nmatch_cgroup = /ct/db\nidle_threshold = 1s\ncold_after = 0\n";
	struct fixture *f = *state;
	uint64_t web, db, t = pt_now_ms();

	pt_manager_tick(&f->m, t);
	web = ctx_named(&f->m, "web")->cgroup_id;
	db = ctx_named(&f->m, "db")->cgroup_id;
	assert_int_equal(f->r.n_tracked, 1);
	assert_true(f->r.tracked[0] == web);
	reload_policies(f, critical_web);
	assert_int_equal(f->m.n_ctxs, 2);
	assert_int_equal(f->r.n_tracked, 1);
	assert_true(f->r.tracked[0] == db);
	/* db, besteffort now, goes idle: its events wake the daemon; web's set nothing. */
	for (int i = 0; i < 40; i++) {
		t += 100;
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(ctx_named(&f->m, "db")->idle.state, PT_STATE_IDLE);
	assert_true(waking(&f->r, db));
	assert_false(waking(&f->r, web));
	/* Critical again: out of the map, and its wake flag with it. */
	reload_policies(f, "[web]\nmatch_cgroup = /ct/web\nidle_threshold = 1s\n\n"
			   "[db]\nmatch_cgroup = /ct/db\nclass = critical\nidle_threshold = 1s\n");
	assert_int_equal(f->r.n_tracked, 1);
	assert_true(f->r.tracked[0] == web);
}

/* Out of descriptors, the walk fails: no context is dropped for a cgroup it did not see. */
static void test_failed_walk_keeps_contexts(void **state)
{
	struct fixture *f = *state;
	struct rlimit old, low;
	int fd;

	pt_manager_rescan(&f->m);
	assert_int_equal(f->m.n_ctxs, 2);
	getrlimit(RLIMIT_NOFILE, &old);
	/* The next descriptor number is the limit: opendir() fails with EMFILE. */
	fd = dup(0);
	close(fd);
	low = old;
	low.rlim_cur = (rlim_t)fd;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	pt_manager_rescan(&f->m);
	pt_manager_tick(&f->m, pt_now_ms());
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(f->m.n_ctxs, 2);
	assert_true(f->m.walk_errors >= 1);
	assert_true(f->m.sample_errors >= 1);
	assert_int_equal(f->r.n_tracked, 1);
	/* A sample that cannot be parsed is no proof that the cgroup is gone either. */
	{
		char rel[] = "ct/web/memory.current";

		fx_write(f->root, rel, "garbage\n");
		pt_manager_tick(&f->m, pt_now_ms());
		assert_int_equal(f->m.n_ctxs, 2);
	}
}

/* What the injected walks return. */
static int walk_err;

/* A walk that saw nothing of the tree: out of descriptors at the root, say. */
static int failing_walk(const char *root, pt_cgroup_visit_fn fn, void *arg)
{
	(void)root;
	(void)fn;
	(void)arg;
	return walk_err;
}

/* A walk that saw /ct/web, then failed (a readdir error, a subtree it could not open). */
static int partial_walk(const char *root, pt_cgroup_visit_fn fn, void *arg)
{
	char dir[PATH_MAX];
	uint64_t id;

	snprintf(dir, sizeof(dir), "%s/ct/web", root);
	if (pt_cgroup_id(dir, &id) == 0)
		fn("/ct/web", id, arg);
	return walk_err;
}

/*
 * Walks that fail with EMFILE, ENFILE or EIO, seeing none or part of the tree, and samples
 * that fail without the cgroup going (a file without the key read) drop no context: its
 * BPF filter, wake set and memory.low stay. A cgroup that does go still takes its context,
 * walks failing or not.
 */
static void test_walk_and_sample_errors_drop_nothing(void **state)
{
	static const int errs[] = { -EMFILE, -ENFILE, -EIO };
	struct fixture *f = *state;
	char path[PATH_MAX + 32], buf[32] = "";
	uint64_t walk_errors;

	pt_manager_rescan(&f->m);
	assert_int_equal(f->m.n_ctxs, 2);
	walk_errors = f->m.walk_errors;
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		walk_err = errs[i];
		f->m.walk = failing_walk;
		pt_manager_tick(&f->m, pt_now_ms());
		assert_int_equal(f->m.n_ctxs, 2);
		f->m.walk = partial_walk;
		pt_manager_tick(&f->m, pt_now_ms());
		assert_int_equal(f->m.n_ctxs, 2);
		assert_int_equal(f->r.n_tracked, 1);
	}
	assert_int_equal(f->m.walk_errors, walk_errors + 6);
	/* memory.stat without "anon": -ENOENT from the parser, the cgroup is still there. */
	fx_write(f->root, "ct/db/memory.stat", "file 0\n");
	pt_manager_tick(&f->m, pt_now_ms() + 2000);	/* read once per scan interval */
	assert_int_equal(f->m.n_ctxs, 2);
	assert_non_null(ctx_named(&f->m, "db"));
	assert_true(f->m.sample_errors >= 1);
	assert_int_equal(ctx_named(&f->m, "db")->sample.memory_current, 268435456);
	snprintf(path, sizeof(path), "%s/ct/db/memory.low", f->root);
	assert_true(pt_read_file(path, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "max");
	/* web really goes, while the walks still fail: its context goes with it. */
	snprintf(path, sizeof(path), "rm -rf '%s/ct/web'", f->root);
	assert_int_equal(system(path), 0);
	f->m.walk = failing_walk;
	pt_manager_tick(&f->m, pt_now_ms());
	assert_int_equal(f->m.n_ctxs, 1);
	assert_null(ctx_named(&f->m, "web"));
	assert_int_equal(f->r.n_tracked, 0);
}

/* Quiet for idle_threshold: the besteffort container is offloaded; the critical one never. */
static void test_idle_offload_and_packet_wake(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web, *db;
	uint64_t t = pt_now_ms();

	for (int i = 0; i < 40; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);	/* scans, settles: done, nothing seen */
	}
	web = ctx_named(&f->m, "web");
	db = ctx_named(&f->m, "db");
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_int_equal(web->n_idle, 1);
	assert_int_equal(web->n_offloads, 1);
	assert_int_equal(db->n_offloads, 0);
	/* A packet for it: a wake at once (nothing was recorded to prefetch here). */
	pt_manager_bpf_event(&f->m, web->cgroup_id, 4, 0x0800, 0);
	assert_int_equal(web->n_wakes, 1);
	assert_int_equal(web->idle.state, PT_STATE_ACTIVE);
	assert_string_equal(web->wake_source, "ingress packet (bpf)");
	/* Task wakeups alone (timers) wake nothing. */
	for (; t < pt_now_ms() + 4000; t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	for (int i = 0; i < 50; i++)
		pt_manager_bpf_event(&f->m, web->cgroup_id, 3, 0, 0);
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	/* An event of a cgroup with no context is counted: the BPF filter should stop them. */
	pt_manager_bpf_event(&f->m, 424242, 4, 0, 0);
	assert_int_equal(f->m.bpf_unmatched, 1);
}

/*
 * An idle offload its own background undid (woken by its swap-ins with no packet, a server
 * that takes packets, and half of what the offload freed back): the next idle period's
 * offload waits (15 thresholds, its fourth such offload in a row), the polls pass it by
 * once the quiet grace is over, and then it goes.
 */
static void test_undone_offload_defers_the_next(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms(), idle_at;

	f->m.bpf_wakeups = true;	/* events cover its wakes: quiet ones can be passed by */
	for (int i = 0; i < 40; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->n_offloads, 1);
	/* A request: its wake; idle and offloaded again, with nothing held against it. */
	pt_manager_bpf_event(&f->m, web->cgroup_id, 4, 0x0800, 0);
	for (int i = 0; i < 40; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_int_equal(web->n_offloads, 2);
	assert_int_equal(web->offload_backoff, 0);
	/* That offload freed 46 MiB, 2 left; its crawler reads it all back, no packet. */
	web->idle_saved = 46ULL << 20;
	web->resident_after_idle = 2ULL << 20;
	web->offload_backoff = 3;	/* three undone before */
	for (int i = 0; i < 64; i++)
		pt_manager_bpf_event(&f->m, web->cgroup_id, PT_BPF_EV_SWAPIN, 0, 0);
	assert_int_equal(web->idle.state, PT_STATE_ACTIVE);
	fx_write(f->root, "ct/web/memory.current", "44040192\n");
	for (int i = 0; i < 40 && web->idle.state != PT_STATE_IDLE; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_int_equal(web->offload_backoff, 4);
	assert_int_equal(web->offloads_undone, 1);
	assert_true(web->offload_pending);
	idle_at = t - 100;
	assert_int_equal(web->offload_after_ms, idle_at + 15000);
	/* 15 s of waiting: no scan, no offload; past the quiet grace the polls pass it by. */
	for (; t < idle_at + 15000; t += 100) {
		uint64_t due;

		pt_manager_tick(&f->m, t);
		assert_int_equal(count(&f->r, web, PT_JOB_OFFLOAD), 0);
		assert_int_equal(count(&f->r, web, PT_JOB_SCAN), 0);
		due = f->m.due_ms[web - f->m.ctxs];
		if (t > idle_at + PT_PACE_QUIET_GRACE_MS + 1000)
			assert_in_range(due, t + 1, web->offload_after_ms);
		finish_all(&f->m, &f->r);
	}
	/* Then it goes. */
	for (int i = 0; i < 30 && web->n_offloads == 2; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(web->n_offloads, 3);
}

/*
 * A long tick reads the wake sources between its samples: a wake that arrives while it
 * samples many active containers is seen before the tick ends, not after it.
 */
struct mid_tick {
	struct pt_manager *m;
	uint64_t idle_id;		/* the idle context the first poll delivers a packet for */
	int calls;
	enum pt_state seen;		/* its state right after that event, inside the tick */
};

static void mid_tick_poll(void *arg)
{
	struct mid_tick *mt = arg;

	if (!mt->calls++) {
		pt_manager_bpf_event(mt->m, mt->idle_id, 4, 0x0800, 0);
		mt->seen = pt_manager_find(mt->m, mt->idle_id)->idle.state;
	}
}

static void test_a_long_tick_reads_wake_sources(void **state)
{
	struct fixture *f = *state;
	struct mid_tick mt = { .m = &f->m };
	struct pt_context *web;
	char rel[64];
	uint64_t t = pt_now_ms();
	const int busy = 3 * PT_TICK_POLL_SAMPLES;

	/* web goes idle; then many busy containers, all sampled at every tick. */
	for (int i = 0; i < 40; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	for (int i = 0; i < busy; i++) {
		snprintf(rel, sizeof(rel), "ct/busy-%d", i);
		cgroup(f->root, rel, 1000);
	}
	reload_policies(f, "[web]\nmatch_cgroup = /ct/web\nidle_threshold = 1s\ncold_after = 0\n\n"
			   "[db]\nmatch_cgroup = /ct/db\nclass = critical\nidle_threshold = 1s\n\n"
			   "[busy]\nmatch_cgroup = /ct/busy-*\nidle_threshold = 60s\n");
	pt_manager_tick(&f->m, t);
	finish_all(&f->m, &f->r);
	assert_int_equal(f->m.n_ctxs, 2 + busy);
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->idle.state, PT_STATE_IDLE);

	f->m.poll_events = mid_tick_poll;
	f->m.poll_arg = &mt;
	mt.idle_id = web->cgroup_id;
	pt_manager_tick(&f->m, t + 100);
	/* Once every PT_TICK_POLL_SAMPLES samples, never before the first one. */
	assert_true(f->m.samples_taken >= (uint64_t)busy);
	assert_true(mt.calls >= busy / PT_TICK_POLL_SAMPLES - 1);
	assert_int_equal(f->m.tick_polls, (uint64_t)mt.calls);
	/* The packet woke web in the middle of the tick, and the tick went on past it. */
	assert_int_not_equal(mt.seen, PT_STATE_IDLE);
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->n_wakes, 1);
	assert_string_equal(web->wake_source, "ingress packet (bpf)");
	f->m.poll_events = NULL;
}

/*
 * The per-tick cost stays with what changes: the tree is walked once per rescan interval
 * (a new container waits for the next walk), memory.stat is read once per scan interval,
 * and only an idle context's BPF events wake the daemon; the critical one's never do.
 */
static void test_tick_costs(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web, *db;
	uint64_t t = pt_now_ms();

	f->m.rescan_interval_ms = 1000;
	pt_manager_tick(&f->m, t);
	assert_int_equal(f->m.n_ctxs, 2);
	web = ctx_named(&f->m, "web");
	db = ctx_named(&f->m, "db");
	assert_false(waking(&f->r, web->cgroup_id));	/* active */
	assert_false(waking(&f->r, db->cgroup_id));	/* critical: not in the map at all */
	assert_int_equal(f->r.wake_calls, 1);
	/* Nothing changed: no call to the filter at all. */
	pt_manager_tick(&f->m, t + 100);
	assert_int_equal(f->r.wake_calls, 1);

	/* A light tick reads memory.current, not memory.stat. */
	fx_write(f->root, "ct/web/memory.current", "1048576\n");
	fx_write(f->root, "ct/web/memory.stat", "anon 4096\nfile 0\nswapcached 0\n");
	pt_manager_tick(&f->m, t + 200);
	assert_int_equal(web->sample.memory_current, 1048576);
	assert_int_equal(web->sample.anon, 268435456);
	pt_manager_tick(&f->m, t + 1000);
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->sample.anon, 4096);

	/* A new opted-in cgroup is found by the next walk, not before. */
	fx_write(f->etc, "containers.d/ct.conf",
		 "[web]\nmatch_cgroup = /ct/web\nidle_threshold = 1s\ncold_after = 0\n\n"
		 "[db]\nmatch_cgroup = /ct/db\nclass = critical\nidle_threshold = 1s\n\n"
		 "[cache]\nmatch_cgroup = /ct/cache\nidle_threshold = 1s\n");
	{
		char err[PT_ERRBUF_MAX];
		struct pt_config cfg;

		assert_int_equal(pt_config_load(&cfg, f->etc, false, err), 0);
		pt_config_free(&f->m.cfg);
		f->m.cfg = cfg;
	}
	cgroup(f->root, "ct/cache", 0);
	pt_manager_tick(&f->m, t + 1500);
	assert_null(ctx_named(&f->m, "cache"));
	pt_manager_tick(&f->m, t + 2000);
	assert_non_null(ctx_named(&f->m, "cache"));

	/* Quiet: web goes idle, and from then on its events wake the daemon. */
	for (t += 2000; t < pt_now_ms() + 6000; t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	web = ctx_named(&f->m, "web");
	db = ctx_named(&f->m, "db");
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_true(waking(&f->r, web->cgroup_id));
	assert_false(waking(&f->r, db->cgroup_id));
	/*
	 * A packet wakes it; once its prefetch is done, its events wait for ticks again (its
	 * CPU says it serves, so that the tick finds it busy, not quiet again).
	 */
	pt_manager_bpf_event(&f->m, web->cgroup_id, 4, 0x0800, 0);
	finish_all(&f->m, &f->r);
	assert_int_equal(web->idle.state, PT_STATE_ACTIVE);
	fx_write(f->root, "ct/web/cpu.stat", "usage_usec 100000000\n");
	pt_manager_tick(&f->m, t);
	assert_int_equal(web->idle.state, PT_STATE_ACTIVE);
	assert_false(waking(&f->r, web->cgroup_id));
}

/*
 * With every task wake an event (BPF's sched_wakeup attached), a quiet idle context is not
 * sampled each tick: an event brings a sample (and a wake where it is one) at once, and its
 * CPU is looked at every few seconds whatever happens.
 */
static void test_quiet_contexts_follow_events(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms(), skipped;

	f->m.bpf_wakeups = true;
	for (int i = 0; i < 40; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);	/* offload, settles: done */
	}
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_int_equal(web->settle_passes, 0);
	/* Through its grace it is sampled each tick; then no more than every few seconds. */
	for (uint64_t end = t + PT_PACE_QUIET_GRACE_MS; t < end; t += 100)
		pt_manager_tick(&f->m, t);
	skipped = f->m.samples_skipped;
	for (uint64_t end = t + 8000; t < end; t += 100)
		pt_manager_tick(&f->m, t);
	/* web and db (critical, idle too) skip 78 of 80 ticks each, give or take a sample. */
	assert_true(f->m.samples_skipped - skipped >= 2 * (80 - 8000 / PT_PACE_QUIET_MAX_MS - 1));
	/* Its CPU still counts: a sample every PT_PACE_QUIET_MAX_MS sees it. */
	fx_write(f->root, "ct/web/cpu.stat", "usage_usec 100000000000\n");
	for (uint64_t end = t + PT_PACE_QUIET_MAX_MS + 200; t < end; t += 100)
		pt_manager_tick(&f->m, t);
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->n_wakes, 1);
	assert_string_equal(web->wake_source, "cpu usage");
	finish_all(&f->m, &f->r);

	/* Back to quiet; then a task wakeup (no wake by itself) brings the next sample. */
	fx_write(f->root, "ct/web/cpu.stat", "usage_usec 100000000000\n");
	for (uint64_t end = t + 12000 + PT_PACE_QUIET_GRACE_MS; t < end; t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	pt_manager_tick(&f->m, t);
	skipped = f->m.samples_skipped;
	fx_write(f->root, "ct/web/cpu.stat", "usage_usec 200000000000\n");
	pt_manager_bpf_event(&f->m, web->cgroup_id, 3, 0, 0);
	pt_manager_tick(&f->m, t + 100);
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->n_wakes, 2);	/* its CPU, read because it was woken */
	assert_int_equal(f->m.samples_skipped - skipped, 1);	/* db's */

	/* Events lost to a full ring: the next tick samples every context, quiet or not. */
	finish_all(&f->m, &f->r);
	for (uint64_t end = t + 12000 + PT_PACE_QUIET_GRACE_MS; t < end; t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	pt_manager_tick(&f->m, t);
	skipped = f->m.samples_skipped;
	pt_manager_tick(&f->m, t += 100);
	assert_int_equal(f->m.samples_skipped - skipped, 2);	/* both quiet */
	skipped = f->m.samples_skipped;
	f->m.events_lost = true;
	pt_manager_tick(&f->m, t += 100);
	f->m.events_lost = false;
	assert_int_equal(f->m.samples_skipped - skipped, 0);
}

/* Ticks from *@t (100 ms apart) until "web" is idle with its offload submitted, not run. */
static struct pt_context *web_offload_submitted(struct fixture *f, uint64_t *t)
{
	struct pt_context *web = NULL;

	for (int i = 0; i < 80; i++, *t += 100) {
		pt_manager_tick(&f->m, *t);
		web = ctx_named(&f->m, "web");
		if (web->idle.state == PT_STATE_IDLE && count(&f->r, web, PT_JOB_OFFLOAD))
			return web;
		finish_all(&f->m, &f->r);
	}
	fail_msg("web: no offload submitted in 8 s");
	return web;
}

/*
 * A wake takes back the idle context's job still queued (its offload behind a thousand
 * others in a starved pool): its prefetch goes when that job comes back, not after the
 * queue; nothing of the job is applied (here nothing was paged out: no prefetch at all).
 * A running one is left to finish, at the daemon's priority, and the prefetch waits for it.
 */
static void test_a_wake_takes_back_a_queued_job(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	struct pt_action *offload;
	uint64_t t = pt_now_ms();
	uint64_t offloads;

	web = web_offload_submitted(f, &t);
	offload = recorded(&f->r, web, PT_JOB_OFFLOAD);
	assert_non_null(offload);
	offloads = web->n_offloads;
	pt_manager_bpf_event(&f->m, web->cgroup_id, 4, 0x0800, 0);	/* a packet: its wake */
	web = ctx_named(&f->m, "web");
	assert_true(offload->job.cancelled);
	assert_true(web->wake_pending);
	finish_all(&f->m, &f->r);	/* the pool gives it back */
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->n_offloads, offloads);	/* nothing of it applied */
	/* Its wake is done: nothing was paged out, nothing to bring back. */
	assert_int_equal(web->idle.state, PT_STATE_ACTIVE);
	assert_int_equal(count(&f->r, web, PT_JOB_PREFETCH), 0);
	finish_all(&f->m, &f->r);

	/* Idle again, its offload running this time: it finishes first. */
	web = web_offload_submitted(f, &t);
	offload = recorded(&f->r, web, PT_JOB_OFFLOAD);
	assert_non_null(offload);
	offload->job.started = true;
	pt_manager_bpf_event(&f->m, web->cgroup_id, 4, 0x0800, 0);
	web = ctx_named(&f->m, "web");
	assert_false(offload->job.cancelled);
	assert_int_equal(f->r.boosted, 1);	/* ... at the daemon's priority */
	assert_true(web->wake_pending);
	assert_int_equal(count(&f->r, web, PT_JOB_PREFETCH), 0);
}

/*
 * A job queued for an idle context (its scan, its offload: behind a thousand others in a
 * starved background pool) does not make the polls sample it each time: it is passed by
 * like a quiet one, and sampled at the poll after the job's end, where the offload pending
 * behind a scan is issued. Fails with the old rule (busy: sampled every poll).
 */
static void test_a_queued_job_does_not_hold_the_polls(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms(), seen;

	f->m.bpf_wakeups = true;
	for (int i = 0; i < 40; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		web = ctx_named(&f->m, "web");
		if (web->idle.state == PT_STATE_IDLE && web->busy)
			break;
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_true(web->busy);			/* its job waits in the queue */
	assert_false(pt_context_action_running(web));
	/* Its grace (status stays fresh as it goes idle), then passed by. */
	for (uint64_t end = t + PT_PACE_QUIET_GRACE_MS + 200; t < end; t += 100)
		pt_manager_tick(&f->m, t);
	web = ctx_named(&f->m, "web");
	seen = web->pace.last_ms;
	for (uint64_t end = t + 5000; t < end; t += 100)
		pt_manager_tick(&f->m, t);
	web = ctx_named(&f->m, "web");
	assert_true(web->busy);
	assert_int_equal(web->pace.last_ms, seen);	/* not sampled for 5 s */
	/* The job ends: the next poll samples it, and what it allows goes. */
	finish_all(&f->m, &f->r);
	pt_manager_tick(&f->m, t);
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->pace.last_ms, t);
}

/*
 * A quiet context's safety sample reads memory.stat only when its CPU or size moved: its
 * composition is kept otherwise (memory.stat changed here behind an unmoved size, which a
 * real cgroup's does not), and read again once memory.current moves.
 */
static void test_a_safety_sample_reads_memory_stat_only_when_something_moved(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms(), light;

	f->m.bpf_wakeups = true;
	for (int i = 0; i < 40; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	for (uint64_t end = t + PT_PACE_QUIET_GRACE_MS + 1000; t < end; t += 100)
		pt_manager_tick(&f->m, t);
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_int_equal(web->sample.anon, 268435456);
	fx_write(f->root, "ct/web/memory.stat", "anon 4096\nfile 0\nswapcached 0\n");
	light = f->m.samples_light;
	for (uint64_t end = t + PT_PACE_QUIET_MAX_MS + 200; t < end; t += 100)
		pt_manager_tick(&f->m, t);
	web = ctx_named(&f->m, "web");
	assert_true(f->m.samples_light - light >= 1);
	assert_int_equal(web->sample.anon, 268435456);	/* not read: nothing moved */
	fx_write(f->root, "ct/web/memory.current", "4096\n");
	for (uint64_t end = t + PT_PACE_QUIET_MAX_MS + 200; t < end; t += 100)
		pt_manager_tick(&f->m, t);
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->sample.memory_current, 4096);
	assert_int_equal(web->sample.anon, 4096);	/* its size moved: read */
}

/* A task woken once that then runs on (no further wakeup): the polls after it see its CPU. */
static void test_a_woken_task_is_followed(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms(), usage = 1000;
	char buf[64];

	f->m.bpf_wakeups = true;
	for (uint64_t end = t + 4000 + PT_PACE_QUIET_GRACE_MS; t < end; t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	pt_manager_bpf_event(&f->m, web->cgroup_id, 3, 0, 0);
	/* From now on it runs a full CPU; no other event comes. */
	for (uint64_t end = t + 2000; t < end; t += 100) {
		usage += 100000;
		snprintf(buf, sizeof(buf), "usage_usec %llu\n", (unsigned long long)usage);
		fx_write(f->root, "ct/web/cpu.stat", buf);
		pt_manager_tick(&f->m, t);
		if (ctx_named(&f->m, "web")->n_wakes)
			break;
	}
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->n_wakes, 1);
	assert_string_equal(web->wake_source, "cpu usage");
}

/*
 * A quiet container not sampled for 20 s wakes: a task runs 300 ms, then sleeps again. Its
 * CPU is judged from the wake on, not averaged over the 20 s no poll looked at it (1.5%,
 * which the 5% rule would take for housekeeping).
 */
static void test_a_quiet_containers_burst_is_seen(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms(), skipped;

	f->m.bpf_wakeups = true;
	fx_write(f->root, "ct/web/cpu.stat", "usage_usec 1000\n");
	for (uint64_t end = t + 4000 + PT_PACE_QUIET_GRACE_MS; t < end; t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	/* 20 s with no event: its polls skip it. */
	skipped = f->m.samples_skipped;
	for (uint64_t end = t + 20000; t < end; t += 100)
		pt_manager_tick(&f->m, t);
	assert_true(f->m.samples_skipped - skipped >= 150);
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_int_equal(web->n_wakes, 0);
	pt_manager_bpf_event(&f->m, web->cgroup_id, 3, 0, 0);
	fx_write(f->root, "ct/web/cpu.stat", "usage_usec 301000\n");
	for (uint64_t end = t + 1000; t < end; t += 100)
		pt_manager_tick(&f->m, t);
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->n_wakes, 1);
	assert_string_equal(web->wake_source, "cpu usage");
}

/*
 * sample_reader = io_uring: every tick sample's CPU and memory.current come from the
 * tick's batched read (the same files, kept open), and the idle and wake verdicts are
 * those of the pread reader: web goes idle, is skipped while quiet, and its burst after an
 * event is seen. Past the descriptor limit nothing can be kept open for a batch, and the
 * samples are read the ordinary way.
 */
static void test_batched_samples_judge_as_pread(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms();

	f->m.cfg.sample_reader = PT_READER_IO_URING;
	pt_cgroup_files_set_limit(64);
	f->m.bpf_wakeups = true;
	fx_write(f->root, "ct/web/cpu.stat", "usage_usec 1000\n");
	for (uint64_t end = t + 4000 + PT_PACE_QUIET_GRACE_MS; t < end; t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_non_null(f->m.batch);
	assert_true(f->m.sample_batches > 0);
	assert_true(f->m.samples_taken > 0);
	assert_int_equal(f->m.samples_batched, f->m.samples_taken);
	assert_int_equal(web->sample.cpu_usage_usec, 1000);
	assert_int_equal(web->sample.memory_current, 268435456);

	pt_manager_bpf_event(&f->m, web->cgroup_id, 3, 0, 0);
	fx_write(f->root, "ct/web/cpu.stat", "usage_usec 301000\n");
	for (uint64_t end = t + 1000; t < end; t += 100)
		pt_manager_tick(&f->m, t);
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->n_wakes, 1);
	assert_string_equal(web->wake_source, "cpu usage");
	assert_int_equal(web->sample.cpu_usage_usec, 301000);
	assert_int_equal(f->m.samples_batched, f->m.samples_taken);

	/* No descriptor to keep: read with pread, nothing batched, the same verdicts. */
	for (size_t i = 0; i < f->m.n_ctxs; i++)
		pt_cgroup_files_close(&f->m.ctxs[i].files);
	pt_cgroup_files_set_limit(0);
	uint64_t batched = f->m.samples_batched, taken = f->m.samples_taken;

	fx_write(f->root, "ct/web/cpu.stat", "usage_usec 2301000\n");
	for (uint64_t end = t + 1000; t < end; t += 100)
		pt_manager_tick(&f->m, t);
	assert_true(f->m.samples_taken > taken);
	assert_int_equal(f->m.samples_batched, batched);
	assert_int_equal(ctx_named(&f->m, "web")->sample.cpu_usage_usec, 2301000);

	/* Back to pread by reload: the batch goes. */
	f->m.cfg.sample_reader = PT_READER_PREAD;
	pt_manager_tick(&f->m, t);
	assert_null(f->m.batch);
}

/* One epoch's scan of this process for @ctx: 32 chunks at @base, accessed or only present. */
/* What @scan found: 32 chunks of this process from @base, all present, accessed or not. */
static void scan_found(struct pt_action *scan, uint64_t base, bool accessed)
{
	struct pt_proc_scan *ps;

	scan->scans = ps = calloc(1, sizeof(*ps));
	assert_non_null(ps);
	scan->n_scans = 1;
	ps->pid = getpid();
	ps->chunks = calloc(32, sizeof(*ps->chunks));
	assert_non_null(ps->chunks);
	ps->n = ps->cap = 32;
	for (int i = 0; i < 32; i++) {
		ps->chunks[i].addr = base + ((uint64_t)i << 16);
		ps->chunks[i].present = 16;
		ps->chunks[i].accessed = accessed ? 16 : 0;
	}
}

static void feed_scan_at(struct pt_manager *m, struct pt_context *ctx, uint64_t base,
			 bool accessed)
{
	struct pt_action *scan = pt_context_scan(ctx, PT_SCANNER_FALLBACK, -1, 16);

	assert_non_null(scan);
	scan_found(scan, base, accessed);
	pt_manager_action_done(m, scan);
}

static void feed_scan(struct pt_manager *m, struct pt_context *ctx, bool accessed)
{
	feed_scan_at(m, ctx, 0x7f0000000000ULL, accessed);
}

/*
 * Tiers nearly full: an idle container's offload waits until there is room again (the
 * levels themselves are test_tier_fill's).
 */
static void test_full_tier_holds_offload(void **state)
{
	struct fixture *f = *state;
	char *sysblock = fx_tmpdir();
	struct pt_context *web;
	uint64_t t = pt_now_ms();

	/* 64 MiB of 1 MiB segments, 95% live. */
	fx_write(sysblock, "pagetier0/seg_stat",
		 "1048576 64 8 1 0 0 0 0 0 15565 67108864\n");
	f->m.sysblock_path = sysblock;
	for (int i = 0; i < 40; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	web = ctx_named(&f->m, "web");
	assert_int_equal(f->m.fill_level, PT_FILL_FULL);
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_int_equal(web->n_offloads, 0);
	assert_true(f->m.fill_deferred > 0);
	{
		char *s = answer(&f->m, "status\n", 0);

		assert_non_null(strstr(s, "tiers: full, 60 of 64 MiB live"));
		free(s);
	}
	/* Room again (half live): the offload it held goes out at the next look. */
	fx_write(sysblock, "pagetier0/seg_stat",
		 "1048576 64 30 1 0 0 0 0 0 8192 67108864\n");
	for (int i = 0; i < 20; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(f->m.fill_level, PT_FILL_OK);
	assert_int_equal(web->n_offloads, 1);
	fx_rmtree(sysblock);
}

/*
 * A steady context (active, touching what it touched before, nothing fresh) is scanned
 * less and less often, each scan standing for the intervals it covered; anything fresh
 * brings it back to every interval.
 */
static void test_steady_scans_stretch(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms(), epochs;

	/* Long enough thresholds for a stretch of 8: idle after 60 s, cold after 2 min. */
	reload_policies(f,
			"[web]\nmatch_cgroup = /ct/web\nidle_threshold = 60s\ncold_after = 2m\n\n"
			"[db]\nmatch_cgroup = /ct/db\nclass = critical\n");
	web = ctx_named(&f->m, "web");
	assert_int_equal(pt_context_max_stretch(web), 8);
	web->policy.cold_after_ms = 16000;
	assert_int_equal(pt_context_max_stretch(web), 4);	/* a quarter of cold_after */
	web->policy.cold_after_ms = 120000;

	feed_scan(&f->m, web, true);	/* 2 MiB fresh: every interval */
	finish_all(&f->m, &f->r);
	assert_int_equal(web->scan_stretch, 1);
	for (uint32_t want = 2; want <= 16; want *= 2) {
		epochs = pt_hot_now(&web->hot);
		feed_scan(&f->m, web, true);	/* the same chunks again: steady */
		finish_all(&f->m, &f->r);
		assert_int_equal(web->scan_stretch, want > 8 ? 8 : want);
		/* It stood for the stretch it was issued with. */
		assert_int_equal(pt_hot_now(&web->hot) - epochs, want / 2);
	}
	/* The tick issues the next scan 8 intervals after the last, not before. */
	web->last_scan_ms = t;
	assert_int_equal(pt_context_next_scan_ms(web, pt_context_stretch(web, false, t)), t + 8000);
	f->r.n = 0;
	pt_manager_tick(&f->m, t + 1000);
	assert_int_equal(count(&f->r, web, PT_JOB_SCAN), 0);
	finish_all(&f->m, &f->r);
	pt_manager_tick(&f->m, t + 8000);
	assert_int_equal(count(&f->r, web, PT_JOB_SCAN), 1);
	finish_all(&f->m, &f->r);
	/*
	 * Fresh memory, 2 MiB: in a scan that stands for 8 epochs a trickle (256 KiB an
	 * epoch), the stretch stays; in one that stands for 2 (1 MiB an epoch, over half of
	 * fresh_bytes), every interval again.
	 */
	feed_scan_at(&f->m, web, 0x7e0000000000ULL, true);
	finish_all(&f->m, &f->r);
	assert_int_equal(web->scan_stretch, 8);
	web->scan_stretch = 2;
	feed_scan_at(&f->m, web, 0x7d0000000000ULL, true);
	finish_all(&f->m, &f->r);
	assert_int_equal(web->scan_stretch, 1);
}

/*
 * An active context whose idle threshold is long is sampled at its steady pace (an eighth of
 * the threshold, at most 2 s, and at each scan), not every poll, whatever its events; it
 * still goes idle once quiet for the threshold.
 */
static void test_active_contexts_sampled_at_their_pace(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms(), last = 0, usage = 1000;
	unsigned int taken = 0;
	char text[64];

	reload_policies(f,
			"[web]\nmatch_cgroup = /ct/web\nidle_threshold = 60s\ncold_after = 0\n\n"
			"[db]\nmatch_cgroup = /ct/db\nclass = critical\nidle_threshold = 1s\n");
	f->m.bpf_wakeups = true;
	web = ctx_named(&f->m, "web");
	/* Steady: its scans find nothing new, so they stretch to 8 s. */
	for (int i = 0; i < 5; i++) {
		feed_scan(&f->m, web, true);
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(web->scan_stretch, 8);
	web->last_scan_ms = t;
	/* 20 s of a working container: half a CPU, a packet and a fault every 100 ms. */
	for (uint64_t end = t + 20000; t < end; t += 100) {
		usage += 50000;
		snprintf(text, sizeof(text), "usage_usec %llu\n", (unsigned long long)usage);
		fx_write(f->root, "ct/web/cpu.stat", text);
		web = ctx_named(&f->m, "web");
		pt_manager_bpf_event(&f->m, web->cgroup_id, PT_BPF_EV_NET, 0, 0);
		pt_manager_bpf_event(&f->m, web->cgroup_id, PT_BPF_EV_FAULT, 0, 0);
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
		web = ctx_named(&f->m, "web");
		taken += web->pace.last_ms != last;
		last = web->pace.last_ms;
	}
	assert_int_equal(web->idle.state, PT_STATE_ACTIVE);
	/* Every 2 s, and at its scans (8 s apart) and each scan's end: 10 + 3 + 3, not 200. */
	assert_in_range(taken, 10, 20);
	/* Quiet from now: idle once the threshold has passed, a period late at most. */
	for (uint64_t end = t + 60000 + PT_PACE_ACTIVE_MAX_MS + 100; t < end; t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
}

/* A job's worker CPU time goes to its container's and to the daemon's, by kind. */
static void test_job_cpu_accounted(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	struct pt_action *scan;

	reload_policies(f, "[web]\nmatch_cgroup = /ct/web\n\n"
			   "[db]\nmatch_cgroup = /ct/db\nclass = critical\n");
	web = ctx_named(&f->m, "web");
	assert_non_null(web);
	for (int i = 0; i < 2; i++) {
		scan = pt_context_scan(web, PT_SCANNER_FALLBACK, -1, 16);
		assert_non_null(scan);
		scan_found(scan, 0x7f0000000000ULL, true);
		scan->job.cpu_ns = 3000000;
		pt_manager_action_done(&f->m, scan);
	}
	assert_int_equal(web->job_cpu_ns[PT_JOB_SCAN], 6000000);
	assert_int_equal(web->job_cpu_ns[PT_JOB_COLD], 0);
	assert_int_equal(f->m.job_cpu_ns[PT_JOB_SCAN], 6000000);
	assert_int_equal(f->m.jobs_done[PT_JOB_SCAN], 2);
}

/* Offloads @n chunks of feed_scan's range from @ctx's model, as cold offload does. */
static void evict_fed_chunks(struct pt_context *ctx, int n)
{
	uint64_t ids[32];

	for (int i = 0; i < n; i++)
		ids[i] = pt_hot_chunk_id(&ctx->hot, 0, 0x7f0000000000ULL + ((uint64_t)i << 16));
	pt_hot_evicted(&ctx->hot, ids, (size_t)n);
}

/* Takes @n chunks of feed_scan's range away and scans them back: the refaults it saw. */
static uint64_t refault_fed_chunks(struct fixture *f, struct pt_context *ctx, int n)
{
	uint64_t before = ctx->hot.refaults;

	evict_fed_chunks(ctx, n);
	feed_scan(&f->m, ctx, true);
	finish_all(&f->m, &f->r);
	return ctx->hot.refaults - before;
}

/*
 * A trickle of refaults (what a container whose requests touch its objects at random reads
 * back at every scan) lets a steady context's scans stretch as fresh memory of that size
 * would; a burst of them (half of fresh_bytes or more) brings it back to every interval, and
 * so does any refault while a wake's prefetch is being measured.
 */
static void test_refault_trickle_stretches_scans(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	struct pt_action *scan;
	uint64_t refaults;

	reload_policies(f,
			"[web]\nmatch_cgroup = /ct/web\nidle_threshold = 60s\ncold_after = 2m\n\n"
			"[db]\nmatch_cgroup = /ct/db\nclass = critical\n");
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->policy.idle.fresh_bytes, 1024 * 1024);
	feed_scan(&f->m, web, true);
	finish_all(&f->m, &f->r);
	feed_scan(&f->m, web, true);
	finish_all(&f->m, &f->r);
	assert_int_equal(web->scan_stretch, 2);

	/* Two 64 KiB chunks back from the tier: 128 KiB fresh, under half of 1 MiB. */
	assert_int_equal(refault_fed_chunks(f, web, 2), 2);
	assert_int_equal(web->scan_stretch, 4);

	/* Nine of them in one epoch: 576 KiB, over half of fresh_bytes: every interval again. */
	web->scan_stretch = 1;
	assert_int_equal(refault_fed_chunks(f, web, 9), 9);
	assert_int_equal(web->scan_stretch, 1);
	refaults = web->hot.refaults;

	/* The same nine in a scan that stands for 4 epochs: 144 KiB an epoch, steady. */
	feed_scan(&f->m, web, true);
	finish_all(&f->m, &f->r);
	assert_int_equal(web->scan_stretch, 2);
	evict_fed_chunks(web, 9);
	scan = pt_context_scan(web, PT_SCANNER_FALLBACK, -1, 16);
	assert_non_null(scan);
	scan_found(scan, 0x7f0000000000ULL, true);
	scan->epochs = 4;
	pt_manager_action_done(&f->m, scan);
	finish_all(&f->m, &f->r);
	assert_int_equal(web->hot.refaults, refaults + 9);
	assert_int_equal(web->scan_stretch, 4);
	feed_scan(&f->m, web, true);
	finish_all(&f->m, &f->r);
	feed_scan(&f->m, web, true);
	finish_all(&f->m, &f->r);
	assert_int_equal(web->scan_stretch, 8);	/* at its bound, PT_HOT_FRESH_EPOCHS */

	/* Still steady, then one refault while a prefetch is measured: every interval. */
	feed_scan(&f->m, web, true);
	finish_all(&f->m, &f->r);
	assert_int_equal(web->scan_stretch, 8);
	web->hot.window_left = 4;
	web->scan_stretch = 1;		/* as a wake's prefetch sets them */
	assert_int_equal(refault_fed_chunks(f, web, 1), 1);
	assert_int_equal(web->scan_stretch, 1);	/* steady, it would be 2 */
}

/*
 * While the host has plenty of memory (MemAvailable at least twice the cold watermark) an
 * active context touching fresh memory at every scan is scanned every 8 intervals (its own
 * pace would be every one), each scan standing for the intervals it covered; memory that
 * gets short, or a wake's prefetch just done, brings it back to its own pace at once.
 */
static void test_plenty_memory_relaxes_scans(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	struct pt_action *scan;
	uint64_t t = pt_now_ms();

	reload_policies(f,
			"[web]\nmatch_cgroup = /ct/web\nidle_threshold = 60s\ncold_after = 16s\n\n"
			"[db]\nmatch_cgroup = /ct/db\nclass = critical\n");
	f->m.cfg.free_watermark = 1ULL << 30;	/* cold_watermark auto: 2 GiB */
	set_available(f, 5ULL << 20);		/* 5 GiB available: plenty */
	web = ctx_named(&f->m, "web");
	assert_int_equal(pt_context_max_stretch(web), 4);	/* a quarter of cold_after */
	feed_scan(&f->m, web, true);
	finish_all(&f->m, &f->r);
	assert_int_equal(web->scan_stretch, 1);	/* all fresh: its own pace is every interval */
	assert_int_equal(pt_context_stretch(web, false, t), 1);
	assert_int_equal(pt_context_stretch(web, true, t), 8);
	web->prefetch_done_ms = t - 1000;	/* a wake's prefetch just done */
	assert_int_equal(pt_context_stretch(web, true, t), 1);
	web->prefetch_done_ms = 0;
	web->policy.idle.threshold_ms = 6000;	/* half the idle threshold bounds it */
	assert_int_equal(pt_context_stretch(web, true, t), 3);
	web->policy.idle.threshold_ms = 60000;

	/* The tick: no scan one interval after the last, one 8 intervals after, for 8 epochs. */
	web->last_scan_ms = t;
	f->r.n = 0;
	pt_manager_tick(&f->m, t + 1000);
	assert_int_equal(count(&f->r, web, PT_JOB_SCAN), 0);
	finish_all(&f->m, &f->r);
	pt_manager_tick(&f->m, t + 8000);
	scan = recorded(&f->r, web, PT_JOB_SCAN);
	assert_non_null(scan);
	assert_int_equal(scan->epochs, 8);
	assert_int_equal(f->m.scans_relaxed, 1);
	finish_all(&f->m, &f->r);

	/*
	 * That scan found nothing fresh: its own pace is now every 2 intervals. Memory short
	 * of twice the watermark: the next scan 2 intervals later, for 2 epochs.
	 */
	assert_int_equal(web->scan_stretch, 2);
	set_available(f, 3ULL << 20);
	web->last_scan_ms = t + 8000;
	f->r.n = 0;
	pt_manager_tick(&f->m, t + 9000);
	assert_int_equal(count(&f->r, web, PT_JOB_SCAN), 0);
	finish_all(&f->m, &f->r);
	pt_manager_tick(&f->m, t + 10000);
	scan = recorded(&f->r, web, PT_JOB_SCAN);
	assert_non_null(scan);
	assert_int_equal(scan->epochs, 2);
	assert_int_equal(f->m.scans_relaxed, 1);
	finish_all(&f->m, &f->r);
}

/*
 * Cold offload keeps its pace when scans are stretched: one scan interval's worth of
 * offload_rate per action, the next one an interval later, scan or not.
 */
static void test_cold_offload_paced(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms();

	reload_policies(f,
			"[web]\nmatch_cgroup = /ct/web\nidle_threshold = 60s\ncold_after = 32s\n"
			"resident_floor = 0\n\n[db]\nmatch_cgroup = /ct/db\nclass = critical\n");
	f->m.cfg.offload_rate = 4 << 16;	/* 4 chunks per scan interval (1 s) */
	pt_manager_tick(&f->m, t);	/* samples it: 256 MiB resident */
	finish_all(&f->m, &f->r);
	web = ctx_named(&f->m, "web");
	assert_int_equal(pt_context_max_stretch(web), 8);	/* a quarter of cold_after */
	/* 32 chunks used once, then nothing for 33 epochs: all cold. */
	feed_scan(&f->m, web, true);
	finish_all(&f->m, &f->r);
	for (int e = 0; e < 33; e++) {
		feed_scan(&f->m, web, false);
		if (count(&f->r, web, PT_JOB_COLD))
			break;
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(count(&f->r, web, PT_JOB_COLD), 1);
	for (int i = 0; i < f->r.n; i++)
		if (f->r.a[i]->kind == PT_JOB_COLD)
			assert_int_equal(f->r.a[i]->n_ids, 4);
	assert_true(web->cold_more);
	finish_all(&f->m, &f->r);
	/* The next scan is stretched further out; the offload goes on each interval. */
	web->last_scan_ms = t;
	web->scan_stretch = 4;
	web->last_cold_ms = t;
	web->idle.last_active_ms = t;
	pt_manager_tick(&f->m, t + 500);
	assert_int_equal(count(&f->r, web, PT_JOB_COLD), 0);	/* not before an interval */
	pt_manager_tick(&f->m, t + 1000);
	assert_int_equal(count(&f->r, web, PT_JOB_COLD), 1);
	assert_int_equal(count(&f->r, web, PT_JOB_SCAN), 0);
	finish_all(&f->m, &f->r);
	pt_manager_tick(&f->m, t + 2000);
	assert_int_equal(count(&f->r, web, PT_JOB_COLD), 1);
	finish_all(&f->m, &f->r);
}

/*
 * Cold offload of an active container waits for the host to need the memory: with a
 * free_watermark of 1 GiB (cold_watermark auto: 2 GiB), 3.8 GiB available holds it, 1.5
 * GiB lets it go (above the watermark, so its host-wide pass does nothing); with
 * cold_watermark = off it goes whatever is available.
 */
static void test_cold_waits_for_memory_need(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms();
	int cold = 0;

	reload_policies(f,
			"[web]\nmatch_cgroup = /ct/web\nidle_threshold = 60s\ncold_after = 32s\n"
			"resident_floor = 0\n\n[db]\nmatch_cgroup = /ct/db\nclass = critical\n");
	f->m.cfg.free_watermark = 1ULL << 30;
	f->m.cfg.offload_rate = 4 << 16;	/* 4 chunks per scan interval: some left after */
	assert_int_equal(pt_config_cold_watermark(&f->m.cfg), 2ULL << 30);
	set_available(f, 4000000);
	pt_manager_tick(&f->m, t);
	finish_all(&f->m, &f->r);
	web = ctx_named(&f->m, "web");
	feed_scan(&f->m, web, true);
	finish_all(&f->m, &f->r);
	for (int e = 0; e < 40; e++) {
		feed_scan(&f->m, web, false);
		cold += count(&f->r, web, PT_JOB_COLD);
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(cold, 0);
	assert_true(f->m.cold_deferred_plenty > 0);
	assert_int_equal(f->m.watermark_offloads, 0);
	/* The host needs memory: the cold chunks leave at the next scan. */
	set_available(f, 1572864);
	f->m.mem_available_ms = 0;	/* a scan interval later */
	feed_scan(&f->m, web, false);
	assert_int_equal(count(&f->r, web, PT_JOB_COLD), 1);
	assert_int_equal(f->m.watermark_offloads, 0);
	finish_all(&f->m, &f->r);
	/* cold_watermark = off: cold_after alone decides. */
	set_available(f, 4000000);
	f->m.mem_available_ms = 0;
	feed_scan(&f->m, web, false);
	assert_int_equal(count(&f->r, web, PT_JOB_COLD), 0);
	finish_all(&f->m, &f->r);
	f->m.cfg.cold_watermark = 0;
	feed_scan(&f->m, web, false);
	assert_int_equal(count(&f->r, web, PT_JOB_COLD), 1);
	finish_all(&f->m, &f->r);
}

/* The chunks of the cold offloads recorded for @ctx. */
static size_t cold_chunks(struct recorder *r, struct pt_context *ctx)
{
	size_t n = 0;

	for (int i = 0; i < r->n; i++)
		if (r->a[i]->kind == PT_JOB_COLD && r->a[i]->cgroup_id == ctx->cgroup_id)
			n += r->a[i]->n_ids;
	return n;
}

/*
 * Host-wide, cold offload asks for the shortfall below cold_watermark and no more: the
 * first container scanned takes it, the next one scanned on a new reading of the same
 * MemAvailable (the first offload not done yet) nothing; once it is done and the host is
 * still short, the next one's turn. Before, each took up to offload_rate's worth.
 */
static void test_cold_takes_the_shortfall_only(void **state)
{
	struct fixture *f = *state;
	const unsigned long long wm_kb = 2ULL << 20, short_kb = 6 * 64;	/* 6 chunks */
	struct pt_context *web, *db;
	uint64_t t = pt_now_ms();

	reload_policies(f,
			"[web]\nmatch_cgroup = /ct/web\nidle_threshold = 60s\ncold_after = 32s\n"
			"resident_floor = 0\n\n[db]\nmatch_cgroup = /ct/db\nidle_threshold = 60s\n"
			"cold_after = 32s\nresident_floor = 0\n");
	f->m.cfg.free_watermark = 1ULL << 30;	/* cold_watermark auto: 2 GiB */
	f->m.cfg.offload_rate = 32 << 16;	/* 32 chunks per scan interval per container */
	set_available(f, 4000000);
	pt_manager_tick(&f->m, t);
	finish_all(&f->m, &f->r);
	web = ctx_named(&f->m, "web");
	db = ctx_named(&f->m, "db");
	feed_scan(&f->m, web, true);
	feed_scan(&f->m, db, true);
	finish_all(&f->m, &f->r);
	for (int e = 0; e < 40; e++) {
		feed_scan(&f->m, web, false);
		feed_scan(&f->m, db, false);
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(f->m.cold_inflight, 0);
	/* Short by 6 chunks: web, scanned first, asks for those 6 of its 32 cold ones. */
	set_available(f, wm_kb - short_kb);
	f->m.mem_available_ms = 0;
	feed_scan(&f->m, web, false);
	assert_int_equal(cold_chunks(&f->r, web), 6);
	assert_int_equal(f->m.cold_inflight, 6 << 16);
	/* A new reading, web's offload not landed yet: nothing left for db. */
	f->m.mem_available_ms = 0;
	feed_scan(&f->m, db, false);
	assert_int_equal(count(&f->r, db, PT_JOB_COLD), 0);
	/* Done, and the host still short: db's turn, for the shortfall again. */
	finish_all(&f->m, &f->r);
	assert_int_equal(f->m.cold_inflight, 0);
	f->m.mem_available_ms = 0;
	feed_scan(&f->m, db, false);
	assert_int_equal(cold_chunks(&f->r, db), 6);
	finish_all(&f->m, &f->r);
	/* cold_watermark off: offload_rate's worth, as before. */
	f->m.cfg.cold_watermark = 0;
	feed_scan(&f->m, web, false);
	assert_int_equal(cold_chunks(&f->r, web), 26);	/* its 32, less the 6 gone */
	finish_all(&f->m, &f->r);
}

/*
 * Idle, after its offload: swap cache nobody maps (what its timers' faults read ahead) is
 * trimmed after a scan once it exceeds PT_IDLE_STRAY_SWAPCACHE, never a mapped page's worth.
 */
static void test_idle_trims_stray_swapcache(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms();

	for (int i = 0; i < 40; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_int_equal(web->n_offloads, 1);
	/* 1 MiB mapped, 1.5 MiB of swap cache: at most 0.5 MiB unmapped, left alone. */
	fx_write(f->root, "ct/web/memory.stat", "anon 1048576\nfile 0\nswapcached 1572864\n");
	f->r.n = 0;
	pt_manager_tick(&f->m, t += 1000);	/* memory.stat is read once per scan interval */
	assert_int_equal(count(&f->r, web, PT_JOB_TRIM), 0);
	finish_all(&f->m, &f->r);
	/*
	 * 8 MiB of swap cache: at least 7 MiB of it unmapped, trimmed, that much at most, by
	 * the tick (an idle context is not scanned), once per scan interval.
	 */
	fx_write(f->root, "ct/web/memory.stat", "anon 1048576\nfile 0\nswapcached 8388608\n");
	pt_manager_tick(&f->m, t += 1000);
	assert_int_equal(count(&f->r, web, PT_JOB_TRIM), 1);
	for (int i = 0; i < f->r.n; i++)
		if (f->r.a[i]->kind == PT_JOB_TRIM)
			assert_int_equal(f->r.a[i]->budget, 7ULL << 20);
	finish_all(&f->m, &f->r);
	fx_write(f->root, "ct/web/memory.current", "2097152\n");
	fx_write(f->root, "ct/web/memory.stat", "anon 1048576\nfile 0\nswapcached 1048576\n");
	pt_manager_tick(&f->m, t += 200);
	assert_int_equal(count(&f->r, web, PT_JOB_TRIM), 0);	/* not before an interval */
	finish_all(&f->m, &f->r);
	/*
	 * A timer's burst of faults between two intervals: memory.current, read each tick, grows
	 * by more than a trim's worth over its idle low; memory.stat is read at once and the
	 * stray swap cache goes without waiting for the interval.
	 */
	fx_write(f->root, "ct/web/memory.current", "7340032\n");
	fx_write(f->root, "ct/web/memory.stat", "anon 1048576\nfile 0\nswapcached 6291456\n");
	pt_manager_tick(&f->m, t += 200);
	assert_int_equal(count(&f->r, web, PT_JOB_TRIM), 1);
	for (int i = 0; i < f->r.n; i++)
		if (f->r.a[i]->kind == PT_JOB_TRIM)
			assert_int_equal(f->r.a[i]->budget, 5ULL << 20);
	finish_all(&f->m, &f->r);
	/*
	 * Growth of its own mapped memory is not stray swap cache: looked at once, then measured
	 * from the new level, so memory.stat is not read at every tick.
	 */
	fx_write(f->root, "ct/web/memory.current", "12582912\n");
	fx_write(f->root, "ct/web/memory.stat", "anon 11534336\nfile 0\nswapcached 1048576\n");
	pt_manager_tick(&f->m, t += 1000);
	assert_int_equal(count(&f->r, web, PT_JOB_TRIM), 0);
	assert_int_equal(web->idle_low_current, 12582912);
	assert_false(pt_context_trim_due(web, t + 200, 1000));
	finish_all(&f->m, &f->r);
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
}

/*
 * A context of its own (no manager) that woke at @woke and whose prefetch ended at @done,
 * with @anon_mib mapped and @swapcached_mib in the swap cache at its last sample: active,
 * with a model, for the trim's rules.
 */
static void woken_ctx(struct pt_context *c, const char *name, uint64_t woke, uint64_t done,
		      uint64_t anon_mib, uint64_t swapcached_mib)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->policy.name, sizeof(c->policy.name), "%s", name);
	c->hot_ok = true;
	c->hot.chunk_shift = 16;
	c->idle.state = PT_STATE_ACTIVE;
	c->n_wakes = 1;
	c->idle.woke_at_ms = woke;
	c->prefetch_done_ms = done;
	c->sample.anon = anon_mib << 20;
	c->sample.swapcached = swapcached_mib << 20;
}

/*
 * The mapped files an idle offload found resident are read ahead at the wake by a forked
 * child, which costs a copy of the daemon's page tables: a small file set (a binary's
 * pages) is left to the kernel's read-around; 1 MiB or more is kept.
 */
static void test_small_file_set_not_read_ahead(void **state)
{
	static const uint64_t sizes[] = { 512ULL << 10, 1ULL << 20, 32ULL << 20 };

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct pt_context c;
		struct pt_action *a;

		woken_ctx(&c, "sleeper", 1000, 1000, 8, 0);
		c.hot_ok = false;
		c.policy.prefetch = true;
		c.idle.state = PT_STATE_IDLE;
		a = pt_context_offload(&c, 0);
		assert_non_null(a);
		a->files = calloc(1, sizeof(*a->files));
		assert_non_null(a->files);
		a->files[0].pid = 42;
		a->files[0].r = calloc(1, sizeof(*a->files[0].r));
		assert_non_null(a->files[0].r);
		a->files[0].r[0] = (struct pt_range){ .start = 0x400000, .len = sizes[i] };
		a->files[0].n = a->files[0].cap = 1;
		a->n_files = 1;
		pt_context_apply(&c, a);
		assert_int_equal(c.n_file_set, sizes[i] >= (1ULL << 20) ? 1 : 0);
		pt_context_release(&c);
	}
}

/*
 * A wake whose container is still reading its memory back when the window ends (a large
 * one, a slow drive): what it has not mapped yet stays while it keeps mapping more, counted
 * from the prefetch's end, not the wake; it goes once the reading stops.
 */
static void test_trim_waits_while_the_prefetch_is_read(void **state)
{
	struct pt_context c;
	struct pt_action *a;
	uint64_t t = 1000000;

	(void)state;
	woken_ctx(&c, "ptwork", t, t + 11000, 60, 256);	/* 256 MiB, 11 s */
	/* 10 s after the wake, but 1 s after the prefetch: nothing goes. */
	assert_null(pt_context_trim(&c, t + 12000));
	/* Past the window; it maps more at each look: nothing goes. */
	for (uint64_t at = t + 21000; at < t + 25000; at += 1000) {
		c.sample.anon += 40ULL << 20;
		assert_null(pt_context_trim(&c, at));
	}
	/* It stopped reading with 36 MiB unmapped (its data was 220 MiB): those go. */
	a = pt_context_trim(&c, t + 26000);
	assert_non_null(a);
	assert_int_equal(a->budget, 36ULL << 20);
	pt_context_apply(&c, a);
}

/*
 * The swap cache an active container holds beyond what it maps, once its wake's window is
 * over, goes (a wake before the model saw it work restores the whole offload set); a trim
 * that wrote holds the next back: an active one 10 s, doubled for each write in a row, an
 * idle one 30 s.
 */
static void test_trim_holds_after_a_write(void **state)
{
	struct pt_context c;
	struct pt_action *a;
	uint64_t t = 1000000, now, at;

	(void)state;
	woken_ctx(&c, "redis", t - 2000, t, 8, 53);
	/* Within the window: the prefetch may still be used. */
	assert_null(pt_context_trim(&c, t + 5000));
	a = pt_context_trim(&c, t + 11000);
	assert_non_null(a);
	assert_true(a->trim_active);
	assert_int_equal(a->budget, 45ULL << 20);
	a->drop_stop = PT_DROP_WROTE;	/* the reclaim reached memory in use */
	now = pt_now_ms();
	pt_context_apply(&c, a);
	assert_int_equal(c.trims_wrote, 1);
	assert_in_range(c.trim_held_until_ms, now + 10000, pt_now_ms() + 10000);
	assert_null(pt_context_trim(&c, c.trim_held_until_ms - 1));
	/* Held 10 s, then its 45 MiB nobody maps go again; that wrote too: held 20 s. */
	at = c.trim_held_until_ms > t + 22000 ? c.trim_held_until_ms : t + 22000;
	a = pt_context_trim(&c, at);
	assert_non_null(a);
	assert_int_equal(a->budget, 45ULL << 20);
	a->drop_stop = PT_DROP_WROTE;
	now = pt_now_ms();
	pt_context_apply(&c, a);
	assert_in_range(c.trim_held_until_ms, now + 20000, pt_now_ms() + 20000);
	/* Five writes in a row and more: 320 s at most. */
	for (int i = 0; i < 6; i++) {
		at = (c.trim_held_until_ms > at ? c.trim_held_until_ms : at) + 10000;
		a = pt_context_trim(&c, at);
		assert_non_null(a);
		a->drop_stop = PT_DROP_WROTE;
		pt_context_apply(&c, a);
	}
	now = pt_now_ms();
	assert_in_range(c.trim_held_until_ms, now + 320000 - 1000, now + 320000);
	/* One that did not write: the next write holds 10 s again. */
	at = (c.trim_held_until_ms > at ? c.trim_held_until_ms : at) + 10000;
	assert_non_null(a = pt_context_trim(&c, at));
	a->drop_stop = PT_DROP_DONE;
	pt_context_apply(&c, a);
	assert_int_equal(c.trim_holds_in_row, 0);
	assert_int_equal(c.trims_wrote, 8);
	/* Idle: the next look may trim again (its offload reset the hold). */
	c.idle.state = PT_STATE_IDLE;
	c.n_offloads = 1;
	c.trim_held_until_ms = 0;
	a = pt_context_trim(&c, t + 3600000);
	assert_non_null(a);
	assert_false(a->trim_active);
	a->drop_stop = PT_DROP_WROTE;
	pt_context_apply(&c, a);
	assert_null(pt_context_trim(&c, pt_now_ms() + 1000));
	assert_non_null(a = pt_context_trim(&c, pt_now_ms() + 31000));
	a->drop_stop = PT_DROP_DONE;
	c.trim_held_until_ms = 0;
	pt_context_apply(&c, a);
	assert_int_equal(c.trims_wrote, 9);
	assert_int_equal(c.trim_held_until_ms, 0);
	/*
	 * Idle, a trim that freed nothing (its budget spent on pages in use) holds the next as
	 * a write does, and each in a row doubles it: 30 s, then 60 s (an idle PostgreSQL's
	 * trims ran once a second, each writing 384 KiB).
	 */
	assert_non_null(a = pt_context_trim(&c, t + 3700000));
	a->drop_stop = PT_DROP_BUDGET;
	a->freed = 64 * 1024;
	now = pt_now_ms();
	pt_context_apply(&c, a);
	assert_in_range(c.trim_held_until_ms, now + 30000, pt_now_ms() + 30000);
	assert_non_null(a = pt_context_trim(&c, c.trim_held_until_ms));
	a->drop_stop = PT_DROP_WROTE;
	now = pt_now_ms();
	pt_context_apply(&c, a);
	assert_in_range(c.trim_held_until_ms, now + 60000, pt_now_ms() + 60000);
	assert_int_equal(c.trims_wrote, 10);	/* the one that freed nothing wrote nothing */
	/* One that freed what it could (its budget, with most of it freed): no new hold. */
	at = c.trim_held_until_ms;
	assert_non_null(a = pt_context_trim(&c, at));
	a->drop_stop = PT_DROP_BUDGET;
	a->freed = 4ULL << 20;
	pt_context_apply(&c, a);
	assert_int_equal(c.trim_holds_in_row, 0);
	assert_int_equal(c.trim_held_until_ms, at);
	assert_non_null(a = pt_context_trim(&c, at + 1000));
	a->drop_stop = PT_DROP_DONE;
	pt_context_apply(&c, a);
}

/*
 * memcached's LRU crawler reads every item every few minutes: each idle offload of it came
 * back with no request, and was written again at the next. Each offload its own background
 * undid doubles the wait before the next one (idle_threshold times 1, 3, 7, ... 63), and
 * makes it at least twice its background's period; a busy period with requests sets it
 * back; a period after which there was no offload to undo (the offload deferred, then the
 * crawler woke it) judges nothing, but measures the period again.
 */
static void test_offload_backoff(void **state)
{
	struct pt_context c;
	uint64_t now = 100000;

	(void)state;
	woken_ctx(&c, "memcached", 1000, 1000, 8, 0);
	c.policy.idle.threshold_ms = 30000;
	/* Its first idle period: no offload before it, no wait. */
	c.peak_since_wake = 48ULL << 20;
	assert_int_equal(pt_context_offload_backoff(&c, true, now), 0);
	assert_int_equal(c.offload_after_ms, now);
	/* Offloaded: 46 of 48 MiB freed, 2 MiB left. */
	c.n_offloads = 1;
	c.idle_saved = 46ULL << 20;
	c.resident_after_idle = 2ULL << 20;
	/*
	 * The crawler brought 40 MiB back (the cold path may have taken it out again since:
	 * its highest since the wake counts), no request came: the next offload waits 30 s.
	 */
	c.peak_since_wake = 42ULL << 20;
	c.sample.memory_current = 2ULL << 20;
	assert_int_equal(pt_context_offload_backoff(&c, true, now), 30000);
	assert_int_equal(c.offload_backoff, 1);
	assert_int_equal(c.offloads_undone, 1);
	assert_int_equal(c.offload_after_ms, now + 30000);
	/* Woken again before that offload: nothing new to judge, the wait stays. */
	assert_int_equal(pt_context_offload_backoff(&c, true, now + 60000), 30000);
	assert_int_equal(c.offload_backoff, 1);
	/* Offloaded, undone again: 90 s, then 210 s. */
	c.n_offloads = 2;
	assert_int_equal(pt_context_offload_backoff(&c, true, now), 90000);
	c.n_offloads = 3;
	assert_int_equal(pt_context_offload_backoff(&c, true, now), 210000);
	/* Up to 63 thresholds. */
	for (int i = 0; i < 8; i++) {
		c.n_offloads++;
		pt_context_offload_backoff(&c, true, now);
	}
	assert_int_equal(c.offload_backoff, PT_BACKOFF_MAX);
	assert_int_equal(c.offload_after_ms, now + 63 * 30000ULL);
	/* A background period that brought back less than half of it: unchanged. */
	c.n_offloads++;
	c.peak_since_wake = 20ULL << 20;
	assert_int_equal(pt_context_offload_backoff(&c, true, now), 63 * 30000ULL);
	/* Requests came: none. */
	c.n_offloads++;
	c.peak_since_wake = 42ULL << 20;
	assert_int_equal(pt_context_offload_backoff(&c, false, now), 0);
	assert_int_equal(c.offload_backoff, 0);
	/*
	 * Its crawler came back 4 minutes after the offload: the next waits twice that at the
	 * first undoing already, so that the crawler wakes it first. Then the crawler's period
	 * is from one of its wakes to the next (200 s: 400 s), up to 63 thresholds.
	 */
	c.n_offloads++;
	c.offloaded_at_ms = 1000000;
	c.idle.woke_at_ms = 1000000 + 240000;
	assert_int_equal(pt_context_offload_backoff(&c, true, now), 480000);
	c.idle.woke_at_ms += 200000;
	assert_int_equal(pt_context_offload_backoff(&c, true, now), 400000);
	assert_int_equal(c.offload_backoff, 1);
	c.idle.woke_at_ms += 1200000;
	assert_int_equal(pt_context_offload_backoff(&c, true, now), 63 * 30000ULL);
	assert_int_equal(pt_context_offload_backoff(&c, false, now), 0);
	assert_int_equal(c.bg_period_ms, 0);
	/* An offload of less than PT_BACKOFF_MIN_SAVED is not worth judging. */
	c.n_offloads++;
	c.idle_saved = 3ULL << 20;
	c.peak_since_wake = 5ULL << 20;
	assert_int_equal(pt_context_offload_backoff(&c, true, now), 0);
	assert_int_equal(c.offloads_undone, 12);
}

/*
 * An active container's faults keep reading swap ahead of them after its wake (a light load
 * on part of its data): that swap cache goes, but at most once per PT_TRIM_STRAY_PACE_MS,
 * not at every scan.
 */
static void test_active_stray_trims_are_paced(void **state)
{
	struct pt_context c;
	struct pt_action *a;
	uint64_t t = 1000000;

	(void)state;
	woken_ctx(&c, "redis", t - 2000, t, 8, 11);
	a = pt_context_trim(&c, t + 11000);
	assert_non_null(a);
	assert_int_equal(a->budget, 3ULL << 20);
	a->drop_stop = PT_DROP_DONE;	/* fenced or not, nothing written */
	pt_context_apply(&c, a);
	/* Its next faults read 3 MiB ahead again, scan after scan: left for now. */
	for (uint64_t at = t + 12000; at < t + 21000; at += 1000)
		assert_null(pt_context_trim(&c, at));
	/* Ten seconds on: trimmed again. */
	assert_non_null(a = pt_context_trim(&c, t + 21000));
	assert_int_equal(a->budget, 3ULL << 20);
	pt_context_apply(&c, a);
	assert_int_equal(c.trims_wrote, 0);
}

/*
 * An idle container's CPU while its offload and settle run (its timers faulting on pages
 * being written) is no wake; the same CPU after them is.
 */
static void test_cpu_during_the_offload_is_no_wake(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms(), usage = 1000;
	char buf[64];

	web = web_offload_submitted(f, &t);
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_true(web->busy);
	recorded(&f->r, web, PT_JOB_OFFLOAD)->job.started = true;	/* a worker runs it */
	/* 3 s at half a CPU, the offload still running: idle. */
	for (int i = 0; i < 30; i++, t += 100) {
		snprintf(buf, sizeof(buf), "usage_usec %llu\n", (unsigned long long)(usage += 50000));
		fx_write(f->root, "ct/web/cpu.stat", buf);
		pt_manager_tick(&f->m, t);
	}
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	/* The offload and its settle passes done, nothing more: still idle. */
	for (int i = 0; i < 40 && (web->busy || web->settle_passes); i++, t += 100) {
		finish_all(&f->m, &f->r);
		pt_manager_tick(&f->m, t);
	}
	finish_all(&f->m, &f->r);
	assert_false(web->busy);
	assert_int_equal(web->settle_passes, 0);
	for (int i = 0; i < 20; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	/* Half a CPU now: its own work, a wake once the wake span (1 s) is covered. */
	for (int i = 0; i < 20 && web->idle.state == PT_STATE_IDLE; i++, t += 100) {
		snprintf(buf, sizeof(buf), "usage_usec %llu\n", (unsigned long long)(usage += 50000));
		fx_write(f->root, "ct/web/cpu.stat", buf);
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	assert_int_equal(web->idle.state, PT_STATE_ACTIVE);
	assert_string_equal(web->wake_source, "cpu usage");
}

/*
 * ... but only while it runs: an offload still queued behind other jobs (a starved
 * background pool) pages nothing out, and the CPU the container uses meanwhile is its own.
 */
static void test_cpu_while_the_offload_waits_is_a_wake(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	uint64_t t = pt_now_ms(), usage = 1000;
	char buf[64];

	web = web_offload_submitted(f, &t);
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	assert_true(web->busy);
	assert_false(pt_context_action_running(web));	/* queued: no worker took it */
	for (int i = 0; i < 30 && web->idle.state == PT_STATE_IDLE; i++, t += 100) {
		snprintf(buf, sizeof(buf), "usage_usec %llu\n", (unsigned long long)(usage += 50000));
		fx_write(f->root, "ct/web/cpu.stat", buf);
		pt_manager_tick(&f->m, t);
	}
	assert_int_equal(web->idle.state, PT_STATE_WAKING);	/* its prefetch follows */
	assert_string_equal(web->wake_source, "cpu usage");
}


/*
 * A container whose scans all fell while it worked goes idle with no idle working set
 * known: the offload waits for a scan that sees it quiet (the first ends the busy epoch,
 * the next comes a scan interval later), and keeps what that scan saw it touch (its
 * timers' pages).
 */
static void test_idle_offload_waits_for_a_quiet_scan(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web;
	struct pt_action *scan;
	uint64_t t = pt_now_ms(), usage = 1000;
	char buf[64];

	/* Busy for 3 s (its CPU moves every tick), its scans applied as they end. */
	for (int i = 0; i < 30; i++, t += 100) {
		snprintf(buf, sizeof(buf), "usage_usec %llu\n", (unsigned long long)(usage += 50000));
		fx_write(f->root, "ct/web/cpu.stat", buf);
		pt_manager_tick(&f->m, t);
		finish_all(&f->m, &f->r);
	}
	web = ctx_named(&f->m, "web");
	assert_int_equal(web->idle.state, PT_STATE_ACTIVE);
	assert_true(web->scans > 0);
	/* Quiet: no scan between its last busy one and the verdict. */
	for (int i = 0; i < 30 && web->idle.state == PT_STATE_ACTIVE; i++, t += 100) {
		pt_manager_tick(&f->m, t);
		if (web->idle.state == PT_STATE_ACTIVE)
			finish_all(&f->m, &f->r);
	}
	assert_int_equal(web->idle.state, PT_STATE_IDLE);
	/* No offload at the verdict: a scan, which ends the busy epoch. */
	assert_true(web->offload_pending);
	assert_int_equal(count(&f->r, web, PT_JOB_OFFLOAD), 0);
	assert_int_equal(count(&f->r, web, PT_JOB_SCAN), 1);
	assert_int_equal(web->quiet_scans, 1);
	finish_all(&f->m, &f->r);
	assert_int_equal(web->busy_epoch + 1, pt_hot_now(&web->hot));
	/* The next one a scan interval after it (it ended at t); nothing offloaded meanwhile. */
	web->last_epoch_ms = t;
	pt_manager_tick(&f->m, t + 500);
	assert_int_equal(count(&f->r, web, PT_JOB_OFFLOAD), 0);
	assert_int_equal(count(&f->r, web, PT_JOB_SCAN), 0);
	pt_manager_tick(&f->m, t += 1000);
	assert_int_equal(count(&f->r, web, PT_JOB_OFFLOAD), 0);
	scan = recorded(&f->r, web, PT_JOB_SCAN);
	assert_non_null(scan);
	assert_int_equal(web->quiet_scans, 2);
	/* It sees its timers' 32 chunks. */
	scan_found(scan, 0x7f0000000000ULL, true);
	finish_all(&f->m, &f->r);
	assert_true(web->busy_epoch + 1 < pt_hot_now(&web->hot));
	/* The quiet epoch is there: the offload goes, keeping what it touched. */
	pt_manager_tick(&f->m, t += 100);
	assert_int_equal(count(&f->r, web, PT_JOB_SCAN), 0);
	assert_int_equal(count(&f->r, web, PT_JOB_OFFLOAD), 1);
	assert_false(web->offload_pending);
	assert_int_equal(web->keep_bytes, 32ULL << 16);
	assert_true(recorded(&f->r, web, PT_JOB_OFFLOAD)->n_keep > 0);
}

/* An active context @name with prefetch on, nothing else set. */
static void active_ctx(struct pt_context *c, const char *name)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->policy.name, sizeof(c->policy.name), "%s", name);
	c->policy.prefetch = true;
	c->idle.state = PT_STATE_ACTIVE;
}

/*
 * A wake between an idle offload and the end of its settle: what the offload wrote is
 * dropped after the prefetch (or by a trim when there is nothing to prefetch), at most what
 * the settle had not reclaimed yet and never more than the swap cache nobody maps (the
 * prefetch's worker also leaves its wake set's bytes); a wake after the settle drops nothing.
 */
static void test_wake_drops_an_interrupted_offload(void **state)
{
	struct pt_context c;
	struct pt_action *a;

	(void)state;
	active_ctx(&c, "redis");
	c.offload_requested = 71ULL << 20;
	c.reclaimed = 9ULL << 20;
	c.settle_passes = 10;
	/* Nothing recorded to bring back and no stray swap cache sampled: nothing to trim. */
	assert_null(pt_context_prefetch(&c, 0, -1));
	c.n_wakes = 0;
	c.settle_passes = 10;
	/* With 66 MiB of it nobody maps: a trim of what is left unsettled. */
	c.sample.swapcached = 70ULL << 20;
	c.sample.anon = 4ULL << 20;
	a = pt_context_prefetch(&c, 0, -1);
	assert_non_null(a);
	assert_int_equal(a->kind, PT_JOB_TRIM);
	assert_true(a->trim_active);
	assert_int_equal(a->budget, 62ULL << 20);
	assert_int_equal(c.settle_passes, 0);
	pt_context_apply(&c, a);
	/* A wake set: the prefetch carries the drop. */
	c.settle_passes = 10;
	c.wake_set = calloc(1, sizeof(*c.wake_set));
	c.n_wake_set = 1;
	a = pt_context_prefetch(&c, 0, -1);
	assert_non_null(a);
	assert_int_equal(a->kind, PT_JOB_PREFETCH);
	assert_int_equal(a->unsettled, 62ULL << 20);
	a->freed = 60ULL << 20;
	a->drop_stop = PT_DROP_DONE;
	pt_context_apply(&c, a);
	assert_int_equal(c.reclaimed, 69ULL << 20);
	/* Settled before the wake: nothing to drop, nothing to do. */
	assert_int_equal(c.settle_passes, 0);
	assert_null(pt_context_prefetch(&c, 0, -1));
}

/*
 * The settle reclaims down to the floor, the idle working set and the kernel's memory
 * charged to the cgroup (memory.reclaim cannot take the last, and a target without it took
 * the difference from the idle working set), in steps that shrink on the way.
 */
static void test_settle_leaves_the_idle_working_set(void **state)
{
	struct pt_context c;
	struct pt_action *a;

	(void)state;
	active_ctx(&c, "redis");
	c.idle.state = PT_STATE_IDLE;
	c.policy.resident_floor_bytes = 1ULL << 20;
	c.keep_bytes = 3ULL << 20;
	c.sample.kernel = 2ULL << 20;
	c.settle_passes = 2;
	a = pt_context_settle(&c);
	assert_non_null(a);
	assert_int_equal(a->kind, PT_JOB_SETTLE);
	assert_int_equal(a->budget, 6ULL << 20);
	/*
	 * In steps: half the way to the middle of the slack band (7 MiB here), so never less
	 * than a quarter of the band; nothing once within the band.
	 */
	assert_int_equal(pt_settle_step(71ULL << 20, 6ULL << 20), 32ULL << 20);
	assert_int_equal(pt_settle_step(11ULL << 20, 6ULL << 20), 2ULL << 20);
	assert_int_equal(pt_settle_step((8ULL << 20) + 8192, 6ULL << 20), (512ULL << 10) + 4096);
	assert_int_equal(pt_settle_step(8ULL << 20, 6ULL << 20), 0);
	assert_int_equal(pt_settle_step(1ULL << 20, 6ULL << 20), 0);
	/* Down to it (within the slack): settled, no more passes. */
	a->resident_after = (6ULL << 20) + 4096;
	pt_context_apply(&c, a);
	assert_int_equal(c.settle_passes, 0);
	assert_null(pt_context_settle(&c));
}

/*
 * A wake brings back the model's wake set only once the model saw the container work;
 * a daemon started beside an idle container restores all it offloaded at the first wake.
 */
static void test_wake_set_needs_busy_scans(void **state)
{
	struct pt_context c;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.hot_ok = true;
	c.hot.n_wake_set = 3;
	c.busy_scans = 1;
	assert_false(pt_context_wake_from_model(&c));
	c.busy_scans = PT_WAKE_RECENT_EPOCHS;
	assert_true(pt_context_wake_from_model(&c));
	c.hot.n_wake_set = 0;
	assert_false(pt_context_wake_from_model(&c));
	c.hot.n_wake_set = 3;
	c.hot_ok = false;
	assert_false(pt_context_wake_from_model(&c));
}

/* One process's offload set of @chunks 64 KiB chunks from @base, as the idle offload left it. */
static struct pt_proc_ranges *offload_set(uint64_t base, uint64_t chunks)
{
	struct pt_proc_ranges *set = calloc(1, sizeof(*set));

	assert_non_null(set);
	set->pid = 100;
	set->start = 7;
	set->r = calloc(1, sizeof(*set->r));
	assert_non_null(set->r);
	set->r[0].start = base;
	set->r[0].len = chunks << 16;
	set->n = set->cap = 1;
	return set;
}

/* An active context whose model knows one process and has room for @n wake-set chunks. */
static void rest_ctx(struct pt_context *c, const char *name, size_t n)
{
	active_ctx(c, name);
	assert_int_equal(pt_hot_init(&c->hot, 16, 1 << 12), 0);
	c->hot_ok = true;
	c->busy_scans = PT_WAKE_RECENT_EPOCHS;
	c->hot.pids[0] = 100;
	c->hot.starts[0] = 7;
	c->hot.wake_set = calloc(n, sizeof(*c->hot.wake_set));
	assert_non_null(c->hot.wake_set);
}

/*
 * The rest of a wake: the wake's prefetch takes the model's set; what else the idle offload
 * paged out comes back once PT_REST_MISSES demand reads after that prefetch ask for it,
 * within PT_REST_WINDOW_MS, and no more than the host's room. Without them it is dropped.
 */
static void test_wake_rest(void **state)
{
	const uint64_t base = 0x7f0000000000ULL, chunk = 1ULL << 16;
	uint64_t t = pt_now_ms();
	struct pt_context c;
	struct pt_action *a;

	(void)state;
	rest_ctx(&c, "pyweb", 2);	/* the model saw chunks 3 and 4 of 16 used; the offload paged out all 16 */
	c.hot.wake_set[0] = pt_hot_chunk_id(&c.hot, 0, base + 4 * chunk);
	c.hot.wake_set[1] = pt_hot_chunk_id(&c.hot, 0, base + 3 * chunk);
	c.hot.n_wake_set = 2;
	c.wake_set = offload_set(base, 16);
	c.n_wake_set = 1;

	a = pt_context_prefetch(&c, 0, -1);
	assert_non_null(a);
	assert_false(a->rest);
	assert_int_equal(a->n_set, 1);
	assert_int_equal(a->budget, 2 * chunk);
	/* The rest: chunks 0-2 and 5-15, waiting for the prefetch to be done. */
	assert_int_equal(c.n_rest_set, 1);
	assert_int_equal(c.rest_set[0].n, 2);
	assert_int_equal(c.rest_set[0].r[0].start, base);
	assert_int_equal(c.rest_set[0].r[0].len, 3 * chunk);
	assert_int_equal(c.rest_set[0].r[1].start, base + 5 * chunk);
	assert_int_equal(c.rest_set[0].r[1].len, 11 * chunk);
	assert_null(pt_context_rest(&c, t, 1000, 0, UINT64_MAX, 0, -1));	/* busy */
	a->bytes = (int64_t)(2 * chunk);
	pt_context_apply(&c, a);
	assert_int_not_equal(c.rest_until_ms, 0);
	/*
	 * The first look takes the count. A burst in the first second, then too few in the
	 * next: nothing. Then two seconds in a row with PT_REST_MISSES each: the rest.
	 */
	assert_null(pt_context_rest(&c, t, 40, 0, UINT64_MAX, 0, -1));
	assert_null(pt_context_rest(&c, t + 500, 100, 0, UINT64_MAX, 0, -1));
	assert_null(pt_context_rest(&c, t + 1000, 100, 0, UINT64_MAX, 0, -1));
	assert_null(pt_context_rest(&c, t + 2000, 100 + PT_REST_MISSES - 1, 0, UINT64_MAX, 0, -1));
	assert_null(pt_context_rest(&c, t + 3000, 120, 0, UINT64_MAX, 0, -1));
	/* No room on the host: it waits. */
	assert_null(pt_context_rest(&c, t + 4000, 130, 0, 0, 0, -1));
	a = pt_context_rest(&c, t + 4100, 130, 0, 5 * chunk, 0, -1);
	assert_non_null(a);
	assert_true(a->rest);
	assert_false(a->rest_waited);	/* the share's: speculative, in the background pool */
	assert_int_equal(a->kind, PT_JOB_PREFETCH);
	/* As far as the room goes, in address order: chunks 0-2, then 5-6; 7-15 stay. */
	assert_int_equal(a->budget, 5 * chunk);
	assert_int_equal(a->n_set, 1);
	assert_int_equal(a->set[0].n, 2);
	assert_int_equal(a->set[0].r[1].len, 2 * chunk);
	assert_int_equal(c.n_rest_set, 1);
	assert_int_equal(c.rest_set[0].n, 1);
	assert_int_equal(c.rest_set[0].r[0].start, base + 7 * chunk);
	assert_int_equal(c.rest_set[0].r[0].len, 9 * chunk);
	a->bytes = (int64_t)(5 * chunk);
	pt_context_apply(&c, a);
	assert_int_equal(c.n_rests, 1);
	assert_int_equal(c.rest_requested, 5 * chunk);
	/* Once per wake. */
	assert_null(pt_context_rest(&c, t + 400, 1000, 0, UINT64_MAX, 0, -1));

	/*
	 * The next wake, with no demand reads past its prefetch: past the window nothing is
	 * restored, and what stays out joins the next idle offload's set.
	 */
	c.idle.state = PT_STATE_ACTIVE;
	free(c.hot.wake_set);
	c.hot.wake_set = calloc(1, sizeof(*c.hot.wake_set));
	assert_non_null(c.hot.wake_set);
	c.hot.wake_set[0] = pt_hot_chunk_id(&c.hot, 0, base);
	c.hot.n_wake_set = 1;
	c.wake_set = offload_set(base, 4);
	c.n_wake_set = 1;
	a = pt_context_prefetch(&c, 0, -1);
	assert_non_null(a);
	/* Chunks 1-3, and 7-15, still out since the last wake. */
	assert_int_equal(c.n_rest_set, 1);
	assert_int_equal(c.rest_set[0].n, 2);
	assert_int_equal(c.rest_set[0].r[1].start, base + 7 * chunk);
	pt_context_apply(&c, a);
	/*
	 * Demand reads two seconds in a row, but since the wake fewer pages than an eighth of
	 * the rest's 192 (a server serving a small part of its data): the rest stays out.
	 */
	c.rest_misses_wake = 3;
	t = pt_now_ms();
	assert_null(pt_context_rest(&c, t, 5, 0, UINT64_MAX, 0, -1));
	assert_null(pt_context_rest(&c, t + 1000, 5 + PT_REST_MISSES, 0, UINT64_MAX, 0, -1));
	assert_null(pt_context_rest(&c, t + 2000, 5 + 2 * PT_REST_MISSES, 0, UINT64_MAX, 0, -1));
	assert_int_equal(c.rest_streak, PT_REST_PERIODS);
	assert_null(pt_context_rest(&c, t + PT_REST_WINDOW_MS + 1, 500, 0, UINT64_MAX, 0, -1));
	assert_int_equal(c.rest_until_ms, 0);
	assert_int_equal(c.n_rest_set, 1);
	/* Idle again (a wake that was only its timers): the offload pages out chunk 0 only. */
	c.sample.anon = chunk;
	a = pt_context_offload(&c, 0);
	assert_non_null(a);
	a->set = offload_set(base, 1);
	a->n_set = 1;
	pt_context_apply(&c, a);
	assert_int_equal(c.n_rest_set, 0);
	assert_int_equal(c.n_wake_set, 1);
	assert_int_equal(c.wake_set[0].n, 2);	/* 0 and the rest: 1-3, 7-15 */
	assert_int_equal(c.wake_set[0].r[0].start, base);
	assert_int_equal(c.wake_set[0].r[0].len, 4 * chunk);
	assert_int_equal(c.wake_set[0].r[1].len, 9 * chunk);
	pt_context_release(&c);
}

/*
 * Demand reads too few for the rest's share, however costly, leave the rest out: two
 * periods in a row in which the container waited for memory PT_REST_STALL_PCT of the time
 * or more only say where a rest the share asks for runs (first, as the wake's prefetch).
 * A stall without demand reads counts for nothing.
 */
static void test_wake_rest_when_waiting(void **state)
{
	const uint64_t base = 0x7f0000000000ULL, chunk = 1ULL << 16;
	const uint64_t light = PT_REST_PERIOD_MS * 1000 * PT_REST_STALL_PCT / 100 / 2;
	const uint64_t heavy = 3 * light;
	uint64_t t = pt_now_ms(), m = 100, stall = 5000000;
	struct pt_context c;
	struct pt_action *a;

	(void)state;
	rest_ctx(&c, "postgres", 1);
	c.hot.wake_set[0] = pt_hot_chunk_id(&c.hot, 0, base);
	c.hot.n_wake_set = 1;
	c.wake_set = offload_set(base, 32);
	c.n_wake_set = 1;
	a = pt_context_prefetch(&c, 0, -1);
	assert_non_null(a);
	a->bytes = (int64_t)chunk;
	pt_context_apply(&c, a);
	assert_int_equal(c.n_rest_set, 1);	/* chunks 1-31: 496 pages, an eighth is 62 */
	c.rest_misses_wake = m;

	assert_null(pt_context_rest(&c, t, m, stall, UINT64_MAX, 0, -1));
	/* Waiting 5% of the time, a read a period over PT_REST_MISSES: not enough. */
	for (int i = 1; i <= 2; i++)
		assert_null(pt_context_rest(&c, t + (uint64_t)i * 1000, m += PT_REST_MISSES,
					    stall += light, UINT64_MAX, 0, -1));
	assert_int_equal(c.rest_streak, 2);
	assert_int_equal(c.rest_hurt, 0);
	/* Waiting 15% without demand reads (its own memory.high, say): not the rest's doing. */
	assert_null(pt_context_rest(&c, t + 3000, m, stall += heavy, UINT64_MAX, 0, -1));
	assert_int_equal(c.rest_hurt, 0);
	/* Demand reads, and waiting 15% of the time, period after period: still no rest. */
	for (int i = 4; i <= 6; i++) {
		assert_null(pt_context_rest(&c, t + (uint64_t)i * 1000, m += PT_REST_MISSES,
					    stall += heavy, UINT64_MAX, 0, -1));
		assert_int_equal(c.rest_hurt, (unsigned int)i - 3);
	}
	assert_true((m - c.rest_misses_wake) * PT_REST_SHARE < 496);	/* under the share */
	/*
	 * Had it taken requests before, and none since its wake, this would be its own
	 * background (its periodic tasks): no rest for that, even past the share.
	 */
	c.idle.woke_at_ms = t - 1000;
	c.idle.pkt_ms[0] = t - 2000 + 1;	/* a packet before the wake (times are + 1) */
	m += 62;
	assert_null(pt_context_rest(&c, t + 7000, m, stall += heavy, UINT64_MAX, 0, -1));
	assert_true((m - c.rest_misses_wake) * PT_REST_SHARE >= 496);	/* the share */
	/* A request: the share restores it, and the wait makes it run first. */
	c.idle.pkt_ms[1] = t + 7500 + 1;
	a = pt_context_rest(&c, t + 8000, m += PT_REST_MISSES, stall += heavy, UINT64_MAX, 0, -1);
	assert_non_null(a);
	assert_true(a->rest);
	assert_true(a->rest_waited);	/* runs as the wake's prefetch, not in the background */
	assert_int_equal(a->budget, 31 * chunk);
	assert_int_equal(c.n_rest_set, 0);
	a->bytes = (int64_t)(31 * chunk);
	pt_context_apply(&c, a);
	assert_int_equal(c.n_rests, 1);
	pt_context_release(&c);
}

/* Below the watermark the coldest chunks of the host leave, never a critical container's. */
static void test_watermark(void **state)
{
	struct fixture *f = *state;
	struct pt_context *web, *db;
	uint64_t t = pt_now_ms();

	f->m.cfg.free_watermark = 1ULL << 30;
	set_available(f, 262144);
	pt_manager_tick(&f->m, t);
	finish_all(&f->m, &f->r);
	web = ctx_named(&f->m, "web");
	db = ctx_named(&f->m, "db");
	/* web's model learns 32 chunks, used once and never again. */
	feed_scan(&f->m, web, true);
	for (int e = 0; e < 3; e++)
		feed_scan(&f->m, web, false);
	f->r.n = 0;
	pt_manager_tick(&f->m, t + 5000);
	assert_int_equal(count(&f->r, web, PT_JOB_COLD), 1);
	assert_int_equal(count(&f->r, db, PT_JOB_COLD), 0);
	assert_true(f->m.watermark_offloads > 0);
	/* Enough memory available: nothing. */
	finish_all(&f->m, &f->r);
	set_available(f, 4000000);
	pt_manager_tick(&f->m, t + 10000);
	assert_int_equal(count(&f->r, web, PT_JOB_COLD), 0);
}

static char *answer(struct pt_manager *m, const char *req, uid_t uid)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	pt_ctl_answer(m, req, uid, out);
	fclose(out);
	return buf;
}

static void test_control_protocol(void **state)
{
	struct fixture *f = *state;
	char *s;

	pt_manager_rescan(&f->m);
	s = answer(&f->m, "status\n", 0);
	assert_non_null(strstr(s, "backend: swap"));
	assert_non_null(strstr(s, "web"));
	free(s);
	s = answer(&f->m, "status json", 1000);
	assert_non_null(strstr(s, "\"containers\":["));
	free(s);
	s = answer(&f->m, "containers", 1000);
	assert_non_null(strstr(s, "db               critical   running=1"));
	free(s);
	s = answer(&f->m, "prefetch web", 1000);
	assert_string_equal(s, "error: prefetch needs root\n");
	free(s);
	s = answer(&f->m, "prefetch web", 0);
	assert_non_null(strstr(s, "/ct/web: not idle (active): nothing to prefetch"));
	free(s);
	s = answer(&f->m, "prefetch nosuch", 0);
	assert_non_null(strstr(s, "error: no running container named 'nosuch'"));
	free(s);
	s = answer(&f->m, "reboot", 0);
	assert_string_equal(s, "error: unknown request 'reboot'\n");
	free(s);
}

/*
 * Container runtimes' real trees: a context per matched cgroup, the outermost one of a
 * subtree (a pod taken whole leaves its containers to it), never a runtime's monitor.
 */
static void test_runtime_trees(void **state)
{
#define PODMAN "2f259bab93aaaaa2542ba43ef33eb990d0999ee1b9924b557b7be53c0b7a1bb9"
#define CTRD "2397d068a8d1552a4c3f9147ba9c94e086bfd66fb2acb5bbaf47197105127d5f"
#define CRIO "c64064614423cb790e88b3e5492ff5ccf673b25ae823089f7a60c65cda24d809"
#define POD_B "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6b1e3f0a_52c4_4e7b_9d1a_0c8f2b7a9e31.slice"
#define POD_BE "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0c8f2b7a_9e31_4e7b_9d1a_6b1e3f0a52c4.slice"
	static const char *const tree[] = {
		"machine.slice/libpod-" PODMAN ".scope",
		"machine.slice/libpod-" PODMAN ".scope/container",	/* crun's, cgroup v2 */
		"machine.slice/libpod-conmon-" PODMAN ".scope",
		POD_B, POD_B "/cri-containerd-" CTRD ".scope",
		POD_BE, POD_BE "/crio-" CRIO ".scope", POD_BE "/crio-conmon-" CRIO ".scope",
	};
	struct fixture *f = *state;
	char err[PT_ERRBUF_MAX];
	struct pt_config cfg;
	struct pt_context *c;

	for (size_t i = 0; i < sizeof(tree) / sizeof(tree[0]); i++)
		cgroup(f->root, tree[i], 1000);
	fx_write(f->etc, "containers.d/ct.conf",
		 "[podman]\nmatch_id = 2f259bab93aa\n\n"
		 "[burstable]\nmatch_cgroup = /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod*.slice\n\n"
		 "[ctrd]\nmatch_id = 2397d068a8d15\n\n"	/* inside a pod already taken */
		 "[crio]\nmatch_id = c64064614423\n");
	assert_int_equal(pt_config_load(&cfg, f->etc, false, err), 0);
	pt_manager_reload(&f->m, &cfg);
	assert_int_equal(f->m.n_ctxs, 3);
	c = ctx_named(&f->m, "podman");
	assert_non_null(c);
	assert_string_equal(c->relpath, "/machine.slice/libpod-" PODMAN ".scope");
	c = ctx_named(&f->m, "burstable");
	assert_non_null(c);
	assert_string_equal(c->relpath, "/" POD_B);
	assert_null(ctx_named(&f->m, "ctrd"));
	c = ctx_named(&f->m, "crio");
	assert_non_null(c);
	assert_string_equal(c->relpath, "/" POD_BE "/crio-" CRIO ".scope");
#undef PODMAN
#undef CTRD
#undef CRIO
#undef POD_B
#undef POD_BE
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_contexts_follow_the_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_class_change_moves_the_bpf_filter, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_failed_walk_keeps_contexts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tick_costs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_long_tick_reads_wake_sources, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_tier_holds_offload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steady_scans_stretch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_active_contexts_sampled_at_their_pace, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_refault_trickle_stretches_scans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_job_cpu_accounted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plenty_memory_relaxes_scans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cold_offload_paced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cold_waits_for_memory_need, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cold_takes_the_shortfall_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quiet_contexts_follow_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_safety_sample_reads_memory_stat_only_when_something_moved,
						setup, teardown),
		cmocka_unit_test(test_small_file_set_not_read_ahead),
		cmocka_unit_test(test_trim_waits_while_the_prefetch_is_read),
		cmocka_unit_test_setup_teardown(test_batched_samples_judge_as_pread, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_quiet_containers_burst_is_seen, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_woken_task_is_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_and_sample_errors_drop_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_idle_offload_and_packet_wake, setup, teardown),
		cmocka_unit_test_setup_teardown(test_undone_offload_defers_the_next, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_offload_waits_for_a_quiet_scan, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cpu_during_the_offload_is_no_wake, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cpu_while_the_offload_waits_is_a_wake, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_queued_job_does_not_hold_the_polls, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_wake_takes_back_a_queued_job, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_idle_trims_stray_swapcache, setup, teardown),
		cmocka_unit_test(test_trim_holds_after_a_write),
		cmocka_unit_test(test_offload_backoff),
		cmocka_unit_test(test_active_stray_trims_are_paced),
		cmocka_unit_test(test_wake_set_needs_busy_scans),
		cmocka_unit_test(test_wake_rest),
		cmocka_unit_test(test_wake_rest_when_waiting),
		cmocka_unit_test(test_wake_drops_an_interrupted_offload),
		cmocka_unit_test(test_settle_leaves_the_idle_working_set),
		cmocka_unit_test_setup_teardown(test_watermark, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_protocol, setup, teardown),
		cmocka_unit_test_setup_teardown(test_runtime_trees, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
