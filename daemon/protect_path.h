/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's memory protection along a critical container's path.
 *
 * memory.low=max on a critical container alone protects nothing in the common case, for
 * two reasons measured in the VM (tests/e2e/critical_low.py):
 *
 * - A cgroup's protection is bounded by its ancestors' (cgroup-v2.rst: "Effective low
 *   boundary is limited by memory.low values of all ancestor cgroups"; a top-level
 *   cgroup's effective protection is its own value). Under a parent at 0, what a fresh
 *   cgroup, a systemd slice or a container runtime leaves, the host's reclaim took all 99
 *   MiB of a critical container on 6.1 and on 6.12.
 * - With the multi-gen LRU (6.12's default), memory.low is a hint: a protected cgroup is
 *   passed over once, then reclaimed (shrink_one() in mm/vmscan.c counts a "low" event and
 *   goes on). Only memory.min is skipped every time. With the parent's memory.low raised,
 *   6.12 still took all of it (54 "low" events); 6.1's classic LRU kept every page.
 *
 * So each ancestor below the cgroup root gets memory.low and memory.min, and the critical
 * container itself memory.min, covering what the critical containers under it use, plus
 * headroom: raised as they grow, lowered when they shrink a lot, never below what the
 * operator had set, and put back when no critical container is left under it or pagetierd
 * exits. Not "max": with memory_recursiveprot (how systemd mounts cgroup2) a parent's
 * unclaimed protection spreads to its other children, and the besteffort neighbours would
 * be protected too; and memory.min is a hard guarantee (the kernel goes to the OOM killer
 * before it takes protected memory), so it follows the critical containers' real use.
 * The critical container's own memory.low is "max": what it spreads to is its own child
 * cgroups, and it covers growth between two passes. Every value written is kept in the
 * state file, so that a pagetierd killed with them in place has them put back by the next.
 */
#ifndef PAGETIER_PROTECT_PATH_H
#define PAGETIER_PROTECT_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PT_PROTECT_GRANULE (32ULL << 20)	/* targets are multiples of this */

enum pt_protect_file { PT_PROTECT_LOW, PT_PROTECT_MIN, PT_PROTECT_FILES };

/* A cgroup pagetierd holds protection on: an ancestor, or a critical container itself. */
struct pt_protect_cgroup {
	char *relpath;			/* "/a/b" below the cgroup root */
	bool critical;			/* a critical container itself, this pass: memory.low "max" */
	char saved[PT_PROTECT_FILES][32];	/* the value before pagetierd wrote it, to put back */
	uint64_t saved_bytes[PT_PROTECT_FILES];	/* ... parsed (UINT64_MAX: "max") */
	uint64_t written[PT_PROTECT_FILES];	/* what pagetierd wrote last (0: nothing; UINT64_MAX: "max") */
	uint64_t need;			/* this pass: the critical containers' usage in it */
	bool failed;			/* a read or write was refused: warned once */
};

struct pt_protect_path {
	struct pt_protect_cgroup *c;
	size_t n, cap;
	uint64_t writes;	/* protection writes, for status and tests */
	/*
	 * Where what is written and what it replaced are kept (runtime_dir/protection), so
	 * that a pagetierd that did not stop cleanly (SIGKILL, a crash) puts the operator's
	 * values back when it starts again; "" keeps nothing.
	 */
	char state[4096];
};

/*
 * The protection for critical containers using @need bytes, given @written now: @written
 * while it covers @need with a sixteenth to spare and is at most twice @need plus a granule
 * (no write for every small move), else @need plus an eighth (a granule at least), rounded
 * up to a granule. 0 for @need 0.
 */
uint64_t pt_protect_target(uint64_t need, uint64_t written);

/* Starts a pass: every cgroup's need to 0. */
void pt_protect_path_begin(struct pt_protect_path *pp);

/* Adds @bytes used by the critical container at @relpath to it and to each ancestor. */
int pt_protect_path_add(struct pt_protect_path *pp, const char *relpath, uint64_t bytes);

/*
 * Ends a pass: writes each cgroup's protection under @root (its target, unless what the
 * operator had set already covers it), and puts back the saved values of those with no need
 * left. Returns the number of writes.
 */
unsigned int pt_protect_path_apply(struct pt_protect_path *pp, const char *root);

/*
 * For pagetierctl status: one "protection:" line per cgroup pagetierd holds values on
 * ("protection: /a memory.low 288 MiB, memory.min 288 MiB for 230 MiB of critical
 * containers"), and the same as a JSON array of {cgroup, need_bytes, low_bytes, min_bytes}
 * (0: not written by pagetierd).
 */
void pt_protect_path_status_text(FILE *out, const struct pt_protect_path *pp);
void pt_protect_path_status_json(FILE *out, const struct pt_protect_path *pp);

/* Puts every value back (pagetierd exits) and frees the table. */
void pt_protect_path_release(struct pt_protect_path *pp, const char *root);

/*
 * At start: the values a previous pagetierd left in @pp->state (it did not stop cleanly)
 * are put back under @root where the cgroup still holds what it wrote; the file is removed.
 * Returns the number of values put back.
 */
unsigned int pt_protect_path_recover(struct pt_protect_path *pp, const char *root);

#endif
