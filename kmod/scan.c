// SPDX-License-Identifier: GPL-2.0
/*
 * scan.c - the access scanner: PAGETIER_IOC_SCAN.
 *
 * Reports, for each 4 KiB page of a range of a process, whether its accessed bit is set,
 * whether it is present and whether it is on swap, and optionally clears the accessed
 * bits it reports. It is what makes hotness tracking work on kernels built without DAMON
 * or idle page tracking (Debian's 6.1 has neither).
 *
 * The kernel's own tools for this are not available to modules on the kernels we support
 * (6.1 and 6.12, checked against their Module.symvers): walk_page_range(),
 * ptrace_may_access()/mm_access(), ptep/pmdp_test_and_clear_young() (out of line on
 * x86), __pte_offset_map_lock() (6.12), __mmu_notifier_clear_young() and
 * __mmu_notifier_test_young() are not exported. So:
 *  - the walk is our own, over find_vma() and the inline p?d_offset() helpers, with the
 *    locking the page-walk API uses: the target's mmap_lock held for read, a THP PMD
 *    read and cleared under pmd_lock(), a page table under its PTE lock, taken the way
 *    pte_offset_map_lock() does since 6.5: under rcu_read_lock(), rechecking that the
 *    PMD still points to the table once the lock is held (6.12 can free a page table
 *    under the mmap_lock read side, e.g. khugepaged's retract_page_tables());
 *  - the accessed bit is tested and cleared as x86 does it (test_and_clear_bit() of
 *    _PAGE_BIT_ACCESSED), without a TLB flush, like ptep_clear_flush_young() on x86; with
 *    PAGETIER_SCAN_FLUSH_TLB a call that cleared bits ends by making every CPU drop the
 *    mm's translations, so that the next access to a cleared page is sure to set the bit
 *    again: the mm's TLB generation is bumped (a CPU that switches to it later flushes
 *    its ASID, as after flush_tlb_mm_range(), which is not exported), and only the CPUs
 *    in mm_cpumask() that have the mm loaded now are interrupted to flush (other
 *    containers' CPUs are left alone);
 *  - permission is ptrace_may_access(PTRACE_MODE_READ_FSCREDS) rebuilt from exported
 *    parts (credentials, the capability LSM's subset rule, ns_capable(CAP_SYS_PTRACE),
 *    dumpability, exec_update_lock as mm_access() takes it); other LSMs (AppArmor,
 *    SELinux) are not consulted, their hook is not exported either; the caller has
 *    CAP_SYS_ADMIN in any case (core.c);
 *  - secondary MMUs (KVM, SVM-capable GPUs) are asked through mmu_notifier_clear_young()
 *    and mmu_notifier_test_young() where the kernel exports them (Kbuild checks
 *    Module.symvers). Where it does not and the process has MMU notifiers, the result says
 *    so (PAGETIER_SCAN_RES_SECONDARY_MMU): accesses made only through a secondary MMU are
 *    not seen.
 * On kernels with PG_young (CONFIG_PAGE_IDLE_FLAG: 6.12, not 6.1) a cleared accessed bit
 * is kept in the folio's PG_young, as DAMON does, so that reclaim still sees the
 * reference; without it (6.1) it is reported to the LRU with folio_mark_accessed(), as
 * DAMON_LRU_SORT marks hot pages. The scanner's own results depend on neither.
 *
 * Bounded work: one call covers at most max_pages pages and says where it stopped
 * (next_addr). Inside a call, the mmap_lock is taken for batches of PT_SCAN_BATCH pages;
 * the batch's bitmaps are built in a kernel buffer and copied to the caller after the
 * mmap_lock is dropped, so no user memory is touched under it (the caller may scan
 * itself); page-table locks are spinlocks held over at most one page table, and the walk
 * only reschedules between page tables. The buffer is sized for the call's largest batch,
 * not for PT_SCAN_BATCH: pagetierd scans small mappings one call each, many times a
 * second, and those fit on the stack (PT_SCAN_STACK_WORDS).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/err.h>
#include <linux/hugetlb_inline.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/mmu_notifier.h>
#include <linux/overflow.h>
#include <linux/page_idle.h>
#include <linux/pgtable.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched/coredump.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/spinlock.h>
#include <linux/swap.h>
#include <linux/swapops.h>
#include <linux/uaccess.h>
#include <asm/tlbflush.h>

#include "scan.h"

/* Pages per mmap_lock hold: 128 MiB of address space, a 4 KiB kernel bitmap each. */
#define PT_SCAN_BATCH		32768UL
/* Words of each kernel bitmap kept on the stack: calls over up to 2 MiB allocate nothing. */
#define PT_SCAN_STACK_WORDS	8
#define PT_BITS_PER_WORD	PAGETIER_SCAN_BITS_PER_WORD
#define PT_WORD_SPAN		(PT_BITS_PER_WORD * PAGE_SIZE)	/* bytes one word covers */

