/* SPDX-License-Identifier: GPL-2.0 */
/*
 * events.h - the event ring of the control device /dev/pagetier.
 */
#ifndef _PAGETIER_EVENTS_H
#define _PAGETIER_EVENTS_H

#include <linux/fs.h>
#include <linux/poll.h>

#include "uapi/pagetier.h"

void pt_events_emit(const struct pagetier_event *ev);
ssize_t pt_events_read(struct file *file, char __user *buf, size_t count, loff_t *ppos);
__poll_t pt_events_poll(struct file *file, struct poll_table_struct *wait);
int pt_events_info(struct file *file, struct pagetier_events *info);
void pt_events_release(struct file *file);

#endif /* _PAGETIER_EVENTS_H */
