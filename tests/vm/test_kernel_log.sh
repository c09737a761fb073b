#!/bin/bash
# Unit test of pt_kernel_log_problems (kernel-log.sh), the final kernel-log check of each
# guest suite: what it reports and what it leaves out. Run by make unit.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/vm/kernel-log.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0

# check NAME EXPECTED_PROBLEM_LINES: runs the check on $tmp/dmesg.
check() {
	local got
	n=$((n + 1))
	got=$(pt_kernel_log_problems "$tmp/dmesg" 2>"$tmp/diag" | wc -l)
	if [ "$got" -eq "$2" ]; then
		echo "ok $n $1"
	else
		echo "not ok $n $1: $got problem lines, wanted $2"
		pt_kernel_log_problems "$tmp/dmesg" 2>&1 | sed 's/^/#   /'
		fail=1
	fi
}

echo "TAP version 13"
cat >"$tmp/dmesg" <<'LOG'
[    1.000000] pagetier: pagetier0: 64 MiB on nvme0n1
[    2.000000] Adding 65532k swap on /dev/pagetier0.
LOG
check "a clean log has no problem" 0

# The shape 6.12 printed in CI (make test, critical_low): a #DB single-step in kernel mode.
cat >"$tmp/dmesg" <<'LOG'
[  839.732000] ------------[ cut here ]------------
[  839.732473] WARNING: CPU: 1 PID: 4215 at arch/x86/kernel/traps.c:1120 exc_debug_kernel+0xca/0x160
[  839.733000] Modules linked in: pagetier(OE) nvme
[  839.734000] CPU: 1 UID: 0 PID: 4215 Comm: python3 Tainted: G OE 6.12.117+deb12-amd64 #1
[  839.735000] RIP: 0010:exc_debug_kernel+0xca/0x160
[  839.739153] Call Trace:
[  839.739200]  <#DB>
[  839.739300]  asm_exc_debug+0x1e/0x40
[  839.739400]  </#DB>
[  839.739500]  <TASK>
[  839.744921] R10: 0000000000000000 R11: 0000000000000287 R12: 0000000000000000
[  839.744947]  </TASK>
[  839.745024] ---[ end trace 0000000000000000 ]---
[  840.000000] pagetier: pagetier0: destroyed
LOG
check "the emulator's kernel-mode single-step warning is not counted" 0
n=$((n + 1))
if grep -q '^# emulator artifact, not counted: .*exc_debug_kernel' "$tmp/diag"; then
	echo "ok $n ... but shown as a diagnostic"
else
	echo "not ok $n the artifact is not shown as a diagnostic"
	fail=1
fi

# Any other warning after it still counts, with its trace.
cat >>"$tmp/dmesg" <<'LOG'
[  900.000000] WARNING: CPU: 0 PID: 77 at mm/swapfile.c:1234 swap_free+0x10/0x20
[  900.000100] Call Trace:
[  900.000200]  pt_free_slot+0x31/0x90 [pagetier]
[  900.000300] ---[ end trace 0000000000000000 ]---
LOG
check "a warning after the artifact counts (its line and its trace)" 2

# A scenario's own sysrq-w stacks are left out; a BUG after them is not.
cat >"$tmp/dmesg" <<'LOG'
[   10.000000] sysrq: Show Blocked State
[   10.000100] task:kworker/0:1     state:D stack:0     pid:12
[   10.000200] Call Trace:
[   10.000300]  <TASK>
[   10.000400]  schedule+0x20/0x90
[   10.000500]  </TASK>
[   11.000000] BUG: unable to handle page fault for address: 0000000000001000
LOG
check "sysrq-w stacks are left out, a BUG after them is not" 1
echo "1..$n"
exit "$fail"
