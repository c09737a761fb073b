// SPDX-License-Identifier: GPL-2.0
/*
 * The NVMe drives under the tiers, read through libnvme (nvme.h): the only file that
 * talks to a drive, linked into pagetierd alone.
 *
 * The SMART log is read on the loop thread: one admin command per drive every
 * PT_WEAR_SAMPLE_MS, which a healthy drive answers in well under a millisecond. A drive
 * that does not answer its admin queue has stalled the tier's I/O too; the kernel's admin
 * timeout (and its controller reset) bounds the wait, and a shorter timeout of ours would
 * make the kernel reset a merely slow controller.
 */
#include "nvme.h"

#include <endian.h>
#include <errno.h>
#include <libnvme.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pagetier.h"

void pt_nvme_init(struct pt_nvme *n)
{
	memset(n, 0, sizeof(*n));
	for (int i = 0; i < PT_WEAR_MAX_DRIVES; i++)
		n->fd[i] = -1;
	n->sysblock = "/sys/block";
	n->sysclass = "/sys/class/block";
}

/* A space-padded identify string into a C string. */
static void id_string(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		len = size - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
	for (size_t i = len; i-- > 0 && (dst[i] == ' ' || dst[i] == '\0');)
		dst[i] = '\0';
}

static const char *nvme_err(int rc, char *buf, size_t size)
{
	if (rc < 0)
		return strerror(errno);
	snprintf(buf, size, "NVMe status 0x%x", rc);
	return buf;
}

/* Opens and identifies @ns into @d; 0 or a negative errno, @why says what failed. */
static int open_drive(const struct pt_nvme_ns *ns, struct pt_wear_drive *d, int *fdp, char *why,
		      size_t whylen)
{
	struct nvme_id_ctrl ctrl;
	struct nvme_id_ns idns;
	__u32 nsid = 0;
	char eb[32];
	int fd, rc;

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", ns->ctrl);
	snprintf(d->ns_dev, sizeof(d->ns_dev), "%s", ns->ns);
	fd = nvme_open(ns->ns);
	if (fd < 0) {
		rc = -errno;
		snprintf(why, whylen, "opening /dev/%s: %s", ns->ns, strerror(errno));
		return rc;
	}
	rc = nvme_identify_ctrl(fd, &ctrl);
	if (rc) {
		snprintf(why, whylen, "identify controller: %s", nvme_err(rc, eb, sizeof(eb)));
		close(fd);
		return rc < 0 ? -errno : -EIO;
	}
	id_string(d->model, sizeof(d->model), ctrl.mn, sizeof(ctrl.mn));
	id_string(d->serial, sizeof(d->serial), ctrl.sn, sizeof(ctrl.sn));
	id_string(d->firmware, sizeof(d->firmware), ctrl.fr, sizeof(ctrl.fr));
	/* Rated endurance is of the drive's capacity: the subsystem's, else the namespace's. */
	d->capacity_bytes = pt_smart_u128(ctrl.tnvmcap);
	if (!nvme_get_nsid(fd, &nsid) && !nvme_identify_ns(fd, nsid, &idns)) {
		unsigned int fmt = (idns.flbas & 0x0f) | ((idns.flbas >> 1) & 0x30);
		uint64_t ns_bytes = le64toh(idns.nsze) << idns.lbaf[fmt < 64 ? fmt : 0].ds;

		if (!d->capacity_bytes || d->capacity_bytes == UINT64_MAX)
			d->capacity_bytes = ns_bytes;
	}
	*fdp = fd;
	return 0;
}

