// SPDX-License-Identifier: GPL-2.0
/* Rendering of pagetierctl status: the table and the JSON. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

#define MiB (1ULL << 20)

static char *render_host(bool as_json, const struct pt_context *c, size_t n,
			 const struct pt_host_mem *h)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (as_json)
		pt_status_json(f, c, n, "pagetier.ko", 0, h, NULL, NULL);
	else
		pt_status_table(f, c, n, h);
	fclose(f);
	return buf;
}

static char *render(bool as_json, const struct pt_context *c, size_t n)
{
	return render_host(as_json, c, n, NULL);
}

static void fill(struct pt_context *c)
{
	struct pt_policy p = { .name = "alpha", .class = PT_CLASS_BESTEFFORT };

	pt_context_init(c, &p, "/sys/fs/cgroup", "/pt/al\"pha", 4242, 0, 16);
	c->idle.state = PT_STATE_IDLE;
	c->sample.memory_current = 3ULL << 20;
	c->sample.anon = 1ULL << 20;
	c->sample.swap_current = 255ULL << 20;
	c->tier_pages = 65536;
	c->n_wakes = 1;
	c->last_wake_ms = 12;
}

static void test_fmt_bytes(void **state)
{
	char b[16];

	(void)state;
	pt_fmt_bytes(b, sizeof(b), 0);
	assert_string_equal(b, "0");
	pt_fmt_bytes(b, sizeof(b), 1023);
	assert_string_equal(b, "1023");
	pt_fmt_bytes(b, sizeof(b), 256ULL << 20);
	assert_string_equal(b, "256.0M");
	pt_fmt_bytes(b, sizeof(b), 3ULL << 29);
	assert_string_equal(b, "1.5G");
}

/* Why a container is not passed by the polls, nor offloaded yet: "waiting_for". */
static void test_waiting_for(void **state)
{
	struct pt_context c;
	struct pt_action scan = { .kind = PT_JOB_SCAN };
	char w[96], *out;

	(void)state;
	fill(&c);
	assert_false(pt_context_waits_for(&c, w, sizeof(w)));
	assert_string_equal(w, "");
	c.pace.skipping = true;
	out = render(true, &c, 1);
	assert_non_null(strstr(out, "\"waiting_for\":\"\",\"sampled_each_poll\":false"));
	free(out);

	c.busy = true;
	c.busy_action = &scan;
	c.offload_pending = true;
	c.settle_passes = 2;
	c.pace.skipping = false;
	assert_true(pt_context_waits_for(&c, w, sizeof(w)));
	assert_string_equal(w, "scan queued,offload pending,settle passes");
	out = render(true, &c, 1);
	assert_non_null(strstr(out, "\"waiting_for\":\"scan queued,offload pending,settle passes\""
				    ",\"sampled_each_poll\":true"));
	free(out);
	scan.job.started = true;	/* a worker took it */
	assert_true(pt_context_waits_for(&c, w, sizeof(w)));
	assert_string_equal(w, "scan running,offload pending,settle passes");
	/* Cut, never overrun. */
	assert_true(pt_context_waits_for(&c, w, 8));
	assert_int_equal(strlen(w), 7);
	c.busy = false;
	c.offload_pending = false;
	c.settle_passes = 0;
	c.wake_pending = true;
	c.trim_until_ms = 5;
	assert_true(pt_context_waits_for(&c, w, sizeof(w)));
	assert_string_equal(w, "prefetch pending,trim wait");
	pt_context_release(&c);
}

static void test_table(void **state)
{
	struct pt_context c;
	char *out;

	(void)state;
	fill(&c);
	out = render(false, &c, 1);
	assert_non_null(strstr(out, "CONTAINER"));
	assert_non_null(strstr(out, "alpha"));
	assert_non_null(strstr(out, "idle"));
	assert_non_null(strstr(out, "256.0M"));	/* on tier: 65536 pages */
	assert_non_null(strstr(out, "12ms"));
	free(out);
	pt_context_release(&c);
	out = render(false, NULL, 0);
	assert_non_null(strstr(out, "no opted-in container"));
	free(out);
}

