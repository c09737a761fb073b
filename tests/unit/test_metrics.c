// SPDX-License-Identifier: GPL-2.0
/*
 * Prometheus metrics: the rendering over synthetic managers, tiers and daemon figures, the
 * exposition format's rules (every family once, with HELP and TYPE, before its samples;
 * no series twice; counters end in _total; histograms cumulative), the sysfs and
 * /proc/self/stat readers.
 *
 * With PT_METRICS_SAMPLE=PATH set, it also writes a rendering with every part present
 * (containers, tiers with a latency histogram, BPF, preload) to PATH, which
 * tests/metrics/check_scrape.py gives to promtool.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "metrics.h"

/* --- a synthetic manager ---------------------------------------------------------- */

static void add_ctx(struct pt_manager *m, const char *name, enum pt_class class,
		    const char *relpath, uint64_t id)
{
	struct pt_policy p = { .class = class };
	struct pt_context *c;

	snprintf(p.name, sizeof(p.name), "%s", name);
	m->ctxs = realloc(m->ctxs, (m->n_ctxs + 1) * sizeof(*m->ctxs));
	assert_non_null(m->ctxs);
	m->cap_ctxs = m->n_ctxs + 1;
	c = &m->ctxs[m->n_ctxs++];
	pt_context_init(c, &p, "/sys/fs/cgroup", relpath, id, 0, 16);
}

static void manager(struct pt_manager *m)
{
	struct pt_config cfg;
	struct pt_context *a, *db;

	pt_config_defaults(&cfg);
	pt_manager_init(m, &cfg);
	add_ctx(m, "alpha", PT_CLASS_BESTEFFORT, "/pt/alpha", 4242);
	add_ctx(m, "db", PT_CLASS_CRITICAL, "/pt/we\"ird\\na\nme", 4343);
	a = &m->ctxs[0];
	db = &m->ctxs[1];
	a->idle.state = PT_STATE_IDLE;
	a->sample.memory_current = 3ULL << 20;
	a->sample.anon = 1ULL << 20;
	a->sample.swap_current = 255ULL << 20;
	a->sample.swapcached = 5ULL << 20;
	a->sample.file_cache = 1ULL << 19;	/* 3 MiB: 1 anon, 512K file, 256K shmem, */
	a->sample.shmem = 1ULL << 18;		/* 128K kernel, the rest (1152K) other */
	a->sample.kernel = 1ULL << 17;
	a->idle_saved = 240ULL << 20;
	a->tier_pages = 65536;
	a->tier_written = 300ULL << 20;
	a->tier_written_known = true;
	a->n_idle = 4;
	a->n_offloads = 3;
	a->n_wakes = 2;
	a->idle.false_wakes = 1;
	a->offloads_undone = 2;
	a->last_wake_ms = 12;
	a->hot.refaults = 7;
	a->hot.precision = 0.75;
	a->hot.recall = 0.5;
	a->cold_offloaded_bytes = 1ULL << 20;
	a->bpf_events[2] = 3;	/* swap-ins */
	a->bpf_events[4] = 9;	/* packets */
	a->tier_reads = 11;
	db->sample.memory_current = 1ULL << 30;
	db->hot.precision = -1;
	db->hot.recall = -1;
}

static char *render(const struct pt_manager *m, const struct pt_tier_stats *t, size_t nt,
		    const struct pt_metrics_daemon *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	pt_metrics_render(f, m, t, nt, d);
	fclose(f);
	return buf;
}

static void has(const char *out, const char *line)
{
	char want[1024];

	/* A whole line: at the start of the text or after a newline, ending with one. */
	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(out, want) && strncmp(out, want + 1, strlen(want + 1)))
		fail_msg("missing line '%s' in:\n%s", line, out);
}

static void lacks(const char *out, const char *text)
{
	if (strstr(out, text))
		fail_msg("unexpected '%s' in:\n%s", text, out);
}

/* --- the exposition format's rules ------------------------------------------------ */

