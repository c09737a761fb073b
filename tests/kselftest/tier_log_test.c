// SPDX-License-Identifier: GPL-2.0
/*
 * tier_log_test.c - kselftests of the log-structured tier: integrity under a random mix
 * of writes, reads and discards from concurrent writers, garbage collection of a nearly
 * full and fragmented tier, per-cgroup placement on the backing device, coalesced
 * writes, the staging cache and PAGETIER_IOC_PREFETCH (with its validation), a swap
 * round trip restored with PREFETCH + MADV_WILLNEED, and the write buffer (flushes, FUA,
 * a full buffer). Every test runs twice: with the module's write buffer, and without
 * one (write_buffer_mib=0), the path a write takes when the buffer is full.
 *
 * Needs root, pagetier.ko loaded and a scratch block device whose contents are
 * destroyed: $PAGETIER_TEST_BACKING, default /dev/nvme0n1. The tiers are small (module
 * parameters set around TIER_CREATE) so that the collector has work.
 */
#include "tier_util.h"

#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <linux/aio_abi.h>
#include <linux/capability.h>

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#define CAP_MIB		32		/* the fixture's tier */
#define SEG_KIB		256
#define NSLOTS		(CAP_MIB * 256UL)
#define SEG_BLOCKS	(SEG_KIB / 4)

/* ---- I/O helpers ---- */

static int write_pages(int fd, void *buf, uint64_t tag, uint64_t slot, unsigned int n,
		       const uint32_t *gen)
{
	unsigned int k;

	for (k = 0; k < n; k++)
		tu_fill((char *)buf + k * PG, tag, slot + k, gen[k]);
	return pwrite(fd, buf, n * PG, slot * PG) == (ssize_t)(n * PG) ? 0 : -errno;
}

static int discard(int fd, uint64_t slot, uint64_t n)
{
	uint64_t range[2] = { slot * PG, n * PG };

	return ioctl(fd, BLKDISCARD, range) ? -errno : 0;
}

/*
 * Reads @n slots from @slot and checks them against generation @gen[k] (0: the slot
 * must read as zeros). Returns -1 if all match, else the index of the first bad slot.
 */
static long read_check(int fd, void *buf, uint64_t tag, uint64_t slot, unsigned int n,
		       const uint32_t *gen)
{
	unsigned int k;

	if (pread(fd, buf, n * PG, slot * PG) != (ssize_t)(n * PG))
		return 0;
	for (k = 0; k < n; k++) {
		const char *p = (const char *)buf + k * PG;

		if (gen[k] ? tu_check(p, tag, slot + k, gen[k]) != -1 : !tu_is_zero(p))
			return k;
	}
	return -1;
}

static void *page_buf(size_t pages)
{
	void *p = NULL;

	return posix_memalign(&p, PG, pages * PG) ? NULL : p;
}

/* ---- the fixture: a small tier ---- */

FIXTURE(log) {
	int ctl;
	bool created;
	struct pagetier_tier_create c;
	char dev[64];
	char cg[2][PATH_MAX];
	uint64_t cgid[2];
	pid_t kid[4];
	uint32_t *gen;			/* shared with the children: [NSLOTS] */
	bool swapped_on;
	bool zswap_was_on;
};

/* The write buffer of the fixture's tier: NULL = the module's default. */
FIXTURE_VARIANT(log) {
	const char *write_buffer_mib;
};

FIXTURE_VARIANT_ADD(log, buffered) {
	.write_buffer_mib = NULL,
};

FIXTURE_VARIANT_ADD(log, direct) {
	.write_buffer_mib = "0",
};

FIXTURE_SETUP(log)
{
	struct tu_param p[4] = { 0 };
	int ret;

	TU_FIXTURE_OPEN(self);
	ASSERT_EQ(0, tu_param_set(&p[0], "max_capacity_mib", "32"));
	ASSERT_EQ(0, tu_param_set(&p[1], "segment_kib", "256"));
	ASSERT_EQ(0, tu_param_set(&p[2], "max_open_segments", "4"));
	if (variant->write_buffer_mib)
		ASSERT_EQ(0, tu_param_set(&p[3], "write_buffer_mib", variant->write_buffer_mib));
	ret = tu_tier_create(self->ctl, tu_backing(), &self->c);
	tu_param_restore(&p[0]);
	tu_param_restore(&p[1]);
	tu_param_restore(&p[2]);
	tu_param_restore(&p[3]);
	ASSERT_EQ(0, ret);
	TU_FIXTURE_TIER(self);
	self->gen = mmap(NULL, NSLOTS * sizeof(*self->gen), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->gen);
}

FIXTURE_TEARDOWN(log)
{
	char cmd[PATH_MAX];
	int i;

	for (i = 0; i < 4; i++)
		tu_reap(&self->kid[i]);
	if (self->swapped_on) {
		snprintf(cmd, sizeof(cmd), "swapoff %s", self->dev);
		EXPECT_EQ(0, system(cmd));
	}
	if (self->zswap_was_on)
		tu_write_file("/sys/module/zswap/parameters/enabled", "Y");
	for (i = 0; i < 2; i++)
		if (self->cg[i][0])
			tu_cg_remove(self->cg[i]);
	TU_FIXTURE_CLOSE(self);
}

/* Every counter file has its columns; the tier is smaller than its backing device. */
TEST_F(log, geometry)
{
	unsigned long long v[32], backing = 0;
	int fd;

	NEED_TIER();
	EXPECT_EQ((unsigned long long)CAP_MIB << 20, self->c.capacity_bytes);
	EXPECT_EQ(TS_N, tu_tier_stat(self->c.tier_id, "tier_stat", v, 32));
	EXPECT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", v, 32));
	EXPECT_EQ(20, tu_tier_stat(self->c.tier_id, "read_latency", v, 32));
	EXPECT_EQ(IO_N, tu_tier_stat(self->c.tier_id, "io_stat", v, 32));
	ASSERT_EQ(WB_N, tu_tier_stat(self->c.tier_id, "wb_stat", v, 32));
	if (variant->write_buffer_mib) {
		EXPECT_EQ(strtoull(variant->write_buffer_mib, NULL, 10) << 8, v[WB_MAX]);
	} else {
		EXPECT_LT(0ULL, v[WB_MAX]);
	}
	/* A write buffer is a volatile write cache: users that need it flush. */
	if (v[WB_MAX]) {
		char path[PATH_MAX], wc[32];

		snprintf(path, sizeof(path), "/sys/block/%s/queue/write_cache", self->dev + 5);
		ASSERT_EQ(0, tu_read_file(path, wc, sizeof(wc)));
		EXPECT_EQ(0, strncmp(wc, "write back", 10)) TH_LOG("write_cache: %s", wc);
	}
	ASSERT_EQ(SS_N, tu_tier_stat(self->c.tier_id, "seg_stat", v, 32));
	EXPECT_EQ((unsigned long long)SEG_KIB << 10, v[SS_SEG_BYTES]);
	EXPECT_EQ(v[SS_SEGS], v[SS_FREE]);
	EXPECT_EQ(0ULL, v[SS_OPEN] + v[SS_BAD] + v[SS_LIVE]);
	/* Capacity plus the collector's headroom plus the open segments. */
	EXPECT_LT(self->c.capacity_bytes, v[SS_BACKING_USED]);
	EXPECT_EQ(v[SS_SEGS] * v[SS_SEG_BYTES], v[SS_BACKING_USED]);
	fd = open(tu_backing(), O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, BLKGETSIZE64, &backing));
	close(fd);
	EXPECT_LE(v[SS_BACKING_USED], backing);
	EXPECT_EQ(backing, self->c.backing_bytes);
}

