// SPDX-License-Identifier: GPL-2.0
/*
 * The NVMe write budget (wear.h) on synthetic SMART sequences: write_budget's parsing, the
 * bucket's exhaustion and refill, the levels' hysteresis, critical warnings and media
 * errors; the drives under the tiers found in a fixture sysfs (nvme_find.c); the status
 * and the metrics.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "manager.h"
#include "metrics.h"
#include "nvme.h"
#include "wear.h"

#define UNIT PT_NVME_DATA_UNIT

static void test_parse(void **state)
{
	struct pt_wear_budget b;
	char why[256], buf[64];

	(void)state;
	pt_wear_budget_default(&b);
	assert_int_equal(b.dw_milli, 1000);
	assert_true(b.period_ms == PT_WEAR_DAY_MS);
	pt_wear_budget_format(&b, buf, sizeof(buf));
	assert_string_equal(buf, "1 drive write per day");

	assert_int_equal(pt_wear_parse_budget("0.5dwpd", &b, why, sizeof(why)), 0);
	assert_int_equal(b.dw_milli, 500);
	assert_int_equal(b.bytes, 0);
	pt_wear_budget_format(&b, buf, sizeof(buf));
	assert_string_equal(buf, "0.500 drive writes per day");
	assert_int_equal(pt_wear_parse_budget("3DWPD", &b, why, sizeof(why)), 0);
	assert_int_equal(b.dw_milli, 3000);
	assert_int_equal(pt_wear_parse_budget("200G/day", &b, why, sizeof(why)), 0);
	assert_true(b.bytes == 200ULL << 30 && !b.dw_milli && b.period_ms == PT_WEAR_DAY_MS);
	pt_wear_budget_format(&b, buf, sizeof(buf));
	assert_string_equal(buf, "200.0G per day");
	assert_int_equal(pt_wear_parse_budget("64M/10m", &b, why, sizeof(why)), 0);
	assert_true(b.bytes == 64ULL << 20 && b.period_ms == 600000);
	assert_int_equal(pt_wear_parse_budget("1T/168h", &b, why, sizeof(why)), 0);
	assert_int_equal(pt_wear_parse_budget("off", &b, why, sizeof(why)), 0);
	assert_true(!b.bytes && !b.dw_milli);
	pt_wear_budget_format(&b, buf, sizeof(buf));
	assert_string_equal(buf, "off");
	assert_int_equal(pt_wear_parse_budget("0", &b, why, sizeof(why)), 0);
	assert_int_equal(pt_wear_parse_budget("0/day", &b, why, sizeof(why)), 0);
	assert_true(!b.bytes && !b.dw_milli);

	/* Refused, each with a reason naming the value. */
	static const char *const bad[] = { "", "1", "200G", "dwpd", "0dwpd", "1.0001dwpd",
					   "101dwpd", "1.dwpd", "-1dwpd", "1x", "200G/", "200G/30s",
					   "200G/8d", "200G/169h", "512K/day", "G/day", "200G/week",
					   "1dwpd/day" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		if (pt_wear_parse_budget(bad[i], &b, why, sizeof(why)) != -EINVAL)
			fail_msg("write_budget '%s' was accepted", bad[i]);
		assert_non_null(strstr(why, bad[i]));
	}
}

/* A drive with @budget units per @period_ms (a bucket of all of it if <= 1 h). */
static void drive(struct pt_wear_drive *d, uint64_t budget_units, uint64_t period_ms)
{
	struct pt_wear_budget b = { .bytes = budget_units * UNIT, .period_ms = period_ms };

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "nvme0");
	d->enabled = true;
	d->capacity_bytes = 4ULL << 30;
	pt_wear_drive_start(d, &b);
}

static enum pt_wear_level at(struct pt_wear_drive *d, uint64_t t_s, uint64_t units)
{
	struct pt_smart s = d->smart;

	s.data_units_written = units;
	return pt_wear_sample(d, &s, t_s * 1000);
}

