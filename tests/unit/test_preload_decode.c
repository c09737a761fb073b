// SPDX-License-Identifier: GPL-2.0
/* The preload ring decoder: registration, header, records and the consumer, on rings in memory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "pagetier/preload_ring.h"
#include "preload_server.h"

#define NSLOTS 64
#define RING_BYTES PT_PRELOAD_RING_BYTES(NSLOTS)
#define SEC 1000000000ULL

/* A ring in memory, written by libpagetier.so's own producer (pagetier/preload_ring.h). */
struct ring {
	void *mem;
	struct pt_preload_ring p;
};

static struct ring ring_new(void)
{
	struct ring r;

	r.mem = aligned_alloc(4096, RING_BYTES);
	assert_non_null(r.mem);
	memset(r.mem, 0, RING_BYTES);
	pt_preload_ring_init(&r.p, r.mem, NSLOTS);
	r.p.hdr->sample_shift = 6;
	r.p.hdr->big_threshold = 65536;
	return r;
}

/* What the library does: claim the next position, fill, publish. Returns the position. */
static uint64_t put(struct ring *r, uint16_t type, uint16_t flags, uint64_t addr, uint64_t len,
		    uint64_t addr2, uint64_t len2)
{
	uint64_t pos;

	assert_true(pt_preload_ring_claim(&r->p, 1, &pos));
	pt_preload_ring_put(&r->p, pos, 42, type, flags, addr, len, addr2, len2);
	return pos;
}

/* What the server does after a drain: gives the consumed slots back to the producer. */
static void give_back(struct ring *r, const struct pt_preload_consumer *c)
{
	__atomic_store_n(&r->p.ctl->tail, c->tail, __ATOMIC_RELEASE);
}

static struct pt_preload_rec rec(uint16_t type, uint32_t flags, uint64_t addr, uint64_t len,
				 uint64_t addr2, uint64_t len2)
{
	struct pt_preload_rec r;

	memset(&r, 0, sizeof(r));
	r.seq = 8;
	r.type = type;
	r.size = sizeof(r);
	r.flags = flags;
	r.addr = addr;
	r.len = len;
	r.addr2 = addr2;
	r.len2 = len2;
	return r;
}

/* Decodes @r as position 7: 0, -EAGAIN, or the rejection reason + 100. */
static int decode(struct pt_preload_rec r)
{
	struct pt_preload_event ev;
	enum pt_preload_reject why = PT_PRELOAD_REJ_NR;
	int ret = pt_preload_decode_rec(&r, 7, &ev, &why);

	if (ret == -EINVAL)
		return 100 + (int)why;
	return ret;
}

#define REJ(x) (100 + PT_PRELOAD_REJ_##x)

static void test_hello(void **state)
{
	struct pt_preload_hello h = { PT_PRELOAD_MAGIC, PT_PRELOAD_VERSION, sizeof(h), RING_BYTES };
	uint64_t bytes = 0;
	struct pt_preload_hello bad;

	(void)state;
	assert_int_equal(pt_preload_check_hello(&h, sizeof(h), &bytes), 0);
	assert_int_equal(bytes, RING_BYTES);
	assert_int_equal(pt_preload_check_hello(&h, sizeof(h) - 1, &bytes), -EINVAL);
	assert_int_equal(pt_preload_check_hello(&h, sizeof(h) + 1, &bytes), -EINVAL);
	bad = h;
	bad.magic ^= 1;
	assert_int_equal(pt_preload_check_hello(&bad, sizeof(bad), &bytes), -EPROTO);
	bad = h;
	bad.version = 2;
	assert_int_equal(pt_preload_check_hello(&bad, sizeof(bad), &bytes), -EPROTO);
	bad = h;
	bad.size = 8;
	assert_int_equal(pt_preload_check_hello(&bad, sizeof(bad), &bytes), -EINVAL);
	bad = h;
	bad.ring_bytes = PT_PRELOAD_RING_BYTES(96);	/* not a power of two */
	assert_int_equal(pt_preload_check_hello(&bad, sizeof(bad), &bytes), -EINVAL);
	bad.ring_bytes = PT_PRELOAD_RING_BYTES(64) + 1;
	assert_int_equal(pt_preload_check_hello(&bad, sizeof(bad), &bytes), -EINVAL);
	bad.ring_bytes = PT_PRELOAD_RING_BYTES(PT_PRELOAD_MAX_SLOTS * 2);
	assert_int_equal(pt_preload_check_hello(&bad, sizeof(bad), &bytes), -EINVAL);
	bad.ring_bytes = PT_PRELOAD_RING_BYTES(32);
	assert_int_equal(pt_preload_check_hello(&bad, sizeof(bad), &bytes), -EINVAL);
}

