/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Configuration: /etc/pagetier/pagetierd.conf and /etc/pagetier/containers.d/NAME.conf, INI.
 *
 * pagetierd.conf:                       containers.d/web.conf (one section per container):
 *   [daemon]                              [web-a]
 *   cgroup_root = /sys/fs/cgroup          match_cgroup = /pt-a          (glob on the path
 *   runtime_dir = /run/pagetier                                           below cgroup_root)
 *                                         match_id = 3f2a9c01ab77       (container id)
 *   poll_interval = 500ms                 class = besteffort | critical
 *   log_level = info                      idle_threshold = 30s
 *   scan_interval = 1s                    cold_after = 2m               (0: only at idle)
 *   chunk_size = 64K
 *   offload_rate = 128M
 *   free_watermark = 0                    (keep this much available; 0: off)
 *   cold_watermark = auto                 (cold_after only below this; auto: twice
 *                                          free_watermark, off when it is 0)
 *   prefetch_rate = 1G                    (per container and second; 0: no limit)
 *   metrics_listen = 127.0.0.1:9464       (Prometheus /metrics; empty: off)
 *   write_budget = 1dwpd                  (NVMe wear: 200G/day, 0: off; wear.h)
 *   [defaults]                            resident_floor = 0
 *   (any policy key but match_*)          prefetch = yes
 *                                         offload_cap = 0               (0: no cap)
 *                                         idle_cpu = 5%    idle_packets = 0
 *                                         idle_fresh = 1M  wake_refaults = 256K
 *
 * Every error names the file and the line. Parsing is pure apart from reading the files,
 * so it is unit tested against fixture trees.
 */
#ifndef PAGETIER_CONFIG_H
#define PAGETIER_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "idle.h"
#include "log.h"
#include "wear.h"

#define PT_NAME_MAX 64
#define PT_ERRBUF_MAX 4096
/* Container ids (Docker, Podman, containerd's CRI, CRI-O): 64 hex digits; match_id 12+. */
#define PT_ID_LEN 64
#define PT_ID_MIN 12
/* metrics_listen: "[" + an IPv6 address (45) + "]:" + a port (5), and room. */
#define PT_LISTEN_MAX 64

enum pt_class { PT_CLASS_BESTEFFORT, PT_CLASS_CRITICAL };

struct pt_policy {
	char name[PT_NAME_MAX];
	char source[PATH_MAX];		/* file:line of the section, for messages */
	char match_cgroup[PATH_MAX];	/* glob over "/a/b" paths below cgroup_root, or "" */
	char match_id[PT_ID_LEN + 1];	/* container id or a prefix of 12+ hex digits, or "" */
	enum pt_class class;
	struct pt_idle_params idle;	/* what idle means for it (idle.h) */
	uint64_t resident_floor_bytes;
	bool prefetch;
	uint64_t offload_cap_bytes;	/* 0: no cap */
	uint64_t cold_after_ms;		/* offload chunks unused this long while active; 0: off */
	unsigned int set_mask;		/* which keys the file set, for defaults */
};

enum pt_sample_reader { PT_READER_PREAD, PT_READER_IO_URING };

struct pt_config {
	char cgroup_root[PATH_MAX];
	char runtime_dir[PATH_MAX];
	uint64_t poll_interval_ms;
	uint64_t scan_interval_ms;	/* one hotness epoch */
	unsigned int chunk_shift;	/* log2 of the hotness chunk size */
	uint64_t offload_rate;		/* bytes/s of cold offload per container, at most */
	uint64_t free_watermark;	/* keep MemAvailable above this (0: off) */
	/*
	 * Cold offload of active containers (cold_after) runs only while MemAvailable is below
	 * this; 0: whatever MemAvailable. PT_COLD_WATERMARK_AUTO: twice free_watermark.
	 */
	uint64_t cold_watermark;
	uint64_t prefetch_rate;		/* bytes/s of wake prefetch per container, 0: no limit */
	char metrics_listen[PT_LISTEN_MAX];	/* Prometheus metrics, "ADDR:PORT"; "": off */
	struct pt_wear_budget write_budget;	/* the NVMe drives' (wear.h) */
	struct pt_policy defaults;	/* [defaults]: keys a container's section leaves out */
	enum pt_log_level log_level;
	/*
	 * How a tick reads its cgroups' cpu.stat and memory.current: PT_READER_PREAD (two
	 * pread() calls a cgroup, through descriptors kept open) or PT_READER_IO_URING (one
	 * liburing submission for all of a tick's cgroups; sample_batch.h).
	 */
	enum pt_sample_reader sample_reader;
	struct pt_policy *policies;
	size_t n_policies;
	size_t cap_policies;
};