static void test_start(void **state)
{
	struct pt_wear_budget b;
	struct pt_wear_drive d;
	char why[64];

	(void)state;
	/* 1 DWPD of a 4 GiB drive: 4 GiB a day, a bucket of all of it. */
	memset(&d, 0, sizeof(d));
	d.capacity_bytes = 4ULL << 30;
	pt_wear_budget_default(&b);
	pt_wear_drive_start(&d, &b);
	assert_true(d.budget_bytes == 4ULL << 30);
	assert_int_equal(d.burst, (int64_t)(4ULL << 30));
	assert_int_equal(d.tokens, d.burst);
	/* 0.5 DWPD. */
	assert_int_equal(pt_wear_parse_budget("0.5dwpd", &b, why, sizeof(why)), 0);
	pt_wear_drive_start(&d, &b);
	assert_true(d.budget_bytes == 2ULL << 30);
	/* A weekly budget: the bucket holds a day of it. */
	assert_int_equal(pt_wear_parse_budget("7G/168h", &b, why, sizeof(why)), 0);
	pt_wear_drive_start(&d, &b);
	assert_true(d.budget_bytes == 7ULL << 30 && d.burst == 1LL << 30);
	/* A period under a day: the bucket is the whole budget. */
	assert_int_equal(pt_wear_parse_budget("64M/10m", &b, why, sizeof(why)), 0);
	pt_wear_drive_start(&d, &b);
	assert_true(d.budget_bytes == 64ULL << 20 && d.burst == 64LL << 20);
	/* DWPD of a drive whose capacity is unknown, or off: no budget, health only. */
	d.capacity_bytes = 0;
	pt_wear_budget_default(&b);
	pt_wear_drive_start(&d, &b);
	assert_int_equal(d.budget_bytes, 0);
	assert_int_equal(at(&d, 0, 100), PT_WEAR_OK);
	assert_int_equal(at(&d, 1, 1000000), PT_WEAR_OK);
}

/*
 * 1000 units per 1000 s, a bucket of 1000: one unit a second refills it, and the bucket's
 * per mille is its units.
 */
static void test_exhaustion_and_refill(void **state)
{
	struct pt_wear_drive d;
	uint64_t t = 100, u = 5000;

	(void)state;
	drive(&d, 1000, 1000000);
	assert_int_equal(d.burst, 1000 * UNIT);
	assert_int_equal(at(&d, t, u), PT_WEAR_OK);	/* the baseline: full */
	assert_int_equal(d.tokens, 1000 * UNIT);
	assert_int_equal(pt_wear_written_since_start(&d), 0);

	/* Writes beyond the refill (1 unit/s): each step down at its threshold. */
	u += 400;
	assert_int_equal(at(&d, ++t, u), PT_WEAR_OK);	/* 600 left */
	u += 102;
	assert_int_equal(at(&d, ++t, u), PT_WEAR_NO_COLD);	/* 499: below 50% */
	assert_int_equal(d.tokens, 499 * UNIT);
	assert_non_null(strstr(d.why, "left"));
	/* Hysteresis: back above 50% is not enough, 60% is. */
	assert_int_equal(at(&d, t + 51, u), PT_WEAR_NO_COLD);	/* 550 */
	assert_int_equal(at(&d, t + 100, u), PT_WEAR_NO_COLD);	/* 599 */
	assert_int_equal(at(&d, t + 101, u), PT_WEAR_OK);	/* 600 */
	t += 101;
	assert_int_equal(d.tokens, 600 * UNIT);

	u += 251;
	assert_int_equal(at(&d, ++t, u), PT_WEAR_NO_COLD);	/* 350 */
	u += 102;
	assert_int_equal(at(&d, ++t, u), PT_WEAR_SLOW_IDLE);	/* 249: below 25% */
	assert_int_equal(pt_wear_idle_rate(d.level, 128ULL << 20), 32ULL << 20);
	u += 200;
	assert_int_equal(at(&d, ++t, u), PT_WEAR_SLOW_IDLE);	/* 50 */
	u += 2;
	assert_int_equal(at(&d, ++t, u), PT_WEAR_STOP);	/* 49: below 5%, exhausted */

	/* Far beyond: a debt, of one period's budget at most. */
	u += 5000;
	assert_int_equal(at(&d, ++t, u), PT_WEAR_STOP);
	assert_int_equal(d.tokens, -1000 * (int64_t)UNIT);
	assert_non_null(strstr(d.why, "exhausted"));
	assert_true(pt_wear_written_since_start(&d) == (u - 5000) * UNIT);

	/* Refill with nothing written: the debt first, then each step back up, higher. */
	assert_int_equal(at(&d, t + 1000, u), PT_WEAR_STOP);	/* 0 */
	assert_int_equal(at(&d, t + 1149, u), PT_WEAR_STOP);	/* 149 */
	assert_int_equal(at(&d, t + 1150, u), PT_WEAR_SLOW_IDLE);	/* 150 */
	assert_int_equal(at(&d, t + 1349, u), PT_WEAR_SLOW_IDLE);	/* 349 */
	assert_int_equal(at(&d, t + 1350, u), PT_WEAR_NO_COLD);	/* 350 */
	assert_int_equal(at(&d, t + 1599, u), PT_WEAR_NO_COLD);	/* 599 */
	assert_int_equal(at(&d, t + 1600, u), PT_WEAR_OK);	/* 600 */
	/* The bucket holds no more than its size, however long it rests. */
	assert_int_equal(at(&d, t + 100000, u), PT_WEAR_OK);
	assert_int_equal(d.tokens, 1000 * UNIT);
	u += 951;
	assert_int_equal(at(&d, t + 100001, u), PT_WEAR_STOP);	/* 1000 + 1 capped - 951 */
	assert_int_equal(d.tokens, 49 * UNIT);
}

