/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The protocol between libpagetier.so (the producer, inside an application) and pagetierd
 * (the consumer): a per-process shared-memory ring in a sealed memfd, registered over the
 * unix socket PT_PRELOAD_SOCK_PATH.
 *
 * Registration: the library connects, sends one struct pt_preload_hello with the memfd
 * attached (SCM_RIGHTS) and keeps the connection open for the life of the process. The
 * daemon identifies the peer by SO_PEERCRED and /proc/PID/cgroup, never by anything the
 * peer writes, and answers one byte: PT_PRELOAD_ACCEPT or PT_PRELOAD_REJECT (the cgroup is
 * not opted in: the library goes back to pass-through). Afterwards the library may send
 * PT_PRELOAD_DOORBELL bytes (activity after idle), and EOF means the process is gone.
 *
 * The memfd (sealed against shrinking and growing, so the daemon's mapping cannot SIGBUS):
 *   [0, 4096)         struct pt_preload_hdr   written by the library, read-only to the daemon
 *   [4096, 8192)      struct pt_preload_ctl   written by the daemon (tail, requests)
 *   [8192, 8192+N*64) N slots of struct pt_preload_rec, read-only to the daemon
 *
 * The ring: producers (any thread of the process) claim slot positions with a CAS on
 * hdr.reserve, refusing to claim when reserve - ctl.tail would exceed nslots (the record is
 * dropped and counted in hdr.dropped: the application never waits), fill the slot and
 * publish it by storing rec.seq = position + 1 last, with release order. The daemon reads
 * slots from ctl.tail on while rec.seq matches, then stores the new tail (release).
 *
 * Everything the daemon reads here is untrusted: preload_decode.c validates it.
 * Versioned: a new version only adds record types, header fields in the reserved space, or
 * record fields in the reserved words; the consumer rejects a version it does not know.
 */
#ifndef PAGETIER_PRELOAD_PROTO_H
#define PAGETIER_PRELOAD_PROTO_H

#include <stdint.h>

#define PT_PRELOAD_SOCK_PATH	"/run/pagetier/preload.sock"
#define PT_PRELOAD_SOCK_ENV	"PAGETIER_PRELOAD_SOCK"

#define PT_PRELOAD_MAGIC	0x4c505450u	/* "PTPL" */
#define PT_PRELOAD_VERSION	1

#define PT_PRELOAD_HDR_OFF	0
#define PT_PRELOAD_CTL_OFF	4096
#define PT_PRELOAD_DATA_OFF	8192
#define PT_PRELOAD_SLOT_SIZE	64
#define PT_PRELOAD_MIN_SLOTS	64
#define PT_PRELOAD_MAX_SLOTS	65536		/* 4 MiB of records */
#define PT_PRELOAD_DEFAULT_SLOTS 2048		/* 128 KiB */
/*
 * libpagetier.so reports one small allocation per 2^PT_PRELOAD_SAMPLE_SHIFT allocation units
 * on average (hdr.sample_shift); the daemon weighs each sample by as many bytes.
 */
#define PT_PRELOAD_SAMPLE_SHIFT	18

/* The memfd's size for @nslots slots. */
#define PT_PRELOAD_RING_BYTES(nslots) \
	((uint64_t)PT_PRELOAD_DATA_OFF + (uint64_t)(nslots) * PT_PRELOAD_SLOT_SIZE)

/* Bytes on the socket. */
#define PT_PRELOAD_ACCEPT	'A'	/* daemon -> library, once */
#define PT_PRELOAD_REJECT	'R'	/* daemon -> library, once, then close */
#define PT_PRELOAD_DOORBELL	'W'	/* library -> daemon: activity after idle */

struct pt_preload_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t size;			/* sizeof(struct pt_preload_hello) */
	uint64_t ring_bytes;		/* the memfd's size */
};

