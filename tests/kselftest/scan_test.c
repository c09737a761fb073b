// SPDX-License-Identifier: GPL-2.0
/*
 * scan_test.c - kselftests of the pagetier.ko access scanner, PAGETIER_IOC_SCAN.
 *
 * Needs root and pagetier.ko loaded. The swap tests turn swap on over a scratch block
 * device whose contents are destroyed: $PAGETIER_TEST_BACKING, default /dev/nvme0n1.
 * Every test leaves the system as it found it (swap off, THP mode restored).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include "pagetier.h"

/* The 6.1 harness's generated wrappers do not use all their parameters. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif

#define PG		4096UL
#define HPAGE		(2UL << 20)
#define HPAGE_PAGES	(HPAGE / PG)
#define CTL_PATH	"/dev/" PAGETIER_CTL_NAME
#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"
#define PM_PRESENT	(1ULL << 63)
#define PM_SWAP		(1ULL << 62)

/* ---- helpers ---- */

static int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static int ctl_open(void)
{
	return open(CTL_PATH, O_RDWR | O_CLOEXEC);
}

static size_t bm_words(unsigned long pages)
{
	return (pages + 63) / 64;
}

static uint64_t *bm_alloc(unsigned long pages)
{
	return calloc(bm_words(pages), sizeof(uint64_t));
}

static bool bm_test(const uint64_t *bm, unsigned long i)
{
	return (bm[i / 64] >> (i % 64)) & 1;
}

static void bm_set(uint64_t *bm, unsigned long i)
{
	bm[i / 64] |= 1ULL << (i % 64);
}

static unsigned long bm_weight(const uint64_t *bm, unsigned long pages)
{
	unsigned long i, n = 0;

	for (i = 0; i < bm_words(pages); i++)
		n += __builtin_popcountll(bm[i]);
	return n;
}

/* Number of bits that differ; *first is the first one (or -1). */
static unsigned long bm_diff(const uint64_t *a, const uint64_t *b, unsigned long pages,
			     long *first)
{
	unsigned long i, n = 0;

	*first = -1;
	for (i = 0; i < pages; i++) {
		if (bm_test(a, i) == bm_test(b, i))
			continue;
		if (*first < 0)
			*first = i;
		n++;
	}
	return n;
}

struct totals {
	unsigned long long scanned, present, accessed, swapped, skipped;
	unsigned int result_flags;
};

static void scan_init(struct pagetier_scan *s, pid_t pid, unsigned long start,
		      unsigned long len, __u32 flags)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->pid = pid;
	s->start = start;
	s->len = len;
	s->flags = flags;
}

/*
 * Scans [start, start + len) of @pid completely, resuming at next_addr; returns the
 * number of calls or -errno. Any bitmap may be NULL.
 */
static long scan_all(int ctl, pid_t pid, unsigned long start, unsigned long len, __u32 flags,
		     __u64 max_pages, uint64_t *acc, uint64_t *pres, uint64_t *swp,
		     struct totals *t)
{
	struct pagetier_scan s;
	long calls = 0;
	int ret;

	scan_init(&s, pid, start, len, flags);
	s.max_pages = max_pages;
	s.accessed_bitmap = (uintptr_t)acc;
	s.present_bitmap = (uintptr_t)pres;
	s.swapped_bitmap = (uintptr_t)swp;
	if (t)
		memset(t, 0, sizeof(*t));
	do {
		ret = xioctl(ctl, PAGETIER_IOC_SCAN, &s);
		if (ret)
			return ret;
		calls++;
		if (!s.pages_scanned || s.next_addr > start + len)
			return -EPROTO;
		if (t) {
			t->scanned += s.pages_scanned;
			t->present += s.pages_present;
			t->accessed += s.pages_accessed;
			t->swapped += s.pages_swapped;
			t->skipped += s.pages_skipped;
			t->result_flags |= s.result_flags;
		}
	} while (s.next_addr < start + len);
	return calls;
}

/* /proc/PID/pagemap entries of @pages pages from @start. */
static int pagemap_read(pid_t pid, unsigned long start, unsigned long pages, uint64_t *pm)
{
	char path[64];
	size_t want = pages * sizeof(uint64_t);
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, pm, want, start / PG * sizeof(uint64_t));
	close(fd);
	return n == (ssize_t)want ? 0 : -EIO;
}

static int read_file(const char *path, char *buf, size_t len)
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

static int write_file(const char *path, const char *s)
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

/* An anonymous private mapping of @pages 4 KiB pages that never gets THPs. */
static char *map_small(unsigned long pages)
{
	char *p = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (madvise(p, pages * PG, MADV_NOHUGEPAGE)) {
		munmap(p, pages * PG);
		return NULL;
	}
	return p;
}

/* A write is a store only: a read first would map the (huge) zero page. */
static void touch(char *base, unsigned long i, bool write)
{
	volatile char *p = base + i * PG;

	if (write)
		p[1] = (char)(i | 1);
	else
		(void)p[1];
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* A deterministic pseudo-random subset of [0, pages): about 1 in @ratio. */
static void subset(uint64_t *bm, unsigned long pages, uint64_t seed, unsigned int ratio)
{
	unsigned long i;

	for (i = 0; i < pages; i++)
		if (mix64(seed ^ i) % ratio == 0)
			bm_set(bm, i);
}

/* Drops the capabilities in @drop (bit n = capability n) from every set. */
static int set_caps(uint64_t drop)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct cap[2];
	int i;

	if (syscall(SYS_capget, &h, cap))
		return -errno;
	for (i = 0; i < 2; i++) {
		__u32 m = ~(__u32)(drop >> (32 * i));

		cap[i].effective &= m;
		cap[i].permitted &= m;
		cap[i].inheritable &= m;
	}
	return syscall(SYS_capset, &h, cap) ? -errno : 0;
}