static_assert(PAGE_SIZE == PAGETIER_SCAN_PAGE_SIZE);
static_assert(BITS_PER_LONG == PT_BITS_PER_WORD);	/* kernel bitmaps == __u64 words */
static_assert(sizeof(struct pagetier_scan) >= PT_SCAN_SIZE_V1);
static_assert(PT_SCAN_BATCH % PT_BITS_PER_WORD == 0);
static_assert(PAGETIER_SCAN_MAX_PAGES % PT_BITS_PER_WORD == 0);
static_assert(PAGETIER_SCAN_DEFAULT_PAGES <= PAGETIER_SCAN_MAX_PAGES);

#define PT_SCAN_FLAGS	(PAGETIER_SCAN_CLEAR | PAGETIER_SCAN_FLUSH_TLB)

#if defined(CONFIG_PAGE_IDLE_FLAG) && defined(CONFIG_64BIT)
#define PT_HAVE_PG_YOUNG	1
#else
#define PT_HAVE_PG_YOUNG	0
#endif

enum { PT_ACCESSED, PT_PRESENT, PT_SWAPPED, PT_NR_BITMAPS };

struct pt_scan_ctx {
	struct mm_struct *mm;
	bool clear;			/* PAGETIER_SCAN_CLEAR */
	bool cleared;			/* some accessed bit was cleared */
	unsigned long range_end;	/* of the whole range, over all calls */
	unsigned long base;		/* the address of bit 0 of bits[] */
	unsigned long *bits[PT_NR_BITMAPS];
	u64 count[PT_NR_BITMAPS];
	u64 skipped;
};

/* ---- accessed bits ---- */

/* x86's ptep_test_and_clear_young() and pmdp_test_and_clear_young(), not exported. */
static bool pt_pte_clear_young(pte_t *pte)
{
	return test_and_clear_bit(_PAGE_BIT_ACCESSED, (unsigned long *)&pte->pte);
}

static bool pt_pmd_clear_young(pmd_t *pmd)
{
	return test_and_clear_bit(_PAGE_BIT_ACCESSED, (unsigned long *)&pmd->pmd);
}

/* I/O mappings are reported but not cleared, as clear_refs leaves PFN maps alone. */
static bool pt_vma_clearable(struct vm_area_struct *vma)
{
	return !(vma->vm_flags & VM_IO);
}

/* Mappings whose entries all refer to ordinary pages with a struct folio. */
static bool pt_vma_normal(struct vm_area_struct *vma)
{
	return !(vma->vm_flags & (VM_PFNMAP | VM_IO | VM_MIXEDMAP));
}

/*
 * Keeps a cleared reference visible to reclaim. With PG_young, exactly as DAMON does:
 * folio_referenced() counts it as the accessed bit it was. Without it (6.1), the reference
 * goes to the LRU as a fault or a read(2) would report it, folio_mark_accessed(), as
 * DAMON_LRU_SORT marks hot pages: a page seen referenced in two epochs is activated. Without
 * either, reclaim would find the bit the scanner cleared missing and take the pages an
 * active container uses (real_servers on 6.1: a trim of redis's unused swap cache under
 * load wrote the pages it served, and stopped). Called under the PTE or PMD lock, as
 * zap_pte_range() calls mark_page_accessed(): the page is mapped, its folio cannot go.
 */
static void pt_keep_young_folio(struct folio *folio)
{
#if PT_HAVE_PG_YOUNG
	folio_set_young(folio);
#else
	folio_mark_accessed(folio);
#endif
}

