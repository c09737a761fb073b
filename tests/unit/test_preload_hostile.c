// SPDX-License-Identifier: GPL-2.0
/*
 * The real preload server (daemon/preload_server.c) against hostile peers: garbage on the
 * socket, truncated and oversized registrations, impossible ring sizes, ring fds that are not
 * a sealed memfd or are too small, records out of bounds, a flood beyond the rate limit,
 * connection floods, and a peer naming another process's memory and pid. The server must
 * survive, count what it refused, and deliver (and so act on) nothing but records about the
 * peer's own memory, attributed to the pid the kernel gives (SO_PEERCRED).
 *
 * The test process is the server and, through its own connections, most of the peers; the
 * process whose memory is claimed, and a second registered peer, are forked children.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "pagetier/preload_ring.h"
#include "preload_maps.h"
#include "preload_server.h"

#define NSLOTS 64
#define RING_BYTES PT_PRELOAD_RING_BYTES(NSLOTS)
#define KERNEL_ADDR 0xffff888000000000ULL

struct got {
	pid_t pid;
	char cgroup[16];
	struct pt_preload_event ev;
};

static struct {
	char dir[64], path[128];
	char *proc;			/* a fake /proc (the budget tests), or NULL */
	struct pt_preload_server *s;
	struct got got[4096];
	unsigned int ngot;
	unsigned int peers_up;
} T;

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static bool optin_all(pid_t pid, const char *cgroup, void *arg)
{
	(void)pid;
	(void)cgroup;
	(void)arg;
	return true;
}

static void on_peer(pid_t pid, const char *cgroup, bool up, void *arg)
{
	(void)pid;
	(void)cgroup;
	(void)arg;
	if (up)
		T.peers_up++;
}

static void on_record(pid_t pid, const char *cgroup, const struct pt_preload_event *ev,
		      void *arg)
{
	(void)arg;
	if (T.ngot < sizeof(T.got) / sizeof(T.got[0])) {
		T.got[T.ngot] = (struct got){ .pid = pid, .ev = *ev };
		snprintf(T.got[T.ngot++].cgroup, sizeof(T.got[0].cgroup), "%s", cgroup);
	}
}

/* Runs the server's event handling for @ms milliseconds, as pagetierd's loop would. */
static void pump(unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	do {
		struct pollfd pfd = { pt_preload_server_fd(T.s), POLLIN, 0 };

		poll(&pfd, 1, 5);
		pt_preload_server_accept(T.s);
		pt_preload_server_drain(T.s, on_record, NULL);
	} while (now_ms() < end);
}

static struct pt_preload_server_stats stats(void)
{
	struct pt_preload_server_stats st;

	pt_preload_server_stats(T.s, &st);
	return st;
}

static void test_opts(struct pt_preload_server_opts *opts)
{
	memset(&T, 0, sizeof(T));
	snprintf(T.dir, sizeof(T.dir), "/tmp/pagetier-hostile-XXXXXX");
	assert_non_null(mkdtemp(T.dir));
	snprintf(T.path, sizeof(T.path), "%s/preload.sock", T.dir);
	pt_preload_server_default_opts(opts);
	opts->on_peer = on_peer;
	opts->limits.max_per_sec = 2000;	/* the flood test's budget */
	opts->max_pending = 16;
	opts->max_peers_per_cgroup = 4;		/* the fork-flood test's cap */
}

static int setup(void **state)
{
	struct pt_preload_server_opts opts;

	(void)state;
	test_opts(&opts);
	assert_int_equal(pt_preload_server_open(&T.s, T.path, &opts, optin_all, NULL), 0);
	return 0;
}

/* Puts process @pid in cgroup @cg of the fake /proc. */
static void fake_cgroup(pid_t pid, const char *cg)
{
	char rel[64], text[64];

	snprintf(rel, sizeof(rel), "%d/cgroup", (int)pid);
	snprintf(text, sizeof(text), "0::%s\n", cg);
	fx_write(T.proc, rel, text);
}

/*
 * The server reads the peers' cgroups and maps from a fake /proc, so that they can be in
 * several cgroups; this process is in /self. Budgets tight enough to be reached in a test.
 */
static int fake_proc_server(int (*peer_pidfd)(int sock))
{
	struct pt_preload_server_opts opts;

	test_opts(&opts);
	opts.peer_pidfd = peer_pidfd;
	T.proc = fx_tmpdir();
	fake_cgroup(getpid(), "/self");
	opts.proc_root = T.proc;
	opts.max_pending_per_cgroup = 4;
	opts.max_peers_per_cgroup = 16;
	opts.max_records_per_drain = 100;
	opts.max_records_per_drain_per_cgroup = 40;
	opts.maps_reads_per_sec_per_cgroup = 8;
	opts.maps_bytes_per_sec_per_cgroup = 1 << 20;
	assert_int_equal(pt_preload_server_open(&T.s, T.path, &opts, optin_all, NULL), 0);
	return 0;
}

static int setup_fake_proc(void **state)
{
	(void)state;
	return fake_proc_server(NULL);
}

static int teardown(void **state)
{
	(void)state;
	pt_preload_server_close(T.s);
	rmdir(T.dir);
	if (T.proc)
		fx_rmtree(T.proc);
	return 0;
}

