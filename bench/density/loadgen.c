// SPDX-License-Identifier: GPL-2.0
/*
 * The density benchmark's load generator (bench/density/README.md): the critical service's
 * open-loop client and the noise client, in C.
 *
 * guest.py runs inside a 2-vCPU TCG guest, beside the servers it measures. Its clients were
 * Python threads, and with Senpai's controller they used 22-33 of the guest's 120
 * CPU-seconds per 60 s window: the benchmark measured its own load generator. This program
 * does the same work with a sixth of the user-space instructions per transaction, and the
 * fewest system calls and wake-ups a thread per connection allows (the figures: README);
 * guest.py keeps the statistics, the sweep and the report.
 *
 *   loadgen critical --redis-port P --http-port Q --rate R --duration S --db-items N
 *                    --web-files F [--workers 16] [--grace 30] [--db-value-size 4000]
 *                    [--web-size 16384] [--zipf-s 0.99] [--seed-db 11] [--seed-web 12]
 *                    [--mlock]
 *	One measuring window. Transaction i is due at start + i / R (start: now + 50 ms),
 *	for i < int(S * R): a redis GET c:<k> and an HTTP GET /f<j>.bin, k and j Zipf(s)
 *	over N and F items, both answers checked against value() (below). Prints one JSON
 *	object: {"completed": n, "failed": m, "latencies_ms": [...]}, completed + failed =
 *	int(S * R); a latency runs from when the transaction was due, not from when a worker
 *	took it (no coordinated omission). What has not completed G seconds after the last
 *	one was queued is counted failed, and the program exits without waiting for it.
 *
 *   loadgen noise --sizes COUNT:BYTES[,COUNT:BYTES...] [--sleep-ms 150] [--seed 7] [--mlock]
 *	The noise client, long-running: every sleep-ms one GET o:<i> of a random object from
 *	a random noise redis server (none until one is added). Commands on stdin, one a line:
 *	"add PORT" (one more server), "take" (prints {"latencies_ms": [...], "failed": n}, one
 *	line, of everything since the last take), "quit" (or end of input).
 *
 * --mlock locks the program's memory as guest.py locks its own: the load client stands for
 * another machine, and a refault of its code must not read as the service's latency.
 *
 * value(prefix, i, size) is guest.py's value(), what its LOAD_LUA stores and nginx serves:
 * prefix, i in decimal, ':', then "%08d;" of (i * 2654435761) % 10^8 repeated, cut to size.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif

#define IO_TIMEOUT_S	60		/* per socket call, as servers.HttpGet waits */
#define LINE_MAX_LEN	8192		/* a status, header or RESP line longer is an error */
#define VALUE_MAX	(64u << 20)	/* the largest value or body this client will take */
#define MAX_ITEMS	(1u << 26)	/* a Zipf table of 512 MiB: well past any data set */
#define MAX_GROUPS	64

static const char *cmd_name = "loadgen";

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cmd_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec ns_to_ts(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };

	return ts;
}

