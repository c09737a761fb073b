// SPDX-License-Identifier: GPL-2.0
/*
 * tier_test.c - kselftests of pagetier.ko: the ioctl ABI of /dev/pagetier and the tier
 * block device /dev/pagetierN (I/O integrity, discard, per-cgroup attribution, swap).
 *
 * Needs root, pagetier.ko loaded and a scratch block device whose contents are
 * destroyed: $PAGETIER_TEST_BACKING, default /dev/nvme0n1. Tests that need the device
 * are skipped when it does not exist.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <stddef.h>
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
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/magic.h>

#include "pagetier.h"
#include "tier_util.h"

/*
 * The 6.1 harness's generated wrappers and timeout handler do not use all their
 * parameters; -Wextra stays on for everything else.
 */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#define NSTAT		10	/* columns of tier_stat */

enum {	/* tier_stat columns */
	ST_PAGES, ST_BYTES_W, ST_BYTES_R, ST_WIOS, ST_RIOS, ST_DISCARD, ST_RERR, ST_WERR,
	ST_CGROUPS, ST_OVERFLOWS,
};

/* ---- helpers ---- */

static int tier_destroy_once(int ctl, __u32 id)
{
	struct pagetier_tier_destroy d = { .size = sizeof(d), .tier_id = id };

	return tu_ioctl(ctl, PAGETIER_IOC_TIER_DESTROY, &d);
}

static long long sysfs_num(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static long long sysfs_num(const char *fmt, ...)
{
	char path[PATH_MAX], buf[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (tu_read_file(path, buf, sizeof(buf)))
		return -1;
	return strtoll(buf, NULL, 10);
}

static int tier_stat(__u32 id, unsigned long long v[NSTAT])
{
	char path[PATH_MAX], buf[512], *p = buf, *end;
	int i;

	snprintf(path, sizeof(path), "/sys/block/%s%u/tier_stat", PAGETIER_DISK_NAME, id);
	if (tu_read_file(path, buf, sizeof(buf)))
		return -1;
	for (i = 0; i < NSTAT; i++) {
		v[i] = strtoull(p, &end, 10);
		if (end == p)
			return -1;
		p = end;
	}
	return 0;
}

/* Deterministic page contents: never zero-filled, so 6.12 swap writes every page. */
static void fill_page(void *page, uint64_t seed, uint64_t n)
{
	uint64_t *w = page, s = tu_mix64(seed ^ tu_mix64(n));
	size_t i;

	for (i = 0; i < PG / sizeof(*w); i++)
		w[i] = s = tu_mix64(s + i);
	w[0] |= 1;
}

/* Compares every byte; returns the offset of the first mismatch or -1. */
static long check_page(const void *page, uint64_t seed, uint64_t n)
{
	unsigned char want[PG];
	const unsigned char *got = page;
	size_t i;

	fill_page(want, seed, n);
	if (!memcmp(want, got, PG))
		return -1;
	for (i = 0; i < PG && want[i] == got[i]; i++)
		;
	return i;
}

/* ---- cgroups ---- */

/* ---- ioctl ABI without a device ---- */

TEST(version)
{
	struct pagetier_version v = { .size = sizeof(v) };
	int ctl = open(CTL_PATH, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, ctl) TH_LOG("open %s: %s (is pagetier.ko loaded?)", CTL_PATH, strerror(errno));
	ASSERT_EQ(0, tu_ioctl(ctl, PAGETIER_IOC_VERSION, &v));
	EXPECT_EQ((__u32)PAGETIER_ABI_VERSION, v.abi_version);
	EXPECT_EQ(PAGETIER_FEAT_TIER | PAGETIER_FEAT_CGROUP_STATS,
		  v.features & (PAGETIER_FEAT_TIER | PAGETIER_FEAT_CGROUP_STATS));
	close(ctl);
}

/* A newer caller's longer struct works if its tail is zero, by number not size bits. */
TEST(version_larger_struct)
{
	struct {
		struct pagetier_version v;
		__u64 future[4];
	} big;
	unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE, PAGETIER_IOC_MAGIC,
				 _IOC_NR(PAGETIER_IOC_VERSION), sizeof(big));
	int ctl = open(CTL_PATH, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, ctl);
	memset(&big, 0, sizeof(big));
	big.v.size = sizeof(big);
	ASSERT_EQ(0, tu_ioctl(ctl, cmd, &big));
	EXPECT_EQ((__u32)PAGETIER_ABI_VERSION, big.v.abi_version);
	EXPECT_EQ(0ULL, big.future[0] | big.future[1] | big.future[2] | big.future[3]);

	/* A field this module does not know, set: refused (copy_struct_from_user). */
	big.future[2] = 1;
	EXPECT_EQ(-E2BIG, tu_ioctl(ctl, cmd, &big));

	/* A shorter struct than the first version is never valid. */
	big.future[2] = 0;
	big.v.size = 8;
	EXPECT_EQ(-EINVAL, tu_ioctl(ctl, cmd, &big));
	close(ctl);
}

TEST(bad_size)
{
	struct pagetier_version v = { .size = 0 };
	struct pagetier_tier_create c;
	struct pagetier_tier_destroy d = { .size = 4, .tier_id = 0 };
	struct pagetier_cgroup_stats s = { .size = 16, .entry_size = sizeof(tu_entries[0]) };
	static char huge[2 * 4096];
	int ctl = open(CTL_PATH, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, ctl);
	EXPECT_EQ(-EINVAL, tu_ioctl(ctl, PAGETIER_IOC_VERSION, &v));
	v.size = sizeof(v) - 1;
	EXPECT_EQ(-EINVAL, tu_ioctl(ctl, PAGETIER_IOC_VERSION, &v));

	memset(&c, 0, sizeof(c));
	c.size = offsetof(struct pagetier_tier_create, tier_id);
	snprintf(c.backing_path, sizeof(c.backing_path), "%s", tu_backing());
	EXPECT_EQ(-EINVAL, tu_ioctl(ctl, PAGETIER_IOC_TIER_CREATE, &c));
	EXPECT_EQ(-EINVAL, tu_ioctl(ctl, PAGETIER_IOC_TIER_DESTROY, &d));
	EXPECT_EQ(-EINVAL, tu_ioctl(ctl, PAGETIER_IOC_CGROUP_STATS, &s));

	/* Larger than any struct will ever be. */
	memset(huge, 0, sizeof(huge));
	*(__u32 *)huge = sizeof(huge);
	EXPECT_EQ(-E2BIG, tu_ioctl(ctl, PAGETIER_IOC_VERSION, huge));
	close(ctl);
}

TEST(reserved_and_flags)
{
	struct pagetier_cgroup_stats s;
	struct pagetier_tier_create c;
	int ctl = open(CTL_PATH, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, ctl);
	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	snprintf(c.backing_path, sizeof(c.backing_path), "%s", tu_backing());
	c.flags = 1;
	EXPECT_EQ(-EINVAL, tu_ioctl(ctl, PAGETIER_IOC_TIER_CREATE, &c));
	c.flags = 0;
	c.reserved = 1;
	EXPECT_EQ(-EINVAL, tu_ioctl(ctl, PAGETIER_IOC_TIER_CREATE, &c));
	c.reserved = 0;
	memset(c.backing_path, 'a', sizeof(c.backing_path));	/* no NUL */
	EXPECT_EQ(-EINVAL, tu_ioctl(ctl, PAGETIER_IOC_TIER_CREATE, &c));
	memset(c.backing_path, 0, sizeof(c.backing_path));	/* empty */
	EXPECT_EQ(-EINVAL, tu_ioctl(ctl, PAGETIER_IOC_TIER_CREATE, &c));

	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	s.entry_size = sizeof(tu_entries[0]);
	s.reserved = 1;
	EXPECT_EQ(-EINVAL, tu_ioctl(ctl, PAGETIER_IOC_CGROUP_STATS, &s));
	s.reserved = 0;
	s.entry_size = 8;	/* smaller than the first version's entry */
	EXPECT_EQ(-EINVAL, tu_ioctl(ctl, PAGETIER_IOC_CGROUP_STATS, &s));
	close(ctl);
}

TEST(unknown_tier_and_ioctl)
{
	struct pagetier_cgroup_stats s = {
		.size = sizeof(s), .tier_id = 4242, .entry_size = sizeof(tu_entries[0]),
	};
	int ctl = open(CTL_PATH, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, ctl);
	EXPECT_EQ(-ENOENT, tier_destroy_once(ctl, 4242));
	EXPECT_EQ(-ENOENT, tu_ioctl(ctl, PAGETIER_IOC_CGROUP_STATS, &s));
	EXPECT_EQ(-ENOTTY, tu_ioctl(ctl, _IO(PAGETIER_IOC_MAGIC, 0x7f), NULL));
	EXPECT_EQ(-ENOTTY, tu_ioctl(ctl, _IOR(0x42, 0, struct pagetier_version), &s));
	close(ctl);
}

TEST(create_nonexistent_path)
{
	struct pagetier_tier_create c;
	int ctl = open(CTL_PATH, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, ctl);
	EXPECT_EQ(-ENOENT, tu_tier_create(ctl, "/dev/pagetier-test-no-such-device", &c));
	EXPECT_EQ(-ENOTBLK, tu_tier_create(ctl, "/dev/null", &c));
	close(ctl);
}

/* Without CAP_SYS_ADMIN, every ioctl fails with EPERM even on an open descriptor. */
static int try_all_ioctls(int ctl)
{
	struct pagetier_version v = { .size = sizeof(v) };
	struct pagetier_tier_create c;
	struct pagetier_cgroup_stats s = { .size = sizeof(s), .entry_size = sizeof(tu_entries[0]) };

	if (tu_ioctl(ctl, PAGETIER_IOC_VERSION, &v) != -EPERM)
		return 10;
	if (tu_tier_create(ctl, tu_backing(), &c) != -EPERM)
		return 11;
	if (tier_destroy_once(ctl, 0) != -EPERM)
		return 12;
	if (tu_ioctl(ctl, PAGETIER_IOC_CGROUP_STATS, &s) != -EPERM)
		return 13;
	return 0;
}

TEST(unprivileged)
{
	int ctl = open(CTL_PATH, O_RDWR | O_CLOEXEC);
	pid_t pid;

	ASSERT_LE(0, ctl);

	/* Still uid 0, but CAP_SYS_ADMIN dropped. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct cap[2];
		int i = CAP_TO_INDEX(CAP_SYS_ADMIN);

		if (syscall(SYS_capget, &h, cap))
			_exit(2);
		cap[i].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
		cap[i].permitted &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
		cap[i].inheritable &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
		if (syscall(SYS_capset, &h, cap))
			_exit(3);
		_exit(try_all_ioctls(ctl));
	}
	EXPECT_EQ(0, tu_wait_exit(&pid));

	/* An unprivileged user with a leaked descriptor, and one without. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int ret;

		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(2);
		ret = try_all_ioctls(ctl);
		if (ret)
			_exit(ret);
		/* The node is 0600 root. */
		if (open(CTL_PATH, O_RDWR) >= 0 || errno != EACCES)
			_exit(20);
		_exit(0);
	}
	EXPECT_EQ(0, tu_wait_exit(&pid));
	close(ctl);
}

