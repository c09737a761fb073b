/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tier_util.h - helpers shared by the tier kselftests (tier_test, tier_log_test,
 * tier_harden_test, events_test) and by tests/vm/faults/fault_test.c and
 * bench/tier/tier_bench.c: the control device, tiers, sysfs counters, module parameters,
 * cgroups, swap, page patterns; and the kselftests' common fixture setup and teardown.
 * Header-only: each user is one translation unit.
 */
#ifndef _PAGETIER_TIER_UTIL_H
#define _PAGETIER_TIER_UTIL_H

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/fs.h>
#include <linux/magic.h>

#include "pagetier.h"

#define PG		4096UL
#define CTL_PATH	"/dev/" PAGETIER_CTL_NAME
#define CG_ROOT		"/sys/fs/cgroup"
#define PARAM_DIR	"/sys/module/pagetier/parameters/"

static inline const char *tu_backing(void)
{
	const char *p = getenv("PAGETIER_TEST_BACKING");

	return p && *p ? p : "/dev/nvme0n1";
}

static inline bool tu_have_backing(void)
{
	struct stat st;

	return !stat(tu_backing(), &st) && S_ISBLK(st.st_mode);
}

static inline int tu_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static inline int tu_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static inline int tu_write_file(const char *path, const char *s)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : (n < 0 ? -errno : -EIO);
}

/* Reads up to @max numbers of a one-line sysfs file; returns how many, or -1. */
static inline int tu_read_nums(const char *path, unsigned long long *v, int max)
{
	char buf[1024], *p = buf, *end;
	int i;

	if (tu_read_file(path, buf, sizeof(buf)))
		return -1;
	for (i = 0; i < max; i++) {
		v[i] = strtoull(p, &end, 10);
		if (end == p)
			break;
		p = end;
	}
	return i;
}

/* A sysfs file of tier @id: tier_stat, seg_stat, read_stat, read_latency, io_stat. */
static inline int tu_tier_stat(uint32_t id, const char *file, unsigned long long *v, int max)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/block/%s%u/%s", PAGETIER_DISK_NAME, id, file);
	return tu_read_nums(path, v, max);
}

enum {	/* tier_stat */
	TS_PAGES, TS_BYTES_W, TS_BYTES_R, TS_WIOS, TS_RIOS, TS_DISCARD, TS_RERR, TS_WERR,
	TS_CGROUPS, TS_OVERFLOWS, TS_EVICTIONS, TS_EVICTED_PAGES, TS_N,
};
enum {	/* seg_stat */
	SS_SEG_BYTES, SS_SEGS, SS_FREE, SS_OPEN, SS_BAD, SS_GC_VICTIMS, SS_GC_MOVES,
	SS_GC_ERRORS, SS_NOSPACE, SS_LIVE, SS_BACKING_USED, SS_N,
};
enum {	/* read_stat */
	RS_READS, RS_PAGES, RS_NS, RS_HITS, RS_MISSES, RS_STAGED, RS_PF_BYTES, RS_PF_IOS,
	RS_PF_ERRORS, RS_EVICTED, RS_EXPIRED, RS_DROPPED, RS_ZERO, RS_STAGE_MAX, RS_PREEMPTED,
	RS_N,
};
enum {	/* io_stat */
	IO_WB_BYTES, IO_WB_BIOS, IO_DEMAND_BYTES, IO_DEMAND_BIOS, IO_PF_BYTES, IO_PF_BIOS,
	IO_GC_RBYTES, IO_GC_WBYTES, IO_GC_BIOS, IO_N,
};

enum {	/* wb_stat */
	WB_BUFFERED, WB_DIRECT, WB_FULL, WB_HELD, WB_MAX, WB_FLUSH_BIOS, WB_FLUSH_BYTES,
	WB_DROPPED, WB_ERRORS, WB_MOVED, WB_STUCK, WB_FLUSH_WAITS, WB_HITS, WB_N,
};

