// SPDX-License-Identifier: GPL-2.0
/* Config parsing and validation: values, errors with file:line, permissions, matching. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include "config.h"
#include "fixture.h"

/* Container ids as the runtimes draw them: 64 hex digits. */
#define ID_DOCKER "3f2a9c01ab77d548c5b83fa61d8e3bd86ad42a7ffea9b7c86e3f9d8095c1577d"
/* Shares ID_DOCKER's first 11 digits, one short of the shortest match_id. */
#define ID_TWIN "3f2a9c01ab7e72b33a1cb0bfc9cdd3db0102962414c7a0d85aad94eba64cd8c3"
#define ID_PODMAN "2f259bab93aaaaa2542ba43ef33eb990d0999ee1b9924b557b7be53c0b7a1bb9"
#define ID_CTRD "2397d068a8d1552a4c3f9147ba9c94e086bfd66fb2acb5bbaf47197105127d5f"
#define ID_CRIO "c64064614423cb790e88b3e5492ff5ccf673b25ae823089f7a60c65cda24d809"
#define ID_PAUSE "b7ad567477c83756aab9a542b2be04f77dbae25115d85f22070d74d8cc4779dc"
/* A pod's uid, as the kubelet writes it in systemd slice names and in cgroupfs paths. */
#define UID_SD "6b1e3f0a_52c4_4e7b_9d1a_0c8f2b7a9e31"
#define UID_FS "6b1e3f0a-52c4-4e7b-9d1a-0c8f2b7a9e31"
#define BURSTABLE "/kubepods.slice/kubepods-burstable.slice"
#define POD_SD BURSTABLE "/kubepods-burstable-pod" UID_SD ".slice"
#define POD_FS "/kubepods/burstable/pod" UID_FS

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
	"metrics_listen = 127.0.0.1:9464\n"
	"log_level = debug\n"
	"sample_reader = io_uring\n"
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
	assert_int_equal(cfg.sample_reader, PT_READER_IO_URING);
	assert_int_equal(cfg.scan_interval_ms, 2000);
	assert_int_equal(cfg.chunk_shift, 17);
	assert_int_equal(cfg.offload_rate, 1ULL << 30);
	assert_int_equal(cfg.free_watermark, 512ULL << 20);
	assert_int_equal(cfg.prefetch_rate, 0);
	assert_string_equal(cfg.metrics_listen, "127.0.0.1:9464");
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

	p = pt_config_match(&cfg, "/system.slice/docker-" ID_DOCKER ".scope");
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
	/* An id that holds the match_id anywhere but at its start is a different container. */
	assert_null(pt_config_match(&cfg, "/system.slice/docker-aa3f2a9c01ab77"
				       "2397d068a8d1552a4c3f9147ba9c94e086bfd66fb2acb5bbaf.scope"));
	assert_null(pt_config_match(&cfg, "/system.slice/docker-" ID_TWIN ".scope"));
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
	assert_string_equal(cfg.metrics_listen, "");	/* no metrics unless asked */
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
		 "[daemon]\npoll_interval = 5ms\n[tier]\nx = 1\n[daemon]\nchunk_size = 48K\n"
		 "sample_reader = aio\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), -EINVAL);
	assert_non_null(strstr(err, "pagetierd.conf:7: sample_reader must be pread or io_uring, got 'aio'"));
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

/* Loads @conf as containers.d/c.conf (asserting it is valid) into @cfg. */
static char *load(struct pt_config *cfg, const char *conf)
{
	char *dir = fx_tmpdir(), err[PT_ERRBUF_MAX];

	fx_write(dir, "containers.d/c.conf", conf);
	if (pt_config_load(cfg, dir, true, err))
		fail_msg("config rejected:\n%s", err);
	return dir;
}

/* The name of the policy for @relpath, or "-". */
static const char *who(const struct pt_config *cfg, const char *relpath)
{
	const struct pt_policy *p = pt_config_match(cfg, relpath);

	return p ? p->name : "-";
}

