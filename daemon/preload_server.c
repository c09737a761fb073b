// SPDX-License-Identifier: GPL-2.0
/*
 * The unix socket libpagetier.so registers with, and the rings it registers. Identity is the
 * kernel's (SO_PEERCRED and SO_PEERPIDFD, /proc/PID/cgroup), never the peer's: what a peer
 * writes is only records about its own memory, and those are validated by preload_decode.c.
 */
#include "preload_server.h"

#include <errno.h>
#include <linux/futex.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "preload_maps.h"

/* Linux 6.5; glibc 2.36's headers do not have it yet. */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

#define HELLO_TIMEOUT_NS (5 * 1000000000ULL)
#define MAX_FDS_IN_HELLO 4
#define MAX_PENDING_PER_PID 4	/* a process registers once; a few for exec races */

/*
 * One cgroup's share of the server, for the per-cgroup caps and budgets. Its peers point to
 * it; it goes with the last of them.
 */
struct cg_acct {
	char *path;			/* cgroup v2 path, "/a/b" */
	unsigned int refs;		/* peers, pending or registered */
	uint64_t maps_window_ns;	/* the second its maps budget counts in */
	unsigned int maps_reads;
	uint64_t maps_bytes;
	unsigned int drained;		/* records consumed by the current drain */
};

struct peer {
	int sock;
	pid_t pid;
	int pidfd;			/* the process that connected; -1 on kernels before 6.5 */
	struct cg_acct *cg;		/* its cgroup: NULL until known */
	const char *cgroup;		/* cg->path */
	bool registered;
	bool gone;			/* connection closed: drain once more, then free */
	uint64_t connected_ns;
	const void *ring;		/* the whole memfd, read-only */
	struct pt_preload_ctl *ctl;	/* its control page, read-write */
	uint64_t ring_bytes;
	struct pt_preload_consumer cons;
	struct pt_preload_maps maps;	/* what it has mapped: records may name only that */
	uint32_t trim_seq, idle_seq;
	uint64_t req_seq;
};

