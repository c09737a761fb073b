/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * pagetier.h - the ioctl ABI of /dev/pagetier, shared by pagetier.ko, pagetierd and tests.
 *
 * Rules that keep it compatible forever:
 *  - every struct starts with __u32 size, set by the caller to sizeof() of the struct it
 *    was compiled with; the module accepts any size >= the first version's and copies
 *    min(size, its own) (copy_struct_from_user semantics: unknown trailing bytes must be 0);
 *  - ioctls are dispatched on their number only (_IOC_NR), never on the size bits, so a
 *    struct can grow at its end without a new command;
 *  - fields are never removed, reordered or re-typed; new ones are appended;
 *  - every ioctl requires CAP_SYS_ADMIN, in addition to the 0600 mode of the node.
 */
#ifndef _UAPI_LINUX_PAGETIER_H
#define _UAPI_LINUX_PAGETIER_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define PAGETIER_ABI_VERSION	1
#define PAGETIER_CTL_NAME	"pagetier"	/* /dev/pagetier */
#define PAGETIER_DISK_NAME	"pagetier"	/* /dev/pagetierN */
#define PAGETIER_PATH_MAX	256
#define PAGETIER_IOC_MAGIC	0xB7

/* PAGETIER_IOC_VERSION: what this module speaks. */
struct pagetier_version {
	__u32 size;
	__u32 abi_version;	/* out: PAGETIER_ABI_VERSION */
	__u64 features;		/* out: PAGETIER_FEAT_* */
};

#define PAGETIER_FEAT_TIER		_BITULL(0)
#define PAGETIER_FEAT_CGROUP_STATS	_BITULL(1)
#define PAGETIER_FEAT_SCAN		_BITULL(2)	/* PAGETIER_IOC_SCAN */

/*
 * PAGETIER_IOC_TIER_CREATE: create /dev/pagetier<tier_id> over a backing block device,
 * opened exclusively (a mounted device, a swap device or one already under a tier is
 * refused with -EBUSY).
 */
struct pagetier_tier_create {
	__u32 size;
	__u32 flags;			/* in: must be 0 */
	char backing_path[PAGETIER_PATH_MAX];	/* in: NUL-terminated, e.g. /dev/nvme0n1 */
	__u32 tier_id;			/* out */
	__u32 reserved;			/* must be 0 */
	__u64 capacity_bytes;		/* out: what swap can use */
	__u64 backing_bytes;		/* out: size of the backing device */
};

/* PAGETIER_IOC_TIER_DESTROY: remove a tier; -EBUSY while its block device is open. */
struct pagetier_tier_destroy {
	__u32 size;
	__u32 tier_id;
};

/* Buckets of the demand read latency histograms (per cgroup and in sysfs). */
#define PAGETIER_LAT_BUCKETS	20

/* Counters of one memory cgroup on one tier. */
struct pagetier_cgroup_stat {
	__u64 cgroup_id;	/* cgroup v2 directory inode number; 0 = unattributed */
	__u64 pages_stored;	/* slots currently holding this cgroup's pages */
	__u64 bytes_written;
	__u64 bytes_read;
	__u64 write_ios;
	__u64 read_ios;
	/* Since PAGETIER_FEAT_TIER_STATS (an entry_size of 288 bytes gets them all): */
	__u64 demand_reads;	/* read bios: swap-ins */
	__u64 demand_read_pages;
	__u64 demand_read_ns;	/* sum of their latencies */
	__u64 staging_hits;	/* pages served from the staging cache */
	__u64 staging_misses;	/* pages read from the backing device on demand */
	__u64 staged_pages;	/* pages in the staging cache now */
	__u64 prefetch_bytes;	/* read by PAGETIER_IOC_PREFETCH */
	__u64 gc_moves;		/* pages the garbage collector moved */
	__u64 segments;		/* segments holding its pages */
	__u64 read_errors;	/* pages whose read failed */
	/* demand reads by latency: [0] < 1 us, [i] < 2^i us, [19] >= 2^18 us */
	__u64 read_latency[PAGETIER_LAT_BUCKETS];
	/* Since PAGETIER_FEAT_WRITE_BUFFER (an entry_size of 312 bytes gets them all): */
	__u64 buffered_writes;	/* pages whose write completed at once (write buffer) */
	__u64 direct_writes;	/* pages written through to the device before completing */
	__u64 buffer_hits;	/* pages demand reads found in the write buffer */
};

/*
 * PAGETIER_IOC_CGROUP_STATS: counters of every cgroup that has or had pages on the tier.
 * The caller passes an array of @capacity entries at @entries; the module fills up to
 * @capacity of them and sets @count to the number it has (which may be larger: call again
 * with a bigger array). @entry_size is sizeof(struct pagetier_cgroup_stat) as the caller
 * knows it, so entries can grow too.
 */
