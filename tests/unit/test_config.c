// SPDX-License-Identifier: GPL-2.0
/* Config parsing and validation: values, errors with file:line, permissions, matching. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sys/stat.h>

#include "config.h"
#include "fixture.h"

static void test_parse_size(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(pt_parse_size("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(pt_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(pt_parse_size("64M", &v), 0);
	assert_int_equal(v, 64ULL << 20);
	assert_int_equal(pt_parse_size("2GiB", &v), 0);
	assert_int_equal(v, 2ULL << 30);
	assert_int_equal(pt_parse_size("1t", &v), 0);
	assert_int_equal(v, 1ULL << 40);
	assert_int_equal(pt_parse_size("", &v), -EINVAL);
	assert_int_equal(pt_parse_size("-1", &v), -EINVAL);
	assert_int_equal(pt_parse_size("12Q", &v), -EINVAL);
	assert_int_equal(pt_parse_size("M", &v), -EINVAL);
	assert_int_equal(pt_parse_size("99999999999999999999", &v), -EINVAL);
	assert_int_equal(pt_parse_size("20000000000T", &v), -EINVAL);	/* overflows */
}

static void test_parse_duration(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(pt_parse_duration_ms("500ms", &v), 0);
	assert_int_equal(v, 500);
	assert_int_equal(pt_parse_duration_ms("3s", &v), 0);
	assert_int_equal(v, 3000);
	assert_int_equal(pt_parse_duration_ms("2m", &v), 0);
	assert_int_equal(v, 120000);
	assert_int_equal(pt_parse_duration_ms("1h", &v), 0);
	assert_int_equal(v, 3600000);
	/* A bare number is ambiguous and refused. */
	assert_int_equal(pt_parse_duration_ms("30", &v), -EINVAL);
	assert_int_equal(pt_parse_duration_ms("3 s", &v), -EINVAL);
}

static void test_parse_bool(void **state)
{
	bool b;

	(void)state;
	assert_int_equal(pt_parse_bool("yes", &b), 0);
	assert_true(b);
	assert_int_equal(pt_parse_bool("OFF", &b), 0);
	assert_false(b);
	assert_int_equal(pt_parse_bool("maybe", &b), -EINVAL);
}

static const char main_conf[] =
	"# pagetierd test config\n"
	"[daemon]\n"
	"cgroup_root = /sys/fs/cgroup\n"
	"runtime_dir = /run/pt-test\n"
	"poll_interval = 200ms\n"
	"scan_interval = 2s\n"
	"chunk_size = 128K\n"
	"offload_rate = 1G\n"
	"free_watermark = 512M\n"
	"prefetch_rate = 0\n"
	"log_level = debug\n"
	"\n"
	"[defaults]\n"
	"idle_threshold = 10s\n";

static const char web_conf[] =
	"[alpha]\n"
	"match_cgroup = /pt/alpha\n"
	"class = besteffort\n"
	"idle_threshold = 2s\n"
	"resident_floor = 16M\n"
	"offload_cap = 1G\n"
	"cold_after = 3s\n"
	"\n"
	"[db]\n"
	"match_id = 3f2a9c01ab77\n"
	"class = critical\n"
	"prefetch = no\n";

