// SPDX-License-Identifier: GPL-2.0
/* The NVMe drives under the tiers, from sysfs alone (nvme.h). */
#include "nvme.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "kmod_client.h"

bool pt_nvme_ns_name(const char *name, char *ctrl, size_t ctrl_len)
{
	unsigned int c, ns;
	int end = 0;

	/* nvmeXnY; not nvmeXcYnZ (a multipath controller's hidden path) nor a partition. */
	if (sscanf(name, "nvme%un%u%n", &c, &ns, &end) != 2 || name[end] != '\0')
		return false;
	snprintf(ctrl, ctrl_len, "nvme%u", c);
	return true;
}

struct found {
	struct pt_nvme_ns *out;
	int max, n;
};

static void add(struct found *f, const char *ctrl, const char *ns, uint32_t tier,
		const char *backing)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->out[i].ctrl, ctrl) == 0)
			return;
	if (f->n >= f->max)
		return;
	snprintf(f->out[f->n].ctrl, sizeof(f->out[f->n].ctrl), "%s", ctrl);
	snprintf(f->out[f->n].ns, sizeof(f->out[f->n].ns), "%s", ns);
	snprintf(f->out[f->n].backing, sizeof(f->out[f->n].backing), "%s", backing);
	f->out[f->n++].tier = tier;
}

/* Block device @name (in @sysclass): its drives added; how many NVMe namespaces it is on. */
static int resolve(struct found *f, const char *sysclass, const char *name, uint32_t tier,
		   const char *backing, int depth)
{
	char path[PATH_MAX], dir[PATH_MAX], ctrl[32];
	const char *disk;
	int hits = 0;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "%s/%s", sysclass, name);
	if (depth > 4 || !realpath(path, dir))
		return 0;
	snprintf(path, sizeof(path), "%s/partition", dir);
	if (access(path, F_OK) == 0)
		*strrchr(dir, '/') = '\0';	/* a partition: its disk is the parent */
	disk = strrchr(dir, '/');
	disk = disk ? disk + 1 : dir;
	if (pt_nvme_ns_name(disk, ctrl, sizeof(ctrl))) {
		add(f, ctrl, disk, tier, backing);
		return 1;
	}
	/* device-mapper, md: the devices it is built on. */
	snprintf(path, sizeof(path), "%s/slaves", dir);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			hits += resolve(f, sysclass, de->d_name, tier, backing, depth + 1);
	closedir(d);
	return hits;
}

int pt_nvme_find(const char *sysblock, const char *sysclass, struct pt_nvme_ns *out, int max,
		 char *other, size_t other_len)
{
	uint32_t ids[PT_KMOD_MAX_TIERS];
	int nt = pt_kmod_list_tiers_in(sysblock, ids, PT_KMOD_MAX_TIERS);
	struct found f = { .out = out, .max = max };
	size_t olen = 0;

	if (other_len)
		other[0] = '\0';
	if (nt < 0)
		return nt;
	for (int i = 0; i < nt; i++) {
		char path[PATH_MAX], dev[PATH_MAX], *name;

		snprintf(path, sizeof(path), "%s/" PAGETIER_DISK_NAME "%u/backing_dev", sysblock,
			 ids[i]);
		if (pt_read_file(path, dev, sizeof(dev)) <= 0)
			continue;	/* destroyed meanwhile, or a module without the file */
		dev[strcspn(dev, "\n")] = '\0';
		name = strrchr(dev, '/');
		name = name ? name + 1 : dev;
		if ((*name && resolve(&f, sysclass, name, ids[i], dev, 0) > 0) || olen >= other_len)
			continue;
		olen += (size_t)snprintf(other + olen, other_len - olen,
					 "%s" PAGETIER_DISK_NAME "%u over %s", olen ? ", " : "", ids[i],
					 dev);
	}
	return f.n;
}