struct pt_preload_hdr {
	/* Set once before registration. */
	uint32_t magic;
	uint16_t version;
	uint16_t hdr_size;		/* sizeof(struct pt_preload_hdr) */
	uint32_t slot_size;		/* PT_PRELOAD_SLOT_SIZE */
	uint32_t nslots;		/* a power of two */
	/*
	 * Small allocations are sampled by units: a call counts its size plus call_units, and
	 * one allocation is reported per 2^sample_shift units on average (about 1 in 1000
	 * calls for small blocks; larger ones in proportion to their size).
	 */
	uint32_t sample_shift;
	uint16_t call_units;
	uint16_t free_sample_shift;	/* frees of small blocks: 1 in 2^shift, by address */
	uint64_t big_threshold;		/* allocations of at least this are always reported */
	uint64_t reserved1[4];
	/* Producer state, its own cache line. */
	_Alignas(64) uint64_t reserve;	/* next slot position to claim (CAS) */
	uint64_t dropped;		/* records lost: ring full */
	uint64_t activity_ns;		/* CLOCK_MONOTONIC_COARSE of the last activity tick */
	uint64_t alloc_units;		/* allocation units so far (per-thread counts flushed) */
	uint32_t idle_ack;		/* the ctl.idle_seq last answered with a wake signal */
	uint32_t trim_done;		/* the ctl.trim_seq last served with malloc_trim(0) */
	uint64_t trims;			/* malloc_trim(0) calls made on request */
};

struct pt_preload_ctl {
	uint64_t tail;			/* slots consumed; the producer may reuse those below */
	uint64_t req_seq;		/* bumped after idle_seq or trim_seq changes */
	uint32_t idle_seq;		/* bumped: "you are idle, signal your next activity" */
	uint32_t trim_seq;		/* bumped: "call malloc_trim(0)" */
	/*
	 * The low 32 bits of req_seq, stored after it: the library's request thread sleeps on
	 * this word (FUTEX_WAIT on the shared memfd) and the daemon wakes it (FUTEX_WAKE)
	 * after every request. The library's fast path reads nothing of the daemon's.
	 */
	uint32_t req_word;
	uint32_t reserved;
};

enum pt_preload_rec_type {
	PT_PRELOAD_REC_ALLOC = 1,	/* addr, len; addr2: old address for realloc */
	PT_PRELOAD_REC_FREE = 2,	/* addr, len (usable size) */
	PT_PRELOAD_REC_MMAP = 3,	/* addr, len; addr2: prot, len2: flags */
	PT_PRELOAD_REC_MUNMAP = 4,	/* addr, len */
	PT_PRELOAD_REC_MREMAP = 5,	/* addr, len: old; addr2, len2: new */
	PT_PRELOAD_REC_HEARTBEAT = 6,	/* len: allocation units since the previous one */
	PT_PRELOAD_REC_MAX = 7
};

/* rec.flags */
#define PT_PRELOAD_F_SAMPLED	0x0001	/* small block, in the sample (hdr.sample_shift) */
#define PT_PRELOAD_F_BIG	0x0002	/* at least big_threshold: always reported */
#define PT_PRELOAD_F_CALLOC	0x0010
#define PT_PRELOAD_F_REALLOC	0x0020
#define PT_PRELOAD_F_ALIGNED	0x0040	/* posix_memalign, aligned_alloc, memalign, valloc */
#define PT_PRELOAD_F_WAKE	0x0100	/* heartbeat: first activity after ctl.idle_seq */
#define PT_PRELOAD_F_KNOWN	0x0173

struct pt_preload_rec {
	uint64_t seq;			/* position + 1: stored last (release) */
	uint16_t type;			/* enum pt_preload_rec_type */
	uint16_t size;			/* sizeof(struct pt_preload_rec) of the writer */
	uint32_t flags;
	uint32_t tid;			/* the producer's claim: informational only */
	uint32_t reserved;
	uint64_t addr;
	uint64_t len;
	uint64_t addr2;
	uint64_t len2;
	uint64_t reserved2;
};

_Static_assert(sizeof(struct pt_preload_rec) == PT_PRELOAD_SLOT_SIZE, "slot size");
_Static_assert(sizeof(struct pt_preload_hdr) <= PT_PRELOAD_CTL_OFF, "header fits its page");
_Static_assert(sizeof(struct pt_preload_ctl) <= PT_PRELOAD_DATA_OFF - PT_PRELOAD_CTL_OFF,
	       "control fits its page");

#endif
