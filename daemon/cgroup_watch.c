// SPDX-License-Identifier: GPL-2.0
/* Cgroups created and removed, from inotify (cgroup_watch.h). */
#include "cgroup_watch.h"

#include <errno.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "log.h"

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | \
		    IN_MOVE_SELF | IN_ONLYDIR)

int pt_cgroup_watch_open(struct pt_cgroup_watch *w)
{
	memset(w, 0, sizeof(*w));
	w->changed = true;	/* nothing walked yet */
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0) {
		int err = errno;

		pt_warn("inotify_init1: %s: walking the cgroup tree every interval", strerror(err));
		return -err;
	}
	return 0;
}

void pt_cgroup_watch_close(struct pt_cgroup_watch *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

void pt_cgroup_watch_add(struct pt_cgroup_watch *w, const char *path)
{
	if (w->fd < 0 || inotify_add_watch(w->fd, path, WATCH_MASK) >= 0)
		return;
	/* Gone since it was listed: its removal is (or was) an event of its parent's. */
	if (errno == ENOENT || errno == ENOTDIR)
		return;
	if (!w->watch_errors++)
		pt_warn("inotify_add_watch %s: %s (fs.inotify.max_user_watches?): "
			"walking the cgroup tree every interval", path, strerror(errno));
	w->incomplete = true;
}

bool pt_cgroup_watch_parse(struct pt_cgroup_watch *w, const char *buf, size_t len)
{
	bool changed = false;
	size_t off = 0;

	while (len - off >= sizeof(struct inotify_event)) {
		struct inotify_event ev;

		memcpy(&ev, buf + off, sizeof(ev));	/* the buffer need not be aligned */
		if (ev.len > len - off - sizeof(ev))
			break;
		off += sizeof(ev) + ev.len;
		if (ev.mask & IN_Q_OVERFLOW) {
			w->overflows++;
			changed = true;
			continue;
		}
		/* A file (a cgroup's interface files never come and go alone) is no news. */
		if ((ev.mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)) &&
		    !(ev.mask & IN_ISDIR))
			continue;
		/* IN_IGNORED: a watched directory went away, which its parent reported. */
		if (ev.mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
			       IN_MOVE_SELF)) {
			w->events++;
			changed = true;
		}
	}
	w->changed |= changed;
	return changed;
}

void pt_cgroup_watch_read(struct pt_cgroup_watch *w)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));

	if (w->fd < 0)
		return;
	for (;;) {
		ssize_t n = read(w->fd, buf, sizeof(buf));

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return;
		}
		pt_cgroup_watch_parse(w, buf, (size_t)n);
	}
}

bool pt_cgroup_watch_walk_due(const struct pt_cgroup_watch *w)
{
	return w->fd < 0 || w->changed || w->incomplete;
}

void pt_cgroup_watch_walk_started(struct pt_cgroup_watch *w)
{
	w->changed = false;
}
