/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How often a context's cgroup is sampled (cpu.stat, memory.current, memory.stat): every
 * poll, except a quiet one when the kernel tells of its activity by events. Pure: the
 * manager says what it knows; unit tested.
 *
 * An idle context with nothing in flight (no offload, settle, trim or prefetch pending) can
 * only become active through its tasks, and a task starts using a cgroup's CPU only by being
 * woken, by its first run after a fork, or by being moved into the cgroup: with BPF's
 * sched_wakeup, sched_wakeup_new and cgroup_attach_task programs attached, each of those is
 * an event (at most one per 100 ms), and so is every swap-in, fault, ingress packet, tier
 * demand read and preload record. Sampling such a context each poll (twice a second) reads
 * its files to learn nothing: at a thousand sleeping containers that was most of the
 * daemon's cost, which issue 15 wants to follow the active containers. So a quiet context
 * is sampled when an event for it has arrived since its last sample, and each poll for
 * PT_PACE_FOLLOW_MS after a sample that found one (a task woken by a signal may go on
 * running without waking again: its CPU shows in the polls that follow), and otherwise once
 * every PT_PACE_QUIET_MAX_MS, a safety net for what events can miss (the caller samples
 * everything after the ring dropped events): memory activity (faults, swap-ins) is itself an
 * event, so that delay changes no memory decision, only how fresh a quiet container's
 * figures in status are. For PT_PACE_QUIET_GRACE_MS after it
 * becomes quiet it is still sampled each poll: its settle and offload have just been
 * applied, and status (what an operator or a test reads) stays fresh while they land.
 * Without the wakeup program every context is sampled each poll, as before.
 *
 * The safety sample's period is each context's own, between PT_PACE_QUIET_MAX_MS / 2 and
 * PT_PACE_QUIET_MAX_MS (pt_sample_spread, from its cgroup's id): containers that went quiet
 * together (a host's boot, a thousand created at once) would otherwise all come due in the
 * same poll every five minutes, a thousand samples in one tick, which delays every wake
 * that tick should have seen and makes the daemon's cost a sawtooth.
 */
#ifndef PAGETIER_SAMPLE_PACE_H
#define PAGETIER_SAMPLE_PACE_H

#include <stdbool.h>
#include <stdint.h>

#define PT_PACE_QUIET_GRACE_MS	10000
#define PT_PACE_QUIET_MAX_MS	300000
#define PT_PACE_FOLLOW_MS	3000
/*
 * A safety sample of a quiet context may use the tiers' per-cgroup usage read up to this
 * long before (pt_sample_usage_ok): a read copies and sorts every cgroup's row whichever
 * context asked, and with the safety samples spread over the polls a fresh read for each
 * would be one every other poll at a thousand containers.
 */
#define PT_PACE_USAGE_MAX_AGE_MS 60000
/*
 * An active context whose samples decide nothing new each poll (no wake being restored,
 * no job's end to act on) is sampled every idle threshold / PT_PACE_ACTIVE_DIV, at most
 * PT_PACE_ACTIVE_MAX_MS, and at each of its scans (the caller's @active_due_ms): what such
 * a sample decides is whether the container has gone idle, which the idle rule judges
 * over the whole threshold, and whether a scan or a cold offload is due, which the caller
 * folds into the due time. Its events do not make it due: a packet or a refault changes
 * the state of an active context without a sample (idle.h). A sample every poll of each
 * noise container of the density benchmark read files to learn nothing new; pacing them
 * saved less than expected there (bench/density, 2026-11-30), but it is what such a
 * sample is worth. Below two polls, every poll.
 */
#define PT_PACE_ACTIVE_DIV	8
#define PT_PACE_ACTIVE_MAX_MS	2000

struct pt_sample_pace {
	uint64_t last_ms;		/* the last sample */
	uint64_t quiet_since_ms;	/* quiet since (0: not quiet at the last sample) */
	uint64_t signals;		/* the context's event count at the last sample */
	uint64_t follow_until_ms;	/* sampled each poll until then: an event came */
	uint64_t first_event_ms;	/* the first event since the last sample (0: none) */
	uint64_t spread_ms;		/* taken off the safety sample's period (< MAX / 2) */
	bool skipping;			/* the polls after the last sample pass it by */
	bool steady;			/* active, sampled at its own pace (active_due_ms) */
};

/*
 * The pace of an active context's samples for an idle threshold of @threshold_ms with
 * polls every @poll_ms: the period, or 0 for every poll.
 */
uint64_t pt_sample_active_period(uint64_t threshold_ms, uint64_t poll_ms);

/* Gives the context of cgroup @key its own safety period (the same for the same key). */
void pt_sample_spread(struct pt_sample_pace *p, uint64_t key);

/*
 * A sample was taken and acted on at @now_ms; @quiet: the context is idle with nothing in
 * flight; @events_cover: every task wake of a tracked cgroup is an event; @signals: the
 * context's events so far (any kind); @active_due_ms: for a context that is not quiet,
 * when it is next due at its steady pace (0: at the next poll). Returns when it is next
 * due: 0 at the next poll, otherwise the time from which a poll samples it again, unless
 * an event of a quiet one comes first (the caller then samples it at the next poll;
 * p->steady says the caller leaves a steady one's due time as it is). The caller keeps
 * that time where a poll over every context reads it without touching the contexts
 * themselves.
 */
uint64_t pt_sample_taken(struct pt_sample_pace *p, bool quiet, bool events_cover,
			 uint64_t signals, uint64_t active_due_ms, uint64_t now_ms);
/*
 * An event of the context at @now_ms; @signals, its event count before this one. The first
 * since the last sample is when a quiet context's tasks started to run: until then they used
 * no CPU, which its next sample should know (pt_idle_quiet_until).
 */
void pt_sample_event(struct pt_sample_pace *p, uint64_t signals, uint64_t now_ms);
/*
 * Until when the context's tasks are known to have used no CPU since its last sample: the
 * first event's time when the polls were passing it by (quiet, every task wake an event), 0
 * when nothing is known (it was sampled each poll, or no event came).
 */
uint64_t pt_sample_quiet_until(const struct pt_sample_pace *p);
/*
 * Whether a sample at @now_ms can use the tiers' usage table read at @read_ms (0: never
 * read): one an event or the poll asked for needs this poll's; a quiet context's safety
 * sample (@safety: it came due by time, no event since its last sample) accepts one up to
 * PT_PACE_USAGE_MAX_AGE_MS old, as nothing of it went to or came from a tier without an
 * event (a swap-in, a demand read) or an action of pagetierd (which is not quiet).
 */
bool pt_sample_usage_ok(uint64_t read_ms, uint64_t now_ms, bool safety);

#endif
