// SPDX-License-Identifier: GPL-2.0
#include "idle.h"

#include <errno.h>
#include <string.h>

void pt_idle_init(struct pt_idle *t, uint64_t now_ms)
{
	memset(t, 0, sizeof(*t));
	t->state = PT_STATE_ACTIVE;
	/* A new context counts as just active: it is judged over a whole window first. */
	t->last_active_ms = now_ms;
}

int pt_idle_params_check(const struct pt_idle_params *p)
{
	if (p->threshold_ms < 100 || p->cpu_permille > 1000 * 1024 ||
	    p->max_packets >= PT_IDLE_PACKET_RING || !p->wake_pages)
		return -EINVAL;
	return 0;
}

static enum pt_idle_event wake(struct pt_idle *t, uint64_t now_ms)
{
	if (t->state != PT_STATE_IDLE)
		return PT_EV_NONE;
	t->state = PT_STATE_WAKING;
	t->woke_at_ms = now_ms;
	t->woke_cause = t->cause;
	t->wake_done_ms = 0;
	t->busy_since_wake = false;
	t->refault_win_pages = 0;
	return PT_EV_WOKE;
}

/*
 * Going idle: whether the wake before was false (idle.h), which raises the refaults the
 * next wake needs, or a wake by refaults that led to work, which sets them back.
 */
static void judge_last_wake(struct pt_idle *t, const struct pt_idle_params *p, uint64_t now_ms)
{
	t->last_wake_false = false;
	if (!t->woke_at_ms || t->woke_cause != PT_CAUSE_REFAULTS || !t->wake_done_ms)
		return;
	if (!t->busy_since_wake &&
	    now_ms <= t->wake_done_ms + PT_IDLE_FALSE_WAKE_THRESHOLDS * p->threshold_ms) {
		t->last_wake_false = true;
		t->false_wakes++;
		if (t->refault_shift < PT_IDLE_FALSE_WAKE_MAX_SHIFT)
			t->refault_shift++;
	} else {
		t->refault_shift = 0;
	}
	t->wake_done_ms = 0;	/* judged once */
}

uint64_t pt_idle_wake_pages(const struct pt_idle *t, const struct pt_idle_params *p)
{
	return p->wake_pages << t->refault_shift;
}

/* Seen busy at @now_ms: an idle context wakes, an active one starts a new quiet window. */
static enum pt_idle_event busy(struct pt_idle *t, enum pt_idle_cause cause, uint64_t now_ms)
{
	if (t->state != PT_STATE_IDLE)
		t->busy_since_wake = true;
	t->last_active_ms = now_ms;
	t->cause = cause;
	return wake(t, now_ms);
}

static void marks_reset(struct pt_cpu_marks *m, unsigned int cap, uint64_t interval_ms)
{
	m->head = m->n = 0;
	m->cap = cap;
	m->interval_ms = interval_ms;
}

/* Records @usec at @now_ms if the last mark is at least the interval old. */
static void marks_add(struct pt_cpu_marks *m, uint64_t now_ms, uint64_t usec)
{
	unsigned int last = (m->head + m->cap - 1) % m->cap;

	if (m->n && now_ms - m->ms[last] < m->interval_ms)
		return;
	m->ms[m->head] = now_ms;
	m->usec[m->head] = usec;
	m->head = (m->head + 1) % m->cap;
	if (m->n < m->cap)
		m->n++;
}

/*
 * The CPU share (permille of one CPU) from the newest mark at least @span_ms old (the
 * oldest one if none is) to (@now_ms, @usec); *@covered: whether that reaches @span_ms.
 */
static uint32_t marks_share(const struct pt_cpu_marks *m, uint64_t now_ms, uint64_t usec,
			    uint64_t span_ms, bool *covered)
{
	unsigned int pick = (m->head + m->cap - m->n) % m->cap;	/* the oldest */
	uint64_t elapsed;

	for (unsigned int k = 0; k < m->n; k++) {
		unsigned int i = (m->head + m->cap - 1 - k) % m->cap;	/* newest first */

		if (now_ms - m->ms[i] >= span_ms) {
			pick = i;
			break;
		}
	}
	if (!m->n) {
		*covered = false;
		return 0;
	}
	elapsed = now_ms - m->ms[pick];
	*covered = elapsed >= span_ms;
	/* 1 permille of a CPU for 1 ms is 1 us. */
	return elapsed ? (uint32_t)((usec - m->usec[pick]) / elapsed) : 0;
}

static uint64_t wake_span(const struct pt_idle_params *p)
{
	return p->threshold_ms < PT_IDLE_WAKE_CPU_MS ? p->threshold_ms : PT_IDLE_WAKE_CPU_MS;
}