static void test_header(void **state)
{
	struct ring r = ring_new();
	uint32_t n = 0;

	(void)state;
	assert_int_equal(pt_preload_check_header(r.p.hdr, RING_BYTES, &n), 0);
	assert_int_equal(n, NSLOTS);
	/* The memfd's real size decides, not what the header claims. */
	assert_int_equal(pt_preload_check_header(r.p.hdr, RING_BYTES * 2, &n), -EINVAL);
	r.p.hdr->nslots = 128;
	assert_int_equal(pt_preload_check_header(r.p.hdr, RING_BYTES, &n), -EINVAL);
	r.p.hdr->nslots = 65;
	assert_int_equal(pt_preload_check_header(r.p.hdr, PT_PRELOAD_RING_BYTES(65), &n), -EINVAL);
	r.p.hdr->nslots = NSLOTS;
	r.p.hdr->slot_size = 32;
	assert_int_equal(pt_preload_check_header(r.p.hdr, RING_BYTES, &n), -EINVAL);
	r.p.hdr->slot_size = PT_PRELOAD_SLOT_SIZE;
	r.p.hdr->sample_shift = 31;
	assert_int_equal(pt_preload_check_header(r.p.hdr, RING_BYTES, &n), -EINVAL);
	r.p.hdr->sample_shift = 6;
	r.p.hdr->version = 9;
	assert_int_equal(pt_preload_check_header(r.p.hdr, RING_BYTES, &n), -EPROTO);
	r.p.hdr->version = PT_PRELOAD_VERSION;
	r.p.hdr->magic = 0;
	assert_int_equal(pt_preload_check_header(r.p.hdr, RING_BYTES, &n), -EPROTO);
	free(r.mem);
}

static void test_valid_records(void **state)
{
	struct pt_preload_rec r = rec(PT_PRELOAD_REC_ALLOC, PT_PRELOAD_F_BIG, 0x7f0000001010,
				      1 << 20, 0, 0);
	struct pt_preload_event ev;
	enum pt_preload_reject why;

	(void)state;
	assert_int_equal(pt_preload_decode_rec(&r, 7, &ev, &why), 0);
	assert_int_equal(ev.type, PT_PRELOAD_REC_ALLOC);
	assert_int_equal(ev.flags, PT_PRELOAD_F_BIG);
	assert_int_equal(ev.addr, 0x7f0000001010);
	assert_int_equal(ev.len, 1 << 20);
	assert_int_equal(decode(rec(PT_PRELOAD_REC_ALLOC, PT_PRELOAD_F_REALLOC | PT_PRELOAD_F_SAMPLED,
				    0x5000, 64, 0x4000, 0)), 0);
	assert_int_equal(decode(rec(PT_PRELOAD_REC_FREE, PT_PRELOAD_F_SAMPLED, 0x5000, 64, 0, 0)), 0);
	assert_int_equal(decode(rec(PT_PRELOAD_REC_MMAP, 0, 0x7f0000000000, 8192, 3, 0x22)), 0);
	assert_int_equal(decode(rec(PT_PRELOAD_REC_MUNMAP, 0, 0x7f0000000000, 8192, 0, 0)), 0);
	assert_int_equal(decode(rec(PT_PRELOAD_REC_MREMAP, 0, 0x7f0000000000, 8192,
				    0x7f1000000000, 1 << 20)), 0);
	assert_int_equal(decode(rec(PT_PRELOAD_REC_HEARTBEAT, PT_PRELOAD_F_WAKE, 0, 12345, 0, 0)), 0);
	/* The highest user page, ending exactly at the end of user space. */
	assert_int_equal(decode(rec(PT_PRELOAD_REC_MUNMAP, 0, PT_PRELOAD_USER_END - 4096, 4096, 0,
				    0)), 0);
}