/* ---- integrity under a random mix ---- */

#define MIX_WORKERS	4
#define MIX_CHUNK	64	/* slots; chunk c belongs to worker c % MIX_WORKERS */
#define MIX_OPS		1200	/* per worker: ~80 MiB written in all, 2.5 times the tier */
#define MIX_RUN		16

/* One worker: random writes, reads and discards of its chunks; every read checked. */
static int mix_worker(const char *dev, uint32_t *gen, unsigned int w, uint64_t seed)
{
	unsigned int chunks = NSLOTS / MIX_CHUNK, op, k, len;
	uint64_t r = seed, slot;
	int fd, ret = 0;
	char *buf;
	long bad;

	buf = page_buf(MIX_RUN);
	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (!buf || fd < 0)
		return 2;
	for (op = 0; op < MIX_OPS && !ret; op++) {
		unsigned int c = (r = tu_mix64(r)) % (chunks / MIX_WORKERS) * MIX_WORKERS + w;
		unsigned int kind = (r = tu_mix64(r)) % 100;

		len = 1 + (r = tu_mix64(r)) % MIX_RUN;
		slot = (uint64_t)c * MIX_CHUNK + (r = tu_mix64(r)) % (MIX_CHUNK - len + 1);
		if (kind < 50) {
			for (k = 0; k < len; k++)
				gen[slot + k]++;
			if (write_pages(fd, buf, w, slot, len, &gen[slot]))
				ret = 3;
		} else if (kind < 85) {
			bad = read_check(fd, buf, w, slot, len, &gen[slot]);
			if (bad >= 0) {
				fprintf(stderr, "worker %u: slot %llu gen %u differs\n", w,
					(unsigned long long)(slot + bad), gen[slot + bad]);
				ret = 4;
			}
		} else {
			if (discard(fd, slot, len))
				ret = 5;
			for (k = 0; k < len; k++)
				gen[slot + k] = 0;
		}
	}
	close(fd);
	free(buf);
	return ret;
}

