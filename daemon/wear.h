/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The NVMe drives under the tiers, and the write budget that keeps offload from wearing
 * them out. Offloading is writing, and flash endures a rated number of drive writes (a
 * "1 DWPD" drive: its capacity once a day over its warranty). pagetierd accounts what the
 * drive itself says it wrote (the SMART/health log's data units written, 1000 x 512 bytes
 * each, read through libnvme by nvme.c) against write_budget, and backs off in steps, as
 * it does when the tiers fill up (tier_fill.h):
 *   ok         everything;
 *   no-cold    budget below PT_WEAR_NO_COLD_BELOW: no cold offload of active containers
 *              (the least urgent writes) until back above PT_WEAR_NO_COLD_RESUME;
 *   slow-idle  below PT_WEAR_SLOW_BELOW: idle offload at offload_rate /
 *              PT_WEAR_SLOW_DIVISOR, until above PT_WEAR_SLOW_RESUME;
 *   stop       below PT_WEAR_STOP_BELOW, or the drive reports a critical warning, or its
 *              media errors rose within PT_WEAR_MEDIA_HOLD_MS: no new offload at all
 *              (idle offload and the free-memory watermark wait) until above
 *              PT_WEAR_STOP_RESUME and healthy. An offload already running finishes.
 * Prefetch never stops: reading does not wear flash, and a waking container waits for it.
 *
 * The budget is a token bucket per drive, refilled continuously at budget / period, that
 * holds at most PT_WEAR_BURST_MS of refill (a day: all of a daily budget, a day's share of
 * a weekly one). Why a bucket and not "at most B in any sliding day": the endurance a
 * drive is rated for is a long-run average (drive writes per day over its warranty), and a
 * bucket bounds exactly that (at most one burst above rate x time, over any span), with
 * O(1) state and a smooth refill. Why a day's burst and not an hour's: pagetier's writes
 * come in bursts (a container going idle writes its whole footprint at once), and an
 * hour's share is a small fraction of a small drive: 170 MiB for a 4 GiB namespace, less
 * than one idle offload in the test VM, which stopped cold offload within a minute of
 * ordinary use. Endurance is not spent faster for being spent in bursts. A daemon
 * restarted in a loop (the bucket starts full: nothing is persisted) could write a day's
 * budget per restart; systemd's restart limits bound that. Writes beyond the bucket
 * (noticed after the fact: SMART is sampled every PT_WEAR_SAMPLE_MS) are a debt paid back
 * before offload resumes, of one period's budget at most, so that a burst of writes that
 * were not ours (a dd to another partition of the drive) stops offload for a period at
 * most.
 *
 * Pure: the budget's parsing, the bucket and the levels; no I/O, so unit tested.
 */
#ifndef PAGETIER_WEAR_H
#define PAGETIER_WEAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Thresholds, per mille of the bucket. */
#define PT_WEAR_NO_COLD_BELOW	500
#define PT_WEAR_NO_COLD_RESUME	600
#define PT_WEAR_SLOW_BELOW	250
#define PT_WEAR_SLOW_RESUME	350
#define PT_WEAR_STOP_BELOW	50
#define PT_WEAR_STOP_RESUME	150
/* slow-idle: idle offload at this fraction of offload_rate (never below 1 MiB/s). */
#define PT_WEAR_SLOW_DIVISOR	4
/* The bucket: this much of the period's refill, at most the whole budget. */
#define PT_WEAR_BURST_MS	86400000ULL
/* Media errors that rose stop new offload for this long after the last rise. */
#define PT_WEAR_MEDIA_HOLD_MS	3600000ULL
/* The SMART log is an admin command to the drive: read at most this often. */
#define PT_WEAR_SAMPLE_MS	5000ULL
/* Bytes in one of the SMART log's data units. */
#define PT_NVME_DATA_UNIT	512000ULL
#define PT_WEAR_DAY_MS		86400000ULL
/* Drives tracked at most (a tier has one backing device; a device-mapper one, a few). */
#define PT_WEAR_MAX_DRIVES	16

enum pt_wear_level { PT_WEAR_OK, PT_WEAR_NO_COLD, PT_WEAR_SLOW_IDLE, PT_WEAR_STOP };

/* write_budget: bytes or drive writes (of the drive's capacity) per period; both 0: off. */
struct pt_wear_budget {
	uint64_t bytes;
	uint32_t dw_milli;		/* drive writes per period, in thousandths */
	uint64_t period_ms;
};

