/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pagetierd's Prometheus metrics, in the text exposition format (version 0.0.4): every
 * opted-in container's context, every tier's sysfs counters and the daemon's own.
 *
 * Rendering is pure: it formats a manager and the snapshots it is given, which the caller
 * gathers at each scrape on the loop thread (pagetierd.c; the HTTP server is
 * metrics_http.c), so it reads the manager without locks and is unit tested over
 * synthetic managers. Reading the tiers' sysfs files and /proc/self/stat is here too, apart
 * from the rendering, so that tests run it on trees of their own.
 *
 * Names follow Prometheus' conventions: prefix pagetier_, base units (bytes, seconds),
 * _total for counters, ratios from 0 to 1. A value the daemon does not know yet (no wake,
 * no prefetch measured) has no sample rather than a made-up one.
 */
#ifndef PAGETIER_METRICS_H
#define PAGETIER_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "manager.h"
#include "memuse.h"
#include "pagetier/bpf_events.h"
#include "preload_server.h"

/*
 * BPF event types (enum pt_bpf_event_type, 0 unused) and the per-type counters of enum
 * pt_bpf_stat (seen, emitted, limited), as the BPF programs number them.
 */
#define PT_METRICS_BPF_TYPES	PT_BPF_EV_MAX
#define PT_METRICS_BPF_STATS	PT_BPF_STAT_NR

#define PT_TIER_NAME_MAX	32

/*
 * One tier's sysfs files under /sys/block/pagetierN (kmod/README.md, "sysfs"): the
 * columns read from each, in order (n_*: how many; 0: no such file). Columns are only ever
 * appended: more than these arrays hold are ignored.
 */
struct pt_tier_stats {
	char name[PT_TIER_NAME_MAX];	/* "pagetier0" */
	unsigned int id;		/* N */
	int n_tier, n_seg, n_read, n_io, n_lat;
	uint64_t tier[16];		/* tier_stat */
	uint64_t seg[16];		/* seg_stat */
	uint64_t read[24];		/* read_stat */
	uint64_t io[16];		/* io_stat */
	uint64_t lat[PAGETIER_LAT_BUCKETS];	/* read_latency */
};

/* What the daemon knows that the manager does not hold: pagetierd.c fills it per scrape. */
struct pt_metrics_daemon {
	bool have_proc;			/* /proc/self/stat read */
	double cpu_seconds;		/* user + system */
	uint64_t rss_bytes;
	bool have_bpf;			/* the BPF wake sources are attached */
	uint64_t bpf_drops;		/* events lost to a full ring buffer */
	uint64_t bpf_stat[PT_METRICS_BPF_TYPES][PT_METRICS_BPF_STATS];
	bool have_preload;		/* the preload socket is open */
	struct pt_preload_server_stats preload;
	struct pt_host_mem host;	/* /proc/meminfo (host.known); offloaded: rendered */
};

/*
 * One line of space-separated decimal columns into @v (at most @max); returns how many
 * there were (those beyond @max are counted, not stored), or -EINVAL.
 */
int pt_stat_columns(const char *line, uint64_t *v, int max);

/*
 * Reads every pagetierN under @sysblock ("/sys/block"), sorted by N, into *@out (malloc'd,
 * NULL when there is none). A file that is missing or unreadable leaves its columns out.
 * Returns how many tiers, or a negative errno (@sysblock unreadable).
 */
int pt_tier_stats_read(const char *sysblock, struct pt_tier_stats **out);

/*
 * /proc/self/stat's text: CPU time (utime + stime, in @clk_tck ticks) and resident set
 * (pages of @page_size) into @d, have_proc set. 0 or -EINVAL.
 */
int pt_proc_stat_parse(const char *text, long clk_tck, long page_size,
		       struct pt_metrics_daemon *d);

/* Renders everything: the body of GET /metrics. */
void pt_metrics_render(FILE *out, const struct pt_manager *m, const struct pt_tier_stats *tiers,
		       size_t n_tiers, const struct pt_metrics_daemon *d);

/* Writes @s as the value of a label: '\', '"' and newlines escaped. */
void pt_metrics_label_value(FILE *out, const char *s);

#endif
