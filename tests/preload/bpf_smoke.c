// SPDX-License-Identifier: GPL-2.0
/*
 * Loads the BPF programs through daemon/bpf_loader.c on the running kernel and checks the
 * in-kernel cgroup filter: three cgroup2 groups a, b, c each run a busy process (page faults,
 * sleeps, UDP packets to itself, and swap-ins when a swap device is active); only a and b are
 * opted in, so events must arrive from a and b and none from c. Needs root. Prints what was
 * attached and a "N passed, N failed" line. tests/preload/bpf_host.sh runs it on the host.
 *
 *   bpf_smoke [cgroup2-root]     (default: /sys/fs/cgroup/unified if mounted, else /sys/fs/cgroup)
 *
 * Build (from the top of the tree, after make -C bpf O=build/bpf):
 *   cc -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Idaemon -Ibuild/bpf \
 *      -o build/preload/bpf_smoke tests/preload/bpf_smoke.c daemon/bpf_loader.c daemon/log.c \
 *      -lbpf -lelf -lz
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpf_loader.h"
#include "log.h"

#define NGROUPS 3
#define RUN_MS 3000
#define CGROUP2_SUPER_MAGIC 0x63677270

static const char *names[NGROUPS] = { "pt-bpf-a", "pt-bpf-b", "pt-bpf-c" };
static uint64_t ids[NGROUPS];
static uint64_t counts[NGROUPS + 1][PT_BPF_EV_MAX];	/* last row: any other cgroup */
static int passed, failed;

static void check(int ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "not ok", what);
	if (ok)
		passed++;
	else
		failed++;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Whether a swap device is active: then the busy processes also swap in. */
static bool swap_active(void)
{
	char line[256];
	int n = 0;
	FILE *f = fopen("/proc/swaps", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n > 1;
}

#define SWAP_BYTES (2 << 20)

/*
 * Pages @p out and back in: two MADV_PAGEOUT passes (the first writes the pages to swap,
 * the second, once that write is done, drops them from the swap cache), then a touch of
 * every page, each a swap-in from the device.
 */
static void swap_cycle(char *p)
{
	madvise(p, SWAP_BYTES, MADV_PAGEOUT);
	usleep(20000);
	madvise(p, SWAP_BYTES, MADV_PAGEOUT);
	for (size_t i = 0; i < SWAP_BYTES; i += 4096)
		p[i]++;
}

/*
 * The busy process of one group: faults on fresh pages, short sleeps, packets to itself,
 * and with @swap, a swap-out and swap-in of 2 MiB every 20 rounds.
 */
/* Moves the calling process into cgroup @dir, or exits with 2. */
static void join_cgroup(const char *dir)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f) != 0)
		_exit(2);
}

static void busy(const char *dir, bool swap)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t alen = sizeof(addr);
	char buf[32];
	int fd, rx, tx;

	join_cgroup(dir);
	/* Sockets made after the move belong to this cgroup (sk_cgrp_data at creation). */
	rx = socket(AF_INET, SOCK_DGRAM, 0);
	tx = socket(AF_INET, SOCK_DGRAM, 0);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    getsockname(rx, (struct sockaddr *)&addr, &alen) < 0)
		_exit(3);
	char *sw = mmap(NULL, SWAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);

	if (sw == MAP_FAILED)
		_exit(5);
	memset(sw, 1, SWAP_BYTES);
	for (unsigned int round = 0;; round++) {
		char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		if (p == MAP_FAILED)
			_exit(4);
		for (size_t i = 0; i < (1 << 20); i += 4096)
			p[i] = 1;
		munmap(p, 1 << 20);
		sendto(tx, "x", 1, 0, (struct sockaddr *)&addr, sizeof(addr));
		fd = (int)recv(rx, buf, sizeof(buf), MSG_DONTWAIT);
		(void)fd;
		if (swap && round % 20 == 0)
			swap_cycle(sw);
		usleep(2000);
	}
}

static int on_event(const struct pt_bpf_event *e, void *arg);

/*
 * A unix stream server in cgroup @dir: @reads reads of its socket, 120 ms apart (past the
 * per-cgroup interval of net events), each of which finds data when @with_data, or finds
 * none (-EAGAIN, as a non-blocking server's event loop gets when it wakes for anything
 * else) when not.
 */
