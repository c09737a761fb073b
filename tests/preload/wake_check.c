// SPDX-License-Identifier: GPL-2.0
/*
 * The wake signal of a process that sleeps, under libpagetier.so registered with pt_testd
 * --wake-every. First it allocates as fast as it can for 2.5 s: the library must not start
 * its request thread then (it would turn glibc's malloc multi-threaded). Then it allocates
 * at a calmer rate until the thread runs, sleeps while the daemon asks it to signal its
 * next activity, makes exactly one small allocation, and sleeps again.
 * One allocation is far less than the library's budget: it reaches the slow path, which
 * answers the request, only because the request thread zeroed the budget.
 *
 * Prints "<name> <CLOCK_MONOTONIC ns>" lines for tests/preload/run.sh to compare with
 * pt_testd's --wake-log: heavy_thread, req_thread, quiet_from, malloc_at, done. Nothing here allocates but the
 * allocations under test (write(2) of snprintf'd stack buffers).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void say(const char *what, uint64_t ns)
{
	char buf[96];
	int n = snprintf(buf, sizeof(buf), "%s %llu\n", what, (unsigned long long)ns);

	if (write(STDOUT_FILENO, buf, (size_t)n) != n)
		exit(3);
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&t, &t))
		;
}

/* Whether a thread of ours is called @name (getdents64: opendir would allocate). */
static int has_thread(const char *name)
{
	char buf[4096], path[64], comm[32];
	int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC), found = 0;
	long n;

	if (dir < 0)
		return 0;
	while (!found && (n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n && !found;) {
			struct linux_dirent64 {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			ssize_t len;
			int fd;

			off += d->reclen;
			if (d->name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			len = read(fd, comm, sizeof(comm) - 1);
			close(fd);
			if (len > 0) {
				comm[len] = 0;
				comm[strcspn(comm, "\n")] = 0;
				found = strcmp(comm, name) == 0;
			}
		}
	}
	close(dir);
	return found;
}

static volatile char *sink;

/* One allocation of the busy phases, touched and freed. */
static void alloc_one(unsigned int i)
{
	char *p = malloc(64 + i % 512);

	if (!p)
		exit(1);
	p[0] = (char)i;
	sink = p;
	free(p);
}

int main(void)
{
	uint64_t t0 = now_ns();
	int thread = 0;

	/* Allocation-heavy: registration, the daemon's answer, heartbeats, and no thread. */
	for (unsigned int i = 0; now_ns() - t0 < 2500000000ULL; i++)
		alloc_one(i);
	say(has_thread("pagetier-req") ? "heavy_thread 1" : "heavy_thread 0", 0);
	/* Calmer, for up to 5 s: the thread starts at a heartbeat. */
	t0 = now_ns();
	for (unsigned int i = 0; now_ns() - t0 < 5000000000ULL; i++) {
		alloc_one(i);
		if (i % 100 == 0) {	/* ~50 MB/s: below the library's "allocation-heavy" */
			sleep_ms(1);
			if ((thread = has_thread("pagetier-req")))
				break;
		}
	}
	say(thread ? "req_thread 1" : "req_thread 0", 0);
	say("quiet_from", now_ns());
	sleep_ms(1500);
	say("malloc_at", now_ns());
	sink = malloc(32);
	free((void *)sink);
	sleep_ms(500);
	say("done", now_ns());
	return 0;
}
