// SPDX-License-Identifier: GPL-2.0
/*
 * tier_harden_test.c - kselftests of two defects of the hardening issue (#12):
 *
 *  - prefetch_waiters_under_pressure (item 1): swap-out and demand reads keep moving
 *    while prefetch is in flight, reads wait for it and many writers write, with every
 *    bio of the tier coming from its bio_sets' reserves (module parameter
 *    fault_bio_reserve: as if every slab allocation failed). Before the fix, each read
 *    waiting for a prefetch held a bio of the pool writes clone from, and the prefetch
 *    engine, landing the read, needed one more from that pool: the readers and writers
 *    stalled until the parameter was cleared.
 *  - destroy_during_prefetch (item 2): tiers destroyed, round after round, while their
 *    prefetch reads complete. Before the fix, a completion dropped the tier lock before it
 *    queued pf_work, and a pf_work landing the read in between could let teardown free the
 *    tier under it. The window is a few instructions: the test is a stress run whose
 *    judge is KASAN (make test-debug); on a production kernel it checks that teardown
 *    waits for prefetch and every round's pages read back right.
 *  - cgroup_table_full (item 3): once more cgroups than the table holds have a page on
 *    the tier, a new cgroup is still attributed (counters, PREFETCH, events), and
 *    tier_stat counts the evictions. Before the fix, the new cgroup was unattributed:
 *    PREFETCH failed with -ENOENT and its events said cgroup 0.
 *
 * Needs root, pagetier.ko loaded and a scratch block device whose contents are
 * destroyed: $PAGETIER_TEST_BACKING, default /dev/nvme0n1; the first also dmsetup and
 * dm-delay.
 */
#include "tier_util.h"

#include <sys/mman.h>

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

/* ---- item 1 ---- */

#define DELAY_MS	5000		/* dm-delay: every read of the backing device */
#define DM_SECTORS	131072ULL	/* 64 MiB of the backing device under it */
#define PF_TAG		70
#define PF_PAGES	16		/* one segment of 64 KiB: what prefetch reads */
#define RD_SLOTS	(2 * PF_PAGES)	/* a read: each page followed by an empty slot */
#define READERS		5
#define WRITERS		8
#define W_PAGES		16		/* O_DSYNC writes per writer, 200 ms apart */
#define W_FIRST		1024		/* the writers' slots */
#define STALL_S		60		/* the readers and writers are done by then */

/* ---- item 2 ---- */

#define DP_ROUNDS	20U
#define DP_PAGES	1024		/* 4 MiB a round: 64 segments of 64 KiB to prefetch */
#define DP_TAG		75

/* ---- item 3 ---- */

#define CG_TAG		80
#define CG_EXTRA	8		/* cgroups beyond the table's size */
#define CG_PAR		4		/* writers at once, each of every CG_PAR-th cgroup */

FIXTURE(harden) {
	int ctl;
	bool created;
	struct pagetier_tier_create c;
	char dev[64];
	char dm_name[64];
	struct tu_param fault;
	char cg_top[PATH_MAX];		/* parent of the test's cgroups */
	uint32_t ncg;			/* cgroups made under it: c0, c1... */
	bool cg_new;			/* and "new" */
	pid_t kid[READERS + WRITERS + CG_PAR];
};

FIXTURE_SETUP(harden)
{
	TU_FIXTURE_OPEN(self);
}

