// SPDX-License-Identifier: GPL-2.0
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <ini.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grow.h"

/* Policy keys a section set, so that [defaults] fills only the others. */
enum {
	SET_IDLE = 1 << 0,
	SET_CLASS = 1 << 1,
	SET_FLOOR = 1 << 2,
	SET_PREFETCH = 1 << 3,
	SET_CAP = 1 << 4,
	SET_COLD = 1 << 5,
	SET_IDLE_CPU = 1 << 6,
	SET_IDLE_PACKETS = 1 << 7,
	SET_IDLE_FRESH = 1 << 8,
	SET_WAKE_REFAULTS = 1 << 9,
	SET_IDLE_WS = 1 << 10,
};

/*
 * Built-in policy defaults; README.md ("Configuration") says why each is what it is.
 * idle_threshold: 30 s without serving is idle. cold_after: 2 min, DAMON_RECLAIM's min_age.
 * idle_cpu: 5% of a CPU, above what timers and housekeeping cost (redis's serverCron: 2% in
 * the emulated test VM), below any real work. idle_working_set: 16 MiB touched per epoch,
 * of which idle_fresh: 1 MiB not touched in the epochs before (redis's timers touch the
 * same few MiB every second). wake_refaults: 256 KiB per second (idle.h: over a second or its
 * first quarter).
 */
static void policy_builtin_defaults(struct pt_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->class = PT_CLASS_BESTEFFORT;
	p->prefetch = true;
	p->idle.threshold_ms = 30000;
	p->idle.cpu_permille = 50;
	p->idle.max_packets = 0;
	p->idle.working_set_bytes = 16ULL << 20;
	p->idle.fresh_bytes = 1ULL << 20;
	p->idle.wake_pages = (256ULL << 10) / 4096;
	p->cold_after_ms = 120000;
}

/*
 * Cold chunks of an active container are memory it may still touch; writing them out while
 * the host has memory to spare buys nothing and costs I/O, CPU and drive wear. Where the
 * operator keeps a free_watermark, twice it is where that memory starts to be worth having,
 * early enough that the watermark's host-wide pass rarely has to act. Without one, the
 * operator asked for no memory target: cold_after alone decides, as it always did.
 */
uint64_t pt_config_cold_watermark(const struct pt_config *cfg)
{
	if (cfg->cold_watermark != PT_COLD_WATERMARK_AUTO)
		return cfg->cold_watermark;
	return cfg->free_watermark > UINT64_MAX / 2 ? UINT64_MAX : 2 * cfg->free_watermark;
}

void pt_config_defaults(struct pt_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->cgroup_root, sizeof(cfg->cgroup_root), "/sys/fs/cgroup");
	snprintf(cfg->runtime_dir, sizeof(cfg->runtime_dir), "/run/pagetier");
	cfg->poll_interval_ms = 500;
	cfg->scan_interval_ms = 1000;
	cfg->chunk_shift = 16;
	cfg->offload_rate = 128ULL << 20;
	cfg->cold_watermark = PT_COLD_WATERMARK_AUTO;
	cfg->prefetch_rate = 1ULL << 30;
	/* One drive write per day: what data-centre NVMe drives are rated for at the least. */
	pt_wear_budget_default(&cfg->write_budget);
	policy_builtin_defaults(&cfg->defaults);
	cfg->log_level = PT_LOG_INFO;
	cfg->sample_reader = PT_READER_PREAD;
}

void pt_config_free(struct pt_config *cfg)
{
	free(cfg->policies);
	cfg->policies = NULL;
	cfg->n_policies = 0;
	cfg->cap_policies = 0;
}

const char *pt_class_name(enum pt_class c)
{
	return c == PT_CLASS_CRITICAL ? "critical" : "besteffort";
}

static int parse_scaled(const char *s, uint64_t *out, const char *const *suffixes,
			const uint64_t *scales, size_t n)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (strcasecmp(end, suffixes[i]) == 0) {
			if (scales[i] && v > UINT64_MAX / scales[i])
				return -EINVAL;
			*out = v * scales[i];
			return 0;
		}
	}
	return -EINVAL;
}

int pt_parse_size(const char *s, uint64_t *out)
{
	static const char *const sfx[] = { "", "k", "kb", "kib", "m", "mb", "mib",
					   "g", "gb", "gib", "t", "tb", "tib" };
	static const uint64_t sc[] = { 1, 1ULL << 10, 1ULL << 10, 1ULL << 10,
				       1ULL << 20, 1ULL << 20, 1ULL << 20,
				       1ULL << 30, 1ULL << 30, 1ULL << 30,
				       1ULL << 40, 1ULL << 40, 1ULL << 40 };

	return parse_scaled(s, out, sfx, sc, sizeof(sc) / sizeof(sc[0]));
}