static void test_malformed_records(void **state)
{
	struct pt_preload_rec r;

	(void)state;
	/* Not (yet) published at this position: wrong or stale seq. */
	r = rec(PT_PRELOAD_REC_FREE, 0, 0x5000, 64, 0, 0);
	r.seq = 0;
	assert_int_equal(decode(r), -EAGAIN);
	r.seq = 8 - NSLOTS;	/* the previous lap's record */
	assert_int_equal(decode(r), -EAGAIN);
	/* Truncated and oversized records. */
	r = rec(PT_PRELOAD_REC_FREE, 0, 0x5000, 64, 0, 0);
	r.size = 32;
	assert_int_equal(decode(r), REJ(SIZE));
	r.size = 128;
	assert_int_equal(decode(r), REJ(SIZE));
	r.size = 0;
	assert_int_equal(decode(r), REJ(SIZE));
	/* Types and flags. */
	assert_int_equal(decode(rec(0, 0, 0x5000, 64, 0, 0)), REJ(TYPE));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_MAX, 0, 0x5000, 64, 0, 0)), REJ(TYPE));
	assert_int_equal(decode(rec(0xffff, 0, 0x5000, 64, 0, 0)), REJ(TYPE));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_ALLOC, 0x8000, 0x5000, 64, 0, 0)), REJ(FLAGS));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_MMAP, PT_PRELOAD_F_BIG, 0x5000, 64, 0, 0)),
			 REJ(FLAGS));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_FREE, PT_PRELOAD_F_WAKE, 0x5000, 64, 0, 0)),
			 REJ(FLAGS));
	/* Ranges: zero, kernel addresses, wrapping, unaligned mappings. */
	assert_int_equal(decode(rec(PT_PRELOAD_REC_ALLOC, 0, 0, 64, 0, 0)), REJ(RANGE));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_ALLOC, 0, 0x5000, 0, 0, 0)), REJ(RANGE));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_ALLOC, 0, 0xffff888000000000ULL, 64, 0, 0)),
			 REJ(RANGE));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_FREE, 0, PT_PRELOAD_USER_END - 16, 32, 0, 0)),
			 REJ(RANGE));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_FREE, 0, 0x5000, UINT64_MAX, 0, 0)), REJ(RANGE));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_MMAP, 0, 0x5010, 4096, 3, 0x22)), REJ(RANGE));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_MMAP, 0, 0x5000, 4096, 1ULL << 40, 0)),
			 REJ(RANGE));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_MUNMAP, 0, 0x5000, 4096, 1, 0)), REJ(RANGE));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_MREMAP, 0, 0x5000, 4096, 0, 4096)), REJ(RANGE));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_MREMAP, 0, 0x5000, 4096, 0x9001, 4096)),
			 REJ(RANGE));
	/* An old address only with the realloc flag. */
	assert_int_equal(decode(rec(PT_PRELOAD_REC_ALLOC, 0, 0x5000, 64, 0x4000, 0)), REJ(RANGE));
	assert_int_equal(decode(rec(PT_PRELOAD_REC_HEARTBEAT, 0, 0x1000, 1, 0, 0)), REJ(RANGE));
	assert_string_equal(pt_preload_reject_name(PT_PRELOAD_REJ_RANGE), "range");
	assert_string_equal(pt_preload_reject_name(PT_PRELOAD_REJ_NR), "?");
}

struct seen {
	int n;
	uint64_t addrs[256];
	int fail_at;
};

static int on_event(const struct pt_preload_event *ev, void *arg)
{
	struct seen *s = arg;

	if (s->fail_at && s->n + 1 == s->fail_at)
		return -ECANCELED;
	if (s->n < 256)
		s->addrs[s->n] = ev->addr;
	s->n++;
	return 0;
}

static void test_consume_in_order_and_wrap(void **state)
{
	struct ring r = ring_new();
	struct pt_preload_limits lim;
	struct pt_preload_consumer c;
	struct seen s = { 0 };
	uint64_t next = 0x10000;

	(void)state;
	pt_preload_default_limits(&lim);
	pt_preload_consumer_init(&c, NSLOTS, 0, &lim);
	assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 0);
	/* Three laps of the ring, consumed in chunks of 40. */
	for (int lap = 0; lap < 3; lap++) {
		for (int i = 0; i < 40; i++)
			put(&r, PT_PRELOAD_REC_FREE, 0, next + (uint64_t)i * 64, 64, 0, 0);
		s.n = 0;
		assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 40);
		give_back(&r, &c);
		assert_int_equal(s.n, 40);
		for (int i = 0; i < 40; i++)
			assert_int_equal(s.addrs[i], next + (uint64_t)i * 64);
		next += 0x100000;
	}
	assert_int_equal(c.tail, 120);
	assert_int_equal(c.accepted, 120);
	/* Nothing new: the old lap's slots are not read again. */
	assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 0);
	free(r.mem);
}

