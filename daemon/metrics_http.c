// SPDX-License-Identifier: GPL-2.0
#include "metrics_http.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "config.h"
#include "log.h"

/* A scraper and a person with curl at once, and room: more wait in the backlog. */
#define PT_HTTP_CONNECTIONS	16
/* A connection idle this long is closed (a client that stalls holds no slot for long). */
#define PT_HTTP_TIMEOUT_S	10

struct pt_metrics_http {
	struct MHD_Daemon *mhd;
	int fd;
	pt_metrics_body_fn body;
	void *arg;
};

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	pt_warn("metrics: %s", msg);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status, const char *type,
			     struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;	/* out of memory: MHD closes the connection */
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned int status,
				  const char *text)
{
	return reply(conn, status, "text/plain; charset=utf-8",
		     MHD_create_response_from_buffer(strlen(text), (void *)text,
						     MHD_RESPMEM_PERSISTENT));
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct pt_metrics_http *h = cls;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (strcmp(url, "/") == 0)
		return reply_text(conn, MHD_HTTP_OK, "pagetierd: Prometheus metrics at /metrics\n");
	if (strcmp(url, "/metrics"))
		return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
	out = open_memstream(&buf, &len);
	if (!out)
		return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	h->body(out, h->arg);
	if (fclose(out)) {
		free(buf);
		return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	/* MHD frees buf with free() once sent. */
	return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
		     MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE));
}

int pt_metrics_http_start(struct pt_metrics_http **out, const char *listen,
			  pt_metrics_body_fn body, void *arg)
{
	const union MHD_DaemonInfo *info;
	struct pt_metrics_http *h;
	struct sockaddr_storage ss;
	unsigned int flags;
	uint16_t port;
	char why[256];
	socklen_t sl;
	int rc;

	*out = NULL;
	if (pt_parse_listen(listen, &ss, &sl, why, sizeof(why))) {
		pt_err("metrics: metrics_listen %s", why);
		return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->body = body;
	h->arg = arg;
	flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
	/* SOCK_ADDR says where; the port given too is only for MHD's messages. */
	port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
						((struct sockaddr_in *)&ss)->sin_port);
	errno = 0;
	h->mhd = MHD_start_daemon(flags, port, NULL, NULL, answer, h,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)PT_HTTP_CONNECTIONS,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)PT_HTTP_TIMEOUT_S,
				  MHD_OPTION_END);
	if (!h->mhd) {
		rc = errno ? -errno : -EIO;
		pt_err("metrics: cannot listen on %s (%s): no metrics served", listen,
		       strerror(-rc));
		free(h);
		return rc;
	}
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info || info->epoll_fd < 0) {
		pt_err("metrics: libmicrohttpd has no epoll descriptor: no metrics served");
		MHD_stop_daemon(h->mhd);
		free(h);
		return -EIO;
	}
	h->fd = info->epoll_fd;
	*out = h;
	return 0;
}

int pt_metrics_http_fd(const struct pt_metrics_http *h)
{
	return h->fd;
}

int pt_metrics_http_timeout(struct pt_metrics_http *h)
{
	MHD_UNSIGNED_LONG_LONG t;

	if (MHD_get_timeout(h->mhd, &t) != MHD_YES)
		return -1;
	return t > INT_MAX ? INT_MAX : (int)t;
}

void pt_metrics_http_run(struct pt_metrics_http *h)
{
	MHD_run(h->mhd);
}

void pt_metrics_http_stop(struct pt_metrics_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->mhd);
	free(h);
}