int pt_parse_duration_ms(const char *s, uint64_t *out)
{
	/* A bare number is refused: "30" could mean seconds or milliseconds. */
	static const char *const sfx[] = { "ms", "s", "m", "h" };
	static const uint64_t sc[] = { 1, 1000, 60000, 3600000 };

	return parse_scaled(s, out, sfx, sc, sizeof(sc) / sizeof(sc[0]));
}

int pt_parse_permille(const char *s, uint32_t *out)
{
	unsigned long long whole = 0, frac = 0;
	int digits = 0;
	const char *c = s;

	if (!isdigit((unsigned char)*c))
		return -EINVAL;
	for (; isdigit((unsigned char)*c); c++) {
		whole = whole * 10 + (unsigned long long)(*c - '0');
		if (whole > 100000)
			return -EINVAL;
	}
	if (*c == '.') {
		for (c++; isdigit((unsigned char)*c); c++)
			if (digits++ == 0)
				frac = (unsigned long long)(*c - '0');
		if (!digits)
			return -EINVAL;
	}
	if (strcmp(c, "%") != 0)
		return -EINVAL;
	*out = (uint32_t)(whole * 10 + frac);
	return 0;
}

int pt_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "yes", "on", "true", "1" };
	static const char *const no[] = { "no", "off", "false", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

int pt_parse_listen(const char *s, struct sockaddr_storage *sa, socklen_t *len, char *why,
		    size_t whylen)
{
	char host[PT_LISTEN_MAX];
	const char *port;
	unsigned long p;
	size_t hl;
	bool v6;

	memset(sa, 0, sizeof(*sa));
	if (strlen(s) >= PT_LISTEN_MAX) {
		snprintf(why, whylen, "'%.80s...' is longer than an address and a port", s);
		return -EINVAL;
	}
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (!rb) {
			snprintf(why, whylen, "'%s': the [IPv6] address has no closing ']'", s);
			return -EINVAL;
		}
		if (rb[1] != ':') {
			snprintf(why, whylen, "'%s' has no port after the address", s);
			return -EINVAL;
		}
		hl = (size_t)(rb - s - 1);
		memcpy(host, s + 1, hl);
		port = rb + 2;
		v6 = true;
	} else {
		const char *colon = strrchr(s, ':');

		if (colon && strchr(s, ':') != colon) {
			snprintf(why, whylen, "'%s': an IPv6 address goes in brackets before the port",
				 s);
			return -EINVAL;
		}
		if (!colon) {
			snprintf(why, whylen, "'%s' has no port", s);
			return -EINVAL;
		}
		hl = (size_t)(colon - s);
		memcpy(host, s, hl);
		port = colon + 1;
		v6 = false;
	}
	host[hl] = '\0';
	if (!hl) {
		snprintf(why, whylen, "'%s' has no address (127.0.0.1 is this host only, 0.0.0.0 or [::] every interface)",
			 s);
		return -EINVAL;
	}
	p = all_digits(port) && strlen(port) <= 5 ? strtoul(port, NULL, 10) : 0;
	if (!p || p > 65535) {
		snprintf(why, whylen, "'%s': the port must be a number from 1 to 65535", s);
		return -EINVAL;
	}
	if (v6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)sa;

		if (strchr(host, '%')) {
			snprintf(why, whylen, "'%s': IPv6 zone ids (%%eth0) are not supported", s);
			return -EINVAL;
		}
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1) {
			snprintf(why, whylen, "'%s': '%s' is not an IPv6 address", s, host);
			return -EINVAL;
		}
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)p);
		*len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)sa;

		if (inet_pton(AF_INET, host, &a->sin_addr) != 1) {
			bool name = false;

			for (const char *c = host; *c; c++)
				name |= isalpha((unsigned char)*c) != 0;
			if (name)
				snprintf(why, whylen, "'%s': the address must be numeric, not a host name (127.0.0.1 for localhost)",
					 s);
			else
				snprintf(why, whylen, "'%s': '%s' is not an IPv4 address (four numbers from 0 to 255)",
					 s, host);
			return -EINVAL;
		}
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)p);
		*len = sizeof(*a);
	}
	return 0;
}

