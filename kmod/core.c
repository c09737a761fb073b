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

/*
 * The commands. A handler gets the caller's struct already read (pt_copy_in()),
 * validates what pt_copy_in() does not and does the work; on success the struct is
 * copied back if the command is _IOR (pt_copy_out()), and if that fails, @undo (if
 * any) takes back what the handler did. By number only (pt_ioctl()).
 */
union pt_ioctl_arg {
	struct pagetier_version version;
	struct pagetier_tier_create tier_create;
	struct pagetier_tier_destroy tier_destroy;
	struct pagetier_cgroup_stats cgroup_stats;
	struct pagetier_scan scan;
	struct pagetier_prefetch prefetch;
	struct pagetier_events events;
};

struct pt_ioctl_desc {
	unsigned int cmd;
	u32 size;			/* sizeof() of our struct */
	u32 min_size;			/* the first ABI version's */
	int (*handler)(struct file *file, union pt_ioctl_arg *arg);
	void (*undo)(union pt_ioctl_arg *arg);
};

static int pt_ioctl_version(struct file *file, union pt_ioctl_arg *arg)
{
	struct pagetier_version *v = &arg->version;

	v->abi_version = PAGETIER_ABI_VERSION;
	v->features = PT_FEATURES;
	return 0;
}

static int pt_ioctl_tier_create(struct file *file, union pt_ioctl_arg *arg)
{
	struct pagetier_tier_create *req = &arg->tier_create;

	if (req->flags || req->reserved)
		return -EINVAL;
	if (!req->backing_path[0] || !memchr(req->backing_path, '\0', sizeof(req->backing_path)))
		return -EINVAL;
	return pt_tier_create(req);
}

/* The caller cannot learn the id, so it could never destroy the tier. */
static void pt_ioctl_tier_create_undo(union pt_ioctl_arg *arg)
{
	struct pagetier_tier_create *req = &arg->tier_create;

	if (pt_tier_destroy(req->tier_id))
		pr_warn("%s%u: created but not reported, and busy: destroy it by id\n",
			PAGETIER_DISK_NAME, req->tier_id);
}

static int pt_ioctl_tier_destroy(struct file *file, union pt_ioctl_arg *arg)
{
	return pt_tier_destroy(arg->tier_destroy.tier_id);
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

static int pt_ioctl_cgroup_stats(struct file *file, union pt_ioctl_arg *arg)
{
	struct pagetier_cgroup_stats *req = &arg->cgroup_stats;
	struct pagetier_cgroup_stat *stats = NULL;
	u32 count;
	int n, ret;

	if (req->reserved)
		return -EINVAL;
	if (req->entry_size < PT_CGROUP_STAT_SIZE_V1 || req->entry_size > PT_MAX_STRUCT_SIZE)
		return -EINVAL;

	n = pt_tier_cgroup_stats(req->tier_id, &stats, req->capacity, &count);
	if (n < 0)
		return n;
	ret = pt_copy_entries(u64_to_user_ptr(req->entries), req->entry_size, stats, n);
	kvfree(stats);
	if (ret)
		return ret;
	req->count = count;
	return 0;
}

static int pt_ioctl_scan(struct file *file, union pt_ioctl_arg *arg)
{
	return pt_scan(&arg->scan);
}

static int pt_ioctl_prefetch(struct file *file, union pt_ioctl_arg *arg)
{
	struct pagetier_prefetch *req = &arg->prefetch;

	if ((req->flags & ~(PAGETIER_PREFETCH_WAIT | PAGETIER_PREFETCH_NEWEST)) || req->reserved)
		return -EINVAL;
	return pt_tier_prefetch(req);
}

static int pt_ioctl_events(struct file *file, union pt_ioctl_arg *arg)
{
	struct pagetier_events *req = &arg->events;

	if (req->flags)
		return -EINVAL;
	return pt_events_info(file, req);
}

#define PT_IOCTL(_cmd, _field, _min_size, _handler, _undo) {			\
	.cmd		= _cmd,							\
	.size		= sizeof_field(union pt_ioctl_arg, _field),		\
	.min_size	= _min_size,						\
	.handler	= _handler,						\
	.undo		= _undo,						\
}

static const struct pt_ioctl_desc pt_ioctls[] = {
	PT_IOCTL(PAGETIER_IOC_VERSION, version, PT_VERSION_SIZE_V1, pt_ioctl_version, NULL),
	PT_IOCTL(PAGETIER_IOC_TIER_CREATE, tier_create, PT_TIER_CREATE_SIZE_V1,
		 pt_ioctl_tier_create, pt_ioctl_tier_create_undo),
	PT_IOCTL(PAGETIER_IOC_TIER_DESTROY, tier_destroy, PT_TIER_DESTROY_SIZE_V1,
		 pt_ioctl_tier_destroy, NULL),
	PT_IOCTL(PAGETIER_IOC_CGROUP_STATS, cgroup_stats, PT_CGROUP_STATS_SIZE_V1,
		 pt_ioctl_cgroup_stats, NULL),
	PT_IOCTL(PAGETIER_IOC_SCAN, scan, PT_SCAN_SIZE_V1, pt_ioctl_scan, NULL),
	PT_IOCTL(PAGETIER_IOC_PREFETCH, prefetch, PT_PREFETCH_SIZE_V1, pt_ioctl_prefetch, NULL),
	PT_IOCTL(PAGETIER_IOC_EVENTS, events, PT_EVENTS_SIZE_V1, pt_ioctl_events, NULL),
};

/* Copy in, the handler, copy out (for _IOR commands), as described above. */
static int pt_ioctl_run(const struct pt_ioctl_desc *d, struct file *file, void __user *uarg)
{
	union pt_ioctl_arg arg;
	u32 usize;
	int ret;

	ret = pt_copy_in(&arg, d->size, d->min_size, uarg, &usize);
	if (ret)
		return ret;
	ret = d->handler(file, &arg);
	if (ret || !(_IOC_DIR(d->cmd) & _IOC_READ))
		return ret;
	ret = pt_copy_out(uarg, &arg, d->size, usize);
	if (ret && d->undo)
		d->undo(&arg);
	return ret;
}

static long pt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	unsigned int i;

	/* The 0600 node is not enough: a leaked descriptor must not grant control. */
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (_IOC_TYPE(cmd) != PAGETIER_IOC_MAGIC)
		return -ENOTTY;

	/* By number only: the size bits change whenever a struct grows. */
	for (i = 0; i < ARRAY_SIZE(pt_ioctls); i++)
		if (_IOC_NR(pt_ioctls[i].cmd) == _IOC_NR(cmd))
			return pt_ioctl_run(&pt_ioctls[i], file, uarg);
	return -ENOTTY;
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
