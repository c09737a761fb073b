// SPDX-License-Identifier: GPL-2.0
#include "metrics.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "kmod_client.h"
#include "tier_fill.h"

/* --- reading ---------------------------------------------------------------------- */

int pt_stat_columns(const char *line, uint64_t *v, int max)
{
	const char *p = line;
	int n = 0;

	for (;;) {
		unsigned long long x;
		char *end;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '\n')
			break;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		errno = 0;
		x = strtoull(p, &end, 10);
		if (errno || (*end && *end != ' ' && *end != '\t' && *end != '\n'))
			return -EINVAL;
		if (n < max)
			v[n] = x;
		n++;
		p = end;
	}
	return n;
}

/* Columns of @dir/@file into @v; how many were stored (0: no file, or not columns). */
static int read_columns(const char *dir, const char *file, uint64_t *v, int max)
{
	char path[PATH_MAX], buf[1024];
	int n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (pt_read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	n = pt_stat_columns(buf, v, max);
	if (n < 0)
		return 0;
	return n < max ? n : max;
}

static int cmp_tier(const void *a, const void *b)
{
	const struct pt_tier_stats *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

int pt_tier_stats_read(const char *sysblock, struct pt_tier_stats **out)
{
	uint32_t ids[PT_KMOD_MAX_TIERS];
	int nt = pt_kmod_list_tiers_in(sysblock, ids, PT_KMOD_MAX_TIERS);
	struct pt_tier_stats *t;
	size_t n = 0;

	*out = NULL;
	if (nt <= 0)
		return nt;
	t = calloc((size_t)nt, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (int i = 0; i < nt; i++) {
		struct pt_tier_stats *s = &t[n];
		char dir[PATH_MAX];

		snprintf(s->name, sizeof(s->name), PAGETIER_DISK_NAME "%u", ids[i]);
		s->id = ids[i];
		snprintf(dir, sizeof(dir), "%s/%s", sysblock, s->name);
		s->n_tier = read_columns(dir, "tier_stat", s->tier, 16);
		s->n_seg = read_columns(dir, "seg_stat", s->seg, 16);
		s->n_read = read_columns(dir, "read_stat", s->read, 24);
		s->n_io = read_columns(dir, "io_stat", s->io, 16);
		s->n_lat = read_columns(dir, "read_latency", s->lat, PAGETIER_LAT_BUCKETS);
		if (s->n_tier || s->n_seg || s->n_read || s->n_io || s->n_lat)
			n++;	/* else destroyed meanwhile */
	}
	if (n)
		qsort(t, n, sizeof(*t), cmp_tier);
	else {
		free(t);
		t = NULL;
	}
	*out = t;
	return (int)n;
}

int pt_proc_stat_parse(const char *text, long clk_tck, long page_size,
		       struct pt_metrics_daemon *d)
{
	/* After "pid (comm)", whose comm may hold anything: fields 3 on, 14-15 and 24 used. */
	const char *p = strrchr(text, ')');
	unsigned long long utime = 0, stime = 0, rss = 0;
	int field = 3;

	if (!p || clk_tck <= 0 || page_size <= 0)
		return -EINVAL;
	p++;
	while (field <= 24) {
		char *end;
		unsigned long long v;

		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			return -EINVAL;
		if (field == 3) {	/* the state letter */
			p++;
			field++;
			continue;
		}
		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno || end == p)
			return -EINVAL;
		if (field == 14)
			utime = v;
		else if (field == 15)
			stime = v;
		else if (field == 24)
			rss = v;
		p = end;
		field++;
	}
	d->have_proc = true;
	d->cpu_seconds = (double)(utime + stime) / (double)clk_tck;
	d->rss_bytes = rss * (uint64_t)page_size;
	return 0;
}

/* --- the exposition format -------------------------------------------------------- */

void pt_metrics_label_value(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

static void header(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A float as Prometheus reads it: shortest exact-enough decimal. */
static void put_double(FILE *out, double v)
{
	fprintf(out, " %.15g\n", v);
}

static void put_u64(FILE *out, uint64_t v)
{
	fprintf(out, " %" PRIu64 "\n", v);
}

/* A metric without labels: its header and its one sample. */
static void single_u64(FILE *out, const char *name, const char *type, const char *help,
		       uint64_t v)
{
	header(out, name, type, help);
	fputs(name, out);
	put_u64(out, v);
}

static void single_double(FILE *out, const char *name, const char *type, const char *help,
			  double v)
{
	header(out, name, type, help);
	fputs(name, out);
	put_double(out, v);
}

/* --- containers ------------------------------------------------------------------- */

/* "name{container="..",cgroup="..",class=".." (the caller closes it, with more labels). */
static void ctx_series(FILE *out, const char *name, const struct pt_context *c)
{
	fprintf(out, "%s{container=", name);
	pt_metrics_label_value(out, c->policy.name);
	fputs(",cgroup=", out);
	pt_metrics_label_value(out, c->relpath);
	fprintf(out, ",class=\"%s\"", pt_class_name(c->policy.class));
}

/*
 * A per-container value: false when the context has none (no sample). The counters are
 * uint64_t; a double holds them exactly up to 2^53, beyond any byte or event count of a
 * running daemon.
 */
struct ctx_metric {
	const char *name, *type, *help;
	bool (*get)(const struct pt_context *c, double *v);
	bool integer;	/* printed as an exact integer */
};

#define CTX_GET(fn, cond, expr)                                            \
	static bool fn(const struct pt_context *c, double *v)              \
	{                                                                  \
		if (!(cond))                                               \
			return false;                                      \
		*v = (double)(expr);                                       \
		return true;                                               \
	}

CTX_GET(get_resident, true, c->sample.memory_current)
CTX_GET(get_anon, true, c->sample.anon)
CTX_GET(get_swapped, true, c->sample.swap_current)
CTX_GET(get_swapcached, true, c->sample.swapcached)
CTX_GET(get_tier, true, c->tier_pages * 4096ULL)
CTX_GET(get_saved, true, pt_context_saved(c))
CTX_GET(get_idle_saved, c->n_idle, c->idle_saved)
CTX_GET(get_tier_written, c->tier_written_known, c->tier_written)
CTX_GET(get_idle_periods, true, c->n_idle)
CTX_GET(get_offloads, true, c->n_offloads)
CTX_GET(get_wakes, true, c->n_wakes)
CTX_GET(get_false_wakes, true, c->idle.false_wakes)
CTX_GET(get_offloads_undone, true, c->offloads_undone)
CTX_GET(get_last_wake, c->n_wakes, (double)c->last_wake_ms / 1000.0)
CTX_GET(get_refaults, c->hot_ok, c->hot.refaults)
CTX_GET(get_precision, c->hot_ok && c->hot.precision >= 0, c->hot.precision)
CTX_GET(get_recall, c->hot_ok && c->hot.recall >= 0, c->hot.recall)
CTX_GET(get_cold, true, c->cold_offloaded_bytes)
CTX_GET(get_dropped, true, c->prefetch_dropped)
CTX_GET(get_tier_reads, true, c->tier_reads)
CTX_GET(get_preload, true, c->preload_records)
CTX_GET(get_scans, true, c->scans)

static const struct ctx_metric ctx_metrics[] = {
	{ "pagetier_container_resident_bytes", "gauge",
	  "Memory charged to the container's cgroup (memory.current).", get_resident, true },
	{ "pagetier_container_anon_bytes", "gauge",
	  "Anonymous memory of the container (memory.stat anon).", get_anon, true },
	{ "pagetier_container_swapped_bytes", "gauge",
	  "Swap the container uses (memory.swap.current), swap cache included.", get_swapped, true },
	{ "pagetier_container_swapcached_bytes", "gauge",
	  "Of the swap it uses, pages still in memory too (memory.stat swapcached).",
	  get_swapcached, true },
	{ "pagetier_container_tier_bytes", "gauge",
	  "Bytes of the container's pages stored on the pagetier tiers.", get_tier, true },
	{ "pagetier_container_offloaded_bytes", "gauge",
	  "Memory offloaded and freed: in swap only (swapped minus swap cache).", get_saved, true },
	{ "pagetier_container_idle_saved_bytes", "gauge",
	  "Memory freed over the container's last idle period: memory.current when it went idle minus after its offload.",
	  get_idle_saved, true },
	{ "pagetier_container_tier_written_bytes_total", "counter",
	  "Bytes written to the tiers for the container since it was tracked, the collector's moves included.",
	  get_tier_written, true },
	{ "pagetier_container_cold_offloaded_bytes_total", "counter",
	  "Bytes of cold chunks offloaded while the container was active.", get_cold, true },
	{ "pagetier_container_idle_periods_total", "counter",
	  "Times the container went idle.", get_idle_periods, true },
	{ "pagetier_container_offloads_total", "counter",
	  "Offloads of the container at idle.", get_offloads, true },
	{ "pagetier_container_offloads_undone_total", "counter",
	  "Idle offloads its own background brought back with no request (each defers the next).",
	  get_offloads_undone, true },
	{ "pagetier_container_wakes_total", "counter",
	  "Times the container woke from idle.", get_wakes, true },
	{ "pagetier_container_false_wakes_total", "counter",
	  "Wakes by refaults that were its own background: idle again with nothing else seen.",
	  get_false_wakes, true },
	{ "pagetier_container_last_wake_seconds", "gauge",
	  "The last wake: from its detection to the end of its prefetch.", get_last_wake, false },
	{ "pagetier_container_refaults_total", "counter",
	  "Touches of offloaded chunks (the hotness model's refaults).", get_refaults, true },
	{ "pagetier_container_prefetch_precision_ratio", "gauge",
	  "Of the chunks the last wake prefetched, the share used within the measuring window.",
	  get_precision, false },
	{ "pagetier_container_prefetch_recall_ratio", "gauge",
	  "Of the chunks used after the last wake, the share the prefetch had brought back.",
	  get_recall, false },
	{ "pagetier_container_prefetch_dropped_bytes_total", "counter",
	  "Bytes of unused prefetch dropped again.", get_dropped, true },
	{ "pagetier_container_tier_demand_reads_total", "counter",
	  "Demand reads of the container's pages on the tiers (tier event ring).", get_tier_reads,
	  true },
	{ "pagetier_container_preload_records_total", "counter",
	  "Records from the container's preloaded processes (libpagetier.so).", get_preload, true },
	{ "pagetier_container_scans_total", "counter",
	  "Access scans of the container's memory (hotness epochs applied).", get_scans, true },
};

static const char *const bpf_type_names[PT_METRICS_BPF_TYPES] = {
	NULL, "fault", "swapin", "wakeup", "net"
};

static void render_containers(FILE *out, const struct pt_manager *m)
{
	static const enum pt_state states[] = { PT_STATE_ACTIVE, PT_STATE_IDLE, PT_STATE_WAKING };

	header(out, "pagetier_container_state", "gauge",
	       "The container's state: 1 for the one it is in (active, idle or waking), 0 for the others.");
	for (size_t i = 0; i < m->n_ctxs; i++) {
		const struct pt_context *c = &m->ctxs[i];

		for (size_t s = 0; s < sizeof(states) / sizeof(states[0]); s++) {
			ctx_series(out, "pagetier_container_state", c);
			fprintf(out, ",state=\"%s\"}", pt_state_name(states[s]));
			put_u64(out, c->idle.state == states[s]);
		}
	}
	for (size_t k = 0; k < sizeof(ctx_metrics) / sizeof(ctx_metrics[0]); k++) {
		const struct ctx_metric *cm = &ctx_metrics[k];

		header(out, cm->name, cm->type, cm->help);
		for (size_t i = 0; i < m->n_ctxs; i++) {
			double v;

			if (!cm->get(&m->ctxs[i], &v))
				continue;
			ctx_series(out, cm->name, &m->ctxs[i]);
			fputc('}', out);
			if (cm->integer)
				put_u64(out, (uint64_t)v);
			else
				put_double(out, v);
		}
	}
	header(out, "pagetier_container_memory_bytes", "gauge",
	       "memory.current by kind (memory.stat, read once per scan interval): anon, file (page cache), shmem, kernel (sock included) and other (unmapped swap cache, drift); the kinds add up to memory.current.");
	for (size_t i = 0; i < m->n_ctxs; i++) {
		static const char *const kinds[] = { "anon", "file", "shmem", "kernel", "other" };
		struct pt_mem_split ms;
		uint64_t v[5];

		pt_mem_split(&m->ctxs[i].sample, &ms);
		v[0] = ms.anon, v[1] = ms.file, v[2] = ms.shmem, v[3] = ms.kernel, v[4] = ms.other;
		for (size_t k = 0; k < 5; k++) {
			ctx_series(out, "pagetier_container_memory_bytes", &m->ctxs[i]);
			fprintf(out, ",kind=\"%s\"}", kinds[k]);
			put_u64(out, v[k]);
		}
	}
	header(out, "pagetier_container_bpf_events_total", "counter",
	       "BPF events of the container's tasks that reached the daemon, by type.");
	for (size_t i = 0; i < m->n_ctxs; i++)
		for (int t = 1; t < PT_METRICS_BPF_TYPES; t++) {
			ctx_series(out, "pagetier_container_bpf_events_total", &m->ctxs[i]);
			fprintf(out, ",type=\"%s\"}", bpf_type_names[t]);
			put_u64(out, m->ctxs[i].bpf_events[t]);
		}
}

/*
 * The host: its memory (/proc/meminfo, when the daemon read it), and what pagetier holds
 * out of it for the opted-in containers, as bytes and as a share of all in use.
 */
static void render_host(FILE *out, const struct pt_manager *m, const struct pt_metrics_daemon *d)
{
	struct pt_host_mem h = d->host;

	pt_host_offloaded(&h, m->ctxs, m->n_ctxs);
	single_u64(out, "pagetier_host_offloaded_bytes", "gauge",
		   "Memory of the opted-in containers offloaded and freed (the sum of pagetier_container_offloaded_bytes).",
		   h.offloaded);
	if (!h.known)
		return;
	single_u64(out, "pagetier_host_memory_total_bytes", "gauge",
		   "The host's memory (MemTotal).", h.total);
	single_u64(out, "pagetier_host_memory_used_bytes", "gauge",
		   "The host's memory in use: MemTotal - MemAvailable, as free(1) counts it.", h.used);
	single_double(out, "pagetier_host_offloaded_ratio", "gauge",
		      "Of the host's memory in use or offloaded, the share pagetier keeps offloaded: offloaded / (used + offloaded).",
		      pt_host_offloaded_share(&h));
}

/* --- tiers ------------------------------------------------------------------------ */

enum tier_file { F_TIER, F_SEG, F_READ, F_IO };

struct tier_metric {
	const char *name, *type, *help;
	enum tier_file file;
	int col;		/* 1-based, as kmod/README.md numbers them */
	uint64_t scale;		/* pages -> bytes */
	const char *label;	/* an extra label "key=\"value\"", or NULL */
};

/* Families that take several rows (io_stat by kind) are consecutive with the same name. */
static const struct tier_metric tier_metrics[] = {
	{ "pagetier_tier_stored_bytes", "gauge", "Bytes of pages the tier holds.",
	  F_TIER, 1, 4096, NULL },
	{ "pagetier_tier_written_bytes_total", "counter",
	  "Bytes swap wrote to the tier, failed writes included.", F_TIER, 2, 1, NULL },
	{ "pagetier_tier_read_bytes_total", "counter", "Bytes swap read from the tier.",
	  F_TIER, 3, 1, NULL },
	{ "pagetier_tier_read_errors_total", "counter", "Blocks whose read failed.",
	  F_TIER, 7, 1, NULL },
	{ "pagetier_tier_write_errors_total", "counter",
	  "Writes that failed (backing device, no free segment, flushes).", F_TIER, 8, 1, NULL },
	{ "pagetier_tier_capacity_bytes", "gauge",
	  "Bytes the tier's segments hold on the backing device.", F_SEG, 11, 1, NULL },
	{ "pagetier_tier_segment_bytes", "gauge", "The tier's segment size.", F_SEG, 1, 1, NULL },
	{ "pagetier_tier_segments", "gauge", "Segments of the tier on the backing device.",
	  F_SEG, 2, 1, NULL },
	{ "pagetier_tier_free_segments", "gauge", "Free segments of the tier.", F_SEG, 3, 1,
	  NULL },
	{ "pagetier_tier_gc_collected_segments_total", "counter",
	  "Segments the garbage collector collected.", F_SEG, 6, 1, NULL },
	{ "pagetier_tier_gc_moved_pages_total", "counter",
	  "Pages the garbage collector moved.", F_SEG, 7, 1, NULL },
	{ "pagetier_tier_nospace_errors_total", "counter",
	  "Writes that failed for want of a free segment.", F_SEG, 9, 1, NULL },
	{ "pagetier_tier_staging_hit_pages_total", "counter",
	  "Pages demand reads found in the staging cache (prefetched).", F_READ, 4, 1, NULL },
	{ "pagetier_tier_staging_miss_pages_total", "counter",
	  "Pages demand reads had to read from the backing device.", F_READ, 5, 1, NULL },
	{ "pagetier_tier_staged_bytes", "gauge", "Bytes in the staging cache now.",
	  F_READ, 6, 4096, NULL },
	{ "pagetier_tier_prefetch_errors_total", "counter",
	  "Prefetch reads that failed or found no memory.", F_READ, 9, 1, NULL },
	{ "pagetier_tier_device_written_bytes_total", "counter",
	  "Bytes the tier wrote to its backing device, by kind.", F_IO, 1, 1,
	  "kind=\"writeback\"" },
	{ "pagetier_tier_device_written_bytes_total", NULL, NULL, F_IO, 8, 1, "kind=\"gc\"" },
	{ "pagetier_tier_device_read_bytes_total", "counter",
	  "Bytes the tier read from its backing device, by kind.", F_IO, 3, 1,
	  "kind=\"demand\"" },
	{ "pagetier_tier_device_read_bytes_total", NULL, NULL, F_IO, 5, 1, "kind=\"prefetch\"" },
	{ "pagetier_tier_device_read_bytes_total", NULL, NULL, F_IO, 7, 1, "kind=\"gc\"" },
};

static bool tier_col(const struct pt_tier_stats *t, enum tier_file f, int col, uint64_t *v)
{
	const uint64_t *a;
	int n;

	switch (f) {
	case F_TIER:
		a = t->tier, n = t->n_tier;
		break;
	case F_SEG:
		a = t->seg, n = t->n_seg;
		break;
	case F_READ:
		a = t->read, n = t->n_read;
		break;
	default:
		a = t->io, n = t->n_io;
		break;
	}
	if (col > n)
		return false;
	*v = a[col - 1];
	return true;
}

static void tier_series(FILE *out, const char *name, const struct pt_tier_stats *t)
{
	fprintf(out, "%s{tier=", name);
	pt_metrics_label_value(out, t->name);
}

/*
 * Demand-read latency: a histogram from read_latency (bucket i < 2^i us, the last one the
 * rest), its sum from read_stat's demand_read_ns and its count the buckets' sum (the two
 * files are read one after the other: the count stays the +Inf bucket). Without
 * read_latency, a summary of the sum and read_stat's count alone.
 */
static void render_latency(FILE *out, const struct pt_tier_stats *tiers, size_t n)
{
	static const char name[] = "pagetier_tier_demand_read_duration_seconds";
	bool hist = false, summ = false;

	for (size_t i = 0; i < n; i++) {
		hist |= tiers[i].n_lat == PAGETIER_LAT_BUCKETS && tiers[i].n_read >= 3;
		summ |= tiers[i].n_read >= 3;
	}
	if (!summ)
		return;
	header(out, name, hist ? "histogram" : "summary",
	       "Demand reads of the tier (a process waiting for a page), submission to completion.");
	for (size_t i = 0; i < n; i++) {
		const struct pt_tier_stats *t = &tiers[i];
		uint64_t cum = 0;

		if (t->n_read < 3 || (hist && t->n_lat != PAGETIER_LAT_BUCKETS))
			continue;
		if (hist) {
			for (int b = 0; b < PAGETIER_LAT_BUCKETS; b++) {
				cum += t->lat[b];
				tier_series(out, "pagetier_tier_demand_read_duration_seconds_bucket", t);
				if (b == PAGETIER_LAT_BUCKETS - 1)
					fputs(",le=\"+Inf\"}", out);
				else
					fprintf(out, ",le=\"%.15g\"}", (double)(1ULL << b) * 1e-6);
				put_u64(out, cum);
			}
		}
		tier_series(out, "pagetier_tier_demand_read_duration_seconds_sum", t);
		fputc('}', out);
		put_double(out, (double)t->read[2] / 1e9);
		tier_series(out, "pagetier_tier_demand_read_duration_seconds_count", t);
		fputc('}', out);
		put_u64(out, hist ? cum : t->read[0]);
	}
}

static void render_tiers(FILE *out, const struct pt_tier_stats *tiers, size_t n)
{
	const size_t nm = sizeof(tier_metrics) / sizeof(tier_metrics[0]);

	for (size_t k = 0; k < nm;) {
		size_t end = k + 1;
		bool any = false;
		uint64_t v;

		while (end < nm && !tier_metrics[end].type)
			end++;	/* the family's further rows */
		for (size_t r = k; r < end; r++)
			for (size_t i = 0; i < n; i++)
				any |= tier_col(&tiers[i], tier_metrics[r].file, tier_metrics[r].col, &v);
		if (any) {
			header(out, tier_metrics[k].name, tier_metrics[k].type, tier_metrics[k].help);
			for (size_t i = 0; i < n; i++)
				for (size_t r = k; r < end; r++) {
					const struct tier_metric *tm = &tier_metrics[r];

					if (!tier_col(&tiers[i], tm->file, tm->col, &v))
						continue;
					tier_series(out, tm->name, &tiers[i]);
					if (tm->label)
						fprintf(out, ",%s", tm->label);
					fputc('}', out);
					put_u64(out, v * tm->scale);
				}
		}
		k = end;
	}
	render_latency(out, tiers, n);
}

/* --- the daemon ------------------------------------------------------------------- */

static void render_fill(FILE *out, const struct pt_manager *m)
{
	static const enum pt_fill_level levels[] = { PT_FILL_OK, PT_FILL_NO_COLD, PT_FILL_FULL };

	header(out, "pagetier_tiers_fill_level", "gauge",
	       "How full the tiers are as offload sees them: 1 for the level now (ok, no-cold: no cold offload, full: no offload), 0 for the others.");
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		fprintf(out, "pagetier_tiers_fill_level{level=\"%s\"} %d\n",
			pt_fill_level_name(levels[i]), m->fill_level == levels[i]);
	if (m->fill.capacity_pages && m->fill.segments) {
		single_double(out, "pagetier_tiers_live_ratio", "gauge",
			      "Live pages of all tiers over their capacity, at the daemon's last look.",
			      (double)m->fill.live_pages / (double)m->fill.capacity_pages);
		single_double(out, "pagetier_tiers_free_segments_ratio", "gauge",
			      "Free segments of all tiers over their segments, at the daemon's last look.",
			      (double)m->fill.free_segments / (double)m->fill.segments);
	}
	single_u64(out, "pagetier_offloads_deferred_total", "counter",
		   "Offloads held back because the tiers were full.", m->fill_deferred);
	single_u64(out, "pagetier_cold_offloads_deferred_plenty_total", "counter",
		   "Cold offloads of active containers not made: MemAvailable above cold_watermark, or its shortfall already asked for.",
		   m->cold_deferred_plenty);
	single_u64(out, "pagetier_scans_relaxed_total", "counter",
		   "Scans of active containers spaced wider than their own pace: MemAvailable was at least twice the cold watermark.",
		   m->scans_relaxed);
	header(out, "pagetier_jobs_total", "counter",
	       "Jobs the worker pools finished, by kind (offload, prefetch, settle, scan, cold, trim).");
	for (int k = 0; k < PT_JOB_KINDS; k++) {
		fprintf(out, "pagetier_jobs_total{kind=\"%s\"}", pt_job_kind_label(k));
		put_u64(out, m->jobs_done[k]);
	}
	header(out, "pagetier_job_cpu_seconds_total", "counter",
	       "The worker threads' CPU time (user and system) in those jobs, by kind.");
	for (int k = 0; k < PT_JOB_KINDS; k++) {
		fprintf(out, "pagetier_job_cpu_seconds_total{kind=\"%s\"}", pt_job_kind_label(k));
		put_double(out, (double)m->job_cpu_ns[k] / 1e9);
	}
}

static void render_bpf(FILE *out, const struct pt_metrics_daemon *d)
{
	static const char *const stat_names[PT_METRICS_BPF_STATS] = { "seen", "emitted",
								       "limited" };
	static const char *const stat_help[PT_METRICS_BPF_STATS] = {
		"BPF events of opted-in cgroups, by type.",
		"BPF events written to the ring buffer, by type.",
		"BPF events sampled out, deduplicated or rate-limited in the kernel, by type.",
	};

	single_u64(out, "pagetier_bpf_enabled", "gauge",
		   "1 when the BPF wake sources are attached, 0 when wakes are found by sampling only.",
		   d->have_bpf);
	if (!d->have_bpf)
		return;
	for (int s = 0; s < PT_METRICS_BPF_STATS; s++) {
		char name[64];

		snprintf(name, sizeof(name), "pagetier_bpf_events_%s_total", stat_names[s]);
		header(out, name, "counter", stat_help[s]);
		for (int t = 1; t < PT_METRICS_BPF_TYPES; t++)
			fprintf(out, "%s{type=\"%s\"} %" PRIu64 "\n", name, bpf_type_names[t],
				d->bpf_stat[t][s]);
	}
	single_u64(out, "pagetier_bpf_events_dropped_total", "counter",
		   "BPF events lost because the ring buffer was full.", d->bpf_drops);
}

static void render_preload(FILE *out, const struct pt_metrics_daemon *d)
{
	const struct pt_preload_server_stats *p = &d->preload;
	uint64_t rejected = 0;

	if (!d->have_preload)
		return;
	for (int i = 0; i < PT_PRELOAD_REJ_NR; i++)
		rejected += p->rejected[i];
	single_u64(out, "pagetier_preload_peers", "gauge",
		   "Preloaded processes (libpagetier.so) registered now.", p->peers);
	single_u64(out, "pagetier_preload_accepted_peers_total", "counter",
		   "Preloaded processes that registered.", p->accepted_peers);
	single_u64(out, "pagetier_preload_rejected_peers_total", "counter",
		   "Registrations refused (not opted in, bad hello, too many).",
		   p->rejected_peers + p->refused);
	single_u64(out, "pagetier_preload_records_total", "counter",
		   "Records from preloaded processes delivered to the manager.", p->records);
	single_u64(out, "pagetier_preload_rejected_records_total", "counter",
		   "Records from preloaded processes refused as invalid or foreign.", rejected);
}

/* --- the NVMe drives and their write budget (wear.h) ------------------------------ */

struct wear_metric {
	const char *name, *type, *help;
	bool budget;				/* only for drives with a write budget */
	double (*get)(const struct pt_wear_drive *d);
};

static double w_capacity(const struct pt_wear_drive *d) { return (double)d->capacity_bytes; }
static double w_written(const struct pt_wear_drive *d)
{
	return (double)d->smart.data_units_written * PT_NVME_DATA_UNIT;
}
static double w_read(const struct pt_wear_drive *d)
{
	return (double)d->smart.data_units_read * PT_NVME_DATA_UNIT;
}
static double w_media(const struct pt_wear_drive *d) { return (double)d->smart.media_errors; }
static double w_warn(const struct pt_wear_drive *d) { return d->smart.critical_warning; }
static double w_used(const struct pt_wear_drive *d) { return d->smart.percentage_used / 100.0; }
static double w_spare(const struct pt_wear_drive *d) { return d->smart.available_spare / 100.0; }
static double w_budget(const struct pt_wear_drive *d) { return (double)d->budget_bytes; }
static double w_period(const struct pt_wear_drive *d) { return (double)d->period_ms / 1000; }
static double w_burst(const struct pt_wear_drive *d) { return (double)d->burst; }
static double w_left(const struct pt_wear_drive *d) { return (double)d->tokens; }

static const struct wear_metric wear_metrics[] = {
	{ "pagetier_nvme_capacity_bytes", "gauge",
	  "Capacity of the NVMe drive under a tier, what drive writes per day are of.", false,
	  w_capacity },
	{ "pagetier_nvme_data_written_bytes_total", "counter",
	  "Bytes the drive says it has written over its life (SMART data units written).",
	  false, w_written },
	{ "pagetier_nvme_data_read_bytes_total", "counter",
	  "Bytes the drive says it has read over its life (SMART data units read).", false,
	  w_read },
	{ "pagetier_nvme_media_errors_total", "counter",
	  "Unrecovered data integrity errors the drive reports (SMART).", false, w_media },
	{ "pagetier_nvme_critical_warning", "gauge",
	  "The drive's SMART critical warning bits (0: none; any stops new offload).", false,
	  w_warn },
	{ "pagetier_nvme_percentage_used_ratio", "gauge",
	  "Share of the drive's rated endurance used, as the drive estimates it (may exceed 1).",
	  false, w_used },
	{ "pagetier_nvme_available_spare_ratio", "gauge",
	  "Share of the drive's spare capacity left.", false, w_spare },
	{ "pagetier_wear_budget_bytes", "gauge",
	  "Bytes the drive may be written per budget period (write_budget).", true, w_budget },
	{ "pagetier_wear_budget_period_seconds", "gauge",
	  "The write budget's period.", true, w_period },
	{ "pagetier_wear_budget_burst_bytes", "gauge",
	  "The write budget's bucket: an hour of the budget, at most all of it.", true,
	  w_burst },
	{ "pagetier_wear_budget_remaining_bytes", "gauge",
	  "Bytes left in the write budget's bucket (negative: written beyond it, a debt).",
	  true, w_left },
};

static void wear_series(FILE *out, const char *name, const struct pt_wear_drive *d)
{
	fprintf(out, "%s{drive=", name);
	pt_metrics_label_value(out, d->name);
	fputc('}', out);
}

static void render_wear(FILE *out, const struct pt_manager *m)
{
	static const enum pt_wear_level levels[] = { PT_WEAR_OK, PT_WEAR_NO_COLD,
						     PT_WEAR_SLOW_IDLE, PT_WEAR_STOP };
	const struct pt_wear *w = &m->wear;

	header(out, "pagetier_wear_level", "gauge",
	       "The NVMe drives' wear level as offload sees it: 1 for the level now (ok, no-cold: no cold offload, slow-idle: idle offload slowed too, stop: no new offload), 0 for the others.");
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		fprintf(out, "pagetier_wear_level{level=\"%s\"} %d\n",
			pt_wear_level_name(levels[i]), w->level == levels[i]);
	single_u64(out, "pagetier_wear_offloads_deferred_total", "counter",
		   "Offloads held back by the wear level (counted per container and poll).",
		   w->deferred);
	if (w->n)
		header(out, "pagetier_nvme_info", "gauge",
		       "The NVMe drives under the tiers, read through libnvme: 1 each (accounted: 1 when its SMART log is read).");
	for (int i = 0; i < w->n; i++) {
		const struct pt_wear_drive *d = &w->drives[i];

		fprintf(out, "pagetier_nvme_info{drive=");
		pt_metrics_label_value(out, d->name);
		fprintf(out, ",namespace=");
		pt_metrics_label_value(out, d->ns_dev);
		fprintf(out, ",model=");
		pt_metrics_label_value(out, d->model);
		fprintf(out, ",serial=");
		pt_metrics_label_value(out, d->serial);
		fprintf(out, ",firmware=");
		pt_metrics_label_value(out, d->firmware);
		fprintf(out, ",accounted=\"%d\"} 1\n", d->enabled && d->samples > 0);
	}
	for (size_t k = 0; k < sizeof(wear_metrics) / sizeof(wear_metrics[0]); k++) {
		const struct wear_metric *wm = &wear_metrics[k];
		bool any = false;

		for (int i = 0; i < w->n; i++) {
			const struct pt_wear_drive *d = &w->drives[i];

			if (!d->enabled || !d->samples || (wm->budget && !d->budget_bytes))
				continue;
			if (!any)
				header(out, wm->name, wm->type, wm->help);
			any = true;
			wear_series(out, wm->name, d);
			put_double(out, wm->get(d));
		}
	}
	for (int i = 0, any = 0; i < w->n; i++) {
		const struct pt_wear_drive *d = &w->drives[i];

		if (!d->enabled || !d->samples || !d->smart.temperature_k)
			continue;
		if (!any++)
			header(out, "pagetier_nvme_temperature_celsius", "gauge",
			       "The drive's composite temperature (SMART).");
		wear_series(out, "pagetier_nvme_temperature_celsius", d);
		put_double(out, d->smart.temperature_k - 273.15);
	}
}

void pt_metrics_render(FILE *out, const struct pt_manager *m, const struct pt_tier_stats *tiers,
		       size_t n_tiers, const struct pt_metrics_daemon *d)
{
	header(out, "pagetier_info", "gauge", "The daemon's backend: pagetier.ko or plain swap.");
	fprintf(out, "pagetier_info{backend=\"%s\"} 1\n", pt_manager_backend(m));
	single_u64(out, "pagetier_containers", "gauge",
		   "Opted-in cgroups the daemon tracks, a memory context each.", m->n_ctxs);
	single_u64(out, "pagetier_policies", "gauge",
		   "Container policies in the configuration.", m->cfg.n_policies);
	if (d->have_proc) {
		single_double(out, "process_cpu_seconds_total", "counter",
			      "CPU time of pagetierd, user and system, its worker threads included.",
			      d->cpu_seconds);
		single_u64(out, "process_resident_memory_bytes", "gauge",
			   "Resident memory of pagetierd.", d->rss_bytes);
	}
	render_containers(out, m);
	render_host(out, m, d);
	render_tiers(out, tiers, n_tiers);
	render_fill(out, m);
	render_wear(out, m);
	render_bpf(out, d);
	single_u64(out, "pagetier_bpf_unmatched_events_total", "counter",
		   "BPF events of cgroups without a context (should stay 0).", m->bpf_unmatched);
	single_u64(out, "pagetier_tier_events_lost_total", "counter",
		   "Tier event ring records the kernel dropped before the daemon read them.",
		   m->tier_events_lost);
	render_preload(out, d);
	single_u64(out, "pagetier_watermark_offloaded_chunks_total", "counter",
		   "Chunks offloaded to keep free_watermark (the global victim order).",
		   m->watermark_offloads);
	single_u64(out, "pagetier_cgroup_walks_total", "counter",
		   "Walks of the cgroup tree (on inotify's news of a change, or every 5 min).",
		   m->walks);
	single_u64(out, "pagetier_cgroup_watch_overflows_total", "counter",
		   "Overflows of the cgroup tree's inotify queue (a walk follows each).",
		   m->watch.overflows);
	single_u64(out, "pagetier_cgroup_watch_errors_total", "counter",
		   "Cgroup directories inotify could not watch (walked every second meanwhile).",
		   m->watch.watch_errors);
	single_u64(out, "pagetier_cgroup_walk_errors_total", "counter",
		   "Walks of the cgroup tree that failed (contexts kept).", m->walk_errors);
	single_u64(out, "pagetier_sample_errors_total", "counter",
		   "Cgroup samples that failed for another reason than the cgroup being gone.",
		   m->sample_errors);
	single_u64(out, "pagetier_ticks_total", "counter",
		   "Policy ticks (one each poll_interval).", m->ticks);
	single_u64(out, "pagetier_samples_total", "counter",
		   "Cgroup samples taken in ticks (a context's stat files read).",
		   m->samples_taken);
	single_u64(out, "pagetier_samples_skipped_total", "counter",
		   "Cgroup samples not taken: quiet idle containers whose tasks no event woke.",
		   m->samples_skipped);
	single_u64(out, "pagetier_samples_light_total", "counter",
		   "Safety samples of quiet containers that found CPU and memory unmoved (memory.stat not read).",
		   m->samples_light);
	single_u64(out, "pagetier_sample_batches_total", "counter",
		   "Batched reads of the sampled containers' cpu.stat and memory.current (sample_reader = io_uring).",
		   m->sample_batches);
	single_u64(out, "pagetier_samples_batched_total", "counter",
		   "Cgroup samples whose CPU and memory.current came from a batched read.",
		   m->samples_batched);
	single_u64(out, "pagetier_tier_usage_reads_total", "counter",
		   "Reads of the tiers' per-cgroup usage table (at most one a tick, and only in a tick that samples).",
		   m->usage_reads);
	single_u64(out, "pagetier_tick_event_polls_total", "counter",
		   "Reads of the wake sources' rings between the samples of a long tick.",
		   m->tick_polls);
}
