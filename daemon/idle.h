/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The idle/wake state machine of one memory context. Pure: fed CPU-usage samples and a
 * clock, it says when the context went idle and when it woke. No I/O, unit tested.
 *
 *   active --(no CPU activity for idle_threshold)--> idle --(activity)--> waking
 *   waking --(prefetch issued: pt_idle_wake_done)--> active
 */
#ifndef PAGETIER_IDLE_H
#define PAGETIER_IDLE_H

#include <stdbool.h>
#include <stdint.h>

enum pt_state { PT_STATE_ACTIVE, PT_STATE_IDLE, PT_STATE_WAKING };
enum pt_idle_event { PT_EV_NONE, PT_EV_WENT_IDLE, PT_EV_WOKE };

/* CPU time below this per sample is noise (kernel work charged to the cgroup), not use. */
#define PT_IDLE_CPU_NOISE_USEC 1000

struct pt_idle {
	enum pt_state state;
	bool primed;
	uint64_t last_usage_usec;
	uint64_t last_active_ms;	/* last sample that showed activity */
	uint64_t idle_since_ms;
	uint64_t woke_at_ms;
};

void pt_idle_init(struct pt_idle *t, uint64_t now_ms);
enum pt_idle_event pt_idle_update(struct pt_idle *t, uint64_t usage_usec, uint64_t now_ms,
				  uint64_t idle_threshold_ms);
/*
 * Takes @usage_usec as the last sample without judging it: CPU the daemon itself caused
 * (a malloc_trim it asked for at idle) is not activity.
 */
void pt_idle_rebase(struct pt_idle *t, uint64_t usage_usec);
/* An external wake signal (tier demand read, packet, preload activity). */
enum pt_idle_event pt_idle_poke(struct pt_idle *t, uint64_t now_ms);
void pt_idle_wake_done(struct pt_idle *t);
const char *pt_state_name(enum pt_state s);

#endif