FIXTURE_TEARDOWN(harden)
{
	char path[PATH_MAX + 32], cmd[PATH_MAX];
	uint32_t i;

	/* Cleared first: a tier stuck on its reserves moves again. */
	tu_param_restore(&self->fault);
	for (i = 0; i < READERS + WRITERS + CG_PAR; i++)
		tu_reap(&self->kid[i]);
	/* The tier first: it holds the delay device. */
	TU_FIXTURE_CLOSE(self);
	if (self->dm_name[0]) {
		/*
		 * udev probes a new device (blkid), and on the delay device each of its reads
		 * takes DELAY_MS: the probe may still hold it open. A linear table in its place
		 * (the suspend of the reload flushes dm-delay's queue at once) lets it finish;
		 * then wait for the last opener. A device still open after that is removed when
		 * it closes (--deferred), so that the backing device is free for the next tests
		 * whatever happened here.
		 */
		snprintf(cmd, sizeof(cmd),
			 "echo '0 %llu linear %s 0' | dmsetup reload %s && dmsetup resume %s; "
			 "udevadm settle -t 30 2>/dev/null; "
			 "for i in $(seq 60); do "
			 "[ \"$(dmsetup info -c --noheadings -o open %s)\" = 0 ] && break; sleep 0.5; "
			 "done; dmsetup remove --retry %s || dmsetup remove --deferred %s",
			 DM_SECTORS, tu_backing(), self->dm_name, self->dm_name, self->dm_name,
			 self->dm_name, self->dm_name);
		EXPECT_EQ(0, system(cmd));
	}
	for (i = 0; i < self->ncg; i++) {
		snprintf(path, sizeof(path), "%s/c%u", self->cg_top, i);
		tu_cg_remove(path);
	}
	if (self->cg_new) {
		snprintf(path, sizeof(path), "%s/new", self->cg_top);
		tu_cg_remove(path);
	}
	if (self->cg_top[0])
		tu_cg_remove(self->cg_top);
}

static void *page_buf(size_t pages)
{
	void *p = NULL;

	return posix_memalign(&p, PG, pages * PG) ? NULL : p;
}

/* Creates the fixture's tier over @backing with module parameters @kv (name, value...). */
static int make_tier(FIXTURE_DATA(harden) *self, const char *backing, const char **kv, int n)
{
	struct tu_param p[8] = { 0 };
	int i, ret = 0;

	for (i = 0; i < n && !ret; i++)
		ret = tu_param_set(&p[i], kv[2 * i], kv[2 * i + 1]);
	if (!ret)
		ret = tu_tier_create(self->ctl, backing, &self->c);
	for (i = 0; i < n; i++)
		tu_param_restore(&p[i]);
	if (ret)
		return ret;
	self->created = true;
	return tu_tier_node(&self->c, self->dev, sizeof(self->dev));
}