static void unix_reader(const char *dir, bool with_data, int reads)
{
	char buf[32];
	int sv[2];

	join_cgroup(dir);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		_exit(3);
	for (int i = 0; i < reads; i++) {
		if (with_data && write(sv[1], "q", 1) != 1)
			_exit(4);
		if (recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT) < 0 && with_data)
			_exit(5);
		usleep(120 * 1000);
	}
	_exit(0);
}

/* Net events of cgroup @row while a unix_reader() runs there. */
static uint64_t unix_events(struct pt_bpf *b, const char *dir, int row, bool with_data)
{
	pid_t pid;
	int status;

	pt_bpf_poll(b, on_event, NULL);
	memset(counts, 0, sizeof(counts));
	pid = fork();
	if (pid == 0)
		unix_reader(dir, with_data, 8);
	waitpid(pid, &status, 0);
	pt_bpf_poll(b, on_event, NULL);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? counts[row][PT_BPF_EV_NET] : UINT64_MAX;
}

/*
 * A TCP server in cgroup @dir: listens on 127.0.0.1, writes its port to @port_fd, accepts
 * connections and holds them; for each byte read from @cmd_fd it shuts the write side of
 * its newest connection (a FIN to the client), and it exits at the pipe's end.
 */
static void tcp_server(const char *dir, int port_fd, int cmd_fd)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	char c;
	int ls, conn = -1;

	join_cgroup(dir);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 4) ||
	    getsockname(ls, (struct sockaddr *)&a, &len))
		_exit(3);
	if (write(port_fd, &a.sin_port, sizeof(a.sin_port)) != sizeof(a.sin_port))
		_exit(4);
	for (;;) {
		struct pollfd p[2] = { { .fd = ls, .events = POLLIN }, { .fd = cmd_fd, .events = POLLIN } };

		if (poll(p, 2, -1) < 0)
			_exit(5);
		if (p[0].revents & POLLIN)
			conn = accept(ls, NULL, NULL);
		if (p[1].revents & (POLLIN | POLLHUP)) {
			if (read(cmd_fd, &c, 1) != 1)
				_exit(0);
			if (conn >= 0)
				shutdown(conn, SHUT_WR);
		}
	}
}

static int tcp_connect(in_port_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = port,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM, 0);

	if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a))) {
		close(s);
		s = -1;
	}
	return s;
}

/*
 * The net events of cgroup @row that came within 200 ms (past the per-cgroup interval);
 * the counts start again from zero.
 */
static uint64_t net_events_settled(struct pt_bpf *b, int row)
{
	uint64_t n;

	usleep(200 * 1000);
	pt_bpf_poll(b, on_event, NULL);
	n = counts[row][PT_BPF_EV_NET];
	memset(counts, 0, sizeof(counts));
	return n;
}

/*
 * Net events of cgroup @row (@dir) from a TCP connection's housekeeping, and from a request
 * on it: *@housekeeping counts what came, past the per-cgroup interval each time, from the
 * client's keepalive probes, its ACK of the server's FIN and its own FIN; *@syn from a new
 * connection's SYN; *@request from a request's data on it.
 */
static bool tcp_events(struct pt_bpf *b, const char *dir, int row, uint64_t *housekeeping,
		       uint64_t *request, uint64_t *syn)
{
	int port_pipe[2], cmd_pipe[2], c, one = 1, sec = 1;
	in_port_t port;
	pid_t server;
	bool ok = false;

	if (pipe(port_pipe) || pipe(cmd_pipe))
		return false;
	server = fork();
	if (server == 0) {
		close(cmd_pipe[1]);
		tcp_server(dir, port_pipe[1], cmd_pipe[0]);
	}
	close(cmd_pipe[0]);
	if (read(port_pipe[0], &port, sizeof(port)) != sizeof(port))
		goto out;
	/* Housekeeping: keepalive probes (1 s idle, 1 s apart), then the close from both ends. */
	c = tcp_connect(port);
	if (c < 0)
		goto out;
	net_events_settled(b, row);			/* the handshake's */
	if (setsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
	    setsockopt(c, IPPROTO_TCP, TCP_KEEPIDLE, &sec, sizeof(sec)) ||
	    setsockopt(c, IPPROTO_TCP, TCP_KEEPINTVL, &sec, sizeof(sec)))
		goto out_close;
	usleep(2500 * 1000);
	if (write(cmd_pipe[1], "s", 1) != 1)		/* the server's FIN; the client ACKs it */
		goto out_close;
	usleep(200 * 1000);
	close(c);					/* the client's FIN */
	c = -1;
	*housekeeping = net_events_settled(b, row);
	/* A new connection: its SYN; then, past the interval, a request's data. */
	c = tcp_connect(port);
	if (c < 0)
		goto out;
	*syn = net_events_settled(b, row);
	if (write(c, "GET /\r\n", 7) != 7)
		goto out_close;
	*request = net_events_settled(b, row);
	ok = true;
out_close:
	if (c >= 0)
		close(c);
out:
	close(cmd_pipe[1]);
	close(port_pipe[0]);
	close(port_pipe[1]);
	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	return ok;
}

