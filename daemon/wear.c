// SPDX-License-Identifier: GPL-2.0
#include "wear.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "status.h"

void pt_wear_budget_default(struct pt_wear_budget *b)
{
	b->bytes = 0;
	b->dw_milli = 1000;
	b->period_ms = PT_WEAR_DAY_MS;
}

/* "1", "0.5", "2.125" -> thousandths; -EINVAL beyond 3 decimals or 100000. */
static int parse_milli(const char *s, size_t n, uint64_t *out)
{
	uint64_t whole = 0, frac = 0;
	size_t i = 0;
	int digits = 0;

	if (!n || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	for (; i < n && isdigit((unsigned char)s[i]); i++)
		if ((whole = whole * 10 + (uint64_t)(s[i] - '0')) > 100000)
			return -EINVAL;
	if (i < n && s[i] == '.') {
		for (i++; i < n && isdigit((unsigned char)s[i]); i++) {
			if (++digits > 3)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(s[i] - '0');
		}
		if (!digits)
			return -EINVAL;
	}
	if (i != n)
		return -EINVAL;
	for (; digits < 3; digits++)
		frac *= 10;
	*out = whole * 1000 + frac;
	return 0;
}

int pt_wear_parse_budget(const char *s, struct pt_wear_budget *out, char *why, size_t whylen)
{
	size_t n = strlen(s);
	const char *slash = strchr(s, '/');

	memset(out, 0, sizeof(*out));
	out->period_ms = PT_WEAR_DAY_MS;
	if (strcmp(s, "0") == 0 || strcasecmp(s, "off") == 0)
		return 0;
	if (n > 4 && strcasecmp(s + n - 4, "dwpd") == 0) {
		uint64_t m;

		if (parse_milli(s, n - 4, &m) || !m || m > 100000) {
			snprintf(why, whylen, "'%s': drive writes per day must be a number above 0 and up to 100, with at most 3 decimals (e.g. 1dwpd, 0.3dwpd)",
				 s);
			return -EINVAL;
		}
		out->dw_milli = (uint32_t)m;
		return 0;
	}
	if (slash) {
		char size[32];
		uint64_t bytes, period;
		size_t sl = (size_t)(slash - s);

		if (sl >= sizeof(size) || (snprintf(size, sizeof(size), "%.*s", (int)sl, s),
					    pt_parse_size(size, &bytes))) {
			snprintf(why, whylen, "'%s': '%.*s' is not a size (e.g. 200G)", s,
				 (int)(sl < 40 ? sl : 40), s);
			return -EINVAL;
		}
		if (strcasecmp(slash + 1, "day") == 0 || strcasecmp(slash + 1, "d") == 0)
			period = PT_WEAR_DAY_MS;
		else if (pt_parse_duration_ms(slash + 1, &period) || period < 60000 ||
			 period > 7 * PT_WEAR_DAY_MS) {
			snprintf(why, whylen, "'%s': the period after '/' must be 'day' or a duration from 1m to 168h (e.g. 200G/day, 64M/10m)",
				 s);
			return -EINVAL;
		}
		if (bytes && bytes < (1ULL << 20)) {
			snprintf(why, whylen, "'%s': a budget of less than 1M per period leaves nothing to offload; 0 turns it off",
				 s);
			return -EINVAL;
		}
		out->bytes = bytes;
		out->period_ms = period;
		return 0;
	}
	snprintf(why, whylen, "'%s' is neither drive writes per day (e.g. 1dwpd) nor a size per period (e.g. 200G/day); 0 or off turns it off",
		 s);
	return -EINVAL;
}

static void fmt_size(char *buf, size_t size, uint64_t v)
{
	static const char units[] = "KMGTP";
	double d = (double)v;
	int u = -1;

	if (v < 1024) {
		snprintf(buf, size, "%llu", (unsigned long long)v);
		return;
	}
	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f%c", d, units[u]);
}

static void fmt_period(char *buf, size_t size, uint64_t ms)
{
	if (ms == PT_WEAR_DAY_MS)
		snprintf(buf, size, "day");
	else if (ms % 3600000 == 0)
		snprintf(buf, size, "%lluh", (unsigned long long)(ms / 3600000));
	else if (ms % 60000 == 0)
		snprintf(buf, size, "%llum", (unsigned long long)(ms / 60000));
	else if (ms % 1000 == 0)
		snprintf(buf, size, "%llus", (unsigned long long)(ms / 1000));
	else
		snprintf(buf, size, "%llums", (unsigned long long)ms);
}

void pt_wear_budget_format(const struct pt_wear_budget *b, char *buf, size_t size)
{
	char per[24], sz[24];

	fmt_period(per, sizeof(per), b->period_ms);
	if (b->dw_milli && b->dw_milli % 1000 == 0) {
		snprintf(buf, size, "%u drive write%s per %s", b->dw_milli / 1000,
			 b->dw_milli == 1000 ? "" : "s", per);
	} else if (b->dw_milli) {
		snprintf(buf, size, "%u.%03u drive writes per %s", b->dw_milli / 1000,
			 b->dw_milli % 1000, per);
	} else if (b->bytes) {
		fmt_size(sz, sizeof(sz), b->bytes);
		snprintf(buf, size, "%s per %s", sz, per);
	} else {
		snprintf(buf, size, "off");
	}
}

void pt_wear_drive_start(struct pt_wear_drive *d, const struct pt_wear_budget *b)
{
	unsigned __int128 bytes = b->bytes;
	uint64_t span;

	if (b->dw_milli)
		bytes = (unsigned __int128)d->capacity_bytes * b->dw_milli / 1000;
	d->budget_bytes = bytes > UINT64_MAX / 2 ? UINT64_MAX / 2 : (uint64_t)bytes;
	d->period_ms = b->period_ms ? b->period_ms : PT_WEAR_DAY_MS;
	span = d->period_ms < PT_WEAR_BURST_MS ? d->period_ms : PT_WEAR_BURST_MS;
	d->burst = (int64_t)((unsigned __int128)d->budget_bytes * span / d->period_ms);
	if (d->budget_bytes && d->burst < 1)
		d->burst = 1;
	d->tokens = d->burst;
	d->samples = 0;
	d->media_hold_until_ms = 0;
	d->level = PT_WEAR_OK;
	snprintf(d->why, sizeof(d->why), "%s", d->budget_bytes ? "no sample yet" :
		 "no write budget (off, or the drive's capacity is unknown)");
}

static const char *warning_name(uint8_t w)
{
	if (w & 0x08)
		return "media read-only";
	if (w & 0x04)
		return "reliability degraded";
	if (w & 0x01)
		return "spare below threshold";
	if (w & 0x02)
		return "temperature";
	if (w & 0x10)
		return "volatile memory backup failed";
	return "persistent memory region";
}

/* The budget's verdict alone, with hysteresis: the tier_fill.h pattern. */
static enum pt_wear_level budget_level(enum pt_wear_level prev, int64_t pm)
{
	if (pm < PT_WEAR_STOP_BELOW || (prev >= PT_WEAR_STOP && pm < PT_WEAR_STOP_RESUME))
		return PT_WEAR_STOP;
	if (pm < PT_WEAR_SLOW_BELOW || (prev >= PT_WEAR_SLOW_IDLE && pm < PT_WEAR_SLOW_RESUME))
		return PT_WEAR_SLOW_IDLE;
	if (pm < PT_WEAR_NO_COLD_BELOW || (prev >= PT_WEAR_NO_COLD && pm < PT_WEAR_NO_COLD_RESUME))
		return PT_WEAR_NO_COLD;
	return PT_WEAR_OK;
}

enum pt_wear_level pt_wear_sample(struct pt_wear_drive *d, const struct pt_smart *s,
				  uint64_t now_ms)
{
	enum pt_wear_level prev = d->level;

	if (!d->samples || s->data_units_written < d->smart.data_units_written) {
		/* A baseline: the first sample, or a counter that went back (not ours to charge). */
		d->first_units_written = s->data_units_written;
		d->tokens = d->burst;
	} else {
		uint64_t units = s->data_units_written - d->smart.data_units_written;
		uint64_t elapsed = now_ms > d->last_ms ? now_ms - d->last_ms : 0;
		unsigned __int128 written = (unsigned __int128)units * PT_NVME_DATA_UNIT, refill;
		__int128 t;

		if (elapsed > d->period_ms)
			elapsed = d->period_ms;	/* a full period fills any bucket */
		refill = (unsigned __int128)d->budget_bytes * elapsed / d->period_ms;
		t = (__int128)d->tokens + (__int128)refill;
		if (t > d->burst)
			t = d->burst;
		t -= (__int128)written;
		if (t < -(__int128)d->budget_bytes)
			t = -(__int128)d->budget_bytes;	/* the debt: one period at most */
		d->tokens = (int64_t)t;
		if (s->media_errors > d->smart.media_errors)
			d->media_hold_until_ms = now_ms + PT_WEAR_MEDIA_HOLD_MS;
	}
	d->smart = *s;
	d->samples++;
	d->last_ms = now_ms;

	if (s->critical_warning) {
		d->level = PT_WEAR_STOP;
		snprintf(d->why, sizeof(d->why), "the drive reports a critical warning (0x%02x: %s)",
			 s->critical_warning, warning_name(s->critical_warning));
	} else if (d->media_hold_until_ms && now_ms < d->media_hold_until_ms) {
		d->level = PT_WEAR_STOP;
		snprintf(d->why, sizeof(d->why),
			 "its media errors rose to %llu (held %llu s after the last rise)",
			 (unsigned long long)s->media_errors,
			 (unsigned long long)(PT_WEAR_MEDIA_HOLD_MS / 1000));
	} else if (!d->budget_bytes || d->burst <= 0) {
		d->level = PT_WEAR_OK;
		snprintf(d->why, sizeof(d->why), "healthy, no write budget");
	} else {
		__int128 pm = (__int128)d->tokens * 1000 / d->burst;
		char left[24], burst[24];

		d->level = budget_level(prev, (int64_t)pm);
		fmt_size(left, sizeof(left), d->tokens > 0 ? (uint64_t)d->tokens : 0);
		fmt_size(burst, sizeof(burst), (uint64_t)d->burst);
		if (d->tokens >= 0) {
			snprintf(d->why, sizeof(d->why), "write budget: %s of %s left", left, burst);
		} else {
			fmt_size(left, sizeof(left), (uint64_t)-d->tokens);
			snprintf(d->why, sizeof(d->why),
				 "write budget exhausted: %s written beyond a %s bucket", left, burst);
		}
	}
	return d->level;
}

enum pt_wear_level pt_wear_update_level(struct pt_wear *w)
{
	enum pt_wear_level l = PT_WEAR_OK;

	for (int i = 0; i < w->n; i++)
		if (w->drives[i].enabled && w->drives[i].level > l)
			l = w->drives[i].level;
	w->level = l;
	return l;
}

uint64_t pt_wear_idle_rate(enum pt_wear_level level, uint64_t offload_rate)
{
	uint64_t r;

	if (level < PT_WEAR_SLOW_IDLE)
		return offload_rate;
	r = offload_rate / PT_WEAR_SLOW_DIVISOR;
	return r < (1ULL << 20) ? (offload_rate < (1ULL << 20) ? offload_rate : 1ULL << 20) : r;
}

const char *pt_wear_level_name(enum pt_wear_level l)
{
	switch (l) {
	case PT_WEAR_OK:
		return "ok";
	case PT_WEAR_NO_COLD:
		return "no-cold";
	case PT_WEAR_SLOW_IDLE:
		return "slow-idle";
	case PT_WEAR_STOP:
		return "stop";
	}
	return "?";
}

uint64_t pt_wear_written_since_start(const struct pt_wear_drive *d)
{
	if (!d->samples || d->smart.data_units_written < d->first_units_written)
		return 0;
	return (d->smart.data_units_written - d->first_units_written) * PT_NVME_DATA_UNIT;
}

uint64_t pt_smart_u128(const uint8_t b[16])
{
	uint64_t v = 0;

	for (int i = 15; i >= 8; i--)
		if (b[i])
			return UINT64_MAX;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* --- pagetierctl status ------------------------------------------------------------ */

void pt_wear_status_text(FILE *out, const struct pt_wear *w, const struct pt_wear_budget *b)
{
	char bs[64];
	int accounted = 0;

	pt_wear_budget_format(b, bs, sizeof(bs));
	for (int i = 0; i < w->n; i++)
		accounted += w->drives[i].enabled;
	if (!accounted) {
		fprintf(out, "wear: no NVMe drive under the tiers is readable: no write budget (write_budget %s)\n",
			bs);
		return;
	}
	fprintf(out, "wear: %s (write_budget %s), %llu offloads held back\n",
		pt_wear_level_name(w->level), bs, (unsigned long long)w->deferred);
	for (int i = 0; i < w->n; i++) {
		const struct pt_wear_drive *d = &w->drives[i];
		char cap[24], wr[24], run[24], left[24], burst[24], budget[24], per[24];

		fmt_size(cap, sizeof(cap), d->capacity_bytes);
		fprintf(out, "drive %s (/dev/%s, %s, serial %s, firmware %s, %s)", d->name, d->ns_dev,
			d->model[0] ? d->model : "?", d->serial[0] ? d->serial : "?",
			d->firmware[0] ? d->firmware : "?", cap);
		if (!d->enabled || !d->samples) {
			fprintf(out, ": %s\n", d->enabled ? "no SMART sample yet" :
				"not readable through libnvme: not accounted");
			continue;
		}
		fmt_size(wr, sizeof(wr), d->smart.data_units_written * PT_NVME_DATA_UNIT);
		fmt_size(run, sizeof(run), pt_wear_written_since_start(d));
		fprintf(out, ": %s written (%s since pagetierd started), %u%% of its endurance used, spare %u%%, %llu media errors, ",
			wr, run, d->smart.percentage_used, d->smart.available_spare,
			(unsigned long long)d->smart.media_errors);
		if (d->smart.critical_warning)
			fprintf(out, "CRITICAL WARNING 0x%02x", d->smart.critical_warning);
		else
			fprintf(out, "no critical warning");
		if (d->smart.temperature_k)
			fprintf(out, ", %d C", (int)d->smart.temperature_k - 273);
		fputc('\n', out);
		fmt_size(budget, sizeof(budget), d->budget_bytes);
		fmt_size(burst, sizeof(burst), (uint64_t)(d->burst > 0 ? d->burst : 0));
		fmt_size(left, sizeof(left), (uint64_t)(d->tokens > 0 ? d->tokens : -d->tokens));
		fmt_period(per, sizeof(per), d->period_ms);
		if (d->budget_bytes)
			fprintf(out, "  budget %s per %s: %s%s %s a %s bucket; %s (%s)\n", budget, per,
				d->tokens < 0 ? "overdrawn by " : "", left,
				d->tokens < 0 ? "beyond" : "left of", burst,
				pt_wear_level_name(d->level), d->why);
		else
			fprintf(out, "  no budget; %s (%s)\n", pt_wear_level_name(d->level), d->why);
	}
}

void pt_wear_status_json(FILE *out, const struct pt_wear *w, const struct pt_wear_budget *b)
{
	char bs[64];

	pt_wear_budget_format(b, bs, sizeof(bs));
	fprintf(out, "{\"level\":\"%s\",\"write_budget\":", pt_wear_level_name(w->level));
	pt_json_string(out, bs);
	fprintf(out, ",\"offloads_deferred\":%llu,\"drives\":[", (unsigned long long)w->deferred);
	for (int i = 0; i < w->n; i++) {
		const struct pt_wear_drive *d = &w->drives[i];

		fprintf(out, "%s{\"drive\":", i ? "," : "");
		pt_json_string(out, d->name);
		fprintf(out, ",\"namespace\":");
		pt_json_string(out, d->ns_dev);
		fprintf(out, ",\"model\":");
		pt_json_string(out, d->model);
		fprintf(out, ",\"serial\":");
		pt_json_string(out, d->serial);
		fprintf(out, ",\"firmware\":");
		pt_json_string(out, d->firmware);
		fprintf(out, ",\"capacity_bytes\":%llu,\"accounted\":%s,\"samples\":%llu,\"level\":\"%s\",\"why\":",
			(unsigned long long)d->capacity_bytes,
			d->enabled && d->samples ? "true" : "false", (unsigned long long)d->samples,
			pt_wear_level_name(d->level));
		pt_json_string(out, d->why);
		fprintf(out,
			",\"data_written_bytes\":%llu,\"written_since_start_bytes\":%llu"
			",\"data_read_bytes\":%llu,\"percentage_used\":%u,\"available_spare\":%u"
			",\"media_errors\":%llu,\"critical_warning\":%u,\"temperature_kelvin\":%u"
			",\"budget_bytes\":%llu,\"budget_period_seconds\":%llu,\"burst_bytes\":%lld"
			",\"remaining_bytes\":%lld,\"sample_errors\":%llu}",
			(unsigned long long)(d->smart.data_units_written * PT_NVME_DATA_UNIT),
			(unsigned long long)pt_wear_written_since_start(d),
			(unsigned long long)(d->smart.data_units_read * PT_NVME_DATA_UNIT),
			d->smart.percentage_used, d->smart.available_spare,
			(unsigned long long)d->smart.media_errors, d->smart.critical_warning,
			d->smart.temperature_k, (unsigned long long)d->budget_bytes,
			(unsigned long long)(d->period_ms / 1000), (long long)d->burst,
			(long long)d->tokens, (unsigned long long)d->sample_errors);
	}
	fprintf(out, "]}");
}
