// SPDX-License-Identifier: GPL-2.0
/* A swap fence around a swap cache drop (swap_fence.h). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "log.h"
#include "swap_fence.h"

#define STATE_PREFIX "swap-fence."

/* Set once at start, before any worker runs; read-only afterwards. */
static bool fences_on;
static char fence_dir[PATH_MAX];

bool pt_swap_fence_wanted(const char *lru_gen_enabled)
{
	unsigned long caps;
	char *end;

	if (!lru_gen_enabled)
		return true;
	errno = 0;
	caps = strtoul(lru_gen_enabled, &end, 0);
	/* Unreadable: assume the multi-gen LRU, where a fence would stop the drop. */
	if (errno || end == lru_gen_enabled)
		return false;
	return caps == 0;
}

uint64_t pt_swap_fence_value(uint64_t swap_current, uint64_t saved_max)
{
	uint64_t v;

	if (swap_current > UINT64_MAX - 2 * PT_SWAP_FENCE_SLACK)
		return 0;
	v = (swap_current + PT_SWAP_FENCE_SLACK + 4095) & ~4095ULL;
	return v < saved_max ? v : 0;
}

void pt_swap_fence_setup(const char *lru_gen_path, const char *runtime_dir)
{
	char buf[32];
	ssize_t n = pt_read_file(lru_gen_path, buf, sizeof(buf));

	fences_on = pt_swap_fence_wanted(n > 0 ? buf : n == -ENOENT ? NULL : "");
	snprintf(fence_dir, sizeof(fence_dir), "%s", runtime_dir ? runtime_dir : "");
	pt_info("swap cache drops %s: %s %s",
		fences_on ? "hold memory.swap.max at the cgroup's swap use while they run (the classic LRU)" :
			    "run unfenced (the multi-gen LRU)",
		lru_gen_path, n > 0 ? strtok(buf, "\n") : n == -ENOENT ? "absent" : "unreadable");
}

void pt_swap_fence_start(struct pt_swap_fence *f, const char *dir)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "%s", dir);
	f->off = !fences_on;
	if (fence_dir[0])
		snprintf(f->state, sizeof(f->state), "%s/" STATE_PREFIX "%ld", fence_dir,
			 (long)syscall(SYS_gettid));
}

/*
 * "PREV WRITTEN SAVED DIR": the value written before this one too, since a crash between
 * this file's update and the write leaves the cgroup at PREV. Written aside and renamed,
 * so that a crash leaves the old line or the new one.
 */
static int keep(const struct pt_swap_fence *f, uint64_t prev, uint64_t written)
{
	char tmp[PATH_MAX + 8];
	FILE *out;

	if (!f->state[0])
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", f->state);
	out = fopen(tmp, "we");
	if (!out)
		return -errno;
	fprintf(out, "%" PRIu64 " %" PRIu64 " %s %s\n", prev, written, f->saved, f->dir);
	if (fclose(out) || rename(tmp, f->state)) {
		int rc = -errno;

		unlink(tmp);
		return rc;
	}
	return 0;
}

void pt_swap_fence_hold(struct pt_swap_fence *f)
{
	uint64_t cur, want;
	char val[32];
	int rc;

	if (f->off)
		return;
	if (!f->saved[0]) {
		char path[PATH_MAX + 16];

		snprintf(path, sizeof(path), "%s/memory.swap.max", f->dir);
		if (pt_read_file(path, f->saved, sizeof(f->saved)) <= 0 ||
		    pt_cgroup_parse_u64(f->saved, &f->saved_bytes)) {
			f->off = true;	/* no swap accounting: drops as before */
			f->saved[0] = '\0';
			return;
		}
		f->saved[strcspn(f->saved, "\n")] = '\0';
	}
	if (pt_cgroup_read_u64(f->dir, "memory.swap.current", &cur))
		return;
	want = pt_swap_fence_value(cur, f->saved_bytes);
	if (!want || want == f->written)
		return;
	/* Kept before it is written: a crash after the write finds it. */
	rc = keep(f, f->written, want);
	if (rc) {
		pt_warn("%s: cannot keep %s (%s): drop not fenced", f->dir, f->state, strerror(-rc));
		f->off = true;
		pt_swap_fence_release(f);
		return;
	}
	snprintf(val, sizeof(val), "%" PRIu64, want);
	rc = pt_cgroup_write(f->dir, "memory.swap.max", val);
	if (rc) {
		pt_debug("%s: memory.swap.max=%s refused (%s): step not fenced", f->dir, val,
			 strerror(-rc));
		return;
	}
	f->written = want;
}

void pt_swap_fence_release(struct pt_swap_fence *f)
{
	if (f->written) {
		int rc = pt_cgroup_write(f->dir, "memory.swap.max", f->saved);

		/* Gone with its cgroup is fine; otherwise the state file stays for a restart. */
		if (rc && rc != -ENOENT) {
			pt_warn("%s: cannot put memory.swap.max back to %s (%s)", f->dir, f->saved,
				strerror(-rc));
			return;
		}
		f->written = 0;
	}
	if (f->state[0])
		unlink(f->state);
}

/* One state file: its cgroup's memory.swap.max back if it still holds a fence's value. */
static bool recover_one(const char *path)
{
	char line[PATH_MAX + 128], saved[32], dir[PATH_MAX];
	uint64_t prev, written, cur;
	bool back = false;
	int at = 0;
	FILE *in = fopen(path, "re");

	if (!in)
		return false;
	if (fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%" SCNu64 " %" SCNu64 " %31s %n", &prev, &written, saved, &at) == 3 &&
		    at && line[at] == '/') {
			snprintf(dir, sizeof(dir), "%s", line + at);
			if (!pt_cgroup_read_u64(dir, "memory.swap.max", &cur) &&
			    ((written && cur == written) || (prev && cur == prev)) &&
			    !pt_cgroup_write(dir, "memory.swap.max", saved)) {
				pt_info("%s: memory.swap.max put back to %s (a swap cache drop's fence left by a pagetierd that did not stop cleanly)",
					dir, saved);
				back = true;
			}
		}
	}
	fclose(in);
	return back;
}

unsigned int pt_swap_fence_recover(const char *runtime_dir)
{
	unsigned int n = 0;
	struct dirent *de;
	DIR *d;

	if (!runtime_dir || !runtime_dir[0] || !(d = opendir(runtime_dir)))
		return 0;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		size_t len = strlen(de->d_name);

		if (strncmp(de->d_name, STATE_PREFIX, strlen(STATE_PREFIX)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", runtime_dir, de->d_name);
		/* A .tmp was never renamed: the fence it was for is in the file before it. */
		if (len < 4 || strcmp(de->d_name + len - 4, ".tmp"))
			n += recover_one(path);
		unlink(path);
	}
	closedir(d);
	return n;
}