static void pt_keep_young_pte(struct vm_area_struct *vma, pte_t pte)
{
	if (pt_vma_normal(vma) && !pte_special(pte) && !pte_devmap(pte))
		pt_keep_young_folio(page_folio(pte_page(pte)));
}

static void pt_keep_young_pmd(struct vm_area_struct *vma, pmd_t pmd)
{
	if (pt_vma_normal(vma) && !pmd_devmap(pmd))
		pt_keep_young_folio(page_folio(pmd_page(pmd)));
}

/* The accessed state kept by secondary MMUs, cleared along with ours. */
static bool pt_secondary_young(struct pt_scan_ctx *c, bool clear, unsigned long addr,
			       unsigned long size)
{
#ifdef PT_HAVE_MMU_NOTIFIER_YOUNG
	if (clear)
		return mmu_notifier_clear_young(c->mm, addr, addr + size);
	return mmu_notifier_test_young(c->mm, addr);
#else
	return false;
#endif
}

static void pt_mark(struct pt_scan_ctx *c, int which, unsigned long addr, unsigned long nr)
{
	bitmap_set(c->bits[which], (addr - c->base) >> PAGE_SHIFT, nr);
	c->count[which] += nr;
}

/* pt_mark() of one page: the PTE loop's common case, without a bitmap_set() call. */
static void pt_mark1(struct pt_scan_ctx *c, int which, unsigned long addr)
{
	__set_bit((addr - c->base) >> PAGE_SHIFT, c->bits[which]);
	c->count[which]++;
}

/* ---- the walk ---- */

/* One PTE, under its page table's lock. */
static void pt_scan_pte(struct pt_scan_ctx *c, struct vm_area_struct *vma, pte_t *pte,
			unsigned long addr)
{
	pte_t ptent = ptep_get(pte);
	bool clear, young;

	if (pte_none(ptent))
		return;
	if (!pte_present(ptent)) {
		swp_entry_t entry = pte_to_swp_entry(ptent);

		if (!non_swap_entry(entry))
			pt_mark1(c, PT_SWAPPED, addr);
		else if (is_migration_entry(entry))
			pt_mark1(c, PT_PRESENT, addr);	/* in memory, being moved */
		return;
	}

	pt_mark1(c, PT_PRESENT, addr);
	clear = c->clear && pt_vma_clearable(vma);
	young = pte_young(ptent);
	if (young && clear && pt_pte_clear_young(pte)) {
		c->cleared = true;
		pt_keep_young_pte(vma, ptent);
	}
	young |= pt_secondary_young(c, clear, addr, PAGE_SIZE);
	if (young)
		pt_mark1(c, PT_ACCESSED, addr);
}

/*
 * A PMD that maps a THP (or a device huge page, or is a THP migration entry), under
 * pmd_lock(): the whole huge page is one unit, so every page of it in [addr, end) gets
 * the same bits. A batch or a call may end inside the THP: its accessed bit is cleared
 * only by the piece that reaches its end (or the end of the range), so that every piece
 * of one scan reports the same state. Returns false if the PMD is (now) a page table,
 * to be walked instead.
 */
static bool pt_scan_huge_pmd(struct pt_scan_ctx *c, struct vm_area_struct *vma, pmd_t *pmd,
			     unsigned long addr, unsigned long end)
{
	unsigned long nr = (end - addr) >> PAGE_SHIFT;
	spinlock_t *ptl;		/* the PMD's */
	bool clear, young;
	pmd_t pmdval;

	ptl = pmd_lock(c->mm, pmd);
	pmdval = READ_ONCE(*pmd);
	if (pmd_none(pmdval))
		goto out;			/* zapped meanwhile */
	if (!pmd_present(pmdval)) {
		if (is_pmd_migration_entry(pmdval))
			pt_mark(c, PT_PRESENT, addr, nr);
		goto out;
	}
	if (!pmd_trans_huge(pmdval) && !pmd_devmap(pmdval)) {
		spin_unlock(ptl);
		return false;
	}

	pt_mark(c, PT_PRESENT, addr, nr);
	clear = c->clear && pt_vma_clearable(vma) &&
		(end == (addr & PMD_MASK) + PMD_SIZE || end == c->range_end);
	young = pmd_young(pmdval);
	if (young && clear && pt_pmd_clear_young(pmd)) {
		c->cleared = true;
		pt_keep_young_pmd(vma, pmdval);
	}
	young |= pt_secondary_young(c, clear, addr & PMD_MASK, PMD_SIZE);
	if (young)
		pt_mark(c, PT_ACCESSED, addr, nr);
out:
	spin_unlock(ptl);
	return true;
}

