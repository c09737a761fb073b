// SPDX-License-Identifier: GPL-2.0
#include "advise_spawner.h"

#include <errno.h>
#include <linux/sched.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "advise_req.h"
#include "log.h"

/* Descriptors per message: SCM_MAX_FD is 253. */
#define PT_SPAWN_FDS 250
/* How long a request may wait for room in the spawner's queue before the caller forks. */
#define PT_SPAWN_SEND_TIMEOUT_MS 1000

enum { SPAWN_FIRST = 1, SPAWN_MORE = 2 };

struct spawn_msg {
	uint32_t magic;
	uint32_t kind;
	uint32_t n_pidfds;	/* SPAWN_FIRST: of the whole request; SPAWN_MORE: in this one */
	uint32_t pad;
};

static pthread_mutex_t spawner_lock = PTHREAD_MUTEX_INITIALIZER;
static int spawner_fd = -1;
static pid_t spawner_pid;

pid_t pt_spawner_pid(void)
{
	pid_t pid;

	pthread_mutex_lock(&spawner_lock);
	pid = spawner_fd >= 0 ? spawner_pid : 0;
	pthread_mutex_unlock(&spawner_lock);
	return pid;
}

/* --- the spawner process ------------------------------------------------------------ */

static void reap(int sig)
{
	int saved = errno;

	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	errno = saved;
}

/*
 * One message: its header into *@m, its descriptors appended to @fds (*@nfds so far, at
 * most @max; any beyond are closed). > 0, 0 at end of file (pagetierd closed its end),
 * -EPROTO for a malformed message, or another -errno.
 */
static ssize_t recv_msg(int sock, struct spawn_msg *m, int *fds, int *nfds, int max)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 253)];
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	ssize_t got;

	do
		got = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	if (got == 0)
		return 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		int k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*nfds < max)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	if (got != sizeof(*m) || m->magic != PT_ADVISE_REQ_MAGIC || (msg.msg_flags & MSG_CTRUNC))
		return -EPROTO;
	return got;
}

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * A child in the cgroup @cgdir from the start (clone3 with CLONE_INTO_CGROUP): no
 * migration, whose write lock on the cgroup threadgroup semaphore waits for an RCU grace
 * period. Where that is refused (processes cannot live in @cgdir itself, not a cgroup), a
 * plain fork, which joins @cgdir or a leaf below it later (pt_advise_as_reader()).
 * *@joined says which. The spawner has one thread and holds no lock here, so a raw clone3
 * leaves the child's C library consistent (what glibc's fork adds is for other threads'
 * locks); the child calls nothing that relies on its thread's cached id (raise, abort).
 */
static pid_t fork_into(const char *cgdir, bool *joined)
{
	int cgfd = open(cgdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	pid_t pid = -1;

	*joined = false;
	if (cgfd >= 0) {
		struct clone_args args = { .flags = CLONE_INTO_CGROUP,
					   .exit_signal = SIGCHLD,
					   .cgroup = (uint64_t)cgfd };

		pid = (pid_t)syscall(__NR_clone3, &args, sizeof(args));
		close(cgfd);
		if (pid >= 0) {
			*joined = true;
			return pid;
		}
	}
	return fork();
}

/*
 * One request (its descriptors in @fds: the memfd, the result pipe, then the pidfds):
 * decoded here, run by a reader forked into the container's cgroup, which writes the
 * result. The spawner keeps nothing of it.
 */
static void run_request(int sock, const int *fds, int nfds)
{
	struct pt_advise_req req;
	int64_t err = -EPROTO;
	void *buf = MAP_FAILED;
	struct stat st;
	int next = 0;
	bool joined;
	pid_t pid;

	if (fstat(fds[0], &st) == 0 && st.st_size > 0 && (size_t)st.st_size <= PT_ADVISE_REQ_MAX)
		buf = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fds[0], 0);
	if (buf == MAP_FAILED || pt_advise_req_decode(buf, (size_t)st.st_size, &req)) {
		if (buf != MAP_FAILED)
			munmap(buf, (size_t)st.st_size);
		goto answer;
	}
	for (int i = 0; i < req.n; i++)
		if (req.set[i].pidfd < 0)
			req.set[i].pidfd = next < nfds - 2 ? fds[2 + next++] : 0;
	if (next != nfds - 2 || req.n_pidfds != nfds - 2)
		goto done;
	pid = fork_into(req.cgdir, &joined);
	if (pid == 0) {
		struct pt_backing_queue queue = { 0 };
		int64_t sum;

		signal(SIGCHLD, SIG_DFL);
		close(sock);	/* its end is pagetierd's signal to the spawner */
		if (req.use_queue) {
			pt_backing_queue_open(&queue, "/sys/block", "/sys/class/block");
			queue.cgdir = req.queue_cgdir;
		}
		sum = pt_advise_as_reader(joined ? NULL : req.cgdir, req.set, req.n, req.advice,
					  req.use_queue ? &queue : NULL);
		if (write(fds[1], &sum, sizeof(sum)) != sizeof(sum))
			_exit(1);
		_exit(0);
	}
	err = pid < 0 ? -errno : 0;
done:
	pt_advise_req_free(&req);
	munmap(buf, (size_t)st.st_size);
answer:
	if (err && write(fds[1], &err, sizeof(err)) != sizeof(err))
		pt_debug("spawner: cannot answer a request");
}