struct pt_preload_server {
	int lsock;
	int epfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct pt_preload_server_opts opts;
	pt_preload_optin_fn optin;
	void *optin_arg;
	struct peer **peers;
	unsigned int npeers;
	struct cg_acct **cgs;		/* at most one per peer: max_peers + 1 slots */
	unsigned int ncgs;
	unsigned int drain_next;	/* the peer the next drain starts at: each its turn first */
	unsigned int npending;		/* peers not registered yet */
	uint64_t ring_bytes;		/* mapped for all peers */
	bool listen_paused;		/* out of fds: not polling the listening socket */
	bool no_pidfd;			/* the kernel has no SO_PEERPIDFD: pids only */
	struct pt_preload_server_stats st;	/* rejected/records of peers already gone */
	/* While draining: the callback of the current call. */
	pt_preload_record_fn fn;
	void *fn_arg;
	struct peer *cur;
	uint64_t now;
	uint64_t maps_window_ns;	/* maps reads of all peers: this second's budget */
	unsigned int maps_reads;
	uint64_t maps_bytes;
	int delivered;
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

void pt_preload_server_default_opts(struct pt_preload_server_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->max_peers = 4096;
	opts->max_pending = 64;
	opts->max_pending_per_cgroup = 16;
	opts->max_peers_per_cgroup = 256;
	opts->max_ring_bytes = 256ULL << 20;
	opts->maps_reads_per_sec = 200;
	opts->maps_reads_per_sec_per_cgroup = 50;
	opts->maps_bytes_per_sec = 64ULL << 20;
	opts->maps_bytes_per_sec_per_cgroup = 16ULL << 20;
	opts->max_records_per_drain = 65536;
	opts->max_records_per_drain_per_cgroup = 16384;
	pt_preload_default_limits(&opts->limits);
	opts->proc_root = "/proc";
}

unsigned int pt_preload_peers_for_fds(uint64_t nofile, unsigned int max_peers)
{
	uint64_t n = nofile / 4 / 2;	/* a quarter of the limit, two fds a peer */

	if (n < 1)
		n = 1;
	return n < max_peers ? (unsigned int)n : max_peers;
}

unsigned int pt_preload_cgroup_share(unsigned int per_cgroup, unsigned int max_peers)
{
	unsigned int share = max_peers / 2;

	if (share < 1)
		share = 1;
	return per_cgroup < share ? per_cgroup : share;
}

/* mkdir -p of the socket's directory. */
static int make_parent_dirs(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int pt_preload_server_open(struct pt_preload_server **out, const char *path,
			   const struct pt_preload_server_opts *opts, pt_preload_optin_fn optin,
			   void *optin_arg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN };
	struct pt_preload_server_opts defaults;
	struct pt_preload_server *s;
	struct rlimit rl;
	struct stat st;
	int err, probe;

	*out = NULL;
	if (!path)
		path = PT_PRELOAD_SOCK_PATH;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		pt_err("preload: socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->lsock = -1;
	s->epfd = -1;
	if (opts)
		s->opts = *opts;
	else
		pt_preload_server_default_opts(&s->opts);
	pt_preload_server_default_opts(&defaults);
	if (!s->opts.proc_root)
		s->opts.proc_root = defaults.proc_root;
#define DEFAULT(field) do { if (!s->opts.field) s->opts.field = defaults.field; } while (0)
	DEFAULT(max_peers);
	DEFAULT(max_pending);
	DEFAULT(max_pending_per_cgroup);
	DEFAULT(max_peers_per_cgroup);
	DEFAULT(max_ring_bytes);
	DEFAULT(maps_reads_per_sec);
	DEFAULT(maps_reads_per_sec_per_cgroup);
	DEFAULT(maps_bytes_per_sec);
	DEFAULT(maps_bytes_per_sec_per_cgroup);
	DEFAULT(max_records_per_drain);
	DEFAULT(max_records_per_drain_per_cgroup);
#undef DEFAULT
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    pt_preload_peers_for_fds(rl.rlim_cur, s->opts.max_peers) < s->opts.max_peers) {
		unsigned int n = pt_preload_peers_for_fds(rl.rlim_cur, s->opts.max_peers);
		unsigned int per_cg = pt_preload_cgroup_share(s->opts.max_peers_per_cgroup, n);

		pt_warn("preload: %llu descriptors (RLIMIT_NOFILE) leave room for %u preloaded "
			"processes, not %u, %u of them per cgroup: raise LimitNOFILE "
			"(packaging/pagetierd.service) for more",
			(unsigned long long)rl.rlim_cur, n, s->opts.max_peers, per_cg);
		s->opts.max_peers = n;
		s->opts.max_peers_per_cgroup = per_cg;
	}
	s->optin = optin;
	s->optin_arg = optin_arg;
	snprintf(s->path, sizeof(s->path), "%s", path);
	strcpy(sa.sun_path, path);

	err = make_parent_dirs(path);
	if (err) {
		pt_err("preload: cannot create the directory of %s: %s", path, strerror(-err));
		goto fail;
	}
	/* A socket left by a previous run is removed, one that answers is another daemon. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			pt_err("preload: %s exists and is not a socket: remove it", path);
			err = -EEXIST;
			goto fail;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(probe);
			pt_err("preload: %s is in use: is another pagetierd running?", path);
			err = -EADDRINUSE;
			goto fail;
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
	}
	s->lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lsock < 0 || bind(s->lsock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		pt_err("preload: cannot bind %s: %s", path, strerror(-err));
		goto fail;
	}
	/* Any process may register: who it is comes from the kernel, not from it. */
	if (chmod(path, 0666) < 0 || listen(s->lsock, 128) < 0) {
		err = -errno;
		pt_err("preload: cannot listen on %s: %s", path, strerror(-err));
		goto fail;
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.ptr = NULL;	/* NULL: the listening socket */
	if (s->epfd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lsock, &ev) < 0) {
		err = -errno;
		goto fail;
	}
	s->peers = calloc(s->opts.max_peers, sizeof(*s->peers));
	/* One per peer, and one more: a full table's peer moving to a new cgroup at hello. */
	s->cgs = calloc(s->opts.max_peers + 1, sizeof(*s->cgs));
	if (!s->peers || !s->cgs) {
		err = -ENOMEM;
		goto fail;
	}
	*out = s;
	return 0;
fail:
	pt_preload_server_close(s);
	return err;
}

int pt_preload_server_fd(const struct pt_preload_server *s)
{
	return s->epfd;
}

/* The account of cgroup @path (taken: freed if one exists), with a reference for a peer. */
static struct cg_acct *cg_get(struct pt_preload_server *s, char *path)
{
	struct cg_acct *a;

