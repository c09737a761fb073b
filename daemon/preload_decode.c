// SPDX-License-Identifier: GPL-2.0
/*
 * Validation of what libpagetier.so writes in its shared ring. Pure: no I/O, no clock (the
 * caller passes the time), so it is unit tested on rings built in memory. The ring is
 * writable by an untrusted process while we read it: each slot is copied once, and only the
 * copy is looked at.
 */
#include "preload_server.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#define NSEC_PER_SEC 1000000000ULL
#define PAGE_MASK_4K 4095ULL

void pt_preload_default_limits(struct pt_preload_limits *lim)
{
	/*
	 * A sampled library produces hundreds of records per second; 100k/s is a peer that is
	 * broken or hostile, and 8192 per drain keeps one drain of one peer under a millisecond.
	 */
	lim->max_per_drain = 8192;
	lim->max_per_sec = 100000;
	lim->stall_drains = 8;
}

int pt_preload_check_hello(const void *msg, size_t len, uint64_t *ring_bytes)
{
	struct pt_preload_hello h;
	uint64_t slots;

	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, msg, sizeof(h));
	if (h.magic != PT_PRELOAD_MAGIC || h.version != PT_PRELOAD_VERSION)
		return -EPROTO;
	if (h.size != sizeof(h) || len != sizeof(h))
		return -EINVAL;
	if (h.ring_bytes < PT_PRELOAD_RING_BYTES(PT_PRELOAD_MIN_SLOTS) ||
	    h.ring_bytes > PT_PRELOAD_RING_BYTES(PT_PRELOAD_MAX_SLOTS))
		return -EINVAL;
	slots = (h.ring_bytes - PT_PRELOAD_DATA_OFF) / PT_PRELOAD_SLOT_SIZE;
	if (PT_PRELOAD_RING_BYTES(slots) != h.ring_bytes || (slots & (slots - 1)))
		return -EINVAL;
	*ring_bytes = h.ring_bytes;
	return 0;
}

int pt_preload_check_header(const struct pt_preload_hdr *hdr, uint64_t file_size,
			    uint32_t *nslots)
{
	struct pt_preload_hdr h;

	memcpy(&h, hdr, sizeof(h));
	if (h.magic != PT_PRELOAD_MAGIC || h.version != PT_PRELOAD_VERSION)
		return -EPROTO;
	if (h.hdr_size != sizeof(h) || h.slot_size != PT_PRELOAD_SLOT_SIZE)
		return -EINVAL;
	if (h.nslots < PT_PRELOAD_MIN_SLOTS || h.nslots > PT_PRELOAD_MAX_SLOTS ||
	    (h.nslots & (h.nslots - 1)))
		return -EINVAL;
	if (PT_PRELOAD_RING_BYTES(h.nslots) != file_size)
		return -EINVAL;
	if (h.sample_shift > 30)
		return -EINVAL;
	*nslots = h.nslots;
	return 0;
}

static bool user_range_ok(uint64_t addr, uint64_t len)
{
	return addr != 0 && len != 0 && addr < PT_PRELOAD_USER_END &&
	       len <= PT_PRELOAD_USER_END - addr;
}

static bool page_aligned(uint64_t addr)
{
	return (addr & PAGE_MASK_4K) == 0;
}

/* Which flags each record type may carry. */
static uint32_t allowed_flags(uint16_t type)
{
	switch (type) {
	case PT_PRELOAD_REC_ALLOC:
		return PT_PRELOAD_F_SAMPLED | PT_PRELOAD_F_BIG | PT_PRELOAD_F_CALLOC |
		       PT_PRELOAD_F_REALLOC | PT_PRELOAD_F_ALIGNED;
	case PT_PRELOAD_REC_FREE:
		return PT_PRELOAD_F_SAMPLED | PT_PRELOAD_F_BIG;
	case PT_PRELOAD_REC_HEARTBEAT:
		return PT_PRELOAD_F_WAKE;
	default:
		return 0;
	}
}

int pt_preload_decode_rec(const struct pt_preload_rec *rec, uint64_t pos,
			  struct pt_preload_event *ev, enum pt_preload_reject *why)
{
	const struct pt_preload_rec r = *rec;
	bool ok;

