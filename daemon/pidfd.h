/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The pidfds pagetierd holds, counted, and held within a limit.
 *
 * A pidfd is the strongest name for a process: advice through it reaches that process or
 * none. So the hotness model, the wake sets and the mapped-file sets keep one per process of
 * every opted-in container. Nothing bounded them but the descriptor limit: one container
 * forking a thousand processes (fork_flood) had pagetierd hold 544 to 790 of them, and a
 * few such containers take every descriptor the daemon has, after which nothing is pinned,
 * no cgroup file opens and no client connects.
 *
 * A pidfd is not needed for correctness, only for strength: a process is also named by its
 * pid and start time (actuator.h), and advice without a pidfd pins the process when it is
 * given and checks that start time first. So past the limit a holder lets the pidfd go and
 * keeps the pid and start time. The limit is daemon-wide (a quarter of the descriptor limit,
 * pagetierd.c) and per holder (pt_pidfd_keep()'s @max: one container cannot take it all).
 *
 * Every pidfd the daemon opens or duplicates goes through pt_pidfd_open() or
 * pt_pidfd_dup() and is closed by pt_pidfd_close(), so that the count is exact.
 */
#ifndef PAGETIER_PIDFD_H
#define PAGETIER_PIDFD_H

#include <stdbool.h>
#include <sys/types.h>

/* Pidfds one holder (a context's model, one wake or file set) keeps at most. */
#define PT_PIDFD_HOLDER_MAX	64

/* A pidfd for @pid (close-on-exec, never fd 0: 0 means "none"), counted; or -1, errno. */
int pt_pidfd_open(pid_t pid);
/* A counted duplicate of @fd, or 0 when over the limit or out of descriptors. */
int pt_pidfd_dup(int fd);
/* Closes @fd (> 0) and uncounts it; 0 and negative are "none". */
void pt_pidfd_close(int fd);
/*
 * Whether the holder of *@fd may keep it: the daemon holds no more than its limit and,
 * with @held not NULL, the holder fewer than @max (*@held is then counted up). If not, it
 * is closed and *@fd is 0: the holder goes by pid and start time. A holder that lets a
 * kept pidfd go counts *@held down itself.
 */
bool pt_pidfd_keep(int *fd, int *held, int max);
/* The daemon-wide limit (< 1: none), and the pidfds open now. */
void pt_pidfd_set_limit(int limit);
int pt_pidfd_limit(void);
int pt_pidfd_count(void);

#endif
