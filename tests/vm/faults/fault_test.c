// SPDX-License-Identifier: GPL-2.0
/*
 * fault_test.c - runs in the guest of tests/vm/faults/run.sh, against a tier over an
 * NVMe namespace whose backing file QEMU's blkdebug makes fail: writes of the 4 MiB at
 * WERR_MIB, reads of the 1 MiB at RERR_MIB (see blkdebug.conf, made by run.sh).
 * Prints TAP.
 *
 *   fault_test DEVICE
 *
 * 1. Raw I/O without a write buffer (write_buffer_mib=0, the path of a write that finds
 *    it full): 16 MiB written in 64 KiB chunks, retrying a chunk that fails (as swap
 *    does). The tier places chunks at the end of its log, so the writes that land in the
 *    failing area fail (EIO; QEMU's NVMe reports blkdebug's EIO as a media error,
 *    ENODATA), each retires one segment, and the retry lands further on: no data is
 *    lost. Reading everything back, exactly the chunks stored in the failing-read
 *    megabyte fail; every other byte matches.
 * 2. Raw I/O with the write buffer: every write succeeds at once; the write-backs that
 *    land in the failing area fail, retire their segments, and the tier writes those
 *    pages further on, so a flush succeeds: nothing was lost. Reads fail only for the
 *    chunks with pages in the failing-read megabyte; every other byte matches.
 * 3. Swap (with the write buffer): a process in a cgroup offloads 64 MiB to the tier;
 *    write-backs that fail are written elsewhere, and a swap write that fails (none
 *    with the buffer, normally) would leave the page in memory. Back in, only the pages
 *    stored in the failing-read megabyte fault with SIGBUS (the kernel's report of a
 *    failed swap-in); every other byte matches.
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

#include "tier_util.h"	/* tests/kselftest: tiers, sysfs, page patterns */

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

/* ---- 1. raw I/O ---- */

static void raw_test(int ctl, const char *backing)
{
	unsigned long long ts[10], ss[11];
	unsigned int c, k, failed_writes = 0, failed_reads = 0, bad_data = 0, tries;
	unsigned int lo = ~0U, hi = 0;
	struct pagetier_tier_create t;
	struct tu_param p = { 0 };
	char dev[64], *buf;
	int fd, ret;

	ret = tu_param_set(&p, "write_buffer_mib", "0");
	if (!ret)
		ret = tu_tier_create(ctl, backing, &t);
	tu_param_restore(&p);
	tap(!ret, "raw: tier created over the faulty namespace %s (%d)", backing, ret);
	if (ret)
		return;
	snprintf(dev, sizeof(dev), "/dev/pagetier%u", t.tier_id);
	if (tu_wait_node(dev) || posix_memalign((void **)&buf, PG, CHUNK_PAGES * PG)) {
		tap(false, "raw: %s appears", dev);
		return;
	}
	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	for (c = 0; c < RAW_CHUNKS; c++) {
		for (k = 0; k < CHUNK_PAGES; k++)
			tu_fill(buf + k * PG, 1, c * CHUNK_PAGES + k, 0);
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
			bad_data += (tu_check(buf + k * PG, 1, c * CHUNK_PAGES + k, 0) >= 0);
	}
	diag("chunks whose read failed: %u, chunks %u-%u", failed_reads, lo, hi);
	tap(failed_reads == 16 && hi - lo == 15,
	    "raw: reads fail for the 16 chunks in the failing megabyte only (%u)", failed_reads);
	tap(!bad_data, "raw: every other page reads back intact (%u bad pages)", bad_data);
	/* And again: the errors are where the data is, not sticky in the module. */
	ret = pread(fd, buf, CHUNK_PAGES * PG, (off_t)lo * CHUNK_PAGES * PG);
	tap(ret < 0 && (errno == EIO || errno == ENODATA), "raw: a failed read fails again");
	close(fd);

	tu_tier_stat(t.tier_id, "tier_stat", ts, 10);
	tu_tier_stat(t.tier_id, "seg_stat", ss, 11);
	diag("tier_stat: %llu pages, %llu read errors, %llu write errors; seg_stat: %llu bad segments",
	     ts[0], ts[6], ts[7], ss[4]);
	/* 16 failed chunk reads and the one read again. */
	tap(ts[7] == WERR_LEN_MIB && ss[4] == WERR_LEN_MIB && ts[6] == 17 * CHUNK_PAGES &&
	    ts[0] == RAW_CHUNKS * CHUNK_PAGES,
	    "raw: errors counted (write %llu, read pages %llu, bad segments %llu)", ts[7], ts[6],
	    ss[4]);
	ret = tu_tier_destroy(ctl, t.tier_id);
	tap(!ret, "raw: tier destroyed (%d)", ret);
	free(buf);
}

