// SPDX-License-Identifier: GPL-2.0
#include "kmod_client.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cgroup.h"
#include "grow.h"
#include "log.h"

/* Opens the control device with @flags and issues @req on @arg: the fd, or a -errno. */
static int ctl_open(int flags, unsigned long req, void *arg)
{
	int fd = open(PT_CTL_DEV, flags | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, req, arg)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

int pt_kmod_open(void)
{
	struct pagetier_version v = { .size = sizeof(v) };
	int fd = ctl_open(O_RDWR, PAGETIER_IOC_VERSION, &v);

	if (fd < 0)
		return fd;
	if (v.abi_version != PAGETIER_ABI_VERSION) {
		pt_err("%s speaks ABI %u, this build speaks %u: install matching pagetier.ko and pagetierd",
		       PT_CTL_DEV, v.abi_version, PAGETIER_ABI_VERSION);
		close(fd);
		return -EPROTO;
	}
	return fd;
}

uint64_t pt_kmod_features(int fd)
{
	struct pagetier_version v = { .size = sizeof(v) };

	return ioctl(fd, PAGETIER_IOC_VERSION, &v) ? 0 : v.features;
}

int pt_kmod_tier_create(int fd, const char *backing, struct pagetier_tier_create *out)
{
	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	if (strlen(backing) >= sizeof(out->backing_path))
		return -ENAMETOOLONG;
	snprintf(out->backing_path, sizeof(out->backing_path), "%s", backing);
	return ioctl(fd, PAGETIER_IOC_TIER_CREATE, out) ? -errno : 0;
}

int pt_kmod_tier_destroy(int fd, uint32_t tier_id)
{
	struct pagetier_tier_destroy d = { .size = sizeof(d), .tier_id = tier_id };

	return ioctl(fd, PAGETIER_IOC_TIER_DESTROY, &d) ? -errno : 0;
}

int pt_kmod_cgroup_stats(int fd, uint32_t tier_id, struct pagetier_cgroup_stat **stats)
{
	struct pagetier_cgroup_stats req;
	uint32_t cap = 64;

	for (;;) {
		struct pagetier_cgroup_stat *buf = calloc(cap, sizeof(*buf));

		if (!buf)
			return -ENOMEM;
		memset(&req, 0, sizeof(req));
		req.size = sizeof(req);
		req.tier_id = tier_id;
		req.entry_size = sizeof(*buf);
		req.capacity = cap;
		req.entries = (uintptr_t)buf;
		if (ioctl(fd, PAGETIER_IOC_CGROUP_STATS, &req)) {
			int rc = -errno;

			free(buf);
			return rc;
		}
		if (req.count <= cap) {
			*stats = buf;
			return (int)req.count;
		}
		free(buf);
		cap = req.count + 16;	/* cgroups appeared meanwhile: retry larger */
	}
}

int pt_kmod_tier_fill(const char *sysblock, struct pt_tier_fill *out)
{
	uint32_t ids[PT_KMOD_MAX_TIERS];
	int nt = pt_kmod_list_tiers_in(sysblock, ids, PT_KMOD_MAX_TIERS), n = 0;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < nt; i++) {
		char path[PATH_MAX], buf[512];

		snprintf(path, sizeof(path), "%s/" PAGETIER_DISK_NAME "%u/seg_stat", sysblock, ids[i]);
		if (pt_read_file(path, buf, sizeof(buf)) <= 0 || pt_tier_fill_add(out, buf))
			continue;	/* destroyed meanwhile, or a module without the file */
		n++;
	}
	return nt < 0 ? nt : n;
}

int pt_kmod_list_tiers_in(const char *sysblock, uint32_t *ids, int max)
{
	DIR *d = opendir(sysblock);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < max) {
		unsigned int id;
		char tail;

		if (sscanf(de->d_name, PAGETIER_DISK_NAME "%u%c", &id, &tail) == 1)
			ids[n++] = id;
	}
	closedir(d);
	return n;
}

int pt_kmod_list_tiers(uint32_t *ids, int max)
{
	return pt_kmod_list_tiers_in("/sys/block", ids, max);
}

