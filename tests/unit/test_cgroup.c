// SPDX-License-Identifier: GPL-2.0
/* cgroup file parsing and tree walking, against fixture trees shaped like cgroupfs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>

#include "cgroup.h"
#include "fixture.h"

static void test_flat_keyed(void **state)
{
	const char *cpu_stat = "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n";
	const char *mem_stat = "anon 268435456\nfile 4096\nanon_thp 0\n";
	uint64_t v;

	(void)state;
	assert_int_equal(pt_flat_keyed_get(cpu_stat, "usage_usec", &v), 0);
	assert_int_equal(v, 123456);
	assert_int_equal(pt_flat_keyed_get(cpu_stat, "system_usec", &v), 0);
	assert_int_equal(v, 23456);
	/* "anon" must not match "anon_thp", nor the other way round. */
	assert_int_equal(pt_flat_keyed_get(mem_stat, "anon", &v), 0);
	assert_int_equal(v, 268435456);
	assert_int_equal(pt_flat_keyed_get(mem_stat, "anon_thp", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(pt_flat_keyed_get(mem_stat, "shmem", &v), -ENOENT);
	assert_int_equal(pt_flat_keyed_get("anon x\n", "anon", &v), -EINVAL);
	assert_int_equal(pt_flat_keyed_get("", "anon", &v), -ENOENT);
}

/* memory.pressure's "some" total, as 6.1 and 6.12 print it; a file of the wrong shape fails. */
static void test_psi_some_total(void **state)
{
	const char *psi = "some avg10=1.25 avg60=0.40 avg300=0.10 total=4712345\n"
			  "full avg10=0.00 avg60=0.00 avg300=0.00 total=99\n";
	char *root = fx_tmpdir(), dir[PATH_MAX];
	uint64_t v;

	(void)state;
	assert_int_equal(pt_psi_some_total(psi, &v), 0);
	assert_int_equal(v, 4712345);
	/* "full" first, or alone: only "some" counts. */
	assert_int_equal(pt_psi_some_total("full avg10=0.00 total=7\nsome avg10=0.00 total=8\n",
					   &v), 0);
	assert_int_equal(v, 8);
	assert_int_equal(pt_psi_some_total("full avg10=0.00 total=7\n", &v), -ENOENT);
	assert_int_equal(pt_psi_some_total("", &v), -ENOENT);
	/* No total on its line (the next line's does not count), or not a number. */
	assert_int_equal(pt_psi_some_total("some avg10=0.00\nfull total=5\n", &v), -EINVAL);
	assert_int_equal(pt_psi_some_total("some avg10=0.00 total=\n", &v), -EINVAL);
	assert_int_equal(pt_psi_some_total("some avg10=0.00 total=12x\n", &v), -EINVAL);
	/* From a cgroup's file; a cgroup without one (psi=0) says -ENOENT. */
	fx_write(root, "ct/memory.pressure", psi);
	snprintf(dir, sizeof(dir), "%s/ct", root);
	assert_int_equal(pt_cgroup_memory_stall_us(dir, &v), 0);
	assert_int_equal(v, 4712345);
	snprintf(dir, sizeof(dir), "%s/none", root);
	assert_int_equal(pt_cgroup_memory_stall_us(dir, &v), -ENOENT);
	fx_rmtree(root);
}

static void make_cgroup(const char *root, const char *rel, const char *procs, uint64_t usage,
			uint64_t current, uint64_t anon)
{
	char path[PATH_MAX], buf[256];

	snprintf(path, sizeof(path), "%s/cgroup.procs", rel);
	fx_write(root, path, procs);
	snprintf(path, sizeof(path), "%s/cpu.stat", rel);
	snprintf(buf, sizeof(buf), "usage_usec %llu\nuser_usec 0\nsystem_usec 0\n",
		 (unsigned long long)usage);
	fx_write(root, path, buf);
	snprintf(path, sizeof(path), "%s/memory.current", rel);
	snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)current);
	fx_write(root, path, buf);
	snprintf(path, sizeof(path), "%s/memory.stat", rel);
	snprintf(buf, sizeof(buf), "file 0\nanon %llu\n", (unsigned long long)anon);
	fx_write(root, path, buf);
}

