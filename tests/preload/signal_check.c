// SPDX-License-Identifier: GPL-2.0
/*
 * libpagetier.so in the hostile corners of the process it is loaded into (run under
 * LD_PRELOAD with a test daemon that asks for trims often):
 *
 *   signal_check signals SECONDS
 *	Two threads (so that glibc's malloc takes its arena locks); the main one allocates
 *	and frees blocks that go through the arena, while a timer's signal handler calls
 *	mmap and munmap (async-signal-safe) every 100 us. A wrapper that served the daemon's
 *	trim there would call malloc_trim() with the arena lock held by the code it
 *	interrupted: a deadlock (the caller's timeout then fails the test).
 *
 *   signal_check rings SECONDS
 *	Counts the library's ring mappings in /proc/self/maps every 50 ms while the caller
 *	restarts the daemon: prints "max_rings N" and "rings N" (the count at the end):
 *	never more than two, since old rings are unmapped on re-registration.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t handled;

static void on_alarm(int sig)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)sig;
	if (p != MAP_FAILED)
		munmap(p, 4096);
	handled++;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static int signals(double seconds)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	unsigned long rounds = 0;
	void *blocks[64] = { 0 };
	pthread_t th;
	double end;

	if (pthread_create(&th, NULL, sleeper, NULL))
		return 1;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	end = now_s() + seconds;
	while (now_s() < end) {
		for (int i = 0; i < 64; i++) {
			free(blocks[i]);
			/* 2-64 KiB: above the tcache, below the mmap threshold: the arena's lock. */
			blocks[i] = malloc(2048 + (size_t)((rounds * 7919 + i * 104729) % 63) * 1024);
			if (!blocks[i])
				return 1;
			memset(blocks[i], (int)i, 64);
		}
		rounds++;
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < 64; i++)
		free(blocks[i]);
	printf("rounds %lu\nsignals %d\n", rounds, (int)handled);
	return 0;
}

static int count_rings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "pagetier-ring") != NULL;
	fclose(f);
	return n;
}

static int rings(double seconds)
{
	int max = 0, n = 0;
	double end = now_s() + seconds;

	while (now_s() < end) {
		/* Allocations tick the library: registration, its retries, its answers. */
		for (int i = 0; i < 1000; i++)
			free(malloc(64 + (size_t)i));
		n = count_rings();
		if (n > max)
			max = n;
		usleep(50000);
	}
	printf("max_rings %d\nrings %d\n", max, n);
	return 0;
}

int main(int argc, char **argv)
{
	double seconds = argc > 2 ? atof(argv[2]) : 3;

	if (argc > 1 && strcmp(argv[1], "signals") == 0)
		return signals(seconds);
	if (argc > 1 && strcmp(argv[1], "rings") == 0)
		return rings(seconds);
	fprintf(stderr, "usage: signal_check signals|rings [SECONDS]\n");
	return 2;
}
