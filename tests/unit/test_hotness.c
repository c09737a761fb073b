// SPDX-License-Identifier: GPL-2.0
/* The per-context hotness state: scans into the MQ model, cold chunks, wake set, quality. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/mman.h>
#include <sys/wait.h>

#include "cgroup.h"
#include "hotness.h"
#include "scanner.h"

#define CHUNK (1ULL << PT_HOT_DEF_CHUNK_SHIFT)
#define BASE 0x7f0000000000ULL
#define NCHUNKS 100

/* A scan of one process with NCHUNKS resident chunks; @hot(i) says which were accessed. */
static void scan_one(struct pt_hot *h, pid_t pid, bool (*hot)(int i, void *arg), void *arg)
{
	struct pt_proc_scan ps = { .pid = pid };

	ps.chunks = calloc(NCHUNKS, sizeof(*ps.chunks));
	assert_non_null(ps.chunks);
	ps.n = NCHUNKS;
	for (int i = 0; i < NCHUNKS; i++) {
		ps.chunks[i].addr = BASE + (uint64_t)i * CHUNK;
		ps.chunks[i].present = 16;
		ps.chunks[i].accessed = hot(i, arg) ? 16 : 0;
	}
	assert_true(pt_hot_apply_scans(h, &ps, 1) >= 0);
	pt_proc_scan_free(&ps);
}

static bool first_ten(int i, void *arg)
{
	(void)arg;
	return i < 10;
}

static bool all(int i, void *arg)
{
	(void)i;
	(void)arg;
	return true;
}

static bool only(int i, void *arg)
{
	return i == *(int *)arg;
}

static void test_cold_chunks_after_epochs(void **state)
{
	struct pt_hot h;
	uint64_t ids[NCHUNKS];
	int n;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	scan_one(&h, 42, all, NULL);		/* everything used once */
	scan_one(&h, 42, first_ten, NULL);
	/* One epoch without access is not yet cold with cold_epochs = 2. */
	n = pt_hot_cold_chunks(&h, 2, ids, NCHUNKS);
	assert_int_equal(n, 0);
	scan_one(&h, 42, first_ten, NULL);
	n = pt_hot_cold_chunks(&h, 2, ids, NCHUNKS);
	/* The 90 untouched chunks: 22 of them share a 2 MiB region with the hot ten. */
	assert_int_equal(n, NCHUNKS - 10);
	for (int i = 0; i < n; i++) {
		int slot;
		uint64_t addr;

		pt_hot_chunk_addr(&h, ids[i], &slot, &addr);
		assert_true(addr >= BASE + 10 * CHUNK && addr < BASE + NCHUNKS * CHUNK);
		assert_int_equal(h.pids[slot], 42);
	}
	pt_hot_free(&h);
}

static bool first_thirty(int i, void *arg)
{
	(void)arg;
	return i < 30;
}

/*
 * Chunks 0-29 hot: chunks 30 and 31 are cold but only 32 pages of the first 2 MiB region
 * (chunks 0-31): khugepaged would swap them back in to collapse it, so they stay.
 */
static void test_cold_regions_leave_whole(void **state)
{
	struct pt_hot h;
	uint64_t ids[NCHUNKS];
	int n;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	scan_one(&h, 42, all, NULL);
	for (int e = 0; e < 3; e++)
		scan_one(&h, 42, first_thirty, NULL);
	n = pt_hot_cold_chunks(&h, 2, ids, NCHUNKS);
	/* BASE is 2 MiB aligned: chunks 32-99 are in regions with no hot chunk. */
	assert_int_equal(n, NCHUNKS - 32);
	for (int i = 0; i < n; i++) {
		int slot;
		uint64_t addr;

		pt_hot_chunk_addr(&h, ids[i], &slot, &addr);
		assert_true(addr >= BASE + 32 * CHUNK);
	}
	pt_hot_free(&h);
}

static void test_ranges_merge_adjacent(void **state)
{
	struct pt_hot h;
	struct pt_proc_ranges *pr;
	uint64_t ids[NCHUNKS];
	int n, np;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	scan_one(&h, 7, all, NULL);
	scan_one(&h, 7, first_ten, NULL);
	scan_one(&h, 7, first_ten, NULL);
	n = pt_hot_cold_chunks(&h, 2, ids, NCHUNKS);
	assert_int_equal(n, NCHUNKS - 10);
	/* Sort so the chunks are adjacent in address order: one range. */
	n = NCHUNKS - 32;
	for (int i = 0; i < n; i++)
		ids[i] = pt_hot_chunk_id(&h, 0, BASE + (uint64_t)(32 + i) * CHUNK);
	np = pt_hot_ranges(&h, ids, (size_t)n, &pr);
	assert_int_equal(np, 1);
	assert_int_equal(pr[0].pid, 7);
	assert_int_equal(pr[0].n, 1);
	assert_true(pr[0].r[0].start == BASE + 32 * CHUNK);
	assert_true(pr[0].r[0].len == (NCHUNKS - 32) * CHUNK);
	pt_proc_ranges_free(&pr[0]);
	free(pr);
	pt_hot_free(&h);
}