struct family {
	char name[128];
	char type[16];
	bool help;
	bool samples;
};

static bool valid_name(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
			return false;
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/*
 * Checks @out line by line: HELP and TYPE once per family, before its samples and
 * together; each sample's name is its family's (or _bucket/_sum/_count of a histogram or
 * summary); labels well formed; no series twice; a float value; counters end in _total;
 * histogram buckets cumulative and ending in +Inf equal to _count.
 */
static void check_format(const char *out)
{
	struct family fams[256];
	char *series[2048];
	size_t nf = 0, ns = 0;
	const char *p = out;
	struct family *cur = NULL;
	double last_bucket = -1;

	while (*p) {
		const char *eol = strchr(p, '\n');
		char line[2048];
		size_t len;

		assert_non_null(eol);	/* every line ends with a newline */
		len = (size_t)(eol - p);
		assert_true(len < sizeof(line));
		memcpy(line, p, len);
		line[len] = '\0';
		p = eol + 1;
		assert_true(len > 0);	/* no empty lines */
		if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0) {
			char *name = line + 7, *rest = strchr(name, ' ');
			bool is_help = line[2] == 'H';

			assert_non_null(rest);
			*rest++ = '\0';
			assert_true(valid_name(name, strlen(name)));
			if (!cur || strcmp(cur->name, name)) {
				for (size_t i = 0; i < nf; i++)
					if (strcmp(fams[i].name, name) == 0)
						fail_msg("family %s appears twice", name);
				assert_true(nf < 256);
				cur = &fams[nf++];
				memset(cur, 0, sizeof(*cur));
				snprintf(cur->name, sizeof(cur->name), "%s", name);
			}
			assert_false(cur->samples);	/* metadata before the samples */
			if (is_help) {
				assert_false(cur->help);
				assert_true(*rest);
				cur->help = true;
			} else {
				assert_string_equal(cur->type, "");
				assert_true(strcmp(rest, "gauge") == 0 || strcmp(rest, "counter") == 0 ||
					    strcmp(rest, "histogram") == 0 ||
					    strcmp(rest, "summary") == 0);
				snprintf(cur->type, sizeof(cur->type), "%s", rest);
				if (strcmp(rest, "counter") == 0 && !ends_with(name, "_total"))
					fail_msg("counter %s does not end in _total", name);
				if (strcmp(rest, "counter") && ends_with(name, "_total"))
					fail_msg("%s ends in _total but is a %s", name, rest);
			}
			continue;
		}
		assert_true(line[0] != '#');
		{
			size_t nl = strcspn(line, "{ ");
			char name[128], *labels_end, *value, *end;
			bool hist, summ;
			double v;

			assert_true(valid_name(line, nl));
			assert_true(nl < sizeof(name));
			memcpy(name, line, nl);
			name[nl] = '\0';
			assert_non_null(cur);
			assert_true(cur->help);
			assert_string_not_equal(cur->type, "");
			hist = strcmp(cur->type, "histogram") == 0;
			summ = strcmp(cur->type, "summary") == 0;
			if (strcmp(name, cur->name)) {
				char base[128];
				const char *sfx[] = { "_bucket", "_sum", "_count" };
				bool ok = false;

				for (int i = 0; i < 3; i++) {
					snprintf(base, sizeof(base), "%s%s", cur->name, sfx[i]);
					ok |= strcmp(name, base) == 0 && (hist || (summ && i));
				}
				if (!ok)
					fail_msg("sample %s under family %s (%s)", name, cur->name,
						 cur->type);
			} else {
				assert_false(hist);
			}
			cur->samples = true;
			labels_end = line + nl;
			if (*labels_end == '{') {
				/* label="value" pairs, values with \\ \" \n escapes only */
				char *q = labels_end + 1;

				for (;;) {
					size_t ln = strcspn(q, "=");

					assert_true(valid_name(q, ln));
					q += ln;
					assert_true(q[0] == '=' && q[1] == '"');
					for (q += 2; *q != '"'; q++) {
						assert_true(*q);
						if (*q == '\\') {
							q++;
							assert_true(*q == '\\' || *q == '"' || *q == 'n');
						}
					}
					q++;
					if (*q == '}')
						break;
					assert_true(*q == ',');
					q++;
				}
				labels_end = q + 1;
			}
			assert_true(*labels_end == ' ');
			*labels_end = '\0';
			for (size_t i = 0; i < ns; i++)
				if (strcmp(series[i], line) == 0)
					fail_msg("series %s twice", line);
			assert_true(ns < 2048);
			series[ns++] = strdup(line);
			value = labels_end + 1;
			errno = 0;
			v = strtod(value, &end);
			assert_int_equal(errno, 0);
			assert_true(end != value && *end == '\0');
			assert_false(isnan(v));
			if (hist && ends_with(name, "_bucket")) {
				assert_true(v >= last_bucket);	/* cumulative */
				last_bucket = strstr(line, "le=\"+Inf\"") ? -1 : v;
			}
		}
	}
	for (size_t i = 0; i < ns; i++)
		free(series[i]);
}