static int connect_sock(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	strcpy(sa.sun_path, T.path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* A ring as the library makes it: sealed memfd, header filled. */
struct ring {
	int fd;
	void *mem;
	struct pt_preload_ring p;	/* libpagetier.so's producer (pagetier/preload_ring.h) */
};

static struct ring ring_new(uint64_t bytes, bool seal)
{
	struct ring r;

	r.fd = memfd_create("hostile-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(r.fd >= 0);
	assert_int_equal(ftruncate(r.fd, (off_t)bytes), 0);
	r.mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
	assert_true(r.mem != MAP_FAILED);
	pt_preload_ring_init(&r.p, r.mem, NSLOTS);
	if (bytes < RING_BYTES) {
		/* Too small for a ring (a hostile registration): only the header is there. */
		r.p.ctl = NULL;
		r.p.slots = NULL;
	}
	r.p.hdr->sample_shift = 10;
	r.p.hdr->big_threshold = 65536;
	if (seal)
		assert_int_equal(fcntl(r.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	return r;
}

static void ring_free(struct ring *r, uint64_t bytes)
{
	munmap(r->mem, bytes);
	if (r->fd >= 0)
		close(r->fd);
}

/* Sends @len bytes of @buf with @nfds fds attached (no fds if @nfds is 0). */
static void send_with_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { (void *)buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	memset(&cbuf, 0, sizeof(cbuf));
	if (nfds) {
		msg.msg_control = cbuf.b;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	assert_int_equal(sendmsg(sock, &msg, MSG_NOSIGNAL), (ssize_t)len);
}

static struct pt_preload_hello hello_of(uint64_t ring_bytes)
{
	return (struct pt_preload_hello){ .magic = PT_PRELOAD_MAGIC,
					  .version = PT_PRELOAD_VERSION,
					  .size = sizeof(struct pt_preload_hello),
					  .ring_bytes = ring_bytes };
}

/* The server's one-byte answer, or 0 if it closed without one. */
static char answer(int sock)
{
	struct pollfd pfd = { sock, POLLIN, 0 };
	char c = 0;

	for (int i = 0; i < 100 && poll(&pfd, 1, 0) == 0; i++)
		pump(10);
	if (recv(sock, &c, 1, MSG_DONTWAIT) != 1)
		return 0;
	return c;
}

/* Registers @r over a new connection; returns the socket (the answer is checked). */
static int register_ring(struct ring *r)
{
	struct pt_preload_hello h = hello_of(RING_BYTES);
	int sock = connect_sock();

	send_with_fds(sock, &h, sizeof(h), &r->fd, 1);
	assert_int_equal(answer(sock), PT_PRELOAD_ACCEPT);
	return sock;
}

/* One hostile registration: sends @buf with @fds, expects it refused and counted. */
static void expect_bad_hello(const char *what, const void *buf, size_t len, const int *fds,
			     int nfds)
{
	uint64_t bad = stats().bad_hellos, acc = stats().accepted_peers;
	int sock = connect_sock();
	char c;

	send_with_fds(sock, buf, len, fds, nfds);
	c = answer(sock);
	if (c == PT_PRELOAD_ACCEPT)
		fail_msg("%s: accepted", what);
	pump(20);
	if (stats().bad_hellos != bad + 1)
		fail_msg("%s: bad_hellos %llu -> %llu", what, (unsigned long long)bad,
			 (unsigned long long)stats().bad_hellos);
	assert_int_equal(stats().accepted_peers, acc);
	close(sock);
}

static void test_garbage_and_malformed_hellos(void **state)
{
	struct ring r = ring_new(RING_BYTES, true);
	struct pt_preload_hello h = hello_of(RING_BYTES);
	char garbage[200], big[sizeof(h) + 16];
	int two[2] = { r.fd, r.fd };

	(void)state;
	srand(1);
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (char)rand();
	expect_bad_hello("garbage, no fd", garbage, sizeof(garbage), NULL, 0);
	expect_bad_hello("garbage with a ring fd", garbage, sizeof(garbage), &r.fd, 1);
	expect_bad_hello("truncated hello", &h, sizeof(h) / 2, &r.fd, 1);
	memcpy(big, &h, sizeof(h));
	memset(big + sizeof(h), 'W', sizeof(big) - sizeof(h));
	expect_bad_hello("oversized hello (trailing bytes)", big, sizeof(big), &r.fd, 1);
	expect_bad_hello("hello without fd", &h, sizeof(h), NULL, 0);
	expect_bad_hello("hello with two fds", &h, sizeof(h), two, 2);
	h.size = sizeof(h) + 8;
	expect_bad_hello("hello claiming a bigger size", &h, sizeof(h), &r.fd, 1);
	h = hello_of(RING_BYTES);
	h.version = 99;
	expect_bad_hello("unknown version", &h, sizeof(h), &r.fd, 1);
	assert_int_equal(stats().peers, 0);
	ring_free(&r, RING_BYTES);
}

static void test_impossible_ring_sizes(void **state)
{
	static const uint64_t sizes[] = {
		0, 1, 4096, RING_BYTES - 64, RING_BYTES + 64, PT_PRELOAD_RING_BYTES(96),
		PT_PRELOAD_RING_BYTES(PT_PRELOAD_MAX_SLOTS * 2ULL), 1ULL << 63,
		(uint64_t)-1, (uint64_t)-RING_BYTES,
	};
	struct ring r = ring_new(RING_BYTES, true);

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct pt_preload_hello h = hello_of(sizes[i]);
		char what[64];

		snprintf(what, sizeof(what), "ring_bytes %llu", (unsigned long long)sizes[i]);
		expect_bad_hello(what, &h, sizeof(h), &r.fd, 1);
	}
	ring_free(&r, RING_BYTES);
}

static void test_ring_fds_that_are_not_a_sealed_memfd(void **state)
{
	struct pt_preload_hello h = hello_of(RING_BYTES);
	struct ring unsealed = ring_new(RING_BYTES, false);
	struct ring small = ring_new(4096, true);
	struct ring lying = ring_new(RING_BYTES, true);
	struct ring wseal = ring_new(RING_BYTES, true);
	char file[96];
	int pipefd[2], zero, reg, ro;

	(void)state;
	expect_bad_hello("memfd that may shrink (no seals)", &h, sizeof(h), &unsealed.fd, 1);
	expect_bad_hello("memfd smaller than ring_bytes", &h, sizeof(h), &small.fd, 1);
	lying.p.hdr->nslots = NSLOTS * 2;	/* header disagrees with the file */
	expect_bad_hello("header nslots beyond the file", &h, sizeof(h), &lying.fd, 1);
	lying.p.hdr->nslots = NSLOTS;
	lying.p.hdr->magic = 0;
	expect_bad_hello("header magic wrong", &h, sizeof(h), &lying.fd, 1);
	/* We could not write the control page: refused, not a crash. */
	assert_int_equal(fcntl(wseal.fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), 0);
	expect_bad_hello("memfd sealed against writes", &h, sizeof(h), &wseal.fd, 1);

	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	expect_bad_hello("a pipe", &h, sizeof(h), &pipefd[0], 1);
	zero = open("/dev/zero", O_RDWR | O_CLOEXEC);
	assert_true(zero >= 0);
	expect_bad_hello("/dev/zero", &h, sizeof(h), &zero, 1);
	snprintf(file, sizeof(file), "%s/plainfile", T.dir);
	reg = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(reg >= 0);
	assert_int_equal(ftruncate(reg, RING_BYTES), 0);
	expect_bad_hello("a regular file of the right size", &h, sizeof(h), &reg, 1);
	ro = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	expect_bad_hello("an executable", &h, sizeof(h), &ro, 1);
	close(pipefd[0]);
	close(pipefd[1]);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pipefd), 0);
	expect_bad_hello("a socket", &h, sizeof(h), &pipefd[0], 1);
	close(pipefd[0]);
	close(pipefd[1]);
	close(zero);
	close(reg);
	close(ro);
	unlink(file);
	ring_free(&unsealed, RING_BYTES);
	ring_free(&small, 4096);
	ring_free(&lying, RING_BYTES);
	ring_free(&wseal, RING_BYTES);
	assert_int_equal(stats().peers, 0);
}

/*
 * Publishes one record in @r with the library's producer, claiming to be @size bytes long
 * (a hostile peer may say anything there).
 */
static void put(struct ring *r, uint16_t type, uint16_t size, uint16_t flags, uint32_t tid,
		uint64_t addr, uint64_t len, uint64_t addr2, uint64_t len2)
{
	struct pt_preload_rec *s;
	uint64_t pos;

	assert_true(pt_preload_ring_claim(&r->p, 1, &pos));
	s = pt_preload_ring_fill(&r->p, pos, tid, type, flags, addr, len, addr2, len2);
	s->size = size;
	pt_preload_ring_publish(s, pos);
}

/* Until the server has consumed everything published in @r. */
static void drain_all(struct ring *r)
{
	for (int i = 0; i < 200 && __atomic_load_n(&r->p.ctl->tail, __ATOMIC_ACQUIRE) <
				   r->p.hdr->reserve; i++)
		pump(10);
	assert_int_equal(__atomic_load_n(&r->p.ctl->tail, __ATOMIC_ACQUIRE), r->p.hdr->reserve);
}

static bool got_addr(uint64_t lo, uint64_t hi)
{
	for (unsigned int i = 0; i < T.ngot; i++)
		if ((T.got[i].ev.addr >= lo && T.got[i].ev.addr < hi) ||
		    (T.got[i].ev.addr2 >= lo && T.got[i].ev.addr2 < hi))
			return true;
	return false;
}

static void test_records_out_of_bounds(void **state)
{
	struct ring r = ring_new(RING_BYTES, true);
	const uint16_t sz = sizeof(struct pt_preload_rec);
	struct pt_preload_server_stats st;
	uint64_t rej = 0;
	void *mine = malloc(4096);
	int sock;

	(void)state;
	sock = register_ring(&r);
	put(&r, PT_PRELOAD_REC_ALLOC, sz, 0, 1, KERNEL_ADDR, 4096, 0, 0);
	put(&r, PT_PRELOAD_REC_ALLOC, sz, 0, 1, 0, 4096, 0, 0);
	put(&r, PT_PRELOAD_REC_ALLOC, sz, 0, 1, (uintptr_t)mine, 0, 0, 0);
	put(&r, PT_PRELOAD_REC_FREE, sz, 0, 1, 0x7fff00000000ULL, UINT64_MAX - 4096, 0, 0);
	put(&r, PT_PRELOAD_REC_MMAP, sz, 0, 1, (uintptr_t)mine + 1, 4096, 3, 0x22);
	put(&r, PT_PRELOAD_REC_MREMAP, sz, 0, 1, 0x10000, 4096, KERNEL_ADDR, 8192);
	put(&r, PT_PRELOAD_REC_MUNMAP, sz, 0, 1, PT_PRELOAD_USER_END, 4096, 0, 0);
	put(&r, PT_PRELOAD_REC_ALLOC, sz / 2, 0, 1, (uintptr_t)mine, 16, 0, 0);	/* truncated */
	put(&r, PT_PRELOAD_REC_ALLOC, 4096, 0, 1, (uintptr_t)mine, 16, 0, 0);	/* oversized */
	put(&r, 77, sz, 0, 1, (uintptr_t)mine, 16, 0, 0);
	put(&r, PT_PRELOAD_REC_HEARTBEAT, sz, PT_PRELOAD_F_BIG, 1, 0, 1, 0, 0);
	drain_all(&r);
	st = stats();
	for (int i = 0; i < PT_PRELOAD_REJ_NR; i++)
		rej += st.rejected[i];
	assert_int_equal(rej, 11);
	assert_int_equal(st.rejected[PT_PRELOAD_REJ_RANGE], 7);
	assert_int_equal(st.rejected[PT_PRELOAD_REJ_SIZE], 2);
	assert_int_equal(st.rejected[PT_PRELOAD_REJ_TYPE], 1);
	assert_int_equal(st.rejected[PT_PRELOAD_REJ_FLAGS], 1);
	assert_int_equal(T.ngot, 0);
	/* The peer is still served: a valid record about its own memory goes through. */
	put(&r, PT_PRELOAD_REC_ALLOC, sz, PT_PRELOAD_F_SAMPLED, 1, (uintptr_t)mine, 4096, 0, 0);
	drain_all(&r);
	assert_int_equal(T.ngot, 1);
	assert_int_equal(T.got[0].pid, getpid());
	close(sock);
	free(mine);
	pump(20);
	ring_free(&r, RING_BYTES);
}

/*
 * A child that maps memory the parent does not have, says where, and waits. At a fixed
 * address far from everything (mmap's top-down area, ASan's allocator and shadow), so that
 * nothing the parent maps afterwards can land there by chance.
 */
#define VICTIM_ADDR 0x3e0000000000ULL
static pid_t victim(uint64_t *addr, uint64_t len, int *release)
{
	int up[2], down[2];
	pid_t pid;

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		void *m = mmap((void *)(uintptr_t)VICTIM_ADDR, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		uint64_t a = (uintptr_t)m;

		alarm(60);	/* never outlive a failed test */
		close(up[0]);
		close(down[1]);	/* or its read below would never see EOF */
		if (m == MAP_FAILED)
			_exit(1);
		memset(m, 1, len);
		if (write(up[1], &a, sizeof(a)) != sizeof(a))
			_exit(1);
		(void)!read(down[0], &c, 1);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], addr, sizeof(*addr)), sizeof(*addr));
	close(up[0]);
	*release = down[1];
	return pid;
}

static void test_claims_on_another_process(void **state)
{
	struct ring r = ring_new(RING_BYTES, true);
	const uint16_t sz = sizeof(struct pt_preload_rec);
	const uint64_t vlen = 1 << 20;
	uint64_t vaddr, foreign;
	void *mine = malloc(256);
	int release, sock, status;
	pid_t v;

	(void)state;
	v = victim(&vaddr, vlen, &release);
	/* Its mapping must not exist in ours, or the test proves nothing. */
	assert_int_equal(msync((void *)(uintptr_t)vaddr, 4096, MS_ASYNC), -1);
	sock = register_ring(&r);
	/* Everything a peer can claim: the victim's tid, its addresses, big and mapped. */
	put(&r, PT_PRELOAD_REC_ALLOC, sz, PT_PRELOAD_F_BIG, (uint32_t)v, vaddr, vlen, 0, 0);
	put(&r, PT_PRELOAD_REC_MMAP, sz, 0, (uint32_t)v, vaddr, vlen, 3, 0x22);
	put(&r, PT_PRELOAD_REC_MREMAP, sz, 0, (uint32_t)v, 0x10000, 4096, vaddr, vlen);
	put(&r, PT_PRELOAD_REC_ALLOC, sz, PT_PRELOAD_F_SAMPLED, (uint32_t)v, vaddr + 64, 64, 0, 0);
	/* Straddling: starts in our memory, runs past the end of 47-bit user space. */
	put(&r, PT_PRELOAD_REC_ALLOC, sz, PT_PRELOAD_F_BIG, (uint32_t)v, (uintptr_t)mine,
	    1ULL << 47, 0, 0);
	put(&r, PT_PRELOAD_REC_ALLOC, sz, PT_PRELOAD_F_SAMPLED, (uint32_t)v, (uintptr_t)mine, 256,
	    0, 0);
	drain_all(&r);
	assert_int_equal(msync((void *)(uintptr_t)vaddr, 4096, MS_ASYNC), -1);
	foreign = stats().rejected[PT_PRELOAD_REJ_FOREIGN];
	assert_int_equal(foreign, 5);
	assert_false(got_addr(vaddr, vaddr + vlen));
	assert_int_equal(T.ngot, 1);
	assert_int_equal(T.got[0].ev.addr, (uintptr_t)mine);
	/* Attributed to the kernel's pid of the peer, whatever tid it wrote. */
	assert_int_equal(T.got[0].pid, getpid());
	/* A request for the victim does not reach the peer that claimed to be it. */
	assert_int_equal(pt_preload_server_request_trim(T.s, v), -ENOENT);
	assert_int_equal(pt_preload_server_arm_wake(T.s, v), -ENOENT);
	assert_int_equal(__atomic_load_n(&r.p.ctl->trim_seq, __ATOMIC_ACQUIRE), 0);
	assert_int_equal(__atomic_load_n(&r.p.ctl->req_seq, __ATOMIC_ACQUIRE), 0);
	assert_int_equal(pt_preload_server_request_trim(T.s, getpid()), 0);
	assert_int_equal(__atomic_load_n(&r.p.ctl->trim_seq, __ATOMIC_ACQUIRE), 1);
	assert_int_equal(__atomic_load_n(&r.p.ctl->req_word, __ATOMIC_ACQUIRE), 1);
	close(release);
	assert_int_equal(waitpid(v, &status, 0), v);
	close(sock);
	free(mine);
	pump(20);
	ring_free(&r, RING_BYTES);
}

static void test_flood_beyond_rate_limit(void **state)
{
	struct ring r = ring_new(RING_BYTES, true);
	const uint16_t sz = sizeof(struct pt_preload_rec);
	void *mine = malloc(64);
	uint64_t start = now_ms(), produced = 0, elapsed;
	struct pt_preload_server_stats st;
	int sock;

	(void)state;
	sock = register_ring(&r);
	/* 1.5 s of a producer that writes whenever there is room: far beyond 2000/s. */
	while (now_ms() - start < 1500) {
		while (r.p.hdr->reserve - __atomic_load_n(&r.p.ctl->tail, __ATOMIC_ACQUIRE) < NSLOTS) {
			put(&r, PT_PRELOAD_REC_ALLOC, sz, PT_PRELOAD_F_SAMPLED, 1,
			    (uintptr_t)mine, 64, 0, 0);
			produced++;
		}
		pump(2);
	}
	elapsed = now_ms() - start;
	st = stats();
	print_message("# flood: %llu produced, %u delivered in %llu ms, %llu drains throttled\n",
		      (unsigned long long)produced, T.ngot, (unsigned long long)elapsed,
		      (unsigned long long)st.throttled);
	assert_true(st.throttled > 0);
	/* At most max_per_sec per started second of the window. */
	assert_true(T.ngot <= 2000 * (elapsed / 1000 + 1));
	assert_true(T.ngot >= 2000);
	assert_true(produced > T.ngot);
	close(sock);
	free(mine);
	pump(20);
	ring_free(&r, RING_BYTES);
}

static void test_connection_flood_and_replaced_rings(void **state)
{
	struct ring a = ring_new(RING_BYTES, true), b = ring_new(RING_BYTES, true);
	int socks[40], sa, sb, status;
	struct pt_preload_server_stats st;
	pid_t child;

	(void)state;
	/* Connections that never say hello: a few are held, the rest refused at once. */
	for (int i = 0; i < 40; i++)
		socks[i] = connect_sock();
	pump(50);
	st = stats();
	assert_true(st.refused >= 36);
	/* Another process still gets in while those wait. */
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct ring c = ring_new(RING_BYTES, true);
		struct pt_preload_hello h = hello_of(RING_BYTES);
		struct sockaddr_un un = { .sun_family = AF_UNIX };
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		char ch = 0;

		strcpy(un.sun_path, T.path);
		if (connect(s, (struct sockaddr *)&un, sizeof(un)) < 0)
			_exit(2);
		send_with_fds(s, &h, sizeof(h), &c.fd, 1);
		_exit(recv(s, &ch, 1, 0) == 1 && ch == PT_PRELOAD_ACCEPT ? 0 : 1);
	}
	for (int i = 0; i < 100 && waitpid(child, &status, WNOHANG) == 0; i++)
		pump(10);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (int i = 0; i < 40; i++)
		close(socks[i]);
	pump(20);
	/* One ring per process: a second registration replaces the first. */
	sa = register_ring(&a);
	sb = register_ring(&b);
	pump(20);
	st = stats();
	assert_int_equal(st.replaced, 1);
	assert_int_equal(st.peers, 1);
	close(sa);
	close(sb);
	pump(20);
	ring_free(&a, RING_BYTES);
	ring_free(&b, RING_BYTES);
}

