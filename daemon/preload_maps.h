/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The address ranges a preloaded peer has mapped, from /proc/PID/maps, so that the preload
 * server accepts records only about the peer's own memory: a record naming memory the peer
 * does not have mapped (another process's heap, say) is rejected, whatever the peer claims.
 * Cached per peer and re-read on a miss, at most once per PT_PRELOAD_MAPS_REFRESH_NS per
 * peer and within the server's budgets (reads and bytes per second, for all peers and per
 * cgroup: preload_server.h): a record that misses while no read is allowed is refused, not
 * waited for. A read stops at the byte limit it is given, so that one huge maps file (a
 * process with 65536 mappings of long file names) cannot stall the daemon's event loop.
 */
#ifndef PAGETIER_PRELOAD_MAPS_H
#define PAGETIER_PRELOAD_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PT_PRELOAD_MAPS_REFRESH_NS (10 * 1000000ULL)
#define PT_PRELOAD_MAPS_MAX 65536	/* vm.max_map_count's default, and a bound */
#define PT_PRELOAD_MAPS_MAX_BYTES (64ULL << 20)	/* any one read: 65536 maps fit in far less */

struct pt_preload_maps {
	uint64_t (*r)[2];		/* [start, end), sorted, adjacent ones merged */
	size_t n, cap;
	uint64_t loaded_ns;		/* 0: never */
	uint64_t reloads;
	uint64_t last_bytes;		/* read by the last load (what the next may need) */
	uint64_t bytes;			/* read by all loads */
};

/*
 * Parses the text of a maps file (@len bytes) into @m, replacing what it held. Pure.
 * 0, -EINVAL on a malformed or unsorted line, -E2BIG past PT_PRELOAD_MAPS_MAX, -ENOMEM.
 */
int pt_preload_maps_parse(struct pt_preload_maps *m, const char *text, size_t len);

/*
 * Reads @proc_root/@pid/maps into @m at @now_ns, at most @max_bytes of it. 0, -E2BIG if the
 * file is longer (@m then covers nothing), or another negative errno.
 */
int pt_preload_maps_load(struct pt_preload_maps *m, const char *proc_root, pid_t pid,
			 uint64_t now_ns, uint64_t max_bytes);

/* Whether [addr, addr + len) lies within mapped memory (possibly several adjacent maps). */
bool pt_preload_maps_covers(const struct pt_preload_maps *m, uint64_t addr, uint64_t len);

/*
 * The check of one range: covered by the cache, or by a fresh read of at most @read_bytes
 * (0: no read allowed) when the last one is older than PT_PRELOAD_MAPS_REFRESH_NS. A peer
 * that is gone covers nothing.
 */
bool pt_preload_maps_check(struct pt_preload_maps *m, const char *proc_root, pid_t pid,
			   uint64_t addr, uint64_t len, uint64_t now_ns, uint64_t read_bytes);

void pt_preload_maps_free(struct pt_preload_maps *m);

#endif