static int wait_exit(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- a target process driven over pipes ---- */

enum { CMD_TOUCH = 1, CMD_PAGEOUT, CMD_DUMPABLE, CMD_DROP_CAPS, CMD_QUIT };

struct cmd {
	int op;
	int write;
	unsigned long first, count, stride;
};

struct target {
	pid_t pid;
	int cmd;		/* write end */
	int rep;		/* read end */
	char *base;		/* in the target's address space */
	unsigned long pages;
};

static void target_main(int cmd_fd, int rep_fd, unsigned long pages)
{
	char *base = map_small(pages);
	struct cmd c;
	long ret;

	if (!base || write(rep_fd, &base, sizeof(base)) != sizeof(base))
		_exit(2);
	while (read(cmd_fd, &c, sizeof(c)) == sizeof(c)) {
		unsigned long i;

		ret = 0;
		switch (c.op) {
		case CMD_TOUCH:
			for (i = c.first; i < c.first + c.count; i += c.stride)
				touch(base, i, c.write);
			break;
		case CMD_PAGEOUT:
			ret = madvise(base + c.first * PG, c.count * PG, MADV_PAGEOUT) ? -errno : 0;
			break;
		case CMD_DUMPABLE:
			ret = prctl(PR_SET_DUMPABLE, c.write, 0, 0, 0) ? -errno : 0;
			break;
		case CMD_DROP_CAPS:
			ret = set_caps(~0ULL);
			break;
		case CMD_QUIT:
			_exit(0);
		}
		if (write(rep_fd, &ret, sizeof(ret)) != sizeof(ret))
			_exit(3);
	}
	_exit(0);
}

static int target_start(struct target *t, unsigned long pages)
{
	int cmd[2], rep[2];

	if (pipe(cmd) || pipe(rep))
		return -errno;
	t->pages = pages;
	t->pid = fork();
	if (t->pid < 0)
		return -errno;
	if (!t->pid) {
		close(cmd[1]);
		close(rep[0]);
		target_main(cmd[0], rep[1], pages);
	}
	close(cmd[0]);
	close(rep[1]);
	t->cmd = cmd[1];
	t->rep = rep[0];
	if (read(t->rep, &t->base, sizeof(t->base)) != sizeof(t->base))
		return -EIO;
	return 0;
}

static long target_cmd(struct target *t, int op, int wr, unsigned long first,
		       unsigned long count, unsigned long stride)
{
	struct cmd c = { .op = op, .write = wr, .first = first, .count = count,
			 .stride = stride ? stride : 1 };
	long ret;

	if (write(t->cmd, &c, sizeof(c)) != sizeof(c))
		return -EIO;
	if (read(t->rep, &ret, sizeof(ret)) != sizeof(ret))
		return -EIO;
	return ret;
}

static void target_stop(struct target *t)
{
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
		t->pid = 0;
		close(t->cmd);
		close(t->rep);
	}
}

/* ---- ABI ---- */

TEST(feature_bit)
{
	struct pagetier_version v = { .size = sizeof(v) };
	int ctl = ctl_open();

	ASSERT_LE(0, ctl) TH_LOG("open %s: %s (is pagetier.ko loaded?)", CTL_PATH, strerror(errno));
	ASSERT_EQ(0, xioctl(ctl, PAGETIER_IOC_VERSION, &v));
	EXPECT_EQ(PAGETIER_FEAT_SCAN, v.features & PAGETIER_FEAT_SCAN);
	close(ctl);
}

TEST(bad_arguments)
{
	unsigned long pages = 256, len = pages * PG;
	char *mem = map_small(pages);
	uint64_t bm[4];
	struct pagetier_scan s;
	int ctl = ctl_open();

	ASSERT_LE(0, ctl);
	ASSERT_NE(NULL, mem);
	memset(mem, 1, len);
#define SCAN_EXPECT(err, ...) do {						\
		scan_init(&s, getpid(), (uintptr_t)mem, len, 0);		\
		s.accessed_bitmap = (uintptr_t)bm;				\
		__VA_ARGS__;							\
		EXPECT_EQ(err, xioctl(ctl, PAGETIER_IOC_SCAN, &s))		\
			TH_LOG("%s", #__VA_ARGS__);				\
	} while (0)

	SCAN_EXPECT(0);
	SCAN_EXPECT(-EINVAL, s.start += 1);
	SCAN_EXPECT(-EINVAL, s.start += 2048);
	SCAN_EXPECT(-EINVAL, s.len = 0);
	SCAN_EXPECT(-EINVAL, s.len = 100);
	SCAN_EXPECT(-EINVAL, s.len += 1);
	/* start + len wraps, or ends above any user address space (4 or 5 levels). */
	SCAN_EXPECT(-EINVAL, s.len = -(__u64)PG);
	SCAN_EXPECT(-EINVAL, s.start = 0xffff800000000000ULL; s.len = PG);
	SCAN_EXPECT(-EINVAL, s.start = 1ULL << 57; s.len = PG);
	SCAN_EXPECT(-EINVAL, s.flags = 1U << 5);
	SCAN_EXPECT(-EINVAL, s.flags = PAGETIER_SCAN_FLUSH_TLB);
	SCAN_EXPECT(-EINVAL, s.reserved = 1);
	SCAN_EXPECT(-EINVAL, s.reserved2 = 1);
	SCAN_EXPECT(-EINVAL, s.pid = 0);
	SCAN_EXPECT(-EINVAL, s.pid = -1);
	/* next_addr: inside the range and on a bitmap word (64 pages) from start. */
	SCAN_EXPECT(-EINVAL, s.next_addr = s.start + PG);
	SCAN_EXPECT(-EINVAL, s.next_addr = s.start + 64 * PG + 1);
	SCAN_EXPECT(-EINVAL, s.next_addr = s.start - 64 * PG);
	SCAN_EXPECT(-EINVAL, s.next_addr = s.start + len + 64 * PG);
	SCAN_EXPECT(0, s.next_addr = s.start + 64 * PG);
	EXPECT_EQ(s.start + len, s.next_addr);
	EXPECT_EQ(pages - 64, s.pages_scanned);
	/* Done already: nothing to do, no error. */
	SCAN_EXPECT(0, s.next_addr = s.start + len);
	EXPECT_EQ(0ULL, s.pages_scanned);
	EXPECT_EQ(s.start + len, s.next_addr);

	/* The struct: shorter than the first version, or an unknown non-zero tail. */
	SCAN_EXPECT(-EINVAL, s.size = offsetof(struct pagetier_scan, result_flags));
	{
		struct {
			struct pagetier_scan s;
			__u64 future;
		} big;
		unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE, PAGETIER_IOC_MAGIC,
					 _IOC_NR(PAGETIER_IOC_SCAN), sizeof(big));

		memset(&big, 0, sizeof(big));
		scan_init(&big.s, getpid(), (uintptr_t)mem, len, 0);
		big.s.size = sizeof(big);
		EXPECT_EQ(0, xioctl(ctl, cmd, &big));
		EXPECT_EQ(pages, big.s.pages_present);
		big.future = 1;
		EXPECT_EQ(-E2BIG, xioctl(ctl, cmd, &big));
	}
#undef SCAN_EXPECT
	munmap(mem, len);
	close(ctl);
}