/* ---- 2. raw I/O through the write buffer ---- */

static void raw_buffered_test(int ctl, const char *backing)
{
	unsigned long long ts[10], ss[11], wb[WB_N];
	unsigned int c, k, failed_writes = 0, failed_reads = 0, bad_data = 0;
	struct pagetier_tier_create t;
	char dev[64], *buf;
	int fd, ret;

	ret = tu_tier_create(ctl, backing, &t);
	tap(!ret, "buffered: tier created (%d)", ret);
	if (ret)
		return;
	snprintf(dev, sizeof(dev), "/dev/pagetier%u", t.tier_id);
	if (tu_wait_node(dev) || posix_memalign((void **)&buf, PG, CHUNK_PAGES * PG)) {
		tap(false, "buffered: %s appears", dev);
		return;
	}
	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	for (c = 0; c < RAW_CHUNKS; c++) {
		for (k = 0; k < CHUNK_PAGES; k++)
			tu_fill(buf + k * PG, 3, c * CHUNK_PAGES + k, 0);
		ret = pwrite(fd, buf, CHUNK_PAGES * PG, (off_t)c * CHUNK_PAGES * PG);
		failed_writes += ret != (int)(CHUNK_PAGES * PG);
	}
	tap(!failed_writes, "buffered: 16 MiB written, no write failed (%u failed)", failed_writes);
	ret = fsync(fd);
	tap(!ret, "buffered: a flush succeeds: every page reached the device (%s)",
	    ret ? strerror(errno) : "ok");
	tu_tier_stat(t.tier_id, "tier_stat", ts, 10);
	tu_tier_stat(t.tier_id, "seg_stat", ss, 11);
	tu_tier_stat(t.tier_id, "wb_stat", wb, WB_N);
	diag("wb_stat: %llu buffered, %llu direct, %llu write-back errors, %llu pages moved, %llu stuck, %llu held; %llu bad segments",
	     wb[WB_BUFFERED], wb[WB_DIRECT], wb[WB_ERRORS], wb[WB_MOVED], wb[WB_STUCK], wb[WB_HELD],
	     ss[4]);
	/*
	 * Each failing segment is retired; a write-back the device merged with one into a
	 * failing neighbour fails with it and retires a good segment too (nothing is lost:
	 * its pages move on as well).
	 */
	tap(wb[WB_ERRORS] >= WERR_LEN_MIB && wb[WB_MOVED] > 0 && !wb[WB_STUCK] && !wb[WB_HELD] &&
	    ss[4] >= WERR_LEN_MIB && ss[4] <= 2 * WERR_LEN_MIB && ts[7] == wb[WB_ERRORS],
	    "buffered: failed write-backs retired the %d failing segments and their pages moved on",
	    WERR_LEN_MIB);

	for (c = 0; c < RAW_CHUNKS; c++) {
		ret = pread(fd, buf, CHUNK_PAGES * PG, (off_t)c * CHUNK_PAGES * PG);
		if (ret < 0 && (errno == EIO || errno == ENODATA)) {
			failed_reads++;
			continue;
		}
		for (k = 0; k < CHUNK_PAGES; k++)
			bad_data += (tu_check(buf + k * PG, 3, c * CHUNK_PAGES + k, 0) >= 0);
	}
	/* 256 pages in the failing megabyte: 16 chunks, a few more where pages moved. */
	tap(failed_reads >= 16 && failed_reads <= 32,
	    "buffered: reads fail only for chunks with pages in the failing megabyte (%u)",
	    failed_reads);
	tap(!bad_data, "buffered: every other page reads back intact (%u bad pages)", bad_data);
	tu_tier_stat(t.tier_id, "tier_stat", ts, 10);
	tap(ts[0] == RAW_CHUNKS * CHUNK_PAGES, "buffered: every page is stored (%llu)", ts[0]);
	close(fd);
	ret = tu_tier_destroy(ctl, t.tier_id);
	tap(!ret, "buffered: tier destroyed (%d)", ret);
	free(buf);
}

