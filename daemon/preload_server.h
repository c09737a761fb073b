/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The daemon's side of libpagetier.so (protocol: include/pagetier/preload_proto.h).
 *
 * preload_decode.c (pure, no I/O): validates what a peer wrote in its ring. Everything in
 * the ring is untrusted and may change while we read it, so each record is copied once and
 * the copy validated: layout, sizes, types, flags, address ranges (user space, no wrap),
 * publication order, and a per-peer rate budget. Whether an address lies in the peer's own
 * mappings is for the caller to check against /proc/PID/maps.
 *
 * preload_server.c: the unix socket. Accepts peers, identifies each by SO_PEERCRED and
 * /proc/PID/cgroup, confirmed by a pidfd of the process that connected (SO_PEERPIDFD, Linux
 * 6.5; before, by its socket still being open), asks a callback whether that cgroup is opted
 * in, maps the ring (data read-only, only the control page writable) and drains it from the
 * daemon's event loop.
 */
#ifndef PAGETIER_PRELOAD_SERVER_H
#define PAGETIER_PRELOAD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pagetier/preload_proto.h"

/* --- decoder (preload_decode.c) --------------------------------------------------------- */

/* Highest user address + 1 on x86-64 with 5-level paging; 4-level is below. */
#define PT_PRELOAD_USER_END	(1ULL << 56)

/* A validated record. */
struct pt_preload_event {
	enum pt_preload_rec_type type;
	uint32_t flags;
	uint32_t tid;			/* as claimed by the peer */
	uint64_t addr;
	uint64_t len;
	uint64_t addr2;
	uint64_t len2;
};

enum pt_preload_reject {
	PT_PRELOAD_REJ_SIZE,		/* record size field: truncated or oversized */
	PT_PRELOAD_REJ_TYPE,		/* unknown record type */
	PT_PRELOAD_REJ_FLAGS,		/* unknown flags, or flags the type does not take */
	PT_PRELOAD_REJ_RANGE,		/* zero, unaligned, wrapping or non-user range */
	PT_PRELOAD_REJ_STALLED,		/* claimed but never published: skipped */
	PT_PRELOAD_REJ_FOREIGN,		/* names memory the peer does not have mapped */
	PT_PRELOAD_REJ_NR
};

struct pt_preload_limits {
	uint32_t max_per_drain;		/* records consumed per drain call */
	uint32_t max_per_sec;		/* records consumed per second; then the ring fills */
	uint32_t stall_drains;		/* drains an unpublished slot may block before skipped */
};

struct pt_preload_consumer {
	uint64_t tail;			/* next position to read */
	uint32_t nslots;
	struct pt_preload_limits lim;
	uint64_t window_start_ns;
	uint32_t window_count;
	uint32_t stalled;		/* drains stuck on the same unpublished slot */
	uint64_t accepted;
	uint64_t rejected[PT_PRELOAD_REJ_NR];
	uint64_t throttled;		/* drains cut short by max_per_sec */
};

/*
 * Gets each valid record: returns 0 (taken), 1 + an enum pt_preload_reject (the caller's own
 * check refused it: counted as that reject), or a negative errno (stop).
 */
typedef int (*pt_preload_event_fn)(const struct pt_preload_event *ev, void *arg);

void pt_preload_default_limits(struct pt_preload_limits *lim);

/* Validates the registration message (@len bytes received). 0 or -EINVAL / -EPROTO. */
int pt_preload_check_hello(const void *msg, size_t len, uint64_t *ring_bytes);

/*
 * Validates a snapshot of the ring header against the memfd's size; sets *nslots.
 * 0, -EPROTO (not our ring or another version) or -EINVAL (inconsistent sizes).
 */
int pt_preload_check_header(const struct pt_preload_hdr *hdr, uint64_t file_size,
			    uint32_t *nslots);

/*
 * Decodes a copy of the slot expected to hold position @pos. 0 and *ev filled, -EAGAIN
 * if it is not published (yet), or -EINVAL with *why set.
 */