/* Which cgroup names are a container's own, and whose: every runtime, both drivers. */
static void test_container_id_shapes(void **state)
{
	static const struct {
		const char *relpath, *id;
	} yes[] = {
		{ "/system.slice/docker-" ID_DOCKER ".scope", ID_DOCKER },	/* docker, systemd */
		{ "/docker/" ID_DOCKER, ID_DOCKER },				/* docker, cgroupfs */
		{ "/machine.slice/libpod-" ID_PODMAN ".scope", ID_PODMAN },	/* podman, systemd */
		{ "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID_PODMAN
		  ".scope", ID_PODMAN },					/* podman, rootless */
		{ "/machine.slice/machine-libpod_pod_" ID_PAUSE ".slice/libpod-" ID_PODMAN ".scope",
		  ID_PODMAN },							/* in a podman pod */
		{ "/libpod_parent/libpod-" ID_PODMAN, ID_PODMAN },		/* podman, cgroupfs */
		{ POD_SD "/cri-containerd-" ID_CTRD ".scope", ID_CTRD },	/* containerd, k8s */
		{ "/kubepods.slice/kubepods-pod" UID_SD ".slice/cri-containerd-" ID_CTRD ".scope",
		  ID_CTRD },							/* guaranteed QoS */
		{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_SD
		  ".slice/cri-containerd-" ID_CTRD ".scope", ID_CTRD },
		{ POD_FS "/" ID_CTRD, ID_CTRD },				/* containerd, cgroupfs */
		{ "/kubepods/pod" UID_FS "/" ID_CTRD, ID_CTRD },		/* ... guaranteed */
		{ POD_SD "/crio-" ID_CRIO ".scope", ID_CRIO },			/* cri-o, systemd */
		{ POD_FS "/crio-" ID_CRIO, ID_CRIO },				/* cri-o, cgroupfs */
		{ POD_SD "/docker-" ID_DOCKER ".scope", ID_DOCKER },		/* cri-dockerd */
	};
	static const char *const no[] = {
		"/machine.slice/libpod-conmon-" ID_PODMAN ".scope",	/* podman's monitor */
		"/libpod_parent/conmon",				/* ... with cgroupfs */
		"/libpod_parent/libpod-" ID_PODMAN "/conmon",		/* ... older podman */
		POD_SD "/crio-conmon-" ID_CRIO ".scope",		/* cri-o's monitor */
		POD_FS "/crio-conmon-" ID_CRIO,
		"/machine.slice/libpod-" ID_PODMAN ".scope/container",	/* crun's sub-cgroup */
		"/system.slice/docker-" ID_DOCKER ".scope/init.scope",	/* systemd inside */
		POD_SD, POD_FS, BURSTABLE, "/kubepods.slice", "/kubepods/burstable",
		"/kubepods.slice/kubepods-pod" UID_SD ".slice",
		"/machine.slice/machine-libpod_pod_" ID_PAUSE ".slice",	/* a podman pod */
		"/system.slice/docker.service", "/system.slice/containerd.service",
		"/system.slice/docker-" ID_DOCKER ".mount",		/* not a runtime's shape */
		"/system.slice/" ID_DOCKER ".scope",
		"/system.slice/docker-" ID_DOCKER "0.scope",		/* 65 digits */
		"/system.slice/docker-3f2a9c01ab77.scope",		/* 12: ids have 64 */
		"/docker/3F2A9C01AB77D548C5B83FA61D8E3BD86AD42A7FFEA9B7C86E3F9D8095C1577D",
		"/system.slice/docker-.scope", "", "/",
	};
	char id[PT_ID_LEN + 1];

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!pt_cgroup_container_id(yes[i].relpath, id))
			fail_msg("%s: not taken for a container", yes[i].relpath);
		assert_string_equal(id, yes[i].id);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (pt_cgroup_container_id(no[i], id))
			fail_msg("%s: taken for container %s", no[i], id);
}