/*
 * A child that registers a ring and holds it until the parent closes @hold[1]; it exits 0
 * if it was accepted, 1 if refused.
 */
static pid_t child_registers(const int hold[2])
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct ring c = ring_new(RING_BYTES, true);
		struct pt_preload_hello h = hello_of(RING_BYTES);
		struct sockaddr_un un = { .sun_family = AF_UNIX };
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		char ch = 0;

		alarm(60);		/* never outlive a failed test */
		close(hold[1]);		/* or its read below would never see EOF */
		strcpy(un.sun_path, T.path);
		if (connect(s, (struct sockaddr *)&un, sizeof(un)) < 0)
			_exit(2);
		send_with_fds(s, &h, sizeof(h), &c.fd, 1);
		if (recv(s, &ch, 1, 0) != 1 || ch != PT_PRELOAD_ACCEPT)
			_exit(1);
		(void)!read(hold[0], &ch, 1);
		_exit(0);
	}
	return pid;
}

/* Waits for @pid, pumping the server meanwhile; returns its exit status. */
static int wait_child(pid_t pid)
{
	int status = 0;
	pid_t r = 0;

	for (int i = 0; i < 500 && (r = waitpid(pid, &status, WNOHANG)) == 0; i++)
		pump(10);
	if (r == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("child %d did not exit", (int)pid);
	}
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* Descriptors this process holds (the server's sockets among them). */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3;	/* ".", "..", and the directory's own fd */
}

/*
 * One container forking registering processes takes at most max_peers_per_cgroup peer
 * slots (and fds): the next ones are refused, counted, and get in again once some leave.
 */
#define FORK_FLOOD 12	/* below max_pending: every one gets to register */
static void test_fork_flood_capped_per_cgroup(void **state)
{
	int hold[2], fds0, ok = 0, refused = 0, hold2[2];
	pid_t kids[FORK_FLOOD], extra;
	struct pt_preload_server_stats st;

	(void)state;
	assert_int_equal(pipe(hold), 0);
	fds0 = open_fds();
	for (int i = 0; i < FORK_FLOOD; i++)
		kids[i] = child_registers(hold);
	for (int i = 0; i < 500; i++) {
		st = stats();
		if (st.accepted_peers + st.refused_cgroup_full >= FORK_FLOOD)
			break;
		pump(10);
	}
	pump(20);
	st = stats();
	print_message("# fork flood: %d processes of one cgroup: %u peers registered, %d fds "
		      "held by the server (%llu pidfds), %llu refused (cap %d)\n", FORK_FLOOD,
		      st.peers, open_fds() - fds0, (unsigned long long)st.by_pidfd,
		      (unsigned long long)st.refused_cgroup_full, 4);
	assert_int_equal(st.peers, 4);
	/* A socket each, and a pidfd each where the kernel has SO_PEERPIDFD. */
	assert_int_equal(open_fds() - fds0, 4 + st.by_pidfd);
	assert_int_equal(st.refused_cgroup_full, FORK_FLOOD - 4);
	close(hold[1]);					/* they all leave */
	fds0--;
	for (int i = 0; i < FORK_FLOOD; i++) {
		int rc = wait_child(kids[i]);

		ok += rc == 0;
		refused += rc == 1;
	}
	assert_int_equal(ok, 4);
	assert_int_equal(refused, FORK_FLOOD - 4);
	pump(50);
	assert_int_equal(stats().peers, 0);
	assert_int_equal(open_fds() - fds0, 0);
	assert_int_equal(pipe(hold2), 0);
	extra = child_registers(hold2);
	for (int i = 0; i < 100 && stats().accepted_peers < 5; i++)
		pump(10);
	assert_int_equal(stats().accepted_peers, 5);	/* room again */
	close(hold2[1]);
	assert_int_equal(wait_child(extra), 0);
	close(hold2[0]);
	close(hold[0]);
}

/* What a child of spawn_kid() does. */
enum kid_mode {
	KID_REGISTER,		/* registers a ring with records already in it, and holds it */
	KID_SILENT,		/* opens two connections and never says hello */
};

/*
 * A child in cgroup @cg of the fake /proc, holding what it made until the parent closes
 * @hold[1]. It exits 0 when done (1: its registration was refused).
 */
static pid_t spawn_kid(const char *cg, enum kid_mode mode, int nrec, const int hold[2])
{
	int go[2];
	pid_t pid;
	char ch = 0;

	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ring c = ring_new(RING_BYTES, true);
		struct pt_preload_hello h = hello_of(RING_BYTES);
		struct sockaddr_un un = { .sun_family = AF_UNIX };
		int s1 = socket(AF_UNIX, SOCK_STREAM, 0), s2 = socket(AF_UNIX, SOCK_STREAM, 0);

		alarm(60);
		close(hold[1]);
		close(go[1]);
		if (read(go[0], &ch, 1) != 1)	/* until it is in the fake /proc */
			_exit(3);
		for (int i = 0; i < nrec; i++)
			put(&c, PT_PRELOAD_REC_HEARTBEAT, sizeof(struct pt_preload_rec), 0, 1, 0, 1,
			    0, 0);
		strcpy(un.sun_path, T.path);
		if (connect(s1, (struct sockaddr *)&un, sizeof(un)) < 0)
			_exit(2);
		if (mode == KID_SILENT) {
			if (connect(s2, (struct sockaddr *)&un, sizeof(un)) < 0)
				_exit(2);
		} else {
			send_with_fds(s1, &h, sizeof(h), &c.fd, 1);
			if (recv(s1, &ch, 1, 0) != 1 || ch != PT_PRELOAD_ACCEPT)
				_exit(1);
		}
		(void)!read(hold[0], &ch, 1);
		_exit(0);
	}
	close(go[0]);
	fake_cgroup(pid, cg);
	assert_int_equal(write(go[1], &ch, 1), 1);
	close(go[1]);
	return pid;
}