static bool pt_pmd_leaf(pmd_t pmd)
{
	return !pmd_present(pmd) || pmd_trans_huge(pmd) || pmd_devmap(pmd);
}

/* [addr, end) within one PMD. */
static void pt_scan_pmd(struct pt_scan_ctx *c, struct vm_area_struct *vma, pmd_t *pmd,
			unsigned long addr, unsigned long end)
{
	spinlock_t *ptl;		/* the page table's */
	pmd_t pmdval;
	pte_t *pte;

again:
	/*
	 * pte_offset_map_lock(), open-coded: RCU keeps a page table that is being freed
	 * valid until the PMD is seen again under the table's lock.
	 */
	rcu_read_lock();
	pmdval = READ_ONCE(*pmd);
	if (pmd_none(pmdval)) {
		rcu_read_unlock();
		return;
	}
	if (pt_pmd_leaf(pmdval)) {
		rcu_read_unlock();
		if (pt_scan_huge_pmd(c, vma, pmd, addr, end))
			return;
		goto again;
	}
	if (pmd_bad(pmdval)) {
		rcu_read_unlock();
		return;
	}
	pte = pte_offset_kernel(&pmdval, addr);
	ptl = pte_lockptr(c->mm, &pmdval);
	spin_lock(ptl);
	if (unlikely(!pmd_same(pmdval, READ_ONCE(*pmd)))) {
		spin_unlock(ptl);
		rcu_read_unlock();
		goto again;
	}
	for (; addr != end; addr += PAGE_SIZE, pte++)
		pt_scan_pte(c, vma, pte, addr);
	spin_unlock(ptl);
	rcu_read_unlock();
}

static void pt_scan_pud(struct pt_scan_ctx *c, struct vm_area_struct *vma, pud_t *pud,
			unsigned long addr, unsigned long end)
{
	pmd_t *pmd = pmd_offset(pud, addr);
	unsigned long next;

	do {
		next = pmd_addr_end(addr, end);
		pt_scan_pmd(c, vma, pmd, addr, next);
		/* No page-table lock is held here, only the mmap_lock (a rwsem). */
		cond_resched();
	} while (pmd++, addr = next, addr != end);
}

static void pt_scan_p4d(struct pt_scan_ctx *c, struct vm_area_struct *vma, p4d_t *p4d,
			unsigned long addr, unsigned long end)
{
	pud_t *pud = pud_offset(p4d, addr);
	unsigned long next;
	pud_t pudval;

	do {
		next = pud_addr_end(addr, end);
		pudval = READ_ONCE(*pud);
		/* pud_bad() includes huge PUDs: only DAX and PFN maps have them. */
		if (pud_none(pudval) || pud_bad(pudval))
			continue;
		pt_scan_pud(c, vma, pud, addr, next);
	} while (pud++, addr = next, addr != end);
}

static void pt_scan_pgd(struct pt_scan_ctx *c, struct vm_area_struct *vma, pgd_t *pgd,
			unsigned long addr, unsigned long end)
{
	p4d_t *p4d = p4d_offset(pgd, addr);
	unsigned long next;
	p4d_t p4dval;

	do {
		next = p4d_addr_end(addr, end);
		p4dval = READ_ONCE(*p4d);
		if (p4d_none(p4dval) || p4d_bad(p4dval))
			continue;
		pt_scan_p4d(c, vma, p4d, addr, next);
	} while (p4d++, addr = next, addr != end);
}

static void pt_scan_vma(struct pt_scan_ctx *c, struct vm_area_struct *vma,
			unsigned long addr, unsigned long end)
{
	pgd_t *pgd = pgd_offset(c->mm, addr);
	unsigned long next;
	pgd_t pgdval;

	do {
		next = pgd_addr_end(addr, end);
		pgdval = READ_ONCE(*pgd);
		if (pgd_none(pgdval) || pgd_bad(pgdval))
			continue;
		pt_scan_pgd(c, vma, pgd, addr, next);
	} while (pgd++, addr = next, addr != end);
}

