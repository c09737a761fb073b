// SPDX-License-Identifier: GPL-2.0
#include "scanner.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/ioctl.h>

#include "cgroup.h"
#include "grow.h"
#include "pidfd.h"
#include "pagetier.h"

#define PT_PAGE_SHIFT 12
/* pagemap entries read per pread: 512 KiB of entries, 256 MiB of address space. */
#define PT_PM_BATCH 65536

const char *pt_scanner_name(enum pt_scanner_kind kind)
{
	return kind == PT_SCANNER_KMOD ? "pagetier.ko accessed-bit scanner" :
					 "fallback (clear_refs, pagemap soft-dirty, smaps)";
}

void pt_proc_scan_free(struct pt_proc_scan *ps)
{
	pt_pidfd_close(ps->pidfd);
	ps->pidfd = 0;
	free(ps->chunks);
	ps->chunks = NULL;
	ps->n = ps->cap = 0;
}

static struct pt_chunk_scan *chunk_at(struct pt_proc_scan *out, uint64_t addr)
{
	if (out->n && out->chunks[out->n - 1].addr == addr)
		return &out->chunks[out->n - 1];
	if (out->n == out->cap) {
		size_t cap = out->cap;

		if (cap >= UINT32_MAX / 2 ||
		    pt_grow((void **)&out->chunks, &cap, (size_t)out->n + 1, sizeof(*out->chunks)))
			return NULL;
		out->cap = (uint32_t)cap;
	}
	memset(&out->chunks[out->n], 0, sizeof(out->chunks[0]));
	out->chunks[out->n].addr = addr;
	return &out->chunks[out->n++];
}

int pt_fold_pagemap(const uint64_t *pm, uint64_t n, uint64_t start, unsigned int chunk_shift,
		    bool read_referenced, struct pt_proc_scan *out)
{
	uint64_t mask = ~((1ULL << chunk_shift) - 1);

	for (uint64_t i = 0; i < n; i++) {
		uint64_t addr = start + (i << PT_PAGE_SHIFT);
		bool present = pm[i] & PT_PM_PRESENT, swapped = pm[i] & PT_PM_SWAPPED;
		struct pt_chunk_scan *c;

		if (!present && !swapped)
			continue;	/* never touched: nothing to track */
		c = chunk_at(out, addr & mask);
		if (!c)
			return -ENOMEM;
		c->present += present;
		c->swapped += swapped;
		if (present && ((pm[i] & PT_PM_SOFT_DIRTY) || read_referenced))
			c->accessed++;
	}
	return 0;
}

/* Bits set in [from, to) of @bm & @and (@and NULL: of @bm alone; @bm NULL: none). */
static uint32_t count_bits(const uint64_t *bm, const uint64_t *and, uint64_t from, uint64_t to)
{
	uint32_t n = 0;

	if (!bm)
		return 0;
	while (from < to) {
		uint64_t w = bm[from / 64], take = 64 - from % 64;

		if (and)
			w &= and[from / 64];
		w >>= from % 64;
		if (take > to - from)
			take = to - from;
		if (take < 64)
			w &= (1ULL << take) - 1;
		n += (uint32_t)__builtin_popcountll(w);
		from += take;
	}
	return n;
}

/*
 * Chunk by chunk, with population counts: the page-by-page loop this replaces was the
 * daemon's costliest function once the bitmaps were no longer cleared whole.
 */
int pt_fold_bitmaps(const uint64_t *accessed, const uint64_t *present, const uint64_t *swapped,
		    uint64_t npages, uint64_t start, unsigned int chunk_shift,
		    struct pt_proc_scan *out)
{
	uint64_t mask = ~((1ULL << chunk_shift) - 1);

