// SPDX-License-Identifier: GPL-2.0
/*
 * fault_test.c - runs in the guest of tests/vm/faults/run.sh, against a tier over an
 * NVMe namespace whose backing file QEMU's blkdebug makes fail: writes of the 4 MiB at
 * WERR_MIB, reads of the 1 MiB at RERR_MIB (see blkdebug.conf, made by run.sh).
 * Prints TAP.
 *
 *   fault_test DEVICE
 *
 * 1. Raw I/O: 16 MiB written in 64 KiB chunks, retrying a chunk that fails (as swap
 *    does). The tier places chunks at the end of its log, so the writes that land in the
 *    failing area fail (EIO; QEMU's NVMe reports blkdebug's EIO as a media error,
 *    ENODATA), each retires one segment, and the retry lands further on: no data is
 *    lost. Reading everything back, exactly the chunks stored in the failing-read
 *    megabyte fail; every other byte matches.
 * 2. Swap: a process in a cgroup offloads 64 MiB to the tier; swap writes that fail
 *    leave the page in memory (the kernel redirties it) and it goes out again later.
 *    Back in, only the pages stored in the failing-read megabyte fault with SIGBUS
 *    (the kernel's report of a failed swap-in); every other byte matches.
 * After both: the counters show the errors, and the caller checks that the module
 * unloads and the kernel log has the errors and no oops.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pagetier.h"

#define PG		4096UL
#define WERR_MIB	4	/* writes fail in [4, 8) MiB of the backing device */
#define WERR_LEN_MIB	4
#define RERR_MIB	12	/* reads fail in [12, 13) MiB */
#define CHUNK_PAGES	16
#define RAW_CHUNKS	256	/* 16 MiB */
#define SWAP_PAGES	(64 * 256UL)

static int tap_n;
static int tap_fail;

static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d ", ok ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	tap_fail += !ok;
}

static void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void fill(void *page, uint64_t seed, uint64_t n)
{
	uint64_t *w = page, s = mix64(seed ^ mix64(n));
	size_t i;

	for (i = 0; i < PG / 8; i++)
		w[i] = s = mix64(s + i);
	w[0] |= 1;
}

static bool same(const void *page, uint64_t seed, uint64_t n)
{
	char want[PG];

	fill(want, seed, n);
	return !memcmp(want, page, PG);
}

static int read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

static int stat_nums(unsigned int id, const char *file, unsigned long long *v, int max)
{
	char path[PATH_MAX], buf[1024], *p = buf, *end;
	int i;

	snprintf(path, sizeof(path), "/sys/block/pagetier%u/%s", id, file);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	for (i = 0; i < max; i++) {
		v[i] = strtoull(p, &end, 10);
		if (end == p)
			break;
		p = end;
	}
	return i;
}

static int tier_create(int ctl, const char *backing, struct pagetier_tier_create *c)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	snprintf(c->backing_path, sizeof(c->backing_path), "%s", backing);
	return ioctl(ctl, PAGETIER_IOC_TIER_CREATE, c) ? -errno : 0;
}

static int tier_destroy(int ctl, unsigned int id)
{
	struct pagetier_tier_destroy d = { .size = sizeof(d), .tier_id = id };
	int i;

	for (i = 0; i < 200; i++) {
		if (!ioctl(ctl, PAGETIER_IOC_TIER_DESTROY, &d))
			return 0;
		if (errno != EBUSY)
			return -errno;
		usleep(50000);
	}
	return -EBUSY;
}

static int wait_node(const char *dev)
{
	int i;

	for (i = 0; i < 100 && access(dev, F_OK); i++)
		usleep(50000);
	return access(dev, F_OK);
}

/* ---- 1. raw I/O ---- */