static void serve(int sock)
{
	struct sigaction sa = { .sa_handler = reap, .sa_flags = SA_RESTART | SA_NOCLDSTOP };

	sigaction(SIGCHLD, &sa, NULL);
	for (;;) {
		int first[2 + PT_SPAWN_FDS], nfds = 0, want, *all;
		struct spawn_msg m;
		ssize_t got = recv_msg(sock, &m, first, &nfds, 2 + PT_SPAWN_FDS);

		/* End of file: pagetierd closed its end; any other error: the socket is gone. */
		if (got == 0 || (got < 0 && got != -EPROTO))
			_exit(0);
		if (got < 0 || m.kind != SPAWN_FIRST || nfds < 2 || m.n_pidfds > 1u << 20) {
			close_all(first, nfds);
			continue;
		}
		/* The first message counts every pidfd of the request; the rest follow. */
		want = 2 + (int)m.n_pidfds;
		all = nfds <= want ? malloc((size_t)want * sizeof(int)) : NULL;
		if (!all) {
			close_all(first, nfds);
			continue;
		}
		memcpy(all, first, (size_t)nfds * sizeof(int));
		while (nfds < want) {
			struct spawn_msg more;
			int k = 0;

			got = recv_msg(sock, &more, all + nfds, &k, want - nfds);
			nfds += k;
			if (got <= 0 || more.kind != SPAWN_MORE || !k)
				break;
		}
		if (nfds == want)
			run_request(sock, all, nfds);
		close_all(all, nfds);
		free(all);
		if (got == 0 || (got < 0 && got != -EPROTO))
			_exit(0);
	}
}

int pt_spawner_start(bool lock_memory)
{
	struct timeval tv = { .tv_sec = PT_SPAWN_SEND_TIMEOUT_MS / 1000,
			      .tv_usec = PT_SPAWN_SEND_TIMEOUT_MS % 1000 * 1000 };
	pid_t parent = getpid(), pid;
	struct rlimit nofile;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int rc = -errno;

		close(sv[0]);
		close(sv[1]);
		return rc;
	}
	if (pid == 0) {
		/* Nothing of the caller's but the standard streams and its end of the socket. */
		close(sv[0]);
		if (dup2(sv[1], 3) < 0)
			_exit(1);
		close_range(4, ~0U, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		prctl(PR_SET_NAME, "pt-spawner");
		signal(SIGINT, SIG_IGN);	/* a terminal's ^C is for pagetierd, which stops it */
		signal(SIGHUP, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);	/* a result nobody reads any more fails, no more */
		/* A request holds each of its processes' pidfds until its reader is forked. */
		if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
			nofile.rlim_cur = nofile.rlim_max;
			setrlimit(RLIMIT_NOFILE, &nofile);
		}
		if (lock_memory)
			mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT);
		serve(3);
	}
	close(sv[1]);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	pthread_mutex_lock(&spawner_lock);
	spawner_fd = sv[0];
	spawner_pid = pid;
	pthread_mutex_unlock(&spawner_lock);
	return 0;
}

/* --- pagetierd's side --------------------------------------------------------------- */

