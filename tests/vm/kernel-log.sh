# shellcheck shell=bash
# Sourced by guest-lib.sh (the guest suites) and test_kernel_log.sh (make unit, on the host).

# pt_kernel_log_problems DMESG: the lines of the kernel log DMESG that report a problem (BUG,
# WARNING, Oops, general protection fault, call trace, a pagetier leak or corruption), one
# per line; nothing when the log is clean. Two kinds of stack are not reports and are left
# out, each up to where it ends:
# - the stacks a scenario asked for itself (sysrq-w: debug_faults shows where a slow wake
#   waits), up to the first line not of a stack;
# - a warning in exc_debug_kernel, up to its "end trace": a single-step debug trap taken in
#   kernel mode, which no code of the kernel or of pagetier arms (kprobes on x86 no longer
#   single-step); the kernel's comment names an emulator as its known cause, and QEMU's TCG
#   raised it once (CI's make test, 6.12 guest, during critical_low, 2026-11-28; never in
#   the runs before). Its first lines go to the TAP as a diagnostic ("# emulator
#   artifact"), so that a recurrence can still be traced; a warning anywhere else counts.
pt_kernel_log_problems() {
	awk '/sysrq: Show Blocked State/ {dump = 1; next}
		dump && /(task:|Call Trace:|<\/?TASK>|[A-Za-z0-9_.]+\+0x[0-9a-f]+\/0x[0-9a-f]+|RIP: |RSP: |RAX: |RDX: |RBP: |R1[0-5]: |R[89]: )/ {next}
		{dump = 0}
		/WARNING: .* exc_debug_kernel\+/ {artifact = 1; shown = 0}
		artifact {
			if (shown++ < 4) print "# emulator artifact, not counted: " $0 > "/dev/stderr"
			if (/---\[ end trace/) artifact = 0
			next
		}
		{print}' "$1" |
		grep -E 'BUG:|WARNING:|Oops|general protection|Call Trace:|pagetier.*(leak|corrupt)'
}
