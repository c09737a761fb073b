#!/bin/bash
# Checks the VM harness's own guards, which keep a hang from eating CI's time in silence:
#  1. in the guest, pt_step (guest-lib.sh) fails a step stuck in the kernel, prints the
#     stuck task's kernel stack and ends the guest;
#  2. on the host, pt_vm_run (lib.sh) makes a guest that outlives PT_VM_TIMEOUT print its
#     backtrace (an NMI through QMP), kills it, QEMU included, and returns 124;
#  3. pt_vm_run boots a guest that died of the emulator's bug again, and the steps it
#     finished are kept (a simulated death: harness-resume-guest.sh).
#
#   tests/vm/harness_check.sh KERNEL_VERSION
set -u
. "$(dirname "$0")/lib.sh"
kv=${1:?usage: harness_check.sh KERNEL_VERSION}
out=$PT_TOP/build/vm/harness-$kv
n=0 fail=0
check() {	# check DESCRIPTION COMMAND...
	n=$((n + 1))
	if "${@:2}"; then echo "ok $n $1"; else echo "not ok $n $1"; fail=1; fi
}

echo "==== VM harness guards on Linux $kv ===="
echo "TAP version 13"
PT_VM_TIMEOUT=300 pt_vm_run "$kv" "$out" "tests/vm/harness-guest.sh" >/dev/null
check "a returning step keeps its exit status" grep -qx "returning step: exit 3" "$out/returning.rc"
check "a stuck step fails with a Bail out" grep -q "^Bail out! stuck step hung" "$out/stuck.tap"
check "the stuck task's kernel stack is reported" grep -q "^#     .*mnt_want_write" "$out/stuck.tap"
stopped_failed() { [ ! -e "$out/not-reached" ] && [ "$(cat "$out/guest.rc" 2>/dev/null)" = 1 ]; }
check "the guest stops after a stuck step, failed" stopped_failed
[ "$fail" = 0 ] || { echo "# console:"; sed 's/^/#   /' "$out/console.log" | tail -n 30; }

# A guest that dies of the emulator's bug is booted again, and the steps it finished stand.
rout=$PT_TOP/build/vm/harness-resume-$kv
PT_VM_TIMEOUT=300 PT_VM_EMULATOR_RETRIES=1 pt_vm_run "$kv" "$rout" "tests/vm/harness-resume-guest.sh" \
	>/dev/null 2>"$rout.stderr"
boot_of() { sed -n 's/^ok 1 .* step, boot //p' "$rout/$1.tap"; }
resumed() {
	[ "$(cat "$rout/guest.rc" 2>/dev/null)" = 0 ] && [ -f "$rout/emulator-console-1.log" ] &&
		[ -n "$(boot_of first)" ] && [ -n "$(boot_of second)" ] &&
		[ "$(boot_of first)" != "$(boot_of second)" ]
}
check "a guest dead of the emulator's bug runs again, its finished step kept, not run again" resumed
grep -q "keeping the steps it finished (1)" "$rout.stderr" ||
	{ echo "# pt_vm_run said:"; sed 's/^/#   /' "$rout.stderr" | head -20; }

# In the background: were the guard broken, this check must fail, not hang as CI did.
t0=$SECONDS
(PT_VM_TIMEOUT=30 pt_vm_run "$kv" "$out" "sleep 600" >/dev/null 2>&1) &
pid=$!
while kill -0 "$pid" 2>/dev/null && ((SECONDS - t0 < 120)); do sleep 1; done
if kill -0 "$pid" 2>/dev/null; then
	pt_qemu_pids "$out/nvme.img" | xargs -r kill -KILL
	echo "# pt_vm_run still running 120 s after a 30 s timeout: QEMU killed by hand"
fi
wait "$pid"
vrc=$?
check "a guest past PT_VM_TIMEOUT is stopped with status 124 (got $vrc after $((SECONDS - t0)) s)" \
	[ "$vrc" = 124 ]
no_qemu_left() { [ -z "$(pt_qemu_pids "$out/nvme.img")" ]; }
check "no QEMU of that guest is left running" no_qemu_left
check "QEMU was asked what the guest was doing" grep -q "^qmp: QEMU reports the guest running" \
	"$out/qmp-diag.txt"
check "the guest printed a CPU's backtrace on the NMI" \
	grep -q "Kernel panic - not syncing: NMI" "$out/console.log"
echo "1..$n"
exit "$fail"
