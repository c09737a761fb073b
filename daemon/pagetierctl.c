// SPDX-License-Identifier: GPL-2.0
/*
 * pagetierctl: the operator's tool. Talks to pagetierd over its control socket (status,
 * containers, prefetch) and to pagetier.ko directly (tier create/destroy/stats).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "cgroup.h"
#include "kmod_client.h"
#include "status.h"

static const char *runtime_dir = "/run/pagetier";
static bool json;

static void usage(FILE *out)
{
	fprintf(out,
		"usage: pagetierctl [--runtime-dir DIR] [--json] COMMAND\n"
		"commands (served by pagetierd):\n"
		"  status              one row per opted-in container: state, resident, offloaded\n"
		"  containers          the configured container policies\n"
		"  prefetch NAME       bring container NAME's offloaded memory back now\n"
		"commands (pagetier.ko, root):\n"
		"  tier create DEV     create a tier block device over DEV (e.g. /dev/nvme0n1)\n"
		"  tier destroy ID     remove /dev/pagetierID (it must not be in use as swap)\n"
		"  tier stats [ID]     per-cgroup pages and I/O on a tier (default: every tier)\n");
}

static int daemon_request(const char *req)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[8192];
	bool error = false, first = true;
	ssize_t n;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ctl.sock", runtime_dir);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "pagetierctl: cannot reach pagetierd at %s: %s (is it running? systemctl status pagetierd)\n",
			sa.sun_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (write(fd, req, strlen(req)) < 0 || shutdown(fd, SHUT_WR)) {
		fprintf(stderr, "pagetierctl: request failed: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (first && strncmp(buf, "error:", 6) == 0)
			error = true;
		first = false;
		fwrite(buf, 1, (size_t)n, error ? stderr : stdout);
	}
	close(fd);
	return error ? 1 : 0;
}

/* Refuses, with a reason, a backing device the kernel would refuse less helpfully. */
static int check_backing(const char *dev)
{
	char buf[16384], real[PATH_MAX];
	struct stat sb;
	ssize_t n;

	if (stat(dev, &sb)) {
		fprintf(stderr, "pagetierctl: %s: %s: give the NVMe namespace to use, e.g. /dev/nvme0n1\n",
			dev, strerror(errno));
		return -errno;
	}
	if (!S_ISBLK(sb.st_mode)) {
		fprintf(stderr, "pagetierctl: %s is not a block device\n", dev);
		return -ENOTBLK;
	}
	if (!realpath(dev, real))
		snprintf(real, sizeof(real), "%s", dev);
	n = pt_read_file("/proc/self/mountinfo", buf, sizeof(buf));
	for (char *l = n > 0 ? buf : NULL; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned int maj, min;

		/* field 3 is major:minor of the mounted device */
		if (sscanf(l, "%*d %*d %u:%u", &maj, &min) == 2 && maj == major(sb.st_rdev) &&
		    min == minor(sb.st_rdev)) {
			fprintf(stderr, "pagetierctl: %s is mounted; refusing to put a tier over a file system in use\n",
				dev);
			return -EBUSY;
		}
	}
	n = pt_read_file("/proc/swaps", buf, sizeof(buf));
	if (n > 0 && strstr(buf, real)) {
		fprintf(stderr, "pagetierctl: %s is an active swap device; swapoff it first\n", dev);
		return -EBUSY;
	}
	return 0;
}

static int kmod_or_explain(void)
{
	int fd = pt_kmod_open();

	if (fd < 0)
		fprintf(stderr, "pagetierctl: %s: %s (is pagetier.ko loaded? modprobe pagetier)\n",
			PT_CTL_DEV, strerror(-fd));
	return fd;
}

static int tier_create(const char *dev)
{
	struct pagetier_tier_create tc;
	int fd, rc;

	if (check_backing(dev))
		return 1;
	fd = kmod_or_explain();
	if (fd < 0)
		return 1;
	rc = pt_kmod_tier_create(fd, dev, &tc);
	close(fd);
	if (rc == -EBUSY) {
		fprintf(stderr, "pagetierctl: %s is in use (mounted, swap, or already under a tier); nothing was changed\n",
			dev);
		return 1;
	}
	if (rc) {
		fprintf(stderr, "pagetierctl: creating a tier over %s failed: %s\n", dev,
			strerror(-rc));
		return 1;
	}
	if (json)
		printf("{\"tier_id\":%u,\"device\":\"/dev/%s%u\",\"capacity_bytes\":%llu,\"backing_bytes\":%llu}\n",
		       tc.tier_id, PAGETIER_DISK_NAME, tc.tier_id,
		       (unsigned long long)tc.capacity_bytes, (unsigned long long)tc.backing_bytes);
	else
		printf("/dev/%s%u over %s: %llu MiB for swap\n", PAGETIER_DISK_NAME, tc.tier_id,
		       dev, (unsigned long long)(tc.capacity_bytes >> 20));
	return 0;
}

static int tier_destroy(const char *arg)
{
	char *end;
	unsigned long id = strtoul(arg, &end, 10);
	int fd, rc;

	if (!*arg || *end || id > UINT32_MAX) {
		fprintf(stderr, "pagetierctl: tier id must be a number (pagetierN -> N), got '%s'\n",
			arg);
		return 2;
	}
	fd = kmod_or_explain();
	if (fd < 0)
		return 1;
	rc = pt_kmod_tier_destroy(fd, (uint32_t)id);
	close(fd);
	if (rc) {
		fprintf(stderr, "pagetierctl: destroying pagetier%lu failed: %s%s\n", id,
			strerror(-rc), rc == -EBUSY ? " (swapoff it first)" : "");
		return 1;
	}
	printf("pagetier%lu destroyed\n", id);
	return 0;
}