static void test_json(void **state)
{
	struct pt_context c;
	char *out;

	(void)state;
	fill(&c);
	out = render(true, &c, 1);
	assert_non_null(strstr(out, "\"backend\":\"pagetier.ko\""));
	assert_non_null(strstr(out, "\"cgroup\":\"/pt/al\\\"pha\""));	/* escaped */
	assert_non_null(strstr(out, "\"cgroup_id\":4242"));
	assert_non_null(strstr(out, "\"state\":\"idle\""));
	assert_non_null(strstr(out, "\"tier_bytes\":268435456"));
	assert_non_null(strstr(out, "\"prefetch_precision\":-1.000"));
	free(out);
	/* Two false wakes in a row: refaults wake it at 4 times the configured rate. */
	c.idle.false_wakes = 2;
	c.idle.refault_shift = 2;
	c.policy.idle.wake_pages = 64;
	out = render(true, &c, 1);
	assert_non_null(strstr(out, "\"false_wakes\":2,\"refault_wake_pages\":256"));
	free(out);
	/* Two idle offloads its background undid, in a row: the next one waits. */
	c.offload_backoff = 2;
	c.offloads_undone = 3;
	c.offload_pending = true;
	out = render(true, &c, 1);
	assert_non_null(strstr(out, "\"offload_backoff\":2,\"offloads_undone\":3"));
	assert_non_null(strstr(out, "\"waiting_for\":\"offload deferred (backoff)\""));
	free(out);
	c.offload_pending = false;
	/* Its jobs' worker CPU, by kind, in whole ms. */
	c.job_cpu_ns[PT_JOB_SCAN] = 2500000;
	c.job_cpu_ns[PT_JOB_COLD] = 7999999;
	out = render(true, &c, 1);
	assert_non_null(strstr(out, "\"job_cpu_ms\":{\"offload\":0,\"prefetch\":0,\"settle\":0,"
				    "\"scan\":2,\"cold\":7,\"trim\":0}"));
	free(out);
	pt_context_release(&c);
}

/*
 * The README's worked example (README.md, "How much memory a container really uses"): an
 * idle web API whose 8 workers share 64 MiB of shmem, mostly offloaded, and a critical
 * database, on a 32 GiB host. Every kind adds up to memory.current.
 */
static void example(struct pt_context c[2], struct pt_host_mem *h)
{
	struct pt_policy api = { .name = "api", .class = PT_CLASS_BESTEFFORT };
	struct pt_policy db = { .name = "db", .class = PT_CLASS_CRITICAL };

	pt_context_init(&c[0], &api, "/sys/fs/cgroup",
			"/system.slice/docker-3f9c2a7be1d4.scope", 4242, 0, 16);
	c[0].idle.state = PT_STATE_IDLE;
	c[0].sample.memory_current = 396 * MiB;
	c[0].sample.anon = 212 * MiB;
	c[0].sample.file_cache = 96 * MiB;
	c[0].sample.shmem = 64 * MiB;
	c[0].sample.kernel = 18 * MiB;		/* other: 6 MiB of unmapped swap cache */
	c[0].sample.swap_current = 1862 * MiB;
	c[0].sample.swapcached = 6 * MiB;	/* saved: 1856 MiB */
	c[0].tier_pages = 1856 * 256;
	c[0].tier_written = 2041 * MiB;
	c[0].tier_written_known = true;
	c[0].idle_saved = 1790 * MiB;
	c[0].n_idle = 3;
	c[0].n_wakes = 2;
	c[0].last_wake_ms = 41;
	c[0].hot.refaults = 112;
	c[0].hot.precision = 0.91;
	c[0].hot.recall = 0.87;

	pt_context_init(&c[1], &db, "/sys/fs/cgroup",
			"/system.slice/docker-8e21d04c55aa.scope", 4343, 0, 16);
	c[1].sample.memory_current = 5810 * MiB;
	c[1].sample.anon = 3100 * MiB;
	c[1].sample.file_cache = 2048 * MiB;
	c[1].sample.shmem = 512 * MiB;
	c[1].sample.kernel = 150 * MiB;
	c[1].hot.precision = -1;
	c[1].hot.recall = -1;

	memset(h, 0, sizeof(*h));
	assert_int_equal(pt_meminfo_parse("MemTotal:       33554432 kB\n"
					  "MemFree:         2097152 kB\n"
					  "MemAvailable:   11010048 kB\n", h), 0);
	pt_host_offloaded(h, c, 2);
}

