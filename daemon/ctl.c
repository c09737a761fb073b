// SPDX-License-Identifier: GPL-2.0
#include "ctl.h"

#include <limits.h>
#include <string.h>

#include "pidfd.h"
#include "status.h"

static void containers(struct pt_manager *m, FILE *out)
{
	for (size_t i = 0; i < m->cfg.n_policies; i++) {
		const struct pt_policy *p = &m->cfg.policies[i];
		int running = 0;

		for (size_t j = 0; j < m->n_ctxs; j++)
			running += strcmp(m->ctxs[j].policy.name, p->name) == 0;
		fprintf(out, "%-16s %-10s running=%d match=%s%s%s  (%s)\n", p->name,
			pt_class_name(p->class), running, p->match_cgroup,
			p->match_cgroup[0] && p->match_id[0] ? "," : "", p->match_id, p->source);
	}
}

/* The host's line of a status: /proc/meminfo now, the contexts' offloaded memory. */
static void host_mem(const struct pt_manager *m, struct pt_host_mem *h)
{
	memset(h, 0, sizeof(*h));
	if (pt_meminfo_read("/proc/meminfo", h))
		return;	/* not known: the status leaves the host line out */
	pt_host_offloaded(h, m->ctxs, m->n_ctxs);
}

/*
 * The daemon's own members of the status object: the drives' wear, the pidfds it holds,
 * the protection it holds along the critical containers' paths.
 */
static void daemon_members(FILE *out, const void *arg)
{
	const struct pt_manager *m = arg;

	fputs(",\"wear\":", out);
	pt_wear_status_json(out, &m->wear, &m->cfg.write_budget);
	fprintf(out, ",\"pidfds\":{\"open\":%d,\"limit\":%d}", pt_pidfd_count(),
		pt_pidfd_limit() == INT_MAX ? -1 : pt_pidfd_limit());
	fputs(",\"protection\":", out);
	pt_protect_path_status_json(out, &m->protect_path);
}

void pt_ctl_answer(struct pt_manager *m, const char *req, uid_t peer_uid, FILE *out)
{
	size_t len = strcspn(req, "\r\n");
	struct pt_host_mem host;

	if (len == 6 && strncmp(req, "status", 6) == 0) {
		fprintf(out, "backend: %s\n", pt_manager_backend(m));
		pt_wear_status_text(out, &m->wear, &m->cfg.write_budget);
		if (m->fill.capacity_pages)
			fprintf(out, "tiers: %s, %llu of %llu MiB live, %llu of %llu segments free, %llu offloads held back\n",
				pt_fill_level_name(m->fill_level),
				(unsigned long long)(m->fill.live_pages >> 8),
				(unsigned long long)(m->fill.capacity_pages >> 8),
				(unsigned long long)m->fill.free_segments,
				(unsigned long long)m->fill.segments,
				(unsigned long long)m->fill_deferred);
		if (pt_pidfd_limit() != INT_MAX)
			fprintf(out, "pidfds: %d open, %d at most (past that, processes are named by pid and start time)\n",
				pt_pidfd_count(), pt_pidfd_limit());
		pt_protect_path_status_text(out, &m->protect_path);
		host_mem(m, &host);
		pt_status_table(out, m->ctxs, m->n_ctxs, &host);
	} else if (len == 11 && strncmp(req, "status json", 11) == 0) {
		host_mem(m, &host);
		pt_status_json(out, m->ctxs, m->n_ctxs, pt_manager_backend(m), m->bpf_unmatched,
			       &host, daemon_members, m);
	} else if (len == 10 && strncmp(req, "containers", 10) == 0) {
		containers(m, out);
	} else if (len > 9 && strncmp(req, "prefetch ", 9) == 0) {
		char name[PT_NAME_MAX];

		snprintf(name, sizeof(name), "%.*s", (int)(len - 9), req + 9);
		if (peer_uid != 0)
			fprintf(out, "error: prefetch needs root\n");
		else if (!pt_manager_prefetch(m, name, out))
			fprintf(out, "error: no running container named '%s' (see: pagetierctl containers)\n",
				name);
	} else {
		fprintf(out, "error: unknown request '%.*s'\n", (int)len, req);
	}
}