	for (unsigned int i = 0; i < s->ncgs; i++) {
		if (strcmp(s->cgs[i]->path, path) == 0) {
			free(path);
			s->cgs[i]->refs++;
			return s->cgs[i];
		}
	}
	a = calloc(1, sizeof(*a));
	if (!a || s->ncgs > s->opts.max_peers) {	/* never: one per peer, one moving */
		free(a);
		free(path);
		return NULL;
	}
	a->path = path;
	a->refs = 1;
	s->cgs[s->ncgs++] = a;
	return a;
}

static void cg_put(struct pt_preload_server *s, struct cg_acct *a)
{
	if (!a || --a->refs)
		return;
	for (unsigned int i = 0; i < s->ncgs; i++) {
		if (s->cgs[i] == a) {
			s->cgs[i] = s->cgs[--s->ncgs];
			break;
		}
	}
	free(a->path);
	free(a);
}

/* Puts @p in cgroup @path (taken); 0 or -ENOMEM. */
static int peer_set_cgroup(struct pt_preload_server *s, struct peer *p, char *path)
{
	struct cg_acct *a;

	if (p->cg && strcmp(p->cg->path, path) == 0) {
		free(path);
		return 0;
	}
	a = cg_get(s, path);
	if (!a)
		return -ENOMEM;
	cg_put(s, p->cg);
	p->cg = a;
	p->cgroup = a->path;
	return 0;
}

static void peer_free(struct pt_preload_server *s, struct peer *p)
{
	if (p->registered) {
		for (int i = 0; i < PT_PRELOAD_REJ_NR; i++)
			s->st.rejected[i] += p->cons.rejected[i];
		s->st.records += p->cons.accepted;
		s->st.throttled += p->cons.throttled;
		s->st.producer_dropped += __atomic_load_n(
			&((const struct pt_preload_hdr *)p->ring)->dropped, __ATOMIC_RELAXED);
		s->st.trims += __atomic_load_n(&((const struct pt_preload_hdr *)p->ring)->trims,
					       __ATOMIC_RELAXED);
		if (s->opts.on_peer)
			s->opts.on_peer(p->pid, p->cgroup, false, s->opts.peer_arg);
	}
	if (!p->registered)
		s->npending--;
	if (p->ring) {
		munmap((void *)p->ring, p->ring_bytes);
		s->ring_bytes -= p->ring_bytes;
	}
	pt_preload_maps_free(&p->maps);
	if (p->ctl)
		munmap(p->ctl, 4096);
	if (p->sock >= 0) {
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, p->sock, NULL);
		close(p->sock);
	}
	if (p->pidfd >= 0)
		close(p->pidfd);
	cg_put(s, p->cg);
	free(p);
}

static void peer_remove(struct pt_preload_server *s, struct peer *p)
{
	for (unsigned int i = 0; i < s->npeers; i++) {
		if (s->peers[i] == p) {
			s->peers[i] = s->peers[--s->npeers];
			break;
		}
	}
	peer_free(s, p);
}

/*
 * The cgroup v2 path of @pid from /proc/PID/cgroup ("0::/path"). On a host with only v1
 * hierarchies there is no such line: "/" then.
 */
static int read_cgroup(const char *proc_root, pid_t pid, char **out)
{
	char path[PATH_MAX], line[PATH_MAX + 64];
	int err = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/cgroup", proc_root, (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			*out = strdup(line + 3);
			err = *out ? 0 : -ENOMEM;
			break;
		}
	}
	fclose(f);
	if (err == -ENOENT) {
		*out = strdup("/");
		err = *out ? 0 : -ENOMEM;
	}
	return err;
}

/* Maps a peer's memfd after checking it is one and cannot change size under us. */
static int map_ring(struct pt_preload_server *s, struct peer *p, int mfd, uint64_t ring_bytes)
{
	struct pt_preload_hdr hdr;
	uint32_t nslots;
	struct stat st;
	int seals, err;
	void *m;

	if (fstat(mfd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != ring_bytes)
		return -EINVAL;
	seals = fcntl(mfd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return -EPERM;	/* not a memfd, or one that could shrink and SIGBUS us */
	/*
	 * A bound on what all peers together make us map: pagetierd runs mlockall(MCL_FUTURE),
	 * so every ring it maps is populated, locked and charged to the daemon.
	 */
	if (s->ring_bytes + ring_bytes > s->opts.max_ring_bytes)
		return -ENOSPC;
	m = mmap(NULL, ring_bytes, PROT_READ, MAP_SHARED, mfd, 0);
	if (m == MAP_FAILED)
		return -errno;
	p->ring = m;
	p->ring_bytes = ring_bytes;
	s->ring_bytes += ring_bytes;
	memcpy(&hdr, m, sizeof(hdr));
	err = pt_preload_check_header(&hdr, ring_bytes, &nslots);
	if (err)
		return err;
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, PT_PRELOAD_CTL_OFF);
	if (m == MAP_FAILED)
		return -errno;
	p->ctl = m;
	pt_preload_consumer_init(&p->cons, nslots, 0, &s->opts.limits);
	__atomic_store_n(&p->ctl->tail, 0, __ATOMIC_RELEASE);
	return 0;
}

static void reply(struct peer *p, char c)
{
	(void)send(p->sock, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/*
 * One ring per process: the library registers again only after it lost its connection (or
 * exec'd, which closes it), so an older ring of the same pid is a leftover or a peer trying
 * to make us map more. The newest wins; the older one is drained once more and freed.
 */
static void drop_older_rings(struct pt_preload_server *s, struct peer *p)
{
	for (unsigned int i = 0; i < s->npeers; i++) {
		struct peer *o = s->peers[i];

		if (o == p || !o->registered || o->gone || o->pid != p->pid)
			continue;
		o->gone = true;
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, o->sock, NULL);
		s->st.replaced++;
	}
}

/*
 * Registered peers of @p's cgroup but @p's own pid's: a ring that @p replaces
 * (drop_older_rings) frees its slot, or a process re-registering in a full cgroup would
 * be refused. Peers already gone hold their fd only until the next drain: not counted.
 */
static unsigned int peers_of_cgroup(const struct pt_preload_server *s, const struct peer *p)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < s->npeers; i++) {
		const struct peer *o = s->peers[i];

		n += o->registered && !o->gone && o->pid != p->pid && o->cg == p->cg;
	}
	return n;
}