/* Until @due_ns on CLOCK_MONOTONIC: absolute, so that a late wake-up does not delay the next. */
static void sleep_until(int64_t due_ns)
{
	struct timespec ts = ns_to_ts(due_ns);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/*
 * xoshiro256** seeded through splitmix64: the keys follow the same distribution as the
 * Python client's random.Random, not the same sequence (nothing depends on the sequence).
 */
struct rng {
	uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/* Uniform in [0, 1): the top 53 bits, as random.random() has. */
static double rng_double(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n), n > 0, without modulo bias (rejection of the short last range). */
static uint64_t rng_below(struct rng *r, uint64_t n)
{
	uint64_t limit = UINT64_MAX - UINT64_MAX % n, x;

	do
		x = rng_next(r);
	while (x >= limit);
	return x % n;
}

/*
 * Item indices 0..n-1 with P(i) proportional to 1/(i+1)^s (a few hot keys, a long cold
 * tail): the cumulative weights, and a binary search for a uniform draw over their total,
 * as openloop.Zipf did.
 */
struct zipf {
	double *cum;
	size_t n;
};

static void zipf_init(struct zipf *z, size_t n, double s)
{
	double total = 0;

	z->cum = xmalloc(n * sizeof(*z->cum));
	z->n = n;
	for (size_t i = 0; i < n; i++) {
		total += 1.0 / pow((double)(i + 1), s);
		z->cum[i] = total;
	}
}

static uint32_t zipf_next(const struct zipf *z, struct rng *r)
{
	double u = rng_double(r) * z->cum[z->n - 1];
	size_t lo = 0, hi = z->n - 1;

	/* The first index whose cumulative weight reaches u (bisect_left). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (z->cum[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint32_t)lo;
}

/* guest.py's value(): what the servers hold for item @i, @size bytes into @dst. */
static void value(char *dst, const char *prefix, uint64_t i, size_t size)
{
	char head[64], pat[16];
	size_t off, hl, rest, done;

	hl = (size_t)snprintf(head, sizeof(head), "%s%" PRIu64 ":", prefix, i);
	snprintf(pat, sizeof(pat), "%08" PRIu64 ";", (uint64_t)(i * 2654435761ULL % 100000000ULL));
	off = hl < size ? hl : size;
	memcpy(dst, head, off);
	if (off == size)
		return;
	/*
	 * The pattern once, then what is written so far of it copied after itself: a dozen
	 * copies for 16 KiB rather than 1,800 of 9 bytes (under TCG every instruction of the
	 * client is emulated CPU taken from the servers it measures).
	 */
	rest = size - off;
	done = rest < 9 ? rest : 9;
	memcpy(dst + off, pat, done);
	for (; done < rest; done *= 2)
		memcpy(dst + off + done, dst + off, done < rest - done ? done : rest - done);
}

/* --- one TCP connection to 127.0.0.1 with a read buffer ------------------------------- */

struct conn {
	int fd;			/* -1: closed, opened again by the next request */
	int port;
	unsigned long answers;	/* answers read on it: a reused connection if > 0 */
	char *buf;
	size_t start, end;	/* unread bytes: buf[start..end) */
};

#define CONN_BUF (64u << 10)

static void conn_init(struct conn *c, int port)
{
	c->fd = -1;
	c->port = port;
	c->answers = 0;
	c->buf = xmalloc(CONN_BUF);
	c->start = c->end = 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->answers = 0;
	c->start = c->end = 0;
}

static int conn_open(struct conn *c)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)c->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;

	conn_close(c);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	/* SO_SNDTIMEO also bounds connect(): a server that never accepts is an error too. */
	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		conn_close(c);
		return -1;
	}
	return 0;
}

static int send_all(struct conn *c, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* More bytes into the buffer: > 0 read, 0 end of stream, < 0 error (errno). */
static ssize_t conn_fill(struct conn *c)
{
	ssize_t r;

	if (c->start == c->end) {
		c->start = c->end = 0;
	} else if (c->end == CONN_BUF) {
		memmove(c->buf, c->buf + c->start, c->end - c->start);
		c->end -= c->start;
		c->start = 0;
	}
	do
		r = recv(c->fd, c->buf + c->end, CONN_BUF - c->end, 0);
	while (r < 0 && errno == EINTR);
	if (r > 0)
		c->end += (size_t)r;
	return r;
}

enum { LINE_OK, LINE_CLOSED, LINE_ERR };

/*
 * One CRLF-terminated line, without its CRLF, NUL-terminated in the buffer (valid until the
 * next read). LINE_CLOSED: the peer closed or reset the connection before the line's first
 * byte, which on a reused HTTP connection means the server closed it while it was idle.
 */
static int read_line(struct conn *c, char **line, size_t *len)
{
	size_t scanned = 0;

	for (;;) {
		char *nl = memchr(c->buf + c->start + scanned, '\n', c->end - c->start - scanned);

		if (nl) {
			size_t n = (size_t)(nl - (c->buf + c->start));

			if (n == 0 || nl[-1] != '\r')
				return LINE_ERR;
			*line = c->buf + c->start;
			nl[-1] = '\0';
			*len = n - 1;
			c->start += n + 1;
			return LINE_OK;
		}
		scanned = c->end - c->start;
		if (scanned >= LINE_MAX_LEN)
			return LINE_ERR;
		size_t had = scanned;
		ssize_t r = conn_fill(c);

		if (r == 0 || (r < 0 && (errno == ECONNRESET || errno == EPIPE)))
			return had == 0 ? LINE_CLOSED : LINE_ERR;
		if (r < 0)
			return LINE_ERR;
		/* conn_fill may have moved the unread bytes to the start of the buffer. */
	}
}

static int read_exact(struct conn *c, char *dst, size_t n)
{
	size_t have = c->end - c->start;

	if (have > n)
		have = n;
	memcpy(dst, c->buf + c->start, have);
	c->start += have;
	dst += have;
	n -= have;
	while (n) {
		ssize_t r = recv(c->fd, dst, n, MSG_WAITALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		dst += r;
		n -= (size_t)r;
	}
	return 0;
}

struct buf {
	char *p;
	size_t len, cap;
};

static void buf_reserve(struct buf *b, size_t n)
{
	if (n > b->cap) {
		b->p = xrealloc(b->p, n);
		b->cap = n;
	}
}

/* A strict non-negative decimal (no sign, no spaces but trailing ones), < 2^62. */
static int parse_len(const char *s, long long *out)
{
	long long v = 0;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (*s - '0');
		if (v > (1LL << 62))
			return -1;
	}
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s)
		return -1;
	*out = v;
	return 0;
}