int pt_preload_decode_rec(const struct pt_preload_rec *rec, uint64_t pos,
			  struct pt_preload_event *ev, enum pt_preload_reject *why);

void pt_preload_consumer_init(struct pt_preload_consumer *c, uint32_t nslots, uint64_t tail,
			      const struct pt_preload_limits *lim);

/*
 * Reads the published records of the ring mapped at @ring (PT_PRELOAD_RING_BYTES(nslots)
 * bytes, as checked by pt_preload_check_header) from c->tail on, calls @fn for every valid
 * one and counts the others, within the rate budget at @now_ns. Advances c->tail; the
 * caller publishes it in the control page. Returns the number of records consumed (valid or
 * not), or the negative value @fn returned.
 */
int pt_preload_consume(struct pt_preload_consumer *c, const void *ring, uint64_t now_ns,
		       pt_preload_event_fn fn, void *arg);
/* The same, consuming at most @max records: the caller's budget across peers. */
int pt_preload_consume_max(struct pt_preload_consumer *c, const void *ring, uint64_t now_ns,
			   uint32_t max, pt_preload_event_fn fn, void *arg);

const char *pt_preload_reject_name(enum pt_preload_reject why);

/* --- server (preload_server.c) ---------------------------------------------------------- */

struct pt_preload_server;

/* Whether the peer's cgroup (its cgroup v2 path, "/a/b") is opted in. */
typedef bool (*pt_preload_optin_fn)(pid_t pid, const char *cgroup, void *arg);

/*
 * A validated record of one peer. Records that name memory (alloc, mmap, the new range of an
 * mremap) have been checked against the peer's own /proc/PID/maps.
 */
typedef void (*pt_preload_record_fn)(pid_t pid, const char *cgroup,
				     const struct pt_preload_event *ev, void *arg);

/* A registered peer appeared, or went away (exit, exec, or its connection closed). */
typedef void (*pt_preload_peer_fn)(pid_t pid, const char *cgroup, bool up, void *arg);

/*
 * Limits, so that no container (nor all of them) can take the daemon's descriptors or its
 * event loop: every field left 0 gets its default. The per-cgroup ones keep one container
 * from using up what all share; a cgroup is the peer's cgroup v2 path as the kernel says.
 */
struct pt_preload_server_opts {
	unsigned int max_peers;		/* connections held at once (default 4096) */
	unsigned int max_pending;	/* of those, not registered yet (default 64) */
	unsigned int max_pending_per_cgroup;	/* of those, of one cgroup (default 16) */
	/*
	 * Registered peers of one cgroup (default 256): one container forking thousands of
	 * registering processes must not take every peer slot, nor the daemon's fds. Beyond
	 * it a process is answered "not opted in" (pass-through until it execs); the
	 * scanner still sees its memory.
	 */
	unsigned int max_peers_per_cgroup;
	uint64_t max_ring_bytes;	/* all peers' rings mapped at once (default 256 MiB) */
	/*
	 * Rereads of /proc/PID/maps (to check that a record names the peer's own memory) run
	 * in the event loop: per second, at most this many (default 200) and bytes (64 MiB),
	 * and of one cgroup's peers at most this many (50) and bytes (16 MiB). A record that
	 * needs a read beyond them is refused as foreign, not waited for.
	 */
	unsigned int maps_reads_per_sec, maps_reads_per_sec_per_cgroup;
	uint64_t maps_bytes_per_sec, maps_bytes_per_sec_per_cgroup;
	/*
	 * Records consumed per drain (per tick) from all rings (default 65536) and from one
	 * cgroup's (16384); the rest wait in their rings. Each peer's own limits (rate, per
	 * drain) are in @limits.
	 */
	unsigned int max_records_per_drain, max_records_per_drain_per_cgroup;
	struct pt_preload_limits limits;
	const char *proc_root;		/* "/proc" unless testing */
	int (*peer_pidfd)(int sock);	/* NULL: SO_PEERPIDFD; tests inject its failures */
	pt_preload_peer_fn on_peer;	/* optional */
	void *peer_arg;
};

