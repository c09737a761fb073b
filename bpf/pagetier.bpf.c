// SPDX-License-Identifier: GPL-2.0
/*
 * pagetier's kernel-side signals for opted-in cgroups: user page faults (sampled), swap-ins,
 * task wakeups and ingress packets, all into one ring buffer read by pagetierd.
 *
 * Every program first looks its cgroup up in pt_cgroups (filled by the daemon) and returns
 * at once for any other cgroup, so the cost on the rest of the host is one hash lookup. Then
 * each type is bounded so that a storm cannot flood the ring or the daemon:
 *   faults    1 in 2^fault_sample_shift (random), the same page twice in a row on a CPU is
 *             dropped, and at most win_max events per cgroup per win_ns window while the
 *             cgroup is idle (wake_daemon: a burst of them may be its wake), at most one per
 *             active_min_interval_ns while it is active (they only make it due for a sample);
 *   swap-ins  the same limits as faults (each one matters to an idle cgroup's wake);
 *   wakeups   at most one per cgroup per wake_min_interval_ns;
 *   packets   at most one per cgroup per net_min_interval_ns.
 * The per-interval limits count in jiffies (bpf_jiffies64(), a load of a variable), not with
 * bpf_ktime_get_ns(), which reads the clocksource: the wakeup and packet programs run for
 * every wakeup and packet of an opted-in cgroup, the critical service's own included, and
 * where the clocksource is not the TSC (Debian's 6.1 in the test VM marks it unstable and
 * keeps time with the HPET, an emulated device register) that read is a large part of
 * their cost: under QEMU TCG on 6.1, 8-10 us a run with the clock read, 5-6 without
 * (bench/density, 2026-11-30). The clock is read for what is emitted (its time_ns) and
 * for an idle cgroup's 10 ms windows, whose events are few.
 * A failed bpf_ringbuf_reserve() is counted per CPU in pt_drops. Only the events of cgroups
 * the daemon marked wake_daemon (idle ones) wake it; the others wait for its next tick.
 *
 * Programs exist in two flavours so that the loader can pick what the running kernel has:
 * tp_btf/fentry (BTF, cheapest) and raw_tp/kprobe (no BTF trampolines needed). Swap-in has one
 * program per kernel function name: swap_readpage (6.1) and swap_read_folio (6.12), and the
 * mm_lru_insertion tracepoint for kernels with neither trampolines nor kprobes.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "pagetier/bpf_events.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Tunables, set by the loader before load (rodata). The intervals are in jiffies (the
 * loader's pt_bpf_interval_jiffies(): an event may follow the last one after more than that
 * many ticks, so at least the interval asked for has passed); jiffy_ns is one tick.
 */
const volatile __u32 fault_sample_shift = 6;			/* 1 in 64 */
const volatile __u64 win_ns = 10 * 1000 * 1000ULL;		/* 10 ms */
const volatile __u32 win_max = 64;				/* per cgroup, type, window */
const volatile __u64 jiffy_ns = 4 * 1000 * 1000ULL;		/* HZ = 250 */
const volatile __u64 wake_min_interval_j = 25;			/* 100 ms */
const volatile __u64 net_min_interval_j = 25;
const volatile __u64 active_min_interval_j = 25;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PT_BPF_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct pt_bpf_cgroup);
} pt_cgroups SEC(".maps");

/*
 * 1 MiB: one tick's events (the daemon reads the ring every poll_interval, 500 ms) of 600
 * active cgroups at their limits (faults, swap-ins, wakeups and packets at 10 a second
 * each, 56 bytes a record with its header) is 670 KiB. A lost record makes the daemon
 * sample every container at that tick (manager.c, events_lost).
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} pt_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PT_BPF_EV_MAX);
	__type(key, __u32);
	__type(value, __u64);
} pt_drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PT_BPF_EV_MAX * PT_BPF_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} pt_stats SEC(".maps");

/* The last faulting page per CPU, to drop a task faulting on the same page in a loop. */
struct fault_last {
	__u64 cgroup_id;
	__u64 page;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fault_last);
} pt_fault_last SEC(".maps");

static __always_inline void stat_inc(__u32 type, __u32 stat)
{
	__u32 key = type * PT_BPF_STAT_NR + stat;
	__u64 *v = bpf_map_lookup_elem(&pt_stats, &key);

	if (v)
		*v += 1;	/* per-CPU: no atomics needed */
}

