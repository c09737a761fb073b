// SPDX-License-Identifier: GPL-2.0
/*
 * events.c - the event ring of the control device /dev/pagetier.
 *
 * Every descriptor of /dev/pagetier that has subscribed (by its first read(), poll() or
 * PAGETIER_IOC_EVENTS; CAP_SYS_ADMIN) has a ring of its own of event_ring_records
 * fixed-size records (struct pagetier_event). pt_events_emit() appends one record to
 * every ring, from any context (bio completion included); a full ring drops the record
 * and counts it, and the next read() of that descriptor starts with a
 * PAGETIER_EVENT_LOST record that says how many were lost. Rings are found by their
 * struct file, so the file's private_data stays free.
 *
 * Locking: pt_ev_lock (a mutex) serializes subscription and release; emitters walk the
 * list under RCU and take each ring's spinlock (interrupts off).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rculist.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "events.h"

static unsigned int event_ring_records = 4096;
module_param(event_ring_records, uint, 0644);
MODULE_PARM_DESC(event_ring_records, "records in the event ring of each reader, rounded up to a power of two, 64-1048576 (default 4096)");

struct pt_evsub {
	struct list_head node;		/* pt_ev_subs */
	struct file *file;
	spinlock_t lock;		/* the ring and counters */
	wait_queue_head_t wq;
	u32 size;			/* records, a power of two */
	u32 head;			/* free-running */
	u32 tail;
	u64 lost;			/* dropped and not yet reported by a LOST record */
	u64 dropped;
	u64 delivered;
	struct pagetier_event *ring;
};

static LIST_HEAD(pt_ev_subs);
static DEFINE_MUTEX(pt_ev_lock);

/**
 * pt_events_emit() - append @ev to the ring of every subscribed descriptor
 * @ev: the record
 *
 * Context: any.
 */
void pt_events_emit(const struct pagetier_event *ev)
{
	struct pt_evsub *s;
	unsigned long flags;

	rcu_read_lock();
	list_for_each_entry_rcu(s, &pt_ev_subs, node) {
		spin_lock_irqsave(&s->lock, flags);
		if (s->head - s->tail >= s->size) {
			s->lost++;
			s->dropped++;
		} else {
			s->ring[s->head++ & (s->size - 1)] = *ev;
		}
		spin_unlock_irqrestore(&s->lock, flags);
		if (wq_has_sleeper(&s->wq))
			wake_up_interruptible_poll(&s->wq, EPOLLIN | EPOLLRDNORM);
	}
	rcu_read_unlock();
}

static struct pt_evsub *pt_ev_find(struct file *file)
{
	struct pt_evsub *s;

	lockdep_assert_held(&pt_ev_lock);
	list_for_each_entry(s, &pt_ev_subs, node)
		if (s->file == file)
			return s;
	return NULL;
}

/*
 * The ring of @file, subscribing it first if needed. The descriptor is in use by the
 * caller, so its ring lives until pt_events_release().
 */
static struct pt_evsub *pt_ev_get(struct file *file)
{
	u32 size = clamp_t(u32, READ_ONCE(event_ring_records), 64, 1U << 20);
	struct pt_evsub *s;

	mutex_lock(&pt_ev_lock);
	s = pt_ev_find(file);
	if (s)
		goto out;
	if (!capable(CAP_SYS_ADMIN)) {
		s = ERR_PTR(-EPERM);
		goto out;
	}
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s) {
		s = ERR_PTR(-ENOMEM);
		goto out;
	}
	s->size = roundup_pow_of_two(size);
	s->ring = kvcalloc(s->size, sizeof(*s->ring), GFP_KERNEL);
	if (!s->ring) {
		kfree(s);
		s = ERR_PTR(-ENOMEM);
		goto out;
	}
	s->file = file;
	spin_lock_init(&s->lock);
	init_waitqueue_head(&s->wq);
	list_add_tail_rcu(&s->node, &pt_ev_subs);
out:
	mutex_unlock(&pt_ev_lock);
	return s;
}

