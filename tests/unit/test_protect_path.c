// SPDX-License-Identifier: GPL-2.0
/*
 * Memory protection along a critical container's path (protect_path.h): the target's
 * hysteresis, the cgroups of a path, and the writes over a fake cgroup tree: memory.low and
 * memory.min of the ancestors and memory.min of the critical container raised for what it
 * uses, its memory.low "max", the operator's larger values left alone, put back when no
 * critical container is left, on release, and by the next pagetierd after a SIGKILL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "cgroup.h"
#include "fixture.h"
#include "protect_path.h"

#define MiB (1ULL << 20)

static void test_parse(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(pt_cgroup_parse_u64("max\n", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(pt_cgroup_parse_u64("0\n", &v), 0);
	assert_true(v == 0);
	assert_int_equal(pt_cgroup_parse_u64("268435456", &v), 0);
	assert_true(v == 256 * MiB);
	assert_int_equal(pt_cgroup_parse_u64("", &v), -EINVAL);
	assert_int_equal(pt_cgroup_parse_u64("-1", &v), -EINVAL);
	assert_int_equal(pt_cgroup_parse_u64("12k", &v), -EINVAL);
	assert_int_equal(pt_cgroup_parse_u64("maxi", &v), -EINVAL);
}

static void test_target(void **state)
{
	(void)state;
	assert_true(pt_protect_target(0, 0) == 0);
	assert_true(pt_protect_target(0, 64 * MiB) == 0);
	/* First write: need + max(need / 8, a granule), rounded up to a granule. */
	assert_true(pt_protect_target(200 * MiB, 0) == 256 * MiB);
	assert_true(pt_protect_target(1 * MiB, 0) == 64 * MiB);
	assert_true(pt_protect_target(1024 * MiB, 0) == 1152 * MiB);
	/* Small moves keep what is written: no write per tick. */
	assert_true(pt_protect_target(210 * MiB, 256 * MiB) == 256 * MiB);
	assert_true(pt_protect_target(150 * MiB, 256 * MiB) == 256 * MiB);
	/* Grown past it (less than a sixteenth to spare): raised. */
	assert_true(pt_protect_target(250 * MiB, 256 * MiB) == 288 * MiB);
	/* Shrunk to well under half: lowered (protected and unused is nobody's memory). */
	assert_true(pt_protect_target(100 * MiB, 256 * MiB) == 160 * MiB);
	/* No overflow at the top. */
	assert_true(pt_protect_target(UINT64_MAX - 1, 0) >= UINT64_MAX - 2 * PT_PROTECT_GRANULE);
}

static const struct pt_protect_cgroup *find(const struct pt_protect_path *pp, const char *rel)
{
	for (size_t i = 0; i < pp->n; i++)
		if (!strcmp(pp->c[i].relpath, rel))
			return &pp->c[i];
	return NULL;
}

static void test_cgroups_of_a_path(void **state)
{
	struct pt_protect_path pp = { 0 };

	(void)state;
	pt_protect_path_begin(&pp);
	assert_int_equal(pt_protect_path_add(&pp, "/a/b/crit", 100 * MiB), 0);
	assert_int_equal(pt_protect_path_add(&pp, "/a/c/crit2", 50 * MiB), 0);
	/* A top-level critical container: only itself. */
	assert_int_equal(pt_protect_path_add(&pp, "/top", 70 * MiB), 0);
	/* The root (a context over the whole tree) has nothing to hold. */
	assert_int_equal(pt_protect_path_add(&pp, "/", 70 * MiB), 0);
	assert_int_equal(pt_protect_path_add(&pp, "", 70 * MiB), 0);
	assert_int_equal(pp.n, 6);
	assert_true(find(&pp, "/a")->need == 150 * MiB && !find(&pp, "/a")->critical);
	assert_true(find(&pp, "/a/b")->need == 100 * MiB && !find(&pp, "/a/b")->critical);
	assert_true(find(&pp, "/a/c")->need == 50 * MiB);
	assert_true(find(&pp, "/a/b/crit")->need == 100 * MiB && find(&pp, "/a/b/crit")->critical);
	assert_true(find(&pp, "/a/c/crit2")->critical);
	assert_true(find(&pp, "/top")->need == 70 * MiB && find(&pp, "/top")->critical);
	/* Another pass starts from nothing. */
	pt_protect_path_begin(&pp);
	for (size_t i = 0; i < pp.n; i++)
		assert_true(pp.c[i].need == 0);
	pt_protect_path_release(&pp, "/nonexistent");
	assert_int_equal(pp.n, 0);
}