struct pagetier_cgroup_stats {
	__u32 size;
	__u32 tier_id;		/* in */
	__u32 entry_size;	/* in */
	__u32 capacity;		/* in: entries the array holds */
	__u64 entries;		/* in: user pointer to the array */
	__u32 count;		/* out: entries the module has */
	__u32 reserved;		/* must be 0 */
};

#define PAGETIER_IOC_VERSION \
	_IOR(PAGETIER_IOC_MAGIC, 0x00, struct pagetier_version)
#define PAGETIER_IOC_TIER_CREATE \
	_IOWR(PAGETIER_IOC_MAGIC, 0x01, struct pagetier_tier_create)
#define PAGETIER_IOC_TIER_DESTROY \
	_IOW(PAGETIER_IOC_MAGIC, 0x02, struct pagetier_tier_destroy)
#define PAGETIER_IOC_CGROUP_STATS \
	_IOWR(PAGETIER_IOC_MAGIC, 0x03, struct pagetier_cgroup_stats)

/* ---- Access scanner: ioctl numbers 0x20-0x2f ---- */

#define PAGETIER_SCAN_PAGE_SIZE		4096	/* one bitmap bit */
#define PAGETIER_SCAN_BITS_PER_WORD	64	/* bitmaps are arrays of __u64 */
#define PAGETIER_SCAN_DEFAULT_PAGES	262144ULL	/* max_pages = 0: 1 GiB per call */
#define PAGETIER_SCAN_MAX_PAGES		1048576ULL	/* larger max_pages: 4 GiB per call */

/* flags: clear the accessed bits it reports; with CLEAR, flush the TLBs afterwards */
#define PAGETIER_SCAN_CLEAR		_BITUL(0)
#define PAGETIER_SCAN_FLUSH_TLB		_BITUL(1)

/* result_flags: the process has secondary MMUs whose accessed bits were not consulted */
#define PAGETIER_SCAN_RES_SECONDARY_MMU	_BITUL(0)

/*
 * PAGETIER_IOC_SCAN: the state of every 4 KiB page of [start, start + len) in the address
 * space of process @pid (a pid or tid in the caller's pid namespace), as bitmaps: bit i
 * of a bitmap is bit (i % 64) of __u64 word i / 64 and describes the page at
 * start + i * 4096.
 *  - accessed: the page's PTE (or THP PMD: all its pages) has its accessed bit set, i.e.
 *    the page was accessed since the accessed bit was last cleared (a THP is one unit:
 *    its bit is cleared when a clearing scan reaches its last page or the range's end);
 *  - present: mapped in memory (pagemap's "present");
 *  - swapped: the PTE holds a swap entry (the page is on a swap device).
 * Each bitmap pointer may be 0 when that bitmap is not wanted; the others must have room
 * for ceil(len / 4096 / 64) words.
 *
 * One call covers at most @max_pages pages (rounded up to a multiple of 64; 0 means
 * PAGETIER_SCAN_DEFAULT_PAGES; more than PAGETIER_SCAN_MAX_PAGES means that), from
 * @next_addr (0: from @start), and sets @next_addr to where the next call starts:
 * start + len when the range is done. Passing the struct back unchanged continues the
 * scan; every call writes only the bitmap words of the pages it covered.
 * Needs CAP_SYS_ADMIN and ptrace read access to the process (-EPERM).
 */
struct pagetier_scan {
	__u32 size;
	__u32 flags;			/* in: PAGETIER_SCAN_* */
	__s32 pid;			/* in */
	__u32 reserved;			/* must be 0 */
	__u64 start;			/* in: 4 KiB aligned */
	__u64 len;			/* in: bytes, a non-zero multiple of 4 KiB */
	__u64 next_addr;		/* in/out: see above */
	__u64 max_pages;		/* in: pages per call, 0 = default */
	__u64 accessed_bitmap;		/* in: user pointer or 0 */
	__u64 present_bitmap;		/* in: user pointer or 0 */
	__u64 swapped_bitmap;		/* in: user pointer or 0 */
	__u64 pages_scanned;		/* out: pages this call covered, holes included */
	__u64 pages_present;		/* out: of those, present */
	__u64 pages_accessed;		/* out: present and accessed */
	__u64 pages_swapped;		/* out: on swap */
	__u64 pages_skipped;		/* out: in hugetlbfs and VM_PFNMAP mappings, not read */
	__u32 result_flags;		/* out: PAGETIER_SCAN_RES_* */
	__u32 reserved2;		/* must be 0 */
};

