// SPDX-License-Identifier: GPL-2.0
/* /proc/PID/maps parsing: which mappings are private anonymous memory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "fixture.h"
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

/* What a reader of @root/@pid/maps hands out: the count of ranges, their sum in *@total. */
static int read_all(const char *root, int pid, unsigned int kinds, uint64_t *total)
{
	struct pt_maps_reader m;
	enum pt_map_kind k;
	struct pt_range r;
	int n = 0;

	assert_int_equal(pt_maps_open(&m, root, pid, kinds, 0), 0);
	*total = 0;
	while (pt_maps_next(&m, &r, &k) == 1) {
		assert_true(kinds & (1U << k));
		*total += r.len;
		n++;
	}
	pt_maps_close(&m);
	return n;
}

/*
 * A mapped file's name is the container's to choose: a line longer than the reader's
 * buffer is skipped whole, never parsed from where the buffer cut it. Here the name ends
 * with what reads as a private anonymous mapping of 128 TiB, right where a fixed-size
 * fgets() buffer would start its next "line" (one scan job would then issue 131072 scan
 * ioctls of 1 GiB each).
 */
static void test_long_line_skipped_whole(void **state)
{
	const char *fake = "00001000-7fff00001000 rw-p 00000000 00:00 0\n";
	const char *head = "7f1000000000-7f1000001000 r--p 00000000 fe:01 42    /";
	char *root = fx_tmpdir(), *text = malloc(3 * PT_MAPS_LINE_MAX);
	uint64_t total;
	size_t at;

	(void)state;
	assert_non_null(text);
	strcpy(text, "7f0000000000-7f0000100000 rw-p 00000000 00:00 0\n");
	strcat(text, head);
	/* The file's name, up to where the buffer is full (size - 1 bytes of the line)... */
	at = strlen(text) - strlen(head) + PT_MAPS_LINE_MAX - 1;
	memset(text + strlen(text), 'a', at - strlen(text));
	text[at] = '\0';
	/* ... then its tail, then a mapping after it. */
	strcat(text, fake);
	strcat(text, "7f2000000000-7f2000100000 rw-p 00000000 00:00 0\n");
	fx_write(root, "1234/maps", text);
	fx_write(root, "1234/status", "Name:\tvictim\nVmSize:\t    2052 kB\nVmRSS:\t 2048 kB\n");
	assert_int_equal(read_all(root, 1234, PT_KIND_ANON, &total), 2);
	assert_int_equal(total, 2ULL << 20);
	/* A line that fills the buffer to its last byte, newline included, is one line. */
	at = strlen("7f0000000000-7f0000100000 rw-p 00000000 00:00 0\n");
	text[at + PT_MAPS_LINE_MAX - 2] = '\n';
	text[at + PT_MAPS_LINE_MAX - 1] = '\0';
	strcat(text, "7f2000000000-7f2000100000 rw-p 00000000 00:00 0\n");
	fx_write(root, "1234/maps", text);
	assert_int_equal(read_all(root, 1234, PT_KIND_ANON, &total), 2);
	assert_int_equal(read_all(root, 1234, PT_KIND_FILE, &total), 1);
	assert_int_equal(total, 4096);
	free(text);
	fx_rmtree(root);
}

/*
 * Whatever the lines say, the ranges handed out for a process span no more than it maps
 * (its VmSize), and never more than PT_MAPS_SPAN_MAX: a mapping that does not fit is
 * skipped, and the ones after it still count.
 */
static void test_span_bounded(void **state)
{
	char *root = fx_tmpdir(), *status = malloc(20000);
	uint64_t total;

	(void)state;
	assert_non_null(status);
	fx_write(root, "7/maps", "00001000-7fff00001000 rw-p 00000000 00:00 0\n"
				 "7fff00001000-7fff00101000 rw-p 00000000 00:00 0\n");
	fx_write(root, "7/status", "Name:\tx\nVmSize:\t    2048 kB\n");
	assert_int_equal(read_all(root, 7, PT_KIND_ANON, &total), 1);
	assert_int_equal(total, 1ULL << 20);
	/* Its VmSize is as large as its address space: the ceiling holds. */
	snprintf(status, 20000, "Name:\tx\nVmSize:\t%llu kB\n",
		 (unsigned long long)(0x7fff00101000ULL >> 10));
	fx_write(root, "7/status", status);
	assert_int_equal(read_all(root, 7, PT_KIND_ANON, &total), 1);
	assert_true(total == 1ULL << 20 && total <= PT_MAPS_SPAN_MAX);
	/* A long line before VmSize (many supplementary groups) hides nothing. */
	strcpy(status, "Name:\tx\nGroups:\t");
	for (int i = 0; i < 3000; i++)
		strcat(status, "1234 ");
	strcat(status, "\nVmSize:\t    1024 kB\n");
	fx_write(root, "7/status", status);
	assert_int_equal(read_all(root, 7, PT_KIND_ANON, &total), 1);
	assert_int_equal(total, 1ULL << 20);
	/* No VmSize (a kernel thread, a zombie): it maps nothing. */
	fx_write(root, "7/status", "Name:\tkworker\n");
	assert_int_equal(read_all(root, 7, PT_KIND_ANON, &total), 0);
	free(status);
	fx_rmtree(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_anonymous_kinds),
		cmocka_unit_test(test_not_anonymous),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_long_line_skipped_whole),
		cmocka_unit_test(test_span_bounded),
	};

	return cmocka_run_group_tests_name("maps", tests, NULL, NULL);
}