static void test_memory_split(void **state)
{
	struct pt_context c[2];
	struct pt_host_mem h;
	char *out;

	(void)state;
	example(c, &h);
	/* The host: 32 GiB, 21.5 GiB used, 1856 MiB offloaded: 7.8% of the 23.3 GiB. */
	assert_int_equal(h.total, 32768 * MiB);
	assert_int_equal(h.used, 22016 * MiB);
	assert_int_equal(h.offloaded, 1856 * MiB);

	out = render_host(false, c, 2, &h);
	/* PT_STATUS_SAMPLE=PATH: the table, for the README and the man page. */
	if (getenv("PT_STATUS_SAMPLE")) {
		FILE *f = fopen(getenv("PT_STATUS_SAMPLE"), "w");

		assert_non_null(f);
		fputs(out, f);
		fclose(f);
	}
	assert_non_null(strstr(out, " FILE "));
	assert_non_null(strstr(out, " SHMEM "));
	assert_non_null(strstr(out, " KERNEL "));
	assert_non_null(strstr(out, "IDLE-SAVED"));
	/* api: resident, anon, file, shmem, kernel, swapped, on tier, saved, idle-saved */
	assert_non_null(strstr(out, "  396.0M    212.0M     96.0M     64.0M     18.0M      1.8G      1.8G      1.8G       1.7G"));
	assert_non_null(strstr(out, "host: 32.0G memory, 21.5G used, 1.8G offloaded by pagetier (7.8% of the 23.3G in use or offloaded)"));
	free(out);

	out = render_host(true, c, 2, &h);
	assert_non_null(strstr(out, "\"host\":{\"memory_total_bytes\":34359738368,"
				    "\"memory_available_bytes\":11274289152,"
				    "\"memory_used_bytes\":23085449216,"
				    "\"offloaded_bytes\":1946157056,\"offloaded_share\":0.0777}"));
	assert_non_null(strstr(out, "\"resident_bytes\":415236096,\"anon_bytes\":222298112,"
				    "\"file_bytes\":100663296,\"shmem_bytes\":67108864,"
				    "\"kernel_bytes\":18874368,\"other_bytes\":6291456,"));
	assert_non_null(strstr(out, "\"saved_bytes\":1946157056,\"idle_saved_bytes\":1876951040,"));
	assert_non_null(strstr(out, "\"other_bytes\":0,"));	/* db: the kinds are all of it */
	free(out);

	/* Without /proc/meminfo, no host line and no host object. */
	h.known = false;
	out = render_host(false, c, 2, &h);
	assert_null(strstr(out, "host:"));
	free(out);
	out = render_host(true, c, 2, &h);
	assert_null(strstr(out, "\"host\""));
	free(out);
	pt_context_release(&c[0]);
	pt_context_release(&c[1]);
}

static void test_meminfo(void **state)
{
	struct pt_cgroup_sample s = { .memory_current = 100, .anon = 50, .file_cache = 30,
				      .shmem = 10, .kernel = 20 };
	struct pt_host_mem h = { 0 };
	struct pt_mem_split ms;

	(void)state;
	/* memory.stat read before memory.current dropped: other is 0, never negative. */
	pt_mem_split(&s, &ms);
	assert_int_equal(ms.other, 0);
	s.memory_current = 120;
	pt_mem_split(&s, &ms);
	assert_int_equal(ms.other, 10);
	assert_int_equal(ms.anon + ms.file + ms.shmem + ms.kernel + ms.other, 120);

	assert_int_equal(pt_meminfo_parse("MemTotal: 100 kB\n", &h), -EINVAL);
	assert_false(h.known);
	assert_true(pt_host_offloaded_share(&h) == 0);
	/* MemAvailable above MemTotal (it happens briefly): used is 0, not a wrap. */
	assert_int_equal(pt_meminfo_parse("MemTotal: 100 kB\nMemAvailable: 200 kB\n", &h), 0);
	assert_int_equal(h.used, 0);
	assert_true(pt_host_offloaded_share(&h) == 0);
	h.offloaded = 1024;
	assert_true(pt_host_offloaded_share(&h) == 1.0);
	/* The real one. */
	assert_int_equal(pt_meminfo_read("/proc/meminfo", &h), 0);
	assert_true(h.known && h.total > 0 && h.used <= h.total);
	assert_int_equal(pt_meminfo_read("/nonexistent/meminfo", &h), -ENOENT);
	assert_false(h.known);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fmt_bytes),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_waiting_for),
		cmocka_unit_test(test_memory_split),
		cmocka_unit_test(test_meminfo),
	};

	return cmocka_run_group_tests_name("status", tests, NULL, NULL);
}
