// SPDX-License-Identifier: GPL-2.0
/*
 * scan_bench - cost of one access scan of a resident, touched region of another process:
 * pagetier.ko's PAGETIER_IOC_SCAN against the /proc fallback the daemon uses without the
 * module (write /proc/PID/clear_refs, read /proc/PID/smaps for Referenced, read
 * /proc/PID/pagemap for present/swapped).
 *
 *   scan_bench [-m MiB] [-n ITERATIONS] [-t]     (root, pagetier.ko loaded)
 *
 * A child maps MiB of anonymous memory (4 KiB pages, or THPs with -t), writes every
 * page, and waits. Before each timed scan it touches every page again (untimed), so each
 * scan finds, reports and clears an accessed bit on every page. Times are the scanning
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID: the kernel work of an ioctl or a /proc
 * read is done in the caller's context) and wall time; pages/s per core = pages / CPU s.
 * The median of the iterations is reported.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pagetier.h"

#define PG	4096UL
#define HPAGE	(2UL << 20)
#define MAX_ITERS 64

struct child {
	pid_t pid;
	int cmd, rep;
	uintptr_t base;
	unsigned long pages;
};

static void die(const char *what)
{
	fprintf(stderr, "scan_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void touch_all(char *p, unsigned long pages)
{
	unsigned long i;

	for (i = 0; i < pages; i++)
		((volatile char *)p)[i * PG] = (char)i;
}

static void child_main(int cmd, int rep, unsigned long pages, int thp)
{
	size_t len = pages * PG;
	char *raw, *p, c;

	raw = mmap(NULL, len + HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (raw == MAP_FAILED)
		_exit(2);
	p = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
	if (madvise(p, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		_exit(3);
	touch_all(p, pages);
	if (write(rep, &p, sizeof(p)) != sizeof(p))
		_exit(4);
	while (read(cmd, &c, 1) == 1) {
		touch_all(p, pages);
		if (write(rep, &c, 1) != 1)
			_exit(5);
	}
	_exit(0);
}

static void child_start(struct child *ch, unsigned long pages, int thp)
{
	int cmd[2], rep[2];

	if (pipe(cmd) || pipe(rep))
		die("pipe");
	ch->pages = pages;
	ch->pid = fork();
	if (ch->pid < 0)
		die("fork");
	if (!ch->pid) {
		close(cmd[1]);
		close(rep[0]);
		child_main(cmd[0], rep[1], pages, thp);
	}
	close(cmd[0]);
	close(rep[1]);
	ch->cmd = cmd[1];
	ch->rep = rep[0];
	if (read(ch->rep, &ch->base, sizeof(ch->base)) != sizeof(ch->base))
		die("child setup");
}

static void child_touch(struct child *ch)
{
	char c = 't';

	if (write(ch->cmd, &c, 1) != 1 || read(ch->rep, &c, 1) != 1)
		die("child touch");
}

static double now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct sample {
	double cpu, wall;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the scanner ---- */

static unsigned long long scan_hits;

static void scan_module(int ctl, struct child *ch, __u32 flags, uint64_t **bm)
{
	struct pagetier_scan s;

	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	s.pid = ch->pid;
	s.start = ch->base;
	s.len = ch->pages * PG;
	s.flags = flags;
	s.accessed_bitmap = (uintptr_t)bm[0];
	s.present_bitmap = (uintptr_t)bm[1];
	s.swapped_bitmap = (uintptr_t)bm[2];
	scan_hits = 0;
	do {
		if (ioctl(ctl, PAGETIER_IOC_SCAN, &s))
			die("PAGETIER_IOC_SCAN");
		scan_hits += s.pages_accessed;
	} while (s.next_addr < s.start + s.len);
}

/* ---- the /proc fallback ---- */

static char *iobuf;
#define IOBUF_SIZE	(1UL << 20)

static void write_clear_refs(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/clear_refs", pid);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1)
		die("clear_refs");
	close(fd);
}