/*
 * Scans of the first ten chunks until @chunk is among the cold ones at a threshold of 2
 * epochs (at most 2 * PT_HOT_REFAULT_COLD_MULT + 1).
 */
static int scans_until_cold(struct pt_hot *h, int chunk)
{
	uint64_t id = pt_hot_chunk_id(h, 0, BASE + (uint64_t)chunk * CHUNK), ids[NCHUNKS];
	int e = 0;

	while (e++ < 2 * PT_HOT_REFAULT_COLD_MULT) {
		int n;

		scan_one(h, 1, first_ten, NULL);
		n = pt_hot_cold_chunks(h, 2, ids, NCHUNKS);
		for (int i = 0; i < n; i++)
			if (ids[i] == id)
				return e;
	}
	return e;
}

static void test_refault_and_wake_set(void **state)
{
	struct pt_hot h;
	uint64_t ids[NCHUNKS];
	int n, fifty = 50;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	scan_one(&h, 1, all, NULL);
	for (int e = 0; e < 3; e++)
		scan_one(&h, 1, first_ten, NULL);
	assert_int_equal(pt_hot_cold_backoff(&h, 2), 2);	/* as the daemon does: the threshold */
	n = pt_hot_cold_chunks(&h, 2, ids, NCHUNKS);
	assert_int_equal(n, NCHUNKS - 10);
	pt_hot_evicted(&h, ids, (size_t)n);	/* offloaded while active */
	/* Chunk 50 was cold but is used again: a refault, remembered for the wake set. */
	scan_one(&h, 1, only, &fifty);
	assert_int_equal(h.refaults, 1);
	/*
	 * It came back within the threshold it had passed, once: no period yet (a one-off
	 * read of everything, as redis' SAVE), so it may leave after the plain threshold
	 * (accessed in epoch E, cold once E + 2 < now: 2 scans). Offloaded again and back
	 * within the threshold a second time: a period; it now waits
	 * PT_HOT_REFAULT_COLD_MULT times the threshold before it may leave again (16 scans).
	 * The others leave after the threshold as before.
	 */
	assert_int_equal(scans_until_cold(&h, 50), 2);
	{
		uint64_t id50 = pt_hot_chunk_id(&h, 0, BASE + 50 * CHUNK);

		pt_hot_evicted(&h, &id50, 1);
	}
	scan_one(&h, 1, only, &fifty);
	assert_int_equal(h.refaults, 2);
	assert_int_equal(scans_until_cold(&h, 50), 2 * PT_HOT_REFAULT_COLD_MULT);
	/*
	 * Chunk 60 left with the others and comes back only now, long after the threshold:
	 * a good offload, read once; it may leave again after the plain threshold.
	 */
	{
		int sixty = 60;

		scan_one(&h, 1, only, &sixty);
		assert_int_equal(h.refaults, 3);
		assert_int_equal(scans_until_cold(&h, 60), 2);
	}
	/* Idle: the wake set is what was used recently, plus the refaulted chunks. */
	n = pt_hot_record_wake_set(&h, pt_hot_now(&h) - 1, 30, false);
	assert_int_equal(n, 12);
	{
		bool has50 = false;

		for (size_t i = 0; i < h.n_wake_set; i++)
			has50 |= h.wake_set[i] == pt_hot_chunk_id(&h, 0, BASE + 50 * CHUNK);
		assert_true(has50);
	}
	pt_hot_free(&h);
}