/* ---- with a tier ---- */

FIXTURE(tier) {
	int ctl;
	bool created;
	struct pagetier_tier_create c;
	char dev[64];
	char cg[2][PATH_MAX];
	pid_t kid[2];
	bool swapped_on;
	char swap_dev[PATH_MAX];
	bool zswap_was_on;
	char dm_name[64];		/* device-mapper device made by the test */
	bool err_created;		/* a second tier, over dm_name */
	__u32 err_tier;
	int fd;				/* a test's descriptor of a tier, if not -1 */
};

FIXTURE_SETUP(tier)
{
	self->fd = -1;
	TU_FIXTURE_OPEN(self);
	ASSERT_EQ(0, tu_tier_create(self->ctl, tu_backing(), &self->c));
	TU_FIXTURE_TIER(self);
}

FIXTURE_TEARDOWN(tier)
{
	char cmd[PATH_MAX + 32];
	int i;

	for (i = 0; i < 2; i++)
		tu_reap(&self->kid[i]);
	if (self->fd >= 0)
		close(self->fd);
	if (self->swapped_on) {
		snprintf(cmd, sizeof(cmd), "swapoff %s", self->swap_dev);
		EXPECT_EQ(0, system(cmd));
	}
	if (self->err_created)
		EXPECT_EQ(0, tu_tier_destroy(self->ctl, self->err_tier));
	if (self->dm_name[0]) {
		snprintf(cmd, sizeof(cmd), "dmsetup remove --retry %s", self->dm_name);
		EXPECT_EQ(0, system(cmd));
	}
	if (self->zswap_was_on)
		tu_write_file("/sys/module/zswap/parameters/enabled", "Y");
	for (i = 0; i < 2; i++)
		if (self->cg[i][0])
			tu_cg_remove(self->cg[i]);
	TU_FIXTURE_CLOSE(self);
}