static void raw_test(int ctl, const char *backing)
{
	unsigned long long ts[10], ss[11];
	unsigned int c, k, failed_writes = 0, failed_reads = 0, bad_data = 0, tries;
	unsigned int lo = ~0U, hi = 0;
	struct pagetier_tier_create t;
	char dev[64], *buf;
	int fd, ret;

	ret = tier_create(ctl, backing, &t);
	tap(!ret, "raw: tier created over the faulty namespace %s (%d)", backing, ret);
	if (ret)
		return;
	snprintf(dev, sizeof(dev), "/dev/pagetier%u", t.tier_id);
	if (wait_node(dev) || posix_memalign((void **)&buf, PG, CHUNK_PAGES * PG)) {
		tap(false, "raw: %s appears", dev);
		return;
	}
	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	for (c = 0; c < RAW_CHUNKS; c++) {
		for (k = 0; k < CHUNK_PAGES; k++)
			fill(buf + k * PG, 1, c * CHUNK_PAGES + k);
		for (tries = 0; tries < 16; tries++) {
			ret = pwrite(fd, buf, CHUNK_PAGES * PG, (off_t)c * CHUNK_PAGES * PG);
			if (ret == (int)(CHUNK_PAGES * PG))
				break;
			if (ret >= 0 || (errno != EIO && errno != ENODATA))
				break;
			failed_writes++;
		}
		if (ret != (int)(CHUNK_PAGES * PG))
			break;
	}
	tap(c == RAW_CHUNKS, "raw: 16 MiB written, a chunk whose write failed written again (%u chunks)",
	    c);
	/* 1 MiB segments: one failed write retires each of the 4 failing segments. */
	tap(failed_writes == WERR_LEN_MIB,
	    "raw: writes into the failing area failed, once per segment (%u)",
	    failed_writes);

	for (c = 0; c < RAW_CHUNKS; c++) {
		ret = pread(fd, buf, CHUNK_PAGES * PG, (off_t)c * CHUNK_PAGES * PG);
		if (ret < 0 && (errno == EIO || errno == ENODATA)) {
			failed_reads++;
			lo = c < lo ? c : lo;
			hi = c > hi ? c : hi;
			continue;
		}
		for (k = 0; k < CHUNK_PAGES; k++)
			bad_data += !same(buf + k * PG, 1, c * CHUNK_PAGES + k);
	}
	diag("chunks whose read failed: %u, chunks %u-%u", failed_reads, lo, hi);
	tap(failed_reads == 16 && hi - lo == 15,
	    "raw: reads fail for the 16 chunks in the failing megabyte only (%u)", failed_reads);
	tap(!bad_data, "raw: every other page reads back intact (%u bad pages)", bad_data);
	/* And again: the errors are where the data is, not sticky in the module. */
	ret = pread(fd, buf, CHUNK_PAGES * PG, (off_t)lo * CHUNK_PAGES * PG);
	tap(ret < 0 && (errno == EIO || errno == ENODATA), "raw: a failed read fails again");
	close(fd);

	stat_nums(t.tier_id, "tier_stat", ts, 10);
	stat_nums(t.tier_id, "seg_stat", ss, 11);
	diag("tier_stat: %llu pages, %llu read errors, %llu write errors; seg_stat: %llu bad segments",
	     ts[0], ts[6], ts[7], ss[4]);
	/* 16 failed chunk reads and the one read again. */
	tap(ts[7] == WERR_LEN_MIB && ss[4] == WERR_LEN_MIB && ts[6] == 17 * CHUNK_PAGES &&
	    ts[0] == RAW_CHUNKS * CHUNK_PAGES,
	    "raw: errors counted (write %llu, read pages %llu, bad segments %llu)", ts[7], ts[6],
	    ss[4]);
	ret = tier_destroy(ctl, t.tier_id);
	tap(!ret, "raw: tier destroyed (%d)", ret);
	free(buf);
}

/* ---- 2. swap ---- */

static sigjmp_buf jb;
static volatile char *fault_addr;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	fault_addr = si->si_addr;
	siglongjmp(jb, 1);
}

static long vmswap_pages(void)
{
	char buf[4096], *p;

	if (read_file("/proc/self/status", buf, sizeof(buf)))
		return -1;
	p = strstr(buf, "VmSwap:");
	return p ? strtol(p + 7, NULL, 10) / 4 : -1;
}

/* In the child: offload, wait, fault everything back; exit status via the pipe. */
static int swap_child(const char *cg, int report, int go)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	volatile unsigned long bad = 0, sigbus = 0, first = ~0UL, last = 0;
	unsigned long i;
	volatile unsigned long idx;
	long swapped = 0, res[4];
	char path[PATH_MAX], *mem, c;
	int tries;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	if (write_file(path, "0"))
		return 2;
	mem = mmap(NULL, SWAP_PAGES * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (mem == MAP_FAILED)
		return 3;
	for (i = 0; i < SWAP_PAGES; i++)
		fill(mem + i * PG, 2, i);
	/* Pages whose write failed stay (dirty); later rounds write them elsewhere. */
	for (tries = 0; tries < 40; tries++) {
		madvise(mem, SWAP_PAGES * PG, MADV_PAGEOUT);
		swapped = vmswap_pages();
		if (swapped >= (long)(SWAP_PAGES * 98 / 100))
			break;
		usleep(100000);
	}
	if (write(report, &swapped, sizeof(swapped)) != sizeof(swapped))
		return 5;
	if (read(go, &c, 1) != 1)
		return 6;
	sigaction(SIGBUS, &sa, NULL);
	for (idx = 0; idx < SWAP_PAGES; idx++) {
		if (sigsetjmp(jb, 1)) {
			sigbus++;
			first = idx < first ? idx : first;
			last = idx > last ? idx : last;
			continue;
		}
		bad += !same(mem + idx * PG, 2, idx);
	}
	res[0] = bad;
	res[1] = sigbus;
	res[2] = first;
	res[3] = last;
	if (write(report, res, sizeof(res)) != sizeof(res))
		return 7;
	return 0;
}

