// SPDX-License-Identifier: GPL-2.0
/*
 * ptwork: the e2e workload. Fills SIZE bytes of anonymous memory with a pattern that
 * names each byte's page, works on it for a while, then idles until SIGUSR1; on wake it
 * verifies every byte and reports how long the verification (the wake) took.
 *
 *   ptwork --size 256M --work-ms 1000 --ready FILE --report FILE
 *
 * The report is one JSON line: {"bytes":N,"verified":N,"mismatches":N,"wake_ms":F,...}.
 * After reporting it idles again until SIGTERM, so its memory can be inspected.
 *
 *   ptwork --size 64M --shm 32M --file DATA --ready FILE --report FILE
 *
 * Every kind of memory: besides SIZE of private anonymous memory, SHM of shared memory
 * (half MAP_SHARED|MAP_ANONYMOUS, half a memfd) and the file DATA mapped and read whole
 * (a file ptwork --make-file DATA --size N wrote); all verified on wake, and the report
 * says how many major faults the verification took (pages the wake had not brought back).
 * --sysv SIZE adds a System V shared memory segment (removed when ptwork exits).
 *
 *   ptwork --size 1G --hot-pct 10 --ready FILE
 *
 * Hot-set mode: after the fill, it keeps reading the first PCT% of its memory (one word
 * per page, a pass every 100 ms) and never touches the rest again, until SIGTERM; on
 * SIGTERM it verifies every byte and writes the report. Reads only: what a scanner sees
 * of them is accessed bits, not dirty ones.
 *
 *   ptwork --size 64M --shm 32M --thp 32M --mremap 16M --cow --cycles 3 --ready FILE
 *          --report FILE
 *
 * More kinds, and several wakes (not with --hot-pct):
 * --thp SIZE: a private region aligned to 2 MiB and advised MADV_HUGEPAGE; the report says
 *   how much of it was really THP (/proc/self/smaps' AnonHugePages) after the fill, once
 *   ready, and at each wake. With --thp, the SIZE region and the --mremap one are advised
 *   MADV_NOHUGEPAGE, so that they stay 4K pages whatever the THP setting.
 * --mremap SIZE: a private region filled, then moved with mremap(MREMAP_MAYMOVE |
 *   MREMAP_FIXED) to a new address; moved again at each wake before it is read (its
 *   offloaded pages' swap entries move with it), and verified where it is now.
 * --cow: after the fill, a child is forked that shares the private regions copy-on-write.
 *   Of every four pages, the child rewrites the first (its own copy from then on), the
 *   parent the second, and neither the other two, which stay shared; the second half of
 *   the --thp region is left whole to both (a THP mapped by both). The child is woken by
 *   SIGUSR1 like the parent (signal every process of the cgroup), verifies its own view of
 *   every kind and writes its report lines to FILE.child ("role":"child"). It dies with
 *   the parent (PR_SET_PDEATHSIG).
 * --cycles N: after a wake's verification it reports, goes idle again and waits for the
 *   next SIGUSR1, N times; report lines are appended, one per cycle. Between two cycles
 *   each process rewrites the private pages it owns (all of them without --cow) with the
 *   next generation of the pattern, so the next offload writes them again and a stale
 *   copy coming back would be caught.
 * With any of these, the ready file's second line is JSON (the child's pid, THP coverage)
 * and each report line adds "role", "cycle", "generation" and per-kind bytes and
 * mismatches ("kinds").
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t woken, stop;

static void on_usr1(int sig)
{
	(void)sig;
	woken = 1;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* The pattern: every 8-byte word holds its page number mixed with its offset and a seed. */
static inline uint64_t pattern(uint64_t seed, uint64_t word)
{
	uint64_t x = (word + 1) * 0x9E3779B97F4A7C15ULL ^ seed;

	x ^= x >> 31;
	return x * 0xBF58476D1CE4E5B9ULL;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	switch (*end) {
	case 'G': case 'g': v <<= 30; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'K': case 'k': v <<= 10; end++; break;
	default: break;
	}
	if (*end || !v)
		return -1;
	*out = v;
	return 0;
}

/* Fills @n words at @m with the pattern of @seed. */
static void fill(uint64_t *m, uint64_t n, uint64_t seed)
{
	for (uint64_t i = 0; i < n; i++)
		m[i] = pattern(seed, i);
}