static bool pt_ev_ready(struct pt_evsub *s)
{
	bool ready;

	spin_lock_irq(&s->lock);
	ready = s->head != s->tail || s->lost;
	spin_unlock_irq(&s->lock);
	return ready;
}

#define PT_EV_BATCH	16

/**
 * pt_events_read() - read() of the control device: whole event records
 * @file: the descriptor
 * @buf: user buffer
 * @count: its size; at least one record
 * @ppos: unused
 *
 * Blocks until there is a record unless the descriptor is O_NONBLOCK.
 *
 * Return: bytes read, a multiple of the record size, or -EINVAL (@count too small),
 * -EAGAIN, -EINTR, -EPERM, -ENOMEM, -EFAULT.
 */
ssize_t pt_events_read(struct file *file, char __user *buf, size_t count, loff_t *ppos)
{
	struct pagetier_event batch[PT_EV_BATCH];
	const size_t rec = sizeof(batch[0]);
	struct pt_evsub *s = pt_ev_get(file);
	size_t copied = 0;
	u32 n;
	int ret;

	if (IS_ERR(s))
		return PTR_ERR(s);
	if (count < rec)
		return -EINVAL;
	while (!pt_ev_ready(s)) {
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(s->wq, pt_ev_ready(s));
		if (ret)
			return ret;
	}
	while (count - copied >= rec) {
		n = 0;
		spin_lock_irq(&s->lock);
		if (s->lost) {
			memset(&batch[0], 0, rec);
			batch[0].type = PAGETIER_EVENT_LOST;
			batch[0].time_ns = ktime_get_ns();
			batch[0].slot = s->lost;
			s->lost = 0;
			n = 1;
		}
		while (n < PT_EV_BATCH && s->tail != s->head && copied + (n + 1) * rec <= count)
			batch[n++] = s->ring[s->tail++ & (s->size - 1)];
		s->delivered += n;
		spin_unlock_irq(&s->lock);
		if (!n)
			break;
		if (copy_to_user(buf + copied, batch, n * rec))
			return copied ? copied : -EFAULT;
		copied += n * rec;
	}
	return copied;
}

/**
 * pt_events_poll() - poll() of the control device
 * @file: the descriptor
 * @wait: poll table
 *
 * Return: EPOLLIN | EPOLLRDNORM when a record can be read, EPOLLERR if the descriptor
 * cannot subscribe.
 */
__poll_t pt_events_poll(struct file *file, struct poll_table_struct *wait)
{
	struct pt_evsub *s = pt_ev_get(file);

	if (IS_ERR(s))
		return EPOLLERR;
	poll_wait(file, &s->wq, wait);
	return pt_ev_ready(s) ? EPOLLIN | EPOLLRDNORM : 0;
}

/**
 * pt_events_info() - PAGETIER_IOC_EVENTS: subscribe @file and report its ring
 * @file: the descriptor
 * @info: filled in: ring_records, pending, dropped, delivered
 *
 * Return: 0, -EPERM or -ENOMEM.
 */
int pt_events_info(struct file *file, struct pagetier_events *info)
{
	struct pt_evsub *s = pt_ev_get(file);

	if (IS_ERR(s))
		return PTR_ERR(s);
	spin_lock_irq(&s->lock);
	info->ring_records = s->size;
	info->pending = s->head - s->tail;
	info->dropped = s->dropped;
	info->delivered = s->delivered;
	spin_unlock_irq(&s->lock);
	return 0;
}

/**
 * pt_events_release() - the descriptor is closed: free its ring
 * @file: the descriptor
 */
void pt_events_release(struct file *file)
{
	struct pt_evsub *s;

	mutex_lock(&pt_ev_lock);
	s = pt_ev_find(file);
	if (s)
		list_del_rcu(&s->node);
	mutex_unlock(&pt_ev_lock);
	if (!s)
		return;
	synchronize_rcu();
	kvfree(s->ring);
	kfree(s);
}