/* Fills @cfg with built-in defaults (no policies). */
#define PT_COLD_WATERMARK_AUTO UINT64_MAX

void pt_config_defaults(struct pt_config *cfg);
/* The MemAvailable below which cold_after offloads (0: always), auto resolved. */
uint64_t pt_config_cold_watermark(const struct pt_config *cfg);
/*
 * Loads @dir/pagetierd.conf (optional) and @dir/containers.d/ (*.conf, optional, sorted).
 * Returns 0, or a negative errno with "file:line: message" lines in @err (PT_ERRBUF_MAX).
 * @check_perms rejects files or directories writable by anyone but their owner, or owned
 * by a user other than root or the caller.
 */
int pt_config_load(struct pt_config *cfg, const char *dir, bool check_perms, char *err);
void pt_config_free(struct pt_config *cfg);

/*
 * The policy for @relpath ("/a/b" below cgroup_root), or NULL: the first whose match_id
 * names the cgroup's container, else the first whose match_cgroup glob matches it. A
 * specific id beats a glob whatever the order of the files.
 *
 * match_id matches only a container's own cgroup, named by its runtime after its full id:
 * "<id>" (Docker and containerd with the cgroupfs driver), or "<runtime>-<id>" with an
 * optional ".scope" (the systemd driver), runtime docker, libpod (Podman), cri-containerd
 * or crio. Never a runtime's monitor (libpod-conmon-<id>.scope, crio-conmon-<id>), a pod's
 * slice, or a cgroup below the container's (crun's "container", a nested init.scope).
 *
 * match_cgroup is an fnmatch(3) glob with FNM_PATHNAME ('*' does not cross '/'). It never
 * matches a monitor cgroup (libpod-conmon-*, crio-conmon-*, Podman's cgroupfs "conmon")
 * unless the glob's last component itself says "conmon".
 */
const struct pt_policy *pt_config_match(const struct pt_config *cfg, const char *relpath);
bool pt_policy_matches(const struct pt_policy *p, const char *relpath);
/*
 * The id of the container whose own cgroup @relpath is (its last component, shapes above)
 * into @id; false if it is not one.
 */
bool pt_cgroup_container_id(const char *relpath, char id[PT_ID_LEN + 1]);

/* Value parsers: 0 or -EINVAL. Sizes take K/M/G/T (binary) suffixes, durations ms/s/m/h. */
int pt_parse_size(const char *s, uint64_t *out);
int pt_parse_duration_ms(const char *s, uint64_t *out);
int pt_parse_bool(const char *s, bool *out);
/* "5%", "0.5%" (one decimal kept) -> permille. */
int pt_parse_permille(const char *s, uint32_t *out);
const char *pt_class_name(enum pt_class c);
/*
 * A listen address: "A.B.C.D:PORT" or "[IPV6]:PORT", numeric (no host names), port 1-65535,
 * into @sa (a sockaddr_in or sockaddr_in6; *@len its size). 0, or -EINVAL with the reason,
 * for the operator, in @why (naming the value, not the key).
 */
int pt_parse_listen(const char *s, struct sockaddr_storage *sa, socklen_t *len, char *why,
		    size_t whylen);

#endif
