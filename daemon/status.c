// SPDX-License-Identifier: GPL-2.0
#include "status.h"

#include <inttypes.h>
#include <string.h>

void pt_fmt_bytes(char *buf, size_t size, unsigned long long bytes)
{
	static const char units[] = "KMGTP";
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, size, "%llu", bytes);
		return;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f%c", v, units[u]);
}

void pt_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void fmt_wa(char *buf, size_t size, double wa)
{
	if (wa < 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.2f", wa);
}

/* The host line: "host: 31.3G memory, 21.2G used, 6.0G offloaded by pagetier (22.1%...)". */
static void host_line(FILE *out, const struct pt_host_mem *h)
{
	char tot[16], used[16], off[16], all[16];

	if (!h || !h->known)
		return;
	pt_fmt_bytes(tot, sizeof(tot), h->total);
	pt_fmt_bytes(used, sizeof(used), h->used);
	pt_fmt_bytes(off, sizeof(off), h->offloaded);
	pt_fmt_bytes(all, sizeof(all), h->used + h->offloaded);
	fprintf(out, "host: %s memory, %s used, %s offloaded by pagetier (%.1f%% of the %s in use or offloaded)\n",
		tot, used, off, pt_host_offloaded_share(h) * 100, all);
}

void pt_status_table(FILE *out, const struct pt_context *ctxs, size_t n,
		     const struct pt_host_mem *host)
{
	uint64_t saved = 0, written = 0;
	bool written_known = false;

	fprintf(out, "%-16s %-10s %-7s %9s %9s %9s %9s %9s %9s %9s %9s %10s %5s %7s %9s %9s %6s %6s  %s\n",
		"CONTAINER", "CLASS", "STATE", "RESIDENT", "ANON", "FILE", "SHMEM", "KERNEL",
		"SWAPPED", "ON-TIER", "SAVED", "IDLE-SAVED", "WA", "WAKES", "LAST-WAKE", "REFAULTS",
		"PREC", "RECALL", "CGROUP");
	for (size_t i = 0; i < n; i++) {
		const struct pt_context *c = &ctxs[i];
		char res[16], anon[16], file[16], shm[16], kern[16], swp[16], tier[16], sav[16],
		     isav[16], wa[16], wake[24], prec[16], rec[16];
		struct pt_mem_split ms;

		pt_mem_split(&c->sample, &ms);
		pt_fmt_bytes(res, sizeof(res), c->sample.memory_current);
		pt_fmt_bytes(anon, sizeof(anon), ms.anon);
		pt_fmt_bytes(file, sizeof(file), ms.file);
		pt_fmt_bytes(shm, sizeof(shm), ms.shmem);
		pt_fmt_bytes(kern, sizeof(kern), ms.kernel);
		pt_fmt_bytes(swp, sizeof(swp), c->sample.swap_current);
		pt_fmt_bytes(tier, sizeof(tier), c->tier_pages * 4096ULL);
		pt_fmt_bytes(sav, sizeof(sav), pt_context_saved(c));
		pt_fmt_bytes(isav, sizeof(isav), c->idle_saved);
		fmt_wa(wa, sizeof(wa), pt_context_write_amp(c));
		saved += pt_context_saved(c);
		written += c->tier_written;
		written_known |= c->tier_written_known;
		if (c->n_wakes)
			snprintf(wake, sizeof(wake), "%llums", (unsigned long long)c->last_wake_ms);
		else
			snprintf(wake, sizeof(wake), "-");
		if (c->hot_ok && c->hot.precision >= 0)
			snprintf(prec, sizeof(prec), "%.0f%%", c->hot.precision * 100);
		else
			snprintf(prec, sizeof(prec), "-");
		if (c->hot_ok && c->hot.recall >= 0)
			snprintf(rec, sizeof(rec), "%.0f%%", c->hot.recall * 100);
		else
			snprintf(rec, sizeof(rec), "-");
		fprintf(out, "%-16s %-10s %-7s %9s %9s %9s %9s %9s %9s %9s %9s %10s %5s %7llu %9s %9llu %6s %6s  %s\n",
			c->policy.name, pt_class_name(c->policy.class), pt_state_name(c->idle.state),
			res, anon, file, shm, kern, swp, tier, sav, isav, wa,
			(unsigned long long)c->n_wakes, wake,
			(unsigned long long)(c->hot_ok ? c->hot.refaults : 0), prec, rec, c->relpath);
	}
	if (!n) {
		fprintf(out, "(no opted-in container is running)\n");
	} else {
		char sav[16], wa[16];

		pt_fmt_bytes(sav, sizeof(sav), saved);
		fmt_wa(wa, sizeof(wa), written_known && saved ? (double)written / (double)saved : -1);
		fprintf(out, "total: %s saved (offloaded and freed), write amplification %s\n", sav,
			wa);
	}
	host_line(out, host);
}

void pt_status_json(FILE *out, const struct pt_context *ctxs, size_t n, const char *backend,
		    uint64_t bpf_unmatched, const struct pt_host_mem *host,
		    void (*more)(FILE *out, const void *arg), const void *more_arg)
{
	fprintf(out, "{\"backend\":");
	pt_json_string(out, backend);
	fprintf(out, ",\"bpf_unmatched_events\":%" PRIu64, bpf_unmatched);
	if (host && host->known)
		fprintf(out,
			",\"host\":{\"memory_total_bytes\":%" PRIu64
			",\"memory_available_bytes\":%" PRIu64 ",\"memory_used_bytes\":%" PRIu64
			",\"offloaded_bytes\":%" PRIu64 ",\"offloaded_share\":%.4f}",
			host->total, host->available, host->used, host->offloaded,
			pt_host_offloaded_share(host));
	fprintf(out, ",\"containers\":[");
	for (size_t i = 0; i < n; i++) {
		const struct pt_context *c = &ctxs[i];
		struct pt_mem_split ms;
		char waits[96];

		pt_mem_split(&c->sample, &ms);
		fprintf(out, "%s{\"name\":", i ? "," : "");
		pt_json_string(out, c->policy.name);
		fprintf(out, ",\"cgroup\":");
		pt_json_string(out, c->relpath);
		fprintf(out,
			",\"cgroup_id\":%" PRIu64 ",\"class\":\"%s\",\"state\":\"%s\""
			",\"resident_bytes\":%" PRIu64 ",\"anon_bytes\":%" PRIu64
			",\"file_bytes\":%" PRIu64 ",\"shmem_bytes\":%" PRIu64
			",\"kernel_bytes\":%" PRIu64 ",\"other_bytes\":%" PRIu64
			",\"swapped_bytes\":%" PRIu64 ",\"swapcached_bytes\":%" PRIu64
			",\"tier_bytes\":%" PRIu64 ",\"saved_bytes\":%" PRIu64
			",\"idle_saved_bytes\":%" PRIu64 ",\"keep_bytes\":%" PRIu64
			",\"tier_written_bytes\":%" PRIu64 ",\"write_amplification\":%.3f"
			",\"busy_cause\":\"%s\""
			",\"idle_periods\":%" PRIu64 ",\"idle_since_ms\":%" PRIu64
			",\"anon_at_idle_bytes\":%" PRIu64 ",\"shmem_at_idle_bytes\":%" PRIu64
			",\"file_at_idle_bytes\":%" PRIu64 ",\"offloads\":%" PRIu64
			",\"offload_requested_bytes\":%" PRIu64 ",\"wakes\":%" PRIu64
			",\"prefetch_requested_bytes\":%" PRIu64 ",\"prefetch_file_bytes\":%" PRIu64
			",\"prefetch_dropped_bytes\":%" PRIu64 ",\"trims_wrote\":%" PRIu64
			",\"tier_prefetch_bytes\":%" PRIu64
			",\"rest_requested_bytes\":%" PRIu64 ",\"rests\":%" PRIu64
			",\"last_wake_ms\":%" PRIu64
			",\"reclaimed_bytes\":%" PRIu64 ",\"preload_records\":%" PRIu64
			",\"bpf_events\":{\"fault\":%" PRIu64 ",\"swapin\":%" PRIu64
			",\"wakeup\":%" PRIu64 ",\"net\":%" PRIu64 "},\"tier_read_events\":%" PRIu64
			",\"tier_read_misses\":%" PRIu64 ",\"tier_read_miss_bytes\":%" PRIu64
			",\"scans\":%" PRIu64
			",\"refaults\":%" PRIu64 ",\"cold_offloaded_bytes\":%" PRIu64
			",\"wake_set_chunks\":%zu,\"prefetch_precision\":%.3f"
			",\"prefetch_recall\":%.3f,\"woke_at_ms\":%" PRIu64 ",\"wake_source\":",
			c->cgroup_id, pt_class_name(c->policy.class), pt_state_name(c->idle.state),
			c->sample.memory_current, ms.anon, ms.file, ms.shmem, ms.kernel, ms.other,
			c->sample.swap_current,
			c->sample.swapcached, c->tier_pages * (uint64_t)4096, pt_context_saved(c),
			c->idle_saved, c->keep_bytes, c->tier_written, pt_context_write_amp(c),
			pt_idle_cause_name(c->idle.cause), c->n_idle, c->idle.idle_since_ms,
			c->anon_at_idle, c->shmem_at_idle, c->file_at_idle, c->n_offloads,
			c->offload_requested, c->n_wakes, c->prefetch_requested,
			c->prefetch_file_requested, c->prefetch_dropped, c->trims_wrote,
			c->tier_prefetch_planned, c->rest_requested, c->n_rests, c->last_wake_ms,
			c->reclaimed, c->preload_records, c->bpf_events[1], c->bpf_events[2],
			c->bpf_events[3], c->bpf_events[4], c->tier_reads, c->tier_misses,
			c->tier_miss_pages * (uint64_t)4096, c->scans,
			c->hot.refaults, c->cold_offloaded_bytes, c->hot.n_wake_set, c->hot_ok ? c->hot.precision : -1.0,
			c->hot_ok ? c->hot.recall : -1.0, c->idle.woke_at_ms);
		pt_json_string(out, c->wake_source);
		pt_context_waits_for(c, waits, sizeof(waits));
		fprintf(out, ",\"waiting_for\":");
		pt_json_string(out, waits);
		fprintf(out, ",\"sampled_each_poll\":%s", c->pace.skipping || c->pace.steady ? "false" : "true");
		fprintf(out, ",\"false_wakes\":%" PRIu64 ",\"refault_wake_pages\":%" PRIu64,
			c->idle.false_wakes, pt_idle_wake_pages(&c->idle, &c->policy.idle));
		fprintf(out, ",\"offload_backoff\":%u,\"offloads_undone\":%" PRIu64,
			c->offload_backoff, c->offloads_undone);
		fprintf(out, ",\"job_cpu_ms\":{");
		for (int k = 0; k < PT_JOB_KINDS; k++)
			fprintf(out, "%s\"%s\":%" PRIu64, k ? "," : "", pt_job_kind_label(k),
				c->job_cpu_ns[k] / 1000000);
		fputc('}', out);
		fputc('}', out);
	}
	fputc(']', out);
	if (more)
		more(out, more_arg);	/* members of other modules' (the drives' wear) */
	fprintf(out, "}\n");
}