/* Referenced kB of the mapping at @base, from /proc/PID/smaps. */
static long smaps_referenced(pid_t pid, uintptr_t base)
{
	char path[64], *line, *save;
	long ref = -1, n, len = 0;
	unsigned long lo, hi;
	int fd, in = 0;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("smaps");
	while ((n = read(fd, iobuf + len, IOBUF_SIZE - 1 - len)) > 0)
		len += n;
	close(fd);
	iobuf[len] = '\0';
	for (line = strtok_r(iobuf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo <= base && base < hi;
		else if (in && sscanf(line, "Referenced: %ld kB", &ref) == 1)
			break;
	}
	return ref;
}

/* Present and swapped pages of the region, from /proc/PID/pagemap. */
static void pagemap_count(pid_t pid, uintptr_t base, unsigned long pages,
			  unsigned long *present, unsigned long *swapped)
{
	unsigned long done = 0, i, n;
	uint64_t *pm = (uint64_t *)iobuf;
	char path[64];
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("pagemap");
	*present = *swapped = 0;
	while (done < pages) {
		n = pages - done;
		if (n > IOBUF_SIZE / 8)
			n = IOBUF_SIZE / 8;
		got = pread(fd, pm, n * 8, (base / PG + done) * 8);
		if (got != (ssize_t)(n * 8))
			die("pagemap read");
		for (i = 0; i < n; i++) {
			*present += pm[i] >> 63;
			*swapped += (pm[i] >> 62) & 1;
		}
		done += n;
	}
	close(fd);
}

enum { M_SCAN, M_SCAN_NOCLEAR, M_SCAN_FLUSH, M_FALLBACK, M_CLEAR_REFS, M_SMAPS, M_PAGEMAP,
	M_N };
static const char *const names[M_N] = {
	"PAGETIER_IOC_SCAN, CLEAR",
	"PAGETIER_IOC_SCAN, no clear",
	"PAGETIER_IOC_SCAN, CLEAR|FLUSH_TLB",
	"/proc fallback, total",
	"  clear_refs (write 1)",
	"  smaps (Referenced)",
	"  pagemap (present/swap)",
};

int main(int argc, char **argv)
{
	unsigned long mib = 1024, pages, present, swapped;
	static double cpu[M_N][MAX_ITERS], wall[M_N][MAX_ITERS];
	int iters = 5, thp = 0, opt, i, m, ctl;
	uint64_t *bm[3];
	struct child ch;
	double c0, w0, c1, w1;
	long ref = 0;

	while ((opt = getopt(argc, argv, "m:n:t")) != -1) {
		switch (opt) {
		case 'm':
			mib = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			iters = atoi(optarg);
			break;
		case 't':
			thp = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-m MiB] [-n iterations] [-t]\n", argv[0]);
			return 2;
		}
	}
	if (iters < 1 || iters > MAX_ITERS || !mib)
		return 2;
	pages = mib << 20 >> 12;
	ctl = open("/dev/" PAGETIER_CTL_NAME, O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		die("/dev/" PAGETIER_CTL_NAME);
	iobuf = malloc(IOBUF_SIZE);
	for (i = 0; i < 3; i++)
		bm[i] = calloc((pages + 63) / 64, 8);
	if (!iobuf || !bm[0] || !bm[1] || !bm[2])
		die("malloc");
	child_start(&ch, pages, thp);

	for (i = 0; i < iters; i++) {
		static const __u32 flags[] = {
			[M_SCAN] = PAGETIER_SCAN_CLEAR,
			[M_SCAN_NOCLEAR] = 0,
			[M_SCAN_FLUSH] = PAGETIER_SCAN_CLEAR | PAGETIER_SCAN_FLUSH_TLB,
		};

		for (m = M_SCAN; m <= M_SCAN_FLUSH; m++) {
			child_touch(&ch);
			c0 = now(CLOCK_THREAD_CPUTIME_ID);
			w0 = now(CLOCK_MONOTONIC);
			scan_module(ctl, &ch, flags[m], bm);
			cpu[m][i] = now(CLOCK_THREAD_CPUTIME_ID) - c0;
			wall[m][i] = now(CLOCK_MONOTONIC) - w0;
			if (scan_hits != pages)
				fprintf(stderr, "scan_bench: %s: %llu of %lu pages accessed\n",
					names[m], scan_hits, pages);
		}

		/* One fallback scan: what was referenced, what is present, then clear. */
		child_touch(&ch);
		c0 = now(CLOCK_THREAD_CPUTIME_ID);
		w0 = now(CLOCK_MONOTONIC);
		ref = smaps_referenced(ch.pid, ch.base);
		c1 = now(CLOCK_THREAD_CPUTIME_ID);
		w1 = now(CLOCK_MONOTONIC);
		cpu[M_SMAPS][i] = c1 - c0;
		wall[M_SMAPS][i] = w1 - w0;
		pagemap_count(ch.pid, ch.base, pages, &present, &swapped);
		c0 = now(CLOCK_THREAD_CPUTIME_ID);
		w0 = now(CLOCK_MONOTONIC);
		cpu[M_PAGEMAP][i] = c0 - c1;
		wall[M_PAGEMAP][i] = w0 - w1;
		write_clear_refs(ch.pid);
		cpu[M_CLEAR_REFS][i] = now(CLOCK_THREAD_CPUTIME_ID) - c0;
		wall[M_CLEAR_REFS][i] = now(CLOCK_MONOTONIC) - w0;
		cpu[M_FALLBACK][i] = cpu[M_CLEAR_REFS][i] + cpu[M_SMAPS][i] + cpu[M_PAGEMAP][i];
		wall[M_FALLBACK][i] = wall[M_CLEAR_REFS][i] + wall[M_SMAPS][i] +
				      wall[M_PAGEMAP][i];
		if (present != pages)
			fprintf(stderr, "scan_bench: pagemap: %lu of %lu present\n", present, pages);
	}

	printf("# %lu MiB resident (%lu pages, %s), every page touched before each scan; "
	       "median of %d\n", mib, pages, thp ? "THP" : "4 KiB PTEs", iters);
	printf("# fallback: smaps Referenced = %ld kB (one number per mapping, not per page)\n",
	       ref);
	printf("%-36s %10s %10s %14s %10s\n", "method", "cpu ms", "wall ms", "pages/s/core",
	       "GiB/s/core");
	for (m = 0; m < M_N; m++) {
		double c = median(cpu[m], iters), w = median(wall[m], iters);

		printf("%-36s %10.2f %10.2f %14.0f %10.2f\n", names[m], c * 1e3, w * 1e3,
		       pages / c, pages * PG / c / (1 << 30));
	}
	kill(ch.pid, SIGKILL);
	waitpid(ch.pid, NULL, 0);
	return 0;
}