/*
 * Whether the process that connected is still there, so that what was just read about its
 * pid (/proc/PID/cgroup, /proc/PID/maps) was about it, not about a process that got the
 * number since. Its pidfd says so for certain: pidfd_send_signal(0) fails with ESRCH once
 * it exited (EPERM, without CAP_KILL, means it is there). Without one, a closed end of the
 * socket says it is gone, but an open one proves nothing: a child it forked, or a process
 * it passed the socket to, holds it open after it exits.
 */
static bool peer_alive(const struct peer *p)
{
	struct pollfd pfd = { .fd = p->sock, .events = POLLRDHUP };

	if (p->pidfd >= 0 && syscall(SYS_pidfd_send_signal, p->pidfd, 0, NULL, 0) < 0 &&
	    errno != EPERM)
		return false;
	return !(poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)));
}

/* Reads the registration message of @p. 0 registered, -EAGAIN not yet, <0 drop the peer. */
static int peer_hello(struct pt_preload_server *s, struct peer *p)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MAX_FDS_IN_HELLO)];
		struct cmsghdr align;
	} cbuf;
	struct pt_preload_hello hello;
	struct iovec iov = { &hello, sizeof(hello) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
			      .msg_controllen = sizeof(cbuf.buf) };
	int fds[MAX_FDS_IN_HELLO], nfds = 0, err;
	uint64_t ring_bytes = 0;
	char *cgroup;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	char extra;
	ssize_t n;

	n = recvmsg(p->sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return -EAGAIN;
	if (n <= 0)
		return n ? -errno : -ECONNRESET;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int) &&
				   nfds < MAX_FDS_IN_HELLO; i++)
			memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	}
	err = -EINVAL;
	if (nfds != 1 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		goto bad;
	err = pt_preload_check_hello(&hello, (size_t)n, &ring_bytes);
	if (err)
		goto bad;
	/*
	 * The library sends nothing after its hello until we answer: anything already behind
	 * it is an oversized registration (a stream socket keeps no message boundaries).
	 */
	err = -EMSGSIZE;
	if (recv(p->sock, &extra, 1, MSG_PEEK | MSG_DONTWAIT) > 0)
		goto bad;
	if (getsockopt(p->sock, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.pid <= 0) {
		err = -ESRCH;	/* e.g. a peer in a pid namespace we cannot see into */
		goto bad;
	}
	p->pid = cred.pid;
	/* Again: it may have moved since it connected (a runtime placing it). */
	err = read_cgroup(s->opts.proc_root, p->pid, &cgroup);
	if (!err)
		err = peer_set_cgroup(s, p, cgroup);
	if (err)
		goto bad;
	/* The pid is from connect time: the cgroup read is its process's only if it is alive. */
	if (!peer_alive(p)) {
		err = -ESRCH;
		goto bad;
	}
	if (s->optin && !s->optin(p->pid, p->cgroup, s->optin_arg)) {
		close(fds[0]);
		reply(p, PT_PRELOAD_REJECT);
		s->st.rejected_peers++;
		pt_debug("preload: pid %d (cgroup %s) is not opted in", (int)p->pid, p->cgroup);
		return -EPERM;
	}
	if (peers_of_cgroup(s, p) >= s->opts.max_peers_per_cgroup) {
		close(fds[0]);
		reply(p, PT_PRELOAD_REJECT);
		if (!s->st.refused_cgroup_full++ || !(s->st.refused_cgroup_full % 1024))
			pt_warn("preload: cgroup %s has %u registered processes, the most one may "
				"have (max_peers_per_cgroup): pid %d and further ones run without "
				"the library (%llu refused so far)",
				p->cgroup, s->opts.max_peers_per_cgroup, (int)p->pid,
				(unsigned long long)s->st.refused_cgroup_full);
		return -EUSERS;
	}
	err = map_ring(s, p, fds[0], ring_bytes);
	if (err)
		goto bad;
	close(fds[0]);
	p->registered = true;
	s->npending--;
	drop_older_rings(s, p);
	s->st.accepted_peers++;
	if (p->pidfd >= 0)
		s->st.by_pidfd++;
	reply(p, PT_PRELOAD_ACCEPT);
	pt_debug("preload: pid %d (cgroup %s) registered a ring of %llu bytes", (int)p->pid,
		 p->cgroup, (unsigned long long)ring_bytes);
	if (s->opts.on_peer)
		s->opts.on_peer(p->pid, p->cgroup, true, s->opts.peer_arg);
	return 0;
bad:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	s->st.bad_hellos++;
	pt_debug("preload: bad registration from pid %d: %s", (int)p->pid, strerror(-err));
	return err;
}

/* Doorbells and hangups of a registered peer. false: it is gone. */
static bool peer_service(struct pt_preload_server *s, struct peer *p)
{
	char buf[256];
	ssize_t n;

	for (int rounds = 0; rounds < 16; rounds++) {
		n = recv(p->sock, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			for (ssize_t i = 0; i < n; i++)
				if (buf[i] == PT_PRELOAD_DOORBELL)
					s->st.doorbells++;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return true;
		return false;	/* EOF: the process exited or exec'd */
	}
	return true;
}

/*
 * Out of fds, the listening socket stays readable: stop polling it (level-triggered, it would
 * spin the event loop) until the next pt_preload_server_accept() call.
 */
static void pause_listening(struct pt_preload_server *s, bool pause)
{
	struct epoll_event ev = { .events = pause ? 0 : EPOLLIN, .data.ptr = NULL };

	if (s->listen_paused == pause)
		return;
	if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lsock, &ev) == 0)
		s->listen_paused = pause;
}