/* match_id: the id or its short form finds the container's own cgroup, whatever the runtime. */
static void test_match_id_every_runtime(void **state)
{
	struct pt_config cfg;
	char *dir;

	(void)state;
	dir = load(&cfg, "[docker]\nmatch_id = 3f2a9c01ab77\n\n"	/* docker ps's short id */
			 "[podman]\nmatch_id = " ID_PODMAN "\n\n"	/* the whole id */
			 "[ctrd]\nmatch_id = 2397d068a8d15\n\n"		/* crictl ps: 13 */
			 "[crio]\nmatch_id = c64064614423cb790e88\n");
	assert_string_equal(who(&cfg, "/system.slice/docker-" ID_DOCKER ".scope"), "docker");
	assert_string_equal(who(&cfg, "/docker/" ID_DOCKER), "docker");
	assert_string_equal(who(&cfg, POD_SD "/docker-" ID_DOCKER ".scope"), "docker");
	assert_string_equal(who(&cfg, "/machine.slice/libpod-" ID_PODMAN ".scope"), "podman");
	assert_string_equal(who(&cfg, "/libpod_parent/libpod-" ID_PODMAN), "podman");
	assert_string_equal(who(&cfg, POD_SD "/cri-containerd-" ID_CTRD ".scope"), "ctrd");
	assert_string_equal(who(&cfg, POD_FS "/" ID_CTRD), "ctrd");
	assert_string_equal(who(&cfg, "/kubepods.slice/kubepods-pod" UID_SD
				      ".slice/cri-containerd-" ID_CTRD ".scope"), "ctrd");
	assert_string_equal(who(&cfg, POD_SD "/crio-" ID_CRIO ".scope"), "crio");
	assert_string_equal(who(&cfg, POD_FS "/crio-" ID_CRIO), "crio");

	/* Never the monitor beside the container, nor what is below or above it. */
	assert_string_equal(who(&cfg, "/machine.slice/libpod-conmon-" ID_PODMAN ".scope"), "-");
	assert_string_equal(who(&cfg, POD_SD "/crio-conmon-" ID_CRIO ".scope"), "-");
	assert_string_equal(who(&cfg, POD_FS "/crio-conmon-" ID_CRIO), "-");
	assert_string_equal(who(&cfg, "/machine.slice/libpod-" ID_PODMAN ".scope/container"), "-");
	assert_string_equal(who(&cfg, POD_SD), "-");
	assert_string_equal(who(&cfg, POD_FS), "-");
	/* A container whose id shares 11 digits with a match_id is another container. */
	assert_string_equal(who(&cfg, "/system.slice/docker-" ID_TWIN ".scope"), "-");
	/* The pod's sandbox (pause) container is a container of its own. */
	assert_string_equal(who(&cfg, POD_SD "/cri-containerd-" ID_PAUSE ".scope"), "-");
	pt_config_free(&cfg);
	fx_rmtree(dir);

	/* A whole id that differs in its last digit names another container. */
	dir = load(&cfg, "[a]\nmatch_id = " ID_DOCKER "\n");
	assert_string_equal(who(&cfg, "/docker/" ID_DOCKER), "a");
	assert_string_equal(who(&cfg, "/docker/3f2a9c01ab77d548c5b83fa61d8e3bd86ad42a7ffea9b7c86e3f"
				      "9d8095c1577e"), "-");
	pt_config_free(&cfg);
	fx_rmtree(dir);
}

