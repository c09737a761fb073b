// SPDX-License-Identifier: GPL-2.0
/*
 * A wake's file reader (pt_advise_child_start(), daemon/actuator.h), forked from pagetierd
 * itself or from its readahead spawner (daemon/advise_spawner.h), at native speed: what one
 * wake's reader costs as the daemon grows with the containers it tracks (36 KiB of
 * struct pt_context each, plus their models: 68 MiB resident at 1,000 containers and
 * 184 MiB at 3,000 in bench/scale's guest).
 *
 * For each daemon size, memory of that many MiB in 36 KiB blocks, touched and locked as
 * pagetierd's is (mlockall, each page as it is touched), and four idle threads (the
 * workers): ROUNDS readers, each advising 64 KiB of this process's own memory
 * (MADV_WILLNEED through its pidfd) from a stand-in cgroup (a directory whose
 * cgroup.procs is a plain file: joining a real cgroup costs the same either way and is
 * left out), while the daemon writes one byte in a tenth of its blocks, as its main loop
 * and workers go on while a reader runs. Each way runs in a process of its own, forked
 * while this one is small, as pagetierd forks its spawner at start-up.
 *
 * Reported per wake: wall time from start to finish, CPU time of everything involved (the
 * daemon's own, the spawner's and the readers': getrusage, /proc/PID/stat), and of it the
 * daemon's own with the children it reaped (with a fork, the readers).
 *
 * --cgroup DIR: the readers go into this cgroup v2 directory instead (created if missing;
 * on a host whose memory controller is on cgroup v1, a directory below a cgroup2 mount such
 * as /sys/fs/cgroup/unified): a reader forked from the daemon joins it by writing to its
 * cgroup.procs (a migration: the cgroup threadgroup semaphore's write side, which waits for
 * an RCU grace period), the spawner's is created in it (clone3, CLONE_INTO_CGROUP).
 *
 *   reader_fork [--sizes 8,64,180] [--rounds 40] [--cgroup DIR]
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actuator.h"
#include "advise_spawner.h"
#include "pidfd.h"

#define BLOCK (36 << 10)
#define MAX_SIZES 8

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double rusage_s(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* utime + stime + cutime + cstime of @pid, seconds (0 if it cannot be read). */
static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long f[4];
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fp = fopen(path, "r");
	if (!fp)
		return 0;
	p = fgets(buf, sizeof(buf), fp) ? strrchr(buf, ')') : NULL;
	fclose(fp);
	/* After ')': state is field 3; utime 14, stime 15, cutime 16, cstime 17. */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
			 &f[0], &f[1], &f[2], &f[3]) != 4)
		return 0;
	return (double)(f[0] + f[1] + f[2] + f[3]) / (double)sysconf(_SC_CLK_TCK);
}

static void *idle_thread(void *arg)
{
	pause();
	return arg;
}

