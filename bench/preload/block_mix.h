/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The allocation mix of malloc_bench and churn: each operation replaces a random one of
 * @nslots live blocks with a new one, mostly 16 B-1 KiB, 1 in 256 of 64-256 KiB.
 */
#ifndef PAGETIER_BENCH_BLOCK_MIX_H
#define PAGETIER_BENCH_BLOCK_MIX_H

#include <stddef.h>
#include <stdint.h>

/* Advances the xorshift state @x; returns the new block's size, and in *slot which to replace. */
static inline size_t block_mix_next(uint64_t *x, unsigned int nslots, unsigned int *slot)
{
	uint64_t v = *x;

	v ^= v << 13;
	v ^= v >> 7;
	v ^= v << 17;
	*x = v;
	*slot = (unsigned int)(v % nslots);
	return (v >> 20) % 256 == 0 ? 65536 + (v >> 32) % 196608 : 16 + (v >> 32) % 1024;
}

#endif
