/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The HTTP side of the Prometheus metrics: libmicrohttpd serving GET /metrics on
 * metrics_listen, driven by pagetierd's own event loop. No thread of its own: MHD runs
 * with MHD_USE_EPOLL and no internal polling thread, its epoll descriptor sits in the
 * daemon's epoll set, and the loop calls pt_metrics_http_run() when that is readable or
 * pt_metrics_http_timeout() has passed. The body is rendered in that call, on the loop
 * thread, so it reads the manager's state without locks (metrics.h).
 */
#ifndef PAGETIER_METRICS_HTTP_H
#define PAGETIER_METRICS_HTTP_H

#include <stdio.h>

struct pt_metrics_http;

/* Writes the body of GET /metrics. */
typedef void (*pt_metrics_body_fn)(FILE *out, void *arg);

/*
 * Listens on @listen ("A.B.C.D:PORT" or "[IPV6]:PORT", as config.c checked it). 0, or a
 * negative errno with the reason logged (the address is taken, say).
 */
int pt_metrics_http_start(struct pt_metrics_http **out, const char *listen,
			  pt_metrics_body_fn body, void *arg);
/* The descriptor to watch for EPOLLIN. */
int pt_metrics_http_fd(const struct pt_metrics_http *h);
/* Milliseconds until pt_metrics_http_run() is due whatever happens, or -1: only on EPOLLIN. */
int pt_metrics_http_timeout(struct pt_metrics_http *h);
/* Accepts, reads, answers and times out connections, without blocking. */
void pt_metrics_http_run(struct pt_metrics_http *h);
void pt_metrics_http_stop(struct pt_metrics_http *h);

#endif
