// SPDX-License-Identifier: GPL-2.0
#include "actuator.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise 440
#endif

#define PT_IOV_BATCH 512	/* below UIO_MAXIOV (1024) */

static int sys_pidfd_open(pid_t pid)
{
	return (int)syscall(__NR_pidfd_open, pid, 0);
}

static ssize_t sys_process_madvise(int pidfd, const struct iovec *iov, size_t n, int advice)
{
	return syscall(__NR_process_madvise, pidfd, iov, n, advice, 0);
}

void pt_proc_ranges_free(struct pt_proc_ranges *pr)
{
	free(pr->r);
	memset(pr, 0, sizeof(*pr));
}

int pt_proc_anon_ranges(pid_t pid, uint64_t max_bytes, struct pt_proc_ranges *out)
{
	char path[64], line[4096 + 128];
	uint64_t total = 0;
	struct pt_range r;
	FILE *fp;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fp = fopen(path, "re");
	if (!fp)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), fp)) {
		if (pt_maps_anon_range(line, &r) != 1)
			continue;
		if (max_bytes && total + r.len > max_bytes)
			r.len = max_bytes - total;
		if (!r.len)
			break;
		if (out->n == out->cap) {
			int cap = out->cap ? out->cap * 2 : 64;
			struct pt_range *nr = realloc(out->r, cap * sizeof(*nr));

			if (!nr) {
				fclose(fp);
				pt_proc_ranges_free(out);
				return -ENOMEM;
			}
			out->r = nr;
			out->cap = cap;
		}
		out->r[out->n++] = r;
		total += r.len;
	}
	fclose(fp);
	return 0;
}

int64_t pt_proc_advise(const struct pt_proc_ranges *pr, int advice)
{
	struct iovec iov[PT_IOV_BATCH];
	int64_t done = 0;
	int pidfd, i = 0;

	if (!pr->n)
		return 0;
	pidfd = sys_pidfd_open(pr->pid);
	if (pidfd < 0)
		return -errno;
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
				close(pidfd);
				return -ESRCH;
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
	close(pidfd);
	return done;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int64_t pt_proc_advise_paced(const struct pt_proc_ranges *pr, int advice, uint64_t rate)
{
	uint64_t t0 = mono_ns(), sent = 0;
	int64_t done = 0;

	if (!rate)
		return pt_proc_advise(pr, advice);
	for (int i = 0; i < pr->n; i++) {
		for (uint64_t off = 0; off < pr->r[i].len; off += PT_PACE_PIECE) {
			struct pt_range piece = {
				.start = pr->r[i].start + off,
				.len = pr->r[i].len - off < PT_PACE_PIECE ? pr->r[i].len - off :
									       PT_PACE_PIECE,
			};
			struct pt_proc_ranges one = { .pid = pr->pid, .n = 1, .cap = 1, .r = &piece };
			int64_t got = pt_proc_advise(&one, advice);
			uint64_t due;

			if (got == -ESRCH)
				return done ? done : got;
			if (got > 0)
				done += got;
			sent += piece.len;
			/* Ahead of the rate: wait until the bytes so far are due. */
			due = t0 + sent * 1000000000ULL / rate;
			for (uint64_t now = mono_ns(); now < due; now = mono_ns()) {
				struct timespec ts = { .tv_sec = (time_t)((due - now) / 1000000000ULL),
						       .tv_nsec = (long)((due - now) % 1000000000ULL) };

				nanosleep(&ts, NULL);
			}
		}
	}
	return done;
}