/* Tasks whose wakeup events in cgroup a are looked for, and whether one came. */
static pid_t watched[2];
static bool watched_seen[2];

static int on_event(const struct pt_bpf_event *e, void *arg)
{
	int row = NGROUPS;

	(void)arg;
	for (int i = 0; i < NGROUPS; i++)
		if (e->cgroup_id == ids[i])
			row = i;
	if (e->type < PT_BPF_EV_MAX)
		counts[row][e->type]++;
	for (int i = 0; i < 2; i++)
		if (row == 0 && e->type == PT_BPF_EV_WAKEUP && watched[i] &&
		    e->tid == (uint32_t)watched[i])
			watched_seen[i] = true;
	return 0;
}

static void spin_ms(uint64_t ms)
{
	for (uint64_t end = now_ms() + ms; now_ms() < end;)
		;
}

/*
 * A task that never sleeps moves itself into @dir, spins 300 ms (past the 100 ms limit on
 * wakeup events), forks a child that spins too and reports the child's pid through @fd.
 * Neither ever wakes from a sleep: only the move (cgroup_attach_task) and the child's first
 * run (sched_wakeup_new) can announce them.
 */
static void spinner(const char *dir, int fd)
{
	pid_t child;

	join_cgroup(dir);
	spin_ms(300);
	child = fork();
	if (child == 0)
		for (;;)
			;
	if (write(fd, &child, sizeof(child)) != sizeof(child))
		_exit(3);
	for (;;)
		;
}

static const char *type_name(int t)
{
	static const char *n[PT_BPF_EV_MAX] = { "?", "fault", "swapin", "wakeup", "net" };

	return n[t];
}

