// SPDX-License-Identifier: GPL-2.0
/*
 * The floor of any LD_PRELOAD allocator interposer, for bench/preload/run.sh: malloc, free,
 * calloc and realloc that only jump to glibc's. What libpagetier.so costs beyond this is
 * its own work; this much every preloaded wrapper pays (one more indirect jump a call).
 */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static void *(*const next_malloc)(size_t) = __libc_malloc;
static void (*const next_free)(void *) = __libc_free;
static void *(*const next_calloc)(size_t, size_t) = __libc_calloc;
static void *(*const next_realloc)(void *, size_t) = __libc_realloc;

__attribute__((visibility("default"))) void *malloc(size_t size)
{
	return next_malloc(size);
}

__attribute__((visibility("default"))) void free(void *p)
{
	next_free(p);
}

__attribute__((visibility("default"))) void *calloc(size_t n, size_t size)
{
	return next_calloc(n, size);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t size)
{
	return next_realloc(p, size);
}
