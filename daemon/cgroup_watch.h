/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which cgroups exist, told by the kernel instead of asked every second.
 *
 * pagetierd learns of containers by walking the cgroup tree. Walking it every tick costs
 * in proportion to every cgroup on the host, busy or not (13 ms of CPU a second at 3,000
 * containers, bench/scale/README.md), while the tree changes only when a container starts
 * or stops. mkdir, rmdir and rename on cgroupfs go through the VFS, which reports them to
 * inotify like on any file system; inotify is not recursive, so every directory the walk
 * visits gets a watch. A walk is then due only when the tree changed, when events were
 * lost (queue overflow), or, where a watch could not be placed (max_user_watches), on
 * every interval as before.
 */
#ifndef PT_CGROUP_WATCH_H
#define PT_CGROUP_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


struct pt_cgroup_watch {
	int fd;			/* the inotify instance; -1: not watching (walk each interval) */
	bool changed;		/* the tree changed since the last walk: walk */
	bool incomplete;	/* a directory went unwatched: walk each interval */
	uint64_t events;	/* events read that changed the tree */
	uint64_t overflows;	/* the kernel's queue overflowed: events lost, walk */
	uint64_t watch_errors;	/* directories that could not be watched */
};

/* Opens the inotify instance; on failure fd stays -1 and the caller walks as before. */
int pt_cgroup_watch_open(struct pt_cgroup_watch *w);
void pt_cgroup_watch_close(struct pt_cgroup_watch *w);

/* Watches the directory @path (the root, or one the walk visited). Idempotent. */
void pt_cgroup_watch_add(struct pt_cgroup_watch *w, const char *path);

/* Reads what is queued (non-blocking); sets changed when the tree changed. */
void pt_cgroup_watch_read(struct pt_cgroup_watch *w);

/*
 * The pure part: does this buffer of struct inotify_event records change the tree? Counts
 * into @w. Records cut short at the end are ignored (the kernel never cuts them).
 */
bool pt_cgroup_watch_parse(struct pt_cgroup_watch *w, const char *buf, size_t len);

/* A walk is due: the tree changed, or the watch cannot be trusted to say so. */
bool pt_cgroup_watch_walk_due(const struct pt_cgroup_watch *w);

/* The walk that was due has started: events from now on are news. */
void pt_cgroup_watch_walk_started(struct pt_cgroup_watch *w);

#endif
