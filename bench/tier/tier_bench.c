// SPDX-License-Identifier: GPL-2.0
/*
 * tier_bench.c - one restore measurement, run in the guest by bench/tier/guest.sh.
 *
 *   tier_bench create DEVICE                 create a tier over DEVICE, print its id
 *   tier_bench destroy ID
 *   tier_bench restore MODE MIB CGROUP DEVICE [TIER_ID]
 *
 * restore: join CGROUP, fill MIB of anonymous memory, offload it (MADV_PAGEOUT until it
 * is on swap, then memory.reclaim until the swap cache is gone too: both timed), then
 * time the restore of every page:
 *   fault     touch every page in address order (demand faults, kernel swap readahead)
 *   willneed  MADV_WILLNEED on the range, then touch every page
 *   prefetch  PAGETIER_IOC_PREFETCH (cgroup, MIB) on TIER_ID, MADV_WILLNEED, touch
 * The time ends when the last page is resident. Every byte is checked afterwards.
 *
 * With FRAG=N in the environment, N other cgroups (CGROUP-f1...) get as much memory
 * each, and the offload interleaves the N + 1 containers in runs of FRAG_PAGES (4)
 * pages, as a swap device shared by containers offloaded together ends up: only the
 * first container is restored.
 * Prints one line: RESULT key=value ... (DEVICE's read requests and bytes, the tier's
 * staging hits and misses).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "tier_util.h"	/* tests/kselftest: sysfs, cgroups, page patterns */

static void fill(uint64_t *w, uint64_t n)
{
	uint64_t s = tu_mix64(n);
	size_t i;

	for (i = 0; i < PG / 8; i++)
		w[i] = s = tu_mix64(s + i);
}

/* /sys/block/NAME/stat: reads completed [0], sectors read [2]. */
static void dev_stat(const char *dev, unsigned long long v[3])
{
	const char *name = strrchr(dev, '/');
	char path[PATH_MAX], buf[512];

	snprintf(path, sizeof(path), "/sys/block/%s/stat", name ? name + 1 : dev);
	memset(v, 0, 3 * sizeof(*v));
	if (!tu_read_file(path, buf, sizeof(buf)))
		sscanf(buf, "%llu %llu %llu", &v[0], &v[1], &v[2]);
}

