/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A swap fence: a cgroup's memory.swap.max held at what it has on swap plus a little, for
 * the length of a swap cache drop (swapcache_drop.h), on kernels whose reclaim walks the
 * classic LRU (Debian 12's 6.1: the multi-gen LRU is built but off).
 *
 * Why: memory.reclaim scans a cgroup's inactive anonymous list from its tail. What a wake's
 * prefetch read into the swap cache and the application never touched was added to that
 * list last; the container's own older anonymous pages come first, and reclaim writes them
 * to swap. A drop stops at the first step that writes (it judges by memory.swap.current),
 * so on 6.1 the unused prefetch stayed in memory (real_servers: redis, "serving a tenth,
 * the rest stays out", failed now and then). With the cgroup's swap held at its use plus
 * PT_SWAP_FENCE_SLACK, reclaim still scans anonymous memory (mem_cgroup_get_nr_swap_pages()
 * is above 0, can_reclaim_anon_pages() in mm/vmscan.c), a page not on swap yet cannot get a
 * slot and stays (the kernel activates it), and the clean swap cache behind it goes at no
 * write cost. Each step writes at most the slack, below what counts as a write.
 *
 * Not with the multi-gen LRU: it scans no anonymous memory at all with less than
 * MIN_LRU_BATCH (64) pages of swap room (get_swappiness()), and its generations put the
 * swap cache a prefetch left in the oldest one anyway.
 *
 * A fence is kept in runtime_dir/swap-fence.TID while it is held, so that a pagetierd that
 * died with one in place (SIGKILL, a crash) has it put back by the next: a cgroup left
 * unable to swap would take its host's memory pressure to its neighbours, or to the OOM
 * killer.
 */
#ifndef PAGETIER_SWAP_FENCE_H
#define PAGETIER_SWAP_FENCE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

/* Swap room a fence leaves: below PT_DROP_WRITE_SLACK, so a step it bounds never "wrote". */
#define PT_SWAP_FENCE_SLACK (64ULL << 10)

struct pt_swap_fence {
	char dir[PATH_MAX];	/* the cgroup */
	char saved[32];		/* memory.swap.max as found ("" until read) */
	uint64_t saved_bytes;	/* ... parsed (UINT64_MAX: "max") */
	uint64_t written;	/* what the fence holds now (0: not held) */
	bool off;		/* no fence for this drop (not wanted, or swap.max unreadable) */
	char state[PATH_MAX];	/* runtime_dir/swap-fence.TID, "" when none is kept */
};

/*
 * Whether drops need a fence, from the text of /sys/kernel/mm/lru_gen/enabled (NULL: no
 * such file, a kernel without the multi-gen LRU): only when the multi-gen LRU is off.
 */
bool pt_swap_fence_wanted(const char *lru_gen_enabled);

/*
 * The value a fence holds for a cgroup with @swap_current on swap whose own limit is
 * @saved_max: @swap_current plus PT_SWAP_FENCE_SLACK, rounded up to a page; 0 when the
 * limit is that low already (no fence needed).
 */
uint64_t pt_swap_fence_value(uint64_t swap_current, uint64_t saved_max);

/*
 * Once, before any drop: fences on or off (@lru_gen_path: /sys/kernel/mm/lru_gen/enabled),
 * and where they are kept (@runtime_dir; NULL or "": nowhere). Without this call no drop is
 * fenced.
 */
void pt_swap_fence_setup(const char *lru_gen_path, const char *runtime_dir);

/* Starts the fence of a drop in cgroup @dir (nothing written yet). */
void pt_swap_fence_start(struct pt_swap_fence *f, const char *dir);

/*
 * Before each step of the drop: holds memory.swap.max at the cgroup's swap now plus the
 * slack (the first call saves the operator's value). A failure leaves the step unfenced,
 * which is how drops were before: never an error of the drop's.
 */
void pt_swap_fence_hold(struct pt_swap_fence *f);

/* The drop is over: memory.swap.max as it was, and its state file removed. */
void pt_swap_fence_release(struct pt_swap_fence *f);

/*
 * At start: puts back memory.swap.max that a previous pagetierd's fences left in
 * @runtime_dir (where the cgroup still holds a value the fence wrote), and removes their
 * files. Returns the number of cgroups put back.
 */
unsigned int pt_swap_fence_recover(const char *runtime_dir);

#endif
