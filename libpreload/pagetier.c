// SPDX-License-Identifier: GPL-2.0
/*
 * libpagetier.so: loaded with LD_PRELOAD into the processes of opted-in containers. Wraps the
 * malloc family and mmap/munmap/mremap and tells pagetierd, through a shared-memory ring, which
 * regions are allocated and freed and when the process is active (protocol:
 * include/pagetier/preload_proto.h).
 *
 * Rules, because this code runs inside someone else's program:
 *  - never fail or change the result of a call: every wrapper calls the real function and
 *    returns what it returned, with errno as it left it;
 *  - no allocation and no lock on the fast path; records are claimed with a CAS and dropped
 *    (counted) when the ring is full, so the application never waits for the daemon;
 *  - with no daemon (or a daemon that does not want us) it is a pass-through;
 *  - small allocations are sampled (per thread, weighted by size: one per 2^SAMPLE_UNITS_SHIFT
 *    allocation units on average, a unit being a byte asked for, plus CALL_UNITS per call;
 *    frees: 1 in 2^FREE_SAMPLE_SHIFT by address) and batched per thread; big ones
 *    (>= big_threshold) and mapping changes are always reported;
 *  - a second after registration (later while a single-threaded process allocates at a
 *    high rate: req_thread_wanted()), one thread of ours ("pagetier-req", signals blocked)
 *    sleeps on a futex in the ring and serves the daemon's requests at once, when the
 *    application itself makes no call: malloc_trim(0) at idle, and "signal your next
 *    activity", by sending every thread's next allocation down its slow path
 *    (PAGETIER_PRELOAD_THREAD=0: no thread; requests wait for a thread's next slow path).
 *
 * The real functions come from dlsym(RTLD_NEXT) (so another preloaded allocator still works),
 * resolved on first use. dlsym itself may call calloc: those calls, made while resolving, are
 * served from a small static arena whose blocks are never freed.
 *
 * The fast path (malloc, calloc, free: almost every call) is a few instructions and a tail
 * call to the real function, with no atomic and no store to shared memory:
 *  - malloc, calloc: the call's units (size + CALL_UNITS) come off a per-thread budget
 *    (initial-exec TLS) that is never more than BIG_THRESHOLD, so a big block, the end of
 *    the budget and a budget zeroed by the request thread all take the slow path through
 *    the same one compare (budget_reload());
 *  - free: one test of the block's address bits (the sample, NULL, and "not glibc" at once)
 *    and one compare of glibc's chunk-size word (big blocks).
 * Everything else (resolving, sampling, big blocks, requests, ticks) is out of line and runs
 * once every BIG_THRESHOLD units at most and for big blocks. A thread's budget starts at 0,
 * so its first call takes the slow path, which is also where the real functions get
 * resolved: a budget that lets a call through implies they are.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "pagetier/preload_proto.h"
#include "pagetier/preload_ring.h"

#define EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
/* initial-exec: the general-dynamic model may call malloc on first access in a thread. */
#define TLS __thread __attribute__((tls_model("initial-exec")))

/*
 * Small allocations: one sample per 2^18 units (jittered), which for small blocks is about
 * 1 in 1000 calls (a busy server makes millions per second, and the daemon needs a
 * statistical picture of them, not each one) and for larger ones is proportional to their
 * size, like the memory they hold. CALL_UNITS makes every call count, size 0 included.
 */
#define SAMPLE_UNITS_SHIFT PT_PRELOAD_SAMPLE_SHIFT
#define CALL_UNITS 256
/* Frees: the blocks whose address has these bits clear (1 in 2^FREE_SAMPLE_SHIFT). */
#define FREE_SAMPLE_SHIFT 10
#define FREE_SAMPLE_MASK ((uintptr_t)((1U << FREE_SAMPLE_SHIFT) - 1) << 4)
#define FREE_SAMPLE_BITS 20	/* the mask's bits are drawn from bits 4..23 of free_hash() */
#define BIG_THRESHOLD (64 * 1024)	/* the daemon's hotness chunk */
/* The most a thread's budget holds: every big block's units exceed it. */
#define BUDGET_MAX BIG_THRESHOLD
#define TICK_NS (10 * 1000 * 1000ULL)
#define HEARTBEAT_NS (1000 * 1000 * 1000ULL)
#define RETRY_NS (10 * 1000 * 1000 * 1000ULL)	/* reconnect attempts without a daemon */
#define BATCH 8

/* --- real functions -------------------------------------------------------------------- */

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static size_t (*real_usable_size)(void *);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);

/* glibc's own entry points, if RTLD_NEXT has nothing (it always has with glibc). */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_int resolve_state;	/* 0: not yet, 1: resolving, 2: done */

/*
 * Static arena for allocations made by dlsym while we resolve. Each block has a 16-byte
 * header: its size (for realloc out of the arena), then BOOT_MARK where glibc keeps a chunk's
 * size, so that free's fast path, which reads that word, sends arena blocks to the slow path.
 */
#define BOOT_MARK SIZE_MAX
static _Alignas(64) char boot_arena[64 * 1024];
static atomic_size_t boot_used;

static bool in_boot_arena(const void *p)
{
	return (const char *)p >= boot_arena && (const char *)p < boot_arena + sizeof(boot_arena);
}

static void *boot_alloc(size_t size, size_t align)
{
	size_t need, off, start;

	if (align < 16)
		align = 16;
	if (size > sizeof(boot_arena) || align > 4096)
		return NULL;
	need = size + align + 16;
	off = atomic_fetch_add(&boot_used, need);
	if (off + need > sizeof(boot_arena))
		return NULL;
	start = ((uintptr_t)(boot_arena + off + 16) + align - 1) & ~(uintptr_t)(align - 1);
	((size_t *)start)[-2] = size;
	((size_t *)start)[-1] = BOOT_MARK;
	return (void *)start;
}

static size_t boot_size(const void *p)
{
	return ((const size_t *)p)[-2];
}

/*
 * Whether the allocator below us is glibc's, whose blocks all carry their chunk size in the
 * word before them (low 3 bits: flags): then free tells a big block from a small one with one
 * load of a cache line it is about to touch anyway. Any other allocator (jemalloc under
 * redis, say) may put a block at the start of a page with nothing readable before it: then
 * frees go through big_ptr[] instead.
 */
static atomic_bool g_chunk_headers;
static _Atomic uintptr_t g_free_mask;	/* see free_is_fast(), free_mask_update() */
static _Atomic uintptr_t g_sample_mask = FREE_SAMPLE_MASK;	/* see free_sampled() */