void pt_preload_server_default_opts(struct pt_preload_server_opts *opts);

/*
 * How many peers (a socket and a pidfd each) fit in a quarter of @nofile descriptors, at
 * most @max_peers: the rest is for the daemon's other work (cgroup walks and samples, the
 * pidfds of the processes it manages), which must never find the table full. Pure;
 * pt_preload_server_open applies it to RLIMIT_NOFILE.
 */
unsigned int pt_preload_peers_for_fds(uint64_t nofile, unsigned int max_peers);

/*
 * The per-cgroup cap for a table of @max_peers peers: @per_cgroup, at most half the table
 * (at least 1), so that when pt_preload_server_open cuts the table to fit the descriptor
 * limit, one container still cannot take every slot (at 1024 descriptors: 64 of 128, where
 * 256 would have been all of them; from 4096 descriptors on, 256 as before). Pure.
 */
unsigned int pt_preload_cgroup_share(unsigned int per_cgroup, unsigned int max_peers);

/*
 * Listens on @path (NULL: PT_PRELOAD_SOCK_PATH), creating its directory (0755) and the
 * socket (0666: any container process may register; identity comes from the kernel).
 * @opts may be NULL. 0 or a negative errno.
 */
int pt_preload_server_open(struct pt_preload_server **out, const char *path,
			   const struct pt_preload_server_opts *opts, pt_preload_optin_fn optin,
			   void *optin_arg);

/* An epoll fd: readable when a peer connects, registers, rings the doorbell or leaves. */
int pt_preload_server_fd(const struct pt_preload_server *s);

/* Accepts pending connections and completes pending registrations; peers now registered. */
int pt_preload_server_accept(struct pt_preload_server *s);

/*
 * Services peer sockets (doorbells, hangups) and drains every ring; @fn gets each valid
 * record. Returns the number of records delivered or a negative errno. Call when the fd is
 * readable and periodically (the rings have no doorbell per record).
 */
int pt_preload_server_drain(struct pt_preload_server *s, pt_preload_record_fn fn, void *arg);

/*
 * Asks the registered processes with this pid (0: all) to malloc_trim(0): the library's
 * request thread is woken and serves it at once. 0 or -ENOENT.
 */
int pt_preload_server_request_trim(struct pt_preload_server *s, pid_t pid);
/* Whether a process with this pid has a trim request it has not served yet. */
bool pt_preload_server_trim_pending(const struct pt_preload_server *s, pid_t pid);

/*
 * Tells the registered processes with this pid (0: all) that they are idle: each answers
 * with one doorbell and a PT_PRELOAD_F_WAKE heartbeat at its next allocator call.
 * 0 or -ENOENT.
 */
int pt_preload_server_arm_wake(struct pt_preload_server *s, pid_t pid);

struct pt_preload_server_stats {
	unsigned int peers;
	uint64_t accepted_peers, rejected_peers, bad_hellos;
	uint64_t by_pidfd;		/* of the accepted: identity confirmed by a pidfd */
	uint64_t refused;		/* connections closed at once: too many, out of fds */
	uint64_t refused_pending_cgroup;	/* of those: max_pending_per_cgroup */
	uint64_t refused_cgroup_full;	/* registrations over max_peers_per_cgroup */
	uint64_t replaced;		/* rings dropped for a newer one of the same pid */
	uint64_t records, rejected[PT_PRELOAD_REJ_NR], throttled;
	uint64_t producer_dropped;	/* summed from the peers' headers: untrusted, advisory */
	uint64_t doorbells;
	uint64_t maps_reads, maps_bytes;	/* /proc/PID/maps rereads, bytes they read */
	uint64_t maps_denied;		/* rereads a budget refused (the record: foreign) */
	uint64_t drain_cut;		/* peers' drains cut short by a per-drain budget */
	uint64_t trims;			/* malloc_trim(0) calls the peers say they made */
};

void pt_preload_server_stats(const struct pt_preload_server *s,
			     struct pt_preload_server_stats *st);

void pt_preload_server_close(struct pt_preload_server *s);

#endif