TEST(bad_pid)
{
	struct pagetier_scan s;
	char comm[64];
	int ctl = ctl_open();
	pid_t pid;

	ASSERT_LE(0, ctl);

	/* A process that no longer exists. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(0);
	ASSERT_EQ(0, wait_exit(pid));
	scan_init(&s, pid, 0x10000, PG, 0);
	EXPECT_EQ(-ESRCH, xioctl(ctl, PAGETIER_IOC_SCAN, &s));

	/* A zombie: it exists, its address space does not. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(0);
	{
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		ASSERT_EQ(0, waitid(P_PID, pid, &si, WEXITED | WNOWAIT));
	}
	scan_init(&s, pid, 0x10000, PG, 0);
	EXPECT_EQ(-ESRCH, xioctl(ctl, PAGETIER_IOC_SCAN, &s));
	ASSERT_EQ(0, wait_exit(pid));

	/* A kernel thread: kthreadd is pid 2 in the initial pid namespace. */
	ASSERT_EQ(0, read_file("/proc/2/comm", comm, sizeof(comm)));
	ASSERT_EQ(0, strncmp(comm, "kthreadd", 8)) TH_LOG("pid 2 is %s", comm);
	scan_init(&s, 2, 0x10000, PG, 0);
	EXPECT_EQ(-EINVAL, xioctl(ctl, PAGETIER_IOC_SCAN, &s));
	close(ctl);
}

/* Bitmaps that cannot be written fail the call before any accessed bit is cleared. */
TEST(bitmap_faults)
{
	unsigned long pages = 256, len = pages * PG;
	char *mem = map_small(pages), *ro, *guard;
	uint64_t acc[4];
	struct pagetier_scan s;
	struct totals t;
	int ctl = ctl_open();

	ASSERT_LE(0, ctl);
	ASSERT_NE(NULL, mem);
	memset(mem, 1, len);
	ro = mmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	/* One writable page followed by an inaccessible one. */
	guard = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, guard);
	ASSERT_EQ(0, mprotect(guard + PG, PG, PROT_NONE));

	scan_init(&s, getpid(), (uintptr_t)mem, len, PAGETIER_SCAN_CLEAR);
	s.accessed_bitmap = 8;				/* not mapped */
	EXPECT_EQ(-EFAULT, xioctl(ctl, PAGETIER_IOC_SCAN, &s));
	scan_init(&s, getpid(), (uintptr_t)mem, len, PAGETIER_SCAN_CLEAR);
	s.present_bitmap = (uintptr_t)ro;		/* read-only */
	EXPECT_EQ(-EFAULT, xioctl(ctl, PAGETIER_IOC_SCAN, &s));
	scan_init(&s, getpid(), (uintptr_t)mem, len, PAGETIER_SCAN_CLEAR);
	s.swapped_bitmap = (uintptr_t)(guard + PG - 16);	/* room for 2 of 4 words */
	EXPECT_EQ(-EFAULT, xioctl(ctl, PAGETIER_IOC_SCAN, &s));
	scan_init(&s, getpid(), (uintptr_t)mem, len, PAGETIER_SCAN_CLEAR);
	s.accessed_bitmap = -(__u64)16;			/* wraps */
	EXPECT_EQ(-EFAULT, xioctl(ctl, PAGETIER_IOC_SCAN, &s));

	/* Nothing was cleared: every page still reads as accessed. */
	memset(acc, 0, sizeof(acc));
	ASSERT_LT(0, scan_all(ctl, getpid(), (uintptr_t)mem, len, 0, 0, acc, NULL, NULL, &t));
	EXPECT_EQ(pages, t.accessed);
	EXPECT_EQ(pages, bm_weight(acc, pages));

	/* Exactly large enough is fine (the last word may be partial). */
	scan_init(&s, getpid(), (uintptr_t)mem, 129 * PG, 0);
	s.accessed_bitmap = (uintptr_t)(guard + PG - 24);	/* 3 words for 129 pages */
	EXPECT_EQ(0, xioctl(ctl, PAGETIER_IOC_SCAN, &s));
	munmap(ro, PG);
	munmap(guard, 2 * PG);
	munmap(mem, len);
	close(ctl);
}

/* ---- accessed, present ---- */

/*
 * The accessed bitmap of the test process itself: after a clear, it is exactly the set
 * of pages touched since; a second scan without touches finds none.
 */
TEST(accessed_self)
{
	unsigned long pages = 1024, len = pages * PG, i;
	uint64_t *acc = bm_alloc(pages), *pres = bm_alloc(pages), *want = bm_alloc(pages);
	char *mem = map_small(pages);
	struct totals t;
	long first;
	int ctl = ctl_open();

	ASSERT_LE(0, ctl);
	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, acc);
	ASSERT_NE(NULL, pres);
	ASSERT_NE(NULL, want);

	/* Only even pages are ever touched: odd ones are not present. */
	for (i = 0; i < pages; i += 2)
		touch(mem, i, true);
	ASSERT_LT(0, scan_all(ctl, getpid(), (uintptr_t)mem, len,
			      PAGETIER_SCAN_CLEAR | PAGETIER_SCAN_FLUSH_TLB, 0, acc, pres, NULL,
			      &t));
	for (i = 0; i < pages; i += 2)
		bm_set(want, i);
	EXPECT_EQ(0UL, bm_diff(pres, want, pages, &first)) TH_LOG("first at %ld", first);
	EXPECT_EQ(0UL, bm_diff(acc, want, pages, &first)) TH_LOG("first at %ld", first);
	EXPECT_EQ(pages, t.scanned);
	EXPECT_EQ(pages / 2, t.present);
	EXPECT_EQ(pages / 2, t.accessed);
	EXPECT_EQ(0ULL, t.swapped);

	/* Cleared: no accesses since. */
	ASSERT_LT(0, scan_all(ctl, getpid(), (uintptr_t)mem, len, 0, 0, acc, pres, NULL, &t));
	EXPECT_EQ(0UL, bm_weight(acc, pages));
	EXPECT_EQ(0ULL, t.accessed);
	EXPECT_EQ(pages / 2, t.present);

	/* A pseudo-random subset of the present pages, read or written. */
	memset(want, 0, bm_words(pages) * 8);
	subset(want, pages, 42, 3);
	for (i = 0; i < pages; i++) {
		if (i & 1)
			want[i / 64] &= ~(1ULL << (i % 64));
		else if (bm_test(want, i))
			touch(mem, i, i % 4 == 0);
	}
	ASSERT_LT(0, scan_all(ctl, getpid(), (uintptr_t)mem, len,
			      PAGETIER_SCAN_CLEAR | PAGETIER_SCAN_FLUSH_TLB, 0, acc, NULL, NULL,
			      &t));
	EXPECT_EQ(0UL, bm_diff(acc, want, pages, &first))
		TH_LOG("first difference at page %ld (want %d)", first,
		       first >= 0 ? bm_test(want, first) : -1);
	EXPECT_EQ(bm_weight(want, pages), t.accessed);

	ASSERT_LT(0, scan_all(ctl, getpid(), (uintptr_t)mem, len, PAGETIER_SCAN_CLEAR, 0, acc,
			      NULL, NULL, &t));
	EXPECT_EQ(0UL, bm_weight(acc, pages));
	munmap(mem, len);
	free(acc);
	free(pres);
	free(want);
	close(ctl);
}