/*
 * The free sample tests bits 4..23 of the address times an odd constant rather than of the
 * address: a multiplication maps those bits one to one and mixes them, where raw address
 * bits are far from uniform. A new thread arena hands out blocks at small offsets from a
 * 64 MiB boundary, so most of its bits 4..23 are 0, and a random mask then sampled about
 * 14 times more of its addresses than intended (48 times more among 64 hot ones), enough
 * to flood the ring from a plain malloc/realloc/free loop. One instruction on x86-64 (imul
 * with a 32-bit immediate, sign-extended). NULL hashes to 0, like a sampled address.
 */
#define FREE_HASH_MUL ((uintptr_t)(intptr_t)(int32_t)0x9e3779b1)

static inline uintptr_t free_hash(const void *p)
{
	return (uintptr_t)p * FREE_HASH_MUL;
}

static void free_mask_update(void);

static bool next_is_glibc(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	bool ok;

	if (!libc)
		return false;
	ok = real_malloc == dlsym(libc, "malloc") && real_free == dlsym(libc, "free") &&
	     real_calloc == dlsym(libc, "calloc") && real_realloc == dlsym(libc, "realloc") &&
	     real_memalign == dlsym(libc, "memalign") &&
	     real_posix_memalign == dlsym(libc, "posix_memalign") &&
	     real_aligned_alloc == dlsym(libc, "aligned_alloc") &&
	     real_valloc == dlsym(libc, "valloc") && real_pvalloc == dlsym(libc, "pvalloc") &&
	     real_usable_size && real_usable_size == dlsym(libc, "malloc_usable_size");
	dlclose(libc);
	return ok;
}

#define RESOLVE(name, fallback) do {						\
	void *p = dlsym(RTLD_NEXT, #name);					\
	*(void **)&real_##name = p ? p : (void *)(fallback);			\
} while (0)

static void resolve(void)
{
	int expected = 0;

	if (!atomic_compare_exchange_strong(&resolve_state, &expected, 1))
		return;		/* done, or in progress (a dlsym calling back into us) */
	RESOLVE(malloc, __libc_malloc);
	RESOLVE(free, __libc_free);
	RESOLVE(calloc, __libc_calloc);
	RESOLVE(realloc, __libc_realloc);
	RESOLVE(posix_memalign, NULL);
	RESOLVE(aligned_alloc, NULL);
	RESOLVE(memalign, __libc_memalign);
	RESOLVE(valloc, NULL);
	RESOLVE(pvalloc, NULL);
	*(void **)&real_usable_size = dlsym(RTLD_NEXT, "malloc_usable_size");
	RESOLVE(mmap, NULL);
	RESOLVE(munmap, NULL);
	RESOLVE(mremap, NULL);
	if (next_is_glibc()) {
		atomic_store_explicit(&g_chunk_headers, true, memory_order_relaxed);
		free_mask_update();
	}
	atomic_store(&resolve_state, 2);
}

static inline bool resolved(void)
{
	if (likely(atomic_load_explicit(&resolve_state, memory_order_acquire) == 2))
		return true;
	resolve();
	return atomic_load_explicit(&resolve_state, memory_order_acquire) == 2;
}

/* --- the ring (the producer itself: pagetier/preload_ring.h) ---------------------------- */

/*
 * The registered ring. Replaced only when no ring is registered (after fork, or when a
 * daemon appears). Registrations alternate between the two slots, so that the ring a
 * registration retires is never the one the next registration reuses: a slot's old
 * mapping is unmapped only when the slot is filled again, one more registration and at
 * least g_retry_ns after it stopped being the registered ring, long after any thread that
 * had loaded it finished its record. A daemon that restarts thus costs no memory.
 */
static struct pt_preload_ring ring_storage[2];
static int g_next_slot;

/* The size of @r's mapping (the memfd's), from its slots. */
static uint64_t ring_bytes(const struct pt_preload_ring *r)
{
	return PT_PRELOAD_RING_BYTES(r->mask + 1);
}

static _Atomic(struct pt_preload_ring *) g_ring;
static uint64_t g_retry_ns = RETRY_NS;	/* PAGETIER_PRELOAD_RETRY_MS, for tests */
static int g_sock = -1;			/* the registration connection */
static dev_t g_sock_dev;
static ino_t g_sock_ino;
static atomic_int g_state;		/* enum below */
static atomic_uint_fast64_t g_req_seen;	/* ctl.req_seq we have acted on */

/*
 * free()'s mask (free_is_fast()): 0 under another allocator, whose blocks have no chunk word
 * to read (every free out of line); under glibc the sample's mask while a ring is
 * registered, and all ones otherwise, where only NULL hashes to 0: no free is sampled for
 * nobody, and only NULL, arena and big blocks leave the fast path.
 */
static void free_mask_update(void)
{
	uintptr_t mask = 0;

	if (atomic_load_explicit(&g_chunk_headers, memory_order_relaxed))
		mask = atomic_load_explicit(&g_ring, memory_order_acquire) ?
		       atomic_load_explicit(&g_sample_mask, memory_order_relaxed) : ~(uintptr_t)0;
	atomic_store_explicit(&g_free_mask, mask, memory_order_release);
}
static atomic_uint_fast64_t g_last_tick_ns;
static atomic_uint_fast64_t g_last_heartbeat_ns;
static atomic_uint_fast64_t g_last_attempt_ns;
static atomic_uint_fast64_t g_units;	/* allocation units, flushed from threads at ticks */
static bool g_disabled;
static bool g_no_trim;			/* PAGETIER_PRELOAD_NO_TRIM: trim requests acked, not run */
static bool g_req_thread_off;		/* PAGETIER_PRELOAD_THREAD=0 */
static atomic_bool g_req_thread;	/* the request thread runs (in this process) */
static pthread_key_t g_thread_key;
static bool g_have_key;

enum { ST_NONE, ST_REGISTERING, ST_PENDING, ST_ACTIVE, ST_REJECTED };

struct pending {
	uint16_t type;
	uint16_t flags;
	uint64_t addr, len, addr2;
};

enum { THREAD_NEW, THREAD_LISTED, THREAD_UNLISTED };

struct thread_state {
	/*
	 * Allocation units this thread may still use before its next slow path: first member
	 * (the fast path's asm), at most BUDGET_MAX, and zeroed by the request thread to send
	 * the next allocation down the slow path. Written by that thread only with an atomic
	 * store; the owner's subtract is not atomic, so a zero stored in the middle of it may
	 * be lost, and then the next slow path, at most BUDGET_MAX units later, does its work.
	 */
	uint64_t budget;
	uint64_t period;		/* the budget's last start value */
	int64_t to_sample;		/* units until the next sample and tick */
	uint64_t units;			/* used, flushed to g_units at ticks */
	uint8_t armed;			/* set with budget = 0 by the request thread */
	uintptr_t last_sampled_free[2];	/* the last two frees in the sample */
	uint32_t rand;
	uint32_t tid;
	unsigned int n;
	uint8_t listed;			/* THREAD_*: in g_threads (and the key set) */
	struct thread_state *next, **pprev;	/* g_threads */
	struct pending batch[BATCH];
};