/* The whole tier against @gen; tag = owner of the slot's chunk. */
static long verify_all(const char *dev, const uint32_t *gen)
{
	char *buf = page_buf(MIX_CHUNK);
	uint64_t c;
	long bad = -1, b;
	int fd;

	fd = open(dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (!buf || fd < 0)
		return 0;
	for (c = 0; c < NSLOTS / MIX_CHUNK && bad < 0; c++) {
		b = read_check(fd, buf, c % MIX_WORKERS, c * MIX_CHUNK, MIX_CHUNK,
			       &gen[c * MIX_CHUNK]);
		if (b >= 0)
			bad = c * MIX_CHUNK + b;
	}
	close(fd);
	free(buf);
	return bad;
}

TEST_F_TIMEOUT(log, random_mix, 240)
{
	unsigned long long st[SS_N], ts[TS_N];
	uint64_t seed, live = 0, i;
	unsigned int w;
	double t0 = tu_now();

	NEED_TIER();
	ASSERT_EQ((ssize_t)sizeof(seed), getrandom(&seed, sizeof(seed), 0));
	TH_LOG("seed %llu", (unsigned long long)seed);
	for (w = 0; w < MIX_WORKERS; w++) {
		self->kid[w] = fork();
		ASSERT_LE(0, self->kid[w]);
		if (!self->kid[w])
			_exit(mix_worker(self->dev, self->gen, w, seed + w));
	}
	for (w = 0; w < MIX_WORKERS; w++)
		EXPECT_EQ(0, tu_wait_exit(&self->kid[w])) TH_LOG("worker %u failed", w);
	EXPECT_EQ(-1, verify_all(self->dev, self->gen));
	for (i = 0; i < NSLOTS; i++)
		live += self->gen[i] != 0;
	ASSERT_EQ(TS_N, tu_tier_stat(self->c.tier_id, "tier_stat", ts, TS_N));
	ASSERT_EQ(SS_N, tu_tier_stat(self->c.tier_id, "seg_stat", st, SS_N));
	TH_LOG("%.1f s: %llu live pages, %llu MiB written, GC: %llu victims %llu moves, %llu free segments",
	       tu_now() - t0, (unsigned long long)live, ts[TS_BYTES_W] >> 20, st[SS_GC_VICTIMS],
	       st[SS_GC_MOVES], st[SS_FREE]);
	EXPECT_EQ(live, ts[TS_PAGES]);
	EXPECT_EQ(live, st[SS_LIVE]);
	EXPECT_EQ(0ULL, ts[TS_RERR] + ts[TS_WERR] + st[SS_GC_ERRORS] + st[SS_NOSPACE]);
	/* Far more was written than the tier holds: the collector had to run. */
	EXPECT_LT(0ULL, st[SS_GC_VICTIMS]);
}

/* ---- GC of a nearly full, fragmented tier, with a reader of stable data ---- */

#define FRAG_STABLE	1024	/* slots [0, FRAG_STABLE) are written once */

static int stable_reader(const char *dev, const uint32_t *gen, volatile int *stop)
{
	char *buf = page_buf(8);
	uint64_t r = 12345, slot;
	int fd, n = 0;
	long bad;

	fd = open(dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (!buf || fd < 0)
		return 2;
	while (!*stop) {
		/* 8 aligned slots: never across a chunk, whose writer is the tag. */
		slot = (r = tu_mix64(r)) % (FRAG_STABLE / 8) * 8;
		bad = read_check(fd, buf, slot / MIX_CHUNK % MIX_WORKERS, slot, 8, &gen[slot]);
		if (bad >= 0) {
			fprintf(stderr, "stable slot %llu differs after %d reads\n",
				(unsigned long long)(slot + bad), n);
			return 3;
		}
		n++;
	}
	return n ? 0 : 4;
}

TEST_F_TIMEOUT(log, gc_fragmentation, 240)
{
	unsigned long long st[SS_N], ts[TS_N];
	uint64_t r, slot, i, round;
	volatile int *stop;
	char *buf;
	int fd;

	NEED_TIER();
	ASSERT_EQ((ssize_t)sizeof(r), getrandom(&r, sizeof(r), 0));
	TH_LOG("seed %llu", (unsigned long long)r);
	buf = page_buf(MIX_CHUNK);
	ASSERT_NE(NULL, buf);
	stop = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, stop);
	fd = open(self->dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);

	/* Fill the whole tier. */
	for (i = 0; i < NSLOTS; i++)
		self->gen[i] = 1;
	for (slot = 0; slot < NSLOTS; slot += MIX_CHUNK)
		ASSERT_EQ(0, write_pages(fd, buf, slot / MIX_CHUNK % MIX_WORKERS, slot,
					 MIX_CHUNK, &self->gen[slot]));

	*stop = 0;
	self->kid[0] = fork();
	ASSERT_LE(0, self->kid[0]);
	if (!self->kid[0])
		_exit(stable_reader(self->dev, self->gen, stop));

	/*
	 * Rounds: punch holes of 1-4 slots in a quarter of the churned part, then fill them
	 * again and overwrite another quarter: the live data stays near the capacity and
	 * the garbage is spread over every segment. Each round writes some 2700 pages, twice
	 * the 21 segments the full tier has left: the collector moves pages in the first
	 * round already, and in the second it collects segments it wrote itself.
	 */
	for (round = 0; round < 2; round++) {
		for (i = 0; i < NSLOTS / 16; i++) {
			unsigned int len = 1 + (r = tu_mix64(r)) % 4;

			slot = FRAG_STABLE + (r = tu_mix64(r)) % (NSLOTS - FRAG_STABLE - len);
			ASSERT_EQ(0, discard(fd, slot, len));
			memset(&self->gen[slot], 0, len * sizeof(*self->gen));
		}
		for (slot = FRAG_STABLE; slot < NSLOTS; slot++) {
			if (self->gen[slot] && (r = tu_mix64(r)) % 4)
				continue;
			self->gen[slot]++;
			ASSERT_EQ(0, write_pages(fd, buf, slot / MIX_CHUNK % MIX_WORKERS, slot, 1,
						 &self->gen[slot]));
		}
	}
	*stop = 1;
	EXPECT_EQ(0, tu_wait_exit(&self->kid[0])) TH_LOG("the reader saw a wrong page");
	close(fd);
	EXPECT_EQ(-1, verify_all(self->dev, self->gen));
	ASSERT_EQ(TS_N, tu_tier_stat(self->c.tier_id, "tier_stat", ts, TS_N));
	ASSERT_EQ(SS_N, tu_tier_stat(self->c.tier_id, "seg_stat", st, SS_N));
	TH_LOG("%llu live of %lu, GC: %llu victims %llu moves, %llu free of %llu segments",
	       ts[TS_PAGES], NSLOTS, st[SS_GC_VICTIMS], st[SS_GC_MOVES], st[SS_FREE],
	       st[SS_SEGS]);
	EXPECT_EQ((unsigned long long)NSLOTS, ts[TS_PAGES]);
	EXPECT_LT(0ULL, st[SS_GC_MOVES]);
	EXPECT_EQ(0ULL, ts[TS_RERR] + ts[TS_WERR] + st[SS_GC_ERRORS] + st[SS_NOSPACE]);
	munmap((void *)stop, PG);
	free(buf);
}

/* ---- placement ---- */

#define PLACE_PAGES	2048	/* per cgroup */

/* In a child: join @cg and write every other 8-slot run of its half, in random order. */
static int place_writer(const char *dev, const char *cg, unsigned int who, uint64_t seed)
{
	uint32_t gen[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	unsigned int runs = PLACE_PAGES / 8, i, j, tmp, *order;
	char *buf;
	int fd;

	if (tu_cg_enter(cg))
		return 2;
	buf = mmap(NULL, 8 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	order = calloc(runs, sizeof(*order));
	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (buf == MAP_FAILED || !order || fd < 0)
		return 3;
	for (i = 0; i < runs; i++)
		order[i] = i;
	for (i = runs - 1; i > 0; i--) {
		j = (seed = tu_mix64(seed)) % (i + 1);
		tmp = order[i];
		order[i] = order[j];
		order[j] = tmp;
	}
	/* Slots interleave: cgroup 0 has the even runs, cgroup 1 the odd ones. */
	for (i = 0; i < runs; i++)
		if (write_pages(fd, buf, 100 + who, (order[i] * 2 + who) * 8, 8, gen))
			return 4;
	/* The test reads the backing device: out of the write buffer first. */
	if (fsync(fd))
		return 5;
	close(fd);
	return 0;
}

/*
 * Two cgroups write interleaved slots at the same time; on the backing device every
 * segment holds the pages of one cgroup only, and each cgroup's pages fill few segments.
 */
TEST_F_TIMEOUT(log, placement_two_cgroups, 120)
{
	unsigned long long ss[SS_N];
	struct pagetier_cgroup_stat st[2];
	unsigned int found[2] = { 0, 0 }, mixed = 0, segs[2] = { 0, 0 };
	uint64_t id[2], seed, seg, nsegs, sb, k;
	char name[64], *buf;
	unsigned int i;
	int fd;

	NEED_TIER();
	ASSERT_EQ(0, tu_cg_setup_root());
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "pagetier-log-place%c-%d", 'a' + i, getpid());
		ASSERT_EQ(0, tu_cg_create(name, self->cg[i], sizeof(self->cg[i]), &id[i]));
	}
	ASSERT_EQ((ssize_t)sizeof(seed), getrandom(&seed, sizeof(seed), 0));
	for (i = 0; i < 2; i++) {
		self->kid[i] = fork();
		ASSERT_LE(0, self->kid[i]);
		if (!self->kid[i])
			_exit(place_writer(self->dev, self->cg[i], i, seed + i));
	}
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, tu_wait_exit(&self->kid[i])) TH_LOG("writer %u failed", i);

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->c.tier_id, id[i], &st[i]));
		EXPECT_EQ((__u64)PLACE_PAGES, st[i].pages_stored);
		/* Full segments, plus the open one. */
		EXPECT_GE((__u64)PLACE_PAGES / SEG_BLOCKS + 1, st[i].segments);
	}

	/* Read the backing device behind the tier's back (not exclusive, O_DIRECT). */
	ASSERT_EQ(SS_N, tu_tier_stat(self->c.tier_id, "seg_stat", ss, SS_N));
	sb = ss[SS_SEG_BYTES];
	nsegs = ss[SS_SEGS];
	buf = page_buf(sb / PG);
	ASSERT_NE(NULL, buf);
	fd = open(tu_backing(), O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	for (seg = 0; seg < nsegs; seg++) {
		unsigned int in[2] = { 0, 0 };

		ASSERT_EQ((ssize_t)sb, pread(fd, buf, sb, seg * sb));
		for (k = 0; k < sb / PG; k++) {
			uint64_t *w = (uint64_t *)(buf + k * PG);
			unsigned int who = w[1] - 100;

			if (w[0] != TU_MAGIC || who > 1 || w[3] != 1)
				continue;
			if (tu_check(w, w[1], w[2], 1) != -1)
				continue;
			in[who]++;
		}
		mixed += in[0] && in[1];
		for (i = 0; i < 2; i++) {
			found[i] += in[i];
			segs[i] += !!in[i];
		}
	}
	close(fd);
	free(buf);
	TH_LOG("cgroup pages found on the backing device: %u in %u segments, %u in %u segments; %u mixed segments",
	       found[0], segs[0], found[1], segs[1], mixed);
	EXPECT_EQ(0U, mixed);
	EXPECT_EQ((unsigned int)PLACE_PAGES, found[0]);
	EXPECT_EQ((unsigned int)PLACE_PAGES, found[1]);
	EXPECT_GE((unsigned int)(PLACE_PAGES / SEG_BLOCKS + 1), segs[0]);
	EXPECT_GE((unsigned int)(PLACE_PAGES / SEG_BLOCKS + 1), segs[1]);
}

/* ---- coalescing ---- */

#define AIO_N	256

static long sys_io_setup(unsigned int n, aio_context_t *ctx)
{
	return syscall(SYS_io_setup, n, ctx);
}

static long sys_io_submit(aio_context_t ctx, long n, struct iocb **iocbs)
{
	return syscall(SYS_io_submit, ctx, n, iocbs);
}

static long sys_io_getevents(aio_context_t ctx, long min, long max, struct io_event *ev)
{
	return syscall(SYS_io_getevents, ctx, min, max, ev, NULL);
}

static long sys_io_destroy(aio_context_t ctx)
{
	return syscall(SYS_io_destroy, ctx);
}

/* Submits @n iocbs and waits for all; returns how many failed, or -1. */
static int aio_run(aio_context_t ctx, struct iocb *cb, unsigned int n)
{
	struct iocb *list[AIO_N];
	struct io_event ev[AIO_N];
	unsigned int i, done = 0, bad = 0;
	long got;

	for (i = 0; i < n; i++)
		list[i] = &cb[i];
	if (sys_io_submit(ctx, n, list) != n)
		return -1;
	while (done < n) {
		got = sys_io_getevents(ctx, 1, n - done, ev);
		if (got <= 0)
			return -1;
		for (i = 0; i < got; i++)
			bad += ev[i].res != (__s64)PG;
		done += got;
	}
	return bad;
}

