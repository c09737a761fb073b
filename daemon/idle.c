// SPDX-License-Identifier: GPL-2.0
#include "idle.h"

void pt_idle_init(struct pt_idle *t, uint64_t now_ms)
{
	t->state = PT_STATE_ACTIVE;
	t->primed = false;
	t->last_usage_usec = 0;
	t->last_active_ms = now_ms;
	t->idle_since_ms = 0;
	t->woke_at_ms = 0;
}

static enum pt_idle_event wake(struct pt_idle *t, uint64_t now_ms)
{
	if (t->state != PT_STATE_IDLE)
		return PT_EV_NONE;
	t->state = PT_STATE_WAKING;
	t->woke_at_ms = now_ms;
	return PT_EV_WOKE;
}

enum pt_idle_event pt_idle_update(struct pt_idle *t, uint64_t usage_usec, uint64_t now_ms,
				  uint64_t idle_threshold_ms)
{
	bool active;

	if (!t->primed) {
		/* The first sample has no delta: count the context as just active. */
		t->primed = true;
		t->last_usage_usec = usage_usec;
		t->last_active_ms = now_ms;
		return PT_EV_NONE;
	}
	/* usage_usec never goes back; if it does, the cgroup was recreated: activity. */
	active = usage_usec < t->last_usage_usec ||
		 usage_usec - t->last_usage_usec >= PT_IDLE_CPU_NOISE_USEC;
	t->last_usage_usec = usage_usec;
	if (active) {
		t->last_active_ms = now_ms;
		return wake(t, now_ms);
	}
	if (t->state == PT_STATE_ACTIVE && now_ms - t->last_active_ms >= idle_threshold_ms) {
		t->state = PT_STATE_IDLE;
		t->idle_since_ms = now_ms;
		return PT_EV_WENT_IDLE;
	}
	return PT_EV_NONE;
}

void pt_idle_rebase(struct pt_idle *t, uint64_t usage_usec)
{
	t->primed = true;
	t->last_usage_usec = usage_usec;
}

enum pt_idle_event pt_idle_poke(struct pt_idle *t, uint64_t now_ms)
{
	t->last_active_ms = now_ms;
	return wake(t, now_ms);
}

void pt_idle_wake_done(struct pt_idle *t)
{
	if (t->state == PT_STATE_WAKING)
		t->state = PT_STATE_ACTIVE;
}

const char *pt_state_name(enum pt_state s)
{
	switch (s) {
	case PT_STATE_ACTIVE:
		return "active";
	case PT_STATE_IDLE:
		return "idle";
	case PT_STATE_WAKING:
		return "waking";
	}
	return "?";
}