static TLS struct thread_state ts __asm__("pt_ts");

/*
 * Fast-path helper: takes @units (the size, plus CALL_UNITS) off ts.budget and jumps to
 * @slow when they were at least what was left. On x86-64 that is four instructions (the TLS
 * offset from the GOT, the units, a subtract on %fs, a branch on its carry and zero flags)
 * where the compiler emits seven; the budget is the first member of ts. Needs the TLS
 * symbol's name: ts is referred to as pt_ts in asm. A size so large that the addition wraps
 * comes off as a few units and goes to the real function, which fails it.
 */
#if defined(__x86_64__) && defined(__PIC__)
#define BUDGET_OR_GOTO(size, slow)						\
	asm goto("movq pt_ts@gottpoff(%%rip), %%rax\n\t"			\
		 "leaq %c1(%0), %%rdx\n\t"					\
		 "subq %%rdx, %%fs:(%%rax)\n\t"				\
		 "jbe %l[" #slow "]"						\
		 : : "r"(size), "i"(CALL_UNITS) : "rax", "rdx", "cc", "memory" : slow)
#else
#define BUDGET_OR_GOTO(size, slow) do { if (budget_take(size)) goto slow; } while (0)
#endif

/* BUDGET_OR_GOTO in C, for the paths that are slow anyway: true when the budget ran out. */
static inline bool budget_take(size_t size)
{
	uint64_t units = (uint64_t)size + CALL_UNITS;
	uint64_t left = __atomic_load_n(&ts.budget, __ATOMIC_RELAXED);

	__atomic_store_n(&ts.budget, left - units, __ATOMIC_RELAXED);
	return units >= left;
}

static uint64_t coarse_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static uint32_t thread_tid(void)
{
	if (unlikely(!ts.tid))
		ts.tid = (uint32_t)syscall(SYS_gettid);	/* cached: a syscall per batch adds up */
	return ts.tid;
}

static void flush_batch(void)
{
	struct pt_preload_ring *r = atomic_load_explicit(&g_ring, memory_order_acquire);
	unsigned int n = ts.n;
	uint32_t tid;
	uint64_t pos;

	ts.n = 0;
	if (!r || !n || n > BATCH)
		return;
	if (!pt_preload_ring_claim(r, n, &pos))
		return;
	tid = thread_tid();
	for (unsigned int i = 0; i < n; i++)
		pt_preload_ring_put(r, pos + i, tid, ts.batch[i].type, ts.batch[i].flags,
				    ts.batch[i].addr, ts.batch[i].len, ts.batch[i].addr2, 0);
}

/* --- the threads' list ------------------------------------------------------------------ */

/*
 * Every thread that has allocated is on g_threads, so that the request thread can zero its
 * budget, until its exit runs thread_exit() (our pthread key's destructor, which also
 * flushes its last records): the list never points at a dead thread's TLS. A spinlock,
 * held for a few stores; never taken on the fast path, and once per thread on a slow path.
 */
static struct thread_state *g_threads;
static atomic_flag g_threads_lock = ATOMIC_FLAG_INIT;

static void threads_lock(void)
{
	while (atomic_flag_test_and_set_explicit(&g_threads_lock, memory_order_acquire))
		sched_yield();
}

static void threads_unlock(void)
{
	atomic_flag_clear_explicit(&g_threads_lock, memory_order_release);
}

static void threads_link(struct thread_state *t)
{
	t->next = g_threads;
	t->pprev = &g_threads;
	if (g_threads)
		g_threads->pprev = &t->next;
	g_threads = t;
}

/* Once per thread, from its first slow path. */
static void thread_enlist(void)
{
	if (likely(ts.listed != THREAD_NEW))
		return;
	/* First: a signal handler's allocation in between must not come in again. */
	ts.listed = THREAD_UNLISTED;
	if (!g_have_key || pthread_setspecific(g_thread_key, &ts))
		return;		/* no destructor would take it off the list */
	threads_lock();
	threads_link(&ts);
	ts.listed = THREAD_LISTED;
	threads_unlock();
}

static void thread_exit(void *arg)
{
	(void)arg;
	flush_batch();
	if (ts.listed == THREAD_LISTED) {
		threads_lock();
		*ts.pprev = ts.next;
		if (ts.next)
			ts.next->pprev = ts.pprev;
		ts.listed = THREAD_UNLISTED;	/* for good: later destructors may allocate */
		threads_unlock();
	}
}

/* The request thread: every thread's next allocation takes the slow path. */
static void threads_expire_budgets(void)
{
	threads_lock();
	for (struct thread_state *t = g_threads; t; t = t->next) {
		__atomic_store_n(&t->armed, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&t->budget, 0, __ATOMIC_RELAXED);
	}
	threads_unlock();
}

/* After fork: the child's only thread is this one. */
static void threads_reset_in_child(void)
{
	atomic_flag_clear(&g_threads_lock);
	g_threads = NULL;
	if (ts.listed == THREAD_LISTED)
		threads_link(&ts);
}

static void queue(uint16_t type, uint16_t flags, uint64_t addr, uint64_t len, uint64_t addr2)
{
	unsigned int i = ts.n;

	thread_enlist();	/* so that its last records are flushed when it exits */
	if (i >= BATCH)
		i = ts.n = 0;	/* only after a signal handler raced us: start over */
	ts.batch[i] = (struct pending){ type, flags, addr, len, addr2 };
	ts.n = i + 1;
	if (ts.n == BATCH)
		flush_batch();
}

/* Mapping changes and wake heartbeats go out at once, after what this thread had queued. */
static void emit_now(uint16_t type, uint16_t flags, uint64_t addr, uint64_t len,
		     uint64_t addr2, uint64_t len2)
{
	struct pt_preload_ring *r = atomic_load_explicit(&g_ring, memory_order_acquire);
	uint64_t pos;

	if (!r)
		return;
	flush_batch();
	if (pt_preload_ring_claim(r, 1, &pos))
		pt_preload_ring_put(r, pos, thread_tid(), type, flags, addr, len, addr2, len2);
}

/* --- registration ----------------------------------------------------------------------- */

static bool sock_is_ours(void)
{
	struct stat st;

	/* The application may have closed our fd (closefrom) and reused the number. */
	return g_sock >= 0 && fstat(g_sock, &st) == 0 && S_ISSOCK(st.st_mode) &&
	       st.st_dev == g_sock_dev && st.st_ino == g_sock_ino;
}