/*
 * 256 single-page writes to scattered slots, submitted at once (io_submit plugs them):
 * they get consecutive blocks, and the backing device sees a few large writes.
 */
TEST_F(log, coalesced_writes)
{
	unsigned long long b0[11], b1[11], io0[IO_N], io1[IO_N];
	struct iocb cb[AIO_N];
	aio_context_t ctx = 0;
	uint32_t gen = 1;
	unsigned int i;
	char *buf;
	int fd;

	NEED_TIER();
	buf = page_buf(AIO_N);
	ASSERT_NE(NULL, buf);
	fd = open(self->dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sys_io_setup(AIO_N, &ctx));
	memset(cb, 0, sizeof(cb));
	for (i = 0; i < AIO_N; i++) {
		uint64_t slot = (uint64_t)i * 29 % NSLOTS;

		tu_fill(buf + i * PG, 7, slot, gen);
		cb[i].aio_fildes = fd;
		cb[i].aio_lio_opcode = IOCB_CMD_PWRITE;
		cb[i].aio_buf = (uintptr_t)(buf + i * PG);
		cb[i].aio_nbytes = PG;
		cb[i].aio_offset = slot * PG;
	}
	ASSERT_EQ(0, tu_bdev_stat(tu_backing(), b0));
	ASSERT_EQ(IO_N, tu_tier_stat(self->c.tier_id, "io_stat", io0, IO_N));
	ASSERT_EQ(0, aio_run(ctx, cb, AIO_N));
	ASSERT_EQ(0, fsync(fd));	/* what the write buffer holds goes out */
	ASSERT_EQ(0, tu_bdev_stat(tu_backing(), b1));
	ASSERT_EQ(IO_N, tu_tier_stat(self->c.tier_id, "io_stat", io1, IO_N));
	TH_LOG("%u page writes: %llu write bios to the backing device, %llu write requests there",
	       AIO_N, io1[IO_WB_BIOS] - io0[IO_WB_BIOS], b1[4] - b0[4]);
	/*
	 * Without a buffer, one clone each that the device merges; with one, runs. How long
	 * the runs are depends on how fast the writes come: the flusher writes what is queued
	 * while io_submit is still adding pages (on Debian's kernels 32 bios or fewer for the
	 * 256 pages; 38 on the debug kernel, KASAN slowing the submitter down). Eight pages
	 * a bio on average is what production kernels do, four what any kernel must: without
	 * coalescing it is one.
	 */
	if (variant->write_buffer_mib) {
		EXPECT_EQ((unsigned long long)AIO_N, io1[IO_WB_BIOS] - io0[IO_WB_BIOS]);
	} else {
		EXPECT_GE((unsigned long long)AIO_N / 4, io1[IO_WB_BIOS] - io0[IO_WB_BIOS]);
	}
	EXPECT_GE((unsigned long long)AIO_N / 4, b1[4] - b0[4]);

	/* Every page reads back, as a batch of reads too. */
	memset(buf, 0, AIO_N * PG);
	for (i = 0; i < AIO_N; i++)
		cb[i].aio_lio_opcode = IOCB_CMD_PREAD;
	ASSERT_EQ(0, aio_run(ctx, cb, AIO_N));
	for (i = 0; i < AIO_N; i++)
		ASSERT_EQ(-1, tu_check(buf + i * PG, 7, (uint64_t)i * 29 % NSLOTS, gen));
	sys_io_destroy(ctx);
	close(fd);
	free(buf);
}

/*
 * Writes and reads of the same slot in flight together (one io_submit): a read returns
 * some complete version of the page, and afterwards the slot holds one of the writes.
 */
TEST_F(log, overlapping_inflight)
{
	struct iocb cb[AIO_N];
	aio_context_t ctx = 0;
	unsigned int i, round, k;
	uint64_t slot;
	char *buf;
	int fd;

	NEED_TIER();
	buf = page_buf(AIO_N);
	ASSERT_NE(NULL, buf);
	fd = open(self->dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sys_io_setup(AIO_N, &ctx));
	for (round = 0; round < 25; round++) {
		/* 16 slots; per slot: write gen a, read, write gen a + 1, read. */
		memset(cb, 0, sizeof(cb));
		for (i = 0; i < 64; i++) {
			slot = 100 + round * 16 + i / 4;
			k = i % 4;
			cb[i].aio_fildes = fd;
			cb[i].aio_buf = (uintptr_t)(buf + i * PG);
			cb[i].aio_nbytes = PG;
			cb[i].aio_offset = slot * PG;
			cb[i].aio_lio_opcode = k % 2 ? IOCB_CMD_PREAD : IOCB_CMD_PWRITE;
			if (!(k % 2))
				tu_fill(buf + i * PG, 9, slot, round * 2 + 1 + k / 2);
		}
		ASSERT_EQ(0, aio_run(ctx, cb, 64));
		for (i = 0; i < 64; i += 2) {
			char *p = buf + (i + 1) * PG;

			slot = 100 + round * 16 + i / 4;
			/* Empty before, or one of the two writes. */
			EXPECT_TRUE(tu_is_zero(p) || tu_check(p, 9, slot, round * 2 + 1) == -1 ||
				    tu_check(p, 9, slot, round * 2 + 2) == -1)
				TH_LOG("round %u slot %llu: a torn or foreign page", round,
				       (unsigned long long)slot);
		}
		for (i = 0; i < 16; i++) {
			slot = 100 + round * 16 + i;
			ASSERT_EQ((ssize_t)PG, pread(fd, buf, PG, slot * PG));
			EXPECT_TRUE(tu_check(buf, 9, slot, round * 2 + 1) == -1 ||
				    tu_check(buf, 9, slot, round * 2 + 2) == -1)
				TH_LOG("round %u slot %llu holds neither write", round,
				       (unsigned long long)slot);
		}
	}
	sys_io_destroy(ctx);
	close(fd);
	free(buf);
}

/* ---- writes, discards and reads of the same slots at once ---- */

#define RACE_SLOTS	256
#define RACE_OPS	1000

/* A page read back is empty or some complete write of that very slot. */
static bool race_page_ok(const void *p, uint64_t slot)
{
	const uint64_t *w = p;

	return tu_is_zero(p) ||
	       (w[0] == TU_MAGIC && w[2] == slot && tu_check(p, w[1], slot, w[3]) == -1);
}

static int race_worker(const char *dev, unsigned int role, uint64_t seed)
{
	uint64_t r = seed, slot;
	unsigned int op, len, k;
	uint32_t gen[8];
	char *buf = page_buf(8);
	int fd;

	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (!buf || fd < 0)
		return 2;
	for (op = 0; op < RACE_OPS; op++) {
		len = 1 + (r = tu_mix64(r)) % 8;
		slot = (r = tu_mix64(r)) % (RACE_SLOTS - len + 1);
		if (role == 0) {
			for (k = 0; k < len; k++)
				gen[k] = op + 1;
			if (write_pages(fd, buf, 20, slot, len, gen))
				return 3;
		} else if (role == 1) {
			if (discard(fd, slot, len))
				return 4;
		} else {
			if (pread(fd, buf, len * PG, slot * PG) != (ssize_t)(len * PG))
				return 5;
			for (k = 0; k < len; k++)
				if (!race_page_ok(buf + k * PG, slot + k)) {
					fprintf(stderr, "slot %llu: torn or foreign page\n",
						(unsigned long long)(slot + k));
					return 6;
				}
		}
	}
	close(fd);
	free(buf);
	return 0;
}

