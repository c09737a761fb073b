// SPDX-License-Identifier: GPL-2.0
/*
 * prio_bench.c - demand-read latency while write-back floods the device; run in the
 * guest by bench/tier/prio-guest.sh, once on the raw namespace and once on a tier over
 * it.
 *
 *   prio_bench DEVICE FLOOD_MIB
 *
 * The reader does 4 KiB O_DIRECT reads at random offsets of the first 64 MiB (written
 * beforehand, so that a tier reads them from its backing device), one every 2 ms, as a
 * swap-in does. First alone for 2 s (the baseline), then while WRITERS threads write
 * FLOOD_MIB of 1 MiB O_DIRECT writes to the rest of the device as fast as it takes them,
 * as swap write-back of an offload does. Every read is checked.
 *
 * Prints: RESULT dev=... phase={alone,flood} reads=N p50_us= p90_us= p99_us= max_us=
 * and the flood's throughput. A device without priority queues the reads behind the
 * writes; the tier sends demand reads ahead of its gated background I/O.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PG		4096UL
#define READ_AREA	(64UL << 20)
#define WRITE_BASE	(128UL << 20)
#define WRITE_CHUNK	(1UL << 20)
#define WRITERS		8
#define READ_GAP_US	2000
#define MAX_SAMPLES	100000

static const char *dev;
static atomic_uint_fast64_t write_next;
static uint64_t write_end;
static atomic_int writers_done;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void pattern(uint64_t *w, uint64_t off)
{
	for (size_t i = 0; i < PG / 8; i++)
		w[i] = off * 0x9e3779b97f4a7c15ULL + i;
}

static void *writer(void *arg)
{
	void *buf;
	int fd = open(dev, O_WRONLY | O_DIRECT | O_CLOEXEC);

	(void)arg;
	if (fd < 0 || posix_memalign(&buf, PG, WRITE_CHUNK)) {
		perror("writer");
		exit(1);
	}
	memset(buf, 0x5a, WRITE_CHUNK);
	for (;;) {
		uint64_t off = atomic_fetch_add(&write_next, WRITE_CHUNK);

		if (off >= write_end)
			break;
		if (pwrite(fd, buf, WRITE_CHUNK, (off_t)off) != (ssize_t)WRITE_CHUNK) {
			perror("pwrite");
			exit(1);
		}
	}
	close(fd);
	free(buf);
	atomic_fetch_add(&writers_done, 1);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *phase, uint64_t *lat, size_t n)
{
	if (!n) {
		printf("RESULT dev=%s phase=%s reads=0\n", dev, phase);
		return;
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("RESULT dev=%s phase=%s reads=%zu p50_us=%llu p90_us=%llu p99_us=%llu max_us=%llu\n",
	       dev, phase, n, (unsigned long long)lat[n / 2],
	       (unsigned long long)lat[n * 9 / 10], (unsigned long long)lat[n * 99 / 100],
	       (unsigned long long)lat[n - 1]);
}

/* Reads until the writers are done (@flood) or @until_us; returns the samples taken. */
static size_t read_loop(int fd, uint64_t *buf, uint64_t *lat, uint64_t until_us,
			bool flood)
{
	uint64_t expect[PG / 8], seed = 42;
	size_t n = 0;

	while (n < MAX_SAMPLES) {
		uint64_t t0, off;

		if (flood ? atomic_load(&writers_done) == WRITERS : now_us() >= until_us)
			break;
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		off = (seed >> 20) % (READ_AREA / PG) * PG;
		t0 = now_us();
		if (pread(fd, buf, PG, (off_t)off) != (ssize_t)PG) {
			perror("pread");
			exit(1);
		}
		lat[n++] = now_us() - t0;
		pattern(expect, off);
		if (memcmp(buf, expect, PG)) {
			fprintf(stderr, "prio_bench: bad data at %llu\n", (unsigned long long)off);
			exit(1);
		}
		usleep(READ_GAP_US);
	}
	return n;
}

int main(int argc, char **argv)
{
	pthread_t th[WRITERS];
	uint64_t *buf, *lat, t0, t1;
	size_t n;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: prio_bench DEVICE FLOOD_MIB\n");
		return 2;
	}
	dev = argv[1];
	write_end = WRITE_BASE + (strtoull(argv[2], NULL, 0) << 20);
	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	lat = calloc(MAX_SAMPLES, sizeof(*lat));
	if (fd < 0 || !lat || posix_memalign((void **)&buf, PG, WRITE_CHUNK)) {
		perror(dev);
		return 1;
	}
	/* The read area, in 1 MiB writes, then flushed out of any cache on the way. */
	for (uint64_t off = 0; off < READ_AREA; off += WRITE_CHUNK) {
		for (uint64_t p = 0; p < WRITE_CHUNK; p += PG)
			pattern(buf + p / 8, off + p);
		if (pwrite(fd, buf, WRITE_CHUNK, (off_t)off) != (ssize_t)WRITE_CHUNK) {
			perror("pwrite");
			return 1;
		}
	}
	fsync(fd);
	sleep(1);

	n = read_loop(fd, buf, lat, now_us() + 2000000, false);
	report("alone", lat, n);

	atomic_store(&write_next, WRITE_BASE);
	t0 = now_us();
	for (int i = 0; i < WRITERS; i++)
		pthread_create(&th[i], NULL, writer, NULL);
	n = read_loop(fd, buf, lat, 0, true);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(th[i], NULL);
	t1 = now_us();
	report("flood", lat, n);
	printf("RESULT dev=%s phase=writes mib=%llu secs=%.2f mbps=%.1f\n", dev,
	       (unsigned long long)((write_end - WRITE_BASE) >> 20), (t1 - t0) / 1e6,
	       (write_end - WRITE_BASE) / 1e6 / ((t1 - t0) / 1e6));
	close(fd);
	return 0;
}