/* /sys/block/<dev>/stat of a block device path: [0] reads, [4] writes completed. */
static inline int tu_bdev_stat(const char *dev, unsigned long long v[11])
{
	const char *name = strrchr(dev, '/');
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/block/%s/stat", name ? name + 1 : dev);
	return tu_read_nums(path, v, 11) == 11 ? 0 : -1;
}

/* ---- module parameters ---- */

struct tu_param {
	char name[64];
	char old[64];
};

/* Sets a module parameter, remembering its value in @p for tu_param_restore(). */
static inline int tu_param_set(struct tu_param *p, const char *name, const char *val)
{
	char path[PATH_MAX];

	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	if (tu_read_file(path, p->old, sizeof(p->old)))
		return -ENOENT;
	p->old[strcspn(p->old, "\n")] = '\0';
	return tu_write_file(path, val);
}

static inline void tu_param_restore(struct tu_param *p)
{
	char path[PATH_MAX];

	if (!p->name[0])
		return;
	snprintf(path, sizeof(path), PARAM_DIR "%s", p->name);
	tu_write_file(path, p->old);
	p->name[0] = '\0';
}

/* ---- tiers ---- */

static inline int tu_tier_create(int ctl, const char *path, struct pagetier_tier_create *c)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	snprintf(c->backing_path, sizeof(c->backing_path), "%s", path);
	return tu_ioctl(ctl, PAGETIER_IOC_TIER_CREATE, c);
}

/* udev probes a new disk and holds it open for a moment: retry -EBUSY for 10 s. */
static inline int tu_tier_destroy(int ctl, uint32_t id)
{
	struct pagetier_tier_destroy d = { .size = sizeof(d), .tier_id = id };
	int i, ret = -EBUSY;

	for (i = 0; i < 200 && ret == -EBUSY; i++) {
		ret = tu_ioctl(ctl, PAGETIER_IOC_TIER_DESTROY, &d);
		if (ret == -EBUSY)
			usleep(50000);
	}
	return ret;
}

/* Waits for devtmpfs/udev to show the node of a new tier. */
static inline int tu_wait_node(const char *dev)
{
	int i;

	for (i = 0; i < 100; i++) {
		if (!access(dev, F_OK))
			return 0;
		usleep(50000);
	}
	return -ENOENT;
}

/* Names tier @c's node /dev/pagetierN in @dev and waits for it to appear. */
static inline int tu_tier_node(const struct pagetier_tier_create *c, char *dev, size_t len)
{
	snprintf(dev, len, "/dev/%s%u", PAGETIER_DISK_NAME, c->tier_id);
	return tu_wait_node(dev);
}

/* Destroys tiers a crashed earlier run left over the backing device. */
static inline void tu_cleanup_stale(int ctl, const char *backing)
{
	char path[PATH_MAX], buf[PATH_MAX], cmd[PATH_MAX + 64];
	struct dirent *de;
	unsigned int id;
	int ret;
	DIR *d;

	d = opendir("/sys/block");
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (sscanf(de->d_name, PAGETIER_DISK_NAME "%u", &id) != 1)
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/backing_dev", de->d_name);
		if (tu_read_file(path, buf, sizeof(buf)))
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		if (strcmp(buf, backing))
			continue;
		snprintf(cmd, sizeof(cmd), "swapoff /dev/%s 2>/dev/null", de->d_name);
		ret = system(cmd);
		(void)ret;
		tu_tier_destroy(ctl, id);
	}
	closedir(d);
}

#define TU_MAX_ENTRIES 1024
static struct pagetier_cgroup_stat tu_entries[TU_MAX_ENTRIES];

/* The counters of cgroup @cgid on tier @id; all zero if it has none. */
static inline int tu_cgroup_stat(int ctl, uint32_t id, uint64_t cgid,
				 struct pagetier_cgroup_stat *out)
{
	struct pagetier_cgroup_stats s = {
		.size = sizeof(s), .tier_id = id, .entry_size = sizeof(tu_entries[0]),
		.capacity = TU_MAX_ENTRIES, .entries = (uintptr_t)tu_entries,
	};
	uint32_t i;
	int ret;

