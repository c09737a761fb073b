// SPDX-License-Identifier: GPL-2.0
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ssize_t pt_read_file(const char *path, char *buf, size_t size)
{
	ssize_t n, total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((size_t)total + 1 < size) {
		n = read(fd, buf + total, size - 1 - total);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		total += n;
	}
	buf[total] = '\0';
	close(fd);
	return total;
}

/* The line of @text that begins with @key and a space, or NULL. */
static const char *keyed_line(const char *text, const char *key)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ')
			return p;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

int pt_flat_keyed_get(const char *text, const char *key, uint64_t *out)
{
	const char *p = keyed_line(text, key), *v0;
	char *end;
	unsigned long long v;

	if (!p)
		return -ENOENT;
	v0 = p + strlen(key) + 1;
	errno = 0;
	v = strtoull(v0, &end, 10);
	if (errno || end == v0)
		return -EINVAL;
	*out = v;
	return 0;
}

int pt_psi_some_total(const char *text, uint64_t *out)
{
	const char *p = keyed_line(text, "some"), *t, *eol;
	char *end;
	unsigned long long v;

	if (!p)
		return -ENOENT;
	t = strstr(p, " total=");
	eol = strchr(p, '\n');
	if (!t || (eol && t > eol))
		return -EINVAL;
	errno = 0;
	v = strtoull(t + 7, &end, 10);
	if (errno || end == t + 7 || (*end && *end != '\n' && *end != ' '))
		return -EINVAL;
	*out = v;
	return 0;
}

int pt_cgroup_memory_stall_us(const char *dir, uint64_t *out)
{
	char path[PATH_MAX], buf[256];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/memory.pressure", dir);
	n = pt_read_file(path, buf, sizeof(buf));
	return n < 0 ? (int)n : pt_psi_some_total(buf, out);
}

/* A single-value file's text: a number, or "max". */
int pt_cgroup_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!strncmp(s, "max", 3) && (s[3] == '\0' || s[3] == '\n')) {
		*out = UINT64_MAX;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || (*end != '\0' && *end != '\n'))
		return -EINVAL;
	*out = v;
	return 0;
}

int pt_cgroup_read_u64(const char *dir, const char *file, uint64_t *out)
{
	char path[PATH_MAX], buf[64];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	n = pt_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return pt_cgroup_parse_u64(buf, out);
}

int pt_cgroup_read_key(const char *dir, const char *file, const char *key, uint64_t *out)
{
	char path[PATH_MAX];
	char *buf;
	ssize_t n;
	int rc;

	buf = malloc(16384);
	if (!buf)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	n = pt_read_file(path, buf, 16384);
	rc = n < 0 ? (int)n : pt_flat_keyed_get(buf, key, out);
	free(buf);
	return rc;
}

/*
 * The kernel's memory charged to a cgroup: "kernel" (Linux 5.18 on) or, before it, the
 * parts it sums; plus "sock" (network buffers), which "kernel" leaves out. A key the
 * kernel does not have counts 0.
 */
static uint64_t stat_kernel(const char *stat)
{
	static const char *const parts[] = { "kernel_stack", "pagetables", "percpu", "vmalloc",
					      "slab" };
	uint64_t v, sum = 0;

	if (!pt_flat_keyed_get(stat, "kernel", &v)) {
		sum = v;
	} else {
		for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
			if (!pt_flat_keyed_get(stat, parts[i], &v))
				sum += v;
	}
	if (!pt_flat_keyed_get(stat, "sock", &v))
		sum += v;
	return sum;
}

/* The kept-open descriptors of every context, and how many may be. */
static int files_open, files_limit;

void pt_cgroup_files_set_limit(int n)
{
	files_limit = n;
}

int pt_cgroup_files_open_count(void)
{
	return files_open;
}

static void close_fd1(int *fd1)
{
	if (*fd1 > 0) {
		close(*fd1 - 1);
		files_open--;
	}
	*fd1 = 0;
}

void pt_cgroup_files_close(struct pt_cgroup_files *f)
{
	close_fd1(&f->cpu_stat1);
	close_fd1(&f->memory_current1);
	close_fd1(&f->memory_stat1);
	close_fd1(&f->memory_swap_current1);
}

