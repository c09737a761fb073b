// SPDX-License-Identifier: GPL-2.0
/*
 * The container process of bench/preload/trim.sh: fills MIB MiB of glibc heap with small
 * blocks (4-60 KiB: below the mmap threshold, so they sit in the main arena's brk heap),
 * writes every byte, frees all but one block in KEEP (interleaved: the heap stays as large
 * as it was, most of its pages free but not returned), then goes idle:
 *
 *   sleep     sleeps; on SIGUSR1 makes one malloc/free (the first allocator call after idle)
 *   selftrim  calls malloc_trim(0) itself before sleeping (what a trim served in time saves)
 *   timer     a malloc/free every PERIOD_MS (1000) ms, like a server's periodic timer
 *
 * Writes "pid arena_bytes in_use_bytes free_bytes blocks kept" to READY_FILE once idle
 * (mallinfo2, after the free), and appends a line to READY_FILE.poke after each SIGUSR1.
 *
 *   trim_bench READY_FILE [MIB (256)] [KEEP (10)] [sleep|selftrim|timer] [PERIOD_MS]
 */
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t poked;

/* One allocator call that the compiler cannot elide. */
static void one_call(void)
{
	void *volatile p = malloc(64);

	free(p);
}

static void on_usr1(int sig)
{
	(void)sig;
	poked = 1;
}

static void write_file(const char *path, const char *mode, const char *what)
{
	struct mallinfo2 mi = mallinfo2();
	FILE *f = fopen(path, mode);

	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "%d %zu %zu %zu %s\n", (int)getpid(), mi.arena, mi.uordblks, mi.fordblks,
		what);
	fclose(f);
}

int main(int argc, char **argv)
{
	size_t target, total = 0, kept_bytes = 0, n = 0, cap, kept = 0;
	const char *mode = argc > 4 ? argv[4] : "sleep";
	int keep = argc > 3 ? atoi(argv[3]) : 10;
	long period_ms = argc > 5 ? atol(argv[5]) : 1000;
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	char what[128], poke_path[4096];
	struct sigaction sa;
	char **blk;

	if (argc < 2 || keep < 1) {
		fprintf(stderr, "usage: trim_bench READY_FILE [MIB] [KEEP] [sleep|selftrim|timer] "
			"[PERIOD_MS]\n");
		return 2;
	}
	target = (size_t)(argc > 2 ? atol(argv[2]) : 256) << 20;
	cap = target / 4096 + 1;
	/* The block table outside the heap, so that it does not pin heap pages. */
	blk = calloc(cap, sizeof(*blk));
	if (!blk)
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);

	while (total < target && n < cap) {
		size_t size;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size = 4096 + (size_t)(x % (56 * 1024));
		blk[n] = malloc(size);
		if (!blk[n])
			return 1;
		memset(blk[n], 0x5a ^ (int)(n & 0xff), size);
		total += size;
		n++;
	}
	/* Keep one block in @keep, and the last one, so that the heap's top cannot shrink. */
	for (size_t i = 0; i < n; i++) {
		if (i % (size_t)keep == (size_t)keep - 1 || i == n - 1) {
			kept_bytes += malloc_usable_size(blk[i]);
			kept++;
			continue;
		}
		free(blk[i]);
		blk[i] = NULL;
	}
	if (strcmp(mode, "selftrim") == 0)
		malloc_trim(0);
	snprintf(what, sizeof(what), "%zu %zu %zu %zu %s", n, kept, total, kept_bytes, mode);
	write_file(argv[1], "w", what);
	snprintf(poke_path, sizeof(poke_path), "%s.poke", argv[1]);

	for (;;) {
		if (strcmp(mode, "timer") == 0) {
			struct timespec t = { period_ms / 1000, period_ms % 1000 * 1000000 };

			nanosleep(&t, NULL);
			one_call();
		} else {
			pause();
		}
		if (poked) {
			poked = 0;
			one_call();	/* the first allocator call after idle */
			write_file(poke_path, "a", "poked");
		}
	}
}
