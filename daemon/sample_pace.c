// SPDX-License-Identifier: GPL-2.0
#include "sample_pace.h"

uint64_t pt_sample_active_period(uint64_t threshold_ms, uint64_t poll_ms)
{
	uint64_t period = threshold_ms / PT_PACE_ACTIVE_DIV;

	if (period > PT_PACE_ACTIVE_MAX_MS)
		period = PT_PACE_ACTIVE_MAX_MS;
	return period >= 2 * poll_ms ? period : 0;
}

uint64_t pt_sample_taken(struct pt_sample_pace *p, bool quiet, bool events_cover,
			 uint64_t signals, uint64_t active_due_ms, uint64_t now_ms)
{
	if (signals != p->signals)
		p->follow_until_ms = now_ms + PT_PACE_FOLLOW_MS;
	p->last_ms = now_ms;
	p->signals = signals;
	p->first_event_ms = 0;
	if (!quiet)
		p->quiet_since_ms = 0;
	else if (!p->quiet_since_ms)
		p->quiet_since_ms = now_ms ? now_ms : 1;
	p->steady = !quiet && active_due_ms > now_ms;
	if (p->steady) {
		p->skipping = false;
		return active_due_ms;
	}
	p->skipping = events_cover && p->quiet_since_ms &&
		      now_ms >= p->quiet_since_ms + PT_PACE_QUIET_GRACE_MS &&
		      now_ms >= p->follow_until_ms;
	return p->skipping ? now_ms + PT_PACE_QUIET_MAX_MS - p->spread_ms : 0;
}

void pt_sample_spread(struct pt_sample_pace *p, uint64_t key)
{
	/* Fibonacci hashing: cgroup ids are inode numbers, often consecutive. */
	uint64_t h = (key * 0x9E3779B97F4A7C15ULL) >> 32;

	p->spread_ms = h % (PT_PACE_QUIET_MAX_MS / 2);
}

void pt_sample_event(struct pt_sample_pace *p, uint64_t signals, uint64_t now_ms)
{
	if (signals == p->signals && !p->first_event_ms)
		p->first_event_ms = now_ms ? now_ms : 1;
}

uint64_t pt_sample_quiet_until(const struct pt_sample_pace *p)
{
	return p->skipping ? p->first_event_ms : 0;
}

bool pt_sample_usage_ok(uint64_t read_ms, uint64_t now_ms, bool safety)
{
	if (!read_ms)
		return false;
	if (!safety)
		return read_ms == now_ms;
	return now_ms - read_ms < PT_PACE_USAGE_MAX_AGE_MS;
}