static void test_counter_reset(void **state)
{
	struct pt_wear_drive d;

	(void)state;
	drive(&d, 1000, 1000000);
	at(&d, 0, 800000);
	at(&d, 1, 800900);
	assert_int_equal(d.level, PT_WEAR_SLOW_IDLE);
	/* A counter that went back (the drive was swapped, or reset): a new baseline. */
	assert_int_equal(at(&d, 2, 10), PT_WEAR_OK);
	assert_int_equal(d.tokens, 1000 * UNIT);
	assert_int_equal(pt_wear_written_since_start(&d), 0);
	at(&d, 3, 20);
	assert_int_equal(pt_wear_written_since_start(&d), 10 * UNIT);
}

static void test_critical_warning(void **state)
{
	struct pt_wear_drive d;
	struct pt_smart s = { .data_units_written = 100 };

	(void)state;
	drive(&d, 1000, 1000000);
	assert_int_equal(pt_wear_sample(&d, &s, 0), PT_WEAR_OK);
	/* A full budget does not matter: any critical warning stops new offload. */
	s.critical_warning = 0x04;
	assert_int_equal(pt_wear_sample(&d, &s, 1000), PT_WEAR_STOP);
	assert_non_null(strstr(d.why, "reliability degraded"));
	s.critical_warning = 0x02;
	assert_int_equal(pt_wear_sample(&d, &s, 2000), PT_WEAR_STOP);
	assert_non_null(strstr(d.why, "temperature"));
	/* Cleared (it cooled down): back to what the budget says. */
	s.critical_warning = 0;
	assert_int_equal(pt_wear_sample(&d, &s, 3000), PT_WEAR_OK);
	/* Also without a budget. */
	memset(&d, 0, sizeof(d));
	d.enabled = true;
	pt_wear_drive_start(&d, &(struct pt_wear_budget){ 0 });
	assert_int_equal(pt_wear_sample(&d, &s, 0), PT_WEAR_OK);
	s.critical_warning = 0x01;
	assert_int_equal(pt_wear_sample(&d, &s, 1000), PT_WEAR_STOP);
	assert_non_null(strstr(d.why, "spare"));
}

static void test_media_errors(void **state)
{
	struct pt_wear_drive d;
	struct pt_smart s = { .data_units_written = 100, .media_errors = 7 };
	uint64_t hold = PT_WEAR_MEDIA_HOLD_MS;

	(void)state;
	drive(&d, 1000, 1000000);
	/* Errors from before pagetierd are a baseline, not a rise. */
	assert_int_equal(pt_wear_sample(&d, &s, 0), PT_WEAR_OK);
	assert_int_equal(pt_wear_sample(&d, &s, 5000), PT_WEAR_OK);
	s.media_errors = 9;
	assert_int_equal(pt_wear_sample(&d, &s, 10000), PT_WEAR_STOP);
	assert_non_null(strstr(d.why, "media errors rose to 9"));
	/* Held while no new one comes, for the hold ... */
	assert_int_equal(pt_wear_sample(&d, &s, 10000 + hold - 1), PT_WEAR_STOP);
	/* ... which a further rise extends. */
	s.media_errors = 10;
	assert_int_equal(pt_wear_sample(&d, &s, 10000 + hold - 1), PT_WEAR_STOP);
	assert_int_equal(pt_wear_sample(&d, &s, 10000 + hold), PT_WEAR_STOP);
	assert_int_equal(pt_wear_sample(&d, &s, 10000 + 2 * hold - 1), PT_WEAR_OK);
}

