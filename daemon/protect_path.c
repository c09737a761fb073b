// SPDX-License-Identifier: GPL-2.0
/* The kernel's memory protection along a critical container's path (protect_path.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "grow.h"
#include "log.h"
#include "protect_path.h"
#include "status.h"

static const char *const file_names[PT_PROTECT_FILES] = { "memory.low", "memory.min" };

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return v > UINT64_MAX - to ? UINT64_MAX / to * to : (v + to - 1) / to * to;
}

uint64_t pt_protect_target(uint64_t need, uint64_t written)
{
	uint64_t spare;

	if (!need)
		return 0;
	if (written >= need + need / 16 && written / 2 <= need + PT_PROTECT_GRANULE / 2)
		return written;
	spare = need / 8 > PT_PROTECT_GRANULE ? need / 8 : PT_PROTECT_GRANULE;
	return round_up(need > UINT64_MAX - spare ? UINT64_MAX - PT_PROTECT_GRANULE : need + spare,
			PT_PROTECT_GRANULE);
}

void pt_protect_path_begin(struct pt_protect_path *pp)
{
	for (size_t i = 0; i < pp->n; i++) {
		pp->c[i].need = 0;
		pp->c[i].critical = false;
	}
}

static struct pt_protect_cgroup *get(struct pt_protect_path *pp, const char *relpath,
				     size_t len, bool critical)
{
	struct pt_protect_cgroup *c;

	for (size_t i = 0; i < pp->n; i++)
		if (strlen(pp->c[i].relpath) == len && !memcmp(pp->c[i].relpath, relpath, len)) {
			pp->c[i].critical |= critical;
			return &pp->c[i];
		}
	if (pt_grow((void **)&pp->c, &pp->cap, pp->n + 1, sizeof(*pp->c)))
		return NULL;
	c = &pp->c[pp->n];
	memset(c, 0, sizeof(*c));
	c->relpath = strndup(relpath, len);
	if (!c->relpath)
		return NULL;
	c->critical = critical;
	pp->n++;
	return c;
}

int pt_protect_path_add(struct pt_protect_path *pp, const char *relpath, uint64_t bytes)
{
	const char *s;

	/* The cgroup root itself has no protection files: nothing to hold there. */
	if (relpath[0] != '/' || relpath[1] == '\0')
		return 0;
	s = strchr(relpath + 1, '/');

	/* Each ancestor ("/a", "/a/b" of "/a/b/c"), then the critical container itself. */
	for (;; s = strchr(s + 1, '/')) {
		size_t len = s ? (size_t)(s - relpath) : strlen(relpath);
		struct pt_protect_cgroup *c = get(pp, relpath, len, !s);

		if (!c)
			return -ENOMEM;
		c->need = c->need > UINT64_MAX - bytes ? UINT64_MAX : c->need + bytes;
		if (!s)
			return 0;
	}
}

/*
 * What file @f of @c is to hold: a critical container's own memory.low is "max" (UINT64_MAX;
 * what its own child cgroups share), everything else covers the need.
 */
static uint64_t file_target(const struct pt_protect_cgroup *c, int f)
{
	if (c->critical && f == PT_PROTECT_LOW)
		return UINT64_MAX;
	return pt_protect_target(c->need, c->written[f]);
}

/* @v as a protection file holds it ("max" or bytes), or in MiB as the log shows it. */
static const char *value_text(uint64_t v, bool mib, char *buf, size_t size)
{
	if (v == UINT64_MAX)
		snprintf(buf, size, "max");
	else if (mib)
		snprintf(buf, size, "%" PRIu64 " MiB", v >> 20);
	else
		snprintf(buf, size, "%" PRIu64, v);
	return buf;
}

/* Reads and keeps the operator's values of @c the first time; false if it cannot. */
static bool save(struct pt_protect_cgroup *c, const char *dir)
{
	for (int f = 0; f < PT_PROTECT_FILES; f++) {
		char path[PATH_MAX];
		ssize_t n;

		if (c->saved[f][0])
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, file_names[f]);
		n = pt_read_file(path, c->saved[f], sizeof(c->saved[f]));
		if (n <= 0 || pt_cgroup_parse_u64(c->saved[f], &c->saved_bytes[f])) {
			c->saved[f][0] = '\0';
			if (!c->failed)
				pt_warn("cgroup %s: cannot read %s (%s): the critical containers in it are protected only as far as it allows",
					c->relpath, file_names[f],
					n < 0 ? strerror((int)-n) : "unreadable");
			c->failed = true;
			return false;
		}
		c->saved[f][strcspn(c->saved[f], "\n")] = '\0';
	}
	return true;
}