/* In a child: enters cgroup @cg, writes pages @tag/@slot.../@gen there, flushes. */
static int cg_write(const char *dev, const char *cg, uint64_t tag, const uint64_t *slots,
		    unsigned int n, uint64_t gen)
{
	unsigned int k;
	char *buf;
	int fd;

	if (tu_cg_enter(cg))
		return 10;
	/* Allocated (and charged) in the cgroup: the tier attributes the write to it. */
	buf = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return 11;
	fd = open(dev, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return 12;
	for (k = 0; k < n; k++) {
		tu_fill(buf, tag, slots[k], gen);
		if (pwrite(fd, buf, PG, slots[k] * PG) != (ssize_t)PG)
			return 13;
	}
	if (fsync(fd))
		return 14;
	close(fd);
	return 0;
}

/*
 * In a child: for cgroups @top/c@first, c(@first + CG_PAR)... below @total, makes the
 * cgroup, enters it and writes one page there (slot i for ci) from a page allocated
 * (charged) in it; then flushes. Charges stay where they were made: each page is
 * attributed to its own cgroup.
 */
static int cg_write_each(const char *dev, const char *top, uint32_t first, uint32_t total)
{
	char path[PATH_MAX];
	uint32_t i;
	char *buf;
	int fd;

	fd = open(dev, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return 12;
	for (i = first; i < total; i += CG_PAR) {
		if (snprintf(path, sizeof(path), "%.*s/c%u", PATH_MAX - 16, top, i) >= PATH_MAX)
			return 10;
		if ((mkdir(path, 0755) && errno != EEXIST) || tu_cg_enter(path))
			return 10;
		buf = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED)
			return 11;
		tu_fill(buf, CG_TAG, i, 1);
		if (pwrite(fd, buf, PG, (uint64_t)i * PG) != (ssize_t)PG)
			return 13;
		munmap(buf, PG);
	}
	if (fsync(fd))
		return 14;
	close(fd);
	return 0;
}

static unsigned long long stat_col(uint32_t id, const char *file, int col)
{
	unsigned long long v[32] = { 0 };

	tu_tier_stat(id, file, v, 32);
	return v[col];
}

/*
 * A reader: RD_SLOTS slots from 0 in one bio. The even slots are the prefetched pages,
 * written again (generation 2) while the readers wait: either generation is right,
 * since each read races the rewrite; the odd slots were never written.
 */
static int pf_reader(const char *dev)
{
	char *buf = page_buf(RD_SLOTS);
	unsigned int k;
	int fd;

	fd = open(dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (!buf || fd < 0)
		return 20;
	if (pread(fd, buf, RD_SLOTS * PG, 0) != (ssize_t)(RD_SLOTS * PG))
		return 21;
	for (k = 0; k < RD_SLOTS; k++) {
		const char *p = buf + k * PG;

		if (k & 1 ? !tu_is_zero(p) :
		    tu_check(p, PF_TAG, k, 1) != -1 && tu_check(p, PF_TAG, k, 2) != -1)
			return 22;
	}
	return 0;
}

/* A writer: O_DSYNC (FUA: never buffered, the direct path); the test reads them back. */
static int pf_writer(const char *dev, unsigned int w)
{
	uint64_t first = W_FIRST + (uint64_t)w * W_PAGES, s;
	char *buf = page_buf(1);
	int fd;

	fd = open(dev, O_RDWR | O_DIRECT | O_DSYNC | O_CLOEXEC);
	if (!buf || fd < 0)
		return 30;
	for (s = first; s < first + W_PAGES; s++) {
		tu_fill(buf, PF_TAG + 1 + w, s, 1);
		if (pwrite(fd, buf, PG, s * PG) != (ssize_t)PG)
			return 31;
		usleep(200000);
	}
	return 0;
}

/* Waits up to @secs for the children in kid[0, n); returns how many are left. */
static int wait_kids(FIXTURE_DATA(harden) *self, int n, double secs, int *bad)
{
	double end = tu_now() + secs;
	int i, left, status;
	pid_t r;

	for (;;) {
		left = 0;
		for (i = 0; i < n; i++) {
			if (self->kid[i] <= 0)
				continue;
			r = waitpid(self->kid[i], &status, WNOHANG);
			if (r == self->kid[i] || r < 0) {
				self->kid[i] = 0;
				if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
					(*bad)++;
				continue;
			}
			left++;
		}
		if (!left || tu_now() > end)
			return left;
		usleep(50000);
	}
}

/*
 * Item 1. The backing device answers reads after DELAY_MS (dm-delay), so a prefetch
 * read stays in flight while READERS reads wait for it, each on 16 pages of the
 * prefetched segment interleaved with empty slots; then the 16 pages are written again
 * (through the write buffer, which writes them back at once), so that when the
 * prefetch read lands, its blocks are dead and every waiting read must go to the
 * device; meanwhile WRITERS write with O_DSYNC, which takes the direct path (a bio from
 * the tier's pool, as swap-out takes when the buffer is full). fault_bio_reserve makes
 * every bio come from the reserves. All must finish: a stall is a failure (reported,
 * then the parameter is cleared so that the stuck I/O drains).
 */
TEST_F_TIMEOUT(harden, prefetch_waiters_under_pressure, 240)
{
	const char *kv[] = {
		"segment_kib", "64", "max_capacity_mib", "16", "max_open_segments", "4",
		"write_buffer_mib", "8",
	};
	unsigned long long r0[RS_N], r1[RS_N];
	uint64_t slots[PF_PAGES], id, s;
	char cmd[PATH_MAX * 2], dm_path[96], cg[PATH_MAX], name[64];
	struct pagetier_prefetch pf;
	int i, fd, left, stalled, bad = 0, tries;
	char *buf;
	double t0, t_set;

	ASSERT_EQ(0, tu_cg_setup_root());
	if (system("modprobe dm-delay 2>/dev/null; command -v dmsetup >/dev/null"))
		SKIP(return, "needs dmsetup and dm-delay");
	snprintf(self->dm_name, sizeof(self->dm_name), "pagetier-test-delay-%d", getpid());
	snprintf(cmd, sizeof(cmd),
		 "echo '0 %llu delay %s 0 %d %s 0 0' | dmsetup create %s --noudevsync && "
		 "dmsetup mknodes %s", DM_SECTORS, tu_backing(), DELAY_MS, tu_backing(),
		 self->dm_name, self->dm_name);
	if (system(cmd)) {
		self->dm_name[0] = '\0';
		SKIP(return, "dmsetup could not make a delay device");
	}
	snprintf(dm_path, sizeof(dm_path), "/dev/mapper/%s", self->dm_name);
	if (tu_param_set(&self->fault, "fault_bio_reserve", "1"))
		SKIP(return, "the module has no fault_bio_reserve parameter");
	/* Set until the end: the tier's bios come from its reserves only. */
	ASSERT_EQ(0, make_tier(self, dm_path, kv, 4));

	/* One segment of a cgroup's pages at slots 0, 2, ... 30. */
	snprintf(name, sizeof(name), "pagetier-harden-pf-%d", getpid());
	ASSERT_EQ(0, tu_cg_create(name, cg, sizeof(cg), &id));
	snprintf(self->cg_top, sizeof(self->cg_top), "%s", cg);
	for (s = 0; s < PF_PAGES; s++)
		slots[s] = 2 * s;
	self->kid[0] = fork();
	ASSERT_LE(0, self->kid[0]);
	if (!self->kid[0])
		_exit(cg_write(self->dev, cg, PF_TAG, slots, PF_PAGES, 1));
	ASSERT_EQ(0, tu_wait_exit(&self->kid[0]));

	/*
	 * Prefetch it, until its read is in flight (a probe by udev may read slot 0 first
	 * and take the segment out of the plan: then plan it again).
	 */
	for (tries = 0; tries < 5; tries++) {
		ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r0, RS_N));
		ASSERT_EQ(0, tu_prefetch(self->ctl, self->c.tier_id, id, 0, 0, &pf));
		ASSERT_EQ((__u64)PF_PAGES * PG, pf.planned_bytes);
		for (i = 0; i < 40; i++) {
			ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r1, RS_N));
			if (r1[RS_PF_IOS] != r0[RS_PF_IOS] ||
			    r1[RS_PREEMPTED] != r0[RS_PREEMPTED])
				break;
			usleep(25000);
		}
		if (r1[RS_PF_IOS] != r0[RS_PF_IOS])
			break;
	}
	ASSERT_EQ(r0[RS_PF_IOS] + 1, r1[RS_PF_IOS]) TH_LOG("the prefetch read did not start");
	t0 = tu_now();

	/* The readers wait for it. */
	for (i = 0; i < READERS; i++) {
		self->kid[i] = fork();
		ASSERT_LE(0, self->kid[i]);
		if (!self->kid[i])
			_exit(pf_reader(self->dev));
	}
	usleep(500000);

	/* The 16 pages again, buffered (no bio), then written back at once. */
	buf = page_buf(1);
	ASSERT_NE(NULL, buf);
	fd = open(self->dev, O_WRONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	for (s = 0; s < PF_PAGES; s++) {
		tu_fill(buf, PF_TAG, 2 * s, 2);
		ASSERT_EQ((ssize_t)PG, pwrite(fd, buf, PG, 2 * s * PG));
	}
	close(fd);
	for (i = 0; i < 60 && stat_col(self->c.tier_id, "wb_stat", WB_HELD); i++)
		usleep(25000);
	EXPECT_EQ(0ULL, stat_col(self->c.tier_id, "wb_stat", WB_HELD))
		TH_LOG("the rewritten pages are not written back yet (%.1f s)", tu_now() - t0);
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r1, RS_N));
	EXPECT_EQ(0ULL, r1[RS_PF_BYTES] - r0[RS_PF_BYTES])
		TH_LOG("the prefetch read landed before the rewrite (%.1f s): no race made",
		       tu_now() - t0);
	/* Still waiting (looked at without reaping them). */
	for (i = 0; i < READERS; i++) {
		siginfo_t si = { 0 };

		EXPECT_EQ(0, waitid(P_PID, self->kid[i], &si, WEXITED | WNOHANG | WNOWAIT));
		EXPECT_EQ(0, si.si_pid) TH_LOG("reader %d did not wait for the prefetch read", i);
	}
	t_set = tu_now() - t0;

	/* The writers, through the landing. */
	for (i = 0; i < WRITERS; i++) {
		self->kid[READERS + i] = fork();
		ASSERT_LE(0, self->kid[READERS + i]);
		if (!self->kid[READERS + i])
			_exit(pf_writer(self->dev, i));
	}

	left = wait_kids(self, READERS + WRITERS, STALL_S, &bad);
	TH_LOG("race set up %.1f s after the prefetch read started (it takes %d ms); %d of %d readers and writers done after %.1f s",
	       t_set, DELAY_MS, READERS + WRITERS - left, READERS + WRITERS, tu_now() - t0);
	stalled = left;
	if (stalled) {
		/* Let the slab serve again, so that the stuck I/O drains. */
		tu_param_restore(&self->fault);
		left = wait_kids(self, READERS + WRITERS, 60, &bad);
		TH_LOG("after fault_bio_reserve was cleared: %d left", left);
	}
	EXPECT_EQ(0, stalled) TH_LOG("reads and writes stalled on the tier's reserves");
	ASSERT_EQ(0, left) TH_LOG("still stuck after fault_bio_reserve was cleared");
	EXPECT_EQ(0, bad) TH_LOG("a reader or writer failed");

	/* The prefetch read landed after the rewrite: none of its blocks was staged. */
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r1, RS_N));
	EXPECT_LE(r0[RS_DROPPED] + PF_PAGES, r1[RS_DROPPED]);
	EXPECT_EQ(0ULL, r1[RS_STAGED]);

	/*
	 * Every page reads back. The delay has done its part: a linear table in its place
	 * (the reads would take DELAY_MS each, and the teardown swaps it in anyway).
	 */
	tu_param_restore(&self->fault);
	snprintf(cmd, sizeof(cmd), "echo '0 %llu linear %s 0' | dmsetup reload %s && dmsetup resume %s",
		 DM_SECTORS, tu_backing(), self->dm_name, self->dm_name);
	ASSERT_EQ(0, system(cmd));
	free(buf);
	buf = page_buf(WRITERS * W_PAGES);
	ASSERT_NE(NULL, buf);
	fd = open(self->dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)(RD_SLOTS * PG), pread(fd, buf, RD_SLOTS * PG, 0));
	for (s = 0; s < PF_PAGES; s++)
		EXPECT_EQ(-1, tu_check(buf + 2 * s * PG, PF_TAG, 2 * s, 2)) TH_LOG("slot %llu",
			(unsigned long long)(2 * s));
	ASSERT_EQ((ssize_t)(WRITERS * W_PAGES * PG),
		  pread(fd, buf, WRITERS * W_PAGES * PG, W_FIRST * PG));
	for (s = 0; s < WRITERS * W_PAGES; s++)
		EXPECT_EQ(-1, tu_check(buf + s * PG, PF_TAG + 1 + s / W_PAGES, W_FIRST + s, 1))
			TH_LOG("slot %llu", (unsigned long long)(W_FIRST + s));
	close(fd);
	free(buf);
}

