// SPDX-License-Identifier: GPL-2.0
#include "bpf_loader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "pagetier.skel.h"	/* generated: make -C bpf O=build/bpf, build with -Ibuild/bpf */

enum cand_kind { K_TP_BTF, K_RAW_TP, K_FENTRY, K_FEXIT, K_KPROBE, K_KRETPROBE, K_CGROUP_SKB };

struct cand {
	const char *prog;	/* program name in pagetier.bpf.c */
	enum cand_kind kind;
	const char *target;	/* tracepoint or kernel function */
};

#define MAX_CANDS 6

struct signal {
	const char *name;
	struct cand cands[MAX_CANDS];
	int n;
};

static const struct signal signals[] = {
	{ "fault", {
		{ "pt_fault_btf", K_TP_BTF, "page_fault_user" },
		{ "pt_fault_raw", K_RAW_TP, "page_fault_user" } }, 2 },
	{ "swapin", {
		{ "pt_swapin_folio", K_FENTRY, "swap_read_folio" },	/* 6.12 */
		{ "pt_swapin_page", K_FENTRY, "swap_readpage" },	/* 6.1 */
		{ "pt_swapin_folio_kp", K_KPROBE, "swap_read_folio" },
		{ "pt_swapin_page_kp", K_KPROBE, "swap_readpage" },
		{ "pt_swapin_lru_btf", K_TP_BTF, "mm_lru_insertion" },	/* no fentry, no kprobes */
		{ "pt_swapin_lru_raw", K_RAW_TP, "mm_lru_insertion" } }, 6 },
	{ "wakeup", {
		{ "pt_wakeup_btf", K_TP_BTF, "sched_wakeup" },
		{ "pt_wakeup_raw", K_RAW_TP, "sched_wakeup" } }, 2 },
	{ "wakeup_new", {
		{ "pt_wakeup_new_btf", K_TP_BTF, "sched_wakeup_new" },
		{ "pt_wakeup_new_raw", K_RAW_TP, "sched_wakeup_new" } }, 2 },
	{ "attach", {
		{ "pt_attach_btf", K_TP_BTF, "cgroup_attach_task" },
		{ "pt_attach_raw", K_RAW_TP, "cgroup_attach_task" } }, 2 },
	{ "net", {
		{ "pt_ingress", K_CGROUP_SKB, "ingress" } }, 1 },
	{ "unix", {
		{ "pt_unix_recv", K_FEXIT, "unix_stream_recvmsg" },
		{ "pt_unix_recv_kp", K_KRETPROBE, "unix_stream_recvmsg" } }, 2 },
};

#define NR_SIGNALS (sizeof(signals) / sizeof(signals[0]))
#define MAX_ATTEMPTS 12

struct pt_bpf {
	struct pagetier_bpf *skel;
	struct ring_buffer *rb;
	int cgroup_fd;
	int ncpus;
	char attached[NR_SIGNALS][128];
	const char *attached_ptrs[NR_SIGNALS];
	size_t nattached;
	pt_bpf_event_fn fn;
	void *fn_arg;
	uint64_t short_records;
};

/*
 * libbpf reports through one global print callback. We keep the last warning (the reason to
 * give the operator when loading fails) and the last program it complained about (the
 * candidate to replace), and pass everything on at debug level.
 */
static char last_warning[256];
static char last_failed_prog[64];

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];
	const char *p;
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	if (n && line[n - 1] == '\n')
		line[n - 1] = '\0';
	if (level == LIBBPF_WARN) {
		snprintf(last_warning, sizeof(last_warning), "%s", line);
		p = strstr(line, "prog '");
		if (p) {
			p += 6;
			n = strcspn(p, "'");
			if (n < sizeof(last_failed_prog)) {
				memcpy(last_failed_prog, p, n);
				last_failed_prog[n] = '\0';
			}
		}
	}
	if (level != LIBBPF_DEBUG)
		pt_debug("libbpf: %s", line);
	return 0;
}