static __always_inline struct pt_bpf_cgroup *lookup_cgroup(__u64 cgid, __u32 type)
{
	struct pt_bpf_cgroup *cg = bpf_map_lookup_elem(&pt_cgroups, &cgid);

	if (cg)
		stat_inc(type, PT_BPF_STAT_SEEN);
	return cg;
}

/* More than @interval jiffies since the last event of this cgroup and type; 0: no limit. */
static __always_inline bool interval_due(struct pt_bpf_cgroup *cg, __u32 type, __u64 now_j,
					 __u64 interval)
{
	if (type >= PT_BPF_EV_MAX)
		return false;
	return !interval || now_j - cg->last_emit_j[type] > interval;
}

/* At most one event per @interval jiffies (and a tick) per cgroup and type. */
static __always_inline bool interval_ok(struct pt_bpf_cgroup *cg, __u32 type, __u64 now_j,
					__u64 interval)
{
	if (!interval_due(cg, type, now_j, interval))
		return false;
	cg->last_emit_j[type] = now_j;
	return true;
}

/* At most win_max events per cgroup and type in each win_ns window. */
static __always_inline bool window_ok(struct pt_bpf_cgroup *cg, __u32 type, __u64 now)
{
	if (type >= PT_BPF_EV_MAX)
		return false;
	if (now - cg->win_start_ns[type] >= win_ns) {
		cg->win_start_ns[type] = now;
		cg->win_count[type] = 0;
	}
	if (cg->win_count[type] >= win_max)
		return false;
	cg->win_count[type]++;
	return true;
}

/*
 * Faults and swap-ins: an idle cgroup's (wake_daemon) in windows, since a burst of them
 * is its wake and the daemon counts them; an active cgroup's at most one per
 * active_min_interval_ns, since there they only make the context due for its next sample
 * (activity.c: refaults of an active context are its work). Without this, 600 active
 * containers filled the ring within a tick (bench/scale, 20% of 3,000).
 */
static __always_inline bool demand_ok(struct pt_bpf_cgroup *cg, __u32 type, __u64 *now)
{
	if (cg->wake_daemon) {
		*now = bpf_ktime_get_ns();
		return window_ok(cg, type, *now);
	}
	return interval_ok(cg, type, bpf_jiffies64(), active_min_interval_j);
}