struct id_lookup {
	uint64_t id;
	char path[PATH_MAX];
};

static void find_id(const char *relpath, uint64_t id, void *arg)
{
	struct id_lookup *l = arg;

	if (id == l->id)
		snprintf(l->path, sizeof(l->path), "%s", relpath);
}

static int tier_stats(int argc, char **argv)
{
	uint32_t ids[16];
	int nt, fd, rc = 0;

	if (argc > 1) {
		char *end;

		ids[0] = (uint32_t)strtoul(argv[1], &end, 10);
		if (*end || !*argv[1]) {
			fprintf(stderr, "pagetierctl: tier id must be a number, got '%s'\n", argv[1]);
			return 2;
		}
		nt = 1;
	} else {
		nt = pt_kmod_list_tiers(ids, 16);
	}
	fd = kmod_or_explain();
	if (fd < 0)
		return 1;
	if (json)
		printf("[");
	for (int t = 0; t < nt; t++) {
		struct pagetier_cgroup_stat *st;
		int n = pt_kmod_cgroup_stats(fd, ids[t], &st);

		if (n < 0) {
			fprintf(stderr, "pagetierctl: pagetier%u: %s\n", ids[t], strerror(-n));
			rc = 1;
			continue;
		}
		if (!json)
			printf("pagetier%u:\n  %-20s %10s %10s %10s %6s %10s %10s %10s  %s\n",
			       ids[t], "CGROUP-ID", "PAGES", "WRITTEN", "READ", "SEGS",
			       "PREFETCH", "STAGE-HIT", "MISS", "CGROUP");
		for (int i = 0; i < n; i++) {
			struct id_lookup l = { .id = st[i].cgroup_id };

			pt_cgroup_walk("/sys/fs/cgroup", find_id, &l);
			if (!l.path[0])
				snprintf(l.path, sizeof(l.path), "%s",
					 st[i].cgroup_id == 0 ? "(unattributed)" :
					 st[i].cgroup_id == 1 ? "/" : "(gone)");
			if (json) {
				printf("%s{\"tier\":%u,\"cgroup_id\":%llu,\"cgroup\":", t || i ? "," : "",
				       ids[t], (unsigned long long)st[i].cgroup_id);
				pt_json_string(stdout, l.path);
				printf(",\"pages_stored\":%llu,\"bytes_written\":%llu,\"bytes_read\":%llu,\"write_ios\":%llu,\"read_ios\":%llu",
				       (unsigned long long)st[i].pages_stored,
				       (unsigned long long)st[i].bytes_written,
				       (unsigned long long)st[i].bytes_read,
				       (unsigned long long)st[i].write_ios,
				       (unsigned long long)st[i].read_ios);
				printf(",\"demand_reads\":%llu,\"demand_read_pages\":%llu,\"demand_read_ns\":%llu,\"staging_hits\":%llu,\"staging_misses\":%llu,\"staged_pages\":%llu,\"prefetch_bytes\":%llu,\"gc_moves\":%llu,\"segments\":%llu,\"read_errors\":%llu,\"read_latency\":[",
				       (unsigned long long)st[i].demand_reads,
				       (unsigned long long)st[i].demand_read_pages,
				       (unsigned long long)st[i].demand_read_ns,
				       (unsigned long long)st[i].staging_hits,
				       (unsigned long long)st[i].staging_misses,
				       (unsigned long long)st[i].staged_pages,
				       (unsigned long long)st[i].prefetch_bytes,
				       (unsigned long long)st[i].gc_moves,
				       (unsigned long long)st[i].segments,
				       (unsigned long long)st[i].read_errors);
				for (int b = 0; b < PAGETIER_LAT_BUCKETS; b++)
					printf("%s%llu", b ? "," : "",
					       (unsigned long long)st[i].read_latency[b]);
				printf("]}");
			} else {
				char w[16], r[16], pf[16];

				pt_fmt_bytes(w, sizeof(w), st[i].bytes_written);
				pt_fmt_bytes(r, sizeof(r), st[i].bytes_read);
				pt_fmt_bytes(pf, sizeof(pf), st[i].prefetch_bytes);
				printf("  %-20llu %10llu %10s %10s %6llu %10s %10llu %10llu  %s\n",
				       (unsigned long long)st[i].cgroup_id,
				       (unsigned long long)st[i].pages_stored, w, r,
				       (unsigned long long)st[i].segments, pf,
				       (unsigned long long)st[i].staging_hits,
				       (unsigned long long)st[i].staging_misses, l.path);
			}
		}
		free(st);
	}
	if (json)
		printf("]\n");
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runtime-dir", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "+r:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			runtime_dir = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[0], "status") == 0 && argc == 1)
		return daemon_request(json ? "status json\n" : "status\n");
	if (strcmp(argv[0], "containers") == 0 && argc == 1)
		return daemon_request("containers\n");
	if (strcmp(argv[0], "prefetch") == 0 && argc == 2) {
		char req[256];

		if (snprintf(req, sizeof(req), "prefetch %s\n", argv[1]) >= (int)sizeof(req)) {
			fprintf(stderr, "pagetierctl: container name too long\n");
			return 2;
		}
		return daemon_request(req);
	}
	if (strcmp(argv[0], "tier") == 0 && argc >= 2) {
		if (strcmp(argv[1], "create") == 0 && argc == 3)
			return tier_create(argv[2]);
		if (strcmp(argv[1], "destroy") == 0 && argc == 3)
			return tier_destroy(argv[2]);
		if (strcmp(argv[1], "stats") == 0 && argc <= 3)
			return tier_stats(argc - 1, argv + 1);
	}
	usage(stderr);
	return 2;
}
