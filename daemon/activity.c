// SPDX-License-Identifier: GPL-2.0
#include "activity.h"

#include <linux/types.h>

#include "pagetier.h"
#include "pagetier/bpf_events.h"
#include "pagetier/preload_proto.h"

static uint64_t pages_of(uint64_t bytes)
{
	return (bytes + 4095) / 4096;
}

struct pt_signal pt_signal_bpf(uint32_t type, uint32_t flags, uint64_t time_ns)
{
	uint64_t at = time_ns / 1000000;

	switch (type) {
	case PT_BPF_EV_NET:
		return (struct pt_signal){ .kind = PT_SIG_PACKET, .at_ms = at };
	case PT_BPF_EV_SWAPIN:
		return (struct pt_signal){ .kind = PT_SIG_REFAULT, .pages = 1, .at_ms = at };
	case PT_BPF_EV_FAULT:
		/*
		 * One sampled event stands for 2^flags faults, but most faults are no refault
		 * (first touches of new memory, code a timer faults back in after the idle
		 * reclaim); refaults are the swap-ins. A fault counts as one page, so that only
		 * a storm of them (2^flags times more than a storm of swap-ins) wakes.
		 */
		(void)flags;
		return (struct pt_signal){ .kind = PT_SIG_REFAULT, .pages = 1, .at_ms = at };
	default:
		return (struct pt_signal){ .kind = PT_SIG_NONE };
	}
}

struct pt_signal pt_signal_tier(const struct pagetier_event *e)
{
	if (e->type != PAGETIER_EVENT_DEMAND_READ)
		return (struct pt_signal){ .kind = PT_SIG_NONE };
	return (struct pt_signal){ .kind = PT_SIG_REFAULT, .pages = e->pages ? e->pages : 1,
				   .at_ms = e->time_ns / 1000000 };
}

struct pt_signal pt_signal_preload(const struct pt_preload_event *ev)
{
	uint64_t bytes = 0;

	switch (ev->type) {
	case PT_PRELOAD_REC_ALLOC:
		bytes = (ev->flags & PT_PRELOAD_F_BIG) ? ev->len : PT_PRELOAD_SAMPLE_BYTES;
		break;
	case PT_PRELOAD_REC_MMAP:
		bytes = ev->len;
		break;
	case PT_PRELOAD_REC_MREMAP:
		bytes = ev->len2 > ev->len ? ev->len2 - ev->len : 0;
		break;
	case PT_PRELOAD_REC_HEARTBEAT:
		bytes = ev->len;	/* allocation units since the previous heartbeat */
		break;
	default:
		break;			/* frees, unmaps: cleanup is not work */
	}
	if (!bytes)
		return (struct pt_signal){ .kind = PT_SIG_NONE };
	return (struct pt_signal){ .kind = PT_SIG_REFAULT, .pages = pages_of(bytes) };
}

enum pt_idle_event pt_idle_signal(struct pt_idle *t, const struct pt_idle_params *p,
				  struct pt_signal s, uint64_t now_ms)
{
	if (s.at_ms && s.at_ms < now_ms)
		now_ms = s.at_ms;
	switch (s.kind) {
	case PT_SIG_PACKET:
		return pt_idle_packet(t, p, now_ms);
	case PT_SIG_REFAULT:
		return pt_idle_refault(t, p, s.pages, now_ms);
	default:
		return PT_EV_NONE;
	}
}