/* --- RESP: GET ------------------------------------------------------------------------ */

enum { RESP_OK, RESP_FAIL, RESP_BROKEN };

/*
 * GET @key over @c (opened if closed): RESP_OK with the value in @val; RESP_FAIL for a nil
 * or an error reply, the connection still in step; RESP_BROKEN for anything else, the
 * connection closed (the next request opens another).
 */
static int resp_get(struct conn *c, const char *key, struct buf *val)
{
	char req[128], *line;
	size_t klen = strlen(key), len;
	long long n;
	int rlen;

	if (c->fd < 0 && conn_open(c))
		return RESP_BROKEN;
	rlen = snprintf(req, sizeof(req), "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", klen, key);
	if (rlen < 0 || (size_t)rlen >= sizeof(req) || send_all(c, req, (size_t)rlen))
		goto broken;
	if (read_line(c, &line, &len) != LINE_OK)
		goto broken;
	switch (line[0]) {
	case '$':
		if (!strcmp(line + 1, "-1")) {
			c->answers++;
			return RESP_FAIL;
		}
		if (parse_len(line + 1, &n) || n > VALUE_MAX)
			goto broken;
		buf_reserve(val, (size_t)n + 2);
		if (read_exact(c, val->p, (size_t)n + 2) || val->p[n] != '\r' || val->p[n + 1] != '\n')
			goto broken;
		val->len = (size_t)n;
		c->answers++;
		return RESP_OK;
	case '-':	/* -ERR ...: a failed request, not a broken connection */
	case '+':
	case ':':
		c->answers++;
		return RESP_FAIL;
	default:	/* an array or garbage: out of step with the server */
		goto broken;
	}
broken:
	conn_close(c);
	return RESP_BROKEN;
}

/* --- HTTP/1.1: GET -------------------------------------------------------------------- */

/* Whether the comma-separated header value @v has the token @tok (case-insensitive). */
static int has_token(const char *v, const char *tok)
{
	size_t tl = strlen(tok);

	while (*v) {
		while (*v == ' ' || *v == '\t' || *v == ',')
			v++;
		const char *e = v;

		while (*e && *e != ',')
			e++;
		const char *t = e;

		while (t > v && (t[-1] == ' ' || t[-1] == '\t'))
			t--;
		if ((size_t)(t - v) == tl && !strncasecmp(v, tok, tl))
			return 1;
		v = e;
	}
	return 0;
}

/*
 * GET @path over @c: 0 with the body of a 200 answer in @body, -1 for anything else (the
 * connection then closed). The length comes from Content-Length, which nginx sends for a
 * static file; an answer without it (chunked) is an error, not something to parse here.
 * A reused connection the server closed while idle (nginx's keep-alive limits) is opened
 * again and the request sent once more, as servers.HttpGet does.
 */