/*
 * Container cgroups. Each runtime names a container's own cgroup after its id, 64 hex
 * digits (Docker, Podman, containerd's CRI plugin and CRI-O draw them alike):
 *   Docker            /system.slice/docker-<id>.scope            /docker/<id>
 *   Podman            /machine.slice/libpod-<id>.scope           /libpod_parent/libpod-<id>
 *   containerd (k8s)  .../kubepods-<qos>-pod<uid>.slice/cri-containerd-<id>.scope
 *                     /kubepods/<qos>/pod<uid>/<id>
 *   CRI-O (k8s)       .../kubepods-<qos>-pod<uid>.slice/crio-<id>.scope
 *                     /kubepods/<qos>/pod<uid>/crio-<id>
 * (systemd driver left, cgroupfs right; guaranteed pods sit right below kubepods.slice or
 * kubepods). Beside them, not containers: conmon, the monitor Podman and CRI-O run per
 * container (libpod-conmon-<id>.scope, crio-conmon-<id>[.scope], Podman's cgroupfs
 * <parent>/conmon), and the pod slices. Below them: crun's "container" sub-cgroup on cgroup
 * v2 and whatever a container's own systemd creates, which the container's context covers.
 */
static const char *const runtime_prefixes[] = { "docker-", "libpod-", "cri-containerd-",
						"crio-" };

static bool is_id_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]) || !s[i])
			return false;
	return true;
}

/* What a runtime wrapped in cgroup name @name (@n bytes): "<prefix>X[.scope]" -> X. */
static const char *unwrap_runtime_name(const char *name, size_t *n)
{
	for (size_t i = 0; i < sizeof(runtime_prefixes) / sizeof(runtime_prefixes[0]); i++) {
		size_t pl = strlen(runtime_prefixes[i]);

		if (*n > pl && strncmp(name, runtime_prefixes[i], pl) == 0) {
			name += pl;
			*n -= pl;
			if (*n > 6 && memcmp(name + *n - 6, ".scope", 6) == 0)
				*n -= 6;
			break;
		}
	}
	return name;
}

bool pt_cgroup_container_id(const char *relpath, char id[PT_ID_LEN + 1])
{
	const char *last = strrchr(relpath, '/');
	size_t n;

	last = last ? last + 1 : relpath;
	n = strlen(last);
	/* "libpod-conmon-<id>" unwraps to "conmon-<id>": not 64 hex, not a container. */
	last = unwrap_runtime_name(last, &n);
	if (n != PT_ID_LEN || !is_id_hex(last, n))
		return false;
	memcpy(id, last, n);
	id[n] = '\0';
	return true;
}

/* A runtime's monitor, beside its container: never one itself. */
static bool is_monitor_cgroup(const char *last)
{
	return strncmp(last, "libpod-conmon-", 14) == 0 || strncmp(last, "crio-conmon-", 12) == 0 ||
	       strcmp(last, "conmon") == 0;
}

/* 0, or -EINVAL with the reason, for the operator, in @why. */
static int check_match_id(const char *v, char *why, size_t len)
{
	const char *last = strrchr(v, '/'), *inner;
	size_t n = strlen(v), in_n;
	bool hex_any_case = n > 0;

	for (size_t i = 0; i < n; i++)
		hex_any_case &= isxdigit((unsigned char)v[i]) != 0;
	last = last ? last + 1 : v;
	in_n = strlen(last);
	inner = unwrap_runtime_name(last, &in_n);
	if (strncmp(v, "sha256:", 7) == 0) {
		snprintf(why, len, "match_id must be a container's id, not an image's digest, got '%.80s' (docker ps --no-trunc, podman ps --no-trunc and crictl ps --no-trunc show container ids)",
			 v);
	} else if (!hex_any_case && in_n >= PT_ID_MIN && in_n <= PT_ID_LEN &&
		   is_id_hex(inner, in_n)) {
		snprintf(why, len, "match_id is the container id alone: write 'match_id = %.*s', got '%.80s' (match_cgroup takes paths and globs)",
			 (int)in_n, inner, v);
	} else if (!hex_any_case) {
		snprintf(why, len, "match_id must be a container id, hex digits (0-9, a-f) only, got '%.80s'",
			 v);
	} else if (!is_id_hex(v, n)) {
		snprintf(why, len, "match_id must be in lower case, as runtimes print ids, got '%.80s'",
			 v);
	} else if (n < PT_ID_MIN) {
		snprintf(why, len, "match_id must be at least %d hex digits, enough to name one container (docker ps, podman ps and crictl ps show 12 or 13), got '%s' (%zu)",
			 PT_ID_MIN, v, n);
	} else if (n > PT_ID_LEN) {
		snprintf(why, len, "match_id must be at most %d hex digits (a whole container id), got %zu",
			 PT_ID_LEN, n);
	} else {
		return 0;
	}
	return -EINVAL;
}

/* State of one file's parse: inih calls the handler per key; we count lines ourselves. */
struct parse_state {
	struct pt_config *cfg;
	const char *path;
	FILE *fp;
	int line;
	int section_line;	/* line of the latest [section] header */
	bool main_file;
	char *err;
	int n_errors;
	char seen[64][PT_NAME_MAX + 32];	/* "section.key" seen in this file */
	int n_seen;
};

