// SPDX-License-Identifier: GPL-2.0
/*
 * How to read the same small cgroup file of N cgroups every tick, measured on a real
 * cgroup v2 tree (issue 15: "liburing to batch what must still be read each tick").
 *
 * pagetierd reads cpu.stat and memory.current of each container it samples, every
 * poll_interval. Three ways to do it, each timed over the same N cgroups:
 *   open   open(), read(), close() per file per tick (what pagetierd does);
 *   pread  the files kept open, one pread() at offset 0 per file per tick (a seq_file
 *          read at offset 0 generates its text afresh);
 *   uring  the files kept open, all reads of a tick in one io_uring submission (liburing),
 *          waited for together.
 * Each figure is the best of REPS ticks' mean (the host may be busy; what is measured is
 * the cost of the calls), user and system CPU of the whole process (io_uring's workers
 * included) per tick, and wall time per tick.
 *
 *   readers CGROUP2_DIR [N...]   (a cgroup v2 directory it may create children in)
 *
 * It creates N children named pt-readers-I, reads their cpu.stat (the file every cgroup
 * v2 has, controllers or not: it flushes the rstat tree, as memory.stat does), and
 * removes them. Prints one table and, with --json FILE, the figures.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REPS 5
#define TICKS 20
#define BUF 512

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

struct set {
	int n;
	char **paths;
	int *fds;
	char (*bufs)[BUF];
	struct io_uring ring;
	unsigned ring_entries;
};

static void tick_open(struct set *s)
{
	for (int i = 0; i < s->n; i++) {
		int fd = open(s->paths[i], O_RDONLY | O_CLOEXEC);

		if (fd < 0 || read(fd, s->bufs[i], BUF) <= 0)
			die(s->paths[i]);
		close(fd);
	}
}

static void tick_pread(struct set *s)
{
	for (int i = 0; i < s->n; i++)
		if (pread(s->fds[i], s->bufs[i], BUF, 0) <= 0)
			die("pread");
}

static void tick_uring(struct set *s)
{
	int done = 0, next = 0;

	while (done < s->n) {
		struct io_uring_cqe *cqe;
		int queued = 0;

		while (next < s->n) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

			if (!sqe)
				break;
			io_uring_prep_read(sqe, s->fds[next], s->bufs[next], BUF, 0);
			next++;
			queued++;
		}
		if (io_uring_submit_and_wait(&s->ring, queued ? 1 : 1) < 0)
			die("io_uring_submit_and_wait");
		while (io_uring_peek_cqe(&s->ring, &cqe) == 0) {
			if (cqe->res <= 0) {
				errno = -cqe->res;
				die("io_uring read");
			}
			io_uring_cqe_seen(&s->ring, cqe);
			done++;
		}
	}
}

struct result {
	double cpu_us, wall_us;
};

static struct result timed(struct set *s, void (*tick)(struct set *))
{
	struct result best = { 1e30, 1e30 };

	tick(s);	/* warm */
	for (int r = 0; r < REPS; r++) {
		double c0 = cpu_s(), w0 = now_s();

		for (int t = 0; t < TICKS; t++)
			tick(s);
		double c = (cpu_s() - c0) / TICKS * 1e6, w = (now_s() - w0) / TICKS * 1e6;

		if (c < best.cpu_us)
			best.cpu_us = c;
		if (w < best.wall_us)
			best.wall_us = w;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const int def_ns[] = { 100, 1000, 3000 };
	const char *root, *json = NULL;
	int ns[16], n_ns = 0;
	struct rlimit rl = { 65536, 65536 };
	FILE *jf = NULL;

	if (argc < 2) {
		fprintf(stderr, "usage: readers CGROUP2_DIR [--json FILE] [N...]\n");
		return 2;
	}
	root = argv[1];
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && i + 1 < argc)
			json = argv[++i];
		else if (n_ns < 16)
			ns[n_ns++] = atoi(argv[i]);
	}
	if (!n_ns)
		for (; n_ns < 3; n_ns++)
			ns[n_ns] = def_ns[n_ns];
	setrlimit(RLIMIT_NOFILE, &rl);
	if (json && !(jf = fopen(json, "w")))
		die(json);
	printf("reading cpu.stat of N cgroups under %s, per tick (best of %d x %d ticks)\n", root,
	       REPS, TICKS);
	printf("%6s  %-6s %12s %12s %12s\n", "N", "method", "CPU us", "wall us", "CPU us/file");
	if (jf)
		fprintf(jf, "[");
	for (int k = 0; k < n_ns; k++) {
		struct set s = { .n = ns[k] };
		static const char *const names[] = { "open", "pread", "uring" };
		void (*ticks[])(struct set *) = { tick_open, tick_pread, tick_uring };

		s.paths = calloc(s.n, sizeof(*s.paths));
		s.fds = calloc(s.n, sizeof(*s.fds));
		s.bufs = calloc(s.n, sizeof(*s.bufs));
		for (int i = 0; i < s.n; i++) {
			char dir[4096];

			snprintf(dir, sizeof(dir), "%s/pt-readers-%d", root, i);
			if (mkdir(dir, 0755) && errno != EEXIST)
				die(dir);
			if (asprintf(&s.paths[i], "%s/cpu.stat", dir) < 0)
				die("asprintf");
			s.fds[i] = open(s.paths[i], O_RDONLY | O_CLOEXEC);
			if (s.fds[i] < 0)
				die(s.paths[i]);
		}
		s.ring_entries = s.n < 4096 ? (unsigned)s.n : 4096;
		if (io_uring_queue_init(s.ring_entries, &s.ring, 0))
			die("io_uring_queue_init");
		for (int m = 0; m < 3; m++) {
			struct result r = timed(&s, ticks[m]);

			printf("%6d  %-6s %12.1f %12.1f %12.2f\n", s.n, names[m], r.cpu_us, r.wall_us,
			       r.cpu_us / s.n);
			if (jf)
				fprintf(jf, "%s{\"n\":%d,\"method\":\"%s\",\"cpu_us\":%.1f,\"wall_us\":%.1f}",
					k || m ? "," : "", s.n, names[m], r.cpu_us, r.wall_us);
		}
		io_uring_queue_exit(&s.ring);
		for (int i = 0; i < s.n; i++) {
			char dir[4096];

			close(s.fds[i]);
			snprintf(dir, sizeof(dir), "%s/pt-readers-%d", root, i);
			rmdir(dir);
			free(s.paths[i]);
		}
		free(s.paths);
		free(s.fds);
		free(s.bufs);
	}
	if (jf) {
		fprintf(jf, "]\n");
		fclose(jf);
	}
	return 0;
}