static void test_consume_counts_rejects_and_continues(void **state)
{
	struct ring r = ring_new();
	struct pt_preload_limits lim;
	struct pt_preload_consumer c;
	struct seen s = { 0 };
	uint64_t pos;

	(void)state;
	pt_preload_default_limits(&lim);
	pt_preload_consumer_init(&c, NSLOTS, 0, &lim);
	put(&r, PT_PRELOAD_REC_FREE, 0, 0x5000, 64, 0, 0);
	pos = put(&r, PT_PRELOAD_REC_FREE, 0, 0x6000, 64, 0, 0);
	r.p.slots[pos].size = 16;	/* a hostile producer rewrites a published record */
	put(&r, 77, 0, 0x6000, 64, 0, 0);
	put(&r, PT_PRELOAD_REC_MUNMAP, 0, 0x6001, 4096, 0, 0);
	put(&r, PT_PRELOAD_REC_FREE, 0, 0x7000, 64, 0, 0);
	assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 5);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.addrs[1], 0x7000);
	assert_int_equal(c.accepted, 2);
	assert_int_equal(c.rejected[PT_PRELOAD_REJ_SIZE], 1);
	assert_int_equal(c.rejected[PT_PRELOAD_REJ_TYPE], 1);
	assert_int_equal(c.rejected[PT_PRELOAD_REJ_RANGE], 1);
	free(r.mem);
}

static void test_unpublished_slot_waits_then_is_skipped(void **state)
{
	struct ring r = ring_new();
	struct pt_preload_limits lim;
	struct pt_preload_consumer c;
	struct seen s = { 0 };
	struct pt_preload_rec *slot;
	uint64_t pos;

	(void)state;
	pt_preload_default_limits(&lim);
	lim.stall_drains = 3;
	pt_preload_consumer_init(&c, NSLOTS, 0, &lim);
	put(&r, PT_PRELOAD_REC_FREE, 0, 0x5000, 64, 0, 0);
	/* Claimed and written, not yet published (a thread between the two, or a dead one). */
	assert_true(pt_preload_ring_claim(&r.p, 1, &pos));
	slot = pt_preload_ring_fill(&r.p, pos, 42, PT_PRELOAD_REC_FREE, 0, 0x6000, 64, 0, 0);
	put(&r, PT_PRELOAD_REC_FREE, 0, 0x7000, 64, 0, 0);
	assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 1);
	assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 0);
	/* Published in time: read normally. */
	pt_preload_ring_publish(slot, pos);
	assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 2);
	assert_int_equal(s.n, 3);
	assert_int_equal(c.rejected[PT_PRELOAD_REJ_STALLED], 0);

	/* Never published: skipped after stall_drains drains. */
	assert_true(pt_preload_ring_claim(&r.p, 1, &pos));
	pt_preload_ring_fill(&r.p, pos, 42, PT_PRELOAD_REC_FREE, 0, 0x8000, 64, 0, 0);
	put(&r, PT_PRELOAD_REC_FREE, 0, 0x9000, 64, 0, 0);
	assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 0);
	assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 0);
	assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 2);
	assert_int_equal(c.rejected[PT_PRELOAD_REJ_STALLED], 1);
	assert_int_equal(s.addrs[s.n - 1], 0x9000);

	/* An unclaimed slot (reserve not past it) is simply the end: never skipped. */
	for (int i = 0; i < 10; i++)
		assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 0);
	assert_int_equal(c.rejected[PT_PRELOAD_REJ_STALLED], 1);
	/* A hostile reserve value far ahead does not make us skip either. */
	r.p.hdr->reserve = UINT64_MAX;
	for (int i = 0; i < 10; i++)
		assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 0);
	assert_int_equal(c.rejected[PT_PRELOAD_REJ_STALLED], 1);
	free(r.mem);
}

