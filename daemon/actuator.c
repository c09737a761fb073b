// SPDX-License-Identifier: GPL-2.0
#include "actuator.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "advise_spawner.h"
#include "cgroup.h"
#include "grow.h"
#include "log.h"
#include "pidfd.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise 440
#endif
#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif

#define PT_IOV_BATCH 512	/* below UIO_MAXIOV (1024) */

static ssize_t sys_process_madvise(int pidfd, const struct iovec *iov, size_t n, int advice)
{
	return syscall(__NR_process_madvise, pidfd, iov, n, advice, 0);
}

int pt_proc_start_time(pid_t pid, uint64_t *start)
{
	char path[64], buf[1024], *p;
	unsigned long long v;
	int field = 2;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (pt_read_file(path, buf, sizeof(buf)) <= 0)
		return -ESRCH;
	/* The command name may hold spaces and parentheses: fields start after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -ESRCH;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field != 22 || sscanf(p, "%llu", &v) != 1)
		return -ESRCH;
	*start = v;
	return 0;
}

bool pt_proc_in_cgroup(pid_t pid, const char *cgroup)
{
	char path[64], buf[PATH_MAX + 64], *line;
	size_t n = strlen(cgroup);

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (pt_read_file(path, buf, sizeof(buf)) <= 0)
		return false;
	/* cgroup v2: the line "0::/path". */
	for (line = buf; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, "0::", 3))
			continue;
		line += 3;
		return strncmp(line, cgroup, n) == 0 &&
		       (line[n] == '\n' || line[n] == '\0' || line[n] == '/' ||
			(n == 1 && cgroup[0] == '/'));
	}
	return false;
}

bool pt_pidfd_alive(int pidfd)
{
	/* EPERM: there, but not ours to signal (the daemon is root: not expected). */
	return syscall(__NR_pidfd_send_signal, pidfd, 0, NULL, 0) == 0 || errno == EPERM;
}

int pt_proc_pin(pid_t pid, const char *cgroup, uint64_t *start)
{
	uint64_t now;
	int fd = pt_pidfd_open(pid);

	if (fd < 0)
		return errno == ESRCH || errno == EINVAL ? -ESRCH : -errno;
	/* The reads, then the liveness that says they were of the pidfd's process. */
	if (pt_proc_start_time(pid, &now) || (*start && now != *start) ||
	    (cgroup && !pt_proc_in_cgroup(pid, cgroup)) || !pt_pidfd_alive(fd)) {
		pt_pidfd_close(fd);
		return -ESRCH;
	}
	*start = now;
	return fd;
}

void pt_proc_ranges_free(struct pt_proc_ranges *pr)
{
	pt_pidfd_close(pr->pidfd);
	free(pr->r);
	memset(pr, 0, sizeof(*pr));
}

static int ranges_add(struct pt_proc_ranges *out, struct pt_range r)
{
	if (out->n && out->r[out->n - 1].start + out->r[out->n - 1].len == r.start) {
		out->r[out->n - 1].len += r.len;
		return 0;
	}
	size_t cap = (size_t)out->cap;

	if (pt_grow((void **)&out->r, &cap, (size_t)out->n + 1, sizeof(*out->r)))
		return -ENOMEM;
	out->cap = (int)cap;
	out->r[out->n++] = r;
	return 0;
}

int pt_proc_anon_ranges(pid_t pid, uint64_t max_bytes, struct pt_proc_ranges *out)
{
	return pt_proc_ranges_of(pid, NULL, PT_KIND_ANON, max_bytes, out);
}

int pt_proc_ranges_of(pid_t pid, const char *cgroup, unsigned int kinds, uint64_t max_bytes,
		      struct pt_proc_ranges *out)
{
	struct pt_maps_reader m;
	enum pt_map_kind k;
	struct pt_range r;
	int rc;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	out->cgroup = cgroup;
	rc = pt_proc_pin(pid, cgroup, &out->start);
	if (rc < 0)
		return rc;
	out->pidfd = rc;
	rc = pt_maps_open(&m, "/proc", pid, kinds, max_bytes);
	while (!rc && pt_maps_next(&m, &r, &k) == 1)
		rc = ranges_add(out, r);
	if (m.fp)
		pt_maps_close(&m);
	/* Still alive: the maps read were its own, not those of a process that took its pid. */
	if (!rc && !pt_pidfd_alive(out->pidfd))
		rc = -ESRCH;
	if (rc)
		pt_proc_ranges_free(out);
	return rc;
}