TEST_F(tier, geometry_and_sysfs)
{
	char path[PATH_MAX], buf[PATH_MAX], *name;
	unsigned long long v[NSTAT];
	const char *disk = self->dev + 5;
	__u64 size = 0;
	int fd;

	NEED_TIER();
	fd = open(tu_backing(), O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, BLKGETSIZE64, &size));
	close(fd);
	EXPECT_EQ(size, self->c.backing_bytes);
	/* Log-structured: the capacity leaves room for the collector and open segments. */
	EXPECT_GT(size * 95 / 100, self->c.capacity_bytes);
	EXPECT_LT(size * 80 / 100, self->c.capacity_bytes);
	EXPECT_EQ(0ULL, self->c.capacity_bytes & (PG - 1));

	fd = open(self->dev, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, BLKGETSIZE64, &size));
	close(fd);
	EXPECT_EQ(self->c.capacity_bytes, size);

	EXPECT_EQ(4096, sysfs_num("/sys/block/%s/queue/logical_block_size", disk));
	EXPECT_EQ(4096, sysfs_num("/sys/block/%s/queue/physical_block_size", disk));
	EXPECT_EQ(0, sysfs_num("/sys/block/%s/queue/rotational", disk));
	EXPECT_EQ(4096, sysfs_num("/sys/block/%s/queue/discard_granularity", disk));
	EXPECT_LT(0, sysfs_num("/sys/block/%s/queue/discard_max_bytes", disk));

	snprintf(path, sizeof(path), "/sys/block/%s/backing_dev", disk);
	ASSERT_EQ(0, tu_read_file(path, buf, sizeof(buf)));
	buf[strcspn(buf, "\n")] = '\0';
	EXPECT_STREQ(tu_backing(), buf);

	ASSERT_EQ(0, tier_stat(self->c.tier_id, v));
	EXPECT_EQ(0ULL, v[ST_PAGES]);
	EXPECT_EQ(0ULL, v[ST_RERR] + v[ST_WERR]);

	/* The stacking shows in the backing device's holders. */
	name = strrchr(tu_backing(), '/');
	snprintf(path, sizeof(path), "/sys/class/block/%s/holders/%s", name ? name + 1 : "", disk);
	EXPECT_EQ(0, access(path, F_OK)) TH_LOG("no %s", path);
}

TEST_F(tier, second_tier_busy)
{
	struct pagetier_tier_create c;

	NEED_TIER();
	EXPECT_EQ(-EBUSY, tu_tier_create(self->ctl, tu_backing(), &c));
}

TEST_F(tier, backing_swapped_on_busy)
{
	char cmd[PATH_MAX + 64];
	struct pagetier_tier_create c;
	int ret;

	NEED_TIER();
	ASSERT_EQ(0, tu_tier_destroy(self->ctl, self->c.tier_id));
	self->created = false;
	snprintf(cmd, sizeof(cmd), "mkswap -q %s >/dev/null && swapon %s", tu_backing(),
		 tu_backing());
	ASSERT_EQ(0, system(cmd));
	snprintf(self->swap_dev, sizeof(self->swap_dev), "%s", tu_backing());
	self->swapped_on = true;
	ret = tu_tier_create(self->ctl, tu_backing(), &c);
	if (!ret)
		tu_tier_destroy(self->ctl, c.tier_id);
	EXPECT_EQ(-EBUSY, ret);
}

TEST_F(tier, destroy_while_open)
{
	int fd;

	NEED_TIER();
	fd = open(self->dev, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EBUSY, tier_destroy_once(self->ctl, self->c.tier_id));
	close(fd);
	EXPECT_EQ(0, tu_tier_destroy(self->ctl, self->c.tier_id));
	self->created = false;
	EXPECT_EQ(-ENOENT, tier_destroy_once(self->ctl, self->c.tier_id));
}

TEST_F(tier, unload_refused_while_open)
{
	int fd, ret, err;

	NEED_TIER();
	fd = open(self->dev, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	/* Only the open tier pins the module now. */
	close(self->ctl);
	self->ctl = -1;
	ret = syscall(SYS_delete_module, "pagetier", O_NONBLOCK);
	err = errno;
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(EWOULDBLOCK, err);
	self->ctl = open(CTL_PATH, O_RDWR | O_CLOEXEC);
	close(fd);
	ASSERT_LE(0, self->ctl) TH_LOG("the module was unloaded under an open tier");
}

/* Entries are written with the caller's entry_size; count is the total. */
TEST_F(tier, cgroup_stats_entry_size)
{
	struct {
		struct pagetier_cgroup_stat e;
		__u64 future[2];
	} big[2];
	struct pagetier_cgroup_stats s;
	__u64 self_id = tu_self_cgroup_id();
	void *buf;
	int fd;

	NEED_TIER();
	ASSERT_EQ(0, posix_memalign(&buf, PG, 2 * PG));
	fill_page(buf, 1, 1);
	fd = open(self->dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)PG, pwrite(fd, buf, PG, 0));
	/* An empty slot: its read is unattributed (cgroup id 0). */
	ASSERT_EQ((ssize_t)PG, pread(fd, (char *)buf + PG, PG, 8 * PG));
	close(fd);

	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	s.tier_id = self->c.tier_id;
	s.entry_size = sizeof(big[0]);
	s.capacity = 0;
	ASSERT_EQ(0, tu_ioctl(self->ctl, PAGETIER_IOC_CGROUP_STATS, &s));
	EXPECT_LE(2U, s.count);

	memset(big, 0xff, sizeof(big));
	s.capacity = 1;
	s.entries = (uintptr_t)big;
	ASSERT_EQ(0, tu_ioctl(self->ctl, PAGETIER_IOC_CGROUP_STATS, &s));
	EXPECT_LE(2U, s.count);
	EXPECT_EQ(0ULL, big[0].future[0] | big[0].future[1]);	/* zero-padded */
	EXPECT_EQ(~0ULL, big[1].e.cgroup_id);			/* untouched */

	s.capacity = 2;
	ASSERT_EQ(0, tu_ioctl(self->ctl, PAGETIER_IOC_CGROUP_STATS, &s));
	EXPECT_TRUE((big[0].e.cgroup_id == self_id && big[1].e.cgroup_id == 0) ||
		    (big[1].e.cgroup_id == self_id && big[0].e.cgroup_id == 0))
		TH_LOG("entries %llu %llu, self %llu", (unsigned long long)big[0].e.cgroup_id,
		       (unsigned long long)big[1].e.cgroup_id, (unsigned long long)self_id);
	free(buf);
}

/* ---- I/O integrity and attribution ---- */

#define NRUNS		32
#define RUN_MAX		16

struct run {
	__u64 slot;
	unsigned int len;
	int owner;	/* 0 = written by cgroup A only, 1 = overwritten by cgroup B */
	bool discarded;
};