/* [addr, end), under the mmap_lock held for read. */
static void pt_scan_range(struct pt_scan_ctx *c, unsigned long addr, unsigned long end)
{
	struct vm_area_struct *vma;
	unsigned long vend;

	while (addr < end) {
		vma = find_vma(c->mm, addr);
		if (!vma || vma->vm_start >= end)
			break;
		addr = max(addr, vma->vm_start);
		vend = min(end, vma->vm_end);
		/*
		 * hugetlbfs has its own page-table layout and is never swapped; raw PFN
		 * maps have no pages to speak of (the page-walk API skips them too).
		 */
		if (is_vm_hugetlb_page(vma) || (vma->vm_flags & VM_PFNMAP))
			c->skipped += (vend - addr) >> PAGE_SHIFT;
		else
			pt_scan_vma(c, vma, addr, vend);
		addr = vend;
	}
}

/* ---- the target process ---- */

/*
 * ptrace_may_access(task, PTRACE_MODE_READ_FSCREDS), which is not exported: the same
 * credentials (fsuid, fsgid) and no capability the caller lacks (the capability LSM's
 * part of the hook), or CAP_SYS_PTRACE; and a dumpable mm. Other LSMs are not asked:
 * security_ptrace_access_check() is not exported either. @mm is @task's, taken under
 * its exec_update_lock.
 */
static bool pt_may_read(struct task_struct *task, struct mm_struct *mm)
{
	const struct cred *cred = current_cred(), *tcred;
	bool same, ok;

	if (same_thread_group(task, current))
		return true;
	rcu_read_lock();
	tcred = __task_cred(task);
	same = uid_eq(cred->fsuid, tcred->euid) && uid_eq(cred->fsuid, tcred->suid) &&
	       uid_eq(cred->fsuid, tcred->uid) && gid_eq(cred->fsgid, tcred->egid) &&
	       gid_eq(cred->fsgid, tcred->sgid) && gid_eq(cred->fsgid, tcred->gid) &&
	       cred->user_ns == tcred->user_ns &&
	       cap_issubset(tcred->cap_permitted, cred->cap_effective);
	ok = same || ns_capable(tcred->user_ns, CAP_SYS_PTRACE);
	rcu_read_unlock();
	if (!ok)
		return false;
	/* A process that is not dumpable (setuid, prctl) needs CAP_SYS_PTRACE over its mm. */
	return get_dumpable(mm) == SUID_DUMP_USER || ns_capable(mm->user_ns, CAP_SYS_PTRACE);
}

/* The mm of process @nr, as mm_access() (not exported) would give it; an ERR_PTR. */
static struct mm_struct *pt_scan_get_mm(pid_t nr)
{
	struct task_struct *task;
	struct mm_struct *mm;
	struct pid *pid;
	int ret;

	pid = find_get_pid(nr);
	if (!pid)
		return ERR_PTR(-ESRCH);
	task = get_pid_task(pid, PIDTYPE_PID);
	put_pid(pid);
	if (!task)
		return ERR_PTR(-ESRCH);
	if (task->flags & PF_KTHREAD) {
		mm = ERR_PTR(-EINVAL);
		goto out_task;
	}
	/* No exec can replace the mm between the permission check and get_task_mm(). */
	ret = down_read_killable(&task->signal->exec_update_lock);
	if (ret) {
		mm = ERR_PTR(ret);
		goto out_task;
	}
	mm = get_task_mm(task);
	if (!mm) {
		mm = ERR_PTR(-ESRCH);		/* it has exited */
		goto out_unlock;
	}
	if (mm != current->mm && !pt_may_read(task, mm)) {
		mmput(mm);
		mm = ERR_PTR(-EPERM);
	}
out_unlock:
	up_read(&task->signal->exec_update_lock);
out_task:
	put_task_struct(task);
	return mm;
}

/* ---- the ioctl ---- */

