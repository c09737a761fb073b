/* SPDX-License-Identifier: GPL-2.0 */
/* Leveled logging to stderr (journald picks it up under systemd). */
#ifndef PAGETIER_LOG_H
#define PAGETIER_LOG_H

enum pt_log_level { PT_LOG_ERR, PT_LOG_WARN, PT_LOG_INFO, PT_LOG_DEBUG };

void pt_log_set_level(enum pt_log_level level);
/* Parses "error", "warn", "info", "debug"; returns 0 or -EINVAL. */
int pt_log_parse_level(const char *s, enum pt_log_level *out);
void pt_log(enum pt_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define pt_err(...)   pt_log(PT_LOG_ERR, __VA_ARGS__)
#define pt_warn(...)  pt_log(PT_LOG_WARN, __VA_ARGS__)
#define pt_info(...)  pt_log(PT_LOG_INFO, __VA_ARGS__)
#define pt_debug(...) pt_log(PT_LOG_DEBUG, __VA_ARGS__)

#endif