/* The same with another process as the target, in several rounds. */
TEST(accessed_child)
{
	unsigned long pages = 2048, len = pages * PG, i, round;
	uint64_t *acc = bm_alloc(pages), *pres = bm_alloc(pages), *want = bm_alloc(pages);
	struct target tg = { 0 };
	struct totals t;
	long first;
	int ctl = ctl_open();

	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, target_start(&tg, pages));
	ASSERT_EQ(0, target_cmd(&tg, CMD_TOUCH, 1, 0, pages, 1));
	ASSERT_LT(0, scan_all(ctl, tg.pid, (uintptr_t)tg.base, len,
			      PAGETIER_SCAN_CLEAR | PAGETIER_SCAN_FLUSH_TLB, 0, acc, pres, NULL,
			      &t));
	EXPECT_EQ(pages, bm_weight(pres, pages));
	EXPECT_EQ(pages, bm_weight(acc, pages));

	for (round = 0; round < 4; round++) {
		unsigned long stride = 3 + round * 5, first_page = round * 7;

		memset(want, 0, bm_words(pages) * 8);
		for (i = first_page; i < pages; i += stride)
			bm_set(want, i);
		ASSERT_EQ(0, target_cmd(&tg, CMD_TOUCH, round & 1, first_page,
					pages - first_page, stride));
		ASSERT_LT(0, scan_all(ctl, tg.pid, (uintptr_t)tg.base, len,
				      PAGETIER_SCAN_CLEAR | PAGETIER_SCAN_FLUSH_TLB, 0, acc, pres,
				      NULL, &t));
		EXPECT_EQ(0UL, bm_diff(acc, want, pages, &first))
			TH_LOG("round %lu: first difference at page %ld", round, first);
		EXPECT_EQ(pages, t.present);
	}
	ASSERT_LT(0, scan_all(ctl, tg.pid, (uintptr_t)tg.base, len, 0, 0, acc, NULL, NULL, &t));
	EXPECT_EQ(0ULL, t.accessed);
	target_stop(&tg);
	free(acc);
	free(pres);
	free(want);
	close(ctl);
}

/* Function-call IPIs (the "CAL" line of /proc/interrupts) received so far by @cpu. */
static long call_ipis(int cpu)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096];
	long n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		while (*p == ' ')
			p++;
		if (strncmp(p, "CAL:", 4))
			continue;
		p += 4;
		for (int c = 0; c <= cpu; c++)
			n = strtol(p, &p, 10);
		break;
	}
	fclose(f);
	return n;
}

static int pin(pid_t pid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(pid, sizeof(set), &set);
}

/*
 * FLUSH_TLB interrupts only the CPUs that have the scanned mm loaded: a CPU busy with
 * another process (a critical container, say) gets no IPI from scans of a sleeping one.
 * Flushing every CPU's whole TLB at every call cost each CPU one IPI per call.
 */
TEST(flush_tlb_spares_other_cpus)
{
	unsigned long pages = 256, len = pages * PG, rounds = 40, r;
	uint64_t *acc = bm_alloc(pages);
	struct target tg = { 0 };
	struct totals t;
	long before, after;
	pid_t busy;
	int ctl = ctl_open();

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || call_ipis(1) < 0)
		SKIP(return, "needs two CPUs and a CAL line in /proc/interrupts");
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, pin(0, 0));			/* the scanner: CPU 0 */
	ASSERT_EQ(0, target_start(&tg, pages));
	ASSERT_EQ(0, pin(tg.pid, 1));			/* the target: CPU 1, mostly asleep */
	busy = fork();
	ASSERT_LE(0, busy);
	if (!busy) {
		pin(0, 1);				/* a bystander that keeps CPU 1 */
		for (;;)
			;
	}
	usleep(100000);
	before = call_ipis(1);
	for (r = 0; r < rounds; r++) {
		ASSERT_EQ(0, target_cmd(&tg, CMD_TOUCH, 1, 0, pages, 1));
		usleep(2000);	/* the bystander has CPU 1 again: the target's mm is off it */
		ASSERT_LT(0, scan_all(ctl, tg.pid, (uintptr_t)tg.base, len,
				      PAGETIER_SCAN_CLEAR | PAGETIER_SCAN_FLUSH_TLB, 0, acc, NULL,
				      NULL, &t));
		EXPECT_EQ(pages, t.accessed);		/* the flush still works */
	}
	after = call_ipis(1);
	kill(busy, SIGKILL);
	waitpid(busy, NULL, 0);
	TH_LOG("%lu scans with FLUSH_TLB: %ld function-call IPIs on the other CPU",
	       rounds, after - before);
	EXPECT_LT(after - before, (long)rounds / 4);
	target_stop(&tg);
	free(acc);
	close(ctl);
}

/* A range with holes between mappings, and one with nothing mapped at all. */
TEST(holes)
{
	unsigned long pages = 512, len = pages * PG, i;
	uint64_t *pres = bm_alloc(pages), *acc = bm_alloc(pages);
	char *mem = map_small(pages);
	struct totals t;
	int ctl = ctl_open();

	ASSERT_LE(0, ctl);
	ASSERT_NE(NULL, mem);
	memset(mem, 1, len);
	/* Unmap pages [100, 200) and [300, 512). */
	ASSERT_EQ(0, munmap(mem + 100 * PG, 100 * PG));
	ASSERT_EQ(0, munmap(mem + 300 * PG, 212 * PG));
	ASSERT_LT(0, scan_all(ctl, getpid(), (uintptr_t)mem, len, 0, 64, acc, pres, NULL, &t));
	for (i = 0; i < pages; i++) {
		bool mapped = i < 100 || (i >= 200 && i < 300);

		if (bm_test(pres, i) != mapped || bm_test(acc, i) != mapped) {
			TH_LOG("page %lu: present %d accessed %d", i, bm_test(pres, i),
			       bm_test(acc, i));
			break;
		}
	}
	EXPECT_EQ(pages, i);
	EXPECT_EQ(200ULL, t.present);
	EXPECT_EQ(pages, t.scanned);

	/* Nothing mapped: a success with empty bitmaps. */
	ASSERT_LT(0, scan_all(ctl, getpid(), (uintptr_t)mem + 300 * PG, 212 * PG, 0, 0, acc,
			      pres, NULL, &t));
	EXPECT_EQ(0ULL, t.present);
	EXPECT_EQ(0UL, bm_weight(pres, 212));
	munmap(mem, 100 * PG);
	munmap(mem + 200 * PG, 100 * PG);
	free(pres);
	free(acc);
	close(ctl);
}

