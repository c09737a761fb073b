// SPDX-License-Identifier: GPL-2.0
/*
 * The cgroup tree's watch: the parsing of inotify records, and the real inotify on a
 * directory tree (any file system reports mkdir and rmdir as cgroupfs does: both go through
 * the VFS), alone and through the manager's walk.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup_watch.h"
#include "config.h"
#include "manager.h"

/* Appends one record (with its name padded as the kernel pads it) to @buf at @len. */
static size_t put_event(char *buf, size_t len, uint32_t mask, const char *name)
{
	struct inotify_event ev = { .wd = 1, .mask = mask };
	size_t n = name ? strlen(name) + 1 : 0;

	ev.len = (uint32_t)((n + 15) & ~(size_t)15);
	memcpy(buf + len, &ev, sizeof(ev));
	memset(buf + len + sizeof(ev), 0, ev.len);
	if (name)
		memcpy(buf + len + sizeof(ev), name, n);
	return len + sizeof(ev) + ev.len;
}

static void test_parse_directories_change_the_tree(void **state)
{
	struct pt_cgroup_watch w = { .fd = -1 };
	char buf[1024];
	size_t len;

	(void)state;
	/* A cgroup's interface files are no news; a directory is. */
	len = put_event(buf, 0, IN_CREATE, "memory.pressure");
	len = put_event(buf, len, IN_DELETE, "cgroup.procs");
	assert_false(pt_cgroup_watch_parse(&w, buf, len));
	assert_false(w.changed);
	for (uint32_t mask = IN_CREATE; mask; mask = mask == IN_CREATE ? IN_DELETE :
	     mask == IN_DELETE ? IN_MOVED_FROM : mask == IN_MOVED_FROM ? IN_MOVED_TO : 0) {
		w.changed = false;
		len = put_event(buf, 0, IN_CREATE, "cgroup.events");
		len = put_event(buf, len, mask | IN_ISDIR, "ctr-7f3a");
		assert_true(pt_cgroup_watch_parse(&w, buf, len));
		assert_true(w.changed);
	}
	assert_int_equal(w.events, 4);
	/* The watched directory itself removed or moved. */
	w.changed = false;
	len = put_event(buf, 0, IN_DELETE_SELF, NULL);
	len = put_event(buf, len, IN_IGNORED, NULL);
	assert_true(pt_cgroup_watch_parse(&w, buf, len));
	/* IN_IGNORED alone: the parent reported the removal already. */
	w.changed = false;
	len = put_event(buf, 0, IN_IGNORED, NULL);
	assert_false(pt_cgroup_watch_parse(&w, buf, len));
}

static void test_parse_overflow_and_short_buffers(void **state)
{
	struct pt_cgroup_watch w = { .fd = -1 };
	char buf[1024];
	size_t len;

	(void)state;
	len = put_event(buf, 0, IN_Q_OVERFLOW, NULL);
	assert_true(pt_cgroup_watch_parse(&w, buf, len));
	assert_int_equal(w.overflows, 1);
	/* A record cut short (its name past the end) is not read past the buffer. */
	w.changed = false;
	len = put_event(buf, 0, IN_CREATE | IN_ISDIR, "a-long-container-name");
	assert_false(pt_cgroup_watch_parse(&w, buf, len - 1));
	assert_false(pt_cgroup_watch_parse(&w, buf, sizeof(struct inotify_event) - 1));
	assert_false(w.changed);
}

static void test_unwatched_walks_every_interval(void **state)
{
	struct pt_cgroup_watch w = { .fd = -1 };

	(void)state;
	assert_true(pt_cgroup_watch_walk_due(&w));
	pt_cgroup_watch_walk_started(&w);
	assert_true(pt_cgroup_watch_walk_due(&w));
}

/* A temporary tree standing in for /sys/fs/cgroup. */
static void make_root(char *root, size_t size)
{
	snprintf(root, size, "/tmp/pt-cgwatch-XXXXXX");
	assert_non_null(mkdtemp(root));
}

static void sub(char *out, const char *root, const char *rel)
{
	snprintf(out, PATH_MAX, "%s/%s", root, rel);
}