/* match_cgroup over Kubernetes and Podman trees: QoS classes, pods, containers. */
static void test_match_cgroup_globs(void **state)
{
	struct pt_config cfg;
	char *dir;

	(void)state;
	/* Each burstable pod a context of its own (its containers inside it). */
	dir = load(&cfg, "[pods]\nmatch_cgroup = " BURSTABLE "/kubepods-burstable-pod*.slice\n");
	assert_string_equal(who(&cfg, POD_SD), "pods");
	assert_string_equal(who(&cfg, POD_SD "/cri-containerd-" ID_CTRD ".scope"), "-");
	assert_string_equal(who(&cfg, BURSTABLE), "-");
	assert_string_equal(who(&cfg, "/kubepods.slice/kubepods-besteffort.slice/"
				      "kubepods-besteffort-pod" UID_SD ".slice"), "-");
	pt_config_free(&cfg);
	fx_rmtree(dir);

	/* Guaranteed pods sit beside the QoS slices: "pod*" keeps those out. */
	dir = load(&cfg, "[guaranteed]\nmatch_cgroup = /kubepods.slice/kubepods-pod*.slice\n");
	assert_string_equal(who(&cfg, "/kubepods.slice/kubepods-pod" UID_SD ".slice"),
			    "guaranteed");
	assert_string_equal(who(&cfg, BURSTABLE), "-");
	assert_string_equal(who(&cfg, "/kubepods.slice/kubepods-besteffort.slice"), "-");
	pt_config_free(&cfg);
	fx_rmtree(dir);

	/* Each container of each besteffort pod, containerd and CRI-O, never CRI-O's conmon. */
	dir = load(&cfg, "[be]\nmatch_cgroup = /kubepods.slice/kubepods-besteffort.slice/*/*.scope\n"
			 "[befs]\nmatch_cgroup = /kubepods/besteffort/pod*/*\n");
	assert_string_equal(who(&cfg, "/kubepods.slice/kubepods-besteffort.slice/"
				      "kubepods-besteffort-pod" UID_SD ".slice/crio-" ID_CRIO
				      ".scope"), "be");
	assert_string_equal(who(&cfg, "/kubepods.slice/kubepods-besteffort.slice/"
				      "kubepods-besteffort-pod" UID_SD ".slice/cri-containerd-"
				      ID_CTRD ".scope"), "be");
	assert_string_equal(who(&cfg, "/kubepods.slice/kubepods-besteffort.slice/"
				      "kubepods-besteffort-pod" UID_SD ".slice/crio-conmon-"
				      ID_CRIO ".scope"), "-");
	assert_string_equal(who(&cfg, "/kubepods.slice/kubepods-besteffort.slice/"
				      "kubepods-besteffort-pod" UID_SD ".slice"), "-");
	assert_string_equal(who(&cfg, "/kubepods/besteffort/pod" UID_FS "/" ID_CTRD), "befs");
	assert_string_equal(who(&cfg, "/kubepods/besteffort/pod" UID_FS "/crio-" ID_CRIO), "befs");
	assert_string_equal(who(&cfg, "/kubepods/besteffort/pod" UID_FS "/crio-conmon-" ID_CRIO),
			    "-");
	pt_config_free(&cfg);
	fx_rmtree(dir);

	/* libpod-*.scope means Podman's containers, not their conmon-s... */
	dir = load(&cfg, "[podman]\nmatch_cgroup = /machine.slice/libpod-*.scope\n"
			 "[fs]\nmatch_cgroup = /libpod_parent/*\n");
	assert_string_equal(who(&cfg, "/machine.slice/libpod-" ID_PODMAN ".scope"), "podman");
	assert_string_equal(who(&cfg, "/machine.slice/libpod-conmon-" ID_PODMAN ".scope"), "-");
	assert_string_equal(who(&cfg, "/libpod_parent/libpod-" ID_PODMAN), "fs");
	assert_string_equal(who(&cfg, "/libpod_parent/conmon"), "-");
	pt_config_free(&cfg);
	fx_rmtree(dir);

	/* ... unless the glob asks for them by name. */
	dir = load(&cfg, "[monitors]\nmatch_cgroup = /machine.slice/libpod-conmon-*.scope\n");
	assert_string_equal(who(&cfg, "/machine.slice/libpod-conmon-" ID_PODMAN ".scope"),
			    "monitors");
	assert_string_equal(who(&cfg, "/machine.slice/libpod-" ID_PODMAN ".scope"), "-");
	pt_config_free(&cfg);
	fx_rmtree(dir);
}

