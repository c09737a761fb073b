// SPDX-License-Identifier: GPL-2.0
/*
 * ptsleeper: the one process of a bench/scale container. It joins its cgroup first (so that
 * everything it allocates is charged there), fills KB KiB of anonymous memory (no page of
 * zeros: 6.12 swaps those out without I/O), says it is ready (one byte on --ready-fd) and
 * sleeps, with a small resident set (built static by bench/scale/run.sh).
 *
 *   ptsleeper --cgroup DIR --kb KB [--ready-fd FD] [--period-ms P] [--burst-ms B]
 *             [--probe FILE] [--seed S] [--file PATH]
 *
 * --file PATH: PATH mapped read-only, a byte of each of its pages read at start and in
 * every burst: mapped files (a library, say), which a wake reads ahead from a process in
 * the container's cgroup (pagetierd's spawner, daemon/advise_spawner.h).
 *
 * Signals (blocked, taken with sigtimedwait: nothing runs between them):
 *   SIGUSR2  toggles periodic waking: every P ms (the first after a random phase in
 *            [0, P)), a burst: it writes a word of every page of its memory, pass after
 *            pass, for B ms (one pass at least): a container that wakes and works.
 *   SIGUSR1  one burst now (a probe: the bench wakes it); then appends
 *            "WAKE_MS QUIET_MS\n" (CLOCK_MONOTONIC, the first touch and the end of the
 *            burst) to the --probe FILE: what the daemon's log is matched against.
 *   SIGTERM  exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL

static unsigned char *mem;
static size_t pages;
static const volatile unsigned char *file;
static size_t file_pages;
static unsigned long sink;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what)
{
	fprintf(stderr, "ptsleeper: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void join_cgroup(const char *dir)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		die(path);
	close(fd);
}

/*
 * One pass: a word of every page rewritten (read, then written: a fault if it was out),
 * and a byte of every page of the mapped file read.
 */
static void touch_all(uint64_t salt)
{
	for (size_t i = 0; i < pages; i++) {
		uint64_t *w = (uint64_t *)(mem + i * PAGE);

		*w = (*w * 6364136223846793005ULL) ^ salt ^ i;
	}
	for (size_t i = 0; i < file_pages; i++)
		sink += file[i * PAGE];
}

/* Returns when the burst ends; *t0: its first touch. */
static double burst(double burst_ms, double *t0, uint64_t *salt)
{
	double t;

	*t0 = now_ms();
	do {
		touch_all(++*salt);
		t = now_ms();
	} while (t - *t0 < burst_ms);
	return t;
}

int main(int argc, char **argv)
{
	const char *cgroup = NULL, *probe = NULL, *file_path = NULL;
	long kb = 64, period_ms = 30000, burst_ms = 200, seed = 1;
	int ready_fd = -1;
	int periodic = 0;
	double next = 0, t0, t1;
	uint64_t salt = 0;
	sigset_t set;

	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (!strcmp(k, "--cgroup"))
			cgroup = v;
		else if (!strcmp(k, "--kb"))
			kb = atol(v);
		else if (!strcmp(k, "--ready-fd"))
			ready_fd = atoi(v);
		else if (!strcmp(k, "--period-ms"))
			period_ms = atol(v);
		else if (!strcmp(k, "--burst-ms"))
			burst_ms = atol(v);
		else if (!strcmp(k, "--probe"))
			probe = v;
		else if (!strcmp(k, "--seed"))
			seed = atol(v);
		else if (!strcmp(k, "--file"))
			file_path = v;
		else
			break;
	}
	if (argc % 2 != 1 || kb < 4 || period_ms < 1 || burst_ms < 0) {
		fprintf(stderr, "usage: ptsleeper --cgroup DIR --kb KB [--ready-fd FD] "
			"[--period-ms P] [--burst-ms B] [--probe FILE] [--seed S] [--file PATH]\n");
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		die("sigprocmask");
	if (cgroup)
		join_cgroup(cgroup);
	pages = (size_t)kb * 1024 / PAGE;
	mem = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		die("mmap");
	for (size_t i = 0; i < pages; i++)
		memset(mem + i * PAGE, (int)(0x11 + (i + (size_t)seed) % 200), PAGE);
	if (file_path) {
		struct stat st;
		int fd = open(file_path, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st) || st.st_size < (off_t)PAGE)
			die(file_path);
		file_pages = (size_t)st.st_size / PAGE;
		file = mmap(NULL, file_pages * PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
		if (file == MAP_FAILED)
			die("mmap --file");
		close(fd);
		for (size_t i = 0; i < file_pages; i++)
			sink += file[i * PAGE];
	}
	srandom((unsigned int)seed);
	if (ready_fd >= 0) {
		if (write(ready_fd, "r", 1) != 1)
			die("ready-fd");
		close(ready_fd);
	}
	for (;;) {
		struct timespec ts;
		double wait;
		int sig;

		if (periodic) {
			wait = next - now_ms();
			if (wait < 0)
				wait = 0;
			ts.tv_sec = (time_t)(wait / 1e3);
			ts.tv_nsec = (long)((wait - (double)ts.tv_sec * 1e3) * 1e6);
			sig = sigtimedwait(&set, NULL, &ts);
		} else {
			sig = sigwaitinfo(&set, NULL);
		}
		if (sig < 0 && errno == EAGAIN) {
			/* A periodic wake. */
			burst((double)burst_ms, &t0, &salt);
			next += (double)period_ms;
			if (next < now_ms())
				next = now_ms() + (double)period_ms;
			continue;
		}
		if (sig < 0)
			continue;	/* EINTR */
		if (sig == SIGTERM || sig == SIGINT)
			return 0;
		if (sig == SIGUSR2) {
			periodic = !periodic;
			next = now_ms() + (double)(random() % period_ms);
		} else if (sig == SIGUSR1) {
			char line[64];
			int fd, n;

			t1 = burst((double)burst_ms, &t0, &salt);
			if (!probe)
				continue;
			n = snprintf(line, sizeof(line), "%.3f %.3f\n", t0, t1);
			fd = open(probe, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
			if (fd < 0 || write(fd, line, (size_t)n) != n)
				die(probe);
			close(fd);
		}
	}
}