static void test_precision_recall(void **state)
{
	struct pt_hot h;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	scan_one(&h, 3, all, NULL);
	scan_one(&h, 3, first_ten, NULL);
	/* the ten hot chunks of the last epoch */
	assert_int_equal(pt_hot_record_wake_set(&h, pt_hot_now(&h) - 1, 0, false), 10);
	pt_hot_evict_all(&h, 0);
	pt_hot_prefetched(&h, 2);
	assert_true(h.precision < 0 && h.recall < 0);		/* nothing measured yet */
	/* After the wake the same ten chunks are used, plus ten more: 100% / 50%. */
	scan_one(&h, 3, first_ten, NULL);
	{
		struct pt_proc_scan ps = { .pid = 3 };

		ps.chunks = calloc(20, sizeof(*ps.chunks));
		ps.n = 20;
		for (int i = 0; i < 20; i++) {
			ps.chunks[i].addr = BASE + (uint64_t)i * CHUNK;
			ps.chunks[i].present = ps.chunks[i].accessed = 1;
		}
		pt_hot_apply_scans(&h, &ps, 1);
		pt_proc_scan_free(&ps);
	}
	assert_true(h.precision > 0.999 && h.precision < 1.001);
	assert_true(h.recall > 0.499 && h.recall < 0.501);
	assert_int_equal(h.unused_prefetched, 0);
	/* Prefetched chunks touched after the wake are hits; the ten others are refaults. */
	assert_int_equal(h.refaults, 10);
	pt_hot_free(&h);
}

static void test_idle_closes_window(void **state)
{
	struct pt_hot h;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	scan_one(&h, 3, first_ten, NULL);
	/* Used in one epoch only (a bulk load): not worth prefetching. */
	assert_int_equal(pt_hot_record_wake_set(&h, pt_hot_now(&h) - 1, 0, false), 0);
	scan_one(&h, 3, first_ten, NULL);
	assert_int_equal(pt_hot_record_wake_set(&h, pt_hot_now(&h) - 1, 0, false), 10);
	pt_hot_evict_all(&h, 0);
	pt_hot_prefetched(&h, 10);
	scan_one(&h, 3, first_ten, NULL);		/* one epoch of the ten */
	assert_true(h.precision < 0);
	pt_hot_record_wake_set(&h, pt_hot_now(&h) - 1, 0, false);	/* idle again: measured so far */
	assert_true(h.precision > 0.999 && h.recall > 0.999);
	assert_int_equal(h.unused_prefetched, 0);
	pt_hot_free(&h);
}

static bool first_three(int i, void *arg)
{
	(void)arg;
	return i < 3;
}

static bool window_of_ten(int i, void *arg)
{
	int from = *(int *)arg;

	return i >= from && i < from + 10;
}

/* Fresh accesses: chunks not accessed in the PT_HOT_FRESH_EPOCHS before. */
static void test_fresh_accesses(void **state)
{
	struct pt_hot h;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	/* The first scan after tracking begins: everything it sees accessed is fresh. */
	scan_one(&h, 4, all, NULL);
	assert_int_equal(h.ep_accessed, NCHUNKS);
	assert_int_equal(h.ep_fresh, NCHUNKS);
	/* Timers: the same three chunks every epoch, none fresh. */
	for (int e = 0; e < 20; e++) {
		scan_one(&h, 4, first_three, NULL);
		assert_int_equal(h.ep_accessed, 3);
		assert_int_equal(h.ep_fresh, 0);
	}
	/* Serving: a sliding window of ten chunks, mostly ones untouched for a while. */
	for (int from = 10; from < 80; from += 10) {
		scan_one(&h, 4, window_of_ten, &from);
		assert_int_equal(h.ep_accessed, 10);
		assert_int_equal(h.ep_fresh, 10);
	}
	/* A chunk touched every few epochs (a slower timer) is not fresh. */
	{
		int c = 90;

		scan_one(&h, 4, only, &c);
		assert_int_equal(h.ep_fresh, 1);
		for (int e = 0; e < 3; e++)
			scan_one(&h, 4, first_three, NULL);
		scan_one(&h, 4, only, &c);
		assert_int_equal(h.ep_fresh, 0);
	}
	pt_hot_free(&h);
}