/* Each call writes only the bitmap words of the pages it covered. */
TEST(resume_writes_own_words)
{
	unsigned long pages = 1000, len = pages * PG, words = bm_words(pages), i;
	uint64_t *pres = bm_alloc(pages + 64);
	char *mem = map_small(pages);
	struct pagetier_scan s;
	int ctl = ctl_open();

	ASSERT_LE(0, ctl);
	ASSERT_NE(NULL, mem);
	memset(mem, 1, len);
	for (i = 0; i < words + 1; i++)
		pres[i] = 0xa5a5a5a5a5a5a5a5ULL;

	scan_init(&s, getpid(), (uintptr_t)mem, len, 0);
	s.present_bitmap = (uintptr_t)pres;
	s.max_pages = 100;			/* rounded up to 128 */
	ASSERT_EQ(0, xioctl(ctl, PAGETIER_IOC_SCAN, &s));
	EXPECT_EQ(128ULL, s.pages_scanned);
	EXPECT_EQ((uintptr_t)mem + 128 * PG, s.next_addr);
	EXPECT_EQ(~0ULL, pres[0]);
	EXPECT_EQ(~0ULL, pres[1]);
	for (i = 2; i < words + 1; i++)
		EXPECT_EQ(0xa5a5a5a5a5a5a5a5ULL, pres[i]);

	/* Passed back unchanged, it continues; the last word is zero past the range. */
	while (s.next_addr < (uintptr_t)mem + len)
		ASSERT_EQ(0, xioctl(ctl, PAGETIER_IOC_SCAN, &s));
	for (i = 0; i < words - 1; i++)
		EXPECT_EQ(~0ULL, pres[i]);
	EXPECT_EQ((1ULL << (pages % 64)) - 1, pres[words - 1]);
	EXPECT_EQ(0xa5a5a5a5a5a5a5a5ULL, pres[words]);
	munmap(mem, len);
	free(pres);
	close(ctl);
}

/* For the tests that need more than the harness's default 30 s under emulation. */
FIXTURE(slow) {
	int ctl;
};

FIXTURE_SETUP(slow)
{
	self->ctl = ctl_open();
	ASSERT_LE(0, self->ctl);
}

FIXTURE_TEARDOWN(slow)
{
	close(self->ctl);
}

/* 8 GiB of address space with a few pages touched, in bounded calls. */
TEST_F_TIMEOUT(slow, sparse_8g, 240)
{
	unsigned long pages = (8UL << 30) / PG, len = pages * PG, i;
	static const unsigned long fixed[] = {
		0, 1, 63, 64, 65, 511, 512, 99999, 100032, 262143, 262144, 262145,
		1048575, 1048576, 1500000, 2097088, 2097151,
	};
	struct {
		__u64 max_pages;
		long calls;
	} runs[] = {
		{ 0, 8 },			/* default: 1 GiB per call */
		{ 262144, 8 },
		{ 100000, 21 },			/* rounded up to 100032 */
		{ 1ULL << 40, 2 },		/* capped at 4 GiB per call */
		{ 1, 32768 },			/* rounded up to 64 */
	};
	uint64_t *acc = bm_alloc(pages), *pres = bm_alloc(pages), *want = bm_alloc(pages);
	struct totals t;
	int ctl = self->ctl;
	unsigned int r;
	long calls, first;
	char *mem;

	ASSERT_NE(NULL, acc);
	ASSERT_NE(NULL, pres);
	ASSERT_NE(NULL, want);
	mem = map_small(pages);
	ASSERT_NE(NULL, mem) TH_LOG("mmap 8 GiB: %s", strerror(errno));
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		bm_set(want, fixed[i]);
	subset(want, pages, 7, 40000);
	for (i = 0; i < pages; i++)
		if (bm_test(want, i))
			touch(mem, i, true);
	TH_LOG("%lu pages touched in 8 GiB", bm_weight(want, pages));

	for (r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		memset(acc, 0xff, bm_words(pages) * 8);
		memset(pres, 0xff, bm_words(pages) * 8);
		calls = scan_all(ctl, getpid(), (uintptr_t)mem, len, 0, runs[r].max_pages, acc,
				 pres, NULL, &t);
		EXPECT_EQ(runs[r].calls, calls) TH_LOG("max_pages %llu",
						       (unsigned long long)runs[r].max_pages);
		EXPECT_EQ(pages, t.scanned);
		EXPECT_EQ(bm_weight(want, pages), t.present);
		EXPECT_EQ(0UL, bm_diff(pres, want, pages, &first)) TH_LOG("first at %ld", first);
		EXPECT_EQ(0UL, bm_diff(acc, want, pages, &first)) TH_LOG("first at %ld", first);
	}
	munmap(mem, len);
	free(acc);
	free(pres);
	free(want);
}

/* ---- THP ---- */

/* The THP mode, made "always" or "madvise" if it was "never"; restored afterwards. */
FIXTURE(thp) {
	char saved[32];
	char *map;
	size_t map_len;
	int ctl;
};

FIXTURE_SETUP(thp)
{
	char buf[128];

	self->ctl = ctl_open();
	ASSERT_LE(0, self->ctl);
	ASSERT_EQ(0, read_file(THP_ENABLED, buf, sizeof(buf))) TH_LOG("kernel without THP?");
	if (strstr(buf, "[never]")) {
		snprintf(self->saved, sizeof(self->saved), "never");
		ASSERT_EQ(0, write_file(THP_ENABLED, "madvise"));
	}
}

FIXTURE_TEARDOWN(thp)
{
	if (self->map)
		munmap(self->map, self->map_len);
	if (self->saved[0])
		EXPECT_EQ(0, write_file(THP_ENABLED, self->saved));
	close(self->ctl);
}