static void add_error(struct parse_state *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_error(struct parse_state *st, const char *fmt, ...)
{
	size_t len = strlen(st->err);
	va_list ap;

	st->n_errors++;
	if (len + 2 >= PT_ERRBUF_MAX)
		return;
	len += snprintf(st->err + len, PT_ERRBUF_MAX - len, "%s:%d: ", st->path, st->line);
	if (len >= PT_ERRBUF_MAX)
		return;
	va_start(ap, fmt);
	len += vsnprintf(st->err + len, PT_ERRBUF_MAX - len, fmt, ap);
	va_end(ap);
	if (len + 1 < PT_ERRBUF_MAX)
		strcat(st->err, "\n");
}

static char *counting_reader(char *str, int num, void *stream)
{
	struct parse_state *st = stream;
	char *r = fgets(str, num, st->fp);

	if (r) {
		size_t n = strlen(r);

		/* A line longer than inih's buffer arrives in pieces; count it once. */
		if (n == 0 || r[n - 1] == '\n' || feof(st->fp))
			st->line++;
		r += strspn(r, " \t");
		if (*r == '[')
			st->section_line = st->line;
	}
	return r;
}

static bool seen_before(struct parse_state *st, const char *section, const char *name)
{
	char key[PT_NAME_MAX + 32];

	snprintf(key, sizeof(key), "%s.%s", section, name);
	for (int i = 0; i < st->n_seen; i++)
		if (strcmp(st->seen[i], key) == 0)
			return true;
	if (st->n_seen < 64)
		snprintf(st->seen[st->n_seen++], sizeof(st->seen[0]), "%s", key);
	return false;
}

static struct pt_policy *find_policy(struct pt_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_policies; i++)
		if (strcmp(cfg->policies[i].name, name) == 0)
			return &cfg->policies[i];
	return NULL;
}

