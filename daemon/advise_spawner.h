/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The readahead spawner: a small process pagetierd forks at start-up, before it grows,
 * which in turn forks the readers of a wake's mapped files (pt_advise_child_start(),
 * actuator.h).
 *
 * Why a process of its own: the page cache that MADV_WILLNEED reads in is charged to the
 * memory cgroup of the reading task's mm, so the reader must be a process of its own in
 * the container's cgroup (a thread or a CLONE_VM child would charge pagetierd). A fork of
 * pagetierd copies page tables that grow with the containers it tracks (180 MiB resident
 * at 3,000) and makes its next writes copy-on-write while the reader lives: natively about
 * 80 us per MiB of the daemon at every wake (bench/scale micro, "advise_child"). A fork of
 * the spawner costs what a fork of a process of a few MiB costs, whatever the daemon's size.
 *
 * Protocol: a SOCK_SEQPACKET socket pair. A request is the encoded request
 * (advise_req.h) in a memfd, a pipe's write end for the result (an int64: bytes advised or
 * -errno, as pt_proc_advise_in_cgroup()) and each range list's pidfd, sent as descriptors
 * (SCM_RIGHTS) in as many messages as they need. The spawner forks a reader per request and
 * reaps it; its readers' CPU time adds to the spawner's children's time (/proc/PID/stat
 * cutime, cstime). It exits when pagetierd closes its end or dies (PR_SET_PDEATHSIG).
 * Whenever a request cannot be handed over (no spawner, it died, its queue is full for a
 * second), the caller forks the reader itself, as before the spawner existed.
 */
#ifndef PAGETIER_ADVISE_SPAWNER_H
#define PAGETIER_ADVISE_SPAWNER_H

#include <stdbool.h>
#include <sys/types.h>

#include "actuator.h"

/*
 * Forks the spawner. Call it while the process is small and has one thread: it keeps what
 * the process has mapped then. @lock_memory: it locks its memory (mlockall, as pagetierd).
 * 0 or -errno (the readers are then forked from the caller).
 */
int pt_spawner_start(bool lock_memory);
/* The spawner's pid while it runs, else 0. */
pid_t pt_spawner_pid(void);
/*
 * Hands a reader's work to the spawner: the result comes through *@result_fd (read one
 * int64, then close it; end of file: the reader died, -EIO). 0, or -errno: nothing was
 * handed over (-ENOTCONN: no spawner), and the caller does the work some other way.
 */
int pt_spawner_request(const char *cgdir, const struct pt_proc_ranges *set, int n, int advice,
		       const struct pt_backing_queue *queue, int *result_fd);
/* Closes the spawner's socket (it exits) and reaps it. */
void pt_spawner_stop(void);

#endif