void pt_bpf_default_opts(struct pt_bpf_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->fault_sample_shift = 6;
	opts->win_ns = 10 * 1000 * 1000ULL;
	opts->win_max = 64;
	opts->active_min_interval_ns = 100 * 1000 * 1000ULL;
	opts->wake_min_interval_ns = 100 * 1000 * 1000ULL;
	opts->net_min_interval_ns = 100 * 1000 * 1000ULL;
}

static bool kallsyms_has(const char *sym)
{
	char line[256], name[128];
	bool found = false;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %127s", name) == 1 && strcmp(name, sym) == 0)
			found = true;
	}
	fclose(f);
	return found;
}

/*
 * Whether the running kernel has what @c attaches to, as far as can be told before loading.
 * @vmlinux: the kernel's BTF, parsed once for every candidate (5 MiB of it on Debian's
 * kernels; libbpf_find_vmlinux_btf_id would parse it again for each), or NULL without it.
 * The names are the ones libbpf's attach looks up: a BTF tracepoint's "btf_trace_" typedef,
 * an fentry's or fexit's function.
 */
static bool cand_target_exists(const struct cand *c, const struct btf *vmlinux)
{
	char name[128];

	switch (c->kind) {
	case K_TP_BTF:
		snprintf(name, sizeof(name), "btf_trace_%s", c->target);
		return vmlinux && btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
	case K_FENTRY:
	case K_FEXIT:
		return vmlinux && btf__find_by_name_kind(vmlinux, c->target, BTF_KIND_FUNC) > 0;
	case K_KPROBE:
	case K_KRETPROBE:
		return kallsyms_has(c->target);
	case K_RAW_TP:		/* the attach tells */
	case K_CGROUP_SKB:
		return true;
	}
	return false;
}

static const char *kind_name(enum cand_kind kind)
{
	switch (kind) {
	case K_TP_BTF: return "tp_btf";
	case K_RAW_TP: return "raw_tp";
	case K_FENTRY: return "fentry";
	case K_FEXIT: return "fexit";
	case K_KPROBE: return "kprobe";
	case K_KRETPROBE: return "kretprobe";
	case K_CGROUP_SKB: return "cgroup_skb";
	}
	return "?";
}

