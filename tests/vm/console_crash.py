#!/usr/bin/env python3
"""What killed a guest, from its console: the harness's judge of whether a dead guest is run
once more (tests/vm/lib.sh, pt_vm_run).

QEMU 7.2's multi-threaded TCG can run a vCPU through a stale translation of kernel text that
another vCPU has just live-patched (a static key flipped when a test creates or removes a
cgroup, a BPF trampoline). What the stale vCPU then executes is the patch's int3 byte, or a
half-written instruction: the guest dies of an "int3" oops, an "invalid opcode", a "general
protection fault" or a "double fault" at a kernel text address that has nothing wrong with it
(make test on 6.12: int3 in exc_page_fault at the page_fault_user tracepoint's site, a
double fault in __kmalloc_node_noprof just past a jump label). That is the emulator's bug,
and such a run is run again (single-threaded TCG would avoid it, but halves the guest's CPU:
tests/vm/lib.sh). Every other death is the run's result:

  none      no oops, BUG or panic in the console (a hang, a timeout, a clean exit);
  pagetier  a report whose lines name pagetier.ko ("[pagetier]"): our bug, never retried;
  emulator  the first report is one of the four kinds above and names no module of ours;
  other     anything else (a page fault, a BUG_ON, a lockup): the run fails.

The first report counts: what follows an oops (a panic, the NMI backtraces of every CPU that
panic_print asks for) is its consequence. Both kernels' spellings are known: 6.1 prints
"int3: 0000 [#1] PREEMPT SMP NOPTI", 6.12 "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI".

  console_crash.py CONSOLE        prints the kind, then the report's first lines
  console_crash.py --kind CONSOLE prints the kind alone
"""
import re
import sys

# The first line of a kernel report: an oops (die()), a BUG, a panic, a WARN.
REPORT_START = re.compile(
    r"(?:Oops: )?(?:int3|invalid opcode|double fault|general protection fault[^:]*): "
    r"[0-9a-f]{4} \[#\d+\]"
    r"|\bOops: [^:\n]*:? ?[0-9a-f]{4} \[#\d+\]"
    r"|\bBUG: |\bKernel panic - not syncing|\bWARNING: CPU: \d+ PID: \d+|\bkernel BUG at ")
# The reports a stale translation of patched text gives.
EMULATOR_KIND = re.compile(
    r"(?:Oops: )?(?:int3|invalid opcode|double fault|general protection fault[^:]*): "
    r"[0-9a-f]{4} \[#\d+\]")
# A report's end: the kernel prints this after the registers and the trace.
REPORT_END = re.compile(r"---\[ end trace |\bKernel Offset: |---\[ end Kernel panic")
OURS = "[pagetier]"
# Console lines carry a timestamp ("[   75.28] "); a stream may carry vng's prefixes.
STAMP = re.compile(r"^.*?\[\s*\d+\.\d+\]\s?")


def first_report(lines):
    """The lines of the first kernel report in LINES (without timestamps), or []."""
    for i, line in enumerate(lines):
        body = STAMP.sub("", line, count=1)
        if REPORT_START.search(body):
            report = []
            for cont in lines[i:i + 200]:
                report.append(STAMP.sub("", cont, count=1).rstrip("\n"))
                if len(report) > 1 and REPORT_END.search(report[-1]):
                    break
            return report
    return []


def classify(text):
    """(kind, report lines) of a console's text: see the module's docstring."""
    report = first_report(text.splitlines())
    if not report:
        return "none", []
    if any(OURS in line for line in report):
        return "pagetier", report
    if EMULATOR_KIND.search(report[0]):
        return "emulator", report
    return "other", report


def main(argv):
    kind_only = len(argv) > 1 and argv[1] == "--kind"
    path = argv[2] if kind_only else (argv[1] if len(argv) > 1 else None)
    if not path:
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError as e:
        print(f"console_crash: cannot read {path}: {e.strerror}", file=sys.stderr)
        return 2
    kind, report = classify(text)
    print(kind)
    if not kind_only:
        for line in report[:40]:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