static bool valid_name(const char *s)
{
	if (!*s || strlen(s) >= PT_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-_.", *s))
			return false;
	return true;
}

/*
 * One policy key into @p (a container's section, or [defaults]). 1: taken; 0: an error,
 * reported.
 */
static int policy_key(struct parse_state *st, struct pt_policy *p, const char *section,
		      const char *name, const char *value)
{
	uint64_t v;

	if (strcmp(name, "match_cgroup") == 0) {
		size_t n = strlen(value), root = strlen(st->cfg->cgroup_root);

		if (value[0] != '/' || n >= sizeof(p->match_cgroup)) {
			add_error(st, "match_cgroup must be a path or glob starting with '/' below cgroup_root (e.g. /system.slice/docker-*.scope), got '%s'",
				  value);
			return 0;
		}
		if (root > 1 && strncmp(value, st->cfg->cgroup_root, root) == 0 &&
		    value[root] == '/') {
			add_error(st, "match_cgroup is a path below cgroup_root (%s): write '%s' without it, got '%s'",
				  st->cfg->cgroup_root, value + root, value);
			return 0;
		}
		if (value[n - 1] == '/') {
			add_error(st, "match_cgroup must name cgroups, and cgroup paths do not end with '/' (the root cgroup is never a container), got '%s'",
				  value);
			return 0;
		}
		snprintf(p->match_cgroup, sizeof(p->match_cgroup), "%s", value);
	} else if (strcmp(name, "match_id") == 0) {
		char why[512];

		if (check_match_id(value, why, sizeof(why))) {
			add_error(st, "%s", why);
			return 0;
		}
		snprintf(p->match_id, sizeof(p->match_id), "%s", value);
	} else if (strcmp(name, "class") == 0) {
		if (strcmp(value, "critical") == 0) {
			p->class = PT_CLASS_CRITICAL;
		} else if (strcmp(value, "besteffort") == 0) {
			p->class = PT_CLASS_BESTEFFORT;
		} else {
			add_error(st, "class must be critical or besteffort, got '%s'", value);
			return 0;
		}
		p->set_mask |= SET_CLASS;
	} else if (strcmp(name, "idle_threshold") == 0) {
		if (pt_parse_duration_ms(value, &v) || v < 100) {
			add_error(st, "idle_threshold must be a duration of at least 100ms (e.g. 30s), got '%s'",
				  value);
			return 0;
		}
		p->idle.threshold_ms = v;
		p->set_mask |= SET_IDLE;
	} else if (strcmp(name, "idle_cpu") == 0) {
		if (pt_parse_permille(value, &p->idle.cpu_permille)) {
			add_error(st, "idle_cpu must be a share of one CPU in percent (e.g. 5%% or 0.5%%), got '%s'",
				  value);
			return 0;
		}
		p->set_mask |= SET_IDLE_CPU;
	} else if (strcmp(name, "idle_packets") == 0) {
		char *end;
		unsigned long n = strtoul(value, &end, 10);

		if (!isdigit((unsigned char)*value) || *end || n >= PT_IDLE_PACKET_RING) {
			add_error(st, "idle_packets must be a number of ingress packets from 0 to %d, got '%s'",
				  PT_IDLE_PACKET_RING - 1, value);
			return 0;
		}
		p->idle.max_packets = (uint32_t)n;
		p->set_mask |= SET_IDLE_PACKETS;
	} else if (strcmp(name, "idle_working_set") == 0) {
		if (pt_parse_size(value, &v)) {
			add_error(st, "idle_working_set must be a size (e.g. 16M), got '%s'", value);
			return 0;
		}
		p->idle.working_set_bytes = v;
		p->set_mask |= SET_IDLE_WS;
	} else if (strcmp(name, "idle_fresh") == 0) {
		if (pt_parse_size(value, &v)) {
			add_error(st, "idle_fresh must be a size (e.g. 1M), got '%s'", value);
			return 0;
		}
		p->idle.fresh_bytes = v;
		p->set_mask |= SET_IDLE_FRESH;
	} else if (strcmp(name, "wake_refaults") == 0) {
		if (pt_parse_size(value, &v) || v < 4096) {
			add_error(st, "wake_refaults must be a size per second of at least 4K (e.g. 256K), got '%s'",
				  value);
			return 0;
		}
		p->idle.wake_pages = v / 4096;
		p->set_mask |= SET_WAKE_REFAULTS;
	} else if (strcmp(name, "resident_floor") == 0) {
		if (pt_parse_size(value, &v)) {
			add_error(st, "resident_floor must be a size (e.g. 64M), got '%s'", value);
			return 0;
		}
		p->resident_floor_bytes = v;
		p->set_mask |= SET_FLOOR;
	} else if (strcmp(name, "prefetch") == 0) {
		if (pt_parse_bool(value, &p->prefetch)) {
			add_error(st, "prefetch must be yes or no, got '%s'", value);
			return 0;
		}
		p->set_mask |= SET_PREFETCH;
	} else if (strcmp(name, "cold_after") == 0) {
		if (pt_parse_duration_ms(value, &v) && strcmp(value, "0")) {
			add_error(st, "cold_after must be a duration (e.g. 2m) or 0 (off), got '%s'",
				  value);
			return 0;
		}
		p->cold_after_ms = strcmp(value, "0") ? v : 0;
		p->set_mask |= SET_COLD;
	} else if (strcmp(name, "offload_cap") == 0) {
		if (pt_parse_size(value, &v)) {
			add_error(st, "offload_cap must be a size (e.g. 2G, 0 for no cap), got '%s'",
				  value);
			return 0;
		}
		p->offload_cap_bytes = v;
		p->set_mask |= SET_CAP;
	} else {
		add_error(st, "unknown key '%s' in [%s] (known: %s)", name, section,
			  "match_cgroup, match_id, class, idle_threshold, idle_cpu, idle_packets, idle_working_set, idle_fresh, wake_refaults, resident_floor, prefetch, offload_cap, cold_after");
		return 0;
	}
	return 1;
}

static int main_handler(struct parse_state *st, const char *section, const char *name,
			const char *value)
{
	struct pt_config *cfg = st->cfg;
	uint64_t v;

	if (strcmp(section, "daemon") == 0) {
		if (strcmp(name, "cgroup_root") == 0 || strcmp(name, "runtime_dir") == 0) {
			char *dst = name[0] == 'c' ? cfg->cgroup_root : cfg->runtime_dir;

			if (value[0] != '/' || strlen(value) >= PATH_MAX) {
				add_error(st, "%s must be an absolute path, got '%s'", name, value);
				return 0;
			}
			snprintf(dst, PATH_MAX, "%s", value);
		} else if (strcmp(name, "poll_interval") == 0) {
			if (pt_parse_duration_ms(value, &v) || v < 10 || v > 60000) {
				add_error(st, "poll_interval must be a duration from 10ms to 60s (e.g. 500ms), got '%s'",
					  value);
				return 0;
			}
			cfg->poll_interval_ms = v;
		} else if (strcmp(name, "scan_interval") == 0) {
			if (pt_parse_duration_ms(value, &v) || v < 100 || v > 600000) {
				add_error(st, "scan_interval must be a duration from 100ms to 10m (e.g. 1s), got '%s'",
					  value);
				return 0;
			}
			cfg->scan_interval_ms = v;
		} else if (strcmp(name, "chunk_size") == 0) {
			if (pt_parse_size(value, &v) || v < 4096 || v > (2ULL << 20) || (v & (v - 1))) {
				add_error(st, "chunk_size must be a power of two from 4K to 2M (e.g. 64K), got '%s'",
					  value);
				return 0;
			}
			cfg->chunk_shift = (unsigned int)__builtin_ctzll(v);
		} else if (strcmp(name, "offload_rate") == 0) {
			if (pt_parse_size(value, &v) || v < (1ULL << 20)) {
				add_error(st, "offload_rate must be a size per second of at least 1M (e.g. 128M), got '%s'",
					  value);
				return 0;
			}
			cfg->offload_rate = v;
		} else if (strcmp(name, "prefetch_rate") == 0) {
			if (pt_parse_size(value, &v) || (v && v < (1ULL << 20))) {
				add_error(st, "prefetch_rate must be a size per second of at least 1M, or 0 for no limit, got '%s'",
					  value);
				return 0;
			}
			cfg->prefetch_rate = v;
		} else if (strcmp(name, "free_watermark") == 0) {
			if (pt_parse_size(value, &v)) {
				add_error(st, "free_watermark must be a size (e.g. 2G, 0 for off), got '%s'",
					  value);
				return 0;
			}
			cfg->free_watermark = v;
		} else if (strcmp(name, "cold_watermark") == 0) {
			if (strcmp(value, "auto") == 0) {
				cfg->cold_watermark = PT_COLD_WATERMARK_AUTO;
			} else if (strcmp(value, "off") == 0) {
				cfg->cold_watermark = 0;
			} else if (pt_parse_size(value, &v) || v == PT_COLD_WATERMARK_AUTO) {
				add_error(st, "cold_watermark must be a size (e.g. 4G), auto (twice free_watermark) or off (0), got '%s'",
					  value);
				return 0;
			} else {
				cfg->cold_watermark = v;
			}
		} else if (strcmp(name, "metrics_listen") == 0) {
			struct sockaddr_storage sa;
			socklen_t salen;
			char why[256];

			if (*value && pt_parse_listen(value, &sa, &salen, why, sizeof(why))) {
				add_error(st, "metrics_listen must be a numeric IPv4 ADDRESS:PORT or [IPv6]:PORT (e.g. 127.0.0.1:9464 or [::1]:9464), or empty for off: %s",
					  why);
				return 0;
			}
			snprintf(cfg->metrics_listen, sizeof(cfg->metrics_listen), "%s", value);
		} else if (strcmp(name, "write_budget") == 0) {
			char why[256];

			if (pt_wear_parse_budget(value, &cfg->write_budget, why, sizeof(why))) {
				add_error(st, "write_budget: %s", why);
				return 0;
			}
		} else if (strcmp(name, "log_level") == 0) {
			if (pt_log_parse_level(value, &cfg->log_level)) {
				add_error(st, "log_level must be error, warn, info or debug, got '%s'",
					  value);
				return 0;
			}
		} else if (strcmp(name, "sample_reader") == 0) {
			if (strcmp(value, "pread") == 0) {
				cfg->sample_reader = PT_READER_PREAD;
			} else if (strcmp(value, "io_uring") == 0) {
				cfg->sample_reader = PT_READER_IO_URING;
			} else {
				add_error(st, "sample_reader must be pread or io_uring, got '%s'",
					  value);
				return 0;
			}
		} else {
			add_error(st, "unknown key '%s' in [daemon] (known: cgroup_root, runtime_dir, poll_interval, scan_interval, chunk_size, offload_rate, prefetch_rate, free_watermark, cold_watermark, metrics_listen, write_budget, log_level, sample_reader)",
				  name);
			return 0;
		}
		return 1;
	}
	if (strcmp(section, "defaults") == 0) {
		if (strcmp(name, "match_cgroup") == 0 || strcmp(name, "match_id") == 0) {
			add_error(st, "%s belongs in a container's section in containers.d/*.conf, not in [defaults]",
				  name);
			return 0;
		}
		return policy_key(st, &cfg->defaults, "defaults", name, value);
	}
	add_error(st, "unknown section [%s] (pagetierd.conf has [daemon] and [defaults]; container policies go in containers.d/*.conf)",
		  section);
	return 0;
}

static int policy_handler(struct parse_state *st, const char *section, const char *name,
			  const char *value)
{
	struct pt_config *cfg = st->cfg;
	struct pt_policy *p;

	if (!valid_name(section)) {
		add_error(st, "container name [%s] must be 1-%d characters of A-Z a-z 0-9 - _ .",
			  section, PT_NAME_MAX - 1);
		return 0;
	}
	p = find_policy(cfg, section);
	if (p && strncmp(p->source, st->path, strlen(st->path)) != 0) {
		add_error(st, "container [%s] is already defined at %s", section, p->source);
		return 0;
	}
	if (!p) {
		if (pt_grow((void **)&cfg->policies, &cfg->cap_policies, cfg->n_policies + 1,
			    sizeof(*cfg->policies))) {
			add_error(st, "out of memory");
			return 0;
		}
		p = &cfg->policies[cfg->n_policies++];
		policy_builtin_defaults(p);
		snprintf(p->name, sizeof(p->name), "%s", section);
		snprintf(p->source, sizeof(p->source), "%s:%d", st->path, st->section_line);
	}
	return policy_key(st, p, section, name, value);
}

static int on_ini_key(void *user, const char *section, const char *name, const char *value)
{
	struct parse_state *st = user;

	if (!name)	/* only with INI_CALL_HANDLER_ON_NEW_SECTION */
		return 1;
	if (!*section) {
		add_error(st, "key '%s' outside of any [section]", name);
		return 0;
	}
	if (seen_before(st, section, name)) {
		add_error(st, "duplicate key '%s' in [%s]", name, section);
		return 0;
	}
	return st->main_file ? main_handler(st, section, name, value) :
			       policy_handler(st, section, name, value);
}

static int check_file_perms(const char *path, const struct stat *sb, char *err)
{
	if ((sb->st_mode & 022) || (sb->st_uid != 0 && sb->st_uid != geteuid())) {
		size_t len = strlen(err);

		snprintf(err + len, PT_ERRBUF_MAX - len,
			 "%s: unsafe permissions (mode %04o, owner uid %u): it must be owned by root and writable only by its owner; fix with: chown root: %s && chmod go-w %s\n",
			 path, (unsigned int)(sb->st_mode & 07777), (unsigned int)sb->st_uid, path,
			 path);
		return -EPERM;
	}
	return 0;
}

static int parse_file(struct pt_config *cfg, const char *path, bool main_file,
		      bool check_perms, char *err)
{
	struct parse_state *st;
	struct stat sb;
	int rc, n_errors;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->cfg = cfg;
	st->path = path;
	st->main_file = main_file;
	st->err = err;
	st->fp = fopen(path, "r");
	if (!st->fp) {
		size_t len = strlen(err);

		rc = -errno;
		snprintf(err + len, PT_ERRBUF_MAX - len, "%s: cannot open: %s\n", path,
			 strerror(-rc));
		free(st);
		return rc;
	}
	if (fstat(fileno(st->fp), &sb) == 0 && check_perms &&
	    check_file_perms(path, &sb, err)) {
		fclose(st->fp);
		free(st);
		return -EPERM;
	}
	rc = ini_parse_stream(counting_reader, st, on_ini_key, st);
	if (rc > 0 && st->n_errors == 0) {
		/* inih's own syntax error (e.g. a line without '=' or an unclosed '[') */
		st->line = rc;
		add_error(st, "syntax error: expected '[section]', 'key = value' or a comment");
	}
	fclose(st->fp);
	n_errors = st->n_errors;
	free(st);
	return (rc != 0 || n_errors) ? -EINVAL : 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Keys a container's section did not set come from [defaults]. */
static void apply_defaults(struct pt_policy *p, const struct pt_policy *d)
{
	if (!(p->set_mask & SET_CLASS))
		p->class = d->class;
	if (!(p->set_mask & SET_IDLE))
		p->idle.threshold_ms = d->idle.threshold_ms;
	if (!(p->set_mask & SET_IDLE_CPU))
		p->idle.cpu_permille = d->idle.cpu_permille;
	if (!(p->set_mask & SET_IDLE_PACKETS))
		p->idle.max_packets = d->idle.max_packets;
	if (!(p->set_mask & SET_IDLE_WS))
		p->idle.working_set_bytes = d->idle.working_set_bytes;
	if (!(p->set_mask & SET_IDLE_FRESH))
		p->idle.fresh_bytes = d->idle.fresh_bytes;
	if (!(p->set_mask & SET_WAKE_REFAULTS))
		p->idle.wake_pages = d->idle.wake_pages;
	if (!(p->set_mask & SET_FLOOR))
		p->resident_floor_bytes = d->resident_floor_bytes;
	if (!(p->set_mask & SET_PREFETCH))
		p->prefetch = d->prefetch;
	if (!(p->set_mask & SET_CAP))
		p->offload_cap_bytes = d->offload_cap_bytes;
	if (!(p->set_mask & SET_COLD))
		p->cold_after_ms = d->cold_after_ms;
}

static int validate_policies(struct pt_config *cfg, char *err)
{
	int rc = 0;

	for (size_t i = 0; i < cfg->n_policies; i++) {
		struct pt_policy *p = &cfg->policies[i];
		size_t len;

		if (!p->match_cgroup[0] && !p->match_id[0]) {
			len = strlen(err);
			snprintf(err + len, PT_ERRBUF_MAX - len,
				 "%s: container [%s] has neither match_cgroup nor match_id, so it can match nothing\n",
				 p->source, p->name);
			rc = -EINVAL;
		}
		for (size_t j = 0; p->match_id[0] && j < i; j++) {
			const struct pt_policy *q = &cfg->policies[j];
			size_t np = strlen(p->match_id), nq = strlen(q->match_id);

			if (!nq || strncmp(p->match_id, q->match_id, np < nq ? np : nq))
				continue;
			len = strlen(err);
			snprintf(err + len, PT_ERRBUF_MAX - len,
				 "%s: container [%s]: match_id %s can name the same container as match_id %s of [%s] (%s)%s: give each container one section\n",
				 p->source, p->name, p->match_id, q->match_id, q->name, q->source,
				 np == nq ? "" : ", one being a prefix of the other");
			rc = -EINVAL;
		}
		apply_defaults(p, &cfg->defaults);
	}
	return rc;
}

int pt_config_load(struct pt_config *cfg, const char *dir, bool check_perms, char *err)
{
	char path[PATH_MAX], ddir[PATH_MAX];
	char **names = NULL;
	size_t n_names = 0, cap_names = 0;
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int rc = 0, r;

	err[0] = '\0';
	pt_config_defaults(cfg);
	if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
		snprintf(err, PT_ERRBUF_MAX, "%s: not a directory (config directory, e.g. /etc/pagetier)\n",
			 dir);
		return -ENOENT;
	}
	if (check_perms && check_file_perms(dir, &sb, err))
		return -EPERM;

	snprintf(path, sizeof(path), "%s/pagetierd.conf", dir);
	if (access(path, F_OK) == 0) {
		r = parse_file(cfg, path, true, check_perms, err);
		if (r)
			rc = r;
	}

	snprintf(ddir, sizeof(ddir), "%s/containers.d", dir);
	d = opendir(ddir);
	if (!d)
		goto out;	/* no policies: the daemon runs and touches nothing */
	if (check_perms && fstat(dirfd(d), &sb) == 0 && check_file_perms(ddir, &sb, err))
		rc = -EPERM;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".conf"))
			continue;
		if (pt_grow((void **)&names, &cap_names, n_names + 1, sizeof(*names))) {
			rc = -ENOMEM;
			break;
		}
		names[n_names] = strdup(de->d_name);
		if (!names[n_names]) {
			rc = -ENOMEM;
			break;
		}
		n_names++;
	}
	closedir(d);
	if (n_names)
		qsort(names, n_names, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n_names; i++) {
		snprintf(path, sizeof(path), "%s/%s", ddir, names[i]);
		r = parse_file(cfg, path, false, check_perms, err);
		if (r && !rc)
			rc = r;
		free(names[i]);
	}
	free(names);