/*
 * @file of @dir's descriptor: the one kept in *@fd1, else opened, and kept there if fewer
 * than @limit are open (*@fd1 > 0 after: kept). The descriptor, or -errno.
 */
static int open_kept(const char *dir, const char *file, int *fd1, int limit)
{
	char path[PATH_MAX];
	int fd;

	if (*fd1 > 0)
		return *fd1 - 1;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (files_open < limit) {
		*fd1 = fd + 1;
		files_open++;
	}
	return fd;
}

/*
 * Reads @file of @dir into @buf through the descriptor kept in *@fd1, opening it first
 * (kept if fewer than @limit are open, else closed after). A removed cgroup's file reads
 * ENODEV: -ENOENT, as a path that is gone, and the descriptor is let go.
 */
static ssize_t read_kept(const char *dir, const char *file, int *fd1, char *buf, size_t size,
			 int limit)
{
	ssize_t n, total = 0;
	int fd = open_kept(dir, file, fd1, limit);
	bool keep = *fd1 > 0;

	if (fd < 0)
		return fd;
	while ((size_t)total + 1 < size) {
		n = pread(fd, buf + total, size - 1 - total, total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			total = errno == ENODEV ? -ENOENT : -errno;
			break;
		}
		if (n == 0)
			break;
		total += n;
	}
	if (total >= 0)
		buf[total] = '\0';
	if (!keep)
		close(fd);
	else if (total < 0)
		close_fd1(fd1);
	return total;
}

/* Keeps @file of @dir open in *@fd1: 0, -ENOSPC past the limit (nothing opened), or -errno. */
static int keep_open(const char *dir, const char *file, int *fd1)
{
	int fd;

	if (*fd1 <= 0 && files_open >= files_limit)
		return -ENOSPC;
	fd = open_kept(dir, file, fd1, files_limit);
	return fd < 0 ? fd : 0;
}

int pt_cgroup_files_keep(const char *dir, struct pt_cgroup_files *f, int *cpu_stat_fd,
			 int *memory_current_fd)
{
	int rc = keep_open(dir, "cpu.stat", &f->cpu_stat1);

	if (!rc)
		rc = keep_open(dir, "memory.current", &f->memory_current1);
	if (rc)
		return rc;
	*cpu_stat_fd = f->cpu_stat1 - 1;
	*memory_current_fd = f->memory_current1 - 1;
	return 0;
}

int pt_cgroup_sample_breakdown(const char *dir, struct pt_cgroup_files *f,
			       struct pt_cgroup_sample *s)
{
	char *stat, buf[64];
	ssize_t n;
	int rc;

	s->anon = s->swapcached = s->swap_current = s->shmem = s->file_cache = s->kernel = 0;
	stat = malloc(16384);
	if (!stat)
		return -ENOMEM;
	n = read_kept(dir, "memory.stat", &f->memory_stat1, stat, 16384, files_limit / 2);
	rc = n < 0 ? (int)n : pt_flat_keyed_get(stat, "anon", &s->anon);
	/* Pages both in memory and in swap: written, but not yet freed. */
	if (!rc && pt_flat_keyed_get(stat, "swapcached", &s->swapcached))
		s->swapcached = 0;
	/* What each kind of memory holds, for the record of an idle period. */
	if (!rc && pt_flat_keyed_get(stat, "shmem", &s->shmem))
		s->shmem = 0;
	/* memory.stat's file counts shmem too. */
	if (!rc && !pt_flat_keyed_get(stat, "file", &s->file_cache))
		s->file_cache = s->file_cache > s->shmem ? s->file_cache - s->shmem : 0;
	else
		s->file_cache = 0;
	if (!rc)
		s->kernel = stat_kernel(stat);
	free(stat);
	if (rc)
		return rc;
	/* memory.swap.current is absent without swap accounting; that is not an error. */
	n = read_kept(dir, "memory.swap.current", &f->memory_swap_current1, buf, sizeof(buf),
		      files_limit / 2);
	if (n < 0 || pt_cgroup_parse_u64(buf, &s->swap_current))
		s->swap_current = 0;
	return 0;
}