static void swap_test(int ctl, const char *backing)
{
	unsigned long long ts[10], ss[11];
	struct pagetier_tier_create t;
	char dev[64], cmd[256], cg[] = "/sys/fs/cgroup/pagetier-faults";
	int report[2], go[2], ret, st;
	long swapped, res[4];
	pid_t pid;

	ret = tier_create(ctl, backing, &t);
	tap(!ret, "swap: tier created (%d)", ret);
	if (ret)
		return;
	snprintf(dev, sizeof(dev), "/dev/pagetier%u", t.tier_id);
	wait_node(dev);
	write_file("/sys/module/zswap/parameters/enabled", "N");
	write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
	mkdir(cg, 0755);
	snprintf(cmd, sizeof(cmd), "mkswap -q %s >/dev/null && swapon --discard=pages -p 32767 %s",
		 dev, dev);
	ret = system(cmd);
	tap(!ret, "swap: swapon %s", dev);
	if (ret)
		goto out;
	if (pipe(report) || pipe(go))
		goto out;
	pid = fork();
	if (!pid)
		_exit(swap_child(cg, report[1], go[0]));
	ret = read(report[0], &swapped, sizeof(swapped)) == sizeof(swapped);
	stat_nums(t.tier_id, "tier_stat", ts, 10);
	diag("%ld of %lu pages on swap; the tier saw %llu write errors", ret ? swapped : -1,
	     SWAP_PAGES, ts[7]);
	tap(ret && swapped >= (long)(SWAP_PAGES * 9 / 10),
	    "swap: pages whose swap write failed were written again later (%ld swapped)", swapped);
	tap(ts[7] > 0, "swap: write errors happened and were counted (%llu)", ts[7]);
	/* Out of the swap cache, so that swap-in reads the tier. */
	for (st = 0; st < 50; st++) {
		snprintf(cmd, sizeof(cmd), "%s/memory.reclaim", cg);
		write_file(cmd, "256M");
		snprintf(cmd, sizeof(cmd), "%s/memory.current", cg);
		if (!read_file(cmd, cmd, sizeof(cmd)) && atol(cmd) < (2 << 20))
			break;
		usleep(100000);
	}
	ret = write(go[1], "g", 1) == 1;
	ret = ret && read(report[0], res, sizeof(res)) == sizeof(res);
	waitpid(pid, &st, 0);
	diag("swap-in: %ld pages differ, %ld pages raised SIGBUS (pages %ld-%ld)", res[0], res[1],
	     res[2], res[3]);
	tap(ret && WIFEXITED(st) && !WEXITSTATUS(st), "swap: the process survived its swap-in");
	tap(ret && !res[0], "swap: every page that came back is intact (%ld bad)", res[0]);
	/* One megabyte of the device fails reads: 256 pages at most, adjacent in the log. */
	tap(ret && res[1] > 0 && res[1] <= 256,
	    "swap: only pages stored in the failing megabyte raised SIGBUS (%ld)", res[1]);
	stat_nums(t.tier_id, "tier_stat", ts, 10);
	stat_nums(t.tier_id, "seg_stat", ss, 11);
	tap(ts[6] > 0, "swap: read errors counted (%llu pages)", ts[6]);
	diag("seg_stat: %llu bad segments", ss[4]);
out:
	snprintf(cmd, sizeof(cmd), "swapoff %s", dev);
	ret = system(cmd);
	tap(!ret, "swap: swapoff succeeds despite the read errors");
	rmdir(cg);
	ret = tier_destroy(ctl, t.tier_id);
	tap(!ret, "swap: tier destroyed (%d)", ret);
}

int main(int argc, char **argv)
{
	int ctl;

	if (argc != 2) {
		fprintf(stderr, "usage: %s BACKING_DEVICE\n", argv[0]);
		return 2;
	}
	printf("TAP version 13\n");
	ctl = open("/dev/" PAGETIER_CTL_NAME, O_RDWR | O_CLOEXEC);
	if (ctl < 0) {
		printf("Bail out! /dev/pagetier: %s\n", strerror(errno));
		return 1;
	}
	raw_test(ctl, argv[1]);
	swap_test(ctl, argv[1]);
	close(ctl);
	printf("1..%d\n", tap_n);
	return tap_fail ? 1 : 0;
}