/* In a child: join @cg, then write runs (all, or those of @owner) of generation @gen. */
static int write_runs(const char *dev, const char *cg, const struct run *runs, int only_owner,
		      uint64_t seed)
{
	unsigned int i, k;
	char *buf;
	int fd;

	if (tu_cg_enter(cg))
		return 2;
	/* Faulted in after joining: the buffer is charged to @cg. */
	buf = mmap(NULL, RUN_MAX * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (buf == MAP_FAILED)
		return 3;
	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return 4;
	for (i = 0; i < NRUNS; i++) {
		if (only_owner >= 0 && runs[i].owner != only_owner)
			continue;
		for (k = 0; k < runs[i].len; k++)
			fill_page(buf + k * PG, seed + (only_owner > 0), runs[i].slot + k);
		if (pwrite(fd, buf, runs[i].len * PG, runs[i].slot * PG) !=
		    (ssize_t)(runs[i].len * PG))
			return 5;
	}
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(tier, rw_discard_attribution, 300)
{
	struct pagetier_cgroup_stat sa, sb, sa2, sb2;
	unsigned long long v[NSTAT], v2[NSTAT];
	unsigned int i, k, pages[2] = { 0, 0 }, total = 0, disc[2] = { 0, 0 };
	__u64 nslots = self->c.capacity_bytes / PG, stride;
	uint64_t id[2];
	struct run runs[NRUNS];
	__u64 whole[2] = { 0, 0 };
	uint64_t seed;
	char name[64];
	pid_t pid;
	char *buf;
	int fd;

	NEED_TIER();
	ASSERT_EQ(0, tu_cg_setup_root()) TH_LOG("cgroup2 with the memory controller is needed");
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "pagetier-test-rw%c-%d", 'a' + i, getpid());
		ASSERT_EQ(0, tu_cg_create(name, self->cg[i], sizeof(self->cg[i]), &id[i]));
	}
	ASSERT_EQ((ssize_t)sizeof(seed), getrandom(&seed, sizeof(seed), 0));
	TH_LOG("seed %llu", (unsigned long long)seed);

	/* Random non-overlapping runs of 1..16 slots, one per stride of the device. */
	stride = nslots / NRUNS;
	ASSERT_LT(RUN_MAX * 2ULL, stride);
	for (i = 0; i < NRUNS; i++) {
		runs[i].len = 1 + tu_mix64(seed + i) % RUN_MAX;
		runs[i].slot = i * stride + tu_mix64(seed ^ i) % (stride - RUN_MAX);
		runs[i].owner = i % 2;
		runs[i].discarded = false;
		pages[runs[i].owner] += runs[i].len;
		total += runs[i].len;
	}

	/* Cgroup A writes every run, then B overwrites the odd ones. */
	for (i = 0; i < 2; i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(write_runs(self->dev, self->cg[i], runs, i ? 1 : -1, seed));
		self->kid[i] = pid;
		ASSERT_EQ(0, tu_wait_exit(&self->kid[i])) TH_LOG("writer %u failed", i);
	}

	ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->c.tier_id, id[0], &sa));
	ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->c.tier_id, id[1], &sb));
	EXPECT_EQ(pages[0], sa.pages_stored);
	EXPECT_EQ(pages[1], sb.pages_stored);
	EXPECT_EQ(total * PG, sa.bytes_written);
	EXPECT_EQ(pages[1] * PG, sb.bytes_written);
	EXPECT_LE((__u64)NRUNS, sa.write_ios);
	EXPECT_LE((__u64)NRUNS / 2, sb.write_ios);
	ASSERT_EQ(0, tier_stat(self->c.tier_id, v));
	EXPECT_EQ(total, v[ST_PAGES]);
	EXPECT_EQ((total + pages[1]) * PG, v[ST_BYTES_W]);
	EXPECT_LE(2ULL, v[ST_CGROUPS]);

	/* Every byte reads back, run by run and page by page. */
	ASSERT_EQ(0, posix_memalign((void **)&buf, PG, RUN_MAX * PG));
	fd = open(self->dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	for (i = 0; i < NRUNS; i++) {
		ASSERT_EQ((ssize_t)(runs[i].len * PG),
			  pread(fd, buf, runs[i].len * PG, runs[i].slot * PG));
		for (k = 0; k < runs[i].len; k++) {
			long off = check_page(buf + k * PG, seed + runs[i].owner, runs[i].slot + k);

			ASSERT_EQ(-1, off) TH_LOG("slot %llu byte %ld differs",
						  (unsigned long long)runs[i].slot + k, off);
		}
		/* Single pages too, in a different order than written. */
		k = runs[i].len - 1;
		ASSERT_EQ((ssize_t)PG, pread(fd, buf, PG, (runs[i].slot + k) * PG));
		ASSERT_EQ(-1, check_page(buf, seed + runs[i].owner, runs[i].slot + k));
	}
	ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->c.tier_id, id[0], &sa2));
	ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->c.tier_id, id[1], &sb2));
	/* Reads are charged to the owner of the slot, not to the reader. */
	EXPECT_EQ((pages[0] + NRUNS / 2) * PG, sa2.bytes_read - sa.bytes_read);
	EXPECT_EQ((pages[1] + NRUNS / 2) * PG, sb2.bytes_read - sb.bytes_read);

	/* A flush passes through to the backing device. */
	EXPECT_EQ(0, fsync(fd));

	/* Discard every fourth run and the one after it: one of each owner. */
	for (i = 0; i < NRUNS; i += 4) {
		for (k = i; k < i + 2; k++) {
			__u64 range[2] = { runs[k].slot * PG, runs[k].len * PG };

			ASSERT_EQ(0, ioctl(fd, BLKDISCARD, range)) TH_LOG("BLKDISCARD: %s",
									  strerror(errno));
			runs[k].discarded = true;
			disc[runs[k].owner] += runs[k].len;
		}
	}
	close(fd);
	ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->c.tier_id, id[0], &sa2));
	ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->c.tier_id, id[1], &sb2));
	EXPECT_EQ(pages[0] - disc[0], sa2.pages_stored);
	EXPECT_EQ(pages[1] - disc[1], sb2.pages_stored);
	ASSERT_EQ(0, tier_stat(self->c.tier_id, v2));
	EXPECT_EQ(total - disc[0] - disc[1], v2[ST_PAGES]);
	EXPECT_EQ(disc[0] + disc[1], v2[ST_DISCARD] - v[ST_DISCARD]);
	EXPECT_EQ(0ULL, v2[ST_RERR] + v2[ST_WERR]);

	/* Discarding everything empties the tier; the cgroups keep their history. */
	fd = open(self->dev, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	whole[1] = self->c.capacity_bytes;
	ASSERT_EQ(0, ioctl(fd, BLKDISCARD, whole));
	close(fd);
	ASSERT_EQ(0, tier_stat(self->c.tier_id, v2));
	EXPECT_EQ(0ULL, v2[ST_PAGES]);
	ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->c.tier_id, id[0], &sa2));
	EXPECT_EQ(0ULL, sa2.pages_stored);
	EXPECT_EQ(total * PG, sa2.bytes_written);
	free(buf);
}

/* ---- backing device errors ---- */

#define ERR_GOOD_SECTORS	8192ULL		/* 4 MiB that work ... */
#define ERR_BAD_SECTORS		122880ULL	/* ... then 60 MiB that fail every I/O */

/*
 * Replaces the fixture's tier by one over a device-mapper device whose first 4 MiB map
 * to the backing device and whose rest fails every I/O (dm "error" target), with a write
 * buffer of @wb_mib ("0": none, the path a write takes when the buffer is full; NULL:
 * the module's default).
 */
