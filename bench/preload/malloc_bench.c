// SPDX-License-Identifier: GPL-2.0
/*
 * A malloc-heavy micro-benchmark for libpagetier.so's overhead: each thread keeps a working
 * set of live blocks and replaces a random one per operation (free + malloc of a random size,
 * mostly small, 1 in 256 of 64-256 KiB), touching each new block. Prints wall seconds, ops/s
 * and the process's CPU seconds (CLOCK_PROCESS_CPUTIME_ID: on a shared machine the CPU time
 * is the steadier figure, since it does not count time spent waiting for a core).
 *
 *   malloc_bench [ops per thread (default 20000000)] [threads (default 1)]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "block_mix.h"

#define SLOTS 8192

static long ops = 20000000;

static void *run(void *arg)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ (uintptr_t)arg;
	char **slot = calloc(SLOTS, sizeof(*slot));
	uint64_t sum = 0;

	for (long i = 0; i < ops; i++) {
		unsigned int k;
		size_t size;

		size = block_mix_next(&x, SLOTS, &k);
		free(slot[k]);
		slot[k] = malloc(size);
		slot[k][0] = (char)i;
		sum += (unsigned char)slot[k][size / 2];
	}
	for (int k = 0; k < SLOTS; k++)
		free(slot[k]);
	free(slot);
	return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	struct timespec t0, t1, c0, c1;
	pthread_t t[64];
	double secs, cpu;

	if (argc > 1)
		ops = atol(argv[1]);
	if (threads < 1 || threads > 64)
		threads = 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, run, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
	printf("%.3f s %.0f ops/s %.3f cpu-s\n", secs, (double)ops * threads / secs, cpu);
	return 0;
}
