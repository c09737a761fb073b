// SPDX-License-Identifier: GPL-2.0
/*
 * Run under LD_PRELOAD=libpagetier.so (with or without a daemon): every wrapped function
 * must behave exactly as without the library (results, errno, alignment, contents), also
 * from threads and in a forked child. Prints "N passed, N failed"; with a test daemon the
 * caller then checks what the daemon received (the counts printed as "# expect ...").
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG (1 << 20)
#define ROUNDS 50

static int passed, failed;
/* volatile: the compiler must neither reject nor fold the impossible requests. */
static volatile size_t half = SIZE_MAX / 2, huge = SIZE_MAX - 4096;

static void check(int ok, const char *what)
{
	if (ok) {
		passed++;
	} else {
		failed++;
		printf("not ok - %s\n", what);
	}
}

static void *thread_main(void *arg)
{
	uintptr_t bad = 0;

	(void)arg;
	for (int i = 0; i < 20000; i++) {
		size_t n = (size_t)(i % 512) + 1;
		unsigned char *p = malloc(n);

		if (!p) {
			bad++;
			continue;
		}
		memset(p, i & 0xff, n);
		p = realloc(p, n * 2);
		if (!p || p[n - 1] != (unsigned char)(i & 0xff))
			bad++;
		free(p);
	}
	return (void *)bad;
}

static void allocator_checks(void)
{
	void *p, *q;
	char *c;
	int ret;

	for (int i = 0; i < ROUNDS; i++) {
		c = malloc(BIG);
		check(c != NULL, "malloc big");
		memset(c, 1, BIG);
		free(c);
	}
	c = calloc(1000, 1000);
	check(c && c[0] == 0 && c[999999] == 0, "calloc zeroes");
	free(c);
	errno = 0;
	p = calloc(half, 4);
	check(p == NULL && errno == ENOMEM, "calloc overflow: NULL, ENOMEM");
	errno = 0;
	p = malloc(huge);
	check(p == NULL && errno == ENOMEM, "malloc huge: NULL, ENOMEM");
	errno = 0;
	p = reallocarray(NULL, half, 4);
	check(p == NULL && errno == ENOMEM, "reallocarray overflow: NULL, ENOMEM");
	c = malloc(16);
	strcpy(c, "0123456789");
	c = realloc(c, 2 * BIG);
	check(c && strcmp(c, "0123456789") == 0, "realloc keeps contents");
	c = realloc(c, 8);
	check(c && memcmp(c, "01234567", 8) == 0, "realloc shrink keeps contents");
	free(c);
	check(realloc(NULL, 32) != NULL, "realloc(NULL) allocates");	/* leaked on purpose */
	/* Growing one byte pattern through realloc's fast path, then past the big threshold. */
	c = NULL;
	for (size_t n = 16, ok = 1; n <= 2 * BIG; n += n < 8192 ? 16 : 8192) {
		char *d = realloc(c, n);

		ok = ok && d;
		if (!d)
			break;
		for (size_t i = n > 8192 ? n - 8192 : (n > 16 ? n - 16 : 0); i < n; i++)
			d[i] = (char)(i * 7);
		c = d;
		if (n == 2 * BIG || !ok) {
			for (size_t i = 0; i < n && ok; i++)
				ok = c[i] == (char)(i * 7);
			check(ok, "realloc growing 16 B -> 128 KiB keeps every byte");
		}
	}
	errno = 0;
	check(realloc(c, huge) == NULL && errno == ENOMEM && c[BIG] == (char)(BIG * 7),
	      "realloc huge: NULL, ENOMEM, the block kept");
	check(realloc(c, 0) == NULL, "realloc(p, 0) frees (glibc)");
	ret = posix_memalign(&p, 4096, BIG);
	check(ret == 0 && ((uintptr_t)p & 4095) == 0, "posix_memalign aligns");
	free(p);
	ret = posix_memalign(&p, 3, 64);
	check(ret == EINVAL, "posix_memalign bad alignment: EINVAL");
	p = aligned_alloc(256, 4096);
	check(p && ((uintptr_t)p & 255) == 0, "aligned_alloc aligns");
	free(p);
	p = memalign(64, 100);
	check(p && ((uintptr_t)p & 63) == 0, "memalign aligns");
	free(p);
	p = valloc(100);
	check(p && ((uintptr_t)p & 4095) == 0, "valloc page-aligned");
	free(p);
	p = pvalloc(100);
	check(p && ((uintptr_t)p & 4095) == 0 && malloc_usable_size(p) >= 4096,
	      "pvalloc rounds to a page");
	free(p);
	free(NULL);

	for (int i = 0; i < ROUNDS; i++) {
		p = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		check(p != MAP_FAILED, "mmap anonymous");
		memset(p, 2, BIG);
		q = mremap(p, BIG, 4 * BIG, MREMAP_MAYMOVE);
		check(q != MAP_FAILED && ((char *)q)[BIG - 1] == 2, "mremap grows, keeps contents");
		check(munmap(q, 4 * BIG) == 0, "munmap");
	}
	errno = 0;
	check(munmap((void *)1, 4096) == -1 && errno == EINVAL, "munmap unaligned: EINVAL");
	errno = 0;
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 12345, 0);
	check(p == MAP_FAILED && errno == EBADF, "mmap bad fd: EBADF");
	errno = 0;
	p = mremap((void *)4096, 4096, 8192, 0);
	check(p == MAP_FAILED && errno == EFAULT, "mremap of nothing: EFAULT");
	check(malloc_trim(0) >= 0, "malloc_trim");
}

int main(void)
{
	pthread_t t[4];
	pid_t pid;
	int status;

	allocator_checks();
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thread_main, NULL);
	for (int i = 0; i < 4; i++) {
		void *bad;

		pthread_join(t[i], &bad);
		check(bad == NULL, "threads: malloc/realloc/free");
	}
	pid = fork();
	if (pid == 0) {
		passed = failed = 0;
		allocator_checks();
		_exit(failed ? 1 : 0);
	}
	check(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "fork: the child's checks pass");
	/* Give a daemon one heartbeat period to see this process alive. */
	usleep(1100 * 1000);
	for (int i = 0; i < 2000; i++)
		free(malloc(32));
	printf("# expect big_allocs >= %d rec_mmap >= %d rec_mremap >= %d rec_munmap >= %d\n",
	       ROUNDS, ROUNDS, ROUNDS, ROUNDS);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