/* Accepts connections and registrations, without draining, until @n peers registered. */
static void accept_until(unsigned int n)
{
	for (int i = 0; i < 500 && stats().peers < n; i++) {
		struct pollfd pfd = { pt_preload_server_fd(T.s), POLLIN, 0 };

		poll(&pfd, 1, 10);
		pt_preload_server_accept(T.s);
	}
	assert_int_equal(stats().peers, n);
}

static unsigned int got_of(const char *cg)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < T.ngot; i++)
		n += strcmp(T.got[i].cgroup, cg) == 0;
	return n;
}

/*
 * Many peers with full rings: one drain (one tick of the event loop) consumes at most
 * max_records_per_drain (100) of them all, and at most max_records_per_drain_per_cgroup (40)
 * of one cgroup's; the others wait in their rings, and none is lost.
 */
static void test_records_budget_across_peers(void **state)
{
	int hold[2];
	pid_t kids[3];
	int n;

	(void)state;
	assert_int_equal(pipe(hold), 0);
	kids[0] = spawn_kid("/a", KID_REGISTER, NSLOTS, hold);
	kids[1] = spawn_kid("/a", KID_REGISTER, NSLOTS, hold);
	kids[2] = spawn_kid("/b", KID_REGISTER, NSLOTS, hold);
	accept_until(3);
	n = pt_preload_server_drain(T.s, on_record, NULL);
	print_message("# one drain of 3 peers with %d records each: %d delivered (/a %u, /b %u)\n",
		      NSLOTS, n, got_of("/a"), got_of("/b"));
	assert_int_equal(got_of("/a"), 40);
	assert_int_equal(got_of("/b"), 40);
	assert_int_equal(n, 80);
	for (int i = 0; i < 20 && T.ngot < 3 * NSLOTS; i++)
		pt_preload_server_drain(T.s, on_record, NULL);
	assert_int_equal(got_of("/a"), 2 * NSLOTS);
	assert_int_equal(got_of("/b"), NSLOTS);
	assert_true(stats().drain_cut > 0);
	close(hold[1]);
	for (int i = 0; i < 3; i++)
		assert_int_equal(wait_child(kids[i]), 0);
	close(hold[0]);
}