/* One SMART/health log (NVMe base spec, log page 02h), the fields the budget reads. */
struct pt_smart {
	uint64_t data_units_written;	/* PT_NVME_DATA_UNIT bytes each */
	uint64_t data_units_read;
	uint64_t media_errors;
	uint64_t power_on_hours;
	uint8_t critical_warning;	/* bits: spare, temperature, reliability, read-only, ... */
	uint8_t percentage_used;	/* of the rated endurance; may exceed 100 */
	uint8_t available_spare;	/* percent */
	uint8_t spare_threshold;
	uint16_t temperature_k;		/* kelvin, 0: not reported */
};

struct pt_wear_drive {
	/* Identity (nvme.c): the controller, the namespace it was reached through. */
	char name[32];			/* "nvme0" */
	char ns_dev[40];		/* "nvme0n1" */
	char model[41], serial[21], firmware[9];
	uint64_t capacity_bytes;	/* what "drive writes" are of */
	bool enabled;			/* SMART readable: the drive is accounted */

	/* The last sample, and the first (what pagetierd's run wrote). */
	struct pt_smart smart;
	uint64_t first_units_written;
	uint64_t samples;
	uint64_t sample_errors;

	/* The bucket (bytes); budget_bytes 0: no budget (health only). */
	uint64_t budget_bytes;		/* per period */
	uint64_t period_ms;
	int64_t burst;			/* the bucket's size */
	int64_t tokens;			/* left; negative: a debt */
	uint64_t last_ms;		/* of the last sample */
	uint64_t media_hold_until_ms;
	enum pt_wear_level level;
	char why[160];			/* what set the level, for logs and status */
};

/* Every drive under the tiers; the level offload obeys is the worst of theirs. */
struct pt_wear {
	struct pt_wear_drive drives[PT_WEAR_MAX_DRIVES];
	int n;
	enum pt_wear_level level;
	uint64_t deferred;		/* offloads held back (per container and poll) */
};

/*
 * write_budget's value: "1dwpd" / "0.5dwpd" (drive writes per day, up to 3 decimals),
 * "200G/day", "64M/10m" (a size per day or per duration of 1m to 7d: ms/s/m/h), "0" or
 * "off". 0, or -EINVAL with the reason in @why.
 */
int pt_wear_parse_budget(const char *s, struct pt_wear_budget *out, char *why, size_t whylen);
/* The built-in default: one drive write per day. */
void pt_wear_budget_default(struct pt_wear_budget *b);
/* "1 drive write(s) per 24h", "200.0G per 24h", "off", into @buf. */
void pt_wear_budget_format(const struct pt_wear_budget *b, char *buf, size_t size);

/*
 * Starts accounting @d (identity filled) under @b: budget in bytes from the capacity for
 * drive writes (none if the capacity is unknown), the bucket, full at the first sample.
 */
void pt_wear_drive_start(struct pt_wear_drive *d, const struct pt_wear_budget *b);
/*
 * One SMART sample of @d at @now_ms: refill, charge what the drive wrote since the last
 * one, health, and the new level (with hysteresis) into d->level and d->why. Returns the
 * level. A counter that went backwards (another drive, a reset) is a new baseline.
 */
enum pt_wear_level pt_wear_sample(struct pt_wear_drive *d, const struct pt_smart *s,
				  uint64_t now_ms);
/* The worst level of @w's enabled drives into w->level (ok without any); returns it. */
enum pt_wear_level pt_wear_update_level(struct pt_wear *w);
/* The rate idle offload gets at @level (offload_rate, or a fraction of it). */
uint64_t pt_wear_idle_rate(enum pt_wear_level level, uint64_t offload_rate);
const char *pt_wear_level_name(enum pt_wear_level l);
/* Bytes the drive wrote since its first sample. */
uint64_t pt_wear_written_since_start(const struct pt_wear_drive *d);
/*
 * pagetierctl status: the level, each drive (identity, SMART, its bucket), as text lines
 * or one JSON object. Pure formatting.
 */
void pt_wear_status_text(FILE *out, const struct pt_wear *w, const struct pt_wear_budget *b);
void pt_wear_status_json(FILE *out, const struct pt_wear *w, const struct pt_wear_budget *b);
/* 16 little-endian bytes of a SMART counter (128-bit), saturated to 64 bits. */
uint64_t pt_smart_u128(const uint8_t b[16]);

#endif