static uint64_t value_of(const char *root, const char *rel, const char *file)
{
	char path[PATH_MAX], buf[64];
	uint64_t v = 0;

	snprintf(path, sizeof(path), "%s/%s/%s", root, rel, file);
	if (pt_read_file(path, buf, sizeof(buf)) <= 0 || pt_cgroup_parse_u64(buf, &v))
		fail_msg("%s unreadable", path);
	return v;
}

static void tree(const char *root)
{
	const char *cgs[] = { "svc", "svc/db", "svc/web", "ops", "ops/crit" };

	for (size_t i = 0; i < sizeof(cgs) / sizeof(cgs[0]); i++) {
		char rel[64];

		snprintf(rel, sizeof(rel), "%s/memory.low", cgs[i]);
		fx_write(root, rel, "0\n");
		snprintf(rel, sizeof(rel), "%s/memory.min", cgs[i]);
		fx_write(root, rel, "0\n");
	}
	fx_write(root, "ops/memory.low", "max\n");	/* the operator protects it already */
	fx_write(root, "ops/memory.min", "max\n");
}

static void test_apply_and_put_back(void **state)
{
	char *root = fx_tmpdir();
	struct pt_protect_path pp = { 0 };

	(void)state;
	tree(root);
	pt_protect_path_begin(&pp);
	pt_protect_path_add(&pp, "/svc/db", 200 * MiB);
	pt_protect_path_add(&pp, "/svc/web", 30 * MiB);
	pt_protect_path_add(&pp, "/ops/crit", 500 * MiB);
	/* svc, db, web, crit: low and min; ops: left as the operator set it. */
	assert_int_equal(pt_protect_path_apply(&pp, root), 8);
	assert_true(value_of(root, "svc", "memory.low") == 288 * MiB);	/* 230 + 32, rounded */
	assert_true(value_of(root, "svc", "memory.min") == 288 * MiB);
	assert_true(value_of(root, "svc/db", "memory.min") == 256 * MiB);
	assert_true(value_of(root, "svc/db", "memory.low") == UINT64_MAX);	/* "max" */
	assert_true(value_of(root, "ops/crit", "memory.low") == UINT64_MAX);
	assert_true(value_of(root, "svc/web", "memory.min") == 64 * MiB);
	assert_true(value_of(root, "ops/crit", "memory.min") == 576 * MiB);
	assert_true(value_of(root, "ops", "memory.low") == UINT64_MAX);
	assert_true(value_of(root, "ops", "memory.min") == UINT64_MAX);

	/* About the same use: nothing written. */
	pt_protect_path_begin(&pp);
	pt_protect_path_add(&pp, "/svc/db", 210 * MiB);
	pt_protect_path_add(&pp, "/svc/web", 30 * MiB);
	pt_protect_path_add(&pp, "/ops/crit", 500 * MiB);
	assert_int_equal(pt_protect_path_apply(&pp, root), 0);

	/* db grew, ops/crit is no longer critical: svc and db's min raised, crit put back. */
	pt_protect_path_begin(&pp);
	pt_protect_path_add(&pp, "/svc/db", 300 * MiB);
	pt_protect_path_add(&pp, "/svc/web", 30 * MiB);
	assert_int_equal(pt_protect_path_apply(&pp, root), 5);
	assert_true(value_of(root, "svc", "memory.low") == 384 * MiB);
	assert_true(value_of(root, "svc", "memory.min") == 384 * MiB);
	assert_true(value_of(root, "svc/db", "memory.min") == 352 * MiB);
	assert_true(value_of(root, "ops/crit", "memory.min") == 0);
	assert_true(value_of(root, "ops/crit", "memory.low") == 0);
	assert_true(value_of(root, "svc/db", "memory.low") == UINT64_MAX);
	assert_true(value_of(root, "ops", "memory.min") == UINT64_MAX);

	/* None is critical any more (or all are gone): everything as it was. */
	pt_protect_path_begin(&pp);
	assert_int_equal(pt_protect_path_apply(&pp, root), 6);
	assert_true(value_of(root, "svc", "memory.low") == 0);
	assert_true(value_of(root, "svc", "memory.min") == 0);
	assert_true(value_of(root, "svc/db", "memory.min") == 0);
	assert_true(value_of(root, "svc/db", "memory.low") == 0);
	assert_true(value_of(root, "svc/web", "memory.min") == 0);
	assert_true(value_of(root, "svc/web", "memory.low") == 0);
	assert_int_equal(pp.n, 0);
	assert_true(pp.writes == 19);

	/* Release puts back what is still held. */
	pt_protect_path_begin(&pp);
	pt_protect_path_add(&pp, "/svc/db", 100 * MiB);
	assert_int_equal(pt_protect_path_apply(&pp, root), 4);
	assert_true(value_of(root, "svc", "memory.min") == 160 * MiB);
	pt_protect_path_release(&pp, root);
	assert_true(value_of(root, "svc", "memory.low") == 0);
	assert_true(value_of(root, "svc", "memory.min") == 0);
	assert_true(value_of(root, "svc/db", "memory.min") == 0);
	assert_true(value_of(root, "svc/db", "memory.low") == 0);
	fx_rmtree(root);
}

