// SPDX-License-Identifier: GPL-2.0
/*
 * The readahead spawner (advise_spawner.c) and its request encoding (advise_req.c): the
 * encoding round trip and its refusals, then the real spawner process serving this very
 * process's memory: one request, many pidfds (several messages), and the fallback to a
 * fork of the caller once the spawner is gone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actuator.h"
#include "advise_req.h"
#include "advise_spawner.h"
#include "pidfd.h"

static void test_encode_decode_round_trip(void **state)
{
	struct pt_range r0[3] = { { 0x1000, 0x2000 }, { 0x10000, 0x1000 }, { 1ULL << 40, 4096 } };
	struct pt_range r2[1] = { { 0x7000, 0x9000 } };
	struct pt_proc_ranges set[3] = {
		{ .pid = 42, .start = 1234, .cgroup = "/a/b", .pidfd = 7, .n = 3, .r = r0 },
		{ .pid = 43, .start = 0, .cgroup = NULL, .pidfd = 0, .n = 0, .r = NULL },
		{ .pid = 44, .start = 99, .cgroup = "/a/b/c-with-a-longer-name", .pidfd = 9, .n = 1,
		  .r = r2 },
	};
	size_t sz = pt_advise_req_size("/sys/fs/cgroup/a/b", set, 3, "/sys/fs/cgroup/a");
	uint64_t *buf = malloc(sz);
	struct pt_advise_req req;

	(void)state;
	assert_int_equal(sz % 8, 0);
	assert_int_equal(pt_advise_req_encode(buf, sz - 1, "/sys/fs/cgroup/a/b", set, 3, 3, true,
					      "/sys/fs/cgroup/a"), -ENOSPC);
	assert_int_equal(pt_advise_req_encode(buf, sz, "/sys/fs/cgroup/a/b", set, 3, 3, true,
					      "/sys/fs/cgroup/a"), (int64_t)sz);
	assert_int_equal(pt_advise_req_decode(buf, sz, &req), 0);
	assert_int_equal(req.advice, 3);
	assert_true(req.use_queue);
	assert_string_equal(req.cgdir, "/sys/fs/cgroup/a/b");
	assert_string_equal(req.queue_cgdir, "/sys/fs/cgroup/a");
	assert_int_equal(req.n, 3);
	assert_int_equal(req.n_pidfds, 2);
	assert_int_equal(req.set[0].pid, 42);
	assert_int_equal(req.set[0].start, 1234);
	assert_string_equal(req.set[0].cgroup, "/a/b");
	assert_int_equal(req.set[0].pidfd, -1);		/* one is due */
	assert_int_equal(req.set[0].n, 3);
	assert_memory_equal(req.set[0].r, r0, sizeof(r0));
	assert_int_equal(req.set[1].pid, 43);
	assert_null(req.set[1].cgroup);
	assert_int_equal(req.set[1].pidfd, 0);
	assert_int_equal(req.set[1].n, 0);
	assert_string_equal(req.set[2].cgroup, "/a/b/c-with-a-longer-name");
	assert_int_equal(req.set[2].pidfd, -1);
	assert_memory_equal(req.set[2].r, r2, sizeof(r2));
	pt_advise_req_free(&req);

	/* No queue, no lists. */
	sz = pt_advise_req_size("/x", NULL, 0, NULL);
	assert_int_equal(pt_advise_req_encode(buf, sz, "/x", NULL, 0, 3, false, NULL),
			 (int64_t)sz);
	assert_int_equal(pt_advise_req_decode(buf, sz, &req), 0);
	assert_false(req.use_queue);
	assert_null(req.queue_cgdir);
	assert_int_equal(req.n, 0);
	pt_advise_req_free(&req);
	free(buf);
}