/* (Re)starts the CPU history at (@now_ms, @usec), with mark intervals for @p. */
static void cpu_restart(struct pt_idle *t, const struct pt_idle_params *p, uint64_t usec,
			uint64_t now_ms)
{
	uint64_t wi = p->threshold_ms / (PT_IDLE_MARKS - 8);

	marks_reset(&t->window, PT_IDLE_MARKS, wi ? wi : 1);
	marks_reset(&t->recent, PT_IDLE_WAKE_MARKS, wake_span(p) / (PT_IDLE_WAKE_MARKS - 2) ?: 1);
	marks_add(&t->window, now_ms, usec);
	marks_add(&t->recent, now_ms, usec);
	t->last_usage_usec = usec;
	t->last_sample_ms = now_ms;
	t->primed = true;
}

enum pt_idle_event pt_idle_cpu(struct pt_idle *t, const struct pt_idle_params *p,
			       uint64_t usage_usec, uint64_t now_ms)
{
	uint64_t wi = p->threshold_ms / (PT_IDLE_MARKS - 8);
	uint32_t share;
	bool covered;

	if (!t->primed || usage_usec < t->last_usage_usec || t->window.interval_ms != (wi ?: 1)) {
		/*
		 * The first sample has no history (nor one after a reload that changed the
		 * window). Usage never goes back: if it does, the cgroup was recreated, which
		 * is activity.
		 */
		bool recreated = t->primed && usage_usec < t->last_usage_usec;

		cpu_restart(t, p, usage_usec, now_ms);
		if (recreated)
			return busy(t, PT_CAUSE_CPU, now_ms);
		return PT_EV_NONE;
	}
	/* Using more than the share since the previous sample: working right now. */
	if (now_ms > t->last_sample_ms &&
	    (usage_usec - t->last_usage_usec) / (now_ms - t->last_sample_ms) > p->cpu_permille)
		t->last_cpu_busy_ms = now_ms;
	t->last_usage_usec = usage_usec;
	t->last_sample_ms = now_ms;
	marks_add(&t->window, now_ms, usage_usec);
	marks_add(&t->recent, now_ms, usage_usec);
	if (t->state == PT_STATE_IDLE) {
		/* Sustained work, not a burst of housekeeping: a wake. */
		share = marks_share(&t->recent, now_ms, usage_usec, wake_span(p), &covered);
		if (covered && share > p->cpu_permille) {
			cpu_restart(t, p, usage_usec, now_ms);
			return busy(t, PT_CAUSE_CPU, now_ms);
		}
		return PT_EV_NONE;
	}
	share = marks_share(&t->window, now_ms, usage_usec, p->threshold_ms, &covered);
	t->cpu_permille_now = share;
	if (share > p->cpu_permille) {
		t->cause = PT_CAUSE_CPU;
		return PT_EV_NONE;
	}
	if (t->state == PT_STATE_ACTIVE && covered && now_ms >= t->last_active_ms &&
	    now_ms - t->last_active_ms >= p->threshold_ms) {
		t->state = PT_STATE_IDLE;
		t->idle_since_ms = now_ms;
		judge_last_wake(t, p, now_ms);
		/* The wake rule judges what comes after this moment only: no window is open. */
		t->refault_win_pages = 0;
		cpu_restart(t, p, usage_usec, now_ms);
		return PT_EV_WENT_IDLE;
	}
	return PT_EV_NONE;
}

enum pt_idle_event pt_idle_packet(struct pt_idle *t, const struct pt_idle_params *p,
				  uint64_t now_ms)
{
	unsigned int recent = 0;

	t->pkt_ms[t->pkt_head] = now_ms + 1;	/* 0 marks an empty slot */
	t->pkt_head = (t->pkt_head + 1) % PT_IDLE_PACKET_RING;
	for (unsigned int i = 0; i < PT_IDLE_PACKET_RING; i++)
		if (t->pkt_ms[i] && t->pkt_ms[i] - 1 + p->threshold_ms > now_ms)
			recent++;
	if (recent > p->max_packets)
		return busy(t, PT_CAUSE_PACKETS, now_ms);
	return PT_EV_NONE;
}

enum pt_idle_event pt_idle_memory(struct pt_idle *t, const struct pt_idle_params *p,
				  uint64_t touched_bytes, uint64_t fresh_bytes, uint64_t now_ms)
{
	if (touched_bytes > p->working_set_bytes || fresh_bytes > p->fresh_bytes)
		return busy(t, PT_CAUSE_MEMORY, now_ms);
	return PT_EV_NONE;
}