/* kB of AnonHugePages in the mapping that contains @addr, from /proc/self/smaps. */
static long anon_huge_kb(void *addr)
{
	unsigned long a = (uintptr_t)addr, lo, hi;
	char line[512];
	bool in = false;
	long kb = -1;
	FILE *f;

	f = fopen("/proc/self/smaps", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = lo <= a && a < hi;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/*
 * A 2 MiB THP next to 2 MiB of small pages: one touch marks the whole THP accessed and
 * present, in full or partial ranges; clearing clears all of it.
 */
TEST_F(thp, reported_whole)
{
	unsigned long pages = 2 * HPAGE_PAGES, i, tries;
	uint64_t *acc = bm_alloc(pages), *pres = bm_alloc(pages);
	struct totals t;
	char *huge;
	long kb = -1;

	self->map_len = 3 * HPAGE;
	self->map = mmap(NULL, self->map_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->map);
	huge = (char *)(((uintptr_t)self->map + HPAGE - 1) & ~(HPAGE - 1));
	ASSERT_EQ(0, madvise(huge + HPAGE, HPAGE, MADV_NOHUGEPAGE));
	for (tries = 0; tries < 5 && kb < 2048; tries++) {
		ASSERT_EQ(0, madvise(huge, HPAGE, MADV_DONTNEED));
		ASSERT_EQ(0, madvise(huge, HPAGE, MADV_HUGEPAGE));
		touch(huge, 0, true);
		kb = anon_huge_kb(huge);
		if (kb < 2048)
			write_file("/proc/sys/vm/compact_memory", "1");
	}
	ASSERT_LE(2048, kb) TH_LOG("no THP for the region (AnonHugePages %ld kB)", kb);
	/* Small pages: every 8th of the second half. */
	for (i = HPAGE_PAGES; i < pages; i += 8)
		touch(huge, i, true);

	ASSERT_LT(0, scan_all(self->ctl, getpid(), (uintptr_t)huge, 2 * HPAGE,
			      PAGETIER_SCAN_CLEAR | PAGETIER_SCAN_FLUSH_TLB, 0, acc, pres, NULL,
			      &t));
	for (i = 0; i < HPAGE_PAGES; i++)
		if (!bm_test(acc, i) || !bm_test(pres, i))
			break;
	EXPECT_EQ(HPAGE_PAGES, i) TH_LOG("THP page %lu not accessed+present", i);
	EXPECT_EQ(HPAGE_PAGES + HPAGE_PAGES / 8, t.present);
	EXPECT_EQ(HPAGE_PAGES + HPAGE_PAGES / 8, t.accessed);

	/* Cleared as a whole. */
	ASSERT_LT(0, scan_all(self->ctl, getpid(), (uintptr_t)huge, 2 * HPAGE, 0, 0, acc, pres,
			      NULL, &t));
	EXPECT_EQ(0ULL, t.accessed);
	EXPECT_EQ(HPAGE_PAGES + HPAGE_PAGES / 8, t.present);

	/* One byte read in the middle: the whole THP again, nothing of the small pages. */
	touch(huge, 300, false);
	ASSERT_LT(0, scan_all(self->ctl, getpid(), (uintptr_t)huge, 2 * HPAGE, 0, 0, acc, pres,
			      NULL, &t));
	EXPECT_EQ(HPAGE_PAGES, t.accessed);
	EXPECT_EQ(HPAGE_PAGES, bm_weight(acc, HPAGE_PAGES));

	/* A range that starts and ends inside the THP gets its part of it, in 64-page calls. */
	ASSERT_EQ(8, scan_all(self->ctl, getpid(), (uintptr_t)huge + 64 * PG, 500 * PG,
			      PAGETIER_SCAN_CLEAR, 64, acc, pres, NULL, &t));
	EXPECT_EQ(448ULL, t.accessed);
	EXPECT_EQ(448ULL + 7, t.present);	/* and small pages 512, 520, ... 560 */
	EXPECT_EQ(500ULL, t.scanned);
	EXPECT_EQ(448UL, bm_weight(acc, 500));
	/* ... and that clear, once the scan reached the THP's end, cleared all of it. */
	ASSERT_LT(0, scan_all(self->ctl, getpid(), (uintptr_t)huge, HPAGE, 0, 0, acc, pres, NULL,
			      &t));
	EXPECT_EQ(0ULL, t.accessed);

	/* A range that ends inside the THP clears it too, at its end. */
	touch(huge, 511, true);
	ASSERT_EQ(2, scan_all(self->ctl, getpid(), (uintptr_t)huge, 100 * PG,
			      PAGETIER_SCAN_CLEAR | PAGETIER_SCAN_FLUSH_TLB, 64, acc, pres, NULL,
			      &t));
	EXPECT_EQ(100ULL, t.accessed);
	ASSERT_LT(0, scan_all(self->ctl, getpid(), (uintptr_t)huge, HPAGE, 0, 0, acc, pres, NULL,
			      &t));
	EXPECT_EQ(0ULL, t.accessed);
	EXPECT_LE(2048, anon_huge_kb(huge)) TH_LOG("the THP was split meanwhile");
	free(acc);
	free(pres);
}

/* ---- present and swapped, against /proc/PID/pagemap ---- */

static const char *backing_path(void)
{
	const char *p = getenv("PAGETIER_TEST_BACKING");

	return p && *p ? p : "/dev/nvme0n1";
}

/* Swap on the scratch device for the test's duration. */
FIXTURE(swap) {
	bool swapped_on;
	int ctl;
};

static bool swap_active(const char *dev)
{
	char buf[4096];

	if (read_file("/proc/swaps", buf, sizeof(buf)))
		return false;
	return strstr(buf, dev) != NULL;
}

FIXTURE_SETUP(swap)
{
	char cmd[PATH_MAX + 64];
	struct stat st;

	self->ctl = ctl_open();
	ASSERT_LE(0, self->ctl);
	ASSERT_EQ(0, stat(backing_path(), &st)) TH_LOG("no scratch device %s (set PAGETIER_TEST_BACKING)",
						     backing_path());
	ASSERT_TRUE(S_ISBLK(st.st_mode));
	/* Left over by an earlier run that was killed. */
	if (swap_active(backing_path())) {
		snprintf(cmd, sizeof(cmd), "swapoff %s", backing_path());
		ASSERT_EQ(0, system(cmd));
	}
	snprintf(cmd, sizeof(cmd), "mkswap -q %s >/dev/null && swapon %s", backing_path(),
		 backing_path());
	ASSERT_EQ(0, system(cmd));
	self->swapped_on = true;
}

FIXTURE_TEARDOWN(swap)
{
	char cmd[PATH_MAX + 32];

	if (self->swapped_on) {
		snprintf(cmd, sizeof(cmd), "swapoff %s", backing_path());
		EXPECT_EQ(0, system(cmd));
		EXPECT_FALSE(swap_active(backing_path()));
	}
	close(self->ctl);
}

/* Compares present and swapped bits with pagemap; returns the number of mismatches. */
static unsigned long compare_pagemap(struct __test_metadata *_metadata, int ctl, pid_t pid,
				     unsigned long start, unsigned long pages,
				     unsigned long long *present, unsigned long long *swapped)
{
	uint64_t *pres = bm_alloc(pages), *swp = bm_alloc(pages);
	uint64_t *pm = calloc(pages, sizeof(uint64_t));
	unsigned long i, bad = 0;
	struct totals t;

	if (!pres || !swp || !pm)
		goto out;
	if (scan_all(ctl, pid, start, pages * PG, 0, 0, NULL, pres, swp, &t) <= 0) {
		bad = pages;
		goto out;
	}
	if (pagemap_read(pid, start, pages, pm)) {
		bad = pages;
		goto out;
	}
	for (i = 0; i < pages; i++) {
		bool p = pm[i] & PM_PRESENT, s = pm[i] & PM_SWAP;

		if (p == bm_test(pres, i) && s == bm_test(swp, i))
			continue;
		if (bad++ < 5)
			TH_LOG("%#lx: pagemap %#llx, scanner present %d swapped %d",
			       start + i * PG, (unsigned long long)pm[i], bm_test(pres, i),
			       bm_test(swp, i));
	}
	if (present)
		*present = t.present;
	if (swapped)
		*swapped = t.swapped;
out:
	free(pres);
	free(swp);
	free(pm);
	return bad;
}

/* Pushes @count pages from @first of @mem out; returns how many are on swap. */
static unsigned long page_out(char *mem, unsigned long first, unsigned long count)
{
	uint64_t *pm = calloc(count, sizeof(uint64_t));
	unsigned long i, n = 0;
	int tries;

	/* Pages still in per-CPU LRU batches are skipped: repeat. */
	for (tries = 0; pm && tries < 20; tries++) {
		madvise(mem + first * PG, count * PG, MADV_PAGEOUT);
		if (pagemap_read(getpid(), (uintptr_t)mem + first * PG, count, pm))
			break;
		for (n = 0, i = 0; i < count; i++)
			n += !!(pm[i] & PM_SWAP);
		if (n >= count * 95 / 100)
			break;
		usleep(100000);
	}
	free(pm);
	return n;
}

TEST_F_TIMEOUT(swap, pagemap_self, 180)
{
	unsigned long pages = 4096, i, out;
	unsigned long long present, swapped;
	char *mem = map_small(pages);

	ASSERT_NE(NULL, mem);
	/* Pages [0, 3072) written (not zero-filled), the rest never touched. */
	for (i = 0; i < 3072; i++)
		memset(mem + i * PG, (int)(i % 251) + 1, PG);
	out = page_out(mem, 1024, 1536);
	TH_LOG("%lu of 1536 pages on swap", out);
	ASSERT_LE(1536UL / 2, out);

	EXPECT_EQ(0UL, compare_pagemap(_metadata, self->ctl, getpid(), (uintptr_t)mem, pages,
				       &present, &swapped));
	EXPECT_EQ(out, swapped);
	EXPECT_EQ(3072 - out, present);

	/* Swapped back in by a touch: present again, no longer swapped. */
	for (i = 1024; i < 1024 + 1536; i += 2)
		touch(mem, i, false);
	EXPECT_EQ(0UL, compare_pagemap(_metadata, self->ctl, getpid(), (uintptr_t)mem, pages,
				       &present, &swapped));
	EXPECT_GT(out, swapped);
	EXPECT_GE(768ULL, swapped);
	munmap(mem, pages * PG);
}

/* Every mapping of another process, some of it on swap. */
TEST_F_TIMEOUT(swap, pagemap_child_all_mappings, 180)
{
	unsigned long pages = 2048, checked = 0, mappings = 0;
	unsigned long long present, swapped, total_swapped = 0;
	struct target tg = { 0 };
	char path[64], line[512];
	FILE *f;

	ASSERT_EQ(0, target_start(&tg, pages));
	ASSERT_EQ(0, target_cmd(&tg, CMD_TOUCH, 1, 0, pages, 1));
	ASSERT_EQ(0, target_cmd(&tg, CMD_PAGEOUT, 0, 512, 1024, 1));
	ASSERT_EQ(0, target_cmd(&tg, CMD_PAGEOUT, 0, 512, 1024, 1));

	snprintf(path, sizeof(path), "/proc/%d/maps", tg.pid);
	f = fopen(path, "re");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) != 2)
			continue;
		if (strstr(line, "[vsyscall]"))		/* not in the mm: the gate area */
			continue;
		EXPECT_EQ(0UL, compare_pagemap(_metadata, self->ctl, tg.pid, lo,
					       (hi - lo) / PG, &present, &swapped))
			TH_LOG("mapping %s", line);
		checked += present;
		total_swapped += swapped;
		mappings++;
	}
	fclose(f);
	TH_LOG("%lu mappings, %lu present and %llu swapped pages compared", mappings, checked,
	       total_swapped);
	EXPECT_LE(512ULL, total_swapped);
	EXPECT_LE(pages - 1024, checked);
	target_stop(&tg);
}