/* The pid of the process behind @fd (SO_PEERCRED: at connect time), 0 if unknown. */
static pid_t peer_pid(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ? 0 : cred.pid;
}

/* Connections of process @pid waiting for their hello; an unknown pid has too many. */
static unsigned int pending_of(const struct pt_preload_server *s, pid_t pid)
{
	unsigned int n = 0;

	if (pid <= 0)
		return MAX_PENDING_PER_PID;
	for (unsigned int i = 0; i < s->npeers; i++)
		if (!s->peers[i]->registered && s->peers[i]->pid == pid)
			n++;
	return n;
}

/* Connections of @cg waiting for their hello. */
static unsigned int pending_of_cgroup(const struct pt_preload_server *s,
				      const struct cg_acct *cg)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < s->npeers; i++)
		n += !s->peers[i]->registered && s->peers[i]->cg == cg;
	return n;
}

/*
 * The pidfd of the process behind @sock (SO_PEERPIDFD: the one that connected), or a
 * negative errno: -ENOPROTOOPT on kernels before 6.5.
 */
static int peer_pidfd(const struct pt_preload_server *s, int sock)
{
	socklen_t len = sizeof(int);
	int fd;

	if (s->opts.peer_pidfd)
		return s->opts.peer_pidfd(sock);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) < 0)
		return -errno;
	return fd;
}

/*
 * A new connection: kept as pending (its hello to come) if there is room for it, overall,
 * for its process and for its cgroup, so that neither a few processes nor one container
 * can hold every pending slot. 0 kept, or why not.
 */
static int admit(struct pt_preload_server *s, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	char *cgroup;
	struct peer *p;
	pid_t pid;
	int err;

	if (s->npeers >= s->opts.max_peers || s->npending >= s->opts.max_pending)
		return -EUSERS;
	/* Its pid is the kernel's (at connect time); read again, and checked, at hello. */
	pid = peer_pid(fd);
	if (pending_of(s, pid) >= MAX_PENDING_PER_PID)
		return -EUSERS;
	err = read_cgroup(s->opts.proc_root, pid, &cgroup);
	if (err)
		return err;	/* gone already */
	p = calloc(1, sizeof(*p));
	if (!p) {
		free(cgroup);
		return -ENOMEM;
	}
	p->sock = fd;
	p->pid = pid;
	p->pidfd = -1;
	p->connected_ns = now_ns();
	err = peer_set_cgroup(s, p, cgroup);
	if (!err && !s->no_pidfd) {
		p->pidfd = peer_pidfd(s, fd);
		if (p->pidfd == -ENOPROTOOPT || p->pidfd == -EINVAL) {
			s->no_pidfd = true;
			pt_info("preload: the kernel has no SO_PEERPIDFD (Linux 6.5): peers are "
				"identified by pid, and a pid reused between connect and registration "
				"goes unnoticed while the socket stays open");
		} else if (p->pidfd < 0) {
			err = p->pidfd;		/* ESRCH: gone already; EMFILE */
		}
		if (p->pidfd < 0)
			p->pidfd = -1;
	}
	if (!err && pending_of_cgroup(s, p->cg) >= s->opts.max_pending_per_cgroup) {
		s->st.refused_pending_cgroup++;
		err = -EUSERS;
	}
	ev.data.ptr = p;
	if (!err && epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		err = -errno;
	if (err) {
		if (p->pidfd >= 0)
			close(p->pidfd);
		cg_put(s, p->cg);
		free(p);
		return err;
	}
	s->peers[s->npeers++] = p;
	s->npending++;
	return 0;
}

static void accept_new(struct pt_preload_server *s)
{
	for (;;) {
		int fd = accept4(s->lsock, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				if (!s->listen_paused)
					pt_warn("preload: cannot accept: %s", strerror(errno));
				pause_listening(s, true);
			}
			return;
		}
		/* Connections that never say hello must not crowd out those that do. */
		if (admit(s, fd)) {
			s->st.refused++;
			close(fd);
		}
	}
}

