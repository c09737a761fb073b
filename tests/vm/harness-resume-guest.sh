#!/bin/bash
# In the guest of tests/vm/harness_check.sh: a step, then, on the first boot only, a death
# that console_crash.py takes for the emulator's (an int3 oops report on the console, and
# no guest.rc). pt_vm_run must boot it again with the first step's output kept, so that
# the second boot runs only the second step.
set -u
out=${PT_OUT:?} top=${PT_TOP:?}
. "$top/tests/vm/guest-lib.sh"
boot=$(cat /proc/sys/kernel/random/boot_id)
again=0
[ -f "$out/first.tap.rc" ] && again=1
pt_step "first step" 60 "$out/first.tap" sh -c "echo 'ok 1 first step, boot $boot'"
if [ "$again" = 0 ]; then
	echo "<1>Oops: int3: 0000 [#1] PREEMPT SMP NOPTI (harness_check: the emulator's death, simulated)" >/dev/kmsg
	sleep 1
	exit 0
fi
pt_step "second step" 60 "$out/second.tap" sh -c "echo 'ok 1 second step, boot $boot'"
echo 0 >"$out/guest.rc"