static int http_get(struct conn *c, const char *path, struct buf *body)
{
	char req[256], *line;
	size_t len;
	long long clen = -1;
	int rlen, keep = 1, bad = 0;

	rlen = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
	if (rlen < 0 || (size_t)rlen >= sizeof(req))
		return -1;
	for (int attempt = 0;; attempt++) {
		int reused = c->fd >= 0 && c->answers > 0, r;

		if (c->fd < 0 && conn_open(c))
			return -1;
		if (send_all(c, req, (size_t)rlen)) {
			r = (errno == EPIPE || errno == ECONNRESET) ? LINE_CLOSED : LINE_ERR;
		} else {
			r = read_line(c, &line, &len);
		}
		if (r == LINE_OK)
			break;
		conn_close(c);
		if (r != LINE_CLOSED || !reused || attempt > 0)
			return -1;
	}
	/* "HTTP/1.1 200 OK": the status code, then a space (or nothing: no reason phrase). */
	if (strncmp(line, "HTTP/1.1 200", 12) || (line[12] != ' ' && line[12] != '\0'))
		bad = 1;
	for (;;) {
		char *colon, *v;

		if (read_line(c, &line, &len) != LINE_OK) {
			conn_close(c);
			return -1;
		}
		if (len == 0)
			break;
		colon = strchr(line, ':');
		if (!colon) {
			bad = 1;
			continue;
		}
		*colon = '\0';
		for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
			;
		if (!strcasecmp(line, "content-length")) {
			long long n;

			if (parse_len(v, &n) || (clen >= 0 && n != clen))
				bad = 1;
			else
				clen = n;
		} else if (!strcasecmp(line, "connection")) {
			if (has_token(v, "close"))
				keep = 0;
		} else if (!strcasecmp(line, "transfer-encoding")) {
			bad = 1;	/* chunked: not this client's */
		}
	}
	if (bad || clen < 0 || clen > VALUE_MAX) {
		conn_close(c);
		return -1;
	}
	buf_reserve(body, (size_t)clen);
	if (read_exact(c, body->p, (size_t)clen)) {
		conn_close(c);
		return -1;
	}
	body->len = (size_t)clen;
	c->answers++;
	if (!keep)
		conn_close(c);
	return 0;
}

/* --- command line --------------------------------------------------------------------- */

enum opt_type { OPT_INT, OPT_DBL, OPT_STR, OPT_FLAG };

struct opt {
	const char *name;
	enum opt_type type;
	int required;
	void *dst;		/* long long, double, const char * or int */
	double min, max;	/* for OPT_INT and OPT_DBL */
	int seen;
};

#define OPT(n, t, req, d, lo, hi) \
	{ .name = (n), .type = (t), .required = (req), .dst = (d), .min = (lo), .max = (hi) }

static void parse_opts(int argc, char **argv, struct opt *opts)
{
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i], *val = NULL, *eq;
		struct opt *o;
		size_t nl;

		if (strncmp(arg, "--", 2))
			die("unexpected argument '%s' (options are --name VALUE)", arg);
		eq = strchr(arg, '=');
		nl = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
		for (o = opts; o->name; o++)
			if (strlen(o->name) == nl && !strncmp(o->name, arg + 2, nl))
				break;
		if (!o->name)
			die("unknown option '%.*s'", (int)nl + 2, arg);
		if (o->seen++)
			die("--%s given twice", o->name);
		if (o->type == OPT_FLAG) {
			if (eq)
				die("--%s takes no value", o->name);
			*(int *)o->dst = 1;
			continue;
		}
		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			die("--%s needs a value", o->name);
		if (o->type == OPT_STR) {
			if (!*val)
				die("--%s: empty value", o->name);
			*(const char **)o->dst = val;
			continue;
		}
		char *end;
		double d;

		errno = 0;
		if (o->type == OPT_INT) {
			long long v = strtoll(val, &end, 10);

			d = (double)v;
			if (errno || end == val || *end)
				die("--%s: '%s' is not an integer", o->name, val);
			if (d < o->min || d > o->max)
				die("--%s: %s is out of range [%.0f, %.0f]", o->name, val, o->min,
				    o->max);
			*(long long *)o->dst = v;
		} else {
			d = strtod(val, &end);
			if (errno || end == val || *end || !isfinite(d))
				die("--%s: '%s' is not a number", o->name, val);
			if (d < o->min || d > o->max)
				die("--%s: %s is out of range [%g, %g]", o->name, val, o->min, o->max);
			*(double *)o->dst = d;
		}
	}
	for (struct opt *o = opts; o->name; o++)
		if (o->required && !o->seen)
			die("--%s is required", o->name);
}

static void lock_memory(void)
{
	if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT))
		die("--mlock: mlockall: %s", strerror(errno));
}

