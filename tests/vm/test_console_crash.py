#!/usr/bin/env python3
"""Unit tests of console_crash.py: which dead guests the harness runs once more. Run by
make unit."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_crash import classify  # noqa: E402

# Shaped like the consoles the harness keeps (timestamps, vng's stream), shortened.
INT3_612 = """\
ok 18 log.direct.gc_fragmentation
#  RUN           log.direct.placement_two_cgroups ...
[   74.912001] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI
[   74.912210] CPU: 1 UID: 0 PID: 812 Comm: tier_log_test Not tainted 6.12.117+deb12-amd64 #1
[   74.912422] RIP: 0010:__kmalloc_noprof+0x9a/0x3f0
[   74.913001] Call Trace:
[   74.913100]  <TASK>
[   74.913200]  cgroup_mkdir+0x1a0/0x4b0
[   74.913300]  </TASK>
[   74.913400] ---[ end trace 0000000000000000 ]---
[   75.286313] Kernel panic - not syncing: Fatal exception
[   75.286372] Call Trace:
[   75.286822]  default_idle+0x9/0x20
[   75.288055] Kernel Offset: 0x1e000000 from 0xffffffff81000000
"""

INT3_61 = """\
[  301.100000] int3: 0000 [#1] PREEMPT SMP NOPTI
[  301.100100] CPU: 0 PID: 901 Comm: pagetierd Not tainted 6.1.0-56-amd64 #1
[  301.100200] RIP: 0010:ttwu_do_activate+0x4d/0x1c0
[  301.100300] ---[ end trace 0000000000000000 ]---
"""

GPF_IN_OURS = """\
[   90.000000] general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] PREEMPT SMP NOPTI
[   90.000100] RIP: 0010:pt_carve+0x31/0x90 [pagetier]
[   90.000200] Call Trace:
[   90.000300]  pf_work+0x120/0x300 [pagetier]
[   90.000400] ---[ end trace 0000000000000000 ]---
"""

PAGE_FAULT = """\
[   50.000000] BUG: unable to handle page fault for address: ffffc90000a3b000
[   50.000100] #PF: supervisor read access in kernel mode
[   50.000200] Oops: 0000 [#1] PREEMPT SMP NOPTI
[   50.000300] RIP: 0010:memcpy_orig+0x10/0x120
[   50.000400] ---[ end trace 0000000000000000 ]---
"""

INVALID_OPCODE_THEN_OURS_LATER = """\
[   40.000000] invalid opcode: 0000 [#1] PREEMPT SMP NOPTI
[   40.000100] RIP: 0010:static_key_enable_cpuslocked+0x5/0x90
[   40.000200] ---[ end trace 0000000000000000 ]---
[   41.000000] pagetier: pagetier0: tier destroyed
[   42.000000] BUG: scheduling while atomic: kworker/0:1 [pagetier]
"""


DOUBLE_FAULT_612 = """\
[  157.118432] traps: PANIC: double fault, error_code: 0x0
[  157.120865] Oops: double fault: 0000 [#1] PREEMPT SMP NOPTI
[  157.121948] CPU: 1 UID: 0 PID: 2372 Comm: pagetierd Tainted: G           OE      6.12.117+deb12-amd64 #1
[  157.122459] RIP: 0010:__kmalloc_node_noprof+0xd9/0x450
[  157.129000] Kernel panic - not syncing: Fatal exception in interrupt
[  157.129967] Sending NMI from CPU 1 to CPUs 0:
[  157.288055] Kernel Offset: 0x1e000000 from 0xffffffff81000000
"""

# An oops the kernel names otherwise: "Oops: <what>: 0000 [#1]" of any kind counts.
OTHER_OOPS = """\
[   60.000000] Oops: stack segment: 0000 [#1] PREEMPT SMP NOPTI
[   60.000100] RIP: 0010:kmem_cache_alloc+0x10/0x90
[   60.000200] ---[ end trace 0000000000000000 ]---
"""


class Classify(unittest.TestCase):
    def test_clean_console(self):
        self.assertEqual(classify("ok 1 a\nok 2 b\n[  1.0] nvme nvme0: 2/0/0 queues\n")[0],
                         "none")

    def test_int3_on_612_is_the_emulator(self):
        kind, report = classify(INT3_612)
        self.assertEqual(kind, "emulator")
        self.assertTrue(report[0].startswith("Oops: int3: 0000 [#1]"))
        # The report ends at its own end marker, not at the panic's NMI backtraces.
        self.assertTrue(report[-1].startswith("---[ end trace"))

    def test_int3_on_61_spelling(self):
        self.assertEqual(classify(INT3_61)[0], "emulator")

    def test_a_report_naming_pagetier_is_ours(self):
        self.assertEqual(classify(GPF_IN_OURS)[0], "pagetier")

    def test_a_page_fault_is_a_failure(self):
        self.assertEqual(classify(PAGE_FAULT)[0], "other")

    def test_the_first_report_decides(self):
        kind, report = classify(INVALID_OPCODE_THEN_OURS_LATER)
        self.assertEqual(kind, "emulator")
        self.assertEqual(len(report), 3)

    def test_a_double_fault_past_a_patch_site_is_the_emulator(self):
        kind, report = classify(DOUBLE_FAULT_612)
        self.assertEqual(kind, "emulator")
        self.assertTrue(report[0].startswith("Oops: double fault"))

    def test_any_oops_is_a_report(self):
        kind, report = classify(OTHER_OOPS)
        self.assertEqual(kind, "other")
        self.assertTrue(report[0].startswith("Oops: stack segment"))

    def test_a_warning_is_a_report(self):
        text = ("[ 9.0] WARNING: CPU: 1 PID: 77 at mm/page_alloc.c:4500 __alloc_pages+0x1/0x2\n"
                "[ 9.1] ---[ end trace 0000000000000000 ]---\n")
        self.assertEqual(classify(text)[0], "other")


if __name__ == "__main__":
    unittest.main()