/* Words of @m that differ from the pattern; the first one's byte offset in *@first. */
static uint64_t check(const uint64_t *m, uint64_t n, uint64_t seed, uint64_t *first)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < n; i++)
		if (m[i] != pattern(seed, i)) {
			if (*first == UINT64_MAX)
				*first = i * sizeof(uint64_t);
			bad++;
		}
	return bad;
}

static long majflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_majflt;
}

/* --make-file: writes @size bytes of the pattern of @seed to @path. */
static int make_file(const char *path, uint64_t size, uint64_t seed)
{
	uint64_t buf[8192];
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	for (uint64_t w = 0; w < size / 8;) {
		uint64_t n = size / 8 - w < 8192 ? size / 8 - w : 8192;

		for (uint64_t i = 0; i < n; i++)
			buf[i] = pattern(seed, w + i);
		if (fwrite(buf, 8, n, f) != n) {
			fclose(f);
			return -1;
		}
		w += n;
	}
	return fclose(f);
}

static int write_file_mode(const char *path, const char *text, const char *mode)
{
	FILE *f = fopen(path, mode);

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static int write_file(const char *path, const char *text)
{
	return write_file_mode(path, text, "w");
}

/* --- the extended kinds (--thp, --mremap, --cow, --cycles) ------------------------ */

#define PAGE_WORDS (4096 / sizeof(uint64_t))
#define HUGE_SIZE (2ULL << 20)

/* Who writes a page of a private region once --cow has forked: nobody (it stays shared). */
enum owner { SHARED, BY_PARENT, BY_CHILD };

/* A private region: the SIZE one, --thp's, --mremap's. */
struct region {
	const char *kind;
	uint64_t *m;
	uint64_t bytes;
	uint64_t seed;
	uint64_t whole_from;	/* pages from here on are left whole (shared) by --cow */
	uint64_t mismatches, first_bad;
};

static enum owner page_owner(const struct region *r, uint64_t page, bool cow)
{
	if (!cow)
		return BY_PARENT;	/* one process: it owns every page */
	if (page >= r->whole_from)
		return SHARED;
	return page % 4 == 0 ? BY_CHILD : page % 4 == 1 ? BY_PARENT : SHARED;
}

/* The seed of what @who wrote at generation @gen; the fill is generation 0 of nobody. */
static uint64_t gen_seed(uint64_t seed, enum owner who, uint64_t gen)
{
	return seed + ((uint64_t)who << 40) + (gen << 20);
}

/* What @me sees in page @page at generation @gen. */
static uint64_t page_seed(const struct region *r, uint64_t page, enum owner me, bool cow,
			  uint64_t gen)
{
	/* Under --cow each process wrote its pages once right after the fork (generation 0). */
	if (page_owner(r, page, cow) == me && (cow || gen))
		return gen_seed(r->seed, me, gen);
	return r->seed;
}

/* Writes generation @gen into the pages of @r that @me owns. */
static void rewrite_owned(const struct region *r, enum owner me, bool cow, uint64_t gen)
{
	for (uint64_t p = 0; p < r->bytes / 4096; p++) {
		uint64_t s = gen_seed(r->seed, me, gen);

		if (page_owner(r, p, cow) != me)
			continue;
		for (uint64_t i = p * PAGE_WORDS; i < (p + 1) * PAGE_WORDS; i++)
			r->m[i] = pattern(s, i);
	}
}

/* Words of @r that differ from what @me should see at @gen (into r->mismatches). */
static uint64_t check_region(struct region *r, enum owner me, bool cow, uint64_t gen)
{
	r->mismatches = 0;
	r->first_bad = UINT64_MAX;
	for (uint64_t p = 0; p < r->bytes / 4096; p++) {
		uint64_t s = page_seed(r, p, me, cow, gen);

		for (uint64_t i = p * PAGE_WORDS; i < (p + 1) * PAGE_WORDS; i++)
			if (r->m[i] != pattern(s, i)) {
				if (r->first_bad == UINT64_MAX)
					r->first_bad = i * sizeof(uint64_t);
				r->mismatches++;
			}
	}
	return r->mismatches;
}

/* Bytes of [@start, @start + @len) mapped by huge pages: smaps' AnonHugePages of its VMAs. */
static uint64_t thp_mapped(const void *start, uint64_t len)
{
	unsigned long s0 = (unsigned long)start, e0 = s0 + len, a, b;
	unsigned long long kb;
	uint64_t sum = 0;
	char l[512];
	bool in = false;
	FILE *f;

	if (!start || !len)
		return 0;
	f = fopen("/proc/self/smaps", "r");
	if (!f)
		return 0;
	while (fgets(l, sizeof(l), f)) {
		if (sscanf(l, "%lx-%lx ", &a, &b) == 2)
			in = a < e0 && b > s0;
		else if (in && sscanf(l, "AnonHugePages: %llu kB", &kb) == 1)
			sum += kb << 10;
	}
	fclose(f);
	return sum;
}

/* A private anonymous region of @size aligned to @align; NULL on failure. */
static uint64_t *map_aligned(uint64_t size, uint64_t align)
{
	char *raw = mmap(NULL, size + align, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t at;

	if (raw == MAP_FAILED)
		return NULL;
	at = ((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1);
	/* The unaligned head and the tail go: the VMA is the region, nothing more. */
	if (at > (uintptr_t)raw)
		munmap(raw, at - (uintptr_t)raw);
	munmap((char *)at + size, (uintptr_t)raw + align - at);
	return (uint64_t *)at;
}

/* --mremap: moves @r to a new address (mremap MREMAP_MAYMOVE | MREMAP_FIXED); 0 or -1. */
static int move_region(struct region *r)
{
	void *to = mmap(NULL, r->bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *now;

	if (to == MAP_FAILED)
		return -1;
	/* FIXED onto the reservation: it replaces it; the old range is unmapped. */
	now = mremap(r->m, r->bytes, r->bytes, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (now == MAP_FAILED) {
		munmap(to, r->bytes);
		return -1;
	}
	r->m = now;
	return 0;
}

/* A shared kind's words against the fill of @seed (into *@bad, *@first). */
static uint64_t check_kind(const uint64_t *m, uint64_t n, uint64_t seed, uint64_t *bad,
			   uint64_t *first)
{
	*first = UINT64_MAX;
	*bad = m ? check(m, n, seed, first) : 0;
	return *bad;
}

/* ,"name":{"bytes":N,"mismatches":N,"first_bad_offset":N} into @out at @len. */
static size_t kind_json(char *out, size_t cap, size_t len, const char *name, uint64_t bytes,
			uint64_t bad, uint64_t first)
{
	if (len >= cap)
		return len;
	return len + (size_t)snprintf(out + len, cap - len,
				      "%s\"%s\":{\"bytes\":%llu,\"mismatches\":%llu,\"first_bad_offset\":%lld}",
				      out[len - 1] == '{' ? "" : ",", name,
				      (unsigned long long)bytes, (unsigned long long)bad,
				      first == UINT64_MAX ? -1LL : (long long)first);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "work-ms", required_argument, NULL, 'w' },
		{ "ready", required_argument, NULL, 'r' },
		{ "report", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 'S' },
		{ "hot-pct", required_argument, NULL, 'H' },
		{ "shm", required_argument, NULL, 'm' },
		{ "sysv", required_argument, NULL, 'V' },
		{ "file", required_argument, NULL, 'f' },
		{ "make-file", required_argument, NULL, 'F' },
		{ "thp", required_argument, NULL, 'T' },
		{ "mremap", required_argument, NULL, 'R' },
		{ "cow", no_argument, NULL, 'C' },
		{ "cycles", required_argument, NULL, 'N' },
		{ 0 }
	};
	const char *ready = NULL, *report = NULL, *file = NULL, *make = NULL;
	uint64_t shm_size = 0, file_size = 0, *shm_anon = NULL, *shm_fd = NULL, *fmap = NULL;
	uint64_t sysv_size = 0, *sysv = NULL;
	long flt0 = 0;
	uint64_t size = 256ULL << 20, seed = 0x5eed, words, mismatches = 0, first_bad = UINT64_MAX;
	long work_ms = 1000, hot_pct = 0;
	struct sigaction sa = { 0 };
	sigset_t block, old;
	uint64_t *mem;
	double t0, t1;
	char line[4096];
	int c;
	/* The extended kinds: --thp, --mremap, --cow, --cycles. */
	uint64_t thp_size = 0, mremap_size = 0, thp_at_fill = 0, thp_at_ready = 0;
	uint64_t cycles = 1, cycle = 0, moves = 0, total;
	bool cow = false, extended = false, cycles_given = false;
	enum owner me = BY_PARENT;
	pid_t child = 0;
	char child_report[4096];
	struct region priv = { .kind = "private" }, thp = { .kind = "thp" },
		      moved = { .kind = "mremap" };
	struct region *regions[] = { &priv, &thp, &moved };
	uint64_t k_bad[4], k_first[4];	/* shm_anon, memfd, sysv, file */

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_size(optarg, &size)) {
				fprintf(stderr, "ptwork: bad --size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'w':
			work_ms = strtol(optarg, NULL, 10);
			break;
		case 'r':
			ready = optarg;
			break;
		case 'o':
			report = optarg;
			break;
		case 'S':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'V':
			if (parse_size(optarg, &sysv_size) || sysv_size % 4096) {
				fprintf(stderr, "ptwork: bad --sysv '%s'\n", optarg);
				return 2;
			}
			break;
		case 'm':
			if (parse_size(optarg, &shm_size) || shm_size % (2 * 4096)) {
				fprintf(stderr, "ptwork: bad --shm '%s'\n", optarg);
				return 2;
			}
			break;
		case 'f':
			file = optarg;
			break;
		case 'F':
			make = optarg;
			break;
		case 'H':
			hot_pct = strtol(optarg, NULL, 10);
			if (hot_pct < 1 || hot_pct > 100) {
				fprintf(stderr, "ptwork: --hot-pct must be 1-100\n");
				return 2;
			}
			break;
		case 'T':
			if (parse_size(optarg, &thp_size) || thp_size % HUGE_SIZE) {
				fprintf(stderr, "ptwork: bad --thp '%s' (a multiple of 2M)\n", optarg);
				return 2;
			}
			extended = true;
			break;
		case 'R':
			if (parse_size(optarg, &mremap_size) || mremap_size % 4096) {
				fprintf(stderr, "ptwork: bad --mremap '%s'\n", optarg);
				return 2;
			}
			extended = true;
			break;
		case 'C':
			cow = extended = true;
			break;
		case 'N':
			cycles = strtoull(optarg, NULL, 10);
			if (cycles < 1 || cycles > 1000) {
				fprintf(stderr, "ptwork: --cycles must be 1-1000\n");
				return 2;
			}
			cycles_given = extended = true;
			break;
		default:
			fprintf(stderr, "usage: ptwork [--size N] [--work-ms N] [--ready F] [--report F] [--seed N]\n"
				"              [--shm N] [--sysv N] [--file F] [--thp N] [--mremap N] [--cow] [--cycles N]\n");
			return 2;
		}
	}
	if (make)
		return make_file(make, size, seed + 2) ? (perror("ptwork: --make-file"), 1) : 0;
	if (hot_pct && extended) {
		fprintf(stderr, "ptwork: --hot-pct does not go with --thp, --mremap, --cow or --cycles\n");
		return 2;
	}
	if (extended && size % 4096) {
		fprintf(stderr, "ptwork: --size must be a multiple of 4K with --thp, --mremap, --cow or --cycles\n");
		return 2;
	}
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGTERM);

	words = size / sizeof(uint64_t);
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("ptwork: mmap");
		return 1;
	}
	/* With --thp, the SIZE region stays 4K pages whatever the THP setting ("always"). */
	if (thp_size)
		madvise(mem, size, MADV_NOHUGEPAGE);
	priv = (struct region){ .kind = "private", .m = mem, .bytes = size, .seed = seed,
				.whole_from = size / 4096 };
	if (hot_pct) {
		/*
		 * The hot set is hot from the start: fill it first, then fill the rest in
		 * slices, re-reading the hot set after each, so that a slow fill (an emulated
		 * VM) never leaves the hot set unused long enough to look cold.
		 */
		uint64_t hot_words = words / 100 * (uint64_t)hot_pct, step = (16ULL << 20) / 8;

		for (uint64_t i = 0; i < hot_words; i++)
			mem[i] = pattern(seed, i);
		for (uint64_t from = hot_words; from < words; from += step) {
			uint64_t sum = 0;

			for (uint64_t i = from; i < words && i < from + step; i++)
				mem[i] = pattern(seed, i);
			for (uint64_t i = 0; i < hot_words; i += 512)
				sum += ((volatile uint64_t *)mem)[i];
			if (sum == 42)
				fputc(' ', stderr);
		}
	} else {
		fill(mem, words, seed);
	}
	if (shm_size) {
		int mfd = memfd_create("ptwork-shm", 0);

		shm_anon = mmap(NULL, shm_size / 2, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (mfd < 0 || ftruncate(mfd, (off_t)(shm_size / 2)))
			shm_fd = MAP_FAILED;
		else
			shm_fd = mmap(NULL, shm_size / 2, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
		if (shm_anon == MAP_FAILED || shm_fd == MAP_FAILED) {
			perror("ptwork: shared memory");
			return 1;
		}
		fill(shm_anon, shm_size / 16, seed + 1);
		fill(shm_fd, shm_size / 16, seed + 3);
	}
	if (sysv_size) {
		int id = shmget(IPC_PRIVATE, sysv_size, IPC_CREAT | 0600);

		sysv = id < 0 ? (void *)-1 : shmat(id, NULL, 0);
		if (sysv == (void *)-1) {
			perror("ptwork: --sysv");
			return 1;
		}
		shmctl(id, IPC_RMID, NULL);	/* gone with the last detach: ptwork's exit */
		fill(sysv, sysv_size / 8, seed + 4);
	}
	if (file) {
		struct stat st;
		int ffd = open(file, O_RDONLY);

		if (ffd < 0 || fstat(ffd, &st) || !st.st_size) {
			perror("ptwork: --file");
			return 1;
		}
		file_size = (uint64_t)st.st_size & ~7ULL;
		fmap = mmap(NULL, file_size, PROT_READ, MAP_SHARED, ffd, 0);
		if (fmap == MAP_FAILED) {
			perror("ptwork: mmap --file");
			return 1;
		}
		close(ffd);
	}
	if (thp_size) {
		/* Aligned to 2 MiB, so that every 2 MiB of it can be one huge page. */
		thp = (struct region){ .kind = "thp", .m = map_aligned(thp_size, HUGE_SIZE),
				       .bytes = thp_size, .seed = seed + 5,
				       /* --cow leaves its second half whole: THPs both map */
				       .whole_from = thp_size / 2 / HUGE_SIZE * HUGE_SIZE / 4096 };
		if (!thp.m || madvise(thp.m, thp_size, MADV_HUGEPAGE)) {
			perror("ptwork: --thp");
			return 1;
		}
		fill(thp.m, thp_size / 8, thp.seed);
		thp_at_fill = thp_mapped(thp.m, thp_size);
	}
	if (mremap_size) {
		moved = (struct region){ .kind = "mremap", .bytes = mremap_size, .seed = seed + 6,
					 .whole_from = mremap_size / 4096 };
		moved.m = mmap(NULL, mremap_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (moved.m == MAP_FAILED) {
			perror("ptwork: --mremap");
			return 1;
		}
		if (thp_size)
			madvise(moved.m, mremap_size, MADV_NOHUGEPAGE);
		fill(moved.m, mremap_size / 8, moved.seed);
		if (move_region(&moved)) {
			perror("ptwork: mremap");
			return 1;
		}
		moves++;
	}
	if (cow) {
		/*
		 * The child shares every private page copy-on-write; each then writes its own
		 * quarter (page_owner()), and tells the parent through a pipe that it did.
		 */
		pid_t parent = getpid();
		int sync[2];
		char b = 0;

		if (pipe(sync)) {
			perror("ptwork: pipe");
			return 1;
		}
		child = fork();
		if (child < 0) {
			perror("ptwork: fork");
			return 1;
		}
		if (child == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(1);
			me = BY_CHILD;
			for (int r = 0; r < 3; r++)
				if (regions[r]->m)
					rewrite_owned(regions[r], me, cow, 0);
			if (write(sync[1], &b, 1) != 1)
				_exit(1);
		} else {
			for (int r = 0; r < 3; r++)
				if (regions[r]->m)
					rewrite_owned(regions[r], me, cow, 0);
			if (read(sync[0], &b, 1) != 1) {
				fprintf(stderr, "ptwork: the --cow child died before it was ready\n");
				return 1;
			}
		}
		close(sync[0]);
		close(sync[1]);
		if (report)
			snprintf(child_report, sizeof(child_report), "%s.child", report);
	}
	if (hot_pct) {
		uint64_t hot_words = words / 100 * (uint64_t)hot_pct, sum = 0;
		struct timespec pause_ts = { .tv_nsec = 100 * 1000000L };
		char where[96];

		/* Where the memory is, so that a test can read its pages' state in pagemap. */
		snprintf(where, sizeof(where), "ready %p %llu %llu\n", (void *)mem,
			 (unsigned long long)size, (unsigned long long)(hot_words * 8));
		if (ready && write_file(ready, where)) {
			perror("ptwork: ready file");
			return 1;
		}
		while (!stop) {
			for (uint64_t i = 0; i < hot_words; i += 512)
				sum += ((volatile uint64_t *)mem)[i];
			nanosleep(&pause_ts, NULL);
		}
		if (sum == 42)
			fputc(' ', stderr);
		woken = 1;	/* verify and report below */
		stop = 0;
		goto verify;
	}
	if (me == BY_CHILD) {
		thp_at_ready = thp_mapped(thp.m, thp_size);
		goto idle;	/* the parent works, and says when both are ready */
	}
	/* "Work": keep re-reading the data for a while, so the daemon sees CPU activity. */
	t0 = now_ms();
	for (uint64_t sum = 0; now_ms() - t0 < (double)work_ms;) {
		for (uint64_t i = 0; i < words; i += 512)
			sum += mem[i];
		for (uint64_t i = 0; i < shm_size / 16; i += 512)
			sum += shm_anon[i] + shm_fd[i];
		for (uint64_t i = 0; i < file_size / 8; i += 512)
			sum += fmap[i];
		for (uint64_t i = 0; i < sysv_size / 8; i += 512)
			sum += sysv[i];
		for (uint64_t i = 0; i < thp_size / 8; i += 512)
			sum += thp.m[i];
		for (uint64_t i = 0; i < mremap_size / 8; i += 512)
			sum += moved.m[i];
		if (sum == 42)
			fputc(' ', stderr);
	}
	if (extended) {
		thp_at_ready = thp_mapped(thp.m, thp_size);
		snprintf(line, sizeof(line),
			 "ready\n{\"pid\":%d,\"child\":%d,\"thp_bytes\":%llu,\"thp_huge_at_fill\":%llu,\"thp_huge_at_ready\":%llu}\n",
			 (int)getpid(), (int)child, (unsigned long long)thp_size,
			 (unsigned long long)thp_at_fill, (unsigned long long)thp_at_ready);
	} else {
		snprintf(line, sizeof(line), "ready\n");
	}
	if (ready && write_file(ready, line)) {
		perror("ptwork: ready file");
		return 1;
	}

idle:
	/* Idle: no CPU at all until woken (sigsuspend closes the check/sleep race). */
	sigprocmask(SIG_BLOCK, &block, &old);
	while (!woken && !stop)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (stop)
		return 0;

verify:
	t0 = now_ms();
	flt0 = majflt();
	/* Moved while offloaded: its swap entries move with it; read where it is now. */
	if (mremap_size) {
		if (move_region(&moved)) {
			perror("ptwork: mremap at wake");
			return 1;
		}
		moves++;
	}
	if (extended) {
		mismatches = check_region(&priv, me, cow, cycle);
		first_bad = priv.first_bad;
	} else {
		mismatches = check(mem, words, seed, &first_bad);
	}
	if (thp_size)
		mismatches += check_region(&thp, me, cow, cycle);
	if (mremap_size)
		mismatches += check_region(&moved, me, cow, cycle);
	mismatches += check_kind(shm_anon, shm_size / 16, seed + 1, &k_bad[0], &k_first[0]);
	mismatches += check_kind(shm_fd, shm_size / 16, seed + 3, &k_bad[1], &k_first[1]);
	mismatches += check_kind(sysv, sysv_size / 8, seed + 4, &k_bad[2], &k_first[2]);
	mismatches += check_kind(fmap, file_size / 8, seed + 2, &k_bad[3], &k_first[3]);
	t1 = now_ms();
	total = size + shm_size + sysv_size + file_size + thp_size + mremap_size;
	snprintf(line, sizeof(line),
		 "{\"pid\":%d,\"bytes\":%llu,\"verified\":%llu,\"mismatches\":%llu,\"first_bad_offset\":%lld,\"wake_ms\":%.1f,\"restore_mb_s\":%.1f,\"shm_bytes\":%llu,\"sysv_bytes\":%llu,\"file_bytes\":%llu,\"major_faults\":%ld}\n",
		 (int)getpid(), (unsigned long long)size,
		 (unsigned long long)(total - mismatches * sizeof(uint64_t)),
		 (unsigned long long)mismatches,
		 first_bad == UINT64_MAX ? -1LL : (long long)first_bad, t1 - t0,
		 (double)total / (1 << 20) / ((t1 - t0) / 1e3),
		 (unsigned long long)shm_size, (unsigned long long)sysv_size,
		 (unsigned long long)file_size, majflt() - flt0);
	if (extended) {
		/* The same line, and what only the extended kinds have, before its brace. */
		size_t len = strlen(line) - 2;

		len += (size_t)snprintf(line + len, sizeof(line) - len,
					",\"role\":\"%s\",\"cycle\":%llu,\"cycles\":%llu,\"generation\":%llu,\"thp_bytes\":%llu,\"thp_huge_at_fill\":%llu,\"thp_huge_at_ready\":%llu,\"thp_huge_now\":%llu,\"mremap_bytes\":%llu,\"mremap_moves\":%llu,\"cow\":%s,\"cow_child\":%d,\"kinds\":{",
					me == BY_CHILD ? "child" : "parent",
					(unsigned long long)cycle + 1, (unsigned long long)cycles,
					(unsigned long long)cycle, (unsigned long long)thp_size,
					(unsigned long long)thp_at_fill, (unsigned long long)thp_at_ready,
					(unsigned long long)thp_mapped(thp.m, thp_size),
					(unsigned long long)mremap_size, (unsigned long long)moves,
					cow ? "true" : "false", (int)child);
		for (int r = 0; r < 3; r++)
			if (regions[r]->m)
				len = kind_json(line, sizeof(line), len, regions[r]->kind,
						regions[r]->bytes, regions[r]->mismatches,
						regions[r]->first_bad);
		if (shm_size) {
			len = kind_json(line, sizeof(line), len, "shm_anon", shm_size / 2, k_bad[0],
					k_first[0]);
			len = kind_json(line, sizeof(line), len, "memfd", shm_size / 2, k_bad[1],
					k_first[1]);
		}
		if (sysv_size)
			len = kind_json(line, sizeof(line), len, "sysv", sysv_size, k_bad[2], k_first[2]);
		if (file)
			len = kind_json(line, sizeof(line), len, "file", file_size, k_bad[3], k_first[3]);
		if (len < sizeof(line))
			snprintf(line + len, sizeof(line) - len, "}}\n");
		/* A SIGUSR1 from here on is the next cycle's wake (the test waits for this line). */
		woken = 0;
		if (cycle + 1 < cycles)
			/* The next generation, before the report: the test idles us after it. */
			for (int r = 0; r < 3; r++)
				if (regions[r]->m)
					rewrite_owned(regions[r], me, cow, cycle + 1);
	}
	{
		const char *to = me == BY_CHILD ? (report ? child_report : NULL) : report;

		if (to ? write_file_mode(to, line, cycles_given ? "a" : "w") :
			 (fputs(line, stdout), fflush(stdout), 0)) {
			perror("ptwork: report file");
			return 1;
		}
	}
	if (hot_pct)
		return mismatches ? 3 : 0;
	if (++cycle < cycles)
		goto idle;
	sigprocmask(SIG_BLOCK, &block, &old);
	while (!stop)
		sigsuspend(&old);
	return mismatches ? 3 : 0;
}