static void write_stdout_or_die(void)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: writing the results: %s\n", cmd_name, strerror(errno));
		exit(1);
	}
}

/* --- critical ------------------------------------------------------------------------- */

struct job {
	int64_t due_ns;
	uint32_t db, web;
};

struct crit {
	long long redis_port, http_port, workers, db_items, db_size, web_files, web_size;
	long long seed_db, seed_web;
	double rate, duration, grace, zipf_s;

	struct job *jobs;
	long n;				/* int(duration * rate) */

	pthread_mutex_t lock;
	pthread_cond_t work;		/* a job queued, or the last one */
	pthread_cond_t all_done;	/* every job finished */
	long queued, next, finished, completed, failed;
	int dispatched;			/* every job queued */
	int closed;			/* the results were taken: later answers are not counted */
	double *lat_ms;			/* completed ones, in the order they completed */
};

struct worker {
	struct crit *cr;
	struct conn redis, http;
	struct buf val, body;
	char *expect_db, *expect_web;
};

static int transaction(struct worker *w, const struct job *j)
{
	struct crit *cr = w->cr;
	char key[32];

	snprintf(key, sizeof(key), "c:%" PRIu32, j->db);
	if (resp_get(&w->redis, key, &w->val) != RESP_OK || w->val.len != (size_t)cr->db_size)
		return 0;
	value(w->expect_db, "c:", j->db, (size_t)cr->db_size);
	if (memcmp(w->val.p, w->expect_db, (size_t)cr->db_size))
		return 0;
	snprintf(key, sizeof(key), "/f%" PRIu32 ".bin", j->web);
	if (http_get(&w->http, key, &w->body) || w->body.len != (size_t)cr->web_size)
		return 0;
	value(w->expect_web, "f", j->web, (size_t)cr->web_size);
	return !memcmp(w->body.p, w->expect_web, (size_t)cr->web_size);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct crit *cr = w->cr;

	for (;;) {
		const struct job *j;
		int ok;
		int64_t done;

		pthread_mutex_lock(&cr->lock);
		while (cr->next == cr->queued && !cr->dispatched)
			pthread_cond_wait(&cr->work, &cr->lock);
		if (cr->next == cr->queued) {
			pthread_mutex_unlock(&cr->lock);
			return NULL;
		}
		j = &cr->jobs[cr->next++];
		pthread_mutex_unlock(&cr->lock);

		ok = transaction(w, j);
		done = now_ns();

		pthread_mutex_lock(&cr->lock);
		if (!cr->closed) {
			if (ok)
				cr->lat_ms[cr->completed++] = (double)(done - j->due_ns) / 1e6;
			else
				cr->failed++;
			if (++cr->finished == cr->n)
				pthread_cond_signal(&cr->all_done);
		}
		pthread_mutex_unlock(&cr->lock);
	}
}

