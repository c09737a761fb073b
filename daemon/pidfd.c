// SPDX-License-Identifier: GPL-2.0
/* The pidfds pagetierd holds, counted, and held within a limit (pidfd.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pidfd.h"

#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

/* Worker threads open, keep and close them: atomics. */
static int open_count;
static int limit = INT_MAX;

static void counted(int fd)
{
	if (fd > 0)
		__atomic_add_fetch(&open_count, 1, __ATOMIC_RELAXED);
}

int pt_pidfd_open(pid_t pid)
{
	int fd = (int)syscall(__NR_pidfd_open, pid, 0), high, err;

	if (fd == 0) {
		/* fd 0 means "none" in the structs that keep one: move it. */
		high = fcntl(fd, F_DUPFD_CLOEXEC, 1);
		err = errno;
		close(fd);
		errno = err;
		fd = high;
	}
	counted(fd);
	return fd;
}

int pt_pidfd_dup(int fd)
{
	int dup;

	if (pt_pidfd_count() >= pt_pidfd_limit())
		return 0;
	dup = fcntl(fd, F_DUPFD_CLOEXEC, 1);
	if (dup < 0)
		return 0;
	counted(dup);
	return dup;
}

void pt_pidfd_close(int fd)
{
	if (fd <= 0)
		return;
	close(fd);
	__atomic_sub_fetch(&open_count, 1, __ATOMIC_RELAXED);
}

bool pt_pidfd_keep(int *fd, int *held, int max)
{
	if (*fd <= 0)
		return false;
	if (pt_pidfd_count() <= pt_pidfd_limit() && (!held || *held < max)) {
		if (held)
			(*held)++;
		return true;
	}
	pt_pidfd_close(*fd);
	*fd = 0;
	return false;
}

void pt_pidfd_set_limit(int n)
{
	__atomic_store_n(&limit, n < 1 ? INT_MAX : n, __ATOMIC_RELAXED);
}

int pt_pidfd_limit(void)
{
	return __atomic_load_n(&limit, __ATOMIC_RELAXED);
}

int pt_pidfd_count(void)
{
	return __atomic_load_n(&open_count, __ATOMIC_RELAXED);
}