int pt_kmod_cgroup_pages(int fd, uint64_t cgroup_id, uint64_t *pages)
{
	uint32_t ids[16];
	int nt = pt_kmod_list_tiers(ids, 16);

	*pages = 0;
	if (nt < 0)
		return nt;
	for (int t = 0; t < nt; t++) {
		struct pagetier_cgroup_stat *st;
		int n = pt_kmod_cgroup_stats(fd, ids[t], &st);

		if (n < 0)
			continue;	/* destroyed meanwhile */
		for (int i = 0; i < n; i++)
			if (st[i].cgroup_id == cgroup_id)
				*pages += st[i].pages_stored;
		free(st);
	}
	return 0;
}

static int cmp_usage(const void *a, const void *b)
{
	const struct pt_kmod_usage *x = a, *y = b;

	return x->cgroup_id < y->cgroup_id ? -1 : x->cgroup_id > y->cgroup_id;
}

int pt_kmod_usage_snapshot(int fd, struct pt_kmod_usage **out)
{
	struct pt_kmod_usage *u = NULL;
	size_t cap = 0;
	uint32_t ids[16];
	int nt = pt_kmod_list_tiers(ids, 16), n = 0;

	*out = NULL;
	if (nt < 0)
		return nt;
	for (int t = 0; t < nt; t++) {
		struct pagetier_cgroup_stat *st;
		int k = pt_kmod_cgroup_stats(fd, ids[t], &st);

		if (k <= 0)
			continue;	/* destroyed meanwhile, or empty */
		if (pt_grow((void **)&u, &cap, (size_t)(n + k), sizeof(*u))) {
			free(st);
			free(u);
			return -ENOMEM;
		}
		for (int i = 0; i < k; i++)
			u[n++] = (struct pt_kmod_usage){
				.cgroup_id = st[i].cgroup_id,
				.pages = st[i].pages_stored,
				.written = st[i].bytes_written + st[i].gc_moves * 4096,
			};
		free(st);
	}
	if (!n)
		return 0;
	/* Sum a cgroup's entries of several tiers into one. */
	qsort(u, (size_t)n, sizeof(*u), cmp_usage);
	int m = 0;

	for (int i = 0; i < n; i++) {
		if (m && u[m - 1].cgroup_id == u[i].cgroup_id) {
			u[m - 1].pages += u[i].pages;
			u[m - 1].written += u[i].written;
		} else {
			u[m++] = u[i];
		}
	}
	*out = u;
	return m;
}

const struct pt_kmod_usage *pt_kmod_usage_find(const struct pt_kmod_usage *u, int n,
					       uint64_t cgroup_id)
{
	struct pt_kmod_usage key = { .cgroup_id = cgroup_id };

	if (!u || n <= 0)
		return NULL;
	return bsearch(&key, u, (size_t)n, sizeof(*u), cmp_usage);
}

int pt_kmod_prefetch(int fd, uint64_t cgroup_id, uint64_t budget, uint64_t *planned)
{
	uint32_t ids[16];
	int nt = pt_kmod_list_tiers(ids, 16), rc = 0;

	*planned = 0;
	if (nt < 0)
		return nt;
	for (int t = 0; t < nt; t++) {
		struct pagetier_prefetch req = {
			.size = sizeof(req),
			.tier_id = ids[t],
			.cgroup_id = cgroup_id,
			.budget_bytes = budget,
			.flags = PAGETIER_PREFETCH_NEWEST,
		};

		if (!ioctl(fd, PAGETIER_IOC_PREFETCH, &req))
			*planned += req.planned_bytes;
		else if (errno != ENOENT && !rc)
			rc = -errno;
	}
	return rc;
}

int pt_kmod_events_open(void)
{
	struct pagetier_events ev = { .size = sizeof(ev) };

	return ctl_open(O_RDONLY | O_NONBLOCK, PAGETIER_IOC_EVENTS, &ev);
}

int pt_kmod_events_read(int fd, void (*fn)(const struct pagetier_event *e, void *arg),
			void *arg, uint64_t *lost)
{
	struct pagetier_event buf[64];
	int total = 0;

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0)
			return errno == EAGAIN ? total : (total ? total : -errno);
		if (n == 0 || n % (ssize_t)sizeof(buf[0]))
			return total;	/* the module returns whole records only */
		for (size_t i = 0; i < (size_t)n / sizeof(buf[0]); i++) {
			if (buf[i].type == PAGETIER_EVENT_LOST)
				*lost += buf[i].slot;
			else
				fn(&buf[i], arg);
			total++;
		}
	}
}