static int cmd_critical(int argc, char **argv)
{
	struct crit cr = { .workers = 16, .grace = 30, .db_size = 4000, .web_size = 16384,
			   .zipf_s = 0.99, .seed_db = 11, .seed_web = 12 };
	int mlock_flag = 0;
	struct opt opts[] = {
		OPT("redis-port", OPT_INT, 1, &cr.redis_port, 1, 65535),
		OPT("http-port", OPT_INT, 1, &cr.http_port, 1, 65535),
		OPT("rate", OPT_DBL, 1, &cr.rate, 1e-3, 1e6),
		OPT("duration", OPT_DBL, 1, &cr.duration, 1e-3, 1e6),
		OPT("workers", OPT_INT, 0, &cr.workers, 1, 4096),
		OPT("grace", OPT_DBL, 0, &cr.grace, 0, 86400),
		OPT("db-items", OPT_INT, 1, &cr.db_items, 1, MAX_ITEMS),
		OPT("db-value-size", OPT_INT, 0, &cr.db_size, 1, VALUE_MAX),
		OPT("web-files", OPT_INT, 1, &cr.web_files, 1, MAX_ITEMS),
		OPT("web-size", OPT_INT, 0, &cr.web_size, 1, VALUE_MAX),
		OPT("zipf-s", OPT_DBL, 0, &cr.zipf_s, 0, 10),
		OPT("seed-db", OPT_INT, 0, &cr.seed_db, 0, 9.2e18),
		OPT("seed-web", OPT_INT, 0, &cr.seed_web, 0, 9.2e18),
		OPT("mlock", OPT_FLAG, 0, &mlock_flag, 0, 0),
		{ .name = NULL },
	};
	struct zipf zdb, zweb;
	struct rng rdb, rweb;
	struct worker *ws;
	pthread_t *tids;
	pthread_condattr_t ca;
	int64_t start, deadline;
	double n_exact;
	long unfinished;
	int all_finished;

	parse_opts(argc, argv, opts);
	n_exact = cr.duration * cr.rate;
	if (n_exact > 1e8)
		die("--duration x --rate: %.0f requests, more than this client keeps (1e8)",
		    n_exact);
	cr.n = (long)n_exact;	/* int(duration * rate), as the Python client counted them */
	if (mlock_flag)
		lock_memory();
	signal(SIGPIPE, SIG_IGN);

	/*
	 * The keys of every request, drawn before the window: the dispatcher then only
	 * sleeps and queues, and a slow draw cannot make a request late.
	 */
	zipf_init(&zdb, (size_t)cr.db_items, cr.zipf_s);
	zipf_init(&zweb, (size_t)cr.web_files, cr.zipf_s);
	rng_seed(&rdb, (uint64_t)cr.seed_db);
	rng_seed(&rweb, (uint64_t)cr.seed_web);
	cr.jobs = xmalloc((size_t)cr.n * sizeof(*cr.jobs));
	cr.lat_ms = xmalloc((size_t)cr.n * sizeof(*cr.lat_ms));
	for (long i = 0; i < cr.n; i++) {
		cr.jobs[i].db = zipf_next(&zdb, &rdb);
		cr.jobs[i].web = zipf_next(&zweb, &rweb);
	}

	pthread_mutex_init(&cr.lock, NULL);
	pthread_cond_init(&cr.work, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cr.all_done, &ca);

	ws = xmalloc((size_t)cr.workers * sizeof(*ws));
	tids = xmalloc((size_t)cr.workers * sizeof(*tids));
	for (long long t = 0; t < cr.workers; t++) {
		struct worker *w = &ws[t];
		int err;

		memset(w, 0, sizeof(*w));
		w->cr = &cr;
		conn_init(&w->redis, (int)cr.redis_port);
		conn_init(&w->http, (int)cr.http_port);
		w->expect_db = xmalloc((size_t)cr.db_size);
		w->expect_web = xmalloc((size_t)cr.web_size);
		err = pthread_create(&tids[t], NULL, worker_main, w);
		if (err)
			die("pthread_create: %s", strerror(err));
	}

	/*
	 * Open loop: request i is due at start + i / rate whatever happened to the ones
	 * before it. When every worker is busy a due request waits in the queue, and its
	 * latency still counts from when it was due (no coordinated omission: a stalled
	 * server is charged for every request it held back).
	 */
	start = now_ns() + 50 * 1000000LL;
	for (long i = 0; i < cr.n; i++) {
		cr.jobs[i].due_ns = start + (int64_t)((double)i * 1e9 / cr.rate);
		sleep_until(cr.jobs[i].due_ns);
		pthread_mutex_lock(&cr.lock);
		cr.queued = i + 1;
		pthread_mutex_unlock(&cr.lock);
		pthread_cond_signal(&cr.work);
	}

	/* What has not completed @grace seconds after the last was queued has failed. */
	deadline = now_ns() + (int64_t)(cr.grace * 1e9);
	pthread_mutex_lock(&cr.lock);
	cr.dispatched = 1;
	pthread_cond_broadcast(&cr.work);
	while (cr.finished < cr.n) {
		struct timespec ts = ns_to_ts(deadline);

		if (pthread_cond_timedwait(&cr.all_done, &cr.lock, &ts) == ETIMEDOUT)
			break;
	}
	cr.closed = 1;
	all_finished = cr.finished == cr.n;
	pthread_mutex_unlock(&cr.lock);

	unfinished = cr.n - cr.completed - cr.failed;
	printf("{\"completed\": %ld, \"failed\": %ld, \"latencies_ms\": [", cr.completed,
	       cr.failed + unfinished);
	for (long i = 0; i < cr.completed; i++)
		printf(i ? ", %.2f" : "%.2f", cr.lat_ms[i]);
	printf("]}\n");
	write_stdout_or_die();

	/*
	 * Workers still waiting on a stalled server (up to IO_TIMEOUT_S) are not waited
	 * for: their requests are counted, and exit() ends them.
	 */
	if (!all_finished)
		exit(0);
	for (long long t = 0; t < cr.workers; t++) {
		struct worker *w = &ws[t];

		pthread_join(tids[t], NULL);
		conn_close(&w->redis);
		conn_close(&w->http);
		free(w->redis.buf);
		free(w->http.buf);
		free(w->val.p);
		free(w->body.p);
		free(w->expect_db);
		free(w->expect_web);
	}
	free(ws);
	free(tids);
	free(cr.jobs);
	free(cr.lat_ms);
	free(zdb.cum);
	free(zweb.cum);
	return 0;
}