static void drop_sock(void)
{
	if (sock_is_ours())
		close(g_sock);
	g_sock = -1;
}

static int do_munmap(void *p, size_t len)
{
	return real_munmap ? real_munmap(p, len) : (int)syscall(SYS_munmap, p, len);
}

static void *do_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (real_mmap)
		return real_mmap(addr, len, prot, flags, fd, off);
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

/*
 * Connects to the daemon and hands it a new ring. Called by one thread at a time (g_state
 * ST_REGISTERING). Only syscalls: no allocation, so it may run inside a hooked call.
 */
static void register_ring(void)
{
	const char *path = secure_getenv(PT_PRELOAD_SOCK_ENV);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pt_preload_hello hello = {
		.magic = PT_PRELOAD_MAGIC,
		.version = PT_PRELOAD_VERSION,
		.size = sizeof(hello),
		.ring_bytes = PT_PRELOAD_RING_BYTES(PT_PRELOAD_DEFAULT_SLOTS),
	};
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &hello, sizeof(hello) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	struct pt_preload_ring *r;
	struct stat st;
	int sock, mfd = -1, state = ST_NONE;
	void *mem = MAP_FAILED;

	if (!path || !*path)
		path = PT_PRELOAD_SOCK_PATH;
	if (strlen(path) >= sizeof(sa.sun_path))
		goto out;
	strcpy(sa.sun_path, path);
	/* Connect first: with no daemon, that is all it costs. */
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sock < 0)
		goto out;
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0 || fstat(sock, &st) < 0) {
		close(sock);
		goto out;
	}
	mfd = (int)syscall(SYS_memfd_create, "pagetier-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0 || ftruncate(mfd, (off_t)hello.ring_bytes) < 0)
		goto fail;
	mem = do_mmap(NULL, hello.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (mem == MAP_FAILED)
		goto fail;
	/* The daemon maps it too: it must not be able to shrink under its mapping. */
	if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	r = &ring_storage[g_next_slot];
	if (r->hdr)
		do_munmap(r->hdr, ring_bytes(r));
	g_next_slot ^= 1;
	pt_preload_ring_init(r, mem, PT_PRELOAD_DEFAULT_SLOTS);
	r->hdr->sample_shift = SAMPLE_UNITS_SHIFT;
	r->hdr->call_units = CALL_UNITS;
	r->hdr->free_sample_shift = FREE_SAMPLE_SHIFT;
	r->hdr->big_threshold = BIG_THRESHOLD;
	r->hdr->activity_ns = coarse_ns();

	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &mfd, sizeof(int));
	if (sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(hello))
		goto fail;
	close(mfd);	/* the daemon has its reference, our mapping keeps the memory */
	g_sock = sock;
	g_sock_dev = st.st_dev;
	g_sock_ino = st.st_ino;
	atomic_store(&g_req_seen, 0);
	/* Records go to the ring from now on; the daemon's answer is read at a tick. */
	atomic_store_explicit(&g_ring, r, memory_order_release);
	free_mask_update();
	state = ST_PENDING;
	goto out;
fail:
	if (mem != MAP_FAILED)
		do_munmap(mem, hello.ring_bytes);
	if (mfd >= 0)
		close(mfd);
	close(sock);
out:
	atomic_store(&g_last_attempt_ns, coarse_ns());
	atomic_store(&g_state, state);
}

static void try_register(void)
{
	int expected = ST_NONE;

	if (g_disabled || !resolved())
		return;
	if (atomic_compare_exchange_strong(&g_state, &expected, ST_REGISTERING))
		register_ring();
}

/* Stop using the ring (rejected, or the daemon went away). Its mapping stays. */
static void unregister(int state)
{
	atomic_store_explicit(&g_ring, NULL, memory_order_release);
	free_mask_update();
	atomic_store(&g_req_seen, 0);
	drop_sock();
	ts.n = 0;
	atomic_store(&g_state, state);
}

/* Reads the daemon's answer and notices it going away. Only from a tick. */
static void check_sock(int state)
{
	char c = 0;
	ssize_t n;

	if (!sock_is_ours()) {
		g_sock = -1;
		unregister(ST_NONE);
		return;
	}
	n = recv(g_sock, &c, 1, MSG_DONTWAIT);
	if (n == 1 && c == PT_PRELOAD_ACCEPT && state == ST_PENDING)
		atomic_store(&g_state, ST_ACTIVE);
	else if (n == 1 && c == PT_PRELOAD_REJECT)
		unregister(ST_REJECTED);	/* not opted in: pass-through until exec */
	else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		unregister(ST_NONE);		/* daemon gone: try again later */
}

/* --- requests, ticks, heartbeats -------------------------------------------------------- */