/* @now: the event's time if it was read already, 0 to read it here. */
static __always_inline int emit(struct pt_bpf_cgroup *cg, __u32 type, __u32 flags, __u64 now,
				__u32 pid, __u32 tid, __u64 addr, __u64 extra)
{
	struct pt_bpf_event *e;
	__u32 key = type;

	if (!now)
		now = bpf_ktime_get_ns();
	e = bpf_ringbuf_reserve(&pt_events, sizeof(*e), 0);
	if (!e) {
		__u64 *drops = bpf_map_lookup_elem(&pt_drops, &key);

		if (drops)
			*drops += 1;
		return 0;
	}
	e->type = type;
	e->flags = flags;
	e->cgroup_id = cg->report_id;
	e->time_ns = now;
	e->pid = pid;
	e->tid = tid;
	e->addr = addr;
	e->extra = extra;
	bpf_ringbuf_submit(e, cg->wake_daemon ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	stat_inc(type, PT_BPF_STAT_EMITTED);
	return 0;
}

static __always_inline void limited(__u32 type)
{
	stat_inc(type, PT_BPF_STAT_LIMITED);
}

/* --- user page faults ------------------------------------------------------------------ */

static __always_inline int on_fault(__u64 address, __u64 error_code)
{
	struct pt_bpf_cgroup *cg;
	struct fault_last *last;
	__u64 cgid, id, now, page;
	__u32 zero = 0;

	cgid = bpf_get_current_cgroup_id();
	cg = lookup_cgroup(cgid, PT_BPF_EV_FAULT);
	if (!cg)
		return 0;
	page = address >> 12;
	last = bpf_map_lookup_elem(&pt_fault_last, &zero);
	if (last) {
		if (last->cgroup_id == cgid && last->page == page) {
			limited(PT_BPF_EV_FAULT);
			return 0;
		}
		last->cgroup_id = cgid;
		last->page = page;
	}
	if (fault_sample_shift &&
	    (bpf_get_prandom_u32() & ((1U << (fault_sample_shift & 31)) - 1))) {
		limited(PT_BPF_EV_FAULT);
		return 0;
	}
	now = 0;
	if (!demand_ok(cg, PT_BPF_EV_FAULT, &now)) {
		limited(PT_BPF_EV_FAULT);
		return 0;
	}
	id = bpf_get_current_pid_tgid();
	return emit(cg, PT_BPF_EV_FAULT, fault_sample_shift, now, id >> 32, (__u32)id, address,
		    error_code);
}

/* trace_page_fault_user(address, regs, error_code): runs in the faulting task. */
SEC("tp_btf/page_fault_user")
int BPF_PROG(pt_fault_btf, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	return on_fault(address, error_code);
}

SEC("raw_tp/page_fault_user")
int BPF_PROG(pt_fault_raw, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	return on_fault(address, error_code);
}

/* --- swap-ins --------------------------------------------------------------------------- */

/*
 * Attributed to the current task: swap-in is synchronous in the faulting task (do_swap_page
 * and its readahead). A MADV_WILLNEED prefetch issued by the daemon runs in the daemon's
 * cgroup and is filtered out, which is what we want: only the container's own refaults.
 */
static __always_inline int on_swapin(__u64 entry)
{
	struct pt_bpf_cgroup *cg;
	__u64 id, now;

	cg = lookup_cgroup(bpf_get_current_cgroup_id(), PT_BPF_EV_SWAPIN);
	if (!cg)
		return 0;
	now = 0;
	if (!demand_ok(cg, PT_BPF_EV_SWAPIN, &now)) {
		limited(PT_BPF_EV_SWAPIN);
		return 0;
	}
	id = bpf_get_current_pid_tgid();
	return emit(cg, PT_BPF_EV_SWAPIN, 0, now, id >> 32, (__u32)id, 0, entry);
}

/* The swap entry of a folio in the swap cache: folio->swap (6.12), page->private (6.1). */
static __always_inline __u64 folio_swap_entry(struct folio *folio)
{
	if (bpf_core_field_exists(folio->swap))
		return BPF_CORE_READ(folio, swap.val);
	return BPF_CORE_READ((struct page *)folio, private);
}

/* 6.12: void swap_read_folio(struct folio *folio, struct swap_iocb **plug) */
SEC("fentry/swap_read_folio")
int BPF_PROG(pt_swapin_folio, struct folio *folio)
{
	return on_swapin(folio_swap_entry(folio));
}

/* 6.1: int swap_readpage(struct page *page, bool synchronous, struct swap_iocb **plug) */
SEC("fentry/swap_readpage")
int BPF_PROG(pt_swapin_page, struct page *page)
{
	return on_swapin(BPF_CORE_READ(page, private));
}

SEC("kprobe/swap_read_folio")
int BPF_KPROBE(pt_swapin_folio_kp, struct folio *folio)
{
	return on_swapin(folio_swap_entry(folio));
}

SEC("kprobe/swap_readpage")
int BPF_KPROBE(pt_swapin_page_kp, struct page *page)
{
	return on_swapin(BPF_CORE_READ(page, private));
}

/*
 * Where the kernel has no BPF trampolines (fentry) and no kprobes, as some distribution
 * and cloud kernels: the LRU insertion tracepoint. A swapped-in folio enters the LRU
 * once, in the swap cache, clean and not under write-back; the per-CPU LRU batch is
 * drained by the task that fills it, the faulting task, so the current task attributes
 * it as with the probes above (and the daemon's own MADV_WILLNEED stays out). The
 * folio's memcg is not used: on a cgroup v1 host it is not in the cgroup2 hierarchy the
 * filter keys on. A swap-cache folio that a reclaim attempt by the container's own task
 * puts back can pass too: rare, and only ever a wake signal for a container that runs.
 */
static __always_inline bool folio_flag(struct folio *folio, unsigned int bit)
{
	unsigned long flags = 0;

	/* folio->flags is an unsigned long, or (6.17+) a struct holding one. */
	bpf_core_read(&flags, sizeof(flags), &folio->flags);
	return flags & (1UL << bit);
}

static __always_inline int on_lru_insertion(struct folio *folio)
{
	if (!folio_flag(folio, bpf_core_enum_value(enum pageflags, PG_swapbacked)) ||
	    !folio_flag(folio, bpf_core_enum_value(enum pageflags, PG_swapcache)) ||
	    folio_flag(folio, bpf_core_enum_value(enum pageflags, PG_dirty)) ||
	    folio_flag(folio, bpf_core_enum_value(enum pageflags, PG_writeback)))
		return 0;
	return on_swapin(folio_swap_entry(folio));
}

SEC("tp_btf/mm_lru_insertion")
int BPF_PROG(pt_swapin_lru_btf, struct folio *folio)
{
	return on_lru_insertion(folio);
}

SEC("raw_tp/mm_lru_insertion")
int BPF_PROG(pt_swapin_lru_raw, struct folio *folio)
{
	return on_lru_insertion(folio);
}

/* --- wakeups ---------------------------------------------------------------------------- */

/*
 * The tracepoint runs in the waker's context: the cgroup is the woken task's, read from its
 * css_set (the default hierarchy's cgroup, whose kernfs id is the cgroup id).
 */
static __always_inline int wakeup_in(__u64 cgid, struct task_struct *p)
{
	struct pt_bpf_cgroup *cg;
	__u64 now_j, gap;

	cg = lookup_cgroup(cgid, PT_BPF_EV_WAKEUP);
	if (!cg)
		return 0;
	now_j = bpf_jiffies64();
	gap = cg->last_seen_j ? (now_j - cg->last_seen_j) * jiffy_ns : ~0ULL;
	/* Written only when it moved by a tick, to keep a busy cgroup's entry cache-friendly. */
	if (now_j != cg->last_seen_j)
		cg->last_seen_j = now_j;
	if (!interval_ok(cg, PT_BPF_EV_WAKEUP, now_j, wake_min_interval_j)) {
		limited(PT_BPF_EV_WAKEUP);
		return 0;
	}
	return emit(cg, PT_BPF_EV_WAKEUP, 0, 0, BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, pid),
		    0, gap);
}