/* A container named by its id takes that policy, before any glob, whatever the file order. */
static void test_id_beats_glob(void **state)
{
	char *dir = fx_tmpdir(), err[PT_ERRBUF_MAX];
	struct pt_config cfg;

	(void)state;
	fx_write(dir, "containers.d/00-all.conf",
		 "[all]\nmatch_cgroup = /system.slice/docker-*.scope\n");
	fx_write(dir, "containers.d/10-db.conf",
		 "[db]\nmatch_cgroup = /db\nmatch_id = 3f2a9c01ab77\nclass = critical\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), 0);
	assert_string_equal(who(&cfg, "/system.slice/docker-" ID_DOCKER ".scope"), "db");
	assert_string_equal(who(&cfg, "/system.slice/docker-" ID_TWIN ".scope"), "all");
	assert_string_equal(who(&cfg, "/db"), "db");	/* either key matches */
	assert_true(pt_policy_matches(&cfg.policies[0], "/system.slice/docker-" ID_DOCKER ".scope"));
	pt_config_free(&cfg);
	fx_rmtree(dir);
}

static void test_bad_match(void **state)
{
	(void)state;
	expect_bad("[a]\nmatch_id = 3f2a9c01ab7\n", "2",
		   "match_id must be at least 12 hex digits, enough to name one container");
	expect_bad("[a]\nmatch_id = \n", "2", "match_id must be a container id, hex digits");
	expect_bad("[a]\nmatch_id = web-1\n", "2", "match_id must be a container id, hex digits (0-9, a-f) only, got 'web-1'");
	expect_bad("[a]\nmatch_id = 3F2A9C01AB77\n", "2", "match_id must be in lower case");
	expect_bad("[a]\nmatch_id = " ID_DOCKER "0\n", "2",
		   "match_id must be at most 64 hex digits (a whole container id), got 65");
	expect_bad("[a]\nmatch_id = sha256:" ID_DOCKER "\n", "2",
		   "match_id must be a container's id, not an image's digest");
	expect_bad("[a]\nmatch_id = docker-" ID_DOCKER ".scope\n", "2",
		   "write 'match_id = " ID_DOCKER "'");
	expect_bad("[a]\nmatch_id = /kubepods/besteffort/pod" UID_FS "/crio-3f2a9c01ab77\n", "2",
		   "write 'match_id = 3f2a9c01ab77'");
	expect_bad("[a]\nmatch_id = libpod-conmon-" ID_PODMAN ".scope\n", "2",
		   "hex digits (0-9, a-f) only");
	expect_bad("[a]\nmatch_cgroup = /sys/fs/cgroup/system.slice/docker-*.scope\n", "2",
		   "match_cgroup is a path below cgroup_root (/sys/fs/cgroup): write '/system.slice/docker-*.scope' without it");
	expect_bad("[a]\nmatch_cgroup = /kubepods.slice/\n", "2",
		   "cgroup paths do not end with '/'");
	expect_bad("[a]\nmatch_cgroup = /\n", "2", "cgroup paths do not end with '/'");
}

/* Two sections that can take the same container: the second would never apply. */
static void test_overlapping_ids(void **state)
{
	char *dir = fx_tmpdir(), err[PT_ERRBUF_MAX];
	struct pt_config cfg;

	(void)state;
	fx_write(dir, "containers.d/a.conf", "[db]\nmatch_id = 3f2a9c01ab77\n");
	fx_write(dir, "containers.d/b.conf", "\n[db-full]\nmatch_id = " ID_DOCKER "\n"
		 "[twin]\nmatch_id = 3f2a9c01ab7e\n");	/* not the same: fine */
	assert_int_equal(pt_config_load(&cfg, dir, true, err), -EINVAL);
	assert_non_null(strstr(err, "b.conf:2: container [db-full]: match_id " ID_DOCKER
				    " can name the same container as match_id 3f2a9c01ab77 of [db] ("));
	assert_non_null(strstr(err, "a.conf:1), one being a prefix of the other"));
	assert_null(strstr(err, "[twin]"));
	fx_rmtree(dir);

	dir = fx_tmpdir();
	fx_write(dir, "containers.d/a.conf", "[x]\nmatch_id = 3f2a9c01ab77\n\n"
		 "[y]\nmatch_id = 3f2a9c01ab77\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), -EINVAL);
	assert_non_null(strstr(err, "a.conf:4: container [y]: match_id 3f2a9c01ab77 can name the same container as match_id 3f2a9c01ab77 of [x] ("));
	assert_non_null(strstr(err, "a.conf:1): give each container one section"));
	fx_rmtree(dir);
}

/* metrics_listen: numeric IPv4 ADDR:PORT or [IPv6]:PORT. */
static void test_parse_listen(void **state)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	char why[256], text[INET6_ADDRSTRLEN];
	socklen_t len;

	(void)state;
	assert_int_equal(pt_parse_listen("127.0.0.1:9464", &ss, &len, why, sizeof(why)), 0);
	assert_int_equal(in->sin_family, AF_INET);
	assert_int_equal(ntohs(in->sin_port), 9464);
	assert_int_equal(ntohl(in->sin_addr.s_addr), 0x7f000001);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	assert_int_equal(pt_parse_listen("0.0.0.0:1", &ss, &len, why, sizeof(why)), 0);
	assert_int_equal(ntohs(in->sin_port), 1);
	assert_int_equal(pt_parse_listen("[::1]:65535", &ss, &len, why, sizeof(why)), 0);
	assert_int_equal(in6->sin6_family, AF_INET6);
	assert_int_equal(ntohs(in6->sin6_port), 65535);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	assert_true(IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr));
	assert_int_equal(pt_parse_listen("[fd00:1::2]:9464", &ss, &len, why, sizeof(why)), 0);
	inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
	assert_string_equal(text, "fd00:1::2");
	assert_int_equal(pt_parse_listen("[::]:9464", &ss, &len, why, sizeof(why)), 0);
	assert_true(IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr));