static int make_error_tier(FIXTURE_DATA(tier) *self, char *dev, size_t len,
			   const char *wb_mib)
{
	struct pagetier_tier_create c;
	char cmd[PATH_MAX * 2], dm_path[96];
	struct tu_param p = { 0 };
	int ret;

	if (self->created) {
		ret = tu_tier_destroy(self->ctl, self->c.tier_id);
		if (ret)
			return ret;
		self->created = false;
	}
	ret = system("modprobe dm-mod 2>/dev/null; command -v dmsetup >/dev/null");
	if (ret)
		return -ENOSYS;
	snprintf(self->dm_name, sizeof(self->dm_name), "pagetier-test-err-%d", getpid());
	snprintf(cmd, sizeof(cmd),
		 "printf '0 %llu linear %s 0\\n%llu %llu error\\n' | "
		 "dmsetup create %s --noudevsync && dmsetup mknodes %s",
		 ERR_GOOD_SECTORS, tu_backing(), ERR_GOOD_SECTORS, ERR_BAD_SECTORS,
		 self->dm_name, self->dm_name);
	if (system(cmd)) {
		self->dm_name[0] = '\0';
		return -EIO;
	}
	snprintf(dm_path, sizeof(dm_path), "/dev/mapper/%s", self->dm_name);
	if (wb_mib && tu_param_set(&p, "write_buffer_mib", wb_mib))
		return -EIO;
	ret = tu_tier_create(self->ctl, dm_path, &c);
	tu_param_restore(&p);
	if (ret)
		return ret;
	self->err_created = true;
	self->err_tier = c.tier_id;
	snprintf(dev, len, "/dev/%s%u", PAGETIER_DISK_NAME, c.tier_id);
	return tu_wait_node(dev);
}

/*
 * Without a write buffer (the path of a write that finds it full): writes go to the
 * end of the log, so they reach the failing part of the device once the working 4 MiB
 * (four 1 MiB segments) is full: that write fails, the error reaches the writer, its
 * slots hold nothing, and the segment is retired. Then the second megabyte starts
 * failing reads too (the table changes under the tier): reads of the pages there fail,
 * and only those.
 */
TEST_F(tier, backing_errors)
{
	unsigned long long v[NSTAT];
	struct pagetier_cgroup_stat st;
	__u64 self_id = tu_self_cgroup_id();
	unsigned int chunk, ok_chunks = 0, bad_reads = 0, k;
	char dev[64], cmd[PATH_MAX * 2];
	char *buf;
	int fd, ret;

	NEED_TIER();
	ret = make_error_tier(self, dev, sizeof(dev), "0");
	if (ret == -ENOSYS)
		SKIP(return, "needs dmsetup and dm-mod");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, posix_memalign((void **)&buf, PG, 16 * PG));
	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	/* 16-page chunks at spread-out slots: 64 fill the working 4 MiB. */
	for (chunk = 0; chunk < 128; chunk++) {
		for (k = 0; k < 16; k++)
			fill_page(buf + k * PG, 7, chunk * 48 + k);
		ret = pwrite(fd, buf, 16 * PG, chunk * 48 * PG);
		if (ret < 0) {
			EXPECT_EQ(EIO, errno);
			break;
		}
		ok_chunks++;
	}
	EXPECT_EQ(64U, ok_chunks);
	/* The failed write stored nothing. */
	ASSERT_EQ((ssize_t)(16 * PG), pread(fd, buf, 16 * PG, ok_chunks * 48 * PG));
	for (k = 0; k < 16 * PG; k++)
		ASSERT_EQ(0, buf[k]);
	ASSERT_EQ(0, tier_stat(self->err_tier, v));
	EXPECT_EQ(ok_chunks * 16ULL, v[ST_PAGES]);
	EXPECT_LE(1ULL, v[ST_WERR]);
	EXPECT_EQ(0ULL, v[ST_RERR]);
	/* seg_stat column 5: bad segments. */
	snprintf(cmd, sizeof(cmd), "/sys/block/%s/seg_stat", dev + 5);
	ASSERT_EQ(0, tu_read_file(cmd, cmd, sizeof(cmd)));
	ASSERT_EQ(5, sscanf(cmd, "%llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4]));
	EXPECT_EQ(1ULL, v[4]);

	/* Now reads of the second megabyte fail. */
	snprintf(cmd, sizeof(cmd),
		 "dmsetup suspend %s && printf '0 2048 linear %s 0\\n2048 2048 error\\n"
		 "4096 %llu linear %s 4096\\n%llu %llu error\\n' | dmsetup load %s && "
		 "dmsetup resume %s",
		 self->dm_name, tu_backing(), ERR_GOOD_SECTORS - 4096, tu_backing(),
		 ERR_GOOD_SECTORS, ERR_BAD_SECTORS, self->dm_name, self->dm_name);
	ASSERT_EQ(0, system(cmd));
	for (chunk = 0; chunk < ok_chunks; chunk++) {
		ret = pread(fd, buf, 16 * PG, chunk * 48 * PG);
		if (ret < 0) {
			EXPECT_EQ(EIO, errno);
			/* Written second to fourth... of 16 chunks per segment: the 2nd MiB. */
			EXPECT_TRUE(chunk >= 16 && chunk < 32) TH_LOG("chunk %u failed", chunk);
			bad_reads++;
			continue;
		}
		ASSERT_EQ((ssize_t)(16 * PG), ret);
		for (k = 0; k < 16; k++)
			EXPECT_EQ(-1, check_page(buf + k * PG, 7, chunk * 48 + k));
	}
	EXPECT_EQ(16U, bad_reads);
	close(fd);

	ASSERT_EQ(0, tier_stat(self->err_tier, v));
	EXPECT_EQ(ok_chunks * 16ULL, v[ST_PAGES]);
	EXPECT_EQ(16ULL * 16, v[ST_RERR]);
	ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->err_tier, self_id, &st));
	EXPECT_EQ(ok_chunks * 16ULL, st.pages_stored);
	EXPECT_EQ((ok_chunks + 1) * 16ULL * PG, st.bytes_written);
	free(buf);
}

/* ---- swap round trip ---- */

#define SWAP_MIB	16
#define SWAP_PAGES	(SWAP_MIB * 256UL)

/*
 * In a child: join @cg, fill SWAP_MIB of anonymous memory, push it to swap with
 * MADV_PAGEOUT and report how many pages left; after a byte on @go, read everything back
 * (swap-in) and exit 0 if every byte matches.
 */
