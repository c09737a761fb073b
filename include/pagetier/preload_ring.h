/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The producer side of the preload ring (protocol: preload_proto.h). libpagetier.so writes
 * its records with these functions, and so do the unit tests that feed the daemon's decoder
 * and server, so that the tests exercise the producer the library ships, with its memory
 * orders, and not a copy of it.
 *
 * Everything is static inline and nothing here allocates, takes a lock, sleeps or makes a
 * system call: it runs inside the library's malloc and mmap hooks, in any thread of the
 * application, and in its signal handlers. A ring the daemon has not drained drops records
 * (counted in hdr.dropped) rather than making the application wait.
 *
 * A record: pt_preload_ring_claim() reserves positions, pt_preload_ring_fill() writes the
 * record at one of them, pt_preload_ring_publish() makes it visible to the daemon;
 * pt_preload_ring_put() is the last two together.
 */
#ifndef PAGETIER_PRELOAD_RING_H
#define PAGETIER_PRELOAD_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pagetier/preload_proto.h"

/* A producer's view of one ring: pointers into its memfd's mapping. */
struct pt_preload_ring {
	struct pt_preload_hdr *hdr;
	struct pt_preload_ctl *ctl;
	struct pt_preload_rec *slots;
	uint32_t mask;			/* nslots - 1 */
};

/*
 * Points @r at the ring in @mem (PT_PRELOAD_RING_BYTES(@nslots) zeroed bytes; @nslots a power
 * of two) and writes the header's layout fields. The sampling fields (sample_shift,
 * call_units, free_sample_shift, big_threshold) are the producer's policy: the caller's.
 */
static inline void pt_preload_ring_init(struct pt_preload_ring *r, void *mem, uint32_t nslots)
{
	r->hdr = mem;
	r->ctl = (struct pt_preload_ctl *)((char *)mem + PT_PRELOAD_CTL_OFF);
	r->slots = (struct pt_preload_rec *)((char *)mem + PT_PRELOAD_DATA_OFF);
	r->mask = nslots - 1;
	r->hdr->magic = PT_PRELOAD_MAGIC;
	r->hdr->version = PT_PRELOAD_VERSION;
	r->hdr->hdr_size = sizeof(struct pt_preload_hdr);
	r->hdr->slot_size = PT_PRELOAD_SLOT_SIZE;
	r->hdr->nslots = nslots;
}

/*
 * Claims @n consecutive positions from *@pos on, or none: the ring full means the daemon is
 * behind, and the records are dropped (counted) rather than waiting. Lock-free: any thread,
 * or a signal handler that interrupted one, may claim at the same time.
 */
static inline bool pt_preload_ring_claim(const struct pt_preload_ring *r, unsigned int n,
					 uint64_t *pos)
{
	uint64_t p = atomic_load_explicit((_Atomic uint64_t *)&r->hdr->reserve,
					  memory_order_relaxed);
	uint64_t tail;

	do {
		/* Acquire: the daemon had read the slots below its tail before storing it. */
		tail = atomic_load_explicit((_Atomic uint64_t *)&r->ctl->tail, memory_order_acquire);
		/* A tail the daemon moved past what we produced is nonsense: treat as empty. */
		if (tail > p)
			tail = p;
		if (p - tail + n > (uint64_t)r->mask + 1) {
			atomic_fetch_add_explicit((_Atomic uint64_t *)&r->hdr->dropped, n,
						  memory_order_relaxed);
			return false;
		}
	} while (!atomic_compare_exchange_weak_explicit((_Atomic uint64_t *)&r->hdr->reserve, &p,
							p + n, memory_order_relaxed,
							memory_order_relaxed));
	*pos = p;
	return true;
}

/*
 * Writes the record at claimed position @pos, not yet visible to the daemon (its seq still
 * names an earlier lap, or 0). Returns the slot, for pt_preload_ring_publish().
 */
static inline struct pt_preload_rec *pt_preload_ring_fill(const struct pt_preload_ring *r,
							  uint64_t pos, uint32_t tid,
							  uint16_t type, uint16_t flags,
							  uint64_t addr, uint64_t len,
							  uint64_t addr2, uint64_t len2)
{
	struct pt_preload_rec *s = &r->slots[pos & r->mask];

	s->type = type;
	s->size = sizeof(*s);
	s->flags = flags;
	s->tid = tid;
	s->reserved = 0;
	s->addr = addr;
	s->len = len;
	s->addr2 = addr2;
	s->len2 = len2;
	s->reserved2 = 0;
	return s;
}

/*
 * Publishes slot @s, filled at position @pos: seq is stored last, with release order, so
 * that a daemon that reads seq == pos + 1 (acquire) reads the fields written before it.
 */
static inline void pt_preload_ring_publish(struct pt_preload_rec *s, uint64_t pos)
{
	atomic_store_explicit((_Atomic uint64_t *)&s->seq, pos + 1, memory_order_release);
}

/* Fills and publishes the record at claimed position @pos: what the library does. */
static inline void pt_preload_ring_put(const struct pt_preload_ring *r, uint64_t pos,
				       uint32_t tid, uint16_t type, uint16_t flags, uint64_t addr,
				       uint64_t len, uint64_t addr2, uint64_t len2)
{
	pt_preload_ring_publish(pt_preload_ring_fill(r, pos, tid, type, flags, addr, len, addr2,
						     len2), pos);
}

#endif