static void test_levels_and_rates(void **state)
{
	struct pt_wear w;

	(void)state;
	memset(&w, 0, sizeof(w));
	assert_int_equal(pt_wear_update_level(&w), PT_WEAR_OK);
	w.n = 3;
	w.drives[0].enabled = true;
	w.drives[0].level = PT_WEAR_NO_COLD;
	w.drives[1].enabled = false;	/* not readable: not accounted */
	w.drives[1].level = PT_WEAR_STOP;
	w.drives[2].enabled = true;
	w.drives[2].level = PT_WEAR_SLOW_IDLE;
	assert_int_equal(pt_wear_update_level(&w), PT_WEAR_SLOW_IDLE);
	assert_int_equal(w.level, PT_WEAR_SLOW_IDLE);
	assert_string_equal(pt_wear_level_name(PT_WEAR_OK), "ok");
	assert_string_equal(pt_wear_level_name(PT_WEAR_NO_COLD), "no-cold");
	assert_string_equal(pt_wear_level_name(PT_WEAR_SLOW_IDLE), "slow-idle");
	assert_string_equal(pt_wear_level_name(PT_WEAR_STOP), "stop");
	assert_int_equal(pt_wear_idle_rate(PT_WEAR_OK, 128 << 20), 128 << 20);
	assert_int_equal(pt_wear_idle_rate(PT_WEAR_NO_COLD, 128 << 20), 128 << 20);
	assert_int_equal(pt_wear_idle_rate(PT_WEAR_SLOW_IDLE, 128 << 20), 32 << 20);
	assert_int_equal(pt_wear_idle_rate(PT_WEAR_SLOW_IDLE, 2 << 20), 1 << 20);
	assert_int_equal(pt_wear_idle_rate(PT_WEAR_SLOW_IDLE, 1 << 20), 1 << 20);
}

static void test_u128(void **state)
{
	uint8_t b[16] = { 0x10, 0x27 };

	(void)state;
	assert_int_equal(pt_smart_u128(b), 10000);
	b[7] = 0x01;
	assert_true(pt_smart_u128(b) == 0x0100000000002710ULL);
	b[8] = 1;
	assert_true(pt_smart_u128(b) == UINT64_MAX);	/* saturated */
}

/* --- the drives under the tiers (nvme_find.c) --------------------------------------- */

static void link_at(const char *dir, const char *rel, const char *target)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if (symlink(target, path))
		abort();
}

