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

#endif /* _UAPI_LINUX_PAGETIER_H */
