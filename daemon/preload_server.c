// SPDX-License-Identifier: GPL-2.0
/*
 * The unix socket libpagetier.so registers with, and the rings it registers. Identity is the
 * kernel's (SO_PEERCRED, /proc/PID/cgroup), never the peer's: what a peer writes is only
 * records about its own memory, and those are validated by preload_decode.c.
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "preload_maps.h"

#define HELLO_TIMEOUT_NS (5 * 1000000000ULL)
#define MAX_FDS_IN_HELLO 4
#define MAX_PENDING_PER_PID 4	/* a process registers once; a few for exec races */

struct peer {
	int sock;
	pid_t pid;
	char *cgroup;
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
	unsigned int npending;		/* peers not registered yet */
	uint64_t ring_bytes;		/* mapped for all peers */
	bool listen_paused;		/* out of fds: not polling the listening socket */
	struct pt_preload_server_stats st;	/* rejected/records of peers already gone */
	/* While draining: the callback of the current call. */
	pt_preload_record_fn fn;
	void *fn_arg;
	struct peer *cur;
	uint64_t now;
	uint64_t maps_window_ns;	/* maps reads of all peers: this second's budget */
	unsigned int maps_reads;
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
	opts->max_peers_per_cgroup = 256;
	opts->max_ring_bytes = 256ULL << 20;
	pt_preload_default_limits(&opts->limits);
	opts->proc_root = "/proc";
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
	struct pt_preload_server *s;
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
	if (!s->opts.proc_root)
		s->opts.proc_root = "/proc";
	if (!s->opts.max_peers)
		s->opts.max_peers = 4096;
	if (!s->opts.max_pending)
		s->opts.max_pending = 64;
	if (!s->opts.max_peers_per_cgroup)
		s->opts.max_peers_per_cgroup = 256;
	if (!s->opts.max_ring_bytes)
		s->opts.max_ring_bytes = 256ULL << 20;
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
	if (!s->peers) {
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
	free(p->cgroup);
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

		n += o->registered && !o->gone && o->pid != p->pid &&
		     strcmp(o->cgroup, p->cgroup) == 0;
	}
	return n;
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
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct pollfd pfd;
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
	err = read_cgroup(s->opts.proc_root, p->pid, &p->cgroup);
	if (err)
		goto bad;
	/*
	 * The pid was read at connect time; if that process already exited, the pid may be
	 * someone else's now. Its end of the socket then is closed: check after reading.
	 */
	pfd = (struct pollfd){ .fd = p->sock, .events = POLLRDHUP };
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
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

/*
 * How many connections the process behind @fd has waiting for their hello. Its pid is the
 * kernel's (SO_PEERCRED at connect time); an unknown one counts as too many.
 */
static pid_t peer_pid(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ? 0 : cred.pid;
}

static unsigned int pending_of(const struct pt_preload_server *s, int fd)
{
	pid_t pid = peer_pid(fd);
	unsigned int n = 0;

	if (pid <= 0)
		return MAX_PENDING_PER_PID;
	for (unsigned int i = 0; i < s->npeers; i++)
		if (!s->peers[i]->registered && s->peers[i]->pid == pid)
			n++;
	return n;
}

static void accept_new(struct pt_preload_server *s)
{
	for (;;) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct peer *p;
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
		if (s->npeers >= s->opts.max_peers || s->npending >= s->opts.max_pending ||
		    pending_of(s, fd) >= MAX_PENDING_PER_PID) {
			s->st.refused++;
			close(fd);
			continue;
		}
		p = calloc(1, sizeof(*p));
		if (!p) {
			close(fd);
			return;
		}
		p->sock = fd;
		p->connected_ns = now_ns();
		p->pid = peer_pid(fd);	/* for pending_of(); read again, and checked, at hello */
		ev.data.ptr = p;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			free(p);
			continue;
		}
		s->peers[s->npeers++] = p;
		s->npending++;
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

static int deliver(const struct pt_preload_event *ev, void *arg)
{
	struct pt_preload_server *s = arg;
	struct peer *p = s->cur;
	uint64_t addr, len;

	if (named_range(ev, &addr, &len)) {
		uint64_t reads = p->maps.reloads;
		bool ok;

		if (s->now - s->maps_window_ns >= 1000000000ULL) {
			s->maps_window_ns = s->now;
			s->maps_reads = 0;
		}
		ok = pt_preload_maps_check(&p->maps, s->opts.proc_root, p->pid, addr, len, s->now,
					   s->maps_reads < PT_PRELOAD_MAPS_READS_PER_SEC);
		s->maps_reads += (unsigned int)(p->maps.reloads - reads);
		if (!ok)
			return 1 + PT_PRELOAD_REJ_FOREIGN;
	}
	s->delivered++;
	if (s->fn)
		s->fn(s->cur->pid, s->cur->cgroup, ev, s->fn_arg);
	return 0;
}

int pt_preload_server_drain(struct pt_preload_server *s, pt_preload_record_fn fn, void *arg)
{
	uint64_t now;
	int ret;

	pt_preload_server_accept(s);
	now = now_ns();
	s->now = now;
	s->fn = fn;
	s->fn_arg = arg;
	s->delivered = 0;
	for (unsigned int i = 0; i < s->npeers;) {
		struct peer *p = s->peers[i];

		if (!p->registered) {
			i++;
			continue;
		}
		s->cur = p;
		ret = pt_preload_consume(&p->cons, p->ring, now, deliver, s);
		if (ret > 0)
			__atomic_store_n(&p->ctl->tail, p->cons.tail, __ATOMIC_RELEASE);
		if (p->gone) {
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
	free(s->peers);
	if (s->lsock >= 0) {
		close(s->lsock);
		unlink(s->path);
	}
	if (s->epfd >= 0)
		close(s->epfd);
	free(s);
}