/* Puts @c's saved value of file @f back if pagetierd changed it; 1 if it wrote. */
static unsigned int restore(struct pt_protect_cgroup *c, const char *root, int f)
{
	char dir[PATH_MAX];
	int rc;

	if (!c->written[f])
		return 0;
	snprintf(dir, sizeof(dir), "%s%s", root, c->relpath);
	rc = pt_cgroup_write(dir, file_names[f], c->saved[f]);
	/* Gone with its cgroup is fine: nothing left to put back. */
	if (rc && rc != -ENOENT)
		pt_warn("cgroup %s: cannot put %s back to %s: %s", c->relpath, file_names[f],
			c->saved[f], strerror(-rc));
	c->written[f] = 0;
	return rc ? 0 : 1;
}

static unsigned int restore_all(struct pt_protect_cgroup *c, const char *root)
{
	unsigned int n = 0;

	for (int f = 0; f < PT_PROTECT_FILES; f++)
		n += restore(c, root, f);
	if (n)
		pt_info("cgroup %s: memory protection put back (no critical container in it)",
			c->relpath);
	return n;
}

/*
 * Keeps what is written and what it replaced in @pp->state, one line per value: "FILE
 * WRITTEN SAVED RELPATH" (the path last: a cgroup name may hold spaces). Written to a
 * temporary file and renamed, so that a crash leaves the old list or the new one.
 */