/* At idle: what it used while quiet stays (keep set); what it used working is the wake set. */
static void test_keep_set_and_wake_set(void **state)
{
	struct pt_hot h;
	uint64_t *keep = NULL, busy, ids[NCHUNKS];
	struct pt_mq_stats st;
	int n, from = 40;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	scan_one(&h, 6, all, NULL);
	scan_one(&h, 6, window_of_ten, &from);		/* serving chunks 40-49 */
	busy = pt_hot_now(&h) - 1;
	for (int e = 0; e < 5; e++)			/* quiet: timers on 0-2 */
		scan_one(&h, 6, first_three, NULL);
	n = pt_hot_keep_set(&h, busy + 1, &keep);
	assert_int_equal(n, 3);
	for (int i = 0; i < n; i++) {
		int slot;
		uint64_t addr;

		pt_hot_chunk_addr(&h, keep[i], &slot, &addr);
		assert_true(addr < BASE + 3 * CHUNK);
	}
	free(keep);
	/* The wake set: the serving chunks; the timers' stay resident and are not in it. */
	n = pt_hot_record_wake_set(&h, busy, 0, false);
	assert_int_equal(n, 10);
	for (size_t i = 0; i < h.n_wake_set; i++) {
		int slot;
		uint64_t addr;

		pt_hot_chunk_addr(&h, h.wake_set[i], &slot, &addr);
		assert_true(addr >= BASE + 40 * CHUNK && addr < BASE + 50 * CHUNK);
	}
	/* Offload at idle: everything but the keep set goes to history. */
	pt_hot_evict_all(&h, busy + 1);
	pt_mq_get_stats(h.mq, &st);
	assert_int_equal(st.resident, 3);
	assert_int_equal(st.history, NCHUNKS - 3);
	/* Nothing quiet: an empty keep set. */
	assert_int_equal(pt_hot_keep_set(&h, pt_hot_now(&h), &keep), 0);
	assert_null(keep);
	(void)ids;
	pt_hot_free(&h);
}

/* Whether chunk @i of the scans is in the recorded wake set. */
static bool in_wake_set(const struct pt_hot *h, int i)
{
	for (size_t k = 0; k < h->n_wake_set; k++)
		if (h->wake_set[k] == pt_hot_chunk_id(h, 0, BASE + (uint64_t)i * CHUNK))
			return true;
	return false;
}

/*
 * A busy period of the container's own background (timers after its idle offload) adds
 * to the wake set; one of requests replaces it.
 */
static void test_background_busy_keeps_wake_set(void **state)
{
	struct pt_hot h;
	uint64_t busy;
	int from = 40, c45 = 45;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	scan_one(&h, 6, all, NULL);
	scan_one(&h, 6, window_of_ten, &from);		/* serving chunks 40-49 */
	scan_one(&h, 6, window_of_ten, &from);
	assert_int_equal(pt_hot_record_wake_set(&h, pt_hot_now(&h) - 1, 1, false), 10);
	pt_hot_evict_all(&h, pt_hot_now(&h));
	/* Its timers wake it and touch 0-2 for two epochs; idle again. */
	scan_one(&h, 6, first_three, NULL);
	scan_one(&h, 6, first_three, NULL);
	busy = pt_hot_now(&h) - 1;
	/* Background: the timers' chunks first, then the set before. */
	assert_int_equal(pt_hot_record_wake_set(&h, busy, 1, true), 13);
	for (size_t k = 0; k < 3; k++) {
		int slot;
		uint64_t addr;

		pt_hot_chunk_addr(&h, h.wake_set[k], &slot, &addr);
		assert_true(addr < BASE + 3 * CHUNK);
	}
	for (int i = 40; i < 50; i++)
		assert_true(in_wake_set(&h, i));
	/* Recorded again: no chunk twice. */
	assert_int_equal(pt_hot_record_wake_set(&h, busy, 1, true), 13);
	/* One of them used while quiet since: it stays resident, out of the set. */
	scan_one(&h, 6, only, &c45);
	assert_int_equal(pt_hot_record_wake_set(&h, busy, 1, true), 12);
	assert_false(in_wake_set(&h, 45));
	/* Requests: the set is what they used; the one before is gone. */
	assert_int_equal(pt_hot_record_wake_set(&h, busy, 1, false), 3);
	assert_false(in_wake_set(&h, 40));
	pt_hot_free(&h);
}

/* Cold means unused for N epochs: the model's demotions do not count as accesses. */
static void test_cold_by_last_access(void **state)
{
	struct pt_hot h;
	uint64_t ids[NCHUNKS];

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	/* Hot for a while: chunks 32-99 climb to high queues. */
	for (int e = 0; e < 40; e++)
		scan_one(&h, 8, all, NULL);
	/* Then 100 epochs of only the first three: demotions run all along. */
	for (int e = 0; e < 100; e++)
		scan_one(&h, 8, first_three, NULL);
	assert_int_equal(pt_hot_cold_chunks(&h, 100, ids, NCHUNKS), NCHUNKS - 3);
	assert_int_equal(pt_hot_cold_chunks(&h, 101, ids, NCHUNKS), 0);
	pt_hot_free(&h);
}

/* Offloads everything resident, then has it all come back: one epoch of churn. */
static void churn(struct pt_hot *h)
{
	uint64_t ids[NCHUNKS];
	int n = pt_hot_cold_chunks(h, 0, ids, NCHUNKS);

	pt_hot_evicted(h, ids, (size_t)n);
	scan_one(h, 5, all, NULL);
}