static int send_msg(int sock, uint32_t kind, uint32_t n_pidfds, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * (PT_SPAWN_FDS + 2))] = { 0 };
	struct spawn_msg m = { .magic = PT_ADVISE_REQ_MAGIC, .kind = kind, .n_pidfds = n_pidfds };
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t sent;

	if (nfds) {
		struct cmsghdr *c;

		msg.msg_control = cbuf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do
		sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	return sent == sizeof(m) ? 0 : sent < 0 ? -errno : -EIO;
}

/* The spawner is gone or stuck: stop using it (the callers fork the readers themselves). */
static void spawner_lost_locked(int err)
{
	int status;

	pt_warn("readahead spawner (pid %d): %s; wakes fork their file readers from pagetierd",
		(int)spawner_pid, strerror(-err));
	close(spawner_fd);
	spawner_fd = -1;
	if (waitpid(spawner_pid, &status, WNOHANG) == 0) {
		kill(spawner_pid, SIGKILL);
		waitpid(spawner_pid, &status, 0);
	}
	spawner_pid = 0;
}

int pt_spawner_request(const char *cgdir, const struct pt_proc_ranges *set, int n, int advice,
		       const struct pt_backing_queue *queue, int *result_fd)
{
	bool use_queue = queue && queue->n;
	const char *qdir = use_queue ? queue->cgdir : NULL;
	size_t sz = pt_advise_req_size(cgdir, set, n, qdir);
	int fds[PT_SPAWN_FDS + 2], pipefd[2] = { -1, -1 }, memfd = -1, npid = 0, rc;
	void *buf;
	int64_t len;

	*result_fd = -1;
	if (pt_spawner_pid() == 0)
		return -ENOTCONN;
	if (sz > PT_ADVISE_REQ_MAX)
		return -E2BIG;
	buf = malloc(sz);
	if (!buf)
		return -ENOMEM;
	len = pt_advise_req_encode(buf, sz, cgdir, set, n, advice, use_queue, qdir);
	rc = len < 0 ? (int)len : 0;
	if (!rc) {
		memfd = memfd_create("pt-advise", MFD_CLOEXEC);
		if (memfd < 0)
			rc = -errno;
		else if (write(memfd, buf, (size_t)len) != len)
			rc = -EIO;
	}
	free(buf);
	if (!rc && pipe2(pipefd, O_CLOEXEC))
		rc = -errno;
	for (int i = 0; i < n; i++)
		npid += set[i].pidfd > 0;
	pthread_mutex_lock(&spawner_lock);
	if (!rc && spawner_fd < 0)
		rc = -ENOTCONN;
	if (!rc) {
		int k = 0, i = 0;

		fds[k++] = memfd;
		fds[k++] = pipefd[1];
		/* The pidfds in list order, PT_SPAWN_FDS a message; the first has two more. */
		for (; i < n && k < PT_SPAWN_FDS + 2; i++)
			if (set[i].pidfd > 0)
				fds[k++] = set[i].pidfd;
		rc = send_msg(spawner_fd, SPAWN_FIRST, (uint32_t)npid, fds, k);
		while (!rc && i < n) {
			for (k = 0; i < n && k < PT_SPAWN_FDS; i++)
				if (set[i].pidfd > 0)
					fds[k++] = set[i].pidfd;
			if (k)
				rc = send_msg(spawner_fd, SPAWN_MORE, (uint32_t)k, fds, k);
		}
		/*
		 * A request cut short would leave the spawner waiting for the rest of it, and a
		 * queue full for a second means it no longer serves: either way it is lost.
		 */
		if (rc)
			spawner_lost_locked(rc);
	}
	pthread_mutex_unlock(&spawner_lock);
	if (memfd >= 0)
		close(memfd);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	if (rc) {
		if (pipefd[0] >= 0)
			close(pipefd[0]);
		return rc;
	}
	*result_fd = pipefd[0];
	return 0;
}

void pt_spawner_stop(void)
{
	int status;

	pthread_mutex_lock(&spawner_lock);
	if (spawner_fd >= 0) {
		close(spawner_fd);
		spawner_fd = -1;
		while (waitpid(spawner_pid, &status, 0) < 0 && errno == EINTR)
			;
		spawner_pid = 0;
	}
	pthread_mutex_unlock(&spawner_lock);
}
