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
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
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

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
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
	char line[512];
	int c;

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
		default:
			fprintf(stderr, "usage: ptwork [--size N] [--work-ms N] [--ready F] [--report F] [--seed N]\n");
			return 2;
		}
	}
	if (make)
		return make_file(make, size, seed + 2) ? (perror("ptwork: --make-file"), 1) : 0;
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
		if (sum == 42)
			fputc(' ', stderr);
	}
	if (ready && write_file(ready, "ready\n")) {
		perror("ptwork: ready file");
		return 1;
	}

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
	mismatches = check(mem, words, seed, &first_bad);
	if (shm_size) {
		uint64_t ignored = UINT64_MAX;

		mismatches += check(shm_anon, shm_size / 16, seed + 1, &ignored);
		mismatches += check(shm_fd, shm_size / 16, seed + 3, &ignored);
	}
	if (file) {
		uint64_t ignored = UINT64_MAX;

		mismatches += check(fmap, file_size / 8, seed + 2, &ignored);
	}
	if (sysv) {
		uint64_t ignored = UINT64_MAX;

		mismatches += check(sysv, sysv_size / 8, seed + 4, &ignored);
	}
	t1 = now_ms();
	snprintf(line, sizeof(line),
		 "{\"pid\":%d,\"bytes\":%llu,\"verified\":%llu,\"mismatches\":%llu,\"first_bad_offset\":%lld,\"wake_ms\":%.1f,\"restore_mb_s\":%.1f,\"shm_bytes\":%llu,\"sysv_bytes\":%llu,\"file_bytes\":%llu,\"major_faults\":%ld}\n",
		 (int)getpid(), (unsigned long long)size,
		 (unsigned long long)(size + shm_size + sysv_size + file_size -
				      mismatches * sizeof(uint64_t)),
		 (unsigned long long)mismatches,
		 first_bad == UINT64_MAX ? -1LL : (long long)first_bad, t1 - t0,
		 (double)(size + shm_size + sysv_size + file_size) / (1 << 20) / ((t1 - t0) / 1e3),
		 (unsigned long long)shm_size, (unsigned long long)sysv_size,
		 (unsigned long long)file_size, majflt() - flt0);
	if (report ? write_file(report, line) : (fputs(line, stdout), 0)) {
		perror("ptwork: report file");
		return 1;
	}
	if (hot_pct)
		return mismatches ? 3 : 0;
	sigprocmask(SIG_BLOCK, &block, &old);
	while (!stop)
		sigsuspend(&old);
	return mismatches ? 3 : 0;
}