static __always_inline int on_wakeup(struct task_struct *p)
{
	return wakeup_in(BPF_CORE_READ(p, cgroups, dfl_cgrp, kn, id), p);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(pt_wakeup_btf, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(pt_wakeup_raw, struct task_struct *p)
{
	return on_wakeup(p);
}

/*
 * A new task's first run is no sched_wakeup: without this, a fork (or a clone into a cgroup)
 * in a quiet container is seen only at pagetierd's next safety sample.
 */
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(pt_wakeup_new_btf, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(pt_wakeup_new_raw, struct task_struct *p)
{
	return on_wakeup(p);
}

/*
 * A task moved into a cgroup (a write to cgroup.procs) may be running already, and then it
 * wakes nobody: the move itself is the event, in the destination cgroup. Once per move (the
 * leader, for a whole thread group).
 */
static __always_inline int on_attach(struct cgroup *dst, struct task_struct *p)
{
	return wakeup_in(BPF_CORE_READ(dst, kn, id), p);
}

SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(pt_attach_btf, struct cgroup *dst, const char *path, struct task_struct *p)
{
	return on_attach(dst, p);
}

SEC("raw_tp/cgroup_attach_task")
int BPF_PROG(pt_attach_raw, struct cgroup *dst, const char *path, struct task_struct *p)
{
	return on_attach(dst, p);
}

/* --- ingress packets -------------------------------------------------------------------- */

/*
 * Requests over unix stream sockets (a database's local clients, sidecars): no packet
 * reaches cgroup_skb for them, so a read that returned data is the signal, in the reading
 * task's cgroup. Counted as a packet (flags AF_UNIX), under the same per-cgroup interval.
 * On return, not on entry: a server whose socket is non-blocking calls recvmsg again each
 * time its event loop wakes for anything else (PostgreSQL's idle backend does when its
 * statistics timer sets its latch, about 10 s after its last query) and gets -EAGAIN,
 * which is no request; and a blocking reader enters recvmsg long before the request comes.
 */
static __always_inline int on_unix_recv(long ret)
{
	struct pt_bpf_cgroup *cg;
	__u64 id;

	if (ret <= 0)
		return 0;
	cg = lookup_cgroup(bpf_get_current_cgroup_id(), PT_BPF_EV_NET);
	if (!cg)
		return 0;
	if (!interval_ok(cg, PT_BPF_EV_NET, bpf_jiffies64(), net_min_interval_j)) {
		limited(PT_BPF_EV_NET);
		return 0;
	}
	id = bpf_get_current_pid_tgid();
	return emit(cg, PT_BPF_EV_NET, 1 /* AF_UNIX */, 0, id >> 32, (__u32)id, 0, 0);
}

/* static int unix_stream_recvmsg(struct socket *sock, struct msghdr *msg, size_t size, int flags) */
SEC("fexit/unix_stream_recvmsg")
int BPF_PROG(pt_unix_recv, struct socket *sock, struct msghdr *msg, size_t size, int flags,
	     int ret)
{
	return on_unix_recv(ret);
}

SEC("kretprobe/unix_stream_recvmsg")
int BPF_KRETPROBE(pt_unix_recv_kp, int ret)
{
	return on_unix_recv(ret);
}

#define PT_TCP_SYN 0x02	/* in the TCP header's flags byte (13) */

/*
 * Whether a packet may carry a request: anything but a TCP segment without data that is not
 * a SYN. An ACK, a FIN, a RST or a keepalive probe is a connection's housekeeping, and it
 * comes on its own long after the last request: nginx closes an idle keep-alive connection
 * 75 s after its last request, and the client's ACK of that FIN woke the idle nginx of
 * real_servers for nothing (a prefetch, then an offload again). A SYN is the first packet of
 * a request on a new connection: the earliest sign of it. The packet starts at its network
 * header here (cgroup_skb); an IPv6 packet with extension headers before TCP counts, as do
 * packets the program cannot read.
 */
static __always_inline bool may_carry_request(struct __sk_buff *skb)
{
	__u32 ip_len, tcp_len;
	__u8 ip[40], tcp[14];
	__u16 proto = bpf_ntohs((__u16)skb->protocol);

	if (proto == 0x0800) {		/* ETH_P_IP */
		if (bpf_skb_load_bytes(skb, 0, ip, 20))
			return true;
		if (ip[9] != IPPROTO_TCP)
			return true;
		ip_len = (ip[0] & 0x0f) * 4;
	} else if (proto == 0x86dd) {	/* ETH_P_IPV6 */
		if (bpf_skb_load_bytes(skb, 0, ip, 40))
			return true;
		if (ip[6] != IPPROTO_TCP)
			return true;
		ip_len = 40;
	} else {
		return true;
	}
	if (ip_len < 20 || ip_len > 60 || bpf_skb_load_bytes(skb, ip_len, tcp, sizeof(tcp)))
		return true;
	if (tcp[13] & PT_TCP_SYN)
		return true;
	tcp_len = (tcp[12] >> 4) * 4;
	return skb->len > ip_len + tcp_len;
}

/*
 * Attached once to the cgroup2 root (multi), so it runs for every packet delivered to a
 * local socket, after the stack has found the socket. bpf_skb_cgroup_id() is the cgroup of
 * that socket (the cgroup of the task that created it): the receiving container, even though
 * this runs in softirq context on whatever task the CPU happened to run. A tracepoint such as
 * net/netif_receive_skb fires before the socket lookup and so cannot be attributed. Only a
 * packet that may carry a request counts (may_carry_request); the others neither emit nor
 * use up the interval. Always lets the packet through.
 */
SEC("cgroup_skb/ingress")
int pt_ingress(struct __sk_buff *skb)
{
	struct pt_bpf_cgroup *cg;
	__u64 now_j;

	cg = lookup_cgroup(bpf_skb_cgroup_id(skb), PT_BPF_EV_NET);
	if (!cg)
		return 1;
	now_j = bpf_jiffies64();
	if (!interval_due(cg, PT_BPF_EV_NET, now_j, net_min_interval_j) ||
	    !may_carry_request(skb)) {
		limited(PT_BPF_EV_NET);
		return 1;
	}
	cg->last_emit_j[PT_BPF_EV_NET] = now_j;
	emit(cg, PT_BPF_EV_NET, bpf_ntohs((__u16)skb->protocol), 0, 0, 0, 0, skb->len);
	return 1;
}
