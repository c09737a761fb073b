// SPDX-License-Identifier: GPL-2.0
/*
 * A preloaded peer's mapped ranges (preload_maps.h). The parser is pure so that it is unit
 * tested on text; the only I/O is reading the maps file in one go.
 */
#include "preload_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_hex(const char **p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	while (*p < end) {
		char c = **p;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (d < 0)
			break;
		if (++digits > 16)
			return -EINVAL;
		v = v << 4 | (uint64_t)d;
		(*p)++;
	}
	if (!digits)
		return -EINVAL;
	*out = v;
	return 0;
}

static int push(struct pt_preload_maps *m, uint64_t lo, uint64_t hi)
{
	if (m->n && lo < m->r[m->n - 1][1])
		return -EINVAL;		/* the kernel lists them sorted and disjoint */
	if (m->n && lo == m->r[m->n - 1][1]) {
		m->r[m->n - 1][1] = hi;	/* adjacent: one range */
		return 0;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		void *r;

		if (cap > PT_PRELOAD_MAPS_MAX)
			return -E2BIG;
		r = realloc(m->r, cap * sizeof(*m->r));
		if (!r)
			return -ENOMEM;
		m->r = r;
		m->cap = cap;
	}
	m->r[m->n][0] = lo;
	m->r[m->n][1] = hi;
	m->n++;
	return 0;
}

int pt_preload_maps_parse(struct pt_preload_maps *m, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	m->n = 0;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		uint64_t lo, hi;
		int err;

		if (!eol)
			eol = end;
		if (eol == p) {
			p++;
			continue;
		}
		err = parse_hex(&p, eol, &lo);
		if (err || p >= eol || *p != '-')
			return -EINVAL;
		p++;
		err = parse_hex(&p, eol, &hi);
		if (err || hi <= lo || eol - p < 5 || *p != ' ')
			return -EINVAL;
		/* Reservations (PROT_NONE) are address space, not memory anyone can describe. */
		if (memcmp(p + 1, "---", 3) != 0) {
			err = push(m, lo, hi);
			if (err)
				return err;
		}
		p = eol + 1;
	}
	return 0;
}

int pt_preload_maps_load(struct pt_preload_maps *m, const char *proc_root, pid_t pid,
			 uint64_t now_ns, uint64_t max_bytes)
{
	char path[PATH_MAX], *buf = NULL;
	size_t len = 0, cap = 0;
	int fd, err = 0;

	if (max_bytes > PT_PRELOAD_MAPS_MAX_BYTES)
		max_bytes = PT_PRELOAD_MAPS_MAX_BYTES;
	snprintf(path, sizeof(path), "%s/%d/maps", proc_root, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			/* One byte past the limit tells a file of exactly max_bytes from a longer one. */
			if (cap > max_bytes) {
				err = -E2BIG;
				break;
			}
			cap = cap ? cap * 2 : 16384;
			if (cap > max_bytes + 1)
				cap = max_bytes + 1;
			nb = realloc(buf, cap);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!err)
		err = pt_preload_maps_parse(m, buf, len);
	free(buf);
	m->loaded_ns = now_ns ? now_ns : 1;
	m->reloads++;
	m->last_bytes = len;
	m->bytes += len;
	if (err)
		m->n = 0;	/* covers nothing until the next successful read */
	return err;
}

bool pt_preload_maps_covers(const struct pt_preload_maps *m, uint64_t addr, uint64_t len)
{
	size_t lo = 0, hi = m->n;
	uint64_t end;

	if (!len || __builtin_add_overflow(addr, len, &end))
		return false;
	/* The last range starting at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->r[mid][0] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && end <= m->r[lo - 1][1];
}

bool pt_preload_maps_check(struct pt_preload_maps *m, const char *proc_root, pid_t pid,
			   uint64_t addr, uint64_t len, uint64_t now_ns, uint64_t read_bytes)
{
	if (m->loaded_ns && pt_preload_maps_covers(m, addr, len))
		return true;
	if (!read_bytes || (m->loaded_ns && now_ns - m->loaded_ns < PT_PRELOAD_MAPS_REFRESH_NS))
		return false;
	if (pt_preload_maps_load(m, proc_root, pid, now_ns, read_bytes))
		return false;
	return pt_preload_maps_covers(m, addr, len);
}

void pt_preload_maps_free(struct pt_preload_maps *m)
{
	free(m->r);
	m->r = NULL;
	m->n = m->cap = 0;
}
