// SPDX-License-Identifier: GPL-2.0
/*
 * core.c - pagetier.ko: module init and exit, and the control device /dev/pagetier.
 *
 * The ioctl ABI is kmod/uapi/pagetier.h. Every command is dispatched on its number alone
 * (never on the size bits), and every struct is read with copy_struct_from_user()
 * semantics, so that callers built against a newer, longer struct keep working as long
 * as they leave the fields this module does not know at zero:
 *  - size < the first version's size: -EINVAL;
 *  - size > ours: the tail must be zero, else -E2BIG (as openat2() and clone3());
 *  - size < ours: the missing fields read as zero;
 *  - output is copied back up to min(size, ours) bytes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "events.h"
#include "scan.h"
#include "tier.h"

#define PT_FEATURES	(PAGETIER_FEAT_TIER | PAGETIER_FEAT_CGROUP_STATS | PT_SCAN_FEATURES | \
			 PT_TIER_FEATURES)

/* Sizes of the first ABI version: the smallest structs a caller may pass. */
#define PT_VERSION_SIZE_V1		16
#define PT_TIER_CREATE_SIZE_V1		288
#define PT_TIER_DESTROY_SIZE_V1		8
#define PT_CGROUP_STATS_SIZE_V1		32
#define PT_CGROUP_STAT_SIZE_V1		48
#define PT_PREFETCH_SIZE_V1		48
#define PT_EVENTS_SIZE_V1		32

static_assert(sizeof(struct pagetier_version) >= PT_VERSION_SIZE_V1);
static_assert(sizeof(struct pagetier_tier_create) >= PT_TIER_CREATE_SIZE_V1);
static_assert(sizeof(struct pagetier_tier_destroy) >= PT_TIER_DESTROY_SIZE_V1);
static_assert(sizeof(struct pagetier_cgroup_stats) >= PT_CGROUP_STATS_SIZE_V1);
static_assert(sizeof(struct pagetier_cgroup_stat) >= PT_CGROUP_STAT_SIZE_V1);
static_assert(sizeof(struct pagetier_prefetch) >= PT_PREFETCH_SIZE_V1);
static_assert(sizeof(struct pagetier_events) >= PT_EVENTS_SIZE_V1);

/* No ABI growth needs more; it bounds the zero check of an unknown tail. */
#define PT_MAX_STRUCT_SIZE	PAGE_SIZE

/*
 * Reads the struct at @uarg whose first __u32 is its size into @karg (@ksize bytes),
 * and returns the caller's size in @usize for pt_copy_out().
 */
static int pt_copy_in(void *karg, size_t ksize, u32 min_size, const void __user *uarg,
		      u32 *usize)
{
	u32 size;
	int ret;

	if (get_user(size, (const u32 __user *)uarg))
		return -EFAULT;
	if (size < min_size)
		return -EINVAL;
	if (size > PT_MAX_STRUCT_SIZE)
		return -E2BIG;
	ret = copy_struct_from_user(karg, ksize, uarg, size);
	if (ret)
		return ret;
	*usize = size;
	return 0;
}

static int pt_copy_out(void __user *uarg, const void *karg, size_t ksize, u32 usize)
{
	if (copy_to_user(uarg, karg, min_t(size_t, ksize, usize)))
		return -EFAULT;
	return 0;
}

static int pt_ioctl_version(void __user *uarg)
{
	struct pagetier_version v;
	u32 usize;
	int ret;

	ret = pt_copy_in(&v, sizeof(v), PT_VERSION_SIZE_V1, uarg, &usize);
	if (ret)
		return ret;
	v.abi_version = PAGETIER_ABI_VERSION;
	v.features = PT_FEATURES;
	return pt_copy_out(uarg, &v, sizeof(v), usize);
}

static int pt_ioctl_tier_create(void __user *uarg)
{
	struct pagetier_tier_create req;
	u32 usize;
	int ret;

	ret = pt_copy_in(&req, sizeof(req), PT_TIER_CREATE_SIZE_V1, uarg, &usize);
	if (ret)
		return ret;
	if (req.flags || req.reserved)
		return -EINVAL;
	if (!req.backing_path[0] || !memchr(req.backing_path, '\0', sizeof(req.backing_path)))
		return -EINVAL;

	ret = pt_tier_create(&req);
	if (ret)
		return ret;
	ret = pt_copy_out(uarg, &req, sizeof(req), usize);
	if (ret) {
		/* The caller cannot learn the id, so it could never destroy the tier. */
		if (pt_tier_destroy(req.tier_id))
			pr_warn("%s%u: created but not reported, and busy: destroy it by id\n",
				PAGETIER_DISK_NAME, req.tier_id);
	}
	return ret;
}

static int pt_ioctl_tier_destroy(void __user *uarg)
{
	struct pagetier_tier_destroy req;
	u32 usize;
	int ret;

	ret = pt_copy_in(&req, sizeof(req), PT_TIER_DESTROY_SIZE_V1, uarg, &usize);
	if (ret)
		return ret;
	return pt_tier_destroy(req.tier_id);
}