struct seen {
	char paths[16][64];
	uint64_t ids[16];
	int n;
};

static void visit(const char *relpath, uint64_t id, void *arg)
{
	struct seen *s = arg;

	if (s->n < 16) {
		snprintf(s->paths[s->n], sizeof(s->paths[0]), "%s", relpath);
		s->ids[s->n++] = id;
	}
}

static bool saw(const struct seen *s, const char *p)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->paths[i], p) == 0)
			return true;
	return false;
}

static void test_walk_sample_pids(void **state)
{
	char *root = fx_tmpdir(), dir[PATH_MAX];
	struct pt_cgroup_sample smp;
	struct seen s = { 0 };
	pid_t pids[8];
	uint64_t id;

	(void)state;
	make_cgroup(root, "pt/alpha", "101\n102\n", 5000, 1 << 20, 4096);
	make_cgroup(root, "pt/alpha/worker", "103\n", 1, 2, 3);
	make_cgroup(root, "pt/beta", "", 0, 0, 0);
	fx_write(root, "pt/.hidden/cgroup.procs", "");

	assert_int_equal(pt_cgroup_walk(root, visit, &s), 0);
	assert_int_equal(s.n, 4);
	assert_true(saw(&s, "/pt"));
	assert_true(saw(&s, "/pt/alpha"));
	assert_true(saw(&s, "/pt/alpha/worker"));
	assert_true(saw(&s, "/pt/beta"));
	assert_false(saw(&s, "/pt/.hidden"));

	snprintf(dir, sizeof(dir), "%s/pt/alpha", root);
	memset(&smp, 0, sizeof(smp));
	assert_int_equal(pt_cgroup_sample(dir, &smp, true), 0);
	assert_int_equal(smp.cpu_usage_usec, 5000);
	assert_int_equal(smp.memory_current, 1 << 20);
	assert_int_equal(smp.anon, 4096);
	assert_int_equal(smp.swap_current, 0);	/* no memory.swap.current: not an error */
	/* A light sample reads CPU and memory.current only: the breakdown stays as it was. */
	fx_write(root, "pt/alpha/memory.current", "2097152\n");
	fx_write(root, "pt/alpha/memory.stat", "anon 8192\nswapcached 0\n");
	assert_int_equal(pt_cgroup_sample(dir, &smp, false), 0);
	assert_int_equal(smp.memory_current, 2 << 20);
	assert_int_equal(smp.anon, 4096);
	assert_int_equal(pt_cgroup_sample(dir, &smp, true), 0);
	assert_int_equal(smp.anon, 8192);

	/* A context's processes include its sub-cgroups'. */
	assert_int_equal(pt_cgroup_pids(dir, pids, 8), 3);
	assert_int_equal(pt_cgroup_pids(dir, pids, 2), 2);	/* bounded */

	assert_int_equal(pt_cgroup_id(dir, &id), 0);
	for (int i = 0; i < s.n; i++)
		if (strcmp(s.paths[i], "/pt/alpha") == 0)
			assert_int_equal(s.ids[i], id);

	/* A vanished cgroup is -ENOENT, never a crash. */
	snprintf(dir, sizeof(dir), "%s/pt/gone", root);
	assert_int_equal(pt_cgroup_sample(dir, &smp, true), -ENOENT);
	assert_int_equal(pt_cgroup_pids(dir, pids, 8), -ENOENT);
	fx_rmtree(root);
}

