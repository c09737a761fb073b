// SPDX-License-Identifier: GPL-2.0
#include "memuse.h"

#include <errno.h>
#include <string.h>

void pt_mem_split(const struct pt_cgroup_sample *s, struct pt_mem_split *out)
{
	uint64_t named;

	out->anon = s->anon;
	out->file = s->file_cache;
	out->shmem = s->shmem;
	out->kernel = s->kernel;
	named = out->anon + out->file + out->shmem + out->kernel;
	out->other = s->memory_current > named ? s->memory_current - named : 0;
}

int pt_meminfo_parse(const char *text, struct pt_host_mem *h)
{
	uint64_t total, avail;

	/* "MemTotal:       16303772 kB": the key with its colon, then the value in KiB. */
	if (pt_flat_keyed_get(text, "MemTotal:", &total) ||
	    pt_flat_keyed_get(text, "MemAvailable:", &avail))
		return -EINVAL;
	h->total = total << 10;
	h->available = avail << 10;
	h->used = h->total > h->available ? h->total - h->available : 0;
	h->known = true;
	return 0;
}

int pt_meminfo_read(const char *path, struct pt_host_mem *h)
{
	char buf[8192];
	ssize_t n = pt_read_file(path, buf, sizeof(buf));

	h->known = false;
	if (n < 0)
		return (int)n;
	return pt_meminfo_parse(buf, h);
}

void pt_host_offloaded(struct pt_host_mem *h, const struct pt_context *ctxs, size_t n)
{
	h->offloaded = 0;
	for (size_t i = 0; i < n; i++)
		h->offloaded += pt_context_saved(&ctxs[i]);
}

double pt_host_offloaded_share(const struct pt_host_mem *h)
{
	uint64_t all = h->used + h->offloaded;

	return h->known && all ? (double)h->offloaded / (double)all : 0;
}
