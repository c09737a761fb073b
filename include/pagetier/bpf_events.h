/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Events the BPF programs send to pagetierd through one BPF ring buffer, and the per-cgroup
 * state both sides share through the opted-in cgroup map. Included by pagetier.bpf.c (types
 * from vmlinux.h) and by the daemon (types from <linux/types.h>): fixed sizes, no pointers.
 *
 * A record is never changed incompatibly: new fields go into the reserved space or a new
 * type, and PT_BPF_EVENT_VERSION goes up.
 */
#ifndef PAGETIER_BPF_EVENTS_H
#define PAGETIER_BPF_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PT_BPF_EVENT_VERSION 1

enum pt_bpf_event_type {
	/* A user page fault of a task in the cgroup (sampled). addr: faulting address,
	 * extra: x86 error code. flags: log2 of the sampling ratio. */
	PT_BPF_EV_FAULT = 1,
	/* A page read back from swap by a task of the cgroup (a refault if we offloaded
	 * it). addr: 0, extra: the swap entry (type and offset, swp_entry_t.val). */
	PT_BPF_EV_SWAPIN = 2,
	/* A task of the cgroup was woken. pid/tid: the woken task, not the waker.
	 * extra: ns since the previous wakeup seen in this cgroup, in whole ticks (0: the same
	 * tick; U64_MAX for the first one), so a wake after a quiet period is told from
	 * ongoing activity. */
	PT_BPF_EV_WAKEUP = 3,
	/* A packet delivered to a socket owned by the cgroup that may carry a request (not a
	 * TCP segment without data other than a SYN: an ACK, FIN, RST or keepalive probe is
	 * a connection's housekeeping). pid/tid: 0 (softirq context).
	 * extra: the packet length, flags: its ethertype (host order). Or a message read from
	 * a unix stream socket by a task of the cgroup: flags 1 (AF_UNIX), pid/tid: the
	 * reader, extra: 0. */
	PT_BPF_EV_NET = 4,
	PT_BPF_EV_MAX = 5
};

struct pt_bpf_event {
	__u32 type;		/* enum pt_bpf_event_type */
	__u32 flags;		/* per type, see above */
	__u64 cgroup_id;	/* the report id of the matched map entry (see pt_bpf_cgroup) */
	__u64 time_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 pid;		/* tgid */
	__u32 tid;
	__u64 addr;
	__u64 extra;
};				/* 48 bytes */

/*
 * Value of the opted-in map (key: cgroup id, the cgroup directory's inode number). The
 * daemon writes report_id (the id of the opted-in cgroup: itself, or the ancestor it belongs
 * to when the daemon adds descendants of a container's cgroup) and zeroes the rest; the
 * rest is rate-limiting state the BPF side updates without locks (races only make a limit
 * off by one).
 */
struct pt_bpf_cgroup {
	__u64 report_id;
	__u64 last_emit_j[PT_BPF_EV_MAX];	/* min-interval limit, in jiffies (wakeups,
						 * packets; an active cgroup's faults and
						 * swap-ins) */
	__u64 last_seen_j;			/* last wakeup seen, emitted or not (jiffies) */
	__u64 win_start_ns[PT_BPF_EV_MAX];	/* window limit (an idle cgroup's faults, swap-ins) */
	__u32 win_count[PT_BPF_EV_MAX];
	/*
	 * 1: each event wakes pagetierd at once (an idle context: a packet or a refault may be
	 * its wake); 0: events wait in the ring for its next tick (an active context, where they
	 * only count), which spares the daemon a wakeup per event. Set by the daemon.
	 */
	__u32 wake_daemon;
};

/* Per-CPU counters (array map "pt_stats"), index = type * PT_BPF_STAT_NR + stat. */
enum pt_bpf_stat {
	PT_BPF_STAT_SEEN,	/* passed the cgroup filter */
	PT_BPF_STAT_EMITTED,	/* written to the ring buffer */
	PT_BPF_STAT_LIMITED,	/* sampled out, deduplicated or rate-limited */
	PT_BPF_STAT_NR
};

/* Maximum number of opted-in cgroups (entries, including descendants) in the map. */
#define PT_BPF_MAX_CGROUPS 4096

#endif
