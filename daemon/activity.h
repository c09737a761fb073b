/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What each raw signal the daemon receives means for a context's idle state (idle.h): a
 * BPF event, a demand read on a tier, a record from the preload library. Pure, unit tested.
 *
 *   ingress packet            a packet (busy, or a wake, beyond the policy's tolerance)
 *   swap-in (BPF)             one refaulted page
 *   page fault (BPF, sampled) 2^flags faults: the sampling ratio
 *   tier demand read          its pages
 *   task wakeup (BPF)         nothing: timers wake tasks all the time
 *   preload allocation        the memory it stands for: a sampled small block about
 *                             PT_PRELOAD_SAMPLE_BYTES, a big one its size, a heartbeat
 *                             the allocation units since the previous one; frees nothing.
 * A timer that allocates a few hundred bytes or faults a page now and then stays idle;
 * serving requests allocates and faults far more.
 */
#ifndef PAGETIER_ACTIVITY_H
#define PAGETIER_ACTIVITY_H

#include <stdint.h>

#include "idle.h"
#include "preload_server.h"

struct pagetier_event;

/* The bytes one sampled small allocation stands for (pagetier/preload_proto.h). */
#define PT_PRELOAD_SAMPLE_BYTES (1ULL << PT_PRELOAD_SAMPLE_SHIFT)

enum pt_signal_kind { PT_SIG_NONE, PT_SIG_PACKET, PT_SIG_REFAULT };

struct pt_signal {
	enum pt_signal_kind kind;
	uint64_t pages;		/* PT_SIG_REFAULT: how many pages it stands for */
	/*
	 * When it happened (CLOCK_MONOTONIC ms: the BPF and tier records carry it), 0: when
	 * it is read. The refault rule measures a rate: of the faults, not of how fast a
	 * daemon behind on its rings reads them.
	 */
	uint64_t at_ms;
};

/* A BPF event of enum pt_bpf_event_type @type with its @flags (pagetier/bpf_events.h). */
struct pt_signal pt_signal_bpf(uint32_t type, uint32_t flags, uint64_t time_ns);
/* A record of a tier's event ring. */
struct pt_signal pt_signal_tier(const struct pagetier_event *e);
/* A record from a preloaded process. */
struct pt_signal pt_signal_preload(const struct pt_preload_event *ev);

/*
 * Feeds @s to @t at @now_ms (or at its own time, if it has one and that is not later);
 * the idle machine's verdict.
 */
enum pt_idle_event pt_idle_signal(struct pt_idle *t, const struct pt_idle_params *p,
				  struct pt_signal s, uint64_t now_ms);

#endif