static int read_smart(int fd, struct pt_smart *s, char *why, size_t whylen)
{
	struct nvme_smart_log log;
	char eb[32];
	int rc;

	/* The whole drive's log (all namespaces): the drive is what wears. */
	rc = nvme_get_log_smart(fd, NVME_NSID_ALL, false, &log);
	if (rc) {
		snprintf(why, whylen, "%s", nvme_err(rc, eb, sizeof(eb)));
		return rc < 0 ? -errno : -EIO;
	}
	memset(s, 0, sizeof(*s));
	s->data_units_written = pt_smart_u128(log.data_units_written);
	s->data_units_read = pt_smart_u128(log.data_units_read);
	s->media_errors = pt_smart_u128(log.media_errors);
	s->power_on_hours = pt_smart_u128(log.power_on_hours);
	s->critical_warning = log.critical_warning;
	s->percentage_used = log.percent_used;
	s->available_spare = log.avail_spare;
	s->spare_threshold = log.spare_thresh;
	s->temperature_k = (uint16_t)(log.temperature[0] | log.temperature[1] << 8);
	return 0;
}

static const char *level_effect(enum pt_wear_level l)
{
	switch (l) {
	case PT_WEAR_OK:
		return "offloading everything again";
	case PT_WEAR_NO_COLD:
		return "cold offload of active containers stops";
	case PT_WEAR_SLOW_IDLE:
		return "cold offload stops and idle offload slows to a quarter of offload_rate";
	case PT_WEAR_STOP:
		return "new offload stops (prefetch goes on)";
	}
	return "?";
}

static void drop(struct pt_nvme *n, struct pt_wear *w, int i, const char *why)
{
	if (w->drives[i].enabled)
		pt_info("NVMe %s: %s: no longer accounted", w->drives[i].name, why);
	if (n->fd[i] >= 0)
		close(n->fd[i]);
	w->n--;
	w->drives[i] = w->drives[w->n];
	n->fd[i] = n->fd[w->n];
	n->budget[i] = n->budget[w->n];
	n->fd[w->n] = -1;
}

static bool same_budget(const struct pt_wear_budget *a, const struct pt_wear_budget *b)
{
	return a->bytes == b->bytes && a->dw_milli == b->dw_milli && a->period_ms == b->period_ms;
}

static void start(struct pt_nvme *n, struct pt_wear *w, int i, const struct pt_wear_budget *b)
{
	struct pt_wear_drive *d = &w->drives[i];
	char bs[64], sz[24], cap[24];

	n->budget[i] = *b;
	pt_wear_drive_start(d, b);
	pt_wear_budget_format(b, bs, sizeof(bs));
	snprintf(sz, sizeof(sz), "%.1f GiB", (double)d->budget_bytes / (1 << 30));
	snprintf(cap, sizeof(cap), "%.1f GiB", (double)d->capacity_bytes / (1 << 30));
	if (d->budget_bytes)
		pt_info("NVMe %s (%s, serial %s, firmware %s, %s): write budget %s = %s per %llu s, a bucket of %.1f MiB",
			d->name, d->model, d->serial, d->firmware, cap, bs, sz,
			(unsigned long long)(d->period_ms / 1000), (double)d->burst / (1 << 20));
	else
		pt_info("NVMe %s (%s, serial %s, firmware %s, %s): no write budget (write_budget %s%s); health still watched",
			d->name, d->model, d->serial, d->firmware, cap, bs,
			b->dw_milli && !d->capacity_bytes ? ", and the drive reports no capacity" : "");
}