/*
 * A critical container that uses nothing yet (tracked before its workload starts) has its
 * memory.low=max at once, and nothing else: no memory.min, no ancestor's protection, which
 * under memory_recursiveprot would spread to its neighbours.
 */
static void test_empty_critical_container(void **state)
{
	char *root = fx_tmpdir();
	struct pt_protect_path pp = { 0 };

	(void)state;
	tree(root);
	pt_protect_path_begin(&pp);
	pt_protect_path_add(&pp, "/svc/db", 0);
	assert_int_equal(pt_protect_path_apply(&pp, root), 1);
	assert_true(value_of(root, "svc/db", "memory.low") == UINT64_MAX);
	assert_true(value_of(root, "svc/db", "memory.min") == 0);
	assert_true(value_of(root, "svc", "memory.low") == 0);
	assert_true(value_of(root, "svc", "memory.min") == 0);
	assert_null(find(&pp, "/svc"));
	/* Its workload starts: min and the ancestor follow its use, low stays. */
	pt_protect_path_begin(&pp);
	pt_protect_path_add(&pp, "/svc/db", 100 * MiB);
	assert_int_equal(pt_protect_path_apply(&pp, root), 3);
	assert_true(value_of(root, "svc/db", "memory.min") == 160 * MiB);
	assert_true(value_of(root, "svc", "memory.low") == 160 * MiB);
	/* No longer critical: put back. */
	pt_protect_path_begin(&pp);
	assert_int_equal(pt_protect_path_apply(&pp, root), 4);
	assert_true(value_of(root, "svc/db", "memory.low") == 0);
	assert_true(value_of(root, "svc/db", "memory.min") == 0);
	assert_int_equal(pp.n, 0);
	pt_protect_path_release(&pp, root);
	fx_rmtree(root);
}

static void test_unreadable_cgroup_is_skipped(void **state)
{
	char *root = fx_tmpdir();
	struct pt_protect_path pp = { 0 };

	(void)state;
	fx_write(root, "x/crit/memory.min", "0\n");	/* x has no protection files */
	fx_write(root, "x/crit/memory.low", "0\n");
	pt_protect_path_begin(&pp);
	pt_protect_path_add(&pp, "/x/crit", 100 * MiB);
	assert_int_equal(pt_protect_path_apply(&pp, root), 2);	/* crit's memory.low and .min */
	assert_true(find(&pp, "/x")->failed);
	assert_true(value_of(root, "x/crit", "memory.min") == 160 * MiB);
	pt_protect_path_release(&pp, root);
	fx_rmtree(root);
}

/* What @show prints of @pp, as a malloc'd string. */
static char *render(void (*show)(FILE *, const struct pt_protect_path *),
		    const struct pt_protect_path *pp)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	show(out, pp);
	fclose(out);
	return buf;
}