int64_t pt_proc_advise(const struct pt_proc_ranges *pr, int advice)
{
	struct iovec iov[PT_IOV_BATCH];
	int64_t done = 0;
	int pidfd, i = 0;

	if (!pr->n)
		return 0;
	if (pr->pidfd > 0) {
		/*
		 * Pinned when its ranges were read: the advice reaches that process or none.
		 * Still in its container (it may have been moved to another one meanwhile)?
		 */
		pidfd = pr->pidfd;
		if ((pr->cgroup && !pt_proc_in_cgroup(pr->pid, pr->cgroup)) ||
		    !pt_pidfd_alive(pidfd))
			return -ESRCH;
	} else {
		uint64_t start = pr->start;

		pidfd = pt_proc_pin(pr->pid, pr->cgroup, &start);
		if (pidfd < 0)
			return pidfd;
	}
	while (i < pr->n) {
		size_t n = 0, want = 0;
		ssize_t got;

		for (int j = i; j < pr->n && n < PT_IOV_BATCH; j++, n++) {
			iov[n].iov_base = (void *)(uintptr_t)pr->r[j].start;
			iov[n].iov_len = pr->r[j].len;
			want += pr->r[j].len;
		}
		got = sys_process_madvise(pidfd, iov, n, advice);
		if (got < 0) {
			if (errno == ESRCH) {
				done = -ESRCH;
				break;
			}
			if (errno == EINTR || errno == EAGAIN)
				continue;
			/* The first range of the batch was refused (mlocked, unmapped since). */
			pt_debug("pid %d: process_madvise(%d) refused %#llx+%llu: %s", (int)pr->pid,
				 advice, (unsigned long long)pr->r[i].start,
				 (unsigned long long)pr->r[i].len, strerror(errno));
			i++;
			continue;
		}
		done += got;
		if ((size_t)got == want) {
			i += (int)n;
			continue;
		}
		/* Partial: the kernel stopped inside the batch; skip past the range it reached. */
		for (size_t k = 0; k < n; k++, i++) {
			if ((size_t)got < iov[k].iov_len)
				break;
			got -= iov[k].iov_len;
		}
		i++;
	}
	if (pidfd != pr->pidfd)
		pt_pidfd_close(pidfd);
	return done;
}

#define PT_PM_PRESENT_BIT (1ULL << 63)
#define PT_PM_BATCH 4096

int pt_proc_file_resident(pid_t pid, const char *cgroup, uint64_t max_bytes,
			  struct pt_proc_ranges *out)
{
	struct pt_proc_ranges maps;
	uint64_t *pm, total = 0, since;
	char path[64];
	int fd, rc;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	out->cgroup = cgroup;
	rc = pt_proc_ranges_of(pid, cgroup, PT_KIND_FILE, 0, &maps);
	since = out->start = maps.start;
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	pm = malloc(PT_PM_BATCH * sizeof(*pm));
	if (fd < 0 || !pm) {
		rc = fd < 0 ? -ESRCH : -ENOMEM;
		goto out;
	}
	for (int i = 0; i < maps.n && (!max_bytes || total < max_bytes); i++) {
		uint64_t start = maps.r[i].start, pages = maps.r[i].len >> 12;

		for (uint64_t off = 0; off < pages;) {
			uint64_t want = pages - off < PT_PM_BATCH ? pages - off : PT_PM_BATCH;
			ssize_t got = pread(fd, pm, want * 8, (off_t)(((start >> 12) + off) * 8));

			if (got <= 0)
				break;
			for (uint64_t j = 0; j < (uint64_t)got / 8; j++) {
				struct pt_range pg = { .start = start + ((off + j) << 12), .len = 4096 };

				if (!(pm[j] & PT_PM_PRESENT_BIT))
					continue;
				if (ranges_add(out, pg)) {
					rc = -ENOMEM;
					goto out;
				}
				total += 4096;
			}
			off += (uint64_t)got / 8;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(pm);
	/* Still alive: the pagemap read was its own. The ranges keep its pidfd. */
	if (!rc && !pt_pidfd_alive(maps.pidfd))
		rc = -ESRCH;
	if (rc) {
		pt_proc_ranges_free(out);
	} else {
		out->pidfd = maps.pidfd;
		maps.pidfd = 0;
	}
	pt_proc_ranges_free(&maps);
	out->pid = pid;
	out->start = since;
	out->cgroup = cgroup;
	return rc;
}

/* Child: into @cgdir's cgroup.procs, or its first leaf below; 0 or -errno. */
static int join_cgroup(const char *cgdir, int depth)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cgdir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = write(fd, "0", 1) == 1 ? 0 : -errno;
	close(fd);
	/* EBUSY: an inner cgroup with controllers on for its children holds no process. */
	if (rc != -EBUSY || depth > 8)
		return rc;
	d = opendir(cgdir);
	if (!d)
		return rc;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", cgdir, de->d_name);
		if (join_cgroup(path, depth + 1) == 0) {
			closedir(d);
			return 0;
		}
	}
	closedir(d);
	return rc;
}