/* The mount point of the cgroup2 hierarchy (/sys/fs/cgroup, or .../unified on hybrid). */
static int find_cgroup2_root(char *buf, size_t len)
{
	char dev[64], dir[256], type[64];
	int ret = -ENOENT;
	FILE *f = fopen("/proc/self/mounts", "re");

	if (!f)
		return -errno;
	while (fscanf(f, "%63s %255s %63s %*[^\n]", dev, dir, type) == 3) {
		if (strcmp(type, "cgroup2") == 0) {
			snprintf(buf, len, "%s", dir);
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

static int find_signal_of_prog(const char *prog, int *sig)
{
	for (size_t s = 0; s < NR_SIGNALS; s++)
		for (int i = 0; i < signals[s].n; i++)
			if (strcmp(signals[s].cands[i].prog, prog) == 0) {
				*sig = (int)s;
				return i;
			}
	return -ENOENT;
}

/* One jiffy in ns: the coarse clock's resolution is the kernel's tick. 0 if unknown. */
static uint64_t jiffy_ns(void)
{
	struct timespec res;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) || res.tv_sec || res.tv_nsec <= 0)
		return 0;
	return (uint64_t)res.tv_nsec;
}

static void set_rodata(struct pagetier_bpf *skel, const struct pt_bpf_opts *o)
{
	uint64_t tick = jiffy_ns();

	skel->rodata->fault_sample_shift = o->fault_sample_shift > 16 ? 16 : o->fault_sample_shift;
	skel->rodata->win_ns = o->win_ns;
	skel->rodata->win_max = o->win_max;
	if (tick)
		skel->rodata->jiffy_ns = tick;
	else
		pt_warn("the kernel's tick is unknown (clock_getres of CLOCK_MONOTONIC_COARSE): the BPF rate limits assume HZ = 250");
	tick = skel->rodata->jiffy_ns;
	skel->rodata->active_min_interval_j = pt_bpf_interval_jiffies(o->active_min_interval_ns, tick);
	skel->rodata->wake_min_interval_j = pt_bpf_interval_jiffies(o->wake_min_interval_ns, tick);
	skel->rodata->net_min_interval_j = pt_bpf_interval_jiffies(o->net_min_interval_ns, tick);
}

static struct bpf_link *attach_cand(struct pt_bpf *b, const struct cand *c,
				    struct bpf_program *prog)
{
	switch (c->kind) {
	case K_RAW_TP:
		return bpf_program__attach_raw_tracepoint(prog, c->target);
	case K_CGROUP_SKB:
		return bpf_program__attach_cgroup(prog, b->cgroup_fd);
	default:
		return bpf_program__attach(prog);	/* section name has the target */
	}
}

static void report_add(char *report, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void report_add(char *report, size_t len, const char *fmt, ...)
{
	size_t used = strnlen(report, len);
	va_list ap;

	if (used + 1 >= len)
		return;
	if (used)
		report[used++] = ' ';
	va_start(ap, fmt);
	vsnprintf(report + used, len - used, fmt, ap);
	va_end(ap);
}

/*
 * One try: open the skeleton with the chosen candidate of every signal, load, attach.
 * Returns 0, or -EAGAIN after moving a failing signal to its next candidate (try again), or
 * another negative errno when loading cannot work at all.
 */
static int try_load(struct pt_bpf *b, const struct pt_bpf_opts *opts, int *choice,
		    const bool exists[NR_SIGNALS][MAX_CANDS], const char *cgroup_root)
{
	struct pagetier_bpf *skel;
	int err, sig;

	skel = pagetier_bpf__open();
	if (!skel)
		return errno ? -errno : -ENOMEM;
	set_rodata(skel, opts);
	for (size_t s = 0; s < NR_SIGNALS; s++) {
		while (choice[s] < signals[s].n && !exists[s][choice[s]])
			choice[s]++;
		for (int i = 0; i < signals[s].n; i++) {
			struct bpf_program *p =
				bpf_object__find_program_by_name(skel->obj, signals[s].cands[i].prog);

			if (p)
				bpf_program__set_autoload(p, i == choice[s]);
		}
	}
	last_failed_prog[0] = '\0';
	last_warning[0] = '\0';
	err = pagetier_bpf__load(skel);
	if (err) {
		int i = find_signal_of_prog(last_failed_prog, &sig);

		pagetier_bpf__destroy(skel);
		if (i < 0 || i != choice[sig])
			return err;	/* not one program's fault: maps, BTF, privileges */
		pt_info("bpf: %s: %s/%s failed to load, trying the next candidate", signals[sig].name,
			kind_name(signals[sig].cands[i].kind), signals[sig].cands[i].target);
		choice[sig]++;
		return -EAGAIN;
	}
	b->skel = skel;
	for (size_t s = 0; s < NR_SIGNALS; s++) {
		const struct cand *c;
		struct bpf_program *prog;
		struct bpf_link *link;

		if (choice[s] >= signals[s].n)
			continue;
		c = &signals[s].cands[choice[s]];
		prog = bpf_object__find_program_by_name(skel->obj, c->prog);
		link = prog ? attach_cand(b, c, prog) : NULL;
		if (!link) {
			err = -errno;
			pt_info("bpf: %s: attaching %s/%s failed (%s), trying the next candidate",
				signals[s].name, kind_name(c->kind), c->target, strerror(-err));
			choice[s]++;
			pagetier_bpf__destroy(skel);	/* also destroys the links made so far */
			b->skel = NULL;
			return -EAGAIN;
		}
		/* Stored in the skeleton, so pagetier_bpf__destroy() detaches it. */
		for (int i = 0; i < skel->skeleton->prog_cnt; i++)
			if (*skel->skeleton->progs[i].prog == prog)
				*skel->skeleton->progs[i].link = link;
		if (c->kind == K_CGROUP_SKB)
			snprintf(b->attached[s], sizeof(b->attached[s]), "%s=cgroup_skb/ingress(%s)",
				 signals[s].name, cgroup_root);
		else
			snprintf(b->attached[s], sizeof(b->attached[s]), "%s=%s/%s", signals[s].name,
				 kind_name(c->kind), c->target);
	}
	return 0;
}

static int ring_sample(void *ctx, void *data, size_t size)
{
	struct pt_bpf *b = ctx;

	if (size < sizeof(struct pt_bpf_event)) {
		b->short_records++;
		return 0;
	}
	return b->fn ? b->fn(data, b->fn_arg) : 0;
}

int pt_bpf_open_opts(struct pt_bpf **out, const struct pt_bpf_opts *opts, char *report,
		     size_t len)
{
	bool exists[NR_SIGNALS][MAX_CANDS] = { { false } };
	int choice[NR_SIGNALS] = { 0 };
	struct btf *vmlinux;
	char cgroup_root[256];
	struct pt_bpf *b;
	int err = 0;

	if (len)
		report[0] = '\0';
	*out = NULL;
	libbpf_set_print(libbpf_print);
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(report, len, "BPF unavailable: the kernel has no BTF "
			 "(/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF): running without it");
		return -ENOTSUP;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(report, len, "BPF: out of memory");
		return -ENOMEM;
	}
	b->cgroup_fd = -1;
	b->ncpus = libbpf_num_possible_cpus();
	if (b->ncpus <= 0) {
		err = b->ncpus ? b->ncpus : -EINVAL;
		snprintf(report, len, "BPF unavailable: cannot count possible CPUs (%s)",
			 strerror(-err));
		goto fail;
	}
	if (opts->cgroup2_root)
		snprintf(cgroup_root, sizeof(cgroup_root), "%s", opts->cgroup2_root);
	else if (find_cgroup2_root(cgroup_root, sizeof(cgroup_root)) < 0)
		cgroup_root[0] = '\0';
	if (cgroup_root[0])
		b->cgroup_fd = open(cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		pt_debug("BPF: reading the kernel's BTF failed (%s): no BTF-typed probe",
			 strerror(errno));
	for (size_t s = 0; s < NR_SIGNALS; s++)
		for (int i = 0; i < signals[s].n; i++) {
			const struct cand *c = &signals[s].cands[i];

			exists[s][i] = c->kind == K_CGROUP_SKB ? b->cgroup_fd >= 0 :
				       cand_target_exists(c, vmlinux);
		}
	btf__free(vmlinux);

	for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
		memset(b->attached, 0, sizeof(b->attached));
		err = try_load(b, opts, choice, exists, cgroup_root);
		if (err != -EAGAIN)
			break;
	}
	if (err) {
		snprintf(report, len, "BPF unavailable: loading the programs failed: %s%s%s%s",
			 strerror(-err), last_warning[0] ? " (libbpf: " : "", last_warning,
			 last_warning[0] ? ")" : "");
		if (err == -EPERM || err == -EACCES)
			report_add(report, len, "- pagetierd needs root (CAP_BPF, CAP_PERFMON)");
		goto fail;
	}

	for (size_t s = 0; s < NR_SIGNALS; s++) {
		if (b->attached[s][0]) {
			b->attached_ptrs[b->nattached++] = b->attached[s];
			report_add(report, len, "%s", b->attached[s]);
		} else if (signals[s].cands[0].kind == K_CGROUP_SKB && b->cgroup_fd < 0) {
			report_add(report, len, "%s=none(no cgroup2 mount)", signals[s].name);
		} else {
			report_add(report, len, "%s=none", signals[s].name);
		}
	}
	if (!b->nattached) {
		err = -ENOTSUP;
		snprintf(report, len, "BPF unavailable: no program could be attached");
		goto fail;
	}

	b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.pt_events), ring_sample, b, NULL);
	if (!b->rb) {
		err = -errno;
		snprintf(report, len, "BPF: creating the ring buffer reader failed: %s",
			 strerror(-err));
		goto fail;
	}
	*out = b;
	return 0;