/*
 * Processes of one cgroup holding connections that never say hello take at most
 * max_pending_per_cgroup (4) pending slots: a process of another container still registers.
 * Before, 8 processes with 2 connections each held all 16.
 */
static void test_pending_slots_per_cgroup(void **state)
{
	int hold[2];
	pid_t kids[8], other;

	(void)state;
	assert_int_equal(pipe(hold), 0);
	for (int i = 0; i < 8; i++)
		kids[i] = spawn_kid("/a", KID_SILENT, 0, hold);
	for (int i = 0; i < 200 && stats().refused < 12; i++)
		pump(10);
	print_message("# 8 processes of /a, 2 silent connections each: %llu refused, %llu of "
		      "them for their cgroup\n", (unsigned long long)stats().refused,
		      (unsigned long long)stats().refused_pending_cgroup);
	other = spawn_kid("/b", KID_REGISTER, 0, hold);
	accept_until(1);
	assert_int_equal(stats().refused_pending_cgroup, 12);
	close(hold[1]);
	assert_int_equal(wait_child(other), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(wait_child(kids[i]), 0);
	close(hold[0]);
}

/* A fake maps file for this process of about @bytes, none of it covering 0x10000. */
static void fake_maps(size_t bytes)
{
	char rel[32], line[160], *text = malloc(bytes + sizeof(line));
	size_t len = 0;

	assert_non_null(text);
	for (uint64_t a = 0x7f0000000000ULL; len < bytes; a += 0x2000) {
		int n = snprintf(line, sizeof(line), "%llx-%llx rw-p 00000000 00:00 0    "
				 "/a/file/with/a/long/name/to/make/the/maps/file/long\n",
				 (unsigned long long)a, (unsigned long long)a + 0x1000);

		memcpy(text + len, line, (size_t)n + 1);
		len += (size_t)n;
	}
	snprintf(rel, sizeof(rel), "%d/maps", (int)getpid());
	fx_write(T.proc, rel, text);
	free(text);
}

/*
 * A peer whose records name memory it does not have makes the server reread its maps on
 * every miss; a huge maps file makes each reread long. Its cgroup's rereads stay within
 * maps_reads_per_sec_per_cgroup (8) and maps_bytes_per_sec_per_cgroup (1 MiB) per second.
 */
static void test_maps_budget_per_cgroup(void **state)
{
	struct ring r = ring_new(RING_BYTES, true);
	const uint16_t sz = sizeof(struct pt_preload_rec);
	struct pt_preload_server_stats st;
	uint64_t start, elapsed, secs;
	int sock;

	(void)state;
	fake_maps(300 << 10);
	sock = register_ring(&r);
	start = now_ms();
	while (now_ms() - start < 1500) {
		while (r.p.hdr->reserve - __atomic_load_n(&r.p.ctl->tail, __ATOMIC_ACQUIRE) < NSLOTS)
			put(&r, PT_PRELOAD_REC_MMAP, sz, 0, 1, 0x10000, 4096, 3, 0x22);
		pump(2);
	}
	elapsed = now_ms() - start;
	secs = elapsed / 1000 + 1;
	st = stats();
	print_message("# maps rereads in %llu ms: %llu reads, %llu KiB, %llu refused by budget, "
		      "%llu records foreign\n", (unsigned long long)elapsed,
		      (unsigned long long)st.maps_reads, (unsigned long long)(st.maps_bytes >> 10),
		      (unsigned long long)st.maps_denied,
		      (unsigned long long)st.rejected[PT_PRELOAD_REJ_FOREIGN]);
	assert_true(st.maps_reads >= 2);
	assert_true(st.maps_bytes <= secs << 20);
	assert_true(st.maps_reads <= 8 * secs);
	assert_true(st.maps_denied > 0);
	assert_int_equal(T.ngot, 0);
	close(sock);
	pump(20);
	ring_free(&r, RING_BYTES);
}

/* The kernel has SO_PEERPIDFD (Linux 6.5). */
static bool kernel_has_peerpidfd(void)
{
	int sv[2], fd = -1;
	socklen_t len = sizeof(fd);
	bool has;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	has = getsockopt(sv[0], SOL_SOCKET, 77 /* SO_PEERPIDFD */, &fd, &len) == 0;
	if (has)
		close(fd);
	close(sv[0]);
	close(sv[1]);
	return has;
}

/*
 * A child in cgroup @cg (fake /proc) that connects, sends its hello and exits; @hold given,
 * it first forks a grandchild that keeps the socket open until @hold[1] is closed. Returned
 * reaped, so that its pid is free for reuse while the server has not read its hello yet.
 * The fake /proc keeps its entry: what /proc says about a pid reused by a process of the
 * same cgroup.
 */
static pid_t connect_and_vanish(const char *cg, const int *hold)
{
	int go[2], status;
	pid_t pid;
	char ch = 0;

	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ring c = ring_new(RING_BYTES, true);
		struct pt_preload_hello h = hello_of(RING_BYTES);
		struct sockaddr_un un = { .sun_family = AF_UNIX };
		int s = socket(AF_UNIX, SOCK_STREAM, 0);

		alarm(60);
		if (hold)
			close(hold[1]);
		close(go[1]);
		if (read(go[0], &ch, 1) != 1)
			_exit(3);
		strcpy(un.sun_path, T.path);
		if (connect(s, (struct sockaddr *)&un, sizeof(un)) < 0)
			_exit(2);
		send_with_fds(s, &h, sizeof(h), &c.fd, 1);
		if (hold && fork() == 0) {
			(void)!read(hold[0], &ch, 1);	/* holds the socket open */
			_exit(0);
		}
		_exit(0);
	}
	close(go[0]);
	fake_cgroup(pid, cg);
	assert_int_equal(write(go[1], &ch, 1), 1);
	close(go[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return pid;
}

/*
 * Identity through a pidfd: a registration whose process exited after connecting is
 * refused even though its socket stays open (a child holds it) and /proc has an entry for
 * its pid (reused). With only the pid, the cgroup of whoever has the number now was taken.
 */
static void test_peer_identity_by_pidfd(void **state)
{
	struct ring r = ring_new(RING_BYTES, true);
	struct pt_preload_server_stats st;
	int hold[2];

	(void)state;
	if (!kernel_has_peerpidfd())
		skip();
	close(register_ring(&r));		/* an ordinary one: by its pidfd */
	pump(20);
	assert_int_equal(stats().accepted_peers, 1);
	assert_int_equal(stats().by_pidfd, 1);
	assert_int_equal(pipe(hold), 0);
	connect_and_vanish("/a", hold);
	pump(100);
	st = stats();
	print_message("# pid gone (and reusable) before its hello, socket held open: %llu "
		      "accepted, %llu refused at connect, %llu bad registrations\n",
		      (unsigned long long)st.accepted_peers - 1, (unsigned long long)st.refused,
		      (unsigned long long)st.bad_hellos);
	assert_int_equal(st.accepted_peers, 1);
	assert_int_equal(st.peers, 0);
	assert_true(st.refused + st.bad_hellos >= 1);
	close(hold[1]);
	close(hold[0]);
	ring_free(&r, RING_BYTES);
}

static int no_peerpidfd(int sock)
{
	(void)sock;
	return -ENOPROTOOPT;	/* a kernel before 6.5 */
}

static int setup_fake_proc_no_pidfd(void **state)
{
	(void)state;
	return fake_proc_server(no_peerpidfd);
}

/*
 * Without SO_PEERPIDFD (older kernels) peers are identified by pid: registrations work, and
 * a process that exited (its socket closed) before its hello was read is still refused.
 */
static void test_peer_identity_without_pidfd(void **state)
{
	struct ring r = ring_new(RING_BYTES, true);

	(void)state;
	close(register_ring(&r));
	pump(20);
	assert_int_equal(stats().accepted_peers, 1);
	assert_int_equal(stats().by_pidfd, 0);
	/* Gone, and its socket closed with it. */
	connect_and_vanish("/a", NULL);
	for (int i = 0; i < 100 && stats().bad_hellos + stats().refused < 1; i++)
		pump(10);
	assert_int_equal(stats().accepted_peers, 1);
	assert_true(stats().bad_hellos + stats().refused >= 1);
	ring_free(&r, RING_BYTES);
}

/* Out of fds: the server must stop polling its listening socket, not spin, and recover. */
static void test_out_of_fds(void **state)
{
	struct ring r = ring_new(RING_BYTES, true);
	struct rlimit old, low;
	struct pollfd pfd;
	int socks[10], probe;

	(void)state;
	for (int i = 0; i < 10; i++)
		socks[i] = connect_sock();	/* in the backlog, not accepted yet */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	probe = dup(0);			/* the lowest free fd: all below are taken */
	close(probe);
	low = old;
	low.rlim_cur = (rlim_t)probe;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	pt_preload_server_accept(T.s);	/* accept fails: EMFILE */
	pfd = (struct pollfd){ pt_preload_server_fd(T.s), POLLIN, 0 };
	/* Ten connections wait in the backlog, yet nothing to report: paused, no spinning. */
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	pump(50);
	/* Listening again: those were taken (some held, the rest refused), and a ring gets in. */
	assert_true(stats().refused >= 6);
	for (int i = 0; i < 10; i++)
		close(socks[i]);
	pump(20);
	close(register_ring(&r));
	pump(20);
	ring_free(&r, RING_BYTES);
}

/* Peers take at most a quarter of the descriptor limit. */
static void test_peers_for_fds(void **state)
{
	(void)state;
	assert_int_equal(pt_preload_peers_for_fds(1024, 4096), 128);
	assert_int_equal(pt_preload_peers_for_fds(524288, 4096), 4096);
	assert_int_equal(pt_preload_peers_for_fds(RLIM_INFINITY, 4096), 4096);
	assert_int_equal(pt_preload_peers_for_fds(3, 4096), 1);
	assert_int_equal(pt_preload_peers_for_fds(40000, 16), 16);
	/* A table cut to the fd limit keeps a per-cgroup cap below it: never all of it. */
	assert_int_equal(pt_preload_cgroup_share(256, 128), 64);
	assert_int_equal(pt_preload_cgroup_share(256, 512), 256);
	assert_int_equal(pt_preload_cgroup_share(256, 4096), 256);
	assert_int_equal(pt_preload_cgroup_share(256, 1), 1);
	assert_int_equal(pt_preload_cgroup_share(4, 2500), 4);
}

/* The maps parser the foreign-memory check relies on. */
static void test_maps_parse(void **state)
{
	static const char text[] =
		"00400000-00452000 r-xp 00000000 08:02 173521  /usr/bin/prog\n"
		"00452000-00460000 rw-p 00052000 08:02 173521  /usr/bin/prog\n"
		"7f0000000000-7f0000100000 ---p 00000000 00:00 0\n"
		"7f0000100000-7f0000200000 rw-p 00000000 00:00 0\n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0  [stack]\n";
	struct pt_preload_maps m = { 0 };

	(void)state;
	assert_int_equal(pt_preload_maps_parse(&m, text, sizeof(text) - 1), 0);
	assert_int_equal(m.n, 3);	/* adjacent ones merged, the reservation left out */
	assert_true(pt_preload_maps_covers(&m, 0x400000, 0x60000));
	assert_false(pt_preload_maps_covers(&m, 0x400000, 0x60001));
	assert_false(pt_preload_maps_covers(&m, 0x7f0000000000, 4096));
	assert_true(pt_preload_maps_covers(&m, 0x7f0000100000, 0x100000));
	assert_false(pt_preload_maps_covers(&m, 0x7f00000ff000, 8192));
	assert_false(pt_preload_maps_covers(&m, 0x3fffff, 2));
	assert_false(pt_preload_maps_covers(&m, 0x7ffd00020000, UINT64_MAX));
	assert_false(pt_preload_maps_covers(&m, 0x400000, 0));
	assert_int_equal(pt_preload_maps_parse(&m, "10-5 rw-p\n", 10), -EINVAL);
	assert_int_equal(pt_preload_maps_parse(&m, "2000-3000 rw-p\n1000-1800 rw-p\n", 30),
			 -EINVAL);
	assert_int_equal(pt_preload_maps_parse(&m, "zz-10 rw-p\n", 11), -EINVAL);
	assert_int_equal(pt_preload_maps_parse(&m, "10000000000000000-2 rw-p\n", 25), -EINVAL);
	pt_preload_maps_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_parse),
		cmocka_unit_test(test_peers_for_fds),
		cmocka_unit_test_setup_teardown(test_garbage_and_malformed_hellos, setup, teardown),
		cmocka_unit_test_setup_teardown(test_impossible_ring_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_fds_that_are_not_a_sealed_memfd, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_records_out_of_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claims_on_another_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flood_beyond_rate_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connection_flood_and_replaced_rings, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fork_flood_capped_per_cgroup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records_budget_across_peers, setup_fake_proc,
						teardown),
		cmocka_unit_test_setup_teardown(test_pending_slots_per_cgroup, setup_fake_proc,
						teardown),
		cmocka_unit_test_setup_teardown(test_maps_budget_per_cgroup, setup_fake_proc,
						teardown),
		cmocka_unit_test_setup_teardown(test_peer_identity_by_pidfd, setup_fake_proc,
						teardown),
		cmocka_unit_test_setup_teardown(test_peer_identity_without_pidfd,
						setup_fake_proc_no_pidfd, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_fds, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