/*
 * MADV_WILLNEED on a file mapping reads ahead at most max(read_ahead_kb, max_sectors_kb) of
 * the device per range (force_page_cache_ra() caps it), so a long range is advised in
 * pieces no larger than the smallest such window in practice: each is read whole.
 */
#define PT_FILE_PIECE (128ULL << 10)

/*
 * Behind a queue, a batch is at most 8 pieces (1 MiB of files), each batch advised once
 * the drive's queue is short: file readahead must not queue up ahead of the application's
 * faults either.
 */
#define PT_QUEUED_BATCH 8

static int64_t advise_in_pieces(const struct pt_proc_ranges *pr, int advice, uint64_t piece,
				const struct pt_backing_queue *queue, struct pt_fault_watch *watch)
{
	struct pt_range batch[PT_IOV_BATCH];
	struct pt_proc_ranges one = { .pid = pr->pid, .start = pr->start, .cgroup = pr->cgroup,
				      .pidfd = pr->pidfd, .r = batch, .cap = PT_IOV_BATCH };
	int max = queue && queue->n ? PT_QUEUED_BATCH : PT_IOV_BATCH;
	int64_t done = 0, got;

	for (int i = 0; i < pr->n; i++)
		for (uint64_t off = 0; off < pr->r[i].len; off += piece) {
			batch[one.n].start = pr->r[i].start + off;
			batch[one.n].len = pr->r[i].len - off < piece ? pr->r[i].len - off : piece;
			if (++one.n < max)
				continue;
			pt_backing_queue_wait(queue, watch);
			got = pt_proc_advise(&one, advice);
			if (got == -ESRCH)
				return done ? done : got;
			done += got > 0 ? got : 0;
			one.n = 0;
		}
	pt_backing_queue_wait(queue, watch);
	got = pt_proc_advise(&one, advice);
	return got > 0 ? done + got : (done ? done : got);
}

int64_t pt_advise_as_reader(const char *cgdir, const struct pt_proc_ranges *set, int n,
			    int advice, const struct pt_backing_queue *queue)
{
	struct pt_fault_watch watch;
	int64_t sum = 0;
	int rc;

	/* Below the levels pt_proc_advise() logs at: no stdio in a child of threads. */
	pt_log_set_level(PT_LOG_WARN);
	rc = cgdir ? join_cgroup(cgdir, 0) : 0;
	if (rc)
		return rc;
	pt_fault_watch_open(&watch, queue && queue->n ? queue->cgdir : NULL);
	for (int i = 0; i < n; i++) {
		int64_t got = advise_in_pieces(&set[i], advice, PT_FILE_PIECE, queue, &watch);

		if (got > 0)
			sum += got;
	}
	return sum;
}

int pt_advise_child_start(struct pt_advise_child *c, const char *cgdir,
			  const struct pt_proc_ranges *set, int n, int advice,
			  const struct pt_backing_queue *queue)
{
	int pipefd[2];

	c->pid = 0;
	c->fd = -1;
	if (!n)
		return 0;
	/* From the spawner, a fork of a small process (advise_spawner.h); else our own. */
	if (pt_spawner_request(cgdir, set, n, advice, queue, &c->fd) == 0) {
		c->pid = -1;
		return 0;
	}
	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	c->pid = fork();
	if (c->pid < 0) {
		int rc = -errno;

		c->pid = 0;
		close(pipefd[0]);
		close(pipefd[1]);
		return rc;
	}
	if (c->pid == 0) {
		/*
		 * The child of a threaded process: system calls only until _exit (no malloc,
		 * no stdio). pt_proc_advise() logs only on a refused range, at debug level;
		 * opendir() in join_cgroup() allocates, but only when the cgroup takes no
		 * process, and glibc's malloc is fork-safe (it resets its locks in the child).
		 */
		int64_t sum = pt_advise_as_reader(cgdir, set, n, advice, queue);

		if (write(pipefd[1], &sum, sizeof(sum)) != sizeof(sum))
			_exit(1);
		_exit(0);
	}
	close(pipefd[1]);
	c->fd = pipefd[0];
	return 0;
}

