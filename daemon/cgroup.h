/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup v2 access: walking the tree, reading the flat-keyed and single-value files,
 * listing a subtree's processes, writing memory.low. A cgroup that vanishes while we read
 * it is normal on a container host: every function returns -ENOENT for it, never aborts.
 */
#ifndef PAGETIER_CGROUP_H
#define PAGETIER_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pt_cgroup_sample {
	uint64_t cpu_usage_usec;	/* cpu.stat usage_usec */
	uint64_t memory_current;	/* memory.current, bytes */
	uint64_t anon;			/* memory.stat anon, bytes */
	uint64_t swap_current;		/* memory.swap.current, bytes (0 if absent) */
	uint64_t swapcached;		/* memory.stat swapcached: in swap and still in memory */
	uint64_t shmem;			/* memory.stat shmem: shared memory, tmpfs, SysV shm */
	uint64_t file_cache;		/* memory.stat file - shmem: the files' page cache */
	/*
	 * memory.stat kernel (kernel_stack + pagetables + percpu + vmalloc + slab on kernels
	 * before 5.18, which lack it) + sock: the kernel's memory charged to the cgroup.
	 */
	uint64_t kernel;
};

/*
 * Calls @fn for every cgroup below @root (not @root itself), with "/a/b" and its id.
 * Returns 0, or the first error other than a cgroup vanishing meanwhile: then part of the
 * tree was not visited.
 */
typedef void (*pt_cgroup_visit_fn)(const char *relpath, uint64_t id, void *arg);
int pt_cgroup_walk(const char *root, pt_cgroup_visit_fn fn, void *arg);

/* Parses a flat-keyed file's text ("key value\n"...); 0 or -ENOENT. Pure. */
int pt_flat_keyed_get(const char *text, const char *key, uint64_t *out);

/*
 * A PSI file's "some" total (pressure stall information: the microseconds in which at least
 * one of the cgroup's tasks waited), from its text; 0, -ENOENT or -EINVAL. Pure.
 */
int pt_psi_some_total(const char *text, uint64_t *out);
/* The same, read from @dir's memory.pressure (-ENOENT where the kernel has no PSI). */
int pt_cgroup_memory_stall_us(const char *dir, uint64_t *out);

/*
 * A cgroup file's single value: "max" (UINT64_MAX) or a decimal byte or event count, then
 * at most a newline; -EINVAL for anything else (a sign, a suffix, trailing text).
 */
int pt_cgroup_parse_u64(const char *s, uint64_t *out);
int pt_cgroup_read_u64(const char *dir, const char *file, uint64_t *out);
int pt_cgroup_read_key(const char *dir, const char *file, const char *key, uint64_t *out);
/*
 * Samples a cgroup. @full also reads memory.stat and memory.swap.current (the memory
 * breakdown, which the kernel computes for the whole subtree on each read: the costly
 * part); otherwise those fields of *@s are left as they were, and only cpu.stat's
 * usage and memory.current are read.
 */
int pt_cgroup_sample(const char *dir, struct pt_cgroup_sample *s, bool full);

/*
 * The files a cgroup's every sample reads (cpu.stat, memory.current), kept open: a read at
 * offset 0 of a kernfs seq_file generates its text afresh, and open() and close() (the
 * path's lookup in kernfs) cost twice that read (bench/scale/readers.c: 2.95 against 1.07
 * us a file at 3,000 cgroups). Descriptors plus one, so that a zeroed struct holds none.
 * Up to a process-wide limit (pt_cgroup_files_set_limit; 0, the default: none kept), past
 * which a sample opens and closes as pt_cgroup_sample does. A full sample's files
 * (memory.stat, memory.swap.current) are kept too, but only while fewer than half the
 * limit are open: the files every sample reads come first.
 */
struct pt_cgroup_files {
	int cpu_stat1, memory_current1;
	int memory_stat1, memory_swap_current1;
};

int pt_cgroup_sample_files(const char *dir, struct pt_cgroup_files *f,
			   struct pt_cgroup_sample *s, bool full);
void pt_cgroup_files_close(struct pt_cgroup_files *f);
/*
 * Keeps @dir's cpu.stat and memory.current open in *@f (if they are not already) and gives
 * their descriptors, for a batched read (sample_batch.h): 0, -ENOSPC past the limit, or
 * -errno. Where such a read fails, pt_cgroup_sample_files() through the same descriptors
 * says what it means (a removed cgroup's file: -ENOENT, and they are let go).
 */
int pt_cgroup_files_keep(const char *dir, struct pt_cgroup_files *f, int *cpu_stat_fd,
			 int *memory_current_fd);
/*
 * The memory breakdown alone (memory.stat, memory.swap.current): the part of a @full
 * sample that is not read every tick.
 */
int pt_cgroup_sample_breakdown(const char *dir, struct pt_cgroup_files *f,
			       struct pt_cgroup_sample *s);
void pt_cgroup_files_set_limit(int n);
int pt_cgroup_files_open_count(void);
int pt_cgroup_write(const char *dir, const char *file, const char *value);
/* Reads a whole small file into @buf (NUL-terminated); bytes read or negative errno. */
ssize_t pt_read_file(const char *path, char *buf, size_t size);

/*
 * Fills @pids with the processes of @dir and of every cgroup below it; returns how many
 * (at most @max) or a negative errno.
 */
int pt_cgroup_pids(const char *dir, pid_t *pids, int max);
/* The cgroup id of a directory: its inode number (what bpf_get_current_cgroup_id sees). */
int pt_cgroup_id(const char *dir, uint64_t *id);

#endif