/* Every prefix, a flipped magic, an unterminated string, trailing bytes: -EPROTO. */
static void test_decode_refuses_malformed(void **state)
{
	struct pt_range r[2] = { { 0x1000, 0x2000 }, { 0x4000, 0x1000 } };
	struct pt_proc_ranges set[2] = {
		{ .pid = 1, .cgroup = "/c", .pidfd = 3, .n = 2, .r = r },
		{ .pid = 2, .cgroup = "/c", .n = 1, .r = r },
	};
	size_t sz = pt_advise_req_size("/cg", set, 2, "/q");
	uint64_t *buf = calloc(1, sz + 64), *cut;
	struct pt_advise_req req;
	char *p = (char *)buf;

	(void)state;
	assert_int_equal(pt_advise_req_encode(buf, sz, "/cg", set, 2, 3, true, "/q"), (int64_t)sz);
	for (size_t len = 0; len < sz; len++) {
		/* A buffer of exactly @len bytes, so that a read past it is caught (ASan). */
		cut = malloc(len ? len : 1);
		memcpy(cut, buf, len);
		assert_int_equal(pt_advise_req_decode(cut, len, &req), -EPROTO);
		assert_null(req.set);
		free(cut);
	}
	assert_int_equal(pt_advise_req_decode(buf, sz + 8, &req), -EPROTO);	/* trailing */
	p[0] ^= 1;
	assert_int_equal(pt_advise_req_decode(buf, sz, &req), -EPROTO);
	p[0] ^= 1;
	/* The cgroup directory's 8 bytes with no NUL. */
	memset(p + 32, 'x', 8);
	assert_int_equal(pt_advise_req_decode(buf, sz, &req), -EPROTO);
	/* A list count beyond what the bytes can hold. */
	assert_int_equal(pt_advise_req_encode(buf, sz, "/cg", set, 2, 3, true, "/q"), (int64_t)sz);
	((int32_t *)buf)[3] = 1 << 30;
	assert_int_equal(pt_advise_req_decode(buf, sz, &req), -EPROTO);
	assert_int_equal(pt_advise_req_encode(buf, sz, "/cg", set, 2, 3, true, "/q"), (int64_t)sz);
	assert_int_equal(pt_advise_req_decode(buf, sz, &req), 0);
	pt_advise_req_free(&req);
	free(buf);
}

/* A plain directory standing in for a cgroup: the reader writes "0" to its cgroup.procs. */
static void fake_cgroup(char *dir, char *procs, size_t cap)
{
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(procs, cap, "%s/cgroup.procs", dir);
	fd = open(procs, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
}

static void drop_fake_cgroup(const char *dir, const char *procs)
{
	unlink(procs);
	rmdir(dir);
}

static void test_spawner_serves_a_request(void **state)
{
	char dir[] = "/tmp/pt-sp-XXXXXX", procs[64], got[8] = { 0 };
	char *mem = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0);
	struct pt_range r = { .start = (uintptr_t)mem, .len = 1 << 20 };
	struct pt_proc_ranges pr = { .pid = getpid(), .n = 1, .cap = 1, .r = &r,
				     .pidfd = pt_pidfd_open(getpid()) };
	struct pt_advise_child c;
	pid_t spawner;
	int fd;

	(void)state;
	assert_true(pr.pidfd > 0);
	fake_cgroup(dir, procs, sizeof(procs));
	assert_int_equal(pt_spawner_start(false), 0);
	spawner = pt_spawner_pid();
	assert_true(spawner > 0);
	assert_int_equal(pt_advise_child_start(&c, dir, &pr, 1, MADV_WILLNEED, NULL), 0);
	assert_int_equal(c.pid, -1);	/* the spawner's reader, not a fork of ours */
	assert_int_equal(pt_advise_child_finish(&c), 1 << 20);
	fd = open(procs, O_RDONLY);
	assert_int_equal(read(fd, got, sizeof(got) - 1), 1);
	assert_string_equal(got, "0");
	close(fd);
	/* Not a cgroup at all: the reader says why, through the spawner. */
	drop_fake_cgroup(dir, procs);
	assert_int_equal(pt_advise_child_start(&c, dir, &pr, 1, MADV_WILLNEED, NULL), 0);
	assert_int_equal(pt_advise_child_finish(&c), -ENOENT);
	assert_int_equal(pt_spawner_pid(), spawner);
	pt_spawner_stop();
	assert_int_equal(pt_spawner_pid(), 0);
	assert_int_equal(kill(spawner, 0), -1);		/* reaped */
	close(pr.pidfd);
	munmap(mem, 1 << 20);
}