	for (uint64_t i = 0, next; i < npages; i = next) {
		uint64_t chunk = (start + (i << PT_PAGE_SHIFT)) & mask;
		uint32_t p, sw;
		struct pt_chunk_scan *c;

		/* The first page of the next chunk (chunks of at least a page). */
		next = (chunk + (1ULL << chunk_shift) - start) >> PT_PAGE_SHIFT;
		if (next > npages || next <= i)
			next = next <= i ? i + 1 : npages;
		p = count_bits(present, NULL, i, next);
		sw = count_bits(swapped, NULL, i, next);
		if (!p && !sw)
			continue;
		c = chunk_at(out, chunk);
		if (!c)
			return -ENOMEM;
		c->present += p;
		c->swapped += sw;
		c->accessed += count_bits(accessed, present, i, next);
	}
	return 0;
}

/*
 * What scans cover: private anonymous memory and shared memory (what a container's timers
 * touch of its shared buffers must stay resident while it is idle, like their private
 * memory).
 */
#define PT_SCANNED_KINDS (PT_KIND_ANON | PT_KIND_SHMEM)

/* The module's scanner: exact accessed bits per page (and per THP), cleared as it goes. */
static int scan_kmod(int fd, pid_t pid, unsigned int chunk_shift, struct pt_proc_scan *out)
{
	const uint64_t words = PAGETIER_SCAN_DEFAULT_PAGES / 64;
	uint64_t *acc = NULL, *pres = NULL, *swp = NULL;
	struct pt_maps_reader maps;
	enum pt_map_kind kind;
	struct pt_range r;
	int rc;

	rc = pt_maps_open(&maps, "/proc", pid, PT_SCANNED_KINDS, 0);
	if (rc)
		return rc;
	acc = malloc(words * 8);
	pres = malloc(words * 8);
	swp = malloc(words * 8);
	if (!acc || !pres || !swp) {
		rc = -ENOMEM;
		goto out;
	}
	while (!rc && pt_maps_next(&maps, &r, &kind) == 1) {
		for (uint64_t off = 0; off < r.len && !rc;
		     off += PAGETIER_SCAN_DEFAULT_PAGES << PT_PAGE_SHIFT) {
			struct pagetier_scan sc = {
				.size = sizeof(sc),
				.flags = PAGETIER_SCAN_CLEAR | PAGETIER_SCAN_FLUSH_TLB,
				.pid = pid,
				.start = r.start + off,
				.len = r.len - off,
				.accessed_bitmap = (uintptr_t)acc,
				.present_bitmap = (uintptr_t)pres,
				.swapped_bitmap = (uintptr_t)swp,
			};
			uint64_t used;

			if (sc.len > PAGETIER_SCAN_DEFAULT_PAGES << PT_PAGE_SHIFT)
				sc.len = PAGETIER_SCAN_DEFAULT_PAGES << PT_PAGE_SHIFT;
			/*
			 * Only the words this range's bits fall in: the module writes and
			 * pt_fold_bitmaps() reads no others. Zeroing all 3 x 32 KiB for each of a
			 * process's many small mappings was a fifth of pagetierd's CPU time in the
			 * density benchmark (perf, 8 noise containers).
			 */
			used = (((sc.len >> PT_PAGE_SHIFT) + 63) / 64) * 8;
			memset(acc, 0, used);
			memset(pres, 0, used);
			memset(swp, 0, used);
			/* The module bounds its work per call; resume until the range is done. */
			do {
				if (ioctl(fd, PAGETIER_IOC_SCAN, &sc)) {
					/* unmapped meanwhile: EINVAL/ENOMEM for the range only */
					rc = errno == ESRCH ? -ESRCH : 0;
					break;
				}
			} while (sc.next_addr < sc.start + sc.len);
			if (!rc)
				rc = pt_fold_bitmaps(acc, pres, swp, sc.len >> PT_PAGE_SHIFT,
						     sc.start, chunk_shift, out);
		}
	}
out:
	pt_maps_close(&maps);
	free(acc);
	free(pres);
	free(swp);
	return rc;
}