/*
 * A writer, a discarder and a reader on the same 256 slots: every page read is empty or
 * a complete write of its slot, and afterwards the counters match what is there.
 */
TEST_F_TIMEOUT(log, write_discard_read_race, 120)
{
	unsigned long long ts[TS_N], ss[SS_N];
	unsigned int w, stored = 0;
	uint64_t seed, s;
	char *buf;
	int fd;

	NEED_TIER();
	ASSERT_EQ((ssize_t)sizeof(seed), getrandom(&seed, sizeof(seed), 0));
	TH_LOG("seed %llu", (unsigned long long)seed);
	for (w = 0; w < 3; w++) {
		self->kid[w] = fork();
		ASSERT_LE(0, self->kid[w]);
		if (!self->kid[w])
			_exit(race_worker(self->dev, w, seed + w));
	}
	for (w = 0; w < 3; w++)
		EXPECT_EQ(0, tu_wait_exit(&self->kid[w])) TH_LOG("worker %u failed", w);

	buf = page_buf(RACE_SLOTS);
	ASSERT_NE(NULL, buf);
	fd = open(self->dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)(RACE_SLOTS * PG), pread(fd, buf, RACE_SLOTS * PG, 0));
	close(fd);
	for (s = 0; s < RACE_SLOTS; s++) {
		EXPECT_TRUE(race_page_ok(buf + s * PG, s));
		stored += !tu_is_zero(buf + s * PG);
	}
	ASSERT_EQ(TS_N, tu_tier_stat(self->c.tier_id, "tier_stat", ts, TS_N));
	ASSERT_EQ(SS_N, tu_tier_stat(self->c.tier_id, "seg_stat", ss, SS_N));
	TH_LOG("%u of %u slots hold a page", stored, RACE_SLOTS);
	EXPECT_EQ(stored, ts[TS_PAGES]);
	EXPECT_EQ(stored, ss[SS_LIVE]);
	EXPECT_EQ(0ULL, ts[TS_RERR] + ts[TS_WERR]);
	free(buf);
}

/* ---- the write buffer ---- */