static void test_real_inotify_sees_mkdir_and_rmdir_at_any_depth(void **state)
{
	struct pt_cgroup_watch w;
	char root[64], a[PATH_MAX], b[PATH_MAX];

	(void)state;
	make_root(root, sizeof(root));
	assert_int_equal(pt_cgroup_watch_open(&w), 0);
	assert_true(pt_cgroup_watch_walk_due(&w));	/* never walked */
	pt_cgroup_watch_walk_started(&w);
	pt_cgroup_watch_add(&w, root);
	pt_cgroup_watch_read(&w);
	assert_false(pt_cgroup_watch_walk_due(&w));
	/* A file written (a cgroup's memory.high, say) is no news. */
	sub(a, root, "memory.high");
	FILE *f = fopen(a, "w");

	assert_non_null(f);
	fclose(f);
	unlink(a);
	pt_cgroup_watch_read(&w);
	assert_false(pt_cgroup_watch_walk_due(&w));

	sub(a, root, "kubepods");
	assert_int_equal(mkdir(a, 0755), 0);
	pt_cgroup_watch_read(&w);
	assert_true(pt_cgroup_watch_walk_due(&w));
	/* The walk visits it and watches it: a container below it is news too. */
	pt_cgroup_watch_walk_started(&w);
	pt_cgroup_watch_add(&w, root);
	pt_cgroup_watch_add(&w, a);
	pt_cgroup_watch_read(&w);
	assert_false(pt_cgroup_watch_walk_due(&w));
	sub(b, root, "kubepods/pod1");
	assert_int_equal(mkdir(b, 0755), 0);
	pt_cgroup_watch_read(&w);
	assert_true(pt_cgroup_watch_walk_due(&w));
	pt_cgroup_watch_walk_started(&w);
	pt_cgroup_watch_add(&w, b);
	assert_int_equal(rmdir(b), 0);
	pt_cgroup_watch_read(&w);
	assert_true(pt_cgroup_watch_walk_due(&w));
	/* A directory gone before its watch: no error, nothing marked incomplete. */
	pt_cgroup_watch_walk_started(&w);
	pt_cgroup_watch_add(&w, b);
	assert_int_equal(w.watch_errors, 0);
	assert_false(w.incomplete);
	assert_int_equal(rmdir(a), 0);
	pt_cgroup_watch_read(&w);
	assert_true(pt_cgroup_watch_walk_due(&w));
	pt_cgroup_watch_close(&w);
	assert_true(pt_cgroup_watch_walk_due(&w));	/* closed: walk every interval */
	rmdir(root);
}

/*
 * The manager with the watch open: a container that appears is tracked at the next tick,
 * and with nothing changing the tree is walked only at the safety interval.
 */
static void test_manager_walks_on_change_only(void **state)
{
	struct pt_config cfg;
	struct pt_manager m;
	char root[64], dir[PATH_MAX], conf[PATH_MAX], err[PT_ERRBUF_MAX];
	uint64_t walks, t = 1000;

	(void)state;
	make_root(root, sizeof(root));
	snprintf(conf, sizeof(conf), "%s.conf", root);
	assert_int_equal(mkdir(conf, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/pagetierd.conf", conf);
	FILE *f = fopen(dir, "w");

	assert_non_null(f);
	fprintf(f, "[daemon]\ncgroup_root = %s\n", root);
	fclose(f);
	snprintf(dir, sizeof(dir), "%s/containers.d", conf);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/containers.d/web.conf", conf);
	f = fopen(dir, "w");
	assert_non_null(f);
	fprintf(f, "[web]\nmatch_cgroup = /web*\n");
	fclose(f);
	assert_int_equal(pt_config_load(&cfg, conf, false, err), 0);
	pt_manager_init(&m, &cfg);
	assert_int_equal(pt_cgroup_watch_open(&m.watch), 0);

	pt_manager_rescan(&m);
	m.last_rescan_ms = t;
	walks = m.walks;
	/* Nothing changes: no walk until the safety interval. */
	for (t += 500; t < 1000 + PT_RESCAN_SAFETY_MS - 1000; t += 500) {
		pt_cgroup_watch_read(&m.watch);
		pt_manager_tick(&m, t);
	}
	assert_int_equal(m.walks, walks);
	assert_int_equal(m.n_ctxs, 0);
	/* A container starts: tracked at the next tick that may walk. */
	sub(dir, root, "web1");
	assert_int_equal(mkdir(dir, 0755), 0);
	pt_cgroup_watch_read(&m.watch);
	pt_manager_tick(&m, t);
	assert_int_equal(m.walks, walks + 1);
	assert_int_equal(m.n_ctxs, 1);
	/* It stops: dropped at the next walk, which its rmdir asked for. */
	assert_int_equal(rmdir(dir), 0);
	pt_cgroup_watch_read(&m.watch);
	pt_manager_tick(&m, t += 1000);
	assert_int_equal(m.walks, walks + 2);
	assert_int_equal(m.n_ctxs, 0);
	/* Quiet again: the next walk is the safety interval's. */
	pt_cgroup_watch_read(&m.watch);
	pt_manager_tick(&m, t += 1000);
	assert_int_equal(m.walks, walks + 2);
	pt_manager_tick(&m, t += PT_RESCAN_SAFETY_MS);
	assert_int_equal(m.walks, walks + 3);
	pt_manager_free(&m);
	rmdir(root);
	snprintf(dir, sizeof(dir), "%s/containers.d/web.conf", conf);
	unlink(dir);
	snprintf(dir, sizeof(dir), "%s/containers.d", conf);
	rmdir(dir);
	snprintf(dir, sizeof(dir), "%s/pagetierd.conf", conf);
	unlink(dir);
	rmdir(conf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_directories_change_the_tree),
		cmocka_unit_test(test_parse_overflow_and_short_buffers),
		cmocka_unit_test(test_unwatched_walks_every_interval),
		cmocka_unit_test(test_real_inotify_sees_mkdir_and_rmdir_at_any_depth),
		cmocka_unit_test(test_manager_walks_on_change_only),
	};

	return cmocka_run_group_tests_name("cgroup_watch", tests, NULL, NULL);
}