fail:
	pt_bpf_close(b);
	return err;
}

int pt_bpf_open(struct pt_bpf **out, char *report, size_t len)
{
	struct pt_bpf_opts opts;

	pt_bpf_default_opts(&opts);
	return pt_bpf_open_opts(out, &opts, report, len);
}

size_t pt_bpf_attached(const struct pt_bpf *b, const char **names, size_t max)
{
	size_t n = b->nattached < max ? b->nattached : max;

	for (size_t i = 0; i < n; i++)
		names[i] = b->attached_ptrs[i];
	return n;
}

int pt_bpf_add_cgroup_as(struct pt_bpf *b, uint64_t id, uint64_t report_id)
{
	struct pt_bpf_cgroup v = { .report_id = report_id, .wake_daemon = 1 };
	int err;

	err = bpf_map__update_elem(b->skel->maps.pt_cgroups, &id, sizeof(id), &v, sizeof(v),
				   BPF_ANY);
	if (err == -E2BIG)
		return -ENOSPC;	/* the hash map is full: PT_BPF_MAX_CGROUPS */
	return err;
}

int pt_bpf_add_cgroup(struct pt_bpf *b, uint64_t id)
{
	return pt_bpf_add_cgroup_as(b, id, id);
}

int pt_bpf_del_cgroup(struct pt_bpf *b, uint64_t id)
{
	return bpf_map__delete_elem(b->skel->maps.pt_cgroups, &id, sizeof(id), 0);
}