static int swap_child(const char *cg, uint64_t seed, int report, int go)
{
	unsigned long i, bad = 0;
	long swapped = 0;
	char *mem, c;
	int tries;

	if (tu_cg_enter(cg))
		return 2;
	mem = mmap(NULL, SWAP_PAGES * PG, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 3;
	for (i = 0; i < SWAP_PAGES; i++)
		fill_page(mem + i * PG, seed, i);
	/* Pages still in per-CPU LRU batches are skipped: repeat until nearly all left. */
	for (tries = 0; tries < 20; tries++) {
		if (madvise(mem, SWAP_PAGES * PG, MADV_PAGEOUT))
			return 4;
		swapped = tu_vmswap_pages();
		if (swapped >= (long)(SWAP_PAGES * 95 / 100))
			break;
		usleep(100000);
	}
	if (write(report, &swapped, sizeof(swapped)) != sizeof(swapped))
		return 5;
	if (read(go, &c, 1) != 1)
		return 6;
	for (i = 0; i < SWAP_PAGES; i++)
		bad += check_page(mem + i * PG, seed, i) != -1;
	return bad ? 1 : 0;
}

/*
 * The tier must be the only swap, or pages could go elsewhere; and zswap would keep them
 * in memory instead of writing them to the tier.
 */
static int swap_prepare(FIXTURE_DATA(tier) *self)
{
	unsigned int lines = 0;
	char buf[4096], *p;

	if (tu_read_file("/proc/swaps", buf, sizeof(buf)))
		return -EIO;
	for (p = buf; (p = strchr(p, '\n')); p++)
		lines++;
	if (lines > 1)
		return -EEXIST;
	if (!tu_read_file("/sys/module/zswap/parameters/enabled", buf, sizeof(buf)) &&
	    buf[0] == 'Y') {
		if (tu_write_file("/sys/module/zswap/parameters/enabled", "N"))
			return -EIO;
		self->zswap_was_on = true;
	}
	return 0;
}

static int swap_on(FIXTURE_DATA(tier) *self, const char *dev)
{
	char cmd[PATH_MAX];

	snprintf(cmd, sizeof(cmd), "mkswap -q %s >/dev/null && swapon --discard=pages -p 32767 %s",
		 dev, dev);
	if (system(cmd))
		return -EIO;
	snprintf(self->swap_dev, sizeof(self->swap_dev), "%s", dev);
	self->swapped_on = true;
	return 0;
}

/*
 * A process swaps out 16 MiB to a tier over a device that fails all but its first 4 MiB,
 * with a write buffer of @wb_mib (see make_error_tier()), then reads every byte back.
 */
static void swap_error_run(struct __test_metadata *_metadata, FIXTURE_DATA(tier) *self,
			   const char *wb_mib)
{
	unsigned long long v[NSTAT], wb[WB_N];
	struct pagetier_cgroup_stat st;
	int report[2], go[2], ret;
	char dev[64], name[64];
	uint64_t seed = 42;
	long swapped;
	uint64_t id[1] = { 0 };	/* an array: kept in memory across the harness's longjmp */

	ret = swap_prepare(self);
	if (ret == -EEXIST)
		SKIP(return, "another swap device is active");
	ASSERT_EQ(0, ret);
	ret = make_error_tier(self, dev, sizeof(dev), wb_mib);
	if (ret == -ENOSYS)
		SKIP(return, "needs dmsetup and dm-mod");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, tu_cg_setup_root());
	snprintf(name, sizeof(name), "pagetier-test-swaperr-%d", getpid());
	ASSERT_EQ(0, tu_cg_create(name, self->cg[0], sizeof(self->cg[0]), id));
	ASSERT_EQ(0, swap_on(self, dev));

	ASSERT_EQ(0, pipe(report));
	ASSERT_EQ(0, pipe(go));
	self->kid[0] = fork();
	ASSERT_LE(0, self->kid[0]);
	if (!self->kid[0])
		_exit(swap_child(self->cg[0], seed, report[1], go[0]));
	close(report[1]);
	close(go[0]);
	ASSERT_EQ((ssize_t)sizeof(swapped), read(report[0], &swapped, sizeof(swapped)));
	TH_LOG("%ld of %lu pages swapped out", swapped, SWAP_PAGES);

	ASSERT_EQ(0, tier_stat(self->err_tier, v));
	ASSERT_EQ(WB_N, tu_tier_stat(self->err_tier, "wb_stat", wb, WB_N));
	TH_LOG("tier: pages_stored %llu write_errors %llu; buffer: %llu write-back errors, %llu pages moved, %llu stuck",
	       v[ST_PAGES], v[ST_WERR], wb[WB_ERRORS], wb[WB_MOVED], wb[WB_STUCK]);
	EXPECT_LE(1ULL, v[ST_WERR]);
	/*
	 * Only the working 4 MiB can hold pages: failed writes left nothing behind, but
	 * what the buffer acknowledged and could not place is kept there.
	 */
	EXPECT_GE(ERR_GOOD_SECTORS / 8 + wb[WB_STUCK], v[ST_PAGES]);
	ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->err_tier, id[0], &st));
	EXPECT_GE(ERR_GOOD_SECTORS / 8 + wb[WB_STUCK], st.pages_stored);
	if (wb[WB_MAX]) {
		EXPECT_LE(1ULL, wb[WB_ERRORS]);
	}

	ASSERT_EQ(1, write(go[1], "g", 1));
	close(go[1]);
	EXPECT_EQ(0, tu_wait_exit(&self->kid[0])) TH_LOG("a page whose swap write failed was lost");
	close(report[0]);
}

/*
 * Without a write buffer, swap writes into the failing part of the backing device fail;
 * swap must see it and keep those pages in memory, so the process reads back every byte.
 */
TEST_F_TIMEOUT(tier, swap_write_error_keeps_pages, 300)
{
	NEED_TIER();
	swap_error_run(_metadata, self, "0");
}

/*
 * With the write buffer, swap writes complete at once and their write-backs fail later:
 * the tier writes those pages elsewhere, or keeps them in the buffer while there is no
 * room; when the buffer is full of them, writes go through and fail as above. Either
 * way the process reads back every byte. An 8 MiB buffer: the 16 MiB swapped out
 * overflow it, as well as the device's working 4 MiB.
 */
TEST_F_TIMEOUT(tier, swap_writeback_error_keeps_pages, 300)
{
	NEED_TIER();
	swap_error_run(_metadata, self, "8");
}

/*
 * With the write buffer, 8 MiB written to a tier whose device holds 4 MiB all succeed
 * (the device-mapper device is suspended meanwhile, so that every write-back waits in it
 * and the outcome does not depend on timing): once it resumes, the write-backs into the
 * failing part fail, each failure retires a segment and the pages move on, and those
 * that find no room stay in the buffer. Every page reads back, a flush reports that the
 * device does not have them all (-EIO), and once they are discarded the buffer lets
 * them go and a flush succeeds.
 */