/* ---- item 3 ---- */

/* The cgroup stats of every cgroup of the tier: a kvmalloc'ed array, *@count entries. */
/*
 * Item 2: each round creates a tier, writes DP_PAGES pages of one cgroup, asks PREFETCH
 * for all of them and destroys the tier while the reads are in flight; teardown must wait
 * for every prefetch read, and nothing may touch the tier after it is freed (KASAN).
 * A last round reads the pages back through a tier destroyed only afterwards.
 */
TEST_F_TIMEOUT(harden, destroy_during_prefetch, 600)
{
	const char *kv[] = { "segment_kib", "64" };
	char name[64], *buf;
	struct pagetier_prefetch pf;
	uint64_t slots[DP_PAGES], id;
	unsigned int r, k, planned = 0, inflight = 0;
	long bad = 0;
	int fd;

	for (k = 0; k < DP_PAGES; k++)
		slots[k] = k;
	ASSERT_EQ(0, tu_cg_setup_root());
	snprintf(name, sizeof(name), "pagetier-harden-dp-%d", getpid());
	ASSERT_EQ(0, tu_cg_create(name, self->cg_top, sizeof(self->cg_top), &id));
	for (r = 0; r <= DP_ROUNDS; r++) {
		ASSERT_EQ(0, make_tier(self, tu_backing(), kv, 1));
		self->kid[0] = fork();
		ASSERT_LE(0, self->kid[0]);
		if (!self->kid[0])
			_exit(cg_write(self->dev, self->cg_top, DP_TAG, slots, DP_PAGES, r + 1));
		ASSERT_EQ(0, tu_wait_exit(&self->kid[0]));
		ASSERT_EQ(0, tu_prefetch(self->ctl, self->c.tier_id, id, 0, 0, &pf));
		planned += pf.planned_bytes >= (uint64_t)DP_PAGES * PG / 2;
		if (r == DP_ROUNDS) {
			/* The last round: the pages read back right, staged or not. */
			buf = page_buf(1);
			ASSERT_NE(NULL, buf);
			fd = open(self->dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
			ASSERT_LE(0, fd);
			for (k = 0; k < DP_PAGES; k++) {
				ASSERT_EQ((ssize_t)PG, pread(fd, buf, PG, k * PG));
				bad += tu_check(buf, DP_TAG, k, r + 1) != -1;
			}
			close(fd);
			free(buf);
		} else {
			/* At once: the reads are in flight, or landing. */
			inflight += !stat_col(self->c.tier_id, "read_stat", 5) ||
				    stat_col(self->c.tier_id, "read_stat", 5) < DP_PAGES;
		}
		ASSERT_EQ(0, tu_tier_destroy(self->ctl, self->c.tier_id));
		self->created = false;
	}
	ASSERT_EQ(0, bad) TH_LOG("%ld pages read back wrong after prefetch", bad);
	TH_LOG("%u rounds: %u planned most of the cgroup's pages, %u destroyed before all were staged",
	       DP_ROUNDS, planned, inflight);
	ASSERT_GE(planned, DP_ROUNDS / 2);
}

static struct pagetier_cgroup_stat *all_cg_stats(int ctl, uint32_t tier, uint32_t cap,
						 uint32_t *count)
{
	struct pagetier_cgroup_stat *e = calloc(cap, sizeof(*e));
	struct pagetier_cgroup_stats s = {
		.size = sizeof(s), .tier_id = tier, .entry_size = sizeof(*e),
		.capacity = cap, .entries = (uintptr_t)e,
	};

	if (!e || tu_ioctl(ctl, PAGETIER_IOC_CGROUP_STATS, &s)) {
		free(e);
		return NULL;
	}
	*count = s.count;
	return e;
}

static const struct pagetier_cgroup_stat *find_cg(const struct pagetier_cgroup_stat *e,
						  uint32_t n, uint64_t id)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (e[i].cgroup_id == id)
			return &e[i];
	return NULL;
}