/* Counts the pages of @tag with generation @gen on the backing device's first @bytes. */
static long backing_count(uint64_t tag, uint32_t gen, uint64_t bytes)
{
	const size_t chunk = 1 << 20;
	char *buf = page_buf(chunk / PG);
	uint64_t off, k;
	long n = 0;
	int fd;

	fd = open(tu_backing(), O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (!buf || fd < 0)
		return -1;
	for (off = 0; off < bytes; off += chunk) {
		if (pread(fd, buf, chunk, off) != (ssize_t)chunk)
			break;
		for (k = 0; k < chunk / PG; k++) {
			uint64_t *w = (uint64_t *)(buf + k * PG);

			if (w[0] == TU_MAGIC && w[1] == tag && w[3] == gen &&
			    tu_check(w, tag, w[2], gen) == -1)
				n++;
		}
	}
	close(fd);
	free(buf);
	return n;
}

/*
 * Flushes and FUA keep their meaning with a write buffer: after fsync() every page
 * written before it is on the backing device (read behind the tier's back) and the
 * buffer holds nothing; an O_DSYNC write (REQ_FUA) is not buffered at all.
 */
TEST_F(log, flush_and_fua)
{
	unsigned long long w0[WB_N], w1[WB_N], ss[SS_N];
	uint32_t gen[64];
	unsigned int k;
	char *buf;
	int fd;

	NEED_TIER();
	buf = page_buf(64);
	ASSERT_NE(NULL, buf);
	for (k = 0; k < 64; k++)
		gen[k] = 3;
	fd = open(self->dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(WB_N, tu_tier_stat(self->c.tier_id, "wb_stat", w0, WB_N));
	ASSERT_EQ(0, write_pages(fd, buf, 31, 0, 64, gen));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(WB_N, tu_tier_stat(self->c.tier_id, "wb_stat", w1, WB_N));
	ASSERT_EQ(SS_N, tu_tier_stat(self->c.tier_id, "seg_stat", ss, SS_N));
	TH_LOG("64 pages: %llu buffered, %llu direct; after fsync %llu held, %llu flush waits",
	       w1[WB_BUFFERED] - w0[WB_BUFFERED], w1[WB_DIRECT] - w0[WB_DIRECT], w1[WB_HELD],
	       w1[WB_FLUSH_WAITS] - w0[WB_FLUSH_WAITS]);
	EXPECT_EQ(64ULL, w1[WB_BUFFERED] - w0[WB_BUFFERED] + w1[WB_DIRECT] - w0[WB_DIRECT]);
	if (!variant->write_buffer_mib) {
		EXPECT_EQ(64ULL, w1[WB_BUFFERED] - w0[WB_BUFFERED]);
	}
	EXPECT_EQ(0ULL, w1[WB_HELD]);
	EXPECT_EQ(64, backing_count(31, 3, ss[SS_BACKING_USED]));
	close(fd);

	/* O_DSYNC: REQ_FUA, written through, on the device when the write returns. */
	fd = open(self->dev, O_RDWR | O_DIRECT | O_DSYNC | O_CLOEXEC);
	ASSERT_LE(0, fd);
	for (k = 0; k < 16; k++)
		gen[k] = 4;
	ASSERT_EQ(WB_N, tu_tier_stat(self->c.tier_id, "wb_stat", w0, WB_N));
	ASSERT_EQ(0, write_pages(fd, buf, 32, 100, 16, gen));
	ASSERT_EQ(WB_N, tu_tier_stat(self->c.tier_id, "wb_stat", w1, WB_N));
	EXPECT_EQ(16ULL, w1[WB_DIRECT] - w0[WB_DIRECT]);
	EXPECT_EQ(0ULL, w1[WB_BUFFERED] - w0[WB_BUFFERED]);
	EXPECT_EQ(16, backing_count(32, 4, ss[SS_BACKING_USED]));
	EXPECT_EQ(-1, read_check(fd, buf, 32, 100, 16, gen));
	close(fd);
	free(buf);
}

#define FULL_WRITERS	4
#define FULL_MIB	4

/* Writes FULL_MIB at once (16 bios of 1 MiB), 4 times, over its own quarter. */
static int full_writer(const char *dev, uint32_t *gen, unsigned int w)
{
	uint64_t first = w * (NSLOTS / FULL_WRITERS), n = FULL_MIB * 256, round;
	char *buf = page_buf(n);
	int fd;

	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (!buf || fd < 0)
		return 2;
	for (round = 0; round < 4; round++) {
		for (uint64_t k = 0; k < n; k++)
			gen[first + k]++;
		if (write_pages(fd, buf, w, first, n, &gen[first]))
			return 3;
		if (read_check(fd, buf, w, first, n, &gen[first]) >= 0)
			return 4;
	}
	close(fd);
	free(buf);
	return 0;
}

/*
 * A full write buffer never stalls a writer: a write that does not fit goes through to
 * the device. With a 1 MiB buffer, four writers of 4 MiB at once: some writes were
 * buffered, some found it full and went direct, every page reads back, and after a
 * flush the buffer is empty.
 */
TEST_F_TIMEOUT(log, buffer_full_goes_direct, 120)
{
	unsigned long long w[WB_N];
	struct tu_param p[4] = { 0 };
	unsigned int i;
	int ret, fd;
	uint64_t s;
	char *buf;

	NEED_TIER();
	/* A tier of its own, with the smallest buffer. */
	ASSERT_EQ(0, tu_tier_destroy(self->ctl, self->c.tier_id));
	self->created = false;
	ASSERT_EQ(0, tu_param_set(&p[0], "max_capacity_mib", "32"));
	ASSERT_EQ(0, tu_param_set(&p[1], "segment_kib", "256"));
	ASSERT_EQ(0, tu_param_set(&p[2], "max_open_segments", "4"));
	ASSERT_EQ(0, tu_param_set(&p[3], "write_buffer_mib", "1"));
	ret = tu_tier_create(self->ctl, tu_backing(), &self->c);
	for (i = 0; i < 4; i++)
		tu_param_restore(&p[i]);
	ASSERT_EQ(0, ret);
	self->created = true;
	snprintf(self->dev, sizeof(self->dev), "/dev/%s%u", PAGETIER_DISK_NAME,
		 self->c.tier_id);
	ASSERT_EQ(0, tu_wait_node(self->dev));

	for (i = 0; i < FULL_WRITERS; i++) {
		self->kid[i] = fork();
		ASSERT_LE(0, self->kid[i]);
		if (!self->kid[i])
			_exit(full_writer(self->dev, self->gen, i));
	}
	for (i = 0; i < FULL_WRITERS; i++)
		EXPECT_EQ(0, tu_wait_exit(&self->kid[i])) TH_LOG("writer %u failed", i);
	ASSERT_EQ(WB_N, tu_tier_stat(self->c.tier_id, "wb_stat", w, WB_N));
	TH_LOG("%llu pages buffered, %llu direct, %llu writes found the buffer full",
	       w[WB_BUFFERED], w[WB_DIRECT], w[WB_FULL]);
	EXPECT_EQ(256ULL, w[WB_MAX]);
	EXPECT_LT(0ULL, w[WB_BUFFERED]);
	EXPECT_LT(0ULL, w[WB_DIRECT]);
	EXPECT_LT(0ULL, w[WB_FULL]);
	EXPECT_EQ((unsigned long long)FULL_WRITERS * FULL_MIB * 256 * 4,
		  w[WB_BUFFERED] + w[WB_DIRECT]);
	fd = open(self->dev, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	ASSERT_EQ(WB_N, tu_tier_stat(self->c.tier_id, "wb_stat", w, WB_N));
	EXPECT_EQ(0ULL, w[WB_HELD]);
	buf = page_buf(FULL_MIB * 256);
	ASSERT_NE(NULL, buf);
	fd = open(self->dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	for (i = 0; i < FULL_WRITERS; i++) {
		s = i * (NSLOTS / FULL_WRITERS);
		EXPECT_EQ(-1, read_check(fd, buf, i, s, FULL_MIB * 256, &self->gen[s]))
			TH_LOG("writer %u's pages", i);
	}
	close(fd);
	free(buf);
}

/* ---- prefetch and the staging cache ---- */

#define PF_PAGES	1024	/* 4 MiB */

/* In a child: join @cg and write @n slots from @first, gen 1, tag 50. */
static int cg_writer(const char *dev, const char *cg, uint64_t first, unsigned int n)
{
	uint32_t gen[64];
	unsigned int i;
	char *buf;
	int fd;

	if (tu_cg_enter(cg))
		return 2;
	buf = mmap(NULL, 64 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (buf == MAP_FAILED || fd < 0)
		return 3;
	for (i = 0; i < 64; i++)
		gen[i] = 1;
	for (i = 0; i < n; i += 64)
		if (write_pages(fd, buf, 50, first + i, 64, gen))
			return 4;
	/* On the device, where prefetch reads (a buffered page is read from memory). */
	if (fsync(fd))
		return 5;
	close(fd);
	return 0;
}

static void setup_cg_pages(struct __test_metadata *_metadata, FIXTURE_DATA(log) *self,
			   uint64_t *id)
{
	char name[64];

	ASSERT_EQ(0, tu_cg_setup_root());
	snprintf(name, sizeof(name), "pagetier-log-pf-%d", getpid());
	ASSERT_EQ(0, tu_cg_create(name, self->cg[0], sizeof(self->cg[0]), id));
	self->kid[0] = fork();
	ASSERT_LE(0, self->kid[0]);
	if (!self->kid[0])
		_exit(cg_writer(self->dev, self->cg[0], 0, PF_PAGES));
	ASSERT_EQ(0, tu_wait_exit(&self->kid[0]));
}

/* Reads slots [0, PF_PAGES) one page at a time; returns the first bad slot or -1. */
static long read_pf_pages(const char *dev, const uint32_t *gen)
{
	char *buf = page_buf(1);
	long bad = -1;
	uint64_t s;
	int fd;

	fd = open(dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (!buf || fd < 0)
		return 0;
	for (s = 0; s < PF_PAGES && bad < 0; s++)
		if (read_check(fd, buf, 50, s, 1, &gen[s]) >= 0)
			bad = s;
	close(fd);
	free(buf);
	return bad;
}

/*
 * PREFETCH with WAIT stages the cgroup's pages; demand reads are then served from the
 * staging cache: the counters say so, and the backing device sees no read.
 */
TEST_F(log, prefetch_staging)
{
	unsigned long long r0[RS_N], r1[RS_N], b0[11], b1[11], hist = 0;
	struct pagetier_cgroup_stat st;
	struct pagetier_prefetch pf;
	uint64_t id, i;

	NEED_TIER();
	setup_cg_pages(_metadata, self, &id);
	for (i = 0; i < PF_PAGES; i++)
		self->gen[i] = 1;

	ASSERT_EQ(0, tu_prefetch(self->ctl, self->c.tier_id, id, 0, PAGETIER_PREFETCH_WAIT, &pf));
	EXPECT_EQ((__u64)PF_PAGES * PG, pf.planned_bytes);
	EXPECT_EQ((__u64)PF_PAGES * PG, pf.staged_bytes);
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r0, RS_N));
	EXPECT_EQ((unsigned long long)PF_PAGES, r0[RS_STAGED]);
	EXPECT_EQ((unsigned long long)PF_PAGES * PG, r0[RS_PF_BYTES]);
	/* 4 MiB in 1 MiB reads at most: 256 KiB segments, one read each. */
	EXPECT_GE((unsigned long long)PF_PAGES / SEG_BLOCKS, r0[RS_PF_IOS]);

	ASSERT_EQ(0, tu_bdev_stat(tu_backing(), b0));
	EXPECT_EQ(-1, read_pf_pages(self->dev, self->gen));
	ASSERT_EQ(0, tu_bdev_stat(tu_backing(), b1));
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r1, RS_N));
	EXPECT_EQ((unsigned long long)PF_PAGES, r1[RS_HITS] - r0[RS_HITS]);
	EXPECT_EQ(0ULL, r1[RS_MISSES] - r0[RS_MISSES]);
	EXPECT_EQ(0ULL, r1[RS_STAGED]);
	EXPECT_EQ(0ULL, b1[0] - b0[0]) TH_LOG("the backing device was read");
	EXPECT_EQ((unsigned long long)PF_PAGES, r1[RS_READS] - r0[RS_READS]);

	/* Exclusive: read again, they come from the device. */
	EXPECT_EQ(-1, read_pf_pages(self->dev, self->gen));
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r0, RS_N));
	EXPECT_EQ((unsigned long long)PF_PAGES, r0[RS_MISSES] - r1[RS_MISSES]);

	ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->c.tier_id, id, &st));
	EXPECT_EQ((__u64)PF_PAGES, st.staging_hits);
	EXPECT_EQ((__u64)PF_PAGES, st.staging_misses);
	EXPECT_EQ((__u64)PF_PAGES * PG, st.prefetch_bytes);
	EXPECT_EQ((__u64)2 * PF_PAGES, st.demand_reads);
	EXPECT_EQ((__u64)2 * PF_PAGES, st.demand_read_pages);
	EXPECT_EQ(0ULL, st.staged_pages);
	EXPECT_LT(0ULL, st.demand_read_ns);
	EXPECT_EQ((__u64)PF_PAGES / SEG_BLOCKS, st.segments);
	for (i = 0; i < PAGETIER_LAT_BUCKETS; i++)
		hist += st.read_latency[i];
	EXPECT_EQ(st.demand_reads, hist);

	/* A budget plans whole segments up to it. */
	ASSERT_EQ(0, tu_prefetch(self->ctl, self->c.tier_id, id, 300 << 10, 0, &pf));
	EXPECT_EQ((__u64)2 * SEG_BLOCKS * PG, pf.planned_bytes);
}