/* What pagetierctl status shows of it, in text and JSON. */
static void test_status(void **state)
{
	char *root = fx_tmpdir();
	struct pt_protect_path pp = { 0 };
	char *buf;

	(void)state;
	tree(root);
	pt_protect_path_begin(&pp);
	pt_protect_path_add(&pp, "/svc/db", 200 * MiB);
	pt_protect_path_add(&pp, "/ops/crit", 500 * MiB);	/* ops: the operator's, not shown */
	pt_protect_path_apply(&pp, root);
	buf = render(pt_protect_path_status_text, &pp);
	assert_string_equal(buf,
		"protection: /svc memory.low 256 MiB, memory.min 256 MiB for 200 MiB of critical containers\n"
		"protection: /svc/db memory.low max, memory.min 256 MiB for 200 MiB of critical containers\n"
		"protection: /ops/crit memory.low max, memory.min 576 MiB for 500 MiB of critical containers\n");
	free(buf);
	buf = render(pt_protect_path_status_json, &pp);
	assert_string_equal(buf,
		"[{\"cgroup\":\"/svc\",\"need_bytes\":209715200,\"low_bytes\":268435456,\"min_bytes\":268435456},"
		"{\"cgroup\":\"/svc/db\",\"need_bytes\":209715200,\"low_bytes\":18446744073709551615,\"min_bytes\":268435456},"
		"{\"cgroup\":\"/ops/crit\",\"need_bytes\":524288000,\"low_bytes\":18446744073709551615,\"min_bytes\":603979776}]");
	free(buf);
	pt_protect_path_release(&pp, root);
	fx_rmtree(root);
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/*
 * A pagetierd that did not stop cleanly left its values: the next one puts the operator's
 * back where the cgroup still holds what was written, and leaves values changed since.
 */
static void test_state_kept_and_recovered(void **state)
{
	char *root = fx_tmpdir();
	struct pt_protect_path pp = { 0 }, next = { 0 };
	char text[4096];

	(void)state;
	tree(root);
	fx_write(root, "my svc/memory.low", "0\n");	/* a cgroup name with a space */
	fx_write(root, "my svc/memory.min", "4096\n");
	fx_write(root, "my svc/c/memory.min", "0\n");
	fx_write(root, "my svc/c/memory.low", "0\n");
	snprintf(pp.state, sizeof(pp.state), "%s/protection", root);
	pt_protect_path_begin(&pp);
	pt_protect_path_add(&pp, "/svc/db", 200 * MiB);
	pt_protect_path_add(&pp, "/my svc/c", 100 * MiB);
	assert_int_equal(pt_protect_path_apply(&pp, root), 8);
	assert_true(exists(pp.state));
	assert_true(pt_read_file(pp.state, text, sizeof(text)) > 0);
	assert_non_null(strstr(text, "memory.min 167772160 4096 /my svc\n"));
	assert_non_null(strstr(text, "memory.low 268435456 0 /svc\n"));
	assert_non_null(strstr(text, "memory.low 18446744073709551615 0 /svc/db\n"));

	/* Killed here (no release). The operator changes svc's memory.low meanwhile. */
	fx_write(root, "svc/memory.low", "1073741824\n");
	snprintf(next.state, sizeof(next.state), "%s/protection", root);
	assert_int_equal(pt_protect_path_recover(&next, root), 7);
	assert_false(exists(next.state));
	assert_true(value_of(root, "svc", "memory.low") == 1024 * MiB);	/* theirs, kept */
	assert_true(value_of(root, "svc", "memory.min") == 0);
	assert_true(value_of(root, "svc/db", "memory.min") == 0);
	assert_true(value_of(root, "svc/db", "memory.low") == 0);	/* "max" put back */
	assert_true(value_of(root, "my svc", "memory.min") == 4096);
	assert_true(value_of(root, "my svc", "memory.low") == 0);
	assert_true(value_of(root, "my svc/c", "memory.min") == 0);
	assert_true(value_of(root, "my svc/c", "memory.low") == 0);
	/* Nothing left to recover the next time. */
	assert_int_equal(pt_protect_path_recover(&next, root), 0);

	/* A clean release leaves no state. */
	for (size_t i = 0; i < pp.n; i++)
		memset(pp.c[i].written, 0, sizeof(pp.c[i].written));
	pt_protect_path_release(&pp, root);
	assert_false(exists(pp.state));
	fx_rmtree(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_target),
		cmocka_unit_test(test_cgroups_of_a_path),
		cmocka_unit_test(test_apply_and_put_back),
		cmocka_unit_test(test_empty_critical_container),
		cmocka_unit_test(test_unreadable_cgroup_is_skipped),
		cmocka_unit_test(test_state_kept_and_recovered),
		cmocka_unit_test(test_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