/* --- noise ---------------------------------------------------------------------------- */

struct noise_server {
	struct conn c;
};

struct noise {
	long long sleep_ms, seed;
	long long counts[MAX_GROUPS], sizes[MAX_GROUPS];
	int groups;
	uint64_t objects;		/* the sum of counts: o:0 .. o:objects-1 */

	pthread_mutex_t lock;		/* the servers and the results, shared with stdin */
	struct noise_server **servers;	/* each its own allocation: stable while it is used */
	size_t nservers;
	double *lat_ms;
	size_t nlat, caplat;
	long failed;
};

static void parse_sizes(struct noise *ns, const char *spec)
{
	const char *p = spec;

	ns->groups = 0;
	ns->objects = 0;
	while (*p) {
		char *end;
		long long count, size;

		if (ns->groups == MAX_GROUPS)
			die("--sizes: more than %d groups", MAX_GROUPS);
		errno = 0;
		count = strtoll(p, &end, 10);
		if (errno || end == p || *end != ':' || count < 1 || count > MAX_ITEMS)
			die("--sizes: '%s' is not COUNT:BYTES[,COUNT:BYTES...] (count 1..%u)", spec,
			    MAX_ITEMS);
		p = end + 1;
		size = strtoll(p, &end, 10);
		if (errno || end == p || (*end && *end != ',') || size < 1 || size > VALUE_MAX)
			die("--sizes: '%s' is not COUNT:BYTES[,COUNT:BYTES...] (bytes 1..%u)", spec,
			    VALUE_MAX);
		ns->counts[ns->groups] = count;
		ns->sizes[ns->groups++] = size;
		ns->objects += (uint64_t)count;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			die("--sizes: '%s' ends with a comma", spec);
	}
	if (!ns->groups)
		die("--sizes: empty");
}

/* Object @i's size: the groups numbered on, in order (guest.py's noise_sizes()). */
static size_t object_size(const struct noise *ns, uint64_t i)
{
	for (int g = 0; g < ns->groups; g++) {
		if (i < (uint64_t)ns->counts[g])
			return (size_t)ns->sizes[g];
		i -= (uint64_t)ns->counts[g];
	}
	return 0;	/* not reached: i < objects */
}

static void *noise_main(void *arg)
{
	struct noise *ns = arg;
	struct rng r;
	struct buf val = { 0 };

	rng_seed(&r, (uint64_t)ns->seed);
	for (;;) {
		struct noise_server *s = NULL;

		pthread_mutex_lock(&ns->lock);
		if (ns->nservers)
			s = ns->servers[rng_below(&r, ns->nservers)];
		pthread_mutex_unlock(&ns->lock);
		if (s) {
			uint64_t i = rng_below(&r, ns->objects);
			size_t size = object_size(ns, i);
			char key[32], head[32];
			int64_t t0 = now_ns(), t1;
			int hl, ok;

			snprintf(key, sizeof(key), "o:%" PRIu64, i);
			hl = snprintf(head, sizeof(head), "o:%" PRIu64 ":", i);
			ok = resp_get(&s->c, key, &val) == RESP_OK && val.len == size &&
			     size >= (size_t)hl && !memcmp(val.p, head, (size_t)hl);
			t1 = now_ns();
			pthread_mutex_lock(&ns->lock);
			if (ok) {
				if (ns->nlat == ns->caplat) {
					ns->caplat = ns->caplat ? 2 * ns->caplat : 1024;
					ns->lat_ms = xrealloc(ns->lat_ms,
							      ns->caplat * sizeof(*ns->lat_ms));
				}
				ns->lat_ms[ns->nlat++] = (double)(t1 - t0) / 1e6;
			} else {
				ns->failed++;
			}
			pthread_mutex_unlock(&ns->lock);
		}
		/*
		 * Then the sleep, whatever happened (and with no server yet): the noise
		 * load is one request per sleep-ms whatever the number of servers.
		 */
		sleep_until(now_ns() + ns->sleep_ms * 1000000LL);
	}
	return NULL;
}