int64_t pt_advise_child_finish(struct pt_advise_child *c)
{
	int64_t done = 0;
	int status;

	if (!c->pid)
		return 0;
	if (read(c->fd, &done, sizeof(done)) != sizeof(done))
		done = -EIO;
	close(c->fd);
	/* The spawner's reader (-1) is the spawner's to reap. */
	while (c->pid > 0 && waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	c->pid = 0;
	c->fd = -1;
	return done;
}

int64_t pt_proc_advise_in_cgroup(const char *cgdir, const struct pt_proc_ranges *set, int n,
				 int advice)
{
	struct pt_advise_child c;
	int rc = pt_advise_child_start(&c, cgdir, set, n, advice, NULL);

	return rc ? rc : pt_advise_child_finish(&c);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Ahead of @rate (bytes per second; 0: none) with @sent bytes since @t0: sleep until due. */
static void pace(uint64_t t0, uint64_t sent, uint64_t rate)
{
	uint64_t due;

	if (!rate)
		return;
	due = t0 + sent * 1000000000ULL / rate;
	for (uint64_t now = mono_ns(); now < due; now = mono_ns()) {
		struct timespec ts = { .tv_sec = (time_t)((due - now) / 1000000000ULL),
				       .tv_nsec = (long)((due - now) % 1000000000ULL) };

		nanosleep(&ts, NULL);
	}
}

/*
 * One thread's share of a set advised in pieces: pieces k, k + stride, k + 2 stride... of
 * @piece bytes (pt_proc_advise_shared(); pt_proc_advise_paced() is one share of all).
 */
struct advise_share {
	const struct pt_proc_ranges *set;
	int n, advice;
	unsigned int k, stride;
	uint64_t piece;
	uint64_t rate;		/* bytes per second for this share; 0: no limit */
	const struct pt_backing_queue *queue;	/* waited on before each piece, or NULL */
	uint64_t waited_ms;
	int64_t done;
	bool any_alive;
};

static void *advise_share_run(void *arg)
{
	struct advise_share *sh = arg;
	uint64_t idx = 0, t0 = mono_ns(), sent = 0;
	struct pt_fault_watch watch;

	pt_fault_watch_open(&watch, sh->queue ? sh->queue->cgdir : NULL);

	for (int i = 0; i < sh->n; i++) {
		const struct pt_proc_ranges *pr = &sh->set[i];
		bool gone = false;

		for (int j = 0; j < pr->n && !gone; j++) {
			for (uint64_t off = 0; off < pr->r[j].len && !gone; off += sh->piece) {
				struct pt_range piece = {
					.start = pr->r[j].start + off,
					.len = pr->r[j].len - off < sh->piece ?
					       pr->r[j].len - off : sh->piece,
				};
				struct pt_proc_ranges one = { .pid = pr->pid, .start = pr->start,
							      .cgroup = pr->cgroup, .pidfd = pr->pidfd,
							      .n = 1, .cap = 1, .r = &piece };
				int64_t got;

				if (idx++ % sh->stride != sh->k)
					continue;
				sh->waited_ms += pt_backing_queue_wait(sh->queue, &watch);
				got = pt_proc_advise(&one, sh->advice);
				gone = got == -ESRCH;
				if (got > 0)
					sh->done += got;
				sent += piece.len;
				pace(t0, sent, sh->rate);
			}
		}
		sh->any_alive |= !gone;
	}
	pt_fault_watch_close(&watch);
	return NULL;
}

int64_t pt_proc_advise_shared(const struct pt_proc_ranges *set, int n, int advice,
			      unsigned int threads, uint64_t rate,
			      const struct pt_backing_queue *queue, uint64_t *waited_ms)
{
	struct advise_share sh[8];
	pthread_t tid[8];
	bool started[8] = { false };
	int64_t done = 0;
	bool alive = false;

	if (threads < 1)
		threads = 1;
	if (threads > 8)
		threads = 8;
	for (unsigned int k = 0; k < threads; k++)
		sh[k] = (struct advise_share){ .set = set, .n = n, .advice = advice, .k = k,
					       .stride = threads, .piece = PT_SHARE_PIECE,
					       .rate = rate / threads, .queue = queue };
	/* The caller's thread takes share 0, and the share of a helper that could not start. */
	for (unsigned int k = 1; k < threads; k++)
		started[k] = !pthread_create(&tid[k], NULL, advise_share_run, &sh[k]);
	advise_share_run(&sh[0]);
	for (unsigned int k = 1; k < threads; k++) {
		if (started[k])
			pthread_join(tid[k], NULL);
		else
			advise_share_run(&sh[k]);
		done += sh[k].done;
		alive |= sh[k].any_alive;
	}
	done += sh[0].done;
	if (waited_ms)
		for (unsigned int k = 0; k < threads; k++)
			*waited_ms += sh[k].waited_ms;
	alive |= sh[0].any_alive || !n;
	return done || alive ? done : -ESRCH;
}

int64_t pt_proc_advise_paced(const struct pt_proc_ranges *pr, int advice, uint64_t rate)
{
	struct advise_share sh = { .set = pr, .n = 1, .advice = advice, .stride = 1,
				   .piece = PT_PACE_PIECE, .rate = rate };

	if (!rate)
		return pt_proc_advise(pr, advice);
	advise_share_run(&sh);
	return sh.done || sh.any_alive ? sh.done : -ESRCH;
}