/* ---- permissions ---- */

static int scan_pid(int ctl, pid_t pid)
{
	struct pagetier_scan s;

	scan_init(&s, pid, 0x10000, PG, 0);
	return xioctl(ctl, PAGETIER_IOC_SCAN, &s);
}

TEST(unprivileged)
{
	int ctl = ctl_open();
	pid_t pid;

	ASSERT_LE(0, ctl);
	/* uid 0 without CAP_SYS_ADMIN. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (set_caps(CAP_TO_MASK(CAP_SYS_ADMIN)))
			_exit(2);
		_exit(scan_pid(ctl, getpid()) == -EPERM ? 0 : 10);
	}
	EXPECT_EQ(0, wait_exit(pid));

	/* An unprivileged user with a leaked descriptor, scanning itself. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(2);
		_exit(scan_pid(ctl, getpid()) == -EPERM ? 0 : 11);
	}
	EXPECT_EQ(0, wait_exit(pid));
	close(ctl);
}

/*
 * With CAP_SYS_ADMIN, access to another process follows ptrace's read rule, as opening
 * its /proc/PID/pagemap does: same credentials, no capability the caller lacks and
 * dumpable, or CAP_SYS_PTRACE.
 */
static int ptrace_case(int ctl, pid_t target, bool drop_ptrace, uid_t fsuid,
		       bool check_pagemap)
{
	char path[64];
	int ret, fd;

	if (drop_ptrace && set_caps(CAP_TO_MASK(CAP_SYS_PTRACE)))
		return -100;
	if (fsuid)
		setfsuid(fsuid);
	ret = scan_pid(ctl, target);
	snprintf(path, sizeof(path), "/proc/%d/pagemap", target);
	fd = open(path, O_RDONLY);
	if (fd >= 0)
		close(fd);
	/* Both allowed, or both refused (with another fsuid, DAC refuses pagemap anyway). */
	if (check_pagemap && (ret == 0) != (fd >= 0))
		return -101;
	return ret;
}

TEST(ptrace_rules)
{
	struct target tg = { 0 };
	int ctl = ctl_open();
	pid_t pid;
	struct {
		const char *what;
		bool target_caps;	/* the target keeps its capabilities */
		bool drop_ptrace;	/* the caller drops CAP_SYS_PTRACE */
		uid_t fsuid;
		int dumpable;
		int want;
	} cases[] = {
		{ "target with a capability the caller lacks", true, true, 0, 1, -EPERM },
		{ "same creds, dumpable", false, true, 0, 1, 0 },
		{ "same creds, not dumpable", false, true, 0, 0, -EPERM },
		{ "CAP_SYS_PTRACE, not dumpable", false, false, 0, 0, 0 },
		{ "other fsuid, no CAP_SYS_PTRACE", false, true, 12345, 1, -EPERM },
		{ "other fsuid, CAP_SYS_PTRACE", false, false, 12345, 1, 0 },
	};
	unsigned int i;

	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, target_start(&tg, 16));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!cases[i].target_caps)
			ASSERT_EQ(0, target_cmd(&tg, CMD_DROP_CAPS, 0, 0, 0, 0));
		ASSERT_EQ(0, target_cmd(&tg, CMD_DUMPABLE, cases[i].dumpable, 0, 0, 0));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(-ptrace_case(ctl, tg.pid, cases[i].drop_ptrace, cases[i].fsuid,
					   !cases[i].fsuid));
		EXPECT_EQ(-cases[i].want, wait_exit(pid)) TH_LOG("%s", cases[i].what);
	}

	/* A process may always scan itself, dumpable or not. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (set_caps(CAP_TO_MASK(CAP_SYS_PTRACE)) || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
			_exit(100);
		_exit(-scan_pid(ctl, getpid()));
	}
	EXPECT_EQ(0, wait_exit(pid));
	target_stop(&tg);
	close(ctl);
}

/* ---- concurrency ---- */