	memset(out, 0, sizeof(*out));
	out->cgroup_id = cgid;
	ret = tu_ioctl(ctl, PAGETIER_IOC_CGROUP_STATS, &s);
	if (ret)
		return ret;
	for (i = 0; i < s.count && i < TU_MAX_ENTRIES; i++)
		if (tu_entries[i].cgroup_id == cgid)
			*out = tu_entries[i];
	return 0;
}

static inline int tu_prefetch(int ctl, uint32_t id, uint64_t cgid, uint64_t budget,
			      uint32_t flags, struct pagetier_prefetch *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->tier_id = id;
	p->cgroup_id = cgid;
	p->budget_bytes = budget;
	p->flags = flags;
	return tu_ioctl(ctl, PAGETIER_IOC_PREFETCH, p);
}

/* ---- cgroups ---- */

static inline int tu_cg_setup_root(void)
{
	char buf[4096];
	struct statfs sf;

	if (statfs(CG_ROOT, &sf) || sf.f_type != CGROUP2_SUPER_MAGIC) {
		if (system("mount -t cgroup2 none " CG_ROOT))
			return -ENODEV;
	}
	tu_write_file(CG_ROOT "/cgroup.subtree_control", "+memory");
	if (tu_read_file(CG_ROOT "/cgroup.subtree_control", buf, sizeof(buf)))
		return -EIO;
	return strstr(buf, "memory") ? 0 : -EOPNOTSUPP;
}

static inline int tu_cg_create(const char *name, char *path, size_t len, uint64_t *id)
{
	struct stat st;

	snprintf(path, len, "%s/%s", CG_ROOT, name);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	if (stat(path, &st))
		return -errno;
	*id = st.st_ino;
	return 0;
}

static inline int tu_cg_enter(const char *path)
{
	char procs[PATH_MAX + 32];

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
	return tu_write_file(procs, "0");
}

static inline void tu_cg_remove(const char *path)
{
	int i;

	for (i = 0; i < 20 && rmdir(path) && errno == EBUSY; i++)
		usleep(50000);
}

static inline uint64_t tu_self_cgroup_id(void)
{
	char buf[PATH_MAX], path[PATH_MAX + 32];
	struct stat st;
	char *p;

	if (tu_read_file("/proc/self/cgroup", buf, sizeof(buf)))
		return 0;
	p = strstr(buf, "0::");
	if (!p)
		return 0;
	p += 3;
	p[strcspn(p, "\n")] = '\0';
	snprintf(path, sizeof(path), "%s%s", CG_ROOT, p);
	return stat(path, &st) ? 0 : st.st_ino;
}

static inline long long tu_cg_num(const char *cg, const char *file)
{
	char path[PATH_MAX + 64], buf[64];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	if (tu_read_file(path, buf, sizeof(buf)))
		return -1;
	return strtoll(buf, NULL, 10);
}

/* Pushes the cgroup's memory out until at most @target bytes are left (or 10 s). */
static inline long long tu_cg_reclaim(const char *cg, long long target)
{
	char path[PATH_MAX + 32];
	long long cur = -1;
	int i;

	snprintf(path, sizeof(path), "%s/memory.reclaim", cg);
	for (i = 0; i < 100; i++) {
		tu_write_file(path, "256M");
		cur = tu_cg_num(cg, "memory.current");
		if (cur >= 0 && cur <= target)
			break;
		usleep(100000);
	}
	return cur;
}

static inline int tu_wait_exit(pid_t *pid)
{
	int status;

	if (waitpid(*pid, &status, 0) != *pid)
		return -1;
	*pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static inline void tu_reap(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
		*pid = 0;
	}
}

/* ---- page contents ---- */

static inline uint64_t tu_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

#define TU_MAGIC	0x7061676574696572ULL	/* "pagetier" */

/*
 * A page that says what it is: words 0-3 are a magic, @tag (the writer), @slot and
 * @gen; the rest is derived from them. Never zero-filled.
 */