int pt_smaps_referenced(const char *text,
			void (*fn)(uint64_t start, uint64_t end, uint64_t ref_kb, void *arg),
			void *arg)
{
	uint64_t start = 0, end = 0, kb;
	bool have = false;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		uint64_t s, e;

		if (sscanf(l, "%" SCNx64 "-%" SCNx64 " ", &s, &e) == 2 && e > s &&
		    strchr(l, ' ') && (size_t)(strchr(l, ' ') - l) < 40) {
			start = s;
			end = e;
			have = true;
		} else if (have && sscanf(l, "Referenced: %" SCNu64 " kB", &kb) == 1) {
			fn(start, end, kb, arg);
			have = false;
		}
	}
	return 0;
}

/* Mappings whose reads the fallback cannot place (Referenced > what soft-dirty explains). */
struct ref_list {
	struct { uint64_t start, end, kb; } *m;
	size_t n, cap;
};

static void add_ref(uint64_t start, uint64_t end, uint64_t kb, void *arg)
{
	struct ref_list *rl = arg;

	if (!kb)
		return;
	/* On failure, under-reporting reads only makes the fallback less eager. */
	if (pt_grow((void **)&rl->m, &rl->cap, rl->n + 1, sizeof(*rl->m)))
		return;
	rl->m[rl->n].start = start;
	rl->m[rl->n].end = end;
	rl->m[rl->n].kb = kb;
	rl->n++;
}