/* --- tests ------------------------------------------------------------------------ */

static void test_containers(void **state)
{
	struct pt_metrics_daemon d = { 0 };
	struct pt_manager m;
	char *out;

	(void)state;
	manager(&m);
	out = render(&m, NULL, 0, &d);
	check_format(out);
	has(out, "pagetier_containers 2");
	has(out, "pagetier_info{backend=\"swap\"} 1");
#define A "{container=\"alpha\",cgroup=\"/pt/alpha\",class=\"besteffort\""
#define DB "{container=\"db\",cgroup=\"/pt/we\\\"ird\\\\na\\nme\",class=\"critical\""
	has(out, "pagetier_container_state" A ",state=\"active\"} 0");
	has(out, "pagetier_container_state" A ",state=\"idle\"} 1");
	has(out, "pagetier_container_state" A ",state=\"waking\"} 0");
	has(out, "pagetier_container_state" DB ",state=\"active\"} 1");
	has(out, "pagetier_container_state" DB ",state=\"idle\"} 0");
	has(out, "pagetier_container_resident_bytes" A "} 3145728");
	has(out, "pagetier_container_resident_bytes" DB "} 1073741824");
	has(out, "pagetier_container_anon_bytes" A "} 1048576");
	has(out, "pagetier_container_swapped_bytes" A "} 267386880");
	has(out, "pagetier_container_swapcached_bytes" A "} 5242880");
	has(out, "pagetier_container_tier_bytes" A "} 268435456");
	/* offloaded (saved): swapped but not cached, 250 MiB */
	has(out, "pagetier_container_offloaded_bytes" A "} 262144000");
	has(out, "pagetier_container_tier_written_bytes_total" A "} 314572800");
	lacks(out, "pagetier_container_tier_written_bytes_total" DB);	/* not known */
	has(out, "pagetier_container_cold_offloaded_bytes_total" A "} 1048576");
	has(out, "pagetier_container_idle_periods_total" A "} 4");
	has(out, "pagetier_container_offloads_total" A "} 3");
	has(out, "pagetier_container_wakes_total" A "} 2");
	has(out, "pagetier_container_wakes_total" DB "} 0");
	has(out, "pagetier_container_false_wakes_total" A "} 1");
	has(out, "pagetier_container_false_wakes_total" DB "} 0");
	has(out, "pagetier_container_offloads_undone_total" A "} 2");
	has(out, "pagetier_container_last_wake_seconds" A "} 0.012");
	lacks(out, "pagetier_container_last_wake_seconds" DB);	/* never woke */
	has(out, "pagetier_container_refaults_total" A "} 7");
	has(out, "pagetier_container_prefetch_precision_ratio" A "} 0.75");
	has(out, "pagetier_container_prefetch_recall_ratio" A "} 0.5");
	lacks(out, "pagetier_container_prefetch_precision_ratio" DB);	/* nothing measured */
	lacks(out, "pagetier_container_prefetch_recall_ratio" DB);
	has(out, "pagetier_container_bpf_events_total" A ",type=\"swapin\"} 3");
	has(out, "pagetier_container_bpf_events_total" A ",type=\"net\"} 9");
	has(out, "pagetier_container_bpf_events_total" A ",type=\"fault\"} 0");
	has(out, "pagetier_container_tier_demand_reads_total" A "} 11");
	/* memory.current by kind, adding up to it; what the last idle period freed. */
	has(out, "pagetier_container_memory_bytes" A ",kind=\"anon\"} 1048576");
	has(out, "pagetier_container_memory_bytes" A ",kind=\"file\"} 524288");
	has(out, "pagetier_container_memory_bytes" A ",kind=\"shmem\"} 262144");
	has(out, "pagetier_container_memory_bytes" A ",kind=\"kernel\"} 131072");
	has(out, "pagetier_container_memory_bytes" A ",kind=\"other\"} 1179648");
	has(out, "pagetier_container_memory_bytes" DB ",kind=\"other\"} 1073741824");
	has(out, "pagetier_container_idle_saved_bytes" A "} 251658240");
	lacks(out, "pagetier_container_idle_saved_bytes" DB);	/* never idle */
	/* The host: what is offloaded always; its memory only with /proc/meminfo read. */
	has(out, "pagetier_host_offloaded_bytes 262144000");
	lacks(out, "pagetier_host_memory_total_bytes");
	lacks(out, "pagetier_host_offloaded_ratio");
	/* Without tiers, BPF, preload, /proc: their families are left out, not zero. */
	lacks(out, "{tier=");
	lacks(out, "pagetier_bpf_events_seen_total");
	lacks(out, "pagetier_preload_");
	lacks(out, "process_cpu_seconds_total");
	has(out, "pagetier_bpf_enabled 0");
	has(out, "pagetier_tiers_fill_level{level=\"ok\"} 1");
	has(out, "pagetier_tiers_fill_level{level=\"full\"} 0");
	lacks(out, "pagetier_tiers_live_ratio");	/* no tier capacity known */
#undef A
#undef DB
	free(out);
	pt_manager_free(&m);
}