TEST_F_TIMEOUT(tier, backing_errors_buffered, 120)
{
	unsigned long long v[NSTAT], wb[WB_N], ss[SS_N];
	char dev[64], cmd[PATH_MAX], *buf;
	__u64 whole[2] = { 0, 0 };
	unsigned int chunk, k, i;
	int fd, ret;

	NEED_TIER();
	ret = make_error_tier(self, dev, sizeof(dev), NULL);
	if (ret == -ENOSYS)
		SKIP(return, "needs dmsetup and dm-mod");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, posix_memalign((void **)&buf, PG, 16 * PG));
	self->fd = fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	snprintf(cmd, sizeof(cmd), "dmsetup suspend %s", self->dm_name);
	ASSERT_EQ(0, system(cmd));
	/* 8 MiB: twice what the device can hold. */
	for (chunk = 0; chunk < 128; chunk++) {
		for (k = 0; k < 16; k++)
			fill_page(buf + k * PG, 8, chunk * 48 + k);
		ret = pwrite(fd, buf, 16 * PG, chunk * 48 * PG);
		if (ret != (ssize_t)(16 * PG))
			break;
	}
	snprintf(cmd, sizeof(cmd), "dmsetup resume %s", self->dm_name);
	ASSERT_EQ(0, system(cmd));
	ASSERT_EQ(128U, chunk) TH_LOG("chunk %u: %s", chunk, strerror(errno));
	EXPECT_EQ(-1, fsync(fd));
	EXPECT_EQ(EIO, errno);
	ASSERT_EQ(WB_N, tu_tier_stat(self->err_tier, "wb_stat", wb, WB_N));
	ASSERT_EQ(SS_N, tu_tier_stat(self->err_tier, "seg_stat", ss, SS_N));
	ASSERT_EQ(0, tier_stat(self->err_tier, v));
	TH_LOG("buffer: %llu write-back errors, %llu pages moved, %llu stuck; %llu bad segments, %llu write errors",
	       wb[WB_ERRORS], wb[WB_MOVED], wb[WB_STUCK], ss[SS_BAD], v[ST_WERR]);
	EXPECT_LE(1ULL, wb[WB_ERRORS]);
	EXPECT_LE(1ULL, wb[WB_MOVED]);
	EXPECT_LE(1ULL, wb[WB_STUCK]);
	EXPECT_LE(1ULL, ss[SS_BAD]);
	EXPECT_EQ(128 * 16ULL, v[ST_PAGES]);
	for (chunk = 0; chunk < 128; chunk++) {
		ASSERT_EQ((ssize_t)(16 * PG), pread(fd, buf, 16 * PG, chunk * 48 * PG))
			TH_LOG("chunk %u: %s", chunk, strerror(errno));
		for (k = 0; k < 16; k++)
			EXPECT_EQ(-1, check_page(buf + k * PG, 8, chunk * 48 + k))
				TH_LOG("chunk %u page %u", chunk, k);
	}
	/* Discarded, the stuck pages are let go (the flusher looks every 100 ms). */
	whole[1] = 128 * 48 * PG;
	ASSERT_EQ(0, ioctl(fd, BLKDISCARD, whole));
	for (i = 0; i < 50; i++) {
		ASSERT_EQ(WB_N, tu_tier_stat(self->err_tier, "wb_stat", wb, WB_N));
		if (!wb[WB_HELD])
			break;
		usleep(100000);
	}
	EXPECT_EQ(0ULL, wb[WB_HELD]);
	EXPECT_EQ(0ULL, wb[WB_STUCK]);
	EXPECT_EQ(0, fsync(fd));
	free(buf);
}

TEST_F_TIMEOUT(tier, swap_roundtrip_per_cgroup, 400)
{
	struct pagetier_cgroup_stat st[2], st2[2];
	unsigned long long v[NSTAT];
	int report[2][2], go[2][2];
	long swapped[2];
	char buf[4096], name[64];
	uint64_t id[2];
	uint64_t seed;
	unsigned int i;
	int ret;

	NEED_TIER();
	ret = swap_prepare(self);
	if (ret == -EEXIST)
		SKIP(return, "another swap device is active");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, tu_cg_setup_root()) TH_LOG("cgroup2 with the memory controller is needed");
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "pagetier-test-swap%c-%d", 'a' + i, getpid());
		ASSERT_EQ(0, tu_cg_create(name, self->cg[i], sizeof(self->cg[i]), &id[i]));
	}
	ASSERT_EQ((ssize_t)sizeof(seed), getrandom(&seed, sizeof(seed), 0));
	TH_LOG("seed %llu", (unsigned long long)seed);

	ASSERT_EQ(0, swap_on(self, self->dev));
	ASSERT_EQ(0, tu_read_file("/proc/swaps", buf, sizeof(buf)));
	ASSERT_TRUE(strstr(buf, self->dev) != NULL) TH_LOG("%s", buf);
	ASSERT_TRUE(strstr(buf, "32767") != NULL) TH_LOG("%s", buf);

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pipe(report[i]));
		ASSERT_EQ(0, pipe(go[i]));
		self->kid[i] = fork();
		ASSERT_LE(0, self->kid[i]);
		if (!self->kid[i])
			_exit(swap_child(self->cg[i], seed + i, report[i][1], go[i][0]));
		close(report[i][1]);
		close(go[i][0]);
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ((ssize_t)sizeof(swapped[i]), read(report[i][0], &swapped[i],
							    sizeof(swapped[i])))
			TH_LOG("child %u died before paging out", i);
		TH_LOG("cgroup %llu: %ld of %lu pages swapped out", (unsigned long long)id[i],
		       swapped[i], SWAP_PAGES);
		ASSERT_LE((long)(SWAP_PAGES / 2), swapped[i]);
	}

	/* Each cgroup owns (at least) the pages it has on swap, and nobody else's. */
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->c.tier_id, id[i], &st[i]));
		TH_LOG("cgroup %llu: pages_stored %llu bytes_written %llu write_ios %llu",
		       (unsigned long long)id[i], (unsigned long long)st[i].pages_stored,
		       (unsigned long long)st[i].bytes_written,
		       (unsigned long long)st[i].write_ios);
		EXPECT_LE((__u64)swapped[i], st[i].pages_stored);
		EXPECT_GE(SWAP_PAGES, st[i].pages_stored);
		EXPECT_LE(st[i].pages_stored * PG, st[i].bytes_written);
		EXPECT_LT(0ULL, st[i].write_ios);
	}
	ASSERT_EQ(0, tier_stat(self->c.tier_id, v));
	EXPECT_LE(st[0].pages_stored + st[1].pages_stored, v[ST_PAGES]);

	/* Out of the swap cache too, so that the swap-in reads the tier. */
	for (i = 0; i < 2; i++) {
		long long cur = tu_cg_reclaim(self->cg[i], 1 << 20);

		TH_LOG("cgroup %llu: memory.current %lld after reclaim", (unsigned long long)id[i],
		       cur);
	}

	/* Swap everything back in; the children check every byte. */
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(1, write(go[i][1], "g", 1));
		close(go[i][1]);
	}
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, tu_wait_exit(&self->kid[i])) TH_LOG("child %u: data mismatch", i);
		close(report[i][0]);
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->c.tier_id, id[i], &st2[i]));
		TH_LOG("cgroup %llu: after swap-in bytes_read %llu read_ios %llu pages_stored %llu",
		       (unsigned long long)id[i], (unsigned long long)st2[i].bytes_read,
		       (unsigned long long)st2[i].read_ios,
		       (unsigned long long)st2[i].pages_stored);
		EXPECT_LE((__u64)swapped[i] * PG * 9 / 10, st2[i].bytes_read);
		EXPECT_LT(0ULL, st2[i].read_ios);
	}
	ASSERT_EQ(0, tier_stat(self->c.tier_id, v));
	EXPECT_EQ(0ULL, v[ST_RERR] + v[ST_WERR]);
}