static void test_backoff_on_refaults(void **state)
{
	struct pt_hot h;
	int one = 1;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	scan_one(&h, 5, all, NULL);
	assert_int_equal(pt_hot_cold_backoff(&h, 2), 2);	/* no refaults: as configured */
	for (int e = 0; e < 6; e++)
		churn(&h);
	assert_true(h.refaults > 0);
	/* Doubles at most once per cold_epochs (2): the refaults of a step come after it. */
	assert_int_equal(pt_hot_cold_backoff(&h, 2), 4);
	assert_int_equal(pt_hot_cold_backoff(&h, 2), 4);
	churn(&h);
	assert_int_equal(pt_hot_cold_backoff(&h, 2), 4);
	churn(&h);
	assert_int_equal(pt_hot_cold_backoff(&h, 2), 8);
	for (int e = 0; e < 4; e++)
		churn(&h);
	assert_int_equal(pt_hot_cold_backoff(&h, 2), 16);
	for (int e = 0; e < 4; e++)
		churn(&h);
	assert_int_equal(pt_hot_cold_backoff(&h, 2), 16);	/* capped at 8x */
	/* Refaults stop: back to as configured once their smoothed rate has decayed. */
	for (int e = 0; e < 60; e++)
		scan_one(&h, 5, all, NULL);
	assert_int_equal(pt_hot_cold_backoff(&h, 2), 2);
	pt_hot_free(&h);

	/* A chunk now and then coming back is noise, not a verdict. */
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	scan_one(&h, 5, all, NULL);
	{
		uint64_t id = pt_hot_chunk_id(&h, 0, BASE + CHUNK);

		pt_hot_evicted(&h, &id, 1);
	}
	scan_one(&h, 5, only, &one);
	assert_int_equal(h.refaults, 1);
	for (int e = 0; e < 10; e++) {
		scan_one(&h, 5, first_three, NULL);
		assert_int_equal(pt_hot_cold_backoff(&h, 2), 2);
	}
	pt_hot_free(&h);
}

/* A pid seen again with another start time is another process: its chunks are not the old one's. */
static void test_reused_pid_is_another_process(void **state)
{
	struct pt_hot h;
	struct pt_proc_scan ps = { .pid = 77, .start = 1000 };
	struct pt_proc_ranges *pr;
	struct pt_mq_stats st;
	uint64_t id;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	ps.chunks = calloc(1, sizeof(*ps.chunks));
	ps.n = 1;
	ps.chunks[0].addr = BASE;
	ps.chunks[0].present = ps.chunks[0].accessed = 16;
	assert_true(pt_hot_apply_scans(&h, &ps, 1) >= 0);
	id = pt_hot_chunk_id(&h, 0, BASE);
	assert_int_equal(pt_hot_ranges(&h, &id, 1, &pr), 1);
	assert_int_equal(pr[0].pid, 77);
	assert_int_equal(pr[0].start, 1000);	/* the advice will check it is still that one */
	pt_proc_ranges_free(&pr[0]);
	free(pr);
	/* Same pid, later start: the model forgets the old process's chunk. */
	ps.start = 2000;
	ps.chunks[0].addr = BASE + 4 * CHUNK;
	assert_true(pt_hot_apply_scans(&h, &ps, 1) >= 0);
	pt_mq_get_stats(h.mq, &st);
	assert_int_equal(st.resident, 1);
	assert_int_equal(h.starts[0], 2000);
	pt_proc_scan_free(&ps);
	pt_hot_free(&h);
}

static void test_exited_process_forgotten(void **state)
{
	struct pt_hot h;
	struct pt_mq_stats st;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	scan_one(&h, 99, all, NULL);
	pt_mq_get_stats(h.mq, &st);
	assert_int_equal(st.resident, NCHUNKS);
	assert_int_equal(pt_hot_apply_scans(&h, NULL, 0), 0);	/* pid 99 is gone */
	pt_mq_get_stats(h.mq, &st);
	assert_int_equal(st.resident, 0);
	assert_int_equal(h.pids[0], 0);
	pt_hot_free(&h);
}

/*
 * The model keeps the pidfd of each process's latest scan; the ranges it makes carry their
 * own duplicate (a job may advise after the slot is gone), and the slot's closes when the
 * process no longer shows up.
 */
