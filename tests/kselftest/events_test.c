// SPDX-License-Identifier: GPL-2.0
/*
 * events_test.c - kselftests of the event ring on /dev/pagetier: one record per demand
 * read of a tier (cgroup, slot, pages, latency, time, flags), read() and poll(), the
 * LOST record and drop counter when a ring overflows, PAGETIER_IOC_EVENTS, privilege.
 *
 * Needs root, pagetier.ko loaded and a scratch block device whose contents are
 * destroyed: $PAGETIER_TEST_BACKING, default /dev/nvme0n1.
 */
#include "tier_util.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#define REC	sizeof(struct pagetier_event)

FIXTURE(ev) {
	int ctl;			/* creates the tier */
	int evfd;			/* subscribed reader */
	bool created;
	struct pagetier_tier_create c;
	char dev[64];
	struct tu_param param;
};

FIXTURE_SETUP(ev)
{
	struct pagetier_events info = { .size = sizeof(info) };
	struct tu_param cap = { 0 };
	int ret;

	self->evfd = -1;
	TU_FIXTURE_OPEN(self);
	ASSERT_EQ(0, tu_param_set(&cap, "max_capacity_mib", "16"));
	ret = tu_tier_create(self->ctl, tu_backing(), &self->c);
	tu_param_restore(&cap);
	ASSERT_EQ(0, ret);
	TU_FIXTURE_TIER(self);
	/* udev reads a new disk: let that pass before subscribing. */
	ret = system("udevadm settle -t 5 2>/dev/null");
	(void)ret;
	self->evfd = open(CTL_PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, self->evfd);
	ASSERT_EQ(0, tu_ioctl(self->evfd, PAGETIER_IOC_EVENTS, &info));
}

FIXTURE_TEARDOWN(ev)
{
	tu_param_restore(&self->param);
	if (self->evfd >= 0)
		close(self->evfd);
	TU_FIXTURE_CLOSE(self);
}

static void *page_buf(size_t pages)
{
	void *p = NULL;

	return posix_memalign(&p, PG, pages * PG) ? NULL : p;
}

/*
 * Writes pages [0, n) with tag 3, gen 1. Closing a disk opened for writing makes udev
 * probe it again: wait for that, so its reads are not taken for the test's.
 */
static int write_first(const char *dev, unsigned int n)
{
	char *buf = page_buf(n);
	unsigned int i;
	int fd, ret;

	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (!buf || fd < 0)
		return -1;
	for (i = 0; i < n; i++)
		tu_fill(buf + i * PG, 3, i, 1);
	ret = pwrite(fd, buf, n * PG, 0) == (ssize_t)(n * PG) ? 0 : -1;
	close(fd);
	free(buf);
	if (system("udevadm settle -t 5 2>/dev/null"))
		usleep(500000);
	return ret;
}

/* Reads @pages pages at @slot, O_DIRECT. */
static int read_at(const char *dev, uint64_t slot, unsigned int pages)
{
	char *buf = page_buf(pages);
	int fd, ret;

	fd = open(dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (!buf || fd < 0)
		return -1;
	ret = pread(fd, buf, pages * PG, slot * PG) == (ssize_t)(pages * PG) ? 0 : -1;
	close(fd);
	free(buf);
	return ret;
}

/* Drains the ring of @fd into @ev (up to @max records); returns how many. */
static int drain(int fd, struct pagetier_event *ev, int max)
{
	ssize_t n;
	int got = 0;

	while (got < max) {
		n = read(fd, ev + got, (max - got) * REC);
		if (n <= 0)
			break;
		got += n / REC;
	}
	return got;
}

TEST_F(ev, one_record_per_read)
{
	struct pagetier_event ev[64];
	uint64_t self_id = tu_self_cgroup_id(), now;
	struct timespec ts;
	int n, i;

	NEED_TIER();
	ASSERT_EQ(0, write_first(self->dev, 16));
	drain(self->evfd, ev, 64);	/* anything from before */

	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, read_at(self->dev, i, 1));
	ASSERT_EQ(0, read_at(self->dev, 8, 8));
	ASSERT_EQ(0, read_at(self->dev, 100, 1));	/* never written */

	n = drain(self->evfd, ev, 64);
	ASSERT_EQ(6, n);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	for (i = 0; i < n; i++) {
		EXPECT_EQ(PAGETIER_EVENT_DEMAND_READ, ev[i].type);
		EXPECT_EQ(self->c.tier_id, ev[i].tier_id);
		EXPECT_LT(0ULL, ev[i].latency_ns);
		EXPECT_LE(ev[i].time_ns, now);
		EXPECT_LE(ev[i].latency_ns, ev[i].time_ns);
		if (i)
			EXPECT_LE(ev[i - 1].time_ns, ev[i].time_ns);
		EXPECT_FALSE(!!(ev[i].flags & (PAGETIER_EVENT_F_ERROR | PAGETIER_EVENT_F_STAGED)));
	}
	for (i = 0; i < 4; i++) {
		EXPECT_EQ((__u64)i, ev[i].slot);
		EXPECT_EQ(1U, ev[i].pages);
		EXPECT_EQ(self_id, ev[i].cgroup_id);
	}
	EXPECT_EQ(8ULL, ev[4].slot);
	EXPECT_EQ(8U, ev[4].pages);
	EXPECT_EQ(self_id, ev[4].cgroup_id);
	/* An empty slot: unattributed. */
	EXPECT_EQ(100ULL, ev[5].slot);
	EXPECT_EQ(0ULL, ev[5].cgroup_id);
	EXPECT_TRUE(!!(ev[5].flags & PAGETIER_EVENT_F_EMPTY));
}