/* ---- reclaim frees what the tier stores, in the same pass ---- */

#define PAGEOUT_MIB	64
#define PAGEOUT_PAGES	(PAGEOUT_MIB * 256UL)

/* "swapcached" of @cg's memory.stat in bytes, or -1. */
static long long cg_swapcached(const char *cg)
{
	char path[PATH_MAX + 32], buf[8192], *p;

	snprintf(path, sizeof(path), "%s/memory.stat", cg);
	if (tu_read_file(path, buf, sizeof(buf)))
		return -1;
	p = strstr(buf, "\nswapcached ");
	return p ? strtoll(p + 12, NULL, 10) : -1;
}

/*
 * In a child: join @cg on one CPU (so MADV_PAGEOUT's own LRU drain reaches every page
 * it faulted), fill PAGEOUT_MIB, then one MADV_PAGEOUT over it; report memory.current
 * before and right after the call, swapcached and VmSwap right after; after a byte on
 * @go, check every byte (swap-in).
 */
static int pageout_child(const char *cg, uint64_t seed, int report, int go)
{
	unsigned long i, bad = 0, half = PAGEOUT_PAGES / 2;
	long long res[5];
	cpu_set_t cpus;
	char *mem, c;
	long off;

	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	if (tu_cg_enter(cg) || sched_setaffinity(0, sizeof(cpus), &cpus))
		return 2;
	/* 2 MiB aligned: the first half in THPs (where the kernel has them), the rest not. */
	mem = mmap(NULL, (PAGEOUT_PAGES + 512) * PG, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 3;
	mem = (char *)(((uintptr_t)mem + (2UL << 20) - 1) & ~((2UL << 20) - 1));
	madvise(mem, half * PG, MADV_HUGEPAGE);
	if (madvise(mem + half * PG, half * PG, MADV_NOHUGEPAGE))
		return 3;
	for (i = 0; i < PAGEOUT_PAGES; i++)
		tu_fill(mem + i * PG, seed, i, 1);
	res[0] = tu_cg_num(cg, "memory.current");
	if (madvise(mem, PAGEOUT_PAGES * PG, MADV_PAGEOUT))
		return 4;
	res[1] = tu_cg_num(cg, "memory.current");
	res[2] = cg_swapcached(cg);
	res[3] = tu_vmswap_pages();
	res[4] = 0;
	if (write(report, res, sizeof(res)) != sizeof(res))
		return 5;
	if (read(go, &c, 1) != 1)
		return 6;
	for (i = 0; i < PAGEOUT_PAGES; i++) {
		off = tu_check(mem + i * PG, seed, i, 1);
		if (off < 0)
			continue;
		if (bad++ < 8) {
			uint64_t *w = (uint64_t *)(mem + i * PG);

			fprintf(stderr, "page %lu differs at byte %ld: holds %s page %llu\n", i,
				off, w[0] == TU_MAGIC ? "the" : "no", (unsigned long long)w[2]);
		}
	}
	if (bad)
		fprintf(stderr, "%lu pages differ\n", bad);
	return bad ? 1 : 0;
}

/*
 * A process in a memory cgroup pages out 64 MiB with one MADV_PAGEOUT: when the call
 * returns, the cgroup's memory has dropped by what went to swap, and none of it stayed in
 * the swap cache: the tier completed the writes in the pass that made them (the write
 * buffer), so reclaim freed each page at once. Then every byte comes back.
 */
TEST_F_TIMEOUT(tier, pageout_frees_at_once, 300)
{
	unsigned long long wb[16];
	int report[2], go[2], ret;
	long long res[5], freed, swapped;
	char name[64];
	uint64_t id[1] = { 0 }, seed;

	NEED_TIER();
	ret = swap_prepare(self);
	if (ret == -EEXIST)
		SKIP(return, "another swap device is active");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, tu_cg_setup_root());
	snprintf(name, sizeof(name), "pagetier-test-pageout-%d", getpid());
	ASSERT_EQ(0, tu_cg_create(name, self->cg[0], sizeof(self->cg[0]), id));
	ASSERT_EQ((ssize_t)sizeof(seed), getrandom(&seed, sizeof(seed), 0));
	ASSERT_EQ(0, swap_on(self, self->dev));

	ASSERT_EQ(0, pipe(report));
	ASSERT_EQ(0, pipe(go));
	self->kid[0] = fork();
	ASSERT_LE(0, self->kid[0]);
	if (!self->kid[0])
		_exit(pageout_child(self->cg[0], seed, report[1], go[0]));
	close(report[1]);
	close(go[0]);
	ASSERT_EQ((ssize_t)sizeof(res), read(report[0], res, sizeof(res)))
		TH_LOG("the child died before paging out");
	freed = res[0] - res[1];
	swapped = res[3] * (long long)PG;
	memset(wb, 0, sizeof(wb));
	tu_tier_stat(self->c.tier_id, "wb_stat", wb, 16);	/* for the log only */
	TH_LOG("MADV_PAGEOUT of %d MiB: %lld MiB swapped, memory.current %lld -> %lld MiB (freed %lld MiB), swapcached %lld MiB",
	       PAGEOUT_MIB, swapped >> 20, res[0] >> 20, res[1] >> 20, freed >> 20,
	       res[2] >> 20);
	TH_LOG("wb_stat: %llu buffered, %llu direct pages, %llu full, %llu held",
	       wb[0], wb[1], wb[2], wb[3]);
	/* The call reached (nearly) every page. */
	EXPECT_LE((long long)(PAGEOUT_PAGES * PG * 9 / 10), swapped);
	/* What went to swap left memory with the call ... */
	EXPECT_LE(swapped * 9 / 10, freed);
	/* ... and the swap cache holds (nearly) nothing: at most 1/32 of it. */
	EXPECT_LE(0, res[2]);
	EXPECT_GE((long long)(PAGEOUT_PAGES * PG / 32), res[2]);

	ASSERT_EQ(1, write(go[1], "g", 1));
	close(go[1]);
	EXPECT_EQ(0, tu_wait_exit(&self->kid[0])) TH_LOG("a page came back wrong");
	close(report[0]);
}

TEST_HARNESS_MAIN
