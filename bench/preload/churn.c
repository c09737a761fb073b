// SPDX-License-Identifier: GPL-2.0
/*
 * A malloc-busy process for bench/preload/daemon_cpu.sh: forever, replaces a random one of
 * 4096 live blocks (free + malloc, 16 B-1 KiB, 1 in 256 of 64-256 KiB, touching each new
 * block), and every 1000 operations maps, touches and unmaps 256 KiB. Never returns.
 *
 *   churn
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "block_mix.h"

#define SLOTS 4096

int main(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ (uintptr_t)&x;
	char **slot = calloc(SLOTS, sizeof(*slot));

	if (!slot)
		return 1;
	for (uint64_t i = 0;; i++) {
		unsigned int k;
		size_t size;

		size = block_mix_next(&x, SLOTS, &k);
		free(slot[k]);
		slot[k] = malloc(size);
		if (!slot[k])
			return 1;
		slot[k][0] = (char)i;
		if (i % 1000 == 0) {
			char *m = mmap(NULL, 256 << 10, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (m != MAP_FAILED) {
				memset(m, 1, 256 << 10);
				munmap(m, 256 << 10);
			}
		}
	}
}