/*
 * PREFETCH_NEWEST with a budget stages the segments written last (the daemon's offload
 * at idle comes after the cold pages offloaded earlier): reading the newest two
 * segments' slots hits the cache, the oldest ones miss.
 */
TEST_F(log, prefetch_newest_first)
{
	unsigned long long r0[RS_N], r1[RS_N];
	struct pagetier_prefetch pf;
	char *buf = page_buf(1);
	uint64_t id, s, first_new = PF_PAGES - 2 * SEG_BLOCKS;
	int fd;

	NEED_TIER();
	ASSERT_NE(NULL, buf);
	setup_cg_pages(_metadata, self, &id);
	for (s = 0; s < PF_PAGES; s++)
		self->gen[s] = 1;
	/* 300 KiB plans whole segments: the newest two. */
	ASSERT_EQ(0, tu_prefetch(self->ctl, self->c.tier_id, id, 300 << 10,
				 PAGETIER_PREFETCH_WAIT | PAGETIER_PREFETCH_NEWEST, &pf));
	EXPECT_EQ((__u64)2 * SEG_BLOCKS * PG, pf.planned_bytes);
	EXPECT_EQ((__u64)2 * SEG_BLOCKS * PG, pf.staged_bytes);

	fd = open(self->dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r0, RS_N));
	for (s = first_new; s < PF_PAGES; s++)
		ASSERT_GT(0, read_check(fd, buf, 50, s, 1, &self->gen[s])) TH_LOG("slot %llu",
			(unsigned long long)s);
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r1, RS_N));
	EXPECT_EQ(2ULL * SEG_BLOCKS, r1[RS_HITS] - r0[RS_HITS]);
	EXPECT_EQ(0ULL, r1[RS_MISSES] - r0[RS_MISSES]);
	for (s = 0; s < SEG_BLOCKS; s++)
		ASSERT_GT(0, read_check(fd, buf, 50, s, 1, &self->gen[s]));
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r0, RS_N));
	EXPECT_EQ((unsigned long long)SEG_BLOCKS, r0[RS_MISSES] - r1[RS_MISSES]);
	EXPECT_EQ(0ULL, r0[RS_HITS] - r1[RS_HITS]);
	close(fd);
	free(buf);
}

/*
 * PREFETCH without WAIT, then reads at once: each read takes its page from the cache,
 * waits for the prefetch read in flight, or (demand wins) reads it from the device and
 * takes its segment out of the plan. Every page comes back right, counted once.
 */
TEST_F(log, prefetch_then_demand)
{
	unsigned long long r0[RS_N], r1[RS_N];
	struct pagetier_prefetch pf;
	uint64_t id, i;

	NEED_TIER();
	setup_cg_pages(_metadata, self, &id);
	for (i = 0; i < PF_PAGES; i++)
		self->gen[i] = 1;
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r0, RS_N));
	ASSERT_EQ(0, tu_prefetch(self->ctl, self->c.tier_id, id, 0, 0, &pf));
	EXPECT_EQ(-1, read_pf_pages(self->dev, self->gen));
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r1, RS_N));
	TH_LOG("hits %llu misses %llu; %llu prefetch reads, %llu segments preempted",
	       r1[RS_HITS] - r0[RS_HITS], r1[RS_MISSES] - r0[RS_MISSES],
	       r1[RS_PF_IOS] - r0[RS_PF_IOS], r1[RS_PREEMPTED] - r0[RS_PREEMPTED]);
	EXPECT_EQ((unsigned long long)PF_PAGES,
		  r1[RS_HITS] - r0[RS_HITS] + r1[RS_MISSES] - r0[RS_MISSES]);
	/* Each of the 16 segments was read by prefetch or preempted by a demand read. */
	EXPECT_LE((unsigned long long)PF_PAGES / SEG_BLOCKS,
		  r1[RS_PF_IOS] - r0[RS_PF_IOS] + r1[RS_PREEMPTED] - r0[RS_PREEMPTED]);
	/* Nothing is left planned or staged once everything was read. */
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r1, RS_N));
	EXPECT_EQ(0ULL, r1[RS_STAGED]);
}

/* A staged page whose slot is written or discarded is never returned. */
TEST_F(log, prefetch_invalidation)
{
	unsigned long long r[RS_N];
	struct pagetier_prefetch pf;
	uint32_t g2[8] = { 2, 2, 2, 2, 2, 2, 2, 2 };
	char *buf;
	uint64_t id, i;
	int fd;

	NEED_TIER();
	setup_cg_pages(_metadata, self, &id);
	for (i = 0; i < PF_PAGES; i++)
		self->gen[i] = 1;
	ASSERT_EQ(0, tu_prefetch(self->ctl, self->c.tier_id, id, 0, PAGETIER_PREFETCH_WAIT, &pf));
	ASSERT_EQ((__u64)PF_PAGES * PG, pf.staged_bytes);
	buf = page_buf(8);
	ASSERT_NE(NULL, buf);
	fd = open(self->dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	/* Rewrite 8 slots (as another writer), discard 8 others. */
	ASSERT_EQ(0, write_pages(fd, buf, 50, 16, 8, g2));
	for (i = 16; i < 24; i++)
		self->gen[i] = 2;
	ASSERT_EQ(0, discard(fd, 40, 8));
	for (i = 40; i < 48; i++)
		self->gen[i] = 0;
	close(fd);
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r, RS_N));
	EXPECT_EQ((unsigned long long)PF_PAGES - 16, r[RS_STAGED]);
	EXPECT_EQ(-1, read_pf_pages(self->dev, self->gen));
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r, RS_N));
	EXPECT_EQ(0ULL, r[RS_STAGED]);
	free(buf);
}

