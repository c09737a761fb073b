// SPDX-License-Identifier: GPL-2.0
#include "backing_queue.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"

int pt_parse_inflight(const char *text, uint64_t *reads)
{
	uint64_t r, w;
	char tail;

	if (sscanf(text, " %" SCNu64 " %" SCNu64 " %c", &r, &w, &tail) != 2)
		return -EINVAL;
	*reads = r;
	return 0;
}

static uint64_t ino_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (uint64_t)st.st_ino;
}

/* Whether the disk at @dir is open already (two tiers on one drive count its queue once). */
static bool seen(const struct pt_backing_queue *q, const char *dir)
{
	uint64_t ino = ino_of(dir);

	for (int i = 0; i < q->n; i++)
		if (q->disk_ino[i] == ino)
			return true;
	return false;
}

int pt_backing_queue_open(struct pt_backing_queue *q, const char *sysblock,
			  const char *sysclass)
{
	uint32_t ids[PT_KMOD_MAX_TIERS];
	int nt = pt_kmod_list_tiers_in(sysblock, ids, PT_KMOD_MAX_TIERS);

	q->n = 0;
	for (int i = 0; i < nt; i++) {
		char path[PATH_MAX], dev[PATH_MAX], disk[PATH_MAX], *name;
		ssize_t len;
		int fd;

		snprintf(path, sizeof(path), "%s/" PAGETIER_DISK_NAME "%u/backing_dev", sysblock,
			 ids[i]);
		len = pt_read_file(path, dev, sizeof(dev));
		if (len <= 0)
			continue;	/* destroyed meanwhile, or a module without the file */
		dev[strcspn(dev, "\n")] = '\0';
		name = strrchr(dev, '/');
		name = name ? name + 1 : dev;
		if (!*name)
			continue;
		snprintf(path, sizeof(path), "%s/%s", sysclass, name);
		if (!realpath(path, disk))
			continue;
		snprintf(path, sizeof(path), "%s/partition", disk);
		if (access(path, F_OK) == 0)
			*strrchr(disk, '/') = '\0';	/* a partition: its disk is the parent */
		if (seen(q, disk))
			continue;
		snprintf(path, sizeof(path), "%s/inflight", disk);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			q->disk_ino[q->n] = ino_of(disk);
			q->fd[q->n++] = fd;
		}
	}
	return q->n;
}

uint64_t pt_backing_queue_reads(const struct pt_backing_queue *q)
{
	uint64_t sum = 0;

	for (int i = 0; i < q->n; i++) {
		char buf[64];
		ssize_t len = pread(q->fd[i], buf, sizeof(buf) - 1, 0);
		uint64_t r;

		if (len <= 0)
			continue;
		buf[len] = '\0';
		if (!pt_parse_inflight(buf, &r))
			sum += r;
	}
	return sum;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static unsigned int limit_until(uint64_t now_ms, uint64_t until_ms)
{
	return now_ms < until_ms ? PT_PREFETCH_QUEUED_FAULTING : PT_PREFETCH_QUEUED_STREAMING;
}

unsigned int pt_prefetch_queue_limit(uint64_t majflt, uint64_t now_ms, uint64_t *last,
				     uint64_t *until_ms)
{
	if (*last && majflt > *last)
		*until_ms = now_ms + PT_FAULTING_HOLD_MS;
	*last = majflt;
	return limit_until(now_ms, *until_ms);
}

void pt_fault_watch_open(struct pt_fault_watch *w, const char *cgdir)
{
	char path[PATH_MAX];

	memset(w, 0, sizeof(*w));
	w->fd = -1;
	if (!cgdir)
		return;
	snprintf(path, sizeof(path), "%s/memory.stat", cgdir);
	w->fd = open(path, O_RDONLY | O_CLOEXEC);
}

void pt_fault_watch_close(struct pt_fault_watch *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

/* The limit now. No malloc, no stdio: the readahead child calls it too. */
static unsigned int watch_limit(struct pt_fault_watch *w, uint64_t now)
{
	static const char key[] = "\npgmajfault ";
	char buf[8192], *p;
	ssize_t len;

	if (!w || w->fd < 0)
		return PT_PREFETCH_QUEUED_FAULTING;
	if (w->checked_ms && now - w->checked_ms < PT_FAULT_CHECK_MS)
		return limit_until(now, w->until_ms);
	w->checked_ms = now;
	len = pread(w->fd, buf + 1, sizeof(buf) - 2, 0);
	if (len <= 0)
		return PT_PREFETCH_QUEUED_FAULTING;
	buf[0] = '\n';
	buf[len + 1] = '\0';
	p = strstr(buf, key);
	if (!p)
		return PT_PREFETCH_QUEUED_FAULTING;
	return pt_prefetch_queue_limit(strtoull(p + sizeof(key) - 1, NULL, 10), now, &w->last,
				       &w->until_ms);
}

uint64_t pt_backing_queue_wait(const struct pt_backing_queue *q, struct pt_fault_watch *w)
{
	uint64_t t0, t;

	if (!q || !q->n)
		return 0;
	t0 = t = now_ms();
	while (pt_backing_queue_reads(q) > watch_limit(w, t) &&
	       t - t0 < PT_PREFETCH_QUEUE_WAIT_MS) {
		struct timespec ts = { .tv_nsec = 1000000L };

		nanosleep(&ts, NULL);
		t = now_ms();
	}
	return t - t0;
}

void pt_backing_queue_close(struct pt_backing_queue *q)
{
	for (int i = 0; i < q->n; i++)
		close(q->fd[i]);
	q->n = 0;
}