static inline void tu_fill(void *page, uint64_t tag, uint64_t slot, uint64_t gen)
{
	uint64_t *w = page, s = tu_mix64(tag ^ tu_mix64(slot ^ tu_mix64(gen)));
	size_t i;

	w[0] = TU_MAGIC;
	w[1] = tag;
	w[2] = slot;
	w[3] = gen;
	for (i = 4; i < PG / sizeof(*w); i++)
		w[i] = s = tu_mix64(s + i);
}

/* Compares every byte; returns the offset of the first mismatch or -1. */
static inline long tu_check(const void *page, uint64_t tag, uint64_t slot, uint64_t gen)
{
	unsigned char want[PG];
	const unsigned char *got = page;
	size_t i;

	tu_fill(want, tag, slot, gen);
	if (!memcmp(want, got, PG))
		return -1;
	for (i = 0; i < PG && want[i] == got[i]; i++)
		;
	return i;
}

static inline bool tu_is_zero(const void *page)
{
	const uint64_t *w = page;
	size_t i;

	for (i = 0; i < PG / sizeof(*w); i++)
		if (w[i])
			return false;
	return true;
}

/* This process's pages in swap (VmSwap), or -1. */
static inline long tu_vmswap_pages(void)
{
	char buf[4096], *p;

	if (tu_read_file("/proc/self/status", buf, sizeof(buf)))
		return -1;
	p = strstr(buf, "VmSwap:");
	return p ? strtol(p + 7, NULL, 10) / 4 : -1;
}

static inline double tu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * ---- kselftest fixtures ----
 *
 * The part the fixtures of tier_test, tier_log_test, tier_harden_test and events_test
 * share. Macros: they use kselftest_harness.h (SKIP, ASSERT_*, EXPECT_*, TH_LOG), which
 * the tests include after this header and fault_test and tier_bench do not include at
 * all. The fixture has int ctl, bool created, struct pagetier_tier_create c and
 * char dev[64].
 */

/*
 * In FIXTURE_SETUP, first: opens the control device as @self->ctl (failing the test if it
 * cannot) and destroys the tiers a crashed earlier run left over the backing device.
 * Without a backing device the test is skipped, never silently: the harness reports it
 * ("# SKIP"), and the VM suite (tests/vm/run-suite.sh) counts a skip as a failure.
 * The teardown runs after a skip: fields it tests (descriptors at -1...) are set before.
 */
#define TU_FIXTURE_OPEN(self) do {							\
	(self)->ctl = -1;								\
	if (!tu_have_backing())								\
		SKIP(return, "no backing block device %s (set PAGETIER_TEST_BACKING)",	\
		     tu_backing());							\
	(self)->ctl = open(CTL_PATH, O_RDWR | O_CLOEXEC);				\
	ASSERT_LE(0, (self)->ctl) TH_LOG("open %s: %s", CTL_PATH, strerror(errno));	\
	tu_cleanup_stale((self)->ctl, tu_backing());					\
} while (0)

/* In FIXTURE_SETUP, once tu_tier_create() made @self->c: the fixture's tier, with its node. */
#define TU_FIXTURE_TIER(self) do {							\
	(self)->created = true;								\
	ASSERT_EQ(0, tu_tier_node(&(self)->c, (self)->dev, sizeof((self)->dev)))	\
		TH_LOG("%s did not appear", (self)->dev);				\
} while (0)

/* In FIXTURE_TEARDOWN: destroys the fixture's tier, if it made one, and closes ctl. */
#define TU_FIXTURE_CLOSE(self) do {							\
	if ((self)->created)								\
		EXPECT_EQ(0, tu_tier_destroy((self)->ctl, (self)->c.tier_id));		\
	if ((self)->ctl >= 0)								\
		close((self)->ctl);							\
} while (0)

/* In a TEST_F: nothing to test if the setup skipped (the harness runs the test anyway). */
#define NEED_TIER() do { if (!self->created) return; } while (0)

#endif /* _PAGETIER_TIER_UTIL_H */
