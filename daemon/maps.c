// SPDX-License-Identifier: GPL-2.0
#include "maps.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Parses a hexadecimal (@base 16) or decimal number at @p; the end, or NULL if none. */
static const char *number(const char *p, unsigned int base, uint64_t *out)
{
	uint64_t v = 0;
	const char *start = p;

	for (;; p++) {
		unsigned int d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned int)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = (unsigned int)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			d = (unsigned int)(*p - 'A' + 10);
		else
			break;
		if (v > (UINT64_MAX - d) / base)
			return NULL;	/* overflows: not a maps line */
		v = v * base + d;
	}
	*out = v;
	return p > start ? p : NULL;
}

/* Skips one or more blanks; NULL if there are none. */
static const char *blanks(const char *p)
{
	const char *start = p;

	while (*p == ' ' || *p == '\t')
		p++;
	return p > start ? p : NULL;
}

/* A run of non-blank characters of length [1, @max]; its end, or NULL. */
static const char *token(const char *p, size_t max)
{
	const char *start = p;

	while (*p && *p != ' ' && *p != '\t' && *p != '\n')
		p++;
	return p > start && (size_t)(p - start) <= max ? p : NULL;
}

/*
 * One line of /proc/PID/maps: "start-end perms offset dev inode   path". Parsed by hand:
 * sscanf() was the daemon's costliest libc call, at one call per mapping per scan.
 */
static bool parse_maps_line(const char *line, uint64_t *start, uint64_t *end, char perms[5],
			    uint64_t *inode, const char **path)
{
	const char *p = line, *q;
	uint64_t offset;

	if (!(p = number(p, 16, start)) || *p++ != '-' || !(p = number(p, 16, end)) ||
	    !(p = blanks(p)))
		return false;
	q = p;
	if (!(p = token(p, 4)) || p - q != 4)
		return false;
	memcpy(perms, q, 4);
	perms[4] = '\0';
	if (!(p = blanks(p)) || !(p = number(p, 16, &offset)) || !(p = blanks(p)) ||
	    !(p = token(p, 15)) || !(p = blanks(p)) || !(p = number(p, 10, inode)))
		return false;
	while (*p == ' ' || *p == '\t')
		p++;
	*path = p;
	return true;
}

enum pt_map_kind pt_maps_classify(const char *line, struct pt_range *r)
{
	uint64_t start, end, inode;
	char perms[5];
	const char *path;

	if (!parse_maps_line(line, &start, &end, perms, &inode, &path) || end <= start)
		return PT_MAP_INVALID;
	r->start = start;
	r->len = end - start;
	/* Readable: a PROT_NONE guard region holds nothing. */
	if (perms[0] != 'r')
		return PT_MAP_OTHER;
	if (perms[3] == 'p') {
		if (inode != 0)
			return path[0] == '/' ? PT_MAP_FILE : PT_MAP_OTHER;
		if (path[0] && path[0] != '\n' && strncmp(path, "[heap]", 6) != 0 &&
		    strncmp(path, "[stack]", 7) != 0 && strncmp(path, "[anon:", 6) != 0)
			return PT_MAP_OTHER;	/* [vdso], [vvar], [vsyscall], ... */
		return PT_MAP_ANON;
	}
	/*
	 * Shared memory: MAP_SHARED|MAP_ANONYMOUS (shown as /dev/zero), System V shm, memfd
	 * and POSIX shm (tmpfs on /dev/shm). Its pages are swap-backed like anonymous ones.
	 */
	if (strncmp(path, "/dev/zero", 9) == 0 || strncmp(path, "/SYSV", 5) == 0 ||
	    strncmp(path, "/memfd:", 7) == 0 || strncmp(path, "/dev/shm/", 9) == 0)
		return PT_MAP_SHMEM;
	if (inode != 0 && path[0] == '/')
		return PT_MAP_FILE;	/* a shared file mapping (one on tmpfs holds shmem) */
	return PT_MAP_OTHER;
}

int pt_maps_anon_range(const char *line, struct pt_range *r)
{
	enum pt_map_kind k = pt_maps_classify(line, r);

	if (k == PT_MAP_INVALID)
		return -EINVAL;
	return k == PT_MAP_ANON;
}

int pt_maps_read_line(FILE *fp, char *buf, size_t size)
{
	while (fgets(buf, (int)size, fp)) {
		size_t n = strlen(buf);
		int c;

		if (n && buf[n - 1] == '\n')
			return 1;
		/* The last line without its newline, if it was not cut: the kernel ends each. */
		if (n + 1 < size && feof(fp))
			return 1;
		/* Cut (or a NUL inside): the rest of it is no line of its own. */
		while ((c = getc(fp)) != EOF && c != '\n')
			;
		if (c == EOF)
			return 0;
	}
	return 0;
}

uint64_t pt_status_vmsize(const char *text)
{
	unsigned long long kb;

	for (const char *p = text; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, "VmSize:", 7) == 0)
			return sscanf(p + 7, "%llu", &kb) == 1 && kb < (UINT64_MAX >> 10) ?
			       (uint64_t)kb << 10 : 0;
	return 0;
}

int pt_maps_open(struct pt_maps_reader *m, const char *proc_root, pid_t pid,
		 unsigned int kinds, uint64_t max_bytes)
{
	char path[PATH_MAX];
	uint64_t vmsize = 0;

	memset(m, 0, sizeof(*m));
	/*
	 * What the process maps, as the kernel counts it (total_vm): what the lines add up to
	 * cannot be more, so a line misread, or a huge mapping, costs a scan no more than that.
	 * Line by line: "Groups:" comes first and may be long.
	 */
	snprintf(path, sizeof(path), "%s/%d/status", proc_root, (int)pid);
	m->fp = fopen(path, "re");
	if (!m->fp)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!vmsize && pt_maps_read_line(m->fp, m->line, sizeof(m->line)))
		vmsize = pt_status_vmsize(m->line);
	fclose(m->fp);
	snprintf(path, sizeof(path), "%s/%d/maps", proc_root, (int)pid);
	m->fp = fopen(path, "re");
	if (!m->fp)
		return errno == ENOENT ? -ESRCH : -errno;
	m->kinds = kinds;
	m->span_left = vmsize < PT_MAPS_SPAN_MAX ? vmsize : PT_MAPS_SPAN_MAX;
	m->left = max_bytes ? max_bytes : UINT64_MAX;
	return 0;
}

int pt_maps_next(struct pt_maps_reader *m, struct pt_range *r, enum pt_map_kind *kind)
{
	while (m->left && pt_maps_read_line(m->fp, m->line, sizeof(m->line))) {
		enum pt_map_kind k = pt_maps_classify(m->line, r);

		if (k < 0 || !(m->kinds & (1U << k)))
			continue;
		/*
		 * More than the process has left to map, or than a reader hands out: skipped
		 * whole, so that one huge mapping (a sanitizer's shadow, a reservation) does not
		 * hide the others behind it.
		 */
		if (r->len > m->span_left)
			continue;
		m->span_left -= r->len;
		if (r->len > m->left)
			r->len = m->left;
		m->left -= r->len;
		*kind = k;
		return 1;
	}
	return 0;
}

void pt_maps_close(struct pt_maps_reader *m)
{
	if (m->fp)
		fclose(m->fp);
	m->fp = NULL;
}