/* The drives under the tiers now: gone ones dropped, new ones opened and started. */
static void reconcile(struct pt_nvme *n, struct pt_wear *w, const struct pt_wear_budget *b)
{
	struct pt_nvme_ns found[PT_WEAR_MAX_DRIVES];
	char other[256];
	int nf = pt_nvme_find(n->sysblock, n->sysclass, found, PT_WEAR_MAX_DRIVES, other,
			      sizeof(other));
	int enabled = 0;

	if (nf < 0)
		nf = 0;
	for (int i = w->n; i-- > 0;) {
		bool still = false;

		for (int k = 0; k < nf && !still; k++)
			still = strcmp(found[k].ctrl, w->drives[i].name) == 0;
		if (!still)
			drop(n, w, i, "no tier is over it any more");
	}
	for (int k = 0; k < nf; k++) {
		char why[160];
		int i;
		bool known = false;

		for (i = 0; i < w->n && !known; i++)
			known = strcmp(found[k].ctrl, w->drives[i].name) == 0;
		if (known) {
			i--;
			if (w->drives[i].enabled && !same_budget(&n->budget[i], b))
				start(n, w, i, b);	/* a reload changed write_budget */
			continue;
		}
		i = w->n++;
		if (open_drive(&found[k], &w->drives[i], &n->fd[i], why, sizeof(why))) {
			w->drives[i].enabled = false;
			n->fd[i] = -1;
			pt_info("NVMe %s under " PAGETIER_DISK_NAME "%u (%s): cannot be read through libnvme (%s): no write budget for it; pagetierd needs CAP_SYS_ADMIN and /dev/%s",
				found[k].ctrl, found[k].tier, found[k].backing, why, found[k].ns);
			continue;
		}
		w->drives[i].enabled = true;
		start(n, w, i, b);
	}
	for (int i = 0; i < w->n; i++)
		enabled += w->drives[i].enabled;
	if (enabled) {
		n->said_off = false;
	} else if (!n->said_off) {
		n->said_off = true;
		if (other[0])
			pt_info("write budget off: no tier is over an NVMe drive (%s); nothing to account",
				other);
		else if (!nf)
			pt_info("write budget off: no tier device (yet): the budget starts with a tier over an NVMe drive");
	}
}

void pt_nvme_poll(struct pt_nvme *n, struct pt_wear *w, const struct pt_wear_budget *budget,
		  uint64_t now_ms)
{
	enum pt_wear_level before = w->level;

	if (n->last_ms && now_ms - n->last_ms < PT_WEAR_SAMPLE_MS)
		return;
	n->last_ms = now_ms ? now_ms : 1;
	reconcile(n, w, budget);
	for (int i = 0; i < w->n; i++) {
		struct pt_wear_drive *d = &w->drives[i];
		enum pt_wear_level prev = d->level;
		struct pt_smart s;
		char why[64];

		if (!d->enabled)
			continue;
		if (read_smart(n->fd[i], &s, why, sizeof(why))) {
			/* The level stays what the last sample said. */
			if (!d->sample_errors++ || !(d->sample_errors % 100))
				pt_warn("NVMe %s: reading its SMART log failed (%s, %llu times so far): wear level kept at %s",
					d->name, why, (unsigned long long)d->sample_errors,
					pt_wear_level_name(d->level));
			continue;
		}
		if (s.percentage_used >= 100 && d->smart.percentage_used < 100 && d->samples)
			pt_warn("NVMe %s: %u%% of its rated endurance used: plan its replacement",
				d->name, s.percentage_used);
		pt_wear_sample(d, &s, now_ms);
		if (d->level > prev)
			pt_warn("NVMe %s: wear level %s: %s: %s", d->name, pt_wear_level_name(d->level),
				d->why, level_effect(d->level));
		else if (d->level < prev)
			pt_info("NVMe %s: wear level %s: %s: %s", d->name, pt_wear_level_name(d->level),
				d->why, level_effect(d->level));
		else
			pt_debug("NVMe %s: wear level %s: %s", d->name, pt_wear_level_name(d->level),
				 d->why);
	}
	if (pt_wear_update_level(w) != before)
		pt_info("wear level of the tiers' drives: %s (was %s): %s",
			pt_wear_level_name(w->level), pt_wear_level_name(before),
			level_effect(w->level));
}

void pt_nvme_close(struct pt_nvme *n, struct pt_wear *w)
{
	for (int i = 0; i < w->n; i++)
		if (n->fd[i] >= 0) {
			close(n->fd[i]);
			n->fd[i] = -1;
		}
}