static void test_no_containers(void **state)
{
	struct pt_metrics_daemon d = { 0 };
	struct pt_manager m;
	struct pt_config cfg;
	char *out;

	(void)state;
	pt_config_defaults(&cfg);
	pt_manager_init(&m, &cfg);
	out = render(&m, NULL, 0, &d);
	check_format(out);
	has(out, "pagetier_containers 0");
	/* Families with no sample keep their HELP and TYPE: a valid exposition. */
	has(out, "# TYPE pagetier_container_resident_bytes gauge");
	lacks(out, "pagetier_container_resident_bytes{");
	free(out);
	pt_manager_free(&m);
}

static const char seg0[] = "1048576 64 8 1 0 5 1234 0 2 15565 67108864\n";

static char *fake_sysblock(void)
{
	char *dir = fx_tmpdir();

	fx_write(dir, "pagetier0/tier_stat",
		 "   15565     74000000      8192000    100    50    10    1    2    3    0    0    0\n");
	fx_write(dir, "pagetier0/seg_stat", seg0);
	fx_write(dir, "pagetier0/read_stat",
		 "  40  64  2000000  48  16  4  1048576  8  1  0  0  0  0  1024  0\n");
	fx_write(dir, "pagetier0/io_stat",
		 "70000000 300 65536 40 1048576 8 4096 8192 3\n");
	fx_write(dir, "pagetier0/read_latency",
		 "0 0 0 0 0 10 20 5 3 0 0 0 0 0 0 0 0 0 0 2\n");
	/* An older module: no read_latency, fewer columns (only ever appended). */
	fx_write(dir, "pagetier10/tier_stat", "1 4096 0 1 0 0 0 0 1\n");
	fx_write(dir, "pagetier10/seg_stat", "1048576 8 7 1 0 0 0 0 0 1 8388608\n");
	fx_write(dir, "pagetier10/read_stat", "3 3 3000000 1 2 0 0 0 0\n");
	fx_write(dir, "pagetier2/seg_stat", "1048576 8 7 1 0 0 0 0 0 1 8388608 99 100\n");
	/* Not tiers. */
	fx_write(dir, "sda/seg_stat", seg0);
	fx_write(dir, "pagetier3x/seg_stat", seg0);
	fx_write(dir, "pagetier4/seg_stat", "not columns\n");
	return dir;
}