/* Writes @n entries of @entry_size bytes each: truncated, or zero-padded at the end. */
static int pt_copy_entries(u8 __user *dst, u32 entry_size,
			   const struct pagetier_cgroup_stat *src, u32 n)
{
	size_t ksize = sizeof(*src);
	u32 i;

	for (i = 0; i < n; i++, dst += entry_size) {
		if (copy_to_user(dst, &src[i], min_t(size_t, ksize, entry_size)))
			return -EFAULT;
		if (entry_size > ksize && clear_user(dst + ksize, entry_size - ksize))
			return -EFAULT;
	}
	return 0;
}

static int pt_ioctl_cgroup_stats(void __user *uarg)
{
	struct pagetier_cgroup_stat *stats = NULL;
	struct pagetier_cgroup_stats req;
	u32 usize, count;
	int n, ret;

	ret = pt_copy_in(&req, sizeof(req), PT_CGROUP_STATS_SIZE_V1, uarg, &usize);
	if (ret)
		return ret;
	if (req.reserved)
		return -EINVAL;
	if (req.entry_size < PT_CGROUP_STAT_SIZE_V1 || req.entry_size > PT_MAX_STRUCT_SIZE)
		return -EINVAL;

	n = pt_tier_cgroup_stats(req.tier_id, &stats, req.capacity, &count);
	if (n < 0)
		return n;
	ret = pt_copy_entries(u64_to_user_ptr(req.entries), req.entry_size, stats, n);
	kvfree(stats);
	if (ret)
		return ret;
	req.count = count;
	return pt_copy_out(uarg, &req, sizeof(req), usize);
}

static int pt_ioctl_scan(void __user *uarg)
{
	struct pagetier_scan req;
	u32 usize;
	int ret;

	ret = pt_copy_in(&req, sizeof(req), PT_SCAN_SIZE_V1, uarg, &usize);
	if (ret)
		return ret;
	ret = pt_scan(&req);
	if (ret)
		return ret;
	return pt_copy_out(uarg, &req, sizeof(req), usize);
}

static int pt_ioctl_prefetch(void __user *uarg)
{
	struct pagetier_prefetch req;
	u32 usize;
	int ret;

	ret = pt_copy_in(&req, sizeof(req), PT_PREFETCH_SIZE_V1, uarg, &usize);
	if (ret)
		return ret;
	if ((req.flags & ~(PAGETIER_PREFETCH_WAIT | PAGETIER_PREFETCH_NEWEST)) || req.reserved)
		return -EINVAL;
	ret = pt_tier_prefetch(&req);
	if (ret)
		return ret;
	return pt_copy_out(uarg, &req, sizeof(req), usize);
}

static int pt_ioctl_events(struct file *file, void __user *uarg)
{
	struct pagetier_events req;
	u32 usize;
	int ret;

	ret = pt_copy_in(&req, sizeof(req), PT_EVENTS_SIZE_V1, uarg, &usize);
	if (ret)
		return ret;
	if (req.flags)
		return -EINVAL;
	ret = pt_events_info(file, &req);
	if (ret)
		return ret;
	return pt_copy_out(uarg, &req, sizeof(req), usize);
}

static long pt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	/* The 0600 node is not enough: a leaked descriptor must not grant control. */
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (_IOC_TYPE(cmd) != PAGETIER_IOC_MAGIC)
		return -ENOTTY;

	/* By number only: the size bits change whenever a struct grows. */
	switch (_IOC_NR(cmd)) {
	case _IOC_NR(PAGETIER_IOC_VERSION):
		return pt_ioctl_version(uarg);
	case _IOC_NR(PAGETIER_IOC_TIER_CREATE):
		return pt_ioctl_tier_create(uarg);
	case _IOC_NR(PAGETIER_IOC_TIER_DESTROY):
		return pt_ioctl_tier_destroy(uarg);
	case _IOC_NR(PAGETIER_IOC_CGROUP_STATS):
		return pt_ioctl_cgroup_stats(uarg);
	case _IOC_NR(PAGETIER_IOC_SCAN):
		return pt_ioctl_scan(uarg);
	case _IOC_NR(PAGETIER_IOC_PREFETCH):
		return pt_ioctl_prefetch(uarg);
	case _IOC_NR(PAGETIER_IOC_EVENTS):
		return pt_ioctl_events(file, uarg);
	default:
		return -ENOTTY;
	}
}

/* The event ring of this descriptor, if it subscribed, goes with it. */
static int pt_ctl_release(struct inode *inode, struct file *file)
{
	pt_events_release(file);
	return 0;
}

static const struct file_operations pt_ctl_fops = {
	.owner		= THIS_MODULE,
	.read		= pt_events_read,
	.poll		= pt_events_poll,
	.release	= pt_ctl_release,
	.unlocked_ioctl	= pt_ioctl,
	/* Every struct has the same layout for 32-bit callers. */
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice pt_ctl = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= PAGETIER_CTL_NAME,
	.fops	= &pt_ctl_fops,
	.mode	= 0600,
};

static int __init pt_init(void)
{
	int ret;

	ret = misc_register(&pt_ctl);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", PAGETIER_CTL_NAME, ret);
		return ret;
	}
	pr_info("ABI version %u loaded\n", PAGETIER_ABI_VERSION);
	return 0;
}

static void __exit pt_exit(void)
{
	/* No new tiers after this; an open control fd would have pinned the module. */
	misc_deregister(&pt_ctl);
	pt_tier_destroy_all();
}

module_init(pt_init);
module_exit(pt_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("pagetier: per-cgroup attributed NVMe swap tier");