int pt_bpf_set_wake(struct pt_bpf *b, uint64_t id, bool on)
{
	const struct bpf_map *map = b->skel->maps.pt_cgroups;
	struct pt_bpf_cgroup v;
	int err;

	/* Read-modify-write: the programs' rate-limit state in the entry stays. */
	err = bpf_map__lookup_elem(map, &id, sizeof(id), &v, sizeof(v), 0);
	if (err)
		return err;
	v.wake_daemon = on;
	return bpf_map__update_elem(map, &id, sizeof(id), &v, sizeof(v), BPF_EXIST);
}

int pt_bpf_fd(const struct pt_bpf *b)
{
	return ring_buffer__epoll_fd(b->rb);
}

int pt_bpf_poll(struct pt_bpf *b, pt_bpf_event_fn fn, void *arg)
{
	int n;

	b->fn = fn;
	b->fn_arg = arg;
	n = ring_buffer__consume(b->rb);
	b->fn = NULL;
	b->fn_arg = NULL;
	return n;
}

/* Sums one key of a per-CPU array of u64 counters. */
static uint64_t percpu_sum(const struct pt_bpf *b, const struct bpf_map *map, uint32_t key)
{
	uint64_t *vals, sum = 0;

	vals = calloc((size_t)b->ncpus, sizeof(*vals));
	if (!vals)
		return 0;
	if (bpf_map__lookup_elem(map, &key, sizeof(key), vals, (size_t)b->ncpus * sizeof(*vals),
				 0) == 0)
		for (int i = 0; i < b->ncpus; i++)
			sum += vals[i];
	free(vals);
	return sum;
}

uint64_t pt_bpf_drops(const struct pt_bpf *b)
{
	uint64_t sum = 0;

	for (uint32_t t = 0; t < PT_BPF_EV_MAX; t++)
		sum += percpu_sum(b, b->skel->maps.pt_drops, t);
	return sum;
}

uint64_t pt_bpf_stat(const struct pt_bpf *b, unsigned int type, unsigned int stat)
{
	if (type >= PT_BPF_EV_MAX || stat >= PT_BPF_STAT_NR)
		return 0;
	return percpu_sum(b, b->skel->maps.pt_stats, type * PT_BPF_STAT_NR + stat);
}

void pt_bpf_close(struct pt_bpf *b)
{
	if (!b)
		return;
	ring_buffer__free(b->rb);
	pagetier_bpf__destroy(b->skel);
	if (b->cgroup_fd >= 0)
		close(b->cgroup_fd);
	free(b);
}