/* One way (@spawner or not) over every size: prints one line per size. */
static void run(bool spawner, const int *sizes, int ns, int rounds, const char *cgdir)
{
	char *mem = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0);
	struct pt_range r = { .start = (uintptr_t)mem, .len = 64 << 10 };
	struct pt_proc_ranges pr = { .pid = getpid(), .n = 1, .cap = 1, .r = &r,
				     .pidfd = pt_pidfd_open(getpid()) };
	char **blocks = NULL;
	size_t nblocks = 0;
	pthread_t th;

	if (spawner && pt_spawner_start(true)) {
		fprintf(stderr, "reader_fork: the spawner did not start\n");
		exit(1);
	}
	if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT))
		fprintf(stderr, "reader_fork: mlockall: %s (not locked)\n", strerror(errno));
	for (int i = 0; i < 4; i++)
		pthread_create(&th, NULL, idle_thread, NULL);
	memset(mem, 1, 64 << 10);
	for (int s = 0; s < ns; s++) {
		size_t want = (size_t)sizes[s] * (1 << 20) / BLOCK;
		double t0, cpu0, sp0 = 0, wall, cpu;
		int64_t bad = 0;

		blocks = realloc(blocks, want * sizeof(*blocks));
		for (; nblocks < want; nblocks++) {
			blocks[nblocks] = malloc(BLOCK);
			memset(blocks[nblocks], 1, BLOCK);
		}
		if (spawner)
			sp0 = proc_cpu_s(pt_spawner_pid());
		cpu0 = rusage_s(RUSAGE_SELF) + rusage_s(RUSAGE_CHILDREN);
		t0 = now_s();
		for (int k = 0; k < rounds; k++) {
			struct pt_advise_child c;

			if (pt_advise_child_start(&c, cgdir, &pr, 1, MADV_WILLNEED, NULL) ||
			    (spawner != (c.pid == -1)))
				bad++;
			for (size_t b = (size_t)k % 10; b < nblocks; b += 10)
				blocks[b][k & 4095]++;
			if (pt_advise_child_finish(&c) != 64 << 10)
				bad++;
		}
		wall = (now_s() - t0) / rounds;
		cpu = rusage_s(RUSAGE_SELF) + rusage_s(RUSAGE_CHILDREN) - cpu0;
		/* The spawner's readers are reaped by it: their time is its children's time. */
		if (spawner)
			sp0 = proc_cpu_s(pt_spawner_pid()) - sp0;
		printf("%-26s %7d MiB %10.3f ms %10.3f ms %10.3f ms%s\n",
		       spawner ? "from the spawner" : "forked from the daemon", sizes[s],
		       wall * 1e3, (cpu + (spawner ? sp0 : 0)) / rounds * 1e3, cpu / rounds * 1e3,
		       bad ? "  (some readers failed)" : "");
		fflush(stdout);
	}
	if (spawner)
		pt_spawner_stop();
}

int main(int argc, char **argv)
{
	int sizes[MAX_SIZES] = { 8, 64, 180 }, ns = 3, rounds = 40, status;
	char dir[] = "/tmp/pt-reader-XXXXXX", procs[64];
	const char *cgdir = NULL;
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "--sizes")) {
			char *s = argv[++i], *tok;

			ns = 0;
			for (tok = strtok(s, ","); tok && ns < MAX_SIZES; tok = strtok(NULL, ","))
				sizes[ns++] = atoi(tok);
		} else if (i + 1 < argc && !strcmp(argv[i], "--rounds")) {
			rounds = atoi(argv[++i]);
		} else if (i + 1 < argc && !strcmp(argv[i], "--cgroup")) {
			cgdir = argv[++i];
		} else {
			fprintf(stderr, "usage: reader_fork [--sizes 8,64,180] [--rounds 40] "
				"[--cgroup DIR]\n");
			return 2;
		}
	}
	if (ns < 1 || rounds < 1) {
		fprintf(stderr, "reader_fork: --sizes MiB,... and --rounds 1 or more\n");
		return 2;
	}
	if (cgdir && mkdir(cgdir, 0755) && errno != EEXIST) {
		fprintf(stderr, "reader_fork: %s: %s\n", cgdir, strerror(errno));
		return 1;
	}
	if (!cgdir) {
		if (!mkdtemp(dir))
			return 1;
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
		f = fopen(procs, "w");
		if (!f)
			return 1;
		fclose(f);
	}
	printf("a wake's file reader: per wake, %d rounds, the daemon writing a tenth of its "
	       "blocks meanwhile, the readers in %s (bench/scale/reader_fork.c)\n", rounds,
	       cgdir ? cgdir : "a stand-in directory (no cgroup migration)");
	printf("%-26s %11s %13s %13s %13s\n", "reader", "daemon", "wall", "CPU", "of it daemon's");
	fflush(stdout);		/* not in the children's copies of the buffer */
	for (int way = 0; way < 2; way++) {
		pid_t pid = fork();

		if (pid == 0) {
			run(way == 1, sizes, ns, rounds, cgdir ? cgdir : dir);
			_exit(0);
		}
		waitpid(pid, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fprintf(stderr, "reader_fork: the %s run failed\n", way ? "spawner" : "fork");
	}
	if (!cgdir) {
		unlink(procs);
		rmdir(dir);
	}
	return 0;
}