#define BAD(s, what)                                                                   \
	do {                                                                           \
		why[0] = '\0';                                                         \
		assert_int_equal(pt_parse_listen(s, &ss, &len, why, sizeof(why)), -EINVAL); \
		if (!strstr(why, what))                                                \
			fail_msg("'%s': expected '%s' in '%s'", s, what, why);          \
	} while (0)
	BAD("127.0.0.1", "has no port");
	BAD("127.0.0.1:", "port must be a number from 1 to 65535");
	BAD("127.0.0.1:0", "port must be a number from 1 to 65535");
	BAD("127.0.0.1:65536", "port must be a number from 1 to 65535");
	BAD("127.0.0.1:99999999999999999999", "port must be a number");
	BAD("127.0.0.1:-1", "port must be a number");
	BAD("127.0.0.1:94 64", "port must be a number");
	BAD("127.0.0.1:http", "port must be a number");
	BAD(":9464", "has no address");
	BAD("[]:9464", "has no address");
	BAD("localhost:9464", "must be numeric, not a host name");
	BAD("256.0.0.1:9464", "'256.0.0.1' is not an IPv4 address");
	BAD("127.1:9464", "'127.1' is not an IPv4 address");
	BAD("::1:9464", "an IPv6 address goes in brackets");
	BAD("::1", "an IPv6 address goes in brackets");
	BAD("[::1]", "has no port");
	BAD("[::1]9464", "has no port");
	BAD("[::1:9464", "has no closing ']'");
	BAD("[127.0.0.1]:9464", "'127.0.0.1' is not an IPv6 address");
	BAD("[::g]:9464", "'::g' is not an IPv6 address");
	BAD("[fe80::1%eth0]:9464", "zone ids");
	BAD("[0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000]:9464", "longer than an address");
#undef BAD
}