int main(int argc, char **argv)
{
	const char *root = argc > 1 ? argv[1] : NULL;
	char report[1024], dir[NGROUPS][512] = { { 0 } }, what[256];
	pid_t pids[NGROUPS];
	struct statfs sfs;
	struct pt_bpf *b;
	struct stat st;
	uint64_t end;
	bool swap = swap_active();
	int err;

	pt_log_set_level(getenv("PT_DEBUG") ? PT_LOG_DEBUG : PT_LOG_WARN);
	if (!root)
		root = statfs("/sys/fs/cgroup/unified", &sfs) == 0 &&
		       sfs.f_type == CGROUP2_SUPER_MAGIC ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
	err = pt_bpf_open(&b, report, sizeof(report));
	printf("# open: %s\n# report: %s\n", err ? strerror(-err) : "ok", report);
	check(err == 0, "pt_bpf_open loads and attaches");
	if (err)
		goto out;
	{
		const char *att[8];
		size_t n = pt_bpf_attached(b, att, 8);

		for (size_t i = 0; i < n; i++)
			printf("# attached: %s\n", att[i]);
	}

	for (int i = 0; i < NGROUPS; i++) {
		snprintf(dir[i], sizeof(dir[i]), "%s/%s", root, names[i]);
		if (mkdir(dir[i], 0755) < 0 && errno != EEXIST) {
			printf("# mkdir %s: %s\n", dir[i], strerror(errno));
			check(0, "create cgroups");
			goto out_close;
		}
		stat(dir[i], &st);
		ids[i] = st.st_ino;
		printf("# cgroup %s id %" PRIu64 "\n", dir[i], ids[i]);
	}
	check(pt_bpf_add_cgroup(b, ids[0]) == 0 && pt_bpf_add_cgroup(b, ids[1]) == 0,
	      "opt in a and b");
	check(pt_bpf_del_cgroup(b, ids[2]) == -ENOENT, "deleting a cgroup never added: -ENOENT");

	for (int i = 0; i < NGROUPS; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			busy(dir[i], swap);
	}
	end = now_ms() + RUN_MS;
	while (now_ms() < end) {
		usleep(50 * 1000);
		pt_bpf_poll(b, on_event, NULL);
	}
	for (int i = 0; i < NGROUPS; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	pt_bpf_poll(b, on_event, NULL);

	for (int i = 0; i <= NGROUPS; i++) {
		printf("# %-9s", i < NGROUPS ? names[i] : "other");
		for (int t = 1; t < PT_BPF_EV_MAX; t++)
			printf(" %s=%" PRIu64, type_name(t), counts[i][t]);
		printf("\n");
	}
	for (int t = 1; t < PT_BPF_EV_MAX; t++)
		printf("# stats %-6s seen=%" PRIu64 " emitted=%" PRIu64 " limited=%" PRIu64 "\n",
		       type_name(t), pt_bpf_stat(b, t, PT_BPF_STAT_SEEN),
		       pt_bpf_stat(b, t, PT_BPF_STAT_EMITTED), pt_bpf_stat(b, t, PT_BPF_STAT_LIMITED));
	printf("# ring buffer drops: %" PRIu64 "\n", pt_bpf_drops(b));

	for (int i = 0; i < 2; i++) {
		for (int t = 1; t < PT_BPF_EV_MAX; t++) {
			const char *want = strstr(report, type_name(t));

			/* Swap-ins need an active swap device (tests/preload/bpf_host.sh makes one). */
			if ((t == PT_BPF_EV_SWAPIN && !swap) || !want ||
			    strncmp(want + strlen(type_name(t)), "=none", 5) == 0)
				continue;
			snprintf(what, sizeof(what), "%s events from opted-in %s", type_name(t),
				 names[i]);
			check(counts[i][t] > 0, what);
		}
	}
	{
		uint64_t c = 0, other = 0;

		for (int t = 0; t < PT_BPF_EV_MAX; t++) {
			c += counts[2][t];
			other += counts[NGROUPS][t];
		}
		check(c == 0, "no events from cgroup c (not opted in)");
		check(other == 0, "no events from any other cgroup");
	}
	/* Rate limits: wakeups at most 10/s per cgroup (+1 for the first). */
	check(counts[0][PT_BPF_EV_WAKEUP] <= RUN_MS / 100 + 2, "wakeups rate-limited per cgroup");
	/* An idle cgroup's faults (a is, as added) in windows: a burst may be its wake. */
	check(counts[0][PT_BPF_EV_FAULT] > RUN_MS / 100 + 2,
	      "an idle cgroup's faults: more than one per 100 ms (the window limit)");

	/*
	 * Tasks that start using a's CPU without a wake: moved in while running, and a fork's
	 * first run. pagetierd samples a quiet container only on events, so these must be ones.
	 */
	if (strstr(report, "attach=") && !strstr(report, "attach=none") &&
	    strstr(report, "wakeup_new=") && !strstr(report, "wakeup_new=none")) {
		int fds[2];
		pid_t mover, child = 0;

		/* The forked child is reaped here once the mover is gone, so that a can go. */
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		if (pipe(fds) == 0) {
			/*
			 * The workers' deaths above were wakeups in a: past the 100 ms limit on
			 * a's wakeup events first, or the move may be rate-limited away.
			 */
			usleep(250 * 1000);
			pt_bpf_poll(b, on_event, NULL);
			mover = fork();
			if (mover == 0)
				spinner(dir[0], fds[1]);
			watched[0] = mover;
			if (read(fds[0], &child, sizeof(child)) == sizeof(child))
				watched[1] = child;
			usleep(300 * 1000);
			pt_bpf_poll(b, on_event, NULL);
			if (child > 0)
				kill(child, SIGKILL);
			kill(mover, SIGKILL);
			waitpid(mover, NULL, 0);
			if (child > 0)
				waitpid(child, NULL, 0);
			close(fds[0]);
			close(fds[1]);
		}
		check(watched_seen[0], "an event for a running task moved into a (cgroup_attach_task)");
		check(child > 0 && watched_seen[1],
		      "an event for the first run of a task forked in a (sched_wakeup_new)");
	} else {
		check(0, "cgroup_attach_task and sched_wakeup_new attached");
	}

	/* After opting a out, nothing more from a. */
	pt_bpf_del_cgroup(b, ids[0]);
	memset(counts, 0, sizeof(counts));
	pids[0] = fork();
	if (pids[0] == 0)
		busy(dir[0], swap);
	usleep(500 * 1000);
	kill(pids[0], SIGKILL);
	waitpid(pids[0], NULL, 0);
	pt_bpf_poll(b, on_event, NULL);
	check(counts[0][PT_BPF_EV_FAULT] + counts[0][PT_BPF_EV_SWAPIN] +
	      counts[0][PT_BPF_EV_WAKEUP] + counts[0][PT_BPF_EV_NET] == 0,
	      "no events from a after pt_bpf_del_cgroup");

	/*
	 * b's events marked not to wake the reader (an active context's): they wait in the ring,
	 * the ring's descriptor stays quiet, and the next poll gets them all.
	 */
	check(pt_bpf_set_wake(b, ids[2], false) == -ENOENT, "set_wake of a cgroup never added: -ENOENT");
	check(pt_bpf_set_wake(b, ids[1], false) == 0, "b's events wait for the poll");
	pt_bpf_poll(b, on_event, NULL);
	memset(counts, 0, sizeof(counts));
	{
		struct pollfd pfd = { .fd = pt_bpf_fd(b), .events = POLLIN };
		uint64_t t0 = now_ms(), ran_ms;
		int woke;

		pids[1] = fork();
		if (pids[1] == 0)
			busy(dir[1], swap);
		woke = poll(&pfd, 1, 700);
		kill(pids[1], SIGKILL);
		waitpid(pids[1], NULL, 0);
		ran_ms = now_ms() - t0;
		check(woke == 0, "no wakeup of the reader for b's events");
		pt_bpf_poll(b, on_event, NULL);
		check(counts[1][PT_BPF_EV_FAULT] + counts[1][PT_BPF_EV_WAKEUP] > 0,
		      "b's events were in the ring for the poll");
		/* Active, its faults only make it due for a sample: one per 100 ms is enough. */
		printf("# b active for %" PRIu64 " ms: %" PRIu64 " fault events\n", ran_ms,
		       counts[1][PT_BPF_EV_FAULT]);
		check(counts[1][PT_BPF_EV_FAULT] <= ran_ms / 100 + 2,
		      "an active cgroup's faults: at most one per 100 ms");
	}
	/* Back on: its next event wakes the reader. */
	check(pt_bpf_set_wake(b, ids[1], true) == 0, "b's events wake the reader again");
	pids[1] = fork();
	if (pids[1] == 0)
		busy(dir[1], swap);
	{
		struct pollfd pfd = { .fd = pt_bpf_fd(b), .events = POLLIN };
		int woke = poll(&pfd, 1, 2000);

		kill(pids[1], SIGKILL);
		waitpid(pids[1], NULL, 0);
		check(woke == 1, "a wakeup of the reader for b's events");
	}
	pt_bpf_poll(b, on_event, NULL);

	/*
	 * Unix stream sockets, when the kernel has the attach point: a read that returns data
	 * is a request; one that finds nothing is not.
	 */
	if (strstr(report, "unix=") && !strstr(report, "unix=none")) {
		uint64_t empty = unix_events(b, dir[1], 1, false);
		uint64_t data = unix_events(b, dir[1], 1, true);

		printf("# unix reads in b: %" PRIu64 " net events from empty reads, %" PRIu64
		       " from reads of data\n", empty, data);
		check(empty == 0, "no net event for unix reads that find nothing (-EAGAIN)");
		check(data != UINT64_MAX && data > 0, "net events for unix reads that return data");
	}

	/*
	 * TCP packets into b: a request's data and a new connection's SYN are net events; a
	 * connection's housekeeping (keepalive probes, ACKs, FINs) is none, for it comes on its
	 * own long after the last request (a server closing an idle keep-alive connection).
	 */
	if (strstr(report, "net=") && !strstr(report, "net=none")) {
		uint64_t hk = UINT64_MAX, req = 0, syn = 0;
		bool ran = tcp_events(b, dir[1], 1, &hk, &req, &syn);

		printf("# tcp into b: %" PRIu64 " net events from keepalive probes, ACKs and FINs, "
		       "%" PRIu64 " from a SYN, %" PRIu64 " from a request's data\n", hk, syn, req);
		check(ran, "a TCP connection into b");
		check(hk == 0, "no net event for a TCP connection's housekeeping (keepalive, ACK, FIN)");
		check(syn > 0, "a net event for a new connection's SYN");
		check(req > 0, "a net event for a request's data on an open connection");
	}

out_close:
	pt_bpf_close(b);
	for (int i = 0; i < NGROUPS; i++)
		if (dir[i][0])
			rmdir(dir[i]);
out:
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