static void test_tier_files(void **state)
{
	char *dir = fake_sysblock();
	struct pt_tier_stats *t;
	int n;

	(void)state;
	n = pt_tier_stats_read(dir, &t);
	assert_int_equal(n, 3);	/* pagetier4 has nothing readable */
	assert_string_equal(t[0].name, "pagetier0");
	assert_string_equal(t[1].name, "pagetier2");
	assert_string_equal(t[2].name, "pagetier10");	/* by number, not by name */
	assert_int_equal(t[0].n_tier, 12);
	assert_int_equal(t[0].n_seg, 11);
	assert_int_equal(t[0].n_read, 15);
	assert_int_equal(t[0].n_io, 9);
	assert_int_equal(t[0].n_lat, PAGETIER_LAT_BUCKETS);
	assert_int_equal(t[0].tier[1], 74000000);
	assert_int_equal(t[0].lat[19], 2);
	assert_int_equal(t[1].n_seg, 13);	/* appended columns kept */
	assert_int_equal(t[1].n_tier, 0);
	assert_int_equal(t[2].n_lat, 0);
	free(t);
	fx_rmtree(dir);
	assert_int_equal(pt_tier_stats_read("/nonexistent/sysblock", &t), -ENOENT);
	assert_null(t);
}

static void test_tiers(void **state)
{
	struct pt_metrics_daemon d = { 0 };
	char *dir = fake_sysblock(), *out;
	struct pt_tier_stats *t;
	struct pt_manager m;
	int n;

	(void)state;
	manager(&m);
	n = pt_tier_stats_read(dir, &t);
	assert_int_equal(n, 3);
	out = render(&m, t, (size_t)n, &d);
	check_format(out);
	has(out, "pagetier_tier_stored_bytes{tier=\"pagetier0\"} 63754240");
	has(out, "pagetier_tier_written_bytes_total{tier=\"pagetier0\"} 74000000");
	has(out, "pagetier_tier_read_bytes_total{tier=\"pagetier0\"} 8192000");
	has(out, "pagetier_tier_read_errors_total{tier=\"pagetier0\"} 1");
	has(out, "pagetier_tier_write_errors_total{tier=\"pagetier0\"} 2");
	has(out, "pagetier_tier_capacity_bytes{tier=\"pagetier0\"} 67108864");
	has(out, "pagetier_tier_capacity_bytes{tier=\"pagetier2\"} 8388608");
	has(out, "pagetier_tier_segment_bytes{tier=\"pagetier0\"} 1048576");
	has(out, "pagetier_tier_segments{tier=\"pagetier0\"} 64");
	has(out, "pagetier_tier_free_segments{tier=\"pagetier0\"} 8");
	has(out, "pagetier_tier_gc_collected_segments_total{tier=\"pagetier0\"} 5");
	has(out, "pagetier_tier_gc_moved_pages_total{tier=\"pagetier0\"} 1234");
	has(out, "pagetier_tier_nospace_errors_total{tier=\"pagetier0\"} 2");
	has(out, "pagetier_tier_staging_hit_pages_total{tier=\"pagetier0\"} 48");
	has(out, "pagetier_tier_staging_miss_pages_total{tier=\"pagetier0\"} 16");
	has(out, "pagetier_tier_staged_bytes{tier=\"pagetier0\"} 16384");
	has(out, "pagetier_tier_prefetch_errors_total{tier=\"pagetier0\"} 1");
	has(out, "pagetier_tier_device_written_bytes_total{tier=\"pagetier0\",kind=\"writeback\"} 70000000");
	has(out, "pagetier_tier_device_written_bytes_total{tier=\"pagetier0\",kind=\"gc\"} 8192");
	has(out, "pagetier_tier_device_read_bytes_total{tier=\"pagetier0\",kind=\"demand\"} 65536");
	has(out, "pagetier_tier_device_read_bytes_total{tier=\"pagetier0\",kind=\"prefetch\"} 1048576");
	has(out, "pagetier_tier_device_read_bytes_total{tier=\"pagetier0\",kind=\"gc\"} 4096");
	/* A file a tier lacks: no sample for it (pagetier2 has only seg_stat). */
	lacks(out, "pagetier_tier_stored_bytes{tier=\"pagetier2\"}");
	/* The histogram: bucket i < 2^i us, cumulative; its count is the +Inf bucket. */
	has(out, "# TYPE pagetier_tier_demand_read_duration_seconds histogram");
	has(out, "pagetier_tier_demand_read_duration_seconds_bucket{tier=\"pagetier0\",le=\"1e-06\"} 0");
	has(out, "pagetier_tier_demand_read_duration_seconds_bucket{tier=\"pagetier0\",le=\"1.6e-05\"} 0");
	has(out, "pagetier_tier_demand_read_duration_seconds_bucket{tier=\"pagetier0\",le=\"3.2e-05\"} 10");
	has(out, "pagetier_tier_demand_read_duration_seconds_bucket{tier=\"pagetier0\",le=\"6.4e-05\"} 30");
	has(out, "pagetier_tier_demand_read_duration_seconds_bucket{tier=\"pagetier0\",le=\"0.000256\"} 38");
	has(out, "pagetier_tier_demand_read_duration_seconds_bucket{tier=\"pagetier0\",le=\"0.262144\"} 38");
	has(out, "pagetier_tier_demand_read_duration_seconds_bucket{tier=\"pagetier0\",le=\"+Inf\"} 40");
	has(out, "pagetier_tier_demand_read_duration_seconds_sum{tier=\"pagetier0\"} 0.002");
	has(out, "pagetier_tier_demand_read_duration_seconds_count{tier=\"pagetier0\"} 40");
	/* A tier without read_latency has no place in a histogram family. */
	lacks(out, "pagetier_tier_demand_read_duration_seconds_sum{tier=\"pagetier10\"}");
	free(out);
	/* Only tiers without read_latency: a summary of the sum and the count. */
	out = render(&m, &t[2], 1, &d);
	check_format(out);
	has(out, "# TYPE pagetier_tier_demand_read_duration_seconds summary");
	has(out, "pagetier_tier_demand_read_duration_seconds_sum{tier=\"pagetier10\"} 0.003");
	has(out, "pagetier_tier_demand_read_duration_seconds_count{tier=\"pagetier10\"} 3");
	lacks(out, "_bucket");
	free(out);
	free(t);
	fx_rmtree(dir);
	pt_manager_free(&m);
}