static void test_find(void **state)
{
	char *dir = fx_tmpdir(), block[PATH_MAX], class[PATH_MAX], other[256];
	struct pt_nvme_ns ns[8];
	char ctrl[16];

	(void)state;
	assert_true(pt_nvme_ns_name("nvme0n1", ctrl, sizeof(ctrl)));
	assert_string_equal(ctrl, "nvme0");
	assert_true(pt_nvme_ns_name("nvme12n3", ctrl, sizeof(ctrl)));
	assert_string_equal(ctrl, "nvme12");
	assert_false(pt_nvme_ns_name("nvme0n1p1", ctrl, sizeof(ctrl)));
	assert_false(pt_nvme_ns_name("nvme0c1n1", ctrl, sizeof(ctrl)));
	assert_false(pt_nvme_ns_name("nvme0", ctrl, sizeof(ctrl)));
	assert_false(pt_nvme_ns_name("loop0", ctrl, sizeof(ctrl)));

	snprintf(block, sizeof(block), "%s/block", dir);
	snprintf(class, sizeof(class), "%s/class", dir);
	/* No tier: nothing, and nothing else to say. */
	fx_write(dir, "block/nvme0n1/size", "8388608\n");
	assert_int_equal(pt_nvme_find(block, class, ns, 8, other, sizeof(other)), 0);
	assert_string_equal(other, "");

	/* The devices: a partition of nvme0n1, a loop device, dm-0 over nvme1n1. */
	fx_write(dir, "devices/nvme0n1/nvme0n1p1/partition", "1\n");
	fx_write(dir, "devices/loop0/size", "0\n");
	fx_write(dir, "devices/nvme1n1/size", "0\n");
	fx_write(dir, "devices/dm-0/slaves/.keep", "");
	fx_write(dir, "class/.keep", "");
	link_at(dir, "class/nvme0n1", "../devices/nvme0n1");
	link_at(dir, "class/nvme0n1p1", "../devices/nvme0n1/nvme0n1p1");
	link_at(dir, "class/loop0", "../devices/loop0");
	link_at(dir, "class/nvme1n1", "../devices/nvme1n1");
	link_at(dir, "class/dm-0", "../devices/dm-0");
	link_at(dir, "devices/dm-0/slaves/nvme1n1", "../../nvme1n1");

	fx_write(dir, "block/pagetier0/backing_dev", "/dev/loop0\n");
	assert_int_equal(pt_nvme_find(block, class, ns, 8, other, sizeof(other)), 0);
	assert_string_equal(other, "pagetier0 over /dev/loop0");

	fx_write(dir, "block/pagetier1/backing_dev", "/dev/nvme0n1p1\n");
	fx_write(dir, "block/pagetier2/backing_dev", "/dev/mapper/fast\n");	/* no such name */
	fx_write(dir, "block/pagetier3/backing_dev", "/dev/dm-0\n");
	fx_write(dir, "block/pagetier4/backing_dev", "/dev/nvme0n1\n");	/* the same drive */
	fx_write(dir, "block/pagetier5/seg_stat", "");	/* no backing_dev: skipped */
	int n = pt_nvme_find(block, class, ns, 8, other, sizeof(other));

	assert_int_equal(n, 2);
	for (int i = 0; i < n; i++) {
		if (strcmp(ns[i].ctrl, "nvme0") == 0) {
			assert_string_equal(ns[i].ns, "nvme0n1");
			assert_true(ns[i].tier == 1 || ns[i].tier == 4);
		} else {
			assert_string_equal(ns[i].ctrl, "nvme1");
			assert_string_equal(ns[i].ns, "nvme1n1");
			assert_int_equal(ns[i].tier, 3);
			assert_string_equal(ns[i].backing, "/dev/dm-0");
		}
	}
	assert_non_null(strstr(other, "pagetier0 over /dev/loop0"));
	assert_non_null(strstr(other, "pagetier2 over /dev/mapper/fast"));
	assert_null(strstr(other, "pagetier4"));
	assert_null(strstr(other, "pagetier1"));
	/* At most @max. */
	assert_int_equal(pt_nvme_find(block, class, ns, 1, other, sizeof(other)), 1);
	assert_true(pt_nvme_find("/nonexistent-pagetier", class, ns, 8, other, sizeof(other)) < 0);
	fx_rmtree(dir);	/* frees it */
}

/* --- what an operator sees ----------------------------------------------------------- */

static void one_drive(struct pt_wear *w)
{
	struct pt_wear_drive *d = &w->drives[0];

	memset(w, 0, sizeof(*w));
	w->n = 1;
	drive(d, 1000, 1000000);
	snprintf(d->ns_dev, sizeof(d->ns_dev), "nvme0n1");
	snprintf(d->model, sizeof(d->model), "QEMU NVMe Ctrl");
	snprintf(d->serial, sizeof(d->serial), "pagetier-nvme");
	snprintf(d->firmware, sizeof(d->firmware), "7.2.2");
	at(d, 0, 1000);
	d->smart.temperature_k = 323;
	d->smart.percentage_used = 3;
	d->smart.available_spare = 100;
	at(d, 1, 3000);
	pt_wear_update_level(w);
	w->deferred = 7;
}

static char *render_to_string(void (*fn)(FILE *, const struct pt_wear *,
					  const struct pt_wear_budget *),
			      const struct pt_wear *w)
{
	struct pt_wear_budget b = { .bytes = 1000 * UNIT, .period_ms = 1000000 };
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	fn(f, w, &b);
	fclose(f);
	return buf;
}