enum pt_idle_event pt_idle_refault(struct pt_idle *t, const struct pt_idle_params *p,
				   uint64_t pages, uint64_t now_ms)
{
	uint64_t wake_pages = pt_idle_wake_pages(t, p);

	/* While active, refaults are part of its work; the scans see what it touches. */
	if (t->state != PT_STATE_IDLE)
		return PT_EV_NONE;
	/*
	 * A window opens at the first refault after the last one closed (none is open while
	 * it counts nothing), so that its first quarter is the refaults' first 250 ms.
	 */
	if (!t->refault_win_pages || (now_ms >= t->refault_win_ms &&
				      now_ms - t->refault_win_ms >= PT_IDLE_REFAULT_WINDOW_MS)) {
		t->refault_win_ms = now_ms;
		t->refault_win_pages = 0;
	}
	t->refault_win_pages += pages;
	/*
	 * wake_pages in the window, or the same rate over its first quarter: an application
	 * reading its memory back shows it in a quarter of the pages, and waiting for the rest
	 * was most of a wake's detection time on a busy host (bench/scale, 5% of 3,000
	 * containers: 64 swap-ins took 62 ms at the median, up to 158).
	 */
	if (t->refault_win_pages >= wake_pages ||
	    (t->refault_win_pages * PT_IDLE_REFAULT_EARLY_DIV >= wake_pages &&
	     now_ms <= t->refault_win_ms + PT_IDLE_REFAULT_WINDOW_MS / PT_IDLE_REFAULT_EARLY_DIV)) {
		t->woke_refault_pages = t->refault_win_pages;
		t->woke_refault_span_ms = now_ms > t->refault_win_ms ? now_ms - t->refault_win_ms : 0;
		return busy(t, PT_CAUSE_REFAULTS, now_ms);
	}
	return PT_EV_NONE;
}

enum pt_idle_event pt_idle_poke(struct pt_idle *t, uint64_t now_ms)
{
	return busy(t, PT_CAUSE_SIGNAL, now_ms);
}

void pt_idle_rebase(struct pt_idle *t, uint64_t usage_usec, uint64_t now_ms)
{
	uint64_t delta;

	if (!t->primed || usage_usec < t->last_usage_usec) {
		t->last_usage_usec = usage_usec;
		return;
	}
	/* Shift the history by what the daemon caused, as if it had not been used. */
	delta = usage_usec - t->last_usage_usec;
	for (unsigned int i = 0; i < t->window.n; i++)
		t->window.usec[i] += delta;
	for (unsigned int i = 0; i < t->recent.n; i++)
		t->recent.usec[i] += delta;
	t->last_usage_usec = usage_usec;
	(void)now_ms;
}

void pt_idle_quiet_until(struct pt_idle *t, const struct pt_idle_params *p, uint64_t ms)
{
	uint64_t span = wake_span(p), from;

	if (!t->primed || ms <= t->last_sample_ms)
		return;
	/* Idle usage from a wake span before @ms (or the last sample) up to @ms. */
	from = ms > span ? ms - span : 0;
	if (from > t->last_sample_ms) {
		marks_add(&t->window, from, t->last_usage_usec);
		marks_add(&t->recent, from, t->last_usage_usec);
	}
	marks_add(&t->window, ms, t->last_usage_usec);
	marks_add(&t->recent, ms, t->last_usage_usec);
	t->last_sample_ms = ms;
}

void pt_idle_wake_done(struct pt_idle *t, uint64_t now_ms)
{
	if (t->state != PT_STATE_WAKING)
		return;
	t->state = PT_STATE_ACTIVE;
	if (now_ms > t->last_active_ms)
		t->last_active_ms = now_ms;
	t->wake_done_ms = t->last_active_ms;
}

bool pt_idle_busy_was_background(const struct pt_idle *t)
{
	uint64_t last = 0;
	bool any = false;

	for (unsigned int i = 0; i < PT_IDLE_PACKET_RING; i++)
		if (t->pkt_ms[i]) {
			any = true;
			if (t->pkt_ms[i] - 1 > last)
				last = t->pkt_ms[i] - 1;
		}
	return any && last < t->woke_at_ms;
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

const char *pt_idle_cause_name(enum pt_idle_cause c)
{
	static const char *const names[] = {
		[PT_CAUSE_NONE] = "none",
		[PT_CAUSE_CPU] = "cpu",
		[PT_CAUSE_PACKETS] = "packets",
		[PT_CAUSE_MEMORY] = "memory",
		[PT_CAUSE_REFAULTS] = "refaults",
		[PT_CAUSE_SIGNAL] = "signal",
	};

	return (unsigned int)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}