#define PAGETIER_IOC_SCAN \
	_IOWR(PAGETIER_IOC_MAGIC, 0x20, struct pagetier_scan)

/* ---- Tier: placement, prefetch, events: ioctl numbers 0x10-0x1f ---- */

#define PAGETIER_FEAT_LOG		_BITULL(16)	/* per-cgroup log-structured placement */
#define PAGETIER_FEAT_PREFETCH		_BITULL(17)	/* PAGETIER_IOC_PREFETCH */
#define PAGETIER_FEAT_EVENTS		_BITULL(18)	/* event ring, PAGETIER_IOC_EVENTS */
#define PAGETIER_FEAT_TIER_STATS	_BITULL(19)	/* the longer pagetier_cgroup_stat */
#define PAGETIER_FEAT_WRITE_BUFFER	_BITULL(20)	/* write buffer, buffered_writes... */

/* flags of pagetier_prefetch */
#define PAGETIER_PREFETCH_WAIT		_BITUL(0)	/* return once the reads are done */
#define PAGETIER_PREFETCH_NEWEST	_BITUL(1)	/* newest segments first */

/*
 * PAGETIER_IOC_PREFETCH: read the pages that cgroup @cgroup_id has on tier @tier_id
 * into the tier's staging cache, in large sequential reads, oldest segment first (newest
 * first with PAGETIER_PREFETCH_NEWEST: what was written last, e.g. by the offload at
 * idle, after older cold pages), up to @budget_bytes of pages (0: all of them).
 * Demand reads of those pages are then served from the cache, and leave it. The cache
 * is bounded (module parameter staging_mib): what does not fit is read as it drains.
 * Without PAGETIER_PREFETCH_WAIT the reads happen in the background; with it the call
 * returns when they are done, or when the cache is full (at most 60 s).
 * -ENOENT: no such tier, or the cgroup never had pages on it.
 */
struct pagetier_prefetch {
	__u32 size;
	__u32 tier_id;			/* in */
	__u64 cgroup_id;		/* in */
	__u64 budget_bytes;		/* in: 0 = everything */
	__u32 flags;			/* in: PAGETIER_PREFETCH_* */
	__u32 reserved;			/* must be 0 */
	__u64 planned_bytes;		/* out: pages it will read */
	__u64 staged_bytes;		/* out: the cgroup's pages in the cache on return */
};

/*
 * The event ring: read() on the /dev/pagetier fd returns whole records, poll() says
 * when there are some. A descriptor receives events from its first read(), poll() or
 * PAGETIER_IOC_EVENTS on (CAP_SYS_ADMIN), into a ring of its own (module parameter
 * event_ring_records). When the ring is full, new records are dropped and counted; the
 * next read() then starts with a PAGETIER_EVENT_LOST record.
 */
#define PAGETIER_EVENT_DEMAND_READ	1	/* a read bio on a tier completed */
#define PAGETIER_EVENT_LOST		2	/* @slot records were dropped */

#define PAGETIER_EVENT_F_STAGED		_BITUL(0)	/* every page came from staging */
#define PAGETIER_EVENT_F_PART_STAGED	_BITUL(1)	/* some pages did */
#define PAGETIER_EVENT_F_ERROR		_BITUL(2)	/* the read failed */
#define PAGETIER_EVENT_F_EMPTY		_BITUL(3)	/* its first slot held nothing */

struct pagetier_event {
	__u16 type;			/* PAGETIER_EVENT_* */
	__u16 flags;			/* PAGETIER_EVENT_F_* */
	__u32 tier_id;
	__u64 time_ns;			/* CLOCK_MONOTONIC, at completion */
	__u64 cgroup_id;		/* owner of the first slot; 0 = unattributed */
	__u64 slot;			/* first slot (4 KiB); LOST: records dropped */
	__u64 latency_ns;		/* submission to completion */
	__u32 pages;			/* 4 KiB slots read */
	__u32 reserved;
};

/* PAGETIER_IOC_EVENTS: subscribe this descriptor (if not yet) and read its counters. */
struct pagetier_events {
	__u32 size;
	__u32 flags;			/* in: must be 0 */
	__u32 ring_records;		/* out: capacity of this descriptor's ring */
	__u32 pending;			/* out: records waiting to be read */
	__u64 dropped;			/* out: records lost to overflow, in total */
	__u64 delivered;		/* out: records read, in total */
};

#define PAGETIER_IOC_PREFETCH \
	_IOWR(PAGETIER_IOC_MAGIC, 0x10, struct pagetier_prefetch)
#define PAGETIER_IOC_EVENTS \
	_IOWR(PAGETIER_IOC_MAGIC, 0x11, struct pagetier_events)

#endif /* _UAPI_LINUX_PAGETIER_H */