/* Sizes, flags, ids and privilege of PREFETCH and EVENTS; the feature bits. */
TEST_F(log, prefetch_ioctl_validation)
{
	struct pagetier_version v = { .size = sizeof(v) };
	struct {
		struct pagetier_prefetch p;
		__u64 future[2];
	} big;
	unsigned long big_cmd = _IOC(_IOC_READ | _IOC_WRITE, PAGETIER_IOC_MAGIC,
				     _IOC_NR(PAGETIER_IOC_PREFETCH), sizeof(big));
	struct pagetier_prefetch pf;
	struct pagetier_events ev;
	uint64_t self_id = tu_self_cgroup_id();
	pid_t pid;
	int st;

	NEED_TIER();
	ASSERT_EQ(0, tu_ioctl(self->ctl, PAGETIER_IOC_VERSION, &v));
	EXPECT_EQ(PAGETIER_FEAT_LOG | PAGETIER_FEAT_PREFETCH | PAGETIER_FEAT_EVENTS |
		  PAGETIER_FEAT_TIER_STATS,
		  v.features & (PAGETIER_FEAT_LOG | PAGETIER_FEAT_PREFETCH |
				PAGETIER_FEAT_EVENTS | PAGETIER_FEAT_TIER_STATS));

	/* Nothing stored yet: no cgroup is known. */
	EXPECT_EQ(-ENOENT, tu_prefetch(self->ctl, self->c.tier_id, self_id, 0, 0, &pf));
	EXPECT_EQ(-ENOENT, tu_prefetch(self->ctl, 4242, self_id, 0, 0, &pf));
	EXPECT_EQ(-ENOENT, tu_prefetch(self->ctl, self->c.tier_id, 0xdeadbeef, 0, 0, &pf));
	EXPECT_EQ(-EINVAL, tu_prefetch(self->ctl, self->c.tier_id, self_id, 0, 4, &pf));
	memset(&pf, 0, sizeof(pf));
	pf.size = sizeof(pf);
	pf.tier_id = self->c.tier_id;
	pf.reserved = 1;
	EXPECT_EQ(-EINVAL, tu_ioctl(self->ctl, PAGETIER_IOC_PREFETCH, &pf));
	pf.reserved = 0;
	pf.size = 16;
	EXPECT_EQ(-EINVAL, tu_ioctl(self->ctl, PAGETIER_IOC_PREFETCH, &pf));
	memset(&big, 0, sizeof(big));
	big.p.size = sizeof(big);
	big.p.tier_id = 4242;
	EXPECT_EQ(-ENOENT, tu_ioctl(self->ctl, big_cmd, &big));
	big.future[1] = 1;
	EXPECT_EQ(-E2BIG, tu_ioctl(self->ctl, big_cmd, &big));

	memset(&ev, 0, sizeof(ev));
	ev.size = sizeof(ev);
	ev.flags = 1;
	EXPECT_EQ(-EINVAL, tu_ioctl(self->ctl, PAGETIER_IOC_EVENTS, &ev));
	ev.flags = 0;
	ev.size = 8;
	EXPECT_EQ(-EINVAL, tu_ioctl(self->ctl, PAGETIER_IOC_EVENTS, &ev));

	/* Without CAP_SYS_ADMIN: EPERM, on the descriptor root opened. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(2);
		if (tu_prefetch(self->ctl, self->c.tier_id, self_id, 0, 0, &pf) != -EPERM)
			_exit(3);
		memset(&ev, 0, sizeof(ev));
		ev.size = sizeof(ev);
		if (tu_ioctl(self->ctl, PAGETIER_IOC_EVENTS, &ev) != -EPERM)
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("status %d", st);
}

/* ---- swap: offload, then PREFETCH + MADV_WILLNEED ---- */

#define SWAP_PAGES	(16 * 256UL)	/* 16 MiB */

/*
 * In a child: join @cg, fill SWAP_PAGES, page them out, report how many left; after a
 * byte on @go, MADV_WILLNEED then check every byte.
 */
static int swap_child(const char *cg, int report, int go)
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
		tu_fill(mem + i * PG, 77, i, 1);
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
	if (madvise(mem, SWAP_PAGES * PG, MADV_WILLNEED))
		return 7;
	for (i = 0; i < SWAP_PAGES; i++)
		bad += tu_check(mem + i * PG, 77, i, 1) != -1;
	return bad ? 1 : 0;
}

TEST_F_TIMEOUT(log, swap_prefetch_willneed, 240)
{
	unsigned long long r0[RS_N], r1[RS_N], b0[11], b1[11], w0[WB_N], w1[WB_N];
	struct pagetier_cgroup_stat st;
	struct pagetier_prefetch pf;
	int report[2], go[2];
	char name[64], buf[4096], cmd[PATH_MAX];
	long swapped;

	NEED_TIER();
	ASSERT_EQ(0, tu_read_file("/proc/swaps", buf, sizeof(buf)));
	if (strchr(buf, '\n') != strrchr(buf, '\n'))
		SKIP(return, "another swap device is active");
	if (!tu_read_file("/sys/module/zswap/parameters/enabled", buf, sizeof(buf)) &&
	    buf[0] == 'Y') {
		ASSERT_EQ(0, tu_write_file("/sys/module/zswap/parameters/enabled", "N"));
		self->zswap_was_on = true;
	}
	ASSERT_EQ(0, tu_cg_setup_root());
	snprintf(name, sizeof(name), "pagetier-log-swap-%d", getpid());
	ASSERT_EQ(0, tu_cg_create(name, self->cg[0], sizeof(self->cg[0]), &self->cgid[0]));
	snprintf(cmd, sizeof(cmd), "mkswap -q %s >/dev/null && swapon --discard=pages -p 32767 %s",
		 self->dev, self->dev);
	ASSERT_EQ(0, system(cmd));
	self->swapped_on = true;

	ASSERT_EQ(0, pipe(report));
	ASSERT_EQ(0, pipe(go));
	self->kid[0] = fork();
	ASSERT_LE(0, self->kid[0]);
	if (!self->kid[0])
		_exit(swap_child(self->cg[0], report[1], go[0]));
	close(report[1]);
	close(go[0]);
	ASSERT_EQ((ssize_t)sizeof(swapped), read(report[0], &swapped, sizeof(swapped)));
	TH_LOG("%ld of %lu pages swapped out", swapped, SWAP_PAGES);
	ASSERT_LE((long)SWAP_PAGES / 2, swapped);
	TH_LOG("memory.current %lld after reclaim", tu_cg_reclaim(self->cg[0], 1 << 20));

	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r0, RS_N));
	ASSERT_EQ(WB_N, tu_tier_stat(self->c.tier_id, "wb_stat", w0, WB_N));
	ASSERT_EQ(0, tu_bdev_stat(tu_backing(), b0));
	ASSERT_EQ(0, tu_prefetch(self->ctl, self->c.tier_id, self->cgid[0], 0, 0, &pf));
	TH_LOG("prefetch planned %llu MiB", (unsigned long long)pf.planned_bytes >> 20);
	EXPECT_LE((__u64)swapped * PG, pf.planned_bytes);
	ASSERT_EQ(1, write(go[1], "g", 1));
	close(go[1]);
	EXPECT_EQ(0, tu_wait_exit(&self->kid[0])) TH_LOG("data mismatch after swap-in");
	close(report[0]);
	ASSERT_EQ(RS_N, tu_tier_stat(self->c.tier_id, "read_stat", r1, RS_N));
	ASSERT_EQ(0, tu_bdev_stat(tu_backing(), b1));
	ASSERT_EQ(0, tu_cgroup_stat(self->ctl, self->c.tier_id, self->cgid[0], &st));
	TH_LOG("swap-in: %llu demand reads, %llu staging hits, %llu misses, %llu segments preempted; backing device: %llu reads of %llu KiB",
	       r1[RS_READS] - r0[RS_READS], r1[RS_HITS] - r0[RS_HITS],
	       r1[RS_MISSES] - r0[RS_MISSES], r1[RS_PREEMPTED] - r0[RS_PREEMPTED],
	       b1[0] - b0[0], (b1[2] - b0[2]) / 2);
	ASSERT_EQ(WB_N, tu_tier_stat(self->c.tier_id, "wb_stat", w1, WB_N));
	/* Every page came from the cache, the device or the write buffer, once. */
	EXPECT_LE((unsigned long long)swapped,
		  r1[RS_HITS] - r0[RS_HITS] + r1[RS_MISSES] - r0[RS_MISSES] +
		  w1[WB_HITS] - w0[WB_HITS]);
	EXPECT_EQ(st.staging_hits + st.staging_misses + st.buffer_hits, st.demand_read_pages);
	/* Large reads either way: far fewer than one per page. */
	EXPECT_GE((unsigned long long)swapped / 16, b1[0] - b0[0]);
}

TEST_HARNESS_MAIN