static void noise_take(struct noise *ns)
{
	double *lat;
	size_t n;
	long failed;

	pthread_mutex_lock(&ns->lock);
	lat = ns->lat_ms;
	n = ns->nlat;
	failed = ns->failed;
	ns->lat_ms = NULL;
	ns->nlat = ns->caplat = 0;
	ns->failed = 0;
	pthread_mutex_unlock(&ns->lock);

	printf("{\"latencies_ms\": [");
	for (size_t i = 0; i < n; i++)
		printf(i ? ", %.3f" : "%.3f", lat[i]);
	printf("], \"failed\": %ld}\n", failed);
	write_stdout_or_die();
	free(lat);
}

static int cmd_noise(int argc, char **argv)
{
	struct noise ns = { .sleep_ms = 150, .seed = 7 };
	const char *sizes = NULL;
	int mlock_flag = 0, err;
	struct opt opts[] = {
		OPT("sizes", OPT_STR, 1, &sizes, 0, 0),
		OPT("sleep-ms", OPT_INT, 0, &ns.sleep_ms, 0, 3600000),
		OPT("seed", OPT_INT, 0, &ns.seed, 0, 9.2e18),
		OPT("mlock", OPT_FLAG, 0, &mlock_flag, 0, 0),
		{ .name = NULL },
	};
	char line[256];
	pthread_t tid;

	parse_opts(argc, argv, opts);
	parse_sizes(&ns, sizes);
	if (mlock_flag)
		lock_memory();
	signal(SIGPIPE, SIG_IGN);
	pthread_mutex_init(&ns.lock, NULL);
	err = pthread_create(&tid, NULL, noise_main, &ns);
	if (err)
		die("pthread_create: %s", strerror(err));

	while (fgets(line, sizeof(line), stdin)) {
		char *nl = strchr(line, '\n'), *end;
		long port;

		if (!nl && !feof(stdin))
			die("noise: a command longer than %zu bytes", sizeof(line) - 2);
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0])
			continue;
		if (!strcmp(line, "take")) {
			noise_take(&ns);
		} else if (!strcmp(line, "quit")) {
			break;
		} else if (!strncmp(line, "add ", 4)) {
			struct noise_server *s;

			errno = 0;
			port = strtol(line + 4, &end, 10);
			if (errno || end == line + 4 || *end || port < 1 || port > 65535)
				die("noise: 'add %s': not a port", line + 4);
			s = xmalloc(sizeof(*s));
			conn_init(&s->c, (int)port);
			pthread_mutex_lock(&ns.lock);
			ns.servers = xrealloc(ns.servers, (ns.nservers + 1) * sizeof(*ns.servers));
			ns.servers[ns.nservers++] = s;
			pthread_mutex_unlock(&ns.lock);
		} else {
			die("noise: unknown command '%s' (add PORT, take, quit)", line);
		}
	}
	/* The noise thread may be in a request: exit() ends it, nothing to hand back. */
	exit(0);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: loadgen critical --redis-port P --http-port Q --rate R --duration S\n"
		"                        --db-items N --web-files F [--workers 16] [--grace 30]\n"
		"                        [--db-value-size 4000] [--web-size 16384] [--zipf-s 0.99]\n"
		"                        [--seed-db 11] [--seed-web 12] [--mlock]\n"
		"       loadgen noise --sizes COUNT:BYTES[,...] [--sleep-ms 150] [--seed 7] [--mlock]\n"
		"               (stdin: add PORT | take | quit)\n"
		"The density benchmark's load clients (bench/density/README.md).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "critical")) {
		cmd_name = "loadgen critical";
		return cmd_critical(argc - 2, argv + 2);
	}
	if (!strcmp(argv[1], "noise")) {
		cmd_name = "loadgen noise";
		return cmd_noise(argc - 2, argv + 2);
	}
	fprintf(stderr, "loadgen: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