static void test_status(void **state)
{
	struct pt_wear w;
	char *s;

	(void)state;
	one_drive(&w);
	assert_int_equal(w.level, PT_WEAR_STOP);
	s = render_to_string(pt_wear_status_text, &w);
	assert_non_null(strstr(s, "wear: stop (write_budget 488.3M per 1000s"));
	assert_non_null(strstr(s, "7 offloads held back"));
	assert_non_null(strstr(s, "drive nvme0 (/dev/nvme0n1, QEMU NVMe Ctrl, serial pagetier-nvme"));
	assert_non_null(strstr(s, "1.4G written (976.6M since pagetierd started), 3% of its endurance used"));
	assert_non_null(strstr(s, "no critical warning, 50 C"));
	assert_non_null(strstr(s, "overdrawn by"));
	free(s);
	s = render_to_string(pt_wear_status_json, &w);
	assert_non_null(strstr(s, "{\"level\":\"stop\",\"write_budget\":\"488.3M per 1000s"));
	assert_non_null(strstr(s, "\"offloads_deferred\":7"));
	assert_non_null(strstr(s, "\"drive\":\"nvme0\",\"namespace\":\"nvme0n1\""));
	assert_non_null(strstr(s, "\"data_written_bytes\":1536000000"));
	assert_non_null(strstr(s, "\"remaining_bytes\":-512000000"));
	assert_non_null(strstr(s, "\"accounted\":true"));
	free(s);
	/* No drive: the status says why there is no budget. */
	memset(&w, 0, sizeof(w));
	s = render_to_string(pt_wear_status_text, &w);
	assert_non_null(strstr(s, "no write budget"));
	free(s);
}

static void test_metrics(void **state)
{
	struct pt_metrics_daemon md = { 0 };
	struct pt_config cfg;
	struct pt_manager m;
	char *buf = NULL;
	size_t size = 0;
	FILE *f;

	(void)state;
	pt_config_defaults(&cfg);
	pt_manager_init(&m, &cfg);
	one_drive(&m.wear);
	f = open_memstream(&buf, &size);
	pt_metrics_render(f, &m, NULL, 0, &md);
	fclose(f);
	assert_non_null(strstr(buf, "pagetier_wear_level{level=\"stop\"} 1\n"));
	assert_non_null(strstr(buf, "pagetier_wear_level{level=\"ok\"} 0\n"));
	assert_non_null(strstr(buf, "pagetier_wear_offloads_deferred_total 7\n"));
	assert_non_null(strstr(buf, "pagetier_nvme_info{drive=\"nvme0\",namespace=\"nvme0n1\",model=\"QEMU NVMe Ctrl\""));
	assert_non_null(strstr(buf, "# TYPE pagetier_nvme_data_written_bytes_total counter\n"));
	assert_non_null(strstr(buf, "pagetier_nvme_data_written_bytes_total{drive=\"nvme0\"} 1536000000\n"));
	assert_non_null(strstr(buf, "pagetier_nvme_percentage_used_ratio{drive=\"nvme0\"} 0.03\n"));
	assert_non_null(strstr(buf, "pagetier_wear_budget_remaining_bytes{drive=\"nvme0\"} -512000000\n"));
	assert_non_null(strstr(buf, "pagetier_wear_budget_bytes{drive=\"nvme0\"} 512000000\n"));
	assert_non_null(strstr(buf, "pagetier_nvme_temperature_celsius{drive=\"nvme0\"} 49.85"));
	free(buf);
	/* Without drives: the level, no per-drive family. */
	memset(&m.wear, 0, sizeof(m.wear));
	buf = NULL;
	f = open_memstream(&buf, &size);
	pt_metrics_render(f, &m, NULL, 0, &md);
	fclose(f);
	assert_non_null(strstr(buf, "pagetier_wear_level{level=\"ok\"} 1\n"));
	assert_null(strstr(buf, "pagetier_nvme_"));
	free(buf);
	pt_manager_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_start),
		cmocka_unit_test(test_exhaustion_and_refill),
		cmocka_unit_test(test_counter_reset),
		cmocka_unit_test(test_critical_warning),
		cmocka_unit_test(test_media_errors),
		cmocka_unit_test(test_levels_and_rates),
		cmocka_unit_test(test_u128),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_metrics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
