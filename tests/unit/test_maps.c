// SPDX-License-Identifier: GPL-2.0
/* /proc/PID/maps parsing: which mappings are private anonymous memory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "maps.h"

static void expect(const char *line, int rc, uint64_t start, uint64_t len)
{
	struct pt_range r = { 0 };

	assert_int_equal(pt_maps_anon_range(line, &r), rc);
	if (rc == 1) {
		assert_int_equal(r.start, start);
		assert_int_equal(r.len, len);
	}
}

static void test_anonymous_kinds(void **state)
{
	(void)state;
	expect("7f0000000000-7f0010000000 rw-p 00000000 00:00 0 \n", 1, 0x7f0000000000ULL,
	       0x10000000ULL);
	expect("55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]\n",
	       1, 0x55d0c0a00000ULL, 0x21000);
	expect("7ffd1c6d1000-7ffd1c6f2000 rw-p 00000000 00:00 0                          [stack]\n",
	       1, 0x7ffd1c6d1000ULL, 0x21000);
	expect("7f0000000000-7f0000001000 rw-p 00000000 00:00 0    [anon:jemalloc]\n", 1,
	       0x7f0000000000ULL, 0x1000);
	/* Read-only private anonymous memory still holds data (e.g. after mprotect). */
	expect("7f0000000000-7f0000001000 r--p 00000000 00:00 0\n", 1, 0x7f0000000000ULL, 0x1000);
}

static void test_not_anonymous(void **state)
{
	(void)state;
	expect("55d0bf400000-55d0bf428000 r--p 00000000 fe:01 1311209  /usr/bin/python3.11\n", 0,
	       0, 0);
	expect("7f0000000000-7f0000100000 rw-s 00000000 00:01 1024   /dev/zero (deleted)\n", 0, 0,
	       0);
	expect("7f0000000000-7f0000100000 rw-s 00000000 00:00 0\n", 0, 0, 0);	/* shared anon */
	expect("7f0000000000-7f0000100000 ---p 00000000 00:00 0\n", 0, 0, 0);	/* guard */
	expect("7ffd1c7f6000-7ffd1c7fa000 r--p 00000000 00:00 0                  [vvar]\n", 0, 0, 0);
	expect("7ffd1c7fa000-7ffd1c7fc000 r-xp 00000000 00:00 0                  [vdso]\n", 0, 0, 0);
	expect("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0          [vsyscall]\n", 0,
	       0, 0);
}

static void kind(const char *line, enum pt_map_kind want)
{
	struct pt_range r;

	assert_int_equal(pt_maps_classify(line, &r), want);
}

static void test_classify(void **state)
{
	(void)state;
	kind("7f0000000000-7f0010000000 rw-p 00000000 00:00 0 \n", PT_MAP_ANON);
	kind("7f0000000000-7f0000100000 rw-s 00000000 00:01 1024   /dev/zero (deleted)\n",
	     PT_MAP_SHMEM);
	kind("7f0000000000-7f0000100000 rw-s 00000000 00:01 2048   /SYSV0000162e (deleted)\n",
	     PT_MAP_SHMEM);
	kind("7f0000000000-7f0000100000 rw-s 00000000 00:01 3      /memfd:pg-buffers (deleted)\n",
	     PT_MAP_SHMEM);
	kind("7f0000000000-7f0000100000 rw-s 00000000 00:19 77     /dev/shm/PostgreSQL.1234\n",
	     PT_MAP_SHMEM);
	kind("55d0bf400000-55d0bf428000 r-xp 00028000 fe:01 1311209  /usr/bin/python3.11\n",
	     PT_MAP_FILE);
	kind("7f0000000000-7f0000100000 r--s 00000000 fe:01 4242   /var/lib/db/data.mdb\n",
	     PT_MAP_FILE);
	kind("7ffd1c7fa000-7ffd1c7fc000 r-xp 00000000 00:00 0                  [vdso]\n",
	     PT_MAP_OTHER);
	kind("7f0000000000-7f0000100000 ---p 00000000 fe:01 4242   /usr/lib/libc.so.6\n",
	     PT_MAP_OTHER);		/* a guard: nothing to read */
	kind("garbage\n", PT_MAP_INVALID);
}

static void test_malformed(void **state)
{
	(void)state;
	expect("", -EINVAL, 0, 0);
	expect("garbage\n", -EINVAL, 0, 0);
	expect("7f0000001000-7f0000000000 rw-p 00000000 00:00 0\n", -EINVAL, 0, 0); /* end<start */
	expect("7f0000000000-7f0000001000 rw-p\n", -EINVAL, 0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_anonymous_kinds),
		cmocka_unit_test(test_not_anonymous),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests_name("maps", tests, NULL, NULL);
}