struct pt_scan_args {
	unsigned long start, end;	/* the range; the bitmaps' bit 0 is start */
	unsigned long from, to;		/* what this call covers */
	u64 ubits[PT_NR_BITMAPS];	/* user bitmaps, 0 = not wanted */
};

static int pt_scan_check(const struct pagetier_scan *req, struct pt_scan_args *a)
{
	u64 end, max_pages, pages;

	if (req->reserved || req->reserved2)
		return -EINVAL;
	if (req->flags & ~PT_SCAN_FLAGS)
		return -EINVAL;
	if ((req->flags & PAGETIER_SCAN_FLUSH_TLB) && !(req->flags & PAGETIER_SCAN_CLEAR))
		return -EINVAL;
	if (req->pid <= 0)
		return -EINVAL;
	if (!req->len || !PAGE_ALIGNED(req->start) || !PAGE_ALIGNED(req->len))
		return -EINVAL;
	if (check_add_overflow(req->start, req->len, &end) || end > TASK_SIZE_MAX)
		return -EINVAL;
	a->start = req->start;
	a->end = end;

	/* Every call but the last covers whole bitmap words. */
	a->from = req->next_addr ? req->next_addr : a->start;
	if (a->from < a->start || a->from > a->end || !PAGE_ALIGNED(a->from))
		return -EINVAL;
	if ((a->from - a->start) % PT_WORD_SPAN && a->from != a->end)
		return -EINVAL;

	max_pages = req->max_pages ? req->max_pages : PAGETIER_SCAN_DEFAULT_PAGES;
	max_pages = round_up(min_t(u64, max_pages, PAGETIER_SCAN_MAX_PAGES), PT_BITS_PER_WORD);
	pages = min_t(u64, max_pages, (a->end - a->from) >> PAGE_SHIFT);
	a->to = a->from + (pages << PAGE_SHIFT);

	a->ubits[PT_ACCESSED] = req->accessed_bitmap;
	a->ubits[PT_PRESENT] = req->present_bitmap;
	a->ubits[PT_SWAPPED] = req->swapped_bitmap;
	return 0;
}

/* The user address of the word of bitmap @which that holds the bit of @addr. */
static u64 __user *pt_scan_uword(const struct pt_scan_args *a, int which, unsigned long addr)
{
	return u64_to_user_ptr(a->ubits[which] +
			       (addr - a->start) / PT_WORD_SPAN * sizeof(u64));
}

/*
 * Zeroes the words this call writes, before anything is cleared: a bitmap that is too
 * small or not writable fails the call with nothing lost.
 */
static int pt_scan_check_bitmaps(const struct pt_scan_args *a)
{
	unsigned long words = DIV_ROUND_UP(a->to - a->from, PT_WORD_SPAN);
	u64 last;
	int i;

	for (i = 0; i < PT_NR_BITMAPS; i++) {
		if (!a->ubits[i])
			continue;
		/* The whole bitmap, not just this call's part, must fit the address space. */
		if (check_add_overflow(a->ubits[i],
				       DIV_ROUND_UP(a->end - a->start, PT_WORD_SPAN) * sizeof(u64),
				       &last))
			return -EFAULT;
		if (clear_user(pt_scan_uword(a, i, a->from), words * sizeof(u64)))
			return -EFAULT;
	}
	return 0;
}

static int pt_scan_copy_out(struct pt_scan_ctx *c, const struct pt_scan_args *a,
			    unsigned long addr, unsigned long end)
{
	size_t bytes = BITS_TO_LONGS((end - addr) >> PAGE_SHIFT) * sizeof(long);
	int i;

	for (i = 0; i < PT_NR_BITMAPS; i++)
		if (a->ubits[i] && copy_to_user(pt_scan_uword(a, i, addr), c->bits[i], bytes))
			return -EFAULT;
	return 0;
}

/* On a CPU of the mm's cpumask: flush if the mm is the one loaded here (lazily or not). */
static void pt_flush_tlb_ipi(void *mm)
{
	if (current->active_mm == mm)
		__flush_tlb_all();
}

/* See the top of the file: the scanned mm's translations, on the CPUs that hold them. */
static void pt_scan_flush_tlb(struct mm_struct *mm)
{
	/*
	 * inc_mm_tlb_gen(), which 6.1 hides from modules: a full barrier too, ordering the
	 * cleared bits before the read of mm_cpumask(), as switch_mm() expects.
	 */
	atomic64_inc_return(&mm->context.tlb_gen);
	on_each_cpu_mask(mm_cpumask(mm), pt_flush_tlb_ipi, mm, true);
}