	if (r.seq != pos + 1)
		return -EAGAIN;
	if (r.size != sizeof(r)) {
		*why = PT_PRELOAD_REJ_SIZE;
		return -EINVAL;
	}
	if (r.type == 0 || r.type >= PT_PRELOAD_REC_MAX) {
		*why = PT_PRELOAD_REJ_TYPE;
		return -EINVAL;
	}
	if (r.flags & ~allowed_flags(r.type)) {
		*why = PT_PRELOAD_REJ_FLAGS;
		return -EINVAL;
	}
	switch (r.type) {
	case PT_PRELOAD_REC_ALLOC:
		/* addr2: the old block of a realloc, 0 otherwise. */
		ok = user_range_ok(r.addr, r.len) && r.len2 == 0 &&
		     (r.addr2 == 0 || ((r.flags & PT_PRELOAD_F_REALLOC) &&
				       r.addr2 < PT_PRELOAD_USER_END));
		break;
	case PT_PRELOAD_REC_FREE:
		ok = user_range_ok(r.addr, r.len) && r.addr2 == 0 && r.len2 == 0;
		break;
	case PT_PRELOAD_REC_MMAP:
		/* addr2, len2: prot and flags, both int-sized. */
		ok = user_range_ok(r.addr, r.len) && page_aligned(r.addr) &&
		     r.addr2 <= 0xffffffffULL && r.len2 <= 0xffffffffULL;
		break;
	case PT_PRELOAD_REC_MUNMAP:
		ok = user_range_ok(r.addr, r.len) && page_aligned(r.addr) && r.addr2 == 0 &&
		     r.len2 == 0;
		break;
	case PT_PRELOAD_REC_MREMAP:
		ok = user_range_ok(r.addr, r.len) && page_aligned(r.addr) &&
		     user_range_ok(r.addr2, r.len2) && page_aligned(r.addr2);
		break;
	case PT_PRELOAD_REC_HEARTBEAT:
		ok = r.addr == 0 && r.addr2 == 0 && r.len2 == 0;
		break;
	default:
		ok = false;
	}
	if (!ok) {
		*why = PT_PRELOAD_REJ_RANGE;
		return -EINVAL;
	}
	ev->type = (enum pt_preload_rec_type)r.type;
	ev->flags = r.flags;
	ev->tid = r.tid;
	ev->addr = r.addr;
	ev->len = r.len;
	ev->addr2 = r.addr2;
	ev->len2 = r.len2;
	return 0;
}

void pt_preload_consumer_init(struct pt_preload_consumer *c, uint32_t nslots, uint64_t tail,
			      const struct pt_preload_limits *lim)
{
	memset(c, 0, sizeof(*c));
	c->nslots = nslots;
	c->tail = tail;
	c->lim = *lim;
}

const char *pt_preload_reject_name(enum pt_preload_reject why)
{
	static const char *const names[PT_PRELOAD_REJ_NR] = {
		[PT_PRELOAD_REJ_SIZE] = "size",
		[PT_PRELOAD_REJ_TYPE] = "type",
		[PT_PRELOAD_REJ_FLAGS] = "flags",
		[PT_PRELOAD_REJ_RANGE] = "range",
		[PT_PRELOAD_REJ_STALLED] = "stalled",
		[PT_PRELOAD_REJ_FOREIGN] = "foreign",
	};

	return (unsigned int)why < PT_PRELOAD_REJ_NR ? names[why] : "?";
}

/* Whether a slot was claimed at @pos: the peer's reserve counter is past it (untrusted). */
static bool claimed(const struct pt_preload_hdr *hdr, uint64_t pos, uint32_t nslots)
{
	uint64_t reserve = __atomic_load_n(&hdr->reserve, __ATOMIC_ACQUIRE);

	return reserve > pos && reserve - pos <= nslots;
}

int pt_preload_consume(struct pt_preload_consumer *c, const void *ring, uint64_t now_ns,
		       pt_preload_event_fn fn, void *arg)
{
	return pt_preload_consume_max(c, ring, now_ns, UINT32_MAX, fn, arg);
}

int pt_preload_consume_max(struct pt_preload_consumer *c, const void *ring, uint64_t now_ns,
			   uint32_t max, pt_preload_event_fn fn, void *arg)
{
	const struct pt_preload_hdr *hdr = (const struct pt_preload_hdr *)ring;
	const struct pt_preload_rec *slots =
		(const struct pt_preload_rec *)((const char *)ring + PT_PRELOAD_DATA_OFF);
	uint32_t budget = c->lim.max_per_drain < max ? c->lim.max_per_drain : max;
	int consumed = 0;

	if (now_ns - c->window_start_ns >= NSEC_PER_SEC) {
		c->window_start_ns = now_ns;
		c->window_count = 0;
	}
	while (budget) {
		const struct pt_preload_rec *slot = &slots[c->tail & (c->nslots - 1)];
		struct pt_preload_rec copy;
		struct pt_preload_event ev;
		enum pt_preload_reject why;
		int ret;

		if (c->window_count >= c->lim.max_per_sec) {
			c->throttled++;
			break;
		}
		/* seq first (acquire): the rest of the slot was written before it. */
		copy.seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
		memcpy((char *)&copy + sizeof(copy.seq), (const char *)slot + sizeof(copy.seq),
		       sizeof(copy) - sizeof(copy.seq));
		ret = pt_preload_decode_rec(&copy, c->tail, &ev, &why);
		if (ret == -EAGAIN) {
			/*
			 * Not published. Normal while a producer fills it, so wait; but a slot
			 * that stays claimed and unpublished (a thread killed mid-record, a
			 * broken peer) must not block the ring forever.
			 */
			if (!claimed(hdr, c->tail, c->nslots) || ++c->stalled < c->lim.stall_drains)
				break;
			why = PT_PRELOAD_REJ_STALLED;
			ret = -EINVAL;
		}
		c->stalled = 0;
		c->tail++;
		c->window_count++;
		budget--;
		consumed++;
		if (ret) {
			c->rejected[why]++;
			continue;
		}
		if (fn) {
			ret = fn(&ev, arg);
			if (ret < 0)
				return ret;
			if (ret > 0 && ret <= PT_PRELOAD_REJ_NR) {
				c->rejected[ret - 1]++;
				continue;
			}
		}
		c->accepted++;
	}
	return consumed;
}