static void test_pidfd_kept_with_the_slot(void **state)
{
	struct pt_proc_scan ps = { .pid = getpid() };
	struct pt_proc_ranges *pr;
	struct pt_hot h;
	int fd, kept;
	uint64_t id;

	(void)state;
	assert_int_equal(pt_hot_init(&h, PT_HOT_DEF_CHUNK_SHIFT, 1 << 16), 0);
	fd = pt_proc_pin(getpid(), NULL, &ps.start);
	assert_true(fd > 0);
	ps.pidfd = fd;
	ps.chunks = calloc(1, sizeof(*ps.chunks));
	assert_non_null(ps.chunks);
	ps.n = 1;
	ps.chunks[0].addr = BASE;
	ps.chunks[0].present = ps.chunks[0].accessed = 16;
	assert_true(pt_hot_apply_scans(&h, &ps, 1) >= 0);
	assert_int_equal(ps.pidfd, 0);		/* taken */
	assert_int_equal(h.pidfds[0], fd);
	id = pt_hot_chunk_id(&h, 0, BASE);
	assert_int_equal(pt_hot_ranges(&h, &id, 1, &pr), 1);
	kept = pr[0].pidfd;
	assert_true(kept > 0 && kept != fd);
	assert_true(pt_pidfd_alive(kept));
	/* The process is gone from the scans: the slot lets go, the ranges keep theirs. */
	assert_int_equal(pt_hot_apply_scans(&h, NULL, 0), 0);
	assert_int_equal(h.pidfds[0], 0);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	assert_true(fcntl(kept, F_GETFD) >= 0);
	pt_proc_ranges_free(&pr[0]);
	free(pr);
	assert_int_equal(fcntl(kept, F_GETFD), -1);
	pt_proc_scan_free(&ps);
	pt_hot_free(&h);
}

static void test_fold_pagemap(void **state)
{
	uint64_t pm[40] = { 0 };
	struct pt_proc_scan out = { 0 };

	(void)state;
	/* chunk of 16 pages at 64 KiB: pages 0-15 in chunk 0, 16-31 chunk 1, 32-39 chunk 2 */
	pm[0] = PT_PM_PRESENT | PT_PM_SOFT_DIRTY;
	pm[1] = PT_PM_PRESENT;
	pm[17] = PT_PM_SWAPPED;
	pm[33] = PT_PM_PRESENT;
	assert_int_equal(pt_fold_pagemap(pm, 40, BASE, 16, false, &out), 0);
	assert_int_equal(out.n, 3);
	assert_int_equal(out.chunks[0].present, 2);
	assert_int_equal(out.chunks[0].accessed, 1);
	assert_int_equal(out.chunks[1].swapped, 1);
	assert_int_equal(out.chunks[1].present, 0);
	assert_int_equal(out.chunks[2].accessed, 0);
	pt_proc_scan_free(&out);
	/* Reads the fallback cannot place: every present page counts. */
	assert_int_equal(pt_fold_pagemap(pm, 40, BASE, 16, true, &out), 0);
	assert_int_equal(out.chunks[0].accessed, 2);
	assert_int_equal(out.chunks[2].accessed, 1);
	pt_proc_scan_free(&out);
}

static void test_fold_bitmaps(void **state)
{
	uint64_t acc[4] = { 0 }, pres[4] = { 0 }, swp[4] = { 0 };
	struct pt_proc_scan out = { 0 };

	(void)state;
	/* 256 pages = 16 chunks of 64 KiB; page 0 accessed, 1 present, 20 swapped, 200 both */
	acc[0] = 1;
	pres[0] = 3;
	swp[0] = 1ULL << 20;
	pres[3] = acc[3] = 1ULL << (200 - 192);
	assert_int_equal(pt_fold_bitmaps(acc, pres, swp, 256, BASE, 16, &out), 0);
	assert_int_equal(out.n, 3);
	assert_true(out.chunks[0].addr == BASE);
	assert_int_equal(out.chunks[0].present, 2);
	assert_int_equal(out.chunks[0].accessed, 1);
	assert_true(out.chunks[1].addr == BASE + CHUNK);
	assert_int_equal(out.chunks[1].swapped, 1);
	assert_true(out.chunks[2].addr == BASE + 12 * CHUNK);
	assert_int_equal(out.chunks[2].accessed, 1);
	pt_proc_scan_free(&out);
	/* An accessed bit without present (a racing unmap) does not count. */
	memset(pres, 0, sizeof(pres));
	assert_int_equal(pt_fold_bitmaps(acc, pres, NULL, 256, BASE, 16, &out), 0);
	assert_int_equal(out.n, 0);
	pt_proc_scan_free(&out);
}