out:
	if (!rc)
		rc = validate_policies(cfg, err);
	if (rc)
		pt_config_free(cfg);
	return rc;
}

static bool matches_id(const struct pt_policy *p, const char *relpath)
{
	char id[PT_ID_LEN + 1];

	/* A prefix of the id: the short id the runtimes print is one. */
	return p->match_id[0] && pt_cgroup_container_id(relpath, id) &&
	       strncmp(id, p->match_id, strlen(p->match_id)) == 0;
}

static bool matches_glob(const struct pt_policy *p, const char *relpath)
{
	const char *last = strrchr(relpath, '/'), *plast = strrchr(p->match_cgroup, '/');

	if (!p->match_cgroup[0] || fnmatch(p->match_cgroup, relpath, FNM_PATHNAME) != 0)
		return false;
	/* libpod-*.scope means the containers, not their conmon-s; "*conmon*" means these. */
	last = last ? last + 1 : relpath;
	return !is_monitor_cgroup(last) || strstr(plast ? plast : p->match_cgroup, "conmon");
}

bool pt_policy_matches(const struct pt_policy *p, const char *relpath)
{
	return matches_id(p, relpath) || matches_glob(p, relpath);
}

const struct pt_policy *pt_config_match(const struct pt_config *cfg, const char *relpath)
{
	for (size_t i = 0; i < cfg->n_policies; i++)
		if (matches_id(&cfg->policies[i], relpath))
			return &cfg->policies[i];
	for (size_t i = 0; i < cfg->n_policies; i++)
		if (matches_glob(&cfg->policies[i], relpath))
			return &cfg->policies[i];
	return NULL;
}
