/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How much memory a container really uses, and what pagetier saved: the cgroup's own
 * accounting split by kind, and the host's line. Summed RSS counts shared pages once per
 * process, `docker stats` leaves out the page cache, `free` sees only the host; the cgroup
 * charges each page once, to one cgroup, whatever kind it is.
 *
 * Pure but for pt_meminfo_read(): status.c and metrics.c render what these compute.
 */
#ifndef PAGETIER_MEMUSE_H
#define PAGETIER_MEMUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup.h"
#include "context.h"

/*
 * memory.current by kind, from the last full sample (memory.stat is read once per scan
 * interval): anon + file + shmem + kernel + other = memory.current, other being what
 * memory.stat names none of (swap cache no process maps, and the drift between
 * memory.current read every tick and memory.stat read less often; never below 0).
 */
struct pt_mem_split {
	uint64_t anon;		/* memory.stat anon: mapped anonymous memory */
	uint64_t file;		/* memory.stat file - shmem: the files' page cache */
	uint64_t shmem;		/* memory.stat shmem: tmpfs, memfd, SysV and shared anonymous */
	uint64_t kernel;	/* memory.stat kernel (or its parts) + sock */
	uint64_t other;
};

void pt_mem_split(const struct pt_cgroup_sample *s, struct pt_mem_split *out);

/* The host, from /proc/meminfo, and what pagetier holds out of its memory. */
struct pt_host_mem {
	bool known;		/* /proc/meminfo was read */
	uint64_t total;		/* MemTotal */
	uint64_t available;	/* MemAvailable */
	uint64_t used;		/* total - available: what free(1) calls used */
	uint64_t offloaded;	/* the opted-in containers' memory offloaded and freed */
};

/* /proc/meminfo's text into @h (known set); 0 or -EINVAL (no MemTotal or MemAvailable). */
int pt_meminfo_parse(const char *text, struct pt_host_mem *h);
/* Reads @path (/proc/meminfo) into @h; 0 or a negative errno (@h->known stays false). */
int pt_meminfo_read(const char *path, struct pt_host_mem *h);
/* The offloaded bytes of @n contexts (pt_context_saved()), into @h->offloaded. */
void pt_host_offloaded(struct pt_host_mem *h, const struct pt_context *ctxs, size_t n);
/*
 * The share of the host's memory in use that pagetier keeps out of DRAM:
 * offloaded / (used + offloaded), 0 to 1; 0 when nothing is known.
 */
double pt_host_offloaded_share(const struct pt_host_mem *h);

#endif
