/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The idle/wake state machine of one memory context. Pure: fed observations and a clock, it
 * says when the context went idle and when it woke. No I/O, unit tested.
 *
 *   active --(quiet for idle_threshold)--> idle --(wake signal)--> waking
 *   waking --(prefetch issued: pt_idle_wake_done)--> active
 *
 * Idle means "not serving", not "no CPU at all": every real server runs timers, health
 * checks, garbage-collector or clock threads, and housekeeping that runs now and then (an
 * autovacuum worker, a cache's LRU maintenance). It is busy when one of these is seen:
 *  - CPU: its CPU share averaged over the last idle_threshold above cpu_permille of one CPU
 *    (an average, so that a burst of housekeeping does not count as work);
 *  - ingress packets (BPF): more than max_packets within the last idle_threshold. The
 *    tolerance is for health checks; 0 (the default) makes any packet activity;
 *  - memory: an access scan (one per epoch) found more than working_set_bytes touched, or
 *    more than fresh_bytes of memory touched that was not touched in the epochs just
 *    before. Timers touch the same small set over and over; serving requests, or any real
 *    work, touches much memory, or memory it did not touch a moment ago. (The daemon feeds
 *    this only when its scanner can tell pages apart.)
 * It goes idle when none of them has been seen for idle_threshold. While idle it wakes on
 * packets beyond the tolerance, on refaults (swap-ins, demand reads of its pages on the
 * tier, page faults) at more than wake_pages per second, over a second or its first quarter
 * (a few stray ones, a timer touching a page that was offloaded, come back on their own
 * without waking the whole container),
 * and on sustained CPU: its average over the last PT_IDLE_WAKE_CPU_MS above the share.
 *
 * A wake by refaults can be the container's own timers: PostgreSQL's background processes
 * read 16 pages of their shared memory in 4 to 24 ms right after its idle offload, as fast
 * as an application reading its memory back, three times in eight seconds (real_servers on
 * 6.12), each wake a prefetch and each idle period an offload. The rate cannot tell them
 * apart; what follows can: a false wake goes idle again as soon as it may (within
 * PT_IDLE_FALSE_WAKE_THRESHOLDS idle thresholds of its prefetch's end) with nothing seen
 * after the prefetch. Each false wake doubles the refaults that wake this context (up to
 * 2^PT_IDLE_FALSE_WAKE_MAX_SHIFT times wake_pages); a wake by refaults that was followed by
 * work sets it back. Other wake signals (packets, sustained CPU, a poke) are untouched.
 */
#ifndef PAGETIER_IDLE_H
#define PAGETIER_IDLE_H

#include <stdbool.h>
#include <stdint.h>

enum pt_state { PT_STATE_ACTIVE, PT_STATE_IDLE, PT_STATE_WAKING };
enum pt_idle_event { PT_EV_NONE, PT_EV_WENT_IDLE, PT_EV_WOKE };

/* While idle, CPU above the share on average over this long (or idle_threshold) wakes. */
#define PT_IDLE_WAKE_CPU_MS 10000
/* CPU usage marks kept: the idle window's (one per threshold/PT_IDLE_MARKS) and the wake's. */
#define PT_IDLE_MARKS 48
#define PT_IDLE_WAKE_MARKS 12
/*
 * Refaults are counted over windows of this length; wake_pages / PT_IDLE_REFAULT_EARLY_DIV
 * of them within the window's first 1 / PT_IDLE_REFAULT_EARLY_DIV (the same rate) wake too.
 */
#define PT_IDLE_REFAULT_WINDOW_MS 1000
#define PT_IDLE_REFAULT_EARLY_DIV 4
/* A false wake by refaults: idle again this many thresholds after its prefetch, at most. */
#define PT_IDLE_FALSE_WAKE_THRESHOLDS 2
/* False wakes in a row that double the refaults needed to wake, at most. */
#define PT_IDLE_FALSE_WAKE_MAX_SHIFT 3
/* At most this many ingress packets are remembered, so max_packets is at most this - 1. */
#define PT_IDLE_PACKET_RING 64

/* Why a context was last seen busy (for logs and status). */
enum pt_idle_cause {
	PT_CAUSE_NONE,
	PT_CAUSE_CPU,
	PT_CAUSE_PACKETS,
	PT_CAUSE_MEMORY,
	PT_CAUSE_REFAULTS,
	PT_CAUSE_SIGNAL,	/* an external wake signal: preload activity, pagetierctl */
};

struct pt_idle_params {
	uint64_t threshold_ms;		/* quiet this long: idle */
	uint32_t cpu_permille;		/* CPU share of one CPU a quiet context may use */
	uint32_t max_packets;		/* ingress packets tolerated per threshold_ms */
	uint64_t working_set_bytes;	/* memory per epoch a quiet context may touch */
	uint64_t fresh_bytes;		/* ... of which newly touched (not in the epochs before) */
	uint64_t wake_pages;		/* refaulted pages per second that wake an idle context */
};

/* Marks of cumulative CPU usage over time, from which an average over a span is read. */
struct pt_cpu_marks {
	uint64_t ms[PT_IDLE_MARKS];
	uint64_t usec[PT_IDLE_MARKS];
	unsigned int head, n, cap;
	uint64_t interval_ms;		/* between marks */
};

struct pt_idle {
	enum pt_state state;
	bool primed;			/* CPU marks exist */
	uint64_t last_usage_usec;
	uint64_t last_sample_ms;
	uint64_t last_cpu_busy_ms;	/* last sample above the share since the one before */
	struct pt_cpu_marks window;	/* over idle_threshold: whether it may go idle */
	struct pt_cpu_marks recent;	/* over PT_IDLE_WAKE_CPU_MS: whether it woke */
	uint32_t cpu_permille_now;	/* the average over the idle window at the last sample */
	uint64_t last_active_ms;	/* last busy signal but CPU (packets, memory, ...) */
	enum pt_idle_cause cause;	/* what was seen then */
	uint64_t idle_since_ms;
	uint64_t woke_at_ms;
	uint64_t pkt_ms[PT_IDLE_PACKET_RING];	/* times of the latest packets (ring) */
	unsigned int pkt_head;
	uint64_t refault_win_ms;	/* start of the current refault window (its first) */
	uint64_t refault_win_pages;
	/* The refaults of the last wake by refaults: how many, over how long (its log line). */
	uint64_t woke_refault_pages;
	uint64_t woke_refault_span_ms;
	enum pt_idle_cause woke_cause;	/* what woke it last */
	uint64_t wake_done_ms;		/* the last wake's prefetch ended (pt_idle_wake_done) */
	bool busy_since_wake;		/* a busy signal came after the wake that woke it */
	/* Refaults wake it at wake_pages << refault_shift: false wakes in a row (capped). */
	unsigned int refault_shift;
	bool last_wake_false;		/* set as it went idle: its last wake was false */
	uint64_t false_wakes;		/* counted since the context was made */
};

void pt_idle_init(struct pt_idle *t, uint64_t now_ms);
/* Rejects out-of-range parameters: 0 or -EINVAL. */
int pt_idle_params_check(const struct pt_idle_params *p);

/*
 * A CPU sample (the cgroup's cumulative usage_usec), every poll. Also where an active
 * context that has been quiet for threshold_ms goes idle: PT_EV_WENT_IDLE.
 */
enum pt_idle_event pt_idle_cpu(struct pt_idle *t, const struct pt_idle_params *p,
			       uint64_t usage_usec, uint64_t now_ms);
/* An ingress packet seen by BPF. */
enum pt_idle_event pt_idle_packet(struct pt_idle *t, const struct pt_idle_params *p,
				  uint64_t now_ms);
/*
 * An epoch's access scan: @touched_bytes accessed, @fresh_bytes of them not touched in the
 * epochs just before.
 */
enum pt_idle_event pt_idle_memory(struct pt_idle *t, const struct pt_idle_params *p,
				  uint64_t touched_bytes, uint64_t fresh_bytes, uint64_t now_ms);
/*
 * @pages of the context's memory came back from swap or the tier (or faulted), at @now_ms:
 * when that happened, which may be a little before the daemon reads of it (an event ring
 * read late); one a little earlier than the window's start counts in that window.
 */
enum pt_idle_event pt_idle_refault(struct pt_idle *t, const struct pt_idle_params *p,
				   uint64_t pages, uint64_t now_ms);
/* Refaulted pages per second that wake @t now (wake_pages, raised by false wakes). */
uint64_t pt_idle_wake_pages(const struct pt_idle *t, const struct pt_idle_params *p);
/* An external wake signal (preload activity, pagetierctl prefetch): wakes at once. */
enum pt_idle_event pt_idle_poke(struct pt_idle *t, uint64_t now_ms);
/*
 * Takes @usage_usec as the CPU usage without judging it: CPU the daemon itself caused (a
 * malloc_trim it asked for at idle) is not activity.
 */
void pt_idle_rebase(struct pt_idle *t, uint64_t usage_usec, uint64_t now_ms);
/*
 * No CPU was used from the last sample until @ms: the tasks of a quiet context all slept
 * until an event at @ms (sample_pace.h), and its samples in between were skipped. The
 * history records it, so that the CPU of a wake is averaged from when it started, not over
 * the whole gap since the last sample (which would hide it).
 */
void pt_idle_quiet_until(struct pt_idle *t, const struct pt_idle_params *p, uint64_t ms);
/*
 * The wake's prefetch is done at @now_ms: active, and quiet from then, not from the wake
 * signal. A prefetch that took longer than idle_threshold (a large container, a slow drive)
 * would otherwise find the container "quiet" the moment it ended, and the offload would
 * write back what it had just read (wake_kinds, make test on 6.1: a 2.9 s prefetch, a 2 s
 * threshold, everything offloaded again 70 ms later).
 */
void pt_idle_wake_done(struct pt_idle *t, uint64_t now_ms);
/*
 * Whether the busy period since the last wake was the container's own background: it has
 * taken packets before, and none came since @t woke. A server's timers after its idle
 * offload are such a period; what they touch is no guide to what its next request needs.
 */
bool pt_idle_busy_was_background(const struct pt_idle *t);
const char *pt_state_name(enum pt_state s);
const char *pt_idle_cause_name(enum pt_idle_cause c);

#endif