/* The page-by-page fold pt_fold_bitmaps() must equal, chunk for chunk. */
static void fold_reference(const uint64_t *acc, const uint64_t *pres, const uint64_t *swp,
			   uint64_t npages, uint64_t start, unsigned int shift,
			   struct pt_proc_scan *out)
{
	for (uint64_t i = 0; i < npages; i++) {
		bool p = (pres[i / 64] >> (i % 64)) & 1, sw = (swp[i / 64] >> (i % 64)) & 1;
		uint64_t addr = (start + i * 4096) & ~((1ULL << shift) - 1);

		if (!p && !sw)
			continue;
		if (!out->n || out->chunks[out->n - 1].addr != addr) {
			out->chunks = realloc(out->chunks, (out->n + 1) * sizeof(*out->chunks));
			assert_non_null(out->chunks);
			memset(&out->chunks[out->n], 0, sizeof(*out->chunks));
			out->chunks[out->n++].addr = addr;
		}
		out->chunks[out->n - 1].present += p;
		out->chunks[out->n - 1].swapped += sw;
		out->chunks[out->n - 1].accessed += p && ((acc[i / 64] >> (i % 64)) & 1);
	}
}

/* Random bitmaps, unaligned starts, several chunk sizes: the same chunks as page by page. */
static void test_fold_bitmaps_random(void **state)
{
	static const unsigned int shifts[] = { 12, 13, 16, 18, 21 };
	uint64_t acc[64], pres[64], swp[64], seed = 42;

	(void)state;
	for (int round = 0; round < 400; round++) {
		struct pt_proc_scan got = { 0 }, want = { 0 };
		unsigned int shift = shifts[round % 5];
		uint64_t npages, start;

		for (int w = 0; w < 64; w++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			pres[w] = round % 3 ? seed : seed & (seed >> 7);
			swp[w] = ~pres[w] & (seed >> 13) & (seed << 5);
			acc[w] = seed ^ (seed >> 31);
			if (round % 7 == 0 && w % 3)
				pres[w] = swp[w] = 0;	/* sparse */
		}
		npages = 1 + (seed >> 40) % (64 * 64);
		start = BASE + ((seed >> 20) % 512) * 4096;
		assert_int_equal(pt_fold_bitmaps(acc, pres, swp, npages, start, shift, &got), 0);
		fold_reference(acc, pres, swp, npages, start, shift, &want);
		assert_int_equal(got.n, want.n);
		for (uint32_t i = 0; i < got.n; i++) {
			assert_true(got.chunks[i].addr == want.chunks[i].addr);
			assert_int_equal(got.chunks[i].present, want.chunks[i].present);
			assert_int_equal(got.chunks[i].swapped, want.chunks[i].swapped);
			assert_int_equal(got.chunks[i].accessed, want.chunks[i].accessed);
		}
		pt_proc_scan_free(&got);
		free(want.chunks);
	}
}

static void ref_cb(uint64_t start, uint64_t end, uint64_t kb, void *arg)
{
	uint64_t *got = arg;

	got[0] = start;
	got[1] = end;
	got[2] += kb;
}

static void test_smaps_referenced(void **state)
{
	const char *smaps =
		"7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
		"Size:               1024 kB\n"
		"Rss:                 512 kB\n"
		"Referenced:          256 kB\n"
		"Anonymous:           512 kB\n";
	uint64_t got[3] = { 0 };

	(void)state;
	pt_smaps_referenced(smaps, ref_cb, got);
	assert_true(got[0] == 0x7f0000000000ULL);
	assert_true(got[1] == 0x7f0000100000ULL);
	assert_int_equal(got[2], 256);
}

/*
 * The fallback scanner against a real process whose smaps is longer than its first read
 * buffer (256 KiB): reads of its last mapping, which only smaps' Referenced shows, must
 * still count, so the text is read whole.
 */
#define FB_MAPS 900
#define FB_LAST (256 << 10)

