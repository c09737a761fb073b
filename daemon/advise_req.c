// SPDX-License-Identifier: GPL-2.0
#include "advise_req.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct req_hdr {
	uint32_t magic;
	uint32_t version;
	int32_t advice;
	int32_t n;
	uint32_t cgdir_len;	/* padded, NUL included */
	uint32_t queue_cgdir_len;
	uint32_t use_queue;
	uint32_t pad;
};

struct req_list {
	int32_t pid;
	int32_t n;
	uint64_t start;
	uint32_t cgroup_len;	/* padded, NUL included */
	uint32_t has_pidfd;
};

static size_t str_room(const char *s)
{
	return ((s ? strlen(s) : 0) + 1 + 7) & ~(size_t)7;
}

size_t pt_advise_req_size(const char *cgdir, const struct pt_proc_ranges *set, int n,
			  const char *queue_cgdir)
{
	size_t sz = sizeof(struct req_hdr) + str_room(cgdir) + str_room(queue_cgdir);

	for (int i = 0; i < n; i++)
		sz += sizeof(struct req_list) + str_room(set[i].cgroup) +
		      (set[i].n > 0 ? (size_t)set[i].n : 0) * sizeof(struct pt_range);
	return sz;
}

static char *put_str(char *p, const char *s)
{
	size_t room = str_room(s);

	memset(p, 0, room);
	if (s)
		memcpy(p, s, strlen(s));
	return p + room;
}

int64_t pt_advise_req_encode(void *buf, size_t cap, const char *cgdir,
			     const struct pt_proc_ranges *set, int n, int advice, bool use_queue,
			     const char *queue_cgdir)
{
	struct req_hdr h = { .magic = PT_ADVISE_REQ_MAGIC, .version = PT_ADVISE_REQ_VERSION,
			     .advice = advice, .n = n, .cgdir_len = (uint32_t)str_room(cgdir),
			     .queue_cgdir_len = (uint32_t)str_room(queue_cgdir),
			     .use_queue = use_queue };
	char *p = buf;
	size_t sz;

	if (n < 0)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (set[i].n < 0)
			return -EINVAL;
	sz = pt_advise_req_size(cgdir, set, n, queue_cgdir);
	if (sz > cap || sz > PT_ADVISE_REQ_MAX)
		return -ENOSPC;
	memcpy(p, &h, sizeof(h));
	p = put_str(p + sizeof(h), cgdir);
	p = put_str(p, queue_cgdir);
	for (int i = 0; i < n; i++) {
		struct req_list l = { .pid = set[i].pid, .n = set[i].n, .start = set[i].start,
				      .cgroup_len = (uint32_t)str_room(set[i].cgroup),
				      .has_pidfd = set[i].pidfd > 0 };

		memcpy(p, &l, sizeof(l));
		p = put_str(p + sizeof(l), set[i].cgroup);
		if (set[i].n) {
			memcpy(p, set[i].r, (size_t)set[i].n * sizeof(struct pt_range));
			p += (size_t)set[i].n * sizeof(struct pt_range);
		}
	}
	return (int64_t)(p - (char *)buf);
}

/* A string of @room bytes at @p, within @end, terminated inside it: the string, or NULL. */
static const char *get_str(const char *p, const char *end, uint32_t room)
{
	if (room == 0 || room % 8 || room > (size_t)(end - p) || !memchr(p, '\0', room))
		return NULL;
	return p;
}

int pt_advise_req_decode(const void *buf, size_t len, struct pt_advise_req *out)
{
	const char *p = buf, *end = p + len;
	struct req_hdr h;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(h) || len > PT_ADVISE_REQ_MAX)
		return -EPROTO;
	memcpy(&h, p, sizeof(h));
	p += sizeof(h);
	if (h.magic != PT_ADVISE_REQ_MAGIC || h.version != PT_ADVISE_REQ_VERSION || h.n < 0 ||
	    (size_t)h.n > len / sizeof(struct req_list))
		return -EPROTO;
	out->advice = h.advice;
	out->use_queue = h.use_queue != 0;
	if (!(out->cgdir = get_str(p, end, h.cgdir_len)))
		return -EPROTO;
	p += h.cgdir_len;
	if (!(out->queue_cgdir = get_str(p, end, h.queue_cgdir_len)))
		return -EPROTO;
	p += h.queue_cgdir_len;
	out->set = calloc(h.n ? (size_t)h.n : 1, sizeof(*out->set));
	if (!out->set)
		return -ENOMEM;
	for (int i = 0; i < h.n; i++) {
		struct pt_proc_ranges *pr = &out->set[i];
		struct req_list l;

		if ((size_t)(end - p) < sizeof(l))
			goto bad;
		memcpy(&l, p, sizeof(l));
		p += sizeof(l);
		if (l.n < 0 || !(pr->cgroup = get_str(p, end, l.cgroup_len)))
			goto bad;
		p += l.cgroup_len;
		if ((size_t)l.n > (size_t)(end - p) / sizeof(struct pt_range))
			goto bad;
		pr->pid = l.pid;
		pr->start = l.start;
		pr->n = pr->cap = l.n;
		/* 8-byte aligned: the buffer is, and every part before is a multiple of 8. */
		pr->r = (struct pt_range *)(uintptr_t)p;
		p += (size_t)l.n * sizeof(struct pt_range);
		/* An empty string: no cgroup to check (the encoder's NULL). */
		if (!pr->cgroup[0])
			pr->cgroup = NULL;
		out->n_pidfds += l.has_pidfd != 0;
		pr->pidfd = l.has_pidfd ? -1 : 0;	/* -1: one is due (the caller's) */
		out->n = i + 1;
	}
	if (p != end)
		goto bad;
	if (!out->queue_cgdir[0])
		out->queue_cgdir = NULL;
	return 0;
bad:
	pt_advise_req_free(out);
	return -EPROTO;
}

void pt_advise_req_free(struct pt_advise_req *r)
{
	free(r->set);
	r->set = NULL;
	r->n = 0;
}
