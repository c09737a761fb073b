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
	"idle_threshold = 10s\n"
	"idle_cpu = 2.5%\n"
	"cold_after = 0\n";

static const char web_conf[] =
	"[alpha]\n"
	"match_cgroup = /pt/alpha\n"
	"class = besteffort\n"
	"idle_threshold = 2s\n"
	"resident_floor = 16M\n"
	"offload_cap = 1G\n"
	"cold_after = 3s\n"
	"idle_cpu = 10%\n"
	"idle_packets = 3\n"
	"idle_fresh = 512K\n"
	"idle_working_set = 8M\n"
	"wake_refaults = 1M\n"
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
	assert_int_equal(p->idle.threshold_ms, 2000);
	assert_int_equal(p->idle.cpu_permille, 100);
	assert_int_equal(p->idle.max_packets, 3);
	assert_int_equal(p->idle.fresh_bytes, 512 << 10);
	assert_int_equal(p->idle.working_set_bytes, 8 << 20);
	assert_int_equal(p->idle.wake_pages, 256);
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
	/* Keys it did not set come from [defaults], then the built-in defaults. */
	assert_int_equal(p->idle.threshold_ms, 10000);
	assert_int_equal(p->idle.cpu_permille, 25);
	assert_int_equal(p->cold_after_ms, 0);
	assert_int_equal(p->idle.max_packets, 0);
	assert_int_equal(p->idle.fresh_bytes, 1 << 20);
	assert_int_equal(p->idle.wake_pages, 64);

	assert_null(pt_config_match(&cfg, "/pt/gamma"));
	assert_null(pt_config_match(&cfg, "/pt/alpha/child"));	/* globs do not cross '/' */
	/* An id inside a longer hex run is a different container. */
	assert_null(pt_config_match(&cfg, "/system.slice/docker-aa3f2a9c01ab77.scope"));
	/* A parent named after the id does not make its children match. */
	assert_null(pt_config_match(&cfg, "/3f2a9c01ab77/x"));
	pt_config_free(&cfg);
	fx_rmtree(dir);
}

static void test_builtin_defaults(void **state)
{
	char *dir = fx_tmpdir(), err[PT_ERRBUF_MAX];
	struct pt_config cfg;
	const struct pt_policy *p;

	(void)state;
	fx_write(dir, "containers.d/a.conf", "[a]\nmatch_cgroup = /a\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), 0);
	p = pt_config_match(&cfg, "/a");
	assert_non_null(p);
	assert_int_equal(p->class, PT_CLASS_BESTEFFORT);
	assert_true(p->prefetch);
	assert_int_equal(p->idle.threshold_ms, 30000);
	assert_int_equal(p->idle.cpu_permille, 50);
	assert_int_equal(p->idle.max_packets, 0);
	assert_int_equal(p->idle.working_set_bytes, 16 << 20);
	assert_int_equal(p->idle.fresh_bytes, 1 << 20);
	assert_int_equal(p->idle.wake_pages, 64);
	assert_int_equal(p->cold_after_ms, 120000);	/* cold offload on by default */
	assert_int_equal(pt_idle_params_check(&p->idle), 0);
	pt_config_free(&cfg);
	fx_rmtree(dir);
}

static void test_parse_permille(void **state)
{
	uint32_t v;

	(void)state;
	assert_int_equal(pt_parse_permille("5%", &v), 0);
	assert_int_equal(v, 50);
	assert_int_equal(pt_parse_permille("0.5%", &v), 0);
	assert_int_equal(v, 5);
	assert_int_equal(pt_parse_permille("150%", &v), 0);	/* more than one CPU */
	assert_int_equal(v, 1500);
	assert_int_equal(pt_parse_permille("0.25%", &v), 0);	/* one decimal kept */
	assert_int_equal(v, 2);
	assert_int_equal(pt_parse_permille("5", &v), -EINVAL);
	assert_int_equal(pt_parse_permille("5.%", &v), -EINVAL);
	assert_int_equal(pt_parse_permille("%", &v), -EINVAL);
	assert_int_equal(pt_parse_permille("-1%", &v), -EINVAL);
	assert_int_equal(pt_parse_permille("99999999%", &v), -EINVAL);
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
	expect_bad("[a]\nmatch_cgroup = /x\nidle_cpu = 5\n", "3", "idle_cpu must be a share of one CPU in percent");
	expect_bad("[a]\nmatch_cgroup = /x\nidle_packets = 64\n", "3", "idle_packets must be a number of ingress packets from 0 to 63");
	expect_bad("[a]\nmatch_cgroup = /x\nidle_packets = -1\n", "3", "idle_packets must be");
	expect_bad("[a]\nmatch_cgroup = /x\nidle_fresh = a lot\n", "3", "idle_fresh must be a size");
	expect_bad("[a]\nmatch_cgroup = /x\nidle_working_set = -\n", "3", "idle_working_set must be a size");
	expect_bad("[a]\nmatch_cgroup = /x\nwake_refaults = 1K\n", "3", "wake_refaults must be a size per second of at least 4K");
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

	/* [defaults] takes policy keys, but never what names a container. */
	dir = fx_tmpdir();
	fx_write(dir, "pagetierd.conf",
		 "[defaults]\nmatch_cgroup = /x\nidle_cpu = lots\nwibble = 2\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), -EINVAL);
	assert_non_null(strstr(err, "pagetierd.conf:2: match_cgroup belongs in a container's section"));
	assert_non_null(strstr(err, "pagetierd.conf:3: idle_cpu must be"));
	assert_non_null(strstr(err, "pagetierd.conf:4: unknown key 'wibble' in [defaults]"));
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
		cmocka_unit_test(test_builtin_defaults),
		cmocka_unit_test(test_parse_permille),
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