static void fill_daemon(struct pt_manager *m, struct pt_metrics_daemon *d)
{
	d->have_proc = true;
	d->cpu_seconds = 12.34;
	d->rss_bytes = 5 << 20;
	d->have_bpf = true;
	d->bpf_drops = 6;
	d->bpf_stat[1][0] = 100;	/* faults seen */
	d->bpf_stat[1][1] = 2;		/* emitted */
	d->bpf_stat[1][2] = 98;		/* limited */
	d->bpf_stat[4][1] = 17;		/* packets emitted */
	d->have_preload = true;
	d->preload.peers = 3;
	d->preload.accepted_peers = 5;
	d->preload.rejected_peers = 1;
	d->preload.refused = 1;
	d->preload.records = 1000;
	d->preload.rejected[0] = 2;
	d->preload.rejected[1] = 1;
	m->fill_level = PT_FILL_NO_COLD;
	m->fill.capacity_pages = 16384;
	m->fill.live_pages = 13312;
	m->fill.segments = 64;
	m->fill.free_segments = 16;
	m->fill_deferred = 5;
	m->bpf_unmatched = 0;
	m->tier_events_lost = 4;
	m->watermark_offloads = 8;
	m->walk_errors = 1;
	m->sample_errors = 2;
	m->samples_skipped = 5;
	m->ticks = 7;
	m->samples_taken = 9;
	m->usage_reads = 3;
	m->samples_light = 4;
	m->jobs_done[PT_JOB_SCAN] = 40;
	m->job_cpu_ns[PT_JOB_SCAN] = 1250000000;
	/* 4 GiB, 3 GiB - 250 MiB used; alpha offloaded 250 MiB: 250 of the 3072 MiB. */
	assert_int_equal(pt_meminfo_parse("MemTotal: 4194304 kB\nMemFree: 524288 kB\n"
					  "MemAvailable: 1304576 kB\n", &d->host), 0);
}