static void fb_child(int to_parent, int from_parent)
{
	char *last = NULL, go;
	volatile char sum = 0;

	/* First, and aligned to the scan's 64 KiB chunks, so that they cover it exactly. */
	last = mmap(NULL, FB_LAST + (64 << 10), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (last == MAP_FAILED)
		_exit(1);
	{
		char *aligned = (char *)(((uintptr_t)last + 0xffff) & ~(uintptr_t)0xffff);

		if (aligned > last)
			munmap(last, aligned - last);
		munmap(aligned + FB_LAST, (64 << 10) - (aligned - last));
		last = aligned;
	}
	/*
	 * Then many small mappings below it (mmap goes down), which smaps lists before it;
	 * alternating protections keep the kernel from merging them into one.
	 */
	for (int i = 0; i < FB_MAPS; i++)
		if (mmap(NULL, 4096, (i & 1) ? PROT_READ : PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
			_exit(1);
	memset(last, 1, FB_LAST);
	if (write(to_parent, &last, sizeof(last)) != sizeof(last) || read(from_parent, &go, 1) != 1)
		_exit(1);
	for (size_t off = 0; off < FB_LAST; off += 4096)
		sum += last[off];	/* reads only: no soft-dirty bit, Referenced only */
	if (write(to_parent, &last, sizeof(last)) != sizeof(last))
		_exit(1);
	(void)read(from_parent, &go, 1);
	_exit(0);
}

static uint32_t fb_accessed(pid_t pid, uint64_t start, uint64_t *present)
{
	struct pt_proc_scan ps;
	uint32_t acc = 0;

	assert_int_equal(pt_scan_process(PT_SCANNER_FALLBACK, -1, pid, 16, &ps), 0);
	*present = 0;
	for (uint32_t i = 0; i < ps.n; i++)
		if (ps.chunks[i].addr >= start && ps.chunks[i].addr < start + FB_LAST) {
			acc += ps.chunks[i].accessed;
			*present += ps.chunks[i].present;
		}
	pt_proc_scan_free(&ps);
	return acc;
}

static void test_fallback_scan_reads_long_smaps(void **state)
{
	int up[2], down[2], status;
	uint64_t present;
	char *last;
	char buf[64];
	pid_t pid;
	ssize_t n;

	(void)state;
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(up[0]);
		close(down[1]);
		fb_child(up[1], down[0]);
	}
	/* Only the child writes up and reads down: a child gone early reads as end of file. */
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], &last, sizeof(last)), sizeof(last));
	/* The smaps text is longer than the first buffer (else this test shows nothing). */
	snprintf(buf, sizeof(buf), "/proc/%d/smaps", (int)pid);
	{
		static char text[4 << 20];

		n = pt_read_file(buf, text, sizeof(text));
	}
	assert_true(n > 256 << 10);
	/* The first scan sees the writes and clears the bits. */
	assert_true(fb_accessed(pid, (uint64_t)last, &present) > 0);
	assert_int_equal(present, FB_LAST / 4096);
	assert_int_equal(fb_accessed(pid, (uint64_t)last, &present), 0);
	assert_int_equal(write(down[1], "r", 1), 1);
	assert_int_equal(read(up[0], &last, sizeof(last)), sizeof(last));
	/* Reads: placed by smaps alone, every present page of the mapping counts. */
	assert_int_equal(fb_accessed(pid, (uint64_t)last, &present), FB_LAST / 4096);
	assert_int_equal(write(down[1], "q", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(up[0]);
	close(down[1]);
}

static void test_idset(void **state)
{
	struct pt_idset s = { 0 };

	(void)state;
	for (uint64_t i = 0; i < 5000; i++)
		assert_int_equal(pt_idset_add(&s, i * 7), 1);
	assert_int_equal(pt_idset_add(&s, 14), 0);
	assert_int_equal(s.n, 5000);
	assert_true(pt_idset_has(&s, 0));
	assert_true(pt_idset_has(&s, 4999 * 7));
	assert_false(pt_idset_has(&s, 3));
	pt_idset_clear(&s);
	assert_false(pt_idset_has(&s, 14));
	pt_idset_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cold_chunks_after_epochs),
		cmocka_unit_test(test_cold_regions_leave_whole),
		cmocka_unit_test(test_ranges_merge_adjacent),
		cmocka_unit_test(test_refault_and_wake_set),
		cmocka_unit_test(test_precision_recall),
		cmocka_unit_test(test_idle_closes_window),
		cmocka_unit_test(test_fresh_accesses),
		cmocka_unit_test(test_keep_set_and_wake_set),
		cmocka_unit_test(test_background_busy_keeps_wake_set),
		cmocka_unit_test(test_cold_by_last_access),
		cmocka_unit_test(test_backoff_on_refaults),
		cmocka_unit_test(test_reused_pid_is_another_process),
		cmocka_unit_test(test_exited_process_forgotten),
		cmocka_unit_test(test_fold_pagemap),
		cmocka_unit_test(test_fold_bitmaps),
		cmocka_unit_test(test_fold_bitmaps_random),
		cmocka_unit_test(test_smaps_referenced),
		cmocka_unit_test(test_idset),
		cmocka_unit_test(test_fallback_scan_reads_long_smaps),
		cmocka_unit_test(test_pidfd_kept_with_the_slot),
	};

	return cmocka_run_group_tests_name("hotness", tests, NULL, NULL);
}
