// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: everything a preloaded (untrusted) process can put in front of the
 * daemon's decoder: its registration message, its ring header and the ring's records.
 * Any crash, sanitizer report or accepted record outside the rules is a bug.
 *
 *   make fuzz && build/fuzz/fuzz_preload_decode -max_total_time=600 build/fuzz/corpus
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "preload_server.h"

#define NSLOTS PT_PRELOAD_MIN_SLOTS

static void check_range(uint64_t addr, uint64_t len)
{
	if (!addr || !len || addr + len < addr || addr + len > PT_PRELOAD_USER_END)
		abort();
}

/* What the decoder accepts must follow the record format of pagetier/preload_proto.h. */
static int check_event(const struct pt_preload_event *ev, void *arg)
{
	(void)arg;
	switch (ev->type) {
	case PT_PRELOAD_REC_MREMAP:
		check_range(ev->addr2, ev->len2);
		check_range(ev->addr, ev->len);
		break;
	case PT_PRELOAD_REC_MMAP:		/* addr2, len2: prot and flags */
		if (ev->addr2 > 0xffffffffULL || ev->len2 > 0xffffffffULL)
			abort();
		check_range(ev->addr, ev->len);
		break;
	case PT_PRELOAD_REC_ALLOC:
		if (ev->addr2 >= PT_PRELOAD_USER_END)
			abort();
		check_range(ev->addr, ev->len);
		break;
	case PT_PRELOAD_REC_HEARTBEAT:
		if (ev->addr || ev->addr2 || ev->len2)
			abort();
		break;
	default:
		check_range(ev->addr, ev->len);
		if (ev->addr2 || ev->len2)
			abort();
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The daemon maps the ring, so it is page aligned: so is this copy. */
	static uint8_t ring[PT_PRELOAD_RING_BYTES(NSLOTS)] __attribute__((aligned(4096)));
	struct pt_preload_limits lim;
	struct pt_preload_consumer c;
	struct pt_preload_hdr hdr;
	uint64_t ring_bytes, tail = 0, now = 0;
	uint32_t nslots;

	pt_preload_check_hello(data, size, &ring_bytes);
	if (size >= sizeof(hdr)) {
		memcpy(&hdr, data, sizeof(hdr));
		pt_preload_check_header(&hdr, size, &nslots);
		pt_preload_check_header(&hdr, PT_PRELOAD_RING_BYTES(NSLOTS), &nslots);
	}
	if (size >= 16) {
		memcpy(&tail, data, 8);
		memcpy(&now, data + 8, 8);
		data += 16;
		size -= 16;
	}
	memset(ring, 0, sizeof(ring));
	memcpy(ring + PT_PRELOAD_DATA_OFF, data,
	       size < NSLOTS * PT_PRELOAD_SLOT_SIZE ? size : NSLOTS * PT_PRELOAD_SLOT_SIZE);
	pt_preload_default_limits(&lim);
	pt_preload_consumer_init(&c, NSLOTS, tail, &lim);
	for (int i = 0; i < 4; i++)
		pt_preload_consume(&c, ring, now + (uint64_t)i * 1000000, check_event, NULL);
	return 0;
}
