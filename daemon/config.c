// SPDX-License-Identifier: GPL-2.0
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
	SET_IDLE = 1 << 0,
};

void pt_config_defaults(struct pt_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->cgroup_root, sizeof(cfg->cgroup_root), "/sys/fs/cgroup");
	snprintf(cfg->runtime_dir, sizeof(cfg->runtime_dir), "/run/pagetier");
	cfg->poll_interval_ms = 500;
	cfg->scan_interval_ms = 1000;
	cfg->chunk_shift = 16;
	cfg->offload_rate = 128ULL << 20;
	cfg->prefetch_rate = 1ULL << 30;
	cfg->default_idle_ms = 30000;
	cfg->log_level = PT_LOG_INFO;
}

void pt_config_free(struct pt_config *cfg)
{
	free(cfg->policies);
	cfg->policies = NULL;
	cfg->n_policies = 0;
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
		} else if (strcmp(name, "log_level") == 0) {
			if (pt_log_parse_level(value, &cfg->log_level)) {
				add_error(st, "log_level must be error, warn, info or debug, got '%s'",
					  value);
				return 0;
			}
		} else {
			add_error(st, "unknown key '%s' in [daemon] (known: cgroup_root, runtime_dir, poll_interval, scan_interval, chunk_size, offload_rate, prefetch_rate, free_watermark, log_level)",
				  name);
			return 0;
		}
		return 1;
	}
	if (strcmp(section, "defaults") == 0) {
		if (strcmp(name, "idle_threshold") == 0) {
			if (pt_parse_duration_ms(value, &v) || v < 100) {
				add_error(st, "idle_threshold must be a duration of at least 100ms (e.g. 30s), got '%s'",
					  value);
				return 0;
			}
			cfg->default_idle_ms = v;
			return 1;
		}
		add_error(st, "unknown key '%s' in [defaults] (known: idle_threshold)", name);
		return 0;
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
	uint64_t v;

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
		struct pt_policy *n = realloc(cfg->policies, (cfg->n_policies + 1) * sizeof(*n));

		if (!n) {
			add_error(st, "out of memory");
			return 0;
		}
		cfg->policies = n;
		p = &n[cfg->n_policies++];
		memset(p, 0, sizeof(*p));
		snprintf(p->name, sizeof(p->name), "%s", section);
		snprintf(p->source, sizeof(p->source), "%s:%d", st->path, st->section_line);
		p->class = PT_CLASS_BESTEFFORT;
		p->prefetch = true;
	}

	if (strcmp(name, "match_cgroup") == 0) {
		if (value[0] != '/' || strlen(value) >= sizeof(p->match_cgroup)) {
			add_error(st, "match_cgroup must be a path or glob starting with '/' below cgroup_root (e.g. /system.slice/docker-*.scope), got '%s'",
				  value);
			return 0;
		}
		snprintf(p->match_cgroup, sizeof(p->match_cgroup), "%s", value);
	} else if (strcmp(name, "match_id") == 0) {
		size_t n = strlen(value);

		if (n < 12 || n >= sizeof(p->match_id) || strspn(value, "0123456789abcdef") != n) {
			add_error(st, "match_id must be a container id (lower-case hex, at least 12 characters), got '%s'",
				  value);
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
	} else if (strcmp(name, "idle_threshold") == 0) {
		if (pt_parse_duration_ms(value, &v) || v < 100) {
			add_error(st, "idle_threshold must be a duration of at least 100ms (e.g. 30s), got '%s'",
				  value);
			return 0;
		}
		p->idle_threshold_ms = v;
		p->set_mask |= SET_IDLE;
	} else if (strcmp(name, "resident_floor") == 0) {
		if (pt_parse_size(value, &v)) {
			add_error(st, "resident_floor must be a size (e.g. 64M), got '%s'", value);
			return 0;
		}
		p->resident_floor_bytes = v;
	} else if (strcmp(name, "prefetch") == 0) {
		if (pt_parse_bool(value, &p->prefetch)) {
			add_error(st, "prefetch must be yes or no, got '%s'", value);
			return 0;
		}
	} else if (strcmp(name, "cold_after") == 0) {
		if (pt_parse_duration_ms(value, &v) && strcmp(value, "0")) {
			add_error(st, "cold_after must be a duration (e.g. 2s) or 0 (off), got '%s'",
				  value);
			return 0;
		}
		p->cold_after_ms = strcmp(value, "0") ? v : 0;
	} else if (strcmp(name, "offload_cap") == 0) {
		if (pt_parse_size(value, &v)) {
			add_error(st, "offload_cap must be a size (e.g. 2G, 0 for no cap), got '%s'",
				  value);
			return 0;
		}
		p->offload_cap_bytes = v;
	} else {
		add_error(st, "unknown key '%s' in [%s] (known: match_cgroup, match_id, class, idle_threshold, resident_floor, prefetch, offload_cap, cold_after)",
			  name, section);
		return 0;
	}
	return 1;
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

static int validate_policies(struct pt_config *cfg, char *err)
{
	int rc = 0;

	for (size_t i = 0; i < cfg->n_policies; i++) {
		struct pt_policy *p = &cfg->policies[i];

		if (!p->match_cgroup[0] && !p->match_id[0]) {
			size_t len = strlen(err);

			snprintf(err + len, PT_ERRBUF_MAX - len,
				 "%s: container [%s] has neither match_cgroup nor match_id, so it can match nothing\n",
				 p->source, p->name);
			rc = -EINVAL;
		}
		if (!(p->set_mask & SET_IDLE))
			p->idle_threshold_ms = cfg->default_idle_ms;
	}
	return rc;
}

int pt_config_load(struct pt_config *cfg, const char *dir, bool check_perms, char *err)
{
	char path[PATH_MAX], ddir[PATH_MAX];
	char **names = NULL;
	size_t n_names = 0;
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
		char **nn;

		if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".conf"))
			continue;
		nn = realloc(names, (n_names + 1) * sizeof(*names));
		if (!nn) {
			rc = -ENOMEM;
			break;
		}
		names = nn;
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

bool pt_policy_matches(const struct pt_policy *p, const char *relpath)
{
	if (p->match_cgroup[0] && fnmatch(p->match_cgroup, relpath, FNM_PATHNAME) == 0)
		return true;
	if (p->match_id[0]) {
		/*
		 * Runtimes name a container's cgroup after its id (docker-<id>.scope,
		 * crio-<id>.scope, libpod-<id>, or the bare id); match the last component only,
		 * so a parent slice never matches a child's id.
		 */
		const char *last = strrchr(relpath, '/');
		const char *hit;

		last = last ? last + 1 : relpath;
		hit = strstr(last, p->match_id);
		if (hit && (hit == last || !isxdigit((unsigned char)hit[-1])))
			return true;
	}
	return false;
}

const struct pt_policy *pt_config_match(const struct pt_config *cfg, const char *relpath)
{
	for (size_t i = 0; i < cfg->n_policies; i++)
		if (pt_policy_matches(&cfg->policies[i], relpath))
			return &cfg->policies[i];
	return NULL;
}