static void test_daemon(void **state)
{
	struct pt_metrics_daemon d = { 0 };
	struct pt_manager m;
	char *out;

	(void)state;
	manager(&m);
	fill_daemon(&m, &d);
	m.cfg.n_policies = 0;
	out = render(&m, NULL, 0, &d);
	check_format(out);
	has(out, "process_cpu_seconds_total 12.34");
	has(out, "process_resident_memory_bytes 5242880");
	has(out, "pagetier_bpf_enabled 1");
	has(out, "pagetier_bpf_events_seen_total{type=\"fault\"} 100");
	has(out, "pagetier_bpf_events_emitted_total{type=\"fault\"} 2");
	has(out, "pagetier_bpf_events_limited_total{type=\"fault\"} 98");
	has(out, "pagetier_bpf_events_emitted_total{type=\"net\"} 17");
	has(out, "pagetier_bpf_events_dropped_total 6");
	has(out, "pagetier_bpf_unmatched_events_total 0");
	has(out, "pagetier_tier_events_lost_total 4");
	has(out, "pagetier_preload_peers 3");
	has(out, "pagetier_preload_accepted_peers_total 5");
	has(out, "pagetier_preload_rejected_peers_total 2");
	has(out, "pagetier_preload_records_total 1000");
	has(out, "pagetier_preload_rejected_records_total 3");
	has(out, "pagetier_tiers_fill_level{level=\"ok\"} 0");
	has(out, "pagetier_tiers_fill_level{level=\"no-cold\"} 1");
	has(out, "pagetier_tiers_fill_level{level=\"full\"} 0");
	has(out, "pagetier_tiers_live_ratio 0.8125");
	has(out, "pagetier_tiers_free_segments_ratio 0.25");
	has(out, "pagetier_offloads_deferred_total 5");
	has(out, "pagetier_watermark_offloaded_chunks_total 8");
	has(out, "pagetier_cgroup_walk_errors_total 1");
	has(out, "pagetier_sample_errors_total 2");
	has(out, "pagetier_samples_skipped_total 5");
	has(out, "pagetier_ticks_total 7");
	has(out, "pagetier_samples_total 9");
	has(out, "pagetier_tier_usage_reads_total 3");
	has(out, "pagetier_samples_light_total 4");
	has(out, "pagetier_jobs_total{kind=\"scan\"} 40");
	has(out, "pagetier_jobs_total{kind=\"cold\"} 0");
	has(out, "pagetier_job_cpu_seconds_total{kind=\"scan\"} 1.25");
	has(out, "pagetier_job_cpu_seconds_total{kind=\"offload\"} 0");
	has(out, "pagetier_host_memory_total_bytes 4294967296");
	has(out, "pagetier_host_memory_used_bytes 2959081472");
	has(out, "pagetier_host_offloaded_bytes 262144000");
	has(out, "pagetier_host_offloaded_ratio 0.0813802083333333");
	free(out);
	pt_manager_free(&m);
}