static void test_rate_limits(void **state)
{
	struct ring r = ring_new();
	struct pt_preload_limits lim;
	struct pt_preload_consumer c;
	struct seen s = { 0 };

	(void)state;
	pt_preload_default_limits(&lim);
	lim.max_per_drain = 10;
	lim.max_per_sec = 25;
	pt_preload_consumer_init(&c, NSLOTS, 0, &lim);
	for (int i = 0; i < 60; i++)
		put(&r, PT_PRELOAD_REC_FREE, 0, 0x5000, 64, 0, 0);
	assert_int_equal(pt_preload_consume(&c, r.mem, 1 * SEC, on_event, &s), 10);
	assert_int_equal(pt_preload_consume(&c, r.mem, 1 * SEC, on_event, &s), 10);
	assert_int_equal(pt_preload_consume(&c, r.mem, 1 * SEC, on_event, &s), 5);
	assert_int_equal(pt_preload_consume(&c, r.mem, 1 * SEC + SEC / 2, on_event, &s), 0);
	assert_true(c.throttled >= 2);
	/* The next second has a new budget. */
	assert_int_equal(pt_preload_consume(&c, r.mem, 2 * SEC + 1, on_event, &s), 10);
	assert_int_equal(c.tail, 35);
	free(r.mem);
}

static void test_callback_error_stops(void **state)
{
	struct ring r = ring_new();
	struct pt_preload_limits lim;
	struct pt_preload_consumer c;
	struct seen s = { .fail_at = 3 };

	(void)state;
	pt_preload_default_limits(&lim);
	pt_preload_consumer_init(&c, NSLOTS, 0, &lim);
	for (int i = 0; i < 5; i++)
		put(&r, PT_PRELOAD_REC_FREE, 0, 0x5000, 64, 0, 0);
	assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), -ECANCELED);
	assert_int_equal(s.n, 2);
	/* The failed record was consumed: the next drain goes on after it. */
	s.fail_at = 0;
	assert_int_equal(pt_preload_consume(&c, r.mem, SEC, on_event, &s), 2);
	assert_int_equal(c.tail, 5);
	free(r.mem);
}

/* Garbage everywhere: nothing crashes, everything is counted, the tail still moves. */
static void test_fuzzed_ring(void **state)
{
	struct ring r = ring_new();
	struct pt_preload_limits lim;
	struct pt_preload_consumer c;
	struct seen s = { 0 };
	uint64_t x = 0x9e3779b97f4a7c15ULL, total = 0;

	(void)state;
	pt_preload_default_limits(&lim);
	pt_preload_consumer_init(&c, NSLOTS, 0, &lim);
	for (int round = 0; round < 200; round++) {
		struct pt_preload_rec *slot;
		unsigned char *p;
		uint64_t pos;
		int ret;

		/* The real producer's claim and publication, with garbage in between. */
		assert_true(pt_preload_ring_claim(&r.p, 1, &pos));
		slot = &r.p.slots[pos & r.p.mask];
		p = (unsigned char *)slot;
		for (size_t i = 0; i < sizeof(struct pt_preload_rec); i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			p[i] = (unsigned char)x;
		}
		pt_preload_ring_publish(slot, pos);
		ret = pt_preload_consume(&c, r.mem, SEC * (uint64_t)(round + 1), on_event, &s);
		give_back(&r, &c);
		assert_int_equal(ret, 1);
		total += (uint64_t)ret;
	}
	assert_int_equal(c.tail, 200);
	{
		uint64_t rej = 0;

		for (int i = 0; i < PT_PRELOAD_REJ_NR; i++)
			rej += c.rejected[i];
		assert_int_equal(c.accepted + rej, total);
		assert_true(rej >= 190);
	}
	free(r.mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_valid_records),
		cmocka_unit_test(test_malformed_records),
		cmocka_unit_test(test_consume_in_order_and_wrap),
		cmocka_unit_test(test_consume_counts_rejects_and_continues),
		cmocka_unit_test(test_unpublished_slot_waits_then_is_skipped),
		cmocka_unit_test(test_rate_limits),
		cmocka_unit_test(test_callback_error_stops),
		cmocka_unit_test(test_fuzzed_ring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