/* 600 lists with a pidfd each: three messages of descriptors, every list advised. */
static void test_spawner_many_pidfds(void **state)
{
	enum { LISTS = 600 };
	char dir[] = "/tmp/pt-sp-XXXXXX", procs[64];
	char *mem = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0);
	struct pt_range r = { .start = (uintptr_t)mem, .len = 64 << 10 };
	struct pt_proc_ranges *set = calloc(LISTS, sizeof(*set));
	struct pt_advise_child c;

	(void)state;
	fake_cgroup(dir, procs, sizeof(procs));
	for (int i = 0; i < LISTS; i++) {
		set[i] = (struct pt_proc_ranges){ .pid = getpid(), .n = 1, .cap = 1, .r = &r };
		/* Every third without one: pinned by pid in the reader. */
		if (i % 3)
			set[i].pidfd = pt_pidfd_open(getpid());
	}
	assert_int_equal(pt_spawner_start(false), 0);
	assert_int_equal(pt_advise_child_start(&c, dir, set, LISTS, MADV_WILLNEED, NULL), 0);
	assert_int_equal(c.pid, -1);
	assert_int_equal(pt_advise_child_finish(&c), (int64_t)LISTS * (64 << 10));
	pt_spawner_stop();
	for (int i = 0; i < LISTS; i++)
		if (set[i].pidfd > 0)
			close(set[i].pidfd);
	free(set);
	drop_fake_cgroup(dir, procs);
	munmap(mem, 64 << 10);
}

/* The spawner killed: the request is not lost, the caller forks the reader itself. */
static void test_spawner_gone_falls_back(void **state)
{
	char dir[] = "/tmp/pt-sp-XXXXXX", procs[64];
	char *mem = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0);
	struct pt_range r = { .start = (uintptr_t)mem, .len = 1 << 20 };
	struct pt_proc_ranges pr = { .pid = getpid(), .n = 1, .cap = 1, .r = &r };
	struct pt_advise_child c;
	int status;

	(void)state;
	fake_cgroup(dir, procs, sizeof(procs));
	assert_int_equal(pt_spawner_start(false), 0);
	kill(pt_spawner_pid(), SIGKILL);
	/* Dead, not yet reaped by us: its end of the socket is closed either way. */
	while (waitpid(pt_spawner_pid(), &status, WNOHANG) == 0)
		usleep(1000);
	assert_int_equal(pt_advise_child_start(&c, dir, &pr, 1, MADV_WILLNEED, NULL), 0);
	assert_true(c.pid > 0);		/* our own child */
	assert_int_equal(pt_advise_child_finish(&c), 1 << 20);
	assert_int_equal(pt_spawner_pid(), 0);
	/* And from then on without one. */
	assert_int_equal(pt_advise_child_start(&c, dir, &pr, 1, MADV_WILLNEED, NULL), 0);
	assert_true(c.pid > 0);
	assert_int_equal(pt_advise_child_finish(&c), 1 << 20);
	drop_fake_cgroup(dir, procs);
	munmap(mem, 1 << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_decode_round_trip),
		cmocka_unit_test(test_decode_refuses_malformed),
		cmocka_unit_test(test_spawner_serves_a_request),
		cmocka_unit_test(test_spawner_many_pidfds),
		cmocka_unit_test(test_spawner_gone_falls_back),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("advise_spawner", tests, NULL, NULL);
}