static void test_stat_columns(void **state)
{
	uint64_t v[4];

	(void)state;
	assert_int_equal(pt_stat_columns("  1 22\t333 4444\n", v, 4), 4);
	assert_int_equal(v[0], 1);
	assert_int_equal(v[3], 4444);
	assert_int_equal(pt_stat_columns("1 2 3 4 5 6\n", v, 4), 6);	/* counted, not stored */
	assert_int_equal(pt_stat_columns("18446744073709551615\n", v, 4), 1);
	assert_true(v[0] == UINT64_MAX);
	assert_int_equal(pt_stat_columns("", v, 4), 0);
	assert_int_equal(pt_stat_columns("1 -2\n", v, 4), -EINVAL);
	assert_int_equal(pt_stat_columns("1 2x\n", v, 4), -EINVAL);
	assert_int_equal(pt_stat_columns("18446744073709551616\n", v, 4), -EINVAL);
}

static void test_proc_stat(void **state)
{
	/* A comm with spaces and parentheses: fields count from the last ')'. */
	static const char text[] =
		"4242 (pt (d) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 125 0 0 20 0 3 0 "
		"12345 100000000 1280 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";
	struct pt_metrics_daemon d = { 0 };
	char buf[2048];
	FILE *f;
	size_t n;

	(void)state;
	assert_int_equal(pt_proc_stat_parse(text, 100, 4096, &d), 0);
	assert_true(d.have_proc);
	assert_true(fabs(d.cpu_seconds - 3.75) < 1e-9);
	assert_int_equal(d.rss_bytes, 1280 * 4096);
	memset(&d, 0, sizeof(d));
	assert_int_equal(pt_proc_stat_parse("4242 (x) S 1 2 3\n", 100, 4096, &d), -EINVAL);
	assert_int_equal(pt_proc_stat_parse("no parenthesis", 100, 4096, &d), -EINVAL);
	assert_false(d.have_proc);
	/* The real one. */
	f = fopen("/proc/self/stat", "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_int_equal(pt_proc_stat_parse(buf, 100, 4096, &d), 0);
	assert_true(d.rss_bytes > 0);
}

static void test_label_escapes(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	pt_metrics_label_value(f, "a\"b\\c\nd\te");
	fclose(f);
	assert_string_equal(buf, "\"a\\\"b\\\\c\\nd\te\"");
	free(buf);
}

/* Everything at once, for promtool (tests/metrics/check_scrape.py). */
static void write_sample(void)
{
	const char *path = getenv("PT_METRICS_SAMPLE");
	struct pt_metrics_daemon d = { 0 };
	struct pt_tier_stats *t;
	struct pt_manager m;
	char *dir, *out;
	FILE *f;
	int n;

	if (!path || !*path)
		return;
	dir = fake_sysblock();
	manager(&m);
	fill_daemon(&m, &d);
	n = pt_tier_stats_read(dir, &t);
	out = render(&m, t, n > 0 ? (size_t)n : 0, &d);
	f = fopen(path, "w");
	if (!f || fputs(out, f) < 0 || fclose(f)) {
		fprintf(stderr, "test_metrics: cannot write %s\n", path);
		exit(1);
	}
	free(out);
	free(t);
	pt_manager_free(&m);
	fx_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_containers),
		cmocka_unit_test(test_no_containers),
		cmocka_unit_test(test_tier_files),
		cmocka_unit_test(test_tiers),
		cmocka_unit_test(test_daemon),
		cmocka_unit_test(test_stat_columns),
		cmocka_unit_test(test_proc_stat),
		cmocka_unit_test(test_label_escapes),
	};

	umask(022);
	write_sample();
	return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