/*
 * Item 3. max_cgroups + CG_EXTRA cgroups write one page each (slot i for cgroup ci),
 * pinning every entry of the table; then cgroup "new" writes one page. It is
 * attributed: in CGROUP_STATS with its page, prefetchable, its demand read's event
 * names it; tier_stat counts the CG_EXTRA + 1 evictions and their pages, which count
 * as unattributed; no page counted as overflow; every page reads back.
 */
TEST_F_TIMEOUT(harden, cgroup_table_full, 600)
{
	const char *kv[] = { "segment_kib", "64", "max_capacity_mib", "256" };
	struct pagetier_events info = { .size = sizeof(info) };
	unsigned long long ts[32] = { 0 }, max_cg;
	const struct pagetier_cgroup_stat *n, *u;
	struct pagetier_cgroup_stat *all;
	char path[PATH_MAX + 32], buf[64], *page;
	struct pagetier_event ev[64];
	uint64_t slot, new_id, id, new_slot;
	struct pagetier_prefetch pf;
	uint32_t total, count;
	int k, fd, evfd, bad = 0;
	ssize_t got;
	bool seen = false;
	struct stat st;

	ASSERT_EQ(0, tu_read_file(PARAM_DIR "max_cgroups", buf, sizeof(buf)));
	max_cg = strtoull(buf, NULL, 10);
	if (max_cg > 4096)
		SKIP(return, "max_cgroups is %llu: too many cgroups to make", max_cg);
	ASSERT_EQ(0, tu_cg_setup_root());
	ASSERT_EQ(0, make_tier(self, tu_backing(), kv, 2));
	total = max_cg + CG_EXTRA;
	new_slot = total;

	snprintf(buf, sizeof(buf), "pagetier-harden-cg-%d", getpid());
	ASSERT_EQ(0, tu_cg_create(buf, self->cg_top, sizeof(self->cg_top), &id));
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", self->cg_top);
	ASSERT_EQ(0, tu_write_file(path, "+memory"));

	/* CG_PAR writers, one page and one cgroup at a time (the teardown removes them). */
	self->ncg = total;
	for (k = 0; k < CG_PAR; k++) {
		self->kid[k] = fork();
		ASSERT_LE(0, self->kid[k]);
		if (!self->kid[k])
			_exit(cg_write_each(self->dev, self->cg_top, k, total));
	}
	for (k = 0; k < CG_PAR; k++)
		if (tu_wait_exit(&self->kid[k]))
			bad++;
	ASSERT_EQ(0, bad) TH_LOG("%d cgroup writers failed", bad);

	/* The table is full of one-page cgroups: a new one writes a page. */
	snprintf(path, sizeof(path), "%s/new", self->cg_top);
	ASSERT_EQ(0, mkdir(path, 0755));
	self->cg_new = true;
	ASSERT_EQ(0, stat(path, &st));
	new_id = st.st_ino;
	self->kid[0] = fork();
	ASSERT_LE(0, self->kid[0]);
	if (!self->kid[0])
		_exit(cg_write(self->dev, path, CG_TAG, &new_slot, 1, 1));
	ASSERT_EQ(0, tu_wait_exit(&self->kid[0]));

	/* Observable: the evictions, their pages; nothing counted as overflow. */
	k = tu_tier_stat(self->c.tier_id, "tier_stat", ts, 32);
	TH_LOG("tier_stat: %d columns; pages %llu, cgroups %llu, overflows %llu, evictions %llu of %llu pages",
	       k, ts[TS_PAGES], ts[TS_CGROUPS], ts[TS_OVERFLOWS], ts[TS_EVICTIONS],
	       ts[TS_EVICTED_PAGES]);
	EXPECT_EQ(TS_N, k) TH_LOG("no eviction counters in tier_stat");
	EXPECT_EQ((unsigned long long)total + 1, ts[TS_PAGES]);
	EXPECT_EQ(0ULL, ts[TS_OVERFLOWS]);
	EXPECT_EQ((unsigned long long)CG_EXTRA + 1, ts[TS_EVICTIONS]);
	EXPECT_EQ((unsigned long long)CG_EXTRA + 1, ts[TS_EVICTED_PAGES]);

	/* Attributed: its page in its own entry; the evicted pages are unattributed. */
	all = all_cg_stats(self->ctl, self->c.tier_id, total + 16, &count);
	ASSERT_NE(NULL, all);
	EXPECT_EQ(max_cg + 1, count);		/* the table, and the unattributed entry */
	n = find_cg(all, count, new_id);
	u = find_cg(all, count, 0);
	ASSERT_NE(NULL, n) TH_LOG("the new cgroup has no entry: unattributed");
	EXPECT_EQ(1ULL, n->pages_stored);
	ASSERT_NE(NULL, u);
	EXPECT_EQ((unsigned long long)CG_EXTRA + 1, u->pages_stored);
	free(all);

	/* Prefetchable. */
	ASSERT_EQ(0, tu_prefetch(self->ctl, self->c.tier_id, new_id, 0, PAGETIER_PREFETCH_WAIT,
				 &pf));
	EXPECT_EQ((__u64)PG, pf.planned_bytes);
	EXPECT_EQ((__u64)PG, pf.staged_bytes);

	/* Its demand read's event names it. */
	evfd = open(CTL_PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, evfd);
	ASSERT_EQ(0, tu_ioctl(evfd, PAGETIER_IOC_EVENTS, &info));
	page = page_buf(1);
	ASSERT_NE(NULL, page);
	fd = open(self->dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)PG, pread(fd, page, PG, new_slot * PG));
	EXPECT_EQ(-1, tu_check(page, CG_TAG, new_slot, 1));
	while ((got = read(evfd, ev, sizeof(ev))) > 0)
		for (k = 0; k < got / (ssize_t)sizeof(ev[0]); k++)
			if (ev[k].type == PAGETIER_EVENT_DEMAND_READ &&
			    ev[k].tier_id == self->c.tier_id && ev[k].slot == new_slot) {
				seen = true;
				EXPECT_EQ(new_id, ev[k].cgroup_id);
			}
	EXPECT_TRUE(seen);
	close(evfd);

	/* Every page, evicted or not, reads back. */
	for (slot = 0; slot < total; slot++) {
		ASSERT_EQ((ssize_t)PG, pread(fd, page, PG, slot * PG));
		ASSERT_EQ(-1, tu_check(page, CG_TAG, slot, 1)) TH_LOG("slot %llu",
			(unsigned long long)slot);
	}
	close(fd);
	free(page);
}

TEST_HARNESS_MAIN
