// SPDX-License-Identifier: GPL-2.0
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum pt_log_level current_level = PT_LOG_INFO;
static const char *const level_names[] = { "error", "warn", "info", "debug" };
/* sd-daemon(3) priority prefixes, so journald keeps the level. */
static const char *const level_prefix[] = { "<3>", "<4>", "<6>", "<7>" };

void pt_log_set_level(enum pt_log_level level)
{
	current_level = level;
}

int pt_log_parse_level(const char *s, enum pt_log_level *out)
{
	for (unsigned int i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum pt_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void pt_log(enum pt_log_level level, const char *fmt, ...)
{
	va_list ap;
	struct timespec ts;

	if (level > current_level)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(stderr, "%s[%5lld.%03ld] %s: ", level_prefix[level], (long long)ts.tv_sec,
		ts.tv_nsec / 1000000, level_names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