static void keep_state(struct pt_protect_path *pp)
{
	char tmp[sizeof(pp->state) + 8];
	bool any = false;
	FILE *f;

	if (!pp->state[0])
		return;
	for (size_t i = 0; i < pp->n && !any; i++)
		for (int k = 0; k < PT_PROTECT_FILES; k++)
			any |= pp->c[i].written[k] != 0;
	if (!any) {
		unlink(pp->state);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", pp->state);
	f = fopen(tmp, "we");
	if (!f) {
		pt_warn("cannot write %s (%s): an unclean stop would leave the critical containers' protection in place",
			tmp, strerror(errno));
		return;
	}
	for (size_t i = 0; i < pp->n; i++)
		for (int k = 0; k < PT_PROTECT_FILES; k++)
			if (pp->c[i].written[k])
				fprintf(f, "%s %" PRIu64 " %s %s\n", file_names[k], pp->c[i].written[k],
					pp->c[i].saved[k], pp->c[i].relpath);
	if (fclose(f) || rename(tmp, pp->state)) {
		pt_warn("cannot write %s (%s)", pp->state, strerror(errno));
		unlink(tmp);
	}
}

static void drop(struct pt_protect_path *pp, size_t i)
{
	free(pp->c[i].relpath);
	pp->c[i] = pp->c[--pp->n];
}

/* Writes file @f of @c for its need; 1 if it wrote. */
static unsigned int apply_file(struct pt_protect_cgroup *c, const char *dir, int f)
{
	uint64_t target = file_target(c, f);
	char val[32], show[32];
	int rc;

	if (target == c->written[f])
		return 0;
	rc = pt_cgroup_write(dir, file_names[f], value_text(target, false, val, sizeof(val)));
	if (rc) {
		if (!c->failed)
			pt_warn("cgroup %s: cannot set %s=%s (%s): the %" PRIu64 " MiB of critical containers in it are protected only up to its %s",
				c->relpath, file_names[f], val, strerror(-rc), c->need >> 20,
				c->saved[f]);
		c->failed = true;
		return 0;
	}
	value_text(target, true, show, sizeof(show));
	if (!c->written[f])
		pt_info("cgroup %s: %s=%s (was %s), covering the %" PRIu64 " MiB of critical containers in it",
			c->relpath, file_names[f], show, c->saved[f], c->need >> 20);
	else
		pt_debug("cgroup %s: %s=%s for %" PRIu64 " MiB of critical containers",
			 c->relpath, file_names[f], show, c->need >> 20);
	c->written[f] = target;
	c->failed = false;
	return 1;
}

unsigned int pt_protect_path_apply(struct pt_protect_path *pp, const char *root)
{
	unsigned int writes = 0;
	size_t n0 = pp->n;

	for (size_t i = 0; i < pp->n;) {
		struct pt_protect_cgroup *c = &pp->c[i];
		char dir[PATH_MAX];

		/* A critical container that uses nothing yet keeps its memory.low=max. */
		if (!c->need && !c->critical) {
			writes += restore_all(c, root);
			drop(pp, i);
			continue;
		}
		i++;
		snprintf(dir, sizeof(dir), "%s%s", root, c->relpath);
		if (!save(c, dir))
			continue;
		for (int f = 0; f < PT_PROTECT_FILES; f++) {
			/* The operator's own value covers it: leave it (put it back if ours is up). */
			if (c->saved_bytes[f] >= file_target(c, f))
				writes += restore(c, root, f);
			else
				writes += apply_file(c, dir, f);
		}
	}
	pp->writes += writes;
	if (writes || pp->n != n0)
		keep_state(pp);
	return writes;
}

void pt_protect_path_status_text(FILE *out, const struct pt_protect_path *pp)
{
	for (size_t i = 0; i < pp->n; i++) {
		const struct pt_protect_cgroup *c = &pp->c[i];
		const char *sep = "";
		char show[32];

		if (!c->written[PT_PROTECT_LOW] && !c->written[PT_PROTECT_MIN])
			continue;
		fprintf(out, "protection: %s", c->relpath);
		for (int f = 0; f < PT_PROTECT_FILES; f++) {
			if (!c->written[f])
				continue;
			fprintf(out, "%s %s %s", sep, file_names[f],
				value_text(c->written[f], true, show, sizeof(show)));
			sep = ",";
		}
		fprintf(out, " for %" PRIu64 " MiB of critical containers\n", c->need >> 20);
	}
}

void pt_protect_path_status_json(FILE *out, const struct pt_protect_path *pp)
{
	const char *sep = "";

	fputc('[', out);
	for (size_t i = 0; i < pp->n; i++) {
		const struct pt_protect_cgroup *c = &pp->c[i];

		if (!c->written[PT_PROTECT_LOW] && !c->written[PT_PROTECT_MIN])
			continue;
		fprintf(out, "%s{\"cgroup\":", sep);
		pt_json_string(out, c->relpath);
		fprintf(out, ",\"need_bytes\":%" PRIu64 ",\"low_bytes\":%" PRIu64
			",\"min_bytes\":%" PRIu64 "}", c->need, c->written[PT_PROTECT_LOW],
			c->written[PT_PROTECT_MIN]);
		sep = ",";
	}
	fputc(']', out);
}

void pt_protect_path_release(struct pt_protect_path *pp, const char *root)
{
	while (pp->n) {
		restore_all(&pp->c[pp->n - 1], root);
		drop(pp, pp->n - 1);
	}
	free(pp->c);
	pp->c = NULL;
	pp->cap = 0;
	keep_state(pp);
}

unsigned int pt_protect_path_recover(struct pt_protect_path *pp, const char *root)
{
	char line[PATH_MAX + 128];
	unsigned int n = 0;
	FILE *f;

	if (!pp->state[0] || !(f = fopen(pp->state, "re")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char file[16], saved[32], dir[PATH_MAX], now[32];
		uint64_t written, cur;
		int at = 0, k;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%15s %" SCNu64 " %31s %n", file, &written, saved, &at) != 3 ||
		    !at || line[at] != '/')
			continue;
		for (k = 0; k < PT_PROTECT_FILES && strcmp(file, file_names[k]); k++)
			;
		if (k == PT_PROTECT_FILES)
			continue;
		snprintf(dir, sizeof(dir), "%s%s/%s", root, line + at, file);
		/* Changed since (by the operator, say): theirs now, left alone. */
		if (pt_read_file(dir, now, sizeof(now)) <= 0 || pt_cgroup_parse_u64(now, &cur) ||
		    cur != written)
			continue;
		snprintf(dir, sizeof(dir), "%s%s", root, line + at);
		if (!pt_cgroup_write(dir, file, saved)) {
			pt_info("cgroup %s: %s put back to %s (left by a pagetierd that did not stop cleanly)",
				line + at, file, saved);
			n++;
		}
	}
	fclose(f);
	unlink(pp->state);
	return n;
}