static void doorbell(void)
{
	char c = PT_PRELOAD_DOORBELL;

	if (sock_is_ours())
		(void)send(g_sock, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/*
 * malloc_trim(0) for request @seq, once: the request thread and an allocator call may both
 * see it. trim_done is written after the trim, so the daemon, which waits for it before
 * it offloads, does not page out what the trim is about to drop.
 */
static atomic_uint g_trim_serving;	/* a thread is in serve_trim(); reset in a child */

static bool serve_trim(struct pt_preload_ring *r, uint32_t seq)
{
	unsigned int idle = 0;

	if (!atomic_compare_exchange_strong(&g_trim_serving, &idle, 1))
		return false;	/* another thread is trimming */
	if (r->hdr->trim_done != seq) {
		if (!g_no_trim) {
			malloc_trim(0);
			r->hdr->trims++;
		}
		atomic_store_explicit((_Atomic uint32_t *)&r->hdr->trim_done, seq,
				      memory_order_release);
	}
	atomic_store(&g_trim_serving, 0);
	return true;
}

/*
 * The request thread: a process that sleeps makes no allocator call, so a request served
 * only there comes too late (malloc_trim before the offload at idle) or costs the fast path
 * a look at shared memory on every call (the wake signal). This thread sleeps on
 * ctl.req_word (a futex in the shared ring; the daemon wakes it after every request),
 * serves trims at once, and for "signal your next activity" zeroes every thread's budget:
 * the next allocation of any thread then takes the slow path, which answers the request
 * (check_requests()). It looks at the ring again every 10 s at most, since a new
 * registration replaces it; that wakeup is one short one and not a wake signal for the
 * daemon (a single task wakeup is not). All signals are blocked in it: they stay the
 * application's.
 */
static void *req_thread_main(void *arg)
{
	struct pt_preload_ring *armed_ring = NULL;
	uint32_t armed_seq = 0;

	(void)arg;
	for (;;) {
		struct pt_preload_ring *r = atomic_load_explicit(&g_ring, memory_order_acquire);
		struct timespec ts10 = { .tv_sec = 10 };
		uint32_t word, idle_seq, trim_seq;

		if (!r) {
			nanosleep(&ts10, NULL);
			continue;
		}
		/* Before the requests: one stored after this changes the word, and FUTEX_WAIT
		 * then returns at once. */
		word = atomic_load_explicit((_Atomic uint32_t *)&r->ctl->req_word,
					    memory_order_acquire);
		idle_seq = atomic_load_explicit((_Atomic uint32_t *)&r->ctl->idle_seq,
						memory_order_acquire);
		trim_seq = atomic_load_explicit((_Atomic uint32_t *)&r->ctl->trim_seq,
						memory_order_acquire);
		if (idle_seq != r->hdr->idle_ack && (r != armed_ring || idle_seq != armed_seq)) {
			armed_ring = r;
			armed_seq = idle_seq;
			threads_expire_budgets();
		}
		if (trim_seq != r->hdr->trim_done) {
			struct timespec ms1 = { .tv_nsec = 1000000 };

			if (!serve_trim(r, trim_seq))
				nanosleep(&ms1, NULL);
			continue;
		}
		syscall(SYS_futex, &r->ctl->req_word, FUTEX_WAIT, word, &ts10, NULL, 0);
	}
	return NULL;
}

/*
 * Whether to start the request thread now, at a heartbeat (@units allocated in the last
 * @ns). Not at registration: short-lived processes (a shell's children) would pay a thread
 * each; what lives a second may one day sleep, and needs it then. Not either while a
 * single-threaded process allocates at a high rate: a second thread turns glibc's malloc
 * to its multi-threaded paths (atomics and arena locks) for good, which cost Lua
 * binary-trees 6% of its CPU time; such a process gets the thread when it calms down.
 */
#define REQ_THREAD_MAX_UNITS_PER_S (256ULL << 20)	/* about 1M small calls a second */

static bool req_thread_wanted(uint64_t units, uint64_t ns)
{
	if (!__libc_single_threaded)
		return true;
	return ns && units < REQ_THREAD_MAX_UNITS_PER_S / 1000 * (ns / 1000000);
}

/* Starts the request thread once per process. */
static void start_req_thread(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t th;
	bool no = false;

	if (g_req_thread_off || !atomic_compare_exchange_strong(&g_req_thread, &no, true))
		return;
	if (pthread_attr_init(&attr)) {
		atomic_store(&g_req_thread, false);
		return;
	}
	pthread_attr_setstacksize(&attr, 64 << 10);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&th, &attr, req_thread_main, NULL))
		atomic_store(&g_req_thread, false);
	else
		pthread_setname_np(th, "pagetier-req");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

/* "Signal your next activity": answered once per request, whichever thread sees it first. */
static void ack_idle(struct pt_preload_ring *r)
{
	uint32_t idle_seq = atomic_load_explicit((_Atomic uint32_t *)&r->ctl->idle_seq,
						 memory_order_acquire);
	uint32_t ack = __atomic_load_n(&r->hdr->idle_ack, __ATOMIC_RELAXED);

	if (idle_seq != ack && __atomic_compare_exchange_n(&r->hdr->idle_ack, &ack, idle_seq, false,
							   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		emit_now(PT_PRELOAD_REC_HEARTBEAT, PT_PRELOAD_F_WAKE, 0, ts.units, 0, 0);
		doorbell();
	}
}

/*
 * The daemon bumped ctl.req_seq: serve its requests. Runs after the real call. @may_trim
 * is false from mmap, munmap and mremap: those may run in a signal handler that
 * interrupted malloc with its arena lock held (they are async-signal-safe, malloc_trim is
 * not), and a trim there would deadlock on that lock. Their callers answer the wake
 * request (lock-free) and leave a trim to the next allocator call or the request thread.
 */
static __attribute__((noinline, cold)) void serve_requests(struct pt_preload_ring *r,
							   uint64_t seen, uint64_t req,
							   bool may_trim)
{
	uint_fast64_t expected = seen;
	uint32_t trim_seq;
	int saved = errno;

	atomic_thread_fence(memory_order_acquire);
	trim_seq = atomic_load_explicit((_Atomic uint32_t *)&r->ctl->trim_seq,
					memory_order_acquire);
	if (!may_trim && trim_seq != r->hdr->trim_done) {
		ack_idle(r);		/* req stays unseen: the trim is still to serve */
		errno = saved;
		return;
	}
	/* One thread serves each request. */
	if (!atomic_compare_exchange_strong(&g_req_seen, &expected, req))
		return;
	ack_idle(r);
	if (trim_seq != r->hdr->trim_done)
		(void)serve_trim(r, trim_seq);
	errno = saved;
}

/* From every slow path: has the daemon asked for something? See serve_requests(). */
static void check_requests_from(bool may_trim)
{
	struct pt_preload_ring *r = atomic_load_explicit(&g_ring, memory_order_acquire);
	uint64_t req, seen;

	if (!r)
		return;
	req = atomic_load_explicit((_Atomic uint64_t *)&r->ctl->req_seq, memory_order_relaxed);
	seen = atomic_load_explicit(&g_req_seen, memory_order_relaxed);
	if (unlikely(req != seen))
		serve_requests(r, seen, req, may_trim);
}

static void check_requests(void)
{
	check_requests_from(true);
}

static void rotate_free_sample(uint64_t seed);

static void tick(void)
{
	uint64_t now = coarse_ns(), last = atomic_load(&g_last_tick_ns);
	struct pt_preload_ring *r;
	int state;

	atomic_fetch_add_explicit(&g_units, ts.units, memory_order_relaxed);
	ts.units = 0;
	flush_batch();
	if (now - last < TICK_NS || !atomic_compare_exchange_strong(&g_last_tick_ns, &last, now))
		return;
	/* This thread won the tick. */
	rotate_free_sample(now ^ ((uint64_t)ts.rand << 32) ^ (uintptr_t)&ts);
	state = atomic_load(&g_state);
	r = atomic_load_explicit(&g_ring, memory_order_acquire);
	if (r) {
		static uint64_t units_at_heartbeat;	/* under the tick: one thread at a time */

		r->hdr->activity_ns = now;
		r->hdr->alloc_units += atomic_exchange(&g_units, 0);
		uint64_t last_hb = atomic_load(&g_last_heartbeat_ns);

		if (now - last_hb >= HEARTBEAT_NS) {
			uint64_t units;

			atomic_store(&g_last_heartbeat_ns, now);
			if (units_at_heartbeat > r->hdr->alloc_units)
				units_at_heartbeat = 0;		/* a new ring */
			units = r->hdr->alloc_units - units_at_heartbeat;
			emit_now(PT_PRELOAD_REC_HEARTBEAT, 0, 0, units, 0, 0);
			units_at_heartbeat = r->hdr->alloc_units;
			if (state == ST_ACTIVE) {
				check_sock(state);	/* daemon still there? once a second */
				if (req_thread_wanted(units, now - last_hb))
					start_req_thread();
			}
		}
		if (state == ST_PENDING)
			check_sock(state);		/* its answer, every tick until it comes */
	} else if (state == ST_NONE && now - atomic_load(&g_last_attempt_ns) >= g_retry_ns) {
		try_register();
	}
}

/*
 * Sampling: every 2^SAMPLE_UNITS_SHIFT units or so (jittered, so that periodic allocation
 * patterns are not aliased) the allocation that crosses the mark is sampled and the thread
 * ticks. The budget that the fast path counts down covers at most BUDGET_MAX units of that
 * way (a big block must always run out of it), so most slow paths only restart it.
 *
 * Frees are not counted: they are sampled by address (free_sampled()), which costs free's
 * fast path no memory write.
 */
#define SAMPLE_UNITS_MIN (1LL << (SAMPLE_UNITS_SHIFT - 1))
#define SAMPLE_UNITS_MAX (3LL << (SAMPLE_UNITS_SHIFT - 1))

/* The mark was crossed by this allocation: sample it, draw the next mark, tick. */
static __attribute__((noinline, cold)) void sample_and_tick(uint16_t flags, void *p, size_t size,
							    void *old)
{
	ts.rand = ts.rand * 1103515245U + 12345U + (uint32_t)(uintptr_t)&ts;
	ts.to_sample = SAMPLE_UNITS_MIN +
		       (int64_t)((ts.rand >> 8) & ((1U << SAMPLE_UNITS_SHIFT) - 1));
	if (p && size < BIG_THRESHOLD && atomic_load_explicit(&g_ring, memory_order_relaxed))
		queue(PT_PRELOAD_REC_ALLOC, flags | PT_PRELOAD_F_SAMPLED, (uintptr_t)p, size,
		      (uintptr_t)old);
	tick();
}

/*
 * The budget ran out on this allocation (or was zeroed, or the thread is new): count what
 * it covered, sample if the mark was crossed, and start a new one. Also the only place a
 * thread counts its units and looks at the clock. A thread's first call, with to_sample 0,
 * samples and ticks.
 */
static __attribute__((noinline)) void budget_reload(uint16_t flags, void *p, size_t size,
						    void *old)
{
	int saved = errno;
	uint64_t period;

	thread_enlist();
	__atomic_store_n(&ts.armed, 0, __ATOMIC_RELAXED);
	ts.units += ts.period;
	ts.to_sample -= (int64_t)ts.period;
	if (ts.to_sample <= 0 || ts.to_sample > SAMPLE_UNITS_MAX)
		sample_and_tick(flags, p, size, old);
	period = ts.to_sample < BUDGET_MAX ? (uint64_t)ts.to_sample : BUDGET_MAX;
	ts.period = period;
	__atomic_store_n(&ts.budget, period, __ATOMIC_RELAXED);
	errno = saved;
}

/*
 * Big blocks. Allocations of at least BIG_THRESHOLD are always reported; so are their frees,
 * found from glibc's chunk header (g_chunk_headers) or, under another allocator, from a
 * direct-mapped table of live big blocks. A collision there evicts the older block (its free
 * then goes unreported, like a sampled-out one); the daemon treats all of this as hints.
 */
#define BIG_SLOTS_SHIFT 12
static _Atomic uintptr_t big_ptr[1U << BIG_SLOTS_SHIFT];
static size_t big_len[1U << BIG_SLOTS_SHIFT];

static inline unsigned int big_slot(const void *p)
{
	return (unsigned int)(((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ULL >> (64 - BIG_SLOTS_SHIFT));
}

/* glibc's size word of the chunk of @p: at least BIG_THRESHOLD for every big block. */
static inline size_t chunk_word(const void *p)
{
	return ((const size_t *)p)[-1];
}

static __attribute__((noinline)) void note_big_alloc(void *p, size_t size, uint16_t kind,
						     void *old)
{
	if (!atomic_load_explicit(&g_ring, memory_order_relaxed))
		return;
	if (!atomic_load_explicit(&g_chunk_headers, memory_order_relaxed)) {
		unsigned int h = big_slot(p);

		big_len[h] = size;
		atomic_store_explicit(&big_ptr[h], (uintptr_t)p, memory_order_release);
	}
	queue(PT_PRELOAD_REC_ALLOC, kind | PT_PRELOAD_F_BIG, (uintptr_t)p, size, (uintptr_t)old);
}

/*
 * Whether the free of @p is in the sample: free_hash(p) has the bits of g_sample_mask clear,
 * 1 in 2^FREE_SAMPLE_SHIFT addresses. Allocators reuse a hot address over and over (glibc's
 * tcache, jemalloc's lowest-first slabs): with a fixed mask, such an address would be either
 * never or always sampled, and "always" floods the ring and puts that program's hottest free
 * on the slow path. So the mask is redrawn at every tick (rotate_free_sample()): a different
 * FREE_SAMPLE_SHIFT of the bits 4..23 each time.
 */
static bool free_sampled(const void *p)
{
	return (free_hash(p) & atomic_load_explicit(&g_sample_mask, memory_order_relaxed)) == 0;
}

static void rotate_free_sample(uint64_t seed)
{
	uintptr_t mask = 0;
	unsigned int n = 0;

	seed |= 1;	/* xorshift never leaves 0 */
	while (n < FREE_SAMPLE_SHIFT) {
		uintptr_t bit;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		bit = (uintptr_t)1 << (4 + (seed >> 32) % FREE_SAMPLE_BITS);
		if (!(mask & bit)) {
			mask |= bit;
			n++;
		}
	}
	atomic_store_explicit(&g_sample_mask, mask, memory_order_relaxed);
	free_mask_update();
}

/* Before the real free (afterwards the block's size is gone): big ones, and sampled ones. */
static __attribute__((noinline)) void note_free(void *p)
{
	size_t len;

	if (!atomic_load_explicit(&g_ring, memory_order_relaxed))
		return;
	if (atomic_load_explicit(&g_chunk_headers, memory_order_relaxed)) {
		if (chunk_word(p) >= BIG_THRESHOLD && (len = real_usable_size(p)) >= BIG_THRESHOLD) {
			queue(PT_PRELOAD_REC_FREE, PT_PRELOAD_F_BIG, (uintptr_t)p, len, 0);
			return;
		}
	} else {
		unsigned int h = big_slot(p);
		uintptr_t expected = (uintptr_t)p;

		if (atomic_load_explicit(&big_ptr[h], memory_order_relaxed) == (uintptr_t)p) {
			len = big_len[h];
			if (atomic_compare_exchange_strong(&big_ptr[h], &expected, 0) && len) {
				queue(PT_PRELOAD_REC_FREE, PT_PRELOAD_F_BIG, (uintptr_t)p, len, 0);
				return;
			}
		}
	}
	if (free_sampled(p) && real_usable_size && (len = real_usable_size(p)) < BIG_THRESHOLD) {
		queue(PT_PRELOAD_REC_FREE, PT_PRELOAD_F_SAMPLED, (uintptr_t)p, len, 0);
		/*
		 * The same address again: a hot one (glibc keeps one per tcache bin and
		 * thread) is in the sample, and would put every free of it on the slow
		 * path and in the ring until the next tick. Redraw the mask now. This
		 * samples reused addresses less than others: the daemon uses frees as
		 * hints, and a flood costs the application.
		 */
		if ((uintptr_t)p == ts.last_sampled_free[0] ||
		    (uintptr_t)p == ts.last_sampled_free[1]) {
			ts.rand = ts.rand * 1103515245U + 12345U;
			rotate_free_sample(coarse_ns() ^ ((uint64_t)ts.rand << 32) ^ (uintptr_t)p);
		}
		ts.last_sampled_free[1] = ts.last_sampled_free[0];
		ts.last_sampled_free[0] = (uintptr_t)p;
	}
}

/* After an allocation whose call was already counted. */
/*
 * Most budgets run out with no sample due, nothing big and no request: then a new budget,
 * and nothing else, before the real call (a tail call). Only when the sample mark is
 * beyond the whole next budget, so the next budget is a full one.
 */
static inline bool budget_refill(size_t size)
{
	int64_t left = ts.to_sample - (int64_t)ts.period;

	if (unlikely(size >= BIG_THRESHOLD) || left <= BUDGET_MAX || left > SAMPLE_UNITS_MAX ||
	    __atomic_load_n(&ts.armed, __ATOMIC_RELAXED))
		return false;
	ts.to_sample = left;
	ts.units += ts.period;
	ts.period = BUDGET_MAX;
	__atomic_store_n(&ts.budget, BUDGET_MAX, __ATOMIC_RELAXED);
	return true;
}

/* After an allocation whose units ran out of the budget (every big one does). */
static void after_alloc(void *p, size_t size, uint16_t kind, void *old)
{
	if (unlikely(size >= BIG_THRESHOLD) && p)
		note_big_alloc(p, size, kind, old);
	budget_reload(kind, p, size, old);
	check_requests();
}

/* After an allocation on a path that is slow anyway (realloc, the aligned allocators). */
static void after_alloc_counted(void *p, size_t size, uint16_t kind, void *old)
{
	if (budget_take(size))
		after_alloc(p, size, kind, old);
	else
		check_requests();
}

/* --- the wrappers ----------------------------------------------------------------------- */

/*
 * Out of line: the first calls (resolving), big blocks, the end of the budget. The fast
 * path already took the call's units.
 */
static __attribute__((noinline)) void *malloc_slower(size_t size)
{
	void *p;

	if (unlikely(!resolved())) {
		__atomic_store_n(&ts.budget, 0, __ATOMIC_RELAXED);
		return boot_alloc(size, 16);
	}
	p = real_malloc(size);
	after_alloc(p, size, 0, NULL);
	return p;
}

/* Kept apart from malloc_slower() so that a refill saves no registers. */
static __attribute__((noinline)) void *malloc_slow(size_t size)
{
	if (likely(budget_refill(size)))
		return real_malloc(size);
	return malloc_slower(size);
}

EXPORT void *malloc(size_t size)
{
	BUDGET_OR_GOTO(size, slow);
	return real_malloc(size);
slow:
	return malloc_slow(size);
}

static __attribute__((noinline)) void free_slow(void *p)
{
	if (!p)
		return;		/* nothing to do, nothing to report (Lua frees NULL often) */
	if (unlikely(in_boot_arena(p)))
		return;
	if (unlikely(!resolved())) {
		__atomic_store_n(&ts.budget, 0, __ATOMIC_RELAXED);
		return;		/* cannot be ours to free before anything was resolved */
	}
	note_free(p);
	real_free(p);
	check_requests();
}

/*
 * Small glibc blocks outside the address sample only: free_hash(p) & g_free_mask is 0 for
 * NULL, for a sampled address and under another allocator (mask 0), one test for all
 * three; arena blocks' BOOT_MARK and big blocks' chunk sizes go the slow way too.
 */
static inline bool free_is_fast(const void *p)
{
	return likely(free_hash(p) & atomic_load_explicit(&g_free_mask, memory_order_acquire)) &&
	       likely(chunk_word(p) < BIG_THRESHOLD);
}

EXPORT void free(void *p)
{
	if (free_is_fast(p))
		return real_free(p);
	free_slow(p);
}

static __attribute__((noinline)) void *calloc_slower(size_t n, size_t size)
{
	size_t total;
	void *p;

	if (unlikely(!resolved())) {
		__atomic_store_n(&ts.budget, 0, __ATOMIC_RELAXED);
		if (__builtin_mul_overflow(n, size, &total))
			return NULL;
		return boot_alloc(total, 16);	/* static memory: already zero */
	}
	p = real_calloc(n, size);
	if (__builtin_mul_overflow(n, size, &total))
		total = 0;
	after_alloc(p, total, PT_PRELOAD_F_CALLOC, NULL);
	return p;
}

static __attribute__((noinline)) void *calloc_slow(size_t n, size_t size)
{
	size_t total;

	if (!__builtin_mul_overflow(n, size, &total) && likely(budget_refill(total)))
		return real_calloc(n, size);
	return calloc_slower(n, size);
}

EXPORT void *calloc(size_t n, size_t size)
{
	size_t total;

	if (unlikely(__builtin_mul_overflow(n, size, &total)))
		goto slow;
	BUDGET_OR_GOTO(total, slow);
	return real_calloc(n, size);
slow:
	return calloc_slow(n, size);
}

/*
 * realloc: out of line for the first calls, arena blocks, an old block that free() would
 * take out of line (sampled, big, or under another allocator), and the end of the budget
 * (@charged: the fast path already took the units).
 */
static __attribute__((noinline)) void *realloc_slow(void *old, size_t size, bool charged)
{
	void *p;

	if (unlikely(in_boot_arena(old))) {
		size_t old_size = boot_size(old);

		p = malloc(size);
		if (p)
			memcpy(p, old, old_size < size ? old_size : size);
		return p;
	}
	if (unlikely(!resolved()))
		return old ? NULL : boot_alloc(size, 16);
	if (old)
		note_free(old);
	p = real_realloc(old, size);
	if (charged)
		after_alloc(p, size, PT_PRELOAD_F_REALLOC, old);
	else
		after_alloc_counted(p, size, PT_PRELOAD_F_REALLOC, old);
	return p;
}

/*
 * Interpreters allocate through realloc (Lua's every object): the same fast path as
 * free() for the old block and malloc() for the new size.
 */
EXPORT void *realloc(void *old, size_t size)
{
	if (old && !free_is_fast(old))
		return realloc_slow(old, size, false);
	BUDGET_OR_GOTO(size, charged);
	return real_realloc(old, size);
charged:
	return realloc_slow(old, size, true);
}

EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(old, total);
}

/* The aligned allocators: rare enough for the general path. */
static void *aligned_done(void *p, size_t size)
{
	after_alloc_counted(p, size, PT_PRELOAD_F_ALIGNED, NULL);
	return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	int ret;

	if (unlikely(!resolved()) || !real_posix_memalign) {
		*out = boot_alloc(size, align);
		return *out ? 0 : ENOMEM;
	}
	ret = real_posix_memalign(out, align, size);
	aligned_done(ret == 0 ? *out : NULL, size);
	return ret;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
	if (unlikely(!resolved()) || !real_aligned_alloc)
		return boot_alloc(size, align);
	return aligned_done(real_aligned_alloc(align, size), size);
}

EXPORT void *memalign(size_t align, size_t size)
{
	if (unlikely(!resolved()))
		return boot_alloc(size, align);
	return aligned_done(real_memalign(align, size), size);
}

EXPORT void *valloc(size_t size)
{
	if (unlikely(!resolved()) || !real_valloc)
		return boot_alloc(size, 4096);
	return aligned_done(real_valloc(size), size);
}

EXPORT void *pvalloc(size_t size)
{
	if (unlikely(!resolved()) || !real_pvalloc)
		return boot_alloc((size + 4095) & ~(size_t)4095, 4096);
	return aligned_done(real_pvalloc(size), size);
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p;

	if (unlikely(!resolved()) || !real_mmap)
		return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	p = real_mmap(addr, len, prot, flags, fd, off);
	/* File mappings are page cache, not ours to tier. */
	if (p != MAP_FAILED && (flags & MAP_ANONYMOUS)) {
		int saved = errno;

		emit_now(PT_PRELOAD_REC_MMAP, 0, (uintptr_t)p, len, (uint32_t)prot,
			 (uint32_t)flags);
		errno = saved;
	}
	check_requests_from(false);	/* may be a signal handler */
	return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

EXPORT int munmap(void *addr, size_t len)
{
	int ret;

	if (unlikely(!resolved()) || !real_munmap)
		return (int)syscall(SYS_munmap, addr, len);
	ret = real_munmap(addr, len);
	if (ret == 0 && len) {
		int saved = errno;

		emit_now(PT_PRELOAD_REC_MUNMAP, 0, (uintptr_t)addr, len, 0, 0);
		errno = saved;
	}
	check_requests_from(false);	/* may be a signal handler */
	return ret;
}

EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *new_addr = NULL, *p;
	va_list ap;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	if (unlikely(!resolved()) || !real_mremap)
		return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
	p = real_mremap(old, old_len, new_len, flags, new_addr);
	if (p != MAP_FAILED && new_len) {
		int saved = errno;

		if (old_len)
			emit_now(PT_PRELOAD_REC_MREMAP, 0, (uintptr_t)old, old_len, (uintptr_t)p,
				 new_len);
		errno = saved;
	}
	check_requests_from(false);	/* may be a signal handler */
	return p;
}

/* --- process lifecycle ------------------------------------------------------------------ */

/*
 * The child of fork() shares the parent's ring (a MAP_SHARED memfd): it must stop writing to
 * it at once, and registers a ring of its own at its first tick, so that a fork followed by
 * exec (where the new image registers anyway) costs nothing.
 */
static void atfork_child(void)
{
	atomic_store(&g_ring, NULL);
	free_mask_update();
	/* The parent's rings, the registered one and a retired one: the child is alone. */
	for (int i = 0; i < 2; i++) {
		if (ring_storage[i].hdr)
			do_munmap(ring_storage[i].hdr, ring_bytes(&ring_storage[i]));
		ring_storage[i].hdr = NULL;
	}
	atomic_store(&g_trim_serving, 0);	/* the parent's trimming thread is not here */
	if (g_sock >= 0)
		drop_sock();
	ts.n = 0;
	ts.budget = 0;		/* the first hooked call ticks */
	ts.period = 0;
	ts.to_sample = 0;
	ts.tid = 0;
	threads_reset_in_child();
	atomic_store(&g_req_seen, 0);
	atomic_store(&g_req_thread, false);	/* threads do not survive fork */
	atomic_store(&g_last_tick_ns, 0);
	atomic_store(&g_last_attempt_ns, 0);
	atomic_store(&g_state, g_disabled || atomic_load(&g_state) == ST_REJECTED ?
		     ST_REJECTED : ST_NONE);
}

__attribute__((constructor)) static void pagetier_init(void)
{
	const char *off = getenv("PAGETIER_PRELOAD_DISABLE");
	const char *no_trim = getenv("PAGETIER_PRELOAD_NO_TRIM");
	const char *req_thread = getenv("PAGETIER_PRELOAD_THREAD");
	const char *retry_ms = getenv("PAGETIER_PRELOAD_RETRY_MS");

	resolve();
	/* For benchmarks: the daemon's malloc_trim requests are acknowledged but not run. */
	g_no_trim = no_trim && *no_trim && *no_trim != '0';
	/* A process that must stay single-threaded (unshare(CLONE_NEWUSER)) turns it off. */
	g_req_thread_off = req_thread && *req_thread == '0';
	/* For tests: how soon to try again without a daemon (a daemon's restart). */
	if (retry_ms && *retry_ms)
		g_retry_ns = strtoull(retry_ms, NULL, 10) * 1000000ULL;
	if (off && *off && *off != '0') {
		g_disabled = true;
		atomic_store(&g_state, ST_REJECTED);
		return;
	}
	g_have_key = pthread_key_create(&g_thread_key, thread_exit) == 0;
	pthread_atfork(NULL, NULL, atfork_child);
	try_register();
}
