/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Loads pagetier's BPF programs (bpf/pagetier.bpf.c, embedded as a libbpf skeleton) into the
 * running kernel, attaches what the kernel has, and hands the daemon the events of opted-in
 * cgroups. Optional: when BPF is unavailable (no BTF, no privileges, an old kernel) open
 * fails with a reason and the daemon runs without it.
 *
 * Each signal ("fault", "swapin", "wakeup", "wakeup_new", "attach", "net", "unix") has
 * candidate programs in order of preference (tp_btf/fentry first, raw_tp/kprobe otherwise;
 * swap_read_folio on 6.12, swap_readpage on 6.1). Programs whose target the kernel lacks
 * are not loaded; one that fails to load or attach is replaced by the next candidate; a
 * signal without a working candidate is left out and reported, the others still run.
 */
#ifndef PAGETIER_BPF_LOADER_H
#define PAGETIER_BPF_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pagetier/bpf_events.h"

struct pt_bpf;

struct pt_bpf_opts {
	uint32_t fault_sample_shift;	/* report 1 in 2^shift user faults (0: every one) */
	uint64_t win_ns;		/* an idle cgroup's fault and swap-in rate window */
	uint32_t win_max;		/* events per cgroup and type per window */
	uint64_t active_min_interval_ns;	/* an active cgroup's: at most one per interval */
	uint64_t wake_min_interval_ns;	/* at most one wakeup event per cgroup per interval */
	uint64_t net_min_interval_ns;	/* at most one packet event per cgroup per interval */
	const char *cgroup2_root;	/* where to attach cgroup_skb; NULL: found in mounts */
};

/* The defaults pt_bpf_open() uses: 1/64 faults, 64 per 10 ms, wakeups/packets 10/s. */
void pt_bpf_default_opts(struct pt_bpf_opts *opts);

/*
 * The programs count the per-interval limits in jiffies (pagetier.bpf.c says why): an event
 * passes when more than this many ticks of @jiffy_ns have gone by since the last, so at
 * least @ns has (up to two ticks more). @jiffy_ns is one tick, as
 * clock_getres(CLOCK_MONOTONIC_COARSE) gives it (the kernel's TICK_NSEC); 0 is taken as
 * 4 ms (HZ = 250).
 */
static inline uint64_t pt_bpf_interval_jiffies(uint64_t ns, uint64_t jiffy_ns)
{
	if (!jiffy_ns)
		jiffy_ns = 4000000;
	return (ns + jiffy_ns - 1) / jiffy_ns;
}

/*
 * Opens, loads and attaches. On success *out is set and @report lists what was attached,
 * e.g. "fault=tp_btf/page_fault_user swapin=fentry/swap_read_folio ...", and what was not
 * ("net=none(...)"). On failure returns a negative errno and @report says why.
 */
int pt_bpf_open(struct pt_bpf **out, char *report, size_t len);
int pt_bpf_open_opts(struct pt_bpf **out, const struct pt_bpf_opts *opts, char *report,
		     size_t len);

/* The attached programs, as "signal=section/target" strings; returns how many (<= max). */
size_t pt_bpf_attached(const struct pt_bpf *b, const char **names, size_t max);

/*
 * Opts a cgroup in: events of tasks (and sockets) in the cgroup with id @id (its directory's
 * inode number) are reported. _add_cgroup_as reports them under @report_id instead, for the
 * descendants of a container's cgroup (the map matches exact ids, not subtrees).
 * 0, -ENOSPC when the map is full, or another negative errno.
 */
int pt_bpf_add_cgroup(struct pt_bpf *b, uint64_t id);
int pt_bpf_add_cgroup_as(struct pt_bpf *b, uint64_t id, uint64_t report_id);
/* 0 or -ENOENT when it was not opted in. */
int pt_bpf_del_cgroup(struct pt_bpf *b, uint64_t id);
/*
 * Whether events of cgroup @id wake the reader at once (@on, the default for a cgroup just
 * opted in) or wait in the ring until it next polls (the events of a context that is
 * active only count, and a wakeup per event costs the daemon more than the event).
 * 0 or -ENOENT when it is not opted in.
 */
int pt_bpf_set_wake(struct pt_bpf *b, uint64_t id, bool on);

/* An fd that is readable (epoll) when events are waiting. */
int pt_bpf_fd(const struct pt_bpf *b);

/* Called per event; a negative return stops the poll and is returned by it. */
typedef int (*pt_bpf_event_fn)(const struct pt_bpf_event *e, void *arg);

/* Consumes the waiting events without blocking; the number consumed or a negative errno. */
int pt_bpf_poll(struct pt_bpf *b, pt_bpf_event_fn fn, void *arg);

/* Events lost because the ring buffer was full, summed over CPUs and types. */
uint64_t pt_bpf_drops(const struct pt_bpf *b);
/* One per-CPU-summed counter: @type an enum pt_bpf_event_type, @stat an enum pt_bpf_stat. */
uint64_t pt_bpf_stat(const struct pt_bpf *b, unsigned int type, unsigned int stat);

void pt_bpf_close(struct pt_bpf *b);

#endif