static uint64_t referenced_kb(const struct ref_list *rl, uint64_t start)
{
	for (size_t i = 0; i < rl->n; i++)
		if (rl->m[i].start == start)
			return rl->m[i].kb;
	return 0;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	if (write(fd, s, strlen(s)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/*
 * A process's smaps, read whole into a buffer each scanning thread keeps and grows to the
 * largest file it has seen (up to PT_SMAPS_MAX, beyond which the text is cut): a fresh
 * buffer of megabytes per scan would be mapped, populated and locked (the daemon runs
 * under mlockall), then unmapped, at every scan of every process. A buffer grown past
 * PT_SMAPS_KEEP for a process with very many mappings is given back after its scan.
 */
#define PT_SMAPS_FIRST	(256U << 10)
#define PT_SMAPS_KEEP	(4U << 20)
#define PT_SMAPS_MAX	(64U << 20)

struct smaps_buf {
	char *text;
	size_t cap;
};

static pthread_key_t smaps_key;
static bool smaps_key_ok;
static pthread_once_t smaps_once = PTHREAD_ONCE_INIT;

static void smaps_buf_free(void *p)
{
	struct smaps_buf *b = p;

	free(b->text);
	free(b);
}

static void smaps_key_init(void)
{
	/* Without a key no buffer can be kept: the fallback's scans fail with -ENOMEM. */
	smaps_key_ok = !pthread_key_create(&smaps_key, smaps_buf_free);
}

/* The calling thread's buffer, or NULL if none could be kept. */
static struct smaps_buf *thread_smaps_buf(void)
{
	struct smaps_buf *b;

	pthread_once(&smaps_once, smaps_key_init);
	if (!smaps_key_ok)
		return NULL;
	b = pthread_getspecific(smaps_key);
	if (!b && (b = calloc(1, sizeof(*b))) && pthread_setspecific(smaps_key, b)) {
		free(b);
		b = NULL;
	}
	return b;
}

static bool smaps_buf_grow(struct smaps_buf *b)
{
	size_t cap = b->cap ? b->cap * 2 : PT_SMAPS_FIRST;
	char *text = realloc(b->text, cap);

	if (!text)
		return false;
	b->text = text;
	b->cap = cap;
	return true;
}

/*
 * Reads @path whole into the thread's buffer (a file that fills it is read again into one
 * twice the size). Returns the text, or NULL with *@len the error (-ENOMEM: no buffer).
 */
static const char *read_smaps(const char *path, ssize_t *len)
{
	struct smaps_buf *b = thread_smaps_buf();

	*len = -ENOMEM;
	if (!b || (!b->cap && !smaps_buf_grow(b)))
		return NULL;
	while ((*len = pt_read_file(path, b->text, b->cap)) >= 0 &&
	       (size_t)*len + 1 >= b->cap && b->cap < PT_SMAPS_MAX && smaps_buf_grow(b))
		;
	return *len < 0 ? NULL : b->text;
}

/* After a scan: the thread's buffer, if it grew past PT_SMAPS_KEEP, is given back. */
static void smaps_trim(void)
{
	struct smaps_buf *b = smaps_key_ok ? pthread_getspecific(smaps_key) : NULL;

	if (b && b->cap > PT_SMAPS_KEEP) {
		free(b->text);
		b->text = NULL;
		b->cap = 0;
	}
}

static int scan_fallback(pid_t pid, unsigned int chunk_shift, struct pt_proc_scan *out)
{
	struct pt_maps_reader maps = { .fp = NULL };
	struct ref_list rl = { 0 };
	enum pt_map_kind kind;
	char path[64];
	uint64_t *pm = NULL;
	const char *text;
	int pm_fd = -1, rc = 0;
	struct pt_range r;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	text = read_smaps(path, &n);
	if (!text) {
		rc = n == -ENOENT ? -ESRCH : (int)n;
		goto out;
	}
	pt_smaps_referenced(text, add_ref, &rl);

	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	pm_fd = open(path, O_RDONLY | O_CLOEXEC);
	rc = pt_maps_open(&maps, "/proc", pid, PT_SCANNED_KINDS, 0);
	pm = malloc(PT_PM_BATCH * sizeof(*pm));
	if (pm_fd < 0 || rc || !pm) {
		rc = (pm_fd < 0 || rc) ? -ESRCH : -ENOMEM;
		goto out;
	}
	while (pt_maps_next(&maps, &r, &kind) == 1) {
		uint64_t sd_pages = 0, present = 0;
		uint32_t first = out->n;
		bool reads;

		/* First pass with soft-dirty only; see below whether reads need the rest. */
		for (uint64_t off = 0; off < r.len; off += (uint64_t)PT_PM_BATCH << PT_PAGE_SHIFT) {
			uint64_t pages = (r.len - off) >> PT_PAGE_SHIFT;

			if (pages > PT_PM_BATCH)
				pages = PT_PM_BATCH;
			n = pread(pm_fd, pm, pages * sizeof(*pm),
				  (off_t)(((r.start + off) >> PT_PAGE_SHIFT) * sizeof(*pm)));
			if (n <= 0)
				break;
			pages = (uint64_t)n / sizeof(*pm);
			for (uint64_t i = 0; i < pages; i++) {
				present += !!(pm[i] & PT_PM_PRESENT);
				sd_pages += (pm[i] & PT_PM_PRESENT) && (pm[i] & PT_PM_SOFT_DIRTY);
			}
			rc = pt_fold_pagemap(pm, pages, r.start + off, chunk_shift, false, out);
			if (rc)
				goto out;
		}
		/*
		 * Referenced counts reads and writes; soft-dirty only writes. More referenced
		 * memory than written means reads this backend cannot place: keep the whole
		 * mapping's present pages as accessed.
		 */
		reads = referenced_kb(&rl, r.start) > sd_pages * 4 + 64;
		if (reads)
			for (uint32_t i = first; i < out->n; i++)
				out->chunks[i].accessed = out->chunks[i].present;
		(void)present;
	}
	/* Clear for the next scan: the referenced bits (1) and soft-dirty (4). */
	snprintf(path, sizeof(path), "/proc/%d/clear_refs", (int)pid);
	rc = write_str(path, "1");
	if (!rc)
		rc = write_str(path, "4");
out:
	pt_maps_close(&maps);
	if (pm_fd >= 0)
		close(pm_fd);
	free(pm);
	smaps_trim();
	free(rl.m);
	return rc;
}

int pt_scan_process(enum pt_scanner_kind kind, int kmod_fd, pid_t pid, unsigned int chunk_shift,
		    struct pt_proc_scan *out)
{
	memset(out, 0, sizeof(*out));
	out->pid = pid;
	if (kind == PT_SCANNER_KMOD)
		return scan_kmod(kmod_fd, pid, chunk_shift, out);
	return scan_fallback(pid, chunk_shift, out);
}
