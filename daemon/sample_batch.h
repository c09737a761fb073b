/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The every-tick part of many cgroups' samples (cpu.stat and memory.current, through the
 * descriptors pt_cgroup_files keeps open) read in one io_uring submission (liburing), in
 * place of two pread() calls per cgroup: `sample_reader = io_uring` in [daemon].
 *
 * Not the default. A kernfs file has no non-blocking read, so io_uring hands each of these
 * reads to an io-wq worker thread; the system calls it saves cost less than those hand-offs
 * (bench/scale/README.md: natively 1.9x the CPU of pread per file; in the VM at 200 of
 * 1,000 containers active the daemon's CPU the same within noise).
 *
 * Each slot is one cgroup: its two reads, their buffers and their parsed values. A read that
 * fails, fills its buffer or does not parse leaves its slot failed; the caller then reads
 * that cgroup the ordinary way, which also decides what the error means (a cgroup gone).
 */
#ifndef PAGETIER_SAMPLE_BATCH_H
#define PAGETIER_SAMPLE_BATCH_H

#include <stdint.h>

struct pt_sample_batch;

/*
 * A batch of up to @slots cgroups (one submission), or NULL with *@err set: -ENOSYS or
 * -EPERM where the kernel has no io_uring or refuses it (kernel.io_uring_disabled, a
 * seccomp filter), -ENOMEM.
 */
struct pt_sample_batch *pt_sample_batch_new(unsigned int slots, int *err);
void pt_sample_batch_free(struct pt_sample_batch *b);

/* How many more cgroups fit before pt_sample_batch_run() must go. */
unsigned int pt_sample_batch_room(const struct pt_sample_batch *b);
/* Queues one cgroup's two reads; its slot (0, 1, ... in order) or -ENOSPC. */
int pt_sample_batch_add(struct pt_sample_batch *b, int cpu_stat_fd, int memory_current_fd);
/*
 * Submits what is queued and waits for all of it. 0, or the ring's own failure (-errno):
 * then every slot is failed and the batch is not to be used again (free it). The slots
 * stay readable until pt_sample_batch_reset().
 */
int pt_sample_batch_run(struct pt_sample_batch *b);
/* Slot @k after a run: 0 with the two values, or a negative errno (see above). */
int pt_sample_batch_result(const struct pt_sample_batch *b, int k, uint64_t *cpu_usage_usec,
			   uint64_t *memory_current);
/* Empties the batch for the next cgroups. */
void pt_sample_batch_reset(struct pt_sample_batch *b);

/* Submissions made, for the metrics. */
uint64_t pt_sample_batch_submissions(const struct pt_sample_batch *b);

#endif