/* The key in pagetierd.conf: empty is off, a bad value is refused with file:line. */
static void test_metrics_listen_key(void **state)
{
	char *dir = fx_tmpdir(), err[PT_ERRBUF_MAX];
	struct pt_config cfg;

	(void)state;
	fx_write(dir, "pagetierd.conf", "[daemon]\nmetrics_listen = [::1]:9100\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), 0);
	assert_string_equal(cfg.metrics_listen, "[::1]:9100");
	pt_config_free(&cfg);
	fx_write(dir, "pagetierd.conf", "[daemon]\nmetrics_listen =\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), 0);
	assert_string_equal(cfg.metrics_listen, "");
	pt_config_free(&cfg);
	fx_write(dir, "pagetierd.conf", "[daemon]\nlog_level = info\n\nmetrics_listen = localhost:9464\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), -EINVAL);
	if (!strstr(err, "pagetierd.conf:4: metrics_listen must be a numeric IPv4 ADDRESS:PORT or [IPv6]:PORT (e.g. 127.0.0.1:9464 or [::1]:9464), or empty for off: 'localhost:9464': the address must be numeric"))
		fail_msg("unexpected error: %s", err);
	fx_write(dir, "pagetierd.conf", "[daemon]\nmetrics_listen = 9464\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), -EINVAL);
	assert_non_null(strstr(err, "pagetierd.conf:2: metrics_listen must be"));
	assert_non_null(strstr(err, "'9464' has no port"));
	/* A policy key it is not. */
	fx_write(dir, "pagetierd.conf", "[defaults]\nmetrics_listen = 127.0.0.1:9464\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), -EINVAL);
	assert_non_null(strstr(err, "unknown key 'metrics_listen' in [defaults]"));
	fx_rmtree(dir);
}

/* cold_watermark: auto (twice free_watermark, off without one), off, a size; else refused. */
static void test_cold_watermark_key(void **state)
{
	char *dir = fx_tmpdir(), err[PT_ERRBUF_MAX];
	struct pt_config cfg;

	(void)state;
	fx_write(dir, "pagetierd.conf", "[daemon]\nlog_level = info\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), 0);
	assert_int_equal(cfg.cold_watermark, PT_COLD_WATERMARK_AUTO);
	assert_int_equal(pt_config_cold_watermark(&cfg), 0);	/* no free_watermark */
	pt_config_free(&cfg);
	fx_write(dir, "pagetierd.conf", "[daemon]\nfree_watermark = 512M\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), 0);
	assert_int_equal(pt_config_cold_watermark(&cfg), 1ULL << 30);
	pt_config_free(&cfg);
	fx_write(dir, "pagetierd.conf", "[daemon]\nfree_watermark = 512M\ncold_watermark = off\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), 0);
	assert_int_equal(pt_config_cold_watermark(&cfg), 0);
	pt_config_free(&cfg);
	fx_write(dir, "pagetierd.conf", "[daemon]\ncold_watermark = 3G\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), 0);
	assert_int_equal(pt_config_cold_watermark(&cfg), 3ULL << 30);
	pt_config_free(&cfg);
	fx_write(dir, "pagetierd.conf", "[daemon]\ncold_watermark = auto\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), 0);
	assert_int_equal(cfg.cold_watermark, PT_COLD_WATERMARK_AUTO);
	pt_config_free(&cfg);
	fx_write(dir, "pagetierd.conf", "[daemon]\ncold_watermark = plenty\n");
	assert_int_equal(pt_config_load(&cfg, dir, true, err), -EINVAL);
	if (!strstr(err, "pagetierd.conf:2: cold_watermark must be a size (e.g. 4G), auto (twice free_watermark) or off (0), got 'plenty'"))
		fail_msg("unexpected error: %s", err);
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
		cmocka_unit_test(test_container_id_shapes),
		cmocka_unit_test(test_match_id_every_runtime),
		cmocka_unit_test(test_match_cgroup_globs),
		cmocka_unit_test(test_id_beats_glob),
		cmocka_unit_test(test_bad_match),
		cmocka_unit_test(test_overlapping_ids),
		cmocka_unit_test(test_parse_listen),
		cmocka_unit_test(test_metrics_listen_key),
		cmocka_unit_test(test_cold_watermark_key),
	};

	umask(022);
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