TEST_F(ev, staged_reads_are_flagged)
{
	struct pagetier_prefetch pf;
	struct pagetier_event ev[64];
	uint64_t self_id = tu_self_cgroup_id();
	int n, i;

	NEED_TIER();
	ASSERT_EQ(0, write_first(self->dev, 16));
	ASSERT_EQ(0, tu_prefetch(self->ctl, self->c.tier_id, self_id, 0,
				 PAGETIER_PREFETCH_WAIT, &pf));
	ASSERT_EQ(16ULL * PG, pf.staged_bytes);
	drain(self->evfd, ev, 64);
	for (i = 0; i < 16; i++)
		ASSERT_EQ(0, read_at(self->dev, i, 1));
	n = drain(self->evfd, ev, 64);
	ASSERT_EQ(16, n);
	for (i = 0; i < n; i++)
		EXPECT_TRUE(!!(ev[i].flags & PAGETIER_EVENT_F_STAGED));
}

TEST_F(ev, nonblock_poll_and_blocking_read)
{
	struct pagetier_event ev[4];
	struct pollfd pfd;
	pid_t pid;
	int fd, st;

	NEED_TIER();
	ASSERT_EQ(0, write_first(self->dev, 4));
	drain(self->evfd, ev, 4);
	EXPECT_EQ(-1, read(self->evfd, ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	pfd.fd = self->evfd;
	pfd.events = POLLIN;
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(-1, read(self->evfd, ev, REC - 1));
	EXPECT_EQ(EINVAL, errno);

	ASSERT_EQ(0, read_at(self->dev, 1, 1));
	EXPECT_EQ(1, poll(&pfd, 1, 1000));
	EXPECT_TRUE(pfd.revents & POLLIN);
	EXPECT_EQ((ssize_t)REC, read(self->evfd, ev, sizeof(ev)));
	EXPECT_EQ(1ULL, ev[0].slot);

	/* A blocking reader wakes up when a read completes. */
	fd = open(CTL_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	pfd.fd = fd;
	EXPECT_EQ(0, poll(&pfd, 1, 0));		/* subscribes it */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		alarm(20);
		_exit(read(fd, ev, sizeof(ev)) == (ssize_t)REC && ev[0].slot == 2 ? 0 : 1);
	}
	usleep(200000);
	ASSERT_EQ(0, read_at(self->dev, 2, 1));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("status %d", st);
	close(fd);
}

TEST_F(ev, overflow_reports_lost)
{
	struct pagetier_events info = { .size = sizeof(info) };
	struct pagetier_event *ev;
	int fd, i, n;

	NEED_TIER();
	ASSERT_EQ(0, write_first(self->dev, 4));
	ASSERT_EQ(0, tu_param_set(&self->param, "event_ring_records", "64"));
	fd = open(CTL_PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, tu_ioctl(fd, PAGETIER_IOC_EVENTS, &info));
	tu_param_restore(&self->param);
	EXPECT_EQ(64U, info.ring_records);
	EXPECT_EQ(0ULL, info.dropped);

	for (i = 0; i < 200; i++)
		ASSERT_EQ(0, read_at(self->dev, i % 4, 1));
	ASSERT_EQ(0, tu_ioctl(fd, PAGETIER_IOC_EVENTS, &info));
	EXPECT_EQ(64U, info.pending);
	EXPECT_EQ(136ULL, info.dropped);

	ev = calloc(100, REC);
	ASSERT_NE(NULL, ev);
	n = drain(fd, ev, 100);
	ASSERT_EQ(65, n);
	EXPECT_EQ(PAGETIER_EVENT_LOST, ev[0].type);
	EXPECT_EQ(136ULL, ev[0].slot);
	for (i = 1; i < n; i++)
		EXPECT_EQ(PAGETIER_EVENT_DEMAND_READ, ev[i].type);
	ASSERT_EQ(0, tu_ioctl(fd, PAGETIER_IOC_EVENTS, &info));
	EXPECT_EQ(0U, info.pending);
	EXPECT_EQ(65ULL, info.delivered);
	EXPECT_EQ(136ULL, info.dropped);

	/* The other subscriber, with the default ring, lost nothing. */
	ASSERT_EQ(0, tu_ioctl(self->evfd, PAGETIER_IOC_EVENTS, &info));
	EXPECT_EQ(0ULL, info.dropped);
	EXPECT_LE(200U, info.pending);
	free(ev);
	close(fd);
}

TEST_F(ev, unprivileged)
{
	struct pagetier_event ev;
	pid_t pid;
	int fd, st;

	NEED_TIER();
	fd = open(CTL_PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct cap[2];
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int i = CAP_TO_INDEX(CAP_SYS_ADMIN);

		if (syscall(SYS_capget, &h, cap))
			_exit(2);
		cap[i].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
		cap[i].permitted &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
		if (syscall(SYS_capset, &h, cap))
			_exit(3);
		if (read(fd, &ev, sizeof(ev)) != -1 || errno != EPERM)
			_exit(4);
		if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLERR))
			_exit(5);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("status %d", st);
	close(fd);
}

TEST_HARNESS_MAIN