static void test_load_good(void **state)
{
	char *dir = fx_tmpdir(), err[PT_ERRBUF_MAX];
	struct pt_config cfg;
	const struct pt_policy *p;

	(void)state;
	fx_write(dir, "pagetierd.conf", main_conf);
	fx_write(dir, "containers.d/web.conf", web_conf);
	fx_write(dir, "containers.d/README", "not a .conf: ignored\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), 0);
	assert_string_equal(err, "");
	assert_string_equal(cfg.runtime_dir, "/run/pt-test");
	assert_int_equal(cfg.poll_interval_ms, 200);
	assert_int_equal(cfg.log_level, PT_LOG_DEBUG);
	assert_int_equal(cfg.scan_interval_ms, 2000);
	assert_int_equal(cfg.chunk_shift, 17);
	assert_int_equal(cfg.offload_rate, 1ULL << 30);
	assert_int_equal(cfg.free_watermark, 512ULL << 20);
	assert_int_equal(cfg.prefetch_rate, 0);
	assert_int_equal(cfg.n_policies, 2);

	p = pt_config_match(&cfg, "/pt/alpha");
	assert_non_null(p);
	assert_string_equal(p->name, "alpha");
	assert_int_equal(p->idle_threshold_ms, 2000);
	assert_int_equal(p->resident_floor_bytes, 16 << 20);
	assert_int_equal(p->offload_cap_bytes, 1ULL << 30);
	assert_int_equal(p->cold_after_ms, 3000);
	assert_true(p->prefetch);
	assert_non_null(strstr(p->source, "web.conf:1"));

	p = pt_config_match(&cfg, "/system.slice/docker-3f2a9c01ab77aa55.scope");
	assert_non_null(p);
	assert_string_equal(p->name, "db");
	assert_int_equal(p->class, PT_CLASS_CRITICAL);
	assert_false(p->prefetch);
	assert_int_equal(p->idle_threshold_ms, 10000);	/* from [defaults] */

	assert_null(pt_config_match(&cfg, "/pt/gamma"));
	assert_null(pt_config_match(&cfg, "/pt/alpha/child"));	/* globs do not cross '/' */
	/* An id inside a longer hex run is a different container. */
	assert_null(pt_config_match(&cfg, "/system.slice/docker-aa3f2a9c01ab77.scope"));
	/* A parent named after the id does not make its children match. */
	assert_null(pt_config_match(&cfg, "/3f2a9c01ab77/x"));
	pt_config_free(&cfg);
	fx_rmtree(dir);
}

static void test_missing_dir_is_error(void **state)
{
	char err[PT_ERRBUF_MAX];
	struct pt_config cfg;

	(void)state;
	assert_int_equal(pt_config_load(&cfg, "/nonexistent/pagetier", true, err), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/pagetier: not a directory"));
}

static void test_empty_dir_is_valid(void **state)
{
	char *dir = fx_tmpdir(), err[PT_ERRBUF_MAX];
	struct pt_config cfg;

	(void)state;
	assert_int_equal(pt_config_load(&cfg, dir, true, err), 0);
	assert_int_equal(cfg.n_policies, 0);
	assert_string_equal(cfg.cgroup_root, "/sys/fs/cgroup");
	pt_config_free(&cfg);
	fx_rmtree(dir);
}

/* Loads a tree with one bad container file and checks the message names file:line. */
static void expect_bad(const char *conf, const char *where, const char *what)
{
	char *dir = fx_tmpdir(), err[PT_ERRBUF_MAX], loc[PATH_MAX + 32];
	struct pt_config cfg;

	fx_write(dir, "containers.d/bad.conf", conf);
	assert_int_equal(pt_config_load(&cfg, dir, true, err), -EINVAL);
	snprintf(loc, sizeof(loc), "%s/containers.d/bad.conf:%s: ", dir, where);
	if (!strstr(err, loc) || !strstr(err, what))
		fail_msg("expected '%s...%s' in:\n%s", loc, what, err);
	assert_null(cfg.policies);
	fx_rmtree(dir);
}

static void test_bad_values(void **state)
{
	(void)state;
	expect_bad("[a]\nmatch_cgroup = /x\nclass = urgent\n", "3", "class must be critical or besteffort");
	expect_bad("[a]\nmatch_cgroup = /x\nidle_threshold = 30\n", "3", "idle_threshold must be a duration");
	expect_bad("[a]\nmatch_cgroup = /x\n\nresident_floor = lots\n", "4", "resident_floor must be a size");
	expect_bad("[a]\nmatch_cgroup = relative\n", "2", "must be a path or glob starting with '/'");
	expect_bad("[a]\nmatch_id = XYZ\n", "2", "match_id must be a container id");
	expect_bad("[a]\nmatch_cgroup = /x\nprefetch = sometimes\n", "3", "prefetch must be yes or no");
	expect_bad("[a]\nmatch_cgroup = /x\ncold_after = soon\n", "3", "cold_after must be a duration");
}

static void test_bad_structure(void **state)
{
	(void)state;
	expect_bad("[a]\nmatch_cgroup = /x\nwibble = 1\n", "3", "unknown key 'wibble' in [a]");
	expect_bad("match_cgroup = /x\n", "1", "outside of any [section]");
	expect_bad("[a]\nmatch_cgroup = /x\nmatch_cgroup = /y\n", "3", "duplicate key 'match_cgroup'");
	expect_bad("[a b]\nmatch_cgroup = /x\n", "2", "container name [a b] must be");
	expect_bad("[a]\nmatch_cgroup = /x\nthis line has no equals sign\n", "3", "syntax error");
	expect_bad("[a]\nmatch_cgroup = /x\n[unclosed\n", "3", "syntax error");
	expect_bad("[a]\nclass = critical\n", "1", "neither match_cgroup nor match_id");
}

static void test_bad_main_conf(void **state)
{
	char *dir = fx_tmpdir(), err[PT_ERRBUF_MAX];
	struct pt_config cfg;

	(void)state;
	fx_write(dir, "pagetierd.conf",
		 "[daemon]\npoll_interval = 5ms\n[tier]\nx = 1\n[daemon]\nchunk_size = 48K\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), -EINVAL);
	assert_non_null(strstr(err, "pagetierd.conf:2: poll_interval must be"));
	assert_non_null(strstr(err, "pagetierd.conf:4: unknown section [tier]"));
	assert_non_null(strstr(err, "pagetierd.conf:6: chunk_size must be a power of two"));
	fx_rmtree(dir);
}

static void test_duplicate_container_across_files(void **state)
{
	char *dir = fx_tmpdir(), err[PT_ERRBUF_MAX];
	struct pt_config cfg;

	(void)state;
	fx_write(dir, "containers.d/a.conf", "[web]\nmatch_cgroup = /a\n");
	fx_write(dir, "containers.d/b.conf", "\n[web]\nmatch_cgroup = /b\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), -EINVAL);
	assert_non_null(strstr(err, "b.conf:3: container [web] is already defined at"));
	assert_non_null(strstr(err, "a.conf:1"));
	fx_rmtree(dir);
}

static void test_unsafe_permissions(void **state)
{
	char *dir = fx_tmpdir(), err[PT_ERRBUF_MAX], path[PATH_MAX];
	struct pt_config cfg;

	(void)state;
	fx_write(dir, "containers.d/web.conf", "[web]\nmatch_cgroup = /a\n");
	snprintf(path, sizeof(path), "%s/containers.d/web.conf", dir);
	chmod(path, 0666);
	assert_int_equal(pt_config_load(&cfg, dir, true, err), -EPERM);
	assert_non_null(strstr(err, "web.conf: unsafe permissions (mode 0666"));
	/* The check can be turned off (tests, --check-config of a staged tree). */
	assert_int_equal(pt_config_load(&cfg, dir, false, err), 0);
	pt_config_free(&cfg);
	fx_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_parse_bool),
		cmocka_unit_test(test_load_good),
		cmocka_unit_test(test_missing_dir_is_error),
		cmocka_unit_test(test_empty_dir_is_valid),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_bad_structure),
		cmocka_unit_test(test_bad_main_conf),
		cmocka_unit_test(test_duplicate_container_across_files),
		cmocka_unit_test(test_unsafe_permissions),
	};

	umask(022);
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