static void handle_peer(struct pt_preload_server *s, struct peer *p)
{
	int err;

	if (p->registered) {
		/* Its last records may still be in the ring: the next drain frees it. */
		if (!p->gone && !peer_service(s, p)) {
			p->gone = true;
			epoll_ctl(s->epfd, EPOLL_CTL_DEL, p->sock, NULL);
		}
		return;
	}
	err = peer_hello(s, p);
	if (err && err != -EAGAIN)
		peer_remove(s, p);
}

int pt_preload_server_accept(struct pt_preload_server *s)
{
	struct epoll_event evs[64];
	uint64_t now;
	int n;

	pause_listening(s, false);
	do {
		n = epoll_wait(s->epfd, evs, 64, 0);
		for (int i = 0; i < n; i++) {
			if (!evs[i].data.ptr)
				accept_new(s);
			else
				handle_peer(s, evs[i].data.ptr);
		}
	} while (n == 64);
	/* Connections that never said hello are not kept. */
	now = now_ns();
	for (unsigned int i = 0; i < s->npeers;) {
		struct peer *p = s->peers[i];

		if (!p->registered && now - p->connected_ns > HELLO_TIMEOUT_NS) {
			s->st.bad_hellos++;
			peer_remove(s, p);
			continue;
		}
		i++;
	}
	n = 0;
	for (unsigned int i = 0; i < s->npeers; i++)
		n += s->peers[i]->registered;
	return n;
}

/* The range a record says the peer has mapped, if it names one. */
static bool named_range(const struct pt_preload_event *ev, uint64_t *addr, uint64_t *len)
{
	switch (ev->type) {
	case PT_PRELOAD_REC_ALLOC:
	case PT_PRELOAD_REC_MMAP:
		*addr = ev->addr;
		*len = ev->len;
		return true;
	case PT_PRELOAD_REC_MREMAP:
		*addr = ev->addr2;
		*len = ev->len2;
		return true;
	default:
		return false;	/* frees and unmaps name memory that is already gone */
	}
}

/*
 * How many bytes of /proc/PID/maps the current peer may read now (0: none): the budgets of
 * this second, for all peers and for its cgroup. A read that would be cut short of what the
 * peer's last one needed waits for the next second instead.
 */
static uint64_t maps_allowance(struct pt_preload_server *s, struct peer *p)
{
	const struct pt_preload_server_opts *o = &s->opts;
	struct cg_acct *cg = p->cg;
	uint64_t left, need;

	if (s->now - s->maps_window_ns >= 1000000000ULL) {
		s->maps_window_ns = s->now;
		s->maps_reads = 0;
		s->maps_bytes = 0;
	}
	if (s->now - cg->maps_window_ns >= 1000000000ULL) {
		cg->maps_window_ns = s->now;
		cg->maps_reads = 0;
		cg->maps_bytes = 0;
	}
	if (s->maps_reads >= o->maps_reads_per_sec ||
	    cg->maps_reads >= o->maps_reads_per_sec_per_cgroup ||
	    s->maps_bytes >= o->maps_bytes_per_sec ||
	    cg->maps_bytes >= o->maps_bytes_per_sec_per_cgroup)
		return 0;
	left = o->maps_bytes_per_sec - s->maps_bytes;
	if (o->maps_bytes_per_sec_per_cgroup - cg->maps_bytes < left)
		left = o->maps_bytes_per_sec_per_cgroup - cg->maps_bytes;
	if (left > PT_PRELOAD_MAPS_MAX_BYTES)
		left = PT_PRELOAD_MAPS_MAX_BYTES;
	need = p->maps.last_bytes + 1 > 4096 ? p->maps.last_bytes + 1 : 4096;
	return left >= need ? left : 0;
}

