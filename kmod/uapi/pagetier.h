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

/* Counters of one memory cgroup on one tier. */
struct pagetier_cgroup_stat {
	__u64 cgroup_id;	/* cgroup v2 directory inode number; 0 = unattributed */
	__u64 pages_stored;	/* slots currently holding this cgroup's pages */
	__u64 bytes_written;
	__u64 bytes_read;
	__u64 write_ios;
	__u64 read_ios;
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

#endif /* _UAPI_LINUX_PAGETIER_H */