/* read_stat of tier @id: [3] staging hits, [4] misses. */
static void tier_stat(int id, unsigned long long v[5])
{
	char path[PATH_MAX], buf[1024];

	memset(v, 0, 5 * sizeof(*v));
	if (id < 0)
		return;
	snprintf(path, sizeof(path), "/sys/block/%s%d/read_stat", PAGETIER_DISK_NAME, id);
	if (!tu_read_file(path, buf, sizeof(buf)))
		sscanf(buf, "%llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4]);
}

/* /proc/vmstat counters of reclaim during the restore. */
static const char *const vm_keys[] = { "allocstall_movable", "pgscan_direct", "pgscan_kswapd",
				       "compact_stall", "pswpin", "pswpout" };
#define NVM (sizeof(vm_keys) / sizeof(vm_keys[0]))

static void vmstat(unsigned long long v[NVM])
{
	char key[64];
	unsigned long long n;
	unsigned int i;
	FILE *f = fopen("/proc/vmstat", "r");

	memset(v, 0, NVM * sizeof(*v));
	while (f && fscanf(f, "%63s %llu", key, &n) == 2)
		for (i = 0; i < NVM; i++)
			if (!strcmp(key, vm_keys[i]))
				v[i] = n;
	if (f)
		fclose(f);
}

static int ctl_open(void)
{
	int fd = open("/dev/" PAGETIER_CTL_NAME, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		perror("/dev/" PAGETIER_CTL_NAME);
	return fd;
}

static int join(const char *cg)
{
	char path[PATH_MAX + 32];

	mkdir(cg, 0755);
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	return tu_write_file(path, "0");
}

/* Pages out [0, pages) of @nbuf buffers in round-robin runs of @run pages. */
static void pageout_interleaved(char **buf, int nbuf, unsigned long pages, unsigned long run)
{
	unsigned long i;
	int b;

	for (i = 0; i < pages; i += run)
		for (b = 0; b < nbuf; b++)
			madvise(buf[b] + i * PG, (pages - i < run ? pages - i : run) * PG,
				MADV_PAGEOUT);
}

static int restore(const char *mode, unsigned long mib, const char *cg, const char *dev,
		   int tier)
{
	int frag = getenv("FRAG") ? atoi(getenv("FRAG")) : 0;
	unsigned long run = getenv("FRAG_PAGES") ? strtoul(getenv("FRAG_PAGES"), NULL, 0) : 4;
	char *bufs[9], fcg[PATH_MAX];
	int b;
	unsigned long pages = mib << 8, i, bad = 0;
	unsigned long long d0[3], d1[3], t0s[5], t1s[5], v0[NVM], v1[NVM];
	struct pagetier_prefetch pf;
	char path[PATH_MAX + 32];
	volatile uint64_t sum = 0;
	struct stat st;
	double t0, t1, tw, o0, o1, o2;
	long long cur_po;
	char *mem;
	long swapped = 0;
	int i2, ctl = -1;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	if (tu_write_file(path, "0") || stat(cg, &st)) {
		fprintf(stderr, "cannot join %s\n", cg);
		return 1;
	}
	if (!strncmp(mode, "prefetch", 8) && (ctl = ctl_open()) < 0)
		return 1;
	mem = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	for (i = 0; i < pages; i++)
		fill((uint64_t *)(mem + i * PG), i);

	/* Other containers' memory: charged to their cgroups, the first to fault it. */
	frag = frag < 0 ? 0 : frag > 8 ? 8 : frag;
	bufs[0] = mem;
	for (b = 1; b <= frag; b++) {
		snprintf(fcg, sizeof(fcg), "%s-f%d", cg, b);
		bufs[b] = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (bufs[b] == MAP_FAILED || join(fcg))
			return 1;
		for (i = 0; i < pages; i++)
			fill((uint64_t *)(bufs[b] + i * PG), i + b * pages);
	}
	if (frag && join(cg))
		return 1;
	if (frag)
		pageout_interleaved(bufs, frag + 1, pages, run);

	/*
	 * Offload: to swap, then out of the swap cache. Timed: until the pages are on swap
	 * (po_secs), and until the memory is free (off_secs); cur_mib is memory.current when
	 * the MADV_PAGEOUT calls are done, i.e. what they did not free themselves.
	 */
	o0 = tu_now();
	for (i2 = 0; i2 < 50; i2++) {
		madvise(mem, pages * PG, MADV_PAGEOUT);
		swapped = tu_vmswap_pages();
		if (swapped >= (long)(pages * 99 / 100))
			break;
		usleep(100000);
	}
	o1 = tu_now();
	cur_po = tu_cg_num(cg, "memory.current");
	snprintf(path, sizeof(path), "%s/memory.reclaim", cg);
	for (i2 = 0; i2 < 100 && tu_cg_num(cg, "memory.current") > (4 << 20); i2++) {
		tu_write_file(path, "1G");
		usleep(50000);
	}
	o2 = tu_now();
	sleep(1);

	/* prefetch-staged: everything staged before the clock starts (diagnostics). */
	if (!strcmp(mode, "prefetch-staged")) {
		memset(&pf, 0, sizeof(pf));
		pf.size = sizeof(pf);
		pf.tier_id = tier;
		pf.cgroup_id = st.st_ino;
		pf.flags = PAGETIER_PREFETCH_WAIT;
		if (ioctl(ctl, PAGETIER_IOC_PREFETCH, &pf))
			perror("PAGETIER_IOC_PREFETCH");
		fprintf(stderr, "staged %llu MiB\n", (unsigned long long)pf.staged_bytes >> 20);
	}
	/* Hooks for profiling the restore alone (e.g. perf record in the background). */
	if (getenv("TB_BEFORE") && system(getenv("TB_BEFORE")))
		fprintf(stderr, "TB_BEFORE failed\n");
	dev_stat(dev, d0);
	tier_stat(tier, t0s);
	vmstat(v0);
	t0 = tu_now();
	if (!strcmp(mode, "prefetch")) {
		memset(&pf, 0, sizeof(pf));
		pf.size = sizeof(pf);
		pf.tier_id = tier;
		pf.cgroup_id = st.st_ino;
		pf.budget_bytes = pages * PG;
		if (ioctl(ctl, PAGETIER_IOC_PREFETCH, &pf))
			perror("PAGETIER_IOC_PREFETCH");
	}
	if (strcmp(mode, "fault"))
		madvise(mem, pages * PG, MADV_WILLNEED);
	tw = tu_now();
	for (i = 0; i < pages; i++)
		sum += *(volatile uint64_t *)(mem + i * PG);
	t1 = tu_now();
	dev_stat(dev, d1);
	tier_stat(tier, t1s);
	vmstat(v1);
	if (getenv("TB_AFTER") && system(getenv("TB_AFTER")))
		fprintf(stderr, "TB_AFTER failed\n");

	for (i = 0; i < pages; i++) {
		uint64_t want[PG / 8];

		fill(want, i);
		bad += memcmp(want, mem + i * PG, PG) != 0;
	}
	printf("RESULT mode=%s%s mib=%lu swapped_mib=%ld secs=%.3f advise_secs=%.3f mbps=%.1f dev_reads=%llu dev_read_mib=%.1f staging_hits=%llu staging_misses=%llu bad_pages=%lu po_secs=%.3f off_secs=%.3f po_cur_mib=%lld\n",
	       mode, frag ? "-frag" : "", mib, swapped >> 8, t1 - t0, tw - t0, mib * 1048576.0 / 1e6 / (t1 - t0), d1[0] - d0[0],
	       (d1[2] - d0[2]) / 2048.0, t1s[3] - t0s[3], t1s[4] - t0s[4], bad, o1 - o0, o2 - o0,
	       cur_po >> 20);
	printf("# vmstat during the restore:");
	for (i = 0; i < NVM; i++)
		printf(" %s=%llu", vm_keys[i], v1[i] - v0[i]);
	printf("\n");
	return bad ? 2 : 0;
}

int main(int argc, char **argv)
{
	struct pagetier_tier_create c;
	struct pagetier_tier_destroy d;
	int ctl;

	if (argc == 3 && !strcmp(argv[1], "create")) {
		ctl = ctl_open();
		memset(&c, 0, sizeof(c));
		c.size = sizeof(c);
		snprintf(c.backing_path, sizeof(c.backing_path), "%s", argv[2]);
		if (ctl < 0 || ioctl(ctl, PAGETIER_IOC_TIER_CREATE, &c)) {
			perror("PAGETIER_IOC_TIER_CREATE");
			return 1;
		}
		printf("%u\n", c.tier_id);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "destroy")) {
		ctl = ctl_open();
		memset(&d, 0, sizeof(d));
		d.size = sizeof(d);
		d.tier_id = atoi(argv[2]);
		for (int i = 0; i < 100; i++) {
			if (ctl >= 0 && !ioctl(ctl, PAGETIER_IOC_TIER_DESTROY, &d))
				return 0;
			usleep(100000);
		}
		perror("PAGETIER_IOC_TIER_DESTROY");
		return 1;
	}
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "restore"))
		return restore(argv[2], strtoul(argv[3], NULL, 0), argv[4], argv[5],
			       argc == 7 ? atoi(argv[6]) : -1);
	fprintf(stderr, "usage: %s create DEV | destroy ID | restore fault|willneed|prefetch MIB CGROUP DEV [TIER]\n",
		argv[0]);
	return 2;
}