static int deliver(const struct pt_preload_event *ev, void *arg)
{
	struct pt_preload_server *s = arg;
	struct peer *p = s->cur;
	uint64_t addr, len;

	if (named_range(ev, &addr, &len)) {
		uint64_t reads = p->maps.reloads, bytes = p->maps.bytes, allow = 0;
		bool ok = p->maps.loaded_ns && pt_preload_maps_covers(&p->maps, addr, len);

		if (!ok) {
			allow = maps_allowance(s, p);
			if (!allow)
				s->st.maps_denied++;
			ok = pt_preload_maps_check(&p->maps, s->opts.proc_root, p->pid, addr, len,
						   s->now, allow);
		}
		reads = p->maps.reloads - reads;
		bytes = p->maps.bytes - bytes;
		if (reads && !peer_alive(p)) {
			p->maps.n = 0;	/* the maps of whoever has its pid now */
			ok = false;
		}
		s->maps_reads += (unsigned int)reads;
		s->maps_bytes += bytes;
		p->cg->maps_reads += (unsigned int)reads;
		p->cg->maps_bytes += bytes;
		s->st.maps_reads += reads;
		s->st.maps_bytes += bytes;
		if (!ok)
			return 1 + PT_PRELOAD_REJ_FOREIGN;
	}
	s->delivered++;
	if (s->fn)
		s->fn(s->cur->pid, s->cur->cgroup, ev, s->fn_arg);
	return 0;
}

/* Drains @p within what is left of this drain's budgets. */
static void drain_peer(struct pt_preload_server *s, struct peer *p, unsigned int *left)
{
	unsigned int max = *left, cg_left;
	int ret;

	cg_left = s->opts.max_records_per_drain_per_cgroup - p->cg->drained;
	if (cg_left < max)
		max = cg_left;
	if (!max) {
		s->st.drain_cut++;	/* its records wait for the next drain */
		return;
	}
	s->cur = p;
	ret = pt_preload_consume_max(&p->cons, p->ring, s->now, max, deliver, s);
	if (ret <= 0)
		return;
	__atomic_store_n(&p->ctl->tail, p->cons.tail, __ATOMIC_RELEASE);
	*left -= (unsigned int)ret;
	p->cg->drained += (unsigned int)ret;
	if ((unsigned int)ret == max && max < p->cons.lim.max_per_drain)
		s->st.drain_cut++;
}

int pt_preload_server_drain(struct pt_preload_server *s, pt_preload_record_fn fn, void *arg)
{
	unsigned int left, n, start;

	pt_preload_server_accept(s);
	s->now = now_ns();
	s->fn = fn;
	s->fn_arg = arg;
	s->delivered = 0;
	for (unsigned int i = 0; i < s->ncgs; i++)
		s->cgs[i]->drained = 0;
	/*
	 * Within a budget for all rings (so that thousands of peers cannot hold the event loop),
	 * starting one peer further each time, so that when it runs out, it is not always the
	 * same peers that wait.
	 */
	left = s->opts.max_records_per_drain;
	n = s->npeers;
	start = n ? s->drain_next % n : 0;
	s->drain_next = start + 1;
	for (unsigned int k = 0; k < n; k++) {
		struct peer *p = s->peers[(start + k) % n];

		if (p->registered)
			drain_peer(s, p, &left);
	}
	/* Peers gone had their last records drained (budget permitting): free them now. */
	for (unsigned int i = 0; i < s->npeers;) {
		struct peer *p = s->peers[i];

		if (p->registered && p->gone) {
			peer_remove(s, p);	/* moves the last peer to slot i */
			continue;
		}
		i++;
	}
	s->cur = NULL;
	s->fn = NULL;
	return s->delivered;
}

