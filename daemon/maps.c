// SPDX-License-Identifier: GPL-2.0
#include "maps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int pt_maps_anon_range(const char *line, struct pt_range *r)
{
	uint64_t start, end, offset, inode;
	char perms[8], dev[16];
	int path_off = 0;
	const char *path;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %15s %" SCNu64 " %n", &start,
		   &end, perms, &offset, dev, &inode, &path_off) < 6 ||
	    end <= start || strlen(perms) != 4)
		return -EINVAL;
	path = path_off ? line + path_off : "";
	/*
	 * Private ('p') and readable: a PROT_NONE guard region has nothing to page out. Shared
	 * anonymous memory is left to memory.reclaim (MADV_PAGEOUT skips shared pages).
	 */
	if (perms[3] != 'p' || perms[0] != 'r')
		return 0;
	if (inode != 0)
		return 0;
	if (path[0] && path[0] != '\n' && strncmp(path, "[heap]", 6) != 0 &&
	    strncmp(path, "[stack]", 7) != 0 && strncmp(path, "[anon:", 6) != 0)
		return 0;	/* [vdso], [vvar], [vsyscall], deleted files, ... */
	r->start = start;
	r->len = end - start;
	return 1;
}