/**
 * pt_scan() - PAGETIER_IOC_SCAN on a validated-size request
 * @req: the caller's struct pagetier_scan; its output fields are set on success
 *
 * Scans at most max_pages pages of the range from next_addr on, writes the bitmap words
 * of those pages, and sets next_addr and the counters. Context: process, may sleep; the
 * caller has CAP_SYS_ADMIN.
 *
 * Return: 0 (also when a fatal signal cut the call short after some progress; next_addr
 * says where), -EINVAL for a bad argument or a kernel thread, -ESRCH for no such process
 * (or one that has exited), -EPERM without ptrace read access to it, -EFAULT for a bitmap
 * that cannot be written, -ENOMEM, -EINTR.
 */
int pt_scan(struct pagetier_scan *req)
{
	unsigned long stack_buf[PT_NR_BITMAPS * PT_SCAN_STACK_WORDS];
	unsigned long addr, end, nbits, words;
	struct pt_scan_ctx c = {};
	struct pt_scan_args a;
	unsigned long *buf;
	int i, ret;

	ret = pt_scan_check(req, &a);
	if (ret)
		return ret;
	c.mm = pt_scan_get_mm(req->pid);
	if (IS_ERR(c.mm))
		return PTR_ERR(c.mm);
	c.clear = req->flags & PAGETIER_SCAN_CLEAR;
	c.range_end = a.end;

	ret = pt_scan_check_bitmaps(&a);
	if (ret)
		goto out_mm;
	/*
	 * Words per bitmap for the largest batch of this call: no batch is longer than the
	 * call ([a.from, a.to)) nor than PT_SCAN_BATCH. Each batch zeroes the words it uses.
	 */
	words = BITS_TO_LONGS(min((a.to - a.from) >> PAGE_SHIFT, PT_SCAN_BATCH));
	if (words <= PT_SCAN_STACK_WORDS) {
		buf = stack_buf;
	} else {
		buf = kvmalloc_array(PT_NR_BITMAPS * words, sizeof(long), GFP_KERNEL);
		if (!buf) {
			ret = -ENOMEM;
			goto out_mm;
		}
	}
	for (i = 0; i < PT_NR_BITMAPS; i++)
		c.bits[i] = buf + i * words;

	for (addr = a.from; addr < a.to; addr = end) {
		if (addr != a.from && fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		end = min(a.to, addr + PT_SCAN_BATCH * PAGE_SIZE);
		nbits = (end - addr) >> PAGE_SHIFT;
		for (i = 0; i < PT_NR_BITMAPS; i++)
			bitmap_zero(c.bits[i], nbits);
		c.base = addr;

		ret = mmap_read_lock_killable(c.mm);
		if (ret)
			break;
		pt_scan_range(&c, addr, end);
		mmap_read_unlock(c.mm);

		ret = pt_scan_copy_out(&c, &a, addr, end);
		if (ret)
			break;
		cond_resched();
	}
	if (buf != stack_buf)
		kvfree(buf);

	if (c.cleared && (req->flags & PAGETIER_SCAN_FLUSH_TLB))
		pt_scan_flush_tlb(c.mm);
	/* Cut short by a fatal signal: report the progress, the caller is going away. */
	if (ret == -EINTR && addr != a.from)
		ret = 0;
	if (ret)
		goto out_mm;

	req->next_addr = addr;
	req->pages_scanned = (addr - a.from) >> PAGE_SHIFT;
	req->pages_present = c.count[PT_PRESENT];
	req->pages_accessed = c.count[PT_ACCESSED];
	req->pages_swapped = c.count[PT_SWAPPED];
	req->pages_skipped = c.skipped;
	req->result_flags = 0;
#ifndef PT_HAVE_MMU_NOTIFIER_YOUNG
	if (mm_has_notifiers(c.mm))
		req->result_flags |= PAGETIER_SCAN_RES_SECONDARY_MMU;
#endif
out_mm:
	mmput(c.mm);
	return ret;
}