struct churn {
	volatile bool stop;
	char *area;		/* 8 MiB, 2 MiB aligned */
	int memfd;
	unsigned long rounds;
};

/*
 * Changes the page tables under the scanner: THPs made, split and collapsed, mappings
 * replaced, protections changed, pages zapped and paged out; and a shmem file mapped
 * twice, whose collapse retracts the other mapping's page table (6.12 does that under
 * the mmap_lock read side).
 */
static void *churn_main(void *arg)
{
	struct churn *c = arg;
	char *a = c->area;
	unsigned long i;

	while (!c->stop) {
		char *m = mmap(a, 4 * HPAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		char *s1, *s2;

		if (m == MAP_FAILED)
			break;
		madvise(a, 2 * HPAGE, MADV_HUGEPAGE);
		for (i = 0; i < 4 * HPAGE_PAGES; i += 7)
			touch(a, i, true);
		madvise(a + 5 * PG, 3 * PG, MADV_DONTNEED);		/* splits a THP */
		mprotect(a + HPAGE, HPAGE, PROT_READ);
		madvise(a, HPAGE, MADV_COLLAPSE);
		madvise(a + 2 * HPAGE, HPAGE, MADV_PAGEOUT);
		mprotect(a + HPAGE, HPAGE, PROT_READ | PROT_WRITE);

		s1 = mmap(a + 4 * HPAGE, HPAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			  c->memfd, 0);
		s2 = mmap(a + 6 * HPAGE, HPAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			  c->memfd, 0);
		if (s1 != MAP_FAILED && s2 != MAP_FAILED) {
			for (i = 0; i < HPAGE_PAGES; i++) {
				touch(s1, i, true);
				touch(s2, i, false);
			}
			madvise(s1, HPAGE, MADV_COLLAPSE);
			touch(s2, 9, false);
		}
		mmap(a + 4 * HPAGE, 4 * HPAGE, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
		fallocate(c->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, HPAGE);
		c->rounds++;
	}
	return NULL;
}

/* A counter of /proc/vmstat, or -1. */
static long long vmstat(const char *name)
{
	char line[128];
	long long v = -1;
	size_t len = strlen(name);
	FILE *f = fopen("/proc/vmstat", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ' ') {
			v = atoll(line + len + 1);
			break;
		}
	fclose(f);
	return v;
}

TEST_F_TIMEOUT(slow, concurrent_changes, 120)
{
	long long collapse0 = vmstat("thp_collapse_alloc"), split0 = vmstat("thp_split_pmd");
	unsigned long pages = 8 * HPAGE_PAGES, scans = 0;
	uint64_t *acc = bm_alloc(pages), *pres = bm_alloc(pages), *swp = bm_alloc(pages);
	struct churn c = { 0 };
	struct timespec t0, t1;
	int ctl = self->ctl;
	pthread_t th;
	char *raw;
	long ret;

	raw = mmap(NULL, 9 * HPAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, raw);
	c.area = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
	c.memfd = memfd_create("pagetier-scan-test", MFD_CLOEXEC);
	ASSERT_LE(0, c.memfd);
	ASSERT_EQ(0, ftruncate(c.memfd, HPAGE));
	ASSERT_EQ(0, pthread_create(&th, NULL, churn_main, &c));

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		ret = scan_all(ctl, getpid(), (uintptr_t)c.area, 8 * HPAGE,
			       scans & 1 ? PAGETIER_SCAN_CLEAR : 0, scans % 3 ? 0 : 64, acc, pres,
			       swp, NULL);
		if (ret <= 0)
			break;
		scans++;
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (t1.tv_sec - t0.tv_sec < 3);
	c.stop = true;
	pthread_join(th, NULL);
	EXPECT_LT(0, ret) TH_LOG("scan failed: %s", strerror(-ret));
	TH_LOG("%lu scans during %lu rounds of changes (%lld THP collapses, %lld PMD splits)",
	       scans, c.rounds, vmstat("thp_collapse_alloc") - collapse0,
	       vmstat("thp_split_pmd") - split0);
	EXPECT_LT(0UL, c.rounds);
	munmap(raw, 9 * HPAGE);
	close(c.memfd);
	free(acc);
	free(pres);
	free(swp);
}

TEST_HARNESS_MAIN