/* ---- 3. swap ---- */

static sigjmp_buf jb;
static volatile char *fault_addr;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	fault_addr = si->si_addr;
	siglongjmp(jb, 1);
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
	if (tu_write_file(path, "0"))
		return 2;
	mem = mmap(NULL, SWAP_PAGES * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (mem == MAP_FAILED)
		return 3;
	for (i = 0; i < SWAP_PAGES; i++)
		tu_fill(mem + i * PG, 2, i, 0);
	/* Pages whose write failed stay (dirty); later rounds write them elsewhere. */
	for (tries = 0; tries < 40; tries++) {
		madvise(mem, SWAP_PAGES * PG, MADV_PAGEOUT);
		swapped = tu_vmswap_pages();
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
		bad += (tu_check(mem + idx * PG, 2, idx, 0) >= 0);
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

	ret = tu_tier_create(ctl, backing, &t);
	tap(!ret, "swap: tier created (%d)", ret);
	if (ret)
		return;
	snprintf(dev, sizeof(dev), "/dev/pagetier%u", t.tier_id);
	tu_wait_node(dev);
	tu_write_file("/sys/module/zswap/parameters/enabled", "N");
	tu_write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
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
	tu_tier_stat(t.tier_id, "tier_stat", ts, 10);
	diag("%ld of %lu pages on swap; the tier saw %llu write errors", ret ? swapped : -1,
	     SWAP_PAGES, ts[7]);
	tap(ret && swapped >= (long)(SWAP_PAGES * 9 / 10),
	    "swap: pages whose swap write failed were written again later (%ld swapped)", swapped);
	tap(ts[7] > 0, "swap: write errors happened and were counted (%llu)", ts[7]);
	/* Out of the swap cache, so that swap-in reads the tier. */
	for (st = 0; st < 50; st++) {
		snprintf(cmd, sizeof(cmd), "%s/memory.reclaim", cg);
		tu_write_file(cmd, "256M");
		snprintf(cmd, sizeof(cmd), "%s/memory.current", cg);
		if (!tu_read_file(cmd, cmd, sizeof(cmd)) && atol(cmd) < (2 << 20))
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
	tu_tier_stat(t.tier_id, "tier_stat", ts, 10);
	tu_tier_stat(t.tier_id, "seg_stat", ss, 11);
	tap(ts[6] > 0, "swap: read errors counted (%llu pages)", ts[6]);
	diag("seg_stat: %llu bad segments", ss[4]);
out:
	snprintf(cmd, sizeof(cmd), "swapoff %s", dev);
	ret = system(cmd);
	tap(!ret, "swap: swapoff succeeds despite the read errors");
	rmdir(cg);
	ret = tu_tier_destroy(ctl, t.tier_id);
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
	raw_buffered_test(ctl, argv[1]);
	swap_test(ctl, argv[1]);
	close(ctl);
	printf("1..%d\n", tap_n);
	return tap_fail ? 1 : 0;
}