static void bump_request(struct peer *p, bool trim)
{
	if (trim)
		__atomic_store_n(&p->ctl->trim_seq, ++p->trim_seq, __ATOMIC_RELEASE);
	else
		__atomic_store_n(&p->ctl->idle_seq, ++p->idle_seq, __ATOMIC_RELEASE);
	__atomic_store_n(&p->ctl->req_seq, ++p->req_seq, __ATOMIC_RELEASE);
	/* Last: the library's request thread sleeps on it (a shared futex: the memfd). */
	__atomic_store_n(&p->ctl->req_word, (uint32_t)p->req_seq, __ATOMIC_RELEASE);
	syscall(SYS_futex, &p->ctl->req_word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static int request(struct pt_preload_server *s, pid_t pid, bool trim)
{
	int found = 0;

	for (unsigned int i = 0; i < s->npeers; i++) {
		struct peer *p = s->peers[i];

		if (p->registered && !p->gone && (pid == 0 || p->pid == pid)) {
			bump_request(p, trim);
			found++;
			pt_debug("preload: asked pid %d (cgroup %s) %s (request %u)", (int)p->pid,
				 p->cgroup, trim ? "to malloc_trim(0)" : "to signal its next activity",
				 trim ? p->trim_seq : p->idle_seq);
		}
	}
	return found ? 0 : -ENOENT;
}

int pt_preload_server_request_trim(struct pt_preload_server *s, pid_t pid)
{
	return request(s, pid, true);
}

bool pt_preload_server_trim_pending(const struct pt_preload_server *s, pid_t pid)
{
	for (unsigned int i = 0; i < s->npeers; i++) {
		const struct peer *p = s->peers[i];

		if (p->registered && !p->gone && p->pid == pid &&
		    __atomic_load_n(&((const struct pt_preload_hdr *)p->ring)->trim_done,
				    __ATOMIC_ACQUIRE) != p->trim_seq)
			return true;
	}
	return false;
}

int pt_preload_server_arm_wake(struct pt_preload_server *s, pid_t pid)
{
	return request(s, pid, false);
}

void pt_preload_server_stats(const struct pt_preload_server *s,
			     struct pt_preload_server_stats *st)
{
	*st = s->st;
	st->peers = 0;
	for (unsigned int i = 0; i < s->npeers; i++) {
		const struct peer *p = s->peers[i];

		if (!p->registered)
			continue;
		st->peers++;
		st->records += p->cons.accepted;
		st->throttled += p->cons.throttled;
		for (int r = 0; r < PT_PRELOAD_REJ_NR; r++)
			st->rejected[r] += p->cons.rejected[r];
		st->producer_dropped +=
			__atomic_load_n(&((const struct pt_preload_hdr *)p->ring)->dropped,
					__ATOMIC_RELAXED);
		st->trims += __atomic_load_n(&((const struct pt_preload_hdr *)p->ring)->trims,
					     __ATOMIC_RELAXED);
	}
}

void pt_preload_server_close(struct pt_preload_server *s)
{
	uint64_t rejected = 0;

	if (!s)
		return;
	while (s->npeers)
		peer_remove(s, s->peers[s->npeers - 1]);
	/* Every peer's counters are in s->st now: what this server did, for the log. */
	for (int i = 0; i < PT_PRELOAD_REJ_NR; i++)
		rejected += s->st.rejected[i];
	if (s->st.accepted_peers || s->st.rejected_peers || s->st.bad_hellos)
		pt_info("preload: %llu peers registered, %llu not opted in, %llu bad registrations; "
			"records: %llu taken, %llu rejected (size %llu, type %llu, flags %llu, "
			"range %llu, stalled %llu, foreign %llu), %llu throttled, %llu dropped by "
			"the peers (ring full); %llu doorbells, %llu malloc_trim calls",
			(unsigned long long)s->st.accepted_peers,
			(unsigned long long)s->st.rejected_peers,
			(unsigned long long)s->st.bad_hellos, (unsigned long long)s->st.records,
			(unsigned long long)rejected,
			(unsigned long long)s->st.rejected[PT_PRELOAD_REJ_SIZE],
			(unsigned long long)s->st.rejected[PT_PRELOAD_REJ_TYPE],
			(unsigned long long)s->st.rejected[PT_PRELOAD_REJ_FLAGS],
			(unsigned long long)s->st.rejected[PT_PRELOAD_REJ_RANGE],
			(unsigned long long)s->st.rejected[PT_PRELOAD_REJ_STALLED],
			(unsigned long long)s->st.rejected[PT_PRELOAD_REJ_FOREIGN],
			(unsigned long long)s->st.throttled,
			(unsigned long long)s->st.producer_dropped,
			(unsigned long long)s->st.doorbells, (unsigned long long)s->st.trims);
	if (s->st.refused || s->st.maps_reads || s->st.drain_cut)
		pt_info("preload: limits: %llu connections refused (%llu for their cgroup's pending "
			"slots), %llu registrations over a cgroup's cap, %llu identified by pidfd; "
			"maps: %llu rereads, %llu KiB, %llu refused by budget; %llu drains cut short",
			(unsigned long long)s->st.refused,
			(unsigned long long)s->st.refused_pending_cgroup,
			(unsigned long long)s->st.refused_cgroup_full,
			(unsigned long long)s->st.by_pidfd, (unsigned long long)s->st.maps_reads,
			(unsigned long long)(s->st.maps_bytes >> 10),
			(unsigned long long)s->st.maps_denied, (unsigned long long)s->st.drain_cut);
	free(s->peers);
	free(s->cgs);
	if (s->lsock >= 0) {
		close(s->lsock);
		unlink(s->path);
	}
	if (s->epfd >= 0)
		close(s->epfd);
	free(s);
}