int pt_cgroup_sample_files(const char *dir, struct pt_cgroup_files *f,
			   struct pt_cgroup_sample *s, bool full)
{
	char buf[2048];
	ssize_t n;
	int rc;

	n = read_kept(dir, "cpu.stat", &f->cpu_stat1, buf, sizeof(buf), files_limit);
	if (n < 0)
		return (int)n;
	rc = pt_flat_keyed_get(buf, "usage_usec", &s->cpu_usage_usec);
	if (rc)
		return rc;
	n = read_kept(dir, "memory.current", &f->memory_current1, buf, 64, files_limit);
	if (n < 0)
		return (int)n;
	rc = pt_cgroup_parse_u64(buf, &s->memory_current);
	if (rc || !full)
		return rc;
	return pt_cgroup_sample_breakdown(dir, f, s);
}

/* One sample with nothing kept open after it. */
int pt_cgroup_sample(const char *dir, struct pt_cgroup_sample *s, bool full)
{
	struct pt_cgroup_files none = { 0 };
	int rc = pt_cgroup_sample_files(dir, &none, s, full);

	pt_cgroup_files_close(&none);
	return rc;
}

int pt_cgroup_write(const char *dir, const char *file, const char *value)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	/* O_TRUNC: cgroupfs ignores it; a test's regular file then holds just @value. */
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	if (n < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int pt_cgroup_id(const char *dir, uint64_t *id)
{
	struct stat sb;

	if (stat(dir, &sb))
		return -errno;
	*id = sb.st_ino;
	return 0;
}

static int walk(const char *root, char *rel, size_t rel_len, pt_cgroup_visit_fn fn, void *arg,
		int depth)
{
	char path[PATH_MAX];
	struct dirent *de;
	int rc = 0;
	DIR *d;

	if (depth > 32)	/* deeper than any real hierarchy: refuse rather than recurse */
		return -ELOOP;
	snprintf(path, sizeof(path), "%s%s", root, rel);
	d = opendir(path);
	if (!d)
		return -errno;
	for (;;) {
		size_t n;
		int r;

		/* NULL is the end, or an error (EIO, say) that hid the rest of the directory. */
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno && errno != ENOENT && !rc)
				rc = -errno;
			break;
		}
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		n = strlen(de->d_name);
		if (rel_len + 1 + n + 1 > PATH_MAX)
			continue;
		rel[rel_len] = '/';
		memcpy(rel + rel_len + 1, de->d_name, n + 1);
		fn(rel, de->d_ino, arg);
		/*
		 * A cgroup removed while we walk is normal; anything else (out of descriptors)
		 * means the walk missed part of the tree, which the caller must know.
		 */
		r = walk(root, rel, rel_len + 1 + n, fn, arg, depth + 1);
		if (r && r != -ENOENT && !rc)
			rc = r;
		rel[rel_len] = '\0';
	}
	closedir(d);
	return rc;
}

int pt_cgroup_walk(const char *root, pt_cgroup_visit_fn fn, void *arg)
{
	char rel[PATH_MAX] = "";

	return walk(root, rel, 0, fn, arg, 0);
}

static int collect_pids(const char *dir, pid_t *pids, int n, int max, int depth)
{
	char path[PATH_MAX];
	struct dirent *de;
	FILE *fp;
	DIR *d;
	long pid;

	if (depth > 32)
		return n;
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fp = fopen(path, "re");
	if (!fp)
		return depth == 0 ? -errno : n;
	while (n < max && fscanf(fp, "%ld", &pid) == 1)
		pids[n++] = (pid_t)pid;
	fclose(fp);
	d = opendir(dir);
	if (!d)
		return n;
	while ((de = readdir(d)) && n < max) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = collect_pids(path, pids, n, max, depth + 1);
	}
	closedir(d);
	return n;
}

int pt_cgroup_pids(const char *dir, pid_t *pids, int max)
{
	return collect_pids(dir, pids, 0, max, 0);
}