static void test_read_u64_max(void **state)
{
	char *root = fx_tmpdir();
	uint64_t v;

	(void)state;
	fx_write(root, "memory.high", "max\n");
	fx_write(root, "memory.low", "garbage\n");
	assert_int_equal(pt_cgroup_read_u64(root, "memory.high", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(pt_cgroup_read_u64(root, "memory.low", &v), -EINVAL);
	assert_int_equal(pt_cgroup_write(root, "memory.low", "max"), 0);
	assert_int_equal(pt_cgroup_read_u64(root, "memory.low", &v), 0);
	assert_true(v == UINT64_MAX);
	fx_rmtree(root);
}

/*
 * The memory breakdown from memory.stat as each kernel writes it: 6.1 and 6.12 have
 * "kernel" (and "sock" apart from it); kernels before 5.18 only its parts.
 */
static void test_sample_kinds(void **state)
{
	char *root = fx_tmpdir(), dir[PATH_MAX];
	struct pt_cgroup_sample smp;

	(void)state;
	make_cgroup(root, "ct", "", 1, 415236096, 0);
	/* 6.1's memory.stat, abridged (the order is the kernel's). */
	fx_write(root, "ct/memory.stat",
		 "anon 222298112\nfile 167772160\nkernel 18350080\nkernel_stack 409600\n"
		 "pagetables 1273856\nsec_pagetables 0\npercpu 150528\nsock 524288\n"
		 "vmalloc 8192\nshmem 67108864\nzswap 0\nzswapped 0\nfile_mapped 31457280\n"
		 "file_dirty 0\nfile_writeback 0\nswapcached 6291456\nanon_thp 0\n"
		 "slab_reclaimable 12058624\nslab_unreclaimable 4456448\nslab 16515072\n");
	fx_write(root, "ct/memory.swap.current", "1952448512\n");
	snprintf(dir, sizeof(dir), "%s/ct", root);
	memset(&smp, 0, sizeof(smp));
	assert_int_equal(pt_cgroup_sample(dir, &smp, true), 0);
	assert_int_equal(smp.anon, 212 << 20);
	assert_int_equal(smp.shmem, 64 << 20);
	assert_int_equal(smp.file_cache, 96 << 20);		/* file - shmem */
	assert_int_equal(smp.kernel, 18350080 + 524288);	/* kernel + sock: 18 MiB */
	assert_int_equal(smp.swapcached, 6 << 20);
	assert_int_equal(smp.swap_current, 1862ULL << 20);

	/* Before 5.18: no "kernel"; its parts and sock (slab, not its two halves, counted). */
	fx_write(root, "ct/memory.stat",
		 "anon 4096\nfile 8192\nkernel_stack 16384\npagetables 32768\npercpu 1024\n"
		 "sock 2048\nshmem 0\nslab_reclaimable 100\nslab_unreclaimable 200\n"
		 "slab 300\nvmalloc 512\n");
	assert_int_equal(pt_cgroup_sample(dir, &smp, true), 0);
	assert_int_equal(smp.kernel, 16384 + 32768 + 1024 + 512 + 300 + 2048);
	assert_int_equal(smp.file_cache, 8192);

	/* A light sample leaves the breakdown as it was: memory.stat only once per interval. */
	fx_write(root, "ct/memory.stat", "anon 1\nfile 0\nkernel 5\n");
	assert_int_equal(pt_cgroup_sample(dir, &smp, false), 0);
	assert_int_equal(smp.kernel, 16384 + 32768 + 1024 + 512 + 300 + 2048);
	/* None of them at all (kmem accounting off): 0, not an error. */
	assert_int_equal(pt_cgroup_sample(dir, &smp, true), 0);
	assert_int_equal(smp.kernel, 5);
	fx_write(root, "ct/memory.stat", "anon 1\nfile 0\n");
	assert_int_equal(pt_cgroup_sample(dir, &smp, true), 0);
	assert_int_equal(smp.kernel, 0);
	fx_rmtree(root);
}

/*
 * The per-sample files kept open: later samples read the same descriptors at offset 0 and
 * see each new value; the process-wide limit is kept; past it, a sample opens and closes.
 */
static void test_sample_files_kept_open(void **state)
{
	char *root = fx_tmpdir(), a[PATH_MAX], b[PATH_MAX];
	struct pt_cgroup_files fa = { 0 }, fb = { 0 };
	struct pt_cgroup_sample smp = { 0 };

	(void)state;
	make_cgroup(root, "a", "", 10, 4096, 0);
	make_cgroup(root, "b", "", 20, 8192, 0);
	snprintf(a, sizeof(a), "%s/a", root);
	snprintf(b, sizeof(b), "%s/b", root);
	pt_cgroup_files_set_limit(3);
	assert_int_equal(pt_cgroup_sample_files(a, &fa, &smp, false), 0);
	assert_int_equal(smp.memory_current, 4096);
	assert_int_equal(pt_cgroup_files_open_count(), 2);
	assert_true(fa.cpu_stat1 > 0 && fa.memory_current1 > 0);
	/* The second container gets one kept file, the limit's last. */
	assert_int_equal(pt_cgroup_sample_files(b, &fb, &smp, false), 0);
	assert_int_equal(smp.memory_current, 8192);
	assert_int_equal(pt_cgroup_files_open_count(), 3);
	assert_true(fb.cpu_stat1 > 0);
	assert_int_equal(fb.memory_current1, 0);
	/* New values through the same descriptors (a longer text, then a shorter one). */
	fx_write(root, "a/memory.current", "123456789\n");
	fx_write(root, "a/cpu.stat", "usage_usec 99\nuser_usec 50\n");
	assert_int_equal(pt_cgroup_sample_files(a, &fa, &smp, false), 0);
	assert_int_equal(smp.memory_current, 123456789);
	assert_int_equal(smp.cpu_usage_usec, 99);
	fx_write(root, "a/memory.current", "7\n");
	assert_int_equal(pt_cgroup_sample_files(a, &fa, &smp, false), 0);
	assert_int_equal(smp.memory_current, 7);
	fx_write(root, "b/memory.current", "max\n");
	assert_int_equal(pt_cgroup_sample_files(b, &fb, &smp, false), 0);
	assert_int_equal(smp.memory_current, UINT64_MAX);
	assert_int_equal(pt_cgroup_files_open_count(), 3);
	/* A full sample reads the breakdown as pt_cgroup_sample does. */
	fx_write(root, "a/memory.stat", "anon 8192\nfile 0\nswapcached 4096\n");
	assert_int_equal(pt_cgroup_sample_files(a, &fa, &smp, true), 0);
	assert_int_equal(smp.anon, 8192);
	assert_int_equal(smp.swapcached, 4096);
	/* The limit's half was reached: the breakdown's files were not kept. */
	assert_int_equal(fa.memory_stat1, 0);
	assert_int_equal(fa.memory_swap_current1, 0);
	pt_cgroup_files_close(&fa);
	pt_cgroup_files_close(&fb);
	pt_cgroup_files_close(&fb);	/* twice: nothing */
	assert_int_equal(pt_cgroup_files_open_count(), 0);
	assert_int_equal(fa.cpu_stat1, 0);
	/* Under half the limit, a full sample keeps memory.stat and memory.swap.current too. */
	pt_cgroup_files_set_limit(16);
	fx_write(root, "a/memory.swap.current", "12288\n");
	assert_int_equal(pt_cgroup_sample_files(a, &fa, &smp, true), 0);
	assert_int_equal(pt_cgroup_files_open_count(), 4);
	assert_true(fa.memory_stat1 > 0 && fa.memory_swap_current1 > 0);
	assert_int_equal(smp.swap_current, 12288);
	fx_write(root, "a/memory.stat", "anon 4096\nfile 8192\nshmem 4096\n");
	fx_write(root, "a/memory.swap.current", "0\n");
	assert_int_equal(pt_cgroup_sample_files(a, &fa, &smp, true), 0);
	assert_int_equal(smp.anon, 4096);
	assert_int_equal(smp.swapcached, 0);
	assert_int_equal(smp.file_cache, 4096);
	assert_int_equal(smp.swap_current, 0);
	assert_int_equal(pt_cgroup_files_open_count(), 4);
	pt_cgroup_files_close(&fa);
	assert_int_equal(pt_cgroup_files_open_count(), 0);
	assert_int_equal(fa.memory_stat1, 0);
	/* Limit 0: nothing kept. */
	pt_cgroup_files_set_limit(0);
	assert_int_equal(pt_cgroup_sample_files(a, &fa, &smp, false), 0);
	assert_int_equal(pt_cgroup_files_open_count(), 0);
	/* Gone: -ENOENT, as for a path. */
	fx_rmtree(root);
	assert_int_equal(pt_cgroup_sample_files(a, &fa, &smp, false), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flat_keyed),
		cmocka_unit_test(test_psi_some_total),
		cmocka_unit_test(test_walk_sample_pids),
		cmocka_unit_test(test_sample_kinds),
		cmocka_unit_test(test_sample_files_kept_open),
		cmocka_unit_test(test_read_u64_max),
	};

	return cmocka_run_group_tests_name("cgroup", tests, NULL, NULL);
}
