/* SPDX-License-Identifier: GPL-2.0 */
/* Rendering of the daemon's state for pagetierctl: a table for people, JSON for scripts. */
#ifndef PAGETIER_STATUS_H
#define PAGETIER_STATUS_H

#include <stddef.h>
#include <stdio.h>

#include "context.h"
#include "memuse.h"

/*
 * Writes one row per context, then the totals and the host's line (@host: NULL or not
 * known, no host line). Pure: only formats what it is given.
 */
void pt_status_table(FILE *out, const struct pt_context *ctxs, size_t n,
		     const struct pt_host_mem *host);
void pt_status_json(FILE *out, const struct pt_context *ctxs, size_t n, const char *backend,
		    uint64_t bpf_unmatched, const struct pt_host_mem *host,
		    void (*more)(FILE *out, const void *arg), const void *more_arg);
/* Writes @s as a JSON string literal. */
void pt_json_string(FILE *out, const char *s);
/* Human size: "256.0M", "1.2G", "0". */
void pt_fmt_bytes(char *buf, size_t size, unsigned long long bytes);

#endif
